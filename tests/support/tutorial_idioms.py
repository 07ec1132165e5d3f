"""Kernels in the idioms of the upstream Gluon tutorials 02 (layouts), 03 (cp.async), 04 (TMA), 07 (persistence),
08 (warp specialization), 09 (TMA gather / scatter) and 10 (tcgen05_copy), written for this test suite (none is a
copy of a tutorial's).  Each runs on the CPU interpreter against a torch reference and cross-compiles for sm_100a
(tests/interp/test_tutorial_idioms.py).

The idioms, as the tutorials use them: a layout passed as a ``gl.constexpr`` argument; cp.async copies with commit /
wait groups; an aggregate class passed as a ``gl.constexpr`` argument whose jit methods are called on the class
(``Mma.create(...)``); a scheduler class made by a factory that captures a ``gl.constexpr`` in a closure, mixing it
with runtime values (``min(runtime, constexpr)``, then ``%``); jit functions and aggregates reached as attributes
of an imported module (``helpers.Ring``); a re-wait on the phase just waited for; a barrier index computed out of
range but used only under a false predicate; warp-specialized partitions exchanging aggregates; tensor-method
reshaping (``reshape``, ``permute``, ``split``); TMA gather and scatter; ``tcgen05_copy`` into 256-row TMEM
tensors of 128-row blocks; a descriptor block-type equality ``static_assert``.
"""

from __future__ import annotations

import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
import tutorial_helpers as helpers  # tests/support is on sys.path (tests/conftest.py)
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    allocate_tensor_memory,
    clc,
    fence_async_shared,
    mbarrier,
    tcgen05_commit,
    tcgen05_copy,
    tcgen05_mma,
    tensor_memory_descriptor,
    tma,
)


