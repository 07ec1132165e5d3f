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


def test_scale_layout_markers_are_not_clipped_at_the_panel_edges():
    fig = P.plot_scale_layout(256, 8, highlight=[(0, 0), (127, 3)])  # corner of the left panel, last lane right
    marks = [line for ax in fig.axes for line in ax.lines if line.get_marker() == "o"]
    assert len(marks) == 4 and not any(line.get_clip_on() for line in marks)
    _check(fig, 2)


def test_smem_tile_figure():
    scales = torch.arange(256 * 8).reshape(256, 8).remainder(251).to(torch.uint8)
    block = S.tma_block(S.tma_view_5d(S.swizzle_scales(scales)), 0, 0, 2, 2)
    fig = P.plot_smem_tile(block)
    ax_raw, ax_tile, bar = fig.axes
    # one integer tick per 256-byte row, named by its (rep_mn, rep_k, half) index, in memory order
    assert list(ax_raw.get_yticks()) == list(range(8))
    assert [t.get_text() for t in ax_raw.get_yticklabels()] == [
        f"({m}, {k}, {h})" for m in range(2) for k in range(2) for h in range(2)
    ]
    # both panels share the colorbar's scale, which spans every byte shown
    assert ax_raw.images[0].get_clim() == ax_tile.images[0].get_clim() == (0, 250)
    assert "e8m0" in bar.get_ylabel()
    _check(fig, 3)
