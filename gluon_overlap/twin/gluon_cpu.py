"""CPU implementations of the Gluon builtins a Blackwell kernel calls, and the rebinding that makes a
``@gluon.jit`` function call them.

How a kernel runs here (the way Triton's interpreter runs ``tl`` kernels): each ``@gluon.jit``
function's Python function (``JITFunction.fn``) is copied with its globals replaced -- ``gl``,
``mbarrier``, ``tma`` and the ``tcgen05_*`` functions become the namespaces below, other jit functions
become their own rebound copies, ``@gluon.constexpr_function``\\ s become their plain Python
functions and ``@gluon.aggregate`` classes become plain classes with the same fields and methods.
Nothing of the kernel's text changes: what the kernel does is what runs.

Every builtin that touches memory or a barrier builds an engine operation
(:mod:`gluon_overlap.twin.engine`) and hands it to the scheduler through :func:`emit`, which suspends
the calling partition (a greenlet) until the engine has executed it; the data backend
(:mod:`gluon_overlap.twin.execdata`) gives it its effect.  A builtin this module does not implement
raises :class:`ExecutorError` naming the builtin and the kernel line -- never a silent no-op.
"""

from __future__ import annotations

import linecache
import math
import re
import sys
import types
from dataclasses import dataclass
from typing import Any

import torch
import triton.experimental.gluon.language as gl
from greenlet import getcurrent
from triton.runtime.jit import ConstexprFunction, JITFunction

from gluon_overlap.twin import engine as E
from gluon_overlap.twin.memory import (
    BarrierAlloc,
    BarrierBatch,
    BarrierRef,
    DeviceDescriptor,
    ExecutorError,
    RegTensor,
    SmemAlloc,
    SmemView,
    TmemAlloc,
    TmemView,
    torch_dtype,
)


# =====================================================================================
# where in the kernel we are
# =====================================================================================
@dataclass(frozen=True)
class SourceLine:
    """A line of kernel source: file, number, function and text."""

    file: str
    lineno: int
    function: str
    text: str

    @property
    def name(self) -> str:
        """The file's name as a reader knows it (an edited temporary copy is named after its original)."""
        return DISPLAY_NAMES.get(self.file, self.file.rsplit("/", 1)[-1])

    def __str__(self) -> str:
        return f"{self.name}:{self.lineno} `{self.text}`"


#: temporary kernel copies (breaks applied) -> the name to show for them
DISPLAY_NAMES: dict[str, str] = {}


class State:
    """The one running launch (set by the executor): its runtime and the current partition."""

    runtime: Any = None
    ctx: Any = None


STATE = State()


def caller_line() -> SourceLine | None:
    """The innermost frame that runs rebound kernel code."""
    codes = STATE.runtime.kernel_codes if STATE.runtime is not None else ()
    f = sys._getframe(1)
    while f is not None:
        if f.f_code in codes:
            text = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
            return SourceLine(f.f_code.co_filename, f.f_lineno, f.f_code.co_name, text)
        f = f.f_back
    return None


def where() -> str:
    line = caller_line()
    return f" (at {line})" if line is not None else ""


def emit(op: E.Op) -> Any:
    """Hand ``op`` to the engine; return what the engine sends back once it has executed it."""
    ctx = STATE.ctx
    op.line = caller_line() if STATE.runtime.want_lines else None
    op.tile, op.local = ctx.tile, ctx.local
    return getcurrent().parent.switch(op)


def _ctx():
    if STATE.ctx is None:
        raise ExecutorError("a Gluon builtin was called outside a kernel launched by the executor")
    return STATE.ctx


def _hazard(kind: str, detail: str) -> None:
    ctx = _ctx()
    op = E.Op(tile=ctx.tile, local=ctx.local)
    op.proc = ctx.proc
    op.line = caller_line()
    STATE.runtime.engine.report_hazard(kind, op, detail)


def unsupported(name: str):
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise ExecutorError(f"{name} is not implemented by the CPU executor{where()}")

    stub.__name__ = name
    return stub


def _lead(ctx) -> bool:
    return ctx.cta == 0


def _two_cta_issue_skipped(ctx, two_ctas: bool) -> bool:
    """In 2-CTA mode only the lead CTA issues tcgen05 copies, MMAs and commits (SEMANTICS.md 3)."""
    return two_ctas and STATE.runtime.num_ctas > 1 and not _lead(ctx)


# =====================================================================================
# gl
# =====================================================================================
def program_id(axis: int = 0) -> int:
    return _ctx().program[axis]


def num_programs(axis: int = 0) -> int:
    return STATE.runtime.grid[axis]


def num_ctas() -> int:
    return STATE.runtime.num_ctas


