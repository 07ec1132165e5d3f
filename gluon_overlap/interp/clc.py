"""Cluster launch control (``triton.experimental.gluon.language.nvidia.blackwell.clc``): a running cluster takes over
the work of a cluster of the grid that has not started yet.

The interpreter starts ``resident_clusters`` clusters of the grid at once (a launch option; by default all of them, as
on a GPU the grid fits) and each further one when a running one ends, in grid order.  ``clc.try_cancel(result, bar)``
completes asynchronously: at completion the next cluster that has not started is cancelled -- it will never run --
and the response (cancelled or not, and which program) is written to ``result``, its 16 bytes counted on ``bar`` like
a TMA load's (the kernel expects them).  ``clc.load_result(result)`` reads the response (a shared-memory read,
race-checked); ``.is_canceled()`` and ``.program_id(dim)`` answer from it.
"""

from __future__ import annotations

from typing import Any

import torch

from gluon_overlap.interp import ops
from gluon_overlap.interp.context import ExecutorError, current, emit, runtime, where
from gluon_overlap.interp.memory import BarrierRef, Payload, SmemView
from gluon_overlap.interp.registry import builtin
from gluon_overlap.interp.tensors import RegTensor, RuntimeInt

__all__ = ["ClcResult", "load_result", "try_cancel"]


@builtin(
    "clc.try_cancel",
    op=ops.ClcCancel,
    effect="at completion: the next cluster not yet started is cancelled "
    "(none when every cluster runs at once, the default); the response into shared memory, 16 bytes to the "
    "barrier",
)
def try_cancel(result: Any, barrier: Any) -> None:
    from gluon_overlap.interp.async_ops import _barrier_copy, _stage

    ctx = current()
    if isinstance(result, BarrierRef) and result.as_smem() is not None:  # allocated with the barriers' layout
        result = result.as_smem()
    if not isinstance(result, SmemView) or result.numel * result.alloc.storage[0].element_size() < 16:
        raise ExecutorError(f"clc.try_cancel needs 16 bytes of shared memory for the response, got {result!r}{where()}")
    if not isinstance(barrier, BarrierRef):
        raise ExecutorError(
            f"clc.try_cancel needs one barrier (e.g. bars.index(i)), got {type(barrier).__name__}{where()}"
        )
    target = _barrier_copy(barrier, "clc.try_cancel")
    if target is None:
        return
    op = ops.ClcCancel(target, 16)
    op.x = Payload(view=result, tx_targets=[(target, 16)], epochs={}, stage=_stage(result), cta=ctx.cta)
    emit(op)


class ClcResult:
    """The response of a ``try_cancel``, read into registers."""

    def __init__(self, cluster: int):
        self.cluster = cluster  # the cancelled cluster's index in the grid, or -1

    @builtin("clc.is_canceled", effect="whether the response took over a cluster (a runtime bool)")
    def is_canceled(self) -> RegTensor:
        return RegTensor(torch.tensor(self.cluster >= 0), [], None, None)

    @builtin("clc.program_id", effect="the program index of the cluster taken over, along an axis (a runtime i32)")
    def program_id(self, dim: Any) -> RuntimeInt:
        grid = runtime().grid
        if self.cluster < 0:
            return RuntimeInt(-1)
        axis = int(dim)
        x = self.cluster % grid[0]
        y = (self.cluster // grid[0]) % (grid[1] if len(grid) > 1 else 1)
        z = self.cluster // (grid[0] * (grid[1] if len(grid) > 1 else 1))
        return RuntimeInt((x, y, z)[axis])


@builtin(
    "clc.load_result",
    op=ops.SmemLoad,
    effect="the 16-byte response of try_cancel read from shared memory (race-checked)",
)
def load_result(src: Any) -> ClcResult:
    if isinstance(src, BarrierRef) and src.as_smem() is not None:
        src = src.as_smem()
    if not isinstance(src, SmemView):
        raise ExecutorError(f"clc.load_result needs the shared-memory response, got {type(src).__name__}{where()}")
    op = ops.SmemLoad()
    op.x = Payload(view=src, layout=None)
    raw = emit(op)
    if raw.local.numel() == 0:  # no data (the timing model's runs): nothing was cancelled
        return ClcResult(-1)
    words = raw.local.contiguous().reshape(-1).view(torch.uint8)[:16].view(torch.int64)
    return ClcResult(int(words[0]))
