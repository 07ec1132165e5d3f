"""Hypothesis properties of quantize / dequantize / pack (modest example counts: CI runs on 2 cores)."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gluon_overlap import formats as F

FAST = settings(max_examples=60, deadline=None)

# the element grids, built independently of the package: e2m1 by hand, e4m3 from torch's float8 dtype
E2M1_GRID = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)
E4M3_GRID = torch.arange(0x7F, dtype=torch.uint8).view(torch.float8_e4m3fn).to(torch.float64)
GRID = {"e2m1": E2M1_GRID, "e4m3": E4M3_GRID}

finite_f32 = st.floats(min_value=-(2.0**100), max_value=2.0**100, allow_nan=False, allow_infinity=False, width=32)


@st.composite
def blocks(draw, fmt: str):
    """A [rows, vec] float32 matrix; each row's values span a random binade window (some with zeros)."""
    vec = F.get_format(fmt).vec_size
    rows = draw(st.integers(1, 3))
    center = draw(st.integers(-40, 40))
    vals = draw(st.lists(st.floats(-1.0, 1.0, allow_nan=False, width=32), min_size=rows * vec, max_size=rows * vec))
    x = torch.tensor(vals, dtype=torch.float32).reshape(rows, vec) * 2.0**center
    if draw(st.booleans()):
        x[0, draw(st.integers(0, vec - 1))] = draw(finite_f32)
    return x


def _half_step_bound(y: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """Half the gap between the two grid points around each |y| (y inside the grid's range)."""
    i = (torch.searchsorted(grid, y, right=True) - 1).clamp(0, grid.numel() - 2)
    return (grid[i + 1] - grid[i]) / 2


@FAST
@given(data=st.data(), fmt=st.sampled_from(F.FORMAT_NAMES))
def test_error_within_half_a_step_of_the_blocks_grid(data, fmt):
    spec = F.get_format(fmt)
    x = data.draw(blocks(fmt))
    q = F.quantize(x, fmt)
    deq = q.dequantize().double()
    scale = q.scale_values().double().repeat_interleave(spec.vec_size, 1)
    assert torch.all(scale > 0)
    x64 = x.double()
    y = x64.abs() / scale  # exact: the scale is a power of two or an e4m3 value ... up to float64 rounding
    inside = y <= spec.element_max
    bound = _half_step_bound(y.clamp(max=spec.element_max), GRID[spec.element]) * scale
    err = (deq - x64).abs()
    assert torch.all(err[inside] <= bound[inside] * (1 + 1e-12))
    # outside the grid's range: saturation to +-element_max * scale, sign kept
    sat = spec.element_max * scale * torch.sign(x64)
    assert torch.equal(deq[~inside], sat[~inside])
    if spec.scale == "e8m0":
        # the OCP rule: amax / scale lies in [2**emax, 2**(emax + 1)) unless the e8m0 range clamped the scale
        amax = x64.abs().reshape(x.shape[0], -1, spec.vec_size).amax(-1)
        ratio = amax / q.scale_values().double()
        clamped = (q.scales == 0) | (q.scales == 254) | (amax == 0)
        ok = (ratio >= 2.0**spec.element_emax) & (ratio < 2.0 ** (spec.element_emax + 1))
        assert torch.all(ok | clamped)


@FAST
@given(st.data())
def test_pack_unpack_round_trip(data):
    rows, half_k = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 8))
    codes = data.draw(st.lists(st.integers(0, 15), min_size=rows * half_k * 2, max_size=rows * half_k * 2))
    codes = torch.tensor(codes, dtype=torch.uint8).reshape(rows, 2 * half_k)
    packed = F.pack_fp4(codes)
    assert packed.shape == (rows, half_k)
    assert torch.equal(F.unpack_fp4(packed), codes)
    assert torch.equal(F.pack_fp4(F.unpack_fp4(packed)), packed)


@st.composite
def on_grid(draw, fmt: str):
    """Values ``element * scale`` exactly on a block's grid, with the block max at the element maximum
    (so that quantize picks that same scale), plus arbitrary codes for mxfp4 (whose grid nests)."""
    spec = F.get_format(fmt)
    vec = spec.vec_size
    grid = GRID[spec.element]
    idx = draw(st.lists(st.integers(0, grid.numel() - 1), min_size=vec, max_size=vec))
    signs = draw(st.lists(st.sampled_from([1.0, -1.0]), min_size=vec, max_size=vec))
    elements = grid[idx] * torch.tensor(signs, dtype=torch.float64)
    if fmt != "mxfp4" or draw(st.booleans()):
        elements[draw(st.integers(0, vec - 1))] = spec.element_max * draw(st.sampled_from([1.0, -1.0]))
    if spec.scale == "e8m0":
        scale = 2.0 ** draw(st.integers(-100, 100))
    else:
        scale = float(E4M3_GRID[draw(st.integers(1, 0x7E))])
    return (elements * scale).to(torch.float32)[None, :]


@FAST
@given(data=st.data(), fmt=st.sampled_from(F.FORMAT_NAMES))
def test_dequantize_quantize_is_exact_on_the_grid(data, fmt):
    x = data.draw(on_grid(fmt))
    deq = F.quantize(x, fmt).dequantize()
    assert torch.equal(deq, x)


@FAST
@given(x=st.lists(finite_f32, min_size=32, max_size=32), fmt=st.sampled_from(F.FORMAT_NAMES))
def test_quantize_is_idempotent(x, fmt):
    t = torch.tensor(x, dtype=torch.float32)[None, :]
    once = F.quantize(t, fmt).dequantize()
    assert torch.all(torch.isfinite(once))
    # the block max re-quantizes to the top of its binade (mx) or to 6 x scale (nvfp4): same scale, same values
    assert torch.equal(F.quantize(once, fmt).dequantize(), once)
