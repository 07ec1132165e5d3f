"""Holes in the API that took bad input silently: each now refuses it (or follows its documented rule).

References: TMA's out-of-bounds rule written out independently (a zero-padded copy of the
tensor, sliced), e4m3 / e2m1 arithmetic for the nvfp4 flush range, and the hardware's 512 TMEM
columns.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from gluon_overlap import formats as F
from gluon_overlap import kernel
from gluon_overlap import swizzle as S
from gluon_overlap.tmem import TmemPlan


# --- QuantizedTensor ------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt, k", [("mxfp8", 48), ("mxfp4", 48), ("nvfp4", 40), ("mxfp8", 31)])
def test_quantized_tensor_refuses_k_that_its_scales_cannot_cover(fmt, k):
    spec = F.get_format(fmt)
    data = torch.zeros(4, k // spec.elements_per_byte, dtype=spec.torch_element_dtype)
    scales = torch.zeros(4, k // spec.vec_size, dtype=spec.torch_scale_dtype)  # floor: one scale too few
    with pytest.raises(ValueError, match=f"K={k // spec.elements_per_byte * spec.elements_per_byte}.*multiple of"):
        F.QuantizedTensor(fmt, data, scales)


def test_quantized_tensor_refuses_non_tensors():
    with pytest.raises(ValueError, match="scales must be a torch.Tensor, got list"):
        F.QuantizedTensor("mxfp8", torch.zeros(2, 32, dtype=torch.float8_e4m3fn), [[127], [127]])


def test_quantize_refuses_meta_tensors_up_front():
    with pytest.raises(ValueError, match="'meta' device"):
        F.quantize(torch.empty(4, 32, device="meta"), "mxfp8")


# --- nvfp4's tiny blocks: the documented range ---------------------------------------------------------
def _nvfp4_block(amax: float) -> F.QuantizedTensor:
    x = torch.zeros(1, 16, dtype=torch.float64)
    x[0, 0] = amax
    return F.quantize(x, "nvfp4")


def test_nvfp4_tiny_blocks_survive_only_above_two_to_the_minus_11():
    smallest_scale = 2.0**-9  # the smallest positive e4m3
    # amax / 2**-9 = 0.25 is a tie between e2m1's 0 and 0.5: ties go to even (0), the block is flushed
    assert float(_nvfp4_block(2.0**-11).dequantize().abs().max()) == 0.0
    assert float(_nvfp4_block(4.0e-4).dequantize().abs().max()) == 0.0
    for amax in (2.0**-11 * 1.01, 1e-3, 5e-3, 6 * 2.0**-10):
        q = _nvfp4_block(amax)
        assert float(q.scale_values()[0, 0]) == smallest_scale  # amax / 6 rounded to 0: the bump rule
        assert float(q.dequantize().abs().max()) > 0
    # above 6 x 2**-10 the scale rounds to 2**-9 or more by itself
    assert float(_nvfp4_block(6 * 2.0**-10 * 1.5).scale_values()[0, 0]) >= smallest_scale
    doc = F.__doc__
    assert "4.9e-4" in doc and "5.9e-3" in doc and "all zeros" in doc


# --- swizzle.tma_block: TMA's out-of-bounds rule ---------------------------------------------------------
def _tma_reference(view: torch.Tensor, off_mn: int, off_k: int, box_mn: int, box_k: int) -> torch.Tensor:
    """Place the view inside a zero canvas with a margin, then slice: out-of-bounds reads are zeros."""
    pad = 300
    raw = view.view(torch.uint8)
    canvas = torch.zeros(1, raw.shape[1] + 2 * pad, raw.shape[2] + 2 * pad, 2, 256, dtype=torch.uint8)
    canvas[:, pad : pad + raw.shape[1], pad : pad + raw.shape[2]] = raw
    return canvas[:, pad + off_mn : pad + off_mn + box_mn, pad + off_k : pad + off_k + box_k]


@pytest.mark.parametrize(
    "off_mn, off_k, box_mn, box_k",
    [
        (0, 0, 2, 2),
        (-1, 0, 2, 1),
        (0, -1, 1, 2),
        (-2, -3, 3, 4),
        (2, 1, 2, 3),
        (-5, 0, 2, 1),
        (0, 7, 1, 1),
        (-1, -1, 6, 6),
    ],
)
def test_tma_block_follows_the_out_of_bounds_rule(off_mn, off_k, box_mn, box_k):
    scales = torch.randint(0, 256, (300, 12), dtype=torch.uint8, generator=torch.Generator().manual_seed(3))
    view = S.tma_view_5d(S.swizzle_scales(scales))  # (1, 3, 3, 2, 256)
    got = S.tma_block(view, off_mn, off_k, box_mn, box_k)
    assert torch.equal(got.view(torch.uint8), _tma_reference(view, off_mn, off_k, box_mn, box_k))


@pytest.mark.parametrize(
    "args, match",
    [
        ((0, 0, 0, 1), "rep_mn=0"),
        ((0, 0, 1, 257), "rep_k=257"),
        ((2**31, 0, 1, 1), "signed 32-bit"),
        ((0, 1.5, 1, 1), "rep_k_offset"),
    ],
)
def test_tma_block_refuses_impossible_boxes(args, match):
    view = S.tma_view_5d(S.swizzle_scales(torch.zeros(128, 4, dtype=torch.uint8)))
    with pytest.raises(ValueError, match=match):
        S.tma_block(view, *args)


# --- TmemPlan ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cols", [600, 1024, 300, 513])
def test_tmem_plan_refuses_more_columns_than_an_sm_has_or_no_alloc_size(cols):
    with pytest.raises(ValueError, match=f"tmem_cols={cols} must be one of"):
        TmemPlan("nvfp4", "nvfp4", 256, tmem_cols=cols)


# --- the kernel wrapper: strides of size-1 dimensions ---------------------------------------------------
def test_wrapper_refuses_a_one_row_operand_with_an_unaligned_row_stride():
    problem = F.random_problem(256, 256, 128, "mxfp8", "mxfp8")
    a = torch.zeros(2, 200, dtype=torch.float8_e4m3fn)[:1, :128]  # stride (200, 1): 200 bytes per row
    assert a.is_contiguous()  # torch ignores the stride of a size-1 dimension ...
    a_scales = S.swizzle_scales(torch.full((1, 4), 127, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"row stride that is a multiple of 16 bytes \(got 200 bytes\)"):
        kernel.validate(a, problem.b.data, a_scales, problem.b_scale_swizzled, "mxfp8", "mxfp8")


def test_wrapper_accepts_a_one_row_operand_with_an_aligned_row_stride():
    problem = F.random_problem(256, 256, 128, "mxfp8", "mxfp8")
    a = torch.zeros(2, 256, dtype=torch.float8_e4m3fn)[:1, :128]  # 256-byte rows: TMA-aligned
    a_scales = S.swizzle_scales(torch.full((1, 4), 127, dtype=torch.uint8))
    with pytest.raises(ValueError, match="tensors are on 'cpu'"):  # everything else is fine
        kernel.validate(a, problem.b.data, a_scales, problem.b_scale_swizzled, "mxfp8", "mxfp8")


def test_wrapper_refuses_swizzled_scales_with_odd_size_one_strides():
    problem = F.random_problem(256, 256, 128, "mxfp8", "mxfp8")
    # the packed-block shape of 256 x 128 mxfp8 A, with an 8-byte stride on its size-1 REP_K dimension
    odd = torch.zeros(2, 1, 32, 4, 4, dtype=torch.uint8).as_strided((2, 1, 32, 4, 4), (512, 8, 16, 4, 1))
    assert odd.is_contiguous()
    with pytest.raises(ValueError, match="dense strides"):
        kernel.validate(problem.a.data, problem.b.data, odd, problem.b_scale_swizzled, "mxfp8", "mxfp8")


# --- the nanobind leak report under `| head` ------------------------------------------------------------
def test_the_exit_handler_silences_stderr_even_when_stdout_and_stderr_are_gone(tmp_path):
    """What ``... | head`` does: the reader leaves, the final flush of stdout fails; a report written to
    fd 2 after the handler (as nanobind's is, at interpreter shutdown) must not appear."""
    script = tmp_path / "child.py"
    script.write_text(
        textwrap.dedent("""
        import atexit, os, sys, time
        atexit.register(lambda: os.write(2, b"nanobind: leaked 3 instances\\n"))  # runs after the handler
        from gluon_overlap._nanobind import quiet_leak_report_at_exit
        quiet_leak_report_at_exit()
        sys.stdout.reconfigure(line_buffering=False, write_through=False)
        time.sleep(0.5)  # the reader has left by now
        sys.stdout.write("x" * 100)  # buffered: flushed at exit, into a pipe nobody reads
        sys.stderr.close()  # the old CLI did this on BrokenPipeError
    """)
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | {"PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # the reader leaves at once
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "leaked" not in err and "Traceback" not in err


# --- emulate()'s breaks and random_problem's seed ------------------------------------------------------------
@pytest.mark.parametrize(
    "breaks, words",
    [
        ("early-release", "must be a list of break names, e.g. ['early-release']"),
        (5, "breaks=5 must be a list of break names"),
        ([["x"]], "break=['x'] is not a known break switch"),
        ([None], "break=None is not a known break switch"),
    ],
)
def test_emulate_refuses_breaks_that_are_not_a_list_of_names(breaks, words):
    """A single name given as a string was taken for the set of its letters ("break='y' is not known")."""
    from gluon_overlap.emulate.runs import emulate

    problem = F.random_problem(256, 256, 256, "mxfp8", "mxfp8")
    with pytest.raises(ValueError) as caught:
        emulate(problem, breaks=breaks)
    assert words in str(caught.value)


@pytest.mark.parametrize(
    "seed, words",
    [
        (-1, "seed=-1 must be non-negative"),
        (2**63, "must be below"),
        (1.5, "seed=1.5 must be an integer"),
        (True, "must be an integer"),
    ],
)
def test_random_problem_takes_the_seeds_the_command_line_takes(seed, words):
    with pytest.raises(ValueError, match=words):
        F.random_problem(256, 256, 256, "mxfp8", "mxfp8", seed=seed)
