"""Smoke tests of the notebook figures (Agg backend): each returns a Figure with the expected panels."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gluon_overlap import swizzle as S  # noqa: E402
from gluon_overlap.plots import formats as P  # noqa: E402


def _check(fig: Figure, n_axes: int) -> None:
    assert isinstance(fig, Figure)
    assert len(fig.axes) == n_axes
    plt.close(fig)


def test_number_line_figures():
    fig = P.plot_e2m1_number_line()
    # 15 distinct points (-0 shares +0)
    assert len([line for line in fig.axes[0].lines if line.get_marker() == "o"]) == 15
    _check(fig, 1)
    _check(P.plot_scale_ranges(), 1)
    _check(P.plot_number_lines(), 2)


def test_error_histograms():
    g = torch.Generator().manual_seed(0)
    _check(P.plot_error_histograms({"a": torch.randn(8, 64, generator=g), "b": torch.randn(8, 64, generator=g)}), 2)


def test_scale_layout_markers_follow_the_index_map():
    fig = P.plot_scale_layout(200, 9, highlight=[(33, 1), (150, 6)])
    ax_l, ax_r = fig.axes
    marks_l = [tuple(line.get_xydata()[0]) for line in ax_l.lines if line.get_marker() == "o"]
    marks_r = [tuple(line.get_xydata()[0]) for line in ax_r.lines if line.get_marker() == "o"]
    assert marks_l == [(1, 33), (6, 150)]
    rm, rk, lane, group, k4 = S.scale_location(150, 6)
    assert marks_r[1] == ((rm * 3 + rk) * 16 + group * 4 + k4, lane)
    # the swizzled picture holds every colour of the logical picture (a permutation of the padded matrix)
    left, right = ax_l.images[0].get_array(), ax_r.images[0].get_array()
    assert left.size == right.size == 256 * 12 * 3
    _check(fig, 2)


def test_smem_tile_figure():
    sw = S.swizzle_scales(torch.arange(256 * 8).reshape(256, 8).remainder(251).to(torch.uint8))
    _check(P.plot_smem_tile(S.tma_block(S.tma_view_5d(sw), 0, 0, 2, 2)), 2)
