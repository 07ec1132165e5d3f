"""Hazard detection of the twin checked against independent oracles computed from the trace.

The hardware may read a shared-memory stage, or write TMEM columns, at any moment between an
operation's issue and its completion.  So the hazards are defined on issue / completion times, which
the trace records; each test below recomputes the expected hazards from the trace alone (not from the
data backend's bookkeeping) and compares.  The protocol bugs used here are not learner break switches:
the tests drop one kind of wait from a partition (``_skipping``).
"""

from __future__ import annotations

import pytest
import torch

from gluon_overlap.formats import random_problem
from gluon_overlap.tmem import SCALE_K_PER_CHUNK, make_plan
from gluon_overlap.twin import protocol
from gluon_overlap.twin.datapath import DataBackend
from gluon_overlap.twin.emulate import ATOL, RTOL, emulate, run_config
from gluon_overlap.twin.engine import Arrive, Engine, Wait
from gluon_overlap.twin.protocol import KernelConfig, launch

M, N, K, CLUSTERS = 512, 768, 512, 2


@pytest.fixture(scope="module")
def nvfp4():
    return random_problem(M, N, K, "nvfp4", "nvfp4", seed=11)


def _skipping(partition_fn, barrier_name):
    """Wrap a partition so that it drops its waits on ``barrier_name`` (a test-only protocol bug)."""

    def wrapped(p):
        gen = partition_fn(p)
        value = None
        while True:
            try:
                op = gen.send(value)
            except StopIteration:
                return
            if isinstance(op, Wait) and op.bar.name == barrier_name:
                value = None
                continue
            value = yield op

    return wrapped


def _patch(monkeypatch, partition, barrier_name):
    parts = tuple((name, _skipping(fn, barrier_name) if name == partition else fn)
                  for name, fn in protocol.PARTITIONS)
    monkeypatch.setattr(protocol, "PARTITIONS", parts)


def _done(op):
    """Data mode stamps an async op's t_end with its completion step (>= 1); one never completed keeps 0."""
    return op.t_end > 0


# --- TMA overwriting a stage the MMA has not consumed ---------------------------------------------------------


def _expected_stage_overwrites(trace):
    """(cluster, cta, stage, time) of every TMA load issued into a stage whose previous load's MMA had not
    completed yet (whether that previous load had landed or was still in flight)."""
    mma_end = {(op.cluster, op.tile, op.kstep): op for op in trace if op.kind == "mma"}
    last = {}
    out = set()
    for op in trace:
        if op.kind != "tma_load":
            continue
        for dest in op.dests:
            key = (op.cluster, dest, op.stage, op.operand)
            prev = last.get(key)
            if prev is not None and (prev.tile, prev.kstep) != (op.tile, op.kstep):
                mma = mma_end.get((op.cluster, prev.tile, prev.kstep))
                if mma is None or not (_done(mma) and mma.t_end < op.t_issue):
                    out.add((op.cluster, dest, op.stage, op.t_issue))
            last[key] = op
    return out


def test_tma_overwriting_an_unconsumed_stage_is_reported_exactly(monkeypatch, nvfp4):
    """Loads that skip the load_empty wait (two stages): every load issued before the MMA that reads the
    stage's previous load completed is reported, and nothing else is.  (Consumption belongs to the MMA's own
    tile and K step: an MMA that completes on a stage already overwritten did not consume the newer bytes.)"""
    _patch(monkeypatch, "load", "load_empty")
    cfg = KernelConfig(make_plan("nvfp4", "nvfp4"), M, N, K, clusters=CLUSTERS, num_buffers=2)
    seen = wrong = 0
    for seed in range(12):
        r = run_config(nvfp4, cfg, seed=seed)
        expected = _expected_stage_overwrites(r.trace)
        reported = {(h.cluster, h.cta, h.stage, h.time) for h in r.hazards
                    if h.kind == "tma-overwrites-unconsumed-stage"}
        assert reported == expected, (seed, sorted(expected - reported)[:5], sorted(reported - expected)[:5])
        seen += bool(expected)
        wrong += not r.matches_reference
    assert seen >= 10 and wrong >= 1


# --- MMA / scale copy reading a stage before its bytes landed --------------------------------------------------


