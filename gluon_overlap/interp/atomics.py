"""``gl.atomic_*``: read-modify-writes of global memory that return the old values.

Each call is one engine operation (:class:`~gluon_overlap.interp.ops.GlobalAtomic`): the engine interleaves
programs between operations, so which program's atomic lands first is the schedule's (seeded), and the
values are the GPU's for that order. The data effect (:mod:`gluon_overlap.interp.data`, with
:mod:`gluon_overlap.interp.global_mem`) applies it lane by lane (lanes that hit one element take turns),
orders the programs through the elements (``sem``: acquire / release / acq_rel, the default; relaxed orders
nothing) and checks it against plain accesses -- atomics never race with atomics.

Types as Triton checks them: ``val`` (and ``cmp``) converted to the pointee type; no 8- or 16-bit integer
targets; float16 / bfloat16 only for ``add``; float ``max`` / ``min`` only for float32 / float64, done as
Triton does it with integer atomics on the bits (a value with the sign bit clear: signed max; set: unsigned
min -- so ``-0 < +0``).
"""

from __future__ import annotations

import math
from typing import Any

from gluon_overlap.interp import ops
from gluon_overlap.interp.context import ExecutorError, current, emit, runtime, where
from gluon_overlap.interp.language import _mask, _pointers, _regs, _representative
from gluon_overlap.interp.memory import Payload
from gluon_overlap.interp.registry import builtin
from gluon_overlap.interp.tensors import RegTensor, torch_dtype

__all__ = ["SEMANTICS"]

#: the memory orderings Triton accepts for a read-modify-write (None: acq_rel)
SEMANTICS = ("acquire", "release", "acq_rel", "relaxed")
_SCOPES = ("gpu", "cta", "sys")


def _option(value: Any, allowed: tuple[str, ...], default: str, what: str) -> str:
    value = getattr(value, "value", value)
    if value is None or value == "":
        return default
    if value not in allowed:
        raise ExecutorError(f"Memory {what} {value!r} not supported (Triton takes {', '.join(allowed)}){where()}")
    return value


def _check_type(how: str, dtype: Any) -> None:
    """``_validate_atomic_rmw_element_type`` and the float max / min restriction of Triton's frontend."""
    name = dtype.name
    if how in ("load", "store"):
        if not (dtype.is_int() or dtype.is_floating()):
            raise ExecutorError(f"atomic_{how} only supports integer and floating-point elements{where()}")
        return
    if name in ("fp16", "bf16") and how not in ("add", "xchg", "cas"):
        raise ExecutorError(f"atomic_{how} does not support {dtype}{where()}")
    if how in ("xchg", "cas"):
        if dtype.primitive_bitwidth not in (16, 32, 64):
            raise ExecutorError(f"atomic_{how} only supports elements with width {{16, 32, 64}}, got {dtype}{where()}")
        return
    if name in ("int16", "uint16") or dtype.primitive_bitwidth < 16:
        raise ExecutorError(f"atomic_{how} does not support {dtype}{where()}")
    if how in ("max", "min") and dtype.is_floating() and name not in ("fp32", "fp64"):
        raise ExecutorError(f"atomic_{how} not supported for dtype {dtype}{where()}")
    if how in ("and", "or", "xor") and not dtype.is_int():
        raise ExecutorError(f"atomic_{how} needs an integer pointee, got {dtype}{where()}")


#: the orderings ``atomic_load`` / ``atomic_store`` take, and their defaults
_LOAD_STORE_SEMANTICS = {"load": (("acquire", "relaxed"), "acquire"), "store": (("release", "relaxed"), "release")}


def _atomic(how: str, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any, cmp: Any = None) -> RegTensor:
    ptrs = _pointers(pointer, f"atomic_{how}")
    dtype = ptrs.base.element_ty
    _check_type(how, dtype)
    allowed, default = _LOAD_STORE_SEMANTICS.get(how, (SEMANTICS, "acq_rel"))
    sem = _option(sem, allowed, default, "semantic")
    _option(scope, _SCOPES, "gpu", "scope")
    in_cluster = _in_cluster(ptrs)
    if how == "load":
        m = _mask(mask, ptrs.shape, "atomic_load")
        op = ops.GlobalAtomic(math.prod(ptrs.shape) * torch_dtype(dtype).itemsize)
        op.x = Payload(
            ptrs=ptrs,
            mask=_representative(ptrs, m) if in_cluster else m,
            values=None,
            cmp=None,
            rmw="load",
            sem=sem,
            dtype=dtype,
        )
        return _in_cta0(op) if in_cluster else emit(op)
    values = _regs(val).to(dtype)
    if ptrs.shape == [] and values.shape != []:
        raise ExecutorError(f"atomic_{how}: a block of values through one pointer{where()}")
    m = _representative(ptrs, _mask(mask, ptrs.shape, f"atomic_{how}"))
    try:
        local = values.local.expand(ptrs.shape)
    except RuntimeError:
        raise ExecutorError(f"atomic_{how} of a {values.shape} value through {ptrs.shape} pointers{where()}") from None
    op = ops.GlobalAtomic(math.prod(ptrs.shape) * torch_dtype(dtype).itemsize)
    op.x = Payload(
        ptrs=ptrs,
        mask=m,
        values=local,
        cmp=None if cmp is None else _regs(cmp).to(dtype).local,
        rmw="xchg" if how == "store" else how,
        sem=sem,
        dtype=dtype,
    )
    if in_cluster:
        return _in_cta0(op)
    old: RegTensor = emit(op)  # the values before the operation (atomic_store drops them)
    return old


