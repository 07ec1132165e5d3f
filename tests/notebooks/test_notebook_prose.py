"""What the notebooks' prose says agrees with what they compute and with the README (read from the committed
notebook JSON): reading times, the "Assumes" line, numbers in prose, the writing exercises' cells, the names of
the step kernels, and notebook 04 printing no barrier of notebook 05."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import reading  # tests/support is on sys.path (tests/conftest.py)
from gluon_overlap.exercises.writing import writing_exercises
from gluon_overlap.steps.predict import STEPS

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
SERIES = [p for p in NOTEBOOKS if p.name[:2] in {"03", "04", "05", "06", "07"}]


def _nb(path: Path) -> dict:
    return json.loads(path.read_text())


def _src(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _outputs(cell: dict) -> str:
    out = []
    for o in cell.get("outputs", []):
        if "text" in o:
            out.append("".join(o["text"]) if isinstance(o["text"], list) else o["text"])
        elif "data" in o and "text/plain" in o["data"]:
            t = o["data"]["text/plain"]
            out.append("".join(t) if isinstance(t, list) else t)
    return "\n".join(out)


def test_reading_time_counts_words_and_cells():
    hidden = {"cell_type": "code", "source": "x " * 6000, "outputs": [],
              "metadata": {"jupyter": {"source_hidden": True}}}
    nb = {"cells": [{"cell_type": "markdown", "source": "word " * 1300},  # 10 min of prose
                    {"cell_type": "code", "source": "x " * 60, "outputs": []}, hidden]}  # 1 min + 20 s; hidden: 0
    assert reading.reading_minutes(nb) == 10  # 11.3 min, to the nearest 5
    assert reading.reading_minutes({"cells": []}) == 5
    with pytest.raises(ValueError, match="must be a notebook"):
        reading.reading_minutes({"no": "cells"})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_header_states_the_computed_reading_time(path):
    nb = _nb(path)
    stated = reading.stated_minutes(nb)
    assert stated == reading.reading_minutes(nb), f"{path.name}: header says {stated}, computed " \
                                                   f"{reading.reading_minutes(nb)}"
    assert stated <= 45


def test_assumes_lines_agree_with_the_readme():
    readme = (ROOT / "README.md").read_text()
    lines = set()
    for path in NOTEBOOKS:
        m = re.search(r"\*Assumes:\*[^\n]*", _src(_nb(path)["cells"][0]))
        assert m, f"{path.name} has no Assumes line"
        lines.add(m.group(0).replace("../docs/", "docs/"))
    assert len(lines) == 1, lines
    assert lines.pop() in readme


#: numbers in prose that must come from an output above them: microseconds, percentages, [lo, hi] bands
PROSE_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?(µs|%)|\[(\d+(?:\.\d+)?), (\d+(?:\.\d+)?)\]")


@pytest.mark.parametrize("path", [p for p in SERIES if p.name[:2] in {"03", "04", "05", "07"}],
                         ids=lambda p: p.name[:2])
def test_numbers_in_prose_come_from_outputs_above(path):
    seen = ""
    problems = []
    for cell in _nb(path)["cells"]:
        if cell["cell_type"] == "code":
            seen += "\n" + _outputs(cell)
            continue
        text = re.sub(r"`[^`]*`", "", _src(cell))  # code spans are not claims
        for m in PROSE_NUMBER.finditer(text):
            token = m.group(0)
            if m.group(2) == "%" and token.rstrip("%") in {"0", "100"}:
                continue
            value = f"[{m.group(3)}, {m.group(4)}]" if m.group(3) else m.group(1) + (
                " µs" if m.group(2) == "µs" else "%")
            if value not in seen:
                problems.append(token)
    assert not problems, f"{path.name}: numbers in prose not printed above them: {problems}"


def test_each_writing_exercise_has_its_cells_and_a_collapsed_solution():
    for exercise in writing_exercises():
        path = next(p for p in NOTEBOOKS if p.name.startswith(exercise.notebook))
        cells = _nb(path)["cells"]
        checks = [i for i, c in enumerate(cells) if f'ex.check("{exercise.title}"' in _src(c)]
        assert len(checks) == 2, (exercise.title, checks)
        skeleton, solution = cells[checks[0]], cells[checks[1]]
        assert _src(cells[checks[0] - 1]).startswith("%%writefile my_")
        assert _outputs(skeleton).startswith("FAIL"), exercise.title
        assert solution["metadata"].get("jupyter", {}).get("source_hidden"), exercise.title
        assert "PASS" in _outputs(solution), exercise.title


def test_04_prints_no_barrier_of_notebook_05():
    cells = _nb(next(p for p in NOTEBOOKS if p.name.startswith("04")))["cells"]
    for cell in cells:
        if cell["cell_type"] == "code":
            assert "acc_empty" not in _outputs(cell) and "acc_ready" not in _outputs(cell)


def test_step_kernels_are_named_the_same_everywhere():
    """Every notebook of 03-07 uses the names of steps.predict.STEPS, and no other name for a step."""
    names = {name.split(", ", 1)[1] for name, _ in STEPS.values()}
    text = "\n".join(_src(c) + _outputs(c) for p in SERIES for c in _nb(p)["cells"])
    for name in names:
        assert name in text
    for old in ("step 2: persistent", "step 3: warp-specialized", "step 1: single-buffered"):
        assert old not in text, old


def test_06_says_its_timed_mode_uses_illustrative_unit_costs():
    cells = _nb(next(p for p in NOTEBOOKS if p.name.startswith("06")))["cells"]
    for i, cell in enumerate(cells):
        if "timed=True" in _src(cell):
            around = _src(cells[i - 1]) + _src(cell) + _outputs(cell)
            assert "illustrative unit costs" in around, i
