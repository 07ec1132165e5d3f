"""How a ``@gluon.jit`` function runs on the CPU: its globals rebound onto the registry of builtins.

Each jit function's Python function (``JITFunction.fn``) is copied with its globals replaced -- ``gl``,
``mbarrier``, ``tma``, ``cluster``, the ``ampere.async_copy`` module and the ``tcgen05_*`` functions become
namespaces served from the builtin registry (:mod:`gluon_overlap.interp.registry`), other jit functions become
their own rebound copies, ``@gluon.constexpr_function``\\ s become plain Python functions and ``@gluon.aggregate``
classes become plain classes with the same fields, constructor and methods.  Nothing of the kernel's text
changes: what the kernel does is what runs.  A builtin without a registry row raises :class:`ExecutorError`
naming the builtin and the kernel line -- never a silent no-op.

A jit function is reached however Python reaches it, as Triton's frontend reaches it: a global, an attribute
of an imported module (``t7.MMAv5``: a module of the user's is served through :class:`CpuUserModule`), a
closure cell (a class or function made by a factory), a default argument, a ``gl.constexpr`` argument of the
launch (``MMAImpl.initialize``), an aggregate's field or method.  Whatever path is left (a jit function kept in
a dict, an attribute of a plain object) is caught when it is called: inside a CPU run, ``JITFunction.__call__``
runs the function's CPU copy instead of raising.

Values follow the frontend's constexpr rules: on the CPU a ``gl.constexpr`` is its plain value (as in Triton's
own interpreter), so a constexpr combined with a runtime value is a runtime value; ``min`` / ``max`` are the
frontend's (``tl.core.builtin_min``): a runtime value among the arguments makes the result a runtime value.
Library functions Triton writes as ``@jit`` Python (``tl.flip``, ``tl.sort``, ``tl.softmax``, ...) run their own
source over the registry when the registry has no row of their own.
"""

from __future__ import annotations

import builtins
import sys
import types
from typing import Any, cast

from triton.language.core import constexpr as _real_constexpr
from triton.runtime.jit import ConstexprFunction, JITFunction

import gluon_overlap.interp.async_ops  # noqa: F401  (registers its builtins)
import gluon_overlap.interp.atomics  # noqa: F401  (registers its builtins)
import gluon_overlap.interp.clc  # noqa: F401  (registers its builtins)
import gluon_overlap.interp.cp_async  # noqa: F401  (registers its builtins)
from gluon_overlap.interp.context import (
    CALL_RUNTIME,
    ExecutorError,
    current_or_none,
    where,
)
from gluon_overlap.interp.language import builtin_max, builtin_min, unsupported
from gluon_overlap.interp.registry import REGISTRY, namespace
from gluon_overlap.interp.tensors import (
    runtime_range,
)

__all__ = ["CpuAggregate", "CpuConstexpr", "CpuModule", "CpuUserModule", "Rebinder", "namespace_of", "unwrap"]


# =====================================================================================
# constexpr values
# =====================================================================================
def unwrap(value: Any) -> Any:
    """A ``gl.constexpr``'s plain value (other values unchanged): on the CPU constexprs are plain Python values."""
    while isinstance(value, _real_constexpr):
        value = value.value
    return value


class _ConstexprMeta(type):
    def __instancecheck__(cls, value: Any) -> bool:
        return isinstance(value, _real_constexpr)


class CpuConstexpr(metaclass=_ConstexprMeta):
    """``gl.constexpr`` in CPU code: calling it gives the plain value (``gl.constexpr(x)`` is ``x``);
    ``isinstance(v, gl.constexpr)`` keeps its meaning."""

    def __new__(cls, value: Any = None) -> Any:
        return unwrap(value)


#: the Gluon module whose names each registry namespace serves (the longest matching suffix wins)
_MODULE_NAMESPACES = (
    (".mbarrier", "mbarrier"),
    (".tma", "tma"),
    (".cluster", "cluster"),
    (".async_copy", "ampere"),
    (".clc", "clc"),
    (".nvidia.blackwell", "blackwell"),
    (".nvidia.hopper", "blackwell"),
    (".nvidia.ampere", "ampere"),
    (".nvidia", None),
    ("triton.experimental.gluon.language", "gl"),
)
_PASSTHROUGH = {"constexpr": CpuConstexpr, "range": runtime_range}
#: Python's builtins as Triton's frontend sees them in a jit function (``min`` / ``max`` are its own)
_FRONTEND_BUILTINS = {"range": runtime_range, "min": builtin_min, "max": builtin_max}


