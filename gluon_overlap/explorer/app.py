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
its menus offer the values of :mod:`gluon_overlap.limits`, labelled with the plain values (a script can
pick "mxfp8" by its label); a line under the menus names the values ``plan`` refuses with the other
settings and BLOCK_K's seed default, and a refused configuration shows, in a red box instead of a
traceback, ``plan``'s reason and the values it accepts instead (:func:`explain_plan_error`).  A change
that changes another setting too (BLOCK_K follows the seed's default when the formats change) says so.

Every picture answers a click within about 100 ms: it is drawn once per key
(:mod:`gluon_overlap.explorer.render`), kept, and -- when a Jupyter server runs the explorer -- drawn
ahead by a worker process (:mod:`gluon_overlap.explorer.prefetch`) while the learner looks at the last
one.  The rendering machinery (layered views, the PNG encoder) is :mod:`gluon_overlap.explorer.view`.

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
import os
from typing import Any

import ipywidgets as widgets
from PIL import Image as PILImage

from gluon_overlap import limits, pingpong, tmem
from gluon_overlap.explorer.prefetch import Pictures, Prefetcher
from gluon_overlap.explorer.render import FIG_WIDTH, Config, Key, Renderer, config_of, showcase_step, steps_of
from gluon_overlap.explorer.view import CSS_DPI as CSS_DPI  # re-exported
from gluon_overlap.explorer.view import PIXEL_SCALE, _image, _text_image
from gluon_overlap.explorer.view import fast_png as fast_png
from gluon_overlap.registry import check_bool, check_format, check_int, check_positive_int

#: the menus: what the explorer offers (each value plan refuses with the other settings is marked refused)
FORMAT_NAMES = limits.FORMAT_MENU
BLOCK_K_CHOICES = limits.BLOCK_K_MENU
EPILOGUE_BLOCK_N_CHOICES = limits.EPILOGUE_BLOCK_N_MENU
MAX_TILES = pingpong.NUM_TILES
ERROR_CLASS = "tmem-explorer-error"
#: the first line of the explorer's ``text/plain`` form (what shows where neither widgets nor images do)
STATIC_NOTE = (
    "Static picture of the TMEM layout explorer. Run this cell in a live Jupyter kernel "
    "(or serve the notebook with Voila: `make explorer`) to make it interactive."
)
OFFLINE_NOTE_CLASS = "tmem-explorer-offline"
OFFLINE_NOTE_HTML = (
    f"<style>.tmem-explorer:not(.jupyter-widgets-disconnected) .{OFFLINE_NOTE_CLASS}"
    "{display:none}</style>"
    f'<div class="{OFFLINE_NOTE_CLASS}" style="padding:4px 8px;background:#fff8e1;border:1px solid '
    '#e0c060;border-radius:4px;font-family:sans-serif;font-size:13px">These controls are the '
    "explorer as it was saved, with no kernel behind them: run this cell in a live Jupyter kernel "
    "to make it interactive.</div>"
)
#: a plot or slider is at most as wide as the page allows: its box less ipywidgets' 2 px margin on each side
FIT_WIDTH = "calc(100% - 4px)"
NOTE_CLASS = "tmem-explorer-note"
CHANGED_CLASS = "tmem-explorer-changed"
#: the widget sets of a Jupyter server's kernel: a learner is clicking, so pictures are drawn ahead
SERVED_BY_JUPYTER = ("JPY_SESSION_NAME", "VOILA_BASE_URL", "VOILA_SERVER_URL", "VOILA_PREHEAT")


# --- plain words for a refusal ----------------------------------------------------------------------
_NAMES = {"a_format": "A format", "b_format": "B format", "block_k": "BLOCK_K", "epilogue_block_n": "EPILOGUE_BLOCK_N"}
_MENUS = {
    "a_format": FORMAT_NAMES,
    "b_format": FORMAT_NAMES,
    "block_k": BLOCK_K_CHOICES,
    "epilogue_block_n": EPILOGUE_BLOCK_N_CHOICES,
}


def explain_plan_error(
    a_format: str,
    b_format: str,
    block_k: int | None,
    epilogue_block_n: int,
    overlap: bool,
    plan_message: str | None = None,
) -> str:
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
    config = dict(
        a_format=a_format, b_format=b_format, block_k=block_k, epilogue_block_n=epilogue_block_n, overlap=overlap
    )
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
def _labelled(text: str, control: widgets.DOMWidget) -> tuple[widgets.HBox, widgets.HTML]:
    """``control`` after a label that shows the control's tooltip on hover; (the box, the label)."""
    label = widgets.HTML(_label_html(text, control.tooltip))
    label.add_class("tmem-explorer-label")
    return widgets.HBox([label, control], layout=widgets.Layout(align_items="center")), label


def _label_html(text: str, tooltip: str, extra: str = "") -> str:
    aside = f' <span style="color:#666;font-size:11px">{html.escape(extra)}</span>' if extra else ""
    return f'<span title="{html.escape(tooltip)}" style="margin:0 4px 0 8px">{html.escape(text)}{aside}</span>'


def _check_choice(name: str, value: Any, choices: tuple, what: str) -> None:
    if isinstance(value, bool) or value not in choices:
        raise ValueError(f"{name}={value!r} is not offered by the explorer: choose {what}")


def _served_by_jupyter() -> bool:
    return any(name in os.environ for name in SERVED_BY_JUPYTER)


#: the pictures every explorer of this process keeps and reads (a key names all a picture shows: the same key is
#: the same bytes, whoever drew it); least recently used dropped past its size
SHARED_PICTURES = Pictures()


class TmemExplorer:
    """The explorer app; ``.widget`` is the ipywidgets box (the object also displays itself).

    ``block_k=None`` follows the seed's default for the chosen formats (the BLOCK_K label shows that value,
    and the menu keeps following it when the formats change until another value is picked; the change is
    said beside the menus).  Arguments outside the menus raise ``ValueError`` naming the argument and the
    choices.  ``step=None`` starts at the first step where the MMA writes tile 1 while tile 0 still drains
    (:func:`~gluon_overlap.explorer.render.showcase_step`).  ``prefetch``: draw the likely next pictures in
    a worker process (``None``: when a Jupyter server runs the explorer, i.e. a learner is clicking).
    ``pictures``: where rendered pictures are kept; by default the process's :data:`SHARED_PICTURES`, so an
    explorer made again (its notebook cell run again) shows what an earlier one drew without drawing it.
    """

    def __init__(
        self,
        a_format: str = "nvfp4",
        b_format: str = "nvfp4",
        block_k: int | None = None,
        epilogue_block_n: int = tmem.DEFAULT_EPILOGUE_BLOCK_N,
        overlap: bool = True,
        num_tiles: int = 4,
        step: int | None = None,
        prefetch: bool | None = None,
        pictures: Pictures | None = None,
    ) -> None:
        check_format(a_format, "a_format")
        check_format(b_format, "b_format")
        if block_k is not None:
            _check_choice(
                "block_k", block_k, BLOCK_K_CHOICES, f"None (the seed default) or one of {list(BLOCK_K_CHOICES)}"
            )
        _check_choice(
            "epilogue_block_n", epilogue_block_n, EPILOGUE_BLOCK_N_CHOICES, f"one of {list(EPILOGUE_BLOCK_N_CHOICES)}"
        )
        check_bool("overlap", overlap)
        try:
            check_int("num_tiles", num_tiles, 1, MAX_TILES + 1)
        except ValueError:
            raise ValueError(
                f"num_tiles={num_tiles!r} must be an integer in [1, {MAX_TILES}] (the tiles of the "
                "kernel's recorded run)"
            ) from None
        if step is not None:
            check_int("step", step, 0, 10**6)
        if prefetch is not None:
            check_bool("prefetch", prefetch)
        if pictures is not None and not isinstance(pictures, Pictures):
            raise ValueError(
                f"pictures={pictures!r} must be None (the process's shared pictures) or a "
                "gluon_overlap.explorer.prefetch.Pictures"
            )
        self.num_tiles = num_tiles
        self.plan: tmem.TmemPlan | None = None
        self.error: str | None = None
        self.plan_error: str | None = None
        self.changed_also: list[str] = []  # what the last change changed besides the control moved
        self.last_drawn: dict[str, Any] = {}
        self.redraws = 0  # number of view updates (drawn, or shown from the pictures), for tests and the benchmark
        self._steps: list[pingpong.PingPongStep] = []
        self._busy = False
        self._renderer = Renderer()
        self.pictures = SHARED_PICTURES if pictures is None else pictures
        self._prefetcher: Prefetcher | None = None
        self._block_k_follows_default = block_k is None
        self._last_control: str | None = None  # the menu (or "overlap") changed last: its values are likeliest next
        default_k = tmem.default_block_k(a_format, b_format)
        start = dict(
            a_format=a_format,
            b_format=b_format,
            block_k=default_k if block_k is None else block_k,
            epilogue_block_n=epilogue_block_n,
            overlap=overlap,
        )

        # plain labels (the values themselves): ipywidgets shows each space of a label as a no-break space,
        # and a script picks an option by its label. What plan refuses is said in a line under the menus.
        self.a_format = widgets.Dropdown(
            options=self._options("a_format"),
            value=a_format,
            layout=widgets.Layout(width="90px"),
            tooltip="Format of operand A (M x K): mxfp8 and mxfp4 carry one scale per 32 elements, nvfp4 one per 16",
        )
        self.b_format = widgets.Dropdown(
            options=self._options("b_format"),
            value=b_format,
            layout=widgets.Layout(width="90px"),
            tooltip="Format of operand B (N x K); one MMA needs A and B with the same scale-block size",
        )
        self.block_k = widgets.Dropdown(
            options=self._options("block_k"),
            value=start["block_k"],
            layout=widgets.Layout(width="80px"),
            tooltip="K elements per MMA step: more K per step means more scale columns in TMEM, so a wider "
            "overlap (the label says the seed's default for these formats)",
        )
        self.epilogue_block_n = widgets.Dropdown(
            options=self._options("epilogue_block_n"),
            value=epilogue_block_n,
            layout=widgets.Layout(width="70px"),
            tooltip="Accumulator columns the epilogue drains per subtile; the overlap barrier is released after "
            "the subtile that finishes the overlapped columns",
        )
        self.overlap = widgets.ToggleButton(
            value=overlap,
            layout=widgets.Layout(width="110px"),
            tooltip="On: two accumulators that share as many columns as the scales need (the seed's trick). "
            "Off: one accumulator, and the MMA waits for every drain",
        )
        self.overlap.add_class("tmem-explorer-overlap")
        self._label_overlap()
        self.overlap.observe(self._label_overlap, names="value")
        self.step = widgets.IntSlider(
            value=0,
            min=0,
            max=0,
            description="step",
            continuous_update=True,
            layout=widgets.Layout(width="600px", max_width=FIT_WIDTH),
            tooltip="Walk the ping-pong of the tiles event by event: which window the MMA writes, which subtile "
            "the epilogue drains, which barrier lets what go (arrow keys move one event)",
        )
        self.operand = widgets.ToggleButtons(
            options=["A", "B"],
            value="A",
            description="scale of",
            style={"button_width": "36px", "description_width": "initial"},
            layout=widgets.Layout(width="190px", flex="0 0 auto"),
            tooltip="Whose scale to locate in TMEM",
            tooltips=[
                "A scales: split by rows, each CTA holds its own 128 rows",
                "B scales: all 256 rows, copied into both CTAs",
            ],
        )
        self.row = widgets.IntSlider(
            value=0,
            min=0,
            max=tmem.BLOCK_M - 1,
            description="row",
            layout=widgets.Layout(width="320px"),
            tooltip="Row of the 256-row tile whose scale to locate (M rows for A, N rows for B)",
        )
        self.k = widgets.IntSlider(
            value=0,
            min=0,
            max=0,
            description="k",
            layout=widgets.Layout(width="260px"),
            tooltip="Which scale along K within one BLOCK_K step (0 to BLOCK_K / VEC_SIZE - 1)",
        )
        self.error_box = widgets.HTML(value="", layout=widgets.Layout(display="none"))
        self.menu_note = widgets.HTML(value="")
        self.menu_note.add_class(NOTE_CLASS)
        self.change_note = widgets.HTML(value="", layout=widgets.Layout(display="none"))
        self.change_note.add_class(CHANGED_CLASS)
        # shown only where the widgets have no kernel behind them (ipywidgets marks them "disconnected"),
        # e.g. a trusted notebook reopened from its saved widget state
        self.offline_note = widgets.HTML(value=OFFLINE_NOTE_HTML)

        css_width = round(FIG_WIDTH * CSS_DPI)
        # as wide as the page allows, at most their natural size: scaled down, never cut, on a narrow window
        self.plan_image, self.step_image, self.scale_image = (
            widgets.Image(
                format="png", layout=widgets.Layout(width=f"{css_width}px", max_width=FIT_WIDTH, height="auto")
            )
            for _ in range(3)
        )
        for img in (self.plan_image, self.step_image, self.scale_image):
            img.add_class("tmem-explorer-plot")
        self.step_info = widgets.HTML(value="")
        self.step_info.add_class("tmem-explorer-step-info")
        self.step_box = widgets.VBox([self.step, self.step_image, self.step_info])
        self.scale_box = widgets.VBox(
            [
                widgets.HBox([self.operand, self.row, self.k], layout=widgets.Layout(flex_flow="row wrap")),
                self.scale_image,
            ]
        )
        menus = [
            _labelled(text, control)
            for text, control in (
                ("A format", self.a_format),
                ("B format", self.b_format),
                ("BLOCK_K", self.block_k),
                ("EPILOGUE_BLOCK_N", self.epilogue_block_n),
            )
        ]
        self._block_k_label = menus[2][1]
        self.widget = widgets.VBox(
            [
                widgets.HBox(
                    [box for box, _ in menus] + [self.overlap],
                    layout=widgets.Layout(align_items="center", flex_flow="row wrap"),
                ),
                self.menu_note,
                self.change_note,
                self.offline_note,
                self.error_box,
                self.plan_image,
                self.step_box,
                self.scale_box,
            ]
        )
        self.widget.add_class("tmem-explorer")

        self._sync_menus(None)
        for control in (self.a_format, self.b_format, self.block_k, self.epilogue_block_n, self.overlap):
            control.observe(self._on_config, names="value")
        self.step.observe(self._on_step, names="value")
        for control in (self.operand, self.row, self.k):
            control.observe(self._on_scale, names="value")
        self._on_config(first_step=step)
        if prefetch or (prefetch is None and _served_by_jupyter()):
            self.start_prefetch()

    @property
    def controls(self) -> list[widgets.DOMWidget]:
        """Every control a learner can change (each has a tooltip)."""
        return [
            self.a_format,
            self.b_format,
            self.block_k,
            self.epilogue_block_n,
            self.overlap,
            self.step,
            self.operand,
            self.row,
            self.k,
        ]

    def _label_overlap(self, change: Any = None) -> None:
        self.overlap.description = "overlap on" if self.overlap.value else "overlap off"
        self.overlap.icon = "check" if self.overlap.value else ""

    # --- drawing ahead ---------------------------------------------------------------------------------
    def start_prefetch(self) -> bool:
        """Start drawing the likely next pictures in a worker process; whether one runs."""
        if self._prefetcher is None or not self._prefetcher.alive:
            self._prefetcher = Prefetcher(self.pictures)
        self._prefetch()
        return self._prefetcher.alive

    def stop_prefetch(self) -> None:
        if self._prefetcher is not None:
            self._prefetcher.stop()
            self._prefetcher = None

    def _prefetch(self) -> None:
        if self._prefetcher is not None:
            self._prefetcher.want(self.likely_next())

    def likely_next(self) -> list[Key]:
        """The pictures a next click would show, most likely first: the neighbouring steps and scale picks, then
        every configuration ``plan`` accepts one menu change away (the menu used last first: a learner tries its
        values in turn), then the rest of this run's steps.  From a refused configuration: the accepted ones
        one change away."""
        tiles, step = self.num_tiles, self.step.value
        operand, row, k = self.operand.value, self.row.value, self.k.value
        near: list[Key] = []
        rest: list[Key] = []
        if self.error is None and self.plan is not None:
            config, last = config_of(self.plan), self.step.max
            near = [("step", config, tiles, i) for i in (step + 1, step - 1, step + 2, step - 2) if 0 <= i <= last]
            near += [("scale", config, "B" if operand == "A" else "A", row, k)]
            near += [("scale", config, operand, r, k) for r in (row + 1, row - 1) if 0 <= r < tmem.BLOCK_M]
            near += [("scale", config, operand, row, j) for j in (k + 1, k - 1) if 0 <= j <= self.k.max]
            rest = [
                ("step", config, tiles, i) for d in range(3, last + 1) for i in (step + d, step - d) if 0 <= i <= last
            ]
        names = sorted([*_MENUS, "overlap"], key=lambda name: name != self._last_control)
        others: list[Config] = []
        for name in names:
            values = (not self.overlap.value,) if name == "overlap" else _MENUS[name]
            for value in values:
                other = self._config_after(name, value)
                config_key = (
                    other["a_format"],
                    other["b_format"],
                    other["block_k"],
                    other["epilogue_block_n"],
                    other["overlap"],
                )
                if other != self.config() and config_key not in others and limits.config_refusal(**other) is None:
                    others.append(config_key)
        ahead: list[Key] = []
        for c in others:  # the top of the page first: what a click shows before the learner scrolls
            ahead += [("plan", c), ("step", c, tiles, step)]
        ahead += [("scale", c, operand, row, k) for c in others]
        return near + ahead + rest

    # --- display -------------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict, dict]:
        """The live widget, plus a static PNG of the current view and a plain-text note.

        A live front end (JupyterLab, Voila) shows the widget; GitHub, nbconvert's non-HTML formats and
        a notebook JupyterLab does not trust (before its cells run) show the picture instead.
        """
        data = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        if any(name.startswith("VOILA_") for name in os.environ):  # a Voila app always shows the live widget
            data["text/plain"] = f"{STATIC_NOTE}\nIt shows: {self.describe()}."
            return data, {}
        picture = self.static_png()
        data["image/png"] = base64.b64encode(picture).decode("ascii")
        data["text/plain"] = f"{STATIC_NOTE}\nIt shows: {self.describe()}."
        width = PILImage.open(io.BytesIO(picture)).width // PIXEL_SCALE
        return data, {"image/png": {"width": width, "alt": self.alt_text()}}

    def alt_text(self) -> str:
        """The static picture in words (its alternative text)."""
        if self.error is not None:
            return f"The TMEM layout explorer: {self.describe()}; plan refuses it: {self.error}"
        drawn = self.last_drawn
        windows = ", ".join(f"{name} [{off}, {off + cols})" for name, (off, cols) in drawn["windows"].items())
        overlap = drawn.get("overlap")
        shared = f"; the accumulators overlap in columns [{overlap[0]}, {overlap[0] + overlap[1]})" if overlap else ""
        step = drawn["step"]
        return (
            f"The TMEM layout explorer: {self.describe()}. The 512-column ruler: {windows}{shared}. "
            f"The ping-pong at {step['title']}: {step['mma_status']}. {drawn['scale']['title']}."
        )

    def plan_command(self) -> str:
        """The ``gluon-overlap plan`` command line of the current configuration."""
        c = self.config()
        return (
            f"gluon-overlap plan --a-format {c['a_format']} --b-format {c['b_format']} --block-k {c['block_k']} "
            f"--epilogue-block-n {c['epilogue_block_n']} --overlap {'on' if c['overlap'] else 'off'}"
        )

    def describe(self) -> str:
        """The controls' values in one line (the caption of the static picture)."""
        default = tmem.default_block_k(self.a_format.value, self.b_format.value)
        seed = " (seed default)" if self.block_k.value == default else ""
        return (
            f"A format {self.a_format.value}, B format {self.b_format.value}, BLOCK_K {self.block_k.value}{seed}, "
            f"EPILOGUE_BLOCK_N {self.epilogue_block_n.value}, overlap {'on' if self.overlap.value else 'off'}"
        )

    def static_png(self) -> bytes:
        """One PNG of what the explorer shows now: a caption with the controls' values, then each view."""
        width = FIG_WIDTH
        parts = [
            _text_image(
                [
                    (
                        "TMEM layout explorer: static picture. Run this cell in a live Jupyter kernel to "
                        "make it interactive.",
                        10,
                        "bold",
                    ),
                    (self.describe() + ".", 9, "normal"),
                ],
                width,
            )
        ]
        if self.error is not None:
            parts.append(_text_image([("plan refuses this configuration: " + self.error, 9, "normal")], width))
        else:
            step = self._steps[min(self.step.value, len(self._steps) - 1)]
            parts += [
                _image(self.plan_image.value),
                _text_image(
                    [
                        (
                            f"step {self.step.value} of {self.step.max} (the ping-pong of {self.num_tiles} tiles)",
                            9,
                            "bold",
                        )
                    ],
                    width,
                ),
                _image(self.step_image.value),
                _text_image(
                    [
                        (f"{e} -- {line}" if line else e, 8, "normal")
                        for e, line in zip(step.events, step.lines, strict=True)
                    ]
                    + [(" | ".join(step.barriers), 8, "normal")],
                    width,
                ),
                _text_image(
                    [(f"scale of {self.operand.value}, row {self.row.value}, k {self.k.value}", 9, "bold")], width
                ),
                _image(self.scale_image.value),
            ]
        canvas = PILImage.new("RGB", (max(p.width for p in parts), sum(p.height for p in parts)), "white")
        y = 0
        for part in parts:
            canvas.paste(part, (0, y))
            y += part.height
        buf = io.BytesIO()
        # a palette PNG: a third of the RGB size (the picture is stored in the notebook); the fast quantizer
        # and zlib level 6 keep it to about 0.1 s
        canvas.quantize(colors=255, method=PILImage.Quantize.FASTOCTREE, dither=PILImage.Dither.NONE).save(
            buf, format="png", compress_level=6
        )
        return buf.getvalue()

    # --- the menus ---------------------------------------------------------------------------------
    @staticmethod
    def _options(name: str) -> list[tuple[str, Any]]:
        """The menu of control ``name``: every value, labelled with the value itself."""
        return [(str(value), value) for value in _MENUS[name]]

    def config(self) -> dict[str, Any]:
        """The controls' configuration (the arguments of :func:`gluon_overlap.limits.check_config`)."""
        return dict(
            a_format=self.a_format.value,
            b_format=self.b_format.value,
            block_k=self.block_k.value,
            epilogue_block_n=self.epilogue_block_n.value,
            overlap=self.overlap.value,
        )

    def refused(self, name: str) -> list[Any]:
        """The values of menu ``name`` that ``plan`` refuses with the other settings as they are."""
        config = self.config()
        return [value for value in _MENUS[name] if limits.config_refusal(**{**config, name: value}) is not None]

    def _config_after(self, name: str, value: Any) -> dict[str, Any]:
        """The configuration after setting control ``name`` to ``value`` (BLOCK_K following its default)."""
        config = dict(self.config(), **{name: value})
        if name in ("a_format", "b_format") and self._block_k_follows_default:
            config["block_k"] = tmem.default_block_k(config["a_format"], config["b_format"])
        return config

    def _sync_menus(self, change: Any) -> None:
        """BLOCK_K follows the seed's default while it is at it; the line under the menus says what ``plan``
        refuses; ``changed_also`` (shown in a note) says what this change changed besides its own control."""
        default_k = tmem.default_block_k(self.a_format.value, self.b_format.value)
        if change is not None and change["owner"] is self.block_k:
            self._block_k_follows_default = change["new"] == default_k
        self.changed_also = []
        if self._block_k_follows_default and self.block_k.value != default_k:
            old = self.block_k.value
            self._busy = True
            try:
                self.block_k.value = default_k
            finally:
                self._busy = False
            if change is not None:
                pair = f"{self.a_format.value} x {self.b_format.value}"
                self.changed_also.append(
                    f"BLOCK_K changed from {old} to {default_k}, the seed's default for "
                    f"{pair} (pick a BLOCK_K to keep it)"
                )
        self._block_k_label.value = _label_html("BLOCK_K", self.block_k.tooltip, f"(seed default {default_k})")
        refused = [(_NAMES[name], self.refused(name)) for name in _MENUS]
        said = "; ".join(f"{what} {', '.join(map(str, values))}" for what, values in refused if values)
        self.menu_note.value = (
            '<div style="font-size:12px;color:#555;margin:2px 8px">'
            + (
                f"With the other settings as they are, plan refuses: {html.escape(said)}."
                if said
                else "plan accepts every value of every menu here."
            )
            + "</div>"
        )
        if self.changed_also:
            self.change_note.value = (
                '<div style="font-size:12px;background:#fff8e1;border:1px solid #e0c060;'
                'border-radius:4px;padding:3px 8px;margin:2px 8px">'
                + html.escape("; ".join(self.changed_also))
                + ".</div>"
            )
            self.change_note.layout.display = None
        else:
            self.change_note.value = ""
            self.change_note.layout.display = "none"

    # --- callbacks -----------------------------------------------------------------------------
    def _on_config(self, change: Any = None, first_step: int | None = None) -> None:
        if self._busy:
            return
        if change is not None:
            self._last_control = next(
                (name for name in (*_MENUS, "overlap") if getattr(self, name) is change["owner"]), None
            )
        self._sync_menus(change)
        config = self.config()
        try:
            plan = limits.check_config(**config)
        except ValueError as exc:
            self._show_error(explain_plan_error(**config, plan_message=str(exc)), str(exc))
            self._prefetch()  # the accepted configurations one change away
            return
        self.plan, self.error, self.plan_error = plan, None, None
        self.error_box.value = ""
        self.error_box.layout.display = "none"
        for box in (self.plan_image, self.step_box, self.scale_box):
            box.layout.display = None
        _, self._steps = steps_of(config_of(plan), self.num_tiles)
        self._busy = True
        try:  # adjust the ranges without one redraw per changed bound
            self.step.max = len(self._steps) - 1
            if first_step is not None or change is None:
                self.step.value = (
                    min(first_step, self.step.max) if first_step is not None else showcase_step(self._steps)
                )
            self.k.max = plan.block_k // plan.vec_size - 1
        finally:
            self._busy = False
        self.last_drawn = {"config": plan.to_dict()}
        self._draw_plan()
        self._draw_step()
        self._draw_scale()
        self._prefetch()

    def _on_step(self, change: Any = None) -> None:
        if not self._busy and self.plan is not None and self.error is None:
            self._draw_step()
            self._prefetch()

    def _on_scale(self, change: Any = None) -> None:
        if not self._busy and self.plan is not None and self.error is None:
            self._draw_scale()
            self._prefetch()

    def _show_error(self, message: str, plan_message: str) -> None:
        self.error, self.plan_error = message, plan_message
        self.last_drawn = {"error": message, "plan_error": plan_message}
        self.error_box.value = (
            f'<div class="{ERROR_CLASS}" style="border:2px solid #c0392b;background:#fdecea;'
            f'color:#7b1d12;padding:6px 10px;border-radius:4px;font-family:sans-serif">'
            f"<b>plan refuses this configuration:</b> {html.escape(message)}"
            f'<div style="font-size:11px;color:#8a4b43;margin-top:3px">'
            f"<code>{html.escape(self.plan_command())}</code> says: "
            f"{html.escape(plan_message)}</div></div>"
        )
        self.error_box.layout.display = None
        for box in (self.plan_image, self.step_box, self.scale_box):
            box.layout.display = "none"

    # --- showing the pictures --------------------------------------------------------------------------
    def _picture(self, key: Key) -> tuple[bytes, dict[str, Any]]:
        return self.pictures.show(key, self._renderer.render)

    def _config(self) -> Config:
        """The configuration on show (the pictures are drawn only once plan has accepted one)."""
        if self.plan is None:
            raise RuntimeError("the explorer draws a picture only for a configuration plan accepted")
        return config_of(self.plan)

    def _draw_plan(self) -> None:
        png, drawn = self._picture(("plan", self._config()))
        self.plan_image.value = png
        self.redraws += 1
        self.last_drawn.update({k: v for k, v in drawn.items() if k != "legend"})
        self.last_drawn["plan_legend"] = list(drawn["legend"])

    def _draw_step(self) -> None:
        step = self._steps[min(self.step.value, len(self._steps) - 1)]
        png, drawn = self._picture(("step", self._config(), self.num_tiles, step.index))
        self.step_image.value = png
        self.redraws += 1
        events = "".join(
            f"<li>{html.escape(e)}"
            + (f'<br><code style="font-size:11px;color:#555">{html.escape(line)}</code>' if line else "")
            + "</li>"
            for e, line in zip(step.events, step.lines, strict=True)
        )
        self.step_info.value = (
            f'<div style="font-size:12px;line-height:1.35"><ul style="margin:2px 0">{events}'
            f'</ul><span style="color:#555">{html.escape(" | ".join(step.barriers))}</span></div>'
        )
        self.last_drawn["step"] = dict(drawn)

    def _draw_scale(self) -> None:
        key = ("scale", self._config(), self.operand.value, self.row.value, self.k.value)
        png, drawn = self._picture(key)
        self.scale_image.value = png
        self.redraws += 1
        self.last_drawn["scale"] = dict(drawn)

    def figures(self) -> dict[str, Any]:
        """The matplotlib figures as last drawn in this process (for checks of their layout)."""
        return self._renderer.figures()


def show(**kwargs: Any) -> TmemExplorer:
    """Build an explorer (keyword arguments as :class:`TmemExplorer`) and return it for display."""
    return TmemExplorer(**kwargs)
