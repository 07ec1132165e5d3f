"""The explorer's three views rendered to PNG, one picture per key, by whoever asks: the app or its prefetcher.

A key names everything one picture shows, so a picture is the same bytes whoever renders it:

* ``("plan", config)`` -- the ruler and the owner strip of one configuration;
* ``("step", config, tiles, index)`` -- the ping-pong of ``tiles`` tiles at step ``index``;
* ``("scale", config, operand, row, k)`` -- where one scale lives.

``config`` is the tuple ``(a_format, b_format, block_k, epilogue_block_n, overlap)`` of a configuration
``plan`` accepts.  :meth:`Renderer.render` returns ``(png, info)``: the PNG and what was drawn, read back from
the matplotlib artists (legend included); :meth:`Renderer.clamp` maps a key to the one the app would show
(a step or ``k`` past the configuration's last is the last).
"""

from __future__ import annotations

import functools
from typing import Any

from gluon_overlap import limits, pingpong, tmem
from gluon_overlap.explorer.view import _cols, _patches, _text, _View
from gluon_overlap.plots import tmem as ptmem

Config = tuple[str, str, int, int, bool]
Key = tuple[Any, ...]
FIG_WIDTH = 10.5  #: inches: 1008 CSS pixels (figure sizes are multiples of 1/8 inch: whole PNG pixels)
PLOT_RIGHT = 0.72  #: the axes end here; the legend fills the rest of the width


def config_of(plan: tmem.TmemPlan) -> Config:
    return (plan.a_format, plan.b_format, plan.block_k, plan.epilogue_block_n, plan.overlap)


@functools.lru_cache(maxsize=256)
def plan_of(config: Config) -> tmem.TmemPlan:
    """The plan of ``config`` (``ValueError`` in ``plan``'s words when it refuses it)."""
    a_format, b_format, block_k, epilogue_block_n, overlap = config
    return limits.check_config(a_format, b_format, block_k, epilogue_block_n, overlap)


@functools.lru_cache(maxsize=256)
def steps_of(config: Config, tiles: int) -> tuple[pingpong.Schedule, list[pingpong.PingPongStep]]:
    schedule = pingpong.schedule(plan_of(config), tiles)
    return schedule, pingpong.steps(schedule)


def showcase_step(steps: list[pingpong.PingPongStep]) -> int:
    """The first step that shows what the overlap buys: the MMA writes tile 1 while tile 0 still drains (with
    overlap off, where tile 0 drains); 0 when the run has no such step."""
    for wanted in (
        lambda s: s.mma_tile == 1 and s.epilogue_tile == 0,
        lambda s: s.epilogue_tile == 0 and s.epilogue_position is not None,
    ):
        for s in steps:
            if wanted(s):
                return s.index
    return 0


class Renderer:
    """Three reusable figures (plan, step, scale) and the drawing of each key into them."""

    def __init__(self) -> None:
        self.plan_view = _View(
            FIG_WIDTH, 3.125, dict(left=0.085, right=PLOT_RIGHT, top=0.93, bottom=0.16), rows=2, height_ratios=[5, 1]
        )
        self.step_view = _View(FIG_WIDTH, 2.625, dict(left=0.085, right=PLOT_RIGHT, top=0.97, bottom=0.1))
        self.scale_view = _View(FIG_WIDTH, 2.75, dict(left=0.07, right=PLOT_RIGHT, top=0.88, bottom=0.2))
        self.renders = 0

    @staticmethod
    def clamp(key: Key) -> Key:
        """The key the app shows for ``key``: a step or ``k`` beyond the configuration's last is its last."""
        kind, config = key[0], key[1]
        if kind == "step":
            _, steps = steps_of(config, key[2])
            return ("step", config, key[2], min(key[3], len(steps) - 1))
        if kind == "scale":
            plan = plan_of(config)
            return ("scale", config, key[2], key[3], min(key[4], plan.block_k // plan.vec_size - 1))
        return key

    def render(self, key: Key) -> tuple[bytes, dict[str, Any]]:
        """``(png, info)`` of ``key`` (already clamped)."""
        self.renders += 1
        kind = key[0]
        if kind == "plan":
            return self._plan(plan_of(key[1]))
        if kind == "step":
            return self._step(key[1], key[2], key[3])
        if kind == "scale":
            return self._scale(plan_of(key[1]), key[2], key[3], key[4])
        raise ValueError(f"unknown view {kind!r}")

    def _plan(self, plan: tmem.TmemPlan) -> tuple[bytes, dict[str, Any]]:
        has_unused = any(not owners for owners in plan.column_owners())

        def draw(ax: Any, own: Any) -> None:
            ptmem.draw_ruler(ax, plan, title=False)
            ax.set_xlabel("")
            ax.tick_params(axis="x", labelbottom=False)
            ptmem.draw_ownership(own, plan)

        def readback(ax: Any, own: Any) -> dict[str, Any]:
            overlap = _patches(ax, "overlap").get("overlap")
            return {
                "windows": {gid.split(":", 1)[1]: _cols(p) for gid, p in _patches(ax, "window:").items()},
                "overlap": _cols(overlap) if overlap is not None else None,
            }

        view = self.plan_view
        view.draw_static(
            draw,
            key=plan,
            readback=readback,
            frame_key=(plan.overlap, plan.tmem_cols, has_unused),
            legend=lambda: ptmem.ruler_legend(plan),
        )
        return view.png(), {**view.info, "legend": list(view.legend_labels)}

    def _step(self, config: Config, tiles: int, index: int) -> tuple[bytes, dict[str, Any]]:
        plan = plan_of(config)
        schedule, steps = steps_of(config, tiles)
        step = steps[index]
        view = self.step_view
        view.draw_static(
            lambda ax: ptmem.draw_ping_pong_background(ax, plan),
            key=(plan.overlap, plan.left, plan.right, plan.tmem_cols),
            frame_key=(plan.overlap, plan.tmem_cols),
            legend=lambda: ptmem.ping_pong_legend(plan),
        )
        view.draw_dynamic(lambda ax: ptmem.draw_ping_pong_state(ax, schedule, step))
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
            "legend": list(view.legend_labels),
        }

    def _scale(self, plan: tmem.TmemPlan, operand: str, row: int, k: int) -> tuple[bytes, dict[str, Any]]:
        view = self.scale_view
        view.draw_static(
            lambda ax: ptmem.draw_scale_background(ax, plan, tick_artists=True),
            key=(plan.a_scale, plan.b_scale),
            frame_key="scale",
            legend=lambda: ptmem.scale_legend(plan),
        )
        marked: list[ptmem.ScaleCell] = []

        def draw(ax: Any) -> list:
            cell, artists = ptmem.draw_scale_mark(ax, plan, operand, row, k)
            marked.append(cell)
            return artists

        view.draw_dynamic(draw)
        ax, cell = view.axes[0], marked[0]
        marks = [p for p in ax.patches if p.get_gid() == "scale-cell"]
        return view.png(), {
            "operand": cell.operand,
            "row": cell.row,
            "k": cell.k,
            "ctas": cell.ctas,
            "byte": cell.byte,
            "columns": sorted({int(round(p.get_x())) for p in marks}),
            "lanes": sorted(int(round(p.get_y())) for p in marks),
            "title": _text(ax, "scale-title"),
            "legend": list(view.legend_labels),
        }

    def figures(self) -> dict[str, Any]:
        """The three figures as last drawn (for checks of their layout)."""
        return {"plan": self.plan_view.fig, "step": self.step_view.fig, "scale": self.scale_view.fig}
