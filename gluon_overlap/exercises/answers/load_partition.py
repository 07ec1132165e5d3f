"""Notebook 05, exercise "load partition": the loop of the load worker (1 warp per CTA)."""
import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier, tma

from gluon_overlap.kernel import Counter


@gluon.jit
def load_partition(p):
    A_ELEM_PER_BYTE: gl.constexpr = 2 if p.a_desc.dtype == gl.uint8 else 1
    B_ELEM_PER_BYTE: gl.constexpr = 2 if p.b_desc.dtype == gl.uint8 else 1
    BLOCK_M: gl.constexpr = p.a_desc.block_shape[0]
    BLOCK_N: gl.constexpr = p.b_desc.block_shape[0]
    BLOCK_K: gl.constexpr = p.a_desc.block_shape[1] * A_ELEM_PER_BYTE
    REP_M: gl.constexpr = p.a_scale_desc.block_shape[1]
    REP_N: gl.constexpr = p.b_scale_desc.block_shape[1]
    A_REP_K: gl.constexpr = p.a_scale_desc.block_shape[2]
    B_REP_K: gl.constexpr = p.b_scale_desc.block_shape[2]
    K = p.a_desc.shape[1] * A_ELEM_PER_BYTE
    stage_bytes: gl.constexpr = (p.a_desc.nbytes_per_cta + p.b_desc.nbytes_per_cta + p.a_scale_desc.nbytes_per_cta
                                 + p.b_scale_desc.nbytes_per_cta)

    state = Counter.create(1, p.load_empty_bars.shape[0])  # a producer: the slots start out empty
    scheduler = p.scheduler()
    while scheduler.has_work:
        for k in range(0, K, BLOCK_K):
            mbarrier.wait(p.load_empty_bars.index(state.index), state.phase)
            bar = p.load_ready_bars.index(state.index)
            mbarrier.expect(bar, stage_bytes)
            tma.async_load(p.a_desc, [scheduler.pid_m * BLOCK_M, k // A_ELEM_PER_BYTE], bar,
                           p.a_bufs.index(state.index), multicast=True)
            tma.async_load(p.b_desc, [scheduler.pid_n * BLOCK_N, k // B_ELEM_PER_BYTE], bar,
                           p.b_bufs.index(state.index), multicast=True)
            tma.async_load(p.a_scale_desc, [0, scheduler.pid_m * REP_M, (k // BLOCK_K) * A_REP_K, 0, 0], bar,
                           p.a_scale_bufs.index(state.index), multicast=True)
            tma.async_load(p.b_scale_desc, [0, scheduler.pid_n * REP_N, (k // BLOCK_K) * B_REP_K, 0, 0], bar,
                           p.b_scale_bufs.index(state.index), multicast=True)
            state = state.next()
        scheduler = scheduler.step()