def num_warps() -> int:
    return _ctx().num_warps


def static_assert(cond: Any, msg: str = "") -> None:
    if not cond:
        raise ExecutorError(f"static_assert failed{': ' + str(msg) if msg else ''}{where()}")


def static_print(*args: Any, **kwargs: Any) -> None:
    print(*args, **kwargs)


def to_tensor(x: Any) -> Any:
    return x


def where_(cond: Any, x: Any, y: Any) -> Any:
    if isinstance(cond, RegTensor) or isinstance(x, RegTensor) or isinstance(y, RegTensor):
        def v(t):
            return t.local if isinstance(t, RegTensor) else t
        like = next(t for t in (x, y, cond) if isinstance(t, RegTensor))
        return RegTensor(torch.where(torch.as_tensor(v(cond)), torch.as_tensor(v(x)), torch.as_tensor(v(y))),
                         like.shape, like.dtype)
    return x if cond else y


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def static_range(*args: Any) -> range:
    return range(*args)


def convert_layout(value: Any, layout: Any, assert_trivial: bool = False) -> Any:
    return value


def minimum(a: Any, b: Any) -> Any:
    return min(a, b)


def maximum(a: Any, b: Any) -> Any:
    return max(a, b)


def _next_alloc(kind: type, name: str, make) -> Any:
    """The cluster-wide object behind this CTA's next allocation (both CTAs run the same code, so
    their ``n``-th allocations are the same buffer)."""
    ctx = _ctx()
    cluster = STATE.runtime.clusters[ctx.cluster]
    n = cluster.next_alloc[ctx.cta]
    cluster.next_alloc[ctx.cta] += 1
    if n == len(cluster.objects):
        cluster.objects.append(make())
    obj = cluster.objects[n]
    if not isinstance(obj, kind):
        raise ExecutorError(f"CTA {ctx.cta} allocated {kind.__name__} {name} where CTA 0 allocated "
                            f"{type(obj).__name__} {obj.name}: the CTAs of a cluster must allocate alike{where()}")
    return obj


def _assigned_name(default: str) -> str:
    """The variable an allocation is assigned to (``load_empty_bars = ...`` -> ``load_empty``)."""
    line = caller_line()
    if line is not None:
        m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]+)?=", line.text)
        if m:
            name = m.group(1)
            for suffix in ("_bars", "_bar", "_smems", "_smem", "_bufs", "_buf"):
                if name.endswith(suffix) and len(name) > len(suffix):
                    return name[: -len(suffix)]
            return name
    return default


def allocate_shared_memory(element_ty: Any, shape: Any, layout: Any, value: Any = None) -> Any:
    rt = STATE.runtime
    shape = [int(s) for s in shape]
    if isinstance(layout, MBarrierLayoutType) or type(layout).__name__ == "MBarrierLayout":
        bases = [list(b) for b in (layout.cga_layout or [])]
        pair = bool(bases) and all(v == 0 for v in bases[0])
        batch = shape[0] if len(shape) > 1 else 1
        name = _assigned_name("barrier")
        alloc = _next_alloc(BarrierAlloc, name, lambda: BarrierAlloc(name, batch, pair, rt.num_ctas))
        return BarrierBatch(alloc) if len(shape) > 1 else BarrierRef(alloc, 0)
    name = _assigned_name("smem")
    alloc = _next_alloc(SmemAlloc, name, lambda: SmemAlloc(name, element_ty, shape, layout, rt.num_ctas))
    view = SmemView(alloc)
    if value is not None:
        smem_store(view, value)
    return view


try:  # the class used to mark barrier allocations
    from triton.experimental.gluon.language.nvidia.hopper.mbarrier import MBarrierLayout as MBarrierLayoutType
except ImportError:  # pragma: no cover
    MBarrierLayoutType = type("MBarrierLayoutType", (), {})


def barrier(*, cluster: bool = False) -> None:
    """``gl.barrier()``: a CTA's threads meet (a partition is one process here: nothing to do);
    ``gl.barrier(cluster=True)``: every partition of the cluster's CTAs meets."""
    if cluster and STATE.runtime.num_ctas > 1:
        _ctx().inits_unfenced = False
        STATE.runtime.cluster_sync(_ctx())


