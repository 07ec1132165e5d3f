"""The explorer's rendering machinery, apart from the app: layered figure views with pixel caches, legends fitted
inside their figure, a fast PNG encoder and text rendered like the views (for the static picture).

Nothing here knows about TMEM: :mod:`gluon_overlap.explorer` draws into these views.
"""

from __future__ import annotations

import io
import struct
import textwrap
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from PIL import Image as PILImage

CSS_DPI = 96  # a figure inch is shown as 96 CSS pixels, so a 8 pt label is 8 pt on screen
PIXEL_SCALE = 2  # PNG pixels per CSS pixel: sharp on high-density screens, cleanly downsampled elsewhere
_CACHE_SIZE = 6  # rendered backgrounds kept per view (about 5 MB each at PIXEL_SCALE 2)
#: the legend beside every view (9 pt: readable at 900 CSS pixels)
LEGEND_STYLE: dict[str, Any] = dict(
    loc="upper left",
    fontsize=9,
    frameon=False,
    handlelength=2.0,
    handleheight=1.1,
    borderaxespad=0.0,
    labelspacing=0.45,
)


def _data_artists(ax: Axes) -> list[Artist]:
    """What was drawn into ``ax`` (not its axis, labels or title) and its visible spines, in matplotlib's
    drawing order (the spines go over images and patches, under texts)."""
    spines = [spine for spine in ax.spines.values() if spine.get_visible()]
    return sorted([*_drawn(ax), *spines], key=lambda a: a.get_zorder())  # stable, as in Axes.draw


def _drawn(ax: Axes) -> list[Artist]:
    """The artists added to ``ax`` in insertion order (``Axes._children``, matplotlib >= 3.5), or the
    public per-type lists if a matplotlib ever drops that attribute."""
    children = getattr(ax, "_children", None)
    if children is None:
        children = [*ax.collections, *ax.patches, *ax.lines, *ax.texts, *ax.images, *ax.artists, *ax.tables]
    return list(children)


Legend = Callable[[], tuple[list, list[str]]]


class _View:
    """One reusable figure rendered to PNG, in three layers.

    * the *frame* (axes, ticks, tick labels, the legend) depends on little (``frame_key``); its pixels
      are cached;
    * the *background* (what one configuration draws) is drawn over the frame artist by artist, and
      its pixels are kept in a small cache per configuration;
    * the *dynamic* artists (the step, the picked scale) are drawn over the background.

    The figure is ``width`` x ``height`` inches, shown at :data:`CSS_DPI` and rendered with
    :data:`PIXEL_SCALE` PNG pixels per CSS pixel.
    """

    def __init__(
        self,
        width: float,
        height: float,
        margins: dict[str, float],
        rows: int = 1,
        height_ratios: list[int] | None = None,
    ) -> None:
        self.fig = Figure(figsize=(width, height), dpi=CSS_DPI * PIXEL_SCALE)
        self.canvas = FigureCanvasAgg(self.fig)
        self.axes = self.fig.subplots(rows, 1, height_ratios=height_ratios, squeeze=False)[:, 0].tolist()
        self.fig.subplots_adjust(**margins)
        self.css_width = round(width * CSS_DPI)
        self._legend_anchor = (margins.get("right", 0.9) + 0.012, margins.get("top", 0.9))
        self._background = None
        self._dynamic: list = []
        self._cache: OrderedDict[Any, tuple[Any, list, Any, list[str]]] = OrderedDict()
        self._frames: dict[Any, tuple[Any, list[str]]] = {}
        self.key: Any = None  # what the static background was drawn for
        self.info: Any = None  # what ``readback`` returned when that background was drawn
        self.legend_labels: list[str] = []  # the legend's texts in the shown frame
        self.cold_draws = 0

    def draw_static(
        self,
        draw: Callable[..., Any],
        key: Any,
        readback: Callable[..., Any] | None = None,
        frame_key: Any = None,
        legend: Legend | None = None,
    ) -> None:
        """Show the background for ``key``: drawn by ``draw(*axes)``, or restored from the cache.

        ``draw`` may set limits, ticks and labels only as a function of ``frame_key``, and ``legend``
        (handles and labels for a figure legend right of the axes) must depend on ``frame_key`` only:
        the frame's pixels are reused for every ``key`` with the same ``frame_key`` (``None``: never).
        ``readback(*axes)`` runs right after a real draw; its result is kept with the pixels (``info``).
        """
        if key == self.key:
            return
        for artist in self._dynamic:
            artist.remove()
        self._dynamic = []
        if key in self._cache:
            self._cache.move_to_end(key)
            self._background, limits, self.info, self.legend_labels = self._cache[key]
            for ax, (xlim, ylim) in zip(self.axes, limits, strict=True):
                ax.set_xlim(xlim)
                ax.set_ylim(ylim)
            self.canvas.restore_region(self._background)
        else:
            for ax in self.axes:  # remove what was drawn; ax.clear() would rebuild every tick (slow)
                for artist in _drawn(ax):
                    artist.remove()
            draw(*self.axes)
            self._draw_over_frame(frame_key, legend)
            self.cold_draws += 1
            self._background = self.canvas.copy_from_bbox(self.fig.bbox)
            self.info = readback(*self.axes) if readback else None
            limits = [(ax.get_xlim(), ax.get_ylim()) for ax in self.axes]
            self._cache[key] = (self._background, limits, self.info, self.legend_labels)
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        self.key = key

    def _draw_over_frame(self, frame_key: Any, legend: Legend | None) -> None:
        """Render the figure: the cached frame for ``frame_key`` (drawn if new), then every data artist."""
        data = [(ax, _data_artists(ax)) for ax in self.axes]
        cached = self._frames.get(frame_key) if frame_key is not None else None
        if cached is None:
            for old in list(self.fig.legends):
                old.remove()
            labels: list[str] = []
            if legend is not None:
                handles, labels = legend()
                fit_legend(self.fig, handles, labels, self._legend_anchor)
            for _, artists in data:
                for artist in artists:
                    artist.set_visible(False)
            self.canvas.draw()
            for _, artists in data:
                for artist in artists:
                    artist.set_visible(True)
            cached = (self.canvas.copy_from_bbox(self.fig.bbox), list(labels))
            if frame_key is not None:
                self._frames[frame_key] = cached
        else:
            self.canvas.restore_region(cached[0])
        self.legend_labels = cached[1]
        for ax, artists in data:
            for artist in artists:
                ax.draw_artist(artist)

    def draw_dynamic(self, draw: Callable[[Any], list]) -> None:
        for artist in self._dynamic:
            artist.remove()
        self._dynamic = draw(self.axes[0])
        self.canvas.restore_region(self._background)
        for artist in self._dynamic:
            self.axes[0].draw_artist(artist)

    def png(self) -> bytes:
        rgba = np.asarray(self.canvas.buffer_rgba())
        return fast_png(rgba[:, :, :3])