def namespace_of(module_name: str) -> str | None:
    """The registry namespace of a Triton language module (``gl`` for the language itself, its private
    submodules and ``triton.language``, whose library functions Gluon re-exports); None for other modules."""
    for suffix, ns in _MODULE_NAMESPACES:
        if module_name.endswith(suffix):
            return ns
    if (
        module_name.startswith(("triton.experimental.gluon.language", "triton.language"))
        and ".nvidia" not in module_name
        and ".amd" not in module_name
    ):
        return "gl"
    return None


def _is_language_module(name: str) -> bool:
    return name.startswith(("triton.experimental.gluon.language", "triton.language"))


#: modules served as they are (no jit function lives there): the standard library, torch, numpy
_PLAIN_MODULE_ROOTS = frozenset(sys.stdlib_module_names) | {"torch", "numpy", "greenlet", "gluon_overlap"}


class CpuModule:
    """A Gluon language module with its builtins served from the registry (unknown builtins raise)."""

    def __init__(self, real: types.ModuleType, overrides: dict[str, Any], rebinder: Rebinder):
        self._real, self._overrides, self._rebinder = real, overrides, rebinder

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        value = getattr(self._real, name)
        return self._rebinder.convert(value, f"{self._real.__name__.rsplit('.', 1)[-1]}.{name}")

    def __repr__(self) -> str:
        return f"<CPU view of module {self._real.__name__}>"


class CpuUserModule:
    """A module of the user's (``t7 = importlib.import_module("07-persistence")``) as kernel code sees it: each
    attribute converted on first access (a jit function to its CPU copy, an aggregate to its CPU class)."""

    def __init__(self, real: types.ModuleType, rebinder: Rebinder):
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_rebinder", rebinder)

    def __getattr__(self, name: str) -> Any:
        value = self._rebinder.convert(getattr(self._real, name), name)
        object.__setattr__(self, name, value)  # later accesses are plain attribute reads
        return value

    def __repr__(self) -> str:
        return f"<CPU view of module {self._real.__name__}>"


def _is_builtin(value: Any) -> bool:
    return callable(value) and getattr(value, "__triton_builtin__", False) and not isinstance(value, type)


