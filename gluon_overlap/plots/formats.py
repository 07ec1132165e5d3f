"""Figures for notebooks 01 and 02: number lines, scale ranges, quantization errors, scale layouts.

Every function returns a :class:`matplotlib.figure.Figure` (draw it, save it, or let the notebook show it).
The package computes; these functions only draw.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from gluon_overlap import formats as F
from gluon_overlap import swizzle as S

GROUP_COLORS = np.array([[0.12, 0.47, 0.71], [1.0, 0.50, 0.05], [0.17, 0.63, 0.17], [0.84, 0.15, 0.16]])
PAD_COLOR = np.array([0.85, 0.85, 0.85])
FORMAT_COLORS = {"mxfp8": "tab:blue", "mxfp4": "tab:orange", "nvfp4": "tab:green"}


def plot_e2m1_number_line(ax: plt.Axes | None = None) -> Figure:
    """The 15 distinct e2m1 values with their 4-bit codes: dense near zero, sparse near +-6."""
    fig, ax = _fig_ax(ax, (10, 2.2))
    codes = torch.arange(16, dtype=torch.uint8)
    values = F.decode_e2m1(codes).tolist()
    ax.axhline(0, color="0.6", lw=1, zorder=0)
    for code, v in zip(codes.tolist(), values, strict=True):
        if code == 8:  # -0.0 shares the point of +0.0
            continue
        ax.plot(v, 0, "o", color="tab:orange", ms=8)
        label = f"{code:04b}" if code != 0 else "0000\n1000"
        ax.annotate(
            label, (v, 0), xytext=(0, 9), textcoords="offset points", ha="center", fontsize=7, family="monospace"
        )
        ax.annotate(f"{v:g}", (v, 0), xytext=(0, -16), textcoords="offset points", ha="center", fontsize=8)
    ax.set_xlim(-6.8, 6.8)
    ax.set_ylim(-1, 1.2)
    ax.set_yticks([])
    ax.set_title("e2m1: every value a 4-bit element can hold (codes above, values below)")
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    return fig


def plot_scale_ranges(ax: plt.Axes | None = None) -> Figure:
    """Magnitude ranges (log2) of the element types and of the two scale types."""
    fig, ax = _fig_ax(ax, (10, 2.8))
    e4m3_codes = torch.arange(1, 0x7F, dtype=torch.uint8).view(torch.float8_e4m3fn).to(torch.float64)
    rows = [
        ("e2m1 element", 0.5, 6.0, None, "tab:orange"),
        ("e4m3 element / nvfp4 scale", float(e4m3_codes.min()), 448.0, 2.0**-6, "tab:blue"),
        ("e8m0 scale (mx)", 2.0**-127, 2.0**127, None, "tab:purple"),
    ]
    for i, (_name, lo, hi, normal, color) in enumerate(rows):
        ax.barh(i, np.log2(hi) - np.log2(lo), left=np.log2(lo), color=color, alpha=0.75, height=0.5)
        if normal is not None:
            ax.barh(
                i, np.log2(normal) - np.log2(lo), left=np.log2(lo), color="white", alpha=0.45, height=0.5, hatch="///"
            )
        ax.text((np.log2(lo) + np.log2(hi)) / 2, i + 0.3, f"{lo:.3g} .. {hi:.3g}", ha="center", va="bottom", fontsize=8)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.set_xlabel("log2 |value|   (hatched: subnormals)")
    ax.set_xlim(-135, 135)
    ax.set_ylim(-0.5, len(rows) - 0.1)
    ax.axvline(0, color="0.7", lw=0.8)
    ax.set_title("Elements cover a few binades; the scale moves that window across the whole range")
    return fig


def plot_number_lines() -> Figure:
    """The e2m1 number line above the scale ranges (notebook 01's first figure)."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 5), gridspec_kw={"height_ratios": [1, 1.3]})
    plot_e2m1_number_line(top)
    plot_scale_ranges(bottom)
    fig.tight_layout()
    return fig


def plot_error_histograms(
    matrices: Mapping[str, torch.Tensor], formats: Sequence[str] = F.FORMAT_NAMES, bins: int = 60
) -> Figure:
    """Histograms of the relative error ``|dequantize(quantize(x)) - x| / |x|`` per matrix and format."""
    fig, axes = plt.subplots(1, len(matrices), figsize=(5 * len(matrices), 3.4), squeeze=False)
    edges = np.linspace(-8, 0.5, bins + 1)
    for ax, (label, x) in zip(axes[0], matrices.items(), strict=True):
        nonzero = x != 0
        for fmt in formats:
            err = (F.quantize(x, fmt).dequantize() - x).abs()[nonzero] / x.abs()[nonzero]
            log_err = torch.log10(err.clamp(min=1e-8)).numpy()
            ax.hist(log_err, bins=edges, histtype="step", lw=1.6, color=FORMAT_COLORS.get(fmt), label=fmt)
        ax.set_title(label)
        ax.set_xlabel("log10 relative error (exact values at -8)")
        ax.set_yscale("log")
    axes[0][0].set_ylabel("elements")
    axes[0][-1].legend(loc="upper left")
    fig.tight_layout()
    return fig


def _scale_colors(mn: int, sk: int) -> np.ndarray:
    """RGB per scale (row, k): hue = row group (row // 32 % 4; it becomes the TMEM column within the
    scale chunk, not a sub-partition), shade = k % 4."""
    rows = np.arange(mn)[:, None]
    ks = np.arange(sk)[None, :]
    base = GROUP_COLORS[(rows // 32) % 4]  # [mn, 1, 3]
    shade = (0.55 + 0.15 * (ks % 4))[..., None]  # [1, sk, 1]
    return np.clip(1 - (1 - base) * shade, 0, 1)


def plot_scale_layout(
    mn: int, scale_k: int, highlight: Iterable[tuple[int, int]] = ((0, 0), (33, 1), (127, 3))
) -> Figure:
    """Where each scale of an ``[mn, scale_k]`` scale matrix lands after :func:`~gluon_overlap.swizzle.swizzle_scales`.

    Left: the logical matrix (padded to multiples of [128, 4], padding grey). Right: the swizzled bytes,
    one 512-byte chunk per panel column, drawn as 32 lanes x 16 bytes. Colour = row group (row // 32 % 4),
    shade = k % 4; numbered markers follow a few chosen scales.
    """
    rep_mn, rep_k = S.swizzled_shape(mn, scale_k)[:2]
    pmn, psk = rep_mn * 128, rep_k * 4
    logical = np.tile(PAD_COLOR, (pmn, psk, 1))
    logical[:mn, :scale_k] = _scale_colors(mn, scale_k)

    # move the colours exactly as swizzle_scales moves bytes: swizzle the index of each scale
    index = torch.arange(pmn * psk, dtype=torch.int64).reshape(pmn, psk)
    lo = S.swizzle_scales((index & 0xFF).to(torch.uint8)).long()
    hi = S.swizzle_scales(((index >> 8) & 0xFF).to(torch.uint8)).long()
    hh = S.swizzle_scales(((index >> 16) & 0xFF).to(torch.uint8)).long()
    src = (lo | (hi << 8) | (hh << 16)).reshape(rep_mn * rep_k, 32, 16)  # chunk, lane, byte
    flat_colors = logical.reshape(-1, 3)
    chunks = flat_colors[src.numpy()]  # [chunks, 32, 16, 3]
    memory = np.concatenate(list(chunks), axis=1)  # lanes x (chunks * 16 bytes)

    fig, (ax_l, ax_r) = plt.subplots(1, 2, figsize=(11, 5.2), gridspec_kw={"width_ratios": [1, 2.2]})
    ax_l.imshow(logical, aspect="auto", interpolation="nearest", extent=(-0.5, psk - 0.5, pmn - 0.5, -0.5))
    for r in range(0, pmn + 1, 128):
        ax_l.axhline(r - 0.5, color="k", lw=1.2)
    for r in range(0, pmn, 32):
        ax_l.axhline(r - 0.5, color="w", lw=0.4)
    for c in range(0, psk + 1, 4):
        ax_l.axvline(c - 0.5, color="k", lw=1.2)
    if pmn > mn or psk > scale_k:
        ax_l.add_patch(Rectangle((-0.5, -0.5), scale_k, mn, fill=False, ec="k", ls="--", lw=1))
    ax_l.set_title(f"logical scales [{mn}, {scale_k}] -> padded [{pmn}, {psk}]", fontsize=10, pad=10)
    ax_l.set_xlabel("scale column k", labelpad=6)
    ax_l.tick_params(axis="x", pad=8)
    ax_l.set_ylabel("row (M or N)")

    ax_r.imshow(memory, aspect="auto", interpolation="nearest", extent=(-0.5, memory.shape[1] - 0.5, 31.5, -0.5))
    for c in range(0, memory.shape[1] + 1, 16):
        ax_r.axvline(c - 0.5, color="k", lw=1.2)
    for c in range(0, memory.shape[1], 4):
        ax_r.axvline(c - 0.5, color="w", lw=0.4)
    ax_r.set_xticks(
        [c * 16 + 7.5 for c in range(rep_mn * rep_k)],
        [f"chunk ({c // rep_k},{c % rep_k})" for c in range(rep_mn * rep_k)],
        fontsize=8,
    )
    ax_r.set_ylabel("lane (16 bytes per lane)")
    ax_r.set_title(
        "swizzled memory: 512-byte chunks (rep_mn, rep_k) = 32 lanes x [4 groups x 4 k]", fontsize=10, pad=10
    )
    ax_r.tick_params(axis="x", pad=8)  # room for a marker on the last lane

    for i, (row, k) in enumerate(highlight, start=1):
        if row >= mn or k >= scale_k:
            continue
        rm, rk, lane, group, k4 = S.scale_location(row, k)
        x_mem = (rm * rep_k + rk) * 16 + group * 4 + k4
        for ax, (x, y) in ((ax_l, (k, row)), (ax_r, (x_mem, lane))):
            ax.plot(x, y, "o", ms=13, mfc="white", mec="k", clip_on=False, zorder=5)
            ax.text(x, y, str(i), ha="center", va="center", fontsize=8, weight="bold", clip_on=False, zorder=6)
    handles = [Rectangle((0, 0), 1, 1, color=GROUP_COLORS[g]) for g in range(4)] + [
        Rectangle((0, 0), 1, 1, color=PAD_COLOR)
    ]
    fig.legend(
        handles,
        [f"rows {32 * g}..{32 * g + 31} (+128 n)" for g in range(4)] + ["padding"],
        loc="lower center",
        ncol=5,
        fontsize=8,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def plot_smem_tile(block: torch.Tensor) -> Figure:
    """One TMA block ``(1, rep_mn, rep_k, 2, 256)`` as bytes, next to the tile the in-SMEM unswizzle makes of it.

    Both panels use one colour scale (the colorbar): the right panel holds exactly the bytes of the left one,
    moved. Left: one row per 256-byte half of a 512-byte chunk, labelled ``(rep_mn, rep_k, half)``; half 0
    holds lanes 0..15, half 1 lanes 16..31. Right: the logical ``[rep_mn*128, rep_k*4]`` tile.
    """
    tile = S.unswizzle_smem_tile(block).view(torch.uint8).numpy()
    raw = block.view(torch.uint8).reshape(-1, 256).numpy()
    rep_mn, rep_k = int(block.shape[1]), int(block.shape[2])
    code = "e8m0 code (scale = 2^(code - 127))" if block.dtype == torch.uint8 else "e4m3 scale, raw byte"
    vmin, vmax = int(min(raw.min(), tile.min())), int(max(raw.max(), tile.max()))
    fig, (ax_a, ax_b) = plt.subplots(
        1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [2.4, 1]}, layout="constrained"
    )
    image = ax_a.imshow(
        raw,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        vmin=vmin,
        vmax=vmax,
        extent=(-0.5, 255.5, raw.shape[0] - 0.5, -0.5),
    )
    ax_a.set_title(f"TMA block {tuple(block.shape)}: {raw.shape[0]} rows of 256 bytes", fontsize=10)
    ax_a.set_xlabel("byte in the row = 16 * (lane % 16) + 4 * group + k4")
    labels = [f"({m}, {k}, {h})" for m in range(rep_mn) for k in range(rep_k) for h in range(2)]
    step = max(1, len(labels) // 16)  # at most ~16 labels on the axis
    ax_a.set_yticks(range(0, len(labels), step), labels[::step], fontsize=8, family="monospace")
    ax_a.set_ylabel("(rep_mn, rep_k, half)")
    for r in range(1, raw.shape[0]):  # white between the two halves of a chunk, black between chunks
        ax_a.axhline(r - 0.5, color="k" if r % 2 == 0 else "w", lw=1.2 if r % 2 == 0 else 0.6)
    ax_a.set_xticks(range(0, 257, 32))

    ax_b.imshow(
        tile,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        vmin=vmin,
        vmax=vmax,
        extent=(-0.5, tile.shape[1] - 0.5, tile.shape[0] - 0.5, -0.5),
    )
    ax_b.set_title(f"after reshape/permute: tile [{tile.shape[0]}, {tile.shape[1]}]", fontsize=10)
    ax_b.set_xticks(range(tile.shape[1]))
    ax_b.set_xlabel("scale column (4 * rep_k + k4)")
    ax_b.set_yticks(range(0, tile.shape[0] + 1, 64))
    ax_b.set_ylabel("row (128 * rep_mn + 32 * group + lane)")
    for r in range(128, tile.shape[0], 128):
        ax_b.axhline(r - 0.5, color="k", lw=1.2)
    for c in range(4, tile.shape[1], 4):
        ax_b.axvline(c - 0.5, color="k", lw=1.2)
    bar = fig.colorbar(image, ax=[ax_a, ax_b], fraction=0.03, pad=0.01, ticks=MaxNLocator(nbins=8, integer=True))
    bar.set_label(f"byte value: {code}", fontsize=8)
    return fig


def _fig_ax(ax: plt.Axes | None, size: tuple[float, float]) -> tuple[Figure, plt.Axes]:
    if ax is None:
        fig, ax = plt.subplots(figsize=size)
        return fig, ax
    owner = ax.figure  # a Figure, or the SubFigure the axes were made in (whose .figure is the Figure)
    return (owner if isinstance(owner, Figure) else owner.figure), ax
