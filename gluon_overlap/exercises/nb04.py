"""Exercises of notebook 04 (overlap): the drain order, the early-release step, and a bug hunt."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gluon_overlap.exercises.bugs as bugs
from gluon_overlap.exercises.check import Verdict, answered_at, call_answer, more, verdict
from gluon_overlap.exercises.kernels import load_kernel
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, TmemPlan, make_plan

if TYPE_CHECKING:
    from gluon_overlap.compiler.compile import GluonFunction
    from gluon_overlap.exercises.views import PlanView

#: the planted bug: the head of the drain one subtile short
BUG = bugs.OVERLAP_BUG
#: the tiles of a cluster the drain-order checker asks about
TILES = (0, 1, 2, 3, 4, 5)


def exercise_plans() -> list[TmemPlan]:
    """Overlap-on plans over the seed's pairs, subtile widths 8 ... 128 and two BLOCK_K each."""
    plans = []
    for a, b in SEED_FORMAT_PAIRS:
        base = make_plan(a, b).block_k
        for block_k in (base // 2, base, 2 * base):
            for ebn in (8, 16, 32, 64, 128):
                try:
                    plans.append(make_plan(a, b, block_k=block_k, epilogue_block_n=ebn))
                except ValueError:  # e.g. an overlap wider than the window: not a plan
                    continue
    return plans


def _label(plan: TmemPlan) -> str:
    return (
        f"{plan.a_format} x {plan.b_format}, BLOCK_K={plan.block_k}, EPILOGUE_BLOCK_N={plan.epilogue_block_n} "
        f"(overlap {plan.overlap_cols} columns)"
    )


def _shared_columns(plan: TmemPlan) -> set[int]:
    """The TMEM columns both windows use (none with overlap off)."""
    window = plan.overlap_window
    return set(window.columns()) if window is not None else set()


def _overlap_subtiles(plan: TmemPlan, tile: int) -> set[int]:
    """Window-relative subtiles of ``tile`` that hold a column the other window shares."""
    shared = _shared_columns(plan)
    return {s for s in range(plan.num_subtiles) if shared & set(plan.subtile_columns(tile, s).columns())}


def _views() -> tuple[list[tuple[TmemPlan, PlanView]], frozenset[str]]:
    import gluon_overlap.exercises.views as views
    from gluon_overlap.exercises.guard import library_files
    from gluon_overlap.exercises.views import PlanView

    return [(plan, PlanView.of(plan)) for plan in exercise_plans()], library_files(views)


def check_drain_order(fn: Callable[..., list], *, quiet: bool = False) -> Verdict:
    """``fn(plan, tile)``: an order to drain the subtiles of the ``tile``-th tile of a cluster such that every
    subtile holding a shared column comes before every other one.  ``plan`` is a
    :class:`~gluon_overlap.exercises.views.PlanView` (formats, sizes, windows: no drain order).  Any such order
    passes; the message says whether it is the kernel's."""
    name = "04 drain order"
    same = True
    views, allowed = _views()
    for plan, view in views:
        for tile in TILES:
            got, failed = call_answer(name, fn, view, tile, quiet=quiet, allowed_files=allowed)
            if failed is not None:
                return failed
            try:
                order = [int(s) for s in got]
            except (TypeError, ValueError):
                return verdict(
                    name,
                    False,
                    f"return a list of subtile indices; your function{answered_at(name)} gave {got!r}",
                    quiet=quiet,
                )
            if sorted(order) != list(range(plan.num_subtiles)):
                return verdict(
                    name,
                    False,
                    f"{_label(plan)}, tile {tile}: {order} is not an order of the "
                    f"{plan.num_subtiles} subtiles 0..{plan.num_subtiles - 1} (your function"
                    f"{answered_at(name)})",
                    quiet=quiet,
                )
            head = _overlap_subtiles(plan, tile)
            if set(order[: len(head)]) != head:
                step = next(k for k, sub in enumerate(order) if sub not in head)
                return verdict(
                    name,
                    False,
                    f"{_label(plan)}, tile {tile} ({plan.window_name(tile)} window): step "
                    f"{step} of your order{answered_at(name)} drains subtile {order[step]}, which holds "
                    f"none of the shared columns, while a subtile that holds one is still to come. "
                    f"{more(name)}",
                    quiet=quiet,
                )
            same &= order == plan.drain_order(tile)
    kernel = "it is the kernel's own order" if same else "a valid order, though not the kernel's"
    return verdict(
        name,
        True,
        f"{len(views)} plans x {len(TILES)} tiles: the shared columns always go first ({kernel}).",
        quiet=quiet,
    )


def release_step(plan: TmemPlan, tile: int) -> int:
    """Walk the plan's drain order: the first step after which every shared column has been read."""
    shared, read = _shared_columns(plan), set()
    for step, subtile in enumerate(plan.drain_order(tile)):
        read |= set(plan.subtile_columns(tile, subtile).columns())
        if shared <= read:
            return step
    raise AssertionError("the drain order never reads every shared column")


def check_early_release(fn: Callable[..., int], *, quiet: bool = False) -> Verdict:
    """``fn(plan)``: the drain step (from 0) right after which the epilogue may arrive on ``overlap``: the
    earliest step at which every shared column has been read (``plan``: a
    :class:`~gluon_overlap.exercises.views.PlanView`)."""
    name = "04 early release"
    views, allowed = _views()
    for plan, view in views:
        want = release_step(plan, 0)
        assert want == release_step(plan, 1)
        got, failed = call_answer(name, fn, view, quiet=quiet, allowed_files=allowed)
        if failed is not None:
            return failed
        if got != want or isinstance(got, bool):
            early = isinstance(got, int) and got < want
            why = (
                "too early: the next tile's MMA would overwrite shared columns not yet read"
                if early
                else "later than needed (or not a step): the next tile's MMA waits longer than it must"
            )
            return verdict(
                name,
                False,
                f"{_label(plan)}: your function{answered_at(name)} said {got!r}, a release {why}. {more(name)}",
                quiet=quiet,
            )
    return verdict(name, True, f"right for all {len(views)} plans.", quiet=quiet)


def buggy_source() -> str:
    """The overlap kernel's module with one planted bug."""
    return bugs.overlap_buggy_source()


def buggy_kernel() -> GluonFunction:
    return load_kernel(buggy_source(), "overlap_kernel", "buggy_overlap")


def check_overlap(kernel: Any, *, quiet: bool = False, seed: int | None = None) -> Verdict:
    """Run the learner's fixed overlap kernel on the executor (two clusters of three or four tiles, every pair);
    a fix must also keep the overlap (each CTA releases right after the subtiles that hold shared columns)."""
    import gluon_overlap.exercises.kernel_checks as K
    from gluon_overlap.exercises.problems import DEFAULT_SEED
    from gluon_overlap.exercises.writing import _release_extra, _step_args, harness_library_codes, overlap_step_runs

    title = "04 find the bug"
    try:
        outcome = K.check_edited_kernel(
            title,
            kernel,
            buggy_source(),
            overlap_step_runs(seed or DEFAULT_SEED),
            _step_args(overlap=True)(None),
            allowed=harness_library_codes(buggy_source()),
            extra=_release_extra,
        )
    except K.AnswerRefused as exc:
        return verdict(title, False, str(exc), quiet=quiet)
    message = outcome.message if not outcome.passed else f"{outcome.message}: clean, right, and the overlap kept."
    return verdict(title, outcome.passed, message, quiet=quiet)
