"""The launch wrapper refuses bad input and wrong devices before launching; on Blackwell it is correct.

The refusal tests run on CPU.  The correctness tests need an sm_100/sm_103 GPU and skip
elsewhere with the reason.
"""

from __future__ import annotations

import contextlib
import re
import types

import pytest
import torch

from gluon_overlap import device, kernel
from gluon_overlap.formats import random_problem
from gluon_overlap.swizzle import swizzle_scales
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, make_plan

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


def test_refuses_empty_operands():
    fp8 = torch.float8_e4m3fn
    scales = swizzle_scales(torch.zeros(256, 4, dtype=torch.uint8))
    b = torch.zeros(256, 128, dtype=fp8)
    for a, sa in [
        (torch.zeros(0, 128, dtype=fp8), torch.zeros(0, 1, 32, 4, 4, dtype=torch.uint8)),
        (torch.zeros(256, 0, dtype=fp8), torch.zeros(2, 0, 32, 4, 4, dtype=torch.uint8)),
    ]:
        with pytest.raises(ValueError, match=re.escape(f"A must be non-empty, got shape {tuple(a.shape)}")):
            kernel.validate(a, b, sa, scales, "mxfp8", "mxfp8")
    with pytest.raises(ValueError, match="B must be non-empty"):
        kernel.validate(
            b, torch.zeros(0, 128, dtype=fp8), scales, torch.zeros(0, 1, 32, 4, 4, dtype=torch.uint8), "mxfp8", "mxfp8"
        )


def test_refuses_data_that_is_not_2d(problems):
    a, b, sa, sb = raw(problems[("mxfp8", "mxfp8")])
    with pytest.raises(ValueError, match=r"A data must be 2-D \(M x K\)"):
        kernel.validate(a.reshape(1, *a.shape), b, sa, sb, "mxfp8", "mxfp8")


def test_refuses_non_contiguous_scales(problems):
    a, b, sa, sb = raw(problems[("nvfp4", "nvfp4")])
    strided = torch.zeros(*sb.shape[:-1], 2 * sb.shape[-1], dtype=sb.dtype)[..., ::2]
    assert strided.shape == sb.shape and not strided.is_contiguous()
    with pytest.raises(ValueError, match="B swizzled scales must be contiguous"):
        kernel.validate(a, b, sa, strided, "nvfp4", "nvfp4")


def misaligned(t: torch.Tensor, offset_bytes: int) -> torch.Tensor:
    """A contiguous copy of ``t`` whose data starts ``offset_bytes`` past a 64-byte boundary."""
    flat = torch.zeros(t.numel() + 64, dtype=t.dtype)
    start = (-flat.data_ptr() % 64 + offset_bytes) // t.element_size()
    out = flat[start : start + t.numel()].view(t.shape)
    out.copy_(t)
    assert out.is_contiguous() and out.data_ptr() % 64 == offset_bytes
    return out


@pytest.mark.parametrize("which", ["A", "B", "A scales", "B scales"])
def test_refuses_tma_misaligned_base_addresses(problems, which):
    """TMA needs 16-byte-aligned base addresses; a contiguous view can start anywhere."""
    tensors = dict(zip(["A", "B", "A scales", "B scales"], raw(problems[("mxfp8", "mxfp8")]), strict=True))
    tensors[which] = misaligned(tensors[which], 8)
    with pytest.raises(ValueError, match=f"{which} must start at a 16-byte-aligned address"):
        kernel.validate(*tensors.values(), "mxfp8", "mxfp8")


