"""The TMEM layout explorer: an ipywidgets app drawn with matplotlib.

Turn the knobs (formats, BLOCK_K, EPILOGUE_BLOCK_N, overlap on/off) and see the per-CTA TMEM plan
redrawn: the 512-column ruler with both accumulators, the overlap, the scales and the drain
directions.  The *step* slider walks through the ping-pong of tiles 0, 1, 2, ...: which window the
MMA writes, which subtile the epilogue drains, when the overlap barrier is released (and which
parity the MMA waits on), when ``acc_empty`` lets tile 2 reuse the left window.  The last view
shows, for one scale you pick (operand, row, k), the TMEM lane(s) and column where it lives.
Every view carries a legend, every control a tooltip.

Everything is read from :func:`gluon_overlap.tmem.make_plan`; an invalid configuration shows, in a
red box instead of a traceback, what does not fit in plain words (:func:`explain_plan_error`) and,
below it, the plan's own ``ValueError`` message.

Where no widget can run (GitHub, nbconvert, a notebook JupyterLab does not trust yet) the explorer
still shows something: it displays itself as a bundle carrying the widget *and* a static PNG of its
current view with a line saying that running the cell makes it interactive (:meth:`static_png`).

Usage in a notebook::

    from gluon_overlap.explorer import TmemExplorer
    TmemExplorer()          # displays itself

For tests: ``explorer.error`` (the plain-words message, or ``None``), ``explorer.plan_error`` (the
plan's message) and ``explorer.last_drawn`` (what the figures actually contain, read back from the
matplotlib artists, legends included).
"""

from __future__ import annotations

import base64
import html
import io
import struct
import textwrap
import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage

from gluon_overlap import tmem
from gluon_overlap.plots import tmem as ptmem

FORMAT_NAMES = tuple(tmem.FORMAT_VEC_SIZE)
BLOCK_K_CHOICES = tuple(range(64, 3072 + 1, 64))
EPILOGUE_BLOCK_N_CHOICES = (8, 16, 32, 48, 64, 128, 256)
MAX_TILES = 16
ERROR_CLASS = "tmem-explorer-error"
#: the first line of the explorer's ``text/plain`` form (what shows where neither widgets nor images do)
STATIC_NOTE = ("Static picture of the TMEM layout explorer. Run this cell in a live Jupyter kernel "
               "(or serve the notebook with Voila: `make explorer`) to make it interactive.")
OFFLINE_NOTE_CLASS = "tmem-explorer-offline"
OFFLINE_NOTE_HTML = (f"<style>.tmem-explorer:not(.jupyter-widgets-disconnected) .{OFFLINE_NOTE_CLASS}"
                     "{display:none}</style>"
                     f'<div class="{OFFLINE_NOTE_CLASS}" style="padding:4px 8px;background:#fff8e1;border:1px solid '
                     '#e0c060;border-radius:4px;font-family:sans-serif;font-size:13px">These controls are the '
                     "explorer as it was saved, with no kernel behind them: run this cell in a live Jupyter kernel "
                     "to make it interactive.</div>")
CSS_DPI = 96  # a figure inch is shown as 96 CSS pixels, so a 8 pt label is 8 pt on screen
PIXEL_SCALE = 2  # PNG pixels per CSS pixel: sharp on high-density screens, cleanly downsampled elsewhere
_CACHE_SIZE = 6  # rendered backgrounds kept per view (about 5 MB each at PIXEL_SCALE 2)
_LEGEND_STYLE = dict(loc="upper left", fontsize=7.5, frameon=False, handlelength=2.0, handleheight=1.1,
                     borderaxespad=0.0, labelspacing=0.45)
_FIG_WIDTH = 10.5  # inches: 1008 CSS pixels (figure sizes are multiples of 1/8 inch: whole PNG pixels)
_PLOT_RIGHT = 0.755  # the axes end here; the legend fills the rest of the width


def _data_artists(ax) -> list:
    """What was drawn into ``ax`` (not its axis, labels or title) and its visible spines, in matplotlib's
    drawing order (the spines go over images and patches, under texts)."""
    spines = [spine for spine in ax.spines.values() if spine.get_visible()]
    return sorted([*_drawn(ax), *spines], key=lambda a: a.get_zorder())  # stable, as in Axes.draw


