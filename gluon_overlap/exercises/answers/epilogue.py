"""Notebook 03, exercise "epilogue": drain the accumulator in subtiles, TMEM -> float16 -> SMEM -> TMA store."""
import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import fence_async_shared, tma

from gluon_overlap.kernel import drain_column


@gluon.jit
def epilogue(acc_tmem, c_desc, c_smem, off_m, off_n, TMEM_PLAN: gl.constexpr):
    SUBTILE: gl.constexpr = c_desc.block_shape[1]  # columns per subtile (the C box's width)
    NUM_SUBTILES: gl.constexpr = TMEM_PLAN.num_subtiles
    for step in gl.static_range(NUM_SUBTILES):
        acc = acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), SUBTILE).load()  # tcgen05.ld: TMEM -> registers
        tma.store_wait(0)  # the previous subtile's store has read c_smem
        c_smem.store(acc.to(c_desc.dtype))  # float32 -> float16, registers -> shared memory
        fence_async_shared()  # the TMA engine must see those writes
        tma.async_store(c_desc, [off_m, off_n + drain_column(TMEM_PLAN, 0, step)], c_smem)
    tma.store_wait(0)
