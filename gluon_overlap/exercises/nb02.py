"""Exercises of notebook 02 (scale swizzling): where one scale goes, in memory and in TMEM."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import torch

from gluon_overlap import swizzle
from gluon_overlap.exercises.check import Verdict, answered_at, call_answer, more, verdict
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, TmemPlan, make_plan

#: ``[mn, scale_k]`` scale matrices the byte-offset checker always tries (ragged ones included) ...
BYTE_SHAPES = ((128, 4), (256, 8), (200, 9), (384, 12))


def byte_shapes(seed: int = 2027) -> tuple[tuple[int, int], ...]:
    """... and three more drawn from ``seed``: up to four row blocks, up to five chunks of K, ragged."""
    import random

    rng = random.Random(f"byte-offset:{seed}")
    drawn = tuple((rng.randrange(129, 513), rng.randrange(5, 21)) for _ in range(3))
    return BYTE_SHAPES + drawn


def swizzled_positions(mn: int, scale_k: int) -> dict[tuple[int, int], int]:
    """Brute force: move a tensor of unique ids through :func:`swizzle.swizzle_scales` and read back
    where each scale ``(row, k)`` ended up (its flat byte offset)."""
    ids = torch.arange(mn * scale_k, dtype=torch.int64).reshape(mn, scale_k) + 1  # 0 marks padding
    flat = torch.zeros(swizzle.swizzled_shape(mn, scale_k), dtype=torch.int64).flatten()
    for shift in (0, 8, 16):
        part = swizzle.swizzle_scales(((ids >> shift) & 0xFF).to(torch.uint8)).flatten().long()
        flat |= part << shift
    return {divmod(int(v) - 1, scale_k): pos for pos, v in enumerate(flat.tolist()) if v}


def check_scale_byte_offset(fn: Callable[[int, int, int], int], *, quiet: bool = False, seed: int = 2027) -> Verdict:
    """``fn(row, k, scale_k)``: the flat byte offset of scale ``(row, k)`` in the swizzled buffer of
    an ``[mn, scale_k]`` scale matrix.  Checked for every scale of several (ragged) shapes."""
    name = "02 scale byte offset"
    shapes = byte_shapes(seed)
    for mn, scale_k in shapes:
        for (row, k), want in sorted(swizzled_positions(mn, scale_k).items()):
            got, failed = call_answer(name, fn, row, k, scale_k, quiet=quiet)
            if failed is not None:
                return failed
            if got != want or isinstance(got, bool):
                return verdict(
                    name,
                    False,
                    f"scale (row {row}, k {k}) of a [{mn}, {scale_k}] scale matrix: your "
                    f"function{answered_at(name)} gave {got!r}, {_offset_miss(got, want)}. {more(name)}",
                    quiet=quiet,
                )
    total = sum(mn * sk for mn, sk in shapes)
    return verdict(name, True, f"all {total} scales of {len(shapes)} matrices land where you said.", quiet=quiet)


def _offset_miss(got: Any, want: int) -> str:
    """Which part of a byte offset is wrong (the 512-byte chunk, the 16-byte lane, the 4-byte group or the byte in
    it), never the right offset."""
    if isinstance(got, bool) or not isinstance(got, numbers.Integral):
        return "not a byte offset (give an int)"
    got = int(got)
    for size, part in (
        (512, "the 512-byte chunk (row block and k block)"),
        (16, "the 16-byte lane inside the chunk (which row of the chunk?)"),
        (4, "the 4-byte group inside the lane (which 32-row group?)"),
    ):
        if got // size != want // size:
            return f"which is not in the right place at the level of {part}"
    return "which is in the right 4-byte group but at the wrong byte of it (which k of the four?)"


def _reference_tmem(plan: TmemPlan, operand: str, row: int, k: int) -> tuple[int, tuple[int, ...]]:
    from gluon_overlap.plots.tmem import scale_cell  # the explorer's answer

    cell = scale_cell(plan, operand, row, k)
    return cell.column, tuple(cell.lanes)


def _tmem_miss(got: tuple[int, tuple[int, ...]], want: tuple[int, tuple[int, ...]]) -> str:
    """What is wrong with a (column, lanes) answer, in words, never the right column or lanes."""
    (column, lanes), (want_column, want_lanes) = got, want
    if column != want_column:
        return (
            "the column is wrong: find the scale's 4-column chunk (its k chunk, and for B its 128-row block), then "
            "the column inside the chunk (its 32-row group)"
        )
    if len(lanes) != len(want_lanes):
        return (
            f"the column is right; {len(lanes)} lane(s) is not how many hold the scale (warpx4 copies a chunk "
            "into each 32-lane sub-partition)"
        )
    return "the column is right; the lanes are not (which lane of each 32-lane sub-partition?)"


def tmem_plans() -> list[TmemPlan]:
    """The plans the TMEM-column checker asks about: every pair, overlap off and on, two BLOCK_K each."""
    plans = []
    for a, b in SEED_FORMAT_PAIRS:
        base = make_plan(a, b).block_k
        for ov in (False, True):
            for block_k in (base, 2 * base):
                try:
                    plans.append(make_plan(a, b, block_k=block_k, overlap=ov))
                except ValueError:
                    continue
    return plans


def check_scale_tmem(fn: Callable[[Any, str, int, int], tuple], *, quiet: bool = False) -> Verdict:
    """``fn(plan, operand, row, k) -> (column, lanes)``: the TMEM column of one CTA and the lanes
    that hold scale ``(row, k)`` of operand ``"A"`` or ``"B"`` (``row`` within the 256-row tile,
    ``k`` within one BLOCK_K step) after ``tcgen05.cp ... 32x128b.warpx4``.  ``plan`` is a
    :class:`~gluon_overlap.exercises.views.ScalePlanView`: ``a_scale_column`` / ``b_scale_column`` and the sizes."""
    import gluon_overlap.exercises.views as views
    from gluon_overlap.exercises.guard import library_files
    from gluon_overlap.exercises.views import ScalePlanView

    name = "02 scale TMEM column"
    allowed = library_files(views)
    checked = 0
    plans = tmem_plans()
    for plan in plans:
        view = ScalePlanView.of(plan)
        scale_k = plan.block_k // plan.vec_size
        for operand in ("A", "B"):
            for row in sorted(set(range(0, 256, 13)) | {31, 32, 127, 128, 255}):
                for k in range(scale_k):
                    want = _reference_tmem(plan, operand, row, k)
                    got, failed = call_answer(name, fn, view, operand, row, k, quiet=quiet, allowed_files=allowed)
                    if failed is not None:
                        return failed
                    try:
                        column, lanes = got
                        ints = [column, *lanes]
                        if any(isinstance(x, bool) or not isinstance(x, numbers.Integral) for x in ints):
                            raise TypeError
                        got_norm = (int(column), tuple(sorted(int(x) for x in lanes)))
                    except (TypeError, ValueError):
                        return verdict(
                            name,
                            False,
                            f"return (column, lanes), e.g. (464, [0, 32, 64, 96]); your "
                            f"function{answered_at(name)} gave {got!r}",
                            quiet=quiet,
                        )
                    checked += 1
                    if got_norm != want:
                        return verdict(
                            name,
                            False,
                            f"{operand} scale (row {row}, k {k}) with {view}: your function"
                            f"{answered_at(name)} gave column {got_norm[0]}, lanes {list(got_norm[1])}: "
                            f"{_tmem_miss(got_norm, want)}. {more(name)}",
                            quiet=quiet,
                        )
    return verdict(name, True, f"{checked} scales in {len(plans)} plans: every column and lane right.", quiet=quiet)
