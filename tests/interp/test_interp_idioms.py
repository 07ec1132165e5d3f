"""Kernels in the upstream Gluon tutorials' idioms (tests/interp/interp_kernels.py) run on the CPU executor and match
torch; the same kernels cross-compile for sm_100a (so they are valid Triton 3.9 Gluon).

Each kernel runs once per case on small shapes; the cross-compiles are grouped in one module fixture (cached on
disk in TRITON_CACHE_DIR by Triton itself)."""

from __future__ import annotations

import interp_kernels as K  # tests/support is on sys.path (tests/conftest.py)
import pytest
import torch
import triton.experimental.gluon.language as gl
from _cross_compile import assert_compiled, compile_all  # tests/support is on sys.path (tests/conftest.py)
from triton.experimental.gluon.nvidia.blackwell import TensorDescriptor

from gluon_overlap.interp.launch import launch


def _ok(res) -> None:
    assert res.error is None, res.error
    assert res.deadlock is None, str(res.deadlock)
    assert not res.hazards, "\n".join(str(h) for h in res.hazards)
    assert res.ok


def _desc(t: torch.Tensor, block: list[int], dtype) -> TensorDescriptor:
    return TensorDescriptor.from_tensor(t, block, gl.NVMMASharedLayout.get_default_for(block, dtype))


