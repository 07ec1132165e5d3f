"""The recorded H200 burst-write measurement (data/measurements/h200-burst-writes.json): every derived figure follows
from the record's runs, the runs it leaves out are the ones that missed their schedule, and the claims of its reading
hold on the rows."""

from __future__ import annotations

import statistics

import measurement_records  # tests/support is on sys.path (tests/conftest.py)
import pytest


@pytest.fixture(scope="module")
def record() -> dict:
    return measurement_records.load("h200-burst-writes")


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


def _bursts(record: dict) -> list[dict]:
    return [r for r in _scheduled(record) if r["mode"] == "bursts"]


def test_bursts_keep_every_asked_average_and_start_on_time(record):
    """Within the method's resolution (about 3 %: the window and L2, see the reading), and smooth stores never beat
    them; the smooth shortfall at duty 0.95 is the one the reading names (its cause is not measured)."""
    achieved = _achieved(record)
    for (mode, burst, duty), rate in achieved.items():
        asked = duty * record["stream_tb_s"]
        if mode == "bursts":
            assert 0.999 * asked <= rate <= 1.03 * asked, (burst, duty)
            assert rate >= achieved[("smooth", burst, duty)] - 1e-4, (burst, duty)
    for row in _bursts(record):
        assert max(run["latest_burst_start_ns"] for run in _on_schedule(record, row)) < 400
    assert achieved[("smooth", 8, 0.95)] <= 0.951 * 0.95 * record["stream_tb_s"]


def test_inside_a_burst_the_stores_leave_at_one_rate_whatever_the_duty(record):
    """The in-burst rate (stores leaving shared memory) is the same in every row, 1.25-1.3 times the stream's."""
    rates = [row["burst_tb_s"] for row in _bursts(record)]
    assert max(rates) / min(rates) <= 1.01
    assert all(1.25 <= r / record["stream_tb_s"] <= 1.3 for r in rates)
    assert record["fill_tb_s"] == pytest.approx(record["stream_tb_s"], rel=0.1)  # the stream is near torch's fill_


def test_the_figures_the_reading_and_notes_quote_are_the_records(record):
    achieved = _achieved(record)
    bursts = _bursts(record)
    over_asked = [achieved[("bursts", r["burst_subtiles"], r["duty"])] / r["asked_tb_s"] for r in bursts]
    inside = [r["burst_tb_s"] for r in bursts]
    late = [run["latest_burst_start_ns"] for row in _scheduled(record) for run in row["runs"]]
    late = [ns for ns in late if ns >= record["late_run_ns"]]
    kept = max(run["latest_burst_start_ns"] for row in bursts for run in _on_schedule(record, row))
    smooth = achieved[("smooth", 8, 0.95)] / (0.95 * record["stream_tb_s"])
    runs = sum(len(row["runs"]) for row in _scheduled(record))
    quoted = [
        f"{record['stream_tb_s']:.2f} TB/s",
        f"{min(over_asked):.4f}-{max(over_asked):.3f} of it",
        f"{min(inside):.2f}-{max(inside):.2f} TB/s",
        f"at most {kept} ns late",
        f"{smooth:.2f} of the asked at duty 0.95",
        f"six of the {runs} runs",
        f"{min(late) / 1e6:.0f}-{max(late) / 1e6:.0f} ms late",
    ]
    assert len(late) == 6
    reading = record["reading"] + " " + record["late_runs"]
    measurement_records.assert_quoted(quoted, reading, measurement_records.three_h200_measurements())


def test_the_record_says_what_it_rests_on(record):
    assert "1980 MHz" in record["nvidia_smi"]
    assert "benchmarks/h200_burst_writes.py" in record["how"]
    assert "not Blackwell" in record["transfer"]
