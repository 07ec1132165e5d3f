"""A small discrete-event engine for the CPU twin of the kernel's protocol.

The kernel's partitions run concurrently and talk only through mbarriers, shared
memory and TMEM.  Each partition is a process whose generator ``yield``\\ s
operation objects (:class:`Op` subclasses) to this engine -- the executor's
greenlets running the real kernel (:mod:`gluon_overlap.interp.launch`), or a replay
of their recorded operations (:mod:`gluon_overlap.timing.streams`); the engine
decides when each operation happens, applies the mbarrier semantics itself, and
hands the hardware actions to a **backend** that decides what they *do*:

* the data backend (:mod:`gluon_overlap.interp.data`) moves real bytes, computes
  the MMA into a real TMEM array and does the hazard bookkeeping; every
  duration is 0;
* a cost backend (the timing model) moves nothing and returns durations.

API (stable; the timing model builds on it)
-------------------------------------------
``engine = Engine(backend, timed=False, seed=0, max_steps=None, trace=True)``
    ``engine.barrier(name, index, cta=, cluster=, count=)`` creates an mbarrier,
    ``engine.spawn(gen, partition=, cta=, cluster=)`` adds a process,
    ``engine.run() -> RunResult`` runs to the end (or to a deadlock; never hangs).
    ``engine.now`` is the current time, ``engine.hazards`` the reported hazards,
    ``engine.trace`` the list of executed :class:`Op` objects (each stamped with
    ``t_issue`` / ``t_start`` / ``t_end`` and its process).

Backend protocol (every method optional; :class:`Backend` is a do-nothing base)
    ``attach(engine)``        called once by ``Engine.__init__``;
    ``duration(op) -> float`` how long ``op`` takes (timed mode only).  For a
                              synchronous op (TMEM load, shared store, arrive,
                              expect) it is the time the issuing process is busy;
                              for an asynchronous op (TMA load, scale copy, MMA,
                              commit, TMA store) it is its execution time, from
                              its start to its completion;
    ``issue_cost(op) -> float``  time the issuing process is busy issuing an
                              asynchronous op (default 0);
    ``resource(op) -> Hashable | None``  an async op with a resource starts only
                              when the resource is free and then occupies it for
                              ``duration(op)`` (e.g. ``("tensor", cluster)`` for
                              the MMAs of one cluster, ``("hbm",)`` for loads);
    ``wake_latency(op) -> float``  extra delay between a barrier completing and a
                              blocked :class:`Wait` resuming (default 0);
    ``on_issue(op) -> value`` called when ``op`` is issued; its return value is
                              what the partition receives from ``yield op``
                              (the data backend returns the loaded registers for
                              a :class:`TmemLoad`);
    ``on_complete(op)``       called when an async op completes (before its
                              barrier effect).

Scheduling
----------
*Data mode* (``timed=False``): time is a step counter.  At each step a seeded
RNG picks one candidate among the ready processes and the completable async
operations, so an async completion can be arbitrarily late relative to the
processes: that is what exposes races.  ``schedule="uniform"`` (default) picks
uniformly (weighted by ``completion_bias``); ``schedule="holdback"`` is a
delay-bounded schedule in the spirit of PCT (Burckhardt et al., ASPLOS 2010): one
process at a time is *held* -- it runs only when no other process is ready and no
completion is pending -- and at random change points (each step with probability
``1 / change_every``) another process, drawn by the seed, is held instead.  A
held partition falls behind for as long as the rest can make progress, across
whole tiles: that is where deadlocks that need one partition to be late (a wait
whose parity aliases only after a long delay) show, and uniform picks almost
never delay one process that long.  The same seed gives the same schedule.  *Timed mode* (``timed=True``): each
process has a clock; an op of duration ``d`` issued at ``t`` moves the clock to
``t + d``; an async op starts at ``max(t, resource free)``, completes
``duration`` later; the engine always advances the earliest event (ties in
creation order), so timed runs are deterministic.

Ordering: operations with the same ``pipe`` issued by one process complete in
issue order (``"tensor"``: scale copies, MMAs and commits, SEMANTICS.md section 2,
so a commit arrives only after every earlier MMA of its issuer; ``"store"``: TMA
stores, so ``StoreWait(n)`` means "all but the ``n`` newest stores are done").
Asynchronous ops with ``pipe = None`` (TMA loads) complete in any order.

mbarrier semantics (SEMANTICS.md section 1): ``init(count)`` starts phase 0 with
``pending = count``; ``arrive(c)`` lowers pending by ``c``; ``expect(bytes)`` adds
bytes to the (signed) tx-count then arrives once; a TMA completion subtracts its
bytes.  When pending is 0 and tx is 0 the phase completes (``completed += 1``,
pending reloaded).  ``Wait(bar, p)`` returns exactly when ``completed % 2 != p``.
With ``Wait(..., target=m)`` (the completion the protocol means to wait for) the
engine checks ``completed in {m - 1, m}`` at the start of the wait and reports a
``parity-alias`` hazard otherwise.  Without a target it can still tell, in a
deadlock, a blocked wait whose barrier already passed the completion it meant (the
deadlock row's ``parity_alias``).  A wait that returns at once on the phase the same
process's previous wait on that barrier returned on is legal (waiting again for a
phase known complete), not an alias: what a stale parity then breaks shows as the
races and deadlocks it causes.

Deadlock: when nothing can run and no completion is pending while a process is
still unfinished, ``run`` returns a :class:`Deadlock` naming every blocked process,
the barrier (name, index, owning CTA) and the phase it waits on.  ``max_steps``
bounds the number of executed operations (``RunResult.step_limit_hit``).
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections import deque
from collections.abc import Generator, Hashable
from dataclasses import dataclass, field
from typing import Any, cast

from gluon_overlap.interp.gc_pause import gc_paused
from gluon_overlap.interp.ops import OP_KINDS, Barrier, Commit, CpArrive, CpAsync, CpWait, Op, StoreWait, TmaLoad, Wait

# ----------------------------------------------------------------------------
# processes, hazards, results
# ----------------------------------------------------------------------------


class Process:
    """One partition of one CTA of one cluster: a generator plus scheduling state."""

    __slots__ = (
        "gen",
        "partition",
        "cta",
        "cluster",
        "clock",
        "blocked",
        "done",
        "send",
        "queues",
        "tile",
        "pid",
        "cp_pending",
        "cp_held",
    )

    def __init__(self, gen: Generator, partition: str, cta: int, cluster: int, pid: int):
        self.gen, self.partition, self.cta, self.cluster, self.pid = gen, partition, cta, cluster, pid
        self.clock = 0.0
        self.blocked: Op | None = None  # the Wait / StoreWait it is blocked on
        self.done = False
        self.send: Any = None  # value sent into the generator at its next step
        self.queues: dict[str, deque] = {}  # pipe name -> in-flight ops in issue order
        self.tile: int | None = None  # tile of the last op (for deadlock reports)
        self.cp_pending: set[int] = set()  # numbers of its cp.async copies in flight
        self.cp_held: list[CpArrive] = []  # its cp.async mbarrier arrivals waiting for earlier copies to land

    @property
    def name(self) -> str:
        return f"{self.partition}/cta{self.cta}/cluster{self.cluster}"

    def __repr__(self) -> str:
        return f"Process({self.name})"


@dataclass
class Hazard:
    """A protocol violation seen while running: what, where, when."""

    kind: str
    time: float
    partition: str
    cta: int
    cluster: int
    tile: int | None
    columns: tuple[int, int] | None = None  # half-open TMEM column range, if any
    stage: int | None = None
    detail: str = ""
    line: Any = None  # the kernel source line (a SourceLine) of the op that showed it
    local: int | None = None  # the cluster-local index of ``tile`` (0 = the cluster's first tile)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "time": self.time,
            "partition": self.partition,
            "cta": self.cta,
            "cluster": self.cluster,
            "tile": self.tile,
            "local": self.local,
            "columns": list(self.columns) if self.columns else None,
            "stage": self.stage,
            "detail": self.detail,
            "line": str(self.line) if self.line is not None else None,
        }

    def __str__(self) -> str:
        where = (
            f"cols [{self.columns[0]},{self.columns[1]})"
            if self.columns
            else (f"stage {self.stage}" if self.stage is not None else "")
        )
        tile = f"tile {self.tile}" + (f" (cluster's #{self.local})" if self.local is not None else "")
        at = f" at {self.line}" if self.line is not None else ""
        return (
            f"[t={self.time:g}] {self.kind}: {tile} {self.partition} cta{self.cta} "
            f"cluster{self.cluster} {where} {self.detail}"
        ).rstrip() + at


@dataclass
class Deadlock:
    """Everything blocked when the run could not go on."""

    time: float
    blocked: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "blocked": self.blocked}

    def __str__(self) -> str:
        lines = [f"deadlock at t={self.time:g}:"]
        for b in self.blocked:
            if b.get("barrier"):
                lines.append(
                    f"  {b['process']} (tile {b['tile']}) waits on {b['barrier']} phase {b['phase']} "
                    f"(completed phases {b['completed']}, pending {b['pending']}, tx {b['tx']})"
                )
                if b.get("parity_alias"):
                    lines.append(f"    {b['parity_alias']}")
            else:
                lines.append(f"  {b['process']} (tile {b['tile']}) blocked in {b['op']}")
        return "\n".join(lines)


@dataclass
class RunResult:
    time: float
    steps: int
    deadlock: Deadlock | None
    hazards: list[Hazard]
    trace: list[Op] = field(repr=False)
    step_limit_hit: bool = False

    @property
    def ok(self) -> bool:
        return self.deadlock is None and not self.hazards and not self.step_limit_hit


class Backend:
    """Do-nothing backend: every op takes no time and does nothing."""

    engine: Engine | None = None

    def attach(self, engine: Engine) -> None:
        self.engine = engine

    def duration(self, op: Op) -> float:
        return 0.0

    def issue_cost(self, op: Op) -> float:
        return 0.0

    def resource(self, op: Op) -> Hashable | None:
        return None

    def wake_latency(self, op: Op) -> float:
        return 0.0

    def on_issue(self, op: Op) -> Any:
        return None

    def on_complete(self, op: Op) -> None:
        return None


def _own(backend: Backend, name: str) -> Any:
    """``backend``'s method ``name``, or None when it is :class:`Backend`'s do-nothing one (which returns None):
    the timed loop does not call it."""
    method = getattr(backend, name)
    return None if getattr(method, "__func__", None) is getattr(Backend, name) else method


# ----------------------------------------------------------------------------
# the engine
# ----------------------------------------------------------------------------


#: the events an analysis can subscribe to (:meth:`Engine.subscribe`): ``on_arrive(bar, op)`` (an arrival, before
#: its effect), ``on_tx(bar, op)`` (a TMA completion's bytes), ``on_phase(bar)`` (a phase completes),
#: ``on_wait_return(proc, op)`` (a wait returns), ``on_exit(proc)`` (a process ends), ``on_executed(op)`` (an
#: operation was issued, in issue order)
EVENTS = ("on_arrive", "on_tx", "on_phase", "on_wait_return", "on_exit", "on_executed")


class Trace:
    """The analysis that keeps every executed operation, in order (``Engine(trace=True)`` subscribes one)."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def on_executed(self, op: Op) -> None:
        self.ops.append(op)


