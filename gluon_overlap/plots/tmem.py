"""Drawings of the TMEM plan: the 512-column ruler, ownership, scale lanes, ping-pong and a simple timeline.

Everything here *reads* a :class:`gluon_overlap.tmem.TmemPlan`; no TMEM offset is computed by
hand.  One small derivation lives here because the drawings need it and the plan does not spell it out:

* :func:`scale_cell` -- the TMEM lane(s), column and byte of one scale factor, from the plan's
  ``a_scale_column`` / ``b_scale_column`` and the ``tcgen05.cp 32x128b.warpx4`` layout
  (SEMANTICS.md section 4);
* the ping-pong views draw the kernel's own run, recorded by the CPU executor
  (:mod:`gluon_overlap.pingpong`): no schedule is modelled here.

Drawing functions take a matplotlib ``Axes`` (or create a bare :class:`~matplotlib.figure.Figure`,
never a pyplot one, so notebooks show each figure once) and tag the artists that carry meaning with
a ``gid`` (``"window:left"``, ``"overlap"``, ``"mma-active"``, ``"scale-cell"`` ...) so that tests
and the explorer can read back what was actually drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.markers import TICKDOWN
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.transforms import ScaledTranslation

from gluon_overlap import pingpong, tmem
from gluon_overlap.pingpong import PingPongStep, Schedule, TileTimes
from gluon_overlap.registry import check_int
from gluon_overlap.tmem import TmemPlan

__all__ = ["PingPongStep", "Schedule", "TileTimes"]

COLORS = {
    "left": "#4C78A8",
    "right": "#F58518",
    "a_scale": "#54A24B",
    "b_scale": "#B279A2",
    "overlap": "#E45756",
    "unused": "#DDDDDD",
    "idle": "#BBBBBB",
}
LABELS = {"left": "left accum", "right": "right accum", "a_scale": "A scales", "b_scale": "B scales"}
#: row of the ruler each window is drawn on (y of the bar's centre)
_RULER_ROW = {"left": 2.0, "right": 1.0, "a_scale": 0.0, "b_scale": 0.0}
_BAR_H = 0.6


def _add_patch(ax: Axes, patch: Artist) -> Artist:
    """``ax.add_patch`` without the data-limit update (several times the cost of a small patch's
    drawing); for the drawings here, which all set their limits explicitly."""
    return ax.add_artist(patch)


def _segments(segments: list[tuple[tuple[float, float], tuple[float, float]]], **kwargs: Any) -> Line2D:
    """One line artist drawing separate straight segments (cheaper to build than ``vlines``/``hlines``)."""
    xs: list[float] = []
    ys: list[float] = []
    for (x0, y0), (x1, y1) in segments:
        xs += [x0, x1, np.nan]
        ys += [y0, y1, np.nan]
    return Line2D(xs, ys, **kwargs)


def _new_axes(figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    fig = Figure(figsize=figsize, dpi=100)
    return fig, fig.add_subplot(1, 1, 1)


def _span(win: tmem.Window) -> str:
    return f"[{win.offset}, {win.end})"


def _tmem_xaxis(ax: Axes, plan: TmemPlan) -> None:
    ax.set_xlim(-4, plan.tmem_cols + 4)
    ax.set_xticks(range(0, plan.tmem_cols + 1, 128))
    ax.set_xlabel("TMEM column (32-bit cells, per CTA)")
    for spine in ("top", "right", "left"):
        ax.spines[spine].set_visible(False)


# --- the ruler ------------------------------------------------------------------------------------
def draw_ruler(ax: Axes, plan: TmemPlan, *, drain_arrows: bool = True, title: bool = True) -> dict[str, Rectangle]:
    """Draw the per-CTA 512-column ruler: both accumulators, the overlap, the scales, drain direction.

    Returns the window rectangles by name (their ``gid`` is ``"window:<name>"``).
    """
    rects: dict[str, Rectangle] = {}
    names = ["left", "right", "a_scale", "b_scale"] if plan.overlap else ["left", "a_scale", "b_scale"]
    for name in names:
        win = plan.windows()[name]
        y = _RULER_ROW[name]
        rect = Rectangle(
            (win.offset, y - _BAR_H / 2),
            win.cols,
            _BAR_H,
            facecolor=COLORS[name],
            edgecolor="black",
            linewidth=0.8,
            gid=f"window:{name}",
        )
        _add_patch(ax, rect)
        rects[name] = rect
        label = LABELS[name] if plan.overlap or name != "left" else "accumulator"
        if name in ("left", "right"):
            ax.text(
                win.offset + win.cols / 2,
                y,
                f"{label} {_span(win)}",
                ha="center",
                va="center",
                color="white",
                fontsize=8,
                fontweight="bold",
            )
    scale_hi = plan.b_scale.end
    ax.text(scale_hi, -0.45, f"A {_span(plan.a_scale)}  B {_span(plan.b_scale)}", ha="right", va="top", fontsize=8)
    unused = [c for c, owners in enumerate(plan.column_owners()) if not owners]
    if unused:
        lo, hi = unused[0], unused[-1] + 1
        _add_patch(
            ax,
            Rectangle(
                (lo, -_BAR_H / 2),
                hi - lo,
                _BAR_H,
                facecolor=COLORS["unused"],
                hatch="//",
                edgecolor="#999999",
                linewidth=0.5,
                gid="unused",
            ),
        )
        ax.text(
            (lo + hi) / 2,
            0,
            f"unused: {len(unused)} cols",
            ha="center",
            va="center",
            fontsize=8,
            bbox=dict(facecolor="white", edgecolor="none", pad=1.5),
        )  # readable over the hatching
    ov = plan.overlap_window
    if ov is not None:
        _add_patch(
            ax,
            Rectangle(
                (ov.offset, 0.5),
                ov.cols,
                2.0,
                facecolor="none",
                edgecolor=COLORS["overlap"],
                hatch="xx",
                linewidth=1.5,
                gid="overlap",
            ),
        )
        ax.text(
            ov.offset + ov.cols / 2,
            2.55,
            f"overlap {ov.cols} cols {_span(ov)}",
            ha="center",
            va="bottom",
            fontsize=8,
            color=COLORS["overlap"],
            fontweight="bold",
        )
    if drain_arrows:
        for tile in (0, 1) if plan.overlap else (0,):
            name = plan.window_name(tile)
            win, order = plan.accumulator(tile), plan.drain_order(tile)
            first = plan.subtile_columns(tile, order[0])
            last = plan.subtile_columns(tile, order[-1])
            start = first.offset + first.cols / 2
            stop = last.offset + last.cols / 2
            y = _RULER_ROW[name] + _BAR_H / 2 + 0.12
            _add_patch(
                ax,
                FancyArrowPatch(
                    (start, y),
                    (stop, y),
                    arrowstyle="-|>",
                    mutation_scale=10,
                    color=COLORS[name],
                    linewidth=1.2,
                    gid=f"drain:{name}",
                ),
            )
            direction = "high -> low" if stop < start else "low -> high"
            if stop < start:
                x, ha = stop, "right"
            elif stop + 90 > plan.tmem_cols:  # no room right of the arrow before the legend: before its tail
                x, ha = start, "right"
            else:
                x, ha = stop, "left"
            if ov is not None and ha == "right" and x > ov.offset:  # never on the overlap's hatching
                x = ov.offset
            elif ov is not None and ha == "left" and x < ov.end:
                x = ov.end
            ax.text(
                x,
                y,
                f" drain {direction} ",
                ha=ha,
                va="center",
                fontsize=7,
                color=COLORS[name],
                gid=f"drain-label:{name}",
            )
    ax.set_ylim(-1.1, 3.0)
    rows = (
        [(2.0, "left accum"), (1.0, "right accum"), (0.0, "scales")]
        if plan.overlap
        else [(2.0, "accumulator"), (0.0, "scales")]
    )
    ax.set_yticks([r for r, _ in rows], [label for _, label in rows], fontsize=8)
    ax.tick_params(axis="y", length=0)
    _tmem_xaxis(ax, plan)
    if title:
        ax.set_title(
            f"TMEM plan {plan.a_format} x {plan.b_format}, BLOCK_K={plan.block_k}, "
            f"EPILOGUE_BLOCK_N={plan.epilogue_block_n}, overlap {'on' if plan.overlap else 'off'}",
            fontsize=9,
        )
    return rects


def draw_ownership(ax: Axes, plan: TmemPlan) -> None:
    """One strip of ``tmem_cols`` cells coloured by who owns each column (from ``plan.column_owners()``)."""
    kinds = ["unused", "left", "right", "overlap", "a_scale", "b_scale"]
    code = {(): 0, ("left",): 1, ("right",): 2, ("left", "right"): 3, ("a_scale",): 4, ("b_scale",): 5}
    runs: list[tuple[int, int, str]] = []  # (first column, columns, kind): one bar per run of equal owners
    for col, owners in enumerate(plan.column_owners()):
        kind = kinds[code[owners]]
        if runs and runs[-1][2] == kind:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1, kind)
        else:
            runs.append((col, 1, kind))
    ax.add_collection(
        PolyCollection(
            [[(x, 0), (x + w, 0), (x + w, 1), (x, 1)] for x, w, _ in runs],
            facecolors=[COLORS[k] for _, _, k in runs],
            edgecolors="none",
            linewidths=0,
            antialiaseds=False,
            gid="ownership",
        ),
        autolim=False,
    )
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    ax.set_ylabel("owner", fontsize=8, rotation=0, ha="right", va="center")
    _tmem_xaxis(ax, plan)


def plot_plan(plan: TmemPlan, *, ownership: bool = True) -> Figure:
    """A figure with the ruler (and, below it, the per-column ownership strip)."""
    fig = Figure(figsize=(9, 3.0 if ownership else 2.4), dpi=100)
    if ownership:
        ax, ax_own = fig.subplots(2, 1, height_ratios=[5, 1], sharex=True)
        draw_ruler(ax, plan)
        ax.set_xlabel("")
        draw_ownership(ax_own, plan)
    else:
        ax = fig.add_subplot(1, 1, 1)
        draw_ruler(ax, plan)
    fig.subplots_adjust(left=0.11, right=0.98, top=0.88, bottom=0.18 if ownership else 0.2)
    return fig


# --- where one scale lives ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScaleCell:
    """Where scale ``(row, k)`` of operand A or B lives in TMEM during one K step.

    ``row`` counts the tile's rows (0..255: M rows for A, N rows for B); ``k`` the scale-K index
    within the BLOCK_K step (0..BLOCK_K/VEC-1).  ``byte`` is the byte of the 32-bit cell.
    """

    operand: str
    row: int
    k: int
    ctas: tuple[int, ...]
    column: int
    lanes: tuple[int, ...]
    byte: int
    chunk_column: int  # first column of the 4-column [32, 4, 4] chunk it belongs to


def scale_cell(plan: TmemPlan, operand: str, row: int, k: int) -> ScaleCell:
    """Locate one scale: column = chunk column + (row % 128) // 32, lanes (row % 32) + 32 w, byte k % 4.

    A scales are split by M (CTA ``row // 128`` holds them); B scales are duplicated in both CTAs.
    """
    scale_k = plan.block_k // plan.vec_size
    if operand not in ("A", "B"):
        raise ValueError(f"operand={operand!r} must be 'A' or 'B'")
    row = check_int("row", row, 0, tmem.BLOCK_M)
    try:
        k = check_int("k", k, 0, scale_k)
    except ValueError as exc:
        raise ValueError(f"{exc} (BLOCK_K/VEC = {plan.block_k}/{plan.vec_size})") from None
    chunk_rows, chunk_k = tmem.SCALE_ROWS_PER_CHUNK, tmem.SCALE_K_PER_CHUNK
    group, lane = divmod(row % chunk_rows, 32)
    if operand == "A":
        ctas: tuple[int, ...] = (row // tmem.ROWS_PER_CTA,)
        chunk_column = plan.a_scale_column(k // chunk_k)
    else:
        ctas = tuple(range(tmem.NUM_CTAS))
        chunk_column = plan.b_scale_column(row // chunk_rows, k // chunk_k)
    lanes = tuple(lane + 32 * w for w in range(tmem.TMEM_LANES // 32))
    return ScaleCell(operand, row, k, ctas, chunk_column + group, lanes, k % chunk_k, chunk_column)


def draw_scale_background(ax: Axes, plan: TmemPlan, *, tick_artists: bool = False) -> None:
    """Lane x column grid of one CTA's scale columns (A green, B purple), chunk boundaries in white.

    With ``tick_artists`` the column ticks and their labels are drawn as artists of the axes (a line
    collection and texts, looking like matplotlib's ticks) and the x axis itself has none, so that
    the axes' frame does not depend on the plan (the explorer reuses the frame's pixels).
    """
    lo, hi = plan.a_scale.offset, plan.b_scale.end
    for name in ("a_scale", "b_scale"):
        win = plan.windows()[name]
        _add_patch(
            ax,
            Rectangle(
                (win.offset, 0),
                win.cols,
                tmem.TMEM_LANES,
                facecolor=COLORS[name],
                alpha=0.45,
                linewidth=0,
                zorder=0,
                gid=f"scale-window:{name}",
            ),
        )
    ax.add_artist(
        _segments(
            [((x, 0), (x, tmem.TMEM_LANES)) for x in range(lo, hi + 1, tmem.SCALE_K_PER_CHUNK)],
            color="white",
            linewidth=1.0,
            gid="chunk-boundaries",
        )
    )
    ax.add_artist(
        _segments(
            [((lo, y), (hi, y)) for y in range(32, tmem.TMEM_LANES, 32)],
            color="#666666",
            linewidth=0.5,
            linestyle=":",
            gid="warp-boundaries",
        )
    )
    ax.set_xlim(lo, hi)
    ax.set_ylim(tmem.TMEM_LANES, 0)
    step = max(4, (hi - lo) // 6 // 4 * 4)
    ticks = list(range(lo, hi, step))
    if tick_artists:
        ax.set_xticks([])
        below = ax.get_xaxis_transform()  # x in columns, y in axes fraction
        ax.plot(
            [t + 0.5 for t in ticks],
            [0] * len(ticks),
            transform=below,
            linestyle="none",
            marker=TICKDOWN,
            markersize=3.5,
            markeredgewidth=0.8,
            color="black",
            clip_on=False,
            gid="xticks",
        )
        label_at = below + ScaledTranslation(0, -7 / 72, ax.figure.dpi_scale_trans)  # tick + pad, as matplotlib
        for t in ticks:
            ax.text(t + 0.5, 0, str(t), transform=label_at, ha="center", va="top", fontsize=7, gid="xtick-label")
        ax.set_xlabel("TMEM column (one CTA)", labelpad=17)
    else:
        ax.set_xticks([t + 0.5 for t in ticks], [str(t) for t in ticks], fontsize=7)
        ax.set_xlabel("TMEM column (one CTA)")
    ax.set_yticks([0, 32, 64, 96])
    ax.set_ylabel("TMEM lane")


def draw_scale_mark(ax: Axes, plan: TmemPlan, operand: str, row: int, k: int) -> tuple[ScaleCell, list]:
    """Mark where scale ``(operand, row, k)`` lives; returns the cell and the artists drawn.

    Artists: ``"scale-chunk"`` (its 4-column chunk), ``"scale-cell"`` (one per lane), text ``"scale-title"``.
    """
    cell = scale_cell(plan, operand, row, k)
    artists: list = [
        Rectangle(
            (cell.chunk_column, 0),
            tmem.SCALE_K_PER_CHUNK,
            tmem.TMEM_LANES,
            facecolor="none",
            edgecolor="black",
            linewidth=1.2,
            linestyle="--",
            gid="scale-chunk",
        )
    ]
    artists += [
        Rectangle(
            (cell.column, lane), 1, 1, facecolor=COLORS["overlap"], edgecolor="black", linewidth=0.8, gid="scale-cell"
        )
        for lane in cell.lanes
    ]
    for a in artists:
        _add_patch(ax, a)
    artists += ax.plot(
        [cell.column + 0.5] * len(cell.lanes),
        [lane + 0.5 for lane in cell.lanes],
        linestyle="none",
        marker="s",
        markersize=7,
        markerfacecolor=COLORS["overlap"],
        markeredgecolor="black",
        gid="scale-marker",
    )
    where = f"CTA {cell.ctas[0]}" if len(cell.ctas) == 1 else "both CTAs (duplicated)"
    artists.append(
        ax.text(
            0.5,
            1.02,
            f"{operand} scale (row {row}, k {k}) -> column {cell.column}, byte "
            f"{cell.byte}, lanes {', '.join(map(str, cell.lanes))}; {where}",
            transform=ax.transAxes,
            ha="center",
            va="bottom",
            fontsize=9,
            gid="scale-title",
        )
    )
    return cell, artists


def draw_scale_cell(ax: Axes, plan: TmemPlan, operand: str, row: int, k: int) -> ScaleCell:
    """Lane x column view of the scale columns of one CTA, with the chosen scale's cells marked."""
    draw_scale_background(ax, plan)
    return draw_scale_mark(ax, plan, operand, row, k)[0]


def plot_scale_cell(plan: TmemPlan, operand: str, row: int, k: int) -> Figure:
    fig, ax = _new_axes((9, 2.8))
    draw_scale_cell(ax, plan, operand, row, k)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.88, bottom=0.18)
    return fig


