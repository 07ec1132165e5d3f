"""The code is lint-clean: ``ruff check`` with pyproject.toml's ``[tool.ruff]`` settings (the version pinned in the
test extra) finds nothing in the package, the tests or the benchmarks -- the same command as ``make lint``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed (it is in the test extra: pip install -e '.[test]')"
    done = subprocess.run([ruff, "check", "gluon_overlap", "tests", "benchmarks"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"ruff check (exit {done.returncode}):\n{done.stdout}{done.stderr}"
