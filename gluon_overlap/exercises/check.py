"""What every checker shares: run the learner's answer, say PASS or FAIL with a hint."""

from __future__ import annotations

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


#: per exercise, the library names an answer may not use: they compute the answer itself
LIBRARY_ANSWERS: dict[str, frozenset[str]] = {
    "02 scale byte offset": frozenset({"scale_byte_offset", "scale_location", "swizzle_scales", "swizzled_positions"}),
    "02 scale TMEM column": frozenset({"scale_cell", "_reference_tmem"}),
    "03 expect bytes": frozenset({"compiled_expect_bytes", "expect_tx_bytes", "nbytes_per_cta", "compile_step",
                                  "expect_bytes"}),
    "04 drain order": frozenset({"drain_order", "drain_column", "_overlap_subtiles", "drain_orders"}),
    "04 early release": frozenset({"early_release_subtile", "release_step", "drain_order"}),
    "05 Counter": frozenset({"Counter", "counter_walk", "counter_walk_reference"}),
}
#: where the solutions live: the only functions of the package a checker accepts
SOLUTION_MODULES = ("gluon_overlap.exercises.solutions",)


def _code_names(code) -> set[str]:
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_names(const)
    return names


def library_use(exercise: str, fn: Any) -> str | None:
    """Why ``fn`` is not the learner's work (the library's own function, or one that calls the library's
    answer for this exercise), or None."""
    target = getattr(fn, "__func__", fn)  # a bound method: its function
    module = getattr(target, "__module__", "") or ""
    if module.split(".")[0] == "gluon_overlap" and module not in SOLUTION_MODULES:
        return (f"that is the library's own {getattr(target, '__qualname__', type(fn).__name__)} (from {module}): "
                "write the function yourself")
    code = getattr(target, "__code__", None)
    if code is not None:
        names = _code_names(code)
        for cell in getattr(target, "__closure__", None) or ():  # a function the answer closes over
            value = getattr(cell, "cell_contents", None)
            names.add(getattr(value, "__name__", ""))
        used = sorted(names & LIBRARY_ANSWERS.get(exercise, frozenset()))
        if used:
            return (f"your function uses the library's {', '.join(used)}, which computes the answer: work it out "
                    "yourself")
    return None


def call_answer(exercise: str, fn: Callable[..., Any], *args: Any, quiet: bool = False) -> tuple[Any, Verdict | None]:
    """Call the learner's function; an exception becomes a FAIL verdict naming it (never a traceback), and so
    does the library's own function (or one that calls the library's answer) handed in as the learner's."""
    if not callable(fn):
        return None, verdict(exercise, False, f"expected a function, got {type(fn).__name__}", quiet=quiet)
    refused = library_use(exercise, fn)
    if refused:
        return None, verdict(exercise, False, refused, quiet=quiet)
    try:
        return fn(*args), None
    except Exception as exc:  # the learner's code may raise anything: report it in one line
        where = ", ".join(short_repr(a) for a in args)
        return None, verdict(exercise, False, f"your function raised {type(exc).__name__}: {exc} (for {where})",
                             quiet=quiet)


def short_repr(value: Any, limit: int = 60) -> str:
    """A one-line description of an argument for a FAIL message (a plan by its formats)."""
    from gluon_overlap.tmem import TmemPlan

    if isinstance(value, TmemPlan):
        return (f"plan({value.a_format} x {value.b_format}, overlap {'on' if value.overlap else 'off'}, "
                f"block_k={value.block_k}, epilogue_block_n={value.epilogue_block_n})")
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
