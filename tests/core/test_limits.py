"""One set of limits: every command and the kernel wrapper accept and refuse the same problems.

The references are independent of :mod:`gluon_overlap.limits`: the kernel wrapper's own
``validate`` (on meta tensors, so any size costs no memory), the seed's format pairs, the shared
memory Triton reported for the compiled kernels, and ``kernel.launch_grid``.
"""

from __future__ import annotations

import argparse

import pytest
import torch

from gluon_overlap import cli, kernel, limits
from gluon_overlap.commands import bench as bench_cmd
from gluon_overlap.commands import emulate as emulate_cmd
from gluon_overlap.commands import model as model_cmd
from gluon_overlap.emulate import budget
from gluon_overlap.formats import get_format
from gluon_overlap.swizzle import swizzled_shape
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, make_plan

ALL_PAIRS = [(a, b) for a in ("mxfp8", "mxfp4", "nvfp4") for b in ("mxfp8", "mxfp4", "nvfp4")]
#: (m, n, k) problems on both sides of every rule: K multiple of 128 (384 is a K tail for fp4 pairs),
#: N multiple of 8, sizes below 2**31
PROBLEMS = [
    (256, 256, 256),
    (1, 8, 128),
    (300, 264, 384),
    (256, 7, 256),
    (256, 256, 100),
    (256, 256, 192),
    (2**31, 256, 256),
    (256, 2**31 - 8, 256),
    (256, 256, 2**31),
    (2**31 - 1, 2**31 - 8, 2**31 - 128),
]


