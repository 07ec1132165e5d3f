"""Predicted (and measured) throughput: TFLOP/s vs K, the time split, a roofline, model error.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot state): a notebook shows the
returned figure once, a script saves it with ``fig.savefig``.  Every function takes the row dicts
of :func:`gluon_overlap.twin.timing.sweep` (the same rows ``gluon-overlap model --json`` prints).
Measured rows come from ``gluon-overlap bench`` CSV files (columns ``a_format,b_format,m,n,k,
tflops_off,tflops_on,speedup_pct,tflops_cublas,gpu``) read with :func:`load_measured`.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

PAIR_COLORS = {"mxfp8-mxfp8": "#1f77b4", "mxfp8-mxfp4": "#2ca02c", "mxfp4-mxfp4": "#ff7f0e", "nvfp4-nvfp4": "#d62728"}
#: marker and size per pair: distinct shapes, larger ones drawn first, so near-identical series stay visible
PAIR_MARKERS = {"mxfp8-mxfp8": ("o", 8.5), "mxfp8-mxfp4": ("s", 4.5), "mxfp4-mxfp4": ("^", 8.0),
                "nvfp4-nvfp4": ("D", 4.0)}
SPLIT_COLORS = {"mainloop": "#4c72b0", "exposed_epilogue": "#dd8452", "idle": "#bbbbbb"}
MEASURED_COLUMNS = ("a_format", "b_format", "m", "n", "k", "tflops_off", "tflops_on", "speedup_pct",
                    "tflops_cublas", "gpu")


def pair_label(row: dict) -> str:
    return f"{row['a_format']}-{row['b_format']}"


def _pairs(rows: Sequence[dict]) -> list[str]:
    seen: list[str] = []
    for r in rows:
        if pair_label(r) not in seen:
            seen.append(pair_label(r))
    return seen


def _of(rows: Sequence[dict], label: str) -> list[dict]:
    return sorted((r for r in rows if pair_label(r) == label), key=lambda r: r["k"])


def _marker(label: str, index: int) -> tuple[str, float]:
    return PAIR_MARKERS.get(label, ("ov^sD"[index % 5], 8.0 if index % 2 == 0 else 4.5))


def _coinciding(points: dict[str, list[tuple[int, tuple[float, ...]]]], close) -> dict[str, tuple[str, list[int]]]:
    """Per series, the earlier series it lies on at the most Ks (``close(p, q)`` per K) and those Ks."""
    found: dict[str, tuple[str, list[int]]] = {}
    labels = list(points)
    for j, label in enumerate(labels):
        for other in labels[:j]:
            theirs = dict(points[other])
            ks = [k for k, p in points[label] if k in theirs and close(p, theirs[k])]
            if len(ks) > len(found.get(label, ("", []))[1]):
                found[label] = (other, ks)
    return found


def _k_axis(ax, ks: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ks))
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlabel("K")


def plot_throughput(rows: Sequence[dict], measured: Sequence[dict] | None = None) -> Figure:
    """TFLOP/s vs K per format pair: overlap off (dashed) and on (solid); measured points as markers."""
    labels = _pairs(rows)
    fig = Figure(figsize=(3.6 * len(labels), 3.4), dpi=100)
    axes = fig.subplots(1, len(labels), sharey=False, squeeze=False)
    for ax, label in zip(axes[0], labels, strict=True):
        mine = _of(rows, label)
        ks = [r["k"] for r in mine]
        color = PAIR_COLORS.get(label, "k")
        ax.plot(ks, [r["tflops_off"] for r in mine], "--o", color=color, alpha=0.6, ms=3, label="model, off")
        ax.plot(ks, [r["tflops_on"] for r in mine], "-o", color=color, ms=3, label="model, on")
        if measured:
            meas = _of([m for m in measured if m["m"] == mine[0]["m"] and m["n"] == mine[0]["n"]], label)
            if meas:
                ax.plot([m["k"] for m in meas], [m["tflops_off"] for m in meas], "x", color="k", label="measured, off")
                ax.plot([m["k"] for m in meas], [m["tflops_on"] for m in meas], "+", color="k", ms=9,
                        label="measured, on")
        _k_axis(ax, ks)
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel("TFLOP/s")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{rows[0].get('gpu', '')}: predicted throughput, M={rows[0]['m']} N={rows[0]['n']}", fontsize=11)
    fig.tight_layout()
    return fig


def plot_time_split(rows: Sequence[dict]) -> Figure:
    """Stacked shares of the critical cluster's time per K: mainloop / exposed epilogue / idle, off | on."""
    labels = _pairs(rows)
    fig = Figure(figsize=(3.6 * len(labels), 3.2), dpi=100)
    axes = fig.subplots(1, len(labels), sharey=True, squeeze=False)
    for ax, label in zip(axes[0], labels, strict=True):
        mine = _of(rows, label)
        x = range(len(mine))
        for offset, tag in ((-0.2, "off"), (0.2, "on")):
            bottom = [0.0] * len(mine)
            for part, color in SPLIT_COLORS.items():
                share = [r[f"{part}_us_{tag}"] / r[f"time_us_{tag}"] for r in mine]
                ax.bar([i + offset for i in x], share, 0.38, bottom=bottom, color=color,
                       label=part.replace("_", " ") if (tag == "off") else None,
                       hatch="//" if tag == "off" else None, edgecolor="white", linewidth=0.3)
                bottom = [b + s for b, s in zip(bottom, share, strict=True)]
        ax.set_xticks(list(x))
        ax.set_xticklabels([str(r["k"]) for r in mine])
        ax.set_xlabel("K  (hatched: off, plain: on)")
        ax.set_title(label, fontsize=10)
    axes[0][0].set_ylabel("share of kernel time")
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def plot_exposed_share(rows: Sequence[dict]) -> Figure:
    """Share of the kernel time during which the tensor pipe waits for an epilogue drain, vs K.

    One colour and marker per format pair; dashed with hollow markers: overlap off, solid with filled
    markers: on. Series that lie on top of an earlier one (within 1% of the y range) say so in the legend.
    """
    fig = Figure(figsize=(9.0, 3.8), dpi=100)
    ax = fig.subplots()
    labels = _pairs(rows)
    share = {tag: {label: [(r["k"], (100 * r[f"exposed_epilogue_us_{tag}"] / r[f"time_us_{tag}"],))
                           for r in _of(rows, label)] for label in labels} for tag in ("off", "on")}
    span = max((v for tag in share.values() for pts in tag.values() for _, (v,) in pts), default=1.0) or 1.0
    same = {tag: _coinciding(share[tag], lambda p, q: abs(p[0] - q[0]) <= 0.01 * span) for tag in share}
    handles = []
    for i, label in enumerate(labels):
        color = PAIR_COLORS.get(label, "k")
        marker, size = _marker(label, i)
        width = 3.2 if size > 6 else 1.2  # the big-marker series is a wide band under a thin one
        for tag, style, face in (("off", "--", "white"), ("on", "-", color)):
            pts = share[tag][label]
            ax.plot([k for k, _ in pts], [v for _, (v,) in pts], style, marker=marker, ms=size, mfc=face, mec=color,
                    color=color, lw=width, alpha=0.55 if size > 6 else 1.0, zorder=2 + i)
        # name an earlier series this one hides for most K (off and/or on)
        on_top = {tag: same[tag][label][0] for tag in same
                  if label in same[tag] and 2 * len(same[tag][label][1]) >= len(share[tag][label])}
        note = ""
        if on_top:
            others = sorted(set(on_top.values()))
            note = f" (on top of {', '.join(others)}: {' and '.join(on_top)})"
        handles.append(Line2D([], [], color=color, marker=marker, ms=size, lw=width, alpha=0.55 if size > 6 else 1.0,
                              label=label + note))
    handles += [Line2D([], [], color="0.3", ls="--", marker="o", mfc="white", ms=5, label="overlap off"),
                Line2D([], [], color="0.3", ls="-", marker="o", ms=5, label="overlap on")]
    _k_axis(ax, sorted({r["k"] for r in rows}))
    ax.set_ylabel("exposed epilogue, % of time")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def plot_roofline(hw, rows: Sequence[dict]) -> Figure:
    """Where each (format, K) sits: FLOP per HBM byte (x) against predicted TFLOP/s (y), with the roofs."""
    fig = Figure(figsize=(9.0, 4.2), dpi=100)
    ax = fig.subplots()
    bw = hw.hbm_tb_s * 1e12
    xs = [r["flops"] / r["hbm_bytes"] for r in rows]
    lo, hi = min(xs) / 2, max(xs) * 2
    grid = [lo * (hi / lo) ** (i / 100) for i in range(101)]
    # the FP4 roof is the rate of the K = 64 FP4 MMA this kernel issues; Blackwell Ultra's vendor FP4 peak is a wider
    # form's (K = 96), drawn dashed above it where it differs
    k64 = hw.mma_flops_per_sm("fp4", 64) * hw.sms / 1e15
    if hw.peak_fp4_pflops > k64 * (1 + 1e-9):
        ax.axhline(hw.peak_fp4_pflops * 1e3, color="gray", ls="--", lw=0.8)
        ax.text(lo * 1.05, hw.peak_fp4_pflops * 1e3 * 1.03, "FP4 vendor peak (K = 96 form, not issued)",
                ha="left", va="bottom", fontsize=7, color="gray")
    for cls, peak, eff, style in (("FP8", hw.peak_fp8_pflops, hw.tensor_efficiency_fp8, "-"),
                                  ("FP4", k64, hw.tensor_efficiency_fp4, "-")):
        ax.plot(grid, [min(peak * 1e3, x * bw / 1e12) for x in grid], style, color="k", lw=1)
        ax.plot(grid, [min(peak * 1e3, x * bw * hw.hbm_efficiency / 1e12) for x in grid], ":", color="gray", lw=1)
        ax.axhline(peak * 1e3 * eff, color="gray", ls=":", lw=1)
        ax.text(hi / 1.05, peak * 1e3 * 1.03, f"{cls} peak", ha="right", va="bottom", fontsize=7)
        ax.text(hi / 1.05, peak * 1e3 * eff * 1.03, f"{cls} x {eff:.2f} (calibrated)", ha="right", va="bottom",
                fontsize=7, color="gray")
    labels = _pairs(rows)
    points = {label: [(r["k"], (r["flops"] / r["hbm_bytes"], r["tflops_on"], r["tflops_off"]))
                      for r in _of(rows, label)] for label in labels}
    # on a log-log plot two markers hide each other when both coordinates agree within ~3%
    same = _coinciding(points, lambda p, q: all(abs(math.log10(a / b)) < 0.015 for a, b in zip(p, q, strict=True)))
    notes = {label: f" (on {other} at K={','.join(map(str, ks))})" for label, (other, ks) in same.items()}
    for i, label in enumerate(labels):
        color = PAIR_COLORS.get(label, "k")
        marker, size = _marker(label, i)
        for _, (x, on, off) in points[label]:
            ax.plot([x, x], [off, on], "-", color=color, lw=0.8, alpha=0.5, zorder=1)  # the gain of the overlap
        xs = [x for _, (x, _, _) in points[label]]
        ax.plot(xs, [off for _, (_, _, off) in points[label]], marker, mfc="none", mec=color, ms=size, mew=1.2,
                ls="none", zorder=2 + i)
        ax.plot(xs, [on for _, (_, on, _) in points[label]], marker, color=color, ms=size, ls="none",
                mec="white" if size > 6 else color, mew=0.6, zorder=2 + i, label=label + notes.get(label, ""))
    # one K label per group of points that sit together (same K, close on both axes), above the group
    for k in sorted({r["k"] for r in rows}):
        spots = sorted((x, on) for pts in points.values() for kk, (x, on, _) in pts if kk == k)
        groups: list[list[tuple[float, float]]] = []
        for x, on in spots:
            for g in groups:
                if any(abs(math.log10(x / gx)) < 0.06 and abs(math.log10(on / gy)) < 0.06 for gx, gy in g):
                    g.append((x, on))
                    break
            else:
                groups.append([(x, on)])
        for g in groups:
            gx, gy = max(g, key=lambda p: p[1])
            ax.annotate(f"K={k}", (min(x for x, _ in g), gy), fontsize=6.5, xytext=(-8, 5), textcoords="offset points",
                        ha="right", va="bottom", color="0.25")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("FLOP per HBM byte (operands, C write-back)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"{hw.name}: roofline (filled: overlap on, hollow: off, joined per K)", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    handles, names = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="0.3", marker="o", ls="none", mfc="none", ms=6),
                Line2D([], [], color="0.3", marker="o", ls="none", ms=6)]
    names += ["hollow: overlap off", "filled: overlap on"]
    ax.legend(handles, names, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
              title="format pair", title_fontsize=7, alignment="left")
    fig.tight_layout()
    return fig


