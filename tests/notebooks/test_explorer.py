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
from gluon_overlap.explorer.prefetch import Pictures
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
    dict(a_format="mxfp4", b_format="mxfp4", block_k=128, epilogue_block_n=64, overlap=True),
    dict(a_format="nvfp4", b_format="nvfp4", block_k=64, epilogue_block_n=8, overlap=True),
    dict(a_format="nvfp4", b_format="nvfp4", block_k=128, epilogue_block_n=128, overlap=False),
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


def _plan_cli(config, parser=None) -> tuple[int, str]:
    """`gluon-overlap plan` run in-process (its ``main``, so its own messages): (status, stdout or message).

    ``parser``: one :func:`cli.build_parser` to reuse (argparse parsers hold no state between parses), for
    a loop over many configurations; by default ``main`` builds its own."""
    import contextlib
    from unittest import mock

    from gluon_overlap import cli

    argv = ["plan", "--a-format", config["a_format"], "--b-format", config["b_format"], "--block-k",
            str(config["block_k"]), "--epilogue-block-n", str(config["epilogue_block_n"]),
            "--overlap", "on" if config["overlap"] else "off", "--json"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if parser is not None:
            stack.enter_context(mock.patch.object(cli, "build_parser", lambda: parser))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        status = cli.main(argv)
    if status:
        return status, err.getvalue().strip().removeprefix("gluon-overlap plan: error: ")
    return status, out.getvalue()


def _one_change_at_a_time(*axes):
    """Every combination of ``axes`` (as itertools.product), ordered so that neighbours differ in one place."""
    if not axes:
        yield ()
        return
    rest = list(_one_change_at_a_time(*axes[1:]))
    for i, value in enumerate(axes[0]):
        for tail in (rest if i % 2 == 0 else reversed(rest)):
            yield (value, *tail)


def test_one_change_at_a_time_is_every_combination_once():
    order = list(_one_change_at_a_time("abc", (1, 2), "xyz"))
    assert sorted(order) == sorted(itertools.product("abc", (1, 2), "xyz"))
    assert all(sum(u != v for u, v in zip(p, q, strict=True)) == 1 for p, q in zip(order[:-1], order[1:], strict=True))


def test_the_explorer_draws_exactly_what_plan_accepts():
    """Every configuration of the menus: drawn <=> `gluon-overlap plan` exits 0 (and draws plan's windows);
    refused <=> plan exits 2, the red box shows plan's own message and the line under the menus names every
    value that makes it so (the menus' labels are the plain values)."""
    import json

    from gluon_overlap import cli
    from gluon_overlap.explorer import BLOCK_K_CHOICES, EPILOGUE_BLOCK_N_CHOICES, FORMAT_NAMES

    explorer = TmemExplorer()
    parser = cli.build_parser()  # one for the 1,008 runs of plan (building it is most of a run's time)
    drawn = refused = 0
    # one control changed at a time, as a learner does (and each configuration drawn once, not again on the
    # way through intermediate ones)
    for a, b, bk, epi, overlap in _one_change_at_a_time(FORMAT_NAMES, FORMAT_NAMES, BLOCK_K_CHOICES,
                                                        EPILOGUE_BLOCK_N_CHOICES, (True, False)):
        config = dict(a_format=a, b_format=b, block_k=bk, epilogue_block_n=epi, overlap=overlap)
        _set(explorer, **config)
        assert explorer.config() == config
        status, said = _plan_cli(config, parser)
        labels = {name: getattr(explorer, name).label for name in ("a_format", "b_format", "block_k",
                                                                    "epilogue_block_n")}
        assert labels == {name: str(value) for name, value in config.items() if name != "overlap"}
        refused_now = {name: value in explorer.refused(name) for name, value in config.items() if name != "overlap"}
        if status == 0:
            drawn += 1
            assert explorer.error is None, (config, explorer.error)
            data = json.loads(said)
            assert {name: tuple(explorer.last_drawn["windows"][name]) for name in ("left", "a_scale", "b_scale")} \
                == {name: (data[f"{key}_columns"][0], data[f"{key}_columns"][1] - data[f"{key}_columns"][0])
                    for name, key in (("left", "left_accum"), ("a_scale", "a_scale"), ("b_scale", "b_scale"))}
            assert not any(refused_now.values()), refused_now
        else:
            refused += 1
            assert status == 2 and explorer.error is not None and explorer.plan_error == said, config
            assert explorer.error.startswith(said) and html.escape(said) in explorer.error_box.value
            assert all(refused_now.values()), (config, refused_now)
            for name in labels:
                assert str(config[name]) in explorer.menu_note.value
            assert explorer.plan_image.layout.display == "none"
    from gluon_overlap import pingpong

    assert drawn == len(pingpong.recorded_keys()) == 68 and refused == 3 * 3 * 8 * 7 * 2 - drawn


def test_an_unsupported_pair_is_refused_in_the_words_of_the_cli():
    explorer = TmemExplorer(a_format="mxfp4", b_format="mxfp8")
    status, said = _plan_cli(explorer.config())
    assert status == 2 and explorer.plan_error == said
    assert "format pair mxfp4 x mxfp8 is not one the kernel supports" in explorer.error
    assert "B format mxfp4" in explorer.error  # what plan accepts instead
    assert dict(explorer.b_format.options)["mxfp8"] == "mxfp8"  # a plain label: a script picks it by name
    assert "mxfp8" in explorer.refused("b_format") and "B format mxfp8" in explorer.menu_note.value


def test_the_block_k_menu_is_plain_and_the_note_says_what_plan_refuses():
    explorer = TmemExplorer()  # nvfp4 x nvfp4
    assert [label for label, _ in explorer.block_k.options] == [str(v) for _, v in explorer.block_k.options]
    assert all("\xa0" not in label and " " not in label for label, _ in explorer.block_k.options)
    assert "(seed default 256)" in explorer._block_k_label.value
    assert 192 in explorer.refused("block_k")  # not a power of two: no TMA box
    assert all(k in explorer.refused("block_k") for k in (320, 384, 448, 512))  # shared memory
    assert not any(k in explorer.refused("block_k") for k in (64, 128, 256))
    assert "BLOCK_K 192, 320, 384, 448, 512" in explorer.menu_note.value
    explorer.block_k.value = 512
    assert "405,644 bytes of shared memory" in explorer.error and "plan accepts BLOCK_K 64, 128, 256" in explorer.error


def test_a_format_change_that_changes_block_k_says_so():
    """A = mxfp8 with B = nvfp4: BLOCK_K follows the seed's default (256 -> 128) and the note says it, next to
    the red box of the refused pair."""
    explorer = TmemExplorer()
    assert explorer.changed_also == [] and explorer.change_note.layout.display == "none"
    explorer.a_format.value = "mxfp8"
    assert explorer.block_k.value == 128 and explorer.error is not None
    assert explorer.changed_also == ["BLOCK_K changed from 256 to 128, the seed's default for mxfp8 x nvfp4 "
                                     "(pick a BLOCK_K to keep it)"]
    assert explorer.change_note.layout.display is None and "BLOCK_K changed from 256 to 128" in \
        explorer.change_note.value
    explorer.epilogue_block_n.value = 16  # a change that changes nothing else: no note
    assert explorer.changed_also == [] and explorer.change_note.layout.display == "none"
    explorer.block_k.value = 64  # picked by hand: kept when the formats change, and nothing to say
    explorer.a_format.value = "nvfp4"
    assert explorer.block_k.value == 64 and explorer.changed_also == []


@pytest.mark.parametrize(("config", "plan_needle"), [
    (dict(a_format="nvfp4", b_format="mxfp8"), "one MMA needs one scale-block size"),
    (dict(a_format="mxfp8", b_format="mxfp8", block_k=64), "must be a multiple of VEC_SIZE x 4 = 128"),
    (dict(a_format="nvfp4", b_format="nvfp4", block_k=256, epilogue_block_n=48), "256 % 48 = 16"),
    (dict(a_format="mxfp4", b_format="mxfp4", block_k=512), "needs 374,924 bytes of shared memory"),
])
def test_invalid_configuration_says_what_plan_says(config, plan_needle):
    explorer = TmemExplorer()
    _set(explorer, **config)
    full = dict(dict(a_format="nvfp4", b_format="nvfp4", block_k=256, epilogue_block_n=32, overlap=True), **config)
    assert explorer.plan_error == _plan_cli(full)[1] and plan_needle in explorer.plan_error
    assert explorer.last_drawn == {"error": explorer.error, "plan_error": explorer.plan_error}
    box = explorer.error_box
    assert box.layout.display is None and ERROR_CLASS in box.value and "Traceback" not in box.value
    assert html.escape(explorer.plan_command()) in box.value
    assert explorer.plan_image.layout.display == "none" and explorer.step_box.layout.display == "none"
    redraws = explorer.redraws  # moving the scale pick while in error draws nothing and raises nothing
    explorer.row.value = 99
    assert explorer.redraws == redraws
    _set(explorer, a_format="nvfp4", b_format="nvfp4", block_k=256, epilogue_block_n=32, overlap=True)
    assert explorer.error is None and explorer.plan_error is None and box.layout.display == "none"
    assert explorer.last_drawn["windows"]["right"] == (208, 256)


@pytest.mark.parametrize(("args", "needle"), [
    (("fp8", "nvfp4", 256, 32, True), "a_format='fp8' is not a known format"),
    (("nvfp4", "nvfp4", 256, 0, True), "epilogue_block_n=0 must be positive"),
    (("nvfp4", "nvfp4", -64, 32, True), "block_k=-64 must be positive"),
    (("nvfp4", "nvfp4", 256, 32, "yes"), "overlap='yes' must be True or False"),
])
def test_the_explainer_refuses_what_is_not_a_configuration(args, needle):
    from gluon_overlap.explorer import explain_plan_error

    with pytest.raises(ValueError, match=re.escape(needle)):
        explain_plan_error(*args)
    assert explain_plan_error("nvfp4", "nvfp4", 256, 32, True) == ""


@pytest.mark.parametrize(("kwargs", "needle"), [
    (dict(block_k=100), "block_k=100 is not offered by the explorer: choose None (the seed default) or one of "
                        "[64, 128, 192"),
    (dict(block_k=True), "block_k=True is not offered"),
    (dict(epilogue_block_n=12), "epilogue_block_n=12 is not offered by the explorer: choose one of [8, 16, 32"),
    (dict(a_format="fp8"), "a_format='fp8' is not a known format"),
    (dict(b_format="NVFP4"), "b_format='NVFP4' is not a known format"),
    (dict(overlap="yes"), "overlap='yes' must be True or False"),
    (dict(num_tiles=0), "num_tiles=0 must be an integer in [1, 8]"),
    (dict(pictures={}), "pictures={} must be None (the process's shared pictures) or a"),
])
def test_bad_arguments_raise_one_clear_value_error(kwargs, needle):
    with pytest.raises(ValueError) as raised:
        TmemExplorer(**kwargs)
    assert type(raised.value) is ValueError and needle in str(raised.value)


def test_block_k_menu_shows_the_value_it_uses():
    explorer = TmemExplorer()  # nvfp4 x nvfp4: the seed uses BLOCK_K 256
    assert explorer.block_k.value == 256 == explorer.plan.block_k
    assert explorer.block_k.label == "256" and "(seed default 256)" in explorer._block_k_label.value
    assert explorer.block_k.index is not None  # the menu shows a selection, not a blank
    # following the default: an fp8 operand makes the seed's BLOCK_K 128 (tmem.default_block_k)
    _set(explorer, a_format="mxfp8", b_format="mxfp8")
    assert explorer.block_k.value == 128 == explorer.plan.block_k == tmem.default_block_k("mxfp8", "mxfp8")
    assert explorer.block_k.label == "128" and "(seed default 128)" in explorer._block_k_label.value
    # a value picked by hand stays when the formats change
    _set(explorer, a_format="nvfp4", b_format="nvfp4")
    explorer.block_k.value = 128
    _set(explorer, a_format="mxfp4", b_format="mxfp4")
    assert explorer.block_k.value == 128 == explorer.plan.block_k and explorer.block_k.label == "128"
    # picking the default again follows it again
    explorer.block_k.value = 256
    assert explorer.block_k.label == "256" and "(seed default 256)" in explorer._block_k_label.value
    _set(explorer, a_format="mxfp8", b_format="mxfp8")
    assert explorer.block_k.value == 128


def test_an_explicit_block_k_is_kept():
    explorer = TmemExplorer(a_format="mxfp4", b_format="mxfp4", block_k=128)
    assert explorer.block_k.value == 128 == explorer.plan.block_k and explorer.block_k.label == "128"
    _set(explorer, a_format="nvfp4", b_format="nvfp4")
    assert explorer.block_k.value == 128


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
    assert any(label.startswith("the picked scale: 4 lanes, one per warp") for label in
               explorer.last_drawn["scale"]["legend"])
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
        assert image.layout.max_width == "calc(100% - 4px)" and image.layout.height == "auto"  # scaled, never cut
        png = PILImage.open(io.BytesIO(image.value))
        assert png.width == PIXEL_SCALE * shown and PIXEL_SCALE >= 2
        assert png.width == round(explorer.figures()["plan"].get_figwidth() * CSS_DPI * PIXEL_SCALE)


def _step_where(explorer, predicate):
    plan = explorer.plan
    steps = ptmem.ping_pong_steps(ptmem.simple_schedule(plan, explorer.num_tiles))
    return next(s.index for s in steps if predicate(s))


def test_step_control_walks_the_ping_pong():
    explorer = TmemExplorer(step=0)
    plan = explorer.plan
    assert explorer.last_drawn["step"]["mma_window"] is None  # step 0: the MMA waits for its first operands
    explorer.step.value = _step_where(explorer, lambda s: s.mma_tile == 0)
    assert explorer.last_drawn["step"]["mma_window"] == (0, 256)  # tile 0 writes the left window
    image0 = explorer.step_image.value
    # tile 1 starts in the right window once tile 0 released the overlap barrier
    i1 = _step_where(explorer, lambda s: s.mma_tile == 1)
    explorer.step.value = i1
    drawn = explorer.last_drawn["step"]
    assert drawn["index"] == i1
    assert drawn["mma_window"] == (plan.right.offset, plan.right.cols) == (208, 256)
    assert drawn["mma_status"].startswith("MMA writes tile 1 into the right window")
    assert explorer.step_image.value != image0
    # just before: tile 0's epilogue released the overlap and tile 1's wait(overlap, phase 0) returned
    explorer.step.value = i1 - 1
    drawn = explorer.last_drawn["step"]
    assert any("wait(overlap[0], phase 0) returns" in e for e in drawn["events"])
    assert any("epilogue of tile 0 arrives on overlap" in e for e in drawn["events"])
    assert any("mbarrier.arrive(p.overlap_bar" in line and "epilogue_partition" in line for line in drawn["lines"])
    assert drawn["draining"] is not None
    # before that the MMA is idle, waiting on the overlap barrier with parity 0
    explorer.step.value = i1 - 2
    assert explorer.last_drawn["step"]["mma_status"] == "MMA idle: tile 1 waits on overlap[0] phase 0"
    # tile 2 reuses the left window after acc_empty[0] (the full drain of tile 0)
    i2 = _step_where(explorer, lambda s: s.mma_tile == 2)
    explorer.step.value = i2
    drawn = explorer.last_drawn["step"]
    assert drawn["mma_window"] == (0, 256)
    assert drawn["title"].startswith(f"step {i2}:") and drawn["title"].endswith("time units")
    before = [e for i in range(i2) for e in (explorer._steps[i].events)]
    assert any("MMA of tile 2: wait(acc_empty[0], phase 0) returns" in e for e in before)
    assert any("epilogue of tile 0 arrives on acc_empty[0]" in e for e in before)


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
    assert explorer.error is None and explorer.k.max == 3 and explorer.last_drawn["scale"]["k"] == explorer.k.value <= 3


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
        assert _best_match(composite, view) < 3.0, name
    other = TmemExplorer(overlap=False)  # ... and a different view is not
    assert _best_match(composite, np.asarray(PILImage.open(io.BytesIO(other.plan_image.value)).convert("RGB"))) > 4


def test_the_static_picture_of_an_invalid_configuration_says_why():
    explorer = TmemExplorer(a_format="mxfp4", b_format="mxfp4", block_k=512)
    data, _ = explorer._repr_mimebundle_()
    assert "BLOCK_K 512" in data["text/plain"]
    picture = PILImage.open(io.BytesIO(base64.b64decode(data["image/png"])))
    assert picture.height < 400  # the caption and the message, no stale plots


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


def test_an_explorer_made_again_shows_what_an_earlier_one_drew_without_drawing():
    """A notebook cell run again makes a new explorer: the process's pictures are shared, its views are not drawn
    again (a key names all a picture shows, so they are the same bytes)."""
    first = TmemExplorer(a_format="mxfp8", b_format="mxfp4", epilogue_block_n=16)
    again = TmemExplorer(a_format="mxfp8", b_format="mxfp4", epilogue_block_n=16)
    assert again._renderer.renders == 0 < first._renderer.renders or first._renderer.renders == 0
    assert (again.plan_image.value, again.step_image.value, again.scale_image.value) == (
        first.plan_image.value, first.step_image.value, first.scale_image.value)
    assert again.last_drawn == first.last_drawn
    own = TmemExplorer(a_format="mxfp8", b_format="mxfp4", epilogue_block_n=16, pictures=Pictures())
    assert own._renderer.renders == 3 and own.plan_image.value == first.plan_image.value


def test_a_revisited_step_or_scale_is_shown_again_without_drawing():
    explorer = TmemExplorer()
    seen = {}
    for i in (3, 4, 5):
        explorer.step.value = i
        seen[i] = (explorer.step_image.value, explorer.last_drawn["step"])
    hits = explorer.pictures.hits
    explorer.step.value = 4
    assert explorer.pictures.hits == hits + 1
    assert (explorer.step_image.value, explorer.last_drawn["step"]) == seen[4]
    fresh = TmemExplorer(pictures=Pictures())  # the same step drawn from scratch looks the same
    fresh.step.value = 4
    assert fresh.step_image.value == seen[4][0] and fresh.last_drawn["step"] == seen[4][1]
    # another EPILOGUE_BLOCK_N has other steps: not taken from the cache
    explorer.epilogue_block_n.value = 64
    explorer.step.value = 4
    assert explorer.last_drawn["step"] != seen[4][1]
    explorer.row.value, explorer.row.value = 200, 0
    hits = explorer.pictures.hits
    explorer.row.value = 200
    assert explorer.pictures.hits == hits + 1 and explorer.last_drawn["scale"]["row"] == 200
