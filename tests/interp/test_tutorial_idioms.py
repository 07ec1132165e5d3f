"""Issue 31: kernels in the idioms of the upstream Gluon tutorials 02, 03, 04, 07, 08, 09 and 10
(tests/support/tutorial_idioms.py, written for this suite) run on the CPU interpreter, clean, and match a torch
float64 / integer reference; each also cross-compiles for sm_100a with Triton 3.9 (so it is Gluon Triton accepts).

What each exercises is in its kernel's docstring; ``pytest -v tests/interp/test_tutorial_idioms.py`` lists the
idioms case by case (the table of the issue's closing note is that list, counted per tutorial)."""

from __future__ import annotations

import pytest
import torch
import triton.experimental.gluon.language as gl
import tutorial_helpers as helpers  # tests/support is on sys.path (tests/conftest.py)
import tutorial_idioms as T
from _cross_compile import assert_compiled, compile_all
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout
from triton.experimental.gluon.nvidia.blackwell import TensorDescriptor

from gluon_overlap.interp.launch import launch


def _ok(res) -> None:
    assert res.error is None, res.error
    assert res.deadlock is None, str(res.deadlock)
    assert not res.hazards, "\n".join(str(h) for h in res.hazards)


def _desc(t: torch.Tensor, block: list[int], layout_block: list[int] | None = None) -> TensorDescriptor:
    gdt = {torch.float16: gl.float16, torch.float32: gl.float32, torch.bfloat16: gl.bfloat16}[t.dtype]
    return TensorDescriptor.from_tensor(t, block, gl.NVMMASharedLayout.get_default_for(layout_block or block, gdt))


def _edited(tmp_path, name: str, old: str, new: str):
    """tutorial_idioms.py with one edit, imported as module ``name`` (registered, as an import would)."""
    import importlib.util
    import inspect
    import sys

    src = inspect.getsource(T)
    assert old in src, old
    path = tmp_path / f"{name}.py"
    path.write_text(src.replace(old, new))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _empty(shape, dtype, device):
    return torch.empty(shape, dtype=dtype, device=device)


# =====================================================================================================
# argument builders (device "cpu": real data; "meta": for the cross-compile)
# =====================================================================================================
LAYOUTS = {
    "rows": gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0]),
    "cols": gl.BlockedLayout([4, 1], [4, 8], [1, 4], [0, 1]),
    "warps-2x2": gl.BlockedLayout([2, 2], [8, 4], [2, 2], [1, 0]),
}