def test_mma_issued_before_its_stage_landed_is_reported(monkeypatch, nvfp4):
    """The MMA skips the load_ready wait: each scale copy or MMA issued before all bytes of its stage (both
    CTAs, all operands it reads) had landed is reported at its issue time, even when the bytes land before
    the operation completes (the twin reads at completion, the hardware at any moment after issue)."""
    _patch(monkeypatch, "mma", "load_ready")
    cfg = KernelConfig(make_plan("nvfp4", "nvfp4"), M, N, K, clusters=CLUSTERS)
    late_landing = 0
    for seed in range(10):
        r = run_config(nvfp4, cfg, seed=seed)
        loads = {}
        for op in r.trace:
            if op.kind == "tma_load":
                loads.setdefault((op.cluster, op.tile, op.kstep), []).append(op)
        hz_times = {h.time for h in r.hazards if h.kind in ("mma-reads-stale-stage", "scale-copy-reads-stale-stage")}
        for op in r.trace:
            if op.kind not in ("mma", "scale_copy"):
                continue
            need = [ld for ld in loads.get((op.cluster, op.tile, op.kstep), [])
                    if op.kind == "mma" or ld.operand == op.operand]
            missing = len(need) < (7 if op.kind == "mma" else (2 if op.operand == "a_scale" else 1)) or any(
                not (_done(ld) and ld.t_end < op.t_issue) for ld in need)
            if missing:
                assert op.t_issue in hz_times, (seed, op)
                if need and all(_done(ld) and ld.t_end < op.t_end for ld in need):
                    late_landing += 1
    assert late_landing > 0  # landed between issue and completion: invisible to a completion-time check


# --- MMA writing columns the epilogue has not drained ----------------------------------------------------------


def _expected_undrained_writes(trace, plan):
    """(time, cta, column) for every first-K-step MMA issued into a column whose previous writer (the latest
    earlier tile of the cluster whose window holds it) had not been read there by that CTA's epilogue."""
    mmas = [op for op in trace if op.kind == "mma" and op.kstep == 0]
    reads = {}
    for op in trace:
        if op.kind == "tmem_load":
            for c in op.columns.columns():
                reads.setdefault((op.cluster, op.cta, op.tile, c), op.t_issue)
    out = set()
    by_cluster = {}
    for op in mmas:
        by_cluster.setdefault(op.cluster, []).append(op)
    for ops in by_cluster.values():
        for j, op in enumerate(ops):
            for c in op.window.columns():
                prev = next((q for q in reversed(ops[:j]) if c in q.window.columns()), None)
                if prev is None:
                    continue
                for cta in (0, 1):
                    t = reads.get((op.cluster, cta, prev.tile, c))
                    if t is None or t >= op.t_issue:
                        out.add((op.t_issue, cta, c))
    return out


@pytest.mark.parametrize("k", [256, 512])
@pytest.mark.parametrize("brk,overlap", [("skip-overlap-wait", True), ("early-release", True),
                                         ("skip-acc-empty-wait", False)])
def test_undrained_writes_are_reported_exactly(brk, overlap, k):
    """Including the case where the previous tile's MMA into those columns is still in flight when the next
    tile's MMA is issued (its result is not in TMEM yet, but the epilogue has not read it either; with one
    K step per tile and overlap off this happens under several of these seeds)."""
    problem = random_problem(M, N, k, "nvfp4", "nvfp4", seed=11)
    plan = make_plan("nvfp4", "nvfp4", overlap=overlap)
    for seed in range(25):
        r = emulate(problem, overlap=overlap, clusters=CLUSTERS, breaks=[brk], seed=seed)
        expected = _expected_undrained_writes(r.trace, plan)
        reported = set()
        for h in r.hazards:
            if h.kind == "mma-overwrites-undrained":
                reported |= {(h.time, h.cta, c) for c in range(*h.columns)}
        assert reported == expected, (brk, seed, sorted(expected - reported)[:3], sorted(reported - expected)[:3])


# --- the epilogue reading before acc_ready ---------------------------------------------------------------------


def test_epilogue_reading_before_acc_ready_is_reported_as_unfinished(monkeypatch, nvfp4):
    """The epilogue skips its acc_ready wait.  Its reads then find columns its tile has not written yet (an
    earlier tile's values) or not finished; that is reported as such -- never as 'overwritten by a later
    tile', which cannot happen here -- and C is wrong."""
    _patch(monkeypatch, "epilogue", "acc_ready")
    cfg = KernelConfig(make_plan("nvfp4", "nvfp4"), M, N, K, clusters=CLUSTERS)
    for seed in range(6):
        r = run_config(nvfp4, cfg, seed=seed)
        kinds = {h.kind for h in r.hazards}
        assert kinds & {"epilogue-reads-unwritten", "epilogue-reads-incomplete"}, seed
        assert "epilogue-reads-overwritten" not in kinds, (seed, [str(h) for h in r.hazards][:4])
        assert not r.matches_reference


