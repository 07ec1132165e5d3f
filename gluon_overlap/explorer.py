"""The TMEM layout explorer: an ipywidgets app drawn with matplotlib.

Turn the knobs (formats, BLOCK_K, EPILOGUE_BLOCK_N, overlap on/off) and see the per-CTA TMEM plan
redrawn: the 512-column ruler with both accumulators, the overlap, the scales and the drain
directions.  The *step* slider walks through the kernel's own ping-pong of tiles 0, 1, 2, ... -- the
CPU executor's recorded run of ``kernel.py`` (:mod:`gluon_overlap.pingpong`), each step with the kernel
line that caused it: which window the MMA writes, which subtile the epilogue drains, when the overlap
barrier is released (and which parity the MMA waits on), when ``acc_empty`` lets tile 2 reuse the left
window.  The last view shows, for one scale you pick (operand, row, k), the TMEM lane(s) and column
where it lives.  Every view carries a legend, every control a tooltip.

The explorer accepts exactly what ``gluon-overlap plan`` accepts (:func:`gluon_overlap.limits.check_config`):
its menus offer the values of :mod:`gluon_overlap.limits` and mark those ``plan`` refuses with the other
settings "(refused)"; a refused configuration shows, in a red box instead of a traceback, ``plan``'s
reason and the values it accepts instead (:func:`explain_plan_error`).  The rendering machinery (layered
views, caches, the PNG encoder) is :mod:`gluon_overlap.explorer_view`.

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
from typing import Any

import ipywidgets as widgets
from PIL import Image as PILImage

from gluon_overlap import limits, pingpong, tmem
from gluon_overlap.explorer_view import CSS_DPI as CSS_DPI  # re-exported
from gluon_overlap.explorer_view import (
    PIXEL_SCALE,
    _cols,
    _image,
    _patches,
    _Rendered,
    _text,
    _text_image,
    _View,
)
from gluon_overlap.explorer_view import fast_png as fast_png
from gluon_overlap.plots import tmem as ptmem
from gluon_overlap.registry import check_bool, check_format, check_int, check_positive_int

#: the menus: what the explorer offers (each value plan refuses with the other settings is marked refused)
FORMAT_NAMES = limits.FORMAT_MENU
BLOCK_K_CHOICES = limits.BLOCK_K_MENU
EPILOGUE_BLOCK_N_CHOICES = limits.EPILOGUE_BLOCK_N_MENU
MAX_TILES = pingpong.NUM_TILES
REFUSED_MARK = " (refused)"
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
_FIG_WIDTH = 10.5  # inches: 1008 CSS pixels (figure sizes are multiples of 1/8 inch: whole PNG pixels)
_PLOT_RIGHT = 0.755  # the axes end here; the legend fills the rest of the width


# --- plain words for a refusal ----------------------------------------------------------------------
_NAMES = {"a_format": "A format", "b_format": "B format", "block_k": "BLOCK_K", "epilogue_block_n": "EPILOGUE_BLOCK_N"}
_MENUS = {"a_format": FORMAT_NAMES, "b_format": FORMAT_NAMES, "block_k": BLOCK_K_CHOICES,
          "epilogue_block_n": EPILOGUE_BLOCK_N_CHOICES}


def explain_plan_error(a_format: str, b_format: str, block_k: int | None, epilogue_block_n: int, overlap: bool,
                       plan_message: str | None = None) -> str:
    """Why ``gluon-overlap plan`` refuses this configuration, and which menu values it accepts instead.

    The reason is ``plan``'s own (:func:`gluon_overlap.limits.check_config`, or ``plan_message``); the
    alternatives are found by asking the same function about each menu value, one control at a time.
    Returns ``""`` for a configuration ``plan`` accepts.  ``ValueError`` for arguments that are not a
    configuration at all (an unknown format, a size that is not a positive integer).
    """
    check_format(a_format, "a_format")
    check_format(b_format, "b_format")
    if block_k is not None:
        check_positive_int("block_k", block_k)
    check_positive_int("epilogue_block_n", epilogue_block_n)
    check_bool("overlap", overlap)
    config = dict(a_format=a_format, b_format=b_format, block_k=block_k, epilogue_block_n=epilogue_block_n,
                  overlap=overlap)
    reason = plan_message if plan_message is not None else limits.config_refusal(**config)
    if reason is None:
        return ""
    hints = []
    for name in ("block_k", "epilogue_block_n", "b_format", "a_format"):
        ok = limits.accepted(name, _MENUS[name], **{k: v for k, v in config.items() if k != name})
        if ok:
            hints.append(f"{_NAMES[name]} {', '.join(map(str, ok))}")
    also = (" With the other settings as they are, plan accepts " + "; or ".join(hints) + ".") if hints else ""
    return reason + "." * (not reason.endswith(".")) + also


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
        check_format(a_format, "a_format")
        check_format(b_format, "b_format")
        if block_k is not None:
            _check_choice("block_k", block_k, BLOCK_K_CHOICES,
                          f"None (the seed default) or one of {list(BLOCK_K_CHOICES)}")
        _check_choice("epilogue_block_n", epilogue_block_n, EPILOGUE_BLOCK_N_CHOICES,
                      f"one of {list(EPILOGUE_BLOCK_N_CHOICES)}")
        check_bool("overlap", overlap)
        try:
            check_int("num_tiles", num_tiles, 1, MAX_TILES + 1)
        except ValueError:
            raise ValueError(f"num_tiles={num_tiles!r} must be an integer in [1, {MAX_TILES}] (the tiles of the "
                             "kernel's recorded run)") from None
        self.num_tiles = num_tiles
        self.plan: tmem.TmemPlan | None = None
        self.error: str | None = None
        self.plan_error: str | None = None
        self.last_drawn: dict[str, Any] = {}
        self.redraws = 0  # number of view updates (drawn, or re-shown from the cache), for tests and the benchmark
        self._steps: list[pingpong.PingPongStep] = []
        self._schedule: pingpong.Schedule | None = None
        self._busy = False
        self._step_pngs = _Rendered()  # (plan, tiles, step) -> the step view
        self._scale_pngs = _Rendered()  # (plan, operand, row, k) -> the scale view
        self._block_k_follows_default = block_k is None
        default_k = tmem.default_block_k(a_format, b_format)
        start = dict(a_format=a_format, b_format=b_format, block_k=default_k if block_k is None else block_k,
                     epilogue_block_n=epilogue_block_n, overlap=overlap)

        # ipywidgets 8 shows no tooltip on a described menu: the menus carry none and a label beside
        # each carries the hover text (the menu itself then gets it too, as its description is empty)
        self.a_format = widgets.Dropdown(
            options=self._options("a_format", start), value=a_format, layout=widgets.Layout(width="150px"),
            tooltip="Format of operand A (M x K): mxfp8 and mxfp4 carry one scale per 32 elements, nvfp4 one per 16")
        self.b_format = widgets.Dropdown(
            options=self._options("b_format", start), value=b_format, layout=widgets.Layout(width="150px"),
            tooltip="Format of operand B (N x K); one MMA needs A and B with the same scale-block size")
        self.block_k = widgets.Dropdown(
            options=self._options("block_k", start), value=start["block_k"],
            layout=widgets.Layout(width="175px"),
            tooltip="K elements per MMA step: more K per step means more scale columns in TMEM, so a wider "
                    "overlap (\"seed default\": the seed's value for these formats; \"refused\": plan refuses it "
                    "with the other settings)")
        self.epilogue_block_n = widgets.Dropdown(
            options=self._options("epilogue_block_n", start), value=epilogue_block_n,
            layout=widgets.Layout(width="125px"),
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
            style={"button_width": "36px", "description_width": "initial"},
            layout=widgets.Layout(width="190px", flex="0 0 auto"),
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
        self.scale_box = widgets.VBox([widgets.HBox([self.operand, self.row, self.k],
                                                    layout=widgets.Layout(flex_flow="row nowrap")),
                                       self.scale_image])
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

    def plan_command(self) -> str:
        """The ``gluon-overlap plan`` command line of the current configuration."""
        c = self.config()
        return (f"gluon-overlap plan --a-format {c['a_format']} --b-format {c['b_format']} --block-k {c['block_k']} "
                f"--epilogue-block-n {c['epilogue_block_n']} --overlap {'on' if c['overlap'] else 'off'}")

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
            parts.append(_text_image([("plan refuses this configuration: " + self.error, 9, "normal")], width))
        else:
            step = self._steps[min(self.step.value, len(self._steps) - 1)]
            parts += [_image(self.plan_image.value),
                      _text_image([(f"step {self.step.value} of {self.step.max} (the ping-pong of "
                                    f"{self.num_tiles} tiles)", 9, "bold")], width),
                      _image(self.step_image.value),
                      _text_image([(f"{e} -- {line}" if line else e, 8, "normal")
                                   for e, line in zip(step.events, step.lines, strict=True)]
                                  + [(" | ".join(step.barriers), 8, "normal")], width),
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
    def _options(name: str, config: dict[str, Any]) -> list[tuple[str, Any]]:
        """The menu of control ``name``: every value, marked "refused" where ``plan`` refuses it with the
        other settings of ``config`` (and BLOCK_K's "seed default" marked)."""
        default_k = tmem.default_block_k(config["a_format"], config["b_format"])
        out = []
        for value in _MENUS[name]:
            label = str(value)
            if name == "block_k" and value == default_k:
                label += " (seed default)"
            if limits.config_refusal(**{**config, name: value}) is not None:
                label += REFUSED_MARK
            out.append((label, value))
        return out

    def config(self) -> dict[str, Any]:
        """The controls' configuration (the arguments of :func:`gluon_overlap.limits.check_config`)."""
        return dict(a_format=self.a_format.value, b_format=self.b_format.value, block_k=self.block_k.value,
                    epilogue_block_n=self.epilogue_block_n.value, overlap=self.overlap.value)

    def _sync_menus(self, change) -> None:
        """Keep every menu's marks ("seed default", "refused") and, while following it, BLOCK_K's value in step."""
        default_k = tmem.default_block_k(self.a_format.value, self.b_format.value)
        if change is not None and change["owner"] is self.block_k:
            self._block_k_follows_default = change["new"] == default_k
        config = self.config()
        if self._block_k_follows_default:
            config["block_k"] = default_k
        self._busy = True
        try:
            for name in _MENUS:
                menu = getattr(self, name)
                options = self._options(name, config)
                if list(menu.options) != options:
                    menu.options = options
                menu.value = config[name]
        finally:
            self._busy = False

    def _on_config(self, change=None) -> None:
        if self._busy:
            return
        self._sync_menus(change)
        config = self.config()
        try:
            plan = limits.check_config(**config)
        except ValueError as exc:
            self._show_error(explain_plan_error(**config, plan_message=str(exc)), str(exc))
            return
        self.plan, self.error, self.plan_error = plan, None, None
        self.error_box.value = ""
        self.error_box.layout.display = "none"
        for box in (self.plan_image, self.step_box, self.scale_box):
            box.layout.display = None
        self._schedule = pingpong.schedule(plan, self.num_tiles)
        self._steps = pingpong.steps(self._schedule)
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
                                f"<b>plan refuses this configuration:</b> {html.escape(message)}"
                                f'<div style="font-size:11px;color:#8a4b43;margin-top:3px">'
                                f"<code>{html.escape(self.plan_command())}</code> says: "
                                f"{html.escape(plan_message)}</div></div>")
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
        events = "".join(f"<li>{html.escape(e)}" + (f'<br><code style="font-size:11px;color:#555">{html.escape(line)}'
                                                      "</code>" if line else "") + "</li>"
                         for e, line in zip(step.events, step.lines, strict=True))
        self.step_info.value = (f'<div style="font-size:12px;line-height:1.35"><ul style="margin:2px 0">{events}'
                                f'</ul><span style="color:#555">{html.escape(" | ".join(step.barriers))}</span></div>')
        self.last_drawn["step"] = dict(drawn, legend=list(view.legend_labels))

    def _render_step(self, step: pingpong.PingPongStep) -> tuple[bytes, dict[str, Any]]:
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
            "lines": list(step.lines),
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
