"""`gluon-overlap emulate` on the executor: JSON fields, exit status, trace file, --kernel, --seeds, clean errors."""

from __future__ import annotations

import json

from gluon_overlap.cli import main

BASE = [
    "emulate",
    "--a-format",
    "nvfp4",
    "--b-format",
    "nvfp4",
    "--m",
    "512",
    "--n",
    "768",
    "--k",
    "512",
    "--clusters",
    "2",
]


def _json(capsys, *extra: str) -> tuple[int, dict]:
    rc = main([*BASE, *extra, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_clean_run_json(capsys):
    rc, d = _json(capsys)
    assert rc == 0
    assert d["matches_reference"] is True and d["hazards"] == [] and d["deadlock"] is None
    assert d["tiles"] == 6 and d["tiles_per_cluster"] == [3, 3]
    assert d["max_abs_err"] >= 0 and d["rel_err"] < 1e-3
    assert d["events"] > 0 and d["failure"] is None
    assert d["kernel"] == "gluon_overlap/kernel.py"


def test_break_reports_hazards_as_objects(capsys):
    rc, d = _json(capsys, "--break", "even-low-to-high", "--overlap", "on")
    assert rc == 1
    assert d["matches_reference"] is False
    h = d["hazards"][0]
    assert set(h) >= {"kind", "time", "partition", "cta", "cluster", "tile", "columns", "line"}
    assert h["line"].startswith("kernel.py (+even-low-to-high):")


def test_deadlock_json_names_barrier_and_phase(capsys):
    rc, d = _json(capsys, "--break", "wrong-overlap-phase")
    assert rc == 1
    assert d["max_abs_err"] is None  # C was never stored: no NaN/Infinity in the JSON
    blocked = {(b["partition"], b["barrier_name"], b["phase"]) for b in d["deadlock"]["blocked"]}
    assert ("mma", "overlap", 0) in blocked


def test_trace_file_and_table(capsys, tmp_path):
    path = tmp_path / "trace.jsonl"
    assert main([*BASE, "--overlap", "off", "--trace", str(path)]) == 0
    out = capsys.readouterr().out
    assert "matches reference" in out and "OK" in out
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    assert {"kind", "partition", "cta", "cluster", "tile", "t_issue", "t_end"} <= set(first)
    assert any(json.loads(x)["kind"] == "mma" for x in lines)


def test_bad_k_is_a_clean_error(capsys):
    assert (
        main(["emulate", "--a-format", "nvfp4", "--b-format", "nvfp4", "--m", "256", "--n", "256", "--k", "300"]) == 2
    )
    assert "--k=300 must be a multiple of 128" in capsys.readouterr().err


def test_overlap_break_with_overlap_off_is_a_clean_error(capsys):
    assert main([*BASE, "--overlap", "off", "--break", "skip-overlap-wait"]) == 2
    assert "needs overlap on" in capsys.readouterr().err


def test_kernel_file_runs_that_file_and_json_names_it(capsys, tmp_path):
    from gluon_overlap.emulate.kernels import DEFAULT_KERNEL

    edited = tmp_path / "my_kernel.py"
    edited.write_text(DEFAULT_KERNEL.read_text().replace("    tma.store_wait(0)\n", "    pass\n"))
    rc, d = _json(capsys, "--kernel", str(edited))
    assert rc == 1 and d["kernel"] == str(edited)
    assert {h["kind"] for h in d["hazards"]} == {"stores-in-flight-at-exit"}
    assert all(h["line"].startswith("my_kernel.py:") for h in d["hazards"])


def test_kernel_file_that_does_not_exist_is_a_clean_error(capsys, tmp_path):
    assert main([*BASE, "--kernel", str(tmp_path / "nope.py")]) == 2
    err = capsys.readouterr().err
    assert "nope.py" in err and "does not exist" in err and len(err.strip().splitlines()) == 1


def test_a_kernel_that_raises_exits_1_and_says_so(capsys, tmp_path):
    from gluon_overlap.emulate.kernels import DEFAULT_KERNEL

    edited = tmp_path / "inline_asm.py"  # a builtin the interpreter does not implement: an error, with its line
    asm = (
        '    pid = gl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [gl.program_id(0)], dtype=gl.int32, '
        "is_pure=True, pack=1)\n"
    )
    edited.write_text(DEFAULT_KERNEL.read_text().replace("    tma.store_wait(0)\n", asm + "    tma.store_wait(0)\n"))
    assert main([*BASE, "--kernel", str(edited)]) == 1
    out = capsys.readouterr().out
    assert "kernel raised" in out and "inline_asm_elementwise" in out and "BROKEN" in out


def test_seeds_sweep_reports_counts_and_the_first_failing_seed(capsys):
    rc, d = _json(capsys, "--seeds", "3")
    assert rc == 0 and d["sweep"]["seeds"] == 3 and d["sweep"]["failed_runs"] == 0
    assert d["sweep"]["first_failing_seed"] is None
    rc, d = _json(capsys, "--seeds", "3", "--break", "wrong-overlap-phase")
    assert rc == 1
    assert (d["sweep"]["deadlock_runs"], d["sweep"]["failed_runs"], d["sweep"]["first_failing_seed"]) == (3, 3, 0)
    assert d["events"] is None  # an untraced sweep recorded nothing: no count of 0 that reads as "no operations"
    assert main([*BASE, "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "OK in all 2 interleavings" in out and "not recorded (a sweep runs untraced" in out


def test_a_sweep_too_long_for_this_machine_is_refused_before_it_starts(capsys):
    assert main([*BASE, "--seeds", "10000000"]) == 2
    err = capsys.readouterr().err
    assert "--seeds 10000000 would take" in err and "at most" in err and len(err.strip().splitlines()) == 1
