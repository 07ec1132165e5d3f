"""Exercises of notebook 02 (scale swizzling): where one scale goes, in memory and in TMEM."""

from __future__ import annotations

from collections.abc import Callable

import torch

from gluon_overlap import swizzle
from gluon_overlap.exercises.check import Verdict, call_answer, verdict
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, TmemPlan, make_plan

#: ``[mn, scale_k]`` scale matrices the byte-offset checker tries (ragged ones included)
BYTE_SHAPES = ((128, 4), (256, 8), (200, 9), (384, 12))


def swizzled_positions(mn: int, scale_k: int) -> dict[tuple[int, int], int]:
    """Brute force: move a tensor of unique ids through :func:`swizzle.swizzle_scales` and read back
    where each scale ``(row, k)`` ended up (its flat byte offset)."""
    ids = torch.arange(mn * scale_k, dtype=torch.int64).reshape(mn, scale_k) + 1  # 0 marks padding
    flat = torch.zeros(swizzle.swizzled_shape(mn, scale_k), dtype=torch.int64).flatten()
    for shift in (0, 8, 16):
        part = swizzle.swizzle_scales(((ids >> shift) & 0xFF).to(torch.uint8)).flatten().long()
        flat |= part << shift
    return {divmod(int(v) - 1, scale_k): pos for pos, v in enumerate(flat.tolist()) if v}


def check_scale_byte_offset(fn: Callable[[int, int, int], int], *, quiet: bool = False) -> Verdict:
    """``fn(row, k, scale_k)``: the flat byte offset of scale ``(row, k)`` in the swizzled buffer of
    an ``[mn, scale_k]`` scale matrix.  Checked for every scale of several (ragged) shapes."""
    name = "02 scale byte offset"
    for mn, scale_k in BYTE_SHAPES:
        for (row, k), want in sorted(swizzled_positions(mn, scale_k).items()):
            got, failed = call_answer(name, fn, row, k, scale_k, quiet=quiet)
            if failed is not None:
                return failed
            if got != want:
                rm, rk, lane, group, k4 = swizzle.scale_location(row, k)
                return verdict(name, False, f"scale (row {row}, k {k}) of a [{mn}, {scale_k}] matrix is at byte "
                               f"{want}, you said {got!r}. Hint: its chunk is (rep_mn {rm}, rep_k {rk}) of 512 bytes "
                               f"(chunks in row-major order over [rep_mn, rep_k]), then lane {lane} x 16 bytes, "
                               f"group {group} x 4 bytes, k4 {k4}.", quiet=quiet)
    total = sum(mn * sk for mn, sk in BYTE_SHAPES)
    return verdict(name, True, f"all {total} scales of {len(BYTE_SHAPES)} matrices land where you said.", quiet=quiet)


def _reference_tmem(plan: TmemPlan, operand: str, row: int, k: int) -> tuple[int, tuple[int, ...]]:
    from gluon_overlap.plots.tmem import scale_cell  # the explorer's answer

    cell = scale_cell(plan, operand, row, k)
    return cell.column, tuple(cell.lanes)


def check_scale_tmem(fn: Callable[[TmemPlan, str, int, int], tuple], *, quiet: bool = False) -> Verdict:
    """``fn(plan, operand, row, k) -> (column, lanes)``: the TMEM column of one CTA and the lanes
    that hold scale ``(row, k)`` of operand ``"A"`` or ``"B"`` (``row`` within the 256-row tile,
    ``k`` within one BLOCK_K step) after ``tcgen05.cp ... 32x128b.warpx4``."""
    name = "02 scale TMEM column"
    plans = [make_plan(a, b, overlap=ov) for a, b in SEED_FORMAT_PAIRS for ov in (False, True)]
    checked = 0
    for plan in plans:
        scale_k = plan.block_k // plan.vec_size
        for operand in ("A", "B"):
            for row in range(0, 256, 7):
                for k in range(scale_k):
                    want = _reference_tmem(plan, operand, row, k)
                    got, failed = call_answer(name, fn, plan, operand, row, k, quiet=quiet)
                    if failed is not None:
                        return failed
                    try:
                        column, lanes = got
                        got_norm = (int(column), tuple(sorted(int(x) for x in lanes)))
                    except (TypeError, ValueError):
                        return verdict(name, False, f"return (column, lanes), e.g. (464, [0, 32, 64, 96]); got {got!r}",
                                       quiet=quiet)
                    checked += 1
                    if got_norm != want:
                        group = (row % 128) // 32
                        return verdict(name, False, f"{operand} scale (row {row}, k {k}) with {plan.a_format} x "
                                       f"{plan.b_format}, overlap {'on' if plan.overlap else 'off'}: column {want[0]}, "
                                       f"lanes {list(want[1])}; you said column {got_norm[0]}, lanes "
                                       f"{list(got_norm[1])}. Hint: row group {group} (= (row % 128) // 32) becomes "
                                       "column chunk + group, and warpx4 repeats lane row % 32 in all four "
                                       "sub-partitions (+0, +32, +64, +96).", quiet=quiet)
    return verdict(name, True, f"{checked} scales in 8 plans: every column and lane right.", quiet=quiet)