def wrapper_accepts(a: str, b: str, m: int, n: int, k: int) -> bool:
    """The kernel wrapper's verdict, on meta tensors: valid problems fail only for not being on CUDA."""

    def operand(fmt: str, rows: int):
        spec = get_format(fmt)
        cols = k // spec.elements_per_byte
        data = torch.empty(rows, cols, dtype=spec.torch_element_dtype, device="meta")
        scales = torch.empty(
            swizzled_shape(rows, max(1, k // spec.vec_size)), dtype=spec.torch_scale_dtype, device="meta"
        )
        return data, scales

    a_data, a_scales = operand(a, m)
    b_data, b_scales = operand(b, n)
    try:
        kernel.validate(a_data, b_data, a_scales, b_scales, a, b)
    except ValueError as exc:
        return "the tensors are on 'meta'" in str(exc)
    raise AssertionError("validate accepted meta tensors")


def command_accepts(check, *args) -> bool:
    try:
        check(*args)
    except ValueError:
        return False
    return True


def model_accepts(a, b, m, n, k) -> bool:
    args = argparse.Namespace(a_format=a, b_format=b, m=m, n=n, k=[k])
    return command_accepts(model_cmd.check_args, args)


def bench_accepts(a, b, m, n, k) -> bool:
    args = argparse.Namespace(formats=[f"{a}-{b}"], m=m, n=n, k=[k], csv=None)
    return command_accepts(bench_cmd.check_args, args)


def emulate_rules_accept(a, b, m, n, k) -> bool:
    """emulate's kernel rules (its machine limits are checked separately, below)."""
    try:
        emulate_cmd.check_args(argparse.Namespace(a_format=a, b_format=b, m=m, n=n, k=k, clusters=None))
    except ValueError as exc:
        return "too large to emulate here" in str(exc)
    return True


def plan_accepts(a, b) -> bool:
    return cli.main(["plan", "--a-format", a, "--b-format", b]) == 0


@pytest.mark.parametrize("pair", ALL_PAIRS, ids=[f"{a}-{b}" for a, b in ALL_PAIRS])
@pytest.mark.parametrize("mnk", PROBLEMS, ids=["x".join(map(str, p)) for p in PROBLEMS])
def test_every_command_agrees_with_the_wrapper(pair, mnk):
    want = wrapper_accepts(*pair, *mnk)
    verdicts = {
        "model": model_accepts(*pair, *mnk),
        "bench": bench_accepts(*pair, *mnk),
        "emulate": emulate_rules_accept(*pair, *mnk),
    }
    assert verdicts == dict.fromkeys(verdicts, want), f"wrapper says {want}"


@pytest.mark.parametrize("pair", ALL_PAIRS, ids=[f"{a}-{b}" for a, b in ALL_PAIRS])
def test_plan_and_compile_accept_exactly_the_kernels_pairs(capsys, pair):
    from gluon_overlap.compiler import compile as gc

    want = pair in SEED_FORMAT_PAIRS
    assert plan_accepts(*pair) == want
    assert command_accepts(gc.Variant, *pair, True) == want
    if not want:
        err = capsys.readouterr().err
        assert "not one the kernel supports" in err or "VEC_SIZE" in err


def test_the_supported_pairs_are_the_seeds_and_mxfp4_x_mxfp8_names_them():
    assert limits.SUPPORTED_PAIRS == SEED_FORMAT_PAIRS
    with pytest.raises(ValueError) as exc:
        limits.check_pair("mxfp4", "mxfp8")
    for a, b in SEED_FORMAT_PAIRS:
        assert f"{a} x {b}" in str(exc.value)


def test_the_kernels_constants_are_the_limits():
    from gluon_overlap import bench

    assert kernel.K_MULTIPLE == bench.K_MULTIPLE == limits.K_MULTIPLE == 128
    assert kernel.NUM_BUFFERS == limits.SMEM_STAGES


# --- shared memory -------------------------------------------------------------------------------
#: metadata.shared of compiled kernels (Triton 3.9, sm_100a), the issue's mxfp8 BLOCK_K=256 and
#: `gluon-overlap compile --a-format nvfp4 --b-format nvfp4 --block-k 128` included;
#: tests/core/test_compile.py checks the formula against all eight seed variants as they compile
COMPILED_SHARED = {
    ("mxfp8", "mxfp8", 128, True): 188_044,
    ("nvfp4", "nvfp4", 256, True): 211_084,
    ("nvfp4", "nvfp4", 256, False): 211_068,
    ("mxfp8", "mxfp8", 256, True): 359_564,
    ("nvfp4", "nvfp4", 128, True): 113_804,
}


@pytest.mark.parametrize("key", COMPILED_SHARED, ids=[f"{a}-{b}-bk{bk}-{ov}" for a, b, bk, ov in COMPILED_SHARED])
def test_shared_memory_estimate_equals_what_triton_allocated(key):
    a, b, bk, overlap = key
    assert limits.smem_bytes_per_cta(make_plan(a, b, block_k=bk, overlap=overlap)) == COMPILED_SHARED[key]


def test_a_plan_over_the_shared_memory_limit_is_refused_by_plan_and_compile(capsys):
    from gluon_overlap.compiler import compile as gc

    assert cli.main(["plan", "--a-format", "mxfp8", "--b-format", "mxfp8", "--block-k", "256"]) == 2
    err = capsys.readouterr().err
    assert "359,564 bytes" in err and "232,448" in err
    with pytest.raises(ValueError, match="359,564 bytes"):
        gc.Variant("mxfp8", "mxfp8", True, 256)
    assert cli.main(["compile", "--a-format", "mxfp8", "--b-format", "mxfp8", "--block-k", "256"]) == 2
    assert "359,564" in capsys.readouterr().err
    # every seed default fits
    for a, b in SEED_FORMAT_PAIRS:
        assert limits.check_smem(make_plan(a, b)) <= limits.SMEM_PER_CTA_LIMIT


# --- clusters ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n, sms", [(256, 256, 148), (8192, 8192, 148), (2560, 256, 148), (8192, 8192, 8)])
def test_default_clusters_are_the_real_grid(m, n, sms):
    tiles = -(-m // 256) * -(-n // 256)
    assert limits.clusters_for(m, n, None, sms) == kernel.launch_grid(tiles, sms)[0]


def test_more_clusters_than_tiles_are_capped_as_the_real_grid_is(capsys):
    assert limits.clusters_for(256, 256, 100_000) == 1
    assert limits.clusters_for(1024, 512, 5) == 5
    rc = cli.main(
        [
            "emulate",
            "--a-format",
            "mxfp8",
            "--b-format",
            "mxfp8",
            "--m",
            "256",
            "--n",
            "256",
            "--k",
            "128",
            "--clusters",
            "100000",
            "--json",
        ]
    )
    assert rc == 0
    out = capsys.readouterr()
    assert '"clusters": 1' in out.out and "capped to 1" in out.err


# --- emulate's machine limits ---------------------------------------------------------------------------
def test_emulate_limit_comes_from_this_machines_memory():
    import os

    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert limits.machine_memory_bytes() == total
    est = budget.emulate_estimate(256, 256, 256, "nvfp4", "nvfp4")
    assert est.memory_limit == total * limits.EMULATE_MEMORY_FRACTION
    small = budget.emulate_estimate(4096, 4096, 128, "mxfp8", "mxfp8", memory=10**9)
    big = budget.emulate_estimate(4096, 4096, 128, "mxfp8", "mxfp8", memory=64 * 10**9)
    assert small.bytes == big.bytes and not small.fits and big.fits


def test_emulate_estimate_grows_with_every_dimension_and_with_clusters():
    base = budget.emulate_estimate(1024, 1024, 1024, "mxfp8", "mxfp8")
    for bigger in (
        budget.emulate_estimate(2048, 1024, 1024, "mxfp8", "mxfp8"),
        budget.emulate_estimate(1024, 2048, 1024, "mxfp8", "mxfp8"),
        budget.emulate_estimate(1024, 1024, 2048, "mxfp8", "mxfp8"),
    ):
        assert bigger.bytes > base.bytes and bigger.seconds > base.seconds and bigger.operations > base.operations
    assert (
        budget.emulate_estimate(1024, 1024, 1024, "mxfp8", "mxfp8", 16).bytes
        > budget.emulate_estimate(1024, 1024, 1024, "mxfp8", "mxfp8", 1).bytes
    )


def test_emulate_estimate_covers_the_memory_of_the_problem_it_builds():
    """The float reference alone (float64 C) and the operands must be inside the estimate."""
    m, n, k = 2048, 1024, 512
    est = budget.emulate_estimate(m, n, k, "mxfp8", "mxfp8")
    float64_reference = 8 * m * n
    float32_operands = 4 * (m + n) * k
    float16_c = 2 * m * n
    assert est.bytes > float64_reference + float32_operands + float16_c


@pytest.mark.parametrize(
    "argv",
    [
        ["--m", "65536", "--n", "65536", "--k", "256"],
        ["--m", "256", "--n", "256", "--k", "1073741824"],
        ["--m", "2147483647", "--n", "8", "--k", "128"],
    ],
)
def test_emulate_refuses_what_this_machine_cannot_do_in_a_minute(capsys, argv):
    rc = cli.main(["emulate", "--a-format", "nvfp4", "--b-format", "nvfp4", *argv])
    assert rc == 2
    err = capsys.readouterr().err
    assert "too large to emulate here" in err and "needs ~" in err and len(err.strip().splitlines()) == 1
    assert "the limit is" in err or "may use" in err


def test_emulate_accepts_a_k_tail_and_refuses_n_not_a_multiple_of_8():
    # K=384 for nvfp4 (BLOCK_K=256) is the kernel's K tail: limits accept it like the wrapper does
    budget.check_emulate(256, 256, 384, "nvfp4", "nvfp4")
    assert wrapper_accepts("nvfp4", "nvfp4", 256, 256, 384)
    with pytest.raises(ValueError, match="--n=7 must be a multiple of 8"):
        budget.check_emulate(256, 7, 256, "nvfp4", "nvfp4")


def test_model_operations_count_the_critical_clusters_work():
    one = limits.model_operations(256, 256, [256], [("nvfp4", "nvfp4")])
    # 1 tile, 1 K step, two modes
    assert one == 2 * (limits.OPS_PER_TILE + limits.OPS_PER_K_STEP)
    # 65536 tiles over 74 clusters: 886 on the critical one, 256 K steps each
    assert limits.model_operations(65536, 65536, [65536], [("nvfp4", "nvfp4")]) == 2 * 886 * (75 + 16 * 256)


def test_table_rows_cover_every_command():
    from gluon_overlap.commands import COMMANDS

    text = " ".join(row[0] for row in limits.table_rows())
    for command in COMMANDS:
        assert f"`{command}`" in text
    assert "wrapper" in text


def test_readme_table_is_the_limits_table():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("<!-- limits-table: generated from gluon_overlap.limits.table_rows() -->")[1]
    block = block.split("<!-- /limits-table -->")[0]
    rows = [line for line in block.strip().splitlines()[2:]]
    assert rows == ["| " + " | ".join(row) + " |" for row in limits.table_rows()]


def test_a_trace_larger_than_the_free_disk_space_is_refused(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    est = budget.emulate_estimate(1024, 1024, 1024, "mxfp8", "mxfp8")
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 1000, 1000))
    with pytest.raises(ValueError, match="1000 free|0 MB free"):
        budget.check_trace_space(str(tmp_path / "t.jsonl"), est)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 0, 10**12))
    assert budget.check_trace_space(str(tmp_path / "t.jsonl"), est) == int(budget.TRACE_BYTES_PER_OP * est.operations)


