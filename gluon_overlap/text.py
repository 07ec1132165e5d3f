"""Plain text for the CLI and the notebooks: tables, one line for an exception, and a kernel's source line as
reports show it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Render rows as an aligned plain-text table (numbers right-aligned)."""
    cells = [[str(h) for h in headers]] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) for row in rows) and rows for i in range(len(headers))]

    def line(r: Sequence[str]) -> str:
        padded = (c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        return "  ".join(padded).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v != 0 and abs(v) < 1e-3:
            return f"{v:.4g}"
        return f"{v:.1f}" if abs(v) >= 100 else f"{v:.3f}"
    return str(v)


def exception_text(exc: BaseException) -> str:
    """``"Type: message"`` of an exception, or ``"Type"`` when it carries no message (``raise KeyboardInterrupt``)."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@dataclass(frozen=True)
class SourceLine:
    """A line of kernel source: file, number, function and text."""

    file: str
    lineno: int
    function: str
    text: str

    @property
    def name(self) -> str:
        """The file's name as a reader knows it (an edited temporary copy is named after its original)."""
        return DISPLAY_NAMES.get(self.file, self.file.rsplit("/", 1)[-1])

    def __str__(self) -> str:
        return f"{self.name}:{self.lineno} `{self.text}`"


#: temporary kernel copies (breaks applied) -> the name to show for them (a naming table, not run state)
DISPLAY_NAMES: dict[str, str] = {}
