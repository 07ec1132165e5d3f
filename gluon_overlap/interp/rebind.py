"""How a ``@gluon.jit`` function runs on the CPU: its globals rebound onto the registry of builtins.

Each jit function's Python function (``JITFunction.fn``) is copied with its globals replaced -- ``gl``,
``mbarrier``, ``tma``, ``cluster`` and the ``tcgen05_*`` functions become namespaces served from the builtin
registry (:mod:`gluon_overlap.interp.registry`), other jit functions become their own rebound copies,
``@gluon.constexpr_function``\\ s become their plain Python functions and ``@gluon.aggregate`` classes become
plain classes with the same fields and methods.  Nothing of the kernel's text changes: what the kernel does is
what runs.  A builtin without a registry row raises :class:`ExecutorError` naming the builtin and the kernel
line -- never a silent no-op.
"""

from __future__ import annotations

import types
from typing import Any

from triton.runtime.jit import ConstexprFunction, JITFunction

import gluon_overlap.interp.async_ops  # noqa: F401  (registers its builtins)
from gluon_overlap.interp.context import (
    ExecutorError,
    current_or_none,
    where,
)
from gluon_overlap.interp.language import unsupported
from gluon_overlap.interp.registry import REGISTRY, namespace
from gluon_overlap.interp.tensors import (
    runtime_range,
)

__all__ = ["CpuAggregate", "CpuModule", "Rebinder", "namespace_of"]


# =====================================================================================
# namespaces and rebinding
# =====================================================================================
#: the Gluon module whose names each registry namespace serves (the longest matching suffix wins)
_MODULE_NAMESPACES = (
    (".mbarrier", "mbarrier"), (".tma", "tma"), (".cluster", "cluster"), (".nvidia.blackwell", "blackwell"),
    (".nvidia.hopper", "blackwell"), (".nvidia", None), ("triton.experimental.gluon.language", "gl"),
)
_PASSTHROUGH = {"constexpr": lambda x: x, "range": runtime_range}


def namespace_of(module_name: str) -> str | None:
    """The registry namespace of a Triton language module (``gl`` for the language itself, its private
    submodules and ``triton.language``, whose library functions Gluon re-exports); None for other modules."""
    for suffix, ns in _MODULE_NAMESPACES:
        if module_name.endswith(suffix):
            return ns
    if module_name.startswith(("triton.experimental.gluon.language", "triton.language")) and \
            ".nvidia" not in module_name and ".amd" not in module_name:
        return "gl"
    return None


class CpuModule:
    """A Gluon language module with its builtins served from the registry (unknown builtins raise)."""

    def __init__(self, real: types.ModuleType, overrides: dict[str, Any], rebinder: Rebinder):
        self._real, self._overrides, self._rebinder = real, overrides, rebinder

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        value = getattr(self._real, name)
        return self._rebinder.convert(value, f"{self._real.__name__.rsplit('.', 1)[-1]}.{name}")


def _is_builtin(value: Any) -> bool:
    return callable(value) and getattr(value, "__triton_builtin__", False) and not isinstance(value, type)


