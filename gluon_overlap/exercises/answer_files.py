"""A learner's answer file: read it, vet it, import it, splice it into the kernel it completes.

The answer's text comes first in the spliced module, so its line numbers are the file's own: a report that
names "line 12" of the spliced kernel names line 12 of the learner's file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import gluon_overlap.exercises.guard as guard

#: the solutions of the writing exercises (answer files), read only on request or by the checkers
ANSWERS = Path(__file__).parent / "answers"


class AnswerRefused(Exception):
    """The answer cannot be checked (missing, not Python, not the learner's work): the message says why."""


@dataclass(frozen=True)
class Answer:
    """A learner's file, loaded on its own (to check what it defines) and its text."""

    path: Path
    text: str
    module: Any

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def lines(self) -> int:
        return len(self.text.splitlines())

    def line(self, lineno: int) -> str:
        """The text of line ``lineno`` of the file (stripped)."""
        lines = self.text.splitlines()
        return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""

    def find(self, needle: str) -> int | None:
        """The first line holding ``needle`` (outside comments), or None."""
        for n, line in enumerate(self.text.splitlines(), 1):
            if needle in line.split("#", 1)[0]:
                return n
        return None

    def quote(self, needle: str) -> str:
        """``"my_file.py line 12 `the line`"`` for the first line holding ``needle``; the file's name if none does."""
        line = self.find(needle)
        return f"{self.name} line {line} `{self.line(line)}`" if line else self.name


def read_text(answer: str | Path) -> tuple[Path, str]:
    """The path and text of an answer file (``answer`` is its path)."""
    if not isinstance(answer, (str, Path)):
        raise AnswerRefused(f"give the path of your answer file (e.g. 'my_k_loop.py'), got {type(answer).__name__}")
    path = Path(answer)
    if not path.is_file():
        raise AnswerRefused(f"there is no file {str(path)!r}: run the %%writefile cell first")
    try:
        return path, path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise AnswerRefused(f"{path.name} cannot be read as text: {exc}") from None


def load_answer(
    answer: str | Path, entry: str | tuple[str, ...], allowed: frozenset[str], forbidden: frozenset[str] = frozenset()
) -> Answer:
    """Read, vet (:func:`gluon_overlap.exercises.guard.vet_source`) and import an answer file; :class:`AnswerRefused`
    says what is wrong, in one line.  ``entry``: the name(s) the file must define itself."""
    from gluon_overlap.emulate.kernel_files import import_source

    path, text = read_text(answer)
    try:
        compile(text, str(path), "exec")
    except SyntaxError as exc:
        raise AnswerRefused(
            f"{path.name} line {exc.lineno}: Python cannot read it ({exc.msg}): `{(exc.text or '').strip()}`"
        ) from None
    except ValueError as exc:  # e.g. NUL bytes
        raise AnswerRefused(f"{path.name}: Python cannot read it ({exc})") from None
    try:
        guard.vet_source(text, path.name, allowed, forbidden)
    except guard.Refused as exc:
        raise AnswerRefused(str(exc)) from None
    stem = re.sub(r"\W", "_", path.stem) or "answer"
    if not stem[0].isalpha():
        stem = "a_" + stem
    try:
        module = import_source(text, stem, label=f"{stem}.py")
    except BaseException as exc:  # the learner's module may raise anything while importing (SystemExit included)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise AnswerRefused(f"{path.name} does not import: {type(exc).__name__}: {exc}") from None
    assert module.__file__ is not None  # import_source imports it from its own file
    own = guard.compiled_codes(text, module.__file__)
    for name in (entry,) if isinstance(entry, str) else entry:
        obj = module.__dict__.get(name)
        if obj is None:
            raise AnswerRefused(f"{path.name} defines no {name!r}: keep the names of the skeleton")
        foreign = [c for f in guard._functions_of(obj) for c in guard.code_objects(f.__code__) if c not in own]
        if foreign:
            raise AnswerRefused(
                f"{path.name}: {name} is not defined by this file's text ({guard.describe(foreign[0])}): write it here"
            )
    return Answer(path, text, module)


def module_text(module: ModuleType) -> str:
    """A module's source without its ``from __future__`` line (it can then follow an answer's text)."""
    from gluon_overlap.exercises.kernels import module_source

    return "\n".join(
        line for line in module_source(module).splitlines() if not line.startswith("from __future__ import")
    )


def replace_section(text: str, title: str, new: str) -> str:
    """Replace the ``# ---- title ...`` section of a kernel (up to the next section comment or the end
    of the function) by ``new``."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip().startswith(f"# ---- {title}")]
    if len(starts) != 1:
        raise ValueError(f"the section {title!r} must occur once, found {len(starts)}")
    start = starts[0]
    end = start + 1
    while (
        end < len(lines)
        and not lines[end].strip().startswith("# ---- ")
        and not (lines[end] and not lines[end][0].isspace())
    ):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[:start] + new.splitlines() + lines[end:])


def remove_top_level(text: str, header: str) -> str:
    """Remove the top-level definition starting with ``header`` (``"class Counter"``), decorators included."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header)]
    if len(starts) != 1:
        raise ValueError(f"{header!r} must start one line, found {len(starts)}")
    start = starts[0]
    while start > 0 and lines[start - 1].startswith("@"):
        start -= 1
    end = starts[0] + 1
    while end < len(lines) and (not lines[end] or lines[end][0].isspace()):
        end += 1
    return "\n".join(lines[:start] + [f"# ({header} is the answer's, above)"] + lines[end:])


def replace_once(text: str, old: str, new: str) -> str:
    """``text`` with the one occurrence of ``old`` replaced (ValueError when it occurs 0 or 2+ times)."""
    if text.count(old) != 1:
        raise ValueError(f"the harness text to replace must occur once, found {text.count(old)}: {old[:60]!r}")
    return text.replace(old, new)


def splice(answer: Answer, harness: str) -> str:
    """The answer's text first (its line numbers stay the file's), then the harness."""
    return answer.text.rstrip("\n") + "\n\n\n# ======== the harness: the given kernel ========\n" + harness + "\n"


@dataclass(frozen=True)
class Spliced:
    """An answer spliced into its harness and imported: the module, its kernel and its text."""

    answer: Answer
    module: Any
    kernel: Any
    text: str

    @property
    def file(self) -> str:
        return self.module.__file__


def load_spliced(answer: Answer, harness: str, kernel_name: str) -> Spliced:
    """Import answer + harness as one module (file label: the answer's name); its ``kernel_name`` function."""
    from gluon_overlap.emulate.kernel_files import import_source

    text = splice(answer, harness)
    stem = "spliced_" + (re.sub(r"\W", "_", answer.path.stem) or "answer")
    try:
        module = import_source(text, stem, label=answer.name)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise AnswerRefused(
            f"your file and the kernel around it do not import together: {type(exc).__name__}: {exc}"
        ) from None
    return Spliced(answer, module, getattr(module, kernel_name), text)


def is_answer_line(line: Any, answer: Answer, file: str | None) -> bool:
    """Whether a kernel line (a ``SourceLine``) is one of the answer's: in the spliced file ``file`` (any file
    when None), within the answer's lines."""
    lineno = getattr(line, "lineno", None)
    if lineno is None or lineno > answer.lines:
        return False
    return file is None or getattr(line, "file", file) == file


def where(line: Any, answer: Answer, file: str | None = None) -> str:
    """``"my_k_loop.py line 12 `...`"`` for a line of the answer, ``"the given kernel (fn) `...`"`` otherwise."""
    if line is None:
        return "an unknown line"
    text = getattr(line, "text", str(line)).strip()
    if is_answer_line(line, answer, file):
        return f"{answer.name} line {line.lineno} `{text}`"
    return f"the given kernel ({getattr(line, 'function', '?')}) `{text}`"


def answer_lines(message: str, answer: Answer) -> str:
    """Rename ``file:line`` mentions of the spliced module so that lines past the answer read as the kernel's."""

    def rename(m: re.Match) -> str:
        return f"{answer.name} line {m.group(1)}" if int(m.group(1)) <= answer.lines else "the given kernel"

    return re.sub(re.escape(answer.name) + r":(\d+)", rename, message)
