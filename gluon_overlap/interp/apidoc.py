"""docs/GLUON_API.md, rendered from the registry of builtins: what the interpreter implements, and what not.

:func:`api_table` lists one row per registered builtin (its Gluon name, the operation it emits, its data
effect, its cost kind) and, per namespace, the builtins Triton's Gluon modules export that have no row
(:func:`not_implemented`).  Importing this module imports the modules that register builtins.
"""

from __future__ import annotations

import importlib
from typing import Any

from triton.runtime.jit import JITFunction

import gluon_overlap.interp.rebind  # noqa: F401  (imports every module that registers builtins)
from gluon_overlap.interp.registry import NAMESPACES, REGISTRY, namespace

#: the Gluon class whose builtin methods each value namespace implements
_VALUE_CLASSES = {
    "tensor": ("triton.experimental.gluon.language", "tensor"),
    "smem": ("triton.experimental.gluon.language", "shared_memory_descriptor"),
    "tmem": ("triton.experimental.gluon.language.nvidia.blackwell", "tensor_memory_descriptor"),
}


def _is_gluon_builtin(v: Any) -> bool:
    return (callable(v) and getattr(v, "__triton_builtin__", False) and not isinstance(v, type)) or \
        isinstance(v, JITFunction)


def _gluon_builtin_names(ns: str) -> list[str]:
    """The builtins (``@builtin`` and library ``@jit`` functions, or a class's builtin methods) Triton's
    Gluon exports for namespace ``ns``."""
    if ns in _VALUE_CLASSES:
        module, cls_name = _VALUE_CLASSES[ns]
        cls = getattr(importlib.import_module(module), cls_name)
        return sorted(n for n in dir(cls) if not n.startswith("_") and _is_gluon_builtin(getattr(cls, n, None)))
    mod = importlib.import_module(NAMESPACES[ns])
    names = set(getattr(mod, "__all__", ())) | {n for n in dir(mod) if not n.startswith("_")}
    return sorted(n for n in names if _is_gluon_builtin(getattr(mod, n, None)))


def not_implemented() -> dict[str, list[str]]:
    """Per namespace, the Gluon builtins Triton 3.9 exports that have no row (a kernel that calls one stops
    with an error naming the builtin and the kernel line)."""
    out = {}
    for ns in NAMESPACES:
        if ns == "barriers":
            continue
        have = set(namespace(ns))
        out[ns] = [n for n in _gluon_builtin_names(ns) if n not in have]
    return out


def api_table() -> str:
    """docs/GLUON_API.md: the builtins implemented (one row each) and the ones left out."""
    lines = ["# The Gluon API the CPU executor implements", "",
             "Generated from the registry (`gluon_overlap/interp/registry.py`) by "
             "`python -m gluon_overlap.regenerate gluon-api`; a test checks this file equals the generated text.", "",
             "Each row is one builtin: the engine operation it emits (none: it runs inside the calling partition), "
             "what the data backend does with it, and the cost kind the timing model prices.", ""]
    for ns, module in NAMESPACES.items():
        rows = sorted((b for b in REGISTRY.values() if b.namespace == ns), key=lambda b: b.name)
        if not rows:
            continue
        lines += [f"## `{ns}` ({module})", "", "| builtin | emits | data effect | cost kind | leaves out |",
                  "|---|---|---|---|---|"]
        for b in rows:
            emits = b.op.__name__ if b.op is not None else "-"
            lines.append(f"| `{b.name}` | {emits} | {b.effect or '-'} | {b.cost} | {b.note or '-'} |")
        lines.append("")
    lines += ["## Not implemented", "",
              "Builtins Triton 3.9's Gluon modules export that have no row: a kernel that calls one stops with "
              "`ExecutorError: <module>.<name> is not implemented by the CPU executor (at <file>:<line> ...)`.", ""]
    for ns, names in not_implemented().items():
        lines.append(f"- `{ns}`: " + (", ".join(f"`{n}`" for n in names) if names else "(none)"))
    lines.append("")
    return "\n".join(lines)

