"""A script that exits with status 3 after a clean launch (written for this suite)."""

import os

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def fill_kernel(out_ptr, value, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    gl.store(out_ptr + gl.arange(0, BLOCK, layout), gl.full([BLOCK], value, gl.float32, layout))


out = torch.zeros(128, device="cuda")
fill_kernel[(1, )](out, 2.5, BLOCK=128)
assert bool((out == 2.5).all())
os._exit(3)
