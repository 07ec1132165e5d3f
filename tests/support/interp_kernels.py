"""Small Gluon kernels in the upstream tutorials' idioms (written for these tests), run on the CPU executor by
tests/interp/test_interp_idioms.py and cross-compiled for sm_100a there."""

from __future__ import annotations

import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    TensorMemoryScalesLayout,
    allocate_tensor_memory,
    cluster,
    fence_async_shared,
    mbarrier,
    tcgen05_commit,
    tcgen05_copy,
    tcgen05_mma,
    tcgen05_mma_scaled,
    tma,
)


# --- pointer kernels ---------------------------------------------------------------------
@gluon.jit
def row_stats_kernel(x_ptr, y_ptr, stats_ptr, M, N, stride_m, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    """Per row of a masked [BLOCK_M, BLOCK_N] tile: y = leaky(x) as fp16, and sum / max / min of x."""
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [gl.num_warps(), 1], [1, 0])
    rows_layout: gl.constexpr = gl.SliceLayout(1, layout)
    cols_layout: gl.constexpr = gl.SliceLayout(0, layout)
    pid = gl.program_id(0)
    rows = pid * BLOCK_M + gl.arange(0, BLOCK_M, rows_layout)
    cols = gl.arange(0, BLOCK_N, cols_layout)
    mask = gl.expand_dims(rows < M, 1) & gl.expand_dims(cols < N, 0)
    offsets = gl.expand_dims(rows, 1) * stride_m + gl.expand_dims(cols, 0)
    x = gl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = gl.where(x > 0, x, x * 0.25)
    gl.store(y_ptr + offsets, y.to(gl.float16), mask=mask)
    total = gl.sum(x, axis=1)
    biggest = gl.max(gl.where(mask, x, -1.0e30), axis=1)
    smallest = gl.min(gl.where(mask, x, 1.0e30), axis=1)
    out_layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    out_rows = pid * BLOCK_M + gl.arange(0, BLOCK_M, out_layout)
    row_ok = out_rows < M
    gl.store(stats_ptr + out_rows * 3, gl.convert_layout(total, out_layout), mask=row_ok)
    gl.store(stats_ptr + out_rows * 3 + 1, gl.convert_layout(biggest, out_layout), mask=row_ok)
    gl.store(stats_ptr + out_rows * 3 + 2, gl.convert_layout(smallest, out_layout), mask=row_ok)


