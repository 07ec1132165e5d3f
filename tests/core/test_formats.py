"""gluon_overlap.formats against independent references: triton.tools.mxfp, torch's float8 dtypes, hand values."""

from __future__ import annotations

import math

import pytest
import torch
from triton.tools.mxfp import MXFP4Tensor, MXScaleTensor, fp8e8m0_to_float32

from gluon_overlap import formats as F
from gluon_overlap import tmem

# all 16 e2m1 codes, checked by hand: bit 3 sign, bits 2..1 exponent (bias 1), bit 0 mantissa
E2M1_BY_HAND = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- specs -------------------------------------------------------------------


def test_format_specs_match_the_seed_and_the_tmem_plan():
    assert F.FORMAT_NAMES == ("mxfp8", "mxfp4", "nvfp4")
    mx8, mx4, nv4 = (F.get_format(n) for n in F.FORMAT_NAMES)
    assert (mx8.element, mx8.scale, mx8.vec_size, mx8.elements_per_byte, mx8.element_max) == (
        "e4m3",
        "e8m0",
        32,
        1,
        448.0,
    )
    assert (mx4.element, mx4.scale, mx4.vec_size, mx4.elements_per_byte, mx4.element_max) == (
        "e2m1",
        "e8m0",
        32,
        2,
        6.0,
    )
    assert (nv4.element, nv4.scale, nv4.vec_size, nv4.elements_per_byte, nv4.element_max) == (
        "e2m1",
        "e4m3",
        16,
        2,
        6.0,
    )
    assert (mx8.torch_element_dtype, mx8.torch_scale_dtype) == (torch.float8_e4m3fn, torch.uint8)
    assert (mx4.torch_element_dtype, mx4.torch_scale_dtype) == (torch.uint8, torch.uint8)
    assert (nv4.torch_element_dtype, nv4.torch_scale_dtype) == (torch.uint8, torch.float8_e4m3fn)
    assert [s.bits_per_value for s in (mx8, mx4, nv4)] == [8.25, 4.25, 4.5]
    # element_max is the largest finite value of the element dtype
    assert mx8.element_max == torch.finfo(torch.float8_e4m3fn).max


@pytest.mark.parametrize("bad", ["fp8", "MXFP4", "", None, 4])
def test_unknown_format_is_a_value_error(bad):
    with pytest.raises(ValueError, match="not a known format.*mxfp8"):
        F.get_format(bad)
    with pytest.raises(ValueError, match="format"):
        F.quantize(torch.zeros(1, 32), bad)


# --- element and scale codecs --------------------------------------------------


def test_decode_e2m1_all_16_codes_by_hand_and_against_triton():
    codes = torch.arange(16, dtype=torch.uint8)
    got = F.decode_e2m1(codes)
    assert got.dtype == torch.float32
    assert got.tolist() == E2M1_BY_HAND
    assert torch.signbit(got).tolist() == [c >= 8 for c in range(16)]  # code 8 is -0.0
    ref = MXFP4Tensor(size=(16,), device="cpu")
    ref.data = codes
    assert torch.equal(got, ref.to(torch.float32))
    # every e2m1 value is exact in e4m3 (what the seed relies on for mxfp8)
    assert torch.equal(got.to(torch.float8_e4m3fn).to(torch.float32), got)


def test_decode_e8m0_edge_codes_by_hand():
    got = F.decode_e8m0(torch.tensor([0, 1, 126, 127, 128, 254, 255], dtype=torch.uint8))
    assert got[:6].tolist() == [math.ldexp(1, -127), math.ldexp(1, -126), 0.5, 1.0, 2.0, math.ldexp(1, 127)]
    assert math.isnan(got[6])


