"""Execute notebooks top to bottom in place, as they are committed (``make notebooks``, or
``python scripts/execute_notebooks.py notebooks/04-overlapping-accumulators.ipynb ...``; no argument: all of them).

Each notebook runs in a fresh kernel from its own folder (nbclient, what ``jupyter nbconvert --execute`` uses). The
per-cell execution timestamps Jupyter records are then removed: they describe one machine's run (a warm Triton cache
makes a two-minute compile look like half a second), and a reader or a renderer showing them would be misled
(``tests/notebooks/test_notebook_files.py`` checks no committed notebook keeps them).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def strip_execution_times(nb: nbformat.NotebookNode) -> int:
    """Remove every cell's ``metadata.execution``; the number of cells that had one."""
    removed = 0
    for cell in nb.cells:
        if cell.get("metadata", {}).pop("execution", None) is not None:
            removed += 1
    return removed


def remove_written_files(nb: nbformat.NotebookNode, folder: Path) -> list[Path]:
    """Delete the files the notebook's ``%%writefile`` cells write (the learner's answer files, ignored by git), so
    the notebook runs as in a fresh clone: its stored output says "Writing", as nbval will see it in CI."""
    removed = []
    for cell in nb.cells:
        first = cell.source.lstrip().splitlines()[0] if cell.cell_type == "code" and cell.source.strip() else ""
        if first.startswith("%%writefile"):
            target = folder / first.split()[-1]
            if target.is_file():
                target.unlink()
                removed.append(target)
    return removed


def execute(path: Path, timeout: int = 1800) -> float:
    """Run ``path`` in place; its wall-clock seconds."""
    nb = nbformat.read(path, as_version=4)
    remove_written_files(nb, path.parent)
    start = time.perf_counter()
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    strip_execution_times(nb)
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        if not path.is_file() or path.suffix != ".ipynb":
            print(f"execute_notebooks: {path} is not a notebook file", file=sys.stderr)
            return 2
    for path in paths:
        print(f"{path.name}: {execute(path):.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
