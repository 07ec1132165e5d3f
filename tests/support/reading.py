"""Reading time of a notebook, from its words and cells (the figure each notebook's header states).

A reader takes prose at :data:`PROSE_WPM` words a minute and code more slowly (:data:`CODE_WPM`, counting
whitespace-separated tokens); each code cell costs :data:`SECONDS_PER_CELL` more (running it, looking at its
output) and each figure :data:`SECONDS_PER_FIGURE`.  Outputs are not read word by word.
"""

from __future__ import annotations

import json
import math
import re
from os import PathLike

PROSE_WPM = 130
CODE_WPM = 60
SECONDS_PER_CELL = 20
SECONDS_PER_FIGURE = 20
#: how a header states it (the test compares the header with :func:`reading_minutes`)
HEADER = re.compile(r"\*Reading time:\* about (\d+) min")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def reading_minutes(notebook: dict | str | PathLike) -> int:
    """Minutes to read a notebook (a parsed notebook or its path), to the nearest multiple of 5 (at least 5).

    The header line that states the reading time is not counted, nor a collapsed cell (its source hidden: a
    solution the reader opens only after doing the exercise)."""
    nb = notebook if isinstance(notebook, dict) else json.loads(open(notebook, encoding="utf-8").read())
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("notebook must be a notebook (a dict with a 'cells' list) or the path of one")
    seconds = 0.0
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
            continue
        text = HEADER.sub("", _source(cell))
        words = len(text.split())
        if cell.get("cell_type") == "markdown":
            seconds += 60.0 * words / PROSE_WPM
        elif cell.get("cell_type") == "code":
            seconds += 60.0 * words / CODE_WPM + SECONDS_PER_CELL
            figures = sum(1 for out in cell.get("outputs", []) if "image/png" in out.get("data", {}))
            seconds += SECONDS_PER_FIGURE * figures
    return max(5, 5 * math.floor(seconds / 300.0 + 0.5))


def stated_minutes(notebook: dict | str | PathLike) -> int | None:
    """The reading time a notebook's first cell states, or None."""
    nb = notebook if isinstance(notebook, dict) else json.loads(open(notebook, encoding="utf-8").read())
    m = HEADER.search(_source(nb["cells"][0])) if nb.get("cells") else None
    return int(m.group(1)) if m else None
