"""Tests of the TMEM plan (gluon_overlap.tmem) against the seed's numbers and over the whole valid space."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gluon_overlap import tmem
from gluon_overlap.pingpong import tile_schedule
from gluon_overlap.tmem import make_plan

EPILOGUE_DIVISORS = [d for d in range(1, 257) if 256 % d == 0]


# --- the seed's test_tmem_overlap_accum, number by number --------------------------------------
def test_seed_nvfp4_overlap_on():
    # tmem_overlap_storage_plan(BLOCK_K=256, EPILOGUE_BLOCK_N=32, VEC_SIZE=16, USE_OVERLAP=True)
    plan = make_plan("nvfp4", "nvfp4", block_k=256, epilogue_block_n=32, overlap=True)
    assert (plan.left.offset, plan.left.cols) == (0, 256)
    assert (plan.right.offset, plan.right.cols) == (208, 256)
    assert (plan.a_scale.offset, plan.a_scale.cols) == (464, 16)
    assert (plan.b_scale.offset, plan.b_scale.cols) == (480, 32)
    assert plan.early_release_subtile == 1


@pytest.mark.parametrize("b_format", ["mxfp8", "mxfp4"])
def test_seed_vec32_block_k128_overlap_on(b_format):
    # tmem_overlap_storage_plan(BLOCK_K=128, EPILOGUE_BLOCK_N=32, VEC_SIZE=32, USE_OVERLAP=True)
    plan = make_plan("mxfp8", b_format, block_k=128, epilogue_block_n=32, overlap=True)
    assert (plan.right.offset, plan.right.cols) == (244, 256)
    assert (plan.a_scale.offset, plan.a_scale.cols) == (500, 4)
    assert (plan.b_scale.offset, plan.b_scale.cols) == (504, 8)
    assert plan.early_release_subtile == 0


def test_seed_nvfp4_overlap_off():
    # tmem_overlap_storage_plan(BLOCK_K=256, EPILOGUE_BLOCK_N=32, VEC_SIZE=16, USE_OVERLAP=False)
    plan = make_plan("nvfp4", "nvfp4", block_k=256, epilogue_block_n=32, overlap=False)
    assert (plan.left.offset, plan.left.cols) == (0, 256)
    assert (plan.right.offset, plan.right.cols) == (0, 256)
    assert (plan.a_scale.offset, plan.a_scale.cols) == (256, 16)
    assert (plan.b_scale.offset, plan.b_scale.cols) == (272, 32)


@pytest.mark.parametrize(
    ("a", "b", "block_k", "overlap", "right", "a_at", "b_at", "early"),
    [
        ("mxfp8", "mxfp8", 128, 12, 244, 500, 504, 0),
        ("mxfp8", "mxfp4", 128, 12, 244, 500, 504, 0),
        ("mxfp4", "mxfp4", 256, 24, 232, 488, 496, 0),
        ("nvfp4", "nvfp4", 256, 48, 208, 464, 480, 1),
    ],
)
def test_semantics_table_with_seed_default_block_k(a, b, block_k, overlap, right, a_at, b_at, early):
    """SEMANTICS.md section 4's column plan, with BLOCK_K chosen as the seed's make_descriptors does."""
    plan = make_plan(a, b)
    assert plan.block_k == block_k
    assert plan.overlap_cols == overlap
    assert (plan.right.offset, plan.right.end) == (right, right + 256)
    assert (plan.a_scale.offset, plan.b_scale.offset) == (a_at, b_at)
    assert plan.early_release_subtile == early


def test_nvfp4_scale_chunk_addresses_match_the_ptx():
    """SEMANTICS.md section 4 [obs]: A chunk kc at 464 + 4 kc, B chunk (nb, kc) at 480 + 8 kc + 4 nb."""
    plan = make_plan("nvfp4", "nvfp4")
    for kc in range(plan.a_scale_cols // 4):
        assert plan.a_scale_column(kc) == 464 + 4 * kc
        for nb in range(2):
            assert plan.b_scale_column(nb, kc) == 480 + 8 * kc + 4 * nb


def test_tile_schedule_matches_semantics_section_6():
    plan = make_plan("nvfp4", "nvfp4")
    rows = [
        (s.tile, s.window, s.acc_index, s.acc_empty_phase, s.overlap_phase, s.acc_ready_phase)
        for s in tile_schedule(plan, 4)
    ]
    assert rows == [
        (0, "left", 0, 1, 1, 0),
        (1, "right", 1, 1, 0, 0),
        (2, "left", 0, 0, 1, 1),
        (3, "right", 1, 0, 0, 1),
    ]


# --- invalid configurations ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "needles"),
    [
        (dict(a_format="fp8", b_format="mxfp8"), ["a_format='fp8'", "not a known format"]),
        (dict(a_format="nvfp4", b_format="mxfp8"), ["VEC_SIZE=16", "VEC_SIZE=32"]),
        (dict(a_format="mxfp8", b_format="mxfp8", block_k=64), ["block_k=64", "multiple", "128"]),
        (dict(a_format="nvfp4", b_format="nvfp4", epilogue_block_n=48), ["epilogue_block_n=48", "256 % 48 = 16"]),
        # overlap: scale_k = 88 -> 88 + 176 = 264 scale columns, 264 - 256 + 1 = 9 too many (must be < 256)
        (dict(a_format="mxfp8", b_format="mxfp8", block_k=32 * 88), ["overlap of 264", "9 column(s) too many"]),
        # single buffer: 256 + 264 = 520 columns -> 8 more than 512
        (dict(a_format="mxfp8", b_format="mxfp8", block_k=32 * 88, overlap=False), ["520", "8 more", "512"]),
        (dict(a_format="mxfp8", b_format="mxfp8", block_k=0), ["block_k=0", "positive"]),
    ],
)
def test_invalid_configurations_say_what_does_not_fit(kwargs, needles):
    with pytest.raises(ValueError) as info:
        make_plan(**kwargs)
    for needle in needles:
        assert needle in str(info.value)


def test_largest_block_k_fits_and_the_next_does_not():
    # overlap < 256 and 256 + scales <= 512 both allow 3 * scale_k <= 255, i.e. scale_k <= 84 (multiple of 4)
    for overlap in (True, False):
        assert make_plan("mxfp4", "mxfp4", block_k=32 * 84, overlap=overlap).b_scale.end <= 512
        assert make_plan("nvfp4", "nvfp4", block_k=16 * 84, overlap=overlap).b_scale.end <= 512
        with pytest.raises(ValueError):
            make_plan("mxfp4", "mxfp4", block_k=32 * 88, overlap=overlap)


# --- properties over the whole valid space -------------------------------------------------------
FORMAT_PAIRS = [
    (a, b)
    for a in tmem.FORMAT_VEC_SIZE
    for b in tmem.FORMAT_VEC_SIZE
    if tmem.FORMAT_VEC_SIZE[a] == tmem.FORMAT_VEC_SIZE[b]
]


@st.composite
def valid_plans(draw):
    a, b = draw(st.sampled_from(FORMAT_PAIRS))
    chunks = draw(st.integers(min_value=1, max_value=21))  # 4 k-scales per chunk, 3 x 4 x 21 = 252 < 256
    return make_plan(
        a,
        b,
        block_k=tmem.FORMAT_VEC_SIZE[a] * 4 * chunks,
        epilogue_block_n=draw(st.sampled_from(EPILOGUE_DIVISORS)),
        overlap=draw(st.booleans()),
    )


def _cols(win) -> set[int]:
    return set(win.columns())


@settings(max_examples=300, deadline=None)
@given(valid_plans())
def test_windows_inside_tmem_and_scales_apart(plan):
    scale_k = plan.block_k // plan.vec_size
    assert plan.a_scale.cols == scale_k and plan.b_scale.cols == 2 * scale_k
    for win in (plan.left, plan.right, plan.a_scale, plan.b_scale):
        assert 0 <= win.offset and win.end <= tmem.TMEM_COLS and win.cols > 0
    accum = _cols(plan.left) | _cols(plan.right)
    assert not _cols(plan.a_scale) & _cols(plan.b_scale)
    assert not (_cols(plan.a_scale) | _cols(plan.b_scale)) & accum
    owners = plan.column_owners()
    for name, win in plan.windows().items():
        if name != "right" or plan.overlap:
            assert all(name in owners[c] for c in win.columns())


@settings(max_examples=300, deadline=None)
@given(valid_plans())
def test_accumulators_overlap_by_exactly_the_scale_columns(plan):
    shared = _cols(plan.left) & _cols(plan.right)
    if plan.overlap:
        assert len(shared) == plan.a_scale.cols + plan.b_scale.cols == plan.overlap_cols
        assert plan.left.cols == plan.right.cols == 256
        # overlap on fills every column: two accumulators minus the overlap plus the scales
        assert all(plan.column_owners())
    else:
        assert plan.right == plan.left and plan.overlap_cols == 0 and plan.overlap_window is None


@settings(max_examples=300, deadline=None)
@given(valid_plans())
def test_early_release_subtile_covers_the_overlap_in_both_drain_directions(plan):
    if not plan.overlap:
        return
    overlap = _cols(plan.overlap_window)
    for tile in (0, 1, 2, 3):
        order = plan.drain_order(tile)
        assert sorted(order) == list(range(plan.num_subtiles))
        drained: set[int] = set()
        first_full = None
        for position, sub in enumerate(order):
            cols = plan.subtile_columns(tile, sub)
            assert _cols(cols) <= _cols(plan.accumulator(tile))
            drained |= _cols(cols)
            if first_full is None and overlap <= drained:
                first_full = position
        # releasing after this position is safe (every overlapped column read) and not late
        assert first_full == plan.early_release_subtile
        if tile % 2 == 0:
            assert order == list(range(plan.num_subtiles - 1, -1, -1))
            assert plan.accumulator(tile) == plan.left
        else:
            assert order == list(range(plan.num_subtiles))
            assert plan.accumulator(tile) == plan.right


def _recorded_plans():
    from gluon_overlap.emulate.pingpong_record import recorded_configs

    return recorded_configs()


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(_recorded_plans()), st.integers(min_value=1, max_value=8))
def test_tile_schedule_phases_follow_the_counters(plan, n):
    """Producer counter for acc_empty (phase0 = 1), consumer for acc_ready (phase0 = 0), overlap (i + 1) % 2."""
    num_acc = 2 if plan.overlap else 1
    empty_idx, empty_phase, ready_phase = 0, 1, 0
    for step in tile_schedule(plan, n):
        assert (step.acc_index, step.acc_empty_phase, step.acc_ready_phase) == (empty_idx, empty_phase, ready_phase)
        assert step.overlap_phase == ((step.tile + 1) % 2 if plan.overlap else None)
        assert plan.accumulator(step.tile) == plan.windows()[step.window]
        empty_idx += 1
        if empty_idx == num_acc:
            empty_idx, empty_phase, ready_phase = 0, empty_phase ^ 1, ready_phase ^ 1
