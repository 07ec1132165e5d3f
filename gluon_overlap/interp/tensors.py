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

from gluon_overlap.interp.context import ExecutorError, where

__all__ = ["Pointer", "RegTensor", "RuntimeInt", "gl_dtype", "torch_dtype"]

#: gl dtype name -> torch dtype of the storage
_TORCH_DTYPES = {
    "int1": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "uint16": torch.uint16, "uint32": torch.uint32, "uint64": torch.uint64,
    "fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2, "fp16": torch.float16, "bf16": torch.bfloat16,
    "fp32": torch.float32, "fp64": torch.float64,
}
_GL_DTYPES = {
    torch.bool: gl.int1, torch.uint8: gl.uint8, torch.int8: gl.int8, torch.int16: gl.int16, torch.int32: gl.int32,
    torch.int64: gl.int64, torch.float8_e4m3fn: gl.float8e4nv, torch.float8_e5m2: gl.float8e5,
    torch.float16: gl.float16, torch.bfloat16: gl.bfloat16, torch.float32: gl.float32, torch.float64: gl.float64,
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
    if b == 0:
        raise ExecutorError(f"integer division by zero on runtime values (undefined on the GPU){where()}")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _trunc_rem(a: int, b: int) -> int:
    return a - b * _trunc_div(a, b)


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

    def __add__(self, o): return self._op(o, operator.add)  # noqa: E704
    def __radd__(self, o): return self._op(o, operator.add, True)  # noqa: E704
    def __sub__(self, o): return self._op(o, operator.sub)  # noqa: E704
    def __rsub__(self, o): return self._op(o, operator.sub, True)  # noqa: E704
    def __mul__(self, o): return self._op(o, operator.mul)  # noqa: E704
    def __rmul__(self, o): return self._op(o, operator.mul, True)  # noqa: E704
    def __floordiv__(self, o): return self._op(o, _trunc_div)  # noqa: E704
    def __rfloordiv__(self, o): return self._op(o, _trunc_div, True)  # noqa: E704
    def __mod__(self, o): return self._op(o, _trunc_rem)  # noqa: E704
    def __rmod__(self, o): return self._op(o, _trunc_rem, True)  # noqa: E704
    def __and__(self, o): return self._op(o, operator.and_)  # noqa: E704
    def __rand__(self, o): return self._op(o, operator.and_, True)  # noqa: E704
    def __or__(self, o): return self._op(o, operator.or_)  # noqa: E704
    def __ror__(self, o): return self._op(o, operator.or_, True)  # noqa: E704
    def __xor__(self, o): return self._op(o, operator.xor)  # noqa: E704
    def __rxor__(self, o): return self._op(o, operator.xor, True)  # noqa: E704
    def __lshift__(self, o): return self._op(o, operator.lshift)  # noqa: E704
    def __rshift__(self, o): return self._op(o, operator.rshift)  # noqa: E704
    def __neg__(self): return RuntimeInt(-int(self))  # noqa: E704
    def __invert__(self): return RuntimeInt(~int(self))  # noqa: E704
    def __pos__(self): return self  # noqa: E704
    def __abs__(self): return RuntimeInt(abs(int(self)))  # noqa: E704


def runtime_range(*args: Any) -> Any:
    """``range`` in a kernel: over runtime bounds its variable is a runtime value."""
    r = range(*(int(a) for a in args))
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


def _result_dtype(t: torch.Tensor) -> Any:
    return gl_dtype(t.dtype)


def _is_int(t: torch.Tensor) -> bool:
    return not t.dtype.is_floating_point and t.dtype != torch.bool


class RegTensor:
    """A distributed register tensor: CTA-local values plus the logical (cluster-wide) shape."""

    __slots__ = ("local", "shape", "dtype", "layout")

    def __init__(self, local: torch.Tensor, shape: list[int] | None = None, dtype: Any = None, layout: Any = None):
        self.local = local
        self.shape = list(local.shape if shape is None else shape)
        self.dtype = _result_dtype(local) if dtype is None else dtype
        self.layout = layout

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
        target = torch_dtype(dtype)
        if bitcast:
            return RegTensor(self.local.view(target), self.shape, dtype, self.layout)
        return RegTensor(self.local.to(target), self.shape, dtype, self.layout)

    # --- arithmetic ----------------------------------------------------------------------
    def _new(self, t: torch.Tensor, other: Any = None) -> RegTensor:
        shape = self.shape
        if isinstance(other, RegTensor) and other.shape != shape:
            shape = list(torch.broadcast_shapes(tuple(shape), tuple(other.shape)))
        elif list(t.shape) != list(self.local.shape) and not isinstance(other, RegTensor):
            shape = list(t.shape)
        layout = self.layout if self.layout is not None or not isinstance(other, RegTensor) else other.layout
        return RegTensor(t, shape, _result_dtype(t) if t.dtype != torch_dtype(self.dtype) else self.dtype, layout)

    def _check_shapes(self, other: Any, what: str) -> None:
        if isinstance(other, RegTensor) and other.shape != self.shape:
            try:
                torch.broadcast_shapes(tuple(self.shape), tuple(other.shape))
            except RuntimeError:
                raise ExecutorError(f"{what} of shapes {self.shape} and {other.shape}: they do not broadcast"
                                    f"{where()}") from None

    def _bin(self, other: Any, fn: Any, what: str, swap: bool = False) -> RegTensor:
        if isinstance(other, Pointer | PointerTensor):
            return NotImplemented
        self._check_shapes(other, what)
        a, b = self.local, _value(other)
        return self._new(fn(b, a) if swap else fn(a, b), other)

    def __add__(self, o): return self._bin(o, torch.add, "+")  # noqa: E704
    def __radd__(self, o): return self._bin(o, torch.add, "+", True)  # noqa: E704
    def __sub__(self, o): return self._bin(o, torch.sub, "-")  # noqa: E704
    def __rsub__(self, o): return self._bin(o, torch.sub, "-", True)  # noqa: E704
    def __mul__(self, o): return self._bin(o, torch.mul, "*")  # noqa: E704
    def __rmul__(self, o): return self._bin(o, torch.mul, "*", True)  # noqa: E704
    def __truediv__(self, o): return self._bin(o, _true_div, "/")  # noqa: E704
    def __rtruediv__(self, o): return self._bin(o, _true_div, "/", True)  # noqa: E704
    def __floordiv__(self, o): return self._bin(o, _floordiv, "//")  # noqa: E704
    def __rfloordiv__(self, o): return self._bin(o, _floordiv, "//", True)  # noqa: E704
    def __mod__(self, o): return self._bin(o, _mod, "%")  # noqa: E704
    def __rmod__(self, o): return self._bin(o, _mod, "%", True)  # noqa: E704
    def __and__(self, o): return self._bin(o, torch.bitwise_and, "&")  # noqa: E704
    def __rand__(self, o): return self._bin(o, torch.bitwise_and, "&", True)  # noqa: E704
    def __or__(self, o): return self._bin(o, torch.bitwise_or, "|")  # noqa: E704
    def __ror__(self, o): return self._bin(o, torch.bitwise_or, "|", True)  # noqa: E704
    def __xor__(self, o): return self._bin(o, torch.bitwise_xor, "^")  # noqa: E704
    def __rxor__(self, o): return self._bin(o, torch.bitwise_xor, "^", True)  # noqa: E704
    def __lshift__(self, o): return self._bin(o, torch.bitwise_left_shift, "<<")  # noqa: E704
    def __rshift__(self, o): return self._bin(o, torch.bitwise_right_shift, ">>")  # noqa: E704
    def __lt__(self, o): return self._bin(o, torch.lt, "<")  # noqa: E704
    def __le__(self, o): return self._bin(o, torch.le, "<=")  # noqa: E704
    def __gt__(self, o): return self._bin(o, torch.gt, ">")  # noqa: E704
    def __ge__(self, o): return self._bin(o, torch.ge, ">=")  # noqa: E704
    def __eq__(self, o): return self._bin(o, torch.eq, "==")  # noqa: E704
    def __ne__(self, o): return self._bin(o, torch.ne, "!=")  # noqa: E704
    def __neg__(self): return self._new(-self.local)  # noqa: E704
    def __invert__(self): return self._new(~self.local)  # noqa: E704
    def __abs__(self): return self._new(self.local.abs())  # noqa: E704
    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        if self.numel != 1:
            raise ExecutorError(f"a {self.shape} tensor has no truth value (Python control flow needs a scalar)"
                                f"{where()}")
        return bool(self.local.reshape(-1)[0])

    def __int__(self) -> int:
        return int(self.local.reshape(-1)[0])

    def __index__(self) -> int:
        return int(self)

    def __float__(self) -> float:
        return float(self.local.reshape(-1)[0])

    def __getitem__(self, index: Any) -> RegTensor:
        """``x[:, None]``: only full slices and ``None`` (a new dimension of size 1), as in Gluon."""
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
        local = self.local
        d = 0
        for i in index:
            if i is None:
                local = local.unsqueeze(d)
            d += 1
        return RegTensor(local, shape, self.dtype, None)

    # --- the tensor methods Gluon has ----------------------------------------------------
    def sum(self, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
        return reduce_(self, axis, "sum", keep_dims)

    def max(self, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
        return reduce_(self, axis, "max", keep_dims)

    def min(self, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
        return reduce_(self, axis, "min", keep_dims)

    def reshape(self, *shape: Any, **kw: Any) -> RegTensor:
        shape = list(shape[0]) if len(shape) == 1 and isinstance(shape[0], list | tuple) else list(shape)
        shape = [int(s) for s in shape]
        return RegTensor(self.local.reshape(shape), shape, self.dtype, None)

    def permute(self, *dims: Any) -> RegTensor:
        dims = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], list | tuple) else list(dims)
        return RegTensor(self.local.permute(*[int(d) for d in dims]), [self.shape[int(d)] for d in dims],
                         self.dtype, None)

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
        shape = list(shape[0]) if len(shape) == 1 and isinstance(shape[0], list | tuple) else list(shape)
        shape = [int(s) for s in shape]
        return RegTensor(self.local.expand(shape), shape, self.dtype, self.layout)

    def cast(self, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> RegTensor:
        return self.to(dtype, bitcast=bitcast)

    def item(self) -> Any:
        return self.local.reshape(-1)[0].item()

    def _math(self, fn: Any) -> RegTensor:
        t = self.local if self.local.dtype.is_floating_point else self.local.float()
        return self._new(fn(t))

    def exp(self) -> RegTensor: return self._math(torch.exp)  # noqa: E704
    def exp2(self) -> RegTensor: return self._math(torch.exp2)  # noqa: E704
    def log(self) -> RegTensor: return self._math(torch.log)  # noqa: E704
    def log2(self) -> RegTensor: return self._math(torch.log2)  # noqa: E704
    def sqrt(self) -> RegTensor: return self._math(torch.sqrt)  # noqa: E704
    def rsqrt(self) -> RegTensor: return self._math(torch.rsqrt)  # noqa: E704
    def sin(self) -> RegTensor: return self._math(torch.sin)  # noqa: E704
    def cos(self) -> RegTensor: return self._math(torch.cos)  # noqa: E704
    def erf(self) -> RegTensor: return self._math(torch.erf)  # noqa: E704
    def floor(self) -> RegTensor: return self._math(torch.floor)  # noqa: E704
    def ceil(self) -> RegTensor: return self._math(torch.ceil)  # noqa: E704
    def abs(self) -> RegTensor: return self._new(self.local.abs())  # noqa: E704


def _true_div(a: Any, b: Any) -> Any:
    out = torch.true_divide(a, b)
    if out.dtype == torch.float64 and not any(isinstance(v, torch.Tensor) and v.dtype == torch.float64
                                              for v in (a, b)):
        out = out.to(torch.float32)
    return out


def _both_int(a: Any, b: Any) -> bool:
    def isint(v):
        return _is_int(v) if isinstance(v, torch.Tensor) else isinstance(v, int) and not isinstance(v, bool)
    return isint(a) and isint(b)


def _floordiv(a: Any, b: Any) -> Any:
    if _both_int(a, b):
        return torch.div(a, b, rounding_mode="trunc")  # arith.divsi
    return torch.div(a, b, rounding_mode="floor")


def _mod(a: Any, b: Any) -> Any:
    if _both_int(a, b):
        if not isinstance(a, torch.Tensor):
            a = torch.full_like(b, a)
        return torch.fmod(a, b)  # arith.remsi: the sign of the dividend
    return torch.fmod(a if isinstance(a, torch.Tensor) else torch.tensor(a), b)  # arith.remf


# =====================================================================================
# builtins on register tensors
# =====================================================================================
def reduce_(x: RegTensor, axis: Any, how: str, keep_dims: bool = False) -> RegTensor:
    if not isinstance(x, RegTensor):
        raise ExecutorError(f"gl.{how} needs a register tensor, got {type(x).__name__}{where()}")
    t = x.local
    if axis is None:
        t = t.reshape(-1)
        axis = 0
        keep_dims = False
    axis = int(axis)
    if axis < 0:
        axis += x.rank
    if not 0 <= axis < max(1, x.rank):
        raise ExecutorError(f"gl.{how}(axis={axis}) of a rank-{x.rank} tensor{where()}")
    if how == "sum":
        acc = torch.int32 if _is_int(t) and t.dtype.itemsize < 4 else None
        out = t.sum(dim=axis, keepdim=bool(keep_dims), dtype=acc)
        if t.dtype in (torch.float16, torch.bfloat16):
            out = t.float().sum(dim=axis, keepdim=bool(keep_dims))  # Gluon sums fp16 in fp32
    elif how == "max":
        out = t.amax(dim=axis, keepdim=bool(keep_dims))
    else:
        out = t.amin(dim=axis, keepdim=bool(keep_dims))
    shape = list(x.shape)
    if keep_dims:
        shape[axis] = 1
    else:
        shape.pop(axis) if x.shape else None
    return RegTensor(out, shape, _result_dtype(out), None)


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
        return cls(flat, t.storage_offset(), gl.pointer_type(gl_dtype(t.dtype)), name)

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
                raise ExecutorError(f"pointers {self.shape} + offsets {other.shape}: they do not broadcast"
                                    f"{where()}") from None
            return PointerTensor(self.base, self.offsets + other.local.to(torch.int64), shape, self.layout)
        if isinstance(other, bool) or not isinstance(other, int):
            raise ExecutorError(f"pointers + {type(other).__name__}: offsets must be integers{where()}")
        return PointerTensor(self.base, self.offsets + int(other), self.shape, self.layout)

    __radd__ = __add__

    def __getitem__(self, index: Any) -> PointerTensor:
        r = RegTensor(self.offsets, self.shape, gl.int64, self.layout)[index]
        return PointerTensor(self.base, r.local, r.shape, None)
