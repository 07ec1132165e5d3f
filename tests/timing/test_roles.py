"""Roles from the recording, not from names: a copy of kernel.py with every barrier, partition and helper renamed
predicts exactly what the original predicts, and compile's checks of it say exactly what they say of the original."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gluon_overlap import kernel as seed_kernel
from gluon_overlap.emulate.config import KernelConfig
from gluon_overlap.hardware import load_hardware
from gluon_overlap.timing import model as timing
from gluon_overlap.timing import recordings, streams
from gluon_overlap.timing.backend import CostBackend

#: every barrier (allocation, PartitionArgs field and local), partition and helper of kernel.py; the entry points
#: other modules import (the kernel, kernel_args, make_descriptors, ...) keep their names
RENAMES = {
    "load_empty_bars": "qq_ring_one",
    "load_ready_bars": "qq_ring_two",
    "acc_empty_bars": "qq_ring_three",
    "acc_ready_bars": "qq_ring_four",
    "overlap_bar": "qq_single",
    "mma_bar": "qq_done",
    "bar": "qq_b",
    "load_partition": "part_alpha",
    "mma_partition": "part_beta",
    "epilogue_partition": "part_gamma",
    "Counter": "RingWalker",
    "TileScheduler": "TileOrder",
    "PartitionArgs": "SharedBag",
    "async_mma_scaled": "helper_one",
    "unswizzle_scales_shared_memory": "helper_two",
    "drain_column": "helper_three",
    "accumulator_window": "helper_four",
    "check_plan_matches": "helper_five",
    "check_descriptors_match": "helper_six",
    "element_kind": "helper_seven",
    "descriptor_format": "helper_eight",
}


def renamed_source() -> str:
    text = Path(seed_kernel.__file__).read_text()
    for old, new in RENAMES.items():
        text, count = re.subn(rf"\b{old}\b", new, text)
        assert count, f"{old} does not occur in kernel.py: the rename list is out of date"
    return text


@pytest.fixture(scope="module")
def renamed_kernel() -> Path:
    """The renamed copy, in the private folder of kernel copies: content-addressed, so its path (which the
    compiled kernel's cache key covers) is the same in every run, and Triton's cache serves its compile."""
    from gluon_overlap.emulate.kernel_files import kernel_copy

    return kernel_copy(renamed_source(), "renamed_kernel")


def test_the_copy_is_really_renamed(renamed_kernel):
    text = renamed_kernel.read_text()
    for old in RENAMES:
        assert not re.search(rf"\b{old}\b", text)
    config = KernelConfig(
        timing.kernel_config(load_hardware("b300"), "mxfp8", "mxfp8", 256, 512, 512, True).plan,
        m=256,
        n=512,
        k=512,
        clusters=1,
        kernel_path=str(renamed_kernel),
    )
    rec = streams.record(config, clusters=[0])
    names = {b.name for b in rec.barriers} | {s.partition for s in rec.streams}
    assert not names & {"load_empty", "load_ready", "acc_empty", "acc_ready", "overlap", "load", "mma", "epilogue"}


@pytest.mark.parametrize("pair", [("mxfp8", "mxfp8"), ("nvfp4", "nvfp4")])
@pytest.mark.parametrize("k", [512, 4096])
def test_predictions_do_not_depend_on_names(renamed_kernel, pair, k):
    hw = load_hardware("b300")
    for overlap in (False, True):
        seed = timing.predict(hw, *pair, 8192, 8192, k, overlap)
        renamed = timing.predict(hw, *pair, 8192, 8192, k, overlap, kernel_path=str(renamed_kernel))
        assert renamed.to_dict() == seed.to_dict()  # to the last digit: time, TFLOP/s and the split
        assert seed.exposed_epilogue_s > 0  # the gated waits were found (an empty role set would give 0 here)


def test_roles_are_what_the_kernel_does(renamed_kernel):
    """The roles read from the recording: the lead's MMA issuer waits on three gates the epilogue arrives on (the
    early-release barrier and the accumulator ring), the peer CTA's arrivals on them are remote."""
    plan = timing.kernel_config(load_hardware("b300"), "mxfp8", "mxfp8", 256, 512, 512, True).plan
    for path in (None, str(renamed_kernel)):
        rec = streams.record(KernelConfig(plan, m=256, n=512, k=512, clusters=1, kernel_path=path), clusters=[0])
        roles = streams.roles(rec)
        assert sorted(roles.partition_roles.values()) == sorted(
            [streams.LOADER, streams.ISSUER, streams.DRAIN, streams.OTHER]
        )
        gates = [b for b in rec.barriers if id(b) in roles.gates]
        assert len(gates) == 3 and all(b.cta == 0 and id(b) in roles.remote for b in gates)
        assert len(roles.early_releases) == 2 * 2  # 2 tiles x 2 CTAs, each released early once


def test_compile_checks_do_not_depend_on_names(renamed_kernel, monkeypatch):
    """Compile the renamed copy as if it were the kernel: every check and every evidence field is the same."""
    import gluon_overlap
    from gluon_overlap import evidence
    from gluon_overlap.compiler import compile as gc
    from gluon_overlap.emulate.kernels import load_kernel

    seed = gc.compile_variant("mxfp8", "mxfp8", True)
    module = load_kernel(renamed_kernel)
    monkeypatch.setattr(gluon_overlap, "kernel", module)
    monkeypatch.setattr(gc, "kernel", module)
    monkeypatch.setitem(__import__("sys").modules, "gluon_overlap.kernel", module)
    monkeypatch.setattr(gc, "_compiled", {})
    renamed = gc.compile_variant("mxfp8", "mxfp8", True)
    assert "qq_single" in renamed.ttgir and "overlap_bar" not in renamed.ttgir  # it is the renamed kernel
    assert evidence.evidence_checks(renamed) == evidence.evidence_checks(seed)
    assert renamed.evidence.arrive_barriers == seed.evidence.arrive_barriers
    assert all(c["ok"] for c in evidence.evidence_checks(renamed))


def _timed_trace(kernel_path):
    from gluon_overlap.interp.engine import Engine

    hw = load_hardware("b300")
    config = timing.kernel_config(hw, "mxfp8", "mxfp8", 256, 256 * 80 * 2, 1024, True, kernel_path)
    backend = CostBackend(hw, config)
    engine = Engine(backend, timed=True, trace=True)
    backend.roles = streams.roles(recordings.launch_recorded(engine, config, clusters=[0]))
    return engine.run().trace


def test_the_timeline_draws_the_same_lanes_for_the_renamed_kernel(renamed_kernel):
    import matplotlib.pyplot as plt

    from gluon_overlap.plots.timeline import draw_lanes

    drawn = []
    for path in (None, str(renamed_kernel)):
        fig, ax = plt.subplots()
        stats = draw_lanes(ax, _timed_trace(path))
        markers = sum(1 for line in ax.lines if line.get_marker() == "v")
        drawn.append((stats, [t.get_text() for t in ax.get_yticklabels()], markers))
        plt.close(fig)
    assert drawn[0] == drawn[1]
    stats, labels, markers = drawn[0]
    assert markers == 2 * 2  # the early release of each of the 2 tiles, in both CTAs' epilogue lanes
    assert stats["mma_busy"] > 0 and stats["mma_wait"] > 0
    assert labels == ["cta0 load", "cta0 mma", "cta0 epilogue", "cta1 load", "cta1 mma\n(lead issues)", "cta1 epilogue"]
