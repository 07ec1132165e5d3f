"""The executor end to end: ``gluon_overlap/kernel.py`` itself on the CPU, real data against the float64
reference, seed sweeps, the K-tail path, the named break edits."""

from __future__ import annotations

import pytest
import torch

from gluon_overlap.emulate.kernels import BREAKS
from gluon_overlap.emulate.runs import (
    ATOL,
    RTOL,
    SWEEP_BIASES,
    break_matrix,
    catch_report,
    emulate,
    find_failing_seed,
    sweep,
)
from gluon_overlap.formats import random_problem
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, make_plan

# 2 x 3 tiles of 256 x 256 on 2 clusters: each cluster runs 3 tiles (left, right, left again)
M, N, K, CLUSTERS = 512, 768, 512, 2


@pytest.fixture(scope="module")
def problems():
    return {pair: random_problem(M, N, K, *pair, seed=11) for pair in SEED_FORMAT_PAIRS}


def _close(result):
    # the reference is problem.reference: the float64 product of the dequantized operands
    torch.testing.assert_close(result.c.float(), result.reference, atol=ATOL, rtol=RTOL)


def _clean(r):
    return [str(h) for h in r.hazards[:3]], r.deadlock, r.failure


@pytest.mark.parametrize("overlap", [True, False], ids=["on", "off"])
@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
def test_matches_reference(problems, pair, overlap):
    r = emulate(problems[pair], overlap=overlap, clusters=CLUSTERS, seed=5)
    assert [len(r.config.tiles_of(c)) for c in range(CLUSTERS)] == [3, 3]
    assert r.hazards == [] and r.deadlock is None and r.failure is None, _clean(r)
    _close(r)
    assert r.matches_reference and r.ok
    assert r.kernel.endswith("kernel.py")


@pytest.mark.parametrize("overlap", [True, False], ids=["on", "off"])
@pytest.mark.parametrize(
    "pair,m,n",
    [
        (("nvfp4", "nvfp4"), 700, 296),
        (("mxfp8", "mxfp4"), 520, 336),
        (("mxfp4", "mxfp4"), 260, 1000),
        (("mxfp8", "mxfp8"), 600, 520),
    ],
)
def test_ragged_shapes_zero_fill_and_clip(pair, m, n, overlap):
    """M and N not multiples of 256 (N a multiple of 8, the kernel's TMA rule): loads past the edge fill
    zeros, stores past it are dropped -- C holds exactly the reference and nothing was written outside."""
    p = random_problem(m, n, 512, *pair, seed=3)
    r = emulate(p, overlap=overlap, clusters=2, seed=1)
    assert min(len(r.config.tiles_of(c)) for c in range(2)) >= 3
    assert r.hazards == [] and r.deadlock is None and r.failure is None, _clean(r)
    assert r.c.shape == (m, n)
    assert torch.isfinite(r.c).all()  # every element stored (C starts as NaN)
    _close(r)


