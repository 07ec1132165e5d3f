"""The interpreter labels each operation with the tile it works on, also in a persistent kernel that walks its
tiles with a plain ``for tile_id in range(gl.program_id(0), num_tiles, gl.num_programs(0))`` loop (no scheduler
aggregate): before, every op kept the cluster index as its tile."""

from __future__ import annotations

import torch
import triton.experimental.gluon.language as gl
from triton.experimental import gluon

from gluon_overlap.interp.launch import cpu

BLOCK = 32


@gluon.jit
def persistent_fill(out, num_tiles, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    for tile_id in range(gl.program_id(axis=0), num_tiles, gl.num_programs(axis=0)):
        offs = tile_id * BLOCK + gl.arange(0, BLOCK, layout)
        gl.store(out + offs, gl.full([BLOCK], 1.0, gl.float32, layout) * tile_id)


@gluon.jit
def counted_fill(out, num_tiles, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    start = gl.program_id(axis=0) * 0
    for j in range(start, num_tiles, 1):  # not a walk over this program's tiles
        offs = j * BLOCK + gl.arange(0, BLOCK, layout)
        gl.store(out + offs, gl.full([BLOCK], 1.0, gl.float32, layout) * j)


def _stores(result):
    return [op for op in result.trace if op.proc is not None and "store" in op.kind]


def test_a_persistent_range_loop_labels_each_iteration_with_its_tile():
    out = torch.full((7 * BLOCK,), float("nan"))
    result = cpu(persistent_fill)[(3,)](out, 7, BLOCK, num_warps=1, num_ctas=1)
    assert result.error is None and not result.hazards
    torch.testing.assert_close(out, torch.arange(7).repeat_interleave(BLOCK).float())  # each tile wrote its index
    stores = _stores(result)
    assert stores, [op.kind for op in result.trace]
    by_program = {}
    for op in stores:
        by_program.setdefault(op.proc.cluster, []).append(op.tile)
    assert by_program == {0: [0, 3, 6], 1: [1, 4], 2: [2, 5]}
    assert all(op.local is None for op in stores)  # the loop holds no cluster-local count: none is claimed


def test_another_runtime_loop_keeps_the_programs_label():
    out = torch.full((4 * BLOCK,), float("nan"))
    result = cpu(counted_fill)[(2,)](out, 4, BLOCK, num_warps=1, num_ctas=1)
    assert result.error is None
    assert {(op.proc.cluster, op.tile, op.local) for op in _stores(result)} == {(0, 0, 0), (1, 1, 0)}
