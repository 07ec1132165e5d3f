"""The CPU twin end to end: real data against the float64 reference, interleavings, break switches."""

from __future__ import annotations

import pytest
import torch

from gluon_overlap.formats import random_problem
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, make_plan
from gluon_overlap.twin.emulate import break_matrix, catch_report, emulate, find_failing_seed
from gluon_overlap.twin.protocol import BREAKS

# 2 x 3 tiles of 256 x 256 on 2 clusters: each cluster runs 3 tiles (left, right, left again)
M, N, K, CLUSTERS = 512, 768, 512, 2


@pytest.fixture(scope="module")
def problems():
    return {pair: random_problem(M, N, K, *pair, seed=11) for pair in SEED_FORMAT_PAIRS}


def _close(result):
    torch.testing.assert_close(result.c.float(), result.reference, atol=2e-3, rtol=1e-3)


@pytest.mark.parametrize("overlap", [True, False], ids=["on", "off"])
@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
def test_matches_reference(problems, pair, overlap):
    r = emulate(problems[pair], overlap=overlap, clusters=CLUSTERS, seed=5)
    assert [len(r.config.tiles_of(c)) for c in range(CLUSTERS)] == [3, 3]
    assert r.hazards == [] and r.deadlock is None
    _close(r)
    assert r.matches_reference


@pytest.mark.parametrize("overlap", [True, False], ids=["on", "off"])
@pytest.mark.parametrize("pair,m,n", [(("nvfp4", "nvfp4"), 700, 300), (("mxfp8", "mxfp4"), 520, 333),
                                      (("mxfp4", "mxfp4"), 260, 1000)])
def test_ragged_shapes_zero_fill_and_clip(pair, m, n, overlap):
    p = random_problem(m, n, 512, *pair, seed=3)
    r = emulate(p, overlap=overlap, clusters=2, seed=1)
    assert min(len(r.config.tiles_of(c)) for c in range(2)) >= 3
    assert r.hazards == [] and r.deadlock is None
    assert r.c.shape == (m, n)
    _close(r)


def test_correct_protocol_is_clean_under_200_interleavings(problems):
    p = problems[("nvfp4", "nvfp4")]
    for seed in range(200):
        r = emulate(p, overlap=True, clusters=CLUSTERS, seed=seed, trace=False)
        assert r.ok, (seed, [str(h) for h in r.hazards], r.deadlock)


@pytest.mark.parametrize("bias", [0.05, 20.0])
def test_correct_protocol_is_clean_when_async_work_completes_late_or_early(problems, bias):
    # the uniform scheduler rarely leaves a TMA load or an MMA pending for long; these sweeps do
    p = problems[("nvfp4", "nvfp4")]
    for overlap in (True, False):
        for seed in range(40):
            r = emulate(p, overlap=overlap, clusters=CLUSTERS, seed=seed, trace=False, completion_bias=bias)
            assert r.ok, (bias, overlap, seed, [str(h) for h in r.hazards], r.deadlock)


def test_late_completions_still_catch_a_broken_protocol(problems):
    # the biased scheduler is not too lenient: a missing overlap wait is still caught within a few seeds
    p = problems[("nvfp4", "nvfp4")]
    late = [emulate(p, overlap=True, clusters=CLUSTERS, breaks=["skip-overlap-wait"], seed=s, trace=False,
                    completion_bias=0.05) for s in range(10)]
    assert any(r.hazards and r.matches_reference is False for r in late)


def test_correct_protocol_is_clean_under_interleavings_other_formats(problems):
    for pair in (("mxfp8", "mxfp8"), ("mxfp4", "mxfp4")):
        for overlap in (True, False):
            for seed in range(15):
                r = emulate(problems[pair], overlap=overlap, clusters=CLUSTERS, seed=seed, trace=False)
                assert r.ok, (pair, overlap, seed, [str(h) for h in r.hazards])


def test_timed_run_is_correct_and_overlap_is_faster(problems):
    p = problems[("nvfp4", "nvfp4")]
    off = emulate(p, overlap=False, clusters=1, timed=True)
    on = emulate(p, overlap=True, clusters=1, timed=True)
    assert off.ok and on.ok
    assert on.time < off.time