def test_decode_e8m0_all_codes_against_torch_and_triton():
    codes = torch.arange(256, dtype=torch.uint8)
    got = F.decode_e8m0(codes)
    torch.testing.assert_close(got, fp8e8m0_to_float32(codes), rtol=0, atol=0, equal_nan=True)
    if hasattr(torch, "float8_e8m0fnu"):
        torch.testing.assert_close(
            got, codes.view(torch.float8_e8m0fnu).to(torch.float32), rtol=0, atol=0, equal_nan=True
        )
    # float64 arithmetic reference
    want = torch.tensor([math.ldexp(1.0, c - 127) for c in range(255)], dtype=torch.float64)
    assert torch.equal(got[:255].double(), want)


def test_encode_e2m1_ties_to_even_and_saturation_by_hand():
    # value -> expected magnitude: ties go to the even code (mantissa bit 0)
    cases = {
        0.25: 0.0,
        0.26: 0.5,
        0.75: 1.0,
        1.25: 1.0,
        1.75: 2.0,
        2.5: 2.0,
        3.5: 4.0,
        5.0: 4.0,
        5.01: 6.0,
        6.0: 6.0,
        7.0: 6.0,
        1e30: 6.0,
        float("inf"): 6.0,
        0.1: 0.0,
    }
    x = torch.tensor(list(cases), dtype=torch.float32)
    for sign in (1.0, -1.0):
        got = F.decode_e2m1(F.encode_e2m1(sign * x))
        assert got.tolist() == [sign * v for v in cases.values()]


def test_encode_e2m1_matches_triton_mxfp4tensor():
    g = _gen(1)
    x = torch.randn(4096, generator=g) * 3
    x = torch.cat([x, torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -5.0, 0.0, -0.0, 9.0])])
    assert torch.equal(F.encode_e2m1(x), MXFP4Tensor(data=x.clone()).data)


def test_encode_e2m1_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        F.encode_e2m1(torch.tensor([1.0, float("nan")]))


def _e4m3_grid_by_bits() -> torch.Tensor:
    """All 127 finite non-negative e4m3 values from explicit bit arithmetic (bias 7, no infinities)."""
    vals = []
    for code in range(0x7F):
        e, m = code >> 3, code & 7
        vals.append(math.ldexp(m / 8, -6) if e == 0 else math.ldexp(1 + m / 8, e - 7))
    return torch.tensor(vals, dtype=torch.float64)


def test_encode_e4m3_matches_torch_cast_on_midpoints_and_random_values():
    grid = _e4m3_grid_by_bits()
    assert torch.equal(grid, torch.arange(0x7F, dtype=torch.uint8).view(torch.float8_e4m3fn).double())
    mids = (grid[1:] + grid[:-1]) / 2
    x = torch.cat(
        [
            grid,
            mids,
            torch.randn(4000, generator=_gen(2), dtype=torch.float64) * 50,
            torch.tensor([460.0, 464.0, 1e6, 2.0**-10, 2.0**-11, 3 * 2.0**-11]),
        ]
    )
    x = torch.cat([x, -x]).to(torch.float32)
    got = F.encode_e4m3(x)
    assert got.dtype == torch.float8_e4m3fn
    want = x.clamp(-448, 448).to(torch.float8_e4m3fn)
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))


def test_encode_e4m3_specials():
    got = F.encode_e4m3(torch.tensor([float("inf"), -float("inf"), float("nan")])).to(torch.float32)
    assert got[:2].tolist() == [448.0, -448.0] and math.isnan(got[2])


def test_pack_fp4_matches_triton_nibble_order():
    codes = torch.randint(0, 16, (5, 64), generator=_gen(3), dtype=torch.uint8)
    t = MXFP4Tensor(size=(5, 64), device="cpu")
    t.data = codes
    packed = F.pack_fp4(codes)
    assert packed.shape == (5, 32) and packed.dtype == torch.uint8
    assert torch.equal(packed, t.to_packed_tensor(dim=1))
    # by hand: element 0 in the low nibble, element 1 in the high nibble
    assert F.pack_fp4(torch.tensor([[0x1, 0xF]], dtype=torch.uint8)).tolist() == [[0xF1]]
    assert torch.equal(F.unpack_fp4(packed), t.unpack_packed_tensor(packed, 1, (5, 64)))


