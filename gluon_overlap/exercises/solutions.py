"""Solutions of the exercises (the tests run every checker on these and on wrong answers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gluon_overlap.tmem import SCALE_K_PER_CHUNK, SCALE_ROWS_PER_CHUNK, TMEM_LANES, TmemPlan

if TYPE_CHECKING:
    from gluon_overlap.exercises.views import StagePlanView


# --- notebook 02 --------------------------------------------------------------------
def scale_byte_offset(row: int, k: int, scale_k: int) -> int:
    """Chunk ``(row // 128, k // 4)`` of 512 bytes, then lane ``row % 32`` x 16, group
    ``(row % 128) // 32`` x 4, byte ``k % 4``."""
    chunks_per_row_block = -(-scale_k // 4)
    chunk = (row // 128) * chunks_per_row_block + k // 4
    return chunk * 512 + (row % 32) * 16 + ((row % 128) // 32) * 4 + k % 4


def scale_tmem(plan: TmemPlan, operand: str, row: int, k: int) -> tuple[int, list[int]]:
    """The 4-column chunk of the scale's k chunk (and, for B, its 128-row block); the row group is
    the column inside it; lane ``row % 32``, repeated in all four 32-lane sub-partitions."""
    k_chunk = k // SCALE_K_PER_CHUNK
    if operand == "A":
        chunk = plan.a_scale_column(k_chunk)
    else:
        chunk = plan.b_scale_column(row // SCALE_ROWS_PER_CHUNK, k_chunk)
    group, lane = divmod(row % SCALE_ROWS_PER_CHUNK, 32)
    return chunk + group, [lane + 32 * w for w in range(TMEM_LANES // 32)]


# --- notebook 03 --------------------------------------------------------------------
def expect_bytes(plan: StagePlanView) -> int:
    """Per CTA and K step: 128 rows of A and of B, this CTA's A-scale chunk, the whole B-scale tile."""

    def row_bytes(fmt: str) -> int:  # fp4 counts K/2 bytes a row, even when padded in shared memory next to fp8
        return plan.block_k if fmt == "mxfp8" else plan.block_k // 2

    rows_per_cta = 128
    chunks_k = plan.block_k // (plan.vec_size * 4)  # 512-byte scale chunks per 128 rows and K step
    a_scale = chunks_k * 512  # this CTA's 128 rows
    b_scale = (plan.block_n // 128) * chunks_k * 512  # all 256 N rows, multicast to both CTAs
    return rows_per_cta * row_bytes(plan.a_format) + rows_per_cta * row_bytes(plan.b_format) + a_scale + b_scale


def fixed_single_buffered_source() -> str:
    """The bug fixed: wait for the phase the MMA's commit completes (``phase``, not ``phase ^ 1``)."""
    import gluon_overlap.exercises.bugs as bugs
    from gluon_overlap.exercises.kernels import patch_source

    broken, fixed = bugs.SINGLE_BUFFERED_BUG[1], bugs.SINGLE_BUFFERED_BUG[0]
    return patch_source(bugs.single_buffered_buggy_source(), broken, fixed)


# --- notebook 04 --------------------------------------------------------------------
def drain_order(plan: TmemPlan, tile: int) -> list[int]:
    """Even tiles (left window, sharing its high columns) high to low; odd tiles low to high."""
    n = plan.num_subtiles
    return list(range(n - 1, -1, -1)) if (plan.overlap and tile % 2 == 0) else list(range(n))


def early_release(plan: TmemPlan) -> int:
    """The last shared column is drained by step ``(overlap_cols - 1) // EPILOGUE_BLOCK_N``."""
    return (plan.overlap_cols - 1) // plan.epilogue_block_n


def fixed_overlap_source() -> str:
    """The bug fixed: the head is steps ``0 ... early_release_subtile``, *inclusive*."""
    import gluon_overlap.exercises.bugs as bugs
    from gluon_overlap.exercises.kernels import patch_source

    broken, fixed = bugs.OVERLAP_BUG[1], bugs.OVERLAP_BUG[0]
    return patch_source(bugs.overlap_buggy_source(), broken, fixed)


# --- notebook 05 --------------------------------------------------------------------
def counter(j: int, num_barriers: int, start_phase: int) -> tuple[int, int]:
    """Use ``j`` picks barrier ``j % n``; the parity flips once per lap, from the start phase."""
    return j % num_barriers, start_phase ^ ((j // num_barriers) & 1)


#: scope and arrivals per phase of the five barriers
BARRIERS = {
    "load_empty": ("cta", 1),  # the lead's multicast MMA commit, once in each CTA
    "load_ready": ("pair", 2),  # both CTAs' expect (plus their bytes)
    "acc_empty": ("pair", 2),  # both epilogues after the full drain
    "acc_ready": ("cta", 1),  # the lead's end-of-tile commit, once in each CTA
    "overlap": ("pair", 2),  # both epilogues after the early-release subtile
}
