"""The timing model replays recorded streams of the real kernel: check the two things that makes valid.

1. What each process issues does not depend on the interleaving (so one recording stands for all).
2. A replay on a timed engine gives exactly the schedule a direct executor run of the kernel gives.
"""

from __future__ import annotations

import pytest

from gluon_overlap.emulate.config import KernelConfig, launch
from gluon_overlap.emulate.runs import UNIT_COSTS
from gluon_overlap.interp import engine as E
from gluon_overlap.interp import ops
from gluon_overlap.interp.data import ExecBackend
from gluon_overlap.timing.streams import record, replay
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, make_plan


def signature(op: ops.Op) -> tuple:
    """What an operation is, independent of when it ran: kind, barrier, phase, columns, stage."""
    bar = getattr(op, "bar", None)
    cols = getattr(op, "columns", None) or getattr(op, "window", None)
    return (
        op.kind,
        bar.label if bar is not None else None,
        getattr(op, "phase", None),
        (cols.offset, cols.end) if cols is not None else None,
        getattr(op, "stage", None),
        getattr(op, "nbytes", None),
        tuple(b.label for b in getattr(op, "bars", ())),
    )


def streams_of(recording) -> list[tuple]:
    return sorted((s.partition, s.cta, s.cluster, tuple(signature(op) for op in s.ops)) for s in recording.streams)


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS)
@pytest.mark.parametrize("overlap", [False, True])
def test_streams_do_not_depend_on_the_interleaving(pair, overlap):
    config = KernelConfig(make_plan(*pair, overlap=overlap), 512, 768, 1024, clusters=2)
    first = streams_of(record(config, seed=0))
    for seed in (1, 2):
        assert streams_of(record(config, seed=seed)) == first
    # the recording holds both CTAs' load, MMA and epilogue partitions of both clusters
    assert {(p, c, cl) for p, c, cl, _ in first} >= {
        (p, c, cl) for p in ("load", "mma", "epilogue") for c in (0, 1) for cl in (0, 1)
    }
    # the non-lead MMA partition issues nothing but its end-of-partition arrival (SEMANTICS.md 3)
    mma1 = [ops for p, c, _, ops in first if p == "mma" and c == 1]
    assert all([op[0] for op in ops] == ["arrive"] for ops in mma1)


class UnitCosts(E.Backend):
    def duration(self, op: ops.Op) -> float:
        return UNIT_COSTS.get(op.kind, 0.0)

    def resource(self, op: ops.Op):
        return ("tensor", op.cluster) if op.kind in ("mma", "scale_copy") else None


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS)
@pytest.mark.parametrize("overlap", [False, True])
def test_replay_equals_a_direct_timed_run_of_the_kernel(pair, overlap):
    config = KernelConfig(make_plan(*pair, overlap=overlap), 512, 768, 1024)
    direct = E.Engine(ExecBackend(costs=UNIT_COSTS, data=False), timed=True)
    res = launch(direct, config, clusters=[0])
    assert res.error is None and res.deadlock is None
    replayed = E.Engine(UnitCosts(), timed=True)
    replay(replayed, record(config, clusters=[0]))
    again = replayed.run()
    assert again.deadlock is None
    assert again.time == res.time > 0
    timeline = sorted((op.proc.name, op.t_issue, op.t_end, signature(op)) for op in res.trace)
    assert sorted((op.proc.name, op.t_issue, op.t_end, signature(op)) for op in again.trace) == timeline