def test_padded_fp4_next_to_fp8_needs_32_byte_alignment(problems):
    a, b, sa, sb = raw(problems[("mxfp8", "mxfp4")])
    with pytest.raises(ValueError, match="B is loaded as padded fp4 next to an fp8 operand and must start at a 32-"):
        kernel.validate(a, misaligned(b, 16), sa, sb, "mxfp8", "mxfp4")
    # 16 bytes suffice for fp8 data and for fp4 data of an fp4 x fp4 pair: only the device is left to refuse.
    with pytest.raises(ValueError, match="CUDA tensors"):
        kernel.validate(misaligned(a, 16), b, sa, sb, "mxfp8", "mxfp4")
    a4, b4, sa4, sb4 = raw(problems[("mxfp4", "mxfp4")])
    with pytest.raises(ValueError, match="CUDA tensors"):
        kernel.validate(a4, misaligned(b4, 16), sa4, sb4, "mxfp4", "mxfp4")


def fake_cuda_tensor(index: int = 0, address: int = 1 << 20):
    """Stands in for a CUDA tensor in check_placement (which reads only .device and .data_ptr())."""
    return types.SimpleNamespace(device=torch.device("cuda", index), data_ptr=lambda: address)


@pytest.mark.parametrize(
    "cap, words", [((12, 0), "aborts the whole process"), ((9, 0), "Hopper has no TMEM"), (None, "no CUDA GPU")]
)
def test_placement_refuses_cuda_tensors_on_other_gpus(monkeypatch, cap, words):
    """The path validate takes for CUDA tensors: the GPU they live on is asked, and refused."""
    asked = []
    monkeypatch.setattr(device, "capability", lambda dev=None: asked.append(dev) or cap)
    tensors = {name: fake_cuda_tensor(1) for name in ("A", "B", "A scales", "B scales")}
    with pytest.raises(ValueError, match=words):
        kernel.check_placement(tensors, set())
    assert asked == [torch.device("cuda", 1)]


def test_placement_accepts_blackwell_and_returns_the_device(monkeypatch):
    monkeypatch.setattr(device, "capability", lambda dev=None: (10, 0))
    tensors = {name: fake_cuda_tensor(0) for name in ("A", "B", "A scales", "B scales")}
    assert kernel.check_placement(tensors, {"B"}) == torch.device("cuda", 0)
    monkeypatch.setattr(device, "capability", lambda dev=None: pytest.fail("check_gpu=False must not ask the GPU"))
    assert kernel.check_placement(tensors, set(), check_gpu=False) == torch.device("cuda", 0)


def test_placement_refuses_two_gpus():
    tensors = {"A": fake_cuda_tensor(0), "B": fake_cuda_tensor(1)}
    with pytest.raises(ValueError, match=r"one device, got \['cuda:0', 'cuda:1'\]"):
        kernel.check_placement(tensors, set())


def test_infer_format_refuses_non_tensors():
    with pytest.raises(ValueError, match="operand data must be a torch.Tensor, got list"):
        kernel.infer_format([[1]], torch.zeros(1, dtype=torch.uint8))
    with pytest.raises(ValueError, match="operand scales must be a torch.Tensor"):
        kernel.matmul_raw(torch.zeros(2, 2, dtype=torch.uint8), torch.zeros(2, 2, dtype=torch.uint8), None, None)


# --- the launch, with the kernel and the GPU faked --------------------------------------------
@pytest.mark.parametrize(
    "tiles, sms, clusters", [(1024, 148, 74), (1024, 132, 66), (3, 148, 3), (1, 148, 1), (0, 148, 1), (5, 1, 1)]
)
def test_launch_grid_is_min_of_tiles_and_sm_pairs(tiles, sms, clusters):
    assert kernel.launch_grid(tiles, sms) == (clusters,)


