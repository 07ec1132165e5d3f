"""CPU implementations of the Gluon builtins a Blackwell kernel calls, and the rebinding that makes a
``@gluon.jit`` function call them.

How a kernel runs here (the way Triton's interpreter runs ``tl`` kernels): each ``@gluon.jit``
function's Python function (``JITFunction.fn``) is copied with its globals replaced -- ``gl``,
``mbarrier``, ``tma``, ``cluster`` and the ``tcgen05_*`` functions become namespaces served from the
builtin registry (:mod:`gluon_overlap.interp.registry`), other jit functions become their own rebound
copies, ``@gluon.constexpr_function``\\ s become their plain Python functions and ``@gluon.aggregate``
classes become plain classes with the same fields and methods.  Nothing of the kernel's text changes:
what the kernel does is what runs.

Every builtin that touches memory or a barrier builds an engine operation
(:mod:`gluon_overlap.interp.engine`) and hands it to the scheduler through
:func:`~gluon_overlap.interp.context.emit`, which suspends the calling partition (a greenlet) until the
engine has executed it; the data backend (:mod:`gluon_overlap.interp.data`) gives it its effect.  A
builtin without a registry row raises :class:`ExecutorError` naming the builtin and the kernel line --
never a silent no-op.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton.experimental.gluon.language as gl

from gluon_overlap.interp import ops
from gluon_overlap.interp.context import (
    ExecutorError,
    current,
    emit,
    runtime,
    where,
)
from gluon_overlap.interp.memory import (
    Payload,
)
from gluon_overlap.interp.registry import builtin
from gluon_overlap.interp.tensors import (
    Pointer,
    PointerTensor,
    RegTensor,
    RuntimeInt,
    reduce_,
    torch_dtype,
)

__all__ = ["unsupported"]


def unsupported(name: str):
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise ExecutorError(f"{name} is not implemented by the CPU executor{where()}")

    stub.__name__ = name
    return stub


def _regs(x: Any, like: RegTensor | None = None) -> RegTensor:
    """``x`` as a register tensor (a scalar becomes a 0-d one)."""
    if isinstance(x, RegTensor):
        return x
    if isinstance(x, bool):
        return RegTensor(torch.tensor(x), [], gl.int1)
    if isinstance(x, int):
        return RegTensor(torch.tensor(int(x), dtype=torch.int32), [], gl.int32)
    if isinstance(x, float):
        return RegTensor(torch.tensor(x, dtype=torch.float32), [], gl.float32)
    raise ExecutorError(f"expected a tensor or a scalar, got {type(x).__name__}{where()}")


# =====================================================================================
# gl: program and launch
# =====================================================================================
@builtin("gl.program_id", effect="this CTA's program index (a runtime i32)")
def program_id(axis: Any = 0) -> RuntimeInt:
    return RuntimeInt(current().program[int(axis)])


@builtin("gl.num_programs", effect="the grid size along an axis (a runtime i32)")
def num_programs(axis: Any = 0) -> RuntimeInt:
    return RuntimeInt(runtime().grid[int(axis)])


@builtin("gl.num_ctas", effect="CTAs per cluster (constexpr)")
def num_ctas() -> int:
    return runtime().num_ctas


@builtin("gl.num_warps", effect="warps of the calling partition (constexpr)")
def num_warps() -> int:
    return current().num_warps


@builtin("gl.static_assert", effect="raises at the kernel line when false")
def static_assert(cond: Any, msg: str = "") -> None:
    if not cond:
        raise ExecutorError(f"static_assert failed{': ' + str(msg) if msg else ''}{where()}")


@builtin("gl.static_print", effect="prints")
def static_print(*args: Any, **kwargs: Any) -> None:
    print(*args, **kwargs)


@builtin("gl.to_tensor", effect="a scalar becomes a runtime value")
def to_tensor(x: Any) -> Any:
    if isinstance(x, int) and not isinstance(x, bool):
        return RuntimeInt(x)
    return x


@builtin("gl.cdiv", effect="(a + b - 1) // b")
def cdiv(a: Any, b: Any) -> Any:
    return (a + b - 1) // b


@builtin("gl.static_range", effect="a Python range (unrolled)")
def static_range(*args: Any) -> range:
    return range(*(int(a) for a in args))


def _identity_hint(x: Any, *args: Any, **kwargs: Any) -> Any:
    return x


for _hint in ("multiple_of", "max_contiguous", "max_constancy"):
    builtin(f"gl.{_hint}", effect="a compiler hint: the value unchanged")(_identity_hint)


@builtin("gl.assume", effect="a compiler hint: nothing")
def assume(cond: Any) -> None:
    return None


# =====================================================================================
# gl: register tensors
# =====================================================================================
@builtin("gl.arange", effect="int32 [start, end) in a layout")
def arange(start: Any, end: Any, layout: Any = None) -> RegTensor:
    start, end = int(start), int(end)
    n = end - start
    if n <= 0 or n & (n - 1):
        raise ExecutorError(f"gl.arange({start}, {end}): the range's length must be a power of 2{where()}")
    return RegTensor(torch.arange(start, end, dtype=torch.int32), [n], gl.int32, layout)


@builtin("gl.full", effect="a tensor of one value")
def full(shape: Any, value: Any, dtype: Any, layout: Any = None) -> RegTensor:
    shape = [int(s) for s in shape]
    return RegTensor(torch.full(shape, value, dtype=torch_dtype(dtype)), shape, dtype, layout)


@builtin("gl.zeros", effect="a tensor of zeros")
def zeros(shape: Any, dtype: Any, layout: Any = None) -> RegTensor:
    return full(shape, 0, dtype, layout)


@builtin("gl.full_like", effect="a tensor of one value, shaped like another")
def full_like(input: RegTensor, value: Any, shape: Any = None, dtype: Any = None, layout: Any = None) -> RegTensor:
    return full(input.shape if shape is None else shape, value, input.dtype if dtype is None else dtype,
                input.layout if layout is None else layout)


@builtin("gl.zeros_like", effect="zeros shaped like another tensor")
def zeros_like(input: RegTensor, shape: Any = None, dtype: Any = None, layout: Any = None) -> RegTensor:
    return full_like(input, 0, shape, dtype, layout)


@builtin("gl.where", effect="elementwise select (scalars: Python's conditional)")
def where_(cond: Any, x: Any, y: Any) -> Any:
    if not any(isinstance(t, RegTensor) for t in (cond, x, y)):
        return x if cond else y
    tensors = [t for t in (cond, x, y) if isinstance(t, RegTensor)]
    shape = list(torch.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    xv = x.local if isinstance(x, RegTensor) else x
    yv = y.local if isinstance(y, RegTensor) else y
    cv = cond.local if isinstance(cond, RegTensor) else torch.tensor(bool(cond))
    if not isinstance(xv, torch.Tensor):
        xv = torch.tensor(xv, dtype=yv.dtype if isinstance(yv, torch.Tensor) else None)
    if not isinstance(yv, torch.Tensor):
        yv = torch.tensor(yv, dtype=xv.dtype)
    out = torch.where(cv.to(torch.bool), xv, yv)
    layout = next((t.layout for t in tensors if t.layout is not None), None)
    return RegTensor(out, shape, None, layout)


@builtin("gl.convert_layout", effect="the same values in another layout")
def convert_layout(value: Any, layout: Any, assert_trivial: bool = False) -> Any:
    if isinstance(value, RegTensor):
        return RegTensor(value.local, value.shape, value.dtype, layout)
    return value


@builtin("gl.set_auto_layout", effect="the same values with a concrete layout")
def set_auto_layout(value: Any, layout: Any) -> Any:
    return convert_layout(value, layout)


@builtin("gl.expand_dims", effect="a new size-1 dimension")
def expand_dims(input: RegTensor, axis: Any) -> RegTensor:
    axes = [int(a) for a in axis] if isinstance(axis, list | tuple) else [int(axis)]
    out = _regs(input)
    for a in sorted(axes):
        index = [slice(None)] * out.rank
        index.insert(a if a >= 0 else out.rank + 1 + a, None)
        out = out[tuple(index)]
    return out


@builtin("gl.broadcast", effect="two tensors broadcast to one shape")
def broadcast(a: Any, b: Any) -> tuple[RegTensor, RegTensor]:
    a, b = _regs(a), _regs(b)
    shape = list(torch.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    return (RegTensor(a.local.expand(shape), shape, a.dtype, a.layout),
            RegTensor(b.local.expand(shape), shape, b.dtype, b.layout))


@builtin("gl.reshape", effect="the values in another shape")
def reshape(input: RegTensor, shape: Any, can_reorder: bool = False, layout: Any = None) -> RegTensor:
    return input.reshape(*shape)


@builtin("gl.permute", effect="the dimensions reordered")
def permute(input: RegTensor, dims: Any) -> RegTensor:
    return input.permute(*dims)


@builtin("gl.sum", effect="a sum along an axis (fp16/bf16 summed in fp32)")
def sum_(input: RegTensor, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
    return reduce_(input, axis, "sum", keep_dims)


@builtin("gl.max", effect="a maximum along an axis")
def max_(input: RegTensor, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
    return reduce_(input, axis, "max", keep_dims)


@builtin("gl.min", effect="a minimum along an axis")
def min_(input: RegTensor, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
    return reduce_(input, axis, "min", keep_dims)


@builtin("gl.minimum", effect="elementwise minimum")
def minimum(a: Any, b: Any, propagate_nan: Any = None) -> Any:
    if isinstance(a, RegTensor) or isinstance(b, RegTensor):
        a, b = _regs(a), _regs(b)
        return a._new(torch.minimum(a.local, b.local.to(a.local.dtype)), b)
    return min(a, b)


@builtin("gl.maximum", effect="elementwise maximum")
def maximum(a: Any, b: Any, propagate_nan: Any = None) -> Any:
    if isinstance(a, RegTensor) or isinstance(b, RegTensor):
        a, b = _regs(a), _regs(b)
        return a._new(torch.maximum(a.local, b.local.to(a.local.dtype)), b)
    return max(a, b)


def _unary(name: str, fn: Any) -> None:
    def impl(x: Any, *args: Any, **kwargs: Any) -> RegTensor:
        x = _regs(x)
        t = x.local if x.local.dtype.is_floating_point or name == "abs" else x.local.float()
        return x._new(fn(t))

    impl.__name__ = name
    builtin(f"gl.{name}", effect=f"elementwise {name}")(impl)


for _name, _fn in (("exp", torch.exp), ("exp2", torch.exp2), ("log", torch.log), ("log2", torch.log2),
                   ("sqrt", torch.sqrt), ("rsqrt", torch.rsqrt), ("abs", torch.abs), ("floor", torch.floor),
                   ("ceil", torch.ceil), ("sin", torch.sin), ("cos", torch.cos), ("erf", torch.erf)):
    _unary(_name, _fn)


@builtin("gl.fma", effect="a * b + c")
def fma(a: Any, b: Any, c: Any) -> RegTensor:
    return _regs(a) * b + c


@builtin("gl.cast", effect="a dtype conversion (bitcast=True: the same bits)")
def cast(input: Any, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> RegTensor:
    return _regs(input).to(dtype, bitcast=bitcast)


@builtin("gl.add", effect="a + b")
def add(x: Any, y: Any, sanitize_overflow: bool = True) -> Any:
    return x + y


@builtin("gl.sub", effect="a - b")
def sub(x: Any, y: Any, sanitize_overflow: bool = True) -> Any:
    return x - y


@builtin("gl.mul", effect="a * b")
def mul(x: Any, y: Any, sanitize_overflow: bool = True) -> Any:
    return x * y


@builtin("gl.fdiv", effect="a / b (float)")
def fdiv(x: Any, y: Any, ieee_rounding: bool = False) -> Any:
    return _regs(x) / y


@builtin("gl.div_rn", effect="a / b rounded to nearest")
def div_rn(x: Any, y: Any) -> Any:
    return _regs(x) / y


@builtin("gl.sqrt_rn", effect="sqrt rounded to nearest")
def sqrt_rn(x: Any) -> Any:
    return _regs(x)._math(torch.sqrt)


@builtin("gl.clamp", effect="min(max(x, lo), hi)")
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = None) -> Any:
    return minimum(maximum(x, min), max)


@builtin("gl.umulhi", effect="the high 32 bits of the unsigned 64-bit product")
def umulhi(x: Any, y: Any) -> RegTensor:
    a, b = _regs(x), _regs(y)
    prod = (a.local.to(torch.int64) & 0xFFFFFFFF) * (b.local.to(torch.int64) & 0xFFFFFFFF)
    return a._new((prod >> 32).to(a.local.dtype), b)


@builtin("gl.device_assert", effect="raises at the kernel line when any lane is false")
def device_assert(cond: Any, msg: str = "", mask: Any = None) -> None:
    c = _regs(cond).local.to(torch.bool)
    if mask is not None:
        c = c | ~_regs(mask).local.to(torch.bool)
    if not bool(c.all()):
        raise ExecutorError(f"device_assert failed{': ' + msg if msg else ''}{where()}")


def _scan(name: str, fn: Any) -> None:
    def impl(input: RegTensor, axis: Any = 0, reverse: bool = False, dtype: Any = None) -> RegTensor:
        t = input.local
        a = int(axis) % max(1, input.rank)
        if reverse:
            t = t.flip(a)
        out = fn(t, dim=a)
        if reverse:
            out = out.flip(a)
        return RegTensor(out.to(t.dtype) if t.dtype.is_floating_point else out, input.shape, None, input.layout)

    impl.__name__ = name
    builtin(f"gl.{name}", effect=f"an inclusive {name} along an axis")(impl)


_scan("cumsum", torch.cumsum)
_scan("cumprod", torch.cumprod)


@builtin("gl.xor_sum", effect="xor of the values along an axis (integers)")
def xor_sum(input: RegTensor, axis: Any = None, keep_dims: bool = False) -> RegTensor:
    return reduce(input, axis, lambda a, b: a ^ b, keep_dims=keep_dims)


@builtin("gl.reduce_or", effect="or of the values along an axis (integers)")
def reduce_or(input: RegTensor, axis: Any, keep_dims: bool = False) -> RegTensor:
    return reduce(input, axis, lambda a, b: a | b, keep_dims=keep_dims)


@builtin("gl.reduce", effect="a tree reduction with the kernel's combine function (one tensor)",
         note="several tensors at once are not implemented")
def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: bool = False) -> RegTensor:
    if isinstance(input, tuple | list):
        raise ExecutorError(f"gl.reduce of {len(input)} tensors at once is not implemented by the CPU executor"
                            f"{where()}")
    fn = runtime().cpu(combine_fn) if hasattr(combine_fn, "fn") else combine_fn
    x = _regs(input)
    t = x.local.reshape(-1) if axis is None else x.local
    a = 0 if axis is None else int(axis) % x.rank
    parts = list(t.unbind(a))
    while len(parts) > 1:  # pairwise, as a butterfly does (associativity assumed, like the compiler)
        nxt = [_regs(fn(RegTensor(parts[i]), RegTensor(parts[i + 1]))).local for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    out = parts[0]
    shape = [] if axis is None else [d for i, d in enumerate(x.shape) if i != a]
    if keep_dims and axis is not None:
        out = out.unsqueeze(a)
        shape.insert(a, 1)
    return RegTensor(out, shape, None, None)


@builtin("gl.ravel", effect="the values flattened")
def ravel(x: RegTensor, can_reorder: bool = False) -> RegTensor:
    return x.reshape(x.numel)


@builtin("gl.join", effect="two tensors stacked along a new minor dimension")
def join(a: RegTensor, b: RegTensor) -> RegTensor:
    a, b = _regs(a), _regs(b)
    return RegTensor(torch.stack([a.local, b.local], dim=-1), a.shape + [2], a.dtype, None)


@builtin("gl.split", effect="a tensor's size-2 minor dimension split into two tensors")
def split(a: RegTensor) -> tuple[RegTensor, RegTensor]:
    if a.shape[-1] != 2:
        raise ExecutorError(f"gl.split needs a minor dimension of 2, got shape {a.shape}{where()}")
    lo, hi = a.local.unbind(-1)
    return RegTensor(lo, a.shape[:-1], a.dtype, None), RegTensor(hi, a.shape[:-1], a.dtype, None)


# register-tensor methods that are builtins too (rows of the table; the methods live on RegTensor)
for _name, _effect in (("to", "a dtype conversion (bitcast=True: the same bits)"), ("sum", "a sum along an axis"),
                       ("max", "a maximum along an axis"), ("min", "a minimum along an axis"),
                       ("reshape", "the values in another shape"), ("permute", "the dimensions reordered"),
                       ("trans", "the dimensions reversed"), ("__getitem__", "x[:, None]: a new dimension"),
                       ("expand_dims", "a new size-1 dimension"), ("broadcast_to", "the values broadcast"),
                       ("cast", "a dtype conversion"), ("item", "the value of a one-element tensor"),
                       *((m, f"elementwise {m}") for m in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos",
                                                           "erf", "floor", "ceil", "abs"))):
    builtin(f"tensor.{_name}", effect=_effect)(getattr(RegTensor, _name))


# =====================================================================================
# gl: global memory through pointers
# =====================================================================================
def _pointers(ptr: Any, what: str) -> PointerTensor:
    if isinstance(ptr, Pointer):
        return PointerTensor(ptr, torch.tensor(ptr.offset, dtype=torch.int64), [], None)
    if not isinstance(ptr, PointerTensor):
        raise ExecutorError(f"gl.{what} needs pointers (a tensor argument plus offsets), got "
                            f"{type(ptr).__name__}{where()}")
    return ptr


def _mask(mask: Any, shape: list[int], what: str) -> torch.Tensor | None:
    if mask is None:
        return None
    m = mask.local if isinstance(mask, RegTensor) else torch.tensor(bool(mask))
    try:
        return m.to(torch.bool).expand(shape)
    except RuntimeError:
        raise ExecutorError(f"gl.{what}: the mask {list(m.shape)} does not broadcast to the pointers {shape}"
                            f"{where()}") from None


@builtin("gl.load", op=ops.GlobalLoad, effect="global memory into registers; masked-off lanes get `other` "
         "(none: garbage); a lane outside its tensor's storage is a hazard", note="cache / eviction hints ignored")
def load(pointer: Any, mask: Any = None, other: Any = None, boundary_check: Any = (), padding_option: str = "",
         cache_modifier: str = "", eviction_policy: str = "", volatile: bool = False, layout: Any = None) -> RegTensor:
    ptrs = _pointers(pointer, "load")
    m = _mask(mask, ptrs.shape, "load")
    dtype = ptrs.base.element_ty
    op = ops.GlobalLoad(math.prod(ptrs.shape) * torch_dtype(dtype).itemsize)
    op.x = Payload(ptrs=ptrs, mask=m, other=other, dtype=dtype)
    return emit(op)


@builtin("gl.store", op=ops.GlobalStore, effect="registers into global memory (cast to the pointee type); masked-off "
         "lanes untouched; a lane outside its tensor's storage is a hazard", note="cache / eviction hints ignored")
def store(pointer: Any, value: Any, mask: Any = None, boundary_check: Any = (), cache_modifier: str = "",
          eviction_policy: str = "") -> None:
    ptrs = _pointers(pointer, "store")
    m = _mask(mask, ptrs.shape, "store")
    v = _regs(value)
    try:
        values = v.local.expand(ptrs.shape) if v.shape != ptrs.shape else v.local
    except RuntimeError:
        raise ExecutorError(f"gl.store of a {v.shape} value through {ptrs.shape} pointers{where()}") from None
    op = ops.GlobalStore(math.prod(ptrs.shape) * torch_dtype(ptrs.base.element_ty).itemsize)
    op.x = Payload(ptrs=ptrs, mask=m, values=values)
    emit(op)
