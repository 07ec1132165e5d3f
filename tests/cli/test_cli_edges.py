"""The rough edges a newcomer met on the command line (issue 30), each with its test.

One rule for every output option; a missing ``--kernel`` file says how to make one; ``emulate``'s table says
what is broken before the details; ``model --gpu`` checks the name before torch is imported; a mistyped option
is matched by its name, not its dashes; every table fits 100 columns (or wraps); ``KernelConfig`` refuses a
break given as one string like ``emulate()`` does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from gluon_overlap.cli import build_parser, main, nearest_option
from gluon_overlap.text import CLI_WIDTH, format_table

NVFP4 = ["--a-format", "nvfp4", "--b-format", "nvfp4"]
EMULATE = ["emulate", *NVFP4, "--m", "512", "--n", "768", "--k", "512", "--clusters", "2"]


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # the parser's errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


# --- one rule for every output: its folder must exist ------------------------------------------------------
@pytest.mark.parametrize(
    "argv, option",
    [
        (["compile", *NVFP4, "--emit", "{missing}/artifacts"], "--emit"),
        ([*EMULATE, "--trace", "{missing}/trace.jsonl"], "--trace"),
        (["bench", *NVFP4, "--csv", "{missing}/rows.csv"], "--csv"),
    ],
)
def test_every_output_into_a_missing_folder_is_refused_alike(capsys, tmp_path, argv, option):
    missing = tmp_path / "no" / "such"
    argv = [a.replace("{missing}", str(missing)) for a in argv]
    code, out, err = _run(capsys, argv)
    assert code == 2 and out == ""
    line = err.strip()
    assert len(line.splitlines()) == 1 and option in line, line
    assert f"directory {str(missing)!r} does not exist" in line and "mkdir -p" in line
    assert not (tmp_path / "no").exists()  # nothing was created on the way


def test_emit_creates_its_own_folder_in_an_existing_one(tmp_path):
    """``--emit DIR`` is the output itself: made when the folder above it exists (and only then)."""
    args = build_parser().parse_args(["compile", *NVFP4, "--emit", str(tmp_path / "new")])
    assert args.emit == str(tmp_path / "new")
    assert not (tmp_path / "new").exists()  # the parser only checks; the command makes it when it writes


# --- --kernel on a missing file says how to make an edited copy ---------------------------------------------
def test_missing_kernel_file_says_how_to_make_one(capsys, tmp_path):
    code, out, err = _run(capsys, [*EMULATE, "--kernel", str(tmp_path / "my_kernel.py")])
    assert code == 2 and out == ""
    line = err.strip()
    assert len(line.splitlines()) == 1 and "does not exist" in line
    assert "cp " in line and "gluon_overlap/kernel.py my_kernel.py" in line and "edited_copy" in line


# --- emulate says what is broken first -----------------------------------------------------------------------
def test_a_broken_run_says_what_is_broken_before_the_details(capsys):
    """``--break early-release`` races on the overlap columns; in this interleaving C still comes out right
    (the race does not always damage data). The first row says BROKEN and why, not a green-looking match."""
    code, out, _ = _run(capsys, [*EMULATE, "--break", "early-release"])
    data_code, data_out, _ = _run(capsys, [*EMULATE, "--break", "early-release", "--json"])
    data = json.loads(data_out)
    assert code == data_code == 1
    first_row = out.splitlines()[2]  # after the header and the dashes
    assert first_row.startswith("result") and "BROKEN" in first_row
    before_details = " ".join(out.split("kernel ")[0].split())  # the result row, its wrapped lines joined
    assert f"{len(data['hazards'])} hazards (first: {data['hazards'][0]['kind']}" in before_details
    assert ("C happens to match the reference" in before_details) == data["matches_reference"]


def test_a_clean_run_says_ok_first(capsys):
    code, out, _ = _run(capsys, EMULATE)
    assert code == 0
    assert out.splitlines()[2].split() == ["result", "OK"]


# --- model --gpu: the name is checked before any heavy import -------------------------------------------------
def test_unknown_gpu_lists_the_known_ones_before_torch_is_imported():
    code = textwrap.dedent("""
        import sys
        from gluon_overlap.cli import main
        try:
            main(["model", "--gpu", "h100"])
        except SystemExit as exc:
            print("exit", exc.code)
        print("torch imported:", "torch" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "exit 2" in done.stdout and "torch imported: False" in done.stdout, done
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and "'h100' is not described" in err
    assert "known GPUs: b200, b300, gb200, gb300" in err


@pytest.mark.parametrize(
    "argv,said",
    [
        (
            ["emulate", *NVFP4, "--m", "256", "--n", "256", "--k", "256", "--kernel", "/no/such/kernel.py"],
            "does not exist",
        ),
        (
            ["emulate", "--a-format", "nvfp4", "--b-format", "mxfp4", "--m", "256", "--n", "256", "--k", "256"],
            "VEC_SIZE",
        ),
        (["model", "--a-format", "nvfp4", "--b-format", "mxfp4"], "VEC_SIZE"),
    ],
    ids=["emulate-kernel", "emulate-pair", "model-pair"],
)
def test_a_refused_emulate_or_model_is_said_before_torch_is_imported(argv, said):
    """cli.main runs the command's own checks of its arguments before it imports torch (2 s): a refusal is at once."""
    code = textwrap.dedent(f"""
        import sys
        from gluon_overlap.cli import main
        print("exit", main({argv!r}))
        print("torch imported:", "torch" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "exit 2" in done.stdout and "torch imported: False" in done.stdout, done
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and said in err, err


# --- a mistyped option: the nearest right spelling, or none ----------------------------------------------------
def test_timed_is_not_taken_for_m(capsys):
    code, _, err = _run(capsys, ["model", "--timed"])
    assert code == 2 and "unrecognized arguments: --timed" in err
    assert "did you mean --m" not in err


@pytest.mark.parametrize(
    "typed, options, meant",
    [
        ("--blockk", ["--block-k", "--m", "--k"], "--block-k"),
        ("--sede", ["--seed", "--seeds", "--m"], "--seed"),
        ("--mm", ["--m", "--n", "--k"], "--m"),
        ("--a-fromat", ["--a-format", "--b-format"], "--a-format"),
        ("--jsn", ["--json", "--gpu"], "--json"),
        ("--timed", ["--m", "--n", "--k", "--gpu", "--json", "--epilogue-scale"], None),
        ("--x", ["--m", "--n", "--k"], None),
        ("--", ["--m"], None),
    ],
)
def test_nearest_option(typed, options, meant):
    assert nearest_option(typed, options) == meant


# --- tables fit 100 columns, or wrap ------------------------------------------------------------------------
def test_a_wide_table_wraps_to_100_columns_without_losing_a_word():
    rows = [[f"check_{i}", "the MMA waits on it, array of 1 " * 3, "found " * 12, i * 1000.5, "yes"] for i in range(4)]
    text = format_table(["check", "expected value", "found value", "number", "ok"], rows, max_width=CLI_WIDTH)
    assert max(len(line) for line in text.splitlines()) <= CLI_WIDTH
    words = [w for row in rows for cell in row for w in str(cell).split() if not isinstance(cell, float)]
    assert sorted(text.split()) != [] and all(w in text.split() for w in words)
    assert "3001.5" in text.split()  # numbers are never wrapped


def test_a_table_too_wide_to_wrap_is_split_repeating_its_first_column():
    headers = ["name"] + [f"column {i}" for i in range(12)]
    rows = [["row-a"] + [f"[{i}..{i + 1000}]" for i in range(12)], ["row-b"] + ["x"] * 12]
    text = format_table(headers, rows, max_width=CLI_WIDTH)
    assert max(len(line) for line in text.splitlines()) <= CLI_WIDTH
    assert text.count("row-a") >= 2 and all(f"[{i}..{i + 1000}]" in text for i in range(12))


def test_a_narrow_table_is_unchanged_by_the_width():
    rows = [["a", 1, 2.5], ["bb", 22, 0.25]]
    assert format_table(["x", "n", "f"], rows, max_width=CLI_WIDTH) == format_table(["x", "n", "f"], rows)
    assert format_table(["x", "n", "f"], rows) == "x    n      f\n--  --  -----\na    1  2.500\nbb  22  0.250"


def test_model_table_fits_100_columns(capsys):
    code, out, _ = _run(capsys, ["model", *NVFP4, "--m", "2048", "--n", "2048", "--k", "512", "1024"])
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= CLI_WIDTH, out
    for word in "off TFLOP/s".split() + ["speedup", "nvfp4-nvfp4", "1024", "split", "on", "(us)"]:
        assert word in out.split()


def test_compile_report_fits_100_columns(capsys):
    code, out, _ = _run(capsys, ["compile", *NVFP4])
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= CLI_WIDTH, [
        line for line in out.splitlines() if len(line) > CLI_WIDTH
    ]
    assert "mbarrier wait parities" in out and "the artifacts match the plan" in out


def test_emulate_report_fits_100_columns(capsys):
    code, out, _ = _run(capsys, [*EMULATE, "--break", "even-low-to-high"])
    assert code == 1
    assert max(len(line) for line in out.splitlines()) <= CLI_WIDTH, out


# --- the API: KernelConfig refuses a break given as one string, like emulate() -------------------------------
def test_kernel_config_refuses_one_string_of_breaks():
    from gluon_overlap.emulate.config import KernelConfig
    from gluon_overlap.tmem import make_plan

    plan = make_plan("nvfp4", "nvfp4")
    with pytest.raises(ValueError, match=r"breaks='early-release' must be a list of break names"):
        KernelConfig(plan, 256, 256, 256, breaks="early-release")
    with pytest.raises(ValueError, match="must be a list of break names"):
        KernelConfig(plan, 256, 256, 256, breaks=5)
    assert KernelConfig(plan, 256, 256, 256, breaks=["early-release"]).breaks == frozenset({"early-release"})


@pytest.mark.parametrize("pair", [("nvfp4", "nvfp4"), ("mxfp8", "mxfp8"), ("mxfp8", "mxfp4"), ("mxfp4", "mxfp4")])
@pytest.mark.parametrize("overlap", ["on", "off"])
def test_plan_report_fits_100_columns(capsys, pair, overlap):
    code, out, _ = _run(capsys, ["plan", "--a-format", pair[0], "--b-format", pair[1], "--overlap", overlap])
    assert code == 0 and max(len(line) for line in out.splitlines()) <= CLI_WIDTH, out
