"""Exercises of notebooks 03b and 08 (the single-buffered kernel): a bug hunt, and the expect byte count."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gluon_overlap.exercises.bugs as bugs
from gluon_overlap.exercises.check import Verdict, answered_at, call_answer, more, verdict
from gluon_overlap.exercises.kernels import load_kernel
from gluon_overlap.tmem import SEED_FORMAT_PAIRS

if TYPE_CHECKING:
    from gluon_overlap.compiler.compile import GluonFunction

#: the planted bug: the MMA wait one phase behind (text in the kernel, and its replacement)
BUG = bugs.SINGLE_BUFFERED_BUG
EXPECT_TITLE = "08 expect bytes"
BUG_TITLE = "03b find the bug"


def compiled_expect_bytes(a_format: str, b_format: str) -> int:
    """The byte count of the ``mbarrier.arrive.expect_tx`` in the PTX of the compiled step kernel."""
    from gluon_overlap.steps import host, single_buffered

    counts = host.expect_tx_bytes(host.compile_step(single_buffered.single_buffered_kernel, a_format, b_format).ptx)
    if len(counts) != 1:
        raise ValueError(f"expected one expect_tx byte count in the PTX, found {counts}")
    return counts[0]


def check_expect_bytes(fn: Callable[[str, str], int], *, quiet: bool = False) -> Verdict:
    """``fn(a_format, b_format)``: the bytes one CTA announces with ``mbarrier.expect`` per K step
    (its A rows, its B rows, its A-scale chunk and the multicast B-scale tile).  Checked against
    the number in the PTX of the cross-compiled kernel, for the four format pairs."""
    from gluon_overlap import formats, registry, tmem
    from gluon_overlap.exercises.guard import library_files

    name = EXPECT_TITLE
    allowed = library_files(tmem, registry, formats)  # make_plan and the format table are the inputs
    for a, b in SEED_FORMAT_PAIRS:
        want = compiled_expect_bytes(a, b)
        got, failed = call_answer(name, fn, a, b, quiet=quiet, allowed_files=allowed)
        if failed is not None:
            return failed
        if got != want or isinstance(got, bool):
            how = ("not a byte count" if not isinstance(got, int) or isinstance(got, bool)
                   else "too many" if got > want else "too few")
            return verdict(name, False, f"{a} x {b}: your function{answered_at(name)} said {got!r}: {how} for the "
                           f"bytes one CTA's TMA loads bring per K step (the compiled kernel's expect_tx). "
                           f"{more(name)}",
                           quiet=quiet)
    return verdict(name, True, "all four format pairs match the expect_tx count of the compiled PTX.", quiet=quiet)


def buggy_source() -> str:
    """The single-buffered kernel's module with one planted bug."""
    return bugs.single_buffered_buggy_source()


def buggy_kernel() -> GluonFunction:
    """The single-buffered kernel with the planted bug, loaded (for the learner to run)."""
    return load_kernel(buggy_source(), "single_buffered_kernel", "buggy_single_buffered")


def check_single_buffered(kernel: Any, *, quiet: bool = False, seed: int | None = None) -> Verdict:
    """Run the learner's fixed kernel (``load_kernel(fixed_text, "single_buffered_kernel")``) on the executor over
    the single-buffered problem set (every pair, M >= 512, odd K steps, three interleavings)."""
    import gluon_overlap.exercises.kernel_checks as K
    from gluon_overlap.exercises.problems import DEFAULT_SEED
    from gluon_overlap.exercises.writing import _step_args, harness_library_codes, single_buffered_runs

    try:
        outcome = K.check_edited_kernel(BUG_TITLE, kernel, buggy_source(),
                                        single_buffered_runs(seed or DEFAULT_SEED), _step_args()(None),
                                        allowed=harness_library_codes(buggy_source()))
    except K.AnswerRefused as exc:
        return verdict(BUG_TITLE, False, str(exc), quiet=quiet)
    message = outcome.message if not outcome.passed else f"{outcome.message}: no hazard, no deadlock, C right."
    return verdict(BUG_TITLE, outcome.passed, message, quiet=quiet)
