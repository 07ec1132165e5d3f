"""The step kernels of notebooks 03-04: compiled for sm_100a, their TMEM offsets and byte counts
against the plan and the seed's numbers, their source diff, and their runs on the CPU executor
against the float64 reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from gluon_overlap.compiler import compile as gc
from gluon_overlap.steps import host, overlap, single_buffered, source
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, make_plan

# The seed's evaluated plan (SEMANTICS.md section 4), overlap on: right window, A and B scale slots.
SEED_ON = {
    ("mxfp8", "mxfp8"): (244, 500, 504),
    ("mxfp8", "mxfp4"): (244, 500, 504),
    ("mxfp4", "mxfp4"): (232, 488, 496),
    ("nvfp4", "nvfp4"): (208, 464, 480),
}
# Overlap off: the scales right after the one accumulator (A at 256).
SEED_OFF_B = {("mxfp8", "mxfp8"): 260, ("mxfp8", "mxfp4"): 260, ("mxfp4", "mxfp4"): 264, ("nvfp4", "nvfp4"): 272}
# TMA bytes per CTA and K step, from the shapes: 128 rows of A and B (K bytes for fp8, K/2 for fp4), the
# CTA's A-scale chunks (BLOCK_K / (4 vec) x 512 bytes) and the whole multicast B-scale tile (twice that).
EXPECT_BYTES = {
    ("mxfp8", "mxfp8"): 128 * 128 * 2 + 512 + 1024,
    ("mxfp8", "mxfp4"): 128 * 128 + 128 * 64 + 512 + 1024,
    ("mxfp4", "mxfp4"): 128 * 128 * 2 + 1024 + 2048,
    ("nvfp4", "nvfp4"): 128 * 128 * 2 + 2048 + 4096,
}
PAIR_IDS = [f"{a}-{b}" for a, b in SEED_FORMAT_PAIRS]


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=PAIR_IDS)
def test_single_buffered_compiles_with_the_plans_columns(pair):
    a, b = pair
    compiled = host.compile_step(single_buffered.single_buffered_kernel, a, b, overlap=False)
    assert (compiled.tmem_cols, compiled.num_ctas, compiled.num_warps) == (512, 2, 4)
    assert compiled.mma_kind == gc.expected_mma_kind(a, b)
    # one accumulator at 0, A scales at 256, B scales after them: the seed's overlap-off plan
    assert host.tmem_pool_offsets(compiled.ttgir) == [0, 256, SEED_OFF_B[pair]]
    assert host.expect_tx_bytes(compiled.ptx) == [EXPECT_BYTES[pair]]
    counts = compiled.ptx_counts
    assert counts["tcgen05.alloc"] == 1 and counts["mbarrier.init"] == 2  # load_bar, mma_bar
    assert counts["mbarrier.arrive"] == 0  # only expect and the MMA commit arrive


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=PAIR_IDS)
def test_overlap_kernel_compiles_with_both_windows(pair):
    a, b = pair
    on = host.compile_step(overlap.overlap_kernel, a, b, overlap=True)
    right, a_at, b_at = SEED_ON[pair]
    assert host.tmem_pool_offsets(on.ttgir) == [0, right, a_at, b_at]
    off = host.compile_step(overlap.overlap_kernel, a, b, overlap=False)
    assert host.tmem_pool_offsets(off.ttgir) == [0, 256, SEED_OFF_B[pair]]
    # the overlap barrier: one more init and the epilogue's one arrive
    assert on.ptx_counts["mbarrier.init"] == 3 and on.ptx_counts["mbarrier.arrive"] == 1
    assert host.expect_tx_bytes(on.ptx) == [EXPECT_BYTES[pair]]


def test_pair_barriers_are_initialised_with_twice_the_count():
    """The overlap kernel inits load_bar (pair), mma_bar (per CTA) and overlap (pair), all with count 1
    in the source: the PTX inits the two pair barriers with 2 (both CTAs arrive on the lead's copy)."""
    import re

    ptx = host.compile_step(overlap.overlap_kernel, "nvfp4", "nvfp4", overlap=True).ptx
    inits = [int(x) for x in re.findall(r"mbarrier\.init\.[\w:.]+\s+\[[^\]]+\],\s*(\d+);", gc.strip_ptx_comments(ptx))]
    assert sorted(inits) == [1, 2, 2]


def test_cross_compile_refuses_what_it_cannot_compile():
    args = host.meta_args("nvfp4", "nvfp4")
    with pytest.raises(ValueError, match="takes 9 arguments"):
        gc.cross_compile(single_buffered.single_buffered_kernel, args[:-1])
    with pytest.raises(ValueError, match="must be a @gluon.jit function"):
        gc.cross_compile(print, args)
    with pytest.raises(ValueError, match=r"argument M=1\.5"):
        gc.cross_compile(single_buffered.single_buffered_kernel, (*args[:5], 1.5, *args[6:]))
    with pytest.raises(ValueError, match="num_warps=3"):
        gc.cross_compile(single_buffered.single_buffered_kernel, args, num_warps=3)
    with pytest.raises(ValueError, match="size=100"):
        gc.meta_operands("nvfp4", "nvfp4", 100)


def test_host_refuses_bad_sizes():
    a, b, a_s, b_s, c = gc.meta_operands("nvfp4", "nvfp4", 256)
    plan = make_plan("nvfp4", "nvfp4")
    with pytest.raises(ValueError, match="k=192 must be a multiple of 128"):
        host.step_args(a, b, a_s, b_s, c, plan, 256, 256, 192)
    with pytest.raises(ValueError, match="m=0"):
        host.num_tiles(0, 256, plan)
    assert host.num_tiles(300, 264, plan) == 4


def test_diff_from_step_1_to_step_2_is_the_overlap_change():
    diff = source.step_diff(single_buffered.single_buffered_kernel, overlap.overlap_kernel)
    changed = [line[1:].strip() for line in diff.splitlines()[2:] if line[:1] in "+-"]
    # what the step adds: the persistent loop, the overlap barrier, the split drain
    assert any(line.startswith("for tile_id in range(gl.program_id(axis=0)") for line in changed)
    assert "overlap_bar = mbarrier.allocate_mbarrier(two_ctas=True)" in changed
    assert "mbarrier.arrive(overlap_bar, count=1)" in changed
    # what it keeps: the K step itself (loads, waits, copies, MMA) is not part of the diff
    for kept in (
        "mbarrier.expect(load_bar, stage_bytes)",
        "tcgen05_copy(a_scale, a_scale_tmem)",
        "mbarrier.wait(mma_bar, phase)  # the MMA has read a_smem ... b_scale_smem: reuse them",
    ):
        assert kept not in changed
        assert kept in gc.kernel_source(overlap.overlap_kernel)
    stats = source.diff_stats(single_buffered.single_buffered_kernel, overlap.overlap_kernel)
    assert stats["added"] == sum(1 for line in diff.splitlines()[2:] if line.startswith("+"))


def test_kernel_sections_cover_the_source():
    sections = source.kernel_sections(single_buffered.single_buffered_kernel)
    assert list(sections)[0] == "signature" and "the K loop" in sections and "barriers" in sections
    joined = "\n".join(sections.values())
    assert joined == gc.kernel_source(single_buffered.single_buffered_kernel).rstrip("\n")
    assert "tcgen05_mma_scaled(" in sections["the K loop"]
    assert "allocate_tensor_memory(" in sections["tensor memory: all 512 columns at once, sliced by the plan"]


# --- on the CPU executor ---------------------------------------------------------------
from gluon_overlap.steps import measure  # noqa: E402

INTERLEAVINGS = ((0, None), (1, 0.05), (2, 20.0))


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=PAIR_IDS)
def test_single_buffered_matches_the_reference_on_ragged_shapes(pair):
    """M and N not multiples of 256 (TMA fills zeros past the edge, drops stores past it), 3-4 K steps."""
    problem = measure.make_problem(300, 264, 512, *pair, seed=1)
    for seed, bias in INTERLEAVINGS:
        result = measure.run_step(single_buffered.single_buffered_kernel, problem, seed=seed, completion_bias=bias)
        assert result.run.ok, (result.run.hazards[:1], result.run.deadlock, result.run.error)
        assert result.wrong_tiles() == [] and not result.c.isnan().any()


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("overlap_on", [False, True], ids=["off", "on"])
@pytest.mark.parametrize("k", [256, 512])
def test_overlap_kernel_matches_the_reference(pair, overlap_on, k):
    """Two clusters over 2 x 4 tiles (ragged), so each cluster does 4 tiles: both windows twice;
    K = 256 is one K step for fp4 (the tail under the MMA), two or more otherwise."""
    problem = measure.make_problem(400, 776, k, *pair, seed=2)
    for seed, bias in INTERLEAVINGS:
        result = measure.run_step(
            overlap.overlap_kernel, problem, overlap=overlap_on, num_clusters=2, seed=seed, completion_bias=bias
        )
        assert result.run.ok, (result.run.hazards[:1], result.run.deadlock, result.run.error)
        assert result.wrong_tiles() == [] and not result.c.isnan().any()


