"""The CPU executor refuses what the compiler refuses for sm_100a (issue 27): a ``gl.constexpr`` assigned again in a
``static_range`` loop, and a run-time value where ``.slice`` needs a constant -- the two natural mistakes of the
epilogue exercise, which the executor once ran "clean" and only the sm_100a compile refused, 20-80 s later.  Its
pre-launch check (twin/precheck.py) asks Triton's own frontend; these pin that it does, in a step kernel's
epilogue, in the warp-specialized kernel's, and in a kernel of a few lines."""

from __future__ import annotations

import torch
import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory

from gluon_overlap.interp.launch import launch


@gluon.jit
def halves_annotated(out_ptr, WIDTH: gl.constexpr):
    tmem = allocate_tensor_memory(gl.float32, [128, 2 * WIDTH], TensorMemoryLayout([128, 2 * WIDTH], col_stride=1))
    for h in gl.static_range(2):
        col: gl.constexpr = h * WIDTH
        part = tmem.slice(col, WIDTH).load()  # noqa: F841


@gluon.jit
def halves_plain(out_ptr, WIDTH: gl.constexpr):
    tmem = allocate_tensor_memory(gl.float32, [128, 2 * WIDTH], TensorMemoryLayout([128, 2 * WIDTH], col_stride=1))
    for h in gl.static_range(2):
        col = h * WIDTH
        part = tmem.slice(col, WIDTH).load()  # noqa: F841


def test_a_reassigned_constexpr_is_refused_before_the_run():
    result = launch(halves_annotated, grid=(1,), args=(torch.empty(1), 32), num_ctas=1)
    assert result.error.startswith("CompilerRefusal") and "constexpr cannot be reassigned" in result.error
    assert "col: gl.constexpr = h * WIDTH" in result.error and not result.trace


def test_a_runtime_slice_start_is_refused_before_the_run():
    result = launch(halves_plain, grid=(1,), args=(torch.empty(1), 32), num_ctas=1)
    assert result.error.startswith("CompilerRefusal") and "start must be a constant int" in result.error
    assert "tmem.slice(col, WIDTH)" in result.error and not result.trace


def test_the_warp_specialized_epilogue_with_a_runtime_column_is_refused():
    from gluon_overlap.emulate.kernels import edited_copy
    from gluon_overlap.emulate.runs import emulate
    from gluon_overlap.formats import random_problem

    old = (
        "                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), SUBTILE_COLS)\n"
        "                store_n = off_n + drain_column(TMEM_PLAN, 0, step)"
    )
    new = (
        "                col = step * SUBTILE_COLS + i * 0\n"
        "                acc_sub = acc_tmem.slice(col, SUBTILE_COLS)\n"
        "                store_n = off_n + col"
    )
    problem = random_problem(256, 512, 256, "nvfp4", "nvfp4", seed=1)
    run = emulate(problem, clusters=1, kernel=str(edited_copy(old, new)))
    assert run.refused is not None and "start must be a constant int" in run.refused
