"""The operations a Gluon kernel's partitions hand to the engine, and the mbarrier they synchronize on.

Each builtin of the interpreter that touches memory or a barrier builds one of these :class:`Op` objects
(:mod:`gluon_overlap.interp.language`); the engine (:mod:`gluon_overlap.interp.engine`) decides when it happens,
applies the mbarrier semantics of :class:`Barrier` itself, and hands the hardware action to its backend and
the analyses that subscribe to it.  The timing model replays recorded lists of the same objects.
"""

from __future__ import annotations

from typing import Any

# ----------------------------------------------------------------------------
# mbarriers
# ----------------------------------------------------------------------------


class Barrier:
    """An mbarrier: phase count, pending arrivals, signed tx-count, waiters."""

    __slots__ = (
        "name",
        "index",
        "cta",
        "cluster",
        "count",
        "pending",
        "tx",
        "completed",
        "waiters",
        "arrivals",
        "completion_times",
    )

    def __init__(self, name: str, index: int = 0, *, cta: int = 0, cluster: int = 0, count: int = 1):
        if count < 1:
            raise ValueError(f"count={count} must be at least 1 (barrier {name}[{index}])")
        self.name, self.index, self.cta, self.cluster = name, index, cta, cluster
        self.count = count
        self.pending = count
        self.tx = 0
        self.completed = 0  # number of completed phases C; parity of the current phase is C % 2
        self.waiters: list[tuple[Any, Wait]] = []  # (the engine's Process, its Wait)
        self.arrivals = 0
        self.completion_times: list[float] = []

    @property
    def label(self) -> str:
        return f"{self.name}[{self.index}]@cta{self.cta}/cluster{self.cluster}"

    def ready(self, phase: int) -> bool:
        """True when ``wait(phase)`` would return now."""
        return self.completed % 2 != phase

    def __repr__(self) -> str:
        return (
            f"Barrier({self.label}, count={self.count}, pending={self.pending}, tx={self.tx}, "
            f"completed={self.completed})"
        )


# ----------------------------------------------------------------------------
# operations
# ----------------------------------------------------------------------------


class Op:
    """Base of everything a partition yields.

    Class attributes: ``kind`` (a short name), ``asynchronous`` (completes later, as
    a separate engine event), ``pipe`` (ordering queue of the issuing process, or
    None).  Instance fields common to all ops: ``tile`` (global tile id or None),
    ``local`` (the cluster's loop index ``i`` of that tile), stamped by the engine:
    ``proc`` (the issuing :class:`Process`), ``t_issue``, ``t_start``, ``t_end``.
    """

    __slots__ = ("tile", "local", "proc", "t_issue", "t_start", "t_end", "line", "x")
    kind = "op"
    asynchronous = False
    pipe: str | None = None

    def __init__(self, tile: int | None = None, local: int | None = None):
        self.tile, self.local = tile, local
        self.proc: Any = None  # the engine's Process that issued it
        self.t_issue = self.t_start = self.t_end = 0.0
        self.line: Any = None  # the kernel source line that issued it (executor runs), or None
        self.x: Any = None  # backend payload (the executor's views, descriptors, epochs)

    # convenience accessors
    @property
    def partition(self) -> str:
        return self.proc.partition if self.proc else "?"

    @property
    def cta(self) -> int:
        return self.proc.cta if self.proc else -1

    @property
    def cluster(self) -> int:
        return self.proc.cluster if self.proc else -1

    def details(self) -> dict[str, Any]:
        return {}

    def to_dict(self) -> dict[str, Any]:
        d = {
            "kind": self.kind,
            "partition": self.partition,
            "cta": self.cta,
            "cluster": self.cluster,
            "tile": self.tile,
            "local": self.local,
            "t_issue": self.t_issue,
            "t_start": self.t_start,
            "t_end": self.t_end,
        }
        if self.line is not None:
            d["line"] = str(self.line)
        d.update(self.details())
        return d

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.details().items())
        return f"{type(self).__name__}(tile={self.tile}, {inner})"


class Wait(Op):
    """``mbarrier.wait(bar, phase)``: block until ``bar.completed % 2 != phase``."""

    __slots__ = ("bar", "phase", "target")
    kind = "wait"

    def __init__(self, bar: Barrier, phase: int, target: int | None = None, **kw: Any):
        super().__init__(**kw)
        self.bar, self.phase, self.target = bar, phase, target

    def details(self) -> dict[str, Any]:
        return {"barrier": self.bar.label, "phase": self.phase, "target": self.target}


class Arrive(Op):
    """``mbarrier.arrive(bar, count)``."""

    __slots__ = ("bar", "count")
    kind = "arrive"

    def __init__(self, bar: Barrier, count: int = 1, **kw: Any):
        super().__init__(**kw)
        self.bar, self.count = bar, count

    def details(self) -> dict[str, Any]:
        return {"barrier": self.bar.label, "count": self.count}


