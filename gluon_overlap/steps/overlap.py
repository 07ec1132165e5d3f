"""Step 2 (notebook 04): persistent, with two overlapping accumulator windows.

The single-buffered kernel of :mod:`.single_buffered`, changed in three places:

1. **persistent**: each cluster walks the tile list ``program_id, program_id + P, ...``
   (``P = num_programs``), so one cluster computes several tiles in a row;
2. **two windows**: tile ``i`` of a cluster accumulates into ``plan.accumulator(i)`` -- left
   for even ``i``, right for odd ``i`` -- and is drained in ``plan.drain_order(i)``; with
   overlap on the windows share ``plan.overlap_cols`` columns, drained first;
3. **the previous tile's epilogue moves into this tile's K loop**: before the first MMA of
   tile ``i`` the kernel drains only the *head* of tile ``i - 1`` (drain steps
   ``0 ... early_release_subtile``: every shared column) and releases it on the pair-scoped
   ``overlap`` barrier; the lead CTA waits for both CTAs' releases and issues the MMA.  The
   *tail* of tile ``i - 1`` is drained in the second K step, while its TMA loads are in flight
   (with a single K step: while the first MMA computes).

With a plan whose overlap is off the two windows are the same and the head is the whole
window: this kernel is then the persistent single-buffered one, the baseline its measurement is
compared with (its drain still hides the latency of the next tile's first loads).  Still one instruction stream and one
shared-memory stage; notebook 05's warp-specialized kernel removes the remaining waits.
"""

from __future__ import annotations

import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    TensorMemoryScalesLayout,
    allocate_tensor_memory,
    fence_async_shared,
    mbarrier,
    tcgen05_copy,
    tcgen05_mma_barrier_count,
    tcgen05_mma_scaled,
    tma,
)

from gluon_overlap.kernel import (
    accumulator_window,
    check_plan_matches,
    descriptor_format,
    drain_column,
    element_kind,
    unswizzle_scales_shared_memory,
)


@gluon.jit
def drain_steps(tmem_pool, c_desc, c_smem, off_m, off_n, tile_parity, TMEM_PLAN: gl.constexpr,
                FIRST: gl.constexpr, LAST: gl.constexpr):
    """Drain steps ``FIRST ... LAST - 1`` of a tile of parity ``tile_parity``: its window and its
    drain order come from the plan; each subtile goes TMEM -> float16 -> SMEM -> TMA store."""
    SUBTILE: gl.constexpr = c_desc.block_shape[1]
    LEFT: gl.constexpr = accumulator_window(TMEM_PLAN, 0)
    RIGHT: gl.constexpr = accumulator_window(TMEM_PLAN, 1)
    for step in gl.static_range(FIRST, LAST):
        if tile_parity == 0:  # left window (with overlap on: high to low)
            acc_sub = tmem_pool.slice(LEFT[0], LEFT[1]).slice(drain_column(TMEM_PLAN, 0, step), SUBTILE)
            store_n = off_n + drain_column(TMEM_PLAN, 0, step)
        else:  # right window, low to high
            acc_sub = tmem_pool.slice(RIGHT[0], RIGHT[1]).slice(drain_column(TMEM_PLAN, 1, step), SUBTILE)
            store_n = off_n + drain_column(TMEM_PLAN, 1, step)
        acc = acc_sub.load()  # tcgen05.ld + wait::ld: the columns are in registers now
        tma.store_wait(0)
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m, store_n], c_smem)