def test_json_output_refuses_non_finite_numbers_without_printing_half_a_document(capsys):
    from gluon_overlap.commands._output import emit

    with pytest.raises(ValueError, match="non-finite number"):
        emit(argparse.Namespace(json=True), {"tflops": float("nan")}, str)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    "pair, m, n, k, clusters",
    [
        (("nvfp4", "nvfp4"), 256, 256, 256, None),
        (("mxfp8", "mxfp8"), 512, 768, 512, None),
        (("mxfp4", "mxfp4"), 256, 512, 1024, 1),
        (("mxfp8", "mxfp4"), 768, 256, 384, 2),
    ],
)
def test_emulate_estimate_counts_the_twins_operations(pair, m, n, k, clusters):
    """The work estimate is the number of operations the twin really records (within 10 %)."""
    from gluon_overlap.emulate.runs import emulate
    from gluon_overlap.formats import random_problem

    problem = random_problem(m, n, k, *pair, seed=1)
    events = len(emulate(problem, clusters=clusters).trace)
    est = budget.emulate_estimate(m, n, k, *pair, clusters)
    assert abs(est.operations - events) <= 0.1 * events, (est.operations, events)


def test_an_unexpected_exception_is_one_line_unless_the_traceback_is_asked_for(capsys, monkeypatch):
    from gluon_overlap.commands import plan

    def broken(args):
        raise KeyError("params")

    monkeypatch.setattr(plan, "run", broken)
    argv = ["plan", "--a-format", "nvfp4", "--b-format", "nvfp4"]
    monkeypatch.delenv(cli.TRACEBACK_ENV, raising=False)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("gluon-overlap plan: error: internal error, KeyError: 'params'")
    assert len(err.strip().splitlines()) == 1
    monkeypatch.setenv(cli.TRACEBACK_ENV, "1")
    with pytest.raises(KeyError):
        cli.main(argv)