# --- the kernel's recorded ping-pong (gluon_overlap.pingpong) -------------------------------------------------
def simple_schedule(plan: TmemPlan, num_tiles: int = 4) -> Schedule:
    """The first ``num_tiles`` tiles of the kernel's recorded run (:func:`gluon_overlap.pingpong.schedule`).

    The name is the older one (it was a hand-written model); the times are now the executor's, in
    :data:`gluon_overlap.pingpong.TIME_UNIT`.
    """
    return pingpong.schedule(plan, num_tiles)


def draw_timeline(ax: Axes, schedule: Schedule) -> None:
    """MMA and epilogue lanes of :func:`simple_schedule`; the MMA's idle gaps are hatched grey."""
    plan = schedule.plan
    lanes = {"MMA (lead CTA)": 1.0, "epilogue (each CTA)": 0.0}
    for t in schedule.tiles:
        color = COLORS[t.window]
        ax.add_patch(
            Rectangle(
                (t.mma_start, 1.0 - 0.3),
                t.mma_end - t.mma_start,
                0.6,
                facecolor=color,
                edgecolor="black",
                linewidth=0.6,
                gid=f"mma:{t.tile}",
            )
        )
        ax.text(
            (t.mma_start + t.mma_end) / 2,
            1.0,
            f"tile {t.tile}\n{t.window}",
            ha="center",
            va="center",
            fontsize=7,
            color="white",
        )
        ax.add_patch(
            Rectangle(
                (t.drain_start, -0.3),
                t.drain_end - t.drain_start,
                0.6,
                facecolor=color,
                alpha=0.55,
                edgecolor="black",
                linewidth=0.6,
                gid=f"drain:{t.tile}",
            )
        )
        ax.text((t.drain_start + t.drain_end) / 2, 0.0, f"drain {t.tile}", ha="center", va="center", fontsize=7)
        if t.release is not None:
            ax.plot([t.release, t.release], [-0.35, 0.35], color=COLORS["overlap"], linewidth=1.5)
        if t.tile:
            gap_start = schedule.tiles[t.tile - 1].mma_end
            if t.mma_start > gap_start + 1e-9:
                ax.add_patch(
                    Rectangle(
                        (gap_start, 0.7),
                        t.mma_start - gap_start,
                        0.6,
                        facecolor="white",
                        edgecolor=COLORS["idle"],
                        hatch="///",
                        linewidth=0.6,
                        gid="mma-idle",
                    )
                )
                ax.text(
                    (gap_start + t.mma_start) / 2, 1.42, "idle", ha="center", va="bottom", fontsize=7, color="#666666"
                )
    ax.set_xlim(0, schedule.end * 1.02)
    ax.set_ylim(-0.6, 1.8)
    ax.set_yticks(list(lanes.values()), list(lanes), fontsize=8)
    ax.set_xlabel(f"time ({pingpong.TIME_UNIT}; recorded by the CPU executor)")
    mode = "overlapped, double-buffered" if plan.overlap else "single-buffered"
    extra = " (red tick: overlap released)" if plan.overlap else ""
    ax.set_title(f"{mode}: MMA busy {schedule.mma_utilization():.0%} of the time{extra}", fontsize=9)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)


