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


# --- the second experiment: TMA loads (a mainloop's stage writes) beside the MMAs ---------------------------------
def _load_rows(record: dict) -> dict[tuple[str, str], dict]:
    return {(r["mma"], r["beside"]): r for r in record["loads"]["results"]}


def _rates(row: dict) -> tuple[float, float, float]:
    """(MMA time lost, fraction; loads' and drain's bytes per clock while the MMAs ran)."""
    t = row["mma_beside_clk"]
    return (
        t / row["mma_alone_clk"] - 1,
        row["loads_during_mma"] * row["load_bytes"] / t,
        row["subtiles_during_mma"] * row["drain_bytes_per_subtile"] / t,
    )


def test_each_derived_load_figure_is_its_row(record):
    part = record["loads"]
    assert len(part["results"]) == len(part["derived"]) == 12
    for row, d in zip(part["results"], part["derived"], strict=True):
        assert (d["mma"], d["beside"]) == (row["mma"], row["beside"])
        lost, loads, drain = _rates(row)
        assert d["mma_lost_pct"] == pytest.approx(100 * lost, abs=6e-4)
        assert d["load_bytes_per_clk_alone"] == pytest.approx(
            row["load_bytes"] / row["load_alone_clk_per_load"], abs=0.06
        )
        assert d["load_bytes_per_clk_beside_mma"] == pytest.approx(loads, abs=0.06)
        assert d["drain_bytes_per_clk_beside_mma"] == pytest.approx(drain, abs=0.06)


def test_tma_loads_do_not_take_from_the_mmas_shared_memory_budget(record):
    rows = _load_rows(record)
    for mma in ("SS n64", "SS n128", "SS n256", "RS n256"):
        row = rows[(mma, "loads")]
        lost, loads, _ = _rates(row)
        assert loads >= 0.95 * row["load_bytes"] / row["load_alone_clk_per_load"], mma  # as fast as alone
        assert lost <= (0.005 if mma == "SS n64" else 0.0001), mma
    # even beside reads that fill shared memory, reads + writes exceed its 128 B/clk
    _, loads, _ = _rates(rows[("SS n64", "loads")])
    assert rows[("SS n64", "loads")]["mma_smem_bytes_per_clk"] + loads > 1.25 * SMEM_BYTES_PER_CLK


def test_the_drain_keeps_about_half_the_spare_and_shares_the_tma_engine_with_the_loads(record):
    rows = _load_rows(record)
    for mma in ("SS n128", "SS n256", "RS n256"):
        alone = rows[(mma, "drain")]
        spare = SMEM_BYTES_PER_CLK - alone["mma_smem_bytes_per_clk"]
        assert 0.47 <= _rates(alone)[2] / spare <= 0.52, mma
        _, loads, drain = _rates(rows[(mma, "drain and loads")])
        assert loads == pytest.approx(drain, rel=0.05), mma  # turns on one TMA engine
        assert 0.78 <= drain / _rates(alone)[2] <= 0.9, mma  # slower than beside the MMAs alone
    _, loads, drain = _rates(rows[("SS n64", "drain and loads")])
    assert loads < 3 and drain < 2  # beside reads that fill shared memory, both crawl