def _in_cluster(ptrs: Any) -> bool:
    """A scalar atomic in a launch of clusters: the compiled kernel performs it in CTA 0 only."""
    return ptrs.shape == [] and getattr(runtime(), "num_ctas", 1) > 1


def _in_cta0(op: ops.GlobalAtomic) -> RegTensor:
    """A scalar atomic in a cluster, as the compiled kernel does it (Triton 3.9's PTX for sm_90a and sm_100a): a
    cluster barrier (every CTA's earlier accesses come before it), CTA 0 alone performs the atomic and writes the old
    value to its shared memory, a second cluster barrier, then every other CTA reads the value there (``mapa`` +
    ``ld.shared::cluster``).  So all CTAs get CTA 0's old value, and a CTA that never reaches the atomic deadlocks its
    cluster, as on the GPU."""
    ctx = current()
    rt = ctx.runtime
    rt.cluster_sync(ctx)
    value: RegTensor = emit(op)  # masked off outside CTA 0 (_representative)
    key = (ctx.cluster, ctx.cluster_rounds)
    if ctx.cta == 0:
        rt.cluster_values[key] = value
    rt.cluster_sync(ctx)
    return value if ctx.cta == 0 else rt.cluster_values[key]


_EFFECT = (
    "atomically {what} at each (unmasked) pointer; returns the old values (sem: acq_rel by default -- the "
    "programs are ordered through the element; relaxed orders nothing)"
)


@builtin(
    "gl.atomic_add",
    op=ops.GlobalAtomic,
    effect=_EFFECT.format(what="old + val (float32: atom.add.f32, subnormals flushed)"),
)
def atomic_add(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> RegTensor:
    return _atomic("add", pointer, val, mask, sem, scope)


@builtin(
    "gl.atomic_max",
    op=ops.GlobalAtomic,
    effect=_EFFECT.format(what="max(old, val) (floats: Triton's signed / unsigned integer max of the bits)"),
)
def atomic_max(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> RegTensor:
    return _atomic("max", pointer, val, mask, sem, scope)


@builtin(
    "gl.atomic_min",
    op=ops.GlobalAtomic,
    effect=_EFFECT.format(what="min(old, val) (floats: on the bits, as Triton lowers it)"),
)
def atomic_min(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> RegTensor:
    return _atomic("min", pointer, val, mask, sem, scope)


@builtin("gl.atomic_and", op=ops.GlobalAtomic, effect=_EFFECT.format(what="old & val"))
def atomic_and(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> RegTensor:
    return _atomic("and", pointer, val, mask, sem, scope)


@builtin("gl.atomic_or", op=ops.GlobalAtomic, effect=_EFFECT.format(what="old | val"))
def atomic_or(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> RegTensor:
    return _atomic("or", pointer, val, mask, sem, scope)


@builtin("gl.atomic_xor", op=ops.GlobalAtomic, effect=_EFFECT.format(what="old ^ val"))
def atomic_xor(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> RegTensor:
    return _atomic("xor", pointer, val, mask, sem, scope)


@builtin("gl.atomic_xchg", op=ops.GlobalAtomic, effect=_EFFECT.format(what="val replaces old"))
def atomic_xchg(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> RegTensor:
    return _atomic("xchg", pointer, val, mask, sem, scope)


@builtin(
    "gl.atomic_cas", op=ops.GlobalAtomic, effect=_EFFECT.format(what="val replaces old where old == cmp (bitwise)")
)
def atomic_cas(pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None) -> RegTensor:
    return _atomic("cas", pointer, val, None, sem, scope, cmp=cmp)


@builtin(
    "gl.atomic_load",
    op=ops.GlobalAtomic,
    effect="an atomic read at each (unmasked) pointer (sem: acquire by default, or relaxed); never races with atomics",
)
def atomic_load(pointer: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> RegTensor:
    return _atomic("load", pointer, None, mask, sem, scope)


@builtin(
    "gl.atomic_store",
    op=ops.GlobalAtomic,
    effect="an atomic write of val at each (unmasked) pointer (sem: release by default, or relaxed)",
)
def atomic_store(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> None:
    _atomic("store", pointer, val, mask, sem, scope)