def plot_timeline(schedule: Schedule) -> Figure:
    fig, ax = _new_axes((9, 2.2))
    draw_timeline(ax, schedule)
    fig.subplots_adjust(left=0.15, right=0.98, top=0.86, bottom=0.24)
    return fig


# --- the ping-pong, step by step -------------------------------------------------------------------------
def ping_pong_steps(schedule: Schedule) -> list[PingPongStep]:
    """Walk the recorded run event by event (:func:`gluon_overlap.pingpong.steps`)."""
    return pingpong.steps(schedule)


def _pp_rows(plan: TmemPlan) -> dict[str, float]:
    return {"left": 1.0, "right": 0.0} if plan.overlap else {"left": 0.5}


def _pp_top(plan: TmemPlan) -> float:
    """Upper y limit of the ping-pong view: the step title sits above the top row's tile label."""
    return 2.0 if plan.overlap else 1.5


def ping_pong_legend(plan: TmemPlan) -> tuple[list, list[str]]:
    """Legend handles and labels for what :func:`draw_ping_pong_state` draws (for ``fig.legend``)."""
    color = COLORS["left"]
    handles = [
        Rectangle((0, 0), 1, 1, facecolor=color, alpha=0.45, hatch="//", edgecolor="white"),
        Rectangle((0, 0), 1, 1, facecolor=color, alpha=0.9, edgecolor="white"),
        Rectangle((0, 0), 1, 1, facecolor="none", edgecolor="black", linewidth=2.0),
        Rectangle((0, 0), 1, 1, facecolor="none", edgecolor="black", linewidth=1.2, linestyle="--"),
        Rectangle((0, 0), 1, 1, facecolor="none", edgecolor="#D62728", linewidth=2.5),
    ]
    labels = [
        "MMA writing (hatched)",
        "result waiting for the epilogue",
        "next to drain (epilogue reads it now)",
        "just drained (the event below)",
        "window the MMA writes",
    ]
    if plan.overlap:
        handles.append(Rectangle((0, 0), 1, 1, facecolor=COLORS["overlap"], alpha=0.12))
        labels.append("overlap columns (both windows)")
    return handles, labels


