"""The engine (mbarrier semantics, SEMANTICS.md section 1; ordering, deadlocks, timed mode) and the kernel's own
small building blocks (Counter, TileScheduler) and barriers as the executor runs them."""

from __future__ import annotations

import pytest
import torch

from gluon_overlap import kernel
from gluon_overlap.emulate.config import KernelConfig, launch
from gluon_overlap.emulate.runs import emulate
from gluon_overlap.formats import random_problem
from gluon_overlap.interp.data import ExecBackend
from gluon_overlap.interp.engine import Backend, Engine
from gluon_overlap.interp.launch import call
from gluon_overlap.interp.ops import Arrive, Barrier, Commit, Expect, Mma, TmaLoad, Wait
from gluon_overlap.pingpong import tile_schedule
from gluon_overlap.tmem import make_plan


def _run(engine: Engine, *gens, partition: str = "p"):
    for j, g in enumerate(gens):
        engine.spawn(g, partition=f"{partition}{j}", cta=0, cluster=0)
    return engine.run()


def test_fresh_barrier_parity_one_passes_and_parity_zero_blocks():
    eng = Engine()
    bar = eng.barrier("b", count=1)
    order = []

    def passes():
        yield Wait(bar, 1)
        order.append("p1 passed")

    def blocks():
        yield Wait(bar, 0)
        order.append("p0 passed")

    res = _run(eng, passes(), blocks())
    assert order == ["p1 passed"]
    assert res.deadlock is not None
    (row,) = res.deadlock.blocked
    assert (row["barrier_name"], row["phase"], row["completed"], row["pending"]) == ("b", 0, 0, 1)


@pytest.mark.parametrize("completions", range(5))
def test_wait_returns_exactly_when_completed_mod_2_differs_from_phase(completions):
    eng = Engine()
    bar = eng.barrier("b", count=2)

    def arrivals():
        for _ in range(completions):
            yield Arrive(bar, 1)
            yield Arrive(bar, 1)

    _run(eng, arrivals())
    assert bar.completed == completions
    assert bar.pending == 2
    for phase in (0, 1):
        assert bar.ready(phase) == (completions % 2 != phase)


def test_arrive_with_count_and_expect_tx():
    eng = Engine()
    bar = eng.barrier("b", count=3)
    seen = []

    def gen():
        yield Arrive(bar, count=2)
        seen.append(bar.completed)
        yield Expect(bar, 100)  # the last arrival, but 100 bytes still outstanding
        seen.append((bar.completed, bar.pending, bar.tx))
        yield TmaLoad(bar, "a", 0, 60, (0,))
        yield TmaLoad(bar, "b", 0, 40, (0,))
        yield Wait(bar, 0)
        seen.append(bar.completed)

    res = _run(eng, gen())
    assert res.deadlock is None
    assert seen == [0, (0, 0, 100), 1]


def test_tx_is_signed_bytes_may_land_before_the_other_ctas_expect():
    """Pair barrier with count 2: CTA 1's bytes land before CTA 0 expects; the phase completes only at the end."""
    log = []

    def cta1():
        yield Wait(bar, 1)
        yield Wait(bar, 1)
        yield Expect(bar, 10)
        yield TmaLoad(bar, "a", 0, 10, (1,))

    def cta0():
        yield Wait(bar, 1)  # passes at once (fresh barrier)
        yield TmaLoad(bar, "a", 0, 10, (0,))  # bytes before this CTA's expect: tx goes to -10
        log.append(bar.tx)
        yield Expect(bar, 10)
        yield Wait(bar, 0)
        log.append(bar.completed)

    # timed mode with zero durations runs in creation order with completions after issue: deterministic
    eng = Engine(timed=True)
    bar = eng.barrier("load_ready", count=2)
    eng.spawn(cta0(), partition="load", cta=0, cluster=0)
    eng.spawn(cta1(), partition="load", cta=1, cluster=0)
    res = eng.run()
    assert res.deadlock is None
    assert bar.completed == 1 and bar.tx == 0
    assert log == [-10, 1]


