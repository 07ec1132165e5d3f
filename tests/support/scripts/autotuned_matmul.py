"""A tutorial-shaped Blackwell script (written for this suite): a neighbouring script imported as a module
(``importlib.import_module``, as the tutorials reuse each other), an aggregate class passed as a ``gl.constexpr``
argument, ``triton.autotune`` over two configs, tcgen05 MMAs into TMEM, a TMA store."""

import importlib

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    allocate_tensor_memory,
    fence_async_shared,
    mbarrier,
    tcgen05_commit,
    tcgen05_mma,
    tma,
)
from triton.experimental.gluon.nvidia.blackwell import TensorDescriptor

va = importlib.import_module("vector_add")


@gluon.aggregate
class Tile:
    row: gl.tensor
    col: gl.tensor

    @gluon.jit
    def of_program(BM: gl.constexpr, BN: gl.constexpr):
        return Tile(gl.program_id(0) * BM, gl.program_id(1) * BN)


def set_blocks(nargs):
    nargs["a_desc"].block_shape = [128, nargs["BK"]]
    nargs["b_desc"].block_shape = [nargs["BK"], 64]
    nargs["c_desc"].block_shape = [128, 64]
    for name in ("a_desc", "b_desc", "c_desc"):
        d = nargs[name]
        d.layout = gl.NVMMASharedLayout.get_default_for(d.block_shape, gl.float16)


@triton.autotune(configs=[triton.Config({"BK": 64}, num_warps=4, pre_hook=set_blocks),
                          triton.Config({"BK": 32}, num_warps=4, pre_hook=set_blocks)], key=["K"])
@gluon.jit
def matmul_kernel(a_desc, b_desc, c_desc, K, TileOf: gl.constexpr, BK: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    t = TileOf.of_program(BM, BN)
    a_smem = gl.allocate_shared_memory(gl.float16, a_desc.block_type.shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(gl.float16, b_desc.block_type.shape, b_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.init(bar.index(1), count=1)
    acc = allocate_tensor_memory(gl.float32, [BM, BN], TensorMemoryLayout([BM, BN], col_stride=1))
    phase = 0
    for k in range(0, K, BK):
        mbarrier.expect(bar.index(0), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_load(a_desc, [t.row, k], bar.index(0), a_smem)
        tma.async_load(b_desc, [k, t.col], bar.index(0), b_smem)
        mbarrier.wait(bar.index(0), phase)
        tcgen05_mma(a_smem, b_smem, acc, use_acc=k > 0)
        tcgen05_commit(bar.index(1))
        mbarrier.wait(bar.index(1), phase)
        phase ^= 1
    c_smem = gl.allocate_shared_memory(gl.float16, c_desc.block_type.shape, c_desc.layout)
    c_smem.store(acc.load().to(gl.float16))
    fence_async_shared()
    tma.async_store(c_desc, [t.row, t.col], c_smem)
    tma.store_wait(0)


if __name__ == "__main__":
    assert va.is_blackwell()
    M, N, K = 256, 128, 128
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    dummy = gl.NVMMASharedLayout.get_default_for([1, 1], gl.float16)
    descs = [TensorDescriptor.from_tensor(t, [1, 1], dummy) for t in (a, b, c)]
    matmul_kernel[(M // 128, N // 64)](*descs, K, Tile)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=1e-2, rtol=1e-2)
    print("matmul ok")
