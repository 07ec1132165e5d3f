"""Helpers that the tutorial-idiom kernels reach as attributes of an imported module (``helpers.Ring.create(...)``,
``helpers.stage_rows(...)``), as the upstream tutorials reach each other's (``t7.MMAv5``, ``t8.Counter``).  Written
for this test suite."""

from __future__ import annotations

import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    allocate_tensor_memory,
    mbarrier,
    tcgen05_commit,
    tcgen05_mma,
    tensor_memory_descriptor,
)


@gluon.aggregate
class Ring:
    """A slot index and its phase over ``size`` slots; ``advance`` returns the next position (aggregates are
    values: the caller rebinds it)."""

    slot: gl.tensor
    phase: gl.tensor
    size: gl.constexpr

    @gluon.jit
    def create(phase, size: gl.constexpr):
        return Ring(gl.to_tensor(0), gl.to_tensor(phase), size)

    @gluon.must_use_result
    @gluon.jit
    def advance(self):
        nxt = self.slot + 1
        wrapped = nxt == self.size
        return Ring(gl.where(wrapped, 0, nxt), gl.where(wrapped, self.phase ^ 1, self.phase), self.size)


@gluon.aggregate
class AsyncMma:
    """An asynchronous tcgen05 accumulator with a pair of commit barriers: ``issue`` commits each MMA to barrier
    ``issued % 2``; ``settle(keep)`` waits until at most ``keep`` MMAs are outstanding (waiting again on the same
    completed phase when nothing was issued since -- a legal re-wait)."""

    acc: tensor_memory_descriptor
    done: gl.shared_memory_descriptor
    issued: gl.tensor
    accumulate: gl.tensor

    @gluon.constexpr_function
    def __init__(self, acc, done, issued, accumulate):
        self.acc = acc
        self.done = done
        self.issued = issued
        self.accumulate = accumulate

    @gluon.jit
    def create(BM: gl.constexpr, BN: gl.constexpr):
        acc = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
        done = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(2):
            mbarrier.init(done.index(i), count=1)
        return AsyncMma(acc, done, gl.to_tensor(0), gl.to_tensor(False))

    @gluon.jit
    def issue(self, a, b):
        tcgen05_mma(a, b, self.acc, use_acc=self.accumulate)
        tcgen05_commit(self.done.index(self.issued % 2))
        return AsyncMma(self.acc, self.done, self.issued + 1, gl.to_tensor(True))

    @gluon.jit
    def settle(self, keep: gl.constexpr):
        n = self.issued - 1 - keep
        mbarrier.wait(self.done.index(n % 2), (n // 2) & 1, pred=n >= 0)
        return self

    @gluon.jit
    def take(self):
        return self.acc.load(), AsyncMma(self.acc, self.done, self.issued, gl.to_tensor(False))


@gluon.jit
def row_offsets(base, BLOCK: gl.constexpr, layout: gl.constexpr):
    """``base + [0, BLOCK)`` in ``layout`` (a jit function reached as ``helpers.row_offsets``)."""
    return base + gl.arange(0, BLOCK, layout)
