"""Level-1 tests of the explorer: drive the ipywidgets controls, read back what was drawn."""

from __future__ import annotations

import base64
import html
import io
import itertools
import re

import ipywidgets as widgets
import numpy as np
import pytest
from PIL import Image as PILImage

from gluon_overlap import tmem
from gluon_overlap.explorer import CSS_DPI, ERROR_CLASS, PIXEL_SCALE, STATIC_NOTE, TmemExplorer
from gluon_overlap.plots import tmem as ptmem


@pytest.fixture(scope="module")
def explorer():
    return TmemExplorer()


def _expected_windows(plan):
    return {name: (w.offset, w.cols) for name, w in plan.windows().items() if name != "right" or plan.overlap}


def _set(explorer, **values):
    for name, value in values.items():
        getattr(explorer, name).value = value


def test_default_draws_the_seed_nvfp4_plan(explorer):
    _set(explorer, a_format="nvfp4", b_format="nvfp4", block_k=256, epilogue_block_n=32, overlap=True)
    assert explorer.error is None
    assert explorer.last_drawn["windows"] == {"left": (0, 256), "right": (208, 256), "a_scale": (464, 16),
                                              "b_scale": (480, 32)}
    assert explorer.last_drawn["overlap"] == (208, 48)
    assert explorer.plan_image.value[:8] == b"\x89PNG\r\n\x1a\n"


CONFIGS = [
    dict(a_format="mxfp8", b_format="mxfp8", block_k=128, epilogue_block_n=32, overlap=True),
    dict(a_format="mxfp8", b_format="mxfp4", block_k=128, epilogue_block_n=32, overlap=False),
    dict(a_format="mxfp4", b_format="mxfp4", block_k=1024, epilogue_block_n=64, overlap=True),
    dict(a_format="nvfp4", b_format="nvfp4", block_k=1344, epilogue_block_n=8, overlap=True),
    dict(a_format="nvfp4", b_format="nvfp4", block_k=256, epilogue_block_n=256, overlap=False),
    dict(a_format="mxfp8", b_format="mxfp8", block_k=128, epilogue_block_n=32, overlap=True),  # again: cached
]


@pytest.mark.parametrize("config", CONFIGS)
def test_controls_redraw_the_plan(explorer, config):
    before = explorer.plan_image.value
    _set(explorer, **config)
    plan = tmem.make_plan(config["a_format"], config["b_format"], config["block_k"], config["epilogue_block_n"],
                          config["overlap"])
    assert explorer.error is None
    assert explorer.last_drawn["windows"] == _expected_windows(plan)
    ov = plan.overlap_window
    assert explorer.last_drawn["overlap"] == ((ov.offset, ov.cols) if ov else None)
    assert explorer.plan_image.value != before
    assert explorer.k.max == plan.block_k // plan.vec_size - 1
    steps = ptmem.ping_pong_steps(ptmem.simple_schedule(plan, explorer.num_tiles))
    assert explorer.step.max == len(steps) - 1


# (configuration, what the explorer says in plain words, a piece of the plan's own message)
INVALID = [
    (dict(a_format="nvfp4", b_format="mxfp8"),
     "nvfp4 has one scale per 16 elements but mxfp8 one per 32", "different scale-block sizes"),
    (dict(a_format="mxfp8", b_format="mxfp8", block_k=64),
     "BLOCK_K 64 is not a multiple of 128: mxfp8 scales come in chunks of 4 scales x 32 elements",
     "must be a multiple of VEC_SIZE x 4 = 128"),
    # mxfp4, BLOCK_K 2816: A 2816 / 32 = 88 columns, B 2 x 88 = 176 -> a 264-column overlap; 2688 gives 252
    (dict(a_format="mxfp4", b_format="mxfp4", block_k=2816),
     "264 columns of overlap, but at most 255 fit (A 88 + B 176 scale columns at BLOCK_K 2816)",
     "9 column(s) too many"),
    (dict(a_format="mxfp4", b_format="mxfp4", block_k=2816), "The largest BLOCK_K that fits is 2688.", "too many"),
    (dict(a_format="nvfp4", b_format="nvfp4", block_k=256, epilogue_block_n=48),
     "EPILOGUE_BLOCK_N 48 does not divide the 256 accumulator columns (256 = 5 x 48 + 16)", "256 % 48 = 16"),
    # nvfp4, overlap off, BLOCK_K 1408: 256 + 88 + 176 = 520 columns; 1344 gives 256 + 252 = 508
    (dict(a_format="nvfp4", b_format="nvfp4", block_k=1408, overlap=False),
     "520 columns needed, but TMEM has 512 per CTA", "8 more than tmem_cols=512"),
    (dict(a_format="nvfp4", b_format="nvfp4", block_k=1408, overlap=False), "The largest BLOCK_K that fits is 1344.",
     "need 520 columns"),
]


