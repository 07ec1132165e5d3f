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


def _notebook_of(notebook: str) -> Path:
    return next(p for p in NOTEBOOKS if p.name.split("-", 1)[0] == notebook)


def test_each_writing_exercise_has_its_skeleton_and_check_and_no_solution():
    """A writing exercise is a %%writefile skeleton and one check of it, whose stored output is the skeleton's FAIL:
    the solution is not in the notebook (ex.solution prints it on request, from the package)."""
    for exercise in writing_exercises():
        cells = _nb(_notebook_of(exercise.notebook))["cells"]
        checks = [i for i, c in enumerate(cells) if f'ex.check("{exercise.title}"' in _src(c)]
        assert len(checks) == 1, (exercise.title, checks)
        assert _src(cells[checks[0] - 1]).startswith("%%writefile my_")
        assert _outputs(cells[checks[0]]).startswith("FAIL"), exercise.title


def _solution_lines(text: str) -> set[str]:
    """The lines of a solution that say something (not imports, blanks, comments or the skeleton's given lines)."""
    code = (line.split("  #", 1)[0].strip() for line in text.splitlines())
    skipped = ("#", "import", "from", "@", "def ", '"""')
    return {line for line in code if len(line) > 25 and not line.startswith(skipped)}


def test_no_notebook_stores_a_hint_or_a_solution():
    """No code cell calls hint(...) or solution(...) (they print on request only), no output holds a hint's text, a
    PASS of an exercise, or a line of a writing exercise's solution that its skeleton does not already hold."""
    from gluon_overlap.exercises.hints import HINTS

    hint_texts = {t for tiers in HINTS.values() for t in tiers}
    for path in NOTEBOOKS:
        cells = _nb(path)["cells"]
        outputs = "\n".join(_outputs(c) for c in cells if c["cell_type"] == "code")
        for cell in cells:
            if cell["cell_type"] != "code":
                continue
            code = "\n".join(line.split("#", 1)[0] for line in _src(cell).splitlines())
            assert not re.search(r"\b(hint|solution)\(", code), (path.name, code[:200])
        assert not any(t[:60] in outputs for t in hint_texts), path.name
        assert "PASS [" not in outputs, path.name
    for exercise in writing_exercises():
        path = _notebook_of(exercise.notebook)
        cells = _nb(path)["cells"]
        check_at = next(i for i, c in enumerate(cells) if f'ex.check("{exercise.title}"' in _src(c))
        given = _solution_lines(_src(cells[check_at - 1]))
        outputs = "\n".join(_outputs(c) for c in cells if c["cell_type"] == "code")
        printed = {line.split("  #", 1)[0].strip() for line in outputs.splitlines()}
        leaked = [line for line in _solution_lines(exercise.solution_text()) - given if line in printed]
        assert not leaked, (exercise.title, leaked[:3])


def test_every_exercise_comes_before_a_printout_of_its_answer():
    """The library function an exercise asks for is printed (inspect.getsource, kernel_source) only after the
    exercise's check cell."""
    asks = {"03b": ("make_descriptors", 'ex.check("03b descriptors"'),
            "05": ("load_partition", 'ex.check("05 load partition"'),
            "05b": ("epilogue_partition", 'ex.check("05b capstone"')}
    for notebook, (name, check) in asks.items():
        cells = _nb(_notebook_of(notebook))["cells"]
        check_at = next(i for i, c in enumerate(cells) if check in _src(c))
        for i, cell in enumerate(cells[:check_at]):
            assert not re.search(rf"(getsource|kernel_source)\([^)]*\b{name}\b", _src(cell)), (notebook, i)
    for notebook in ("05", "05b"):  # the overlap's code: neither the partitions nor the plan's helpers are printed
        for cell in _nb(_notebook_of(notebook))["cells"]:
            assert "mbarrier.wait(p.overlap_bar" not in _outputs(cell) and "mbarrier.arrive(p.overlap_bar" not in \
                _outputs(cell), notebook


def test_cold_cells_say_so():
    """A cell that compiles many kernels (minutes cold on two cores) is announced in the markdown before it, and
    prints a line per compile as it goes; no stored output shows wall-clock compile times."""
    for path in NOTEBOOKS:
        cells = _nb(path)["cells"]
        for i, cell in enumerate(cells):
            src = _src(cell)
            if cell["cell_type"] == "code" and ("compile_step(" in src or "compile_all(" in src) and "for " in src:
                before = _src(cells[i - 1])
                assert re.search(r"first run|[Cc]old", before), (path.name, i)
                assert "flush=True" in src or "progress=" in src, (path.name, i)
            if cell["cell_type"] == "code":
                assert not re.search(r"\d+\.\d s$", _outputs(cell), re.MULTILINE), (path.name, i)


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