def test_run_step_refuses_more_clusters_than_tiles():
    problem = measure.make_problem(256, 256, 256)
    with pytest.raises(ValueError, match=r"num_clusters=2 must be an int in \[1, 1\]"):
        measure.run_step(overlap.overlap_kernel, problem, num_clusters=2)


def test_timed_runs_split_the_time_consistently():
    """Timed mode (the B200 cost model): busy + idle = total, the MMA busy time is the same for every
    schedule of the same work, and the persistent kernel beats one cluster per tile per tile."""
    problem = measure.make_problem(256, 1024, 512)
    one = measure.run_step(single_buffered.single_buffered_kernel, problem, timed=True)
    off = measure.run_step(overlap.overlap_kernel, problem, overlap=False, num_clusters=1, timed=True)
    on = measure.run_step(overlap.overlap_kernel, problem, overlap=True, num_clusters=1, timed=True)
    t1, toff, ton = one.mma_time(), off.mma_time(), on.mma_time()
    for t in (t1, toff, ton):
        assert t.busy > 0 and abs(t.busy + t.idle - t.total) < 1e-15 and 0 < t.idle_share < 1
    assert (t1.tiles, toff.tiles, ton.tiles) == (1, 4, 4)
    assert toff.busy == pytest.approx(4 * t1.busy) and ton.busy == pytest.approx(toff.busy)
    assert toff.per_tile < t1.per_tile
    assert all(r.correct for r in (one, off, on))