def test_epilogue_drains_in_the_plans_order_and_releases_after_the_early_subtile(problems):
    r = emulate(problems[("nvfp4", "nvfp4")], overlap=True, clusters=CLUSTERS, seed=2)
    plan = r.config.plan
    for cta in (0, 1):
        ops = [op for op in r.trace if op.partition == "epilogue" and op.cta == cta and op.cluster == 0]
        for local in range(3):
            mine = [op for op in ops if op.local == local]
            loads = [op.subtile for op in mine if op.kind == "tmem_load"]
            assert loads == plan.drain_order(local)
            kinds = [op.kind for op in mine if op.kind in ("tmem_load", "arrive")]
            assert kinds.index("arrive") == plan.early_release_subtile + 1  # right after that subtile's load
            cols = [op.columns for op in mine if op.kind == "tmem_load"]
            assert cols == [plan.subtile_columns(local, s) for s in plan.drain_order(local)]


# --- break switches ---------------------------------------------------------------------------------------------

OVERLAP_BREAKS = ["skip-overlap-wait", "early-release", "even-low-to-high"]


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
@pytest.mark.parametrize("brk", OVERLAP_BREAKS)
def test_overlap_breaks_corrupt_the_overlapped_columns(problems, pair, brk):
    r = find_failing_seed(problems[pair], [brk], clusters=CLUSTERS, seeds=range(80))
    assert r is not None, f"{brk} not caught for {pair}"
    assert r.deadlock is None and not r.matches_reference
    ov = make_plan(*pair).overlap_window
    kinds = {h.kind for h in r.hazards}
    assert "mma-overwrites-undrained" in kinds
    for h in r.hazards:
        if h.kind in ("mma-overwrites-undrained", "epilogue-reads-overwritten"):
            assert ov.offset <= h.columns[0] < h.columns[1] <= ov.end, str(h)
    # the wrong elements of C lie in overlapped columns: the end of a left tile or the start of a right one
    cols = torch.nonzero(r.bad.any(dim=0)).flatten() % 256
    assert (((cols >= ov.offset) & (cols < ov.end)) | (cols < ov.cols)).all()


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
def test_wrong_overlap_phase_deadlocks_on_the_overlap_barrier(problems, pair):
    r = emulate(problems[pair], clusters=CLUSTERS, breaks=["wrong-overlap-phase"], seed=0)
    assert r.deadlock is not None
    mma = [b for b in r.deadlock.blocked if b["partition"] == "mma"]
    assert mma and all(b["barrier_name"] == "overlap" and b["phase"] == 0 for b in mma)


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
def test_skip_acc_empty_wait_is_caught_with_overlap_off(problems, pair):
    r = find_failing_seed(problems[pair], ["skip-acc-empty-wait"], overlap=False, clusters=CLUSTERS,
                          seeds=range(40))
    assert r is not None and not r.matches_reference
    assert any(h.kind == "mma-overwrites-undrained" and h.columns[1] <= 256 for h in r.hazards)


def test_skip_acc_empty_wait_is_harmless_with_overlap_on(problems):
    """A finding: the overlap wait of tile i (early release of tile i-1 in both CTAs) already implies that the
    in-order epilogue of each CTA finished draining tile i-2, so acc_empty is redundant with overlap on."""
    p = problems[("nvfp4", "nvfp4")]
    for seed in range(40):
        r = emulate(p, clusters=CLUSTERS, breaks=["skip-acc-empty-wait"], seed=seed, trace=False)
        assert r.ok, seed


def test_every_break_switch_is_tested():
    assert set(BREAKS) == set(OVERLAP_BREAKS) | {"wrong-overlap-phase", "skip-acc-empty-wait"}


def test_break_matrix_reports_how_each_switch_is_caught(problems):
    pair = ("nvfp4", "nvfp4")
    cases = [("wrong-overlap-phase", True), ("skip-acc-empty-wait", True)]
    rows = break_matrix({pair: problems[pair]}, cases, clusters=CLUSTERS, seeds_for=lambda brk: range(5))
    assert rows == [["nvfp4 x nvfp4", "deadlock (seed 0)", "not caught (5 seeds)"]]


def test_catch_report_names_the_seed_the_damage_and_the_hazards(problems):
    p = problems[("nvfp4", "nvfp4")]
    res = find_failing_seed(p, ["skip-overlap-wait"], clusters=CLUSTERS, seeds=range(50))
    text = catch_report(res, 50)
    assert text.startswith(f"caught with scheduler seed {res.seed}: {int(res.bad.sum())} wrong elements of C")
    assert "mma-overwrites-undrained" in text
    assert catch_report(None, 50) == "not caught under 50 interleavings"