class Rebinder:
    """Turns jit functions, constexpr functions, aggregates and Gluon modules into CPU equivalents."""

    def __init__(self) -> None:
        self._cache: dict[int, Any] = {}
        self._globals: dict[int, dict] = {}
        self.codes: set[types.CodeType] = set()
        self.aggregates: dict[int, type] = {}

    # --- modules ---------------------------------------------------------------------
    def module(self, mod: types.ModuleType) -> Any:
        name = mod.__name__
        if not name.startswith("triton.experimental.gluon.language"):
            return mod
        ns = namespace_of(name)
        overrides = dict(namespace(ns)) if ns is not None else {}
        if ns == "gl":
            overrides.update(_PASSTHROUGH)
        return CpuModule(mod, overrides, self)

    # --- values ----------------------------------------------------------------------
    def convert(self, value: Any, name: str = "?") -> Any:
        if isinstance(value, types.ModuleType):
            return self.module(value)
        if isinstance(value, JITFunction):
            if namespace_of(getattr(value.fn, "__module__", "") or "") is not None:
                return self.builtin(value.fn, name)  # a library function of Triton's: the registry's or an error
            return self.jit(value)
        if isinstance(value, ConstexprFunction):
            return value.fn
        if isinstance(value, type) and getattr(value, "__triton_aggregate__", False):
            return self.aggregate(value)
        if _is_builtin(value):
            return self.builtin(value, name)
        return value

    @staticmethod
    def builtin(value: Any, name: str) -> Any:
        """The registry's implementation of a Gluon builtin, or a stub that raises naming it."""
        ns = namespace_of(getattr(value, "__module__", "") or "")
        short = getattr(value, "__name__", name.rsplit(".", 1)[-1])
        row = REGISTRY.get(f"{ns}.{short}") if ns is not None else None
        if row is None and ns == "blackwell":  # hopper / blackwell share names (fence_async_shared, ...)
            row = REGISTRY.get(f"gl.{short}")
        return row.impl if row is not None else unsupported(f"{ns or 'gl'}.{short}")

    def jit(self, fn: JITFunction) -> Any:
        key = id(fn)
        if key not in self._cache:
            py = fn.fn
            g = fn.fn.__globals__
            if id(g) not in self._globals:
                self._globals[id(g)] = {}
                fill = True
            else:
                fill = False
            new = self._globals[id(g)]
            cpu = types.FunctionType(py.__code__, new, py.__name__, py.__defaults__, py.__closure__)
            cpu.__kwdefaults__ = py.__kwdefaults__
            cpu.__qualname__ = py.__qualname__
            cpu.__wrapped_jit__ = fn
            self._collect_codes(py.__code__)
            self._cache[key] = cpu
            if fill:
                for k, v in g.items():
                    new[k] = self.convert(v, k)
                new["__builtins__"] = g.get("__builtins__", __builtins__)
                new.setdefault("range", runtime_range)  # a loop over runtime bounds has a runtime variable
        return self._cache[key]

    def _collect_codes(self, code: types.CodeType) -> None:
        self.codes.add(code)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                self._collect_codes(c)

    def aggregate(self, agg: type) -> type:
        key = id(agg)
        if key in self.aggregates:
            return self.aggregates[key]
        fields = tuple(getattr(agg, "__annotations__", {}))
        ns: dict[str, Any] = {"__slots__": fields, "_fields": fields}
        cls = type(agg.__name__, (CpuAggregate,), ns)
        self.aggregates[key] = cls
        for name, member in vars(agg).items():
            if name.startswith("__") or name in ("_get_instance", "_set_name", "_flatten_ir", "type"):
                continue
            if isinstance(member, JITFunction):
                setattr(cls, name, self.jit(member))
            elif isinstance(member, ConstexprFunction):
                setattr(cls, name, member.fn)
            elif isinstance(member, (staticmethod, classmethod)) or callable(member):
                setattr(cls, name, member)
        return cls


class CpuAggregate:
    """Base of the plain classes that stand in for ``@gluon.aggregate`` ones."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise ExecutorError(f"{type(self).__name__}() takes {len(fields)} fields, got {len(args)}{where()}")
        for name, value in zip(fields, args, strict=False):
            object.__setattr__(self, name, value)
        for name, value in kwargs.items():
            if name not in fields:
                raise ExecutorError(f"{type(self).__name__} has no field {name!r}{where()}")
            object.__setattr__(self, name, value)
        missing = [f for f in fields if not hasattr(self, f)]
        if missing:
            raise ExecutorError(f"{type(self).__name__}() is missing field(s) {missing}{where()}")
        ctx = current_or_none()
        if "tile_id" in fields and "has_work" in fields and ctx is not None:
            ctx.on_schedule(self.tile_id, self.has_work)  # annotation only (reports, timing)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"
