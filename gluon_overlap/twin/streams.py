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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gluon_overlap.twin import engine as E
from gluon_overlap.twin.execdata import ExecBackend
from gluon_overlap.twin.kernel_launch import KernelConfig, launch


@dataclass(frozen=True)
class Stream:
    """One process of the recording: its name, its operations and the processes it forked."""

    partition: str
    cta: int
    cluster: int
    ops: tuple[E.Op, ...]
    forks: tuple[tuple[int, int], ...]  # (number of own ops executed before the fork, child stream index)


@dataclass(frozen=True)
class Recording:
    """The streams of one launch, and its barriers (name, index, cta, cluster, count) in creation order."""

    streams: tuple[Stream, ...]
    roots: tuple[int, ...]
    barriers: tuple[E.Barrier, ...]


_CACHE: dict[tuple, Recording] = {}


def _key(config: KernelConfig, clusters: tuple[int, ...] | None) -> tuple:
    """What a recording depends on: the loaded kernel module (one per distinct source text) and the launch."""
    return (config.module().__name__, config.plan, config.m, config.n, config.k, config.grid, clusters)


def record(config: KernelConfig, clusters: Iterable[int] | None = None, *, seed: int = 0) -> Recording:
    """Run the kernel of ``config`` once without data and record every process's operations (cached)."""
    clusters = None if clusters is None else tuple(clusters)
    key = _key(config, clusters) + (seed,)
    if key in _CACHE:
        return _CACHE[key]
    engine = E.Engine(ExecBackend(data=False), seed=seed, trace=True)
    res = launch(engine, config, clusters=clusters)
    if res.error is not None or res.deadlock is not None or res.step_limit_hit:
        raise RuntimeError(f"recording the kernel's streams failed: {res.error or res.deadlock}")
    procs = [p for p, _, _ in res.spawns]
    index = {p.pid: i for i, p in enumerate(procs)}
    ops: dict[int, list[E.Op]] = {p.pid: [] for p in procs}
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


def replay(engine: E.Engine, recording: Recording) -> None:
    """Spawn the recording's processes on ``engine``.

    For speed the recorded operation and barrier objects themselves are replayed (reset first), not
    copies: a recording runs on one engine at a time, and the ops of a replay keep their time stamps
    only until the next replay of the same recording."""
    _reset(recording)
    engine.barriers.extend(recording.barriers)

    def run(i: int) -> Any:
        stream = recording.streams[i]
        pending = sorted(stream.forks)
        done = 0
        for op in stream.ops:
            while pending and pending[0][0] == done:
                spawn(pending.pop(0)[1])
            yield op
            done += 1
        while pending:
            spawn(pending.pop(0)[1])

    def spawn(i: int) -> None:
        s = recording.streams[i]
        engine.spawn(run(i), partition=s.partition, cta=s.cta, cluster=s.cluster)

    for i in recording.roots:
        spawn(i)


def launch_recorded(engine: E.Engine, config: KernelConfig, clusters: Iterable[int] | None = None) -> Recording:
    """The timing model's launch: replay the recorded streams of ``config`` on ``engine``."""
    recording = record(config, clusters)
    replay(engine, recording)
    return recording