def test_pack_fp4_rejects_bad_codes():
    with pytest.raises(ValueError, match="even"):
        F.pack_fp4(torch.zeros(2, 3, dtype=torch.uint8))
    with pytest.raises(ValueError, match="<= 15"):
        F.pack_fp4(torch.full((2, 2), 16, dtype=torch.uint8))
    with pytest.raises(ValueError, match="uint8"):
        F.pack_fp4(torch.zeros(2, 2, dtype=torch.int64))


# --- quantize: scale rules ----------------------------------------------------------


def _blocks_with_amax(amax: torch.Tensor, vec: int) -> torch.Tensor:
    """One row per amax: the amax in the middle of a block of smaller values."""
    rows = torch.linspace(-0.5, 0.5, vec, dtype=torch.float32)[None, :] * amax[:, None]
    rows[:, vec // 2] = amax
    return rows


@pytest.mark.parametrize("fmt", ["mxfp8", "mxfp4"])
def test_mx_scale_is_ocp_floor_log2_amax_minus_emax_against_triton(fmt):
    spec = F.get_format(fmt)
    amax = torch.exp2(torch.rand(500, generator=_gen(4)) * 60 - 30)
    amax = torch.cat([amax, torch.tensor([1.0, 6.0, 448.0, 2.0**-30, 0.75, 2.0**100])])
    q = F.quantize(_blocks_with_amax(amax, spec.vec_size), fmt)
    # triton's MXScaleTensor encodes floor(log2(v)) + 127; the shared exponent subtracts emax (8 or 2)
    want = MXScaleTensor(data=amax).data.int() - spec.element_emax
    assert torch.equal(q.scales[:, 0].int(), want)
    # hand values: amax 1.0 -> 2**-8 (mxfp8, code 119) or 2**-2 (mxfp4, code 125)
    assert int(q.scales[500, 0]) == {"mxfp8": 119, "mxfp4": 125}[fmt]


def test_mx_scale_clamps_to_the_e8m0_range():
    tiny = torch.full((1, 32), 2.0**-140)  # float32 subnormal: floor(log2) - emax < -127
    huge = torch.full((1, 32), 3.0e38)
    q = F.quantize(torch.cat([tiny, huge]), "mxfp4")
    assert q.scales[:, 0].tolist() == [0, 127 + 127 - 2]
    torch.testing.assert_close(q.dequantize()[1], torch.full((32,), 3.0e38), rtol=0.34, atol=0)


def test_nvfp4_scale_is_amax_over_6_rounded_to_e4m3():
    amax = torch.exp2(torch.rand(500, generator=_gen(5)) * 16 - 6)
    q = F.quantize(_blocks_with_amax(amax, 16), "nvfp4")
    want = (amax.double() / 6).to(torch.float8_e4m3fn)
    assert torch.equal(q.scales[:, 0].view(torch.uint8), want.view(torch.uint8))


def test_nvfp4_scale_saturates_and_never_underflows_to_zero():
    x = torch.zeros(3, 16)
    x[0, 0] = 1e6  # amax / 6 > 448: scale saturates at 448, elements saturate at 6
    x[1, 0] = 1e-4  # amax / 6 rounds to e4m3 zero: the smallest subnormal 2**-9 is used instead
    x[1, 1] = -2e-3
    q = F.quantize(x, "nvfp4")
    s = q.scales.to(torch.float32)[:, 0].tolist()
    assert s == [448.0, 2.0**-9, 1.0]  # row 2 is all zero: scale 1.0
    d = q.dequantize()
    assert d[0, 0] == 448.0 * 6
    assert d[1, 1] == -(2.0**-9) * 1.0  # -2e-3 / 2**-9 = -1.024 -> -1
    assert torch.equal(d[2], torch.zeros(16))


@pytest.mark.parametrize("fmt, code", [("mxfp8", 127), ("mxfp4", 127), ("nvfp4", 0x38)])
def test_all_zero_block_gets_unit_scale(fmt, code):
    x = torch.zeros(2, 64)
    x[1, :] = -0.0
    q = F.quantize(x, fmt)
    assert (q.scales.view(torch.uint8) == code).all()
    assert torch.equal(q.dequantize(), torch.zeros(2, 64))


# --- quantize: whole pipeline against independent paths ---------------------------


def _heavy_tailed(mn: int, k: int, seed: int) -> torch.Tensor:
    g = _gen(seed)
    return torch.randn(mn, k, generator=g) * torch.exp(torch.randn(mn, k, generator=g) * 2)


@pytest.mark.parametrize("fmt", F.FORMAT_NAMES)
def test_quantize_matches_independent_path(fmt):
    spec = F.get_format(fmt)
    x = _heavy_tailed(16, 128, seed=6)
    q = F.quantize(x, fmt)
    assert q.shape == (16, 128) and q.format == fmt
    blocks = x.reshape(16, -1, spec.vec_size)
    amax = blocks.abs().amax(-1)
    if spec.scale == "e8m0":
        scale = fp8e8m0_to_float32(MXScaleTensor(data=amax).data - spec.element_emax)
        assert torch.equal(q.scales, MXScaleTensor(data=amax).data - spec.element_emax)
    else:
        scale = (amax.double() / 6).to(torch.float8_e4m3fn).to(torch.float32)
    scaled = (blocks.double() / scale.double()[..., None]).reshape(16, 128)
    if spec.element == "e4m3":
        want = scaled.float().clamp(-448, 448).to(torch.float8_e4m3fn)
        assert torch.equal(q.data.view(torch.uint8), want.view(torch.uint8))
    else:
        want = MXFP4Tensor(data=scaled.float()).to_packed_tensor(dim=1)
        assert torch.equal(q.data, want)
    deq = q.dequantize()
    assert deq.dtype == torch.float32
    assert torch.equal(
        deq,
        (MXFP4Tensor(data=scaled.float()).to(torch.float32) if spec.element == "e2m1" else want.to(torch.float32))
        * scale.repeat_interleave(spec.vec_size, 1),
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_quantize_accepts_other_float_dtypes(dtype):
    x = torch.randn(4, 64, generator=_gen(7))
    for fmt in F.FORMAT_NAMES:
        assert torch.equal(
            F.quantize(x.to(dtype), fmt).dequantize(), F.quantize(x.to(dtype).to(torch.float32), fmt).dequantize()
        )


def test_quantize_errors_shrink_with_more_bits():
    x = torch.randn(64, 256, generator=_gen(8))
    err = {f: (F.quantize(x, f).dequantize() - x).abs().mean().item() for f in F.FORMAT_NAMES}
    assert err["mxfp8"] < err["nvfp4"] < err["mxfp4"]


def test_quantized_tensor_bytes_and_shape():
    x = torch.randn(128, 256, generator=_gen(9))
    assert [F.quantize(x, f).nbytes for f in F.FORMAT_NAMES] == [
        128 * 256 + 128 * 8,
        128 * 128 + 128 * 8,
        128 * 128 + 128 * 16,
    ]
    assert F.quantize(x, "nvfp4").data.shape == (128, 128)


# --- bad input ------------------------------------------------------------------------


def test_quantize_bad_input_messages():
    with pytest.raises(ValueError, match=r"K=48 .*multiple of .*vec_size=32"):
        F.quantize(torch.zeros(2, 48), "mxfp4")
    with pytest.raises(ValueError, match=r"K=0"):
        F.quantize(torch.zeros(2, 0), "nvfp4")
    with pytest.raises(ValueError, match=r"floating-point dtype.*torch.int32"):
        F.quantize(torch.zeros(2, 32, dtype=torch.int32), "mxfp8")
    with pytest.raises(ValueError, match=r"floating-point dtype.*torch.bool"):
        F.quantize(torch.zeros(2, 32, dtype=torch.bool), "mxfp8")
    with pytest.raises(ValueError, match=r"2-D.*rank 1"):
        F.quantize(torch.zeros(32), "mxfp8")
    with pytest.raises(ValueError, match=r"2-D.*rank 3"):
        F.quantize(torch.zeros(2, 2, 32), "mxfp8")
    with pytest.raises(ValueError, match=r"torch.Tensor.*list"):
        F.quantize([[0.0] * 32], "mxfp8")
    with pytest.raises(ValueError, match=r"nonfinite='skip'"):
        F.quantize(torch.zeros(2, 32), "mxfp8", nonfinite="skip")


def test_quantized_tensor_validates_its_fields():
    with pytest.raises(ValueError, match="data must be a 2-D torch.uint8"):
        F.QuantizedTensor("mxfp4", torch.zeros(2, 16), torch.zeros(2, 1, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"scales must be .*shape \(2, 2\)"):
        F.QuantizedTensor("nvfp4", torch.zeros(2, 16, dtype=torch.uint8), torch.zeros(2, 1, dtype=torch.uint8))


# --- NaN / Inf ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("fmt", F.FORMAT_NAMES)
def test_nonfinite_input_raises_by_default(fmt, bad):
    x = torch.ones(3, 64)
    x[2, 40] = bad
    with pytest.raises(ValueError, match=r"1 non-finite value\(s\) \(first x\[2, 40\]"):
        F.quantize(x, fmt)


@pytest.mark.parametrize("fmt", F.FORMAT_NAMES)
def test_nonfinite_propagate_gives_the_block_a_nan_scale(fmt):
    spec = F.get_format(fmt)
    x = _heavy_tailed(3, 64, seed=10)
    clean = F.quantize(x, fmt).dequantize()
    x[2, 40] = float("inf")
    x[0, 3] = float("nan")
    q = F.quantize(x, fmt, nonfinite="propagate")
    d = q.dequantize()
    vec = spec.vec_size
    bad = torch.zeros(3, 64, dtype=torch.bool)
    bad[0, :vec] = True  # block of x[0, 3]
    bad[2, 40 // vec * vec : (40 // vec + 1) * vec] = True  # block of x[2, 40]
    assert torch.equal(torch.isnan(d), bad)
    assert torch.equal(d[~bad], clean[~bad])
    nan_code = {"e8m0": 255, "e4m3": 0x7F}[spec.scale]
    assert int(q.scales.view(torch.uint8)[0, 0]) == nan_code


def test_float64_beyond_float32_range_counts_as_nonfinite():
    x = torch.ones(1, 32, dtype=torch.float64)
    x[0, 5] = 1e300
    with pytest.raises(ValueError, match="non-finite"):
        F.quantize(x, "mxfp8")


# --- random operands and problems ---------------------------------------------------------


@pytest.mark.parametrize("fmt", F.FORMAT_NAMES)
def test_random_quantized_like_the_seed(fmt):
    spec = F.get_format(fmt)
    q = F.random_quantized(256, 512, fmt, generator=_gen(11))
    assert q.shape == (256, 512)
    scales = q.scale_values()
    # MXScaleTensor.random(low=1/128, high=2) draws exponents -7..1
    assert set(torch.log2(scales).unique().tolist()) == set(range(-7, 2))
    values = q.element_values()
    assert set(values.unique().tolist()) == {abs(v) * s for v in E2M1_BY_HAND for s in (1, -1)}
    assert q.data.dtype == spec.torch_element_dtype and q.data.shape == (256, 512 // spec.elements_per_byte)
    # deterministic in the generator's seed, different for another seed
    assert torch.equal(q.dequantize(), F.random_quantized(256, 512, fmt, generator=_gen(11)).dequantize())
    assert not torch.equal(q.dequantize(), F.random_quantized(256, 512, fmt, generator=_gen(12)).dequantize())


def test_random_quantized_rejects_bad_sizes():
    with pytest.raises(ValueError, match=r"k=40 must be a multiple of .*vec_size=32"):
        F.random_quantized(4, 40, "mxfp8", generator=_gen())
    with pytest.raises(ValueError, match=r"mn=0 must be a positive int"):
        F.random_quantized(0, 32, "mxfp8", generator=_gen())


@pytest.mark.parametrize("a_format, b_format", tmem.SEED_FORMAT_PAIRS)
def test_random_problem_reference_is_exact(a_format, b_format):
    from gluon_overlap.swizzle import unswizzle_scales

    p = F.random_problem(200, 136, 256, a_format, b_format, seed=3)
    assert (p.m, p.n, p.k) == (200, 136, 256)
    assert p.a_ref.shape == (200, 256) and p.b_ref.shape == (136, 256)
    assert torch.equal(unswizzle_scales(p.a_scale_swizzled, 200, p.a.scales.shape[1]), p.a.scales)
    assert torch.equal(unswizzle_scales(p.b_scale_swizzled, 136, p.b.scales.shape[1]), p.b.scales)
    # independent dequantization: triton's e2m1 / e8m0 decoders, torch's float8
    for q, ref in ((p.a, p.a_ref), (p.b, p.b_ref)):
        spec = q.spec
        if spec.element == "e2m1":
            t = MXFP4Tensor(size=q.shape, device="cpu")
            t.data = t.unpack_packed_tensor(q.data, 1, q.shape)
            elements = t.to(torch.float32)
        else:
            elements = q.data.to(torch.float32)
        scale = fp8e8m0_to_float32(q.scales) if spec.scale == "e8m0" else q.scales.to(torch.float32)
        assert torch.equal(ref, elements * scale.repeat_interleave(spec.vec_size, 1))
    # every product and partial sum is exact in float64: compare with an exact integer computation
    unit = 2.0**-16  # e2m1 step 0.5 times scales >= 2**-7 on both sides
    ai, bi = (p.a_ref.double() / unit**0.5).round().long(), (p.b_ref.double() / unit**0.5).round().long()
    exact = (ai @ bi.T).double() * unit
    assert torch.equal(p.reference, exact.float())
    assert p.reference.dtype == torch.float32


def test_random_problem_is_deterministic_in_seed():
    p1 = F.random_problem(128, 128, 128, "mxfp8", "mxfp4", seed=5)
    p2 = F.random_problem(128, 128, 128, "mxfp8", "mxfp4", seed=5)
    p3 = F.random_problem(128, 128, 128, "mxfp8", "mxfp4", seed=6)
    assert torch.equal(p1.reference, p2.reference) and torch.equal(p1.a_scale_swizzled, p2.a_scale_swizzled)
    assert not torch.equal(p1.reference, p3.reference)


def test_random_problem_bad_input():
    with pytest.raises(ValueError, match="a_format='fp8'"):
        F.random_problem(128, 128, 128, "fp8", "mxfp4")
    with pytest.raises(ValueError, match=r"k=48 must be a multiple of b_format='mxfp4'"):
        F.random_problem(128, 128, 48, "nvfp4", "mxfp4")
    with pytest.raises(ValueError, match=r"n=-1"):
        F.random_problem(128, -1, 128, "nvfp4", "nvfp4")


def test_reference_matmul_is_float64_accumulated():
    a = torch.tensor([[1.0, 2.0**-30, -1.0]])
    b = torch.tensor([[1.0, 1.0, 1.0]])
    assert F.reference_matmul(a, b).item() == 2.0**-30  # float32 accumulation gives 0 here
    a = torch.tensor([[2.0**30, 1.0, -(2.0**30)]])
    assert F.reference_matmul(a, b).item() == 1.0
    with pytest.raises(ValueError, match="same K"):
        F.reference_matmul(torch.zeros(2, 3), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="2-D"):
        F.reference_matmul(torch.zeros(3), torch.zeros(2, 3))
