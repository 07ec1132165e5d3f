"""Is every word of a figure readable?  Text extents measured by matplotlib against the figure and each other.

:func:`layout_problems` draws a figure and lists, in words, every text (titles, axis and tick labels, texts in
the axes, legend entries) that is

* **clipped**: its extent leaves the figure (a legend entry cut at the edge);
* **covered**: it overlaps another text, or a hatched patch (hatching drawn across letters), or a filled
  patch drawn above it;
* **crowded**: a figure legend that overlaps an axes' plotting area.

An empty list means the figure reads cleanly.  The explorer's tests run it over every view it can show.
"""

from __future__ import annotations

from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.transforms import Bbox

_TOLERANCE = 1.0  # pixels: extents that touch are not overlapping


def _texts(fig: Figure) -> list[tuple[Text, str]]:
    """Every visible, non-empty text of the figure with where it belongs."""
    found: list[tuple[Text, str]] = [(t, "figure") for t in fig.texts]
    for legend in fig.legends:
        found += [(t, "legend") for t in legend.get_texts()]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        found += [(t, "axes") for t in ax.texts]
        # the left and right titles are Text artists matplotlib keeps in private attributes
        found += [(t, "title") for t in (ax.title, *(getattr(ax, side) for side in ("_left_title", "_right_title")))]
        found += [(ax.xaxis.label, "axis label"), (ax.yaxis.label, "axis label")]
        for axis in (ax.xaxis, ax.yaxis):
            found += [(tick.label1, "tick label") for tick in axis.get_major_ticks() if tick.label1.get_visible()]
        ax_legend = ax.get_legend()
        if ax_legend is not None:
            found += [(t, "legend") for t in ax_legend.get_texts()]
    return [(t, where) for t, where in found if t.get_visible() and t.get_text().strip()]


def _overlap(a: Bbox, b: Bbox) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > _TOLERANCE) and (min(a.y1, b.y1) - max(a.y0, b.y0) > _TOLERANCE)


def _patches(fig: Figure) -> list[tuple[Patch, Any]]:
    return [(p, ax) for ax in fig.axes for p in ax.patches if p.get_visible()]


def layout_problems(fig: Figure, *, draw: bool = True) -> list[str]:
    """What is clipped, covered or crowded in ``fig`` (drawn first unless ``draw=False``), in words."""
    canvas = fig.canvas
    if not isinstance(canvas, FigureCanvasAgg):  # a bare Figure: give it the Agg canvas to measure with
        canvas = FigureCanvasAgg(fig)
    if draw:
        canvas.draw()
    renderer = canvas.get_renderer()
    frame = fig.bbox
    texts = [(t, where, t.get_window_extent(renderer)) for t, where in _texts(fig)]
    problems: list[str] = []
    for t, where, box in texts:
        if (
            box.x0 < frame.x0 - _TOLERANCE
            or box.x1 > frame.x1 + _TOLERANCE
            or box.y0 < frame.y0 - _TOLERANCE
            or box.y1 > frame.y1 + _TOLERANCE
        ):
            problems.append(f"clipped: {where} text {t.get_text()!r} reaches outside the figure")
    for i, (t, where, box) in enumerate(texts):
        for u, other_where, other in texts[i + 1 :]:
            if _overlap(box, other):
                problems.append(f"covered: {where} text {t.get_text()!r} overlaps {other_where} text {u.get_text()!r}")
    for patch, ax in _patches(fig):
        extent = patch.get_window_extent(renderer)
        hatched = bool(patch.get_hatch())
        for t, where, box in texts:
            if where not in ("axes",) or t.axes is not ax or t.get_bbox_patch() is not None:
                continue
            above = patch.get_zorder() > t.get_zorder()
            if (hatched or above and patch.get_fill()) and _overlap(box, extent):
                how = "hatching" if hatched else "a patch drawn above it"
                problems.append(f"covered: text {t.get_text()!r} lies under {how} ({patch.get_gid() or 'patch'})")
    for legend in fig.legends:
        extent = legend.get_window_extent(renderer)
        for ax in fig.axes:
            if _overlap(extent, ax.get_window_extent(renderer)):
                problems.append("crowded: a figure legend overlaps an axes' plotting area")
    return problems
