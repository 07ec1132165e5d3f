"""The H200 mbarrier hand-over measurement (benchmarks/h200_mbarrier_latency.py) assembles for sm_90a and
measures the hand-over the compiled kernel performs: the same PTX arrive and wait, the same SASS instructions.

Its record, data/measurements/h200-mbarrier-latency.json, is checked by test_h200_mbarrier_latency_record.py."""

from __future__ import annotations

import re

import benchmark_scripts  # tests/support is on sys.path (tests/conftest.py)
import pytest

pytest.importorskip("triton")


@pytest.fixture(scope="module")
def bench():
    return benchmark_scripts.load("h200_mbarrier_latency")


@pytest.fixture(scope="module")
def sass(bench):
    return bench.assemble()


@pytest.fixture(scope="module")
def kernel():
    from gluon_overlap.compiler.compile import compile_variant

    return compile_variant("mxfp8", "mxfp8", True)


def _syncs(text: str) -> set[str]:
    return set(re.findall(r"SYNCS\.[A-Z0-9_.]+", text))


def test_every_kernel_assembles_for_sm90a(bench, sass):
    assert set(sass) == {name for name, _, _ in bench.KERNELS.values()}


def test_the_remote_pairs_arrive_over_dsmem_and_the_local_pair_does_not(sass):
    remote = "SYNCS.ARRIVE.TRANS64.RED.A1T0"  # the arrive on another CTA's barrier
    assert remote in _syncs(sass["remote_pingpong"])
    assert remote in _syncs(sass["remote_relay_pingpong"])
    assert "SYNCS.ARRIVE.TRANS64.A1T0" in _syncs(sass["local_pingpong"])
    assert not any(".RED" in s for s in _syncs(sass["local_pingpong"]))
    for body in sass.values():
        assert "SYNCS.PHASECHK.TRANS64.TRYWAIT" in _syncs(body)


def test_it_uses_the_compiled_kernels_arrive_and_wait(bench, kernel):
    """The PTX arrive and wait of the benchmark are those of the compiled overlap kernel (sm_100a), and the remote
    arrive is the same SASS instruction there."""
    ptx = bench.ptx()
    for instruction in ("mbarrier.arrive.shared::cluster.b64", "mbarrier.try_wait.parity.shared::cta.b64"):
        assert instruction in ptx
        assert instruction in kernel.ptx
    assert "SYNCS.ARRIVE.TRANS64.RED.A1T0" in _syncs(kernel.sass)


def test_the_relay_meets_at_a_bar_sync_before_each_arrive_as_the_epilogue_does(bench, kernel):
    relay = bench.ptx().split(".entry remote_relay_pingpong")[1].split(".entry")[0]
    assert relay.count("bar.sync 1, 128;") == 2  # one before the leader's arrive, one before the follower's
    assert re.search(r"bar\.sync\s+0, 128;\s*\n(?:.*\n){0,3}.*mbarrier\.arrive\.shared::cluster\.b64", kernel.ptx)


def test_a_refused_ptx_is_reported_with_ptxas_message(bench, monkeypatch):
    monkeypatch.setattr(bench, "ptx", lambda: ".version 8.0\n.target sm_90a\n.address_size 64\nnot ptx;\n")
    with pytest.raises(RuntimeError, match="ptxas refused the PTX"):
        bench.assemble()


def test_the_warp_forms_spin_with_every_lane_and_arrive_with_one(bench):
    """``remote-warp`` and ``local-warp`` are the MMA and load warps' form: the whole warp waits (no lane branches
    away), lane 0 alone arrives; the lone-thread forms send the other lanes away first."""
    ptx = bench.ptx()

    def entry(name: str) -> str:
        return ptx.split(f".entry {name}(")[1].split(".entry")[0]

    for warp, lone in (("remote_warp_pingpong", "remote_pingpong"), ("local_warp_pingpong", "local_pingpong")):
        assert not re.search(r"@!%p1\d? bra (SKIP|DONE);", entry(warp)), warp
        assert re.search(r"@!%p1\d? bra (SKIP|DONE);", entry(lone)), lone
        assert re.findall(r"@%p[78] mbarrier\.arrive", entry(warp)) == ["@%p7 mbarrier.arrive", "@%p8 mbarrier.arrive"]
