"""The committed notebooks open as they are and show something without a kernel.

* kernelspec metadata exactly as the installed ipykernel writes it, so JupyterLab does not rewrite a
  notebook on open (and ask to save it on close);
* every stored widget output carries, beside the widget view, a static PNG of the widget and a
  text line saying that running the cell makes it interactive (what GitHub, nbconvert and an
  untrusted notebook show).
"""

from __future__ import annotations

import base64
import copy
import functools
import io
import json
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import KERNEL_NAME, get_kernel_dict
from nbconvert import HTMLExporter, MarkdownExporter
from PIL import Image

from gluon_overlap.explorer import PIXEL_SCALE, STATIC_NOTE

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _widget_outputs(nb: dict) -> list[dict]:
    return [
        out
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        for out in cell.get("outputs", [])
        if WIDGET_VIEW in out.get("data", {})
    ]


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 8


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_kernelspec_is_what_ipykernel_writes(path):
    spec = _load(path)["metadata"]["kernelspec"]
    kernel = get_kernel_dict()
    assert spec == {"display_name": kernel["display_name"], "language": kernel["language"], "name": KERNEL_NAME}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_widget_output_has_a_static_picture(path):
    nb = _load(path)
    for out in _widget_outputs(nb):
        data = out["data"]
        assert "image/png" in data, f"{path.name}: a widget output without a static picture (re-execute it)"
        png = Image.open(io.BytesIO(base64.b64decode(data["image/png"])))
        png.verify()
        shown = out.get("metadata", {}).get("image/png", {}).get("width")
        assert (
            shown is not None
            and shown * PIXEL_SCALE == Image.open(io.BytesIO(base64.b64decode(data["image/png"]))).width
        )
        text = "".join(data["text/plain"])
        assert text.startswith(STATIC_NOTE), text[:200]
    if path.name in ("explorer.ipynb", "05b-building-the-overlap.ipynb"):
        assert _widget_outputs(nb), f"{path.name} should show the explorer"


def test_nbconvert_shows_the_picture_where_widgets_cannot_run():
    path = next(p for p in NOTEBOOKS if p.name == "explorer.ipynb")
    nb = nbformat.read(path, as_version=4)
    stored = _widget_outputs(_load(path))[0]["data"]["image/png"]
    markdown, resources = MarkdownExporter().from_notebook_node(nb)
    assert any(base64.b64encode(blob).decode() == stored for blob in resources["outputs"].values())
    bare = copy.deepcopy(nb)  # HTML without the saved widget state (as on a site that drops it)
    bare.metadata.pop("widgets", None)
    page, _ = HTMLExporter().from_notebook_node(bare)
    assert f"data:image/png;base64,{stored}" in page.replace("\n", "")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_cell_keeps_one_runs_execution_times(path):
    """Per-cell timestamps describe one machine's run (a warm cache makes a minutes-long compile look instant):
    ``scripts/execute_notebooks.py`` (``make notebooks``) removes them after executing."""
    timed = [i for i, cell in enumerate(_load(path)["cells"]) if "execution" in cell.get("metadata", {})]
    assert not timed, f"{path.name}: cells {timed} keep execution times; run scripts/execute_notebooks.py"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_answer_files_are_written_as_in_a_fresh_clone(path):
    """A ``%%writefile`` cell prints "Writing X" when X does not exist yet (a fresh clone: the answer files are
    ignored by git) and "Overwriting X" otherwise; nbval in CI sees the first, so that is what is stored
    (``scripts/execute_notebooks.py`` removes the answer files before it runs a notebook)."""
    stale = [
        i
        for i, cell in enumerate(_load(path)["cells"])
        if cell["cell_type"] == "code"
        for out in cell.get("outputs", [])
        if "Overwriting " in "".join(out.get("text", ""))
    ]
    assert not stale, f"{path.name}: cells {stale} store 'Overwriting'; run scripts/execute_notebooks.py"


@functools.cache
def _html_exporter() -> HTMLExporter:
    """One exporter for every notebook (its templates load once); the code cells' inputs are left out (their
    syntax highlighting is most of an export's time and holds no image), markdown is kept (it may hold one)."""
    return HTMLExporter(exclude_input=True)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_has_alternative_text(path):
    """A figure rendered outside Jupyter (nbconvert's HTML, what a screen reader reads) says what it shows: each cell
    with a picture carries a description of it (cell metadata ``alt``, which nbconvert writes as the image's alt)."""
    import re

    html, _ = _html_exporter().from_filename(str(path))
    images = re.findall(r"<img\b[^>]*>", html)
    pictures = [
        i
        for i, cell in enumerate(_load(path)["cells"])
        if any("image/png" in o.get("data", {}) for o in cell.get("outputs", []))
    ]
    missing = [tag[:80] for tag in images if not re.search(r'\balt="[^"]{40,}"', tag)]
    assert not missing, f"{path.name}: {len(missing)} of {len(images)} images without a description: {missing[:2]}"
    for i in pictures:
        assert len(_load(path)["cells"][i]["metadata"].get("alt", "").split()) >= 8, (path.name, i)