@gluon.jit
def int_semantics_kernel(out_ptr, shift, divisor, NEG: gl.constexpr, BLOCK: gl.constexpr):
    """Integer // and % on runtime values (tensors and scalars) next to constexpr arithmetic."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offsets = gl.arange(0, BLOCK, layout)
    values = offsets - shift
    gl.store(out_ptr + offsets, values // divisor)
    gl.store(out_ptr + BLOCK + offsets, values % divisor)
    scalar = gl.program_id(0) - shift  # a runtime scalar
    zeros = gl.zeros([BLOCK], gl.int32, layout)
    gl.store(out_ptr + 2 * BLOCK + offsets, zeros + scalar // divisor)
    gl.store(out_ptr + 3 * BLOCK + offsets, zeros + scalar % divisor)
    folded: gl.constexpr = NEG // 2  # constexpr: Python's floor division
    gl.store(out_ptr + 4 * BLOCK + offsets, zeros + folded + gl.num_programs(0) * 0)


# --- TMA and mbarriers ----------------------------------------------------------------------
@gluon.jit
def tma_scale_kernel(in_desc, out_desc, ALPHA: gl.constexpr, BETA: gl.constexpr):
    """out = ALPHA * in + BETA, one block per program through shared memory, with a barrier re-initialized
    after invalidate."""
    block_m: gl.constexpr = in_desc.block_type.shape[0]
    block_n: gl.constexpr = in_desc.block_type.shape[1]
    dtype: gl.constexpr = in_desc.dtype
    off_m = gl.program_id(0) * block_m
    off_n = gl.program_id(1) * block_n
    smem = gl.allocate_shared_memory(dtype, [block_m, block_n], in_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma.async_load(in_desc, [off_m, off_n], bar, smem)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)
    mbarrier.init(bar, count=1)  # a new life: legal after invalidate
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    x = smem.load(layout)
    y = x.to(gl.float32) * ALPHA + BETA
    smem.store(y.to(dtype))
    fence_async_shared()
    tma.async_store(out_desc, [off_m, off_n], smem)
    tma.store_wait(0)
    mbarrier.invalidate(bar)


@gluon.jit
def tma_3d_copy_kernel(in_desc, out_desc):
    """A 3-D descriptor: one [1, R, C] box per program, loaded and stored back unchanged."""
    shape: gl.constexpr = in_desc.type.block_type.shape
    smem = gl.allocate_shared_memory(in_desc.dtype, shape, in_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma.async_load(in_desc, [gl.program_id(0), 0, 0], bar, smem)
    mbarrier.wait(bar, 0)
    tma.async_store(out_desc, [gl.program_id(0), 0, 0], smem)
    tma.store_wait(0)
    mbarrier.invalidate(bar)


# --- tcgen05 ----------------------------------------------------------------------------------
@gluon.jit
def mma_kernel(a_desc, b_desc, c_desc, K, A_FROM_TMEM: gl.constexpr, SYNC_MMA: gl.constexpr):
    """C = A @ B.T with B stored [N, K] (K-major), accumulated in TMEM over the K blocks; A from shared
    memory or (A_FROM_TMEM) staged through packed TMEM; MMAs tracked by mbarriers= or synchronous."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    dtype: gl.constexpr = a_desc.dtype
    a_smem = gl.allocate_shared_memory(dtype, [BM, BK], a_desc.layout)
    b_smem = gl.allocate_shared_memory(dtype, [BN, BK], b_desc.layout)
    tma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(tma_bar, count=1)
    mbarrier.init(mma_bar, count=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    if A_FROM_TMEM:
        a_tmem = allocate_tensor_memory(dtype, [BM, BK], TensorMemoryLayout([BM, BK], col_stride=1))
    phase = 0
    use_acc = False
    for k in range(0, K, BK):
        mbarrier.expect(tma_bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [0, k], tma_bar, a_smem)
        tma.async_load(b_desc, [0, k], tma_bar, b_smem)
        mbarrier.wait(tma_bar, phase)
        if A_FROM_TMEM:
            a_tmem.store(a_smem.load(a_tmem.get_reg_layout()))
            tcgen05_mma(a_tmem, b_smem.permute((1, 0)), acc_tmem, use_acc=use_acc, mbarriers=[mma_bar])
            mbarrier.wait(mma_bar, phase)
        elif SYNC_MMA:
            tcgen05_mma(a_smem, b_smem.permute((1, 0)), acc_tmem, use_acc=use_acc)
        else:
            tcgen05_mma(a_smem, b_smem.permute((1, 0)), acc_tmem, use_acc=use_acc)
            tcgen05_commit(mma_bar)
            mbarrier.wait(mma_bar, phase)
        use_acc = True
        phase ^= 1
    acc = acc_tmem.load(acc_tmem.get_reg_layout())
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [0, 0], c_smem)
    tma.store_wait(0)
    mbarrier.invalidate(tma_bar)
    mbarrier.invalidate(mma_bar)