def _drawn(ax) -> list:
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

    def __init__(self, width: float, height: float, margins: dict[str, float], rows: int = 1,
                 height_ratios: list[int] | None = None) -> None:
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

    def draw_static(self, draw: Callable[..., Any], key: Any, readback: Callable[..., Any] | None = None,
                    frame_key: Any = None, legend: Legend | None = None) -> None:
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
                self.fig.legend(handles, labels, bbox_to_anchor=self._legend_anchor, **_LEGEND_STYLE)
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


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def fast_png(rgb: np.ndarray) -> bytes:
    """An 8-bit RGB PNG of ``rgb`` (height x width x 3, uint8), rows unfiltered, zlib level 1.

    Pillow tries every PNG row filter on every row, which at the explorer's 2x pixel density costs more
    than the compression itself (about 23 ms against 10 ms for one 2016 x 504 view); these flat-coloured
    plots compress as well without a filter. Any PNG decoder reads the result (the tests use Pillow's).
    """
    height, width, channels = rgb.shape
    if channels != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"rgb has shape {rgb.shape} and dtype {rgb.dtype}; expected (height, width, 3) uint8")
    rows = np.empty((height, 1 + 3 * width), dtype=np.uint8)
    rows[:, 0] = 0  # filter type 0 (none) before every row
    rows[:, 1:] = rgb.reshape(height, 3 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits, truecolour, no interlace
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(rows.tobytes(), 1))
            + _png_chunk(b"IEND", b""))


class _Rendered:
    """The last few rendered views (PNG and what was read back from the drawing), by what they show.

    Moving a slider back and forth re-shows a view without drawing or encoding it again.
    """

    def __init__(self, size: int = 64) -> None:
        self._items: OrderedDict[Any, tuple[bytes, dict[str, Any]]] = OrderedDict()
        self._size = size
        self.hits = 0

    def get(self, key: Any, render: Callable[[], tuple[bytes, dict[str, Any]]]) -> tuple[bytes, dict[str, Any]]:
        if key in self._items:
            self._items.move_to_end(key)
            self.hits += 1
            return self._items[key]
        item = self._items[key] = render()
        if len(self._items) > self._size:
            self._items.popitem(last=False)
        return item


def _patches(ax, prefix: str) -> dict[str, Any]:
    return {p.get_gid(): p for p in ax.patches if (p.get_gid() or "").startswith(prefix)}


def _cols(patch) -> tuple[int, int]:
    return int(round(patch.get_x())), int(round(patch.get_width()))


def _text(ax, gid: str) -> str | None:
    for t in ax.texts:
        if t.get_gid() == gid:
            return t.get_text()
    return None


def _image(png: bytes) -> PILImage.Image:
    return PILImage.open(io.BytesIO(png)).convert("RGB")


def _text_image(lines: list[tuple[str, float, str]], width_in: float) -> PILImage.Image:
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


# --- plain-words errors ----------------------------------------------------------------------------


def _fits(a_format: str, b_format: str, block_k: int, epilogue_block_n: int, overlap: bool) -> bool:
    try:
        tmem.make_plan(a_format, b_format, block_k, epilogue_block_n, overlap)
    except ValueError:
        return False
    return True


def _largest_block_k(a_format: str, b_format: str, epilogue_block_n: int, overlap: bool) -> int | None:
    return max((k for k in BLOCK_K_CHOICES if _fits(a_format, b_format, k, epilogue_block_n, overlap)),
               default=None)