def test_parity_alias_is_reported():
    """Waiting for completion 1 when 2 phases already completed: C = m + 1 breaks the precondition."""
    eng = Engine()
    bar = eng.barrier("b", count=1)

    def gen():
        yield Arrive(bar)
        yield Arrive(bar)
        yield Wait(bar, 0, target=1)

    res = _run(eng, gen())
    assert [h.kind for h in res.hazards] == ["parity-alias"]
    assert res.deadlock is not None  # parity 0 with C = 2 blocks: the aliasing hazard in action


def test_parity_alias_too_early_is_reported():
    """Waiting for completion 3 (parity 0) with only 1 completed phase: C = m - 2 returns at once, too early."""
    eng = Engine()
    bar = eng.barrier("b", count=1)
    passed = []

    def gen():
        yield Arrive(bar)
        yield Wait(bar, 0, target=3)
        passed.append(bar.completed)
        yield Wait(bar, 0, target=1)  # C = 1 = m: legal, returns at once

    res = _run(eng, gen())
    assert passed == [1] and res.deadlock is None
    assert [h.kind for h in res.hazards] == ["parity-alias"]
    assert "completion 3" in res.hazards[0].detail


class _Clock(Backend):
    def duration(self, op):
        return {"mma": 5.0, "tma_load": 2.0}.get(op.kind, 0.0)

    def resource(self, op):
        return ("tensor", op.cluster) if op.kind == "mma" else None


class _Track(Backend):
    def __init__(self, log):
        self.log = log

    def on_complete(self, op):
        self.log.append(op.kind)


def _mma_then_commit(bar, w):
    yield Mma(0, 0, w, False)
    yield Mma(1, 1, w, True)
    yield Commit((bar,))


def _epilogue(bar, log):
    yield Wait(bar, 0)
    log.append("epilogue")


def test_commit_arrives_only_after_earlier_mmas_of_its_issuer():
    w = make_plan("nvfp4", "nvfp4").left
    for seed in range(30):
        done = []
        eng = Engine(_Track(done), seed=seed)
        bar = eng.barrier("acc_ready", count=1)
        res = _run(eng, _mma_then_commit(bar, w), _epilogue(bar, done))
        assert res.deadlock is None
        assert done == ["mma", "mma", "commit", "epilogue"]


def test_timed_mode_serialises_a_resource_and_is_deterministic():
    w = make_plan("nvfp4", "nvfp4").left
    times = []
    for _ in range(2):
        eng = Engine(_Clock(), timed=True)
        bar = eng.barrier("acc_ready", count=1)
        ops = []

        def mma(ops=ops, bar=bar):
            for k in range(3):
                op = Mma(k, k, w, k > 0)
                ops.append(op)
                yield op
            yield Commit((bar,))

        def epi(bar=bar):
            yield Wait(bar, 0)

        res = _run(eng, mma(), epi())
        times.append([(o.t_start, o.t_end) for o in ops] + [res.time])
    assert times[0] == times[1]
    assert times[0] == [(0.0, 5.0), (5.0, 10.0), (10.0, 15.0), 15.0]


def test_max_steps_guard():
    eng = Engine(max_steps=3)
    bar = eng.barrier("b")

    def forever():
        while True:
            yield Arrive(bar)

    res = _run(eng, forever())
    assert res.step_limit_hit and res.steps == 3


def _counter(phase0, n):
    return call(kernel.Counter.create, phase0, n)