def warp_specialize(functions_and_args: Any, worker_num_warps: Any, worker_num_regs: Any = None) -> Any:
    """Fork: every partition (the default one first) becomes a new process of this CTA; returns the
    default partition's result when all of them have finished.  Starts with a cluster barrier (the inits before it must
    be visible to the other CTA, SEMANTICS.md section 3)."""
    ctx = _ctx()
    rt = STATE.runtime
    if ctx.partition != "main":
        raise ExecutorError(f"warp_specialize cannot be nested{where()}")
    pairs = list(functions_and_args)
    if len(pairs) - 1 != len(list(worker_num_warps)):
        raise ExecutorError(f"warp_specialize got {len(pairs) - 1} workers but {len(list(worker_num_warps))} "
                            f"worker_num_warps{where()}")
    if rt.num_ctas > 1:
        ctx.inits_unfenced = False
        rt.cluster_sync(ctx)
    default_fn, default_args = pairs[0]
    result: list = []
    join_bar = rt.spawn_partitions(ctx, [(default_fn, tuple(default_args))] + [(fn, tuple(args)) for fn, args
                                                                              in pairs[1:]],
                                   [ctx.num_warps] + [int(w) for w in worker_num_warps], result)
    rt.join_partitions(ctx, join_bar)
    return result[0] if result else None


# --- shared memory descriptor methods -----------------------------------------------------
def _smem_index(view: SmemView, index: Any) -> SmemView:
    index = int(index)
    ok = view.valid and 0 <= index < view.shape[0]
    if not ok and view.valid:
        _hazard("smem-out-of-bounds", f"index({index}) of {view}: only {view.shape[0]} entries")
    index = min(max(index, 0), view.shape[0] - 1)
    return SmemView(view.alloc, view.transforms + (("index", index),), view.shape[1:], view.dtype, view.layout, ok)


def _smem_slice(view: SmemView, start: Any, length: Any, dim: int = 0) -> SmemView:
    start, length, dim = int(start), int(length), int(dim)
    ok = view.valid and start >= 0 and length > 0 and start + length <= view.shape[dim]
    if not ok and view.valid:
        _hazard("smem-out-of-bounds", f"slice({start}, {length}, dim={dim}) of {view} leaves the buffer")
    start = min(max(start, 0), view.shape[dim] - 1)
    length = max(1, min(length, view.shape[dim] - start))
    shape = list(view.shape)
    shape[dim] = length
    return SmemView(view.alloc, view.transforms + (("slice", start, length, dim),), shape, view.dtype, view.layout, ok)


def _smem_permute(view: SmemView, order: Any) -> SmemView:
    order = [int(o) for o in order]
    return SmemView(view.alloc, view.transforms + (("permute", tuple(order)),), [view.shape[o] for o in order],
                    view.dtype, view.layout, view.valid)


def _smem_reshape(view: SmemView, shape: Any) -> SmemView:
    shape = [int(s) for s in shape]
    if math.prod(shape) != view.numel:
        raise ExecutorError(f"reshape of {view} to {shape} changes the number of elements{where()}")
    return SmemView(view.alloc, view.transforms + (("reshape", tuple(shape)),), shape, view.dtype, view.layout,
                    view.valid)


def _smem_reinterpret(view: SmemView, dtype: Any = None, shape: Any = None, layout: Any = None) -> SmemView:
    dtype = view.dtype if dtype is None else dtype
    shape = list(view.shape if shape is None else [int(s) for s in shape])
    return SmemView(view.alloc, view.transforms + (("reinterpret", torch_dtype(dtype), tuple(shape)),), shape,
                    dtype, view.layout if layout is None else layout, view.valid)


def smem_load(view: SmemView, layout: Any = None) -> RegTensor:
    return emit(exec_op(E.SmemLoad, "smem_load", view=view))  # the backend returns the registers


def smem_store(view: SmemView, value: Any) -> None:
    if not isinstance(value, RegTensor):
        raise ExecutorError(f"store into {view} needs a register tensor, got {type(value).__name__}{where()}")
    if _dtype_name(value.dtype) != _dtype_name(view.dtype):
        # Gluon refuses this at compile time (no implicit conversion on a shared-memory store)
        raise ExecutorError(f"store of {_dtype_name(value.dtype)} registers into {view} of dtype "
                            f"{_dtype_name(view.dtype)}: convert first (.to(...)){where()}")
    emit(exec_op(E.SmemStore, "smem_store", view=view, value=value))


def _dtype_name(dtype: Any) -> str:
    return getattr(dtype, "name", str(dtype))


def _keep_alive(view: Any) -> None:
    return None


for _name, _fn in (("index", _smem_index), ("slice", _smem_slice), ("permute", _smem_permute),
                   ("reshape", _smem_reshape), ("reinterpret", _smem_reinterpret), ("load", smem_load),
                   ("store", smem_store), ("_keep_alive", _keep_alive)):
    setattr(SmemView, _name, _fn)