#: the data-mode schedules (see the module docstring)
SCHEDULES = ("uniform", "holdback")


class Engine:
    """Runs partition generators against mbarriers and a backend (see the module docstring)."""

    def __init__(
        self,
        backend: Backend | None = None,
        *,
        timed: bool = False,
        seed: int = 0,
        max_steps: int | None = None,
        trace: bool = True,
        completion_bias: float = 1.0,
        schedule: str = "uniform",
        change_every: int = 400,
    ):
        """``completion_bias`` (data mode): how likely a pending async completion is picked next,
        relative to a ready process.  1 (default) picks uniformly among all candidates; a small
        value (e.g. 0.05) makes TMA loads, MMAs and stores complete *late*, a large one *early* --
        the interleavings where a missing wait shows.  ``schedule`` / ``change_every``: see the module
        docstring (``"uniform"`` or ``"holdback"``, change points every ``change_every`` steps on average)."""
        if not completion_bias > 0:
            raise ValueError(f"completion_bias={completion_bias!r} must be > 0")
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule={schedule!r} must be one of {', '.join(SCHEDULES)}")
        if isinstance(change_every, bool) or not isinstance(change_every, int) or change_every < 1:
            raise ValueError(f"change_every={change_every!r} must be a positive integer")
        self.schedule, self.change_every = schedule, change_every
        #: (pid, id(barrier)) -> completed phases when that process's last wait on the barrier returned
        self._last_return: dict[tuple[int, int], int] = {}
        self.backend = backend if backend is not None else Backend()
        self.timed = timed
        self.rng = random.Random(seed)
        self.completion_bias = float(completion_bias)
        self.max_steps = max_steps
        self.halted = False  #: :meth:`halt` was called: the run ends after the current step
        self.now = 0.0
        self.steps = 0
        self.procs: list[Process] = []
        self.barriers: list[Barrier] = []
        self.hazards: list[Hazard] = []
        # data mode: candidates (ready processes and completable async ops)
        self._ready: list[Process] = []
        self._completable: list[Op] = []
        # timed mode: event heap of (time, seq, kind, payload)
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = itertools.count(1)  # the heap's tie-break: events at one time run in creation order
        self._resource_free: dict[Hashable, float] = {}
        self._pipe_tail: dict[tuple[int, str], float] = {}
        self._inflight = 0
        #: the analyses subscribed to the run's events (:meth:`subscribe`), per event
        self._hooks: dict[str, list[Any]] = {event: [] for event in EVENTS}
        self.analyses: list[Any] = []
        if trace:
            self.subscribe(Trace())
        hook = getattr(self.backend, "attach", None)
        if hook is not None:
            hook(self)

    # --- analyses -------------------------------------------------------------
    def subscribe(self, analysis: Any) -> Any:
        """Subscribe ``analysis`` to the run's events: each of its methods named in :data:`EVENTS` is called as
        they happen (the race detector's happens-before edges, the trace of executed operations).  Returns it."""
        self.analyses.append(analysis)
        for event in EVENTS:
            hook = getattr(analysis, event, None)
            if hook is not None:
                self._hooks[event].append(hook)
        return analysis

    @property
    def trace(self) -> list[Op]:
        """The executed operations in order (empty when the engine was made with ``trace=False``)."""
        for analysis in self.analyses:
            if isinstance(analysis, Trace):
                return analysis.ops
        return []

    # --- construction -------------------------------------------------------
    def barrier(self, name: str, index: int = 0, *, cta: int = 0, cluster: int = 0, count: int = 1) -> Barrier:
        """``mbarrier.init(bar, count)``: a fresh barrier in phase 0."""
        bar = Barrier(name, index, cta=cta, cluster=cluster, count=count)
        self.barriers.append(bar)
        return bar

    def spawn(self, gen: Generator, *, partition: str, cta: int, cluster: int, clock: float | None = None) -> Process:
        """Add a process; it becomes ready at ``clock`` (timed mode; default: now)."""
        proc = Process(gen, partition, cta, cluster, len(self.procs))
        self.procs.append(proc)
        self._make_ready(proc, self.now if clock is None else clock)
        return proc

    def report_hazard(
        self,
        kind: str,
        op: Op | None,
        detail: str = "",
        *,
        columns: tuple[int, int] | None = None,
        stage: int | None = None,
        cta: int | None = None,
        tile: int | None = None,
    ) -> Hazard:
        """Record a hazard at the current time (used by the engine and by backends)."""
        hz = Hazard(
            kind,
            self.now,
            op.partition if op else "?",
            cta if cta is not None else (op.cta if op else -1),
            op.cluster if op else -1,
            tile if tile is not None else (op.tile if op else None),
            columns,
            stage,
            detail,
            op.line if op else None,
            op.local if op is not None and tile is None else None,
        )
        self.hazards.append(hz)
        return hz

    # --- scheduling primitives ------------------------------------------------
    def _push(self, t: float, kind: int, payload: Any) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), kind, payload))

    def _make_ready(self, proc: Process, t: float) -> None:
        proc.blocked = None
        if self.timed:
            proc.clock = max(proc.clock, t)
            self._push(proc.clock, 0, proc)
        else:
            self._ready.append(proc)

    # --- barrier semantics ------------------------------------------------------
    def _arrive(self, bar: Barrier, count: int, op: Op | None) -> None:
        for hook in self._hooks["on_arrive"]:
            hook(bar, op)
        bar.arrivals += count
        bar.pending -= count
        if bar.pending < 0:
            self.report_hazard("barrier-over-arrival", op, f"{bar.label}: pending went to {bar.pending}")
        self._maybe_complete(bar)

    def _maybe_complete(self, bar: Barrier) -> None:
        if bar.pending <= 0 and bar.tx == 0:
            bar.completed += 1
            bar.pending += bar.count
            now = self.now
            bar.completion_times.append(now)
            for hook in self._hooks["on_phase"]:
                hook(bar)
            if bar.waiters:
                timed = self.timed
                still = []
                for proc, w in bar.waiters:
                    if bar.completed % 2 != w.phase:  # bar.ready(w.phase)
                        self._last_return[(proc.pid, id(bar))] = bar.completed
                        w.t_end = now + (self.backend.wake_latency(w) if timed else 0.0)
                        for hook in self._hooks["on_wait_return"]:
                            hook(proc, w)
                        self._make_ready(proc, w.t_end)
                    else:
                        still.append((proc, w))
                bar.waiters = still

    # --- executing one op --------------------------------------------------------
    def _step(self, proc: Process) -> None:
        """Advance ``proc`` by one operation (at ``self.now``)."""
        try:
            op = proc.gen.send(proc.send)
        except StopIteration:
            proc.done = True
            for hook in self._hooks["on_exit"]:
                hook(proc)
            return
        proc.send = None
        self.steps += 1
        op.proc = proc
        if op.tile is not None:
            proc.tile = op.tile
        op.t_issue = op.t_start = self.now
        for hook in self._hooks["on_executed"]:
            hook(op)
        kind = op.kind
        timed = self.timed
        backend = self.backend
        if kind == "wait":
            bar = op.bar
            if op.target is not None and not (op.target - 1 <= bar.completed <= op.target):
                self.report_hazard(
                    "parity-alias",
                    op,
                    f"{bar.label}: wait(phase={op.phase}) meant for completion {op.target} "
                    f"starts with {bar.completed} completed phases",
                )
            if bar.ready(op.phase):
                # a wait that returns at once on the phase this process's previous wait on the barrier already
                # returned on (no completion since) is legal: waiting again for a phase known complete is how
                # "wait for the last issued MMA" is written twice in a row (tutorial 07's wait_num_outstanding(0))
                self._last_return[(proc.pid, id(bar))] = bar.completed
                op.t_end = self.now + (backend.duration(op) if timed else 0.0)
                for hook in self._hooks["on_wait_return"]:
                    hook(proc, op)
                self._make_ready(proc, op.t_end)
            else:
                proc.blocked = op
                bar.waiters.append((proc, op))
            return
        if kind in ("store_wait", "cp_wait"):  # wait for this process's own earlier copies, not for a barrier
            if self._copies_drained(proc, op):
                op.t_end = self.now
                for hook in self._hooks["on_wait_return"]:
                    hook(proc, op)
                self._make_ready(proc, self.now + (backend.duration(op) if timed else 0.0))
            else:
                proc.blocked = op
            return
        if kind == "arrive":
            self._arrive(op.bar, op.count, op)
        elif kind == "expect":
            op.bar.tx += op.nbytes
            self._arrive(op.bar, 1, op)
        elif kind == "noop":
            pass
        elif kind in OP_KINDS:
            proc.send = backend.on_issue(op)
        else:
            raise ValueError(f"unknown operation kind {kind!r} (the engine knows {', '.join(sorted(OP_KINDS))})")
        if op.asynchronous:
            self._issue_async(proc, op)
            self._make_ready(proc, self.now + (backend.issue_cost(op) if timed else 0.0))
        else:
            op.t_end = self.now + (backend.duration(op) if timed else 0.0)
            self._make_ready(proc, op.t_end)

    def _issue_async(self, proc: Process, op: Op) -> None:
        self._inflight += 1
        kind = op.kind
        if kind == "cp_async":
            proc.cp_pending.add(cast(CpAsync, op).seq)
        elif kind == "cp_arrive":
            arrive = cast(CpArrive, op)
            if arrive.increment:  # a net-zero arrival: the phase is held until the copies land
                arrive.bar.pending += arrive.count
            if any(seq <= arrive.upto for seq in proc.cp_pending):
                proc.cp_held.append(arrive)  # released by the completion of the last copy it tracks
                return
        pipe = op.pipe
        if pipe is not None:
            q = proc.queues.get(pipe)
            if q is None:
                q = proc.queues[pipe] = deque()
            q.append(op)
        if self.timed:
            backend = self.backend
            dur = backend.duration(op)
            start = self.now
            res = backend.resource(op)
            if res is not None:
                start = max(start, self._resource_free.get(res, 0.0))
                self._resource_free[res] = start + dur
            end = start + dur
            if pipe is not None:
                key = (proc.pid, pipe)
                end = max(end, self._pipe_tail.get(key, 0.0))
                self._pipe_tail[key] = end
            op.t_start, op.t_end = start, end
            self._push(end, 1, op)
        elif pipe is None or len(proc.queues[pipe]) == 1:
            self._completable.append(op)

    def _complete(self, op: Op) -> None:
        """An async op finishes at ``self.now``: data effect, then barrier effect."""
        self._inflight -= 1
        if not self.timed:
            op.t_start = op.t_end = self.now
        self.backend.on_complete(op)
        proc = op.proc
        pipe = op.pipe
        if pipe is not None:
            q = proc.queues[pipe]
            q.popleft()
            if q and not self.timed:
                self._completable.append(q[0])
            if pipe == "store":
                self._wake_copy_waiter(proc)
        kind = op.kind
        if kind in ("tma_load", "clc_cancel"):
            targets = getattr(op.x, "tx_targets", None) if op.x is not None else None
            if targets is None:  # a TMA load without per-CTA targets: its bytes go to its own barrier
                load = cast(TmaLoad, op)
                load.bar.tx -= load.nbytes * len(load.dests)
                self._maybe_complete(load.bar)
            else:  # executor: each destination CTA's bytes go to the barrier copy that CTA signals
                for bar, nbytes in targets:
                    for hook in self._hooks["on_tx"]:
                        hook(bar, op)
                    bar.tx -= nbytes
                    self._maybe_complete(bar)
        elif kind == "commit":
            for bar in cast(Commit, op).bars:
                self._arrive(bar, 1, op)
        elif kind == "cp_arrive":
            self._arrive(cast(CpArrive, op).bar, cast(CpArrive, op).count, op)
        elif kind == "cp_async":
            self._cp_landed(proc, cast(CpAsync, op).seq)

    def _copies_drained(self, proc: Process, op: Op) -> bool:
        """A ``store_wait`` / ``cp_wait`` of ``proc`` may return: few enough of its own copies are still in flight."""
        if op.kind == "store_wait":
            q = proc.queues.get("store")
            return q is None or len(q) <= cast(StoreWait, op).pendings
        return not any(seq <= cast(CpWait, op).upto for seq in proc.cp_pending)

    def _wake_copy_waiter(self, proc: Process) -> None:
        """One of ``proc``'s copies completed: its blocked ``store_wait`` / ``cp_wait`` returns if now satisfied."""
        blocked = proc.blocked
        if blocked is not None and blocked.kind in ("store_wait", "cp_wait") and self._copies_drained(proc, blocked):
            blocked.t_end = self.now
            for hook in self._hooks["on_wait_return"]:
                hook(proc, blocked)
            self._make_ready(proc, self.now)

    def _cp_landed(self, proc: Process, seq: int) -> None:
        """A cp.async of ``proc`` completed: release the waits and mbarrier arrivals that tracked only earlier ones."""
        proc.cp_pending.discard(seq)
        self._wake_copy_waiter(proc)
        if proc.cp_held:
            still = []
            for held in proc.cp_held:
                if any(s <= held.upto for s in proc.cp_pending):
                    still.append(held)
                elif self.timed:
                    held.t_start = held.t_end = self.now
                    self._push(self.now, 1, held)
                else:
                    self._completable.append(held)
            proc.cp_held = still

    # --- main loops ------------------------------------------------------------------
    def halt(self) -> None:
        """End the run after the current step (a process failed: on the GPU a trap ends the whole grid).
        No deadlock is reported for the processes left unfinished."""
        self.halted = True

    def run(self) -> RunResult:
        with gc_paused():  # a run's garbage is freed by reference counting; the collector's scans cost a quarter
            return self._run()

    def _run(self) -> RunResult:
        limit = self.max_steps if self.max_steps is not None else float("inf")
        hit = self._run_timed(limit) if self.timed else self._run_data(limit)
        deadlock = None
        if not hit and not self.halted:
            blocked = [p for p in self.procs if not p.done]
            if blocked:
                deadlock = self._deadlock(blocked)
        return RunResult(self.now, self.steps, deadlock, self.hazards, self.trace, hit)

    def _run_holdback(self, limit: float) -> bool:
        """Data mode, hold-back: like the uniform schedule, except that one process (the *held* one,
        re-drawn at each change point) runs only when nothing else can: no other process is ready and
        no completion is pending."""
        ready, comp, rng, bias = self._ready, self._completable, self.rng, self.completion_bias
        change = 1.0 / self.change_every
        held: Process | None = None
        while (ready or comp) and not self.halted:
            if self.steps >= limit:
                return True
            if held is None or held.done or rng.random() < change:  # a change point: hold another process
                held = self._draw_held()
            n_ready = len(ready)
            at = -1
            if held is not None and (n_ready > 1 or comp):
                for n, proc in enumerate(ready):
                    if proc is held:
                        at = n
                        break
            if at >= 0:  # set the held process aside for this pick
                ready[at] = ready[-1]
                ready.pop()
                n_ready -= 1
            if bias == 1.0:
                pick = rng.randrange(n_ready + len(comp))
            else:
                x = rng.random() * (n_ready + bias * len(comp))
                pick = int(x) if x < n_ready else n_ready + min(int((x - n_ready) / bias), len(comp) - 1)
            self.now += 1
            if pick < n_ready:
                proc = ready[pick]
                ready[pick] = ready[-1]
                ready.pop()
                if at >= 0 and held is not None:
                    ready.append(held)
                self._step(proc)
            else:
                if at >= 0 and held is not None:
                    ready.append(held)
                pick -= n_ready
                op = comp[pick]
                comp[pick] = comp[-1]
                comp.pop()
                self._complete(op)
        return False

    def _draw_held(self) -> Process | None:
        """The process to hold next: an unfinished partition (the ``main`` process of a CTA mostly waits
        for its partitions to end; before they are forked, None: the draw is tried again next step)."""
        alive = [p for p in self.procs if not p.done and p.partition != "main"]
        if not alive and not any(p.partition == "main" for p in self.procs):
            alive = [p for p in self.procs if not p.done]  # no CTA processes at all (an engine-level run)
        return alive[self.rng.randrange(len(alive))] if alive else None

    def _run_data(self, limit: float) -> bool:
        if self.schedule == "holdback":
            return self._run_holdback(limit)
        ready, comp, rng, bias = self._ready, self._completable, self.rng, self.completion_bias
        while (ready or comp) and not self.halted:
            if self.steps >= limit:
                return True
            n_ready = len(ready)
            if bias == 1.0:
                pick = rng.randrange(n_ready + len(comp))
            else:  # a process weighs 1, a completion ``bias``
                x = rng.random() * (n_ready + bias * len(comp))
                pick = int(x) if x < n_ready else n_ready + min(int((x - n_ready) / bias), len(comp) - 1)
            self.now += 1
            if pick < n_ready:
                proc = ready[pick]
                ready[pick] = ready[-1]
                ready.pop()
                self._step(proc)
            else:
                pick -= n_ready
                op = comp[pick]
                comp[pick] = comp[-1]
                comp.pop()
                self._complete(op)
        return False

    def _run_timed(self, limit: float) -> bool:
        """Timed mode: advance the earliest event until none is left.

        The hot loop of the timing model, so :meth:`_step`, :meth:`_make_ready`, :meth:`_push`, the common path of
        :meth:`_issue_async` and :meth:`_complete` and the arrival of :meth:`_arrive` are written out here for timed
        mode, with the engine's and the backend's attributes read once; the rarer operations (copy waits, cp.async,
        CLC) go through those methods.  Every time is the same sum of the same numbers as theirs, and events are
        pushed in the same order."""
        heap = self._heap
        heappop, heappush = heapq.heappop, heapq.heappush
        seq = self._seq
        hooks = self._hooks
        on_executed, on_exit, on_wait_return = hooks["on_executed"], hooks["on_exit"], hooks["on_wait_return"]
        on_arrive, on_tx = hooks["on_arrive"], hooks["on_tx"]
        backend = self.backend
        duration, issue_cost = backend.duration, backend.issue_cost
        on_issue, on_complete, resource = (_own(backend, name) for name in ("on_issue", "on_complete", "resource"))
        last_return, resource_free, pipe_tail = self._last_return, self._resource_free, self._pipe_tail
        maybe_complete = self._maybe_complete
        # A process whose next step is the earliest event (its time before every event on the heap) is stepped
        # again at once, without the push and pop that would give it back (``ahead``): the same order of events.
        ahead: Process | None = None
        proc: Process | None
        while True:
            if ahead is not None:
                proc, ahead = ahead, None
                now = self.now = proc.clock
            else:
                if not heap or self.halted:
                    return False
                if self.steps >= limit:
                    return True
                now, _, what, payload = heappop(heap)
                self.now = now
                proc = payload if what == 0 else None
            if proc is None:  # an async op completes (_complete)
                op = payload
                self._inflight -= 1
                if on_complete is not None:
                    on_complete(op)
                pipe = op.pipe
                if pipe is not None:
                    proc = op.proc
                    proc.queues[pipe].popleft()
                    if pipe == "store" and proc.blocked is not None:
                        self._wake_copy_waiter(proc)
                kind = op.kind
                if kind == "tma_load" or kind == "clc_cancel":
                    x = op.x
                    targets = getattr(x, "tx_targets", None) if x is not None else None
                    if targets is None:  # a TMA load without per-CTA targets: its bytes go to its own barrier
                        bar = op.bar
                        bar.tx -= op.nbytes * len(op.dests)
                        if bar.pending <= 0 and bar.tx == 0:
                            maybe_complete(bar)
                    else:  # executor: each destination CTA's bytes go to the barrier copy that CTA signals
                        for bar, nbytes in targets:
                            for hook in on_tx:
                                hook(bar, op)
                            bar.tx -= nbytes
                            if bar.pending <= 0 and bar.tx == 0:
                                maybe_complete(bar)
                elif kind == "commit":
                    for bar in op.bars:
                        for hook in on_arrive:
                            hook(bar, op)
                        bar.arrivals += 1
                        bar.pending -= 1
                        if bar.pending < 0:
                            self.report_hazard(
                                "barrier-over-arrival", op, f"{bar.label}: pending went to {bar.pending}"
                            )
                        if bar.pending <= 0 and bar.tx == 0:
                            maybe_complete(bar)
                elif kind == "cp_arrive":
                    self._arrive(op.bar, op.count, op)
                elif kind == "cp_async":
                    self._cp_landed(op.proc, op.seq)
                continue
            # a process issues its next operation (_step)
            try:
                op = proc.gen.send(proc.send)
            except StopIteration:
                proc.done = True
                for hook in on_exit:
                    hook(proc)
                continue
            proc.send = None
            self.steps += 1
            op.proc = proc
            if op.tile is not None:
                proc.tile = op.tile
            op.t_issue = op.t_start = now
            for hook in on_executed:
                hook(op)
            kind = op.kind
            if kind == "wait":
                bar = op.bar
                target = op.target
                if target is not None and not (target - 1 <= bar.completed <= target):
                    self.report_hazard(
                        "parity-alias",
                        op,
                        f"{bar.label}: wait(phase={op.phase}) meant for completion {target} "
                        f"starts with {bar.completed} completed phases",
                    )
                if bar.completed % 2 == op.phase:  # not bar.ready(op.phase): blocked (see _step)
                    proc.blocked = op
                    bar.waiters.append((proc, op))
                    continue
                last_return[(proc.pid, id(bar))] = bar.completed
                op.t_end = t = now + duration(op)
                for hook in on_wait_return:
                    hook(proc, op)
            elif kind == "store_wait" or kind == "cp_wait":
                if kind == "store_wait":  # _copies_drained(proc, op)
                    q = proc.queues.get("store")
                    drained = q is None or len(q) <= op.pendings
                else:
                    drained = self._copies_drained(proc, op)
                if not drained:
                    proc.blocked = op
                    continue
                op.t_end = now
                for hook in on_wait_return:
                    hook(proc, op)
                t = now + duration(op)
            else:
                if kind == "arrive" or kind == "expect":
                    bar = op.bar
                    if kind == "arrive":
                        count = op.count
                    else:
                        bar.tx += op.nbytes
                        count = 1
                    for hook in on_arrive:  # _arrive(bar, count, op)
                        hook(bar, op)
                    bar.arrivals += count
                    bar.pending -= count
                    if bar.pending < 0:
                        self.report_hazard("barrier-over-arrival", op, f"{bar.label}: pending went to {bar.pending}")
                    if bar.pending <= 0 and bar.tx == 0:
                        maybe_complete(bar)
                elif kind == "noop":
                    pass
                elif kind in OP_KINDS:
                    if on_issue is not None:
                        proc.send = on_issue(op)
                else:
                    raise ValueError(
                        f"unknown operation kind {kind!r} (the engine knows {', '.join(sorted(OP_KINDS))})"
                    )
                if op.asynchronous:
                    if kind == "cp_async" or kind == "cp_arrive":
                        self._issue_async(proc, op)
                    else:  # _issue_async, timed
                        self._inflight += 1
                        pipe = op.pipe
                        if pipe is not None:
                            q = proc.queues.get(pipe)
                            if q is None:
                                q = proc.queues[pipe] = deque()
                            q.append(op)
                        dur = duration(op)
                        start = now
                        res = resource(op) if resource is not None else None
                        if res is not None:
                            start = max(start, resource_free.get(res, 0.0))
                            resource_free[res] = start + dur
                        end = start + dur
                        if pipe is not None:
                            key = (proc.pid, pipe)
                            tail = pipe_tail.get(key, 0.0)
                            if tail > end:  # end = max(end, tail)
                                end = tail
                            pipe_tail[key] = end
                        op.t_start, op.t_end = start, end
                        heappush(heap, (end, next(seq), 1, op))
                    t = now + issue_cost(op)
                else:
                    op.t_end = t = now + duration(op)
            proc.blocked = None  # _make_ready(proc, t)
            if t > proc.clock:  # proc.clock = max(proc.clock, t)
                proc.clock = t
            if (heap and not proc.clock < heap[0][0]) or self.halted or self.steps >= limit:
                heappush(heap, (proc.clock, next(seq), 0, proc))
            else:
                ahead = proc

    def _parity_alias(self, proc: Process, op: Wait) -> str | None:
        """Why a blocked wait is a parity alias, or None: the completion it meant (the one after the
        completion its process's last wait on this barrier returned at; for a first wait, phase 1
        means the phase before init and phase 0 the first completion) has already happened, and one
        more since, so the parity it waits on now names a later phase."""
        bar = op.bar
        last = self._last_return.get((proc.pid, id(bar)))
        meant = (0 if op.phase == 1 else 1) if last is None else last + 1
        if bar.completed <= meant:
            return None
        since = (
            "its previous wait on it returned after completion " + str(last)
            if last is not None
            else "it first waited on it"
        )
        return (
            f"parity alias: wait(phase={op.phase}) meant completion {meant} ({since}), but {bar.label} had "
            f"already completed {bar.completed} phase(s) when it waited, so the parity names completion "
            f"{bar.completed + 1}, which nothing will bring"
        )

    def _deadlock(self, blocked: list[Process]) -> Deadlock:
        rows = []
        for p in blocked:
            op = p.blocked
            row: dict[str, Any] = {
                "process": p.name,
                "partition": p.partition,
                "cta": p.cta,
                "cluster": p.cluster,
                "tile": p.tile,
                "op": op.kind if op else None,
            }
            if isinstance(op, Wait):
                bar = op.bar
                row.update(
                    {
                        "barrier": bar.label,
                        "barrier_name": bar.name,
                        "barrier_index": bar.index,
                        "barrier_cta": bar.cta,
                        "phase": op.phase,
                        "completed": bar.completed,
                        "pending": bar.pending,
                        "tx": bar.tx,
                        "parity_alias": self._parity_alias(p, op),
                    }
                )
            rows.append(row)
        return Deadlock(self.now, rows)
