"""The prepared H200 mbarrier hand-over measurement (benchmarks/h200_mbarrier_latency.py) assembles for sm_90a and
measures the hand-over the compiled kernel performs: the same PTX arrive and wait, the same SASS instructions.

No record exists yet (the device was not lent in the session that wrote it, docs/NOTES.md); when one does, its test
goes beside this one."""

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
