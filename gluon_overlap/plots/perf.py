"""Predicted (and measured) throughput: TFLOP/s vs K, the time split, a roofline, model error.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot state): a notebook shows the
returned figure once, a script saves it with ``fig.savefig``.  Every function takes the row dicts
of :func:`gluon_overlap.twin.timing.sweep` (the same rows ``gluon-overlap model --json`` prints).
Measured rows come from ``gluon-overlap bench`` CSV files (columns ``a_format,b_format,m,n,k,
tflops_off,tflops_on,speedup_pct,tflops_cublas,gpu``) read with :func:`load_measured`.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

PAIR_COLORS = {"mxfp8-mxfp8": "#1f77b4", "mxfp8-mxfp4": "#2ca02c", "mxfp4-mxfp4": "#ff7f0e", "nvfp4-nvfp4": "#d62728"}
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
    """Share of the kernel time during which the tensor pipe waits for an epilogue drain, vs K."""
    fig = Figure(figsize=(6.0, 3.6), dpi=100)
    ax = fig.subplots()
    for label in _pairs(rows):
        mine = _of(rows, label)
        ks = [r["k"] for r in mine]
        color = PAIR_COLORS.get(label, "k")
        ax.plot(ks, [100 * r["exposed_epilogue_us_off"] / r["time_us_off"] for r in mine], "--o", ms=3, color=color,
                alpha=0.6, label=f"{label} off")
        ax.plot(ks, [100 * r["exposed_epilogue_us_on"] / r["time_us_on"] for r in mine], "-o", ms=3, color=color,
                label=f"{label} on")
    _k_axis(ax, sorted({r["k"] for r in rows}))
    ax.set_ylabel("exposed epilogue, % of time")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def plot_roofline(hw, rows: Sequence[dict]) -> Figure:
    """Where each (format, K) sits: FLOP per HBM byte (x) against predicted TFLOP/s (y), with the roofs."""
    fig = Figure(figsize=(6.4, 4.2), dpi=100)
    ax = fig.subplots()
    bw = hw.hbm_tb_s * 1e12
    xs = [r["flops"] / r["hbm_bytes"] for r in rows]
    lo, hi = min(xs) / 2, max(xs) * 2
    grid = [lo * (hi / lo) ** (i / 100) for i in range(101)]
    for cls, peak, eff, style in (("FP8", hw.peak_fp8_pflops, hw.tensor_efficiency_fp8, "-"),
                                  ("FP4", hw.peak_fp4_pflops, hw.tensor_efficiency_fp4, "-")):
        ax.plot(grid, [min(peak * 1e3, x * bw / 1e12) for x in grid], style, color="k", lw=1)
        ax.plot(grid, [min(peak * 1e3, x * bw * hw.hbm_efficiency / 1e12) for x in grid], ":", color="gray", lw=1)
        ax.axhline(peak * 1e3 * eff, color="gray", ls=":", lw=1)
        ax.text(hi / 1.05, peak * 1e3 * 1.03, f"{cls} peak", ha="right", va="bottom", fontsize=7)
        ax.text(hi / 1.05, peak * 1e3 * eff * 1.03, f"{cls} x {eff:.2f} (calibrated)", ha="right", va="bottom",
                fontsize=7, color="gray")
    for label in _pairs(rows):
        mine = _of(rows, label)
        color = PAIR_COLORS.get(label, "k")
        x = [r["flops"] / r["hbm_bytes"] for r in mine]
        ax.plot(x, [r["tflops_off"] for r in mine], "o", mfc="none", color=color, ms=5)
        ax.plot(x, [r["tflops_on"] for r in mine], "o", color=color, ms=5, label=label)
        for xi, r in zip(x, mine, strict=True):
            ax.annotate(str(r["k"]), (xi, r["tflops_on"]), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("FLOP per HBM byte (operands, C write-back)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"{hw.name}: roofline (filled: overlap on, hollow: off; numbers are K)", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
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
