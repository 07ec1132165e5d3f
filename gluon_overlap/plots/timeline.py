"""Timelines of the CPU twin: what each partition of each CTA did, and TMEM columns over time.

Input is a trace: the list of executed operations of a twin run (``result.trace``),
each with ``t_issue`` / ``t_start`` / ``t_end``, its process (partition, CTA,
cluster) and its tile.  In data mode the time axis counts scheduler steps; in
timed mode it is the backend's time unit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import matplotlib.pyplot as plt
import torch
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from gluon_overlap.timing.streams import DRAIN, ISSUER, LOADER, trace_roles

PARTITION_ORDER = (LOADER, ISSUER, DRAIN)  # lanes by role, learnt from what each partition does (twin.streams)
_LOAD_ROWS = {"a": 0, "b": 1, "a_scale": 2, "b_scale": 3}  # sub-rows of the load lane
_TILE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
_WAIT_COLOR = "#bbbbbb"


def tile_color(local: int | None) -> str:
    return _TILE_COLORS[(local or 0) % len(_TILE_COLORS)]


def _trace(obj: Any) -> Sequence[Any]:
    return obj.trace if hasattr(obj, "trace") else obj


def draw_lanes(
    ax: Axes, trace: Any, *, cluster: int = 0, ctas: Iterable[int] = (0, 1), title: str | None = None
) -> dict[str, float]:
    """One lane per partition per CTA of ``cluster``: waits in grey, work coloured by tile.

    Returns the total time the lead's MMA partition spent blocked in waits (``mma_wait``),
    the busy time of its MMAs (``mma_busy``) and the tensor-core idle time before the last
    MMA ends (``tensor_idle``).
    """
    ops = [op for op in _trace(trace) if op.proc is not None and op.cluster == cluster]
    roles = trace_roles(ops)
    lanes = [(cta, part) for cta in ctas for part in PARTITION_ORDER]
    y_of = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    stats = {"mma_wait": 0.0, "mma_busy": 0.0}

    def lane_of(op: Any) -> tuple[int, str]:
        return op.cta, roles.role_of((op.partition, op.cluster))

    for op in ops:
        lane = lane_of(op)
        if lane not in y_of:
            continue
        y = y_of[lane]
        if op.kind == "wait":
            if op.t_end > op.t_issue:
                ax.add_patch(
                    Rectangle(
                        (op.t_issue, y - 0.3),
                        op.t_end - op.t_issue,
                        0.6,
                        color=_WAIT_COLOR,
                        hatch="///",
                        fill=False,
                        lw=0.0,
                        zorder=1,
                    )
                )
                if lane == (0, ISSUER):
                    stats["mma_wait"] += op.t_end - op.t_issue
            continue
        if op.kind in ("mma", "tmem_load", "scale_copy", "tma_load", "tma_store"):
            t0, t1 = (op.t_start, op.t_end) if op.asynchronous else (op.t_issue, op.t_end)
            width = max(t1 - t0, 0.4)
            h = 0.6 if op.kind in ("mma", "tmem_load") else 0.25
            off = -0.3 if op.kind in ("mma", "tmem_load") else (0.05 if op.kind != "tma_store" else -0.3)
            if op.kind == "tma_load":  # one thin row per operand, so loads in flight together stay visible
                row = _LOAD_ROWS.get(getattr(op, "operand", ""), 0)
                h, off = 0.13, -0.3 + 0.15 * row
            ax.add_patch(
                Rectangle(
                    (t0, y + off),
                    width,
                    h,
                    color=tile_color(op.local),
                    alpha=1.0 if op.kind in ("mma", "tmem_load") else 0.45,
                    lw=0,
                    zorder=2,
                )
            )
            if op.kind == "mma" and lane == (0, ISSUER):
                stats["mma_busy"] += t1 - t0
        elif id(op) in roles.early_releases:  # the epilogue's early release of the accumulator
            ax.plot([op.t_issue], [y + 0.42], marker="v", color="black", ms=5)
    t_max = max((op.t_end for op in ops), default=1.0)
    mma_end = max((op.t_end for op in ops if op.kind == "mma"), default=0.0)
    stats["tensor_idle"] = mma_end - stats["mma_busy"]
    ax.set_xlim(0, t_max * 1.01)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.set_yticks([y_of[lane] for lane in lanes])
    busy = {lane_of(op) for op in ops if op.kind not in ("wait", "arrive")}
    ax.set_yticklabels(
        [
            f"cta{cta} {part}" + ("\n(lead issues)" if part == ISSUER and (cta, part) not in busy and cta else "")
            for cta, part in lanes
        ]
    )
    ax.set_xlabel("time")
    if title:
        ax.set_title(title)
    return stats


def tmem_intervals(trace: Any, *, cluster: int = 0, cta: int = 0) -> list[tuple[int, int, int, float, float]]:
    """Live accumulator intervals ``(local tile, col_lo, col_hi, t_written, t_drained)`` in one CTA.

    A tile's columns are live from the start of its first MMA until the TMEM load that
    drains them."""
    first_write: dict[int, float] = {}
    out = []
    for op in _trace(trace):
        if op.proc is None or op.cluster != cluster:
            continue
        if op.kind == "mma" and op.kstep == 0:
            first_write[op.local] = op.t_start
        elif op.kind == "tmem_load" and op.cta == cta:
            t0 = first_write.get(op.local, op.t_issue)
            out.append((op.local, op.columns.offset, op.columns.end, t0, op.t_end))
    return out


def draw_tmem(ax: Axes, trace: Any, plan: Any, *, cluster: int = 0, cta: int = 0, title: str | None = None) -> None:
    """TMEM columns (y) over time (x): each tile's accumulator columns from first write to drain."""
    for local, lo, hi, t0, t1 in tmem_intervals(trace, cluster=cluster, cta=cta):
        ax.add_patch(
            Rectangle((t0, lo), max(t1 - t0, 0.4), hi - lo, color=tile_color(local), alpha=0.55, lw=0.3, ec="white")
        )
    ax.axhspan(plan.a_scale.offset, plan.b_scale.end, color="#7f7f7f", alpha=0.35, lw=0)
    ax.text(
        0.995,
        (plan.a_scale.offset + plan.b_scale.end) / 2 / plan.tmem_cols,
        "A/B scales",
        transform=ax.transAxes,
        ha="right",
        va="center",
        fontsize=7,
        color="#333333",
    )
    ov = plan.overlap_window
    if ov is not None:
        ax.axhline(ov.offset, color="black", lw=0.6, ls="--")
        ax.axhline(ov.end, color="black", lw=0.6, ls="--")
    t_max = max((op.t_end for op in _trace(trace)), default=1.0)
    ax.set_xlim(0, t_max * 1.01)
    ax.set_ylim(0, plan.tmem_cols)
    ax.set_ylabel(f"TMEM column (cta{cta})")
    ax.set_xlabel("time")
    if title:
        ax.set_title(title)


