"""Gluon kernels written by an outside reviewer in the upstream Blackwell tutorials' idioms (an elementwise add,
a TMA copy, a pipelined / persistent / warp-specialized tcgen05 matmul, an mma_scaled kernel whose scales go
shared memory -> tcgen05_copy -> TMEM). Run on the CPU executor and cross-compiled by
tests/interp/test_interp_review.py."""

from __future__ import annotations

import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    TensorMemoryScalesLayout,
    allocate_tensor_memory,
    fence_async_shared,
    mbarrier,
    tcgen05_commit,
    tcgen05_copy,
    tcgen05_mma,
    tcgen05_mma_scaled,
    tma,
)


# --- 01-intro style --------------------------------------------------------------------------
@gluon.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: gl.constexpr):
    """out = x + y over a 1-D grid, the tail masked."""
    layout: gl.constexpr = gl.BlockedLayout(
        size_per_thread=[4], threads_per_warp=[32], warps_per_cta=[gl.num_warps()], order=[0]
    )
    pid = gl.program_id(axis=0)
    offs = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n_elements
    x = gl.load(x_ptr + offs, mask=mask)
    y = gl.load(y_ptr + offs, mask=mask)
    gl.store(out_ptr + offs, x + y, mask=mask)


# --- 04-tma style -----------------------------------------------------------------------------
@gluon.jit
def tma_copy_kernel(in_desc, out_desc):
    """Copy one block per program: TMA load (expect/wait on an mbarrier), TMA store, store_wait."""
    BM: gl.constexpr = in_desc.block_type.shape[0]
    BN: gl.constexpr = in_desc.block_type.shape[1]
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    smem = gl.allocate_shared_memory(in_desc.dtype, in_desc.block_type.shape, in_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma.async_load(in_desc, [pid_m * BM, pid_n * BN], bar, smem)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)
    tma.async_store(out_desc, [pid_m * BM, pid_n * BN], smem)
    tma.store_wait(pendings=0)


# --- 06-tcgen05 style: a multi-stage pipelined matmul --------------------------------------------
@gluon.jit
def _issue_loads(a_desc, b_desc, a_bufs, b_bufs, ready, off_m, off_n, k, slot):
    mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    tma.async_load(a_desc, [off_m, k], ready.index(slot), a_bufs.index(slot))
    tma.async_load(b_desc, [off_n, k], ready.index(slot), b_bufs.index(slot))


