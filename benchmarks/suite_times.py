"""Where the test suite's time goes: wall and CPU seconds per test file and per group of files, the slowest tests,
and the wall time of the whole run.

    .venv/bin/python benchmarks/suite_times.py [--pieces] [--json out.json] [--top 25]

Default: ``make test``'s own command (``make test``: xdist workers, the files in tests/conftest.py's order, every
notebook under nbval), with ``benchmarks/_pytest_cpu.py`` loaded in every worker; its wall time is ``make test``'s.
``--pieces``: each group (tests/core, tests/interp, ..., the browser tests, the notebooks) in a process of its own,
one after the other, no workers (``-n 0``) -- the CPU seconds per file without two workers competing for 2 cores.

Wall seconds on a shared machine move with the others' load (the load average is recorded); CPU seconds much less
(this process and the child processes each file starts: servers, kernels, the CLI, compiler runs). A worker's
``worker-seconds`` are the wall seconds its files took: what the two workers of ``make test`` share out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBVAL = ["--nbval", "--nbval-sanitize-with", "notebooks/nbval_sanitize.cfg"]
GROUPS = {
    "core": ["tests/core"],
    "interp": ["tests/interp"],
    "timing": ["tests/timing"],
    "cli": ["tests/cli"],
    "emulate": ["tests/emulate"],
    "project": ["tests/project"],
    "notebooks-tests": ["tests/notebooks", "--ignore=tests/notebooks/test_browser_explorer.py"],
    "browser": ["tests/notebooks/test_browser_explorer.py"],
    "notebooks (nbval)": ["notebooks", *NBVAL],
}


def group_of(path: str) -> str:
    if path.startswith("notebooks/"):
        return "notebooks (nbval)"
    if path == "tests/notebooks/test_browser_explorer.py":
        return "browser"
    parts = path.split("/")
    return "notebooks-tests" if parts[1] == "notebooks" else parts[1]


def _pytest(args: list[str], out: Path, env: dict[str, str]) -> float:
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "_pytest_cpu", "-m", "not slow", *args],
        cwd=ROOT,
        env={**env, "PYTEST_CPU_JSON": str(out)},
        check=False,
    )
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", action="store_true", help="each group alone, -n 0 (default: make test's run)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--top", type=int, default=25, help="slowest tests to list (default 25)")
    args = parser.parse_args()
    env = dict(
        os.environ,
        PYTHONDONTWRITEBYTECODE="",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")])),
    )
    env.setdefault("TRITON_CACHE_DIR", str(ROOT / ".cache" / "triton"))
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    env.setdefault("MPLBACKEND", "Agg")
    load_before = os.getloadavg()
    walls: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="test-times-") as tmp:
        if args.pieces:
            for name, files in GROUPS.items():
                walls[name] = _pytest(["-n", "0", *files], Path(tmp) / f"{name}.json", env)
        else:  # the Makefile's `test` recipe, less its set-up steps
            walls["make test"] = _pytest(
                ["-n", "auto", "--dist", "loadfile", "--no-loadscope-reorder", "tests", "notebooks", *NBVAL],
                Path(tmp) / "run.json",
                env,
            )
        files: dict[str, dict[str, float]] = {}
        tests: dict[str, float] = {}
        for path in sorted(Path(tmp).iterdir()):
            record = json.loads(path.read_text())
            files.update(record["files"])
            tests.update(record["tests"])
    groups: dict[str, dict[str, float]] = {}
    for name, entry in files.items():
        g = groups.setdefault(group_of(name), {"wall_s": 0.0, "cpu_s": 0.0, "tests": 0})
        g["wall_s"] += entry["wall_s"]
        g["cpu_s"] += entry["cpu_s"] + entry["children_cpu_s"]
        g["tests"] += int(entry["tests"])
    print(f"{'group':22s} {'worker-s':>9s} {'CPU s':>8s} {'tests':>6s}")
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1]["wall_s"]):
        print(f"{name:22s} {g['wall_s']:9.1f} {g['cpu_s']:8.1f} {g['tests']:6d}")
    total_wall = sum(g["wall_s"] for g in groups.values())
    total_cpu = sum(g["cpu_s"] for g in groups.values())
    print(
        f"{'all':22s} {total_wall:9.1f} {total_cpu:8.1f}   run wall: "
        + ", ".join(f"{k} {v:.0f} s" for k, v in walls.items())
    )
    slowest = sorted(tests.items(), key=lambda kv: -kv[1])[: args.top]
    for nodeid, seconds in slowest:
        print(f"  {seconds:6.1f} s  {nodeid}")
    if args.json:
        record = {
            "how": (
                "benchmarks/suite_times.py "
                + ("--pieces: each group alone, -n 0" if args.pieces else "make test's pytest command (xdist, -n auto)")
                + "; wall and CPU (own + reaped children) per "
                "test file from benchmarks/_pytest_cpu.py"
            ),
            "machine": {"cores": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()},
            "git": subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
            ).stdout.strip(),
            "run_wall_s": {k: round(v, 1) for k, v in walls.items()},
            "groups": {k: {kk: round(vv, 1) for kk, vv in v.items()} for k, v in groups.items()},
            "files": {k: {kk: round(vv, 2) for kk, vv in v.items()} for k, v in files.items()},
            "slowest_tests": {k: round(v, 2) for k, v in slowest},
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
