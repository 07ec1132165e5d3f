"""Plain text for the CLI and the notebooks: tables (drawn by ``tabulate``), one line for an exception, and a
kernel's source line as reports show it."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import tabulate as _tabulate

#: the width the command line's tables keep to (wider cells are wrapped onto several lines)
CLI_WIDTH = 100
_GAP = 2  # spaces between columns
LABEL_WIDTH = 20  #: a first column this narrow (the rows' names) is never wrapped
_PADDING_LOCK = threading.Lock()


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], max_width: int | None = None) -> str:
    """Rows as an aligned plain-text table: a header, a line of dashes, one line per row (numbers right-aligned).

    With ``max_width``, a wider table is wrapped: first its headers and text cells, at spaces, the widest column
    first (no word is broken, numbers never); if even that is too wide, the columns are split into several
    tables one under the other, each repeating the first column.  Drawn by ``tabulate``'s ``simple`` format
    without its extra header padding, so the columns are as narrow as their cells.
    """
    header_cells = [str(h) for h in headers]
    cells = [[_fmt(v) for v in row] for row in rows]
    numeric = [bool(rows) and all(_is_number(row[i]) for row in rows) for i in range(len(headers))]
    if max_width is None or _width(_natural(header_cells, cells)) <= max_width:
        return _render(header_cells, cells, numeric, None)
    minimum = _narrowest(header_cells, cells, numeric)
    if _width(minimum) <= max_width or len(headers) < 3:
        return _render(header_cells, cells, numeric, _wrap_limits(header_cells, cells, numeric, max_width))
    parts, group = [], [0]
    for i in range(1, len(headers)):  # split the columns: each part repeats the first one
        if len(group) > 1 and _width([minimum[j] for j in (*group, i)]) > max_width:
            parts.append(group)
            group = [0]
        group.append(i)
    parts.append(group)
    return "\n\n".join(
        format_table([header_cells[i] for i in part], [[row[i] for i in part] for row in rows], max_width)
        for part in parts
    )


def _natural(headers: list[str], cells: list[list[str]]) -> list[int]:
    """Each column's width unwrapped."""
    return [
        max(len(line) for text in (h, *(row[i] for row in cells)) for line in text.split("\n") or [""])
        for i, h in enumerate(headers)
    ]


def _narrowest(headers: list[str], cells: list[list[str]], numeric: list[bool]) -> list[int]:
    """Each column's width wrapped as far as it goes: its longest word (a number column: its widest number)."""
    natural = _natural(headers, cells)
    return [
        natural[i]
        if numeric[i] and not any("\n" in row[i] for row in cells) and len(headers[i].split()) < 2
        else max([1, *(len(word) for text in (h, *(row[i] for row in cells)) for word in text.split())])
        for i, h in enumerate(headers)
    ]


def _width(widths: list[int]) -> int:
    return sum(widths) + _GAP * (len(widths) - 1)


def _wrap_limits(headers: list[str], cells: list[list[str]], numeric: list[bool], max_width: int) -> list[int | None]:
    """Per column, the width to wrap it at (``None``: as wide as it is) so that the table fits ``max_width``
    (or is as narrow as it goes without breaking a word)."""
    widths = _natural(headers, cells)
    floor = _narrowest(headers, cells, numeric)
    limits: list[int | None] = [None] * len(widths)
    # the first column (the rows' names) is kept whole when it is short (a name of up to LABEL_WIDTH characters), and
    # otherwise wrapped only when the table cannot fit without that and fits with it: a long unbreakable value
    # elsewhere (a path) must not turn "matches reference" into two lines
    if len(widths) > 1:
        needed = _width([widths[0], *floor[1:]]) > max_width
        if widths[0] <= LABEL_WIDTH or not (needed and _width(floor) <= max_width):
            floor[0] = widths[0]
    while _width(widths) > max_width:
        shrinkable = [i for i, w in enumerate(widths) if w > floor[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] = limits[widest] = widths[widest] - 1
    return limits


def _render(headers: list[str], cells: list[list[str]], numeric: list[bool], limits: list[int | None] | None) -> str:
    wrap = limits if limits is not None and any(w is not None for w in limits) else None
    with _PADDING_LOCK:  # tabulate pads every header by MIN_PADDING (a module setting it reads at each call)
        saved, _tabulate.MIN_PADDING = _tabulate.MIN_PADDING, 0
        try:
            text = _tabulate.tabulate(
                cells,
                headers=headers,
                tablefmt="simple",
                disable_numparse=True,
                colalign=["right" if n else "left" for n in numeric],
                maxcolwidths=wrap,
                # types-tabulate omits the None entries tabulate accepts here (as it does for maxcolwidths)
                maxheadercolwidths=wrap,  # type: ignore[arg-type]
            )
        finally:
            _tabulate.MIN_PADDING = saved
    return "\n".join(line.rstrip() for line in text.split("\n"))


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
