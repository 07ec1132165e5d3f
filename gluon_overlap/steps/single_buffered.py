"""Step 1 (notebook 03): the simplest correct 2-CTA block-scaled kernel, single-buffered.

One cluster of two CTAs computes one 256 x 256 output tile -- the grid has one cluster per
tile -- in one instruction stream (no warp specialization) and with one shared-memory stage:

* per K step: ``expect`` the stage's bytes on a pair-scoped barrier, TMA-load A, B and both
  scale tiles, wait for them, copy the scales into their TMEM slots, issue the block-scaled
  2-CTA MMA with ``mbarriers=[mma_bar]`` (an MMA followed by a commit) and wait for it --
  the next K step overwrites the same shared memory;
* then the epilogue: 32-column subtiles of the accumulator, TMEM -> registers -> float16 ->
  shared memory -> TMA store.

Nothing overlaps: while the TMA loads, the tensor core waits; while the MMA runs, the TMA
waits; while the epilogue drains, both wait.  Notebooks 04 and 05 take those waits away.
Every TMEM column comes from the :class:`~gluon_overlap.tmem.TmemPlan` passed as
``TMEM_PLAN``; the helpers it calls are the production kernel's own (``gluon_overlap.kernel``).
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
def single_buffered_kernel(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, M, N, K,
                           TMEM_PLAN: gl.constexpr):
    """C tile ``program_id`` = (A * a_scales) @ (B * b_scales).T, one K step at a time."""
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
    ACC: gl.constexpr = accumulator_window(TMEM_PLAN, 0)  # (first column, columns)
    NUM_SUBTILES: gl.constexpr = TMEM_PLAN.num_subtiles
    # Refuse (while tracing) a plan made for other formats or tile sizes than the descriptors.
    gl.static_assert(check_plan_matches(TMEM_PLAN, descriptor_format(a_desc.dtype, a_scale_desc.dtype),
                                        descriptor_format(b_desc.dtype, b_scale_desc.dtype), BLOCK_K, SUBTILE,
                                        BLOCK_N))

    # ---- which tile: program_id is the cluster index, the same in both CTAs -------------
    pid = gl.program_id(axis=0)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    off_m = (pid // num_pid_n) * BLOCK_M
    off_n = (pid % num_pid_n) * BLOCK_N

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
    acc_tmem = tmem_pool.slice(ACC[0], ACC[1])
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
    mma_barrier_count: gl.constexpr = tcgen05_mma_barrier_count(
        [a_smem, b_smem, a_scale_smem, b_scale_smem], multicast=True, two_ctas=True)
    mbarrier.init(load_bar, count=1)
    mbarrier.init(mma_bar, count=mma_barrier_count)
    # Both CTAs must see the lead's inits before either arrives on a pair barrier: a cluster
    # barrier (the compiler also emits one after mbarrier inits; this one makes it explicit).
    gl.barrier(cluster=True)
    stage_bytes: gl.constexpr = (a_desc.nbytes_per_cta + b_desc.nbytes_per_cta + a_scale_desc.nbytes_per_cta
                                 + b_scale_desc.nbytes_per_cta)

    # ---- the K loop ----------------------------------------------------------------
    phase = 0  # both barriers complete once per K step: the same parity for both
    use_acc = False  # TMEM starts as garbage: the first MMA overwrites the accumulator
    for k in range(0, K, BLOCK_K):
        # One arrival plus the byte count; the TMA engine counts the bytes down as they land.
        mbarrier.expect(load_bar, stage_bytes)
        tma.async_load(a_desc, [off_m, k // A_ELEM_PER_BYTE], load_bar, a_smem, multicast=True)
        tma.async_load(b_desc, [off_n, k // B_ELEM_PER_BYTE], load_bar, b_smem, multicast=True)
        tma.async_load(a_scale_desc, [0, (off_m // BLOCK_M) * REP_M, (k // BLOCK_K) * A_REP_K, 0, 0],
                       load_bar, a_scale_smem, multicast=True)
        tma.async_load(b_scale_desc, [0, (off_n // BLOCK_N) * REP_N, (k // BLOCK_K) * B_REP_K, 0, 0],
                       load_bar, b_scale_smem, multicast=True)
        mbarrier.wait(load_bar, phase)  # only the lead CTA really waits on a pair barrier
        # Scales: shared memory -> TMEM (tcgen05.cp), then the 2-CTA block-scaled MMA.  Both
        # run on the tensor pipe in issue order; mbarriers=[mma_bar] commits after the MMA.
        tcgen05_copy(a_scale, a_scale_tmem)
        tcgen05_copy(b_scale, b_scale_tmem)
        tcgen05_mma_scaled(a_smem, b_smem.permute((1, 0)), acc_tmem, a_scale_tmem, b_scale_tmem,
                           element_kind(TMEM_PLAN.a_format), element_kind(TMEM_PLAN.b_format),
                           use_acc=use_acc, multicast=True, mbarriers=[mma_bar])
        mbarrier.wait(mma_bar, phase)  # the MMA has read a_smem ... b_scale_smem: reuse them
        phase ^= 1
        use_acc = True

    # ---- the epilogue: TMEM -> registers -> float16 -> SMEM -> TMA store --------------
    for step in gl.static_range(NUM_SUBTILES):
        # tcgen05.ld: this CTA's 128 rows x SUBTILE columns, from TMEM into registers
        acc = acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), SUBTILE).load()
        tma.store_wait(0)  # the previous subtile's store has finished reading c_smem
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()  # make the register -> SMEM writes visible to the TMA engine
        tma.async_store(c_desc, [off_m, off_n + drain_column(TMEM_PLAN, 0, step)], c_smem)
    tma.store_wait(0)