@pytest.mark.parametrize(("config", "said", "plan_needle"), INVALID)
def test_invalid_configuration_says_what_does_not_fit(config, said, plan_needle):
    explorer = TmemExplorer()
    _set(explorer, **config)
    assert explorer.error is not None and said in explorer.error
    full = dict(dict(a_format="nvfp4", b_format="nvfp4", block_k=256, epilogue_block_n=32, overlap=True), **config)
    with pytest.raises(ValueError) as refused:  # the message the plan itself gives
        tmem.make_plan(full["a_format"], full["b_format"], full["block_k"], full["epilogue_block_n"],
                       full["overlap"])
    assert explorer.plan_error == str(refused.value) and plan_needle in explorer.plan_error
    assert explorer.last_drawn == {"error": explorer.error, "plan_error": explorer.plan_error}
    box = explorer.error_box
    assert box.layout.display is None and ERROR_CLASS in box.value
    assert html.escape(said) in box.value and html.escape(explorer.plan_error) in box.value
    assert "Traceback" not in box.value
    assert explorer.plan_image.layout.display == "none" and explorer.step_box.layout.display == "none"
    # moving the step or the scale pick while in error draws nothing and raises nothing
    redraws = explorer.redraws
    explorer.row.value = 99
    assert explorer.redraws == redraws
    # a valid configuration brings the drawing back
    _set(explorer, a_format="nvfp4", b_format="nvfp4", block_k=256, epilogue_block_n=32, overlap=True)
    assert explorer.error is None and explorer.plan_error is None and box.layout.display == "none"
    assert explorer.plan_image.layout.display is None
    assert explorer.last_drawn["windows"]["right"] == (208, 256)


@pytest.mark.parametrize(("kwargs", "needle"), [
    (dict(block_k=100), "block_k=100 is not offered by the explorer: choose None (the seed default) or a multiple "
                        "of 64 in [64, 3072]"),
    (dict(block_k=True), "block_k=True is not offered"),
    (dict(epilogue_block_n=12), "epilogue_block_n=12 is not offered by the explorer: choose one of [8, 16, 32"),
    (dict(a_format="fp8"), "a_format='fp8' is not a known format"),
    (dict(b_format="NVFP4"), "b_format='NVFP4' is not a known format"),
    (dict(overlap="yes"), "overlap='yes' must be True or False"),
    (dict(num_tiles=0), "num_tiles=0 must be an integer in [1, 16]"),
])
def test_bad_arguments_raise_one_clear_value_error(kwargs, needle):
    with pytest.raises(ValueError) as raised:
        TmemExplorer(**kwargs)
    assert type(raised.value) is ValueError and needle in str(raised.value)


def test_block_k_menu_shows_the_value_it_uses():
    explorer = TmemExplorer()  # nvfp4 x nvfp4: the seed uses BLOCK_K 256
    assert explorer.block_k.value == 256 == explorer.plan.block_k
    assert explorer.block_k.label == "256 (seed default)"
    assert explorer.block_k.index is not None  # the menu shows a selection, not a blank
    # following the default: an fp8 operand makes the seed's BLOCK_K 128 (tmem.default_block_k)
    _set(explorer, a_format="mxfp8", b_format="mxfp8")
    assert explorer.block_k.value == 128 == explorer.plan.block_k == tmem.default_block_k("mxfp8", "mxfp8")
    assert explorer.block_k.label == "128 (seed default)"
    assert [label for label in explorer.block_k.options if "seed default" in label[0]] == [("128 (seed default)", 128)]
    # a value picked by hand stays when the formats change
    explorer.block_k.value = 512
    _set(explorer, a_format="mxfp4", b_format="mxfp4")
    assert explorer.block_k.value == 512 == explorer.plan.block_k and explorer.block_k.label == "512"
    # picking the default again follows it again
    explorer.block_k.value = 256
    assert explorer.block_k.label == "256 (seed default)"
    _set(explorer, a_format="mxfp8", b_format="mxfp8")
    assert explorer.block_k.value == 128


