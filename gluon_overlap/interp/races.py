"""Happens-before race detection for the executor: vector clocks over processes, pipes and mbarriers.

Why a race detector and not just a comparison of C: a missing wait usually corrupts C only under
some interleavings.  A *race* -- two accesses to the same shared-memory or TMEM location, one of
them a write, with no chain of synchronization between them -- is a bug under every interleaving,
so it is reported whatever order the scheduler happened to pick.

Clock components (each a small integer index into every vector clock):

* one per **process** (a partition of one CTA): its program order;
* one per process **tensor pipe** (``tcgen05.cp`` / ``tcgen05.mma`` / ``tcgen05.commit`` complete in
  issue order, SEMANTICS.md section 2) and one per process **store pipe** (TMA stores complete in
  issue order);
* one per **mbarrier**: its number of completed phases.  A TMA load completes *inside* a phase of
  the barrier it signals (its bytes must land before the phase can complete), so its write is
  dated ``(barrier, phase)``: whoever later acquires that phase is ordered after the write.

Edges: an arrive, an expect, a TMA completion and a commit *release* the issuer's clock into the
barrier's current phase; a phase completion freezes it; a wait that returns *acquires* the clock of
the last completed phase; ``store_wait(n)`` acquires the completed stores of the process.

An access is checked against the location's last write (and, for a write, its reads since): each
earlier access must be dated at or before the accessor's clock.  A TMA write whose load is still in
flight is dated "never" until it completes.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

NEVER = np.iinfo(np.int64).max // 2  #: the date of a TMA write still in flight


class Clocks:
    """Allocates clock components and makes vector clocks (numpy int64 arrays that grow)."""

    def __init__(self) -> None:
        self.labels: list[str] = []

    def component(self, label: str) -> int:
        self.labels.append(label)
        return len(self.labels) - 1

    def zeros(self) -> np.ndarray:
        return np.zeros(max(8, len(self.labels)), dtype=np.int64)


def join(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pointwise max of two vector clocks (of possibly different lengths)."""
    if len(a) < len(b):
        a, b = b, a
    out = a.copy()
    np.maximum(out[: len(b)], b, out=out[: len(b)])
    return out


def get(vc: np.ndarray, comp: int) -> int:
    return int(vc[comp]) if comp < len(vc) else 0


def tick(vc: np.ndarray, comp: int, value: int | None = None) -> np.ndarray:
    """``vc`` with component ``comp`` advanced by one (or set to ``value``); grows as needed."""
    if comp >= len(vc):
        grown = np.zeros(max(comp + 1, 2 * len(vc)), dtype=np.int64)
        grown[: len(vc)] = vc
        vc = grown
    vc[comp] = vc[comp] + 1 if value is None else max(int(vc[comp]), value)
    return vc


class Epoch:
    """When an access happened: component ``comp`` reached ``val`` (mutable: a TMA write is dated at
    its completion).  ``what`` describes the access for the report, ``op`` is the engine op."""

    __slots__ = ("comp", "val", "what", "op")

    def __init__(self, comp: int, val: int, what: str, op: Any):
        self.comp, self.val, self.what, self.op = comp, val, what, op

    def before(self, vc: np.ndarray) -> bool:
        return self.val <= get(vc, self.comp)


@dataclass(frozen=True)
class CellState:
    """The last write of a location and the reads since (one per clock component)."""

    write: Epoch | None
    reads: tuple[Epoch, ...] = ()


EMPTY = CellState(None)


@dataclass(frozen=True)
class Race:
    """Two unordered accesses: ``earlier`` happened first in this run, ``later`` found it unordered."""

    space: str
    cells: tuple[int, int]
    earlier: Epoch
    later_what: str
    kind: str  # "write-after-write", "write-after-read", "read-after-write"