def test_matmul_raw_launches_the_persistent_2cta_grid_on_the_tensors_device(problems, monkeypatch):
    """Everything matmul_raw does after validation, with the GPU faked: the grid, num_ctas, the
    argument list (plan last) and the device made current around the launch."""
    p = problems[("nvfp4", "nvfp4")]  # 256 x 264 output: 1 x 2 tiles
    events = []

    class FakeKernel:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                events.append(("launch", grid, args, kwargs))

            return launch

    @contextlib.contextmanager
    def fake_device(dev):
        events.append(("enter", dev))
        yield
        events.append(("exit", dev))

    monkeypatch.setattr(kernel, "check_placement", lambda tensors, padded, check_gpu=True: None)
    monkeypatch.setattr(kernel, "mma_scaled_warp_specialized_kernel", FakeKernel())
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda dev: types.SimpleNamespace(multi_processor_count=148)
    )
    monkeypatch.setattr(torch.cuda, "device", fake_device)
    c = kernel.matmul_raw(*raw(p), overlap=True)
    assert c.shape == (256, 264) and c.dtype == torch.float16 and c.device == p.a.data.device
    assert [e[0] for e in events] == ["enter", "launch", "exit"]
    assert events[0][1] == p.a.data.device
    _, grid, args, kwargs = events[1]
    assert grid == (2,) and kwargs == {"num_ctas": 2}
    assert args[5:8] == (256, 264, 384)
    assert args[-1] == make_plan("nvfp4", "nvfp4", overlap=True)
    assert [d.block_shape for d in args[:5]] == [
        [256, 128],
        [256, 128],
        [256, 32],
        [1, 2, 4, 2, 256],
        [1, 2, 4, 2, 256],
    ]
    assert args[2].base is c


# --- compile-time consistency checks (the frontend refuses before any LLVM work) -----------------
def test_drain_columns_are_the_seeds():
    """The seed slices subtile ``EPILOGUE_BLOCK_N * (7 - s)`` (even tiles) / ``EPILOGUE_BLOCK_N * s`` (odd)
    at step ``s`` with overlap on, and ``EPILOGUE_BLOCK_N * s`` always with overlap off."""
    on, off = make_plan("nvfp4", "nvfp4", overlap=True), make_plan("nvfp4", "nvfp4", overlap=False)
    for s in range(8):
        assert kernel.drain_column(on, 0, s) == 32 * (7 - s)
        assert kernel.drain_column(on, 1, s) == 32 * s
        assert kernel.drain_column(off, 0, s) == kernel.drain_column(off, 1, s) == 32 * s


def test_descriptors_that_disagree_with_the_constexprs_fail_to_compile():
    import triton
    from triton.backends.compiler import GPUTarget

    from gluon_overlap.compiler import compile as gc

    src = gc.gluon_source(gc.Variant("nvfp4", "nvfp4", True))
    assert "fp16[256,32]" in src.signature["c_desc"]
    src.signature["c_desc"] = src.signature["c_desc"].replace("fp16[256,32]", "fp16[256,64]")
    with pytest.raises(Exception, match=r"the C block descriptor has block shape \[256, 64\]"):
        triton.compile(src, target=GPUTarget("cuda", 100, 32), options={"num_ctas": 2})


# --- the device check --------------------------------------------------------------------
@pytest.mark.parametrize(
    "cap, words",
    [
        (None, "no CUDA GPU"),
        ((9, 0), "Hopper has no TMEM"),
        ((12, 0), "aborts the whole process"),
        ((12, 1), "sm_121"),
        ((8, 0), "sm_80"),
        ((10, 1), "not one the kernel is built for"),
    ],
)
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
blackwell = pytest.mark.skipif(
    not device.is_blackwell(), reason="needs an sm_100/sm_103 GPU (B200, GB200, B300, GB300)"
)


@pytest.mark.blackwell
@blackwell
@pytest.mark.parametrize("overlap", [False, True], ids=["off", "on"])
@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=PAIR_IDS)
def test_matches_the_float_reference_at_8192(pair, overlap):
    p = random_problem(8192, 8192, 8192, *pair, seed=0, device="cuda")
    c = kernel.matmul(
        p.a, p.b, overlap=overlap, a_scale_swizzled=p.a_scale_swizzled, b_scale_swizzled=p.b_scale_swizzled
    )
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