def plot_run(result: Any, *, cluster: int = 0, title: str | None = None) -> Figure:
    """Lanes above, TMEM columns over time below, for one cluster of a twin run."""
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 6), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    draw_lanes(ax1, result, cluster=cluster, title=title)
    draw_tmem(ax2, result, result.config.plan, cluster=cluster)
    fig.tight_layout()
    return fig


def plot_compare(results: Sequence[Any], titles: Sequence[str], *, cluster: int = 0) -> Figure:
    """Side-by-side :func:`plot_run` panels (e.g. overlap off and on), with a shared time axis."""
    fig, axes = plt.subplots(
        2,
        len(results),
        figsize=(6.5 * len(results), 6),
        sharex=True,
        squeeze=False,
        gridspec_kw={"height_ratios": [3, 2]},
    )
    for j, (res, title) in enumerate(zip(results, titles, strict=True)):
        stats = draw_lanes(axes[0][j], res, cluster=cluster, title=title)
        axes[0][j].set_title(f"{title}: makespan {res.time:g}, tensor core idle {stats['tensor_idle']:g}")
        draw_tmem(axes[1][j], res, res.config.plan, cluster=cluster)
    t_max = max(r.time for r in results)
    for ax in axes.flat:
        ax.set_xlim(0, t_max * 1.01)
    handles: list[Artist] = [Patch(color=tile_color(i), label=f"cluster's tile #{i}") for i in range(4)]
    handles.append(Patch(facecolor="white", edgecolor=_WAIT_COLOR, hatch="///", label="waiting"))
    handles.append(Patch(color="#7f7f7f", alpha=0.35, label="scale columns (TMEM)"))
    handles.append(Line2D([], [], marker="v", color="black", ls="", ms=5, label="overlap arrive"))
    handles.append(Patch(color=tile_color(0), alpha=0.45, label="TMA (thin rows: A, B, A/B scales)"))
    fig.legend(handles=handles, loc="lower center", ncol=(len(handles) + 1) // 2, frameon=False, fontsize=8)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def draw_corruption(ax: Axes, result: Any, *, title: str | None = None) -> None:
    """C elements outside the tolerance (red) over the 256 x 256 tile grid and 32-column subtiles."""
    bad = result.bad.to(torch.float32).numpy()
    ax.imshow(bad, cmap="Reds", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    m, n = bad.shape
    for x in range(0, n, 256):
        ax.axvline(x - 0.5, color="black", lw=0.8)
    for x in range(0, n, result.config.plan.epilogue_block_n):
        ax.axvline(x - 0.5, color="black", lw=0.2, alpha=0.4)
    for y in range(0, m, 256):
        ax.axhline(y - 0.5, color="black", lw=0.8)
    for y in range(128, m, 256):
        ax.axhline(y - 0.5, color="black", lw=0.3, ls=":")
    ax.set_xlabel("N (C column)")
    ax.set_ylabel("M (C row)")
    ax.set_title(title or f"wrong elements of C: {int(bad.sum())}")


def mark_columns(ax: Axes, ranges: Iterable[tuple[int, int]], *, color: str = "red", label: str | None = None) -> None:
    """Shade TMEM column ranges (x axis in columns, e.g. on top of ``plots.tmem.draw_ruler``)."""
    for j, (lo, hi) in enumerate(ranges):
        ax.axvspan(lo, hi, color=color, alpha=0.35, lw=0, label=label if j == 0 else None)


def hazard_columns(hazards: Iterable[Any]) -> list[tuple[int, int]]:
    """The distinct TMEM column ranges named by a run's hazards."""
    return sorted({tuple(h.columns) for h in hazards if h.columns})


def plot_break(result: Any, *, title: str | None = None) -> Figure:
    """A broken run: the wrong elements of C (left) next to the TMEM ruler with the hazard columns (right)."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 3.6), gridspec_kw={"width_ratios": [1, 1.4]})
    draw_corruption(ax1, result)
    plan = result.config.plan
    from gluon_overlap.plots.tmem import draw_ruler

    draw_ruler(ax2, plan, title=False)
    mark_columns(ax2, hazard_columns(result.hazards), label="hazard columns")
    if hazard_columns(result.hazards):
        ax2.legend(loc="upper right", fontsize=8, frameon=False)
    kinds = sorted({h.kind for h in result.hazards})
    ax2.set_title(title or ("hazards: " + ", ".join(kinds) if kinds else "no TMEM hazard"), fontsize=9)
    fig.tight_layout()
    return fig
