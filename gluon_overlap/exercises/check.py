"""What every checker shares: run the learner's answer, say PASS or FAIL with a hint."""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Verdict:
    """The outcome of one checker: ``passed``, and the line printed for the learner."""

    exercise: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'} [{self.exercise}] {self.message}"


def verdict(exercise: str, passed: bool, message: str, *, quiet: bool = False) -> Verdict:
    """Build, print (unless ``quiet``) and return a :class:`Verdict`."""
    v = Verdict(exercise, bool(passed), message)
    if not quiet:
        print(v)
    return v


#: per exercise, the library names an answer may not use: they compute the answer itself (a quick first check; the
#: traced call below sees any library code that actually runs, however it was reached)
LIBRARY_ANSWERS: dict[str, frozenset[str]] = {
    "02 scale byte offset": frozenset({"scale_byte_offset", "scale_location", "swizzle_scales", "swizzled_positions"}),
    "02 scale TMEM column": frozenset({"scale_cell", "_reference_tmem", "scale_location"}),
    "08 expect bytes": frozenset(
        {
            "compiled_expect_bytes",
            "expect_tx_bytes",
            "nbytes_per_cta",
            "compile_step",
            "expect_bytes",
            "descriptor_expect_bytes",
            "make_descriptors",
            "stage_bytes_per_cta",
        }
    ),
    "04 drain order": frozenset(
        {"drain_order", "drain_column", "_overlap_subtiles", "drain_orders", "even_drain_order", "odd_drain_order"}
    ),
    "04 early release": frozenset({"early_release_subtile", "release_step", "drain_order"}),
    "05 Counter walk": frozenset({"Counter", "counter_walk", "counter_walk_reference"}),
}


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_names(const)
    return names


def library_use(exercise: str, fn: Any) -> str | None:
    """Why ``fn`` is not the learner's work (a function of the library, or one that names the library's answer for
    this exercise), or None."""
    from gluon_overlap.exercises.guard import describe, library_file

    target = getattr(fn, "__func__", fn)  # a bound method: its function
    code = getattr(target, "__code__", None)
    if code is not None and library_file(code.co_filename):
        return f"that is the library's own {describe(code)}: write the function yourself"
    if code is not None:
        names = _code_names(code)
        for cell in getattr(target, "__closure__", None) or ():  # a function the answer closes over
            value = getattr(cell, "cell_contents", None)
            names.add(getattr(value, "__name__", ""))
        used = sorted(names & LIBRARY_ANSWERS.get(exercise, frozenset()))
        if used:
            return (
                f"your function (line {code.co_firstlineno}) uses the library's {', '.join(used)}, which computes "
                "the answer: work it out yourself"
            )
    elif not callable(fn) or hasattr(fn, "fn"):
        return None
    else:
        return f"give a function you wrote (def or lambda), not a {type(fn).__name__}"
    return None


def call_answer(
    exercise: str, fn: Callable[..., Any], *args: Any, quiet: bool = False, allowed_files: frozenset[str] = frozenset()
) -> tuple[Any, Verdict | None]:
    """Call the learner's function under :func:`gluon_overlap.exercises.guard.traced_call`.  An exception, the
    library's own function, or library code that ran (outside the modules of ``allowed_files``: the accessors of
    the arguments) becomes a FAIL verdict naming the learner's line -- never a traceback."""
    import gluon_overlap.exercises.guard as guard

    if not callable(fn):
        return None, verdict(exercise, False, f"expected a function, got {type(fn).__name__}", quiet=quiet)
    refused = library_use(exercise, fn)
    if refused:
        return None, verdict(exercise, False, refused, quiet=quiet)
    traced = guard.traced_call(fn, *args)
    foreign = guard.foreign_function_code(traced, allowed_files)
    if foreign:
        return None, verdict(exercise, False, foreign + guard.where_returned(traced), quiet=quiet)
    if traced.error is not None:
        exc = traced.error
        where = ", ".join(short_repr(a) for a in args)
        return None, verdict(
            exercise,
            False,
            f"your function raised {type(exc).__name__}: {exc} (for {where}){guard.where_returned(traced)}",
            quiet=quiet,
        )
    _last[exercise] = traced
    return traced.value, None


#: the last traced call of each exercise (its return line names the learner's line in a FAIL message)
_last: dict[str, Any] = {}


def answered_at(exercise: str) -> str:
    """``" (line 3 `return ...`)"``: where the last call of the learner's function returned."""
    from gluon_overlap.exercises.guard import where_returned

    traced = _last.get(exercise)
    return where_returned(traced) if traced is not None else ""


def more(exercise: str) -> str:
    """The pointer to the hints that ends a FAIL line."""
    return f"(ex.hint({exercise!r}) for a hint)"


def short_repr(value: Any, limit: int = 60) -> str:
    """A one-line description of an argument for a FAIL message (a plan by its formats)."""
    from gluon_overlap.tmem import TmemPlan

    if isinstance(value, TmemPlan):
        return (
            f"plan({value.a_format} x {value.b_format}, overlap {'on' if value.overlap else 'off'}, "
            f"block_k={value.block_k}, epilogue_block_n={value.epilogue_block_n})"
        )
    if type(value).__name__ in ("PlanView", "ScalePlanView"):
        return str(value)
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
