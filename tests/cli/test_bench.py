"""The benchmark's GPU-free parts: sizes, pairs, rows, table, CSV, CLI parsing and the refusal."""

from __future__ import annotations

import csv

import pytest

from gluon_overlap import bench, cli, device


def row(a="mxfp8", b="mxfp8", k=512, off=2000.0, on=2300.0, cublas=2500.0, gpu="NVIDIA B200"):
    return bench.BenchRow(a, b, 8192, 8192, k, off, on, cublas, gpu)


def test_tflops_is_two_mnk_over_time():
    # 2 * 8192^3 flops in 1 ms = 1099.5 TFLOP/s
    assert bench.tflops(8192, 8192, 8192, 1.0) == pytest.approx(2 * 8192**3 / 1e-3 / 1e12)
    assert bench.tflops(1000, 1000, 1000, 2.0) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        bench.tflops(1, 1, 1, 0.0)


def test_speedup_is_the_seeds_formula():
    assert bench.speedup_pct(2000.0, 2300.0) == pytest.approx(15.0)
    assert row(off=100.0, on=90.0).speedup_pct == pytest.approx(-10.0)


@pytest.mark.parametrize(
    "text, pair",
    [("mxfp8-mxfp4", ("mxfp8", "mxfp4")), ("NVFP4xnvfp4", ("nvfp4", "nvfp4")), ("mxfp4,mxfp4", ("mxfp4", "mxfp4"))],
)
def test_parse_pair(text, pair):
    assert bench.parse_pair(text) == pair


@pytest.mark.parametrize(
    "text, words",
    [("mxfp4-mxfp8", "not one the kernel supports"), ("mxfp8", "look like"), ("xfp8-mxfp8", "not a known format")],
)
def test_parse_pair_refuses(text, words):
    with pytest.raises(ValueError, match=words):
        bench.parse_pair(text)


@pytest.mark.parametrize(
    "m, n, ks, words",
    [
        (0, 8192, [512], "m=0"),
        (8192, 8190, [512], "n=8190"),
        (8192, 8192, [500], "k=500"),
        (8192, 8192, [], "at least one K"),
    ],
)
def test_check_sizes_refuses(m, n, ks, words):
    with pytest.raises(ValueError, match=words):
        bench.check_sizes(m, n, ks)


def test_table_has_the_seeds_columns_and_na_for_missing_cublas():
    text = bench.format_table([row(), row(k=1024, cublas=None), row("nvfp4", "nvfp4")])
    lines = text.splitlines()
    assert lines[0].split() == ["format", "K", "off", "on", "speedup", "cuBLAS"]
    assert lines[1].split() == ["mxfp8-mxfp8", "512", "2000.0", "2300.0", "15.00%", "2500.0"]
    assert lines[2].split()[-1] == "n/a"
    assert lines[3] == ""  # a blank line between format pairs, as in the seed
    assert lines[4].startswith("nvfp4-nvfp4")


def test_csv_round_trip(tmp_path):
    rows = [row(), row("mxfp8", "mxfp4", k=1024, cublas=None)]
    path = bench.write_csv(rows, tmp_path / "data" / "bench" / "b200.csv")
    with path.open() as f:
        records = list(csv.reader(f))
    assert records[0] == list(bench.CSV_COLUMNS)
    assert records[0] == [
        "a_format",
        "b_format",
        "m",
        "n",
        "k",
        "tflops_off",
        "tflops_on",
        "speedup_pct",
        "tflops_cublas",
        "gpu",
    ]
    assert records[1] == [
        "mxfp8",
        "mxfp8",
        "8192",
        "8192",
        "512",
        "2000.000",
        "2300.000",
        "15.000",
        "2500.000",
        "NVIDIA B200",
    ]
    assert records[2][8] == ""  # no cuBLAS number for a mixed pair
    assert bench.read_csv(path) == rows


