"""Exercises of notebook 03 (the single-buffered kernel): the expect byte count, and a bug hunt."""

from __future__ import annotations

from collections.abc import Callable

from gluon_overlap.exercises.check import Verdict, call_answer, verdict
from gluon_overlap.exercises.kernels import load_kernel, module_source, patch_source
from gluon_overlap.exercises.runs import Case, check_kernel
from gluon_overlap.tmem import SEED_FORMAT_PAIRS

#: the planted bug: the MMA wait one phase behind (text in the kernel, and its replacement)
BUG = ("        mbarrier.wait(mma_bar, phase)  #", "        mbarrier.wait(mma_bar, phase ^ 1)  #")
#: problems the fixed kernel must get right: 2 and 3 K steps, one tile and two
CASES = (Case(256, 256, 512, "nvfp4", "nvfp4"), Case(256, 512, 384, "mxfp8", "mxfp4"))


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
    name = "03 expect bytes"
    for a, b in SEED_FORMAT_PAIRS:
        want = compiled_expect_bytes(a, b)
        got, failed = call_answer(name, fn, a, b, quiet=quiet)
        if failed is not None:
            return failed
        if got != want:
            hint = ("that is twice the answer: expect counts what lands in *this* CTA's shared memory; the pair's "
                    "barrier gets both CTAs' expects" if got == 2 * want else
                    "per CTA: 128 rows of A and of B (K bytes a row for fp8, K/2 for fp4), the CTA's 128-row "
                    "A-scale chunk and the whole 256-row B-scale tile (the lead multicasts it)")
            return verdict(name, False, f"{a} x {b}: the compiled kernel expects {want} bytes per CTA, you said "
                           f"{got!r}. Hint: {hint}.", quiet=quiet)
    return verdict(name, True, "all four format pairs match the expect_tx count of the compiled PTX.", quiet=quiet)


def buggy_source() -> str:
    """The single-buffered kernel's module with one planted bug."""
    from gluon_overlap.steps import single_buffered

    return patch_source(module_source(single_buffered), *BUG)


def buggy_kernel():
    """The single-buffered kernel with the planted bug, loaded (for the learner to run)."""
    return load_kernel(buggy_source(), "single_buffered_kernel", "buggy_single_buffered")


def check_single_buffered(kernel, *, quiet: bool = False) -> Verdict:
    """Run the learner's fixed kernel on the executor: two problems, three interleavings each."""
    return check_kernel("03 find the bug", kernel, CASES,
                        "a wait for the wrong parity returns too early (the next K step's TMA overwrites shared "
                        "memory the MMA still reads) or never (a deadlock). Check each wait: completion m of a "
                        "barrier has parity (m - 1) % 2, and both barriers complete once per K step.",
                        quiet=quiet)
