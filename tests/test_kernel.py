"""The launch wrapper refuses bad input and wrong devices before launching; on Blackwell it is correct.

The refusal tests run on CPU.  The correctness tests need an sm_100/sm_103 GPU and skip
elsewhere with the reason.
"""

from __future__ import annotations

import pytest
import torch

from gluon_overlap import device, kernel
from gluon_overlap.formats import random_problem
from gluon_overlap.swizzle import swizzle_scales
from gluon_overlap.tmem import SEED_FORMAT_PAIRS

PAIR_IDS = [f"{a}-{b}" for a, b in SEED_FORMAT_PAIRS]


@pytest.fixture(scope="module")
def problems() -> dict:
    """A small CPU problem per seed pair (256 x 264 x 384: N a multiple of 8, K of 128)."""
    return {pair: random_problem(256, 264, 384, *pair, seed=1) for pair in SEED_FORMAT_PAIRS}


def raw(p):
    return p.a.data, p.b.data, p.a_scale_swizzled, p.b_scale_swizzled


# --- everything valid except the device -------------------------------------------------
@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=PAIR_IDS)
def test_valid_cpu_input_is_refused_only_for_being_on_cpu(problems, pair):
    with pytest.raises(ValueError, match="tensors are on 'cpu'; the kernel needs CUDA tensors"):
        kernel.validate(*raw(problems[pair]), *pair)


@pytest.mark.parametrize("overlap", [False, True])
def test_matmul_refuses_cpu_quantized_tensors_before_launching(problems, overlap):
    p = problems[("nvfp4", "nvfp4")]
    with pytest.raises(ValueError, match="CUDA tensors"):
        kernel.matmul(p.a, p.b, overlap=overlap)
    with pytest.raises(ValueError, match="CUDA tensors"):
        kernel.matmul_raw(*raw(p), overlap=overlap)


def test_matmul_refuses_non_quantized_operands(problems):
    p = problems[("mxfp8", "mxfp8")]
    with pytest.raises(ValueError, match="QuantizedTensor"):
        kernel.matmul(p.a.data, p.b)


# --- dtypes, shapes, layouts ---------------------------------------------------------------
def test_refuses_mismatched_k():
    a = random_problem(256, 256, 256, "mxfp8", "mxfp8", seed=0)
    b = random_problem(256, 256, 384, "mxfp8", "mxfp8", seed=0)
    with pytest.raises(ValueError, match="A has K=256 but B has K=384"):
        kernel.validate(a.a.data, b.b.data, a.a_scale_swizzled, b.b_scale_swizzled, "mxfp8", "mxfp8")


def test_refuses_wrong_data_dtype(problems):
    a, b, sa, sb = raw(problems[("mxfp8", "mxfp8")])
    with pytest.raises(ValueError, match="A data has dtype torch.float16; mxfp8 needs torch.float8_e4m3fn"):
        kernel.validate(a.to(torch.float16), b, sa, sb, "mxfp8", "mxfp8")


def test_refuses_wrong_scale_dtype(problems):
    a, b, sa, sb = raw(problems[("nvfp4", "nvfp4")])
    with pytest.raises(ValueError, match="B scales have dtype torch.uint8; nvfp4 needs torch.float8_e4m3fn"):
        kernel.validate(a, b, sa, sb.view(torch.uint8), "nvfp4", "nvfp4")


def test_refuses_unswizzled_scales(problems):
    p = problems[("mxfp4", "mxfp4")]
    with pytest.raises(ValueError, match="un-swizzled"):
        kernel.validate(p.a.data, p.b.data, p.a.scales, p.b_scale_swizzled, "mxfp4", "mxfp4")


def test_refuses_scales_swizzled_for_another_shape(problems):
    p = problems[("mxfp8", "mxfp8")]
    wrong = swizzle_scales(torch.zeros(129, 12, dtype=torch.uint8))  # 2 row blocks instead of 3
    with pytest.raises(ValueError, match=r"packed-block layout of a 264 x 384 mxfp8 operand is \(3, 3, 32, 4, 4\)"):
        kernel.validate(p.a.data, p.b.data, p.a_scale_swizzled, wrong, "mxfp8", "mxfp8")


def test_refuses_k_not_a_multiple_of_128():
    p = random_problem(256, 256, 192, "mxfp8", "mxfp8", seed=0)
    with pytest.raises(ValueError, match="K=192 must be a multiple of 128"):
        kernel.validate(*raw(p), "mxfp8", "mxfp8")


def test_refuses_n_not_a_multiple_of_8():
    p = random_problem(256, 260, 256, "nvfp4", "nvfp4", seed=0)
    with pytest.raises(ValueError, match="N=260 must be a multiple of 8"):
        kernel.validate(*raw(p), "nvfp4", "nvfp4")


def test_refuses_non_contiguous_data(problems):
    a, b, sa, sb = raw(problems[("mxfp8", "mxfp8")])
    strided = torch.empty(a.shape[0], a.shape[1] * 2, dtype=a.dtype)[:, ::2]
    with pytest.raises(ValueError, match="contiguous"):
        kernel.validate(strided, b, sa, sb, "mxfp8", "mxfp8")


