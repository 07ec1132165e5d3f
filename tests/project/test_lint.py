"""The code is lint-clean and formatted: ``ruff check`` and ``ruff format --check`` with pyproject.toml's
``[tool.ruff]`` settings (the version pinned in the test extra) find nothing in the package, the tests, the
benchmarks or the scripts -- the same commands as ``make lint``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


CHECKED = ["gluon_overlap", "tests", "benchmarks", "scripts"]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed (it is in the test extra: pip install -e '.[test]')"
    return subprocess.run([ruff, *args, *CHECKED], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing():
    done = _ruff("check")
    assert done.returncode == 0, f"ruff check (exit {done.returncode}):\n{done.stdout}{done.stderr}"


def test_ruff_format_would_change_nothing():
    done = _ruff("format", "--check")
    assert done.returncode == 0, f"ruff format --check (exit {done.returncode}; `make format` fixes it):\n{done.stdout}"