def transpose_args(layout, device="cpu", m=50, n=32):
    x = torch.randn(m, n) if device == "cpu" else _empty((m, n), torch.float32, device)
    out = torch.zeros(m * n + m * n // 2) if device == "cpu" else _empty(m * n + m * n // 2, torch.float32, device)
    return x, out, (x, out, m, n, x.stride(0), 32, n, layout)


def cp_args(stages, device="cpu", rows=70, cols=200):
    if device == "cpu":
        a, b = torch.randn(rows, cols), torch.randn(rows, cols)
        c = torch.full((rows, cols), float("nan"))
    else:
        a, b, c = (_empty((rows, cols), torch.float32, device) for _ in range(3))
    return a, b, c, (a, b, c, rows, cols, cols, 32, 64, stages)


def matmul_operands(m, n, k, device):
    if device == "cpu":
        a = (torch.randn(m, k) / 4).to(torch.float16)
        b = (torch.randn(k, n) / 4).to(torch.float16)
        c = torch.full((m, n), float("nan"), dtype=torch.float16)
    else:
        a, b, c = (
            _empty((m, k), torch.float16, device),
            _empty((k, n), torch.float16, device),
            _empty((m, n), torch.float16, device),
        )
    return a, b, c


def persistent_args(stages, band, device="cpu", m=256, n=192, k=192):
    a, b, c = matmul_operands(m, n, k, device)
    args = (
        _desc(a, [128, 64]),
        _desc(b, [64, 64]),
        _desc(c, [128, 64]),
        helpers.AsyncMma,
        T.banded_scheduler(band),
        stages,
    )
    return a, b, c, args


def axpy_args(load_depth, store_depth, device="cpu", rows=64, cols=320):
    if device == "cpu":
        a, b = torch.randn(rows, cols), torch.randn(rows, cols)
        c = torch.full((rows, cols), float("nan"))
    else:
        a, b, c = (_empty((rows, cols), torch.float32, device) for _ in range(3))
    return a, b, c, (_desc(a, [32, 64]), _desc(b, [32, 64]), _desc(c, [32, 64]), cols, load_depth, store_depth)


def ws_matmul_args(stages, split, band, device="cpu", m=256, n=256, k=128):
    a, b, c = matmul_operands(m, n, k, device)
    args = (
        _desc(a, [128, 64]),
        _desc(b, [64, 128]),
        _desc(c, [128, 128 // split]),
        T.banded_scheduler(band),
        stages,
        split,
    )
    return a, b, c, args


def gather_args(y_offset, device="cpu", rows=16, width=32, x_max=64, y_max=96):
    if device == "cpu":
        src = torch.randn(x_max, y_max).to(torch.float16)
        picks = torch.tensor([5, -3, 63, 64, 0, 17, 100, 2, 40, -64, 33, 8, 9, 1, 62, 31][:rows], dtype=torch.int32)
        out = torch.full((rows, width), float("nan"), dtype=torch.float16)
    else:
        src, picks = _empty((x_max, y_max), torch.float16, device), _empty(rows, torch.int32, device)
        out = _empty((rows, width), torch.float16, device)
    desc = _desc(src, [1, width], [rows, width])
    return src, picks, out, (out, desc, picks, y_offset, rows)


def scatter_args(y_offset, device="cpu", rows=16, width=32, x_max=64, y_max=96):
    if device == "cpu":
        dst = torch.randn(x_max, y_max).to(torch.float16)
        picks = torch.tensor([5, 3, 63, 64, 0, 17, 100, 2, 40, 41, 33, 8, 9, 1, 62, 31][:rows], dtype=torch.int32)
        src = torch.randn(rows, width).to(torch.float16)
    else:
        dst, picks = _empty((x_max, y_max), torch.float16, device), _empty(rows, torch.int32, device)
        src = _empty((rows, width), torch.float16, device)
    desc = _desc(dst, [1, width], [rows, width])
    return dst, picks, src, (desc, picks, y_offset, src, rows)


TMEM_CASES = {  # (M, N, TMEM block N, NVMMA swizzle bytes)
    "256x64-block128x64": (256, 64, 64, 128),
    "256x64-block128x32": (256, 64, 32, 64),
    "256x32-block128x32": (256, 32, 32, 128),
    "128x64-block128x16": (128, 64, 16, 32),
}


def tmem_args(case, device="cpu"):
    m, n, bn, swizzle = TMEM_CASES[case]
    x = torch.randn(m, n) if device == "cpu" else _empty((m, n), torch.float32, device)
    out = torch.zeros(m * n + m * n // 2) if device == "cpu" else _empty(m * n + m * n // 2, torch.float32, device)
    smem = gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=32, rank=2)
    return x, out, (x, out, m, n, smem, TensorMemoryLayout(block=(128, bn), col_stride=1))


def plus_c_args(device="cpu", m=256, n=128, k=128):
    a, b, _ = matmul_operands(m, n, k, device)
    c = torch.randn(m, n) if device == "cpu" else _empty((m, n), torch.float32, device)
    d = torch.full((m, n), float("nan")) if device == "cpu" else _empty((m, n), torch.float32, device)
    return a, b, c, d, (_desc(a, [128, 64]), _desc(b, [64, 64]), _desc(c, [128, 64]), d, 2)


def _matmul_ref(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.double() @ b.double()


# =====================================================================================================
# the runs
# =====================================================================================================
@pytest.mark.parametrize("name", list(LAYOUTS))
def test_02_layout_as_constexpr_argument_and_tensor_methods(name):
    x, out, args = transpose_args(LAYOUTS[name])
    _ok(launch(T.transpose_halves_kernel, (2,), args, num_ctas=1, num_warps=4))
    m, n = x.shape
    assert torch.equal(out[: m * n].view(n, m), x.T)
    assert torch.equal(out[m * n :].view(m, n // 2), x[:, 1::2] - x[:, 0::2])


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_03_cp_async_pipeline_with_commit_and_wait_groups(stages):
    a, b, c, args = cp_args(stages)
    _ok(launch(T.cp_pipeline_kernel, (3,), args, num_ctas=1, num_warps=4))
    assert torch.equal(c, (a.double() - b.double()).float())


def test_03_a_read_before_the_wait_group_is_a_race(tmp_path):
    """The same pipeline with wait_group(STAGES) instead of STAGES - 1: the block read was not waited for."""
    mod = _edited(tmp_path, "cp_race", "        cp.wait_group(STAGES - 1)\n", "        cp.wait_group(STAGES)\n")
    a, b, c, args = cp_args(2)
    res = launch(mod.cp_pipeline_kernel, (3,), args, num_ctas=1, num_warps=4, precheck=False)
    assert any(h.kind == "smem-read-after-write" and "cp.async" in h.detail for h in res.hazards), res.hazards
    assert any("cp_race.py" in str(h.line) and ".load(layout)" in str(h.line) for h in res.hazards)


@pytest.mark.parametrize("stages,band,grid", [(2, 1, 3), (3, 2, 2), (4, 8, 6)])
def test_07_persistent_matmul_with_class_arguments_and_a_scheduler_factory(stages, band, grid):
    """``Mma.create`` / ``Scheduler.initialize`` on constexpr class arguments; the scheduler's band is a constexpr
    in a factory's closure (``min(runtime, BAND)``, then ``%``); the re-wait on the last MMA's phase is legal."""
    a, b, c, args = persistent_args(stages, band)
    for seed in range(2):
        c.fill_(float("nan"))
        _ok(launch(T.persistent_matmul_kernel, (grid,), args, num_ctas=1, num_warps=4, seed=seed))
        torch.testing.assert_close(c.double(), _matmul_ref(a, b), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("band,tiles,programs", [(2, (5, 3), 4), (8, (3, 4), 5), (1, (4, 2), 3), (3, (7, 2), 6)])
def test_07_the_factory_scheduler_visits_every_tile_once(band, tiles, programs):
    """The factory's scheduler as the interpreter runs it (``min`` of a runtime value and the closure's constexpr,
    then ``%``) against the same rule in plain Python with the compiled kernel's truncating division."""
    tiles_m, tiles_n = tiles
    out = torch.full((programs, 64, 2), -1, dtype=torch.int32)
    _ok(
        launch(
            T.schedule_probe_kernel,
            (programs,),
            (out, tiles_m * 16, tiles_n * 16, T.banded_scheduler(band), 16, 16, 64),
            num_ctas=1,
            num_warps=4,
        )
    )
    per_band, total = band * tiles_n, tiles_m * tiles_n
    seen = []
    for pid in range(programs):
        count = -(-(total - pid) // programs)
        for idx in range(count):
            t = pid + idx * programs
            first_m = (t // per_band) * band
            rows_here = min(tiles_m - first_m, band)
            want = (first_m + t % rows_here, (t % per_band) // rows_here)
            assert tuple(out[pid, idx].tolist()) == want, (pid, idx)
            seen.append(want)
        assert bool((out[pid, count:] == -1).all())
    assert sorted(seen) == sorted((i, j) for i in range(tiles_m) for j in range(tiles_n))


@pytest.mark.parametrize("load_depth,store_depth", [(2, 2), (3, 3), (1, 2)])
def test_08_warp_specialized_pipeline_with_a_predicated_off_barrier_index(load_depth, store_depth):
    """The storer computes ``out_free.index((i - in_flight) % depth)``, out of range while ``i < in_flight``, and
    arrives on it only with ``pred=i >= in_flight``: no hazard (a computation is not a use)."""
    a, b, c, args = axpy_args(load_depth, store_depth)
    for seed in range(3):
        c.fill_(float("nan"))
        _ok(launch(T.ws_axpy_kernel, (2,), args, num_ctas=1, num_warps=4, seed=seed))
        assert torch.equal(c, (a.double() * 2 + b.double()).float())


def test_08_the_out_of_range_index_used_unpredicated_is_a_hazard_at_its_line(tmp_path):
    mod = _edited(
        tmp_path,
        "ws_oob",
        "mbarrier.arrive(out_free.index((i - in_flight) % depth), pred=i >= in_flight)",
        "mbarrier.arrive(out_free.index((i - in_flight) % depth))",
    )
    a, b, c, args = axpy_args(2, 2)
    res = launch(mod.ws_axpy_kernel, (1,), args, num_ctas=1, num_warps=4, precheck=False)
    oob = [h for h in res.hazards if h.kind == "barrier-out-of-bounds"]
    assert oob and "index(-1)" in oob[0].detail and "used by mbarrier.arrive" in oob[0].detail
    assert "ws_oob.py" in str(oob[0].line)


@pytest.mark.parametrize("stages,split,band,grid", [(2, 4, 1, 3), (3, 2, 2, 2)])
def test_08_warp_specialized_matmul_splitting_the_accumulator_with_tensor_methods(stages, split, band, grid):
    a, b, c, args = ws_matmul_args(stages, split, band)
    _ok(launch(T.ws_matmul_kernel, (grid,), args, num_ctas=1, num_warps=4))
    torch.testing.assert_close(c.double(), _matmul_ref(a, b), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("y_offset", [-16, 0, 48, 80])
def test_09_tma_gather(y_offset):
    src, picks, out, args = gather_args(y_offset)
    _ok(launch(T.gather_rows_kernel, (1,), args, num_ctas=1, num_warps=4))
    want = torch.zeros(out.shape, dtype=torch.float64)
    for i, r in enumerate(picks.tolist()):
        for j in range(out.shape[1]):
            col = y_offset + j
            if 0 <= r < src.shape[0] and 0 <= col < src.shape[1]:
                want[i, j] = float(src[r, col])
    assert torch.equal(out.double(), want)


@pytest.mark.parametrize("y_offset", [0, 48, 80])
def test_09_tma_scatter(y_offset):
    dst, picks, src, args = scatter_args(y_offset)
    want = dst.clone()
    _ok(launch(T.scatter_rows_kernel, (1,), args, num_ctas=1, num_warps=4))
    for i, r in enumerate(picks.tolist()):
        if r < want.shape[0]:
            hi = min(y_offset + src.shape[1], want.shape[1])
            want[r, y_offset:hi] = src[i, : hi - y_offset]
    assert torch.equal(dst, want)


def test_09_a_misaligned_gather_and_a_negative_scatter_stop_as_the_gpu_does():
    src, picks, out, args = gather_args(4)  # 4 fp16 = 8 bytes: not 16-byte aligned
    res = launch(T.gather_rows_kernel, (1,), args, num_ctas=1, num_warps=4)
    assert res.error is not None and "16-byte aligned" in res.error and "tutorial_idioms.py" in res.error
    dst, picks, src, args = scatter_args(0)
    picks[3] = -2
    res = launch(T.scatter_rows_kernel, (1,), args, num_ctas=1, num_warps=4)
    assert res.error is not None and "negative" in res.error and "tma.async_scatter" in res.error


@pytest.mark.parametrize("case", list(TMEM_CASES))
def test_10_tcgen05_copy_into_tmem_of_every_block_shape(case):
    x, out, args = tmem_args(case)
    _ok(launch(T.tmem_round_trip_kernel, (1,), args, num_ctas=1, num_warps=4))
    m, n = x.shape
    assert torch.equal(out[: m * n].view(m, n), x)
    assert torch.equal(out[m * n :].view(m, n // 2), x[:, n // 2 :])


def test_10_matmul_accumulating_onto_c_copied_into_tmem():
    a, b, c, d, args = plus_c_args()
    _ok(launch(T.matmul_plus_c_kernel, (2, 2), args, num_ctas=1, num_warps=4))
    torch.testing.assert_close(d.double(), _matmul_ref(a, b) + c.double(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("resident", [None, 1, 3])
def test_cluster_launch_control_takes_over_the_clusters_not_started(resident):
    """Every cluster at once (the default): no try_cancel succeeds.  One or three at a time: the running ones take
    over the clusters waiting, in grid order, and those never run; every tile is done exactly once either way."""
    tiles, block = 8, 128
    x = torch.randn(tiles * block)
    out = torch.full_like(x, float("nan"))
    res = launch(T.clc_scale_kernel, (tiles,), (x, out, block), num_ctas=1, num_warps=4, resident_clusters=resident)
    _ok(res)
    want = (x.double() * 2 + torch.arange(tiles).repeat_interleave(block).double()).float()  # one rounding
    assert torch.equal(out, want)
    if resident is None:
        assert res.cancelled == []
    else:
        assert res.cancelled and set(res.cancelled) <= set(range(resident, tiles))
        assert res.cancelled == sorted(res.cancelled)


# =====================================================================================================
# the same kernels cross-compile for sm_100a
# =====================================================================================================
def _compile_cases():
    meta = "meta"
    cases = [
        (f"02-layout-{name}", T.transpose_halves_kernel, transpose_args(layout, meta)[2], 1)
        for name, layout in LAYOUTS.items()
    ]
    cases += [(f"03-cp-async-{s}", T.cp_pipeline_kernel, cp_args(s, meta)[3], 1) for s in (1, 2, 3)]
    cases += [
        (f"07-persistent-{s}-{band}", T.persistent_matmul_kernel, persistent_args(s, band, meta)[3], 1)
        for s, band in ((2, 1), (3, 2))
    ]
    cases += [(f"08-ws-axpy-{ld}-{sd}", T.ws_axpy_kernel, axpy_args(ld, sd, meta)[3], 1) for ld, sd in ((2, 2), (1, 2))]
    cases += [
        (f"08-ws-matmul-{s}-{sp}", T.ws_matmul_kernel, ws_matmul_args(s, sp, 1, meta)[3], 1)
        for s, sp in ((2, 4), (3, 2))
    ]
    cases += [
        ("09-gather", T.gather_rows_kernel, gather_args(0, meta)[3], 1),
        ("09-scatter", T.scatter_rows_kernel, scatter_args(0, meta)[3], 1),
    ]
    cases += [(f"10-tmem-{case}", T.tmem_round_trip_kernel, tmem_args(case, meta)[2], 1) for case in TMEM_CASES]
    cases.append(("10-matmul-plus-c", T.matmul_plus_c_kernel, plus_c_args(meta)[4], 1))
    cases.append(
        (
            "02-multicta-clc",
            T.clc_scale_kernel,
            (_empty(1024, torch.float32, meta), _empty(1024, torch.float32, meta), 128),
            1,
        )
    )
    cases.append(
        (
            "07-scheduler-probe",
            T.schedule_probe_kernel,
            (_empty((4, 64, 2), torch.int32, meta), 80, 48, T.banded_scheduler(2), 16, 16, 64),
            1,
        )
    )
    return cases


CASES = [c[0] for c in _compile_cases()]


@pytest.fixture(scope="module")
def compiled():
    return compile_all(_compile_cases())


@pytest.mark.parametrize("name", CASES)
def test_the_tutorial_idiom_kernels_cross_compile_for_sm100a(compiled, name):
    assert_compiled(compiled[name], name)
