"""The engine's holdback schedule finds deadlocks that need one process to be late, and names the
parity alias; seeded runs are deterministic.

The protocol below deadlocks only if the consumer is delayed past *both* of the producer's phases
(more than 30 producer steps): its wait for completion 1 then sees 2 completed phases, the parity
names completion 3, and nothing brings it.  Uniform picks delay the consumer that long with
probability about 2**-31; holding it back does so whenever the consumer is the held process.
"""

from __future__ import annotations

import pytest

from gluon_overlap.emulate.runs import SWEEP_SCHEDULES, sweep_schedule
from gluon_overlap.interp.engine import Engine
from gluon_overlap.interp.ops import Arrive, Op, Wait

GAP = 30  #: producer steps between its two arrivals


class Noop(Op):
    __slots__ = ()
    kind = "noop"


def _run(seed: int, schedule: str, bias: float = 1.0) -> Engine:
    eng = Engine(seed=seed, schedule=schedule, completion_bias=bias)
    bar = eng.barrier("ready", 0, count=1)

    def producer():
        yield Arrive(bar)
        for _ in range(GAP):
            yield Noop()
        yield Arrive(bar)

    def consumer():
        yield Wait(bar, 0)  # meant for completion 1

    eng.spawn(producer(), partition="producer", cta=0, cluster=0)
    eng.spawn(consumer(), partition="consumer", cta=0, cluster=0)
    eng.result = eng.run()
    return eng


def test_uniform_picks_miss_the_latent_deadlock_in_40_seeds():
    assert all(_run(seed, "uniform", bias).result.deadlock is None for seed in range(40) for bias in (1.0, 0.05, 20.0))


def test_holdback_finds_it_and_names_the_parity_alias():
    found = [seed for seed in range(10) if _run(seed, "holdback").result.deadlock is not None]
    assert len(found) >= 3  # the consumer is held in about half the seeds
    dl = _run(found[0], "holdback").result.deadlock
    (row,) = dl.blocked
    assert row["partition"] == "consumer" and row["completed"] == 2
    assert "parity alias" in row["parity_alias"] and "meant completion 1" in row["parity_alias"]
    assert "parity alias" in str(dl)


def test_a_deadlock_without_alias_is_not_called_one():
    eng = Engine(seed=0)
    bar = eng.barrier("never", 0, count=1)

    def waiter():
        yield Wait(bar, 0)

    eng.spawn(waiter(), partition="consumer", cta=0, cluster=0)
    (row,) = eng.run().deadlock.blocked
    assert row["parity_alias"] is None


@pytest.mark.parametrize("schedule", ["uniform", "holdback"])
def test_same_seed_same_schedule(schedule):
    def order(seed):
        return [(op.proc.partition, op.kind) for op in _run(seed, schedule).trace]

    assert order(5) == order(5)
    assert any(order(5) != order(s) for s in range(6, 12))


def test_sweeps_use_both_schedules():
    assert set(SWEEP_SCHEDULES) == {"uniform", "holdback"}
    assert [sweep_schedule(s) for s in range(len(SWEEP_SCHEDULES))] == list(SWEEP_SCHEDULES)


@pytest.mark.parametrize(
    "kw,needle", [({"schedule": "pct"}, "schedule='pct'"), ({"change_every": 0}, "change_every=0")]
)
def test_bad_schedule_arguments(kw, needle):
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        Engine(**kw)


def test_waiting_again_on_the_phase_just_waited_for_is_legal():
    """Issue 31: the consumer waits twice with the same parity while the barrier completed once -- the second wait
    asks again for the phase the first one returned on, which is complete: legal (tutorial 07's
    ``wait_num_outstanding(0)`` before the next MMA and once more before the epilogue), not a parity alias."""
    eng = Engine(seed=0)
    bar = eng.barrier("ready", 0, count=1)

    def producer():
        yield Arrive(bar)

    def consumer():
        yield Wait(bar, 0)
        yield Wait(bar, 0)  # the same completed phase again: returns at once

    eng.spawn(producer(), partition="producer", cta=0, cluster=0)
    eng.spawn(consumer(), partition="consumer", cta=0, cluster=0)
    res = eng.run()
    assert res.ok, res.hazards


def test_a_stale_parity_that_blocks_is_still_a_parity_alias_in_the_deadlock():
    """The stale parity that matters -- one that names a phase two completions back, so the wait blocks forever --
    is still told: the deadlock row says the parity aliases."""
    eng = Engine(seed=0)
    bar = eng.barrier("ready", 0, count=1)
    go = eng.barrier("go", 0, count=1)

    def producer():
        yield Arrive(bar)
        yield Arrive(bar)
        yield Arrive(go)

    def consumer():
        yield Wait(go, 0)
        yield Wait(bar, 0)  # meant the first completion; after two, parity 0 names a third, which never comes

    eng.spawn(producer(), partition="producer", cta=0, cluster=0)
    eng.spawn(consumer(), partition="consumer", cta=0, cluster=0)
    res = eng.run()
    assert res.deadlock is not None
    row = res.deadlock.blocked[0]
    assert row["parity_alias"] and "parity alias" in row["parity_alias"]


def test_waits_that_each_consume_a_new_phase_are_not_aliases():
    eng = Engine(seed=0)
    bar = eng.barrier("ready", 0, count=1)

    def producer():
        yield Arrive(bar)
        yield Arrive(bar)

    def consumer():
        yield Wait(bar, 0)
        yield Wait(bar, 1)

    eng.spawn(producer(), partition="producer", cta=0, cluster=0)
    eng.spawn(consumer(), partition="consumer", cta=0, cluster=0)
    res = eng.run()
    assert res.ok
