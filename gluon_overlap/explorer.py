"""The TMEM layout explorer: an ipywidgets app drawn with matplotlib.

Turn the knobs (formats, BLOCK_K, EPILOGUE_BLOCK_N, overlap on/off) and see the per-CTA TMEM plan
redrawn: the 512-column ruler with both accumulators, the overlap, the scales and the drain
directions.  The *step* slider walks through the ping-pong of tiles 0, 1, 2, ...: which window the
MMA writes, which subtile the epilogue drains, when the overlap barrier is released (and which
parity the MMA waits on), when ``acc_empty`` lets tile 2 reuse the left window.  The last view
shows, for one scale you pick (operand, row, k), the TMEM lane(s) and column where it lives.

Everything is read from :func:`gluon_overlap.tmem.make_plan`; an invalid configuration shows the
plan's ``ValueError`` message in a red box instead of a traceback.

Usage in a notebook::

    from gluon_overlap.explorer import TmemExplorer
    TmemExplorer()          # displays itself

For tests: ``explorer.error`` (the message, or ``None``) and ``explorer.last_drawn`` (what the
figures actually contain, read back from the matplotlib artists).
"""

from __future__ import annotations

import html
import io
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage

from gluon_overlap import tmem
from gluon_overlap.plots import tmem as ptmem

FORMAT_NAMES = tuple(tmem.FORMAT_VEC_SIZE)
BLOCK_K_CHOICES = tuple(range(64, 3072 + 1, 64))
EPILOGUE_BLOCK_N_CHOICES = (8, 16, 32, 48, 64, 128, 256)
ERROR_CLASS = "tmem-explorer-error"
_DPI = 80
_CACHE_SIZE = 12  # rendered backgrounds kept per view (about 0.7 MB each)


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


class _View:
    """One reusable figure rendered to PNG, in three layers.

    * the *frame* (axes, ticks, tick labels) depends on little (``frame_key``); its pixels are cached;
    * the *background* (what one configuration draws) is drawn over the frame artist by artist, and
      its pixels are kept in a small cache per configuration;
    * the *dynamic* artists (the step, the picked scale) are drawn over the background.
    """

    def __init__(self, width: float, height: float, margins: dict[str, float], rows: int = 1,
                 height_ratios: list[int] | None = None) -> None:
        self.fig = Figure(figsize=(width, height), dpi=_DPI)
        self.canvas = FigureCanvasAgg(self.fig)
        self.axes = self.fig.subplots(rows, 1, height_ratios=height_ratios, squeeze=False)[:, 0].tolist()
        self.fig.subplots_adjust(**margins)
        self._background = None
        self._dynamic: list = []
        self._cache: OrderedDict[Any, tuple[Any, list, Any]] = OrderedDict()
        self._frames: dict[Any, Any] = {}
        self.key: Any = None  # what the static background was drawn for
        self.info: Any = None  # what ``readback`` returned when that background was drawn
        self.cold_draws = 0

    def draw_static(self, draw: Callable[..., Any], key: Any, readback: Callable[..., Any] | None = None,
                    frame_key: Any = None) -> None:
        """Show the background for ``key``: drawn by ``draw(*axes)``, or restored from the cache.

        ``draw`` may set limits, ticks and labels only as a function of ``frame_key`` (the frame's
        pixels are reused for every ``key`` with the same ``frame_key``; ``None``: never reused).
        ``readback(*axes)`` runs right after a real draw; its result is kept with the pixels (``info``).
        """
        if key == self.key:
            return
        for artist in self._dynamic:
            artist.remove()
        self._dynamic = []
        if key in self._cache:
            self._cache.move_to_end(key)
            self._background, limits, self.info = self._cache[key]
            for ax, (xlim, ylim) in zip(self.axes, limits, strict=True):
                ax.set_xlim(xlim)
                ax.set_ylim(ylim)
            self.canvas.restore_region(self._background)
        else:
            for ax in self.axes:  # remove what was drawn; ax.clear() would rebuild every tick (slow)
                for artist in _drawn(ax):
                    artist.remove()
            draw(*self.axes)
            self._draw_over_frame(frame_key)
            self.cold_draws += 1
            self._background = self.canvas.copy_from_bbox(self.fig.bbox)
            self.info = readback(*self.axes) if readback else None
            limits = [(ax.get_xlim(), ax.get_ylim()) for ax in self.axes]
            self._cache[key] = (self._background, limits, self.info)
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        self.key = key

    def _draw_over_frame(self, frame_key: Any) -> None:
        """Render the figure: the cached frame for ``frame_key`` (drawn if new), then every data artist."""
        data = [(ax, _data_artists(ax)) for ax in self.axes]
        frame = self._frames.get(frame_key) if frame_key is not None else None
        if frame is None:
            for _, artists in data:
                for artist in artists:
                    artist.set_visible(False)
            self.canvas.draw()
            for _, artists in data:
                for artist in artists:
                    artist.set_visible(True)
            frame = self.canvas.copy_from_bbox(self.fig.bbox)
            if frame_key is not None:
                self._frames[frame_key] = frame
        else:
            self.canvas.restore_region(frame)
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
        w, h = self.canvas.get_width_height()
        image = PILImage.frombuffer("RGBA", (w, h), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1).convert("RGB")
        buf = io.BytesIO()
        image.save(buf, format="png", compress_level=1)
        return buf.getvalue()


