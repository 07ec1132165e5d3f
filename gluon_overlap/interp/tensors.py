"""Register values as the compiled kernel computes them: runtime integers, register tensors, pointers.

* :class:`RuntimeInt` -- a runtime ``i32`` scalar (``program_id``, a non-constexpr int argument, a
  loop variable over runtime bounds).  ``//`` and ``%`` truncate toward zero (``arith.divsi`` /
  ``arith.remsi``) and every result wraps to 32 bits, as on the GPU; constexpr ints stay Python ints.
* :class:`RegTensor` -- a distributed register tensor: the CTA's values (a torch tensor), the logical
  (cluster-wide) shape, the Gluon dtype and layout.  Arithmetic broadcasts like Gluon, integer ``//``
  and ``%`` truncate, comparisons give ``int1`` tensors, ``x[:, None]`` inserts a dimension.
* :class:`Pointer` / pointer tensors -- a kernel's tensor argument (a CPU tensor's storage) plus an
  element offset per lane; ``gl.load`` / ``gl.store`` read and write through them.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
import triton.experimental.gluon.language as gl

from gluon_overlap.gpu import arith
from gluon_overlap.gpu import numerics as N
from gluon_overlap.gpu.reduce_order import reduce_along, reduce_order
from gluon_overlap.interp.context import ExecutorError, fp_fusion, where

__all__ = ["Pointer", "RegTensor", "RuntimeInt", "gl_dtype", "operand", "reduce_", "torch_dtype"]

#: gl dtype name -> torch dtype of the storage
_TORCH_DTYPES = {
    "int1": torch.bool,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint16": torch.uint16,
    "uint32": torch.uint32,
    "uint64": torch.uint64,
    "fp8e4nv": torch.float8_e4m3fn,
    "fp8e5": torch.float8_e5m2,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "fp32": torch.float32,
    "fp64": torch.float64,
}
_GL_DTYPES = {
    torch.bool: gl.int1,
    torch.uint8: gl.uint8,
    torch.int8: gl.int8,
    torch.int16: gl.int16,
    torch.int32: gl.int32,
    torch.uint16: gl.uint16,
    torch.uint32: gl.uint32,
    torch.uint64: gl.uint64,
    torch.int64: gl.int64,
    torch.float8_e4m3fn: gl.float8e4nv,
    torch.float8_e5m2: gl.float8e5,
    torch.float16: gl.float16,
    torch.bfloat16: gl.bfloat16,
    torch.float32: gl.float32,
    torch.float64: gl.float64,
}


def torch_dtype(dtype: Any) -> torch.dtype:
    name = getattr(dtype, "name", str(dtype))
    if name not in _TORCH_DTYPES:
        raise ExecutorError(f"the executor has no storage for dtype {dtype}")
    return _TORCH_DTYPES[name]


def gl_dtype(dtype: torch.dtype) -> Any:
    if dtype not in _GL_DTYPES:
        raise ExecutorError(f"the executor has no Gluon dtype for torch {dtype}")
    return _GL_DTYPES[dtype]


# =====================================================================================
# runtime scalars
# =====================================================================================
def _wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _trunc_div(a: int, b: int) -> int:
    """``div.s32``: truncating; by zero all ones (-1), as the GPU answers (``INT_MIN // -1`` wraps)."""
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _trunc_rem(a: int, b: int) -> int:
    """``rem.s32``: the dividend's sign; by zero all ones (-1)."""
    return -1 if b == 0 else a - b * _trunc_div(a, b)


def _shl(a: int, b: int) -> int:
    """``shl.b32``: the count unsigned, clamped to 32."""
    return a << min(b & 0xFFFFFFFF, 32)


def _shr(a: int, b: int) -> int:
    """``shr.s32``: arithmetic, the count unsigned, clamped to 32."""
    return a >> min(b & 0xFFFFFFFF, 32)


class RuntimeInt(int):
    """A runtime ``i32`` value: compiled-kernel integer semantics (truncating ``//`` / ``%``, 32-bit wrap)."""

    __slots__ = ()

    def __new__(cls, value: Any) -> RuntimeInt:
        return int.__new__(cls, _wrap32(int(value)))

    def __repr__(self) -> str:
        return f"RuntimeInt({int(self)})"

    def _op(self, other: Any, fn: Any, swap: bool = False) -> Any:
        if isinstance(other, bool) or not isinstance(other, int):
            if isinstance(other, float):
                return fn(other, float(self)) if swap else fn(float(self), other)
            return NotImplemented
        a, b = (int(other), int(self)) if swap else (int(self), int(other))
        return RuntimeInt(fn(a, b))

    def __add__(self, o: Any) -> Any:
        return self._op(o, operator.add)  # noqa: E704

    def __radd__(self, o: Any) -> Any:
        return self._op(o, operator.add, True)  # noqa: E704

    def __sub__(self, o: Any) -> Any:
        return self._op(o, operator.sub)  # noqa: E704

    def __rsub__(self, o: Any) -> Any:
        return self._op(o, operator.sub, True)  # noqa: E704

    def __mul__(self, o: Any) -> Any:
        return self._op(o, operator.mul)  # noqa: E704

    def __rmul__(self, o: Any) -> Any:
        return self._op(o, operator.mul, True)  # noqa: E704

    def __floordiv__(self, o: Any) -> Any:
        return self._op(o, _trunc_div)  # noqa: E704

    def __rfloordiv__(self, o: Any) -> Any:
        return self._op(o, _trunc_div, True)  # noqa: E704

    def __mod__(self, o: Any) -> Any:
        return self._op(o, _trunc_rem)  # noqa: E704

    def __rmod__(self, o: Any) -> Any:
        return self._op(o, _trunc_rem, True)  # noqa: E704

    def __and__(self, o: Any) -> Any:
        return self._op(o, operator.and_)  # noqa: E704

    def __rand__(self, o: Any) -> Any:
        return self._op(o, operator.and_, True)  # noqa: E704

    def __or__(self, o: Any) -> Any:
        return self._op(o, operator.or_)  # noqa: E704

    def __ror__(self, o: Any) -> Any:
        return self._op(o, operator.or_, True)  # noqa: E704

    def __xor__(self, o: Any) -> Any:
        return self._op(o, operator.xor)  # noqa: E704

    def __rxor__(self, o: Any) -> Any:
        return self._op(o, operator.xor, True)  # noqa: E704

    def __lshift__(self, o: Any) -> Any:
        return self._op(o, _shl)  # noqa: E704

    def __rlshift__(self, o: Any) -> Any:
        return self._op(o, _shl, True)  # noqa: E704

    def __rshift__(self, o: Any) -> Any:
        return self._op(o, _shr)  # noqa: E704

    def __rrshift__(self, o: Any) -> Any:
        return self._op(o, _shr, True)  # noqa: E704

    def __neg__(self) -> RuntimeInt:
        return RuntimeInt(-int(self))  # noqa: E704

    def __invert__(self) -> RuntimeInt:
        return RuntimeInt(~int(self))  # noqa: E704

    def __pos__(self) -> RuntimeInt:
        return self  # noqa: E704

    def __abs__(self) -> RuntimeInt:
        return RuntimeInt(abs(int(self)))  # noqa: E704


class GridInt(RuntimeInt):
    """``gl.program_id(axis)`` or ``gl.num_programs(axis)`` as the kernel received it (any arithmetic gives a plain
    :class:`RuntimeInt`): lets :func:`runtime_range` recognise a persistent tile loop."""

    role: str
    axis: int

    def __new__(cls, value: Any, role: str = "", axis: int = 0) -> GridInt:
        out = int.__new__(cls, _wrap32(int(value)))
        out.role, out.axis = role, axis
        return out


def _persistent_loop(args: tuple) -> bool:
    """``range(gl.program_id(a), num_tiles, gl.num_programs(a))``: the persistent kernel's walk over its tiles (each
    value a tile index, this program's next one)."""
    if len(args) != 3:
        return False
    start, _, step = args
    return (
        isinstance(start, GridInt)
        and start.role == "program_id"
        and isinstance(step, GridInt)
        and step.role == "num_programs"
        and start.axis == step.axis
    )


def _tile_loop(r: range) -> Any:
    from gluon_overlap.interp.context import current_or_none

    for i in r:
        ctx = current_or_none()
        if ctx is not None:
            ctx.on_tile_loop(i)
        yield RuntimeInt(i)


def runtime_range(*args: Any) -> Any:
    """``range`` in a kernel: over runtime bounds its variable is a runtime value.  A persistent tile loop
    (``range(program_id, num_tiles, num_programs)``) also tells the running process which tile each iteration
    works on (annotation only: reports name the tile)."""
    r = range(*(int(a) for a in args))
    if _persistent_loop(args):
        return _tile_loop(r)
    if any(isinstance(a, RuntimeInt) for a in args):
        return (RuntimeInt(i) for i in r)
    return r


# =====================================================================================
# register tensors
# =====================================================================================
class RegType:
    """``x.type``: shape, element type and layout of a register tensor."""

    def __init__(self, shape: list[int], dtype: Any, layout: Any):
        self.shape, self.element_ty, self.layout = shape, dtype, layout
        self.scalar = dtype

    @property
    def dtype(self) -> Any:
        return self.element_ty


def _value(x: Any) -> Any:
    return x.local if isinstance(x, RegTensor) else x


def _is_int(t: torch.Tensor) -> bool:
    return not t.dtype.is_floating_point and t.dtype != torch.bool


def operand(x: Any) -> arith.Operand:
    """A kernel value as a typed operand: a register tensor, a runtime i32, or a Python constant."""
    if isinstance(x, RegTensor):
        return arith.Operand(x.local, x.dtype, False)
    if isinstance(x, RuntimeInt):
        return arith.Operand(torch.tensor(int(x), dtype=torch.int32), gl.int32, False)
    if isinstance(x, bool | int | float):
        return arith.Operand(x, N.scalar_type(x), True)
    if hasattr(x, "value") and isinstance(getattr(x, "value", None), bool | int | float):  # a gl.constexpr
        return arith.Operand(x.value, N.scalar_type(x.value), True)
    raise ExecutorError(f"expected a tensor or a number, got {type(x).__name__}{where()}")


def _dims(args: tuple[Any, ...]) -> list[Any]:
    """``f(2, 3)`` or ``f((2, 3))`` / ``f([2, 3])``: the sizes (or axes) as one list."""
    return list(args[0]) if len(args) == 1 and isinstance(args[0], list | tuple) else list(args)


class RegTensor:
    """A distributed register tensor: CTA-local values (register form, :mod:`~gluon_overlap.gpu.numerics`)
    plus the logical (cluster-wide) shape, the Gluon dtype and the layout. ``fma`` holds the factors of a float
    product while fp fusion is on, so that an addition it flows into is contracted as the compiler does."""

    __slots__ = ("local", "shape", "dtype", "layout", "fma")

    def __init__(self, local: torch.Tensor, shape: list[int] | None = None, dtype: Any = None, layout: Any = None):
        if dtype is None:
            dtype = gl_dtype(local.dtype)
        self.local = N.to_reg(local)
        self.shape = list(local.shape if shape is None else shape)
        self.dtype = dtype
        self.layout = layout
        self.fma: tuple[torch.Tensor, ...] | None = None

    def __repr__(self) -> str:
        return f"RegTensor({self.dtype}, {self.shape})"

    @property
    def type(self) -> RegType:
        return RegType(self.shape, self.dtype, self.layout)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    # --- conversions -------------------------------------------------------------------
    def to(self, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False, **_: Any) -> RegTensor:
        dtype = getattr(dtype, "value", dtype) if not hasattr(dtype, "name") else dtype
        if bitcast:
            if dtype.primitive_bitwidth != self.dtype.primitive_bitwidth:
                raise ExecutorError(
                    f"Cannot bitcast data-type of size {self.dtype.primitive_bitwidth} to data-type "
                    f"of size {dtype.primitive_bitwidth}{where()}"
                )
            return RegTensor(self.local.view(N.reg_dtype(dtype)), self.shape, dtype, self.layout)
        rounding = getattr(fp_downcast_rounding, "value", fp_downcast_rounding)
        narrowing = (
            dtype.is_floating()
            and self.dtype.is_floating()
            and dtype.primitive_bitwidth < self.dtype.primitive_bitwidth
        )
        if rounding is not None and not narrowing:
            raise ExecutorError(
                f"fp_downcast_rounding should be set only for truncating fp conversions: "
                f"{self.dtype} to {dtype}{where()}"
            )
        if rounding not in (None, "rtne", "rtz"):
            raise ExecutorError(
                f"Invalid rounding mode: {rounding}. Supported rounding modes are 'rtne' and 'rtz'{where()}"
            )
        return RegTensor(N.convert(self.local, self.dtype, dtype, rounding), self.shape, dtype, self.layout)

    # --- arithmetic ----------------------------------------------------------------------
    def _wrap(self, t: torch.Tensor, dtype: Any, other: Any = None) -> RegTensor:
        """A result of an operation of ``self`` (and ``other``): its logical shape and layout follow the
        operands (broadcasting, the first operand with a layout)."""
        shape = self.shape
        if isinstance(other, RegTensor) and other.shape != shape:
            shape = list(torch.broadcast_shapes(tuple(shape), tuple(other.shape)))
        elif list(t.shape) != list(self.local.shape) and not isinstance(other, RegTensor):
            shape = list(t.shape)
        layout = self.layout if self.layout is not None or not isinstance(other, RegTensor) else other.layout
        return RegTensor(t, shape, dtype, layout)

    def _check_shapes(self, other: Any, what: str) -> None:
        if isinstance(other, RegTensor) and other.shape != self.shape:
            try:
                torch.broadcast_shapes(tuple(self.shape), tuple(other.shape))
            except RuntimeError:
                raise ExecutorError(
                    f"{what} of shapes {self.shape} and {other.shape}: they do not broadcast{where()}"
                ) from None

    def _bin(self, other: Any, op: str, what: str, swap: bool = False) -> RegTensor:
        if isinstance(other, Pointer | PointerTensor):
            return NotImplemented
        self._check_shapes(other, what)
        lhs, rhs = (other, self) if swap else (self, other)
        a, b = operand(lhs), operand(rhs)
        try:
            fused = _contracted(op, lhs, rhs, a, b) if op in ("add", "sub") else None
            if fused is not None:
                return self._wrap(fused[0], fused[1], other)
            t, dtype = arith.binary(op, a, b)
        except TypeError as exc:
            raise ExecutorError(f"{what}: {exc}{where()}") from None
        out = self._wrap(t, dtype, other)
        if op == "mul" and dtype.is_floating() and fp_fusion():
            out.fma = (arith.cast(a, dtype), arith.cast(b, dtype))
        return out

    def __add__(self, o: Any) -> RegTensor:
        return self._bin(o, "add", "+")  # noqa: E704

    def __radd__(self, o: Any) -> RegTensor:
        return self._bin(o, "add", "+", True)  # noqa: E704

    def __sub__(self, o: Any) -> RegTensor:
        return self._bin(o, "sub", "-")  # noqa: E704

    def __rsub__(self, o: Any) -> RegTensor:
        return self._bin(o, "sub", "-", True)  # noqa: E704

    def __mul__(self, o: Any) -> RegTensor:
        return self._bin(o, "mul", "*")  # noqa: E704

    def __rmul__(self, o: Any) -> RegTensor:
        return self._bin(o, "mul", "*", True)  # noqa: E704

    def __truediv__(self, o: Any) -> RegTensor:
        return self._bin(o, "truediv", "/")  # noqa: E704

    def __rtruediv__(self, o: Any) -> RegTensor:
        return self._bin(o, "truediv", "/", True)  # noqa: E704

    def __floordiv__(self, o: Any) -> RegTensor:
        return self._bin(o, "floordiv", "//")  # noqa: E704

    def __rfloordiv__(self, o: Any) -> RegTensor:
        return self._bin(o, "floordiv", "//", True)  # noqa: E704

    def __mod__(self, o: Any) -> RegTensor:
        return self._bin(o, "mod", "%")  # noqa: E704

    def __rmod__(self, o: Any) -> RegTensor:
        return self._bin(o, "mod", "%", True)  # noqa: E704

    def __and__(self, o: Any) -> RegTensor:
        return self._bin(o, "and", "&")  # noqa: E704

    def __rand__(self, o: Any) -> RegTensor:
        return self._bin(o, "and", "&", True)  # noqa: E704

    def __or__(self, o: Any) -> RegTensor:
        return self._bin(o, "or", "|")  # noqa: E704

    def __ror__(self, o: Any) -> RegTensor:
        return self._bin(o, "or", "|", True)  # noqa: E704

    def __xor__(self, o: Any) -> RegTensor:
        return self._bin(o, "xor", "^")  # noqa: E704

    def __rxor__(self, o: Any) -> RegTensor:
        return self._bin(o, "xor", "^", True)  # noqa: E704

    def __lshift__(self, o: Any) -> RegTensor:
        return self._bin(o, "shl", "<<")  # noqa: E704

    def __rlshift__(self, o: Any) -> RegTensor:
        return self._bin(o, "shl", "<<", True)  # noqa: E704

    def __rshift__(self, o: Any) -> RegTensor:
        return self._bin(o, "shr", ">>")  # noqa: E704

    def __rrshift__(self, o: Any) -> RegTensor:
        return self._bin(o, "shr", ">>", True)  # noqa: E704

    def __lt__(self, o: Any) -> RegTensor:
        return self._bin(o, "lt", "<")  # noqa: E704

    def __le__(self, o: Any) -> RegTensor:
        return self._bin(o, "le", "<=")  # noqa: E704

    def __gt__(self, o: Any) -> RegTensor:
        return self._bin(o, "gt", ">")  # noqa: E704

    def __ge__(self, o: Any) -> RegTensor:
        return self._bin(o, "ge", ">=")  # noqa: E704

    def __eq__(self, o: Any) -> Any:
        return self._bin(o, "eq", "==")  # noqa: E704

    def __ne__(self, o: Any) -> Any:
        return self._bin(o, "ne", "!=")  # noqa: E704

    def _unary(self, op: str) -> RegTensor:
        try:
            t, dtype = arith.unary(op, operand(self))
        except TypeError as exc:
            raise ExecutorError(f"{exc}{where()}") from None
        out = self._wrap(t, dtype)
        if op == "neg" and self.fma is not None:  # fneg of a product still contracts (fma(-x, y, z))
            out.fma = (-self.fma[0], self.fma[1])
        return out

    def __neg__(self) -> RegTensor:
        return self._unary("neg")  # noqa: E704

    def __invert__(self) -> RegTensor:
        return self._unary("invert")  # noqa: E704

    def __abs__(self) -> RegTensor:
        return self._unary("abs")  # noqa: E704

    def __pos__(self) -> RegTensor:
        return self  # noqa: E704

    __hash__ = None  # type: ignore[assignment]

    def _scalar_value(self) -> Any:
        v = self.local.reshape(-1)[0].item()
        if isinstance(v, int) and N.is_unsigned(self.dtype) and v < 0:
            v += 1 << self.dtype.int_bitwidth
        return v

    def __bool__(self) -> bool:
        if self.numel != 1:
            raise ExecutorError(
                f"a {self.shape} tensor has no truth value (Python control flow needs a scalar){where()}"
            )
        return bool(self.local.reshape(-1)[0])

    def __int__(self) -> int:
        return int(self._scalar_value())

    def __index__(self) -> int:
        return int(self)

    def __float__(self) -> float:
        return float(self._scalar_value())

    def __getitem__(self, index: Any) -> RegTensor:
        """``x[:, None]``: only full slices and ``None`` (a new dimension of size 1), as in Gluon. A new
        dimension where a ``SliceLayout`` sliced one brings back its parent layout (``expand_dims``)."""
        index = index if isinstance(index, tuple) else (index,)
        if any(i is not None and i != slice(None) for i in index):
            raise ExecutorError(f"indexing a register tensor takes only ':' and None, got {index}{where()}")
        shape, dim = [], 0
        for i in index:
            if i is None:
                shape.append(1)
            else:
                shape.append(self.shape[dim])
                dim += 1
        shape += self.shape[dim:]
        new_axes = [d for d, i in enumerate(index) if i is None]
        out = RegTensor(_unsqueeze(self.local, index), shape, self.dtype, _expanded_layout(self.layout, new_axes))
        if self.fma is not None:
            out.fma = tuple(_unsqueeze(f, index) for f in self.fma)
        return out

    # --- the tensor methods Gluon has ----------------------------------------------------
    def sum(self, axis: Any = None, keep_dims: bool = False, dtype: Any = None, **kw: Any) -> RegTensor:
        return reduce_(self, axis, "sum", keep_dims, dtype)

    def max(self, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
        return reduce_(self, axis, "max", keep_dims)

    def min(self, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
        return reduce_(self, axis, "min", keep_dims)

    def reshape(self, *shape: Any, **kw: Any) -> RegTensor:
        sizes = [int(s) for s in _dims(shape)]
        return RegTensor(self.local.reshape(sizes), sizes, self.dtype, None)

    def permute(self, *dims: Any) -> RegTensor:
        order = [int(d) for d in _dims(dims)]
        return RegTensor(self.local.permute(*order), [self.shape[d] for d in order], self.dtype, None)

    def trans(self, *dims: Any) -> RegTensor:
        return self.permute(*(dims or (1, 0)))

    @property
    def T(self) -> RegTensor:
        return self.permute(1, 0)

    def expand_dims(self, axis: Any) -> RegTensor:
        index: list[Any] = [slice(None)] * self.rank
        axis = int(axis)
        index.insert(axis if axis >= 0 else self.rank + 1 + axis, None)
        return self[tuple(index)]

    def broadcast_to(self, *shape: Any) -> RegTensor:
        sizes = [int(s) for s in _dims(shape)]
        out = RegTensor(self.local.expand(sizes), sizes, self.dtype, self.layout)
        if self.fma is not None:
            out.fma = tuple(f.expand(sizes) for f in self.fma)
        return out

    def cast(self, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> RegTensor:
        return self.to(dtype, fp_downcast_rounding=fp_downcast_rounding, bitcast=bitcast)

    def item(self) -> Any:
        return self._scalar_value()

    def _math(self, op: str) -> RegTensor:
        t, dtype = arith.math1(op, operand(self))
        return self._wrap(t, dtype)

    def exp(self) -> RegTensor:
        return self._math("exp")  # noqa: E704

    def exp2(self) -> RegTensor:
        return self._math("exp2")  # noqa: E704

    def log(self) -> RegTensor:
        return self._math("log")  # noqa: E704

    def log2(self) -> RegTensor:
        return self._math("log2")  # noqa: E704

    def sqrt(self) -> RegTensor:
        return self._math("sqrt")  # noqa: E704

    def rsqrt(self) -> RegTensor:
        return self._math("rsqrt")  # noqa: E704

    def sin(self) -> RegTensor:
        return self._math("sin")  # noqa: E704

    def cos(self) -> RegTensor:
        return self._math("cos")  # noqa: E704

    def erf(self) -> RegTensor:
        return self._math("erf")  # noqa: E704

    def floor(self) -> RegTensor:
        return self._math("floor")  # noqa: E704

    def ceil(self) -> RegTensor:
        return self._math("ceil")  # noqa: E704

    def abs(self) -> RegTensor:
        return self._unary("abs")  # noqa: E704


def _unsqueeze(t: torch.Tensor, index: tuple) -> torch.Tensor:
    d = 0
    for i in index:
        if i is None:
            t = t.unsqueeze(d)
        d += 1
    return t


def _expanded_layout(layout: Any, new_axes: list[int]) -> Any:
    """The layout after inserting dimensions ``new_axes``: a SliceLayout's parent where it sliced that axis."""
    if (
        len(new_axes) == 1
        and layout is not None
        and type(layout).__name__ == "SliceLayout"
        and int(getattr(layout, "dim", -1)) == new_axes[0]
    ):
        return layout.parent
    return None


def _contracted(op: str, lhs: Any, rhs: Any, a: arith.Operand, b: arith.Operand) -> tuple[torch.Tensor, Any] | None:
    """``x * y + z`` (or ``-``) as one FMA when fp fusion is on and an operand is a float product of the
    addition's type -- the left one first, as LLVM's DAG combiner does (NVPTX fuses aggressively)."""
    left = lhs.fma if isinstance(lhs, RegTensor) else None
    right = rhs.fma if isinstance(rhs, RegTensor) else None
    if left is None and right is None:
        return None
    ty = N.computation_type(a.dtype, a.scalar, b.dtype, b.scalar)
    if not ty.is_floating() or not fp_fusion():
        return None
    if left is not None and lhs.dtype.name == ty.name:
        c = arith.cast(b, ty)
        return N.fma(left[0], left[1], -c if op == "sub" else c), ty
    if right is not None and rhs.dtype.name == ty.name:
        x, y = right
        return N.fma(-x if op == "sub" else x, y, arith.cast(a, ty)), ty
    return None


_SUM_NARROW = {True: gl.int32, False: gl.uint32}


def _pick_sum_dtype(dtype: Any, requested: Any) -> Any:
    """``gl.sum``'s accumulation type (``_pick_sum_dtype``): integers narrower than 32 bits in 32 bits."""
    if requested is not None:
        return getattr(requested, "value", requested)
    if dtype.is_int() and not dtype.is_bool() and dtype.int_bitwidth < 32:
        return _SUM_NARROW[dtype.is_int_signed()]
    return dtype


def combiner(how: str, dtype: Any) -> Any:
    """The elementwise combine of a builtin reduction, on register values of ``dtype``."""
    if how == "sum":
        return N.fadd if dtype.is_floating() else torch.add
    if how in ("max", "min"):
        if dtype.is_floating():
            return lambda a, b: N.fminmax(a, b, how == "max", False)
        return lambda a, b: N.iminmax(a, b, dtype, how == "max")
    if how == "xor":
        return torch.bitwise_xor
    if how == "or":
        return torch.bitwise_or
    raise ValueError(f"unknown reduction {how!r}")


def reduce_(
    x: RegTensor, axis: Any, how: str, keep_dims: bool = False, dtype: Any = None, combine: Any = None
) -> RegTensor:
    """``gl.sum`` / ``gl.max`` / ``gl.min`` / ``gl.xor_sum`` / ``gl.reduce_or`` (or ``gl.reduce`` with the
    kernel's ``combine``) as Triton lowers them: sums of integers narrower than 32 bits in 32 bits, max / min
    of types narrower than 32 bits in float32 / int32, the combination order of the layout
    (:mod:`~gluon_overlap.gpu.reduce_order`)."""
    if not isinstance(x, RegTensor):
        raise ExecutorError(f"gl.{how} needs a register tensor, got {type(x).__name__}{where()}")
    if how == "sum":
        x = x.to(_pick_sum_dtype(x.dtype, dtype))
    elif how in ("max", "min") and x.dtype.primitive_bitwidth < 32:
        x = x.to(gl.float32 if x.dtype.is_floating() else gl.int32)
    t, layout, shape = x.local, x.layout, list(x.shape)
    if axis is None:
        if x.rank > 1:
            layout = None  # reshape(can_reorder=True): the compiler picks the order
        t, shape, axis, keep_dims = t.reshape(-1), [x.numel], 0, False
    axis = int(getattr(axis, "value", axis))
    if axis < 0:
        axis += max(1, len(shape))
    if not 0 <= axis < max(1, len(shape)):
        raise ExecutorError(f"gl.{how}(axis={axis}) of a rank-{len(shape)} tensor{where()}")
    fn = combine if combine is not None else combiner(how, x.dtype)
    order = reduce_order(layout, shape, axis, x.dtype.primitive_bitwidth) if t.dim() == len(shape) else None
    out = reduce_along(t, axis, fn, order)
    out_shape = shape[:axis] + shape[axis + 1 :]
    out_layout = None
    if layout is not None and hasattr(layout, "_to_ir"):
        out_layout = layout if keep_dims else gl.SliceLayout(axis, layout)
    if keep_dims:
        out = out.unsqueeze(axis)
        out_shape.insert(axis, 1)
    return RegTensor(out, out_shape, x.dtype, out_layout)


# =====================================================================================
# pointers
# =====================================================================================
class Pointer:
    """A kernel's tensor argument: ``dtype`` is the Gluon pointer type, the storage a flat CPU tensor."""

    __slots__ = ("flat", "offset", "dtype", "name")

    def __init__(self, flat: torch.Tensor, offset: int, dtype: Any, name: str):
        self.flat, self.offset, self.dtype, self.name = flat, offset, dtype, name

    @classmethod
    def of(cls, t: torch.Tensor, name: str) -> Pointer:
        storage = t.untyped_storage()
        flat = torch.empty(0, dtype=t.dtype).set_(storage, 0, (storage.nbytes() // t.element_size(),), (1,))
        return cls(flat, int(t.storage_offset()), gl.pointer_type(gl_dtype(t.dtype)), name)

    @property
    def element_ty(self) -> Any:
        return self.dtype.element_ty

    @property
    def type(self) -> Any:
        return self.dtype

    def __repr__(self) -> str:
        return f"pointer {self.name}+{self.offset}"

    def __add__(self, other: Any) -> Any:
        if isinstance(other, RegTensor):
            if not _is_int(other.local):
                raise ExecutorError(f"pointer {self.name} + a {other.dtype} tensor: offsets must be integers{where()}")
            return PointerTensor(self, other.local.to(torch.int64) + self.offset, other.shape, other.layout)
        if isinstance(other, bool) or not isinstance(other, int):
            raise ExecutorError(f"pointer {self.name} + {type(other).__name__}: offsets must be integers{where()}")
        return Pointer(self.flat, self.offset + int(other), self.dtype, self.name)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self + (-other)


class PointerTensor:
    """A tensor of pointers into one argument: element offsets into its storage, per lane."""

    __slots__ = ("base", "offsets", "shape", "layout")

    def __init__(self, base: Pointer, offsets: torch.Tensor, shape: list[int], layout: Any):
        self.base, self.offsets, self.shape, self.layout = base, offsets, list(shape), layout

    @property
    def dtype(self) -> Any:
        return self.base.dtype

    @property
    def type(self) -> RegType:
        return RegType(self.shape, self.base.dtype, self.layout)

    def __repr__(self) -> str:
        return f"pointers into {self.base.name} {self.shape}"

    def __add__(self, other: Any) -> PointerTensor:
        if isinstance(other, RegTensor):
            if not _is_int(other.local):
                raise ExecutorError(f"pointers + a {other.dtype} tensor: offsets must be integers{where()}")
            try:
                shape = list(torch.broadcast_shapes(tuple(self.shape), tuple(other.shape)))
            except RuntimeError:
                raise ExecutorError(
                    f"pointers {self.shape} + offsets {other.shape}: they do not broadcast{where()}"
                ) from None
            return PointerTensor(self.base, self.offsets + other.local.to(torch.int64), shape, self.layout)
        if isinstance(other, bool) or not isinstance(other, int):
            raise ExecutorError(f"pointers + {type(other).__name__}: offsets must be integers{where()}")
        return PointerTensor(self.base, self.offsets + int(other), self.shape, self.layout)

    __radd__ = __add__

    def __getitem__(self, index: Any) -> PointerTensor:
        r = RegTensor(self.offsets, self.shape, gl.int64, self.layout)[index]
        return PointerTensor(self.base, r.local, r.shape, None)