# =====================================================================================
# pointer kernels
# =====================================================================================
def row_stats_args(device: str = "cpu", m: int = 50, n: int = 27):
    x = torch.randn(m, n, device=device) if device == "cpu" else torch.empty(m, n, device=device)
    return (
        x,
        torch.zeros(m, n, dtype=torch.float16, device=device),
        torch.zeros(m, 3, device=device),
        m,
        n,
        x.stride(0),
        32,
        32,
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_pointer_kernel_masks_broadcast_reductions_where_casts(seed):
    torch.manual_seed(seed)
    args = row_stats_args()
    x, y, stats, m, n = args[:5]
    res = launch(K.row_stats_kernel, (2,), args, num_ctas=1, num_warps=4, seed=seed)
    _ok(res)
    want_y = torch.where(x > 0, x, x * 0.25).to(torch.float16)
    assert torch.equal(y, want_y)
    x64 = x.double()
    torch.testing.assert_close(stats[:, 0].double(), x64.sum(1), rtol=1e-5, atol=1e-5)
    assert torch.equal(stats[:, 1], x.max(1).values)
    assert torch.equal(stats[:, 2], x.min(1).values)


def test_library_functions_scan_reduce_join_split():
    torch.manual_seed(2)
    x = torch.randn(64)
    bits = torch.randint(0, 1 << 20, (64,), dtype=torch.int32)
    out = torch.zeros(3 * 64 + 2)
    _ok(launch(K.scans_kernel, (1,), (x, bits, out, 64), num_ctas=1, num_warps=2))
    torch.testing.assert_close(out[:64], torch.cumsum(x, 0), rtol=1e-5, atol=1e-5)
    assert torch.equal(out[64:128], x.clamp(-0.5, 0.5))
    assert torch.equal(out[128:192], x * 2.0 - x)
    assert float(out[192]) == float(x.max())
    xor = 0
    for v in bits.tolist():
        xor ^= v
    assert int(out[193]) == xor


def test_runtime_integer_division_truncates_constexpr_floors():
    block, shift, div = 32, 20, 3
    out = torch.zeros(5 * block, dtype=torch.int32)
    res = launch(K.int_semantics_kernel, (1,), (out, shift, div, -7, block), num_ctas=1, num_warps=1)
    _ok(res)
    values = torch.arange(block, dtype=torch.int32) - shift
    assert torch.equal(out[:block], torch.div(values, div, rounding_mode="trunc"))  # arith.divsi
    assert torch.equal(out[block : 2 * block], torch.fmod(values, div))  # arith.remsi
    assert int(out[4 * block]) == -4  # constexpr -7 // 2 is Python's -4


def test_runtime_scalar_division_of_the_last_program():
    block, shift, div = 32, 20, 3
    out = torch.zeros(5 * block, dtype=torch.int32)
    _ok(launch(K.int_semantics_kernel, (1,), (out, shift, div, -7, block), num_ctas=1, num_warps=1))
    assert int(out[2 * block]) == int(torch.div(torch.tensor(-20), 3, rounding_mode="trunc")) == -6
    assert int(out[3 * block]) == int(torch.fmod(torch.tensor(-20), 3)) == -2


def test_an_unmasked_load_past_the_tensor_is_a_hazard():
    args = list(row_stats_args())
    args[3] = 64  # M larger than the tensor: the row mask no longer keeps the loads inside it
    res = launch(K.row_stats_kernel, (2,), tuple(args), num_ctas=1, num_warps=4)
    assert any(h.kind == "global-out-of-bounds" for h in res.hazards)
    assert any("interp_kernels.py" in str(h.line) for h in res.hazards)


# =====================================================================================
# TMA, mbarriers (invalidate then init), descriptor block types
# =====================================================================================
def test_tma_round_trip_with_block_type_and_reinitialized_barrier():
    x = torch.randn(128, 96).to(torch.float16)
    out = torch.zeros_like(x)
    args = (_desc(x, [64, 32], gl.float16), _desc(out, [64, 32], gl.float16), 1.5, -0.5)
    _ok(launch(K.tma_scale_kernel, (2, 3), args, num_ctas=1, num_warps=4))
    assert torch.equal(out, (x.float() * 1.5 - 0.5).to(torch.float16))


def test_a_barrier_used_after_invalidate_is_a_hazard(tmp_path):
    import importlib.util
    import inspect

    src = inspect.getsource(K).replace("    mbarrier.init(bar, count=1)  # a new life: legal after invalidate\n", "")
    path = tmp_path / "edited_kernels.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("edited_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = torch.randn(64, 32).to(torch.float16)
    out = torch.zeros_like(x)
    args = (_desc(x, [64, 32], gl.float16), _desc(out, [64, 32], gl.float16), 1.0, 0.0)
    res = launch(mod.tma_scale_kernel, (1, 1), args, num_ctas=1, num_warps=4)
    kinds = [h.kind for h in res.hazards]
    assert "barrier-used-after-invalidate" in kinds, kinds


def test_3d_descriptor_block_type_through_type():
    x = torch.randn(3, 16, 64).to(torch.float16)
    out = torch.zeros_like(x)
    layout = gl.NVMMASharedLayout.get_default_for([1, 16, 64], gl.float16)
    args = (
        TensorDescriptor.from_tensor(x, [1, 16, 64], layout),
        TensorDescriptor.from_tensor(out, [1, 16, 64], layout),
    )
    _ok(launch(K.tma_3d_copy_kernel, (3,), args, num_ctas=1, num_warps=4))
    assert torch.equal(out, x)


# =====================================================================================
# tcgen05
# =====================================================================================
MMA_DTYPES = {
    "fp16": (torch.float16, gl.float16),
    "bf16": (torch.bfloat16, gl.bfloat16),
    "tf32": (torch.float32, gl.float32),
    "fp8": (torch.float8_e4m3fn, gl.float8e4nv),
}


def mma_args(name: str, k: int = 128, device: str = "cpu", a_from_tmem: bool = False, sync: bool = False):
    tdt, gdt = MMA_DTYPES[name]
    bk = 32 if name == "tf32" else 64
    if device == "cpu":
        a = (torch.randn(128, k) * 2).to(tdt)
        b = (torch.randn(64, k) * 2).to(tdt)
    else:
        a, b = torch.empty(128, k, dtype=tdt, device=device), torch.empty(64, k, dtype=tdt, device=device)
    c = torch.zeros(128, 64, dtype=torch.float32, device=device)
    return (a, b, c), (
        _desc(a, [128, bk], gdt),
        _desc(b, [64, bk], gdt),
        _desc(c, [128, 64], gl.float32),
        k,
        a_from_tmem,
        sync,
    )


def _tf32(t: torch.Tensor) -> torch.Tensor:
    return (t.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)


@pytest.mark.parametrize("name", list(MMA_DTYPES))
def test_unscaled_tcgen05_mma_matches_torch(name):
    torch.manual_seed(3)
    (a, b, c), args = mma_args(name)
    _ok(launch(K.mma_kernel, (1,), args, num_ctas=1, num_warps=4))
    a64, b64 = (_tf32(a).double(), _tf32(b).double()) if name == "tf32" else (a.double(), b.double())
    torch.testing.assert_close(c.double(), a64 @ b64.T, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("a_from_tmem,sync", [(True, False), (False, True)], ids=["a-in-tmem", "synchronous"])
def test_tcgen05_mma_from_tmem_and_synchronous(a_from_tmem, sync):
    torch.manual_seed(4)
    (a, b, c), args = mma_args("fp16", a_from_tmem=a_from_tmem, sync=sync)
    _ok(launch(K.mma_kernel, (1,), args, num_ctas=1, num_warps=4))
    torch.testing.assert_close(c.double(), a.double() @ b.double().T, rtol=1e-5, atol=1e-3)


def test_tcgen05_copy_of_a_float32_tile_into_tmem():
    torch.manual_seed(7)
    x = torch.randn(128, 32)
    out = torch.zeros(128 * 32)
    _ok(launch(K.tmem_copy_kernel, (1,), (_desc(x, [128, 32], gl.float32), out), num_ctas=1, num_warps=4))
    assert torch.equal(out.view(128, 32), x)


def _e2m1(codes: torch.Tensor) -> torch.Tensor:
    mags = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)
    return torch.where(codes >= 8, -mags[codes % 8], mags[codes % 8])


def scaled_args(fmt: str, k: int = 256, device: str = "cpu"):
    bk = 128
    packed = fmt == "e2m1"
    cols = k // 2 if packed else k
    if device == "cpu":
        if packed:
            a_codes, b_codes = torch.randint(0, 16, (128, k)), torch.randint(0, 16, (128, k))
            a = (a_codes[:, 0::2] | (a_codes[:, 1::2] << 4)).to(torch.uint8)
            b = (b_codes[:, 0::2] | (b_codes[:, 1::2] << 4)).to(torch.uint8)
        else:
            a = torch.randn(128, k).to(torch.float8_e4m3fn)
            b = torch.randn(128, k).to(torch.float8_e4m3fn)
        a_s = torch.randint(120, 134, (128, k // 32), dtype=torch.uint8)
        b_s = torch.randint(120, 134, (128, k // 32), dtype=torch.uint8)
    else:
        dt = torch.uint8 if packed else torch.float8_e4m3fn
        a, b = torch.empty(128, cols, dtype=dt, device=device), torch.empty(128, cols, dtype=dt, device=device)
        a_s = torch.empty(128, k // 32, dtype=torch.uint8, device=device)
        b_s = torch.empty(128, k // 32, dtype=torch.uint8, device=device)
    c = torch.zeros(128, 128, dtype=torch.float32, device=device)
    gdt = gl.uint8 if packed else gl.float8e4nv
    bka = bk // 2 if packed else bk
    return (a, b, c, a_s, b_s), (
        _desc(a, [128, bka], gdt),
        _desc(b, [128, bka], gdt),
        _desc(c, [128, 128], gl.float32),
        a_s,
        b_s,
        k,
        fmt,
    )


@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
def test_tcgen05_mma_scaled_with_scales_stored_into_tmem(fmt):
    torch.manual_seed(5)
    (a, b, c, a_s, b_s), args = scaled_args(fmt)
    _ok(launch(K.mma_scaled_kernel, (1,), args, num_ctas=1, num_warps=4))
    if fmt == "e2m1":

        def dec(p):
            return _e2m1(torch.stack([p & 0xF, p >> 4], dim=-1).reshape(p.shape[0], -1).long())

        a64, b64 = dec(a), dec(b)
    else:
        a64, b64 = a.double(), b.double()
    sa = torch.pow(2.0, a_s.double() - 127).repeat_interleave(32, dim=1)
    sb = torch.pow(2.0, b_s.double() - 127).repeat_interleave(32, dim=1)
    torch.testing.assert_close(c.double(), (a64 * sa) @ (b64 * sb).T, rtol=1e-5, atol=1e-2)


def test_tcgen05_mma_scaled_with_scales_in_shared_memory():
    """Executed from shared-memory scales; Triton 3.9 accepts the call in its frontend, but its LLVM lowering
    asserts for this scale layout, so this case has no cross-compile (see docs/GLUON_API.md)."""
    torch.manual_seed(6)
    a = torch.randn(128, 128).to(torch.float8_e4m3fn)
    b = torch.randn(128, 128).to(torch.float8_e4m3fn)
    a_s = torch.randint(122, 132, (128, 4), dtype=torch.uint8)
    b_s = torch.randint(122, 132, (128, 4), dtype=torch.uint8)
    c = torch.zeros(128, 128)
    args = (_desc(a, [128, 128], gl.float8e4nv), _desc(b, [128, 128], gl.float8e4nv), c, a_s, b_s)
    _ok(launch(K.mma_smem_scales_kernel, (1,), args, num_ctas=1, num_warps=4))
    sa = torch.pow(2.0, a_s.double() - 127).repeat_interleave(32, dim=1)
    sb = torch.pow(2.0, b_s.double() - 127).repeat_interleave(32, dim=1)
    torch.testing.assert_close(c.double(), (a.double() * sa) @ (b.double() * sb).T, rtol=1e-5, atol=1e-2)


# =====================================================================================
# warp specialization, clusters
# =====================================================================================
def ws_args(device: str = "cpu", keywords: bool = False, blocks: int = 5):
    x = torch.randn(32 * blocks, 32) if device == "cpu" else torch.empty(32 * blocks, 32, device=device)
    out = torch.zeros(2, 32, device=device)
    return x, out, (_desc(x, [32, 32], gl.float32), out, blocks, 2, keywords)


@pytest.mark.parametrize("keywords", [False, True], ids=["positional", "keywords"])
def test_warp_specialized_pipeline_both_call_forms(keywords):
    x, out, args = ws_args(keywords=keywords)
    for seed in range(3):
        out.zero_()
        _ok(launch(K.ws_column_sum_kernel, (2,), args, num_ctas=1, num_warps=4, seed=seed))
        torch.testing.assert_close(out[0].double(), x.double().sum(0), rtol=1e-5, atol=1e-4)
        assert torch.equal(out[0], out[1])


def test_cluster_barriers_of_a_two_cta_launch():
    out = torch.zeros(3 * 32, dtype=torch.int32)
    _ok(launch(K.cluster_kernel, (3,), (out, 32), num_ctas=2, num_warps=4))
    assert torch.equal(out, torch.arange(3, dtype=torch.int32).repeat_interleave(32))


def test_a_cluster_barrier_in_a_one_cta_launch_is_refused_as_the_compiler_does():
    args = (torch.zeros(32, dtype=torch.int32), 32)
    # the compiler itself refuses this 2-CTA kernel at one CTA (the precheck runs it first) ...
    res = launch(K.cluster_kernel, (1,), args, num_ctas=1, num_warps=4)
    assert res.error is not None and res.error.startswith("CompilerRefusal") and "interp_kernels.py" in res.error
    # ... and the executor's own rule, without the precheck, gives the compiler's words for the barrier
    res = launch(K.cluster_kernel, (1,), args, num_ctas=1, num_warps=4, precheck=False)
    assert res.error is not None and "requires ttg.num-ctas > 1" in res.error
    assert "interp_kernels.py" in res.error and "cluster.barrier()" in res.error


def test_a_removed_tma_builtin_is_refused_with_its_replacement(tmp_path):
    import importlib.util
    import inspect

    src = inspect.getsource(K).replace(
        "tma.async_load(in_desc, [gl.program_id(0), 0, 0]",
        "tma.async_copy_global_to_shared(in_desc, [gl.program_id(0), 0, 0]",
    )
    path = tmp_path / "removed_builtin.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("removed_builtin", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = torch.zeros(1, 16, 64, dtype=torch.float16)
    layout = gl.NVMMASharedLayout.get_default_for([1, 16, 64], gl.float16)
    args = (TensorDescriptor.from_tensor(x, [1, 16, 64], layout), TensorDescriptor.from_tensor(x, [1, 16, 64], layout))
    res = launch(mod.tma_3d_copy_kernel, (1,), args, num_ctas=1, num_warps=4)
    assert res.error is not None and "async_copy_global_to_shared has been removed; call async_load" in res.error


def test_tmem_load_by_a_four_warp_worker_reads_all_128_lanes():
    out = torch.zeros(128 * 32)
    _ok(launch(K.tmem_lanes_kernel, (1,), (out, 2.5, 4), num_ctas=1, num_warps=4))
    assert bool((out == 2.5).all())


def test_tmem_load_by_a_one_warp_worker_is_refused_with_the_lane_rule():
    """One warp reaches one 32-lane sub-partition: the register layout of a 128-row tcgen05.ld needs 4 warps
    (Triton refuses it with this message when compiling; the executor with the kernel line)."""
    res = launch(K.tmem_lanes_kernel, (1,), (torch.zeros(128 * 32), 2.5, 1), num_ctas=1, num_warps=4)
    assert res.error is not None and "num_warps must be a power of two and >= 4" in res.error
    assert "interp_kernels.py" in res.error and "acc_tmem.load(" in res.error


def test_a_missing_builtin_names_itself_and_the_line(tmp_path):
    import importlib.util
    import inspect

    src = inspect.getsource(K).replace("    total = gl.sum(x, axis=1)\n", "    total = gl.dot_fma(x, x, x)\n")
    path = tmp_path / "missing_builtin.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("missing_builtin", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # the compiler refuses these operands' layouts (the precheck would say so first); the executor's own rule is
    # tested here: a builtin without a registry row names itself and the line
    res = launch(mod.row_stats_kernel, (1,), row_stats_args(), num_ctas=1, num_warps=4, precheck=False)
    assert res.error is not None and "gl.dot_fma is not implemented" in res.error
    assert "missing_builtin.py" in res.error and "gl.dot_fma(x, x, x)" in res.error


# =====================================================================================
# the same kernels cross-compile for sm_100a
# =====================================================================================
def _compile_cases():
    meta = "meta"
    cases = [
        ("row_stats", K.row_stats_kernel, row_stats_args(meta), 1),
        ("int_semantics", K.int_semantics_kernel, (torch.empty(160, dtype=torch.int32, device=meta), 20, 3, -7, 32), 1),
    ]
    cases.append(
        (
            "scans",
            K.scans_kernel,
            (
                torch.empty(64, device=meta),
                torch.empty(64, dtype=torch.int32, device=meta),
                torch.empty(194, device=meta),
                64,
            ),
            1,
        )
    )
    x = torch.empty(128, 96, dtype=torch.float16, device=meta)
    cases.append(
        (
            "tma_scale",
            K.tma_scale_kernel,
            (_desc(x, [64, 32], gl.float16), _desc(x, [64, 32], gl.float16), 1.5, -0.5),
            1,
        )
    )
    x3 = torch.empty(3, 16, 64, dtype=torch.float16, device=meta)
    l3 = gl.NVMMASharedLayout.get_default_for([1, 16, 64], gl.float16)
    cases.append(
        (
            "tma_3d",
            K.tma_3d_copy_kernel,
            (TensorDescriptor.from_tensor(x3, [1, 16, 64], l3), TensorDescriptor.from_tensor(x3, [1, 16, 64], l3)),
            1,
        )
    )
    for name in MMA_DTYPES:
        cases.append((f"mma_{name}", K.mma_kernel, mma_args(name, device=meta)[1], 1))
    cases.append(("mma_a_tmem", K.mma_kernel, mma_args("fp16", device=meta, a_from_tmem=True)[1], 1))
    cases.append(("mma_sync", K.mma_kernel, mma_args("fp16", device=meta, sync=True)[1], 1))
    for fmt in ("e4m3", "e2m1"):
        cases.append((f"mma_scaled_{fmt}", K.mma_scaled_kernel, scaled_args(fmt, device=meta)[1], 1))
    for keywords in (False, True):
        cases.append((f"ws_{'kw' if keywords else 'pos'}", K.ws_column_sum_kernel, ws_args(meta, keywords)[2], 1))
    cases.append(
        (
            "tmem_copy",
            K.tmem_copy_kernel,
            (_desc(torch.empty(128, 32, device=meta), [128, 32], gl.float32), torch.empty(128 * 32, device=meta)),
            1,
        )
    )
    cases.append(("tmem_lanes", K.tmem_lanes_kernel, (torch.empty(128 * 32, device=meta), 2.5, 4), 1))
    cases.append(("cluster_2cta", K.cluster_kernel, (torch.empty(64, dtype=torch.int32, device=meta), 32), 2))
    return cases


CASES = [c[0] for c in _compile_cases()]


@pytest.fixture(scope="module")
def compiled():
    return compile_all(_compile_cases())


@pytest.mark.parametrize("name", CASES)
def test_the_idiom_kernels_cross_compile_for_sm100a(compiled, name):
    assert_compiled(compiled[name], name)


@pytest.mark.parametrize("default_meets, worker_meets", [(True, True), (True, False)])
def test_a_cluster_barrier_inside_warp_specialize_needs_every_partition(default_meets, worker_meets):
    """barrier.cluster waits for every thread of the cluster that has not left: when both partitions of both
    CTAs call it the run is clean; when only the default partitions do, they wait forever (a deadlock, as on
    the GPU), while the workers, which never reach it, finish.  (precheck=False: the executor's semantics.)"""
    out = torch.zeros(2 * 32, dtype=torch.int32)  # one program (a cluster of two CTAs, which store alike)
    res = launch(
        K.ws_cluster_barrier_kernel, (1,), (out, default_meets, worker_meets), num_ctas=2, num_warps=4, precheck=False
    )
    if worker_meets:
        _ok(res)
        assert torch.equal(out, torch.ones_like(out))
    else:
        assert res.error is None and res.deadlock is not None, res
        assert "cluster_barrier" in str(res.deadlock)
        assert torch.equal(out[32:], torch.ones(32, dtype=torch.int32))  # the workers stored
        assert not out[:32].any()  # the default partitions never got past the barrier