def draw_ping_pong_background(ax: Axes, plan: TmemPlan) -> None:
    """The parts of the ping-pong view that do not change with the step: windows, overlap band, axes."""
    rows = _pp_rows(plan)
    for name, y in rows.items():
        win = plan.windows()[name]
        _add_patch(
            ax,
            Rectangle((win.offset, y - 0.35), win.cols, 0.7, facecolor="#F4F4F4", edgecolor="#888888", linewidth=0.6),
        )
    ov = plan.overlap_window
    if ov is not None:
        _add_patch(
            ax,
            Rectangle(
                (ov.offset, 0),
                ov.cols,
                1,
                transform=ax.get_xaxis_transform(),
                facecolor=COLORS["overlap"],
                alpha=0.12,
                linewidth=0,
                gid="overlap-band",
            ),
        )
    ax.set_xlim(-4, plan.tmem_cols + 4)
    ax.set_ylim(-1.0 if plan.overlap else -0.4, _pp_top(plan))
    ax.set_yticks(list(rows.values()), [LABELS[n] if plan.overlap else "accumulator" for n in rows], fontsize=8)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks(range(0, plan.tmem_cols + 1, 128))
    for spine in ("top", "right", "left"):
        ax.spines[spine].set_visible(False)


def draw_ping_pong_state(ax: Axes, schedule: Schedule, step: PingPongStep) -> list:
    """The step-dependent artists of the ping-pong view; returns them (for blitting or removal).

    Artists: ``"mma-active"`` (the window the MMA writes, if any), ``"held:<tile>:<pos>"`` (undrained
    subtiles), ``"draining"`` (solid black box: the next subtile in drain order, which the epilogue reads
    from this step on), ``"drained"`` (dashed box: the subtile whose drain ended at this step, the one the
    step's event names), texts ``"mma-status"`` and ``"step-title"``.
    """
    plan = schedule.plan
    rows = _pp_rows(plan)
    eps = 1e-9
    now = step.time
    artists: list = []
    for t in schedule.tiles:  # the subtile whose drain ends now (the step's "drained subtile" event)
        for p, end in enumerate(t.subtile_ends):
            if abs(end - now) <= eps:
                lo, hi = t.subtile_columns[p]
                artists.append(
                    Rectangle(
                        (lo, rows[t.window] - 0.33),
                        hi - lo,
                        0.66,
                        facecolor="none",
                        edgecolor="black",
                        linewidth=1.2,
                        linestyle="--",
                        gid="drained",
                    )
                )
    for t in schedule.tiles:
        if t.mma_start > now + eps or t.drain_end <= now + eps:
            continue
        y = rows[t.window]
        writing = now + eps < t.mma_end
        for p, (lo, hi) in enumerate(t.subtile_columns):
            if not writing and t.subtile_ends[p] <= now + eps:
                continue
            artists.append(
                Rectangle(
                    (lo, y - 0.3),
                    hi - lo,
                    0.6,
                    facecolor=COLORS[t.window],
                    alpha=0.45 if writing else 0.9,
                    edgecolor="white",
                    linewidth=0.4,
                    hatch="//" if writing else None,
                    gid=f"held:{t.tile}:{p}",
                )
            )
            if step.epilogue_tile == t.tile and step.epilogue_position == p:
                artists.append(
                    Rectangle(
                        (lo, y - 0.38),
                        hi - lo,
                        0.76,
                        facecolor="none",
                        edgecolor="black",
                        linewidth=2.0,
                        gid="draining",
                    )
                )
        win = plan.accumulator(t.tile)
        left = t.window == "left"
        artists.append(
            ax.text(
                win.offset + 4 if left else win.end - 4,
                y + 0.4,
                f"tile {t.tile}",
                ha="left" if left else "right",
                va="bottom",
                fontsize=8,
                gid=f"tile-label:{t.tile}",
            )
        )
    if step.mma_window is not None:
        win = plan.windows()[step.mma_window]
        y = rows[step.mma_window]
        artists.append(
            Rectangle(
                (win.offset, y - 0.35),
                win.cols,
                0.7,
                facecolor="none",
                edgecolor="#D62728",
                linewidth=2.5,
                gid="mma-active",
            )
        )
    for a in artists:
        if isinstance(a, Rectangle):
            _add_patch(ax, a)
    artists.append(
        ax.text(
            0,
            -0.55 if plan.overlap else -0.05,
            step.mma_status,
            fontsize=8,
            va="top",
            gid="mma-status",
            color="#D62728" if step.mma_window else "#444444",
        )
    )
    artists.append(
        ax.text(
            0,
            _pp_top(plan) - 0.03,
            f"step {step.index}: t = {step.time:g} time units",
            fontsize=9,
            va="top",
            gid="step-title",
        )
    )
    return artists