def fit_legend(fig: Figure, handles: list, labels: list[str], anchor: tuple[float, float]) -> Any:
    """A figure legend at ``anchor`` (upper left, :data:`LEGEND_STYLE`) whose labels are wrapped, at spaces, as
    far as needed to end inside the figure (a label that still does not fit after wrapping is left as it is).
    Returns the legend."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    limit = fig.bbox.x1 - 0.04 * fig.dpi  # a small margin inside the edge
    wrapped = list(labels)
    width = max((len(line) for label in labels for line in label.split("\n")), default=0)
    while True:
        legend = fig.legend(handles, wrapped, bbox_to_anchor=anchor, **LEGEND_STYLE)
        if legend.get_window_extent(renderer).x1 <= limit or width <= 12:
            return legend
        legend.remove()
        width -= 2
        wrapped = [
            label
            if max(map(len, label.split("\n"))) <= width  # a label too wide is reflowed whole
            else "\n".join(textwrap.wrap(" ".join(label.split()), width))
            for label in labels
        ]


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def fast_png(rgb: np.ndarray) -> bytes:
    """An 8-bit RGB PNG of ``rgb`` (height x width x 3, uint8), rows unfiltered, zlib level 1.

    Kept by hand because it was measured to be needed (issue 29 asked for Pillow unless so): Pillow filters
    every row adaptively and offers no way to turn that off, which at the explorer's 2x pixel density costs
    more than the compression itself. One 2016 x 504 step view, median of 15 encodes on this 2-core machine
    under load 5: this function 10.0 ms (63 KB); Pillow 13 ``compress_level=1`` 27.2 ms (62 KB), level 0
    20.6 ms (3 MB, no compression at all), level 6 46.5 ms (54 KB). Against the 100 ms a click may take to
    show its picture, the 17 ms are worth these 15 lines (``benchmarks/explorer_redraw.py`` re-measures
    both). These flat-coloured plots compress as well without a filter; any PNG decoder reads the result
    (the tests use Pillow's).
    """
    height, width, channels = rgb.shape
    if channels != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"rgb has shape {rgb.shape} and dtype {rgb.dtype}; expected (height, width, 3) uint8")
    rows = np.empty((height, 1 + 3 * width), dtype=np.uint8)
    rows[:, 0] = 0  # filter type 0 (none) before every row
    rows[:, 1:] = rgb.reshape(height, 3 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, truecolour, no interlace
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(rows.tobytes(), 1))
        + _png_chunk(b"IEND", b"")
    )


def _patches(ax: Axes, prefix: str) -> dict[str, Any]:
    return {gid: p for p in ax.patches if (gid := p.get_gid()) is not None and gid.startswith(prefix)}


def _cols(patch: Rectangle) -> tuple[int, int]:
    return int(round(patch.get_x())), int(round(patch.get_width()))


def _text(ax: Axes, gid: str) -> str | None:
    for t in ax.texts:
        if t.get_gid() == gid:
            return t.get_text()
    return None


def _image(png: bytes) -> PILImage.Image:
    return PILImage.open(io.BytesIO(png)).convert("RGB")


def _text_image(lines: Sequence[tuple[str, float, str]], width_in: float) -> PILImage.Image:
    """Lines of text ``(text, fontsize, weight)`` rendered like the views (for the static picture)."""
    wrapped: list[tuple[str, float, str]] = []
    for text, size, weight in lines:
        chars = int(width_in * 72 / (0.52 * size))  # about 0.52 em per character in DejaVu Sans
        wrapped += [(piece, size, weight) for piece in textwrap.wrap(text, chars) or [""]]
    heights = [size * 1.45 / 72 for _, size, _ in wrapped]
    height = sum(heights) + 0.16
    fig = Figure(figsize=(width_in, height), dpi=CSS_DPI * PIXEL_SCALE)
    canvas = FigureCanvasAgg(fig)
    y = height - 0.08
    for (text, size, weight), h in zip(wrapped, heights, strict=True):
        y -= h
        fig.text(0.1 / width_in, y / height, text, fontsize=size, fontweight=weight, va="bottom")
    canvas.draw()
    w, h = canvas.get_width_height(physical=True)
    return PILImage.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