def explain_plan_error(a_format: str, b_format: str, block_k: int, epilogue_block_n: int, overlap: bool,
                       plan_message: str) -> str:
    """Say in plain words why :func:`tmem.make_plan` refused this configuration (``plan_message``: its error).

    The numbers come from the plan's own rules: the scale column counts from :func:`tmem.scale_columns`
    (what :class:`tmem.TmemPlan` uses), the limits from :mod:`gluon_overlap.tmem`.
    """
    va, vb = tmem.FORMAT_VEC_SIZE[a_format], tmem.FORMAT_VEC_SIZE[b_format]
    if va != vb:
        partners = " / ".join(f for f, v in tmem.FORMAT_VEC_SIZE.items() if v == va)
        return (f"{a_format} has one scale per {va} elements but {b_format} one per {vb}: one MMA uses a single "
                f"scale-block size, so pair {a_format} with {partners}.")
    chunk = va * tmem.SCALE_K_PER_CHUNK
    if block_k % chunk:
        return (f"BLOCK_K {block_k} is not a multiple of {chunk}: {a_format} scales come in chunks of "
                f"{tmem.SCALE_K_PER_CHUNK} scales x {va} elements = {chunk} K elements.")
    if tmem.BLOCK_N % epilogue_block_n:
        rest = tmem.BLOCK_N % epilogue_block_n
        return (f"EPILOGUE_BLOCK_N {epilogue_block_n} does not divide the {tmem.BLOCK_N} accumulator columns "
                f"({tmem.BLOCK_N} = {tmem.BLOCK_N // epilogue_block_n} x {epilogue_block_n} + {rest}): "
                f"pick a divisor of {tmem.BLOCK_N}.")
    a_scale_cols, b_scale_cols = tmem.scale_columns(a_format, block_k)
    scale_cols = a_scale_cols + b_scale_cols
    split = (f"A {a_scale_cols} + B {b_scale_cols} scale columns at BLOCK_K {block_k}")
    largest = _largest_block_k(a_format, b_format, epilogue_block_n, overlap)
    hint = f" The largest BLOCK_K that fits is {largest}." if largest else ""
    if overlap and scale_cols >= tmem.BLOCK_N:
        return (f"{scale_cols} columns of overlap, but at most {tmem.BLOCK_N - 1} fit ({split}): the right "
                f"accumulator must start inside the left one's {tmem.BLOCK_N} columns.{hint}")
    if not overlap and tmem.BLOCK_N + scale_cols > tmem.TMEM_COLS:
        need = tmem.BLOCK_N + scale_cols
        return (f"{need} columns needed, but TMEM has {tmem.TMEM_COLS} per CTA: one {tmem.BLOCK_N}-column "
                f"accumulator plus {scale_cols} scale columns ({split}), {need - tmem.TMEM_COLS} too many.{hint}")
    return plan_message[:1].upper() + plan_message[1:]


# --- the app -----------------------------------------------------------------------------------------
def _labelled(text: str, control: widgets.DOMWidget) -> widgets.HBox:
    """``control`` after a label that shows the control's tooltip on hover."""
    label = widgets.HTML(f'<span title="{html.escape(control.tooltip)}" style="margin:0 4px 0 8px">'
                         f"{html.escape(text)}</span>")
    label.add_class("tmem-explorer-label")
    return widgets.HBox([label, control], layout=widgets.Layout(align_items="center"))


def _check_choice(name: str, value: Any, choices: tuple, what: str) -> None:
    if isinstance(value, bool) or value not in choices:
        raise ValueError(f"{name}={value!r} is not offered by the explorer: choose {what}")


