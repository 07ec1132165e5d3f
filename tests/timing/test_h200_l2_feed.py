"""The prepared H200 L2-feed measurement (benchmarks/h200_l2_feed.py) builds for sm_90a, moves a CTA's K step as the
compiled kernel does, and walks the tiles in the order the kernel's scheduler and the timing model use.

No record exists yet (no device was lent in the session that wrote it, docs/NOTES.md)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

pytest.importorskip("triton")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "h200_l2_feed.py"
H200_CLUSTERS, B300_CLUSTERS = 66, 80  # 132 and 160 SMs, two CTAs a cluster
TILES = 32  # 8192 / 256 tiles along M and along N


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("h200_l2_feed", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ptx(bench):
    return bench.compile_only()


def test_every_order_builds_two_tma_loads_a_step_and_fills_one_sm(bench, ptx):
    assert set(ptx) == set(bench.ORDERS.values())
    for text in ptx.values():
        loads = re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::\w+\.global\.mbarrier::complete_tx::bytes", text)
        assert len(loads) == 4  # A and B, in the prologue and in the loop
        assert ".target sm_90a" in text
    ring = bench.STAGES * 2 * bench.BOX_BYTES
    assert 228 * 1024 // 2 < ring <= 227 * 1024  # more than half an H200 SM's shared memory: one CTA per SM


def test_a_step_moves_the_compiled_kernels_operand_boxes(bench):
    """Per CTA and FP8 K step the compiled sm_100a kernel expects 34304 bytes: 16 KB of A, 16 KB of B and 1.5 KB of
    scales (128 x 4 of A, 256 x 4 of B).  The benchmark moves the two operand boxes and leaves the scales out."""
    from gluon_overlap.compiler.compile import compile_variant
    from gluon_overlap.steps import host

    (expected,) = host.expect_tx_bytes(compile_variant("mxfp8", "mxfp8", True).ptx)
    assert expected - (128 * 4 + 256 * 4) == 2 * bench.BOX_BYTES == 2 * 128 * 128


def test_the_kernel_order_is_the_models_wave(bench):
    """The first wave's panels in the kernel's order are those the timing model charges (costs._wave_panels), on the
    H200 and on the B300."""
    from gluon_overlap.timing.costs import _wave_panels

    for clusters in (H200_CLUSTERS, B300_CLUSTERS):
        rows, cols = _wave_panels(TILES, TILES * TILES, clusters, 0)
        got = bench.sharing("kernel", clusters, TILES, TILES)
        assert (got["a_panels"], got["b_panels"]) == (len(rows), len(cols))


def test_sharing_by_hand(bench):
    # kernel order, 66 clusters: tile rows 0 and 1 whole (32 tiles each) and 2 tiles of row 2
    assert bench.sharing("kernel", H200_CLUSTERS, TILES, TILES) == {
        "a_panels": 3,
        "b_panels": 32,
        "most_sharing_a": 32,
        "most_sharing_b": 3,
    }
    # grouped by 8 rows, column by column: 66 tiles = 8 whole columns of the group and 2 tiles of the ninth
    assert bench.sharing("grouped", H200_CLUSTERS, TILES, TILES) == {
        "a_panels": 8,
        "b_panels": 9,
        "most_sharing_a": 9,
        "most_sharing_b": 8,
    }
    assert bench.sharing("private", H200_CLUSTERS, TILES, TILES)["most_sharing_a"] == 1


def test_a_k_that_is_not_a_whole_step_is_refused(bench, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["h200_l2_feed.py", "--k", "500"])
    with pytest.raises(SystemExit) as exit_info:
        bench.main()
    assert exit_info.value.code == 2
    assert "positive multiple of 128" in capsys.readouterr().err
