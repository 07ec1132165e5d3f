"""The prepared H200 burst-write measurement (benchmarks/h200_burst_writes.py) builds for sm_90a, stores the kernel's
epilogue subtile as the kernel's epilogue does, and asks for the averages it claims.

No record exists yet (no device was lent in the session that wrote it, docs/NOTES.md)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

pytest.importorskip("triton")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "h200_burst_writes.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("h200_burst_writes", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ptx(bench):
    return bench.compile_only()


def test_every_mode_builds_with_one_tma_store_on_the_global_timer(bench, ptx):
    assert set(ptx) == set(bench.MODES.values())
    for text in ptx.values():
        assert ".target sm_90a" in text
        assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", text)) == 1
        assert re.search(r"cp\.async\.bulk\.wait_group\.read\s+1;", text)  # two stores in flight, as the epilogue
        assert "%globaltimer" in text


def test_it_stores_the_kernels_epilogue_subtile(bench):
    from gluon_overlap.kernel import EPILOGUE_BLOCK_N, OUT_DTYPE
    from gluon_overlap.timing.costs import ROWS_PER_CTA

    assert (bench.ROWS, bench.COLS) == (ROWS_PER_CTA, EPILOGUE_BLOCK_N)
    assert bench.SUBTILE_BYTES == ROWS_PER_CTA * EPILOGUE_BLOCK_N * OUT_DTYPE.itemsize == 8192
    assert bench.BURST * bench.COLS == 512  # a burst is a CTA's 128 rows of two 256-column tiles' worth: 128 KB
    assert bench.C_ROWS * bench.C_COLS * 2 == 2**31  # 2 GiB: forty times the H200's L2


def test_the_period_asks_for_the_duty(bench):
    # 132 CTAs x 16 x 8 KB = 17.3 MB a period; at 0.5 of 3.9 TB/s that is 8.87 us
    assert bench.period_for(0.5, 3.9, 132) == round(132 * 16 * 8192 / (0.5 * 3.9e12) * 1e9) == 8873
    for duty in bench.DUTIES:
        period = bench.period_for(duty, 3.9, 132)
        asked = 132 * 16 * 8192 / (period * 1e-9) / 1e12
        assert asked == pytest.approx(duty * 3.9, rel=1e-3)
    for bad in ((0.0, 3.9, 132), (1.5, 3.9, 132), (0.5, 0.0, 132), (0.5, 3.9, 0)):
        with pytest.raises(ValueError, match="must be"):
            bench.period_for(*bad)


def test_a_bad_repeat_count_is_refused(bench, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["h200_burst_writes.py", "--repeats", "0"])
    with pytest.raises(SystemExit) as exit_info:
        bench.main()
    assert exit_info.value.code == 2
    assert "at least 1" in capsys.readouterr().err