class Expect(Op):
    """``mbarrier.expect(bar, nbytes)``: add ``nbytes`` to tx, then arrive once."""

    __slots__ = ("bar", "nbytes")
    kind = "expect"

    def __init__(self, bar: Barrier, nbytes: int, **kw: Any):
        super().__init__(**kw)
        self.bar, self.nbytes = bar, nbytes

    def details(self) -> dict[str, Any]:
        return {"barrier": self.bar.label, "nbytes": self.nbytes}


class TmaLoad(Op):
    """An async TMA load of one operand block into shared-memory stage ``stage``.

    ``operand`` names the descriptor (``"a"``, ``"b"``, ``"a_scale"``, ...); ``dests`` the CTAs whose
    shared memory receives the block (two for a multicast load); ``nbytes`` the bytes delivered to
    *each* destination.  Completion subtracts ``nbytes * len(dests)`` from ``bar``'s tx-count.
    """

    __slots__ = ("bar", "operand", "stage", "nbytes", "dests")
    kind = "tma_load"
    asynchronous = True

    def __init__(self, bar: Barrier, operand: str, stage: int, nbytes: int, dests: tuple[int, ...], **kw: Any):
        super().__init__(**kw)
        self.bar, self.operand, self.stage, self.nbytes, self.dests = bar, operand, stage, nbytes, dests

    def details(self) -> dict[str, Any]:
        return {"operand": self.operand, "stage": self.stage, "nbytes": self.nbytes, "dests": list(self.dests)}


class ScaleCopy(Op):
    """``tcgen05_copy`` of shared memory ``operand`` (stage ``stage``) into TMEM ``columns``
    (issued by the lead, executed in both CTAs in 2-CTA mode)."""

    __slots__ = ("operand", "stage", "columns")
    kind = "scale_copy"
    asynchronous = True
    pipe = "tensor"

    def __init__(self, operand: str, stage: int, columns: Any, **kw: Any):
        super().__init__(**kw)
        self.operand, self.stage, self.columns = operand, stage, columns

    def details(self) -> dict[str, Any]:
        return {"operand": self.operand, "stage": self.stage, "columns": [self.columns.offset, self.columns.end]}


class Mma(Op):
    """One ``tcgen05_mma`` / ``tcgen05_mma_scaled`` into the accumulator columns ``window``;
    ``kstep`` counts the MMAs since the last one that did not accumulate."""

    __slots__ = ("stage", "kstep", "window", "use_acc", "flops")
    kind = "mma"
    asynchronous = True
    pipe = "tensor"

    def __init__(self, stage: int, kstep: int, window: Any, use_acc: bool, flops: int = 0, **kw: Any):
        super().__init__(**kw)
        self.stage, self.kstep, self.window, self.use_acc, self.flops = stage, kstep, window, use_acc, flops

    def details(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "kstep": self.kstep,
            "columns": [self.window.offset, self.window.end],
            "use_acc": self.use_acc,
        }


class Commit(Op):
    """``tcgen05_commit``: one arrival on each barrier in ``bars`` (the multicast to
    both CTAs) once every earlier tensor-pipe op of the issuer has completed."""

    __slots__ = ("bars",)
    kind = "commit"
    asynchronous = True
    pipe = "tensor"

    def __init__(self, bars: tuple[Barrier, ...], **kw: Any):
        super().__init__(**kw)
        self.bars = bars

    def details(self) -> dict[str, Any]:
        return {"barriers": [b.label for b in self.bars]}


class TmemLoad(Op):
    """``tmem.load()``: read ``columns`` (the lanes of the issuing CTA) into registers."""

    __slots__ = ("columns",)
    kind = "tmem_load"

    def __init__(self, columns: Any, **kw: Any):
        super().__init__(**kw)
        self.columns = columns

    def details(self) -> dict[str, Any]:
        return {"columns": [self.columns.offset, self.columns.end]}


class TmemStore(Op):
    """``tmem.store(value)``: registers into ``columns`` of the issuing CTA's TMEM."""

    __slots__ = ("columns",)
    kind = "tmem_store"

    def __init__(self, columns: Any, **kw: Any):
        super().__init__(**kw)
        self.columns = columns

    def details(self) -> dict[str, Any]:
        return {"columns": [self.columns.offset, self.columns.end]}


class SmemStore(Op):
    """``smem.store(value)``: registers into a shared-memory buffer (the executor's payload says which)."""

    __slots__ = ()
    kind = "smem_store"


class SmemLoad(Op):
    """``smem.load(layout)``: a shared-memory buffer into registers (the executor's payload says which)."""

    __slots__ = ()
    kind = "smem_load"


