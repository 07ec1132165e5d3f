"""The recorded H200 burst-write measurement (data/measurements/h200-burst-writes.json): every derived figure follows
from the record's runs, the runs it leaves out are the ones that missed their schedule, and the claims of its reading
hold on the rows."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

RECORD = Path(__file__).resolve().parents[2] / "data" / "measurements" / "h200-burst-writes.json"


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads(RECORD.read_text())


def _scheduled(record: dict) -> list[dict]:
    return [r for r in record["rows"] if r["mode"] in ("bursts", "smooth")]


def _on_schedule(record: dict, row: dict) -> list[dict]:
    return [run for run in row["runs"] if run["latest_burst_start_ns"] < record["late_run_ns"]]


def _achieved(record: dict) -> dict[tuple[str, int, float], float]:
    return {
        (r["mode"], r["burst_subtiles"], r["duty"]): statistics.median(x["tb_s"] for x in _on_schedule(record, r))
        for r in _scheduled(record)
    }


def test_the_late_runs_left_out_are_the_six_that_started_far_behind_their_schedule(record):
    late = [run for row in _scheduled(record) for run in row["runs"] if run not in _on_schedule(record, row)]
    assert len(late) == 6
    assert all(100e6 <= run["latest_burst_start_ns"] <= 140e6 for run in late)  # a compile: 105-139 ms late
    kept = [run for row in _scheduled(record) for run in _on_schedule(record, row)]
    assert max(run["latest_burst_start_ns"] for run in kept) < 100e3  # the rest: at most the smooth shortfall
    assert all(len(_on_schedule(record, row)) >= 2 for row in _scheduled(record))
    assert all(run["one_cta_per_sm"] for row in record["rows"] if "runs" in row for run in row["runs"])


def test_each_derived_figure_is_its_row(record):
    achieved = _achieved(record)
    stream = record["stream_tb_s"]
    rows = _scheduled(record)
    assert len(record["derived"]) == len(rows) == 30
    for row, d in zip(rows, record["derived"], strict=True):
        key = (row["mode"], row["burst_subtiles"], row["duty"])
        assert (d["mode"], d["burst_subtiles"], d["duty"]) == key
        assert d["runs_on_schedule"] == len(_on_schedule(record, row))
        assert d["achieved_tb_s"] == pytest.approx(achieved[key], abs=6e-5)
        assert d["achieved_over_asked"] == pytest.approx(achieved[key] / row["asked_tb_s"], abs=6e-5)
        assert row["asked_tb_s"] == pytest.approx(row["duty"] * stream, rel=1e-4)
        if row["mode"] == "bursts":
            assert d["in_burst_over_stream"] == pytest.approx(row["burst_tb_s"] / stream, abs=6e-5)
    stream_row = record["rows"][0]
    assert stream_row["mode"] == "stream"
    assert stream == pytest.approx(statistics.median(run["tb_s"] for run in stream_row["runs"]), abs=6e-5)


def test_bursts_keep_every_asked_average_and_smooth_stores_never_beat_them(record):
    achieved = _achieved(record)
    for (mode, burst, duty), rate in achieved.items():
        asked = duty * record["stream_tb_s"]
        if mode == "bursts":
            assert 0.999 * asked <= rate <= 1.03 * asked, (burst, duty)
            assert rate >= achieved[("smooth", burst, duty)] - 1e-4, (burst, duty)
    assert achieved[("smooth", 8, 0.95)] <= 0.951 * 0.95 * record["stream_tb_s"]  # the shortfall the reading names


def test_l2_takes_a_burst_faster_than_hbm_drains_it(record):
    for row in _scheduled(record):
        if row["mode"] == "bursts":
            assert 1.25 <= row["burst_tb_s"] / record["stream_tb_s"] <= 1.3, row["burst_subtiles"]
    assert record["fill_tb_s"] == pytest.approx(record["stream_tb_s"], rel=0.1)  # the stream is an HBM write rate


def test_the_record_says_what_it_rests_on(record):
    assert "1980 MHz" in record["nvidia_smi"]
    assert "benchmarks/h200_burst_writes.py" in record["how"]
    assert "not Blackwell" in record["transfer"]
