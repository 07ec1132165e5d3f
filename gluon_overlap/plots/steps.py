"""Figures for the step-by-step notebooks (02-05): one scale chunk in TMEM, step kernels' time lines,
and the MMA idle time each step leaves.

The scale figure places every scale with :func:`gluon_overlap.plots.tmem.scale_cell` (the explorer's
locator, which reads the plan's ``a_scale_column`` / ``b_scale_column``); no column is computed here.
Every function returns a bare :class:`~matplotlib.figure.Figure` and tags meaningful artists with a
``gid`` so tests can read back what was drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from gluon_overlap import tmem
from gluon_overlap.plots.formats import GROUP_COLORS
from gluon_overlap.plots.tmem import scale_cell
from gluon_overlap.tmem import TmemPlan

if TYPE_CHECKING:
    from gluon_overlap.interp.engine import RunResult

LANES_PER_SUBPARTITION = 32


def scale_chunk_cells(plan: TmemPlan, operand: str = "A", k_chunk: int = 0, row_block: int = 0) -> dict:
    """Where the 128 rows x 4 k-scales of one packed chunk land in one CTA's TMEM.

    Returns ``{"columns": [4 TMEM columns], "rows": int array [128 lanes, 4 columns] (the
    operand row whose scales a cell holds), "k": [4 k indices]}``, from :func:`scale_cell`.
    ``row_block`` picks the 128-row block (B has two; A's second block lives in CTA 1).
    """
    chunk_k = tmem.SCALE_K_PER_CHUNK
    scale_k = plan.block_k // plan.vec_size
    if not 0 <= k_chunk < scale_k // chunk_k:
        raise ValueError(f"k_chunk={k_chunk} must be in [0, {scale_k // chunk_k}) for BLOCK_K={plan.block_k}")
    if row_block not in (0, 1):
        raise ValueError(f"row_block={row_block!r} must be 0 or 1")
    ks = [k_chunk * chunk_k + j for j in range(chunk_k)]
    first = scale_cell(plan, operand, 128 * row_block, ks[0]).chunk_column
    columns = list(range(first, first + chunk_k))
    rows = np.full((tmem.TMEM_LANES, chunk_k), -1, dtype=int)
    bytes_ = np.full((tmem.TMEM_LANES, chunk_k), -1, dtype=int)
    for row in range(128 * row_block, 128 * row_block + 128):
        for k in ks:
            cell = scale_cell(plan, operand, row, k)
            for lane in cell.lanes:
                col = columns.index(cell.column)
                if rows[lane, col] not in (-1, row):
                    raise AssertionError(f"lane {lane} column {cell.column} holds two rows")
                rows[lane, col] = row
                bytes_[lane, col] = cell.byte
    return {"columns": columns, "rows": rows, "k": ks}


def plot_scale_chunk(plan: TmemPlan, operand: str = "A", k_chunk: int = 0, row_block: int = 0) -> Figure:
    """One 512-byte scale chunk: as 32 lanes x 16 bytes in shared memory (left) and in TMEM after
    ``tcgen05.cp ... 32x128b.warpx4`` (right): the four 32-row groups become four columns, and
    every sub-partition of 32 lanes receives the same 32 x 4 cells.  ``row_block``: which 128 rows
    (A's second block lives in CTA 1; B's second block has chunks of its own in both CTAs)."""
    cells = scale_chunk_cells(plan, operand, k_chunk, row_block)
    rows, columns = cells["rows"], cells["columns"]
    fig = Figure(figsize=(11, 5.6))
    ax_s, ax_t = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.25, 1]})

    # left: the chunk in shared memory, byte 4 g + k4 of lane l holds k-scale k4 of row 32 g + l
    for lane in range(32):
        for byte in range(16):
            group, k4 = divmod(byte, 4)
            shade = 0.55 + 0.15 * k4
            color = np.clip(1 - (1 - GROUP_COLORS[group]) * shade, 0, 1)
            ax_s.add_patch(
                Rectangle(
                    (byte, lane), 1, 1, facecolor=color, edgecolor="white", linewidth=0.3, gid=f"smem:{lane}:{byte}"
                )
            )
    for lane in (0, 1, 31):
        for group in range(4):
            ax_s.text(
                4 * group + 2,
                lane + 0.55,
                f"row {128 * row_block + 32 * group + lane}",
                ha="center",
                va="center",
                fontsize=6.5,
            )
    ax_s.set_xlim(0, 16)
    ax_s.set_ylim(32, 0)
    base_row = 128 * row_block
    ax_s.set_xticks(
        [2 + 4 * g for g in range(4)],
        [f"group {g}\n(rows {base_row + 32 * g}..{base_row + 32 * g + 31})" for g in range(4)],
        fontsize=8,
    )
    ax_s.set_yticks([0, 8, 16, 24, 31])
    ax_s.set_ylabel("lane of the chunk (16 bytes each)")
    ax_s.set_title(
        f"{operand} scales in shared memory: one [32, 4, 4] chunk\n(k = {cells['k'][0]}..{cells['k'][-1]}; "
        "shade = k % 4, 4 bytes = one 32-bit TMEM cell)",
        fontsize=9,
    )

    # right: TMEM lanes x the chunk's 4 columns
    for lane in range(tmem.TMEM_LANES):
        for j, _col in enumerate(columns):
            row = rows[lane, j]
            group = (row % 128) // 32
            ax_t.add_patch(
                Rectangle(
                    (j, lane),
                    1,
                    1,
                    facecolor=GROUP_COLORS[group],
                    alpha=0.8,
                    edgecolor="white",
                    linewidth=0.2,
                    gid=f"tmem:{lane}:{columns[j]}:row{row}",
                )
            )
    for w in range(1, tmem.TMEM_LANES // LANES_PER_SUBPARTITION):
        ax_t.axhline(w * LANES_PER_SUBPARTITION, color="black", linewidth=1.2)
    for w in range(tmem.TMEM_LANES // LANES_PER_SUBPARTITION):
        base = w * LANES_PER_SUBPARTITION
        for j in range(4):
            ax_t.text(j + 0.5, base + 3, f"row {rows[base, j]}", ha="center", va="center", fontsize=6.5)
            ax_t.text(j + 0.5, base + 29, f"row {rows[base + 31, j]}", ha="center", va="center", fontsize=6.5)
        ax_t.text(
            4.1,
            base + 16,
            f"sub-partition {w}\n(warp {w}): lanes\n{base}..{base + 31}, a copy",
            va="center",
            fontsize=7,
        )
    ax_t.set_xlim(0, 4)
    ax_t.set_ylim(tmem.TMEM_LANES, 0)
    ax_t.set_xticks([j + 0.5 for j in range(4)], [str(c) for c in columns], fontsize=8)
    ax_t.set_xlabel("TMEM column (one CTA): chunk column + row group")
    ax_t.set_yticks([0, 32, 64, 96, 127])
    ax_t.set_ylabel("TMEM lane")
    row_expr = f"{128 * row_block} + 32 g + l" if row_block else "32 g + l"
    ax_t.set_title(
        f"after tcgen05.cp 32x128b.warpx4:\nlane l, column c + g holds the 4 k-scales of row {row_expr}", fontsize=9
    )
    fig.subplots_adjust(left=0.07, right=0.86, top=0.86, bottom=0.14, wspace=0.3)
    return fig


def plot_idle(rows: Sequence[dict], problem: str = "") -> Figure:
    """MMA busy and idle time of each timed step (``rows``: ``{"step", "busy", "idle"}``, one per
    step, times in µs per tile): one horizontal bar each, idle share written at its end; ``problem`` (e.g.
    ``"nvfp4, K = 512"``) goes into the title."""
    fig = Figure(figsize=(8, 0.7 + 0.55 * len(rows)))
    ax = fig.subplots()
    for y, row in enumerate(rows):
        busy, idle = float(row["busy"]), float(row["idle"])
        ax.barh(y, busy, color="#4C78A8", gid=f"busy:{row['step']}")
        ax.barh(y, idle, left=busy, color="#BBBBBB", hatch="//", edgecolor="white", gid=f"idle:{row['step']}")
        total = busy + idle
        ax.text(total, y, f"  idle {idle / total:.0%}" if total else "  -", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [row["step"] for row in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time per tile on the interpreter's clock (µs)")
    ax.set_ylabel("kernel")
    where = f" ({problem})" if problem else ""
    ax.set_title(f"where a tile's time goes{where}: the tensor core busy with MMAs or idle", fontsize=10)
    ax.legend(  # beside the axes: inside, it covered a bar's idle share
        [Rectangle((0, 0), 1, 1, color="#4C78A8"), Rectangle((0, 0), 1, 1, color="#BBBBBB", hatch="//")],
        ["MMA busy", "MMA idle"],
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
    )
    ax.margins(x=0.15)
    fig.tight_layout()
    return fig


#: lanes of :func:`plot_step_timeline`, per CTA: which operation kinds each one draws
TIMELINE_LANES = (
    ("TMA loads", ("tma_load",)),
    ("tensor core", ("scale_copy", "mma")),
    ("epilogue", ("tmem_load", "smem_store", "tma_store")),
)
_KIND_COLORS = {
    "tma_load": "#72B7B2",
    "scale_copy": "#B279A2",
    "mma": "#4C78A8",
    "tmem_load": "#F58518",
    "smem_store": "#FFBF79",
    "tma_store": "#E45756",
}


def plot_step_timeline(
    run: RunResult, *, cluster: int = 0, title: str | None = None, scale: float = 1e6, unit: str = "µs"
) -> Figure:
    """What each CTA of ``cluster`` did when, in a timed interpreter run: TMA loads, the tensor core (scale
    copies and MMAs, issued by the lead for both CTAs, drawn on the lead's lane) and the epilogue (TMEM
    loads, SMEM stores, TMA stores); waits drawn as thin grey bars under the epilogue lane of the CTA
    that waited.  Times are multiplied by ``scale`` (seconds to ``unit``)."""
    ops = [op for op in run.trace if op.proc is not None and op.cluster == cluster]
    ctas = sorted({op.cta for op in ops})
    lanes = [(cta, name) for cta in ctas for name, _ in TIMELINE_LANES]
    y_of = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
    lane_of_kind = {kind: name for name, kinds in TIMELINE_LANES for kind in kinds}
    fig = Figure(figsize=(11, 0.6 + 0.45 * len(lanes)))
    ax = fig.subplots()
    for op in ops:
        t0 = op.t_start if getattr(op, "asynchronous", False) else op.t_issue
        if op.kind == "wait":
            if op.t_end > op.t_issue:
                ax.add_patch(
                    Rectangle(
                        (op.t_issue * scale, y_of[(op.cta, "epilogue")] - 0.45),
                        (op.t_end - op.t_issue) * scale,
                        0.08,
                        color="#999999",
                        lw=0,
                        gid="wait",
                    )
                )
            continue
        name = lane_of_kind.get(op.kind)
        if name is None:
            continue
        ax.add_patch(
            Rectangle(
                (t0 * scale, y_of[(op.cta, name)] - 0.3),
                max(op.t_end - t0, 0.0) * scale,
                0.6,
                color=_KIND_COLORS[op.kind],
                lw=0,
                gid=f"op:{op.kind}",
            )
        )
    t_max = max((op.t_end for op in ops), default=1.0) * scale
    ax.set_xlim(0, t_max * 1.01)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    one_stream = {op.partition for op in ops} <= {"main"}
    # A single-stream kernel has no epilogue partition: its lanes are the engines its one stream drives.
    label = {
        "TMA loads": "TMA loads",
        "tensor core": "tensor core",
        "epilogue": "stream's epilogue ops" if one_stream else "epilogue ops (+ waits)",
    }
    ax.set_yticks([y_of[lane] for lane in lanes], [f"CTA {cta}: {label[name]}" for cta, name in lanes], fontsize=8)
    ax.set_xlabel(f"time on the interpreter's clock ({unit})")
    ax.set_ylabel("CTA: engine")
    seen = [k for k in _KIND_COLORS if any(op.kind == k for op in ops)]  # only what the plot shows
    waits = any(op.kind == "wait" and op.t_end > op.t_issue for op in ops)
    handles = [Rectangle((0, 0), 1, 1, color=_KIND_COLORS[k]) for k in seen] + (
        [Rectangle((0, 0), 1, 1, color="#999999")] if waits else []
    )
    ax.legend(
        handles,
        [k.replace("_", " ") for k in seen] + (["wait (thin bar)"] if waits else []),
        ncol=7,
        fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.35),
        frameon=False,
    )
    ax.set_title(title or "what each CTA's engines did, one timed interpreter run", fontsize=10)
    fig.subplots_adjust(left=0.2, right=0.98, top=0.88, bottom=0.3)
    return fig