class Rebinder:
    """Turns jit functions, constexpr functions, aggregates and modules into CPU equivalents (one per launch)."""

    def __init__(self) -> None:
        self._cache: dict[int, Any] = {}
        self._keep: list[Any] = []  # the originals behind the cache's ids (an id is only unique while alive)
        self._globals: dict[int, dict] = {}
        self._modules: dict[int, Any] = {}
        self.codes: set[types.CodeType] = set()
        self.aggregates: dict[int, type] = {}

    # --- modules ---------------------------------------------------------------------
    def module(self, mod: types.ModuleType) -> Any:
        name = mod.__name__
        hit = self._modules.get(id(mod))
        if hit is not None:
            return hit
        if _is_language_module(name):
            ns = namespace_of(name)
            overrides = dict(namespace(ns)) if ns is not None else {}
            if ns == "gl":
                overrides.update(_PASSTHROUGH)
            out: Any = CpuModule(mod, overrides, self)
        elif name.split(".", 1)[0] in _PLAIN_MODULE_ROOTS or (
            name.startswith("triton") and not name.startswith("triton.experimental.gluon")
        ):
            out = mod
        elif name.startswith("triton.experimental.gluon"):  # gluon itself (the decorators), its host helpers
            out = mod
        else:
            out = CpuUserModule(mod, self)
        self._modules[id(mod)] = out
        self._keep.append(mod)
        return out

    # --- values ----------------------------------------------------------------------
    def convert(self, value: Any, name: str = "?") -> Any:
        """The CPU counterpart of a value kernel code reaches (unchanged when it has none)."""
        if isinstance(value, _real_constexpr):
            return self.convert(unwrap(value), name)
        if isinstance(value, (int, float, str, type(None))):
            return value
        if isinstance(value, types.ModuleType):
            return self.module(value)
        if isinstance(value, JITFunction):
            module = getattr(value.fn, "__module__", "") or ""
            if namespace_of(module) is not None:  # a library function of Triton's: its registry row, else its source
                row = self._library_row(value.fn, name)
                return row if row is not None else self.jit(value, library=True)
            return self.jit(value)
        if isinstance(value, ConstexprFunction):
            return self.constexpr_function(value)
        if isinstance(value, type) and getattr(value, "__triton_aggregate__", False):
            return self.aggregate(value)
        if _is_builtin(value):
            return self.builtin(value, name)
        if type(value) is tuple:
            items = tuple(self.convert(v, name) for v in value)
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        return value

    @staticmethod
    def builtin(value: Any, name: str) -> Any:
        """The registry's implementation of a Gluon builtin, or a stub that raises naming it."""
        ns = namespace_of(getattr(value, "__module__", "") or "")
        short = getattr(value, "__name__", name.rsplit(".", 1)[-1])
        row = REGISTRY.get(f"{ns}.{short}") if ns is not None else None
        if row is None and ns == "blackwell":  # hopper / blackwell share names (fence_async_shared, ...)
            row = REGISTRY.get(f"gl.{short}")
        if row is not None:
            return row.impl
        where_from = ns or (getattr(value, "__module__", "") or "gl").rsplit(".", 1)[-1]  # e.g. clc.try_cancel
        return unsupported(f"{where_from}.{short}")

    @staticmethod
    def _library_row(fn: Any, name: str) -> Any:
        ns = namespace_of(getattr(fn, "__module__", "") or "")
        short = getattr(fn, "__name__", name.rsplit(".", 1)[-1])
        row = REGISTRY.get(f"{ns}.{short}") if ns is not None else None
        if row is None and ns == "blackwell":
            row = REGISTRY.get(f"gl.{short}")
        return row.impl if row is not None else None

    def _globals_of(self, g: dict) -> dict:
        """The CPU copy of a module's globals, shared by every function of that module."""
        new = self._globals.get(id(g))
        if new is None:
            new = self._globals[id(g)] = {}
            self._keep.append(g)
            for k, v in list(g.items()):
                new[k] = self.convert(v, k)
            new["__builtins__"] = g.get("__builtins__", builtins)
            for k, v in _FRONTEND_BUILTINS.items():  # Python's builtins as the frontend has them
                if k not in g:
                    new[k] = v
        return new

    def _copy(self, py: types.FunctionType, library: bool = False) -> types.FunctionType:
        """``py`` with its globals, closure cells and defaults converted."""
        new_globals = self._globals_of(py.__globals__)
        closure = None
        if py.__closure__ is not None:
            cells = []
            for cell in py.__closure__:
                try:
                    contents = cell.cell_contents
                except ValueError:  # an empty cell (a name assigned later)
                    cells.append(types.CellType())
                    continue
                cells.append(types.CellType(self.convert(contents)))
            closure = tuple(cells)
        defaults = tuple(self.convert(d) for d in py.__defaults__) if py.__defaults__ else py.__defaults__
        cpu = types.FunctionType(py.__code__, new_globals, py.__name__, defaults, closure)
        cpu.__kwdefaults__ = (
            {k: self.convert(v) for k, v in py.__kwdefaults__.items()} if py.__kwdefaults__ else py.__kwdefaults__
        )
        cpu.__qualname__ = py.__qualname__
        cpu.__module__ = py.__module__
        if not library:
            self._collect_codes(py.__code__)
        return cpu

    def jit(self, fn: JITFunction, library: bool = False) -> Any:
        key = id(fn)
        hit = self._cache.get(key)
        if hit is None:
            # the placeholder breaks a cycle (a function whose closure or globals reach itself)
            self._cache[key] = lambda *a, **k: self._cache[key](*a, **k)
            self._keep.append(fn)
            cpu = self._copy(fn.fn, library)
            cpu.__wrapped_jit__ = fn  # type: ignore[attr-defined]  # a function object's own attribute
            self._cache[key] = hit = cpu
        return hit

    def constexpr_function(self, fn: ConstexprFunction) -> Any:
        """A ``@constexpr_function``: the user's runs with its globals converted (``gl.constexpr(x)`` is ``x``);
        Triton's own run as they are, their results unwrapped."""
        key = id(fn)
        hit = self._cache.get(key)
        if hit is None:
            self._keep.append(fn)
            py = fn.fn
            if namespace_of(getattr(py, "__module__", "") or "") is None and not (
                getattr(py, "__module__", "") or ""
            ).startswith("triton"):
                hit = self._copy(py)
            else:

                def hit(*args: Any, _fn: Any = py, **kwargs: Any) -> Any:
                    return unwrap(_fn(*args, **kwargs))

            self._cache[key] = hit
        return hit

    def _collect_codes(self, code: types.CodeType) -> None:
        self.codes.add(code)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                self._collect_codes(c)

    def aggregate(self, agg: type) -> type:
        key = id(agg)
        if key in self.aggregates:
            return self.aggregates[key]
        fields = tuple(getattr(agg, "__aggregate_fields__", None) or getattr(agg, "__annotations__", {}))
        ns: dict[str, Any] = {
            "__slots__": fields,
            "_fields": fields,
            "__module__": agg.__module__,
            "__qualname__": agg.__qualname__,
            "_defaults": {k: unwrap(v) for k, v in (getattr(agg, "__aggregate_defaults__", None) or {}).items()},
        }
        cls = cast(type[CpuAggregate], type(agg.__name__, (CpuAggregate,), ns))
        self.aggregates[key] = cls
        self._keep.append(agg)
        init = (getattr(agg, "hash_attrs", None) or [None])[0]  # the user's constructor, as Triton keeps it
        if isinstance(init, ConstexprFunction):
            cls._user_init = staticmethod(self.constexpr_function(init))
        elif isinstance(init, types.FunctionType) and not getattr(init, "__triton_builtin__", False):
            cls._user_init = staticmethod(self._copy(init))
        for name, member in vars(agg).items():
            if name.startswith("__") or name in ("_get_instance", "_set_name", "_flatten_ir", "type", "hash_attrs"):
                continue
            if isinstance(member, JITFunction):
                setattr(cls, name, self.jit(member))
            elif isinstance(member, ConstexprFunction):
                setattr(cls, name, self.constexpr_function(member))
            elif isinstance(member, types.FunctionType):
                setattr(cls, name, self._copy(member))
            elif isinstance(member, (staticmethod, classmethod)) or callable(member):
                setattr(cls, name, member)
        return cls


