"""Exercises of notebook 04 (overlap): the drain order, the early-release step, and a bug hunt."""

from __future__ import annotations

from collections.abc import Callable

from gluon_overlap.exercises.check import Verdict, call_answer, verdict
from gluon_overlap.exercises.kernels import load_kernel, module_source, patch_source
from gluon_overlap.exercises.runs import Case, check_kernel
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, TmemPlan, make_plan

#: the planted bug: the head of the drain one subtile short
BUG = ("HEAD: gl.constexpr = TMEM_PLAN.early_release_subtile + 1 if",
       "HEAD: gl.constexpr = TMEM_PLAN.early_release_subtile if")
#: problems the fixed kernel must get right: three tiles on one cluster (both windows, twice the left)
CASES = (Case(256, 768, 256, "nvfp4", "nvfp4", overlap=True, num_clusters=1),
         Case(512, 512, 256, "mxfp8", "mxfp8", overlap=True, num_clusters=1))


def exercise_plans() -> list[TmemPlan]:
    """Overlap-on plans over the seed's pairs, subtile widths 8 ... 128 and two BLOCK_K each."""
    plans = []
    for a, b in SEED_FORMAT_PAIRS:
        base = make_plan(a, b).block_k
        for block_k in (base, 2 * base):
            for ebn in (8, 16, 32, 64, 128):
                try:
                    plans.append(make_plan(a, b, block_k=block_k, epilogue_block_n=ebn))
                except ValueError:  # e.g. an overlap wider than the window: not a plan
                    continue
    return plans


def _label(plan: TmemPlan) -> str:
    return (f"{plan.a_format} x {plan.b_format}, BLOCK_K={plan.block_k}, EPILOGUE_BLOCK_N={plan.epilogue_block_n} "
            f"(overlap {plan.overlap_cols} columns)")


def _overlap_subtiles(plan: TmemPlan, tile: int) -> set[int]:
    """Window-relative subtiles of ``tile`` that hold a column the other window shares."""
    shared = set(plan.overlap_window.columns())
    return {s for s in range(plan.num_subtiles) if shared & set(plan.subtile_columns(tile, s).columns())}


def check_drain_order(fn: Callable[[TmemPlan, int], list], *, quiet: bool = False) -> Verdict:
    """``fn(plan, tile)``: an order to drain the subtiles of the ``tile``-th tile of a cluster such
    that every subtile holding a shared column comes before every other one.  Any such order
    passes; the message says whether it is the kernel's."""
    name = "04 drain order"
    same = True
    plans = exercise_plans()
    for plan in plans:
        for tile in (0, 1, 2, 3):
            got, failed = call_answer(name, fn, plan, tile, quiet=quiet)
            if failed is not None:
                return failed
            try:
                order = [int(s) for s in got]
            except (TypeError, ValueError):
                return verdict(name, False, f"return a list of subtile indices, got {got!r}", quiet=quiet)
            if sorted(order) != list(range(plan.num_subtiles)):
                return verdict(name, False, f"{_label(plan)}, tile {tile}: {order} is not an order of the "
                               f"{plan.num_subtiles} subtiles 0..{plan.num_subtiles - 1}", quiet=quiet)
            head = _overlap_subtiles(plan, tile)
            if set(order[:len(head)]) != head:
                return verdict(name, False, f"{_label(plan)}, tile {tile} ({plan.window_name(tile)} window): the "
                               f"shared columns are in subtiles {sorted(head)}, but your order starts "
                               f"{order[:len(head)]}. Hint: the left window shares its *high* columns, the right "
                               "one its *low* columns.", quiet=quiet)
            same &= order == plan.drain_order(tile)
    kernel = "it is the kernel's own order" if same else "a valid order, though not the kernel's"
    return verdict(name, True, f"{len(plans)} plans x 4 tiles: the shared columns always go first ({kernel}).",
                   quiet=quiet)


def release_step(plan: TmemPlan, tile: int) -> int:
    """Walk the plan's drain order: the first step after which every shared column has been read."""
    shared, read = set(plan.overlap_window.columns()), set()
    for step, subtile in enumerate(plan.drain_order(tile)):
        read |= set(plan.subtile_columns(tile, subtile).columns())
        if shared <= read:
            return step
    raise AssertionError("the drain order never reads every shared column")


def check_early_release(fn: Callable[[TmemPlan], int], *, quiet: bool = False) -> Verdict:
    """``fn(plan)``: the drain step (from 0) right after which the epilogue may arrive on
    ``overlap``: the earliest step at which every shared column has been read."""
    name = "04 early release"
    plans = exercise_plans()
    for plan in plans:
        want = release_step(plan, 0)
        assert want == release_step(plan, 1)
        got, failed = call_answer(name, fn, plan, quiet=quiet)
        if failed is not None:
            return failed
        if got != want:
            early = isinstance(got, int) and got < want
            hint = ("releasing after that step lets the next tile's MMA overwrite shared columns not yet read"
                    if early else "later than needed: the next tile's MMA waits longer than it must")
            return verdict(name, False, f"{_label(plan)}: the release comes after step {want}, you said {got!r} "
                           f"({hint}). Hint: the last shared column is column overlap - 1 of the drain.",
                           quiet=quiet)
    return verdict(name, True, f"right for all {len(plans)} plans.", quiet=quiet)


def buggy_source() -> str:
    """The overlap kernel's module with one planted bug."""
    from gluon_overlap.steps import overlap

    return patch_source(module_source(overlap), *BUG)


def buggy_kernel():
    return load_kernel(buggy_source(), "overlap_kernel", "buggy_overlap")


def check_overlap(kernel, *, quiet: bool = False) -> Verdict:
    """Run the learner's fixed overlap kernel on the executor (three or four tiles on one cluster)."""
    return check_kernel("04 find the bug", kernel, CASES,
                        "which columns has the previous tile drained when the overlap barrier is arrived on? "
                        "Compare the drain steps before the arrive with plan.early_release_subtile.", quiet=quiet,
                        extra=overlap_is_early)


def overlap_is_early(result, case) -> str | None:
    """A fix must keep the overlap: each CTA releases right after the head (not after the whole drain)."""
    from gluon_overlap.exercises.writing import overlap_is_early as early

    return early(result, case)