def plot_speedup_bands(rows_by_gpu: dict[str, Sequence[dict]],
                       published: tuple[float, float] | None = None, published_gpu: str = "gb300") -> Figure:
    """Predicted speedup vs K with its band (shaded) per format pair, one panel per GPU; on the panel of
    ``published_gpu`` the published range is drawn as a grey span."""
    gpus = list(rows_by_gpu)
    fig = Figure(figsize=(4.4 * len(gpus), 3.6), dpi=100)
    axes = fig.subplots(1, len(gpus), sharey=True, squeeze=False)[0]
    for ax, gpu in zip(axes, gpus, strict=True):
        rows = rows_by_gpu[gpu]
        ks = sorted({r["k"] for r in rows})
        if published is not None and gpu == published_gpu:
            ax.axhspan(published[0], published[1], color="0.85", zorder=0,
                       label=f"published ({published_gpu}): {published[0]:g}-{published[1]:g}%")
        for i, label in enumerate(_pairs(rows)):
            mine = _of(rows, label)
            color = PAIR_COLORS.get(label, "k")
            marker, size = _marker(label, i)
            xs = [r["k"] for r in mine]
            ax.fill_between(xs, [r["speedup_band_pct"][0] for r in mine], [r["speedup_band_pct"][1] for r in mine],
                            color=color, alpha=0.12, lw=0)
            ax.plot(xs, [r["speedup_pct"] for r in mine], "-", marker=marker, ms=size * 0.7, color=color, label=label)
        ax.axhline(0, color="k", lw=0.6)
        _k_axis(ax, ks)
        ax.set_title(f"{gpu}: speedup of the overlap (band: parameter ranges)", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("speedup, %")
    axes[-1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def load_measured(folder: str | Path) -> list[dict]:
    """All rows of the ``gluon-overlap bench`` CSV files in ``folder`` (numbers as int / float)."""
    rows: list[dict] = []
    for path in sorted(Path(folder).glob("*.csv")):
        with path.open(newline="") as fh:
            for raw in csv.DictReader(fh):
                missing = [c for c in MEASURED_COLUMNS if c not in raw]
                if missing:
                    raise ValueError(f"{path.name}: missing columns {missing}")
                row = dict(raw)
                for key in ("m", "n", "k"):
                    row[key] = int(raw[key])
                for key in ("tflops_off", "tflops_on", "speedup_pct", "tflops_cublas"):
                    row[key] = float(raw[key]) if raw[key] not in ("", None) else float("nan")
                rows.append(row)
    return rows


def gpu_matches(description: str, device_name: str) -> bool:
    """Is ``device_name`` (``torch.cuda.get_device_name()``, e.g. "NVIDIA B200") the described GPU ``description``?

    Compares whole model tokens, so "NVIDIA GB200" is not a "b200".
    """
    return description.lower() in re.findall(r"[a-z]*\d+[a-z]*", device_name.lower())


def model_error(model_rows: Sequence[dict], measured: Sequence[dict]) -> list[dict]:
    """Join model and measured rows on (format pair, M, N, K): predicted, measured and error in %."""
    index = {(pair_label(r), r["m"], r["n"], r["k"]): r for r in model_rows}
    out = []
    for m in measured:
        r = index.get((pair_label(m), m["m"], m["n"], m["k"]))
        if r is None:
            continue
        out.append({
            "format": pair_label(m), "k": m["k"], "gpu": m["gpu"],
            "off_model": round(r["tflops_off"], 1), "off_measured": round(m["tflops_off"], 1),
            "off_err_pct": round(100 * (r["tflops_off"] / m["tflops_off"] - 1), 1),
            "on_model": round(r["tflops_on"], 1), "on_measured": round(m["tflops_on"], 1),
            "on_err_pct": round(100 * (r["tflops_on"] / m["tflops_on"] - 1), 1),
            "gain_model_pct": round(r["speedup_pct"], 1), "gain_measured_pct": round(m["speedup_pct"], 1),
        })
    return out