class _GlobalAccess(Op):
    """A pointer access of ``nbytes`` bytes between registers and global memory (synchronous here)."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int, **kw: Any):
        super().__init__(**kw)
        self.nbytes = nbytes

    def details(self) -> dict[str, Any]:
        return {"nbytes": self.nbytes}


class GlobalLoad(_GlobalAccess):
    """``gl.load(pointers, mask, other)``: global memory into registers."""

    __slots__ = ()
    kind = "global_load"


class GlobalStore(_GlobalAccess):
    """``gl.store(pointers, value, mask)``: registers into global memory."""

    __slots__ = ()
    kind = "global_store"


class GlobalAtomic(_GlobalAccess):
    """``gl.atomic_add`` / ``max`` / ``min`` / ``and`` / ``or`` / ``xor`` / ``xchg`` / ``cas``: a read-modify-write
    of global memory that returns the old values (synchronous here; the engine interleaves programs between
    operations, never inside one)."""

    __slots__ = ()
    kind = "global_atomic"


class TmaStore(Op):
    """``tma.async_store`` of staging buffer ``buffer`` to (``row``, ``col``) of the tensor, clipped to it."""

    __slots__ = ("buffer", "row", "col", "rows", "cols")
    kind = "tma_store"
    asynchronous = True
    pipe = "store"

    def __init__(self, buffer: int, row: int, col: int, rows: int, cols: int, **kw: Any):
        super().__init__(**kw)
        self.buffer, self.row, self.col, self.rows, self.cols = buffer, row, col, rows, cols

    def details(self) -> dict[str, Any]:
        return {"buffer": self.buffer, "row": self.row, "col": self.col}


class StoreWait(Op):
    """``tma.store_wait(pendings)``: block until at most ``pendings`` stores of this process are in flight."""

    __slots__ = ("pendings",)
    kind = "store_wait"

    def __init__(self, pendings: int, **kw: Any):
        super().__init__(**kw)
        self.pendings = pendings

    def details(self) -> dict[str, Any]:
        return {"pendings": self.pendings}


class CpAsync(Op):
    """``async_copy.async_load``: a cp.async of ``nbytes`` from global into shared memory, the ``seq``-th of its
    process; completes in any order with the others."""

    __slots__ = ("seq", "nbytes")
    kind = "cp_async"
    asynchronous = True

    def __init__(self, seq: int, nbytes: int, **kw: Any):
        super().__init__(**kw)
        self.seq, self.nbytes = seq, nbytes

    def details(self) -> dict[str, Any]:
        return {"seq": self.seq, "nbytes": self.nbytes}


class CpWait(Op):
    """``async_copy.wait_group(n)``: block until every cp.async of this process up to number ``upto`` (those of
    all committed groups but the ``n`` newest) has completed."""

    __slots__ = ("upto",)
    kind = "cp_wait"

    def __init__(self, upto: int, **kw: Any):
        super().__init__(**kw)
        self.upto = upto

    def details(self) -> dict[str, Any]:
        return {"upto": self.upto}


class CpArrive(Op):
    """``async_copy.mbarrier_arrive(bar)``: ``count`` arrivals on ``bar`` once every cp.async of this process up to
    number ``upto`` has completed; with ``increment`` the pending count is raised by ``count`` when it is issued
    (a net-zero arrival that holds the phase until the copies land)."""

    __slots__ = ("bar", "upto", "count", "increment")
    kind = "cp_arrive"
    asynchronous = True

    def __init__(self, bar: Barrier, upto: int, count: int, increment: bool, **kw: Any):
        super().__init__(**kw)
        self.bar, self.upto, self.count, self.increment = bar, upto, count, increment

    def details(self) -> dict[str, Any]:
        return {"barrier": self.bar.label, "upto": self.upto, "count": self.count, "increment": self.increment}


class ClcCancel(Op):
    """``clc.try_cancel(result, bar)``: at completion a not-yet-started cluster of the grid is cancelled (or none is
    left), the 16-byte response written to ``result`` and its bytes counted on ``bar`` (like a TMA load's)."""

    __slots__ = ("bar", "nbytes")
    kind = "clc_cancel"
    asynchronous = True

    def __init__(self, bar: Barrier, nbytes: int = 16, **kw: Any):
        super().__init__(**kw)
        self.bar, self.nbytes = bar, nbytes

    def details(self) -> dict[str, Any]:
        return {"barrier": self.bar.label, "nbytes": self.nbytes}


OP_CLASSES = (
    Wait,
    Arrive,
    Expect,
    TmaLoad,
    ScaleCopy,
    Mma,
    Commit,
    TmemLoad,
    TmemStore,
    SmemStore,
    SmemLoad,
    GlobalLoad,
    GlobalStore,
    GlobalAtomic,
    TmaStore,
    StoreWait,
    CpAsync,
    CpWait,
    CpArrive,
    ClcCancel,
)
#: every op kind the engine knows: a backend must handle each, and nothing else
OP_KINDS = frozenset(c.kind for c in OP_CLASSES)
