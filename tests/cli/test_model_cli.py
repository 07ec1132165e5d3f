"""`gluon-overlap model`: the seed's table, JSON keys, clean errors."""

from __future__ import annotations

import json

import pytest

from gluon_overlap.cli import main

ROW_KEYS = {
    "a_format",
    "b_format",
    "k",
    "tflops_off",
    "tflops_on",
    "speedup_pct",
    "mainloop_us_off",
    "exposed_epilogue_us_off",
    "idle_us_off",
    "mainloop_us_on",
    "exposed_epilogue_us_on",
    "idle_us_on",
    "speedup_band_pct",
    "tflops_off_band",
    "tflops_on_band",
}


def run_json(capsys, *argv: str) -> dict:
    assert main(["model", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_rows_for_one_pair(capsys):
    data = run_json(capsys, "--gpu", "b200", "--a-format", "nvfp4", "--b-format", "nvfp4", "--k", "512", "4096")
    assert data["gpu"] == "b200" and (data["m"], data["n"]) == (8192, 8192)
    assert [(r["a_format"], r["b_format"], r["k"]) for r in data["rows"]] == [
        ("nvfp4", "nvfp4", 512),
        ("nvfp4", "nvfp4", 4096),
    ]
    for r in data["rows"]:
        assert ROW_KEYS <= set(r)
        assert r["speedup_pct"] == pytest.approx((r["tflops_on"] / r["tflops_off"] - 1) * 100)
        for key in ("speedup_pct", "tflops_off", "tflops_on"):
            lo, hi = r[key.replace("_pct", "") + "_band" + ("_pct" if key == "speedup_pct" else "")]
            assert lo <= r[key] <= hi


def test_json_says_every_parameters_kind_range_and_reasoning(capsys):
    data = run_json(capsys, "--gpu", "gb300", "--a-format", "mxfp8", "--b-format", "mxfp8", "--k", "512")
    assert data["gpu"] == "gb300"
    params = data["parameters"]
    assert {"l2_write_tb_s", "cvt_per_clk_per_smsp", "tensor_efficiency_fp4"} <= set(params)
    for name, rec in params.items():
        assert rec["kind"] in ("vendor lead", "estimate", "calibrated"), name
        assert rec["range"][0] <= rec["value"] <= rec["range"][1] and rec["range_source"], name
    assert set(data["band_groups"]) == {"fitted", "memory", "sync"}
    assert params["epilogue_cost_factor"]["kind"] == "calibrated"


def test_default_is_the_seeds_sweep(capsys):
    data = run_json(capsys, "--gpu", "gb200", "--m", "2048", "--n", "2048")
    pairs = {(r["a_format"], r["b_format"]) for r in data["rows"]}
    assert pairs == {("mxfp8", "mxfp8"), ("mxfp8", "mxfp4"), ("mxfp4", "mxfp4"), ("nvfp4", "nvfp4")}
    assert sorted({r["k"] for r in data["rows"]}) == [512, 1024, 2048, 4096, 8192]
    assert len(data["rows"]) == 20


def test_table_has_the_seeds_columns_and_the_split(capsys):
    assert main(["model", "--a-format", "mxfp8", "--b-format", "mxfp4", "--k", "1024"]) == 0
    out = capsys.readouterr().out
    words = out.split()  # a header may be wrapped over two lines (the table fits 100 columns)
    for header in (
        "format",
        "off TFLOP/s",
        "on TFLOP/s",
        "speedup",
        "split off (us)",
        "mxfp8-mxfp4",
        "1024",
        "off band",
        "on band",
        "speedup band %",
    ):
        assert all(word in words for word in header.split()), header


def test_unknown_gpu_is_a_clean_error(capsys):
    with pytest.raises(SystemExit) as exited:  # refused by the parser, before any work
        main(["model", "--gpu", "h100"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "h100" in err and "b200, b300, gb200, gb300" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--a-format", "mxfp8"], "both --a-format and --b-format"),
        (["--a-format", "nvfp4", "--b-format", "mxfp8"], "VEC_SIZE"),
        (["--k", "100"], "--k=100 must be a multiple of 128"),
        (["--n", "100"], "--n=100 must be a multiple of 8"),
        (["--a-format", "mxfp4", "--b-format", "mxfp8"], "not one the kernel supports"),
    ],
)
def test_bad_arguments_are_clean_errors(capsys, argv, needle):
    assert main(["model", *argv]) == 2
    assert needle in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--m", "0"], "argument --m: 0 must be a positive integer"),
        (["--k", "512", "2147483648"], "below 2**31"),
        (["--epilogue-scale", "nan"], "not a finite number"),
    ],
)
def test_the_parser_refuses_bad_numbers(capsys, argv, needle):
    with pytest.raises(SystemExit) as exc:
        main(["model", *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_epilogue_scale_moves_the_small_k_gain_in_its_direction(capsys):
    def gain(scale: str) -> float:
        assert (
            main(
                [
                    "model",
                    "--gpu",
                    "b200",
                    "--a-format",
                    "mxfp8",
                    "--b-format",
                    "mxfp8",
                    "--k",
                    "512",
                    "--epilogue-scale",
                    scale,
                    "--json",
                ]
            )
            == 0
        )
        data = json.loads(capsys.readouterr().out)
        assert data["epilogue_scale"] == float(scale)
        return data["rows"][0]["speedup_pct"]

    fast, base, slow = gain("0.5"), gain("1"), gain("2")
    assert fast < base < slow


def test_epilogue_scale_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["model", "--gpu", "b200", "--epilogue-scale", "0"])
    assert exc.value.code == 2
    assert "between 0.001 and 1000" in capsys.readouterr().err


@pytest.mark.parametrize("scale", ["inf", "nan", "-1", "1e300", "1e-300"])
def test_extreme_epilogue_scales_are_clean_errors(capsys, scale):
    try:
        code = main(["model", "--gpu", "b200", "--epilogue-scale", scale, "--k", "512"])
    except SystemExit as exc:  # refused by the argument parser
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ZeroDivisionError" not in err and err.strip().count("\n") <= 1


@pytest.mark.parametrize("scale", [float("inf"), float("nan"), 1e300, 1e-300, 0.0])
def test_the_model_itself_refuses_extreme_epilogue_scales(scale):
    from gluon_overlap.hardware import load_hardware

    with pytest.raises(ValueError, match="factor"):
        load_hardware("b200").with_epilogue_scaled(scale)


def test_a_huge_problem_answers_by_extrapolation(capsys, monkeypatch):
    from gluon_overlap.timing import model as timing

    simulated = []
    run = timing._run
    monkeypatch.setattr(timing, "_run", lambda hw, c, t, s: simulated.append(t * s) or run(hw, c, t, s))
    data = run_json(
        capsys,
        "--a-format",
        "nvfp4",
        "--b-format",
        "nvfp4",
        "--m",
        "1000000000",
        "--n",
        "1000000000",
        "--k",
        str(2**30),
    )
    row = data["rows"][0]
    # the FP4 steady state drifts slowly (the HBM queue): the check run sees 0.2-0.3 % between the fitted surface
    # of the small runs and a run beyond them
    assert row["extrapolated"] and row["extrapolation_error"] < 5e-3
    # L2-bound FP4 loads: the overlapped stores take their share of L2 from them (test_timing: up to ~2 %)
    assert 0 < row["tflops_off"] <= row["tflops_on"] * (1 + 2.5e-2)
    # off and on: five small runs for the nominal (one of them its check), four for each of the band's 6 corners
    assert len(simulated) == 2 * (5 + 4 * 6) and max(simulated) <= 6 * 44


class _Terminal:
    """A stand-in for a terminal's stderr: collects what is written and says it is a tty."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_and_never_with_json(capsys, monkeypatch):
    argv = ["model", "--gpu", "b300", "--a-format", "mxfp8", "--b-format", "mxfp8", "--k", "512", "1024"]
    assert main(argv) == 0  # pytest's stderr is not a terminal: no bar
    assert capsys.readouterr().err == ""
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    assert main(argv) == 0
    assert "model b300" in term.text and "/2 [" in term.text  # tqdm's bar over the 2 rows (cleared at the end)
    assert "mxfp8-mxfp8" in capsys.readouterr().out  # the table itself still goes to stdout
    term.text = ""
    assert main([*argv, "--json"]) == 0
    assert term.text == ""  # --json: the output is for a program, no bar even on a terminal
    assert json.loads(capsys.readouterr().out)["gpu"] == "b300"


def test_the_sweep_in_two_processes_is_the_sweep_in_one(monkeypatch):
    from gluon_overlap.timing.table import model_table

    pairs, ks = [("mxfp8", "mxfp8"), ("nvfp4", "nvfp4")], (512, 2048)
    one = model_table("b300", pairs, ks, band=False, workers=1)
    two = model_table("b300", pairs, ks, band=False, workers=2)
    assert one == two