def _barrier_index(batch: BarrierBatch, index: Any) -> BarrierRef:
    index = int(index)
    ok = 0 <= index < batch.alloc.batch
    if not ok:
        _hazard("barrier-out-of-bounds", f"index({index}) of {batch.alloc.name}: only {batch.alloc.batch} barriers")
    return BarrierRef(batch.alloc, min(max(index, 0), batch.alloc.batch - 1), ok)


BarrierBatch.index = _barrier_index


# --- tensor memory ------------------------------------------------------------------------
def allocate_tensor_memory(element_ty: Any, shape: Any, layout: Any, value: Any = None) -> TmemView:
    rt = STATE.runtime
    shape = [int(s) for s in shape]
    if getattr(element_ty, "name", "") != "fp32":
        raise ExecutorError(f"the executor's TMEM holds float32 accumulators, got {element_ty}{where()}")
    name = _assigned_name("tmem")
    alloc = _next_alloc(TmemAlloc, name, lambda: TmemAlloc(name, element_ty, shape, layout, rt.num_ctas))
    if alloc.cols > 512:
        _hazard("tmem-out-of-bounds", f"allocation of {alloc.cols} columns: a CTA has 512")
    view = TmemView(alloc, 0, shape, element_ty, layout)
    if value is not None:
        tmem_store(view, value)
    return view


def _tmem_slice(view: TmemView, start: Any, length: Any, dim: int = 1) -> TmemView:
    start, length, dim = int(start), int(length), int(dim)
    if dim != view.rank - 1:
        raise ExecutorError(f"the executor slices TMEM along columns only, got dim={dim}{where()}")
    shape = list(view.shape)
    shape[dim] = length
    unit = torch_dtype(view.dtype).itemsize / 4
    return TmemView(view.alloc, view.offset + int(start * unit), shape, view.dtype, view.layout, view.kind)


def _tmem_index(view: TmemView, index: Any) -> TmemView:
    index = int(index)
    if view.rank != 3:
        raise ExecutorError(f"index() needs a 3-D TMEM descriptor, got shape {view.shape}{where()}")
    if not 0 <= index < view.shape[0]:
        _hazard("tmem-out-of-bounds", f"index({index}) of a TMEM buffer of {view.shape[0]}")
    return TmemView(view.alloc, view.offset + index * view.shape[-1], view.shape[1:], view.dtype, view.layout,
                    view.kind)


def _tmem_reinterpret(view: TmemView, dtype: Any = None, shape: Any = None, layout: Any = None) -> TmemView:
    dtype = view.dtype if dtype is None else dtype
    shape = list(view.shape if shape is None else [int(s) for s in shape])
    layout = view.layout if layout is None else layout
    kind = "scales" if type(layout).__name__ == "TensorMemoryScalesLayout" else "acc"
    return TmemView(view.alloc, view.offset, shape, dtype, layout, kind)


def tmem_load(view: TmemView, layout: Any = None) -> RegTensor:
    return emit(exec_op(E.TmemLoad, "tmem_load", view=view))


def tmem_store(view: TmemView, value: Any, pred: Any = True) -> None:
    if pred:
        emit(exec_op(E.SmemStore, "tmem_store", view=view, value=value))


for _name, _fn in (("slice", _tmem_slice), ("index", _tmem_index), ("reinterpret", _tmem_reinterpret),
                   ("load", tmem_load), ("store", tmem_store)):
    setattr(TmemView, _name, _fn)


# =====================================================================================
# operations: what the builtins hand to the engine
# =====================================================================================
class Payload:
    """What the data backend needs to give an operation its effect (``op.x``)."""

    def __init__(self, what: str, **fields: Any):
        self.what = what
        self.__dict__.update(fields)


def exec_op(cls: type, what: str, **fields: Any) -> E.Op:
    """An engine op of class ``cls`` (for the timing model's sake) carrying a :class:`Payload`."""
    if cls is E.SmemStore:
        op = E.SmemStore(0, None, 0)
    elif cls is E.SmemLoad:
        op = E.SmemLoad()
    elif cls is E.TmemLoad:
        view = fields["view"]
        op = E.TmemLoad(0, 0, view.columns)
    else:
        raise AssertionError(cls)
    op.x = Payload(what, **fields)
    return op


