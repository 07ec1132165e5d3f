"""Notebook 06: "this kernel has one bug: find it" -- on a copy of the real kernel, run on the executor."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gluon_overlap.exercises.check import Verdict, verdict

if TYPE_CHECKING:
    from gluon_overlap.formats import Problem

EXERCISE = "06 find the bug"

#: the correct lines of kernel.py's epilogue, and the mystery kernel's version of them
CORRECT = (
    "            tma.store_wait(pendings=STORE_STAGES - 1)  # the store that used this buffer has read it\n"
    "            c_smem.store(acc)\n"
)
MYSTERY = (
    "            c_smem.store(acc)\n"
    "            tma.store_wait(pendings=STORE_STAGES - 1)  # the store that used this buffer has read it\n"
)
PAIRS = (("nvfp4", "nvfp4"), ("mxfp8", "mxfp8"))
SEEDS = 4


def solution() -> tuple[str, str]:
    """The fix: wait until the store that last read the staging buffer is done, *then* write it."""
    return MYSTERY, CORRECT


def wrong_fixes() -> list[tuple[str, str]]:
    """Typical wrong answers: deleting the final wait (not the bug), and a looser wait left after the store.
    (A ``store_wait(0)`` after the store would be right, if slower: it waits for every earlier store.)"""
    return [("tma.store_wait(0)\n", "pass\n"), (MYSTERY, MYSTERY.replace("STORE_STAGES - 1", "STORE_STAGES"))]


def mystery_kernel(folder: str | Path | None = None) -> Path:
    """Write the kernel with one bug (a copy of ``gluon_overlap/kernel.py``) and return its path."""
    from gluon_overlap.emulate.kernels import edited_copy

    return edited_copy(CORRECT, MYSTERY, folder=folder)


def _problems() -> dict[tuple[str, str], Problem]:
    from gluon_overlap.formats import random_problem

    return {pair: random_problem(512, 768, 512, *pair, seed=11) for pair in PAIRS}


def check_fix(answer: tuple[str, str], *, quiet: bool = False) -> Verdict:
    """Apply the learner's fix ``answer = (old, new)`` to the mystery kernel and run it: PASS when every run of
    two format pairs and several interleavings is clean and C matches the reference."""
    from gluon_overlap.emulate.kernels import edited_copy
    from gluon_overlap.emulate.runs import sweep

    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        return verdict(
            EXERCISE, False, "give the fix as a pair (old, new): the text to replace and its replacement", quiet=quiet
        )
    old, new = answer
    if not isinstance(old, str) or not isinstance(new, str) or not old.strip():
        return verdict(
            EXERCISE, False, "give the fix as two strings: the text to replace and its replacement", quiet=quiet
        )
    if old == new:
        return verdict(EXERCISE, False, "old and new are the same text: that changes nothing", quiet=quiet)
    mystery = mystery_kernel()
    try:
        fixed = edited_copy(old, new, source=mystery, folder=mystery.parent / "fixed")
    except ValueError:
        return verdict(
            EXERCISE,
            False,
            "that text is not in the mystery kernel exactly once: copy it from the file (mind the indentation)",
            quiet=quiet,
        )
    for pair, problem in _problems().items():
        found = sweep(problem, SEEDS, overlap=True, clusters=2, kernel=str(fixed))
        if not found.ok:
            bad = found.first_failure
            assert bad is not None  # a sweep with a failed run keeps the first one
            what = bad.failure or (
                f"a hazard: {bad.hazards[0].kind} at {bad.hazards[0].line}"
                if bad.hazards
                else "a deadlock"
                if bad.deadlock
                else "a wrong C"
            )
            return verdict(
                EXERCISE,
                False,
                f"with your fix {pair[0]} x {pair[1]} still shows {what}. Hint: read "
                "which two accesses the hazard names and which wait should order them",
                quiet=quiet,
            )
    return verdict(
        EXERCISE,
        True,
        f"clean in {SEEDS} interleavings of {len(PAIRS)} format pairs: the staging buffer "
        "is reused only after the TMA store that read it is done",
        quiet=quiet,
    )
