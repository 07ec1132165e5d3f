"""The recorded H200 L2-feed measurement (data/measurements/h200-l2-feed.json): the device loaded the boxes each order
promises, every rate follows from its bytes and time, and the claims of its reading hold on the rows."""

from __future__ import annotations

import benchmark_scripts  # tests/support is on sys.path (tests/conftest.py)
import measurement_records
import pytest

BOX_BYTES = 128 * 128  # one CTA's 128 rows of one 128-byte K step
TILE = 256


@pytest.fixture(scope="module")
def record() -> dict:
    return measurement_records.load("h200-l2-feed")


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("triton")  # the script builds Gluon kernels at import; the record's arithmetic needs none
    return benchmark_scripts.load("h200_l2_feed")


def _rates(record: dict) -> dict[tuple[str, int], float]:
    return {(r["order"], r["k"]): r["bytes"] / r["seconds"] / 1e12 for r in record["rows"]}


def test_every_launch_moved_the_bytes_of_its_walks_and_its_rate_is_bytes_over_time(record):
    tiles = (record["m"] // TILE) * (record["n"] // TILE)
    assert {r["k"] for r in record["rows"]} == {512, 1024, 2048}
    for row in record["rows"]:
        per_walk = tiles * 2 * (row["k"] // 128) * 2 * BOX_BYTES  # two CTAs a tile, A and B a step
        assert row["bytes"] == per_walk * row["walks"]
        assert 8e9 <= row["bytes"] <= 9e9  # about 8 GB a launch, as the method says
        assert row["tb_s"] == pytest.approx(row["bytes"] / row["seconds"] / 1e12, rel=1e-12)
        assert row["ctas"] == 2 * (record["sms"] // 2) == 132


def test_the_device_loaded_what_each_order_promises(record, bench):
    """Every CTA's first loads, as the H200 issued them, are the boxes ``coords`` names for its order."""
    tiles_m, tiles_n = record["m"] // TILE, record["n"] // TILE
    for row in record["rows"]:
        clusters = row["ctas"] // 2
        for pid, loads in enumerate(row["trace"]):
            for j, got in enumerate(loads):
                want = bench.coords(row["order"], pid, j, clusters, row["k"], tiles_m, tiles_n)
                assert tuple(got) == want, (row["order"], row["k"], pid, j)


def test_each_derived_figure_is_its_row(record):
    rates = _rates(record)
    assert len(record["derived"]) == len(record["rows"]) == 12
    for d in record["derived"]:
        rate = rates[(d["order"], d["k"])]
        assert d["tb_s"] == pytest.approx(rate, abs=6e-4)
        assert d["over_private"] == pytest.approx(rate / rates[("private", d["k"])], abs=6e-5)
        assert d["over_kernel"] == pytest.approx(rate / rates[("kernel", d["k"])], abs=6e-5)
        assert d["bytes_per_clk_per_sm"] == pytest.approx(rate * 1e12 / record["sms"] / 1.98e9, abs=6e-3)


def test_the_kernels_in_step_sharing_does_not_starve_it(record):
    """The reading's claims: the kernel's order gets at least 0.93 of the grouped order's feed and at least 1.19 of
    private tiles'; putting its clusters out of step gains nothing (0.94-1.00 of the in-step rate)."""
    rates = _rates(record)
    for k in (512, 1024, 2048):
        kernel = rates[("kernel", k)]
        assert kernel >= 0.93 * rates[("grouped", k)], k
        assert kernel >= 1.19 * rates[("private", k)], k
        assert 0.939 * kernel <= rates[("kernel, K rotated", k)] <= kernel, k
    low, high = min(rates.values()), max(rates.values())
    assert 8.0 <= low and high <= 10.7  # the range the reading and docs/NOTES.md quote


def test_the_record_says_what_it_rests_on(record):
    assert "1980 MHz, 1980 MHz" in record["nvidia_smi"]  # the SM ran at its maximum clock
    assert "benchmarks/h200_l2_feed.py" in record["how"]
    assert "Hopper, not Blackwell" in record["transfer"]


def test_the_figures_the_reading_and_notes_quote_are_the_records(record):
    rates = _rates(record)

    def span(values, digits: int = 2) -> str:
        return f"{min(values):.{digits}f}-{max(values):.{digits}f}"

    ks = (512, 1024, 2048)
    quoted = [
        span([rates[("kernel", k)] for k in ks]) + " TB/s",
        span([rates[("grouped", k)] for k in ks]),
        span([rates[("private", k)] for k in ks]) + " TB/s",
        span([rates[("kernel", k)] / rates[("grouped", k)] for k in ks], 3) + " of it",
        span([rates[("kernel", k)] / rates[("private", k)] for k in ks]) + " times private tiles",
        span([rates[("kernel, K rotated", k)] / rates[("kernel", k)] for k in ks]) + " of",
    ]
    measurement_records.assert_quoted(quoted, record["reading"], measurement_records.three_h200_measurements())