def test_an_explicit_block_k_is_kept():
    explorer = TmemExplorer(a_format="mxfp4", b_format="mxfp4", block_k=1024)
    assert explorer.block_k.value == 1024 == explorer.plan.block_k and explorer.block_k.label == "1024"
    _set(explorer, a_format="mxfp8", b_format="mxfp8")
    assert explorer.block_k.value == 1024


def test_every_control_has_a_tooltip():
    explorer = TmemExplorer()
    controls = [w for w in _walk(explorer.widget) if isinstance(w, widgets.ValueWidget)
                and not isinstance(w, (widgets.HTML, widgets.Image))]
    assert {id(w) for w in controls} == {id(w) for w in explorer.controls}
    for control in controls:
        assert control.tooltip and len(control.tooltip) > 20, control.description
    assert len(explorer.operand.tooltips) == len(explorer.operand.options)
    # the menus' labels show the same hover text (ipywidgets 8 shows none on a described menu)
    labels = [w.value for w in _walk(explorer.widget) if "tmem-explorer-label" in w._dom_classes]
    assert len(labels) == 4
    for control in (explorer.a_format, explorer.b_format, explorer.block_k, explorer.epilogue_block_n):
        assert any(f'title="{html.escape(control.tooltip)}"' in label for label in labels)


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def test_every_view_has_a_legend_naming_what_it_draws():
    explorer = TmemExplorer()
    plan_legend = explorer.last_drawn["plan_legend"]
    assert plan_legend[:2] == ["left accumulator", "right accumulator"]
    assert any(label.startswith("overlap") for label in plan_legend)
    assert not any("unused" in label for label in plan_legend)  # overlap on fills all 512 columns
    assert ptmem.ping_pong_legend(explorer.plan)[1] == explorer.last_drawn["step"]["legend"]
    assert any("hatched" in label for label in explorer.last_drawn["step"]["legend"])
    assert "the picked scale" in explorer.last_drawn["scale"]["legend"]
    explorer.overlap.value = False  # one accumulator and unused columns: the legend follows
    plan_legend = explorer.last_drawn["plan_legend"]
    assert plan_legend[0] == "accumulator" and "unused columns" in plan_legend
    assert not any(label.startswith("overlap") for label in explorer.last_drawn["step"]["legend"])
    explorer.overlap.value = True  # the cached frame comes back with its own legend
    assert any(label.startswith("overlap") for label in explorer.last_drawn["plan_legend"])


def test_views_are_rendered_at_twice_the_size_they_are_shown():
    explorer = TmemExplorer()
    for image in (explorer.plan_image, explorer.step_image, explorer.scale_image):
        shown = int(image.layout.width.removesuffix("px"))
        png = PILImage.open(io.BytesIO(image.value))
        assert png.width == PIXEL_SCALE * shown and PIXEL_SCALE >= 2
        assert png.width == round(explorer._plan_view.fig.get_figwidth() * CSS_DPI * PIXEL_SCALE)


def _step_where(explorer, predicate):
    plan = explorer.plan
    steps = ptmem.ping_pong_steps(ptmem.simple_schedule(plan, explorer.num_tiles))
    return next(s.index for s in steps if predicate(s))


def test_step_control_walks_the_ping_pong():
    explorer = TmemExplorer()
    plan = explorer.plan
    assert explorer.last_drawn["step"]["mma_window"] == (0, 256)  # tile 0 writes the left window
    image0 = explorer.step_image.value
    # tile 1 starts in the right window once tile 0 released the overlap barrier
    i1 = _step_where(explorer, lambda s: s.mma_tile == 1)
    explorer.step.value = i1
    drawn = explorer.last_drawn["step"]
    assert drawn["index"] == i1
    assert drawn["mma_window"] == (plan.right.offset, plan.right.cols) == (208, 256)
    assert drawn["mma_status"].startswith("MMA writes tile 1 into the right window")
    assert any("wait(overlap, p0)" in e for e in drawn["events"])
    assert any("arrive overlap (completion 1)" in e for e in drawn["events"])
    assert explorer.step_image.value != image0
    # just before: the MMA is idle, waiting on the overlap barrier with parity 0
    explorer.step.value = i1 - 1
    drawn = explorer.last_drawn["step"]
    assert drawn["mma_window"] is None and drawn["mma_status"] == "MMA idle: tile 1 waits on overlap p0"
    assert drawn["draining"] is not None
    # tile 2 reuses the left window after acc_empty[0] (the full drain of tile 0)
    i2 = _step_where(explorer, lambda s: s.mma_tile == 2)
    explorer.step.value = i2
    drawn = explorer.last_drawn["step"]
    assert drawn["mma_window"] == (0, 256)
    assert any("wait(acc_empty[0], p0): full drain of tile 0" in e for e in drawn["events"])
    assert drawn["title"].startswith(f"step {i2}:")


