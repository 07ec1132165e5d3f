"""The catalogue of exercises: every checker with its solution (the tests run each on both and on wrong answers), and
``solution(title)``, which prints a solution only when a learner asks -- read from the package (``answers/`` for the
files, ``solutions.py`` for the functions), outside the notebooks, so no renderer shows it unasked."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gluon_overlap.exercises.check import Verdict

if TYPE_CHECKING:
    from gluon_overlap.exercises.writing import WritingExercise


@dataclass(frozen=True)
class Exercise:
    """One exercise: where it is, what it asks, its checker and how to get its solution."""

    notebook: str
    name: str
    asks: str
    checker: Callable[..., Verdict]
    solution: Callable[[], Any]  # returns the answer to hand to the checker
    needs_executor: bool = False


def _kernel(source_fn: Callable[[], str], kernel_name: str, label: str) -> Callable[[], Any]:
    def load() -> Any:
        from gluon_overlap.exercises.kernels import load_kernel

        return load_kernel(source_fn(), kernel_name, label)

    return load


def _registry() -> tuple[Exercise, ...]:
    import gluon_overlap.exercises.nb02 as nb02
    import gluon_overlap.exercises.nb03 as nb03
    import gluon_overlap.exercises.nb04 as nb04
    import gluon_overlap.exercises.nb05 as nb05
    import gluon_overlap.exercises.nb06 as nb06
    import gluon_overlap.exercises.solutions as s

    return (
        Exercise(
            "02",
            "scale byte offset",
            "the byte of the swizzled buffer that holds scale (row, k)",
            nb02.check_scale_byte_offset,
            lambda: s.scale_byte_offset,
        ),
        Exercise(
            "02",
            "scale TMEM column",
            "the TMEM column and lanes of scale (row, k) after tcgen05.cp warpx4",
            nb02.check_scale_tmem,
            lambda: s.scale_tmem,
        ),
        Exercise(
            "03b",
            "find the bug",
            "one wait of the single-buffered kernel is wrong: fix it",
            nb03.check_single_buffered,
            _kernel(s.fixed_single_buffered_source, "single_buffered_kernel", "fixed_single_buffered"),
            needs_executor=True,
        ),
        Exercise(
            "04",
            "drain order",
            "drain the shared columns first, for any EPILOGUE_BLOCK_N",
            nb04.check_drain_order,
            lambda: s.drain_order,
        ),
        Exercise(
            "04",
            "early release",
            "the drain step after which the overlap is released",
            nb04.check_early_release,
            lambda: s.early_release,
        ),
        Exercise(
            "04",
            "find the bug",
            "the overlap kernel releases the shared columns too soon: fix it",
            nb04.check_overlap,
            _kernel(s.fixed_overlap_source, "overlap_kernel", "fixed_overlap"),
            needs_executor=True,
        ),
        Exercise(
            "05",
            "Counter walk",
            "barrier index and wait parity of use j of a ring",
            nb05.check_counter,
            lambda: s.counter,
            needs_executor=True,
        ),
        Exercise(
            "05",
            "barrier scopes",
            "scope and arrivals per phase of the five barriers",
            nb05.check_barriers,
            lambda: {k: (scope, n) for k, (scope, n) in s.BARRIERS.items()},
        ),
        Exercise(
            "06",
            "find the bug",
            "a copy of kernel.py with one bug: give the one edit that fixes it",
            nb06.check_fix,
            nb06.solution,
            needs_executor=True,
        ),
        Exercise(
            "08",
            "expect bytes",
            "the byte count one CTA announces per K step",
            nb03.check_expect_bytes,
            lambda: s.expect_bytes,
        ),
    )


def exercises() -> tuple[Exercise, ...]:
    """Every exercise of notebooks 02-06 and 08 that is not a writing exercise."""
    return _registry()


def writing_exercises() -> tuple[WritingExercise, ...]:
    """The writing exercises of notebooks 03a-05b (see :mod:`.writing`)."""
    from gluon_overlap.exercises.writing import writing_exercises as all_writing

    return all_writing()


def _titles() -> list[str]:
    return sorted({f"{e.notebook} {e.name}" for e in exercises()} | {e.title for e in writing_exercises()})


def solution(title: str) -> None:
    """Print the solution of ``title``: the answer file of a writing exercise, the function (or value) of the
    others.  It is the answer: read it after your own attempt."""
    if title in {e.title for e in writing_exercises()}:
        import gluon_overlap.exercises.writing as writing

        writing.solution(title)
        return
    for ex in exercises():
        if f"{ex.notebook} {ex.name}" == title:
            print(f"# the solution of [{title}]")
            if ex.name == "find the bug" and ex.notebook in ("03b", "04"):
                import gluon_overlap.exercises.bugs as bugs

                bug = bugs.SINGLE_BUFFERED_BUG if ex.notebook == "03b" else bugs.OVERLAP_BUG
                print(f"in ex.buggy_source(), replace\n    {bug[1].strip()}\nwith\n    {bug[0].strip()}")
                return
            value = ex.solution()
            if callable(value) and not hasattr(value, "fn"):
                print(inspect.getsource(value))
            elif isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
                print(f"replace\n{value[0]}with\n{value[1]}")
            else:
                print(value if not hasattr(value, "fn") else "the fixed kernel: see the exercise's text")
            return
    raise ValueError(f"{title!r} is not an exercise; there are {_titles()}")
