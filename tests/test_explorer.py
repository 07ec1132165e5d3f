"""Level-1 tests of the explorer: drive the ipywidgets controls, read back what was drawn."""

from __future__ import annotations

import pytest

from gluon_overlap import tmem
from gluon_overlap.explorer import ERROR_CLASS, TmemExplorer
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
    _set(explorer, a_format="nvfp4", b_format="nvfp4", block_k=None, epilogue_block_n=32, overlap=True)
    assert explorer.error is None
    assert explorer.last_drawn["windows"] == {"left": (0, 256), "right": (208, 256), "a_scale": (464, 16),
                                              "b_scale": (480, 32)}
    assert explorer.last_drawn["overlap"] == (208, 48)
    assert explorer.plan_image.value[:8] == b"\x89PNG\r\n\x1a\n"


CONFIGS = [
    dict(a_format="mxfp8", b_format="mxfp8", block_k=None, epilogue_block_n=32, overlap=True),
    dict(a_format="mxfp8", b_format="mxfp4", block_k=None, epilogue_block_n=32, overlap=False),
    dict(a_format="mxfp4", b_format="mxfp4", block_k=1024, epilogue_block_n=64, overlap=True),
    dict(a_format="nvfp4", b_format="nvfp4", block_k=1344, epilogue_block_n=8, overlap=True),
    dict(a_format="nvfp4", b_format="nvfp4", block_k=None, epilogue_block_n=256, overlap=False),
    dict(a_format="mxfp8", b_format="mxfp8", block_k=None, epilogue_block_n=32, overlap=True),  # again: cached
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


@pytest.mark.parametrize(("config", "needle"), [
    (dict(a_format="nvfp4", b_format="mxfp8"), "different scale-block sizes"),
    (dict(a_format="mxfp8", b_format="mxfp8", block_k=64), "must be a multiple of VEC_SIZE x 4 = 128"),
    (dict(a_format="mxfp4", b_format="mxfp4", block_k=2816), "9 column(s) too many"),
    (dict(a_format="nvfp4", b_format="nvfp4", block_k=None, epilogue_block_n=48), "256 % 48 = 16"),
])
def test_invalid_configuration_shows_the_message_not_a_traceback(config, needle):
    explorer = TmemExplorer()
    _set(explorer, **config)
    assert explorer.error is not None and needle in explorer.error
    assert explorer.last_drawn == {"error": explorer.error}
    box = explorer.error_box
    assert box.layout.display is None and ERROR_CLASS in box.value
    assert needle.replace("'", "&#x27;") in box.value and "Traceback" not in box.value
    assert explorer.plan_image.layout.display == "none" and explorer.step_box.layout.display == "none"
    # moving the step or the scale pick while in error draws nothing and raises nothing
    redraws = explorer.redraws
    explorer.row.value = 99
    assert explorer.redraws == redraws
    # a valid configuration brings the drawing back
    _set(explorer, a_format="nvfp4", b_format="nvfp4", block_k=None, epilogue_block_n=32)
    assert explorer.error is None and box.layout.display == "none"
    assert explorer.plan_image.layout.display is None
    assert explorer.last_drawn["windows"]["right"] == (208, 256)


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


def test_displays_as_a_widget():
    explorer = TmemExplorer()
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle

