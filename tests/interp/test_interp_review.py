"""An outside reviewer's kernels (tests/interp/interp_review_kernels.py, written in the upstream Blackwell tutorials'
idioms) run on the CPU executor and match torch; the same kernels cross-compile for sm_100a; a variant the
compiler's LLVM lowering refuses (scales tcgen05_copy'd from a layout with no tcgen05.cp form) is refused by
the executor's precheck with the compiler's reason and the kernel line; edits that break the synchronisation
are caught."""

from __future__ import annotations

import importlib.util
import inspect

import interp_review_kernels as R  # tests/support is on sys.path (tests/conftest.py)
import pytest
import torch
import triton.experimental.gluon.language as gl
from _cross_compile import assert_compiled, compile_all  # tests/support is on sys.path (tests/conftest.py)
from triton.experimental.gluon.nvidia.blackwell import TensorDescriptor

from gluon_overlap.compiler import compile as gc
from gluon_overlap.interp.launch import launch


def _ok(res) -> None:
    assert res.error is None, res.error
    assert res.deadlock is None, str(res.deadlock)
    assert not res.hazards, "\n".join(str(h) for h in res.hazards)
    assert res.ok


def _desc(t: torch.Tensor, block: list[int], dtype) -> TensorDescriptor:
    return TensorDescriptor.from_tensor(t, block, gl.NVMMASharedLayout.get_default_for(block, dtype))


def _empty(shape, dtype, device):
    return torch.empty(*shape, dtype=dtype, device=device)


def _rand(shape, dtype, device):
    return torch.randn(*shape).to(dtype) if device == "cpu" else _empty(shape, dtype, device)


def _edited(tmp_path, old: str, new: str, name: str):
    """A copy of the review kernels with one source edit (the edit must apply)."""
    src = inspect.getsource(R)
    assert old in src, old
    path = tmp_path / f"{name}.py"
    path.write_text(src.replace(old, new))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# =====================================================================================
# argument builders (device="meta" for the cross-compile)
# =====================================================================================
def add_args(device="cpu", n=1000):
    return (_rand([n], torch.float32, device), _rand([n], torch.float32, device), torch.zeros(n, device=device), n, 256)


def copy_args(device="cpu"):
    x = _rand([128, 96], torch.float16, device)
    out = torch.zeros_like(x)
    return x, out, (_desc(x, [64, 32], gl.float16), _desc(out, [64, 32], gl.float16))


M, N, KD = 256, 128, 256


def matmul_operands(device="cpu"):
    a, b = _rand([M, KD], torch.float16, device), _rand([N, KD], torch.float16, device)
    c = torch.zeros(M, N, dtype=torch.float16, device=device)
    return a, b, c, (_desc(a, [128, 64], gl.float16), _desc(b, [64, 64], gl.float16), _desc(c, [128, 64], gl.float16))


def matmul_args(which: str, device="cpu"):
    a, b, c, (ad, bd, cd) = matmul_operands(device)
    tail = {"pipelined": (KD, 3), "persistent": (M, N, KD), "ws": (M, N, KD, 3)}[which]
    return a, b, c, (ad, bd, cd) + tail


def _fp16_matmul_close(a, b, c, k: int = KD) -> None:
    """fp32 accumulation (error at most K * 2^-24 * |A||B|^T) then one fp16 rounding (2^-11 relative)."""
    want = a.double() @ b.double().T
    bound = k * 2.0**-24 * (a.double().abs() @ b.double().abs().T) + want.abs() * 2.0**-11 + 2.0**-24
    err = (c.double() - want).abs()
    assert bool((err <= bound).all()), f"max excess {(err - bound).max().item()}"


SC_K = 256