class TmemExplorer:
    """The explorer app; ``.widget`` is the ipywidgets box (the object also displays itself).

    ``block_k=None`` follows the seed's default for the chosen formats (the BLOCK_K menu shows that
    value, marked "seed default", and keeps following it when the formats change until another value
    is picked).  Arguments outside the menus raise ``ValueError`` naming the argument and the choices.
    """

    def __init__(self, a_format: str = "nvfp4", b_format: str = "nvfp4", block_k: int | None = None,
                 epilogue_block_n: int = tmem.DEFAULT_EPILOGUE_BLOCK_N, overlap: bool = True,
                 num_tiles: int = 4) -> None:
        tmem.check_format(a_format, "a_format")
        tmem.check_format(b_format, "b_format")
        if block_k is not None:
            _check_choice("block_k", block_k, BLOCK_K_CHOICES,
                          f"None (the seed default) or a multiple of 64 in [{BLOCK_K_CHOICES[0]}, "
                          f"{BLOCK_K_CHOICES[-1]}]")
        _check_choice("epilogue_block_n", epilogue_block_n, EPILOGUE_BLOCK_N_CHOICES,
                      f"one of {list(EPILOGUE_BLOCK_N_CHOICES)}")
        if not isinstance(overlap, bool):
            raise ValueError(f"overlap={overlap!r} must be True or False")
        if isinstance(num_tiles, bool) or not isinstance(num_tiles, int) or not 1 <= num_tiles <= MAX_TILES:
            raise ValueError(f"num_tiles={num_tiles!r} must be an integer in [1, {MAX_TILES}]")
        self.num_tiles = num_tiles
        self.plan: tmem.TmemPlan | None = None
        self.error: str | None = None
        self.plan_error: str | None = None
        self.last_drawn: dict[str, Any] = {}
        self.redraws = 0  # number of view updates (drawn, or re-shown from the cache), for tests and the benchmark
        self._steps: list[ptmem.PingPongStep] = []
        self._schedule: ptmem.Schedule | None = None
        self._busy = False
        self._step_pngs = _Rendered()  # (plan, tiles, step) -> the step view
        self._scale_pngs = _Rendered()  # (plan, operand, row, k) -> the scale view
        self._block_k_follows_default = block_k is None
        default_k = tmem.default_block_k(a_format, b_format)

        # ipywidgets 8 shows no tooltip on a described menu: the menus carry none and a label beside
        # each carries the hover text (the menu itself then gets it too, as its description is empty)
        self.a_format = widgets.Dropdown(
            options=FORMAT_NAMES, value=a_format, layout=widgets.Layout(width="80px"),
            tooltip="Format of operand A (M x K): mxfp8 and mxfp4 carry one scale per 32 elements, nvfp4 one per 16")
        self.b_format = widgets.Dropdown(
            options=FORMAT_NAMES, value=b_format, layout=widgets.Layout(width="80px"),
            tooltip="Format of operand B (N x K); one MMA needs A and B with the same scale-block size")
        self.block_k = widgets.Dropdown(
            options=self._block_k_options(default_k), value=default_k if block_k is None else block_k,
            layout=widgets.Layout(width="175px"),
            tooltip="K elements per MMA step: more K per step means more scale columns in TMEM, so a wider "
                    "overlap (\"seed default\": the seed's value for these formats)")
        self.epilogue_block_n = widgets.Dropdown(
            options=EPILOGUE_BLOCK_N_CHOICES, value=epilogue_block_n, layout=widgets.Layout(width="64px"),
            tooltip="Accumulator columns the epilogue drains per subtile; the overlap barrier is released after "
                    "the subtile that finishes the overlapped columns")
        self.overlap = widgets.ToggleButton(
            value=overlap, layout=widgets.Layout(width="110px"),
            tooltip="On: two accumulators that share as many columns as the scales need (the seed's trick). "
                    "Off: one accumulator, and the MMA waits for every drain")
        self.overlap.add_class("tmem-explorer-overlap")
        self._label_overlap()
        self.overlap.observe(self._label_overlap, names="value")
        self.step = widgets.IntSlider(
            value=0, min=0, max=0, description="step", continuous_update=True, layout=widgets.Layout(width="600px"),
            tooltip="Walk the ping-pong of the tiles event by event: which window the MMA writes, which subtile "
                    "the epilogue drains, which barrier lets what go (arrow keys move one event)")
        self.operand = widgets.ToggleButtons(
            options=["A", "B"], value="A", description="scale of",
            style={"button_width": "40px", "description_width": "initial"},
            tooltip="Whose scale to locate in TMEM",
            tooltips=["A scales: split by rows, each CTA holds its own 128 rows",
                      "B scales: all 256 rows, copied into both CTAs"])
        self.row = widgets.IntSlider(
            value=0, min=0, max=tmem.BLOCK_M - 1, description="row", layout=widgets.Layout(width="320px"),
            tooltip="Row of the 256-row tile whose scale to locate (M rows for A, N rows for B)")
        self.k = widgets.IntSlider(
            value=0, min=0, max=0, description="k", layout=widgets.Layout(width="260px"),
            tooltip="Which scale along K within one BLOCK_K step (0 to BLOCK_K / VEC_SIZE - 1)")
        self.error_box = widgets.HTML(value="", layout=widgets.Layout(display="none"))
        # shown only where the widgets have no kernel behind them (ipywidgets marks them "disconnected"),
        # e.g. a trusted notebook reopened from its saved widget state
        self.offline_note = widgets.HTML(value=OFFLINE_NOTE_HTML)

        self._plan_view = _View(_FIG_WIDTH, 3.125, dict(left=0.085, right=_PLOT_RIGHT, top=0.93, bottom=0.16),
                                rows=2, height_ratios=[5, 1])
        self._step_view = _View(_FIG_WIDTH, 2.625, dict(left=0.085, right=_PLOT_RIGHT, top=0.97, bottom=0.1))
        self._scale_view = _View(_FIG_WIDTH, 2.75, dict(left=0.07, right=_PLOT_RIGHT, top=0.88, bottom=0.2))
        self.plan_image, self.step_image, self.scale_image = (
            widgets.Image(format="png", layout=widgets.Layout(width=f"{view.css_width}px"))
            for view in (self._plan_view, self._step_view, self._scale_view))
        for img in (self.plan_image, self.step_image, self.scale_image):
            img.add_class("tmem-explorer-plot")
        self.step_info = widgets.HTML(value="")
        self.step_info.add_class("tmem-explorer-step-info")
        self.step_box = widgets.VBox([self.step, self.step_image, self.step_info])
        self.scale_box = widgets.VBox([widgets.HBox([self.operand, self.row, self.k]), self.scale_image])
        self.widget = widgets.VBox([
            widgets.HBox([_labelled("A format", self.a_format), _labelled("B format", self.b_format),
                          _labelled("BLOCK_K", self.block_k), _labelled("EPILOGUE_BLOCK_N", self.epilogue_block_n),
                          self.overlap], layout=widgets.Layout(align_items="center", flex_flow="row wrap")),
            self.offline_note, self.error_box, self.plan_image, self.step_box, self.scale_box,
        ])
        self.widget.add_class("tmem-explorer")

        for control in (self.a_format, self.b_format, self.block_k, self.epilogue_block_n, self.overlap):
            control.observe(self._on_config, names="value")
        self.step.observe(self._on_step, names="value")
        for control in (self.operand, self.row, self.k):
            control.observe(self._on_scale, names="value")
        self._on_config()

    @property
    def controls(self) -> list[widgets.DOMWidget]:
        """Every control a learner can change (each has a tooltip)."""
        return [self.a_format, self.b_format, self.block_k, self.epilogue_block_n, self.overlap, self.step,
                self.operand, self.row, self.k]

    def _label_overlap(self, change=None) -> None:
        self.overlap.description = "overlap on" if self.overlap.value else "overlap off"
        self.overlap.icon = "check" if self.overlap.value else ""

    # --- display -------------------------------------------------------------------------------
    def _repr_mimebundle_(self, include=None, exclude=None):
        """The live widget, plus a static PNG of the current view and a plain-text note.

        A live front end (JupyterLab, Voila) shows the widget; GitHub, nbconvert's non-HTML formats and
        a notebook JupyterLab does not trust (before its cells run) show the picture instead.
        """
        data = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        picture = self.static_png()
        data["image/png"] = base64.b64encode(picture).decode("ascii")
        data["text/plain"] = f"{STATIC_NOTE}\nIt shows: {self.describe()}."
        width = PILImage.open(io.BytesIO(picture)).width // PIXEL_SCALE
        return data, {"image/png": {"width": width}}

    def describe(self) -> str:
        """The controls' values in one line (the caption of the static picture)."""
        default = tmem.default_block_k(self.a_format.value, self.b_format.value)
        seed = " (seed default)" if self.block_k.value == default else ""
        return (f"A format {self.a_format.value}, B format {self.b_format.value}, BLOCK_K {self.block_k.value}{seed}, "
                f"EPILOGUE_BLOCK_N {self.epilogue_block_n.value}, overlap {'on' if self.overlap.value else 'off'}")

    def static_png(self) -> bytes:
        """One PNG of what the explorer shows now: a caption with the controls' values, then each view."""
        width = self._plan_view.fig.get_figwidth()
        parts = [_text_image([("TMEM layout explorer: static picture. Run this cell in a live Jupyter kernel to "
                               "make it interactive.", 10, "bold"), (self.describe() + ".", 9, "normal")], width)]
        if self.error is not None:
            parts.append(_text_image([("This configuration does not fit: " + self.error, 9, "normal")], width))
        else:
            step = self._steps[min(self.step.value, len(self._steps) - 1)]
            parts += [_image(self.plan_image.value),
                      _text_image([(f"step {self.step.value} of {self.step.max} (the ping-pong of "
                                    f"{self.num_tiles} tiles)", 9, "bold")], width),
                      _image(self.step_image.value),
                      _text_image([(e, 8, "normal") for e in step.events] + [(" | ".join(step.barriers), 8,
                                                                               "normal")], width),
                      _text_image([(f"scale of {self.operand.value}, row {self.row.value}, k {self.k.value}", 9,
                                    "bold")], width),
                      _image(self.scale_image.value)]
        canvas = PILImage.new("RGB", (max(p.width for p in parts), sum(p.height for p in parts)), "white")
        y = 0
        for part in parts:
            canvas.paste(part, (0, y))
            y += part.height
        buf = io.BytesIO()
        # a palette PNG: a third of the RGB size (the picture is stored in the notebook); the fast quantizer
        # and zlib level 6 keep it to about 0.1 s
        canvas.quantize(colors=255, method=PILImage.Quantize.FASTOCTREE, dither=PILImage.Dither.NONE).save(
            buf, format="png", compress_level=6)
        return buf.getvalue()

    # --- callbacks -----------------------------------------------------------------------------
    @staticmethod
    def _block_k_options(default_k: int) -> list[tuple[str, int]]:
        return [(f"{k} (seed default)" if k == default_k else str(k), k) for k in BLOCK_K_CHOICES]

    def _sync_block_k(self, change) -> None:
        """Keep the BLOCK_K menu's "seed default" mark (and, while following it, its value) in step."""
        default_k = tmem.default_block_k(self.a_format.value, self.b_format.value)
        if change is not None and change["owner"] is self.block_k:
            self._block_k_follows_default = change["new"] == default_k
        value = default_k if self._block_k_follows_default else self.block_k.value
        options = self._block_k_options(default_k)
        self._busy = True
        try:
            if list(self.block_k.options) != options:
                self.block_k.options = options
            self.block_k.value = value
        finally:
            self._busy = False

    def _on_config(self, change=None) -> None:
        if self._busy:
            return
        self._sync_block_k(change)
        config = (self.a_format.value, self.b_format.value, self.block_k.value, self.epilogue_block_n.value,
                  self.overlap.value)
        try:
            plan = tmem.make_plan(*config)
        except ValueError as exc:
            self._show_error(explain_plan_error(*config, str(exc)), str(exc))
            return
        self.plan, self.error, self.plan_error = plan, None, None
        self.error_box.value = ""
        self.error_box.layout.display = "none"
        for box in (self.plan_image, self.step_box, self.scale_box):
            box.layout.display = None
        self._schedule = ptmem.simple_schedule(plan, self.num_tiles)
        self._steps = ptmem.ping_pong_steps(self._schedule)
        self._busy = True
        try:  # adjust the ranges without one redraw per changed bound
            self.step.max = len(self._steps) - 1
            self.k.max = plan.block_k // plan.vec_size - 1
        finally:
            self._busy = False
        self.last_drawn = {"config": plan.to_dict()}
        self._draw_plan()
        self._draw_step(static=True)
        self._draw_scale(static=True)

    def _on_step(self, change=None) -> None:
        if not self._busy and self.plan is not None and self.error is None:
            self._draw_step()

    def _on_scale(self, change=None) -> None:
        if not self._busy and self.plan is not None and self.error is None:
            self._draw_scale()

    def _show_error(self, message: str, plan_message: str) -> None:
        self.error, self.plan_error = message, plan_message
        self.last_drawn = {"error": message, "plan_error": plan_message}
        self.error_box.value = (f'<div class="{ERROR_CLASS}" style="border:2px solid #c0392b;background:#fdecea;'
                                f'color:#7b1d12;padding:6px 10px;border-radius:4px;font-family:sans-serif">'
                                f"<b>This configuration does not fit:</b> {html.escape(message)}"
                                f'<div style="font-size:11px;color:#8a4b43;margin-top:3px">plan check '
                                f"(gluon_overlap.tmem): {html.escape(plan_message)}</div></div>")
        self.error_box.layout.display = None
        for box in (self.plan_image, self.step_box, self.scale_box):
            box.layout.display = "none"

    # --- drawing -------------------------------------------------------------------------------
    def _draw_plan(self) -> None:
        plan = self.plan
        has_unused = any(not owners for owners in plan.column_owners())

        def draw(ax, own):
            ptmem.draw_ruler(ax, plan, title=False)
            ax.set_xlabel("")
            ax.tick_params(axis="x", labelbottom=False)
            ptmem.draw_ownership(own, plan)

        def readback(ax, own):
            overlap = _patches(ax, "overlap").get("overlap")
            return {"windows": {gid.split(":", 1)[1]: _cols(p) for gid, p in _patches(ax, "window:").items()},
                    "overlap": _cols(overlap) if overlap is not None else None}

        def readback_and_png(ax, own):  # the ruler has no dynamic part: keep its PNG with the pixels
            return {**readback(ax, own), "png": view.png()}

        view = self._plan_view
        view.draw_static(draw, key=plan, readback=readback_and_png,
                         frame_key=(plan.overlap, plan.tmem_cols, has_unused),
                         legend=lambda: ptmem.ruler_legend(plan))
        self.plan_image.value = view.info["png"]
        self.redraws += 1
        self.last_drawn.update({k: v for k, v in view.info.items() if k != "png"})
        self.last_drawn["plan_legend"] = list(view.legend_labels)

    def _draw_step(self, static: bool = False) -> None:
        view = self._step_view
        if static:
            plan = self.plan
            view.draw_static(lambda ax: ptmem.draw_ping_pong_background(ax, plan),
                             key=(plan.overlap, plan.left, plan.right, plan.tmem_cols),
                             frame_key=(plan.overlap, plan.tmem_cols), legend=lambda: ptmem.ping_pong_legend(plan))
        step = self._steps[min(self.step.value, len(self._steps) - 1)]
        png, drawn = self._step_pngs.get((self.plan, self.num_tiles, step.index), lambda: self._render_step(step))
        self.step_image.value = png
        self.redraws += 1
        events = "".join(f"<li>{html.escape(e)}</li>" for e in step.events)
        self.step_info.value = (f'<div style="font-size:12px;line-height:1.35"><ul style="margin:2px 0">{events}'
                                f'</ul><span style="color:#555">{html.escape(" | ".join(step.barriers))}</span></div>')
        self.last_drawn["step"] = dict(drawn, legend=list(view.legend_labels))

    def _render_step(self, step: ptmem.PingPongStep) -> tuple[bytes, dict[str, Any]]:
        view = self._step_view
        view.draw_dynamic(lambda ax: ptmem.draw_ping_pong_state(ax, self._schedule, step))
        ax = view.axes[0]
        active = _patches(ax, "mma-active").get("mma-active")
        draining = _patches(ax, "draining").get("draining")
        return view.png(), {
            "index": step.index,
            "mma_window": _cols(active) if active is not None else None,
            "draining": _cols(draining) if draining is not None else None,
            "held": sorted(_cols(p) for p in _patches(ax, "held:").values()),
            "mma_status": _text(ax, "mma-status"),
            "title": _text(ax, "step-title"),
            "events": list(step.events),
            "barriers": list(step.barriers),
        }

    def _draw_scale(self, static: bool = False) -> None:
        view = self._scale_view
        if static:
            plan = self.plan
            view.draw_static(lambda ax: ptmem.draw_scale_background(ax, plan, tick_artists=True),
                             key=(plan.a_scale, plan.b_scale), frame_key="scale",
                             legend=lambda: ptmem.scale_legend(plan))
        key = (self.plan, self.operand.value, self.row.value, self.k.value)
        png, drawn = self._scale_pngs.get(key, self._render_scale)
        self.scale_image.value = png
        self.redraws += 1
        self.last_drawn["scale"] = dict(drawn, legend=list(view.legend_labels))

    def _render_scale(self) -> tuple[bytes, dict[str, Any]]:
        view = self._scale_view
        marked: list = []

        def draw(ax):
            cell, artists = ptmem.draw_scale_mark(ax, self.plan, self.operand.value, self.row.value, self.k.value)
            marked.append(cell)
            return artists

        view.draw_dynamic(draw)
        ax, cell = view.axes[0], marked[0]
        marks = [p for p in ax.patches if p.get_gid() == "scale-cell"]
        return view.png(), {
            "operand": cell.operand, "row": cell.row, "k": cell.k, "ctas": cell.ctas, "byte": cell.byte,
            "columns": sorted({int(round(p.get_x())) for p in marks}),
            "lanes": sorted(int(round(p.get_y())) for p in marks),
            "title": _text(ax, "scale-title"),
        }


def show(**kwargs) -> TmemExplorer:
    """Build an explorer (keyword arguments as :class:`TmemExplorer`) and return it for display."""
    return TmemExplorer(**kwargs)