@gluon.jit
def overlap_kernel(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, M, N, K,
                   TMEM_PLAN: gl.constexpr):
    """The tiles ``program_id, program_id + num_programs, ...`` of C, each tile's epilogue
    overlapping the next tile's first MMA."""
    # ---- compile-time facts, read from the descriptors and the plan -------------------
    A_ELEM_PER_BYTE: gl.constexpr = 2 if a_desc.dtype == gl.uint8 else 1  # fp4: two elements a byte
    B_ELEM_PER_BYTE: gl.constexpr = 2 if b_desc.dtype == gl.uint8 else 1
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]  # 256 rows for the pair, 128 per CTA
    BLOCK_N: gl.constexpr = b_desc.block_shape[0]  # 256
    BLOCK_K: gl.constexpr = a_desc.block_shape[1] * A_ELEM_PER_BYTE
    SUBTILE: gl.constexpr = c_desc.block_shape[1]  # epilogue columns per TMA store
    REP_M: gl.constexpr = a_scale_desc.block_shape[1]  # 128-row scale chunks per tile
    REP_N: gl.constexpr = b_scale_desc.block_shape[1]
    A_REP_K: gl.constexpr = a_scale_desc.block_shape[2]  # 4-scale chunks per K step
    B_REP_K: gl.constexpr = b_scale_desc.block_shape[2]
    VEC_SIZE: gl.constexpr = TMEM_PLAN.vec_size
    LEFT: gl.constexpr = accumulator_window(TMEM_PLAN, 0)  # even tiles
    RIGHT: gl.constexpr = accumulator_window(TMEM_PLAN, 1)  # odd tiles (== LEFT with overlap off)
    NUM_SUBTILES: gl.constexpr = TMEM_PLAN.num_subtiles
    # Drain steps 0 ... HEAD - 1 hold every column the next tile's window shares with this one.
    HEAD: gl.constexpr = TMEM_PLAN.early_release_subtile + 1 if TMEM_PLAN.overlap else NUM_SUBTILES
    # Refuse (while tracing) a plan made for other formats or tile sizes than the descriptors.
    gl.static_assert(check_plan_matches(TMEM_PLAN, descriptor_format(a_desc.dtype, a_scale_desc.dtype),
                                        descriptor_format(b_desc.dtype, b_scale_desc.dtype), BLOCK_K, SUBTILE,
                                        BLOCK_N))

    # ---- which tiles: program_id is the cluster index, the same in both CTAs ------------
    num_pid_n = gl.cdiv(N, BLOCK_N)
    num_tiles = gl.cdiv(M, BLOCK_M) * num_pid_n

    # ---- shared memory: one stage of A, B and their packed scale tiles -------------------
    # The descriptors' layouts carry the CGA split: each CTA holds its own 128 rows of A and
    # B, and its own A-scale chunk; the B-scale tile is whole in both CTAs.
    a_smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, b_desc.block_shape, b_desc.layout)
    a_scale_smem = gl.allocate_shared_memory(a_scale_desc.dtype, a_scale_desc.block_shape, a_scale_desc.layout)
    b_scale_smem = gl.allocate_shared_memory(b_scale_desc.dtype, b_scale_desc.block_shape, b_scale_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_shape, c_desc.layout)

    # ---- tensor memory: all 512 columns at once, sliced by the plan ---------------------
    # [BLOCK_M, 512] over two CTAs: CTA r keeps rows 128 r ... 128 r + 127 in its 128 lanes.
    tmem_layout: gl.constexpr = TensorMemoryLayout([BLOCK_M // 2, BLOCK_N], col_stride=1, cga_layout=[[1, 0]],
                                                   two_ctas=True)
    tmem_pool = allocate_tensor_memory(gl.float32, [BLOCK_M, TMEM_PLAN.tmem_cols], tmem_layout)
    # The scale slots: A scales split by M like the accumulator, B scales duplicated.
    a_scale = unswizzle_scales_shared_memory(a_scale_smem, BLOCK_M, BLOCK_K, VEC_SIZE)
    b_scale = unswizzle_scales_shared_memory(b_scale_smem, BLOCK_N, BLOCK_K, VEC_SIZE)
    a_scale_tmem = tmem_pool.slice(TMEM_PLAN.a_scale.offset, TMEM_PLAN.a_scale.cols).reinterpret(
        dtype=a_scale.dtype, shape=a_scale.shape, layout=TensorMemoryScalesLayout(cga_layout=[[1, 0]]))
    b_scale_tmem = tmem_pool.slice(TMEM_PLAN.b_scale.offset, TMEM_PLAN.b_scale.cols).reinterpret(
        dtype=b_scale.dtype, shape=b_scale.shape, layout=TensorMemoryScalesLayout(cga_layout=[[0, 0]]))

    # ---- barriers --------------------------------------------------------------------
    # load_bar is pair-scoped (one copy, in the lead CTA): the lead may only issue the MMA
    # once the bytes of *both* CTAs have landed.  mma_bar is per CTA: the lead's commit
    # multicasts one arrival to each CTA's copy.
    load_bar = mbarrier.allocate_mbarrier(two_ctas=True)
    mma_bar = mbarrier.allocate_mbarrier()
    # overlap is pair-scoped too: the lead may only overwrite the shared columns once *both*
    # CTAs have drained them.  Initialised with count=1, its lead copy expects two arrivals.
    overlap_bar = mbarrier.allocate_mbarrier(two_ctas=True)
    mma_barrier_count: gl.constexpr = tcgen05_mma_barrier_count(
        [a_smem, b_smem, a_scale_smem, b_scale_smem], multicast=True, two_ctas=True)
    mbarrier.init(load_bar, count=1)
    mbarrier.init(mma_bar, count=mma_barrier_count)
    mbarrier.init(overlap_bar, count=1)
    # Both CTAs must see the lead's inits before either arrives on a pair barrier: a cluster
    # barrier (the compiler also emits one after mbarrier inits; this one makes it explicit).
    gl.barrier(cluster=True)
    stage_bytes: gl.constexpr = (a_desc.nbytes_per_cta + b_desc.nbytes_per_cta + a_scale_desc.nbytes_per_cta
                                 + b_scale_desc.nbytes_per_cta)

    phase = 0  # both barriers complete once per K step: the same parity for both
    i = 0  # this cluster's tile counter: its parity picks the window
    prev_off_m = 0
    prev_off_n = 0
    for tile_id in range(gl.program_id(axis=0), num_tiles, gl.num_programs(axis=0)):
        off_m = (tile_id // num_pid_n) * BLOCK_M
        off_n = (tile_id % num_pid_n) * BLOCK_N
        if i % 2 == 0:
            acc_tmem = tmem_pool.slice(LEFT[0], LEFT[1])
        else:
            acc_tmem = tmem_pool.slice(RIGHT[0], RIGHT[1])

        # ---- the K loop ------------------------------------------------------------
        use_acc = False  # TMEM holds the tile before last: the first MMA overwrites it
        for k in range(0, K, BLOCK_K):
            # One arrival plus the byte count; the TMA engine counts the bytes down as they land.
            mbarrier.expect(load_bar, stage_bytes)
            tma.async_load(a_desc, [off_m, k // A_ELEM_PER_BYTE], load_bar, a_smem, multicast=True)
            tma.async_load(b_desc, [off_n, k // B_ELEM_PER_BYTE], load_bar, b_smem, multicast=True)
            tma.async_load(a_scale_desc, [0, (off_m // BLOCK_M) * REP_M, (k // BLOCK_K) * A_REP_K, 0, 0],
                           load_bar, a_scale_smem, multicast=True)
            tma.async_load(b_scale_desc, [0, (off_n // BLOCK_N) * REP_N, (k // BLOCK_K) * B_REP_K, 0, 0],
                           load_bar, b_scale_smem, multicast=True)
            if k == BLOCK_K:
                if i > 0:
                    # The tail of the previous tile, drained while this K step's loads are in flight.
                    drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN,
                                HEAD, NUM_SUBTILES)
            if k == 0:
                if i > 0:
                    # The head of the previous tile: every column this tile's window shares with it.
                    drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN, 0,
                                HEAD)
                    mbarrier.arrive(overlap_bar, count=1)
                # Completion i of overlap = both CTAs released tile i - 1 (tile 0: parity 1, at once).
                mbarrier.wait(overlap_bar, (i + 1) % 2)
            mbarrier.wait(load_bar, phase)  # only the lead CTA really waits on a pair barrier
            # Scales: shared memory -> TMEM (tcgen05.cp), then the 2-CTA block-scaled MMA.  Both
            # run on the tensor pipe in issue order; mbarriers=[mma_bar] commits after the MMA.
            tcgen05_copy(a_scale, a_scale_tmem)
            tcgen05_copy(b_scale, b_scale_tmem)
            tcgen05_mma_scaled(a_smem, b_smem.permute((1, 0)), acc_tmem, a_scale_tmem, b_scale_tmem,
                               element_kind(TMEM_PLAN.a_format), element_kind(TMEM_PLAN.b_format),
                               use_acc=use_acc, multicast=True, mbarriers=[mma_bar])
            if K == BLOCK_K:
                if i > 0:
                    # A single K step: the tail of the previous tile is drained while this MMA computes.
                    drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN,
                                HEAD, NUM_SUBTILES)
            mbarrier.wait(mma_bar, phase)  # the MMA has read a_smem ... b_scale_smem: reuse them
            phase ^= 1
            use_acc = True
        prev_off_m = off_m
        prev_off_n = off_n
        i += 1

    # ---- the last tile's epilogue: nothing left to overlap it with --------------------
    if i > 0:
        drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN, 0, NUM_SUBTILES)
    tma.store_wait(0)