class Shadow:
    """Per-location access history of one memory space (a CTA's TMEM columns, one SMEM allocation)."""

    def __init__(self, name: str, size: int):
        self.name = name
        self.size = size
        self.cells: list[CellState] = [EMPTY] * size
        self.written = np.zeros(size, dtype=bool)  # ever written (TMEM starts as garbage)

    def _groups(self, lo: int, hi: int) -> Iterator[tuple[int, int, CellState]]:
        """Yield ``(start, end, state)`` runs of identical state objects in ``[lo, hi)``."""
        cells = self.cells
        start = lo
        while start < hi:
            state = cells[start]
            end = start + 1
            while end < hi and cells[end] is state:
                end += 1
            yield start, end, state
            start = end

    def access(self, lo: int, hi: int, vc: np.ndarray, epoch: Epoch, write: bool) -> list[Race]:
        """Check an access to cells ``[lo, hi)`` by a clock ``vc`` and record it as ``epoch``."""
        races: list[Race] = []
        lo, hi = max(0, lo), min(self.size, hi)
        new_cells: list[CellState] = []
        for start, end, state in self._groups(lo, hi):
            w = state.write
            if w is not None and w.op is not epoch.op and not w.before(vc):
                kind = "write-after-write" if write else "read-after-write"
                races.append(Race(self.name, (start, end), w, epoch.what, kind))
            if write:
                for r in state.reads:
                    if r.op is not epoch.op and not r.before(vc):
                        races.append(Race(self.name, (start, end), r, epoch.what, "write-after-read"))
                        break
                new = CellState(epoch)
            else:
                reads = tuple(r for r in state.reads if r.comp != epoch.comp) + (epoch,)
                new = CellState(w, reads)
            new_cells.extend([new] * (end - start))
        self.cells[lo:hi] = new_cells
        if write:
            self.written[lo:hi] = True
        return races

    def unwritten(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Half-open runs of never-written cells in ``[lo, hi)``."""
        runs = []
        idx = np.flatnonzero(~self.written[max(0, lo) : min(self.size, hi)])
        if idx.size:
            start = prev = int(idx[0])
            for i in idx[1:]:
                i = int(i)
                if i != prev + 1:
                    runs.append((lo + start, lo + prev + 1))
                    start = i
                prev = i
            runs.append((lo + start, lo + prev + 1))
        return runs


class IntervalShadow:
    """The access history of a memory space of many cells (a CTA's part of a shared-memory allocation, one cell per
    element) kept as intervals: sorted ``starts`` of runs of cells sharing one :class:`CellState`.  The same checks
    as :class:`Shadow` (whose list of cells suits the 512 TMEM columns), at a cost that grows with the number of
    runs an access touches, not with its cells: a view of a pipeline stage is one run."""

    def __init__(self, name: str, size: int):
        self.name = name
        self.size = size
        self.starts: list[int] = [0]
        self.states: list[CellState] = [EMPTY]

    def _split(self, at: int) -> int:
        """Make ``at`` the start of a run; return that run's position."""
        starts = self.starts
        i = bisect_right(starts, at) - 1
        if starts[i] == at:
            return i
        starts.insert(i + 1, at)
        self.states.insert(i + 1, self.states[i])
        return i + 1

    def access(self, lo: int, hi: int, vc: np.ndarray, epoch: Epoch, write: bool) -> list[Race]:
        """Check an access to cells ``[lo, hi)`` by a clock ``vc`` and record it as ``epoch``."""
        lo, hi = max(0, lo), min(self.size, hi)
        if hi <= lo:
            return []
        i = self._split(lo)
        j = self._split(hi) if hi < self.size else len(self.starts)
        starts, states = self.starts, self.states
        races: list[Race] = []
        new_states: list[CellState] = []
        for k in range(i, j):
            state = states[k]
            start, end = starts[k], (starts[k + 1] if k + 1 < len(starts) else self.size)
            w = state.write
            if w is not None and w.op is not epoch.op and not w.before(vc):
                races.append(
                    Race(self.name, (start, end), w, epoch.what, "write-after-write" if write else "read-after-write")
                )
            if write:
                for r in state.reads:
                    if r.op is not epoch.op and not r.before(vc):
                        races.append(Race(self.name, (start, end), r, epoch.what, "write-after-read"))
                        break
            else:
                new_states.append(CellState(w, tuple(r for r in state.reads if r.comp != epoch.comp) + (epoch,)))
        if write:  # one run now
            del starts[i + 1 : j]
            states[i:j] = [CellState(epoch)]
        else:
            states[i:j] = new_states
        return races

    def unwritten(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Half-open runs of never-written cells in ``[lo, hi)``."""
        lo, hi = max(0, lo), min(self.size, hi)
        starts, states = self.starts, self.states
        runs: list[tuple[int, int]] = []
        k = bisect_right(starts, lo) - 1
        while k < len(starts) and starts[k] < hi:
            end = starts[k + 1] if k + 1 < len(starts) else self.size
            if states[k].write is None:
                a, b = max(lo, starts[k]), min(hi, end)
                if runs and runs[-1][1] == a:
                    runs[-1] = (runs[-1][0], b)
                else:
                    runs.append((a, b))
            k += 1
        return runs


# =====================================================================================
# happens-before bookkeeping (the engine calls these hooks)
# =====================================================================================
class SyncState:
    """Vector clocks of processes, pipes and barriers (see :mod:`gluon_overlap.interp.races`)."""

    def __init__(self) -> None:
        self.clocks = Clocks()
        self.proc_comp: dict[int, int] = {}
        self.tensor_comp: dict[int, int] = {}
        self.store_comp: dict[int, int] = {}
        self.vc: dict[int, np.ndarray] = {}
        self.tensor_vc: dict[int, np.ndarray] = {}
        self.stores_issued: dict[int, int] = {}
        self.stores_waited: dict[int, int] = {}  # stores a returned store_wait has covered
        self.bar_comp: dict[int, int] = {}
        self.bar_pending: dict[int, np.ndarray] = {}
        self.bar_phase: dict[int, np.ndarray] = {}
        self.on_process_exit: Callable[[Any], None] | None = None

    # --- components ------------------------------------------------------------------
    def new_process(self, proc: Any, start: np.ndarray | None) -> None:
        pid = proc.pid
        self.proc_comp[pid] = self.clocks.component(f"{proc.name}")
        self.tensor_comp[pid] = self.clocks.component(f"{proc.name}.tensor-pipe")
        self.store_comp[pid] = self.clocks.component(f"{proc.name}.store-pipe")
        self.vc[pid] = self.clocks.zeros() if start is None else start.copy()
        self.tensor_vc[pid] = self.clocks.zeros()
        self.stores_issued[pid] = self.stores_waited[pid] = 0

    def new_barrier(self, bar: Any) -> None:
        self.bar_comp[id(bar)] = self.clocks.component(bar.label)
        self.bar_pending[id(bar)] = self.clocks.zeros()

    # --- process clocks --------------------------------------------------------------
    def step(self, proc: Any) -> np.ndarray:
        """Advance ``proc``'s own component (one more operation) and return its clock."""
        vc = tick(self.vc[proc.pid], self.proc_comp[proc.pid])
        self.vc[proc.pid] = vc
        return vc

    def tensor_step(self, proc: Any) -> tuple[np.ndarray, int, int]:
        """Clock of a tensor-pipe op of ``proc``: after the process and after every earlier op of its pipe."""
        comp = self.tensor_comp[proc.pid]
        vc = join(self.step(proc), self.tensor_vc[proc.pid])
        vc = tick(vc, comp)
        self.tensor_vc[proc.pid] = vc
        return vc, comp, int(vc[comp])

    def store_step(self, proc: Any) -> tuple[np.ndarray, int, int]:
        vc = self.step(proc)
        self.stores_issued[proc.pid] += 1
        return vc, self.store_comp[proc.pid], self.stores_issued[proc.pid]

    # --- engine hooks ----------------------------------------------------------------
    def on_arrive(self, bar: Any, op: Any) -> None:
        if id(bar) not in self.bar_pending or op is None:
            return
        # an asynchronous arrival (a commit, a cp.async mbarrier arrival) releases the clock it was issued with
        vc = op.x.vc if op.kind in ("commit", "cp_arrive") else self.step(op.proc)
        self.bar_pending[id(bar)] = join(self.bar_pending[id(bar)], vc)

    def on_tx(self, bar: Any, op: Any) -> None:
        """A TMA load's (or a CLC response's) bytes land in ``bar``'s current phase: date its writes to that phase."""
        key = id(bar)
        if key not in self.bar_pending:
            return
        self.bar_pending[key] = join(self.bar_pending[key], op.x.vc)
        for epoch in op.x.epochs.get(key, ()):
            epoch.comp, epoch.val = self.bar_comp[key], bar.completed + 1

    def on_phase(self, bar: Any) -> None:
        key = id(bar)
        if key not in self.bar_pending:
            return
        self.bar_phase[key] = tick(self.bar_pending[key], self.bar_comp[key], bar.completed)
        self.bar_pending[key] = self.clocks.zeros()

    def on_wait_return(self, proc: Any, op: Any) -> None:
        pid = proc.pid
        if op.kind == "store_wait":
            # what the wait guarantees (all but the `pendings` newest stores), not what this schedule happened
            # to have completed: a store that finished early by chance orders nothing
            guaranteed = max(0, self.stores_issued[pid] - op.pendings)
            self.stores_waited[pid] = max(self.stores_waited[pid], guaranteed)
            self.vc[pid] = tick(self.vc[pid], self.store_comp[pid], guaranteed)
            return
        if op.kind == "cp_wait":  # the process's copies up to `upto` have landed (their writes are dated so)
            self.vc[pid] = tick(self.vc[pid], op.x.comp, op.upto)
            return
        phase = self.bar_phase.get(id(op.bar))
        if phase is not None:
            self.vc[pid] = join(self.vc[pid], phase)

    def on_exit(self, proc: Any) -> None:
        if self.on_process_exit is not None:
            self.on_process_exit(proc)