class CpuAggregate:
    """Base of the plain classes that stand in for ``@gluon.aggregate`` ones: the user's constructor when it has
    one, else the fields in order (with their defaults); every field must be set, as Triton requires."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _defaults: dict[str, Any] = {}
    _user_init: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if self._user_init is not None:
            self._user_init(self, *args, **kwargs)
            for name in fields:
                if hasattr(self, name):
                    object.__setattr__(self, name, unwrap(getattr(self, name)))
        else:
            if len(args) > len(fields):
                raise ExecutorError(f"{type(self).__name__}() takes {len(fields)} fields, got {len(args)}{where()}")
            for name, value in zip(fields, args, strict=False):
                object.__setattr__(self, name, unwrap(value))
            for name, value in kwargs.items():
                if name not in fields:
                    raise ExecutorError(f"{type(self).__name__} has no field {name!r}{where()}")
                object.__setattr__(self, name, unwrap(value))
            for name, value in self._defaults.items():
                if not hasattr(self, name):
                    object.__setattr__(self, name, value)
        missing = [f for f in fields if not hasattr(self, f)]
        if missing:
            raise ExecutorError(f"{type(self).__name__}() is missing field(s) {missing}{where()}")
        ctx = current_or_none()
        if "tile_id" in fields and "has_work" in fields and ctx is not None:
            # annotation only (reports, timing); the fields are the generated class's slots, unknown to mypy
            ctx.on_schedule(self.tile_id, self.has_work)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f, '?')!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"


# =====================================================================================
# the last path: a jit function called from CPU code however it was reached
# =====================================================================================
_ORIGINAL_JIT_CALL = JITFunction.__call__


def _running_rebinder() -> Rebinder | None:
    ctx = current_or_none()
    if ctx is not None:
        return ctx.runtime.rebinder
    rt = CALL_RUNTIME.get()
    return getattr(rt, "rebinder", None) if rt is not None else None


def _jit_call(self: JITFunction, *args: Any, **kwargs: Any) -> Any:
    """Inside a CPU run, calling a jit function runs its CPU copy (outside, Triton's error as before)."""
    rebinder = _running_rebinder()
    if rebinder is None:
        return _ORIGINAL_JIT_CALL(self, *args, **kwargs)
    return rebinder.convert(self, getattr(self.fn, "__name__", "?"))(*args, **kwargs)


if getattr(JITFunction.__call__, "__name__", "") != "_jit_call":
    JITFunction.__call__ = _jit_call
