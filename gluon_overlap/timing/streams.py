"""Recorded operation streams of the real kernel, replayed by the timing model.

The timing model runs the kernel many times -- every format, K, overlap setting and hardware
description, and every corner of the parameter ranges -- on the engine's timed mode.  What each
partition *issues* does not depend on timing: ``kernel.py`` has no data- or time-dependent control
flow (a wait returns nothing; the loops depend only on shapes).  So the executor runs the real
kernel once per configuration, without data, and records each process's sequence of operations
and where it forked its partitions; :func:`replay` then feeds copies of those operations to any
engine, as fast as a hand-written mirror would, but with nothing hand-written: the streams are the
kernel's.  ``tests/test_streams.py`` checks both assumptions -- that the streams are the same under
different interleavings, and that a replay predicts exactly what a direct executor run predicts.

**Roles, from what the kernel does.**  :func:`roles` reads from a recording (or a trace) who does what -- never what
anything is called: a partition that issues MMAs is the *issuer*, one that loads TMEM into registers the *drain*,
one that issues TMA loads the *loader*; a barrier is *remote* when some arrival on it comes from a CTA other than
its owner (a DSMEM arrive, a multicast commit, a peer's expect or TMA bytes); a barrier *gates the MMA on the
epilogue* when the issuer waits on it and the drain arrives on it; a drain arrive on such a barrier is an *early
release* when the same tile still has TMEM loads after it.  The timing model, ``compile``'s evidence and the
timeline plot use these roles, so renaming a barrier, a partition or a helper of ``kernel.py`` changes nothing.
The Op fields read: ``kind``, ``bar`` (Wait / Arrive / Expect / TmaLoad), ``bars`` (Commit), ``local`` (the
tile loop index), the issuing process's ``cta`` and partition identity, and each barrier's owner ``cta``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gluon_overlap.emulate.config import KernelConfig, launch
from gluon_overlap.interp.data import ExecBackend
from gluon_overlap.interp.engine import Engine
from gluon_overlap.interp.ops import Arrive, Barrier, Commit, Expect, Op, TmaLoad, Wait
from gluon_overlap.tmem import BLOCK_M, BLOCK_N


@dataclass(frozen=True)
class Stream:
    """One process of the recording: its name, its operations and the processes it forked."""

    partition: str
    cta: int
    cluster: int
    ops: tuple[Op, ...]
    forks: tuple[tuple[int, int], ...]  # (number of own ops executed before the fork, child stream index)


@dataclass(frozen=True)
class Recording:
    """The streams of one launch, and its barriers (name, index, cta, cluster, count) in creation order."""

    streams: tuple[Stream, ...]
    roots: tuple[int, ...]
    barriers: tuple[Barrier, ...]


_CACHE: dict[tuple, Recording] = {}


def _key(config: KernelConfig, clusters: tuple[int, ...] | None) -> tuple:
    """What a recording depends on: the loaded kernel module (one per distinct source text) and the launch."""
    return (config.module().__name__, config.plan, config.m, config.n, config.k, config.grid, clusters)


def record(config: KernelConfig, clusters: Iterable[int] | None = None, *, seed: int = 0) -> Recording:
    """Run the kernel of ``config`` once without data and record every process's operations (cached).

    The timing model asks :func:`gluon_overlap.timing.recordings.recording`, which serves the unedited kernel's
    recordings from the package's shipped ones when they come from the installed sources."""
    clusters = None if clusters is None else tuple(clusters)
    key = _key(config, clusters) + (seed,)
    if key in _CACHE:
        return _CACHE[key]
    engine = Engine(ExecBackend(data=False), seed=seed, trace=True)
    # the shipped kernel.py, unedited, needs no compiler's check per recording (tests/test_compile.py compiles it
    # to an sm_100a cubin in every configuration; the check was a quarter of `model`'s time); edits are checked
    unedited = config.kernel_path is None and not config.breaks
    res = launch(engine, config, clusters=clusters, precheck=not unedited)
    if res.error is not None or res.deadlock is not None or res.step_limit_hit:
        raise RuntimeError(f"recording the kernel's streams failed: {res.error or res.deadlock}")
    procs = [p for p, _, _ in res.spawns]
    index = {p.pid: i for i, p in enumerate(procs)}
    ops: dict[int, list[Op]] = {p.pid: [] for p in procs}
    for op in res.trace:
        ops[op.proc.pid].append(op)
    forks: dict[int, list[tuple[int, int]]] = {p.pid: [] for p in procs}
    roots = []
    for child, parent, after in res.spawns:
        if parent is None:
            roots.append(index[child.pid])
        else:
            forks[parent.pid].append((after, index[child.pid]))
    streams = tuple(Stream(p.partition, p.cta, p.cluster, tuple(ops[p.pid]), tuple(forks[p.pid])) for p in procs)
    out = Recording(streams, tuple(roots), tuple(engine.barriers))
    _CACHE[key] = out
    return out