def test_counter_matches_the_seed():
    """Use j of Counter(phase0, n) -- the kernel's own aggregate, run by the executor: barrier j % n with
    parity phase0 ^ ((j // n) & 1)."""
    for n in (1, 2, 5):
        for phase0 in (0, 1):
            c = _counter(phase0, n)
            for j in range(23):
                assert (int(c.index), int(c.phase)) == (j % n, phase0 ^ ((j // n) & 1))
                c = call(kernel.Counter.next, c)


def test_counter_next_with_a_false_predicate_stays():
    c = call(kernel.Counter.next, _counter(1, 5))
    same = call(kernel.Counter.next, c, False)
    assert (same.index, same.phase, same.num_barriers) == (c.index, c.phase, 5) == (1, 1, 5)


def test_counter_phases_match_the_plans_tile_schedule():
    plan = make_plan("nvfp4", "nvfp4")
    acc_empty, acc_ready = _counter(1, 2), _counter(0, 2)
    for step in tile_schedule(plan, 8):
        assert (acc_empty.index, acc_empty.phase) == (step.acc_index, step.acc_empty_phase)
        assert (acc_ready.index, acc_ready.phase) == (step.acc_index, step.acc_ready_phase)
        assert step.overlap_phase == (step.tile + 1) % 2
        acc_empty, acc_ready = call(kernel.Counter.next, acc_empty), call(kernel.Counter.next, acc_ready)


def test_tile_scheduler_walks_row_major_tiles():
    """The kernel's TileScheduler._at: tile t of a NUM_PID_M x NUM_PID_N grid is (t // N, t % N), offsets
    are the tile coordinates times the block, past the last tile there is no work."""
    for t in range(13):
        s = call(kernel.TileScheduler._at, t, 256, 256, 3, 4)
        assert bool(s.has_work) == (t < 12)
        if t < 12:
            assert (s.pid_m, s.pid_n) == (t // 4, t % 4)
            assert call(kernel.TileScheduler.get_offsets, s) == (256 * (t // 4), 256 * (t % 4))


@pytest.mark.parametrize("m,n,clusters", [(512, 768, 2), (700, 1000, 3), (256, 1280, None)])
def test_persistent_schedule_covers_every_tile_once(m, n, clusters):
    """In a launch, cluster c's i-th tile is c + grid * i (grid = min(tiles, SMs / 2) by default), and its
    A and B loads and its C stores sit at that tile's rows / columns (pid_m = tile // NUM_PID_N)."""
    p = random_problem(m, n, 256, "mxfp4", "mxfp4", seed=2)
    r = emulate(p, clusters=clusters, seed=0)
    assert r.ok
    num_pid_m, num_pid_n = -(-m // 256), -(-n // 256)
    grid = clusters or max(1, min(num_pid_m * num_pid_n, 148 // 2))
    assert r.config.grid == grid
    stored = set()
    for op in r.trace:
        if op.kind not in ("tma_load", "tma_store"):
            continue
        tile = op.cluster + grid * op.local
        assert op.tile == tile
        pid_m, pid_n = tile // num_pid_n, tile % num_pid_n
        if op.kind == "tma_load" and op.operand == "a":
            assert op.x.coord[0] == 256 * pid_m + 128 * op.cta
        if op.kind == "tma_load" and op.operand == "b":
            assert op.x.coord[0] == 256 * pid_n + 128 * op.cta
        if op.kind == "tma_store":
            assert op.x.coord[0] == 256 * pid_m + 128 * op.cta and op.x.coord[1] // 256 == pid_n
            stored.add(tile)
    assert stored == set(range(num_pid_m * num_pid_n))


def test_expect_bytes_per_cta_match_the_ptx():
    """nvfp4, BLOCK_K 256: one stage is 16384 (A) + 16384 (B) + 2048 + 4096 (scales) = 38912 bytes per CTA,
    the expect-tx count observed in the compiled PTX (SEMANTICS.md section 3)."""
    r = emulate(random_problem(256, 256, 256, "nvfp4", "nvfp4", seed=0), clusters=1, seed=0)
    expects = [op for op in r.trace if op.kind == "expect"]
    assert expects and {op.nbytes for op in expects} == {38912}
    assert {op.cta for op in expects} == {0, 1} and {op.bar.cta for op in expects} == {0}


def _launch(pair, m, n, k, clusters, overlap=True):
    p = random_problem(m, n, k, *pair, seed=1)
    cfg = KernelConfig(make_plan(*pair, overlap=overlap), m, n, k, clusters=clusters)
    eng = Engine(ExecBackend(), seed=0)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    res = launch(eng, cfg, problem=p, c=c)
    return eng, res


KERNEL_BARRIERS = {"load_empty", "load_ready", "acc_empty", "acc_ready", "overlap"}


@pytest.mark.parametrize("overlap", [True, False], ids=["on", "off"])
def test_barriers_of_a_launch_have_the_seeds_scopes_and_counts(overlap):
    """Per-CTA barriers (load_empty, acc_ready) have a copy in each CTA with count 1; pair barriers
    (load_ready, acc_empty, overlap) one copy, in the lead, with count 1 x 2 CTAs (SEMANTICS.md 3)."""
    eng, res = _launch(("mxfp8", "mxfp8"), 512, 512, 256, 1, overlap)
    assert res.ok
    counts, numbers = {}, {}
    for b in eng.barriers:
        if b.name in KERNEL_BARRIERS:
            counts.setdefault(b.name, set()).add((b.cta, b.count))
            numbers[b.name] = numbers.get(b.name, 0) + 1
    assert counts == {
        "load_empty": {(0, 1), (1, 1)},
        "load_ready": {(0, 2)},
        "acc_empty": {(0, 2)},
        "acc_ready": {(0, 1), (1, 1)},
        "overlap": {(0, 2)},
    }
    windows = 2 if overlap else 1
    assert numbers == {"load_empty": 10, "load_ready": 5, "acc_empty": windows, "acc_ready": 2 * windows, "overlap": 1}


def test_pair_barriers_complete_only_with_both_ctas_arrivals():
    """Every completed phase of acc_empty / overlap got exactly one arrival from each CTA's epilogue."""
    eng, res = _launch(("nvfp4", "nvfp4"), 512, 768, 256, 2)
    assert res.ok
    by_bar = {}
    for op in res.trace:
        if op.kind == "arrive" and op.bar.name in ("acc_empty", "overlap"):
            by_bar.setdefault(id(op.bar), []).append(op.cta)
    assert by_bar
    for b in eng.barriers:
        if id(b) in by_bar:
            ctas = by_bar[id(b)]
            assert sorted(ctas) == [0, 1] * (len(ctas) // 2) or sorted(ctas) == sorted([0, 1] * b.completed)
            assert ctas.count(0) == ctas.count(1) == b.completed


def test_config_validation():
    plan = make_plan("nvfp4", "nvfp4")
    with pytest.raises(ValueError, match="k=0"):
        KernelConfig(plan, 256, 256, 0)
    with pytest.raises(ValueError, match="not a known break"):
        KernelConfig(plan, 256, 256, 256, breaks=frozenset({"nope"}))
    with pytest.raises(ValueError, match="needs overlap on"):
        KernelConfig(make_plan("nvfp4", "nvfp4", overlap=False), 256, 256, 256, breaks=frozenset({"skip-overlap-wait"}))


def test_barrier_rejects_zero_count():
    with pytest.raises(ValueError, match="count=0"):
        Barrier("b", count=0)


def test_completion_bias_must_be_positive():
    import pytest

    from gluon_overlap.interp.engine import Engine

    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="completion_bias"):
            Engine(completion_bias=bad)


def test_an_unknown_op_kind_is_an_error_in_the_engine_and_the_timing_model():
    """An op the engine has no kind for is never silently a no-op, and the timing model never prices an op it
    does not know at zero (it names the kinds it prices)."""
    from gluon_overlap.interp.ops import Op

    class Mystery(Op):
        kind = "mystery"

    def gen():
        yield Mystery()

    with pytest.raises(ValueError, match="unknown operation kind 'mystery'"):
        _run(Engine(), gen())

    from gluon_overlap.hardware import load_hardware
    from gluon_overlap.interp.ops import GlobalStore
    from gluon_overlap.timing.backend import CostBackend

    backend = CostBackend.__new__(CostBackend)  # duration() reads only the clock before it dispatches on the kind
    backend.engine = Engine()
    op = GlobalStore.__new__(GlobalStore)
    with pytest.raises(ValueError, match="no cost for a 'global_store' operation"):
        CostBackend.duration(backend, op)
    assert load_hardware("b300")  # the model itself still loads
