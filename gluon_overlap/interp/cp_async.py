"""cp.async (``triton.experimental.gluon.language.nvidia.ampere.async_copy``): copies from global into shared memory
that complete later, tracked by commit groups or by an mbarrier.

* ``async_load(smem, pointers, mask=None)`` -- each lane copies one element into the buffer; masked-off lanes write
  zeros (the PTX ``cp.async`` source size 0, measured on an H200); the bytes land at some later point, in any order
  with the partition's other copies.
* ``commit_group()`` closes a group: every copy issued since the previous commit.
* ``wait_group(n)`` blocks until all committed groups but the ``n`` newest have landed (copies not yet committed
  are not waited for).
* ``mbarrier_arrive(bar, increment_count=True)`` arrives on ``bar`` once every earlier copy of the partition has
  landed: one arrival per thread of the partition (``num_warps * 32``); with ``increment_count`` the pending count
  is raised by as much when it is issued, so the arrival is net zero and only holds the phase until the copies land.

A read of the buffer before the copy is waited for is a race (the copy's write is dated by its number in the
partition's copy order, and only a returned ``wait_group`` or the mbarrier phase orders it).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from gluon_overlap.interp import ops
from gluon_overlap.interp.context import ExecutorError, current, emit, where
from gluon_overlap.interp.memory import BarrierRef, Payload, SmemView
from gluon_overlap.interp.registry import builtin
from gluon_overlap.interp.tensors import PointerTensor, RegTensor, torch_dtype

__all__ = ["async_load", "commit_group", "mbarrier_arrive", "wait_group"]


def _cp_component(ctx: Any) -> int:
    """The clock component that dates this partition's copies (one per process, made on first use)."""
    if ctx.cp_comp is None:
        ctx.cp_comp = ctx.runtime.sync.clocks.component(f"{ctx.proc.name}.cp-async")
    return ctx.cp_comp


@builtin(
    "ampere.async_load",
    op=ops.CpAsync,
    effect="cp.async: each lane's element into shared memory when the "
    "copy lands (masked-off lanes: zeros); a lane outside its tensor's storage is a hazard",
    note="cache / eviction hints ignored",
)
def async_load(
    smem: Any,
    pointer: Any,
    mask: Any = None,
    cache_modifier: Any = None,
    eviction_policy: Any = None,
    volatile: bool = False,
    cache_policy: Any = None,
) -> None:
    ctx = current()
    if not isinstance(smem, SmemView):
        raise ExecutorError(
            f"async_copy.async_load needs a shared-memory destination, got {type(smem).__name__}{where()}"
        )
    if not isinstance(pointer, PointerTensor):
        raise ExecutorError(f"async_copy.async_load needs a tensor of pointers, got {type(pointer).__name__}{where()}")
    m = None
    shape = list(pointer.shape)
    if mask is not None:
        mt = mask.local if isinstance(mask, RegTensor) else torch.tensor(bool(mask))
        try:
            shape = [int(d) for d in torch.broadcast_shapes(tuple(shape), tuple(mt.shape))]
        except RuntimeError:
            raise ExecutorError(
                f"async_copy.async_load: the mask {list(mt.shape)} does not broadcast to the "
                f"pointers {list(pointer.shape)}{where()}"
            ) from None
        m = mt.to(torch.bool).expand(shape)
    if list(smem.shape) != shape:
        raise ExecutorError(
            f"async_copy.async_load into {smem} of shape {smem.shape} through pointers of shape "
            f"{shape}: the shapes must match{where()}"
        )
    if getattr(smem.dtype, "name", smem.dtype) != getattr(pointer.base.element_ty, "name", None):
        raise ExecutorError(
            f"async_copy.async_load of {pointer.base.element_ty} elements into {smem} of dtype {smem.dtype}{where()}"
        )
    ptrs = (
        pointer
        if list(pointer.shape) == shape
        else PointerTensor(pointer.base, pointer.offsets.expand(shape), shape, pointer.layout)
    )
    ctx.cp_seq += 1
    op = ops.CpAsync(ctx.cp_seq, math.prod(shape) * torch_dtype(smem.dtype).itemsize)
    op.x = Payload(view=smem, ptrs=ptrs, mask=m, comp=_cp_component(ctx))
    emit(op)


@builtin("ampere.commit_group", effect="closes a group of the partition's copies (those issued since the last commit)")
def commit_group() -> None:
    ctx = current()
    ctx.cp_groups.append(ctx.cp_seq)


@builtin(
    "ampere.wait_group",
    op=ops.CpWait,
    effect="blocks until all committed groups but the `num_outstanding` newest have landed",
)
def wait_group(num_outstanding: Any = 0) -> None:
    ctx = current()
    n = int(num_outstanding)
    if n < 0:
        raise ExecutorError(f"async_copy.wait_group({n}) must be >= 0{where()}")
    done = len(ctx.cp_groups) - n
    if done <= 0:
        return
    op = ops.CpWait(ctx.cp_groups[done - 1])
    op.x = Payload(comp=_cp_component(ctx))
    emit(op)


@builtin(
    "ampere.mbarrier_arrive",
    op=ops.CpArrive,
    effect="an arrival per thread on the barrier once every "
    "earlier copy of the partition has landed (increment_count: net zero, holding the phase until then)",
)
def mbarrier_arrive(mbarrier: Any, increment_count: Any = True) -> None:
    from gluon_overlap.interp.async_ops import _barrier_copy

    ctx = current()
    if not isinstance(mbarrier, BarrierRef):
        raise ExecutorError(
            f"async_copy.mbarrier_arrive needs one barrier (e.g. bars.index(i)), got {type(mbarrier).__name__}{where()}"
        )
    target = _barrier_copy(mbarrier, "cp.async arrive")
    if target is None:
        return
    op = ops.CpArrive(target, ctx.cp_seq, 32 * ctx.num_warps, bool(increment_count))
    op.x = Payload(comp=_cp_component(ctx))
    emit(op)


@builtin("ampere.async_copy_global_to_shared", effect="an error, as in Triton 3.9: removed, call async_load")
def async_copy_global_to_shared(*args: Any, **kwargs: Any) -> None:
    raise ExecutorError(
        f"async_copy.async_copy_global_to_shared has been removed; call async_load instead (Triton 3.9){where()}"
    )
