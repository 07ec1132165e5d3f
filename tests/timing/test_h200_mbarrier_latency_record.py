"""The recorded H200 mbarrier hand-over measurement (data/measurements/h200-mbarrier-latency.json): every derived
figure follows from the runs, the two clocks agree, the kernels it ran are the ones the script still builds, and the
claims of its reading hold against the B300 description."""

from __future__ import annotations

import re
import statistics

import benchmark_scripts  # tests/support is on sys.path (tests/conftest.py)
import measurement_records
import pytest

from gluon_overlap.hardware import load_hardware


@pytest.fixture(scope="module")
def record() -> dict:
    return measurement_records.load("h200-mbarrier-latency")


def _hop(record: dict, pair: str) -> float:
    return statistics.median(h for run in record["results"][pair]["runs"] for h in run["hop_clk"])


def _entries(ptx: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(r"\.visible \.entry (\w+)\(.*?\n}\n", ptx, re.S)}


def test_each_derived_figure_is_its_runs(record):
    assert [d["pair"] for d in record["derived"]] == list(record["results"])
    for d in record["derived"]:
        hops = [h for run in record["results"][d["pair"]]["runs"] for h in run["hop_clk"]]
        assert len(record["results"][d["pair"]]["runs"]) == record["repeats"] == 5
        assert d["median_hop_clk"] == pytest.approx(statistics.median(hops), abs=0.006)
        assert (d["min_hop_clk"], d["max_hop_clk"]) == (min(hops), max(hops))


def test_every_pair_reported_and_the_two_clocks_agree(record):
    for pair, result in record["results"].items():
        for run in result["runs"]:
            every_sm = record["sms"] if pair.startswith("local") else record["sms"] // 2
            assert run["leaders_reporting"] == run["pairs"] == (1 if "one pair" in pair else every_sm)
            for clk, ns in zip(run["hop_clk"], run["hop_ns"], strict=True):
                assert clk / ns == pytest.approx(1.98, rel=0.01)  # SM clocks over global-timer ns: 1980 MHz


def test_the_measured_kernels_are_the_ones_the_script_builds(record):
    bench = benchmark_scripts.load("h200_mbarrier_latency")
    measured, built = _entries(record["ptx"]), _entries(bench.ptx())
    assert set(measured) == set(built) == {name for name, _, _ in bench.KERNELS.values()}
    for name, text in measured.items():
        assert built[name] == text, name
    assert {pair.rsplit(", ", 1)[0] for pair in record["results"]} == set(bench.KERNELS)


def test_the_earlier_call_agrees(record):
    """The first call (three of the kernels) gave the same medians within 0.1 clock."""
    for pair, median in record["first_call"].items():
        assert _hop(record, pair) == pytest.approx(median, abs=0.1), pair


def test_the_reading_holds_against_the_b300_description(record):
    b300 = load_hardware("b300")
    low, high = b300.value_range("mbarrier_local_clk")
    for pair in ("local, one pair", "local, every SM", "local-warp, one pair", "local-warp, every SM"):
        assert _hop(record, pair) == 62.5 and low <= 62.5 <= high, pair
    warp = (_hop(record, "remote-warp, one pair"), _hop(record, "remote-warp, every SM"))
    relay = (_hop(record, "remote-relay, one pair"), _hop(record, "remote-relay, every SM"))
    assert max(warp) < min(relay)  # a warp woken by one lane is faster than four warps meeting first
    assert _hop(record, "remote, one pair") == 279.5 > 1.5 * max(relay)  # the lone thread: the kernel's artifact
    assert 2.3 <= b300.mbarrier_remote_clk / max(relay) and b300.mbarrier_remote_clk / min(warp) <= 2.9


def test_the_figures_the_reading_and_notes_quote_are_the_records(record):
    """Every figure the reading and docs/NOTES.md quote, computed here from the runs."""
    fitted = load_hardware("b300").mbarrier_remote_clk
    relay_all = [h for run in record["results"]["remote-relay, every SM"]["runs"] for h in run["hop_clk"]]
    thread_runs = record["results"]["remote, every SM"]["runs"]
    fast_pairs = [sum(h < 279.5 for h in run["hop_clk"]) for run in thread_runs]
    assert {h for run in thread_runs for h in run["hop_clk"]} == {205.5, 279.5}
    warp_all = _hop(record, "remote-warp, every SM")
    relay_every = _hop(record, "remote-relay, every SM")
    quoted = [
        f"{_hop(record, 'local, every SM'):g} clocks",
        f"{_hop(record, 'remote-warp, one pair'):g} clocks for one pair and {warp_all:.1f} with a pair on every SM",
        f"{_hop(record, 'remote-relay, one pair'):g} and {relay_every:.1f}",
        f"{min(relay_all):.1f}-{max(relay_all):.1f}",
        f"{min(fast_pairs)}-{max(fast_pairs)} of the 66 pairs",
        f"{fitted / relay_every:.1f} to {fitted / warp_all:.1f} times",
    ]
    measurement_records.assert_quoted(quoted, record["reading"], measurement_records.three_h200_measurements())