def test_refuses_format_pairs_outside_the_seed(problems):
    a, b, sa, sb = raw(problems[("mxfp8", "mxfp4")])
    with pytest.raises(ValueError, match="not one the kernel supports"):
        kernel.validate(b, a, sb, sa, "mxfp4", "mxfp8")
    with pytest.raises(ValueError, match="not a known format"):
        kernel.validate(a, b, sa, sb, "fp8", "mxfp4")


def test_refuses_a_format_that_disagrees_with_the_dtypes(problems):
    a, b, sa, sb = raw(problems[("mxfp4", "mxfp4")])
    with pytest.raises(ValueError, match="nvfp4 needs torch.float8_e4m3fn"):
        kernel.validate(a, b, sa, sb, "nvfp4", "nvfp4")


def test_refuses_tensors_on_different_devices(problems):
    a, b, sa, sb = raw(problems[("mxfp8", "mxfp8")])
    with pytest.raises(ValueError, match="one device"):
        kernel.validate(a, b.to("meta"), sa, sb, "mxfp8", "mxfp8")


def test_refuses_non_bool_overlap(problems):
    with pytest.raises(ValueError, match="overlap"):
        kernel.validate(*raw(problems[("mxfp8", "mxfp8")]), "mxfp8", "mxfp8", overlap=1)


def test_infer_format_follows_the_seed_convention(problems):
    for (a_fmt, b_fmt), p in problems.items():
        assert kernel.infer_format(p.a.data, p.a_scale_swizzled) == a_fmt
        assert kernel.infer_format(p.b.data, p.b_scale_swizzled) == b_fmt
    with pytest.raises(ValueError, match="float16"):
        kernel.infer_format(torch.zeros(2, 2, dtype=torch.float16), torch.zeros(2, dtype=torch.uint8))


def test_expected_swizzled_shape_is_what_swizzle_produces(problems):
    for (a_fmt, _), p in problems.items():
        m, k = p.a.shape
        assert kernel.expected_swizzled_shape(m, k, a_fmt) == tuple(swizzle_scales(p.a.scales).shape)


# --- the device check --------------------------------------------------------------------
@pytest.mark.parametrize("cap, words", [
    (None, "no CUDA GPU"),
    ((9, 0), "Hopper has no TMEM"),
    ((12, 0), "aborts the whole process"),
    ((12, 1), "sm_121"),
    ((8, 0), "sm_80"),
    ((10, 1), "not one the kernel is built for"),
])
def test_validate_refuses_other_gpus(problems, monkeypatch, cap, words):
    """With CUDA tensors (faked by skipping the tensor-device check) only sm_100/sm_103 pass."""
    monkeypatch.setattr(device, "capability", lambda dev=None: cap)
    with pytest.raises(ValueError, match=words):
        kernel.check_device()


@pytest.mark.parametrize("cap", [(10, 0), (10, 3)])
def test_check_device_accepts_sm100_and_sm103(monkeypatch, cap):
    monkeypatch.setattr(device, "capability", lambda dev=None: cap)
    kernel.check_device()


# --- on a Blackwell GPU --------------------------------------------------------------------
blackwell = pytest.mark.skipif(not device.is_blackwell(),
                               reason="needs an sm_100/sm_103 GPU (B200, GB200, B300, GB300)")


@pytest.mark.blackwell
@blackwell
@pytest.mark.parametrize("overlap", [False, True], ids=["off", "on"])
@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=PAIR_IDS)
def test_matches_the_float_reference_at_8192(pair, overlap):
    p = random_problem(8192, 8192, 8192, *pair, seed=0, device="cuda")
    c = kernel.matmul(p.a, p.b, overlap=overlap, a_scale_swizzled=p.a_scale_swizzled,
                      b_scale_swizzled=p.b_scale_swizzled)
    assert c.dtype == torch.float16 and c.shape == (8192, 8192)
    torch.testing.assert_close(p.reference, c.to(torch.float32), atol=2e-3, rtol=1e-3)


@pytest.mark.blackwell
@blackwell
@pytest.mark.parametrize("overlap", [False, True], ids=["off", "on"])
@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("m, n, k", [(1000, 776, 384), (2500, 4104, 640), (4000, 264, 1152)])
def test_matches_the_reference_at_ragged_shapes(pair, overlap, m, n, k):
    """M and N not multiples of 256 (TMA zero-fills loads, clips stores), K not a multiple of BLOCK_K;
    2500 x 4104 has 170 tiles: more than one per cluster on any B200/B300, so both windows and the
    overlap hand-off are exercised."""
    p = random_problem(m, n, k, *pair, seed=3, device="cuda")
    c = kernel.matmul(p.a, p.b, overlap=overlap)  # swizzles the scales itself
    torch.testing.assert_close(p.reference, c.to(torch.float32), atol=2e-3, rtol=1e-3)


@pytest.mark.blackwell
@blackwell
def test_seed_calling_convention_gives_the_same_result():
    p = random_problem(1024, 1024, 1024, "mxfp8", "mxfp4", seed=5, device="cuda")
    c1 = kernel.matmul_raw(*raw(p), overlap=True)
    c2 = kernel.matmul(p.a, p.b, overlap=False)
    torch.testing.assert_close(c1, c2, atol=0, rtol=0)