def test_step_control_with_overlap_off_uses_one_window():
    explorer = TmemExplorer(overlap=False)
    for i in range(0, explorer.step.max + 1, 5):
        explorer.step.value = i
        drawn = explorer.last_drawn["step"]
        assert drawn["mma_window"] in (None, (0, 256))
        assert all(off + cols <= 256 for off, cols in drawn["held"])


def test_scale_pick_shows_lane_and_column():
    explorer = TmemExplorer()
    explorer.operand.value = "B"
    explorer.row.value = 200
    explorer.k.value = 13
    scale = explorer.last_drawn["scale"]
    # B chunk (n=1, kc=3) starts at 480 + 8*3 + 4 = 508; row 200 -> group (200 % 128) // 32 = 2, lane 8
    assert scale["columns"] == [510] and scale["lanes"] == [8, 40, 72, 104]
    assert scale["ctas"] == (0, 1) and scale["byte"] == 1
    explorer.operand.value = "A"
    scale = explorer.last_drawn["scale"]
    # A chunk kc=3 at 464 + 12 = 476, row 200 is in CTA 1
    assert scale["columns"] == [478] and scale["ctas"] == (1,)
    assert "column 478" in scale["title"]
    # a smaller BLOCK_K shrinks the k range; the pick is clamped and still drawn
    explorer.block_k.value = 64
    assert explorer.k.max == 3 and explorer.last_drawn["scale"]["k"] == explorer.k.value <= 3


def _best_match(composite: np.ndarray, part: np.ndarray) -> float:
    """Mean absolute difference (0-255) of ``part`` against the band of ``composite`` where it fits best
    (the band found by comparing the rows' mean brightness, then compared pixel by pixel)."""
    h = part.shape[0]
    rows_c, rows_p = composite.mean(axis=(1, 2)), part.mean(axis=(1, 2))
    y = min(range(composite.shape[0] - h + 1), key=lambda y: float(np.abs(rows_c[y:y + h] - rows_p).mean()))
    return float(np.abs(composite[y:y + h].astype(np.int16) - part.astype(np.int16)).mean())


def test_displays_as_the_widget_with_a_static_picture_beside_it():
    explorer = TmemExplorer()
    data, metadata = explorer._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == explorer.widget.model_id
    assert data["text/plain"].startswith(STATIC_NOTE)
    assert "Run this cell" in STATIC_NOTE and "interactive" in STATIC_NOTE
    assert "BLOCK_K 256 (seed default)" in data["text/plain"]
    picture = PILImage.open(io.BytesIO(base64.b64decode(data["image/png"])))
    assert picture.format == "PNG" and metadata["image/png"]["width"] * PIXEL_SCALE == picture.width
    composite = np.asarray(picture.convert("RGB"))
    views = {name: np.asarray(PILImage.open(io.BytesIO(getattr(explorer, name).value)).convert("RGB"))
             for name in ("plan_image", "step_image", "scale_image")}
    for name, view in views.items():  # each view is in the picture (up to the palette's rounding)
        assert _best_match(composite, view) < 2.0, name
    other = TmemExplorer(overlap=False)  # ... and a different view is not
    assert _best_match(composite, np.asarray(PILImage.open(io.BytesIO(other.plan_image.value)).convert("RGB"))) > 4


def test_the_static_picture_of_an_invalid_configuration_says_why():
    explorer = TmemExplorer(a_format="mxfp4", b_format="mxfp4", block_k=2816)
    data, _ = explorer._repr_mimebundle_()
    assert "BLOCK_K 2816" in data["text/plain"]
    picture = PILImage.open(io.BytesIO(base64.b64decode(data["image/png"])))
    assert picture.height < 400  # the caption and the message, no stale plots


