"""Import a script of ``benchmarks/`` (not a package) as a module, for the tests of the prepared device measurements."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, imported under ``name``; ``benchmarks/`` goes on ``sys.path`` first, as when it
    runs as a script (for its shared helpers, such as ``_h200``)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    path = BENCHMARKS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import does: dataclasses and pickling look a class's module up there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # no half-built module left behind
        raise
    return module


def load_keeping_environment(name: str) -> ModuleType:
    """:func:`load`, with the process environment restored afterwards: a script that sets a variable for its own
    process (``model_trials`` turns the model's run cache off) leaves the test session's as it was."""
    saved = dict(os.environ)
    try:
        return load(name)
    finally:
        os.environ.clear()
        os.environ.update(saved)
