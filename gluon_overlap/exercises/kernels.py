"""Kernels as text: the source of a step module, a copy with one edit, and loading it back.

An exercise hands the learner the source of a kernel module (maybe with a planted bug); the
learner edits the text and :func:`load_kernel` turns it back into a real ``@gluon.jit``
kernel -- written to a file, so that Gluon (and the CPU executor) can read its source.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import tempfile
from pathlib import Path
from types import ModuleType

_FOLDER = Path(tempfile.gettempdir()) / "gluon_overlap_exercises"


def module_source(module: ModuleType) -> str:
    """The full source text of a module (e.g. ``gluon_overlap.steps.single_buffered``)."""
    return inspect.getsource(module)


def patch_source(source: str, old: str, new: str) -> str:
    """Replace the one occurrence of ``old`` by ``new``; refuse when ``old`` occurs 0 or 2+ times."""
    count = source.count(old)
    if count != 1:
        raise ValueError(f"the text to replace must occur exactly once, found {count} times: {old.strip()[:60]!r}")
    return source.replace(old, new)


def load_module(source: str, name: str = "edited_kernel") -> ModuleType:
    """Import ``source`` as a fresh module (one file per distinct text, under the temp folder)."""
    if not name.isidentifier():
        raise ValueError(f"name={name!r} must be a Python identifier")
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    _FOLDER.mkdir(parents=True, exist_ok=True)
    path = _FOLDER / f"{name}_{digest}.py"
    if not path.exists():
        path.write_text(source)
    module_name = f"gluon_overlap_exercise_{name}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[module_name]
        raise
    return module


def load_kernel(source: str, kernel_name: str, name: str = "edited_kernel"):
    """The ``@gluon.jit`` function ``kernel_name`` of the module whose text is ``source``."""
    module = load_module(source, name)
    fn = getattr(module, kernel_name, None)
    if fn is None or not hasattr(fn, "fn"):
        raise ValueError(f"the edited source defines no @gluon.jit function named {kernel_name!r}")
    return fn
