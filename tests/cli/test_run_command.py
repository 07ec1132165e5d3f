"""``gluon-overlap run SCRIPT.py [ARGS...]`` and ``gluon_overlap.script.runner.run_script`` (issue 31): unmodified
scripts in the upstream tutorials' shape (tests/support/scripts/, written for this suite) run with their CUDA
tensors on the CPU and their launches on the interpreter; the report names the script's lines; exit statuses 0 /
1 / 2 / 130; a script that loops or exits cannot hang or end the command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gluon_overlap.script.runner import run_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "tests" / "support" / "scripts"


def run_cli(argv: list[str], timeout: float = 600) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [sys.executable, "-m", "gluon_overlap", *argv], capture_output=True, text=True, env=env, timeout=timeout
    )
    return p.returncode, p.stdout, p.stderr


# --- the Python entry -----------------------------------------------------------------------------------
def test_a_clean_script_runs_with_its_arguments_and_its_prints():
    r = run_script(SCRIPTS / "vector_add.py", ["777"])
    assert r.ok and r.exit_status == 0 and r.script_error is None, r.to_dict()
    assert "n=777 ok" in r.output and "sm_100a" in r.output  # is_blackwell() saw capability 10.0
    # the wrapper ran once, do_bench ran it once more: two launches, each at the script line that launched it
    assert [launch.kernel for launch in r.launches] == ["scaled_add_kernel"] * 2
    assert all(
        launch.line.name == "vector_add.py" and "scaled_add_kernel[grid]" in launch.line.text for launch in r.launches
    )
    assert r.launches[0].grid == (4,)  # cdiv(777, 256), from the grid lambda given the launch's meta


def test_a_race_is_reported_with_both_script_lines_and_the_script_goes_on():
    r = run_script(SCRIPTS / "racy_ring.py")
    assert not r.ok and r.exit_status == 0 and r.stopped_by is None  # a hazard does not stop the script
    (launch,) = r.launches
    kinds = {h.kind for h in launch.hazards}
    assert "smem-read-after-write" in kinds, kinds
    raw = next(h for h in launch.hazards if h.kind == "smem-read-after-write")
    assert raw.line.name == "racy_ring.py" and "BUG: read before the wait" in raw.line.text
    load_line = next(
        n
        for n, text in enumerate((SCRIPTS / "racy_ring.py").read_text().splitlines(), 1)
        if "tma.async_load(desc" in text
    )
    assert f"racy_ring.py:{load_line}" in raw.detail and "tma.async_load" in raw.detail  # the write it races with
    assert "max error" in r.output


def test_an_aggregate_argument_autotune_and_a_neighbour_module():
    r = run_script(SCRIPTS / "autotuned_matmul.py")
    assert r.ok, r.to_dict()
    (launch,) = r.launches
    assert launch.grid == (2, 2) and "first of 2 configs" in launch.note
    assert "matmul ok" in r.output


def test_an_exit_status_and_a_script_error_are_the_scripts():
    r = run_script(SCRIPTS / "exits.py")
    assert r.exit_status == 3 and not r.ok and len(r.launches) == 1 and r.launches[0].ok


def test_a_kernel_error_stops_the_script_there(tmp_path):
    src = (SCRIPTS / "vector_add.py").read_text().replace("x * alpha + y", "x * alpha + y + gl.dot_fma(x, x, x)")
    path = tmp_path / "broken.py"
    path.write_text(src)
    r = run_script(path, precheck=False)
    assert r.stopped_by == "launch" and r.exit_status is None and len(r.launches) == 1
    assert "gl.dot_fma is not implemented" in r.launches[0].error and "broken.py" in r.launches[0].error


def test_cuda_answers_are_restored_after_the_run():
    import torch
    import triton.testing

    before = (torch.cuda.is_available, triton.testing.do_bench)
    run_script(SCRIPTS / "exits.py")
    assert (torch.cuda.is_available, triton.testing.do_bench) == before
    assert torch.randn(2, device="cpu").device.type == "cpu"


# --- the command ----------------------------------------------------------------------------------------
def test_the_command_prints_a_table_and_exits_0_for_a_clean_script():
    code, out, err = run_cli(["run", str(SCRIPTS / "vector_add.py"), "300"])
    assert code == 0, err
    assert "result         OK" in out and "scaled_add_kernel" in out and "vector_add.py:25" in out
    assert "n=300 ok" in err  # the script's prints go to stderr; stdout is the report


def test_the_command_json_names_the_race_and_exits_1():
    code, out, err = run_cli(["run", "--json", str(SCRIPTS / "racy_ring.py")])
    assert code == 1, err
    d = json.loads(out)
    assert d["ok"] is False and d["hazards"] > 0 and d["exit_status"] == 0
    h = d["launches"][0]["hazards"][0]
    assert set(h) >= {"kind", "partition", "cta", "cluster", "detail", "line"} and "racy_ring.py" in h["line"]
    assert set(d) == {
        "script",
        "argv",
        "ok",
        "exit_status",
        "script_error",
        "stopped_by",
        "launches",
        "hazards",
        "deadlocks",
        "errors",
        "seconds",
        "output",
    }


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["run", "/no/such/script.py"], "does not exist"),
        (["run", str(SCRIPTS)], "is a folder"),
    ],
)
def test_bad_scripts_are_one_line_errors_with_exit_2(argv, needle):
    code, out, err = run_cli(argv)
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1, err


def test_a_bad_script_is_answered_before_torch_is_imported(tmp_path):
    """The path is checked while the arguments are read: a mistyped name costs no torch import (2 s)."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    probe = (
        "import sys\nfrom gluon_overlap import cli\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n        cli.main(['run', path])\n    except SystemExit as exc:\n        print(exc.code)\n"
        "print('torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "/no/such/script.py", str(SCRIPTS), str(bad)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.stdout.split() == ["2", "2", "2", "False"], (done.stdout, done.stderr)
    said = done.stderr.strip().splitlines()
    assert len(said) == 3 and "does not exist" in said[0] and "is a folder" in said[1], said
    assert "does not compile" in said[2] and "(line 1)" in said[2], said


def test_a_script_that_does_not_compile_is_exit_2(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("def f(:\n    pass\n")
    code, out, err = run_cli(["run", str(path)])
    assert code == 2 and "does not compile" in err and "line 1" in err


def test_a_script_that_loops_is_stopped_by_the_time_limit():
    start = time.perf_counter()
    code, out, err = run_cli(["run", "--json", "--time-limit", "3", str(SCRIPTS / "spins.py")])
    assert code == 1, err
    d = json.loads(out)
    assert d["stopped_by"] == "wall-clock" and "spins.py" in d["script_error"]
    assert time.perf_counter() - start < 60


def test_a_script_that_exits_cannot_end_the_command():
    code, out, err = run_cli(["run", "--json", str(SCRIPTS / "exits.py")])
    assert code == 1, err
    d = json.loads(out)
    assert d["exit_status"] == 3 and d["launches"][0]["ok"]


def test_ctrl_c_exits_130_with_one_line():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        p = subprocess.Popen(
            [sys.executable, "-m", "gluon_overlap", "run", str(SCRIPTS / "spins.py")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    time.sleep(4)  # the script is spinning by now
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, out, err)
    assert err.strip().splitlines()[-1] == "gluon-overlap run: error: interrupted" and out == ""