# =====================================================================================
# mbarrier
# =====================================================================================
class CpuMbarrier:
    """``mbarrier`` (Hopper / Blackwell): allocate, init, expect, arrive, wait, invalidate."""

    @staticmethod
    def allocate_mbarrier(batch: Any = None, two_ctas: bool = False) -> Any:
        rt = STATE.runtime
        name = _assigned_name("barrier")
        n = 1 if batch is None else int(batch)
        alloc = _next_alloc(BarrierAlloc, name, lambda: BarrierAlloc(name, n, bool(two_ctas), rt.num_ctas))
        return BarrierRef(alloc, 0) if batch is None else BarrierBatch(alloc)

    @staticmethod
    def init(bar: BarrierRef, count: Any) -> None:
        ctx = _ctx()
        rt = STATE.runtime
        _check_barrier(bar, "init")
        ctx.inits_unfenced = True  # every CTA runs the init code, lead or not, and then the cluster barrier
        alloc = bar.alloc
        if alloc.pair and not _lead(ctx):
            return  # only the lead initializes a pair barrier (SEMANTICS.md 3)
        copy_cta = 0 if alloc.pair else ctx.cta
        if alloc.copies[copy_cta][bar.index_] is not None:
            _hazard("barrier-reinitialized", f"{bar} initialized twice")
        total = int(count) * (rt.num_ctas if alloc.pair else 1)
        engine_bar = rt.engine.barrier(alloc.name, bar.index_, cta=copy_cta, cluster=ctx.cluster, count=total)
        rt.sync.new_barrier(engine_bar)
        alloc.copies[copy_cta][bar.index_] = engine_bar

    @staticmethod
    def invalidate(bar: BarrierRef) -> None:
        _check_barrier(bar, "invalidate")

    @staticmethod
    def expect(bar: BarrierRef, bytes_per_cta: Any = None, pred: Any = True, *, from_cta: Any = None) -> None:
        if not pred:
            return
        target = _barrier_copy(bar, "expect")
        if target is not None:
            emit(E.Expect(target, int(bytes_per_cta)))

    @staticmethod
    def arrive(bar: BarrierRef, *, count: Any = 1, pred: Any = True, from_cta: Any = None) -> None:
        if not pred:
            return
        target = _barrier_copy(bar, "arrive")
        if target is not None:
            emit(E.Arrive(target, int(count)))

    @staticmethod
    def wait(bar: BarrierRef, phase: Any, pred: Any = True, deps: Any = ()) -> None:
        ctx = _ctx()
        if not pred:
            return
        if bar.alloc.pair and not _lead(ctx):
            return  # a pair barrier lives in the lead: the other CTA's wait is not real (SEMANTICS.md 3, 6)
        target = _barrier_copy(bar, "wait")
        if target is not None:
            phase = int(phase)
            if phase not in (0, 1):
                raise ExecutorError(f"mbarrier.wait phase must be 0 or 1, got {phase}{where()}")
            emit(E.Wait(target, phase))

    MBarrierLayout = MBarrierLayoutType


def _check_barrier(bar: Any, what: str) -> None:
    if not isinstance(bar, BarrierRef):
        raise ExecutorError(f"mbarrier.{what} needs one barrier (e.g. bars.index(i)), got "
                            f"{type(bar).__name__}{where()}")


def fence_inits() -> None:
    """The compiler follows a CTA's mbarrier inits with ``fence.mbarrier_init.release.cluster`` and a cluster
    barrier before their first use (SEMANTICS.md 3): model it at the first use after an init."""
    ctx = _ctx()
    if ctx.inits_unfenced and STATE.runtime.num_ctas > 1:
        ctx.inits_unfenced = False
        STATE.runtime.cluster_sync(ctx)


def _barrier_copy(bar: BarrierRef, what: str) -> Any:
    _check_barrier(bar, what)
    fence_inits()
    target = bar.copy_for(_ctx().cta)
    if target is None:
        _hazard("barrier-not-initialized", f"mbarrier.{what} on {bar} before mbarrier.init")
    return target