@pytest.mark.parametrize("pair,k", [(("nvfp4", "nvfp4"), 384), (("mxfp4", "mxfp4"), 640), (("nvfp4", "nvfp4"), 128)])
def test_k_tail_runs_and_matches_the_reference(pair, k):
    """K a multiple of 128 but not of BLOCK_K (256 for fp4): the last K step's TMA box runs past K, the
    zero fill makes its extra products vanish, and C matches the float64 reference."""
    plan = make_plan(*pair)
    assert k % 128 == 0 and k % plan.block_k
    p = random_problem(M, N, k, *pair, seed=4)
    r = emulate(p, clusters=CLUSTERS, seed=2)
    assert r.ok, _clean(r)
    _close(r)
    steps = -(-k // plan.block_k)
    mmas = [op for op in r.trace if op.kind == "mma" and op.cluster == 0]
    assert len(mmas) == 3 * steps  # 3 tiles of this cluster
    last_a = [op for op in r.trace if op.kind == "tma_load" and op.operand == "a" and op.cluster == 0 and op.cta == 0][
        steps - 1
    ]
    a_cols = plan.block_k // 2  # packed fp4 bytes per K step
    assert last_a.x.coord[1] + a_cols > k // 2  # the box really leaves A


def test_200_seed_sweep_is_clean(problems):
    res = sweep(problems[("nvfp4", "nvfp4")], 200, overlap=True, clusters=CLUSTERS)
    assert res.seeds == 200 and res.ok, res.summary()
    assert (res.hazard_runs, res.deadlock_runs, res.wrong_c_runs, res.first_failure) == (0, 0, 0, None)
    assert res.summary()["biases"] == list(SWEEP_BIASES)


# Clean sweeps guard the race detector against false positives.  ``make test`` runs 6 or 12 interleavings (every
# completion bias under both schedules at least once); ``make test-slow`` the same sweeps over 30.
FAST_AND_SLOW_SEEDS = [6, pytest.param(30, marks=pytest.mark.slow)]


@pytest.mark.parametrize("seeds", FAST_AND_SLOW_SEEDS)
@pytest.mark.parametrize(
    "pair", [("mxfp8", "mxfp8"), ("mxfp4", "mxfp4"), ("mxfp8", "mxfp4")], ids=lambda p: f"{p[0]}x{p[1]}"
)
@pytest.mark.parametrize("overlap", [True, False], ids=["on", "off"])
def test_other_formats_are_clean_under_interleavings(problems, pair, overlap, seeds):
    res = sweep(problems[pair], seeds, overlap=overlap, clusters=CLUSTERS)
    assert res.ok, res.summary()


@pytest.mark.parametrize("seeds", [12, pytest.param(30, marks=pytest.mark.slow)])
def test_overlap_off_sweep_is_clean(problems, seeds):
    res = sweep(problems[("nvfp4", "nvfp4")], seeds, overlap=False, clusters=CLUSTERS)
    assert res.ok, res.summary()


def test_late_completions_still_catch_a_broken_kernel(problems):
    # the biased scheduler is not too lenient: a missing overlap wait is still caught within a few seeds (the
    # runs stop at the first that catches it)
    p = problems[("nvfp4", "nvfp4")]
    late = (
        emulate(
            p, overlap=True, clusters=CLUSTERS, breaks=["skip-overlap-wait"], seed=s, trace=False, completion_bias=0.05
        )
        for s in range(10)
    )
    assert any(r.hazards and not r.matches_reference for r in late)


def test_sweep_counts_and_names_the_first_failing_seed(problems):
    res = sweep(problems[("nvfp4", "nvfp4")], 6, clusters=CLUSTERS, breaks=["wrong-overlap-phase"])
    assert res.deadlock_runs == res.failed_runs == 6 and not res.ok
    assert res.first_failure.seed == 0 and res.summary()["first_failing_seed"] == 0
    with pytest.raises(ValueError, match="seeds=0"):
        sweep(problems[("nvfp4", "nvfp4")], 0)


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
            window = plan.accumulator(local)
            loads = [op.columns for op in mine if op.kind == "tmem_load"]
            want = [plan.subtile_columns(local, s) for s in plan.drain_order(local)]
            assert [(c.offset, c.cols) for c in loads] == [(w.offset, w.cols) for w in want]
            assert all(window.offset <= c.offset and c.offset + c.cols <= window.end for c in loads)
            kinds = [
                (op.kind, getattr(op, "bar", None) and op.bar.name)
                for op in mine
                if op.kind == "tmem_load" or (op.kind == "arrive" and op.bar.name in ("overlap", "acc_empty"))
            ]
            assert kinds.index(("arrive", "overlap")) == plan.early_release_subtile + 1  # right after that load
            assert kinds[-1] == ("arrive", "acc_empty")


# --- the named break edits ----------------------------------------------------------------------------------

OVERLAP_BREAKS = ["skip-overlap-wait", "early-release", "even-low-to-high"]


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
@pytest.mark.parametrize("brk", OVERLAP_BREAKS)
def test_overlap_breaks_corrupt_the_overlapped_columns(problems, pair, brk):
    r = find_failing_seed(problems[pair], [brk], clusters=CLUSTERS, seeds=range(60))
    assert r is not None, f"{brk} not caught for {pair}"
    assert r.deadlock is None and not r.matches_reference
    ov = make_plan(*pair).overlap_window
    tmem = [h for h in r.hazards if h.kind.startswith("tmem-")]
    assert tmem and {h.kind for h in tmem} <= {"tmem-read-after-write", "tmem-write-after-read"}
    for h in tmem:
        assert ov.offset <= h.columns[0] < h.columns[1] <= ov.end, str(h)
        assert h.line is not None and h.line.name.startswith("kernel.py")
    # the wrong elements of C lie in overlapped columns: the end of a left tile or the start of a right one
    cols = torch.nonzero(r.bad.any(dim=0)).flatten() % 256
    assert cols.numel() and (((cols >= ov.offset) & (cols < ov.end)) | (cols < ov.cols)).all()


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
def test_wrong_overlap_phase_deadlocks_on_the_overlap_barrier(problems, pair):
    r = emulate(problems[pair], clusters=CLUSTERS, breaks=["wrong-overlap-phase"], seed=0)
    assert r.deadlock is not None
    mma = [b for b in r.deadlock.blocked if b["partition"] == "mma"]
    assert mma and all(b["barrier_name"] == "overlap" and b["phase"] == 0 for b in mma)


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=lambda p: f"{p[0]}x{p[1]}")
def test_skip_acc_empty_wait_is_caught_with_overlap_off(problems, pair):
    r = find_failing_seed(problems[pair], ["skip-acc-empty-wait"], overlap=False, clusters=CLUSTERS, seeds=range(40))
    assert r is not None and not r.matches_reference
    assert any(h.kind.startswith("tmem-") and h.columns[1] <= 256 for h in r.hazards)


@pytest.mark.parametrize("seeds", [12, pytest.param(30, marks=pytest.mark.slow)])
def test_skip_acc_empty_wait_is_harmless_with_overlap_on(problems, seeds):
    """A finding: the overlap wait of tile i (early release of tile i-1 in both CTAs) already implies that the
    in-order epilogue of each CTA finished draining tile i-2, so acc_empty is redundant with overlap on."""
    res = sweep(problems[("nvfp4", "nvfp4")], seeds, clusters=CLUSTERS, breaks=["skip-acc-empty-wait"])
    assert res.ok, res.summary()


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
    assert "tmem-" in text and "kernel.py" in text
    assert catch_report(None, 50) == "not caught under 50 interleavings"