def draw_ping_pong(ax: Axes, schedule: Schedule, step: PingPongStep, *, events: bool = True) -> None:
    """The two accumulator windows at ``step``: what the MMA writes, what each tile still holds, what drains.

    With ``events`` the step's events and barrier counts are written under the axes.
    """
    draw_ping_pong_background(ax, schedule.plan)
    draw_ping_pong_state(ax, schedule, step)
    if events:
        ax.text(
            0,
            -0.12,
            "\n".join(step.events + ("   ".join(step.barriers),)),
            transform=ax.transAxes,
            fontsize=7.5,
            va="top",
            gid="events",
            wrap=True,
        )


def plot_ping_pong(plan: TmemPlan, step_index: int, num_tiles: int = 4) -> Figure:
    """Draw the tile ping-pong at step ``step_index`` of :func:`ping_pong_steps`."""
    schedule = simple_schedule(plan, num_tiles)
    steps = ping_pong_steps(schedule)
    if not 0 <= step_index < len(steps):
        raise ValueError(f"step_index={step_index} must be in [0, {len(steps)})")
    fig, ax = _new_axes((11.5, 3.2))
    draw_ping_pong(ax, schedule, steps[step_index])
    fig.subplots_adjust(left=0.09, right=0.75, top=0.97, bottom=0.3)
    fig.legend(
        *ping_pong_legend(plan),
        loc="upper left",
        bbox_to_anchor=(0.76, 0.97),
        fontsize=7.5,
        frameon=False,
        handlelength=2.2,
        handleheight=1.2,
    )
    return fig


