"""The one registry of the executor's Gluon builtins: one row per builtin.

A row says what the builtin is called in Gluon (``gl.load``, ``mbarrier.wait``, ``smem.index`` -- a
method of a shared-memory descriptor), its CPU implementation, the engine :class:`~gluon_overlap.twin.engine.Op`
class it emits (None: it runs inside the calling partition and touches no memory the engine orders),
its data effect (what :mod:`gluon_overlap.twin.execdata` does with that op, keyed by the op's ``kind``)
and its cost kind (the op kind the timing model prices, or ``"free"``).

Implementations register themselves with :func:`builtin` where they are defined; the rebinding
(:class:`gluon_overlap.twin.gluon_cpu.Rebinder`) serves a Gluon module's names from
:func:`namespace`, and the descriptor / tensor classes serve their methods from their own class
bodies (each method is a row too).  :func:`api_table` renders the table of docs/GLUON_API.md from
the rows and from the names of Triton's Gluon modules that have no row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["NAMESPACES", "REGISTRY", "Builtin", "api_table", "builtin", "namespace", "not_implemented"]

#: registry namespace -> the Triton module (or value type) whose names it implements
NAMESPACES = {
    "gl": "triton.experimental.gluon.language",
    "mbarrier": "triton.experimental.gluon.language.nvidia.hopper.mbarrier",
    "tma": "triton.experimental.gluon.language.nvidia.blackwell.tma",
    "blackwell": "triton.experimental.gluon.language.nvidia.blackwell",
    "cluster": "triton.experimental.gluon.language.nvidia.hopper.cluster",
    "tensor": "gl.tensor (register tensors)",
    "smem": "gl.shared_memory_descriptor",
    "tmem": "blackwell.tensor_memory_descriptor",
    "barriers": "a batch of mbarriers (allocate_mbarrier(batch=n))",
}


@dataclass(frozen=True)
class Builtin:
    """One builtin: Gluon name, CPU implementation, the op it emits, its data effect and cost kind."""

    name: str  # "namespace.name"
    impl: Callable[..., Any]
    op: type | None = None
    effect: str = ""
    cost: str = "free"
    note: str = ""  # what it leaves out, if anything

    @property
    def namespace(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def short(self) -> str:
        return self.name.split(".", 1)[1]


REGISTRY: dict[str, Builtin] = {}


def builtin(name: str, *, op: type | None = None, effect: str = "", cost: str | None = None, note: str = "",
            aliases: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Register the decorated function as the builtin ``name`` (and its ``aliases``)."""
    ns = name.split(".", 1)[0]
    if ns not in NAMESPACES or "." not in name:
        raise ValueError(f"builtin name {name!r} must be <namespace>.<name> with a namespace of {sorted(NAMESPACES)}")

    def register(fn: Callable) -> Callable:
        kind = cost if cost is not None else (op.kind if op is not None else "free")
        for n in (name, *aliases):
            if n in REGISTRY:
                raise ValueError(f"builtin {n} registered twice")
            REGISTRY[n] = Builtin(n, fn, op, effect, kind, note)
        return fn

    return register


def namespace(ns: str) -> dict[str, Callable]:
    """``{short name: implementation}`` of every builtin of namespace ``ns``."""
    return {b.short: b.impl for b in REGISTRY.values() if b.namespace == ns}


#: the Gluon class whose builtin methods each value namespace implements
_VALUE_CLASSES = {
    "tensor": ("triton.experimental.gluon.language", "tensor"),
    "smem": ("triton.experimental.gluon.language", "shared_memory_descriptor"),
    "tmem": ("triton.experimental.gluon.language.nvidia.blackwell", "tensor_memory_descriptor"),
}


def _is_gluon_builtin(v: Any) -> bool:
    from triton.runtime.jit import JITFunction

    return (callable(v) and getattr(v, "__triton_builtin__", False) and not isinstance(v, type)) or \
        isinstance(v, JITFunction)


def _gluon_builtin_names(ns: str) -> list[str]:
    """The builtins (``@builtin`` and library ``@jit`` functions, or a class's builtin methods) Triton's
    Gluon exports for namespace ``ns``."""
    import importlib

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
    import gluon_overlap.twin.gluon_cpu  # noqa: F401  (fills the registry)

    lines = ["# The Gluon API the CPU executor implements", "",
             "Generated from the registry (`gluon_overlap/twin/builtins.py`) by "
             "`python -m gluon_overlap.twin.builtins`; a test checks this file equals the generated text.", "",
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


if __name__ == "__main__":  # the registry lives in the imported module, not in this __main__ copy
    from gluon_overlap.twin.builtins import api_table as _api_table

    print(_api_table(), end="")