def test_an_os_error_names_the_path(capsys, monkeypatch):
    from gluon_overlap.commands import plan

    def unwritable(args):
        raise PermissionError(13, "Permission denied", "/root/out.json")

    monkeypatch.setattr(plan, "run", unwritable)
    assert cli.main(["plan", "--a-format", "nvfp4", "--b-format", "nvfp4"]) == 2
    assert "cannot use '/root/out.json': Permission denied" in capsys.readouterr().err


def test_bench_refuses_a_problem_larger_than_the_gpus_free_memory():
    gpu, host = limits.bench_bytes(8192, 8192, 8192)
    # at least the float64 reference product and the float32 references of A and B
    assert gpu >= 8 * 8192 * 8192 + 4 * (8192 + 8192) * 8192 and host == 2 * (8192 + 8192) * 8192
    limits.check_bench(8192, 8192, [512, 8192], gpu_free=int(gpu) + 1, host=64 * 10**9)
    with pytest.raises(ValueError, match="GPU memory.*but the GPU has"):
        limits.check_bench(8192, 8192, [512, 8192], gpu_free=int(gpu) - 1, host=64 * 10**9)
    with pytest.raises(ValueError, match="host memory"):
        limits.check_bench(8, 8, [2**31 - 128], gpu_free=10**15, host=10**9)