# --- figures -------------------------------------------------------------------------------
def test_scale_chunk_cells_put_row_groups_in_columns():
    """Independent of scale_cell's formula: lane l, column chunk + g of every sub-partition holds row 32 g + l."""
    from gluon_overlap.plots import steps as ps

    plan = make_plan("nvfp4", "nvfp4")
    for operand, row_block, k_chunk in (("A", 0, 1), ("B", 1, 3)):
        cells = ps.scale_chunk_cells(plan, operand, k_chunk, row_block)
        first = plan.a_scale_column(k_chunk) if operand == "A" else plan.b_scale_column(row_block, k_chunk)
        assert cells["columns"] == [first + g for g in range(4)]
        for lane in range(128):
            for g in range(4):
                assert cells["rows"][lane, g] == 128 * row_block + 32 * g + lane % 32
    with pytest.raises(ValueError, match="k_chunk=4"):
        ps.scale_chunk_cells(plan, "A", 4)


def test_step_timeline_draws_every_mma_and_idle_bars_add_up():
    from gluon_overlap.plots import steps as ps

    problem = measure.make_problem(256, 256, 512)
    result = measure.run_step(single_buffered.single_buffered_kernel, problem, timed=True)
    fig = ps.plot_step_timeline(result.run)
    drawn = [p for p in fig.axes[0].patches if p.get_gid() == "op:mma"]
    assert len(drawn) == sum(1 for op in result.run.trace if op.kind == "mma") == 2
    t = result.mma_time()
    assert sum(p.get_width() for p in drawn) == pytest.approx(t.busy * 1e6)
    bars = ps.plot_idle([t.row("step 1")])
    widths = {p.get_gid(): p.get_width() for p in bars.axes[0].patches}
    assert widths["busy:step 1"] == pytest.approx(t.busy) and widths["idle:step 1"] == pytest.approx(t.idle)


_SERIES = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "notebooks").glob("0*.ipynb"))


@pytest.mark.parametrize("name", [n for n in _SERIES if n[:2] in ("02", "03", "04", "05")])
def test_notebooks_link_their_neighbours_the_glossary_and_the_tutorials(name):
    """The first cell of each step notebook links the notebook before it and the one after it in the series (03a,
    03b, 05b included), the glossary, the upstream tutorials and the PTX manual."""
    import json

    root = Path(__file__).resolve().parents[2]
    first = "".join(json.loads((root / "notebooks" / name).read_text())["cells"][0]["source"])
    at = _SERIES.index(name)
    for neighbour in (_SERIES[at - 1], _SERIES[at + 1]):
        assert f"]({neighbour})" in first, (name, neighbour)
    assert "](../docs/GLOSSARY.md)" in first and (root / "docs" / "GLOSSARY.md").exists()
    assert "python/tutorials/gluon/" in first and "parallel-thread-execution" in first


def test_k_tail_past_the_last_block_k_is_zero_filled():
    """K = 384 with BLOCK_K = 256 (fp4): the second K step reads half past the edge of A, B and their
    scales; TMA fills zeros there, so C is still exact."""
    for fmt in ("nvfp4", "mxfp4"):
        problem = measure.make_problem(256, 512, 384, fmt, seed=3)
        assert measure.run_step(single_buffered.single_buffered_kernel, problem).clean
        for overlap_on in (False, True):
            assert measure.run_step(overlap.overlap_kernel, problem, overlap=overlap_on, num_clusters=1).clean
