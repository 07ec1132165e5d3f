"""Tests of gluon_overlap.plots.tmem: what is drawn equals the plan; the scale map follows the seed's swizzle."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from gluon_overlap import tmem
from gluon_overlap.plots import tmem as ptmem

CONFIGS = [
    dict(a_format="nvfp4", b_format="nvfp4"),
    dict(a_format="mxfp8", b_format="mxfp4"),
    dict(a_format="mxfp4", b_format="mxfp4", block_k=128, epilogue_block_n=64),
    dict(a_format="nvfp4", b_format="nvfp4", overlap=False),
    dict(a_format="mxfp8", b_format="mxfp8", block_k=128, epilogue_block_n=8),
    dict(a_format="nvfp4", b_format="nvfp4", block_k=64, epilogue_block_n=128),
]


def _gid_patches(ax, prefix):
    return {p.get_gid(): p for p in ax.patches if (p.get_gid() or "").startswith(prefix)}


@pytest.mark.parametrize("config", CONFIGS)
def test_ruler_draws_the_plan_windows(config):
    plan = tmem.make_plan(**config)
    fig = Figure()
    ax = fig.add_subplot()
    ptmem.draw_ruler(ax, plan)
    drawn = {
        gid.split(":")[1]: (round(p.get_x()), round(p.get_width())) for gid, p in _gid_patches(ax, "window:").items()
    }
    expected = {name: (w.offset, w.cols) for name, w in plan.windows().items() if name != "right" or plan.overlap}
    assert drawn == expected
    overlap = _gid_patches(ax, "overlap")
    if plan.overlap:
        assert (round(overlap["overlap"].get_x()), round(overlap["overlap"].get_width())) == (
            256 - plan.overlap_cols,
            plan.overlap_cols,
        )
    else:
        assert not overlap


def _seed_swizzle_ids(mn: int, scale_k: int) -> np.ndarray:
    """The seed's swizzle_scales_packed_block applied to a matrix of unique ids, in numpy."""
    ids = np.arange(mn * scale_k).reshape(mn, scale_k)
    return ids.reshape(mn // 128, 4, 32, scale_k // 4, 4).transpose(0, 3, 2, 1, 4)


@pytest.mark.parametrize("config", CONFIGS[:3])
def test_scale_cell_matches_the_seed_swizzle_and_tcgen05_cp(config):
    """Reference: chunk [32, 4, 4] -> lane l gets 16 bytes [group][k]; column c of the chunk = bytes 4c..4c+3."""
    plan = tmem.make_plan(**config)
    scale_k = plan.block_k // plan.vec_size
    packed = _seed_swizzle_ids(256, scale_k)
    where: dict[int, tuple[int, int, int, int, int]] = {}  # id -> (rep_mn, rep_k, lane, column-in-chunk, byte)
    for rm in range(packed.shape[0]):
        for rk in range(packed.shape[1]):
            lane_bytes = packed[rm, rk].reshape(32, 16)
            for lane in range(32):
                for b in range(16):
                    where[int(lane_bytes[lane, b])] = (rm, rk, lane, b // 4, b % 4)
    rng = np.random.default_rng(0)
    for row, k in [(0, 0), (255, scale_k - 1)] + [tuple(x) for x in rng.integers(0, [256, scale_k], (40, 2))]:
        rm, rk, lane, col, byte = where[row * scale_k + k]
        a = ptmem.scale_cell(plan, "A", row, k)
        assert a.ctas == (rm,)  # A split by M: CTA r holds rows 128 r ...
        assert a.column == plan.a_scale_column(rk) + col
        assert a.lanes == (lane, lane + 32, lane + 64, lane + 96) and a.byte == byte
        b = ptmem.scale_cell(plan, "B", row, k)
        assert b.ctas == (0, 1)  # B duplicated
        assert b.column == plan.b_scale_column(rm, rk) + col
        assert plan.b_scale.offset <= b.column < plan.b_scale.end
        assert plan.a_scale.offset <= a.column < plan.a_scale.end


def test_scale_cell_rejects_out_of_range():
    plan = tmem.make_plan("nvfp4", "nvfp4")
    for args, needle in [(("C", 0, 0), "operand"), (("A", 256, 0), "row=256"), (("B", 0, 16), "k=16")]:
        with pytest.raises(ValueError, match=needle):
            ptmem.scale_cell(plan, *args)


def test_draw_scale_cell_marks_the_cell():
    plan = tmem.make_plan("nvfp4", "nvfp4")
    fig = Figure()
    ax = fig.add_subplot()
    cell = ptmem.draw_scale_cell(ax, plan, "B", 200, 13)
    marks = [p for p in ax.patches if p.get_gid() == "scale-cell"]
    assert {round(p.get_x()) for p in marks} == {cell.column} == {510}
    assert sorted(round(p.get_y()) for p in marks) == [8, 40, 72, 104]


@pytest.mark.parametrize("config", CONFIGS)
def test_recorded_schedule_respects_the_protocol(config):
    """The executor's recording of kernel.py against SEMANTICS.md section 6 and the plan's drain order."""
    plan = tmem.make_plan(**config)
    s = ptmem.simple_schedule(plan, 6)
    t = s.tiles
    for i in range(6):
        assert t[i].mma_columns == (plan.accumulator(i).offset, plan.accumulator(i).end)
        assert list(t[i].subtile_columns) == [
            (c.offset, c.end) for c in (plan.subtile_columns(i, sub) for sub in plan.drain_order(i))
        ]
        if plan.overlap:  # released right after the drain step that reads the last shared column
            assert t[i].release == t[i].subtile_ends[plan.early_release_subtile]
        assert t[i].mma_end <= t[i].drain_start
        if i:
            assert t[i].mma_start >= t[i - 1].mma_end and t[i].drain_start >= t[i - 1].drain_end
        if plan.overlap:
            if i >= 2:
                assert t[i].mma_start >= t[i - 2].drain_end  # acc_empty
            if i >= 1:
                assert t[i].mma_start >= t[i - 1].release  # overlap barrier
        elif i >= 1:
            assert t[i].mma_start >= t[i - 1].drain_end
        # no column the MMA of tile i writes still holds an undrained subtile of an earlier tile
        window = set(plan.accumulator(i).columns())
        for j in range(i):
            for p, sub in enumerate(plan.drain_order(j)):
                if t[j].subtile_ends[p] > t[i].mma_start + 1e-9:
                    assert not window & set(plan.subtile_columns(j, sub).columns())


def test_overlap_keeps_the_mma_busier_than_single_buffering():
    on = ptmem.simple_schedule(tmem.make_plan("nvfp4", "nvfp4"), 6)
    off = ptmem.simple_schedule(tmem.make_plan("nvfp4", "nvfp4", overlap=False), 6)
    # single buffered: the MMA of tile i starts only after tile i - 1 is fully drained (acc_empty)
    assert all(b.mma_start >= a.empty_at for a, b in zip(off.tiles, off.tiles[1:], strict=False))
    # overlapped: it waits only for the early release, long before the drain ends
    assert all(a.release < b.mma_start < a.empty_at for a, b in zip(on.tiles, on.tiles[1:], strict=False))
    assert on.mma_idle() < off.mma_idle() and on.mma_utilization() > off.mma_utilization()


def test_ping_pong_steps_walk_the_seed_protocol():
    plan = tmem.make_plan("nvfp4", "nvfp4")
    steps = ptmem.ping_pong_steps(ptmem.simple_schedule(plan, 4))
    assert [s.time for s in steps] == sorted(s.time for s in steps)
    starts = {s.mma_tile: s for s in steps if any(e.startswith("MMA starts") for e in s.events)}
    assert sorted(starts) == [0, 1, 2, 3]
    assert starts[1].mma_window == "right"
    text = [(e, line) for s in steps for e, line in zip(s.events, s.lines, strict=True)]
    release = next(i for i, (e, _) in enumerate(text) if e.startswith("epilogue of tile 0 arrives on overlap"))
    wait = next(i for i, (e, _) in enumerate(text) if e.startswith("MMA of tile 1: wait(overlap[0], phase 0)"))
    start = next(i for i, (e, _) in enumerate(text) if e.startswith("MMA starts tile 1 in the right window"))
    assert wait < start and steps_time(steps, text[release][0]) <= steps_time(steps, text[start][0])
    assert "mbarrier.arrive(p.overlap_bar" in text[release][1] and "mma_partition" in text[wait][1]
    assert any("MMA of tile 2: wait(acc_empty[0], phase 0)" in e for e, _ in text)
    assert any("tile 2 may reuse the left window" in e for e, _ in text)
    off = ptmem.ping_pong_steps(ptmem.simple_schedule(tmem.make_plan("nvfp4", "nvfp4", overlap=False), 4))
    said = " ".join(e for s in off for e in s.events)
    assert "window" not in said and "accumulator [0, 256)" in said  # one accumulator: no left/right


def steps_time(steps, event: str) -> float:
    return next(s.time for s in steps if event in s.events)


#: drain orders longer than this are checked at their ends (the first and last two drain steps of each
#: tile, and every step that drains nothing) in `make test`; every step in the slow test below
EVERY_STEP_UP_TO = 8


def _drain_positions(step) -> list[tuple[int, int]]:
    """(tile, drain position) of each "epilogue of tile T read drain step P: columns [lo, hi)" event."""
    return [(int(e.split()[3]), int(e.split()[7].rstrip(":"))) for e in step.events if " read drain step " in e]


def _at_the_ends(plan, step) -> bool:
    return all(pos < 2 or pos >= len(plan.drain_order(tile)) - 2 for tile, pos in _drain_positions(step))


@pytest.mark.parametrize("config", CONFIGS)
def test_ping_pong_boxes_mark_the_drained_and_the_next_subtile(config):
    """Dashed box = the subtile the step's "drained subtile" event names; solid box = the next one in the
    plan's drain order (what the epilogue reads from this step on)."""
    _check_ping_pong_boxes(config, every_step=False)


def test_ping_pong_boxes_at_every_step_of_the_finest_drain():
    """The same at every step of a drain order of 32 subtiles (142 steps, one figure each: slow)."""
    _check_ping_pong_boxes(CONFIGS[4], every_step=True)


def _check_ping_pong_boxes(config, every_step: bool) -> None:
    plan = tmem.make_plan(**config)
    schedule = ptmem.simple_schedule(plan, 4)
    checked = 0
    every_step = every_step or plan.num_subtiles <= EVERY_STEP_UP_TO
    for step in ptmem.ping_pong_steps(schedule):
        if not (every_step or _at_the_ends(plan, step)):
            continue
        fig = ptmem.plot_ping_pong(plan, step.index)
        ax = fig.axes[0]
        drained = [(round(p.get_x()), round(p.get_width())) for p in ax.patches if p.get_gid() == "drained"]
        named = [e for e in step.events if " read drain step " in e]
        spans = []
        for event in named:  # "epilogue of tile T read drain step P: columns [lo, hi)"
            tile, pos = int(event.split()[3]), int(event.split()[7].rstrip(":"))
            cols = plan.subtile_columns(tile, plan.drain_order(tile)[pos])
            assert event.endswith(f"[{cols.offset}, {cols.end})")
            spans.append((cols.offset, cols.cols))
        assert drained == spans
        nxt = _gid_patches(ax, "draining")
        if named and step.epilogue_tile is not None:
            tile, pos = int(named[0].split()[3]), int(named[0].split()[7].rstrip(":"))
            order = plan.drain_order(tile)
            sub = order[pos]
            if tile == step.epilogue_tile and order.index(sub) + 1 < len(order):
                cols = plan.subtile_columns(tile, order[order.index(sub) + 1])
                assert (round(nxt["draining"].get_x()), round(nxt["draining"].get_width())) == (cols.offset, cols.cols)
                checked += 1
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        assert any(label.startswith("next to drain") for label in labels)
        assert any(label.startswith("just drained") for label in labels)
    assert checked > 0


@pytest.mark.parametrize("overlap", [True, False])
def test_figures_render(overlap):
    plan = tmem.make_plan("mxfp4", "mxfp4", overlap=overlap)
    for fig in (
        ptmem.plot_plan(plan),
        ptmem.plot_timeline(ptmem.simple_schedule(plan)),
        ptmem.plot_ping_pong(plan, 5),
        ptmem.plot_scale_cell(plan, "A", 130, 3),
    ):
        fig.canvas.draw()
        assert fig.canvas.get_width_height()[0] > 0
    with pytest.raises(ValueError, match="step_index"):
        ptmem.plot_ping_pong(plan, 10_000)


@pytest.mark.parametrize("config", CONFIGS)
def test_scale_background_tick_artists_label_the_scale_columns(config):
    plan = tmem.make_plan(**config)
    ax_ticks, ax_artists = Figure().subplots(2, 1)
    ptmem.draw_scale_background(ax_ticks, plan)
    ptmem.draw_scale_background(ax_artists, plan, tick_artists=True)
    labels = [(t.get_text(), t.get_position()[0]) for t in ax_artists.texts if t.get_gid() == "xtick-label"]
    lo, hi = plan.a_scale.offset, plan.b_scale.end
    assert labels[0] == (str(lo), lo + 0.5)  # each label sits at the centre of the column it names
    assert all(text == str(int(x - 0.5)) and lo <= x - 0.5 < hi for text, x in labels)
    assert [text for text, _ in labels] == [t.get_text() for t in ax_ticks.get_xticklabels()]
    assert len(ax_artists.get_xticks()) == 0
    (marks,) = [line for line in ax_artists.lines if line.get_gid() == "xticks"]
    assert list(marks.get_xdata()) == [x for _, x in labels]
    windows = {p.get_gid(): (p.get_x(), p.get_width()) for p in ax_artists.patches}
    assert windows == {
        "scale-window:a_scale": (plan.a_scale.offset, plan.a_scale.cols),
        "scale-window:b_scale": (plan.b_scale.offset, plan.b_scale.cols),
    }


def test_the_drain_label_stays_left_of_the_legend():
    """The right accumulator ends near 512: its "drain low -> high" label goes before the arrow's tail."""
    plan = tmem.make_plan("nvfp4", "nvfp4")
    fig = Figure(figsize=(10.5, 3))
    ax = fig.add_subplot()
    ptmem.draw_ruler(ax, plan)
    fig.canvas.draw()
    axes_right = ax.get_window_extent().x1
    for text in ax.texts:
        if (text.get_gid() or "").startswith("drain-label:"):
            assert text.get_window_extent().x1 <= axes_right, text.get_text()
