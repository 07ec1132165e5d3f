"""`gluon-overlap emulate`: JSON fields, exit status, trace file, clean errors."""

from __future__ import annotations

import json

from gluon_overlap.cli import main

BASE = ["emulate", "--a-format", "nvfp4", "--b-format", "nvfp4", "--m", "512", "--n", "768", "--k", "512",
        "--clusters", "2"]


def _json(capsys, *extra: str) -> tuple[int, dict]:
    rc = main([*BASE, *extra, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_clean_run_json(capsys):
    rc, d = _json(capsys)
    assert rc == 0
    assert d["matches_reference"] is True and d["hazards"] == [] and d["deadlock"] is None
    assert d["tiles"] == 6 and d["tiles_per_cluster"] == [3, 3]
    assert d["max_abs_err"] >= 0 and d["rel_err"] < 1e-3
    assert d["events"] > 0


def test_break_reports_hazards_as_objects(capsys):
    rc, d = _json(capsys, "--break", "even-low-to-high", "--overlap", "on")
    assert rc == 1
    assert d["matches_reference"] is False
    h = d["hazards"][0]
    assert set(h) >= {"kind", "time", "partition", "cta", "cluster", "tile", "columns"}


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
    assert main(["emulate", "--a-format", "nvfp4", "--b-format", "nvfp4", "--m", "256", "--n", "256",
                 "--k", "300"]) == 2
    assert "--k=300 must be a multiple of 128" in capsys.readouterr().err


def test_overlap_break_with_overlap_off_is_a_clean_error(capsys):
    assert main([*BASE, "--overlap", "off", "--break", "skip-overlap-wait"]) == 2
    assert "needs overlap on" in capsys.readouterr().err
