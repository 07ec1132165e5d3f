"""Kernels as text: the source of a step module, a copy with one edit, and loading it back.

An exercise hands the learner the source of a kernel module (maybe with a planted bug); the
learner edits the text and :func:`load_kernel` turns it back into a real ``@gluon.jit``
kernel -- written to a file, so that Gluon (and the CPU executor) can read its source.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import TYPE_CHECKING

from gluon_overlap.emulate.kernels import import_source

if TYPE_CHECKING:
    from gluon_overlap.compiler.compile import GluonFunction


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
    return import_source(source, name, label=f"{name}.py")  # reports name the file, not its hashed copy


def load_kernel(source: str, kernel_name: str, name: str = "edited_kernel") -> GluonFunction:
    """The ``@gluon.jit`` function ``kernel_name`` of the module whose text is ``source``."""
    module = load_module(source, name)
    fn = getattr(module, kernel_name, None)
    if fn is None or not hasattr(fn, "fn"):
        raise ValueError(f"the edited source defines no @gluon.jit function named {kernel_name!r}")
    return fn