def test_every_refused_menu_combination_is_explained_in_plain_words():
    """All menu combinations the plan refuses get a plain-words reason whose numbers follow the seed's formulas:
    A takes BLOCK_K / VEC columns per CTA, B twice that (256 N rows = 2 chunks of 128), the overlap must stay
    under BLOCK_N = 256, one accumulator plus the scales must fit in 512 columns."""
    from gluon_overlap.explorer import BLOCK_K_CHOICES, EPILOGUE_BLOCK_N_CHOICES, FORMAT_NAMES, explain_plan_error

    vec = {"mxfp8": 32, "mxfp4": 32, "nvfp4": 16}
    refused = 0
    for a, b, bk, epi, overlap in itertools.product(FORMAT_NAMES, FORMAT_NAMES, BLOCK_K_CHOICES,
                                                    EPILOGUE_BLOCK_N_CHOICES, (True, False)):
        try:
            tmem.make_plan(a, b, bk, epi, overlap)
            continue
        except ValueError as exc:
            said = explain_plan_error(a, b, bk, epi, overlap, str(exc))
        refused += 1
        # plain words: a sentence, no "name=value" of the plan's own message
        assert said.endswith(".") and re.search(r"\w=\S", said) is None, said
        if vec[a] != vec[b]:
            assert said.startswith(f"{a} has one scale per {vec[a]} elements but {b} one per {vec[b]}"), said
        elif bk % (4 * vec[a]):
            assert said.startswith(f"BLOCK_K {bk} is not a multiple of {4 * vec[a]}"), said
        elif 256 % epi:
            assert said.startswith(f"EPILOGUE_BLOCK_N {epi} does not divide the 256"), said
        else:
            a_cols, b_cols = bk // vec[a], 2 * bk // vec[a]
            if overlap:
                assert said.startswith(f"{a_cols + b_cols} columns of overlap, but at most 255 fit "
                                       f"(A {a_cols} + B {b_cols}"), said
            else:
                assert said.startswith(f"{256 + a_cols + b_cols} columns needed, but TMEM has 512 per CTA"), said
            largest = int(said.rsplit("The largest BLOCK_K that fits is ", 1)[1].rstrip("."))
            assert 3 * largest // vec[a] < 256 if overlap else 256 + 3 * largest // vec[a] <= 512
            beyond = largest + 4 * vec[a]
            assert (3 * beyond // vec[a] >= 256) if overlap else (256 + 3 * beyond // vec[a] > 512)
    assert refused > 1000


def test_fast_png_decodes_to_the_same_pixels():
    from gluon_overlap.explorer import fast_png

    rng = np.random.default_rng(0)
    for shape in [(1, 1, 3), (7, 13, 3), (504, 2016, 3)]:
        rgb = rng.integers(0, 256, size=shape, dtype=np.uint8)
        png = fast_png(rgb)
        PILImage.open(io.BytesIO(png)).verify()  # every chunk's CRC
        decoded = PILImage.open(io.BytesIO(png))
        assert decoded.mode == "RGB" and np.array_equal(np.asarray(decoded), rgb)
    with pytest.raises(ValueError, match=r"expected \(height, width, 3\) uint8"):
        fast_png(np.zeros((2, 2, 4), dtype=np.uint8))


def test_a_revisited_step_or_scale_is_shown_again_without_drawing():
    explorer = TmemExplorer()
    seen = {}
    for i in (3, 4, 5):
        explorer.step.value = i
        seen[i] = (explorer.step_image.value, explorer.last_drawn["step"])
    hits = explorer._step_pngs.hits
    explorer.step.value = 4
    assert explorer._step_pngs.hits == hits + 1
    assert (explorer.step_image.value, explorer.last_drawn["step"]) == seen[4]
    fresh = TmemExplorer()  # the same step drawn from scratch looks the same
    fresh.step.value = 4
    assert fresh.step_image.value == seen[4][0] and fresh.last_drawn["step"] == seen[4][1]
    # another EPILOGUE_BLOCK_N has other steps: not taken from the cache
    explorer.epilogue_block_n.value = 64
    explorer.step.value = 4
    assert explorer.last_drawn["step"] != seen[4][1]
    explorer.row.value, explorer.row.value = 200, 0
    hits = explorer._scale_pngs.hits
    explorer.row.value = 200
    assert explorer._scale_pngs.hits == hits + 1 and explorer.last_drawn["scale"]["row"] == 200