def _patches(ax, prefix: str) -> dict[str, Any]:
    return {p.get_gid(): p for p in ax.patches if (p.get_gid() or "").startswith(prefix)}


def _cols(patch) -> tuple[int, int]:
    return int(round(patch.get_x())), int(round(patch.get_width()))


def _text(ax, gid: str) -> str | None:
    for t in ax.texts:
        if t.get_gid() == gid:
            return t.get_text()
    return None


class TmemExplorer:
    """The explorer app; ``.widget`` is the ipywidgets box (the object also displays itself)."""

    def __init__(self, a_format: str = "nvfp4", b_format: str = "nvfp4", block_k: int | None = None,
                 epilogue_block_n: int = tmem.DEFAULT_EPILOGUE_BLOCK_N, overlap: bool = True,
                 num_tiles: int = 4) -> None:
        self.num_tiles = num_tiles
        self.plan: tmem.TmemPlan | None = None
        self.error: str | None = None
        self.last_drawn: dict[str, Any] = {}
        self.redraws = 0  # number of PNG renders, for tests and the benchmark
        self._steps: list[ptmem.PingPongStep] = []
        self._schedule: ptmem.Schedule | None = None
        self._busy = False

        style = {"description_width": "initial"}
        self.a_format = widgets.Dropdown(options=FORMAT_NAMES, value=a_format, description="A format",
                                         style=style, layout=widgets.Layout(width="150px"))
        self.b_format = widgets.Dropdown(options=FORMAT_NAMES, value=b_format, description="B format",
                                         style=style, layout=widgets.Layout(width="150px"))
        self.block_k = widgets.Dropdown(options=[("seed default", None)] + [(str(k), k) for k in BLOCK_K_CHOICES],
                                        value=block_k, description="BLOCK_K", style=style,
                                        layout=widgets.Layout(width="190px"))
        self.epilogue_block_n = widgets.Dropdown(options=EPILOGUE_BLOCK_N_CHOICES, value=epilogue_block_n,
                                                 description="EPILOGUE_BLOCK_N", style=style,
                                                 layout=widgets.Layout(width="200px"))
        self.overlap = widgets.Checkbox(value=overlap, description="overlap", indent=False,
                                        layout=widgets.Layout(width="90px"))
        self.step = widgets.IntSlider(value=0, min=0, max=0, description="step", continuous_update=True,
                                      layout=widgets.Layout(width="600px"))
        self.operand = widgets.ToggleButtons(options=["A", "B"], value="A", description="scale of",
                                             style={"button_width": "40px", "description_width": "initial"})
        self.row = widgets.IntSlider(value=0, min=0, max=tmem.BLOCK_M - 1, description="row",
                                     layout=widgets.Layout(width="320px"))
        self.k = widgets.IntSlider(value=0, min=0, max=0, description="k", layout=widgets.Layout(width="260px"))
        self.error_box = widgets.HTML(value="", layout=widgets.Layout(display="none"))
        self.plan_image = widgets.Image(format="png")
        self.step_image = widgets.Image(format="png")
        self.scale_image = widgets.Image(format="png")
        for img in (self.plan_image, self.step_image, self.scale_image):
            img.add_class("tmem-explorer-plot")
        self.step_info = widgets.HTML(value="")
        self.step_info.add_class("tmem-explorer-step-info")
        self.step_box = widgets.VBox([self.step, self.step_image, self.step_info])
        self.scale_box = widgets.VBox([widgets.HBox([self.operand, self.row, self.k]), self.scale_image])
        self.widget = widgets.VBox([
            widgets.HBox([self.a_format, self.b_format, self.block_k, self.epilogue_block_n, self.overlap]),
            self.error_box, self.plan_image, self.step_box, self.scale_box,
        ])
        self.widget.add_class("tmem-explorer")

        self._plan_view = _View(9.6, 3.0, dict(left=0.1, right=0.98, top=0.9, bottom=0.17), rows=2,
                                height_ratios=[5, 1])
        self._step_view = _View(9.6, 2.4, dict(left=0.1, right=0.98, top=0.97, bottom=0.1))
        self._scale_view = _View(9.6, 2.6, dict(left=0.08, right=0.98, top=0.88, bottom=0.18))

        for control in (self.a_format, self.b_format, self.block_k, self.epilogue_block_n, self.overlap):
            control.observe(self._on_config, names="value")
        self.step.observe(self._on_step, names="value")
        for control in (self.operand, self.row, self.k):
            control.observe(self._on_scale, names="value")
        self._on_config()

    # --- display -------------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    # --- callbacks -----------------------------------------------------------------------------
    def _on_config(self, change=None) -> None:
        if self._busy:
            return
        try:
            plan = tmem.make_plan(self.a_format.value, self.b_format.value, self.block_k.value,
                                  self.epilogue_block_n.value, self.overlap.value)
        except ValueError as exc:
            self._show_error(str(exc))
            return
        self.plan, self.error = plan, None
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

    def _show_error(self, message: str) -> None:
        self.error = message
        self.last_drawn = {"error": message}
        self.error_box.value = (f'<div class="{ERROR_CLASS}" style="border:2px solid #c0392b;background:#fdecea;'
                                f'color:#7b1d12;padding:6px 10px;border-radius:4px;font-family:sans-serif">'
                                f"<b>This configuration does not fit:</b> {html.escape(message)}</div>")
        self.error_box.layout.display = None
        for box in (self.plan_image, self.step_box, self.scale_box):
            box.layout.display = "none"

    # --- drawing -------------------------------------------------------------------------------
    def _draw_plan(self) -> None:
        plan = self.plan

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
        view.draw_static(draw, key=plan, readback=readback_and_png, frame_key=(plan.overlap, plan.tmem_cols))
        self.plan_image.value = view.info["png"]
        self.redraws += 1
        self.last_drawn.update({k: v for k, v in view.info.items() if k != "png"})

    def _draw_step(self, static: bool = False) -> None:
        view = self._step_view
        if static:
            plan = self.plan
            view.draw_static(lambda ax: ptmem.draw_ping_pong_background(ax, plan),
                             key=(plan.overlap, plan.left, plan.right, plan.tmem_cols),
                             frame_key=(plan.overlap, plan.tmem_cols))
        step = self._steps[min(self.step.value, len(self._steps) - 1)]
        view.draw_dynamic(lambda ax: ptmem.draw_ping_pong_state(ax, self._schedule, step))
        self.step_image.value = view.png()
        self.redraws += 1
        events = "".join(f"<li>{html.escape(e)}</li>" for e in step.events)
        self.step_info.value = (f'<div style="font-size:12px;line-height:1.35"><ul style="margin:2px 0">{events}'
                                f'</ul><span style="color:#555">{html.escape(" | ".join(step.barriers))}</span></div>')
        ax = view.axes[0]
        active = _patches(ax, "mma-active").get("mma-active")
        draining = _patches(ax, "draining").get("draining")
        self.last_drawn["step"] = {
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
                             key=(plan.a_scale, plan.b_scale), frame_key="scale")
        marked: list = []

        def draw(ax):
            cell, artists = ptmem.draw_scale_mark(ax, self.plan, self.operand.value, self.row.value, self.k.value)
            marked.append(cell)
            return artists

        view.draw_dynamic(draw)
        self.scale_image.value = view.png()
        self.redraws += 1
        ax, cell = view.axes[0], marked[0]
        marks = [p for p in ax.patches if p.get_gid() == "scale-cell"]
        self.last_drawn["scale"] = {
            "operand": cell.operand, "row": cell.row, "k": cell.k, "ctas": cell.ctas, "byte": cell.byte,
            "columns": sorted({int(round(p.get_x())) for p in marks}),
            "lanes": sorted(int(round(p.get_y())) for p in marks),
            "title": _text(ax, "scale-title"),
        }


def show(**kwargs) -> TmemExplorer:
    """Build an explorer (keyword arguments as :class:`TmemExplorer`) and return it for display."""
    return TmemExplorer(**kwargs)
