"""The builtins that allocate memory, synchronize and issue asynchronous hardware operations.

Shared and tensor memory (``gl.allocate_shared_memory``, ``allocate_tensor_memory``), mbarriers (``init``,
``expect``, ``arrive``, ``wait``, ``invalidate``), warp specialization and cluster barriers, TMA loads and stores
and the ``tcgen05`` copies, MMAs and commits.  Each one that touches memory or a barrier builds an engine
operation (:mod:`gluon_overlap.interp.ops`) and hands it to the scheduler through
:func:`~gluon_overlap.interp.context.emit`; the data effects (:mod:`gluon_overlap.interp.data`) give it its
effect.  The register-level builtins are in :mod:`gluon_overlap.interp.language`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import triton.experimental.gluon.language as gl

from gluon_overlap.interp import ops
from gluon_overlap.interp.context import (
    ExecutorError,
    caller_line,
    current,
    emit,
    hazard,
    report_out_of_range,
    runtime,
    where,
)
from gluon_overlap.interp.memory import (
    BarrierAlloc,
    BarrierBatch,
    BarrierRef,
    DeviceDescriptor,
    Payload,
    SmemAlloc,
    SmemView,
    TmemAlloc,
    TmemView,
)
from gluon_overlap.interp.registry import builtin
from gluon_overlap.interp.tensors import (
    RegTensor,
    torch_dtype,
)


def _lead(ctx: Any) -> bool:
    return ctx.cta == 0


def _two_cta_issue_skipped(ctx: Any, two_ctas: bool) -> bool:
    """In 2-CTA mode only the lead CTA issues tcgen05 copies, MMAs and commits (SEMANTICS.md 3)."""
    return two_ctas and ctx.runtime.num_ctas > 1 and not _lead(ctx)


def _stage(view: SmemView) -> int:
    return view.transforms[0][1] if view.transforms and view.transforms[0][0] == "index" else 0


# =====================================================================================
# gl: allocations, barriers, warp specialization
# =====================================================================================
def _next_alloc(kind: type, name: str, make: Callable[[], Any]) -> Any:
    """The cluster-wide object behind this CTA's next allocation (both CTAs run the same code, so
    their ``n``-th allocations are the same buffer)."""
    ctx = current()
    cluster = ctx.runtime.clusters[ctx.cluster]
    n = cluster.next_alloc[ctx.cta]
    cluster.next_alloc[ctx.cta] += 1
    if n == len(cluster.objects):
        cluster.objects.append(make())
    obj = cluster.objects[n]
    if not isinstance(obj, kind):
        raise ExecutorError(
            f"CTA {ctx.cta} allocated {kind.__name__} {name} where CTA 0 allocated "
            f"{type(obj).__name__} {obj.name}: the CTAs of a cluster must allocate alike{where()}"
        )
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


try:  # the class used to mark barrier allocations
    from triton.experimental.gluon.language.nvidia.hopper.mbarrier import MBarrierLayout as MBarrierLayoutType
except ImportError:  # pragma: no cover
    MBarrierLayoutType = type("MBarrierLayoutType", (), {})


@builtin(
    "gl.allocate_shared_memory",
    effect="a shared-memory buffer per CTA (garbage until written); "
    "an MBarrierLayout allocation is a batch of mbarriers",
)
def allocate_shared_memory(element_ty: Any, shape: Any, layout: Any, value: Any = None) -> Any:
    rt = runtime()
    shape = [int(s) for s in shape]
    if isinstance(layout, MBarrierLayoutType) or type(layout).__name__ == "MBarrierLayout":
        bases = [list(b) for b in (layout.cga_layout or [])]
        pair = bool(bases) and all(v == 0 for v in bases[0])
        batch = shape[0] if len(shape) > 1 else 1
        name = _assigned_name("barrier")
        alloc = _next_alloc(BarrierAlloc, name, lambda: BarrierAlloc(name, batch, pair, rt.num_ctas))
        if alloc.smem is None:  # its words, should the kernel use them as data (a CLC response buffer)
            alloc.smem = SmemAlloc(name, element_ty, shape, None, rt.num_ctas)
            alloc.smem.layout = layout
        return BarrierBatch(alloc) if len(shape) > 1 else BarrierRef(alloc, 0)
    name = _assigned_name("smem")
    alloc = _next_alloc(SmemAlloc, name, lambda: SmemAlloc(name, element_ty, shape, layout, rt.num_ctas))
    view = SmemView(alloc)
    if value is not None:
        view.store(value)
    return view


@builtin(
    "gl.barrier",
    effect="a CTA's threads meet (nothing: a partition is one process); cluster=True: every CTA of the cluster meets",
)
def barrier(*, cluster: bool = False) -> None:
    ctx = current()
    if cluster and ctx.runtime.num_ctas > 1:
        ctx.inits_unfenced = False
        ctx.runtime.cluster_sync(ctx)


@builtin("cluster.barrier", effect="every CTA of the cluster arrives, then waits for all of them")
def cluster_barrier(relaxed: bool = False) -> None:
    ctx = current()
    if ctx.runtime.num_ctas == 1:  # what the compiler's verifier says
        raise ExecutorError(
            f"cluster.barrier: 'ttng.cluster_barrier' op requires ttg.num-ctas > 1 (this launch has "
            f"num_ctas=1){where()}"
        )
    if ctx.runtime.num_ctas > 1:
        ctx.inits_unfenced = False
        ctx.runtime.cluster_sync(ctx)


@builtin(
    "gl.warp_specialize",
    effect="forks the CTA into its partitions (processes); returns the default "
    "partition's result when all have finished",
)
def warp_specialize(functions_and_args: Any, worker_num_warps: Any, worker_num_regs: Any = None) -> Any:
    """Fork: every partition (the default one first) becomes a new process of this CTA; returns the
    default partition's result when all of them have finished.  Starts with a cluster barrier (the inits before it must
    be visible to the other CTA, SEMANTICS.md section 3)."""
    ctx = current()
    rt = ctx.runtime
    if ctx.partition != "main":
        raise ExecutorError(f"warp_specialize cannot be nested{where()}")
    pairs = [tuple(p) for p in functions_and_args]
    warps = [int(w) for w in worker_num_warps]
    if len(pairs) - 1 != len(warps):
        raise ExecutorError(f"warp_specialize got {len(pairs) - 1} workers but {len(warps)} worker_num_warps{where()}")
    for fn, args in pairs:
        if not isinstance(args, tuple | list):
            raise ExecutorError(
                f"warp_specialize: the arguments of {getattr(fn, '__name__', fn)} must be a tuple, got "
                f"{type(args).__name__}{where()}"
            )
    if rt.num_ctas > 1:
        ctx.inits_unfenced = False
        rt.cluster_sync(ctx)
    result: list = []
    join_bar = rt.spawn_partitions(ctx, [(fn, tuple(args)) for fn, args in pairs], [ctx.num_warps] + warps, result)
    rt.join_partitions(ctx, join_bar)
    return result[0] if result else None


# =====================================================================================
# mbarrier
# =====================================================================================
@builtin("mbarrier.allocate_mbarrier", effect="a batch of mbarriers (uninitialized)")
def allocate_mbarrier(batch: Any = None, two_ctas: bool = False) -> Any:
    rt = runtime()
    name = _assigned_name("barrier")
    n = 1 if batch is None else int(batch)
    alloc = _next_alloc(BarrierAlloc, name, lambda: BarrierAlloc(name, n, bool(two_ctas), rt.num_ctas))
    if alloc.smem is None:  # the shape Gluon gives it: one word per CTA (per pair with two_ctas)
        per = max(1, rt.num_ctas // 2) if two_ctas and rt.num_ctas > 1 else rt.num_ctas
        shape = [per] if batch is None else [n, per]
        alloc.smem = SmemAlloc(name, gl.int64, shape, None, rt.num_ctas)
        alloc.smem.layout = _mbarrier_layout(rt.num_ctas, bool(two_ctas))
    return BarrierRef(alloc, 0) if batch is None else BarrierBatch(alloc)


def _mbarrier_layout(num_ctas: int, two_ctas: bool) -> Any:
    """The layout ``allocate_mbarrier`` gives its barriers (``MBarrierLayout.multicta``)."""
    try:
        return MBarrierLayoutType.multicta.fn(num_ctas, two_ctas)
    except Exception:  # noqa: BLE001  (an older Triton without it)
        return MBarrierLayoutType()


def _check_barrier(bar: Any, what: str) -> None:
    """``bar`` is one barrier; one computed out of range is reported now that it is used (and the clamped one
    used, so the run goes on)."""
    if not isinstance(bar, BarrierRef):
        raise ExecutorError(
            f"mbarrier.{what} needs one barrier (e.g. bars.index(i)), got {type(bar).__name__}{where()}"
        )
    if bar.bad is not None:
        report_out_of_range(bar.bad, f"mbarrier.{what}")


@builtin(
    "mbarrier.init", effect="a fresh barrier in phase 0 (twice without invalidate: a hazard; after invalidate: legal)"
)
def init(bar: BarrierRef, count: Any) -> None:
    ctx = current()
    rt = ctx.runtime
    _check_barrier(bar, "init")
    ctx.inits_unfenced = True  # every CTA runs the init code, lead or not, and then the cluster barrier
    alloc = bar.alloc
    if alloc.pair and not _lead(ctx):
        return  # only the lead initializes a pair barrier (SEMANTICS.md 3)
    copy_cta = 0 if alloc.pair else ctx.cta
    if alloc.copies[copy_cta][bar.index_] is not None and alloc.invalidated[copy_cta][bar.index_] is None:
        hazard("barrier-reinitialized", f"{bar} initialized twice (without mbarrier.invalidate between)")
    alloc.invalidated[copy_cta][bar.index_] = None
    total = int(count) * (rt.num_ctas if alloc.pair else 1)
    engine_bar = rt.engine.barrier(alloc.name, bar.index_, cta=copy_cta, cluster=ctx.cluster, count=total)
    rt.sync.new_barrier(engine_bar)
    alloc.copies[copy_cta][bar.index_] = engine_bar


@builtin("mbarrier.invalidate", effect="ends the barrier's life: a later use is a hazard until it is initialized again")
def invalidate(bar: BarrierRef) -> None:
    ctx = current()
    _check_barrier(bar, "invalidate")
    alloc = bar.alloc
    if alloc.pair and not _lead(ctx):
        return
    copy_cta = 0 if alloc.pair else ctx.cta
    if alloc.copies[copy_cta][bar.index_] is None:
        hazard("barrier-not-initialized", f"mbarrier.invalidate of {bar} before mbarrier.init")
        return
    if alloc.invalidated[copy_cta][bar.index_] is not None:
        hazard("barrier-used-after-invalidate", f"{bar} invalidated twice")
        return
    alloc.invalidated[copy_cta][bar.index_] = caller_line() or "?"


def _usable(bar: BarrierRef, cta: int, what: str) -> Any:
    """The engine barrier a use of ``bar`` by CTA ``cta`` reaches, or None (reported)."""
    target = bar.copy_for(cta)
    if target is None:
        hazard("barrier-not-initialized", f"{what} on {bar} before mbarrier.init")
        return None
    dead = bar.alloc.invalidated[0 if bar.alloc.pair else cta][bar.index_]
    if dead is not None:
        hazard("barrier-used-after-invalidate", f"{what} on {bar} after mbarrier.invalidate (at {dead}) ended its life")
        return None
    return target


def fence_inits() -> None:
    """The compiler follows a CTA's mbarrier inits with ``fence.mbarrier_init.release.cluster`` and a cluster
    barrier before their first use (SEMANTICS.md 3): model it at the first use after an init."""
    ctx = current()
    if ctx.inits_unfenced and ctx.runtime.num_ctas > 1:
        ctx.inits_unfenced = False
        ctx.runtime.cluster_sync(ctx)


def _barrier_copy(bar: BarrierRef, what: str) -> Any:
    _check_barrier(bar, what)
    fence_inits()
    return _usable(bar, current().cta, f"mbarrier.{what}")


@builtin("mbarrier.expect", op=ops.Expect, effect="adds the bytes to the tx-count, then arrives once")
def expect(bar: BarrierRef, bytes_per_cta: Any = None, pred: Any = True, *, from_cta: Any = None) -> None:
    if not pred:
        return
    if bytes_per_cta is None:
        raise ExecutorError(f"mbarrier.expect needs bytes_per_cta{where()}")
    target = _barrier_copy(bar, "expect")
    if target is not None:
        emit(ops.Expect(target, int(bytes_per_cta)))


@builtin("mbarrier.arrive", op=ops.Arrive, effect="lowers the pending count")
def arrive(bar: BarrierRef, *, count: Any = 1, pred: Any = True, from_cta: Any = None) -> None:
    if not pred:
        return
    target = _barrier_copy(bar, "arrive")
    if target is not None:
        emit(ops.Arrive(target, int(count)))


@builtin("mbarrier.wait", op=ops.Wait, effect="blocks until the phase with the given parity has completed")
def wait(bar: BarrierRef, phase: Any, pred: Any = True, deps: Any = ()) -> None:
    ctx = current()
    if not pred:
        return
    if bar.alloc.pair and not _lead(ctx):
        return  # a pair barrier lives in the lead: the other CTA's wait is not real (SEMANTICS.md 3, 6)
    target = _barrier_copy(bar, "wait")
    if target is not None:
        phase = int(phase)
        if phase not in (0, 1):
            raise ExecutorError(f"mbarrier.wait phase must be 0 or 1, got {phase}{where()}")
        emit(ops.Wait(target, phase))


# =====================================================================================
# TMA
# =====================================================================================
def _check_desc(desc: Any, what: str) -> None:
    if not isinstance(desc, DeviceDescriptor):
        raise ExecutorError(f"tma.{what} needs a tensor descriptor, got {type(desc).__name__}{where()}")


@builtin(
    "tma.async_load",
    op=ops.TmaLoad,
    effect="the box into shared memory at completion (zero outside the "
    "tensor), bytes to the barrier; multicast / CTA-split per the layout",
)
def async_load(
    desc: DeviceDescriptor,
    coord: Any,
    barrier: BarrierRef,
    result: SmemView,
    pred: Any = True,
    multicast: bool = False,
    cache_policy: Any = None,
) -> None:
    ctx = current()
    rt = ctx.runtime
    if not pred:
        return
    _check_desc(desc, "async_load")
    coord = [int(c) for c in coord]
    if len(coord) != len(desc.block_shape):
        raise ExecutorError(f"tma.async_load of {desc} got {len(coord)} coordinates{where()}")
    if list(result.shape) != desc.block_shape:
        raise ExecutorError(
            f"tma.async_load of {desc} into {result} of shape {result.shape}: the "
            f"destination must have the block shape{where()}"
        )
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
        copy = _usable(barrier, d, "a TMA load's signal")
        if copy is None:
            return
        targets.append((copy, nbytes))
    op = ops.TmaLoad(targets[0][0], desc.name, _stage(result), nbytes, tuple(dests))
    op.x = Payload(desc=desc, coord=offset, box=list(box), view=result, dests=dests, tx_targets=targets, epochs={})
    emit(op)


@builtin("tma.async_store", op=ops.TmaStore, effect="shared memory into the tensor at completion, clipped at its edges")
def async_store(desc: DeviceDescriptor, coord: Any, src: SmemView, cache_policy: Any = None) -> None:
    ctx = current()
    _check_desc(desc, "async_store")
    coord = [int(c) for c in coord]
    if list(src.shape) != desc.block_shape:
        raise ExecutorError(
            f"tma.async_store of {src} (shape {src.shape}) through {desc}: the source must "
            f"have the block shape{where()}"
        )
    offset = list(coord)
    for d in desc.split:
        offset[d] += ctx.cta * desc.local_block[d]
    if any(c < 0 for c in offset):
        # measured: the H200 stops the kernel ("an illegal instruction was encountered"); loads there are filled
        raise ExecutorError(
            f"tma.async_store of {src} through {desc} at coordinates {offset}: a TMA store at a "
            f"negative coordinate faults on the GPU (CUDA: an illegal instruction was encountered; "
            f"a load there is zero-filled, a store is not clipped){where()}"
        )
    rows = desc.local_block[0] if len(desc.local_block) > 1 else 1
    cols = desc.local_block[-1] if desc.local_block else 1
    op = ops.TmaStore(_stage(src), offset[0], offset[-1], rows, cols)
    op.x = Payload(desc=desc, coord=offset, view=src)
    emit(op)


def _gather_rows(
    desc: DeviceDescriptor, x_offsets: Any, y_offset: Any, smem: SmemView, what: str
) -> tuple[list[int], int]:
    """The row offsets and the column of a TMA gather / scatter, checked as Triton and the hardware check them."""
    if len(desc.block_shape) != 2 or desc.block_shape[0] != 1:
        raise ExecutorError(f"tma.{what} needs a 2-D descriptor of block shape [1, BLOCK_Y], got {desc}{where()}")
    if not isinstance(x_offsets, RegTensor) or x_offsets.rank != 1:
        raise ExecutorError(f"tma.{what} needs a 1-D tensor of row offsets, got {x_offsets!r}{where()}")
    rows = [int(r) for r in x_offsets.local.reshape(-1).tolist()]
    y = int(y_offset)
    if list(smem.shape) != [len(rows), desc.block_shape[1]]:
        raise ExecutorError(
            f"tma.{what} of {len(rows)} rows of {desc.block_shape[1]} through {smem} of shape "
            f"{smem.shape}: the shared memory must be [rows, BLOCK_Y]{where()}"
        )
    if (y * desc.base.element_size()) % 16:
        # the 09 tutorial: the CUDA driver reports an illegal instruction for an unaligned column offset
        raise ExecutorError(
            f"tma.{what} at column {y}: the column offset must be 16-byte aligned (on the GPU an "
            f"illegal instruction){where()}"
        )
    return rows, y


@builtin(
    "tma.async_gather",
    op=ops.TmaLoad,
    effect="rows picked by a tensor of row offsets into shared memory at "
    "completion (rows / columns outside the tensor: filled), bytes to the barrier",
)
def async_gather(
    tensor_desc: DeviceDescriptor,
    x_offsets: Any,
    y_offset: Any,
    barrier: BarrierRef,
    result: SmemView,
    pred: Any = True,
    multicast: bool = False,
    cache_policy: Any = None,
) -> None:
    ctx = current()
    if not pred:
        return
    _check_desc(tensor_desc, "async_gather")
    rows, y = _gather_rows(tensor_desc, x_offsets, y_offset, result, "async_gather")
    _check_barrier(barrier, "async_gather")
    fence_inits()
    box = [len(rows), tensor_desc.block_shape[1]]
    nbytes = math.prod(box) * tensor_desc.base.element_size()
    copy = _usable(barrier, ctx.cta, "a TMA gather's signal")
    if copy is None:
        return
    op = ops.TmaLoad(copy, tensor_desc.name, _stage(result), nbytes, (ctx.cta,))
    op.x = Payload(
        desc=tensor_desc,
        coord=[0, y],
        box=box,
        view=result,
        dests=[ctx.cta],
        tx_targets=[(copy, nbytes)],
        epochs={},
        rows=rows,
    )
    emit(op)


@builtin(
    "tma.async_scatter",
    op=ops.TmaStore,
    effect="shared memory rows into the rows a tensor of row offsets "
    "names, at completion (outside the tensor: dropped; a negative offset: the GPU's fault)",
)
def async_scatter(
    tensor_desc: DeviceDescriptor, x_offsets: Any, y_offset: Any, src: SmemView, cache_policy: Any = None
) -> None:
    _check_desc(tensor_desc, "async_scatter")
    rows, y = _gather_rows(tensor_desc, x_offsets, y_offset, src, "async_scatter")
    if y < 0 or any(r < 0 for r in rows):
        raise ExecutorError(
            f"tma.async_scatter at a negative row or column offset (rows {min(rows)}.., column {y}): "
            f"on the GPU an illegal instruction{where()}"
        )
    op = ops.TmaStore(_stage(src), min(rows) if rows else 0, y, len(rows), tensor_desc.block_shape[1])
    op.x = Payload(desc=tensor_desc, coord=[0, y], view=src, rows=rows)
    emit(op)


def _removed(name: str, instead: str) -> None:
    def impl(*args: Any, **kwargs: Any) -> None:
        raise ExecutorError(f"tma.{name} has been removed; call {instead} instead (Triton 3.9){where()}")

    impl.__name__ = name
    builtin(f"tma.{name}", effect=f"an error, as in Triton 3.9: removed, call {instead}")(impl)


_removed("async_copy_global_to_shared", "async_load")
_removed("async_copy_shared_to_global", "async_store")


@builtin("tma.store_wait", op=ops.StoreWait, effect="blocks until at most `pendings` stores are in flight")
def store_wait(pendings: Any, read_only: bool = True) -> None:
    pendings = int(pendings)
    if pendings < 0:
        raise ExecutorError(f"tma.store_wait(pendings={pendings}) must be >= 0{where()}")
    emit(ops.StoreWait(pendings))


# =====================================================================================
# tensor memory and tcgen05
# =====================================================================================
@builtin(
    "blackwell.allocate_tensor_memory",
    effect="TMEM columns per CTA (NaN until written): float32 / "
    "packed or unpacked 16-bit / 8-bit, and scales with TensorMemoryScalesLayout",
)
def allocate_tensor_memory(element_ty: Any, shape: Any, layout: Any, value: Any = None) -> TmemView:
    rt = runtime()
    shape = [int(s) for s in shape]
    torch_dtype(element_ty)  # a dtype with no storage is refused here, with the kernel line
    name = _assigned_name("tmem")
    alloc = _next_alloc(TmemAlloc, name, lambda: TmemAlloc(name, element_ty, shape, layout, rt.num_ctas))
    if alloc.cols > 512:
        hazard("tmem-out-of-bounds", f"allocation of {alloc.cols} columns: a CTA has 512")
    kind = "scales" if type(layout).__name__ == "TensorMemoryScalesLayout" else "acc"
    view = TmemView(alloc, 0, shape, element_ty, layout, kind, emap=alloc.emap)
    if value is not None:
        view.store(value)
    return view


def _issue_ctas(two_ctas: bool) -> list[int]:
    ctx = current()
    return list(range(ctx.runtime.num_ctas)) if two_ctas and ctx.runtime.num_ctas > 1 else [ctx.cta]


@builtin(
    "blackwell.tcgen05_copy",
    op=ops.ScaleCopy,
    effect="shared memory into TMEM on the tensor pipe (scales: the 32x128b.warpx4 placement)",
)
def tcgen05_copy(src: SmemView, dst: TmemView) -> None:
    ctx = current()
    if not isinstance(src, SmemView) or not isinstance(dst, TmemView):
        raise ExecutorError(f"tcgen05_copy needs a shared-memory source and a TMEM destination{where()}")
    if _two_cta_issue_skipped(ctx, dst.alloc.two_ctas):
        return
    op = ops.ScaleCopy(src.alloc.name, _stage(src), dst.columns)
    op.x = Payload(src=src, dst=dst, ctas=_issue_ctas(dst.alloc.two_ctas))
    emit(op)


def _mma_barriers(mbarriers: Any, mbarrier_preds: Any, two_ctas: bool) -> None:
    """``mbarriers=``: one commit per barrier; none: the MMA is synchronous (the compiler commits it to a
    barrier of its own and waits)."""
    if mbarriers is None:
        ctx = current()
        rt = ctx.runtime
        bar = ctx.sync_barrier
        if bar is None:
            bar = ctx.sync_barrier = rt.engine.barrier(
                f"mma_sync.{ctx.partition}", 0, cta=ctx.cta, cluster=ctx.cluster, count=1
            )
            rt.sync.new_barrier(bar)
        phase = bar.completed % 2
        op = ops.Commit((bar,))
        op.x = Payload()
        emit(op)
        emit(ops.Wait(bar, phase))
        return
    preds = list(mbarrier_preds) if mbarrier_preds is not None else [True] * len(mbarriers)
    for bar, p in zip(mbarriers, preds, strict=True):
        if p:
            _commit(bar, two_ctas)


_MMA_DTYPES = ("fp16", "bf16", "fp32", "fp8e4nv", "fp8e5")


@builtin(
    "blackwell.tcgen05_mma",
    op=ops.Mma,
    effect="acc (+)= A @ B at completion: fp16 / bf16 / tf32 (fp32 "
    "operands, low 13 mantissa bits dropped) / fp8, A from shared memory or TMEM; fp32 accumulate",
)
def tcgen05_mma(
    a: Any,
    b: SmemView,
    acc: TmemView,
    *,
    use_acc: Any = True,
    pred: Any = True,
    multicast: bool = False,
    mbarriers: Any = None,
    mbarrier_preds: Any = None,
) -> None:
    ctx = current()
    if not isinstance(a, SmemView | TmemView) or not isinstance(b, SmemView) or not isinstance(acc, TmemView):
        raise ExecutorError(
            f"tcgen05_mma: A must be shared or tensor memory, B shared memory and the accumulator "
            f"tensor memory; got {type(a).__name__}, {type(b).__name__}, {type(acc).__name__}"
            f"{where()}"
        )
    for name, v in (("A", a), ("B", b)):
        if getattr(v.dtype, "name", "") not in _MMA_DTYPES:
            raise ExecutorError(
                f"tcgen05_mma: {name} of dtype {v.dtype} (the executor multiplies {', '.join(_MMA_DTYPES)}){where()}"
            )
    m, n = acc.shape[-2], acc.shape[-1]
    if a.rank != 2 or b.rank != 2 or a.shape[0] != m or b.shape[1] != n or a.shape[1] != b.shape[0]:
        raise ExecutorError(
            f"tcgen05_mma: A {list(a.shape)}, B {list(b.shape)} and the accumulator {list(acc.shape)} "
            f"do not make an [M, K] x [K, N] -> [M, N] product{where()}"
        )
    two_ctas = bool(getattr(acc.layout, "two_ctas", False))
    if _two_cta_issue_skipped(ctx, two_ctas) or not pred:
        return
    ctx.kstep = ctx.kstep + 1 if use_acc else 0
    stage = _stage(a) if isinstance(a, SmemView) else 0
    op = ops.Mma(stage, ctx.kstep, acc.columns, bool(use_acc), 2 * m * n * a.shape[1])
    op.x = Payload(a=a, b=b, acc=acc, scaled=False, use_acc=bool(use_acc), ctas=_issue_ctas(two_ctas))
    emit(op)
    _mma_barriers(mbarriers, mbarrier_preds, two_ctas)


def _check_fp4_packing(view: SmemView, own_type: str, other_type: str, name: str) -> None:
    """Beside an 8-bit operand (``kind::f8f6f4``) the tensor core reads each e2m1 value from a byte's slot: the
    padded shared layout (``fp4_padded=True``, filled by a TMA descriptor of that layout).  A packed layout there
    would have it read other bytes than the ones loaded: refused (the interpreter keeps logical values, so it could
    not show the wrong answer; the compiler's check stops before the lowering that would)."""
    if own_type != "e2m1" or other_type == "e2m1" or view.dtype != gl.uint8:
        return
    if not getattr(view.layout, "fp4_padded", False):
        raise ExecutorError(
            f"tcgen05_mma_scaled: {name} is e2m1 beside a {other_type} operand (kind::f8f6f4), which "
            "reads fp4 values padded to one per byte; its shared layout is packed (build it with "
            f"NVMMASharedLayout(..., fp4_padded=True) and a descriptor of that layout){where()}"
        )


@builtin(
    "blackwell.tcgen05_mma_scaled",
    op=ops.Mma,
    effect="acc (+)= (A * scales) @ (B * scales) at completion: "
    "e2m1 / e4m3 / e5m2 operands, e8m0 / e4m3 scales from TMEM or shared memory",
    note="shared-memory scales: Triton 3.9's LLVM lowering asserted for the layout tried (SwizzledSharedLayout)",
)
def tcgen05_mma_scaled(
    a: SmemView,
    b: SmemView,
    acc: TmemView,
    a_scale: Any,
    b_scale: Any,
    a_type: Any,
    b_type: Any,
    *,
    use_acc: Any = True,
    pred: Any = True,
    multicast: bool = False,
    mbarriers: Any = None,
    mbarrier_preds: Any = None,
) -> None:
    ctx = current()
    operands = (
        ("a", a, SmemView),
        ("b", b, SmemView),
        ("acc", acc, TmemView),
        ("a_scale", a_scale, TmemView | SmemView),
        ("b_scale", b_scale, TmemView | SmemView),
    )
    for name, v, kind in operands:
        if not isinstance(v, kind):
            raise ExecutorError(
                f"tcgen05_mma_scaled: {name} must be a {getattr(kind, '__name__', 'memory view')}, "
                f"got {type(v).__name__}{where()}"
            )
    two_ctas = bool(getattr(acc.layout, "two_ctas", False))
    m, n = acc.shape[-2], acc.shape[-1]
    k = a.shape[-1] * (2 if str(a_type) == "e2m1" and a.dtype == gl.uint8 else 1)
    k_b = b.shape[0] * (2 if str(b_type) == "e2m1" and b.dtype == gl.uint8 else 1)
    if a.rank != 2 or b.rank != 2 or a.shape[0] != m or b.shape[1] != n or k_b != k:
        # what Gluon's verifier refuses: A is [M, K], B is [K, N] (a permuted K-major buffer), acc [M, N]
        raise ExecutorError(
            f"tcgen05_mma_scaled: A {list(a.shape)} ({a_type}), B {list(b.shape)} ({b_type}) and the "
            f"accumulator {list(acc.shape)} do not make an [M, K] x [K, N] -> [M, N] product{where()}"
        )
    _check_fp4_packing(a, str(a_type), str(b_type), "A")
    _check_fp4_packing(b, str(b_type), str(a_type), "B")
    if _two_cta_issue_skipped(ctx, two_ctas) or not pred:
        return
    ctx.kstep = ctx.kstep + 1 if use_acc else 0  # K steps since the last MMA that did not accumulate
    op = ops.Mma(_stage(a), ctx.kstep, acc.columns, bool(use_acc), 2 * m * n * k)
    op.x = Payload(
        a=a,
        b=b,
        acc=acc,
        a_scale=a_scale,
        b_scale=b_scale,
        a_type=str(a_type),
        b_type=str(b_type),
        scaled=True,
        use_acc=bool(use_acc),
        ctas=_issue_ctas(two_ctas),
    )
    emit(op)
    _mma_barriers(mbarriers, mbarrier_preds, two_ctas)


@builtin(
    "blackwell.tcgen05_commit",
    op=ops.Commit,
    effect="one arrival once every earlier tcgen05 op of the partition is done (2-CTA: multicast to both CTAs)",
)
def tcgen05_commit(barrier: BarrierRef, pred: Any = True, descs: Any = ()) -> None:
    ctx = current()
    two_ctas = ctx.runtime.two_cta_tmem(ctx.cluster)
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
            hazard(
                "commit-to-pair-barrier",
                f"the multicast commit to {bar} reaches the other CTA's copy, but "
                "a pair barrier exists only in the lead",
            )
        ctas = [0]
    targets = []
    for c in ctas:
        copy = _usable(bar, c, "tcgen05_commit")
        if copy is None:
            return
        targets.append(copy)
    op = ops.Commit(tuple(targets))
    op.x = Payload()
    emit(op)


@builtin(
    "blackwell.fence_async_shared",
    effect="a proxy fence: nothing here (the compiler also fences before every TMA store)",
    note="generic-proxy writes read by the async proxy without a fence are not flagged",
)
def fence_async_shared(cluster: bool = False) -> None:
    return None
