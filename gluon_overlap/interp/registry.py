"""The one registry of the executor's Gluon builtins: one row per builtin.

A row says what the builtin is called in Gluon (``gl.load``, ``mbarrier.wait``, ``smem.index`` -- a
method of a shared-memory descriptor), its CPU implementation, the engine :class:`~gluon_overlap.interp.ops.Op`
class it emits (None: it runs inside the calling partition and touches no memory the engine orders),
its data effect (what :mod:`gluon_overlap.interp.data` does with that op, keyed by the op's ``kind``)
and its cost kind (the op kind the timing model prices, or ``"free"``).

Implementations register themselves with :func:`builtin` where they are defined; the rebinding
(:class:`gluon_overlap.interp.rebind.Rebinder`) serves a Gluon module's names from
:func:`namespace`, and the descriptor / tensor classes serve their methods from their own class
bodies (each method is a row too).  :mod:`gluon_overlap.interp.apidoc` renders the table of
docs/GLUON_API.md from the rows and from the names of Triton's Gluon modules that have no row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gluon_overlap.interp.ops import Op

__all__ = ["NAMESPACES", "REGISTRY", "Builtin", "builtin", "namespace"]

#: registry namespace -> the Triton module (or value type) whose names it implements
NAMESPACES = {
    "gl": "triton.experimental.gluon.language",
    "mbarrier": "triton.experimental.gluon.language.nvidia.hopper.mbarrier",
    "tma": "triton.experimental.gluon.language.nvidia.blackwell.tma",
    "blackwell": "triton.experimental.gluon.language.nvidia.blackwell",
    "cluster": "triton.experimental.gluon.language.nvidia.hopper.cluster",
    "ampere": "triton.experimental.gluon.language.nvidia.ampere.async_copy",
    "clc": "triton.experimental.gluon.language.nvidia.blackwell.clc",
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
    op: type[Op] | None = None
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


def builtin(
    name: str,
    *,
    op: type[Op] | None = None,
    effect: str = "",
    cost: str | None = None,
    note: str = "",
    aliases: tuple[str, ...] = (),
) -> Callable[[Callable], Callable]:
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
