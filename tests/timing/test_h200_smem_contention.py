"""The recorded H200 shared-memory contention measurement (data/measurements/h200-smem-contention.json): every derived
figure follows from the record's rows, and the claims of its reading hold on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RECORD = Path(__file__).resolve().parents[2] / "data" / "measurements" / "h200-smem-contention.json"
SMEM_BYTES_PER_CLK = 128  # Hopper's shared memory per SM and clock
F16_MACS_PER_CLK = 2048  # H100/H200 dense float16 per SM and clock
EPILOGUE = "st.shared + TMA store"


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads(RECORD.read_text())


def _moved(row: dict) -> float:
    return row["subtiles_during_mma"] * row["drain_bytes_per_subtile"]


def _drain_rate(row: dict) -> float:
    """Bytes per clock the drain moved while the MMAs ran: over its own time if it finished first, else theirs."""
    finished = row["subtiles_during_mma"] >= row["drains"]
    return _moved(row) / (row["drain_beside_mma_clk"] if finished else row["mma_beside_drain_clk"])


def _rows(record: dict, mma: str, drain: str) -> list[dict]:
    rows = [r for r in record["results"] if r["mma"] == mma and r["drain"] == drain]
    assert len(rows) == 2, (mma, drain)  # a short drain and one that outlasts the MMAs
    return rows


def test_each_derived_figure_is_its_row(record):
    assert len(record["results"]) == len(record["derived"]) == 24
    for row, d in zip(record["results"], record["derived"], strict=True):
        assert (d["mma"], d["drain"], d["drains"]) == (row["mma"], row["drain"], row["drains"])
        lost = row["mma_beside_drain_clk"] - row["mma_alone_clk"]
        assert d["mma_lost_pct"] == pytest.approx(100 * lost / row["mma_alone_clk"], abs=0.006)
        assert d["mma_lost_clk_per_kb_drained"] == pytest.approx(lost / (_moved(row) / 1024), abs=0.006)
        alone = row["drain_bytes_per_subtile"] / row["drain_alone_clk_per_subtile"]
        assert d["drain_bytes_per_clk_alone"] == pytest.approx(alone, abs=0.06)
        assert d["drain_bytes_per_clk_beside_mma"] == pytest.approx(_drain_rate(row), abs=0.06)
        assert d["drain_finished_first"] == (row["subtiles_during_mma"] >= row["drains"])


def test_the_mmas_alone_run_at_the_float16_rate_and_use_the_stated_shared_memory(record):
    for row in record["results"]:
        clk_per_iter = 64 * row["n"] * 64 / F16_MACS_PER_CLK
        assert row["mma_alone_clk"] / row["iters"] == pytest.approx(clk_per_iter, rel=0.01), row["mma"]
        read = (0 if row["a_in_regs"] else 64 * 64 * 2) + 64 * row["n"] * 2
        assert row["mma_smem_bytes_per_clk"] == pytest.approx(read / clk_per_iter, abs=0.01)


def test_both_drain_sizes_give_the_same_rates(record):
    for mma in ("SS n64", "SS n128", "SS n256", "RS n256"):
        for drain in ("st.shared", EPILOGUE, "TMA store"):
            short, long = _rows(record, mma, drain)
            assert _drain_rate(short) == pytest.approx(_drain_rate(long), rel=0.02), (mma, drain)


def test_mmas_that_leave_spare_bandwidth_keep_it_and_the_drain_gets_half_the_spare(record):
    for mma in ("SS n128", "SS n256", "RS n256"):
        for row in _rows(record, mma, EPILOGUE) + _rows(record, mma, "TMA store"):
            lost = row["mma_beside_drain_clk"] - row["mma_alone_clk"]
            assert 100 * lost / row["mma_alone_clk"] <= 0.02, (mma, row["drain"])
        for row in _rows(record, mma, "st.shared"):
            assert row["mma_beside_drain_clk"] / row["mma_alone_clk"] - 1 <= 0.0156 + 1e-4, mma
        spare = SMEM_BYTES_PER_CLK - _rows(record, mma, EPILOGUE)[0]["mma_smem_bytes_per_clk"]
        for row in _rows(record, mma, EPILOGUE):
            assert 0.47 <= _drain_rate(row) / spare <= 0.52, mma


def test_beside_mmas_that_fill_shared_memory_the_drain_crawls_and_costs_them_more_than_its_bytes(record):
    costs = {}
    for drain, (floor, lo, hi) in {
        "st.shared": (6.0, 7.5, 9.0),  # about byte for byte: 1024 / 128 = 8 clocks per KB
        EPILOGUE: (2.0, 16.0, 18.0),  # about twice its bytes
        "TMA store": (1.0, 30.0, 34.0),  # about four times
    }.items():
        for row in _rows(record, "SS n64", drain):
            assert row["mma_smem_bytes_per_clk"] == SMEM_BYTES_PER_CLK
            assert _drain_rate(row) <= floor, drain
            per_kb = (row["mma_beside_drain_clk"] - row["mma_alone_clk"]) / (_moved(row) / 1024)
            assert lo <= per_kb <= hi, drain
            costs[drain] = per_kb
    assert costs["TMA store"] > 3 * costs["st.shared"]


def test_the_record_says_what_it_rests_on(record):
    assert record["raw"]["nvidia_smi_busy"]["sm_clock_mhz"] == [1980]  # no power limit: cycles are clocks
    assert "Hopper" in record["transfer"] and "not measured" in record["transfer"]
    assert "benchmarks/h200_smem_contention.py" in record["how"]
