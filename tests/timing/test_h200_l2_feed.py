"""The H200 L2-feed measurement (benchmarks/h200_l2_feed.py) builds for sm_90a, moves a CTA's K step as the
compiled kernel does, runs on this project's CPU executor loading exactly the boxes its orders promise, and walks
the tiles as the kernel's scheduler and the timing model do.

Its record, data/measurements/h200-l2-feed.json, is checked by test_h200_l2_feed_record.py."""

from __future__ import annotations

import re

import benchmark_scripts  # tests/support is on sys.path (tests/conftest.py)
import pytest

pytest.importorskip("triton")

H200_CLUSTERS, B300_CLUSTERS = 66, 80  # 132 and 160 SMs, two CTAs a cluster
TILES = 32  # 8192 / 256 tiles along M and along N


@pytest.fixture(scope="module")
def bench():
    return benchmark_scripts.load("h200_l2_feed")


@pytest.fixture(scope="module")
def built(bench):
    return bench.compile_only()


def test_every_order_builds_two_tma_loads_a_step_and_fills_one_sm(bench, built):
    assert set(built) == set(bench.ORDERS.values())
    for ptx, shared in built.values():
        loads = re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::\w+\.global\.mbarrier::complete_tx::bytes", ptx)
        assert len(loads) == 4  # A and B, in the prologue and in the loop
        assert ".target sm_90a" in ptx
        assert shared >= bench.STAGES * 2 * bench.BOX_BYTES
        assert 228 * 1024 // 2 < shared <= 227 * 1024  # more than half an H200 SM's shared memory: one CTA per SM


def test_a_step_moves_the_compiled_kernels_operand_boxes(bench):
    """Per CTA and FP8 K step the compiled sm_100a kernel expects 34304 bytes: 16 KB of A, 16 KB of B and 1.5 KB of
    scales (128 x 4 of A, 256 x 4 of B).  The benchmark moves the two operand boxes and leaves the scales out."""
    from gluon_overlap.compiler.compile import compile_variant
    from gluon_overlap.steps import host

    (expected,) = host.expect_tx_bytes(compile_variant("mxfp8", "mxfp8", True).ptx)
    assert expected - (128 * 4 + 256 * 4) == 2 * bench.BOX_BYTES == 2 * 128 * 128


@pytest.mark.parametrize("k", [256, 512])
def test_it_runs_on_the_cpu_executor_and_loads_what_each_order_promises(bench, k):
    """The kernel itself, on this project's CPU executor (3 clusters on a 2 x 2 tile grid, so cluster 2 starts a tile
    row of its own; two walks: several laps of the five-stage ring): no error, deadlock or race, and every CTA's first
    loads are the boxes ``coords`` names."""
    import torch

    from gluon_overlap.interp.launch import cpu

    m = n = 512
    clusters = 3
    _, descs = bench._descriptors("cpu", m, n, k, 2 * clusters)
    trace = torch.empty(2 * clusters * bench.TRACE * 3, dtype=torch.int32)
    for order, name in bench.ORDERS.items():
        args = list(bench._args(descs, trace, order, m, n, k))
        args[6] = 2  # walks
        trace.fill_(-1)
        result = cpu(bench.feed_kernel)[(2 * clusters,)](*args, num_warps=1)
        assert result.error is None and result.deadlock is None and not result.hazards, (name, result.error)
        got = trace.view(2 * clusters, bench.TRACE, 3).tolist()
        for pid in range(2 * clusters):
            per_walk = len(range(pid // 2, 4, clusters)) * (k // 128)
            for j in range(bench.TRACE):
                made = j < 2 * per_walk  # a CTA makes per_walk loads a walk; the trace keeps -1 past its last
                want = list(bench.coords(name, pid, j % per_walk, clusters, k, 2, 2)) if made else [-1, -1, -1]
                assert got[pid][j] == want, (name, pid, j)


def test_coords_by_hand(bench):
    # the kernel's order on 66 clusters: CTA 131 is half 1 of cluster 65, tile 65 = row 2, column 1
    assert bench.coords("kernel", 131, 0, H200_CLUSTERS, 512, TILES, TILES) == (640, 384, 0)
    assert bench.coords("kernel", 1, 4, H200_CLUSTERS, 512, TILES, TILES) == (128 + 2 * 256, 128 + 2 * 256, 0)
    # rotated: cluster 32 starts 32 + 1 = 33 blocks on, 33 % 4 = 1
    assert bench.coords("kernel, K rotated", 64, 0, H200_CLUSTERS, 512, TILES, TILES) == (256, 0, 128)
    # grouped across a group boundary: tile 255 = (7, 31), tile 256 = (8, 0); cluster 57 / 58, third lap
    assert bench.coords("grouped", 114, 12, H200_CLUSTERS, 512, TILES, TILES) == (7 * 256, 31 * 256, 0)
    assert bench.coords("grouped", 117, 12, H200_CLUSTERS, 512, TILES, TILES) == (8 * 256 + 128, 128, 0)
    assert bench.coords("private", 7, 3, H200_CLUSTERS, 512, TILES, TILES) == (7 * 128, 7 * 128, 128)


def test_the_kernel_order_is_the_models_wave(bench):
    """The first wave's panels in the kernel's order are those the timing model charges (costs._wave_panels), on the
    H200 and on the B300: each panel is two CTA halves and K / 128 boxes."""
    from gluon_overlap.timing.costs import _wave_panels

    for clusters in (H200_CLUSTERS, B300_CLUSTERS):
        rows, cols = _wave_panels(TILES, TILES * TILES, clusters, 0)
        got = bench.sharing("kernel", clusters, 512, TILES, TILES)
        assert (got["a_boxes"], got["b_boxes"]) == (len(rows) * 2 * 4, len(cols) * 2 * 4)


def test_sharing_by_hand(bench):
    def most(order: str, k: int = 512) -> tuple[int, int]:
        s = bench.sharing(order, H200_CLUSTERS, k, TILES, TILES)
        return s["most_ctas_on_an_a_box"], s["most_ctas_on_a_b_box"]

    assert most("kernel") == (32, 3)  # a tile row's 32 clusters on one A box; column 0 and 1 used by rows 0-2
    assert most("kernel, K rotated") == (8, 1)  # 32 clusters over 4 K blocks; the B sharers 1 block apart
    assert most("kernel, K rotated", 2048) == (2, 1)
    assert most("grouped") == (9, 8)  # 66 tiles = 8 whole columns of the first 8-row group and 2 of the ninth
    assert most("private") == (1, 1)


def test_a_k_that_is_not_a_whole_step_is_refused(bench, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["h200_l2_feed.py", "--k", "500"])
    with pytest.raises(SystemExit) as exit_info:
        bench.main()
    assert exit_info.value.code == 2
    assert "positive multiple of 128" in capsys.readouterr().err