# =====================================================================================
# TMA
# =====================================================================================
class CpuTma:
    """``tma``: async_load (multicast), async_store, store_wait."""

    @staticmethod
    def async_load(desc: DeviceDescriptor, coord: Any, barrier: BarrierRef, result: SmemView, pred: Any = True,
                   multicast: bool = False, cache_policy: Any = None) -> None:
        ctx = _ctx()
        rt = STATE.runtime
        if not pred:
            return
        _check_desc(desc, "async_load")
        coord = [int(c) for c in coord]
        if len(coord) != len(desc.block_shape):
            raise ExecutorError(f"tma.async_load of {desc} got {len(coord)} coordinates{where()}")
        if list(result.shape) != desc.block_shape:
            raise ExecutorError(f"tma.async_load of {desc} into {result} of shape {result.shape}: the "
                                f"destination must have the block shape{where()}")
        _check_barrier(barrier, "async_load")
        fence_inits()
        if desc.split:
            # each CTA loads its own block of the split dimension(s) into its own shared memory
            offset = list(coord)
            for d in desc.split:
                offset[d] += ctx.cta * desc.local_block[d]
            dests = [ctx.cta]
            box = desc.local_block
        elif rt.num_ctas > 1 and multicast:
            if not _lead(ctx):
                return  # the lead multicasts a duplicated block into every CTA of the cluster
            offset, dests, box = coord, list(range(rt.num_ctas)), desc.block_shape
        else:
            offset, dests, box = coord, [ctx.cta], desc.block_shape
        nbytes = math.prod(box) * desc.base.element_size()
        targets = []
        for d in dests:
            copy = barrier.copy_for(d)
            if copy is None:
                _hazard("barrier-not-initialized", f"TMA load signals {barrier} before mbarrier.init")
                return
            targets.append((copy, nbytes))
        stage = result.transforms[0][1] if result.transforms and result.transforms[0][0] == "index" else 0
        op = E.TmaLoad(targets[0][0], desc.name, stage, 0, 0, 0, nbytes, tuple(dests))
        op.x = Payload("tma_load", desc=desc, coord=offset, box=list(box), view=result, dests=dests,
                       tx_targets=targets, epochs={})
        emit(op)

    @staticmethod
    def async_store(desc: DeviceDescriptor, coord: Any, src: SmemView, cache_policy: Any = None) -> None:
        ctx = _ctx()
        _check_desc(desc, "async_store")
        coord = [int(c) for c in coord]
        if list(src.shape) != desc.block_shape:
            raise ExecutorError(f"tma.async_store of {src} (shape {src.shape}) through {desc}: the source must "
                                f"have the block shape{where()}")
        offset = list(coord)
        for d in desc.split:
            offset[d] += ctx.cta * desc.local_block[d]
        rows = desc.local_block[0] if desc.local_block else 1
        cols = desc.local_block[-1] if desc.local_block else 1
        stage = src.transforms[0][1] if src.transforms and src.transforms[0][0] == "index" else 0
        op = E.TmaStore(stage, offset[0], offset[-1], rows, cols, 0)
        op.x = Payload("tma_store", desc=desc, coord=offset, view=src)
        emit(op)

    @staticmethod
    def store_wait(pendings: Any, read_only: bool = True) -> None:
        pendings = int(pendings)
        if pendings < 0:
            raise ExecutorError(f"tma.store_wait(pendings={pendings}) must be >= 0{where()}")
        emit(E.StoreWait(pendings))


def _check_desc(desc: Any, what: str) -> None:
    if not isinstance(desc, DeviceDescriptor):
        raise ExecutorError(f"tma.{what} needs a tensor descriptor, got {type(desc).__name__}{where()}")


# =====================================================================================
# tcgen05
# =====================================================================================
def tcgen05_copy(src: SmemView, dst: TmemView) -> None:
    ctx = _ctx()
    if not isinstance(src, SmemView) or not isinstance(dst, TmemView):
        raise ExecutorError(f"tcgen05_copy needs a shared-memory source and a TMEM destination{where()}")
    if _two_cta_issue_skipped(ctx, dst.alloc.two_ctas):
        return
    operand = src.alloc.name
    op = E.ScaleCopy(operand, src.transforms[0][1] if src.transforms and src.transforms[0][0] == "index" else 0, 0,
                     dst.columns)
    op.x = Payload("scale_copy", src=src, dst=dst, ctas=_issue_ctas(dst.alloc.two_ctas))
    emit(op)


def _issue_ctas(two_ctas: bool) -> list[int]:
    rt, ctx = STATE.runtime, _ctx()
    return list(range(rt.num_ctas)) if two_ctas and rt.num_ctas > 1 else [ctx.cta]


