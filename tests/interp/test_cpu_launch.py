"""``cpu(kernel)[grid](*args, num_warps=...)``: the CPU launch reads like the GPU one (Triton's launch syntax)."""

from __future__ import annotations

import pytest
import torch
import triton.experimental.gluon.language as gl
from triton.experimental import gluon

from gluon_overlap.interp.launch import cpu


@gluon.jit
def axpy_kernel(x, y, out, n, alpha, BLOCK: gl.constexpr = 128):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    mask = offs < n
    gl.store(out + offs, alpha * gl.load(x + offs, mask=mask) + gl.load(y + offs, mask=mask), mask=mask)


def _data(n=1000):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, generator=g), torch.randn(n, generator=g), torch.full((n,), float("nan"))


def test_positional_and_keyword_arguments_and_a_default_constexpr():
    x, y, out = _data()
    result = cpu(axpy_kernel)[(8,)](x, y, out, 1000, 2.0, num_warps=4)
    assert result.error is None and not result.hazards and result.deadlock is None
    torch.testing.assert_close(out, (2.0 * x.double() + y.double()).float())  # against float64
    out2 = torch.full_like(out, float("nan"))
    result = cpu(axpy_kernel)[(4,)](x, y, out2, n=1000, alpha=2.0, BLOCK=256, seed=5)
    assert result.error is None and torch.equal(out2, out)


def test_a_grid_function_gets_the_launch_arguments():
    x, y, out = _data(300)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (triton_cdiv(meta["n"], meta["BLOCK"]),)

    result = cpu(axpy_kernel)[grid](x, y, out, 300, 1.0, BLOCK=64)
    assert result.error is None and seen["BLOCK"] == 64 and seen["n"] == 300
    assert torch.equal(out, x + y)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def test_bad_launches_are_clear_errors():
    x, y, out = _data()
    with pytest.raises(ValueError, match="missing kernel argument"):
        cpu(axpy_kernel)[(1,)](x, y, out)
    with pytest.raises(ValueError, match="given twice"):
        cpu(axpy_kernel)[(1,)](x, y, out, 10, 1.0, n=10)
    with pytest.raises(ValueError, match="takes 6 arguments"):
        cpu(axpy_kernel)[(1,)](x, y, out, 10, 1.0, 128, 7)
    with pytest.raises(ValueError, match="grid"):
        cpu(axpy_kernel)[(0,)](x, y, out, 10, 1.0)
    with pytest.raises(ValueError, match="@gluon.jit kernel"):
        cpu(lambda: None)
