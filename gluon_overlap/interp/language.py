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
from collections.abc import Callable
from typing import Any

import torch
import triton.experimental.gluon.language as gl

from gluon_overlap.gpu import arith
from gluon_overlap.gpu import numerics as N
from gluon_overlap.gpu import reduce_order as order
from gluon_overlap.gpu.linear import cta_owned
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
    GridInt,
    Pointer,
    PointerTensor,
    RegTensor,
    RuntimeInt,
    operand,
    reduce_,
    torch_dtype,
)

__all__ = ["unsupported"]


def unsupported(name: str) -> Callable[..., Any]:
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise ExecutorError(f"{name} is not implemented by the CPU executor{where()}")

    stub.__name__ = name
    return stub


def _regs(x: Any, like: RegTensor | None = None) -> RegTensor:
    """``x`` as a register tensor (a scalar becomes a 0-d one)."""
    if isinstance(x, RegTensor):
        return x
    x = getattr(x, "value", x) if type(x).__name__ == "constexpr" else x
    if isinstance(x, bool | int | float):
        o = operand(x)
        return RegTensor(arith.constant(o.value, o.dtype), [], o.dtype)
    raise ExecutorError(f"expected a tensor or a scalar, got {type(x).__name__}{where()}")


# =====================================================================================
# gl: program and launch
# =====================================================================================
@builtin("gl.program_id", effect="this CTA's program index (a runtime i32)")
def program_id(axis: Any = 0) -> RuntimeInt:
    return GridInt(current().program[int(axis)], "program_id", int(axis))


@builtin("gl.num_programs", effect="the grid size along an axis (a runtime i32)")
def num_programs(axis: Any = 0) -> RuntimeInt:
    return GridInt(runtime().grid[int(axis)], "num_programs", int(axis))


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
    if isinstance(value, RegTensor):  # a runtime scalar: converted to the dtype, then splat
        v = value.to(dtype).local.reshape(())
    else:
        try:
            v = arith.constant(0 if dtype.is_int() and value == 0 else value, dtype)
        except TypeError as exc:
            raise ExecutorError(f"gl.full: {exc}{where()}") from None
    return RegTensor(v.expand(shape).clone(), shape, dtype, layout)


@builtin("gl.zeros", effect="a tensor of zeros")
def zeros(shape: Any, dtype: Any, layout: Any = None) -> RegTensor:
    return full(shape, 0, dtype, layout)


@builtin("gl.full_like", effect="a tensor of one value, shaped like another")
def full_like(input: RegTensor, value: Any, shape: Any = None, dtype: Any = None, layout: Any = None) -> RegTensor:
    return full(
        input.shape if shape is None else shape,
        value,
        input.dtype if dtype is None else dtype,
        input.layout if layout is None else layout,
    )


@builtin("gl.zeros_like", effect="zeros shaped like another tensor")
def zeros_like(input: RegTensor, shape: Any = None, dtype: Any = None, layout: Any = None) -> RegTensor:
    return full_like(input, 0, shape, dtype, layout)


