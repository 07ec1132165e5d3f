"""The compiler's words for a learner's answer: where sm_100a's compile stopped (a line of the answer when it can be
found) and why, in one line; :func:`cross_compile_answer` compiles an answer and raises :class:`AnswerRefused` with
them."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gluon_overlap.exercises.answer_files import Answer, AnswerRefused

if TYPE_CHECKING:
    from gluon_overlap.compiler.compile import CrossCompiled, GluonFunction


def _compilation_errors(exc: BaseException) -> list[Any]:
    """The compiler's errors (Triton's ``CompilationError``, untyped here) in ``exc``'s chain, outermost first."""
    from triton.compiler.errors import CompilationError

    chain: list[Any] = []
    seen = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, CompilationError):
            chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    return chain


def compile_error_words(exc: BaseException, answer: Answer, spliced: str) -> str:
    """One line: where the compiler stopped (a line of the answer when it can be found) and why."""
    chain = _compilation_errors(exc)
    if not chain:
        first = str(exc).strip().splitlines()
        return f"{type(exc).__name__}: {first[-1] if first else ''}"
    inner = chain[-1]
    why = (inner.error_message or "").strip().splitlines()
    why_text = why[-1] if why else type(inner).__name__
    node_line = getattr(inner.node, "lineno", None)
    code = ""
    if inner.src and node_line:
        code = inner.src.split("\n")[node_line - 1].strip()
    place = "the given kernel"
    if code:
        hits = [i + 1 for i, line in enumerate(spliced.splitlines()) if line.strip() == code]
        mine = [h for h in hits if h <= answer.lines]
        if mine:
            place = f"{answer.name} line {mine[0]}"
    return f"{place} `{code}`: {why_text}" if code else f"{place}: {why_text}"


def _mlir_error(stderr: str, answer: Answer) -> str | None:
    """The first ``file:line:col: error: message`` the MLIR passes printed, with the line named for the reader."""
    m = re.search(r"^(\S+?):(\d+):(\d+): error: (.+)$", stderr, re.MULTILINE)
    if m is None:
        return None
    lineno, message = int(m.group(2)), m.group(4).strip()
    following = stderr[m.end() :].lstrip("\n").splitlines()
    code = following[0].strip() if following else ""
    place = f"{answer.name} line {lineno}" if lineno <= answer.lines else "the given kernel"
    message = re.sub(r"'[\w.]+' op ", "", message)  # "'ttng.tc_gen5_mma_scaled' op mxf4nvf4 ..." -> "mxf4nvf4 ..."
    return f"{place} `{code}`: {message}" if code else f"{place}: {message}"


def cross_compile_answer(kernel: GluonFunction, args: tuple, answer: Answer, spliced: str) -> CrossCompiled:
    """Compile for sm_100a; :class:`AnswerRefused` with the compiler's complaint in one line.  The MLIR passes
    print their errors on the process's stderr (file descriptor 2), so it is captured while compiling."""
    import os
    import sys
    import tempfile

    from gluon_overlap.compiler.compile import cross_compile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as capture:
        os.dup2(capture.fileno(), 2)
        try:
            return cross_compile(kernel, args, num_ctas=2)
        except Exception as exc:  # the compiler's errors: CompilationError, asserts, MLIR failures
            os.dup2(saved, 2)
            capture.seek(0)
            printed = capture.read().decode(errors="replace")
            words = _mlir_error(printed, answer) or compile_error_words(exc, answer, spliced)
            raise AnswerRefused("the compiler for sm_100a refused it: " + words) from None
        finally:
            os.dup2(saved, 2)
            os.close(saved)