def scaled_args(device="cpu", plain_view=False):
    a, b = _rand([128, SC_K], torch.float8_e4m3fn, device), _rand([128, SC_K], torch.float8_e4m3fn, device)
    if device == "cpu":
        sa = torch.randint(120, 134, (128, SC_K // 32), dtype=torch.uint8)
        sb = torch.randint(120, 134, (128, SC_K // 32), dtype=torch.uint8)
        c = torch.zeros(128, 128)
    else:
        sa = sb = _empty([128, SC_K // 32], torch.uint8, device)
        c = _empty([128, 128], torch.float32, device)
    return (a, b, c, sa, sb), (
        _desc(a, [128, 128], gl.float8e4nv),
        _desc(b, [128, 128], gl.float8e4nv),
        c,
        shuffle_scales(sa),
        shuffle_scales(sb),
        SC_K,
        plain_view,
    )


def shuffle_scales(s: torch.Tensor) -> torch.Tensor:
    """[128, K/32] scales -> per K step (4 groups) a [32, 16] block: [r0, 4 * r1 + c] = s[32 * r1 + r0, c]."""
    if s.device.type == "meta":
        return s
    return s.view(4, 32, s.shape[1] // 4, 4).permute(2, 1, 0, 3).contiguous()


# =====================================================================================
# executor vs torch
# =====================================================================================
def test_elementwise_add_with_a_masked_tail():
    x, y, out, n, block = add_args()
    _ok(launch(R.add_kernel, (triton_cdiv(n, block),), (x, y, out, n, block), num_ctas=1, num_warps=4))
    assert torch.equal(out, x + y)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def test_tma_copy_with_expect_wait_and_store_wait():
    x, out, args = copy_args()
    _ok(launch(R.tma_copy_kernel, (2, 3), args, num_ctas=1, num_warps=4))
    assert torch.equal(out, x)


@pytest.mark.parametrize("which, grid", [("pipelined", (2, 2)), ("persistent", (3,)), ("ws", (1,))])
@pytest.mark.parametrize("seed", [0, 1])
def test_tcgen05_matmuls_match_torch(which, grid, seed):
    """A 3-stage ring (per-slot phases, MMAs releasing slots), a persistent tile loop over gl.num_programs
    (4 tiles over 3 programs: phases carried across tiles), and a warp-specialized persistent matmul (load /
    MMA workers, epilogue default partition; one program walks all 4 tiles, so both TMEM accumulators are
    reused)."""
    torch.manual_seed(seed)
    a, b, c, args = matmul_args(which)
    _ok(launch(getattr(R, f"{which}_matmul_kernel"), grid, args, num_ctas=1, num_warps=4, seed=seed))
    _fp16_matmul_close(a, b, c)


def subtiled_args(device="cpu"):
    a, b = _rand([128, 128], torch.float16, device), _rand([128, 128], torch.float16, device)
    c = torch.zeros(128, 128, dtype=torch.float16, device=device)
    return (
        a,
        b,
        c,
        (_desc(a, [128, 64], gl.float16), _desc(b, [128, 64], gl.float16), _desc(c, [128, 32], gl.float16), 128, 4),
    )


def test_subtiled_epilogue_through_tmem_slices_and_two_store_buffers():
    torch.manual_seed(4)
    a, b, c, args = subtiled_args()
    _ok(launch(R.subtiled_epilogue_kernel, (1,), args, num_ctas=1, num_warps=4))
    _fp16_matmul_close(a, b, c, 128)


def test_mma_scaled_with_scales_copied_from_shared_into_tmem():
    torch.manual_seed(3)
    (a, b, c, sa, sb), args = scaled_args()
    _ok(launch(R.scaled_copy_kernel, (1,), args, num_ctas=1, num_warps=4))
    ea = torch.exp2(sa.double() - 127).repeat_interleave(32, 1)
    eb = torch.exp2(sb.double() - 127).repeat_interleave(32, 1)
    a64, b64 = a.double() * ea, b.double() * eb
    want = a64 @ b64.T
    bound = SC_K * 2.0**-24 * (a64.abs() @ b64.abs().T) + 1e-30
    assert bool(((c.double() - want).abs() <= bound).all())


def test_scales_copied_from_a_layout_without_a_tcgen05_cp_form_are_refused():
    """Triton's ConvertTritonGPUToLLVM refuses this tcgen05_copy (the verifiers accept it): the executor's
    precheck says so with the compiler's words and the kernel line, and nothing runs."""
    _, args = scaled_args(plain_view=True)
    res = launch(R.scaled_copy_kernel, (1,), args, num_ctas=1, num_warps=4)
    assert not res.ok and res.error is not None
    assert "failed to find valid tcgen05.copy layout" in res.error
    assert "interp_review_kernels.py" in res.error and "tcgen05_copy(a_view, a_scale_tmem)" in res.error


# =====================================================================================
# edits that break the synchronisation are caught
# =====================================================================================
def test_an_epilogue_that_never_frees_its_accumulator_deadlocks(tmp_path):
    mod = _edited(tmp_path, "        mbarrier.arrive(acc_empty.index(buf), count=1)\n", "", "no_acc_release")
    _, _, _, args = matmul_args("ws")
    res = launch(mod.ws_matmul_kernel, (1,), args, num_ctas=1, num_warps=4)  # 4 tiles: accumulators reused
    assert res.error is None and res.deadlock is not None, res


def test_reusing_the_store_buffer_without_store_wait_is_a_hazard(tmp_path):
    mod = _edited(
        tmp_path, "        tma.store_wait(0)  # the previous tile's store has left c_smem\n", "", "no_store_wait"
    )
    _, _, _, args = matmul_args("persistent")
    res = launch(mod.persistent_matmul_kernel, (3,), args, num_ctas=1, num_warps=4)
    assert res.hazards, res
    assert any("c_smem.store" in str(h) for h in res.hazards), [str(h) for h in res.hazards]


def test_letting_two_stores_fly_over_two_buffers_is_a_hazard(tmp_path):
    """store_wait(2) with two buffers: the store that read a buffer two slices ago may still be reading it."""
    mod = _edited(
        tmp_path, "        tma.store_wait(1)  # the store", "        tma.store_wait(2)  # the store", "two_in_flight"
    )
    _, _, _, args = subtiled_args()
    res = launch(mod.subtiled_epilogue_kernel, (1,), args, num_ctas=1, num_warps=4)
    assert res.hazards, res
    assert any("c_bufs.index(i % 2).store" in str(h) for h in res.hazards), [str(h) for h in res.hazards]


# =====================================================================================
# the same kernels cross-compile for sm_100a
# =====================================================================================
#: each case's kernel and its arguments, built when the compile fixture runs (not while pytest collects: the
#: arguments are tensors, 1.4 s to make)
_COMPILE_CASES = {
    "add": lambda meta: (R.add_kernel, add_args(meta)),
    "tma_copy": lambda meta: (R.tma_copy_kernel, copy_args(meta)[2]),
    "pipelined": lambda meta: (R.pipelined_matmul_kernel, matmul_args("pipelined", meta)[3]),
    "persistent": lambda meta: (R.persistent_matmul_kernel, matmul_args("persistent", meta)[3]),
    "ws": lambda meta: (R.ws_matmul_kernel, matmul_args("ws", meta)[3]),
    "subtiled": lambda meta: (R.subtiled_epilogue_kernel, subtiled_args(meta)[3]),
    "scaled_copy": lambda meta: (R.scaled_copy_kernel, scaled_args(meta)[1]),
}
CASES = list(_COMPILE_CASES)


@pytest.fixture(scope="module")
def compiled():
    return compile_all((name, *make("meta"), 1) for name, make in _COMPILE_CASES.items())


@pytest.mark.parametrize("name", CASES)
def test_the_review_kernels_cross_compile_for_sm100a(compiled, name):
    assert_compiled(compiled[name], name)


def test_the_refused_scale_layout_also_fails_the_real_compile():
    """The precheck's refusal agrees with a full compile (so it is the compiler's, not an invented rule)."""
    with pytest.raises(Exception, match="PassManager::run failed|tcgen05.copy"):
        gc.cross_compile(R.scaled_copy_kernel, tuple(scaled_args("meta", plain_view=True)[1]), num_ctas=1, num_warps=4)