@builtin("gl.where", effect="elementwise select (scalars: Python's conditional)")
def where_(cond: Any, x: Any, y: Any) -> Any:
    if not any(isinstance(t, RegTensor) for t in (cond, x, y)):
        return x if cond else y
    tensors = [t for t in (cond, x, y) if isinstance(t, RegTensor)]
    shape = list(torch.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    cv = cond.local if isinstance(cond, RegTensor) else torch.tensor(bool(cond))
    try:
        out, dtype = arith.where(cv.to(torch.bool), operand(x), operand(y))
    except TypeError as exc:
        raise ExecutorError(f"gl.where: {exc}{where()}") from None
    layout = next((t.layout for t in tensors if t.layout is not None), None)
    return RegTensor(out, shape, dtype, layout)


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
        index: list[slice | None] = [slice(None)] * out.rank
        index.insert(a if a >= 0 else out.rank + 1 + a, None)
        out = out[tuple(index)]
    return out


@builtin("gl.broadcast", effect="two tensors broadcast to one shape")
def broadcast(a: Any, b: Any) -> tuple[RegTensor, RegTensor]:
    a, b = _regs(a), _regs(b)
    shape = list(torch.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    return (
        RegTensor(a.local.expand(shape), shape, a.dtype, a.layout),
        RegTensor(b.local.expand(shape), shape, b.dtype, b.layout),
    )


@builtin("gl.reshape", effect="the values in another shape")
def reshape(input: RegTensor, shape: Any, can_reorder: bool = False, layout: Any = None) -> RegTensor:
    return input.reshape(*shape)


@builtin("gl.permute", effect="the dimensions reordered")
def permute(input: RegTensor, dims: Any) -> RegTensor:
    return input.permute(*dims)


@builtin(
    "gl.sum",
    effect="a sum along an axis in the compiled layout's order (registers, lanes, warps), in the "
    "input's type (integers narrower than 32 bits: 32)",
)
def sum_(input: RegTensor, axis: Any = None, keep_dims: bool = False, dtype: Any = None, **kw: Any) -> RegTensor:
    return reduce_(input, axis, "sum", keep_dims, dtype)


@builtin("gl.max", effect="a maximum along an axis (PTX max: NaN loses, -0 < +0; narrow types in 32 bits)")
def max_(input: RegTensor, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
    return reduce_(input, axis, "max", keep_dims)


@builtin("gl.min", effect="a minimum along an axis (PTX min: NaN loses, -0 < +0; narrow types in 32 bits)")
def min_(input: RegTensor, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
    return reduce_(input, axis, "min", keep_dims)


def _propagates(propagate_nan: Any) -> bool:
    """``propagate_nan=PropagateNan.ALL`` (max.NaN / min.NaN), or NONE (the default)."""
    if propagate_nan is None:
        return False
    return getattr(propagate_nan, "name", str(propagate_nan)).upper().endswith("ALL")


def _minmax(a: Any, b: Any, is_max: bool, propagate_nan: Any) -> Any:
    if not (isinstance(a, RegTensor) or isinstance(b, RegTensor)):
        return max(a, b) if is_max else min(a, b)
    first = a if isinstance(a, RegTensor) else _regs(a)
    first._check_shapes(b, "gl.maximum" if is_max else "gl.minimum")
    try:
        t, dtype = arith.minmax(operand(a), operand(b), is_max, _propagates(propagate_nan))
    except TypeError as exc:
        raise ExecutorError(f"gl.{'maximum' if is_max else 'minimum'}: {exc}{where()}") from None
    return first._wrap(t, dtype, b if isinstance(b, RegTensor) else None)


@builtin(
    "gl.minimum", effect="elementwise minimum (PTX min: a NaN loses to a number, -0 < +0; propagate_nan=ALL: min.NaN)"
)
def minimum(a: Any, b: Any, propagate_nan: Any = None) -> Any:
    return _minmax(a, b, False, propagate_nan)


@builtin(
    "gl.maximum", effect="elementwise maximum (PTX max: a NaN loses to a number, -0 < +0; propagate_nan=ALL: max.NaN)"
)
def maximum(a: Any, b: Any, propagate_nan: Any = None) -> Any:
    return _minmax(a, b, True, propagate_nan)


def _math_builtin(name: str) -> None:
    compiled = arith.MATH_F32.get(name, ("", False))[0]

    def impl(x: Any, *args: Any, **kwargs: Any) -> RegTensor:
        return _regs(x)._math(name)

    impl.__name__ = name
    builtin(f"gl.{name}", effect=f"elementwise {name} (float32: as {compiled})")(impl)


for _name in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "floor", "ceil", "sin", "cos", "erf"):
    _math_builtin(_name)


@builtin("gl.abs", effect="elementwise |x| (integers wrap: abs(INT_MIN) is INT_MIN)")
def abs_(x: Any) -> RegTensor:
    return _regs(x).abs()


@builtin("gl.fma", effect="a * b + c rounded once (fma.rn)")
def fma(a: Any, b: Any, c: Any) -> RegTensor:
    first = next((v for v in (a, b, c) if isinstance(v, RegTensor)), None)
    first = _regs(a) if first is None else first
    try:
        t, dtype = arith.fma(operand(a), operand(b), operand(c))
    except TypeError as exc:
        raise ExecutorError(f"gl.fma: {exc}{where()}") from None
    shape = list(torch.broadcast_shapes(*(tuple(v.shape) for v in (a, b, c) if isinstance(v, RegTensor))))
    return RegTensor(t, shape, dtype, first.layout)


@builtin(
    "gl.cast",
    effect="a dtype conversion as the GPU's cvt (saturating fp8 and float -> int, NaN -> 0, "
    "fp_downcast_rounding='rtz'; bitcast=True: the same bits)",
)
def cast(input: Any, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> RegTensor:
    return _regs(input).to(dtype, fp_downcast_rounding=fp_downcast_rounding, bitcast=bitcast)


@builtin("gl.add", effect="a + b")
def add(x: Any, y: Any, sanitize_overflow: bool = True) -> Any:
    return x + y


@builtin("gl.sub", effect="a - b")
def sub(x: Any, y: Any, sanitize_overflow: bool = True) -> Any:
    return x - y


@builtin("gl.mul", effect="a * b")
def mul(x: Any, y: Any, sanitize_overflow: bool = True) -> Any:
    return x * y


@builtin(
    "gl.fdiv",
    effect="a / b (float32: div.full.f32, computed correctly rounded, within its 2 ulp; ieee_rounding=True: div.rn)",
)
def fdiv(x: Any, y: Any, ieee_rounding: bool = False, approx: bool = False) -> Any:
    return _regs(x) / y


@builtin("gl.div_rn", effect="a / b correctly rounded (div.rn)")
def div_rn(x: Any, y: Any) -> Any:
    a = _regs(x)
    try:
        ty = N.computation_type(
            a.dtype, False, *((y.dtype, False) if isinstance(y, RegTensor) else (operand(y).dtype, True))
        )
        t = N.fdiv_rn(arith.cast(operand(a), ty), arith.cast(operand(y), ty))
    except TypeError as exc:
        raise ExecutorError(f"gl.div_rn: {exc}{where()}") from None
    return a._wrap(t, ty, y)


@builtin("gl.sqrt_rn", effect="sqrt correctly rounded (sqrt.rn)")
def sqrt_rn(x: Any) -> Any:
    a = _regs(x)
    if not a.dtype.is_floating():
        a = a.to(gl.float32)
    return a._wrap(N.fsqrt_rn(a.local), a.dtype)


@builtin("gl.clamp", effect="min(max(x, lo), hi) with PTX min / max (a NaN x gives lo)")
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = None) -> Any:
    try:
        ty = arith.ternary_type(operand(x), operand(min), operand(max))
    except TypeError as exc:
        raise ExecutorError(f"gl.clamp: {exc}{where()}") from None
    x, lo, hi = (_regs(v).to(ty) if isinstance(v, RegTensor) else v for v in (x, min, max))
    return minimum(maximum(x, lo, propagate_nan), hi, propagate_nan)


@builtin("gl.umulhi", effect="the high half of the unsigned product (mul.hi.u32 / .u64)")
def umulhi(x: Any, y: Any) -> RegTensor:
    a = _regs(x)
    try:
        ty = N.computation_type(
            a.dtype, False, *((y.dtype, False) if isinstance(y, RegTensor) else (operand(y).dtype, True))
        )
        if not ty.is_int():
            raise TypeError(f"umulhi needs integers, got {ty}")
        t = N.umulhi(arith.cast(operand(a), ty), arith.cast(operand(y), ty), ty)
    except TypeError as exc:
        raise ExecutorError(f"gl.umulhi: {exc}{where()}") from None
    return a._wrap(t, ty, y)


@builtin("gl.device_assert", effect="raises at the kernel line when any lane is false")
def device_assert(cond: Any, msg: str = "", mask: Any = None) -> None:
    c = _regs(cond).local.to(torch.bool)
    if mask is not None:
        c = c | ~_regs(mask).local.to(torch.bool)
    if not bool(c.all()):
        raise ExecutorError(f"device_assert failed{': ' + msg if msg else ''}{where()}")


def _scan(name: str, product: bool) -> None:
    def impl(input: RegTensor, axis: Any = 0, reverse: bool = False, dtype: Any = None) -> RegTensor:
        x = _regs(input)
        if dtype is not None or (x.dtype.is_int() and not x.dtype.is_bool() and x.dtype.int_bitwidth < 32):
            x = x.to(_scan_dtype(x.dtype, dtype))
        a = int(axis) % max(1, x.rank)
        if product:
            combine = N.fmul if x.dtype.is_floating() else torch.mul
        else:
            combine = N.fadd if x.dtype.is_floating() else torch.add
        t = x.local.flip(a) if reverse else x.local
        structure = None if reverse else order.scan_structure(x.layout, x.shape, a)
        out = order.scan_along(t, a, combine, structure)
        if reverse:
            out = out.flip(a)
        return RegTensor(out, x.shape, x.dtype, x.layout)

    impl.__name__ = name
    builtin(
        f"gl.{name}",
        effect=f"an inclusive {name} along an axis, in the compiled scan's order (within a "
        "thread, across lanes, warp totals in order)",
    )(impl)


def _scan_dtype(dtype: Any, requested: Any) -> Any:
    if requested is not None:
        return getattr(requested, "value", requested)
    return gl.int32 if dtype.is_int_signed() else gl.uint32


_scan("cumsum", False)
_scan("cumprod", True)


@builtin("gl.xor_sum", effect="xor of the values along an axis (integers)")
def xor_sum(input: RegTensor, axis: Any = None, keep_dims: bool = False) -> RegTensor:
    return reduce_(_regs(input), axis, "xor", keep_dims)


@builtin("gl.reduce_or", effect="or of the values along an axis (integers)")
def reduce_or(input: RegTensor, axis: Any, keep_dims: bool = False) -> RegTensor:
    return reduce_(_regs(input), axis, "or", keep_dims)


@builtin(
    "gl.reduce",
    effect="a tree reduction with the kernel's combine function (one tensor)",
    note="several tensors at once are not implemented",
)
def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: bool = False) -> RegTensor:
    if isinstance(input, tuple | list):
        raise ExecutorError(
            f"gl.reduce of {len(input)} tensors at once is not implemented by the CPU executor{where()}"
        )
    fn = runtime().cpu(combine_fn) if hasattr(combine_fn, "fn") else combine_fn
    x = _regs(input)

    def combine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        left, right = RegTensor(a, list(a.shape), x.dtype), RegTensor(b, list(b.shape), x.dtype)
        out = _regs(fn(left, right))
        return out.to(x.dtype).local if out.dtype.name != x.dtype.name else out.local

    return reduce_(x, axis, "reduce", keep_dims, combine=combine)


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


# =====================================================================================
# Python's min / max in a jit function, as Triton's frontend has them (tl.core.builtin_min / builtin_max)
# =====================================================================================
def _plain(x: Any) -> Any:
    while hasattr(x, "value") and type(x).__name__ == "constexpr":
        x = x.value
    return x


def _frontend_min_max(args: tuple, kwargs: dict, pick: Any, fold: Any) -> Any:
    """Constexpr arguments only: Python's answer.  A runtime value among them (a runtime integer, a tensor): the
    elementwise fold (``gl.minimum`` / ``gl.maximum``), a runtime value again -- never the bare constexpr."""
    args = tuple(_plain(a) for a in args)
    if not any(isinstance(a, RuntimeInt | RegTensor) for a in args):
        return pick(*args, **kwargs)
    if len(args) < 2:
        raise ExecutorError(f"min / max of runtime values needs at least 2 values{where()}")
    out = args[0]
    for a in args[1:]:
        out = fold(out, a)
    if not isinstance(out, RegTensor) and isinstance(out, int) and not isinstance(out, bool | RuntimeInt):
        out = RuntimeInt(out)
    return out


def builtin_min(*args: Any, **kwargs: Any) -> Any:
    """``min(...)`` in kernel code (the frontend's ``builtin_min``)."""
    kwargs.pop("propagate_nan", None)
    return _frontend_min_max(args, kwargs, min, minimum)


def builtin_max(*args: Any, **kwargs: Any) -> Any:
    """``max(...)`` in kernel code (the frontend's ``builtin_max``)."""
    kwargs.pop("propagate_nan", None)
    return _frontend_min_max(args, kwargs, max, maximum)


@builtin("gl.aggregate_replace", effect="a copy of an aggregate with some fields replaced")
def aggregate_replace(instance: Any, **changes: Any) -> Any:
    fields = getattr(type(instance), "_fields", None)
    if fields is None:
        raise ExecutorError(
            f"aggregate_replace() expects an aggregate instance, got {type(instance).__name__}{where()}"
        )
    for name in changes:
        if name not in fields:
            raise ExecutorError(f"{type(instance).__name__} has no field {name!r}{where()}")
    values = {name: getattr(instance, name) for name in fields}
    values.update(changes)
    out = object.__new__(type(instance))
    for name, value in values.items():
        object.__setattr__(out, name, value)
    return out


@builtin("gl.device_print", effect="prints the values (one line per program, not per thread)")
def device_print(prefix: Any, *args: Any, hex: bool = False) -> None:
    ctx = current()
    shown = [a.local.tolist() if isinstance(a, RegTensor) else a for a in args]
    print(f"pid {tuple(ctx.program)} cta {ctx.cta} {ctx.partition}: {prefix}", *shown)


@builtin("gl.fp4_to_fp", effect="e2m1 pairs (uint8, two per byte along `axis`) decoded to a float type")
def fp4_to_fp(src: RegTensor, elem_type: Any, axis: Any) -> RegTensor:
    mags = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float32)
    table = torch.cat([mags, -mags])
    codes = src.local.to(torch.int64) & 0xFF
    a = int(axis) % src.rank
    lo, hi = table[codes & 0xF], table[codes >> 4]
    out = torch.stack([lo, hi], dim=a + 1).flatten(a, a + 1)
    shape = list(src.shape)
    shape[a] *= 2
    return RegTensor(out.to(torch_dtype(elem_type)), shape, elem_type, None)


@builtin("gl.gather", effect="src values picked along an axis by an index tensor (torch.gather)")
def gather(src: RegTensor, index: RegTensor, axis: Any) -> RegTensor:
    a = int(axis) % src.rank
    idx = index.local.to(torch.int64)
    if bool(((idx < 0) | (idx >= src.shape[a])).any()):
        raise ExecutorError(f"gl.gather: an index outside [0, {src.shape[a]}) along axis {a}{where()}")
    return RegTensor(torch.gather(src.local, a, idx), index.shape, src.dtype, index.layout)


@builtin("gl.histogram", effect="counts of the values 0..num_bins-1 (int32; masked-off lanes not counted)")
def histogram(input: RegTensor, num_bins: Any, mask: Any = None, layout: Any = None) -> RegTensor:
    values = input.local.reshape(-1).to(torch.int64)
    if mask is not None:
        values = values[_regs(mask).local.expand(input.local.shape).reshape(-1).to(torch.bool)]
    n = int(num_bins)
    values = values[(values >= 0) & (values < n)]
    return RegTensor(torch.bincount(values, minlength=n).to(torch.int32), [n], gl.int32, layout)


@builtin(
    "gl.associative_scan",
    effect="an inclusive scan with the kernel's combine function (one tensor)",
    note="several tensors at once are not implemented",
)
def associative_scan(input: Any, axis: Any, combine_fn: Any, reverse: bool = False) -> RegTensor:
    if isinstance(input, tuple | list):
        raise ExecutorError(
            f"gl.associative_scan of {len(input)} tensors at once is not implemented by the CPU executor{where()}"
        )
    fn = runtime().cpu(combine_fn) if hasattr(combine_fn, "fn") else combine_fn
    x = _regs(input)
    a = int(axis) % x.rank
    parts = list(x.local.unbind(a))
    order = range(len(parts) - 1, -1, -1) if reverse else range(len(parts))
    acc = None
    out: list[Any] = [None] * len(parts)
    for i in order:
        acc = parts[i] if acc is None else _regs(fn(RegTensor(acc), RegTensor(parts[i]))).local
        out[i] = acc
    return RegTensor(torch.stack(out, dim=a), x.shape, None, x.layout)


@builtin(
    "gl.map_elementwise",
    effect="the kernel's scalar function applied to each element (pack=1)",
    note="pack > 1 not implemented",
)
def map_elementwise(scalar_fn: Any, *args: Any, pack: Any = 1) -> Any:
    if int(pack) != 1:
        raise ExecutorError(f"gl.map_elementwise(pack={pack}) is not implemented by the CPU executor{where()}")
    fn = runtime().cpu(scalar_fn) if hasattr(scalar_fn, "fn") else scalar_fn
    tensors = [_regs(a) for a in args]
    shape = list(torch.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    flat = [t.local.expand(shape).reshape(-1) for t in tensors]
    results = [fn(*(RegTensor(f[i]) for f in flat)) for i in range(flat[0].numel() if flat else 0)]
    if results and isinstance(results[0], tuple):
        return tuple(
            RegTensor(torch.stack([_regs(r[j]).local for r in results]).reshape(shape), shape, None, tensors[0].layout)
            for j in range(len(results[0]))
        )
    return RegTensor(torch.stack([_regs(r).local for r in results]).reshape(shape), shape, None, tensors[0].layout)


def _view(x: RegTensor, *shape: Any) -> RegTensor:
    return x.reshape(*shape)


def _flip(x: RegTensor, dim: Any = None) -> RegTensor:
    d = x.rank - 1 if dim is None else int(dim) % x.rank
    return RegTensor(x.local.flip(d), x.shape, x.dtype, x.layout)


def _logical(op: Any) -> Any:
    def impl(x: Any, y: Any) -> RegTensor:
        a, b = _regs(x), _regs(y)
        return a._wrap(op(a.local.to(torch.bool), b.local.to(torch.bool)), gl.int1, b)

    return impl


for _name, _impl, _effect in (
    ("split", split, "the size-2 minor dimension split into two tensors"),
    ("view", _view, "the values in another shape (may reorder)"),
    ("ravel", ravel, "the values flattened"),
    ("flip", _flip, "the values reversed along a dimension (default: the last)"),
    ("logical_and", _logical(torch.logical_and), "elementwise and of truth values"),
    ("logical_or", _logical(torch.logical_or), "elementwise or of truth values"),
):
    builtin(f"tensor.{_name}", effect=_effect)(_impl)
    setattr(RegTensor, _name, _impl)


def _library_method(name: str) -> Any:
    """A method of ``gl.tensor`` the register tensor has no own code for: the Gluon builtin of that name with the
    tensor first (``x.cumsum(0)`` is ``gl.cumsum(x, 0)``), or Triton's own ``@jit`` library source
    (``x.argmax(0)``), run over the registry; without either, the "not implemented" error with the kernel line."""
    member = getattr(gl.tensor, name)

    def method(self: RegTensor, *args: Any, **kwargs: Any) -> Any:
        return runtime().cpu(member)(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in sorted(n for n in dir(gl.tensor) if not n.startswith("_") and callable(getattr(gl.tensor, n, None))):
    if not hasattr(RegTensor, _name) and _name not in ("store", "advance"):
        setattr(RegTensor, _name, _library_method(_name))


# register-tensor methods that are builtins too (rows of the table; the methods live on RegTensor)
for _name, _effect in (
    ("to", "a dtype conversion (bitcast=True: the same bits)"),
    ("sum", "a sum along an axis"),
    ("max", "a maximum along an axis"),
    ("min", "a minimum along an axis"),
    ("reshape", "the values in another shape"),
    ("permute", "the dimensions reordered"),
    ("trans", "the dimensions reversed"),
    ("__getitem__", "x[:, None]: a new dimension"),
    ("expand_dims", "a new size-1 dimension"),
    ("broadcast_to", "the values broadcast"),
    ("cast", "a dtype conversion"),
    ("item", "the value of a one-element tensor"),
    *(
        (m, f"elementwise {m}")
        for m in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "floor", "ceil", "abs")
    ),
):
    builtin(f"tensor.{_name}", effect=_effect)(getattr(RegTensor, _name))


# =====================================================================================
# gl: global memory through pointers
# =====================================================================================
def _pointers(ptr: Any, what: str) -> PointerTensor:
    if isinstance(ptr, Pointer):
        return PointerTensor(ptr, torch.tensor(ptr.offset, dtype=torch.int64), [], None)
    if not isinstance(ptr, PointerTensor):
        raise ExecutorError(
            f"gl.{what} needs pointers (a tensor argument plus offsets), got {type(ptr).__name__}{where()}"
        )
    return ptr


def _representative(ptrs: PointerTensor, m: torch.Tensor | None) -> torch.Tensor | None:
    """``m`` limited to the elements this CTA writes: in a cluster, a layout that splits the tensor over the
    CTAs gives each its part, and one that copies it is stored by one CTA only (the compiled store masks the
    copies off), so two CTAs never write the same element through one store.  A scalar is every CTA's: the
    compiled store (or atomic) writes it from CTA 0 only (an H200 showed a 2-CTA kernel's scalar stores from
    CTA 1 never land; the silicon suite's ``cluster_*`` cases record both)."""
    rt = runtime()
    if getattr(rt, "num_ctas", 1) <= 1:
        return m
    if not ptrs.shape:
        first = torch.tensor(current().cta == 0)
        return first if m is None else m & first
    if ptrs.layout is None or list(ptrs.offsets.shape) != ptrs.shape:
        return m
    owned = cta_owned(ptrs.layout, ptrs.shape, rt.num_ctas, current().cta)
    if owned is None:
        return m
    return owned if m is None else m & owned


def _mask(mask: Any, shape: list[int], what: str) -> torch.Tensor | None:
    if mask is None:
        return None
    m = mask.local if isinstance(mask, RegTensor) else torch.tensor(bool(mask))
    try:
        return m.to(torch.bool).expand(shape)
    except RuntimeError:
        raise ExecutorError(
            f"gl.{what}: the mask {list(m.shape)} does not broadcast to the pointers {shape}{where()}"
        ) from None


@builtin(
    "gl.load",
    op=ops.GlobalLoad,
    effect="global memory into registers; masked-off lanes get `other` "
    "(none: garbage); a lane outside its tensor's storage is a hazard",
    note="cache / eviction hints ignored",
)
def load(
    pointer: Any,
    mask: Any = None,
    other: Any = None,
    boundary_check: Any = (),
    padding_option: str = "",
    cache_modifier: str = "",
    eviction_policy: str = "",
    volatile: bool = False,
    layout: Any = None,
) -> RegTensor:
    ptrs = _pointers(pointer, "load")
    m = _mask(mask, ptrs.shape, "load")
    dtype = ptrs.base.element_ty
    if other is not None:  # Triton casts `other` to the pointee type (a constant: rounded once)
        other = (
            _regs(other).to(dtype)
            if isinstance(other, RegTensor)
            else RegTensor(arith.constant(getattr(other, "value", other), dtype), [], dtype)
        )
    op = ops.GlobalLoad(math.prod(ptrs.shape) * torch_dtype(dtype).itemsize)
    op.x = Payload(ptrs=ptrs, mask=m, other=other, dtype=dtype)
    return emit(op)


@builtin(
    "gl.store",
    op=ops.GlobalStore,
    effect="registers into global memory (cast to the pointee type); masked-off "
    "lanes untouched; a lane outside its tensor's storage is a hazard",
    note="cache / eviction hints ignored",
)
def store(
    pointer: Any,
    value: Any,
    mask: Any = None,
    boundary_check: Any = (),
    cache_modifier: str = "",
    eviction_policy: str = "",
) -> None:
    ptrs = _pointers(pointer, "store")
    m = _representative(ptrs, _mask(mask, ptrs.shape, "store"))
    v = _regs(value).to(ptrs.base.element_ty)  # Triton casts the value to the pointee type
    try:
        values = v.local.expand(ptrs.shape) if v.shape != ptrs.shape else v.local
    except RuntimeError:
        raise ExecutorError(f"gl.store of a {v.shape} value through {ptrs.shape} pointers{where()}") from None
    op = ops.GlobalStore(math.prod(ptrs.shape) * torch_dtype(ptrs.base.element_ty).itemsize)
    op.x = Payload(ptrs=ptrs, mask=m, values=values)
    emit(op)