# --- legends for the ruler and the scale view ------------------------------------------------------------------
def ruler_legend(plan: TmemPlan) -> tuple[list, list[str]]:
    """Legend handles and labels for what :func:`draw_ruler` and :func:`draw_ownership` draw."""
    names = ["left", "right", "a_scale", "b_scale"] if plan.overlap else ["left", "a_scale", "b_scale"]
    accum = {"left": "left accumulator" if plan.overlap else "accumulator", "right": "right accumulator"}
    handles: list = [Rectangle((0, 0), 1, 1, facecolor=COLORS[n], edgecolor="black", linewidth=0.8) for n in names]
    labels = [
        accum.get(n) or {"a_scale": "A scales (this CTA's rows)", "b_scale": "B scales (copied in both CTAs)"}[n]
        for n in names
    ]
    if plan.overlap:
        handles.append(
            Rectangle(
                (0, 0),
                1,
                1,
                facecolor=COLORS["overlap"],
                edgecolor=COLORS["overlap"],
                hatch="xx",
                linewidth=1.5,
                alpha=0.6,
            )
        )
        labels.append("overlap: both accumulators\n(red in the owner strip)")
    if any(not owners for owners in plan.column_owners()):
        handles.append(
            Rectangle((0, 0), 1, 1, facecolor=COLORS["unused"], hatch="//", edgecolor="#999999", linewidth=0.5)
        )
        labels.append("unused columns")
    handles.append(Line2D([0, 1], [0, 0], color="#555555", linewidth=1.2, marker=">", markevery=[1], markersize=5))
    labels.append("drain order: first -> last subtile")
    return handles, labels