def _reset(recording: Recording) -> None:
    """Put the recording's barriers back to their initial state and clear its operations' time stamps."""
    for b in recording.barriers:
        b.pending, b.tx, b.completed, b.arrivals = b.count, 0, 0, 0
        b.waiters, b.completion_times = [], []
    for stream in recording.streams:
        for op in stream.ops:
            op.proc = None
            op.t_issue = op.t_start = op.t_end = 0.0


def replay(engine: Engine, recording: Recording) -> None:
    """Spawn the recording's processes on ``engine``.

    For speed the recorded operation and barrier objects themselves are replayed (reset first), not
    copies: a recording runs on one engine at a time, and the ops of a replay keep their time stamps
    only until the next replay of the same recording."""
    _reset(recording)
    engine.barriers.extend(recording.barriers)

    def run(i: int) -> Any:
        stream = recording.streams[i]
        ops = stream.ops
        done = 0  # operations yielded so far
        forks = sorted(stream.forks)
        for n, (after, child) in enumerate(forks):
            if not done <= after <= len(ops):  # never reached while yielding: this fork and the rest come at the end
                forks = forks[n:]
                break
            for op in ops[done:after]:
                yield op
            done = after
            spawn(child)
        else:
            forks = []
        for op in ops[done:]:
            yield op
        for _, child in forks:
            spawn(child)

    def spawn(i: int) -> None:
        s = recording.streams[i]
        engine.spawn(run(i), partition=s.partition, cta=s.cta, cluster=s.cluster)

    for i in recording.roots:
        spawn(i)


# --- roles -------------------------------------------------------------------------------
ISSUER, DRAIN, LOADER, OTHER = "mma", "epilogue", "load", "other"  # role labels (ours, not the kernel's names)
_ROLE_OF_KIND = {"mma": ISSUER, "tmem_load": DRAIN, "tma_load": LOADER}


def _arrival_barriers(op: Op) -> tuple[Barrier, ...]:
    """The barriers ``op`` arrives on (an arrive, an expect, a commit's barriers, a TMA load's complete_tx)."""
    if isinstance(op, (Arrive, Expect, TmaLoad)):
        return (op.bar,)
    if isinstance(op, Commit):
        return tuple(op.bars)
    return ()


@dataclass(frozen=True)
class Roles:
    """Who does what in one launch, learnt from its operations (see the module docstring).

    Barriers and operations are identified by object identity (``id``): the recording's objects are replayed."""

    partition_roles: dict[Hashable, str]  # partition identity -> ISSUER / DRAIN / LOADER / OTHER
    remote: frozenset[int]  # id(barrier): some arrival on it comes from another CTA than its owner
    gates: frozenset[int]  # id(barrier): the issuer waits on it, the drain arrives on it
    gate_waits: frozenset[int]  # id(Wait op): the issuer waiting on a gate
    drain_arrives: frozenset[int]  # id(Arrive op): issued by the drain
    early_releases: frozenset[int]  # id(Arrive op): a drain arrive on a gate before its tile's last TMEM load
    partition_waited: frozenset[int]  # id(barrier): waited on by a loader, issuer or drain (not only by a launcher)

    def role_of(self, partition: Hashable) -> str:
        return self.partition_roles.get(partition, OTHER)


