"""The explorer's pictures read cleanly (no legend or label clipped or covered), start where the overlap shows,
carry alternative text, and are drawn ahead by a worker process -- the same bytes as drawn on demand."""

from __future__ import annotations

import time

import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from gluon_overlap import limits, tmem
from gluon_overlap.explorer import TmemExplorer
from gluon_overlap.explorer.prefetch import Pictures
from gluon_overlap.explorer.render import Renderer, showcase_step, steps_of
from gluon_overlap.plots.layout import layout_problems

#: one configuration per layout the views can take: every format pair with overlap on and off, the narrowest
#: and widest subtiles, the smallest and largest BLOCK_K (the ruler's labels move with all of them)
LAYOUTS = [
    ("nvfp4", "nvfp4", 256, 32, True),
    ("nvfp4", "nvfp4", 256, 32, False),
    ("nvfp4", "nvfp4", 64, 8, True),
    ("mxfp8", "mxfp8", 128, 32, True),
    ("mxfp8", "mxfp8", 128, 8, False),
    ("mxfp8", "mxfp4", 128, 64, True),
    ("mxfp4", "mxfp4", 256, 64, True),
    ("mxfp4", "mxfp4", 128, 16, False),
    ("nvfp4", "nvfp4", 128, 128, False),
]


@pytest.mark.parametrize("config", LAYOUTS, ids=lambda c: "-".join(map(str, c)))
def test_no_legend_or_label_is_clipped_or_covered(config):
    """Every text of every view (legend entries included) lies inside its figure, over no other text, over no
    hatching and under no patch -- measured by matplotlib on the figures the explorer renders."""
    assert limits.config_refusal(*config) is None
    _, steps = steps_of(config, 4)
    plan = tmem.make_plan(*config)
    keys = [("plan", config)] + [("step", config, 4, i) for i in sorted({0, showcase_step(steps), len(steps) - 1})]
    keys += [("scale", config, "B", 255, plan.block_k // plan.vec_size - 1), ("scale", config, "A", 0, 0)]
    problems = []
    renderer = Renderer()  # one, as the app has: each view's figure is redrawn for the next key (a stale artist
    for key in keys:  # left over from an earlier key would be measured, and caught, with this key's)
        renderer.render(key)
        problems += [f"{key}: {p}" for p in layout_problems(renderer.figures()[key[0]])]
    assert problems == []


def test_the_layout_check_catches_clipped_and_covered_text():
    fig = Figure(figsize=(4, 2))
    ax = fig.add_axes((0.1, 0.1, 0.6, 0.8))
    ax.set_xlim(0, 10)
    ax.add_patch(Rectangle((2, 0.2), 3, 0.5, hatch="xx", facecolor="none"))
    ax.text(3, 0.4, "under the hatching")
    fig.legend(
        [Rectangle((0, 0), 1, 1)],
        ["a legend entry far too long to fit beside these axes"],
        loc="upper left",
        bbox_to_anchor=(0.72, 0.9),
    )
    problems = layout_problems(fig)
    assert any(p.startswith("clipped: legend text") for p in problems), problems
    assert any(p.startswith("covered: text 'under the hatching' lies under hatching") for p in problems), problems


def test_the_explorer_starts_where_the_overlap_is_visible():
    """Not step 0 (nothing happens there): the MMA writes tile 1 into the right window while tile 0 drains."""
    explorer = TmemExplorer()
    step = explorer._steps[explorer.step.value]
    assert explorer.step.value > 0 and step.mma_tile == 1 and step.epilogue_tile == 0
    drawn = explorer.last_drawn["step"]
    assert drawn["mma_window"] == (explorer.plan.right.offset, 256) and drawn["draining"] is not None
    assert drawn["mma_status"].startswith("MMA writes tile 1 into the right window")
    assert TmemExplorer(step=0).step.value == 0


def test_the_static_picture_has_alternative_text():
    explorer = TmemExplorer()
    _, metadata = explorer._repr_mimebundle_()
    alt = metadata["image/png"]["alt"]
    assert alt.startswith("The TMEM layout explorer: A format nvfp4, B format nvfp4, BLOCK_K 256")
    assert "overlap in columns [208, 256)" in alt and f"step {explorer.step.value}:" in alt
    refused = TmemExplorer(a_format="mxfp4", b_format="mxfp8")
    assert "plan refuses it" in refused._repr_mimebundle_()[1]["image/png"]["alt"]


def test_the_worker_draws_ahead_the_same_pictures():
    """With prefetch, the pictures a next click shows arrive from the worker; each is byte for byte what the app
    draws itself, and a step moved to then is shown without drawing."""
    explorer = TmemExplorer(prefetch=True, pictures=Pictures())  # its own: none of them drawn by another explorer
    try:
        assert explorer._prefetcher is not None and explorer._prefetcher.alive
        wanted = explorer.likely_next()[:6]
        deadline = time.monotonic() + 120
        while not all(key in explorer.pictures for key in wanted) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(key in explorer.pictures for key in wanted), "the worker delivered nothing in 120 s"
        assert explorer.pictures.prefetched >= 6
        own = Renderer()
        for key in wanted:
            assert explorer.pictures.get(key)[0] == own.render(Renderer.clamp(key))[0], key
        renders = explorer._renderer.renders
        explorer.step.value += 1
        assert explorer._renderer.renders == renders  # shown from the worker's picture
    finally:
        explorer.stop_prefetch()
    assert explorer._prefetcher is None


@pytest.mark.parametrize("pair", [("nvfp4", "nvfp4"), ("mxfp8", "mxfp8"), ("mxfp8", "mxfp4"), ("mxfp4", "mxfp4")])
@pytest.mark.parametrize("overlap", [True, False])
def test_the_notebooks_plan_figure_reads_cleanly(pair, overlap):
    """Notebook 04's (and the README's) ruler: its drain labels are off the overlap's hatching, in the figure."""
    from gluon_overlap.plots import tmem as ptmem

    assert layout_problems(ptmem.plot_plan(tmem.make_plan(*pair, overlap=overlap))) == []


def test_under_voila_the_bundle_skips_the_static_picture(monkeypatch):
    """Voila always shows the live widget: the static picture (about a second of a loaded machine, while the
    page waits) is not drawn there."""
    monkeypatch.setenv("VOILA_BASE_URL", "/")
    data, metadata = TmemExplorer()._repr_mimebundle_()
    assert "image/png" not in data and "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"].startswith("Static picture of the TMEM layout explorer")


def test_a_process_keeps_at_most_two_workers():
    """Running the explorer's cell again makes a new explorer: the oldest worker stops, the newest draw ahead."""
    from gluon_overlap.explorer import prefetch as explorer_prefetch

    explorers = [TmemExplorer(prefetch=True) for _ in range(3)]
    try:
        alive = [e._prefetcher is not None and e._prefetcher.alive for e in explorers]
        assert alive == [False, True, True] and len(explorer_prefetch._live) <= explorer_prefetch.MAX_WORKERS
        explorers[0].step.value += 1  # the stopped one still answers, drawing on demand
        assert explorers[0].last_drawn["step"]["index"] == explorers[0].step.value
    finally:
        for e in explorers:
            e.stop_prefetch()