@gluon.jit
def mma_scaled_kernel(a_desc, b_desc, c_desc, a_scale_ptr, b_scale_ptr, K, FORMAT: gl.constexpr):
    """Block-scaled C = (A * 2^sa) @ (B * 2^sb).T: e4m3 / e2m1 operands by TMA, e8m0 scales loaded from global
    memory into registers and stored into TMEM with TensorMemoryScalesLayout."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BKA: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    BK: gl.constexpr = BKA * 2 if FORMAT == "e2m1" else BKA
    SCALES: gl.constexpr = BK // 32
    a_smem = gl.allocate_shared_memory(a_desc.dtype, [BM, BKA], a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, [BN, BKA], b_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.init(mma_bar, count=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    a_scale_tmem = allocate_tensor_memory(gl.uint8, [BM, SCALES], TensorMemoryScalesLayout())
    b_scale_tmem = allocate_tensor_memory(gl.uint8, [BN, SCALES], TensorMemoryScalesLayout())
    scale_layout: gl.constexpr = a_scale_tmem.get_reg_layout()
    rows = gl.arange(0, BM, gl.SliceLayout(1, scale_layout))
    cols = gl.arange(0, SCALES, gl.SliceLayout(0, scale_layout))
    n_scales = K // 32
    phase = 0
    use_acc = False
    for k in range(0, K // BK):
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [0, k * BKA], bar, a_smem)
        tma.async_load(b_desc, [0, k * BKA], bar, b_smem)
        offsets = gl.expand_dims(rows, 1) * n_scales + k * SCALES + gl.expand_dims(cols, 0)
        a_scale_tmem.store(gl.load(a_scale_ptr + offsets))
        b_scale_tmem.store(gl.load(b_scale_ptr + offsets))
        mbarrier.wait(bar, phase)
        tcgen05_mma_scaled(
            a_smem,
            b_smem.permute((1, 0)),
            acc_tmem,
            a_scale_tmem,
            b_scale_tmem,
            FORMAT,
            FORMAT,
            use_acc=use_acc,
            mbarriers=[mma_bar],
        )
        mbarrier.wait(mma_bar, phase)
        use_acc = True
        phase ^= 1
    acc = acc_tmem.load(acc_tmem.get_reg_layout())
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    c_smem.store(acc)
    fence_async_shared()
    tma.async_store(c_desc, [0, 0], c_smem)
    tma.store_wait(0)


# --- warp specialization and clusters ----------------------------------------------------------
@gluon.jit
def _ws_producer(in_desc, smem, ready, empty, n_blocks, STAGES: gl.constexpr):
    for i in range(n_blocks):
        s = i % STAGES
        mbarrier.wait(empty.index(s), ((i // STAGES) & 1) ^ 1)
        mbarrier.expect(ready.index(s), in_desc.block_type.nbytes)
        tma.async_load(in_desc, [i * in_desc.block_type.shape[0], 0], ready.index(s), smem.index(s))


@gluon.jit
def _ws_consumer(out_ptr, smem, ready, empty, n_blocks, STAGES: gl.constexpr, BLOCK: gl.constexpr, WIDTH: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    total = gl.zeros([WIDTH], gl.float32, gl.SliceLayout(0, layout))
    for i in range(n_blocks):
        s = i % STAGES
        mbarrier.wait(ready.index(s), (i // STAGES) & 1)
        x = smem.index(s).load(layout)
        gl.barrier()  # every warp of the partition has read the stage
        mbarrier.arrive(empty.index(s), count=1)
        total += gl.sum(x, axis=0)
    cols = gl.arange(0, WIDTH, gl.SliceLayout(0, layout))
    gl.store(out_ptr + gl.program_id(0) * WIDTH + cols, total)


@gluon.jit
def ws_column_sum_kernel(in_desc, out_ptr, n_blocks, STAGES: gl.constexpr, KEYWORDS: gl.constexpr):
    """Column sums of the input, a TMA producer partition feeding a consumer through a ring of STAGES
    buffers; both warp_specialize call forms; a cluster barrier before the barriers' invalidation."""
    BLOCK: gl.constexpr = in_desc.block_type.shape[0]
    WIDTH: gl.constexpr = in_desc.block_type.shape[1]
    smem = gl.allocate_shared_memory(in_desc.dtype, [STAGES, BLOCK, WIDTH], in_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    if KEYWORDS:
        gl.warp_specialize(
            functions_and_args=[
                (_ws_consumer, (out_ptr, smem, ready, empty, n_blocks, STAGES, BLOCK, WIDTH)),
                (_ws_producer, (in_desc, smem, ready, empty, n_blocks, STAGES)),
            ],
            worker_num_warps=[1],
            worker_num_regs=[48],
        )
    else:
        gl.warp_specialize(
            [
                (_ws_consumer, (out_ptr, smem, ready, empty, n_blocks, STAGES, BLOCK, WIDTH)),
                (_ws_producer, (in_desc, smem, ready, empty, n_blocks, STAGES)),
            ],
            [1],
        )
    if gl.num_ctas() > 1:
        cluster.barrier()
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


@gluon.jit
def cluster_kernel(out_ptr, BLOCK: gl.constexpr):
    """Both CTAs of a cluster meet at cluster barriers, then store their program's id (a 2-CTA launch)."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0], cga_layout=[[0]])
    offsets = gl.arange(0, BLOCK, layout)
    cluster.barrier()
    gl.barrier(cluster=True)
    gl.store(out_ptr + gl.program_id(0) * BLOCK + offsets, offsets * 0 + gl.program_id(0))


@gluon.jit
def _tmem_reader(acc_tmem, out_ptr):
    acc = acc_tmem.load(acc_tmem.get_reg_layout())
    layout: gl.constexpr = acc_tmem.get_reg_layout()
    rows = gl.arange(0, 128, gl.SliceLayout(1, layout))
    cols = gl.arange(0, 32, gl.SliceLayout(0, layout))
    gl.store(out_ptr + gl.expand_dims(rows, 1) * 32 + gl.expand_dims(cols, 0), acc)


@gluon.jit
def _tmem_writer(acc_tmem, value: gl.constexpr):
    layout: gl.constexpr = acc_tmem.get_reg_layout()
    acc_tmem.store(gl.full([128, 32], value, gl.float32, layout))


@gluon.jit
def _idle():
    pass


@gluon.jit
def tmem_lanes_kernel(out_ptr, VALUE: gl.constexpr, READER_WARPS: gl.constexpr):
    """A TMEM tile written before the fork and read by a worker of READER_WARPS warps (a tcgen05.ld reaches
    only its warp's 32-lane sub-partition: 128 rows need 4 warps)."""
    acc_tmem = allocate_tensor_memory(gl.float32, [128, 32], TensorMemoryLayout([128, 32], col_stride=1))
    _tmem_writer(acc_tmem, VALUE)
    gl.warp_specialize([(_idle, ()), (_tmem_reader, (acc_tmem, out_ptr))], [READER_WARPS])


@gluon.jit
def mma_smem_scales_kernel(a_desc, b_desc, c_ptr, a_scale_ptr, b_scale_ptr):
    """One e4m3 block-scaled MMA whose scales are passed in shared memory (no TMEM copy)."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    a_smem = gl.allocate_shared_memory(a_desc.dtype, [BM, BK], a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, [BN, BK], b_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    tma.async_load(a_desc, [0, 0], bar, a_smem)
    tma.async_load(b_desc, [0, 0], bar, b_smem)
    mbarrier.wait(bar, 0)
    scale_layout: gl.constexpr = gl.BlockedLayout([1, BK // 32], [32, 1], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, BM, gl.SliceLayout(1, scale_layout))
    cols = gl.arange(0, BK // 32, gl.SliceLayout(0, scale_layout))
    offsets = gl.expand_dims(rows, 1) * (BK // 32) + gl.expand_dims(cols, 0)
    smem_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    a_scale = gl.allocate_shared_memory(gl.uint8, [BM, BK // 32], smem_layout, gl.load(a_scale_ptr + offsets))
    b_scale = gl.allocate_shared_memory(gl.uint8, [BN, BK // 32], smem_layout, gl.load(b_scale_ptr + offsets))
    acc_tmem = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    tcgen05_mma_scaled(
        a_smem, b_smem.permute((1, 0)), acc_tmem, a_scale, b_scale, "e4m3", "e4m3", use_acc=False, mbarriers=[bar]
    )
    mbarrier.wait(bar, 1)
    layout: gl.constexpr = acc_tmem.get_reg_layout()
    acc = acc_tmem.load(layout)
    out_rows = gl.arange(0, BM, gl.SliceLayout(1, layout))
    out_cols = gl.arange(0, BN, gl.SliceLayout(0, layout))
    gl.store(c_ptr + gl.expand_dims(out_rows, 1) * BN + gl.expand_dims(out_cols, 0), acc)


@gluon.jit
def _max_combine(a, b):
    return gl.maximum(a, b)


@gluon.jit
def scans_kernel(x_ptr, bits_ptr, out_ptr, BLOCK: gl.constexpr):
    """cumsum, a reduce with the kernel's own combine function, xor_sum, clamp, join / split."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offsets = gl.arange(0, BLOCK, layout)
    x = gl.load(x_ptr + offsets)
    gl.store(out_ptr + offsets, gl.cumsum(x, 0))
    gl.store(out_ptr + BLOCK + offsets, gl.clamp(x, -0.5, 0.5))
    pair = gl.join(x, x * 2.0)
    lo, hi = gl.split(pair)
    gl.store(out_ptr + 2 * BLOCK + offsets, gl.convert_layout(hi - lo, layout))
    gl.store(out_ptr + 3 * BLOCK, gl.reduce(x, 0, _max_combine))
    bits = gl.load(bits_ptr + offsets)
    gl.store(out_ptr + 3 * BLOCK + 1, gl.xor_sum(bits, 0).to(gl.float32))


@gluon.jit
def tmem_copy_kernel(in_desc, out_ptr):
    """A [128, N] float32 tile: TMA into shared memory, tcgen05_copy into TMEM, tcgen05_commit, then read back."""
    BM: gl.constexpr = in_desc.block_type.shape[0]
    BN: gl.constexpr = in_desc.block_type.shape[1]
    smem = gl.allocate_shared_memory(in_desc.dtype, [BM, BN], in_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma.async_load(in_desc, [0, 0], bar, smem)
    mbarrier.wait(bar, 0)
    tmem = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    tcgen05_copy(smem, tmem)
    tcgen05_commit(bar)
    mbarrier.wait(bar, 1)
    layout: gl.constexpr = tmem.get_reg_layout()
    rows = gl.arange(0, BM, gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, gl.SliceLayout(0, layout))
    gl.store(out_ptr + gl.expand_dims(rows, 1) * BN + gl.expand_dims(cols, 0), tmem.load(layout))


@gluon.jit
def _cluster_meeting(out_ptr, slot: gl.constexpr, MEET: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0], cga_layout=[[0]])
    offsets = gl.arange(0, 32, layout)
    if MEET:
        cluster.barrier()
    gl.store(out_ptr + (gl.program_id(0) * 2 + slot) * 32 + offsets, offsets * 0 + 1)


@gluon.jit
def ws_cluster_barrier_kernel(out_ptr, DEFAULT_MEETS: gl.constexpr, WORKER_MEETS: gl.constexpr):
    """Both partitions of both CTAs store a flag; each calls a cluster barrier first when told to (a cluster
    barrier needs every running warp of the cluster: one partition alone waits forever)."""
    gl.warp_specialize(
        [(_cluster_meeting, (out_ptr, 0, DEFAULT_MEETS)), (_cluster_meeting, (out_ptr, 1, WORKER_MEETS))], [4]
    )