# --- the MMA really reads the scales from TMEM --------------------------------------------------------------------


class _CorruptScale(DataBackend):
    """After the scale copy of (tile 0, K step 0), overwrite one scale byte in one CTA's TMEM."""

    def __init__(self, problem, config, cta, lane, column, byte):
        super().__init__(problem, config)
        self.where = (cta, lane, column, byte)

    def on_complete(self, op):
        super().on_complete(op)
        if op.kind == "scale_copy" and op.tile == 0 and op.kstep == 0 and op.cluster == 0:
            cta, lane, col, byte = self.where
            self.tmem_bytes[0][cta][lane, 4 * col + byte] = 0x7F  # a huge e4m3 scale (448)


@pytest.mark.parametrize("operand", ["a", "b"])
def test_a_corrupted_scale_column_corrupts_exactly_its_row_of_c(nvfp4, operand):
    """SEMANTICS.md section 4: column c of a chunk holds, in lane l, the 4 k-scales of row 32 c + l.
    Corrupting k-scale 1 of A row 37 (CTA 1, i.e. C row 128 + 37) or of B row 160 (in CTA 0) must change C
    exactly in that row / column of tile 0, and nowhere else."""
    plan = make_plan("nvfp4", "nvfp4")
    cfg = KernelConfig(plan, M, N, K, clusters=CLUSTERS)
    k = 1
    if operand == "a":
        cta, row = 1, 37
        where = (cta, row, plan.a_scale_column(k // SCALE_K_PER_CHUNK) + row // 32, k % 4)
    else:
        cta, row = 0, 160  # N row 160: chunk nb = 1, row 32 within it -> lane 32, column + 1
        rho = row % 128
        where = (cta, rho, plan.b_scale_column(row // 128, k // SCALE_K_PER_CHUNK) + rho // 32, k % 4)
    backend = _CorruptScale(nvfp4, cfg, *where)
    eng = Engine(backend, seed=3)
    launch(eng, cfg)
    res = eng.run()
    assert res.deadlock is None
    bad = ~torch.isclose(backend.c.float(), nvfp4.reference, atol=ATOL, rtol=RTOL)
    rows, cols = torch.nonzero(bad, as_tuple=True)
    assert rows.numel() > 100  # most of the row or column is now wrong
    if operand == "a":
        assert set(rows.tolist()) == {128 * cta + row} and int(cols.max()) < 256
    else:
        assert set(cols.tolist()) == {row} and int(rows.max()) < 256


# --- the persistent schedule and the accumulate flag ----------------------------------------------------------


@pytest.mark.parametrize("m,n,clusters", [(512, 768, 2), (700, 1000, 3), (256, 1280, None)])
def test_schedule_is_the_seeds_sps_tile_scheduler(m, n, clusters):
    """Cluster c takes tiles c, c + grid, ... with pid_m = tile // NUM_PID_N (the seed's SpsTileScheduler),
    grid = max(1, min(tiles, SMs // 2)) by default; every tile's MMAs use use_acc=False only on K step 0."""
    p = random_problem(m, n, 256, "mxfp4", "mxfp4", seed=2)
    r = emulate(p, clusters=clusters, seed=0)
    assert r.ok
    num_pid_m, num_pid_n = -(-m // 256), -(-n // 256)
    grid = clusters or max(1, min(num_pid_m * num_pid_n, 148 // 2))
    assert r.config.grid == grid
    for op in r.trace:
        if op.kind == "tma_load":
            tile = op.cluster + grid * op.local
            assert (op.tile, op.pid_m, op.pid_n) == (tile, tile // num_pid_n, tile % num_pid_n)
        if op.kind == "mma":
            assert op.use_acc == (op.kstep != 0)
            assert op.window == r.config.plan.accumulator(op.local)


def test_non_lead_mma_partition_issues_nothing_and_pair_barriers_get_both_ctas(nvfp4):
    r = emulate(nvfp4, clusters=CLUSTERS, seed=4)
    assert not [op for op in r.trace if op.partition == "mma" and op.cta == 1]
    for op in r.trace:
        if op.kind in ("expect", "tma_load"):
            assert op.bar.name == "load_ready" and op.bar.cta == 0
        if isinstance(op, Arrive):
            assert op.bar.cta == 0 and op.bar.name in ("overlap", "acc_empty")
        if op.kind == "commit":
            assert sorted(b.cta for b in op.bars) == [0, 1] and len({b.name for b in op.bars}) == 1
        if op.kind == "tma_load" and op.operand == "b_scale":
            assert op.cta == 0 and op.dests == (0, 1)
