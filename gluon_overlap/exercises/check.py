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


def call_answer(exercise: str, fn: Callable[..., Any], *args: Any, quiet: bool = False) -> tuple[Any, Verdict | None]:
    """Call the learner's function; an exception becomes a FAIL verdict naming it (never a traceback)."""
    if not callable(fn):
        return None, verdict(exercise, False, f"expected a function, got {type(fn).__name__}", quiet=quiet)
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
