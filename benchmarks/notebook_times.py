"""Notebooks 01-08 run cold: each in a fresh kernel, with an empty Triton cache and empty gluon-overlap caches
(verdicts, model runs, kernel copies), as on a fresh clone; per notebook its wall time, and per cell its wall time
and its longest silence (the longest stretch with no output: start to first output, between outputs, last output to
the end). The issue's bar: all of them within 10 minutes on 2 cores, no cell silent for more than 30 s.

    .venv/bin/python benchmarks/notebook_times.py [--warm] [--json out.json] [notebooks/NN-*.ipynb ...]

The notebooks run from copies in a temporary folder (the repository is not touched), in order, one at a time;
the caches are made empty once, before the first one, and shared by the rest (as a learner running them in
order: 03b finds what 03a compiled).  ``--warm`` uses the caches as they are instead (``TRITON_CACHE_DIR`` or the
repository's ``.cache/triton``). The load average and the CPU seconds (this process's children: the kernels) are
recorded beside the wall times: on a shared machine the CPU seconds are what changes least.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
SILENT_LIMIT_S = 30.0
#: the iopub messages a learner sees as output (progress bars update a display or clear and redraw it)
OUTPUT_MESSAGES = {"stream", "display_data", "execute_result", "update_display_data", "clear_output", "error"}


class TimedClient(NotebookClient):
    """nbclient's runner, noting the moment of every output message of every cell."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.moments: dict[int, list[float]] = {}

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):  # noqa: ANN001, ANN201
        self.moments[cell_index] = [time.monotonic()]
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        finally:
            self.moments[cell_index].append(time.monotonic())

    def process_message(self, msg, cell, cell_index):  # noqa: ANN001, ANN201
        if msg.get("msg_type") in OUTPUT_MESSAGES and cell_index in self.moments:
            self.moments[cell_index].append(time.monotonic())
        return super().process_message(msg, cell, cell_index)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_notebook(path: Path, workdir: Path, env: dict[str, str]) -> dict:
    """Execute a copy of ``path`` in ``workdir``; its wall and CPU seconds and its cells' times."""
    copy = workdir / path.name
    shutil.copy(path, copy)
    nb = nbformat.read(copy, as_version=4)
    old_env = dict(os.environ)
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        client = TimedClient(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(workdir)}})
        cpu = _children_cpu()
        start = time.monotonic()
        client.execute()
        wall = time.monotonic() - start
        cpu = _children_cpu() - cpu
    finally:
        os.environ.clear()
        os.environ.update(old_env)
    cells = []
    for index, moments in sorted(client.moments.items()):
        moments = sorted(moments)
        gaps = [b - a for a, b in zip(moments, moments[1:], strict=False)]
        source = nb.cells[index].source.strip().splitlines()
        cells.append(
            {
                "cell": index,
                "seconds": round(moments[-1] - moments[0], 2),
                "longest_silence_s": round(max(gaps, default=0.0), 2),
                "first_line": source[0][:80] if source else "",
            }
        )
    return {"notebook": path.name, "wall_s": round(wall, 1), "kernel_cpu_s": round(cpu, 1), "cells": cells}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/0*.ipynb (01-08)")
    parser.add_argument("--warm", action="store_true", help="use the caches as they are (default: empty ones)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    args = parser.parse_args()
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("0*.ipynb"))
    load_before = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="notebook-times-") as tmp:
        tmp_path = Path(tmp)
        workdir = tmp_path / "notebooks"
        workdir.mkdir()
        env = {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "TRITON_DEFAULT_FP_FUSION": "1",
            "MPLBACKEND": "Agg",
        }
        if not args.warm:
            (tmp_path / "triton").mkdir()
            (tmp_path / "xdg-cache").mkdir(mode=0o700)
            env.update(TRITON_CACHE_DIR=str(tmp_path / "triton"), XDG_CACHE_HOME=str(tmp_path / "xdg-cache"))
        else:
            env.setdefault("TRITON_CACHE_DIR", os.environ.get("TRITON_CACHE_DIR", str(ROOT / ".cache" / "triton")))
        # the notebooks read the repository's docs/ and data/ by relative paths from their folder
        for name in ("docs", "data"):
            if (ROOT / name).exists():
                (tmp_path / name).symlink_to(ROOT / name)
        for path in paths:
            result = run_notebook(path, workdir, env)
            worst = max(result["cells"], key=lambda c: c["longest_silence_s"], default=None)
            silence, where = (worst["longest_silence_s"], worst["cell"]) if worst else (0.0, "-")
            print(
                f"{path.name:40s} {result['wall_s']:7.1f} s wall {result['kernel_cpu_s']:7.1f} s CPU   longest "
                f"silence {silence:5.1f} s (cell {where})",
                flush=True,
            )
            results.append(result)
    total = sum(r["wall_s"] for r in results)
    cells = [(r["notebook"], c) for r in results for c in r["cells"]]
    silent = [(n, c) for n, c in cells if c["longest_silence_s"] > SILENT_LIMIT_S]
    slowest = sorted(cells, key=lambda nc: -nc[1]["seconds"])[:10]
    print(
        f"total {total:.0f} s wall ({total / 60:.1f} min), {sum(r['kernel_cpu_s'] for r in results):.0f} s CPU; "
        f"cells silent over {SILENT_LIMIT_S:.0f} s: {len(silent)}"
    )
    for name, cell in slowest:
        print(
            f"  {cell['seconds']:6.1f} s (silent {cell['longest_silence_s']:5.1f} s)  {name} cell {cell['cell']}: "
            f"{cell['first_line']}"
        )
    record = {
        "how": (
            "benchmarks/notebook_times.py: each notebook copied to a temporary folder and run by nbclient in a "
            "fresh kernel, one after the other; "
            + (
                "caches as they were"
                if args.warm
                else "TRITON_CACHE_DIR and XDG_CACHE_HOME empty before the first (cold)"
            )
        ),
        "cold": not args.warm,
        "machine": {
            "cores": os.cpu_count(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
            "python": platform.python_version(),
        },
        "git": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "total_wall_s": round(total, 1),
        "cells_silent_over_30_s": [{"notebook": n, **c} for n, c in silent],
        "notebooks": results,
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
