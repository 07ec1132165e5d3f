"""The H200 burst-write measurement (benchmarks/h200_burst_writes.py) builds for sm_90a, stores the kernel's
epilogue subtile as the kernel's epilogue does, keeps each mode's schedule, and asks for the averages it claims.

Its record, data/measurements/h200-burst-writes.json, is checked by test_h200_burst_writes_record.py."""

from __future__ import annotations

import re

import benchmark_scripts  # tests/support is on sys.path (tests/conftest.py)
import pytest

pytest.importorskip("triton")


@pytest.fixture(scope="module")
def bench():
    return benchmark_scripts.load("h200_burst_writes")


@pytest.fixture(scope="module")
def ptx(bench):
    return bench.compile_only()


def _count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text))


def test_every_mode_builds_with_one_tma_store_and_its_own_schedule(bench, ptx):
    assert set(ptx) == {*bench.MODES.values(), "base", "calibrate"}
    for name in bench.MODES.values():
        text = ptx[name]
        assert ".target sm_90a" in text
        assert _count(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", text) == 1
        assert _count(r"cp\.async\.bulk\.wait_group\.read\s+1;", text) == 1  # two stores in flight, as the epilogue
        assert "%smid" in text
    stream, bursts, smooth = ptx["stream"], ptx["bursts"], ptx["smooth"]
    # a burst ends when its last store has left shared memory: a second wait for all, beside the launch's last one
    assert _count(r"wait_group\.read\s+0;", bursts) == 2 == _count(r"wait_group\.read\s+0;", stream) + 1
    assert _count(r"wait_group\.read\s+0;", smooth) == 1
    # the modes that keep a schedule read the shared timer at each period and the SM's cycles within it
    for scheduled in (bursts, smooth):
        assert scheduled.count("%globaltimer") > stream.count("%globaltimer")
        assert scheduled.count("%clock64") > stream.count("%clock64")
    assert len({stream, bursts, smooth}) == 3


def test_it_stores_the_kernels_epilogue_subtile(bench):
    from gluon_overlap.kernel import EPILOGUE_BLOCK_N, OUT_DTYPE
    from gluon_overlap.timing.costs import BLOCK_N, ROWS_PER_CTA

    assert (bench.ROWS, bench.COLS) == (ROWS_PER_CTA, EPILOGUE_BLOCK_N)
    assert bench.SUBTILE_BYTES == ROWS_PER_CTA * EPILOGUE_BLOCK_N * OUT_DTYPE.itemsize == 8192
    assert bench.TILE_SUBTILES * bench.COLS == BLOCK_N  # the smallest burst is one CTA's share of a tile: 64 KB
    assert bench.TILE_SUBTILES in bench.BURSTS
    assert bench.C_ROWS * bench.C_COLS * 2 == 2**31  # 2 GiB: forty times the H200's L2


def test_the_schedule_asks_for_the_duty(bench):
    # 132 CTAs x 8 x 8 KB = 8.65 MB a period; at 0.5 of 3.9 TB/s that is 4.44 us, 555 ns a smooth slot
    period, slot = bench.schedule(0.5, 3.9, 132, 8, 1.98)
    assert period == round(132 * 8 * 8192 / (0.5 * 3.9e12) * 1e9) == 4436
    assert slot == round(4436 * 1.98 / 8) == 1098
    for burst in bench.BURSTS:
        for duty in bench.DUTIES:
            period, _ = bench.schedule(duty, 3.9, 132, burst, 1.98)
            asked = 132 * burst * 8192 / (period * 1e-9) / 1e12
            assert asked == pytest.approx(duty * 3.9, rel=2e-3)
    for bad in ((0.0, 3.9, 132, 8, 2.0), (1.5, 3.9, 132, 8, 2.0), (0.5, 0.0, 132, 8, 2.0), (0.5, 3.9, 132, 0, 2.0)):
        with pytest.raises(ValueError, match="must be"):
            bench.schedule(*bad)


def test_a_launchs_figures_from_its_log(bench):
    """Two CTAs on two SMs, 400 stores each: the middle half (200 stores each, 3.2768 MB) over the earliest quarter
    mark to the latest three-quarter mark; the bursts' rate over the median CTA's 1,000,000 cycles at 2 a ns."""
    log = [[3, 0, 1_000, 2_000, 1_000_000, 40], [7, 0, 1_200, 2_100, 1_000_000, 90]]
    got = bench.summarize(log, 400, 2.0)
    assert got["tb_s"] == pytest.approx(2 * 200 * 8192 / (2_100 - 1_000) / 1e3)
    assert got["burst_tb_s"] == pytest.approx(2 * 400 * 8192 / 500_000 / 1e3)
    assert got["latest_burst_start_ns"] == 90
    assert got["one_cta_per_sm"] is True
    shared = bench.summarize([[3, 0, 1_000, 2_000, 0, 0], [3, 0, 1_000, 2_000, 0, 0]], 400, 2.0)
    assert shared["one_cta_per_sm"] is False and "burst_tb_s" not in shared  # two CTAs on SM 3; no bursts
    with pytest.raises(ValueError, match="one row of 6 numbers per CTA"):
        bench.summarize([[1, 2, 3]], 400, 2.0)


def test_the_device_schedule_by_hand(bench):
    """The kernel's own schedule functions, run on this project's CPU executor: the first boundary 100 us after the
    base, burst b at b periods on, smooth stores evenly spaced in cycles."""
    from gluon_overlap.interp.launch import call

    def run(fn, *args):
        return int(call(fn, *args))

    assert run(bench._first_period, 5_000_123, 9_000) == 5_103_000  # the boundary after 5_000_123 + 100_000 (567 x)
    assert run(bench._first_period, 5_103_000 - 100_000, 9_000) == 5_112_000  # landing on a boundary: the next one
    assert run(bench._period_due, 1_000_000, 0, 8, 9_000) == 1_000_000
    assert run(bench._period_due, 1_000_000, 8, 8, 9_000) == 1_009_000
    assert run(bench._period_due, 1_000_000, 2_399, 8, 9_000) == 1_000_000 + 299 * 9_000
    assert (
        run(bench._period_due, 0, 3_199, 128, 3_000_000_000) == 24 * 3_000_000_000
    )  # past 2^31 ns (the kernel passes i as int64)
    assert [run(bench._slot_due, 500, i, 8, 1_098) for i in (8, 9, 15, 16)] == [500, 1_598, 500 + 7 * 1_098, 500]


def test_a_bad_repeat_count_is_refused(bench, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["h200_burst_writes.py", "--repeats", "0"])
    with pytest.raises(SystemExit) as exit_info:
        bench.main()
    assert exit_info.value.code == 2
    assert "at least 1" in capsys.readouterr().err
