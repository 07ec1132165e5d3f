"""A warp-specialized Gluon script with a planted race (written for this suite): the consumer reads the slot
before waiting for the TMA load that fills it; the result may even come out right, the race is there anyway."""

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor


@gluon.jit
def _producer(desc, bufs, ready, free, n_blocks):
    BM: gl.constexpr = desc.block_type.shape[0]
    BN: gl.constexpr = desc.block_type.shape[1]
    for k in range(n_blocks):
        s = k % 2
        mbarrier.wait(free.index(s), ((k // 2) & 1) ^ 1)
        mbarrier.expect(ready.index(s), desc.block_type.nbytes)
        tma.async_load(desc, [gl.program_id(0) * BM, k * BN], ready.index(s), bufs.index(s))


@gluon.jit
def _consumer(out_ptr, bufs, ready, free, n_blocks, BM: gl.constexpr, BN: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    acc = gl.zeros([BM, BN], gl.float32, layout)
    for k in range(n_blocks):
        s = k % 2
        x = bufs.index(s).load(layout)  # BUG: read before the wait below
        mbarrier.wait(ready.index(s), (k // 2) & 1)
        mbarrier.arrive(free.index(s), count=1)
        acc = acc + x
    rows = gl.program_id(0) * BM + gl.arange(0, BM, gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, gl.SliceLayout(0, layout))
    gl.store(out_ptr + rows[:, None] * BN + cols[None, :], acc)


@gluon.jit
def band_sum_kernel(desc, out_ptr, n_blocks):
    BM: gl.constexpr = desc.block_type.shape[0]
    BN: gl.constexpr = desc.block_type.shape[1]
    bufs = gl.allocate_shared_memory(desc.dtype, [2, BM, BN], desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    free = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(free.index(i), count=1)
    gl.warp_specialize([(_consumer, (out_ptr, bufs, ready, free, n_blocks, BM, BN)),
                        (_producer, (desc, bufs, ready, free, n_blocks))], [1], [24])


if __name__ == "__main__":
    x = torch.randn(64, 32 * 6, device="cuda")
    out = torch.empty(64, 32, device="cuda")
    layout = gl.NVMMASharedLayout.get_default_for([32, 32], gl.float32)
    desc = TensorDescriptor.from_tensor(x, [32, 32], layout)
    band_sum_kernel[(2, )](desc, out, 6)
    want = x.view(64, 6, 32).sum(1)
    print("max error", (out - want).abs().max().item())