def tcgen05_mma_scaled(a: SmemView, b: SmemView, acc: TmemView, a_scale: TmemView, b_scale: TmemView, a_type: Any,
                       b_type: Any, *, use_acc: Any = True, pred: Any = True, multicast: bool = False,
                       mbarriers: Any = None, mbarrier_preds: Any = None) -> None:
    ctx = _ctx()
    operands = (("a", a, SmemView), ("b", b, SmemView), ("acc", acc, TmemView), ("a_scale", a_scale, TmemView),
                ("b_scale", b_scale, TmemView))
    for name, v, kind in operands:
        if not isinstance(v, kind):
            raise ExecutorError(f"tcgen05_mma_scaled: {name} must be a {kind.__name__}, got {type(v).__name__}"
                                f"{where()}")
    two_ctas = bool(getattr(acc.layout, "two_ctas", False))
    m, n = acc.shape[-2], acc.shape[-1]
    k = a.shape[-1] * (2 if str(a_type) == "e2m1" and a.dtype == gl.uint8 else 1)
    k_b = b.shape[0] * (2 if str(b_type) == "e2m1" and b.dtype == gl.uint8 else 1)
    if a.rank != 2 or b.rank != 2 or a.shape[0] != m or b.shape[1] != n or k_b != k:
        # what Gluon's verifier refuses: A is [M, K], B is [K, N] (a permuted K-major buffer), acc [M, N]
        raise ExecutorError(f"tcgen05_mma_scaled: A {list(a.shape)} ({a_type}), B {list(b.shape)} ({b_type}) and the "
                            f"accumulator {list(acc.shape)} do not make an [M, K] x [K, N] -> [M, N] product{where()}")
    if _two_cta_issue_skipped(ctx, two_ctas) or not pred:
        return
    stage = a.transforms[0][1] if a.transforms and a.transforms[0][0] == "index" else 0
    ctx.kstep = ctx.kstep + 1 if use_acc else 0  # K steps since the last MMA that did not accumulate
    op = E.Mma(stage, ctx.kstep, acc.columns, bool(use_acc), 2 * m * n * k)
    op.x = Payload("mma", a=a, b=b, acc=acc, a_scale=a_scale, b_scale=b_scale, a_type=str(a_type),
                   b_type=str(b_type), use_acc=bool(use_acc), ctas=_issue_ctas(two_ctas))
    emit(op)
    if mbarriers is not None:
        preds = list(mbarrier_preds) if mbarrier_preds is not None else [True] * len(mbarriers)
        for bar, p in zip(mbarriers, preds, strict=True):
            if p:
                _commit(bar, two_ctas)


def tcgen05_mma(*args: Any, **kwargs: Any) -> None:
    raise ExecutorError(f"tcgen05_mma (unscaled) is not implemented by the CPU executor{where()}")


def tcgen05_commit(barrier: BarrierRef, pred: Any = True, descs: Any = ()) -> None:
    ctx = _ctx()
    two_ctas = STATE.runtime.two_cta_tmem(ctx.cluster)
    if _two_cta_issue_skipped(ctx, two_ctas) or not pred:
        return
    _commit(barrier, two_ctas)


def _commit(bar: BarrierRef, two_ctas: bool) -> None:
    """One arrival on ``bar`` once every earlier tcgen05 op of this partition is done; in 2-CTA mode
    the lead's commit multicasts: one arrival at the same barrier of every CTA (SEMANTICS.md 2)."""
    _check_barrier(bar, "tcgen05_commit")
    fence_inits()
    ctas = _issue_ctas(two_ctas)
    if bar.alloc.pair:
        if len(ctas) > 1:
            _hazard("commit-to-pair-barrier", f"the multicast commit to {bar} reaches the other CTA's copy, but "
                    "a pair barrier exists only in the lead")
        ctas = [0]
    targets = []
    for c in ctas:
        copy = bar.copy_for(c)
        if copy is None:
            _hazard("barrier-not-initialized", f"tcgen05_commit to {bar} before mbarrier.init")
            return
        targets.append(copy)
    op = E.Commit(tuple(targets))
    op.x = Payload("commit")
    emit(op)


def fence_async_shared(cluster: bool = False) -> None:
    """A proxy fence: the compiler also inserts one before every TMA store, so it orders nothing here."""
    return None


# =====================================================================================
# namespaces and rebinding
# =====================================================================================
_GL_OVERRIDES = {
    "program_id": program_id, "num_programs": num_programs, "num_ctas": num_ctas, "num_warps": num_warps,
    "static_assert": static_assert, "static_print": static_print, "to_tensor": to_tensor, "where": where_,
    "cdiv": cdiv, "static_range": static_range, "convert_layout": convert_layout, "minimum": minimum,
    "maximum": maximum, "allocate_shared_memory": allocate_shared_memory, "barrier": barrier,
    "warp_specialize": warp_specialize, "constexpr": lambda x: x, "range": range,
}
_BLACKWELL_OVERRIDES = {
    "allocate_tensor_memory": allocate_tensor_memory, "tcgen05_copy": tcgen05_copy,
    "tcgen05_mma_scaled": tcgen05_mma_scaled, "tcgen05_mma": tcgen05_mma, "tcgen05_commit": tcgen05_commit,
    "fence_async_shared": fence_async_shared,
}


class CpuModule:
    """A Gluon language module with its builtins replaced by CPU ones (unknown builtins raise)."""

    def __init__(self, real: types.ModuleType, overrides: dict[str, Any], rebinder: Rebinder):
        self._real, self._overrides, self._rebinder = real, overrides, rebinder

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        value = getattr(self._real, name)
        return self._rebinder.convert(value, f"{self._real.__name__.rsplit('.', 1)[-1]}.{name}")