def test_read_csv_refuses_missing_columns(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a_format,b_format\nmxfp8,mxfp8\n")
    with pytest.raises(ValueError, match="lacks the columns"):
        bench.read_csv(path)


def test_read_csv_refuses_a_row_without_its_own_timing(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text(
        "a_format,b_format,m,n,k,tflops_off,tflops_on,speedup_pct,tflops_cublas,gpu\n"
        "mxfp8,mxfp8,8192,8192,512,2000.000,,,,NVIDIA B200\n"
    )
    with pytest.raises(ValueError, match="line 2 has no tflops_on"):
        bench.read_csv(path)


def test_default_csv_path_is_under_data_bench():
    assert bench.default_csv_path("NVIDIA GB200").as_posix() == "data/bench/nvidia-gb200.csv"
    assert bench.gpu_slug("NVIDIA B300 SXM6 AC") == "nvidia-b300-sxm6-ac"


def test_cli_arguments_parse():
    args = cli.build_parser().parse_args(
        ["bench", "--m", "4096", "--k", "512", "1024", "--formats", "nvfp4-nvfp4", "--csv"]
    )
    assert (args.m, args.n, args.k, args.formats, args.csv) == (4096, 8192, [512, 1024], ["nvfp4-nvfp4"], "auto")
    args = cli.build_parser().parse_args(["bench", "--csv", "out.csv", "--no-cublas"])
    assert (args.csv, args.no_cublas, args.k) == ("out.csv", True, [512, 1024, 2048, 4096, 8192])


def test_cli_refuses_without_blackwell(capsys, monkeypatch):
    monkeypatch.setattr(device, "capability", lambda dev=None: None)
    assert cli.main(["bench"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gluon-overlap bench: error: cannot benchmark here: no CUDA GPU")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("cap, words", [((9, 0), "Hopper"), ((12, 0), "aborts the whole process")])
def test_cli_refuses_other_gpus(capsys, monkeypatch, cap, words):
    monkeypatch.setattr(device, "capability", lambda dev=None: cap)
    assert cli.main(["bench", "--k", "512"]) == 2
    assert words in capsys.readouterr().err


def test_cli_checks_sizes_before_the_device(capsys):
    assert cli.main(["bench", "--k", "500"]) == 2
    assert "k=500 must be a positive multiple of 128" in capsys.readouterr().err


def test_run_benchmark_plumbing_with_a_fake_gpu(monkeypatch):
    """Everything but the GPU: problems per pair and K, two timings, rows with the right numbers."""
    import gluon_overlap.formats as formats
    import gluon_overlap.kernel as kernel

    calls = []
    monkeypatch.setattr(bench, "require_blackwell", lambda: "Fake GPU")
    monkeypatch.setattr(formats, "random_problem", lambda m, n, k, a, b, seed=0, device="cpu": (m, n, k, a, b))
    monkeypatch.setattr(kernel, "matmul", lambda a, b, **kw: calls.append(kw["overlap"]))

    class FakeProblem(tuple):
        a = b = a_scale_swizzled = b_scale_swizzled = None

    monkeypatch.setattr(formats, "random_problem", lambda *args, **kw: FakeProblem(args))
    times = iter([2.0, 1.0, 4.0, 2.0])  # ms: off, on for K=512, then K=1024

    def fake_time(fn):
        fn()
        return next(times)

    monkeypatch.setattr(bench, "_time_ms", fake_time)
    lines = []
    rows = bench.run_benchmark(1000, 1000, [512, 1024], [("nvfp4", "nvfp4")], cublas=False, progress=lines.append)
    assert calls == [False, True, False, True]
    assert [(r.k, r.tflops_off, r.tflops_on, r.tflops_cublas, r.gpu) for r in rows] == [
        (512, pytest.approx(0.512), pytest.approx(1.024), None, "Fake GPU"),
        (1024, pytest.approx(0.512), pytest.approx(1.024), None, "Fake GPU"),
    ]
    assert rows[0].speedup_pct == pytest.approx(100.0)
    assert len(lines) == 2 and lines[0].startswith("nvfp4-nvfp4")
