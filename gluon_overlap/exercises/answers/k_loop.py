"""Notebook 03, exercise "K loop": one TMA stage, one MMA, wait for both, per K step."""
import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier, tcgen05_copy, tcgen05_mma_scaled, tma

from gluon_overlap.kernel import element_kind


@gluon.jit
def k_loop(a_desc, b_desc, a_scale_desc, b_scale_desc, a_smem, b_smem, a_scale_smem, b_scale_smem,
           a_scale, b_scale, acc_tmem, a_scale_tmem, b_scale_tmem, load_bar, mma_bar, off_m, off_n, K,
           TMEM_PLAN: gl.constexpr):
    A_ELEM_PER_BYTE: gl.constexpr = 2 if a_desc.dtype == gl.uint8 else 1
    B_ELEM_PER_BYTE: gl.constexpr = 2 if b_desc.dtype == gl.uint8 else 1
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_N: gl.constexpr = b_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1] * A_ELEM_PER_BYTE
    REP_M: gl.constexpr = a_scale_desc.block_shape[1]
    REP_N: gl.constexpr = b_scale_desc.block_shape[1]
    A_REP_K: gl.constexpr = a_scale_desc.block_shape[2]
    B_REP_K: gl.constexpr = b_scale_desc.block_shape[2]
    stage_bytes: gl.constexpr = (a_desc.nbytes_per_cta + b_desc.nbytes_per_cta + a_scale_desc.nbytes_per_cta
                                 + b_scale_desc.nbytes_per_cta)
    phase = 0
    use_acc = False
    for k in range(0, K, BLOCK_K):
        mbarrier.expect(load_bar, stage_bytes)
        tma.async_load(a_desc, [off_m, k // A_ELEM_PER_BYTE], load_bar, a_smem, multicast=True)
        tma.async_load(b_desc, [off_n, k // B_ELEM_PER_BYTE], load_bar, b_smem, multicast=True)
        tma.async_load(a_scale_desc, [0, (off_m // BLOCK_M) * REP_M, (k // BLOCK_K) * A_REP_K, 0, 0],
                       load_bar, a_scale_smem, multicast=True)
        tma.async_load(b_scale_desc, [0, (off_n // BLOCK_N) * REP_N, (k // BLOCK_K) * B_REP_K, 0, 0],
                       load_bar, b_scale_smem, multicast=True)
        mbarrier.wait(load_bar, phase)
        tcgen05_copy(a_scale, a_scale_tmem)
        tcgen05_copy(b_scale, b_scale_tmem)
        tcgen05_mma_scaled(a_smem, b_smem.permute((1, 0)), acc_tmem, a_scale_tmem, b_scale_tmem,
                           element_kind(TMEM_PLAN.a_format), element_kind(TMEM_PLAN.b_format),
                           use_acc=use_acc, multicast=True, mbarriers=[mma_bar])
        mbarrier.wait(mma_bar, phase)
        phase ^= 1
        use_acc = True