def scale_legend(plan: TmemPlan) -> tuple[list, list[str]]:
    """Legend handles and labels for :func:`draw_scale_background` and :func:`draw_scale_mark`."""
    handles = [
        Rectangle((0, 0), 1, 1, facecolor=COLORS["a_scale"], alpha=0.45, linewidth=0),
        Rectangle((0, 0), 1, 1, facecolor=COLORS["b_scale"], alpha=0.45, linewidth=0),
        Rectangle((0, 0), 1, 1, facecolor=COLORS["b_scale"], alpha=0.45, edgecolor="white", linewidth=2.0),
        Line2D([0], [0], color="#666666", linewidth=0.8, linestyle=":"),
        Rectangle((0, 0), 1, 1, facecolor="none", edgecolor="black", linewidth=1.2, linestyle="--"),
        Line2D(
            [0],
            [0],
            linestyle="none",
            marker="s",
            markersize=7,
            markerfacecolor=COLORS["overlap"],
            markeredgecolor="black",
        ),
    ]
    labels = [
        "A scale columns",
        "B scale columns",
        f"white line: chunk boundary\n(one chunk = {tmem.SCALE_K_PER_CHUNK} columns)",
        "warp boundary (32 lanes)",
        "chunk of the picked scale",
        "the picked scale: 4 lanes, one per warp\n(tcgen05.cp 32x128b.warpx4 copies it\nto each warp's 32 lanes)",
    ]
    return handles, labels