@gluon.jit
def _epilogue(c_desc, acc_tmem, off_m, off_n):
    reg_layout: gl.constexpr = acc_tmem.get_reg_layout()
    acc = acc_tmem.load(reg_layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit
def pipelined_matmul_kernel(a_desc, b_desc, c_desc, K, STAGES: gl.constexpr):
    """C[BM, BN] tile per program = A @ B.T (B is [N, K]); a STAGES-deep ring of SMEM buffers with ready /
    empty mbarrier arrays and per-slot phases; each MMA releases its slot through mbarriers=[empty[s]]."""
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    off_m = gl.program_id(0) * BM
    off_n = gl.program_id(1) * BN
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BM, BK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES, BN, BK], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    done = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(done, count=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    num_k = gl.cdiv(K, BK)
    for i in gl.static_range(STAGES - 1):  # prologue: fill all but one slot (num_k >= STAGES - 1 assumed)
        _issue_loads(a_desc, b_desc, a_bufs, b_bufs, ready, off_m, off_n, i * BK, i)
    use_acc = False
    for ki in range(num_k):
        # refill the slot the MMA of step ki - 1 used, once that MMA has released it
        nxt = ki + STAGES - 1
        if nxt < num_k:
            slot_n = nxt % STAGES
            if nxt >= STAGES:
                mbarrier.wait(empty.index(slot_n), ((nxt // STAGES) - 1) & 1)
            _issue_loads(a_desc, b_desc, a_bufs, b_bufs, ready, off_m, off_n, nxt * BK, slot_n)
        slot = ki % STAGES
        mbarrier.wait(ready.index(slot), (ki // STAGES) & 1)
        tcgen05_mma(
            a_bufs.index(slot),
            b_bufs.index(slot).permute((1, 0)),
            acc_tmem,
            use_acc=use_acc,
            mbarriers=[empty.index(slot)],
        )
        use_acc = True
    tcgen05_commit(done)
    mbarrier.wait(done, 0)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))
        mbarrier.invalidate(empty.index(i))
    mbarrier.invalidate(done)
    _epilogue(c_desc, acc_tmem, off_m, off_n)


# --- persistent matmul: a tile loop over gl.num_programs ------------------------------------------
@gluon.jit
def persistent_matmul_kernel(a_desc, b_desc, c_desc, M, N, K):
    """Each program walks tiles pid, pid + num_programs, ... ; one SMEM stage, phases carried across tiles;
    the epilogue goes TMEM -> registers (get_reg_layout) -> fp16 -> SMEM -> TMA store."""
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    tma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(tma_bar, count=1)
    mbarrier.init(mma_bar, count=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    reg_layout: gl.constexpr = acc_tmem.get_reg_layout()
    num_pid_n = gl.cdiv(N, BN)
    num_tiles = gl.cdiv(M, BM) * num_pid_n
    phase = 0
    for tile in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
        off_m = (tile // num_pid_n) * BM
        off_n = (tile % num_pid_n) * BN
        use_acc = False
        for k in range(0, K, BK):
            mbarrier.expect(tma_bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_load(a_desc, [off_m, k], tma_bar, a_smem)
            tma.async_load(b_desc, [off_n, k], tma_bar, b_smem)
            mbarrier.wait(tma_bar, phase)
            tcgen05_mma(a_smem, b_smem.permute((1, 0)), acc_tmem, use_acc=use_acc)
            tcgen05_commit(mma_bar)
            mbarrier.wait(mma_bar, phase)
            use_acc = True
            phase ^= 1
        acc = acc_tmem.load(reg_layout)
        tma.store_wait(0)  # the previous tile's store has left c_smem
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)
    mbarrier.invalidate(tma_bar)
    mbarrier.invalidate(mma_bar)


# --- warp-specialized persistent matmul: load / MMA / epilogue partitions, two TMEM accumulators -----
@gluon.jit
def _ws_load(a_desc, b_desc, a_bufs, b_bufs, ready, empty, num_tiles, num_pid_n, K, STAGES: gl.constexpr):
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    count = 0
    for tile in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
        off_m = (tile // num_pid_n) * BM
        off_n = (tile % num_pid_n) * BN
        for k in range(0, K, BK):
            slot = count % STAGES
            mbarrier.wait(empty.index(slot), ((count // STAGES) & 1) ^ 1)  # first pass: passes at once
            mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_load(a_desc, [off_m, k], ready.index(slot), a_bufs.index(slot))
            tma.async_load(b_desc, [off_n, k], ready.index(slot), b_bufs.index(slot))
            count += 1


@gluon.jit
def _ws_mma(
    a_bufs, b_bufs, ready, empty, acc_tmem, acc_ready, acc_empty, num_tiles, K, STAGES: gl.constexpr, BK: gl.constexpr
):
    count = 0
    t = 0
    for _tile in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
        buf = t % 2
        mbarrier.wait(acc_empty.index(buf), ((t // 2) & 1) ^ 1)
        acc = acc_tmem.index(buf)
        use_acc = False
        for _k in range(0, K, BK):
            slot = count % STAGES
            mbarrier.wait(ready.index(slot), (count // STAGES) & 1)
            tcgen05_mma(
                a_bufs.index(slot),
                b_bufs.index(slot).permute((1, 0)),
                acc,
                use_acc=use_acc,
                mbarriers=[empty.index(slot)],
            )
            use_acc = True
            count += 1
        tcgen05_commit(acc_ready.index(buf))
        t += 1


@gluon.jit
def _ws_epilogue(c_desc, acc_tmem, acc_ready, acc_empty, c_smem, num_tiles, num_pid_n):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    t = 0
    for tile in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
        buf = t % 2
        mbarrier.wait(acc_ready.index(buf), (t // 2) & 1)
        acc_buf = acc_tmem.index(buf)
        acc = acc_buf.load(acc_buf.get_reg_layout())
        mbarrier.arrive(acc_empty.index(buf), count=1)
        tma.store_wait(0)
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [(tile // num_pid_n) * BM, (tile % num_pid_n) * BN], c_smem)
        t += 1
    tma.store_wait(0)


@gluon.jit
def ws_matmul_kernel(a_desc, b_desc, c_desc, M, N, K, STAGES: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    acc_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    acc_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(acc_ready.index(i), count=1)
        mbarrier.init(acc_empty.index(i), count=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [2, BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    num_pid_n = gl.cdiv(N, BN)
    num_tiles = gl.cdiv(M, BM) * num_pid_n
    gl.warp_specialize(
        [
            (_ws_epilogue, (c_desc, acc_tmem, acc_ready, acc_empty, c_smem, num_tiles, num_pid_n)),
            (_ws_load, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, num_tiles, num_pid_n, K, STAGES)),
            (_ws_mma, (a_bufs, b_bufs, ready, empty, acc_tmem, acc_ready, acc_empty, num_tiles, K, STAGES, BK)),
        ],
        [1, 1],
        [48, 48],
    )


# --- 11-tcgen05-mma-scaled style: scales to SMEM, tcgen05_copy to TMEM ------------------------------
@gluon.jit
def scaled_copy_kernel(a_desc, b_desc, c_ptr, a_scale_ptr, b_scale_ptr, K, PLAIN_VIEW: gl.constexpr):
    """C = (A * 2^sa) @ (B * 2^sb).T for e4m3 A, B ([128, K], one 128 x 128 tile). Per K step the e8m0 scales
    of the 128 rows arrive pre-shuffled as a [32, 4 * SC] block (row r0, column 4 * r1 + c holds the scale
    of row 32 * r1 + r0, group c); they go registers -> SMEM, the SMEM view is reshaped / permuted back to
    [128, SC] (the tcgen05.cp 32x128b.warpx4 form), tcgen05_copy'd into TMEM (TensorMemoryScalesLayout) and
    fed to tcgen05_mma_scaled. PLAIN_VIEW reads the block as a row-major [128, SC] instead: a layout with no
    tcgen05.cp form, which the compiler refuses."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    SC: gl.constexpr = BK // 32
    a_smem = gl.allocate_shared_memory(a_desc.dtype, [BM, BK], a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, [BN, BK], b_desc.layout)
    raw_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    a_raw = gl.allocate_shared_memory(gl.uint8, [32, 4 * SC], raw_layout)
    b_raw = gl.allocate_shared_memory(gl.uint8, [32, 4 * SC], raw_layout)
    if PLAIN_VIEW:
        a_view = a_raw.reshape((BM, SC))
        b_view = b_raw.reshape((BN, SC))
    else:
        a_view = a_raw.reshape((32, 4, SC)).permute((1, 0, 2)).reshape((BM, SC))
        b_view = b_raw.reshape((32, 4, SC)).permute((1, 0, 2)).reshape((BN, SC))
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.init(mma_bar, count=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    a_scale_tmem = allocate_tensor_memory(gl.uint8, [BM, SC], TensorMemoryScalesLayout())
    b_scale_tmem = allocate_tensor_memory(gl.uint8, [BN, SC], TensorMemoryScalesLayout())
    load_layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, 32, gl.SliceLayout(1, load_layout))
    cols = gl.arange(0, 4 * SC, gl.SliceLayout(0, load_layout))
    block = gl.expand_dims(rows, 1) * (4 * SC) + gl.expand_dims(cols, 0)
    phase = 0
    use_acc = False
    for k in range(0, K, BK):
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [0, k], bar, a_smem)
        tma.async_load(b_desc, [0, k], bar, b_smem)
        step = (k // BK) * (32 * 4 * SC)
        a_raw.store(gl.load(a_scale_ptr + step + block))
        b_raw.store(gl.load(b_scale_ptr + step + block))
        fence_async_shared()
        tcgen05_copy(a_view, a_scale_tmem)
        tcgen05_copy(b_view, b_scale_tmem)
        mbarrier.wait(bar, phase)
        tcgen05_mma_scaled(
            a_smem,
            b_smem.permute((1, 0)),
            acc_tmem,
            a_scale_tmem,
            b_scale_tmem,
            "e4m3",
            "e4m3",
            use_acc=use_acc,
            mbarriers=[mma_bar],
        )
        mbarrier.wait(mma_bar, phase)
        use_acc = True
        phase ^= 1
    layout: gl.constexpr = acc_tmem.get_reg_layout()
    acc = acc_tmem.load(layout)
    out_rows = gl.arange(0, BM, gl.SliceLayout(1, layout))
    out_cols = gl.arange(0, BN, gl.SliceLayout(0, layout))
    gl.store(c_ptr + gl.expand_dims(out_rows, 1) * BN + gl.expand_dims(out_cols, 0), acc)


# --- a subtiled epilogue: TMEM slices, two store buffers, store_wait(1) ------------------------------
@gluon.jit
def subtiled_epilogue_kernel(a_desc, b_desc, c_desc, K, SPLIT: gl.constexpr):
    """One [BM, BN] tile of A @ B.T; the epilogue reads the accumulator in SPLIT column slices
    (acc_tmem.slice), each through one of two SMEM buffers, keeping at most one TMA store in flight."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    SUB: gl.constexpr = BN // SPLIT
    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_type.shape, b_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mma_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.init(mma_bar, count=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    phase = 0
    for k in range(0, K, BK):
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [0, k], bar, a_smem)
        tma.async_load(b_desc, [0, k], bar, b_smem)
        mbarrier.wait(bar, phase)
        tcgen05_mma(a_smem, b_smem.permute((1, 0)), acc_tmem, use_acc=k > 0, mbarriers=[mma_bar])
        mbarrier.wait(mma_bar, phase)
        phase ^= 1
    c_bufs = gl.allocate_shared_memory(c_desc.dtype, [2, BM, SUB], c_desc.layout)
    for i in gl.static_range(SPLIT):
        part = acc_tmem.slice(i * SUB, SUB)
        values = part.load(part.get_reg_layout())
        tma.store_wait(1)  # the store that used this buffer two slices ago is done
        c_bufs.index(i % 2).store(values.to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [0, i * SUB], c_bufs.index(i % 2))
    tma.store_wait(0)