def roles_of(processes: Sequence[tuple[Hashable, int, Sequence[Op]]]) -> Roles:
    """Roles from ``(partition identity, cta, ops in issue order)`` per process."""
    partition_roles: dict[Hashable, str] = {}
    for part, _, ops in processes:
        for op in ops:
            role = _ROLE_OF_KIND.get(op.kind)
            if role is not None and partition_roles.get(part, OTHER) in (OTHER, LOADER):
                partition_roles[part] = role  # an MMA or TMEM-load issuer that also loads keeps the stronger role
        partition_roles.setdefault(part, OTHER)
    remote: set[int] = set()
    waited_by_issuer: set[int] = set()
    arrived_by_drain: set[int] = set()
    partition_waited: set[int] = set()
    for part, cta, ops in processes:
        role = partition_roles[part]
        for op in ops:
            for bar in _arrival_barriers(op):
                if bar.cta != cta:
                    remote.add(id(bar))
                if role == DRAIN and op.kind == "arrive":
                    arrived_by_drain.add(id(bar))
            if isinstance(op, Wait) and role == ISSUER:
                waited_by_issuer.add(id(op.bar))
            if isinstance(op, Wait) and role != OTHER:
                partition_waited.add(id(op.bar))
    gates = frozenset(waited_by_issuer & arrived_by_drain)
    gate_waits: set[int] = set()
    drain_arrives: set[int] = set()
    early: set[int] = set()
    for part, _, ops in processes:
        role = partition_roles[part]
        if role == ISSUER:
            gate_waits.update(id(op) for op in ops if isinstance(op, Wait) and id(op.bar) in gates)
        if role != DRAIN:
            continue
        loads_after: set = set()  # tiles with TMEM loads still to come, scanning backwards
        for op in reversed(ops):
            if op.kind == "tmem_load":
                loads_after.add(op.local)
            elif isinstance(op, Arrive):
                drain_arrives.add(id(op))
                if id(op.bar) in gates and op.local in loads_after:
                    early.add(id(op))
    return Roles(
        partition_roles,
        frozenset(remote),
        gates,
        frozenset(gate_waits),
        frozenset(drain_arrives),
        frozenset(early),
        frozenset(partition_waited),
    )


_ROLES: dict[int, tuple[Recording, Roles]] = {}


def roles(recording: Recording) -> Roles:
    """The roles of a recording's processes, barriers and operations (cached with the recording)."""
    hit = _ROLES.get(id(recording))
    if hit is None or hit[0] is not recording:
        procs = [((s.partition, s.cluster), s.cta, s.ops) for s in recording.streams]
        hit = _ROLES[id(recording)] = (recording, roles_of(procs))
    return hit[1]


def trace_roles(trace: Iterable[Op]) -> Roles:
    """The roles of an executed trace's processes (ops grouped by their process, in trace order)."""
    by_proc: dict[int, tuple[Hashable, int, list[Op]]] = {}
    for op in trace:
        if op.proc is None:
            continue
        entry = by_proc.setdefault(op.proc.pid, ((op.proc.partition, op.proc.cluster), op.proc.cta, []))
        entry[2].append(op)
    return roles_of(list(by_proc.values()))


def drain_arrive_roles(plan: Any) -> tuple[tuple[bool, int], ...]:
    """For each arrive of the epilogue (the drain role) of CTA 0 in its first tile, in order: whether the MMA
    issuer waits on that barrier, and how many barriers its array has -- from a recording of one small launch."""

    rec = record(KernelConfig(plan, m=BLOCK_M, n=BLOCK_N, k=plan.block_k, clusters=1), clusters=[0])
    found = roles(rec)
    sizes: dict[tuple, int] = {}
    for b in rec.barriers:  # an array's barriers share their allocation's label and owner
        key = (b.name, b.cta, b.cluster)
        sizes[key] = max(sizes.get(key, 0), b.index + 1)
    out = []
    for stream in rec.streams:
        if stream.cta != 0 or found.role_of((stream.partition, stream.cluster)) != DRAIN:
            continue
        for op in stream.ops:
            if isinstance(op, Arrive) and op.local == 0 and id(op.bar) in found.partition_waited:
                out.append((id(op.bar) in found.gates, sizes[(op.bar.name, op.bar.cta, op.bar.cluster)]))
    return tuple(out)
