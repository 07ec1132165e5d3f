"""Where a running builtin is: the launch, the partition and the kernel line -- without global state.

Each partition of a launch runs in its own :class:`KernelGreenlet`, which carries its :class:`Ctx`-like
context (``.ctx``: cluster, CTA, partition, and ``.runtime``, the launch).  A builtin finds them through
:func:`current`, so two launches (even interleaved ones) never share a runtime.  Outside a launch
(:func:`gluon_overlap.interp.launch.call`) the runtime is a context variable set for the call's duration.
"""

from __future__ import annotations

import contextvars
import linecache
import sys
from types import FrameType
from typing import Any, cast

from greenlet import getcurrent, greenlet

from gluon_overlap.interp.ops import Op
from gluon_overlap.text import DISPLAY_NAMES, SourceLine

__all__ = [
    "DISPLAY_NAMES",
    "ExecutorError",
    "KernelGreenlet",
    "SourceLine",
    "caller_line",
    "current",
    "current_or_none",
    "default_fp_fusion",
    "emit",
    "fp_fusion",
    "hazard",
    "report_out_of_range",
    "runtime",
    "where",
]


class ExecutorError(ValueError):
    """The kernel asked the executor for something it cannot do (an unimplemented builtin, a view it
    cannot follow); the message names the builtin and the kernel line."""


#: the runtime of a :func:`~gluon_overlap.interp.launch.call` (no partitions, no engine)
CALL_RUNTIME: contextvars.ContextVar[Any] = contextvars.ContextVar("gluon_overlap_call_runtime", default=None)


class KernelGreenlet(greenlet):
    """The greenlet one partition runs in; ``ctx`` is its context (set by the executor)."""

    ctx: Any = None


def current_or_none() -> Any:
    """The running partition's context, or None outside a partition."""
    return getattr(getcurrent(), "ctx", None)


def current() -> Any:
    ctx = getattr(getcurrent(), "ctx", None)
    if ctx is None:
        raise ExecutorError("a Gluon builtin that needs a launch was called outside a kernel launched by the executor")
    return ctx


def runtime() -> Any:
    """The launch (or call) the calling code belongs to."""
    ctx = getattr(getcurrent(), "ctx", None)
    if ctx is not None:
        return ctx.runtime
    rt = CALL_RUNTIME.get()
    if rt is None:
        raise ExecutorError("a Gluon builtin was called outside the executor (use executor.launch or executor.call)")
    return rt


def default_fp_fusion(requested: bool | None = None) -> bool:
    """Whether the compiler contracts ``x * y + z`` into an FMA: the launch's ``enable_fp_fusion``, else
    ``TRITON_DEFAULT_FP_FUSION`` (on unless set to 0), never with ``TRITON_FORCE_DISABLE_FP_FUSION``
    (``triton.knobs.language.fp_fusion_enabled``, without its warning)."""
    from triton import knobs

    lang = knobs.language
    return not lang.force_disable_fp_fusion and (lang.default_fp_fusion if requested is None else bool(requested))


def fp_fusion() -> bool:
    """The fp-fusion setting of the launch (or call) the calling code belongs to."""
    ctx = getattr(getcurrent(), "ctx", None)
    rt = ctx.runtime if ctx is not None else CALL_RUNTIME.get()
    fusion = getattr(rt, "fp_fusion", None)
    return default_fp_fusion() if fusion is None else fusion


def caller_line() -> SourceLine | None:
    """The innermost frame that runs rebound kernel code."""
    ctx = getattr(getcurrent(), "ctx", None)
    rt = ctx.runtime if ctx is not None else CALL_RUNTIME.get()
    codes = rt.kernel_codes if rt is not None else ()
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        if f.f_code in codes:
            text = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
            return SourceLine(f.f_code.co_filename, f.f_lineno, f.f_code.co_name, text)
        f = f.f_back
    return None


def where() -> str:
    line = caller_line()
    return f" (at {line})" if line is not None else ""


def emit(op: Any) -> Any:
    """Hand ``op`` to the engine; return what the engine sends back once it has executed it."""
    g = getcurrent()
    ctx = getattr(g, "ctx", None)
    if ctx is None:
        raise ExecutorError(f"{op.kind} needs a launch: it was called outside a kernel launched by the executor")
    op.line = caller_line() if ctx.runtime.want_lines else None
    op.tile, op.local = ctx.tile, ctx.local
    return cast(greenlet, g.parent).switch(op)  # a kernel greenlet's parent: the engine loop that runs it


def hazard(kind: str, detail: str, line: SourceLine | None = None) -> None:
    """Report a hazard at the calling kernel line, or at ``line`` (no operation involved: a bad index, a bad
    init)."""

    ctx = current()
    op = Op(tile=ctx.tile, local=ctx.local)
    op.proc = ctx.proc
    op.line = line if line is not None else caller_line()
    ctx.runtime.engine.report_hazard(kind, op, detail)


def report_out_of_range(bad: Any, what: str) -> None:
    """A view computed out of range (:class:`gluon_overlap.interp.memory.OutOfRange`) is used by ``what`` at the
    calling line: the hazard, once per view, at the line that computed it, naming the use."""
    if bad.reported:
        return
    bad.reported = True
    use = caller_line()
    hazard(bad.kind, f"{bad.detail}; used by {what}" + (f" (at {use})" if use is not None else ""), bad.line or use)