def _is_builtin(value: Any) -> bool:
    return callable(value) and getattr(value, "__triton_builtin__", False) and not isinstance(value, type)


class Rebinder:
    """Turns jit functions, constexpr functions, aggregates and Gluon modules into CPU equivalents."""

    def __init__(self) -> None:
        self._cache: dict[int, Any] = {}
        self._globals: dict[int, dict] = {}
        self.codes: set[types.CodeType] = set()
        self.aggregates: dict[int, type] = {}

    # --- modules ---------------------------------------------------------------------
    def module(self, mod: types.ModuleType) -> Any:
        name = mod.__name__
        if name.endswith(".mbarrier"):
            return CpuModule(mod, {k: getattr(CpuMbarrier, k) for k in
                                   ("allocate_mbarrier", "init", "invalidate", "expect", "arrive", "wait",
                                    "MBarrierLayout")}, self)
        if name.endswith(".tma"):
            return CpuModule(mod, {"async_load": CpuTma.async_load, "async_store": CpuTma.async_store,
                                   "store_wait": CpuTma.store_wait,
                                   "async_copy_global_to_shared": CpuTma.async_load}, self)
        if name.startswith("triton.experimental.gluon.language"):
            overrides = dict(_BLACKWELL_OVERRIDES) if "nvidia" in name else dict(_GL_OVERRIDES)
            return CpuModule(mod, overrides, self)
        return mod

    # --- values ----------------------------------------------------------------------
    def convert(self, value: Any, name: str = "?") -> Any:
        if isinstance(value, types.ModuleType):
            return self.module(value)
        if isinstance(value, JITFunction):
            return self.jit(value)
        if isinstance(value, ConstexprFunction):
            return value.fn
        if isinstance(value, type) and getattr(value, "__triton_aggregate__", False):
            return self.aggregate(value)
        short = name.rsplit(".", 1)[-1]
        if short in _BLACKWELL_OVERRIDES and _is_builtin(value):
            return _BLACKWELL_OVERRIDES[short]
        if _is_builtin(value):
            return unsupported(name)
        return value

    def jit(self, fn: JITFunction) -> Any:
        key = id(fn)
        if key not in self._cache:
            py = fn.fn
            g = fn.fn.__globals__
            if id(g) not in self._globals:
                self._globals[id(g)] = {}
                fill = True
            else:
                fill = False
            new = self._globals[id(g)]
            cpu = types.FunctionType(py.__code__, new, py.__name__, py.__defaults__, py.__closure__)
            cpu.__kwdefaults__ = py.__kwdefaults__
            cpu.__qualname__ = py.__qualname__
            cpu.__wrapped_jit__ = fn
            self._collect_codes(py.__code__)
            self._cache[key] = cpu
            if fill:
                for k, v in g.items():
                    new[k] = self.convert(v, k)
                new["__builtins__"] = g.get("__builtins__", __builtins__)
        return self._cache[key]

    def _collect_codes(self, code: types.CodeType) -> None:
        self.codes.add(code)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                self._collect_codes(c)

    def aggregate(self, agg: type) -> type:
        key = id(agg)
        if key in self.aggregates:
            return self.aggregates[key]
        fields = tuple(getattr(agg, "__annotations__", {}))
        ns: dict[str, Any] = {"__slots__": fields, "_fields": fields}
        cls = type(agg.__name__, (CpuAggregate,), ns)
        self.aggregates[key] = cls
        for name, member in vars(agg).items():
            if name.startswith("__") or name in ("_get_instance", "_set_name", "_flatten_ir", "type"):
                continue
            if isinstance(member, JITFunction):
                setattr(cls, name, self.jit(member))
            elif isinstance(member, ConstexprFunction):
                setattr(cls, name, member.fn)
            elif isinstance(member, (staticmethod, classmethod)) or callable(member):
                setattr(cls, name, member)
        return cls


class CpuAggregate:
    """Base of the plain classes that stand in for ``@gluon.aggregate`` ones."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise ExecutorError(f"{type(self).__name__}() takes {len(fields)} fields, got {len(args)}{where()}")
        for name, value in zip(fields, args, strict=False):
            object.__setattr__(self, name, value)
        for name, value in kwargs.items():
            if name not in fields:
                raise ExecutorError(f"{type(self).__name__} has no field {name!r}{where()}")
            object.__setattr__(self, name, value)
        missing = [f for f in fields if not hasattr(self, f)]
        if missing:
            raise ExecutorError(f"{type(self).__name__}() is missing field(s) {missing}{where()}")
        if "tile_id" in fields and "has_work" in fields and STATE.ctx is not None:
            STATE.ctx.on_schedule(self.tile_id, self.has_work)  # annotation only (reports, timing)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"