# =====================================================================================================
# 02: a layout as a constexpr argument; tensor methods reshape / permute / split
# =====================================================================================================
@gluon.jit
def transpose_halves_kernel(
    x_ptr, out_ptr, M, N, stride_m, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, layout: gl.constexpr
):
    """out[n, m] = x[m, n] for the tile, through ``.trans()``; then the tile's column pairs split with
    ``.reshape(...).split()`` and their difference stored after it."""
    rows = gl.program_id(0) * BLOCK_M + gl.arange(0, BLOCK_M, gl.SliceLayout(1, layout))
    cols = gl.arange(0, BLOCK_N, gl.SliceLayout(0, layout))
    inside = (rows < M)[:, None] & (cols < N)[None, :]
    x = gl.load(x_ptr + rows[:, None] * stride_m + cols[None, :], mask=inside, other=0.0)
    xt = gl.convert_layout(x.trans(), gl.BlockedLayout([1, 1], [1, 32], [gl.num_warps(), 1], [1, 0]))
    t_rows = gl.arange(0, BLOCK_N, gl.SliceLayout(1, xt.type.layout))
    t_cols = gl.program_id(0) * BLOCK_M + gl.arange(0, BLOCK_M, gl.SliceLayout(0, xt.type.layout))
    gl.store(out_ptr + t_rows[:, None] * M + t_cols[None, :], xt, mask=(t_cols < M)[None, :])
    x = gl.convert_layout(x, gl.BlockedLayout([1, 2], [2, 16], [gl.num_warps(), 1], [1, 0]))  # column pairs per thread
    evens, odds = x.reshape(BLOCK_M, BLOCK_N // 2, 2).split()
    pairs: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [gl.num_warps(), 1], [1, 0])
    diff = gl.convert_layout(odds - evens, pairs)
    d_rows = gl.program_id(0) * BLOCK_M + gl.arange(0, BLOCK_M, gl.SliceLayout(1, pairs))
    d_cols = gl.arange(0, BLOCK_N // 2, gl.SliceLayout(0, pairs))
    gl.store(out_ptr + M * N + d_rows[:, None] * (N // 2) + d_cols[None, :], diff, mask=(d_rows < M)[:, None])


# =====================================================================================================
# 03: cp.async software pipeline with commit / wait groups
# =====================================================================================================
@gluon.jit
def cp_pipeline_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    rows_total,
    cols_total,
    stride,
    XBLOCK: gl.constexpr,
    YBLOCK: gl.constexpr,
    STAGES: gl.constexpr,
):
    """c = a - b over a row band, column block by column block, with STAGES - 1 copies of both operands in flight
    ahead of the block being read: one commit group per block, ``wait_group(STAGES - 1)`` before a read, a drain."""
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    rows = gl.program_id(0) * XBLOCK + gl.arange(0, XBLOCK, gl.SliceLayout(1, layout))
    cols = gl.arange(0, YBLOCK, gl.SliceLayout(0, layout))
    row_ok = (rows < rows_total)[:, None]
    smem_layout: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    a_bufs = gl.allocate_shared_memory(gl.float32, [STAGES, XBLOCK, YBLOCK], smem_layout)
    b_bufs = gl.allocate_shared_memory(gl.float32, [STAGES, XBLOCK, YBLOCK], smem_layout)
    n_blocks = gl.cdiv(cols_total, YBLOCK)
    issued = 0
    for _ in gl.static_range(STAGES - 1):
        y = issued * YBLOCK + cols
        ok = row_ok & (y < cols_total)[None, :]
        cp.async_load(a_bufs.index(issued % STAGES), a_ptr + rows[:, None] * stride + y[None, :], mask=ok)
        cp.async_load(b_bufs.index(issued % STAGES), b_ptr + rows[:, None] * stride + y[None, :], mask=ok)
        cp.commit_group()
        issued += 1
    for read in range(n_blocks):
        y = issued * YBLOCK + cols
        ok = row_ok & (y < cols_total)[None, :]
        cp.async_load(a_bufs.index(issued % STAGES), a_ptr + rows[:, None] * stride + y[None, :], mask=ok)
        cp.async_load(b_bufs.index(issued % STAGES), b_ptr + rows[:, None] * stride + y[None, :], mask=ok)
        cp.commit_group()
        issued += 1
        cp.wait_group(STAGES - 1)
        c = a_bufs.index(read % STAGES).load(layout) - b_bufs.index(read % STAGES).load(layout)
        yr = read * YBLOCK + cols
        gl.store(c_ptr + rows[:, None] * stride + yr[None, :], c, mask=row_ok & (yr < cols_total)[None, :])
    cp.wait_group(0)


# =====================================================================================================
# 04 / 07 / 09: persistent matmul; MMA and scheduler classes as constexpr arguments; a module's helpers
# =====================================================================================================
def banded_scheduler(BAND):
    """A tile scheduler class for a band of BAND tile rows (the factory idiom of tutorial 07: the constexpr lives
    in the closure of the class it returns)."""
    BAND = gl.constexpr(BAND)

    @gluon.aggregate
    class BandedScheduler:
        first: gl.tensor
        tiles_m: gl.tensor
        per_band: gl.tensor
        total: gl.tensor

        @gluon.constexpr_function
        def __init__(self, first, tiles_m, per_band, total):
            self.first = first
            self.tiles_m = tiles_m
            self.per_band = per_band
            self.total = total

        @gluon.jit
        def initialize(M, N, BM: gl.constexpr, BN: gl.constexpr):
            tiles_m = gl.cdiv(M, BM)
            tiles_n = gl.cdiv(N, BN)
            return BandedScheduler(gl.program_id(0), tiles_m, BAND * tiles_n, tiles_m * tiles_n)

        @gluon.jit
        def count(self):
            return gl.cdiv(self.total - self.first, gl.num_programs(0))

        @gluon.jit
        def tile(self, idx):
            t = self.first + idx * gl.num_programs(0)
            band = t // self.per_band
            first_m = band * BAND
            rows_here = min(self.tiles_m - first_m, BAND)
            return first_m + t % rows_here, (t % self.per_band) // rows_here

    BandedScheduler.__name__ = f"BandedScheduler({BAND.value})"
    return BandedScheduler


@gluon.jit
def schedule_probe_kernel(
    out_ptr, M, N, Scheduler: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, MAX_TILES: gl.constexpr
):
    """Each program stores the (pid_m, pid_n) of its tiles, in order, at out[program, idx]."""
    scheduler = Scheduler.initialize(M, N, BM, BN)
    base = out_ptr + gl.program_id(0) * MAX_TILES * 2
    for idx in range(scheduler.count()):
        pid_m, pid_n = scheduler.tile(idx)
        gl.store(base + idx * 2, pid_m)
        gl.store(base + idx * 2 + 1, pid_n)


@gluon.jit
def _fill(produced, a_desc, b_desc, off_m, off_n, k, ready, a_bufs, b_bufs, STAGES: gl.constexpr, pred=True):
    s = produced % STAGES
    bar = ready.index(s)
    mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
    tma.async_load(a_desc, [off_m, k], bar, a_bufs.index(s), pred)
    tma.async_load(b_desc, [k, off_n], bar, b_bufs.index(s), pred)
    return produced + 1


@gluon.jit
def _consume(consumed, mma, ready, a_bufs, b_bufs, STAGES: gl.constexpr):
    s = consumed % STAGES
    mbarrier.wait(ready.index(s), (consumed // STAGES) & 1)
    mma = mma.settle(0)  # the previous MMA has read its buffers before they are refilled
    mma = mma.issue(a_bufs.index(s), b_bufs.index(s))
    return consumed + 1, mma


@gluon.jit
def persistent_matmul_kernel(a_desc, b_desc, c_desc, Mma: gl.constexpr, Scheduler: gl.constexpr, STAGES: gl.constexpr):
    """C = A @ B over persistent tiles: a ring of STAGES operand buffers, the MMA class and the tile scheduler
    given as constexpr arguments, the next MMA issued after waiting for the previous one (``settle(0)``) and the
    result read after waiting once more for the same, already completed, phase."""
    gl.static_assert(a_desc.block_type.shape[1] == b_desc.block_type.shape[0], "A and B blocks disagree on K")
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    K = a_desc.shape[1]
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(dtype, c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
    mma = Mma.create(BM, BN)
    scheduler = Scheduler.initialize(c_desc.shape[0], c_desc.shape[1], BM, BN)
    produced = 0
    consumed = 0
    for idx in range(scheduler.count()):
        pid_m, pid_n = scheduler.tile(idx)
        off_m = pid_m * BM
        off_n = pid_n * BN
        for k in gl.static_range(0, BK * (STAGES - 1), BK):
            produced = _fill(produced, a_desc, b_desc, off_m, off_n, k, ready, a_bufs, b_bufs, STAGES, k < K)
        for k in range(BK * (STAGES - 1), K, BK):
            produced = _fill(produced, a_desc, b_desc, off_m, off_n, k, ready, a_bufs, b_bufs, STAGES)
            consumed, mma = _consume(consumed, mma, ready, a_bufs, b_bufs, STAGES)
        for k in gl.static_range(0, BK * (STAGES - 1), BK):
            if k < K:
                consumed, mma = _consume(consumed, mma, ready, a_bufs, b_bufs, STAGES)
        mma = mma.settle(0)  # the same phase the last _consume's settle may already have waited for
        acc, mma = mma.take()
        tma.store_wait(pendings=0)
        c_smem.store(acc.to(dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(pendings=0)


# =====================================================================================================
# 08: warp specialization; a barrier index computed out of range under a false predicate
# =====================================================================================================
@gluon.jit
def _ws_loader(descs, bars, bufs, row0, n_cols, BLOCK_N: gl.constexpr):
    a_desc, b_desc, c_desc = descs
    load_free, load_full, out_free, out_full = bars
    a_bufs, b_bufs, c_bufs = bufs
    ring = helpers.Ring.create(1, a_bufs.type.shape[0])
    for i in range(gl.cdiv(n_cols, BLOCK_N)):
        mbarrier.wait(load_free.index(ring.slot), ring.phase)
        bar = load_full.index(ring.slot)
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [row0, i * BLOCK_N], bar, a_bufs.index(ring.slot))
        tma.async_load(b_desc, [row0, i * BLOCK_N], bar, b_bufs.index(ring.slot))
        ring = ring.advance()


@gluon.jit
def _ws_storer(descs, bars, bufs, row0, n_cols, BLOCK_N: gl.constexpr):
    a_desc, b_desc, c_desc = descs
    load_free, load_full, out_free, out_full = bars
    a_bufs, b_bufs, c_bufs = bufs
    depth: gl.constexpr = c_bufs.type.shape[0]
    in_flight: gl.constexpr = depth - 1
    for i in range(gl.cdiv(n_cols, BLOCK_N)):
        mbarrier.wait(out_full.index(i % depth), (i // depth) & 1)
        tma.async_store(c_desc, [row0, i * BLOCK_N], c_bufs.index(i % depth))
        tma.store_wait(in_flight)
        # the buffer of `in_flight` stores ago is free again; before that many stores there is none (its index is
        # computed out of range, but the predicated-off arrive does not use it)
        mbarrier.arrive(out_free.index((i - in_flight) % depth), pred=i >= in_flight)
    tma.store_wait(0)


@gluon.jit
def _ws_compute(bars, bufs, n_cols, BLOCK_N: gl.constexpr, layout: gl.constexpr):
    load_free, load_full, out_free, out_full = bars
    a_bufs, b_bufs, c_bufs = bufs
    ring = helpers.Ring.create(0, a_bufs.type.shape[0])
    depth: gl.constexpr = c_bufs.type.shape[0]
    for i in range(gl.cdiv(n_cols, BLOCK_N)):
        mbarrier.wait(load_full.index(ring.slot), ring.phase)
        a = a_bufs.index(ring.slot).load(layout)
        b = b_bufs.index(ring.slot).load(layout)
        mbarrier.arrive(load_free.index(ring.slot))
        ring = ring.advance()
        c = a * 2.0 + b
        mbarrier.wait(out_free.index(i % depth), ((i // depth) & 1) ^ 1)
        c_bufs.index(i % depth).store(c)
        fence_async_shared()
        mbarrier.arrive(out_full.index(i % depth))


@gluon.jit
def ws_axpy_kernel(a_desc, b_desc, c_desc, n_cols, LOAD_DEPTH: gl.constexpr, STORE_DEPTH: gl.constexpr):
    """c = 2a + b by row band: a one-warp TMA loader, the default partition computing, a one-warp TMA storer keeping
    STORE_DEPTH - 1 stores in flight."""
    gl.static_assert(a_desc.block_type == c_desc.block_type)
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = a_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [LOAD_DEPTH, BM, BN], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [LOAD_DEPTH, BM, BN], b_desc.layout)
    c_bufs = gl.allocate_shared_memory(c_desc.dtype, [STORE_DEPTH, BM, BN], c_desc.layout)
    load_free = gl.allocate_shared_memory(gl.int64, [LOAD_DEPTH, 1], mbarrier.MBarrierLayout())
    load_full = gl.allocate_shared_memory(gl.int64, [LOAD_DEPTH, 1], mbarrier.MBarrierLayout())
    out_free = gl.allocate_shared_memory(gl.int64, [STORE_DEPTH, 1], mbarrier.MBarrierLayout())
    out_full = gl.allocate_shared_memory(gl.int64, [STORE_DEPTH, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(LOAD_DEPTH):
        mbarrier.init(load_free.index(i), count=1)
        mbarrier.init(load_full.index(i), count=1)
    for i in gl.static_range(STORE_DEPTH):
        mbarrier.init(out_free.index(i), count=1)
        mbarrier.init(out_full.index(i), count=1)
    descs = (a_desc, b_desc, c_desc)
    bars = (load_free, load_full, out_free, out_full)
    bufs = (a_bufs, b_bufs, c_bufs)
    row0 = gl.program_id(0) * BM
    gl.warp_specialize(
        [
            (_ws_compute, (bars, bufs, n_cols, BN, layout)),
            (_ws_loader, (descs, bars, bufs, row0, n_cols, BN)),
            (_ws_storer, (descs, bars, bufs, row0, n_cols, BN)),
        ],
        [1, 1],
        [24, 24],
    )


@gluon.aggregate
class MatmulParts:
    a_desc: tma.tensor_descriptor
    b_desc: tma.tensor_descriptor
    c_desc: tma.tensor_descriptor
    a_bufs: gl.shared_memory_descriptor
    b_bufs: gl.shared_memory_descriptor
    load_free: gl.shared_memory_descriptor
    load_full: gl.shared_memory_descriptor
    accs: tensor_memory_descriptor
    acc_free: gl.shared_memory_descriptor
    acc_full: gl.shared_memory_descriptor
    SPLIT: gl.constexpr


@gluon.jit
def _mm_loads(p, Scheduler: gl.constexpr):
    BM: gl.constexpr = p.a_desc.block_type.shape[0]
    BN: gl.constexpr = p.b_desc.block_type.shape[1]
    BK: gl.constexpr = p.a_desc.block_type.shape[1]
    ring = helpers.Ring.create(1, p.load_free.shape[0])
    scheduler = Scheduler.initialize(p.c_desc.shape[0], p.c_desc.shape[1], BM, BN)
    for idx in range(scheduler.count()):
        pid_m, pid_n = scheduler.tile(idx)
        for k in range(0, p.a_desc.shape[1], BK):
            mbarrier.wait(p.load_free.index(ring.slot), ring.phase)
            bar = p.load_full.index(ring.slot)
            mbarrier.expect(bar, p.a_desc.block_type.nbytes + p.b_desc.block_type.nbytes)
            tma.async_load(p.a_desc, [pid_m * BM, k], bar, p.a_bufs.index(ring.slot))
            tma.async_load(p.b_desc, [k, pid_n * BN], bar, p.b_bufs.index(ring.slot))
            ring = ring.advance()


@gluon.jit
def _mm_mmas(p, Scheduler: gl.constexpr):
    BM: gl.constexpr = p.a_desc.block_type.shape[0]
    BN: gl.constexpr = p.b_desc.block_type.shape[1]
    BK: gl.constexpr = p.a_desc.block_type.shape[1]
    loads = helpers.Ring.create(0, p.load_free.shape[0])
    accs = helpers.Ring.create(1, p.acc_free.shape[0])
    scheduler = Scheduler.initialize(p.c_desc.shape[0], p.c_desc.shape[1], BM, BN)
    for _ in range(scheduler.count()):
        mbarrier.wait(p.acc_free.index(accs.slot), accs.phase)
        acc = p.accs.index(accs.slot)
        use_acc = False
        for _k in range(0, p.a_desc.shape[1], BK):
            mbarrier.wait(p.load_full.index(loads.slot), loads.phase)
            tcgen05_mma(
                p.a_bufs.index(loads.slot),
                p.b_bufs.index(loads.slot),
                acc,
                use_acc=use_acc,
                mbarriers=[p.load_free.index(loads.slot)],
            )
            loads = loads.advance()
            use_acc = True
        tcgen05_commit(p.acc_full.index(accs.slot))
        accs = accs.advance()


@gluon.jit
def _halve_columns(x, SPLIT: gl.constexpr):
    """The columns of ``x`` in SPLIT consecutive parts (a power of 2), by reshape / permute / split."""
    steps: gl.constexpr = SPLIT.bit_length() - 1
    parts = (x,)
    for _ in gl.static_range(steps):
        halves = ()
        for j in gl.static_range(len(parts)):
            y = parts[j]
            halves += y.reshape(y.shape[0], 2, y.shape[1] // 2).permute(0, 2, 1).split()
        parts = halves
    return parts


@gluon.jit
def _mm_epilogue(p, Scheduler: gl.constexpr):
    BM: gl.constexpr = p.a_desc.block_type.shape[0]
    BN: gl.constexpr = p.b_desc.block_type.shape[1]
    SUB: gl.constexpr = BN // p.SPLIT
    dtype: gl.constexpr = p.c_desc.dtype
    c_smem = gl.allocate_shared_memory(dtype, [BM, SUB], p.c_desc.layout)
    accs = helpers.Ring.create(0, p.acc_free.shape[0])
    scheduler = Scheduler.initialize(p.c_desc.shape[0], p.c_desc.shape[1], BM, BN)
    for idx in range(scheduler.count()):
        pid_m, pid_n = scheduler.tile(idx)
        mbarrier.wait(p.acc_full.index(accs.slot), accs.phase)
        acc = p.accs.index(accs.slot).load()
        mbarrier.arrive(p.acc_free.index(accs.slot))
        accs = accs.advance()
        parts = _halve_columns(acc, p.SPLIT)
        for j in gl.static_range(len(parts)):
            tma.store_wait(pendings=0)
            c_smem.store(parts[j].to(dtype))
            fence_async_shared()
            tma.async_store(p.c_desc, [pid_m * BM, pid_n * BN + j * SUB], c_smem)
    tma.store_wait(pendings=0)


@gluon.jit
def ws_matmul_kernel(a_desc, b_desc, c_desc, Scheduler: gl.constexpr, STAGES: gl.constexpr, SPLIT: gl.constexpr):
    """A warp-specialized persistent matmul: loader, MMA issuer, epilogue; two TMEM accumulators; the epilogue
    splits each accumulator into SPLIT column parts with tensor methods."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = b_desc.block_type.shape[1]
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    load_free = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    load_full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(load_free.index(i), count=1)
        mbarrier.init(load_full.index(i), count=1)
    accs = allocate_tensor_memory(gl.float32, [2, BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    acc_free = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    acc_full = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(acc_free.index(i), count=1)
        mbarrier.init(acc_full.index(i), count=1)
    p = MatmulParts(a_desc, b_desc, c_desc, a_bufs, b_bufs, load_free, load_full, accs, acc_free, acc_full, SPLIT)
    gl.warp_specialize(
        [
            (_mm_epilogue, (p, Scheduler)),
            (_mm_loads, (p, Scheduler)),
            (_mm_mmas, (p, Scheduler)),
        ],
        [1, 1],
        [24, 24],
    )


# =====================================================================================================
# 09: TMA gather and scatter (Blackwell)
# =====================================================================================================
@gluon.jit
def gather_rows_kernel(out_ptr, desc, rows_ptr, y_offset, ROWS: gl.constexpr):
    """out = desc[rows, y_offset : y_offset + BLOCK_Y] by one TMA gather (rows outside the tensor give zeros)."""
    BY: gl.constexpr = desc.block_type.shape[1]
    flat: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    rows = gl.load(rows_ptr + helpers.row_offsets(0, ROWS, flat))
    rows = gl.convert_layout(rows, gl.SliceLayout(0, gl.BlockedLayout([1, 4], [32, 1], [1, gl.num_warps()], [1, 0])))
    dst = gl.allocate_shared_memory(desc.dtype, [ROWS, BY], desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, ROWS * desc.block_type.nbytes)
    tma.async_gather(desc, rows, y_offset, barrier=bar, result=dst)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)
    tile: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    r = gl.arange(0, ROWS, gl.SliceLayout(1, tile))
    c = gl.arange(0, BY, gl.SliceLayout(0, tile))
    gl.store(out_ptr + r[:, None] * BY + c[None, :], dst.load(tile))


@gluon.jit
def scatter_rows_kernel(desc, rows_ptr, y_offset, src_ptr, ROWS: gl.constexpr):
    """desc[rows, y_offset : y_offset + BLOCK_Y] = src by one TMA scatter (rows outside the tensor are dropped)."""
    BY: gl.constexpr = desc.block_type.shape[1]
    tile: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    r = gl.arange(0, ROWS, gl.SliceLayout(1, tile))
    c = gl.arange(0, BY, gl.SliceLayout(0, tile))
    src = gl.load(src_ptr + r[:, None] * BY + c[None, :])
    flat: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    rows = gl.load(rows_ptr + helpers.row_offsets(0, ROWS, flat))
    rows = gl.convert_layout(rows, gl.SliceLayout(0, gl.BlockedLayout([1, 4], [32, 1], [1, gl.num_warps()], [1, 0])))
    smem = gl.allocate_shared_memory(desc.dtype, [ROWS, BY], desc.layout)
    smem.store(src)
    fence_async_shared()
    tma.async_scatter(desc, rows, y_offset, smem)
    tma.store_wait(0)


# =====================================================================================================
# 10: tcgen05_copy into TMEM (256-row tensors of 128-row blocks); D = A @ B + C with C copied into the accumulator
# =====================================================================================================
@gluon.jit
def tmem_round_trip_kernel(
    in_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr, smem_layout: gl.constexpr, tmem_layout: gl.constexpr
):
    """in -> shared memory -> (tcgen05_copy) TMEM -> registers -> out; and the right half of the TMEM tensor
    (a column slice) after it."""
    coalesced: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, gl.num_warps()], [1, 0])
    r = gl.arange(0, M, gl.SliceLayout(1, coalesced))
    c = gl.arange(0, N, gl.SliceLayout(0, coalesced))
    x = gl.load(in_ptr + r[:, None] * N + c[None, :])
    smem = gl.allocate_shared_memory(x.dtype, (M, N), smem_layout)
    tmem = allocate_tensor_memory(x.dtype, (M, N), tmem_layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], gl.constexpr(mbarrier.MBarrierLayout()))
    mbarrier.init(bar, count=1)
    smem.store(x)
    fence_async_shared()
    tcgen05_copy(smem, tmem)
    tcgen05_commit(bar)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)
    gl.store(out_ptr + r[:, None] * N + c[None, :], gl.convert_layout(tmem.load(), coalesced))
    right = tmem.slice(N // 2, N // 2).load()
    c2 = gl.arange(0, N // 2, gl.SliceLayout(0, coalesced))
    gl.store(out_ptr + M * N + r[:, None] * (N // 2) + c2[None, :], gl.convert_layout(right, coalesced))


@gluon.jit
def matmul_plus_c_kernel(a_desc, b_desc, c_desc, d_ptr, STAGES: gl.constexpr):
    """D = A @ B + C for one tile per program: C loaded by TMA and copied into the accumulator with tcgen05_copy,
    the MMAs accumulating onto it (the copy and the MMAs run in order on the tensor pipe)."""
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    off_m = gl.program_id(0) * BM
    off_n = gl.program_id(1) * BN
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_buf = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES + 2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES + 2):
        mbarrier.init(bars.index(i), count=1)
    c_ready = bars.index(STAGES)
    mma_done = bars.index(STAGES + 1)
    acc = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    mbarrier.expect(c_ready, c_desc.block_type.nbytes)
    tma.async_load(c_desc, [off_m, off_n], c_ready, c_buf)
    mbarrier.wait(c_ready, 0)
    tcgen05_copy(c_buf, acc)
    K = a_desc.shape[1]
    ring = helpers.Ring.create(0, STAGES)
    for k in range(0, K, BK):
        bar = bars.index(ring.slot)
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [off_m, k], bar, a_bufs.index(ring.slot))
        tma.async_load(b_desc, [k, off_n], bar, b_bufs.index(ring.slot))
        mbarrier.wait(bar, ring.phase)
        tcgen05_mma(a_bufs.index(ring.slot), b_bufs.index(ring.slot), acc, use_acc=True)
        tcgen05_commit(mma_done)
        mbarrier.wait(mma_done, (k // BK) & 1)  # the buffers are free again before the ring comes back to them
        ring = ring.advance()
    out: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [gl.num_warps(), 1], [1, 0])
    d = gl.convert_layout(acc.load(), out)
    r = off_m + gl.arange(0, BM, gl.SliceLayout(1, out))
    c = off_n + gl.arange(0, BN, gl.SliceLayout(0, out))
    gl.store(d_ptr + r[:, None] * c_desc.shape[1] + c[None, :], d)


# =====================================================================================================
# examples 02 / 03 (matmul-multicta): cluster launch control as the tile scheduler
# =====================================================================================================
@gluon.jit
def clc_scale_kernel(x_ptr, out_ptr, BLOCK: gl.constexpr):
    """out = 2 x + tile for every tile: a cluster does its own tile, then takes over tiles of clusters that have not
    started yet (``clc.try_cancel``) until none is left; the response buffer is allocated with the barriers'
    layout, as the examples do."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    bars = mbarrier.allocate_mbarrier(batch=1)
    mbarrier.init(bars.index(0), count=1)
    responses = gl.allocate_shared_memory(gl.int64, [bars.shape[0], 2 * bars.shape[1]], bars.layout)
    tile = gl.program_id(0)
    phase = 0
    has_work = gl.to_tensor(True)
    while has_work:
        offs = tile * BLOCK + gl.arange(0, BLOCK, layout)
        gl.store(out_ptr + offs, gl.load(x_ptr + offs) * 2 + tile)
        mbarrier.expect(bars.index(0), 16)
        clc.try_cancel(responses.index(0), bars.index(0))
        mbarrier.wait(bars.index(0), phase)
        phase ^= 1
        response = clc.load_result(responses.index(0))
        has_work = response.is_canceled()
        if has_work:
            tile = response.program_id(0)
    mbarrier.invalidate(bars.index(0))
