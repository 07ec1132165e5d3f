"""Typed element operations: Triton's frontend rules for the result type, then :mod:`~gluon_overlap.gpu.numerics`
for the value.

An operand is a :class:`Operand`: a register-form torch tensor (or a Python number) with its Gluon dtype and
whether it is a Python constant (which Triton lets adopt the tensor's type when it is of a lower or equal
kind: ``x_f16 * 0.5`` stays float16, ``x_f16 * y_f32`` is float32). Each operation returns ``(values, dtype)``.
A type combination Triton refuses raises :class:`TypeError` with Triton's reason; the caller adds the
kernel line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import triton.experimental.gluon.language as gl

from gluon_overlap.gpu import numerics as N

__all__ = ["Operand", "binary", "cast", "constant", "fma", "math1", "minmax", "ternary_type", "unary", "where"]


@dataclass
class Operand:
    """A value with its Gluon dtype; ``scalar`` marks a Python constant (a weak type)."""

    value: Any  # torch.Tensor in register form, or a Python bool / int / float
    dtype: Any
    scalar: bool = False


def constant(value: Any, dtype: Any) -> torch.Tensor:
    """A Python number as a 0-d register tensor of ``dtype`` (``scalar_constant``: rounded once from the
    double for floats; ints must fit, as Triton checks)."""
    if dtype.is_floating():  # folded by the compiler (APFloat): one rounding; a NaN keeps its payload's top
        return N.convert_constant(torch.tensor(float(value), dtype=torch.float64), dtype)
    if dtype.is_bool():
        return torch.tensor(bool(value))
    v = int(value)
    width = dtype.int_bitwidth
    lo, hi = (0, (1 << width) - 1) if N.is_unsigned(dtype) else (-(1 << (width - 1)), (1 << (width - 1)) - 1)
    if not lo <= v <= hi:
        if v < 0 and N.is_unsigned(dtype):
            raise TypeError("Cannot perform a binary operation between an unsigned tensor and a negative scalar")
        raise TypeError(f"Scalar {v} is out of range for type {dtype}")
    if v >= 1 << (width - 1) and N.reg_dtype(dtype) != torch.uint8:
        v -= 1 << width
    return torch.tensor(v, dtype=N.reg_dtype(dtype))


def cast(x: Operand, dtype: Any, rounding: str | None = None) -> torch.Tensor:
    """``x`` converted to ``dtype`` (register form)."""
    if x.scalar or not isinstance(x.value, torch.Tensor):
        return constant(x.value, dtype)
    return N.convert(x.value, x.dtype, dtype, rounding)


def _computation_type(a: Operand, b: Operand, div_or_mod: bool = False) -> Any:
    return N.computation_type(a.dtype, a.scalar, b.dtype, b.scalar, div_or_mod)


_ARITH = {"add", "sub", "mul"}
_BITWISE = {"and", "or", "xor", "shl", "shr"}
_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
_BIT_FN = {"and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor}


def binary(op: str, a: Operand, b: Operand) -> tuple[torch.Tensor, Any]:
    """``a op b`` with Triton's typing; op in add sub mul truediv floordiv mod and or xor shl shr lt le gt ge
    eq ne."""
    if op in _ARITH:
        ty = _computation_type(a, b)
        x, y = cast(a, ty), cast(b, ty)
        if ty.is_floating():
            return N.farith(op, x, y), ty
        fn = torch.add if op == "add" else torch.sub if op == "sub" else torch.mul
        return _int_wrap(fn(x, y), ty), ty
    if op == "truediv":
        ty = _computation_type(a, b, True)
        if ty.is_int():
            ty = gl.float32
        x, y = cast(a, ty), cast(b, ty)
        return N.fdiv_rn(x, y), ty  # div.full.f32 is within 2 ulp of this; float64: div.rn
    if op in ("floordiv", "mod"):
        ty = _computation_type(a, b, True)
        if ty.is_floating():
            if op == "floordiv":
                raise TypeError(f"unexpected type {ty}: // needs integers (Triton refuses it for floats)")
            x, y = cast(a, ty), cast(b, ty)
            return N.canonical_nan(torch.fmod(x, y)), ty
        x, y = cast(a, ty), cast(b, ty)
        return N.idivmod(x, y, ty, "div" if op == "floordiv" else "mod"), ty
    if op in _BITWISE:
        ty = _computation_type(a, b)
        if not ty.is_int():
            raise TypeError(f"invalid operands of type {a.dtype} and {b.dtype} for a bitwise operation")
        x, y = cast(a, ty), cast(b, ty)
        if op in _BIT_FN:
            return _BIT_FN[op](x, y), ty
        return N.shift(x, y, ty, op == "shl"), ty
    if op in _COMPARE:
        ty = _computation_type(a, b)
        x, y = cast(a, ty), cast(b, ty)
        if ty.is_floating():
            return N.COMPARE[op](x, y), gl.int1
        return N.icompare(op, x, y, ty), gl.int1
    raise ValueError(f"unknown binary operation {op!r}")


def _int_wrap(t: torch.Tensor, ty: Any) -> torch.Tensor:
    return t  # torch's integer + - * wrap in the register dtype (the unsigned twins share the bits)


def minmax(a: Operand, b: Operand, is_max: bool, propagate_nan: bool) -> tuple[torch.Tensor, Any]:
    ty = _computation_type(a, b)
    x, y = cast(a, ty), cast(b, ty)
    if ty.is_floating():
        return N.fminmax(x, y, is_max, propagate_nan), ty
    return N.iminmax(x, y, ty, is_max), ty


def ternary_type(*ops: Operand) -> Any:
    """The common type of three operands (``ternary_op_type_checking_impl``): tensors and constants combined
    separately, then together."""
    tensor_ty = scalar_ty = None
    for o in ops:
        if o.scalar:
            scalar_ty = o.dtype if scalar_ty is None else N.computation_type(scalar_ty, True, o.dtype, True)
        else:
            tensor_ty = o.dtype if tensor_ty is None else N.computation_type(tensor_ty, False, o.dtype, False)
    if tensor_ty is None:
        return scalar_ty
    if scalar_ty is None:
        return tensor_ty
    return N.computation_type(tensor_ty, False, scalar_ty, True)


def fma(a: Operand, b: Operand, c: Operand) -> tuple[torch.Tensor, Any]:
    ty = ternary_type(a, b, c)
    if not ty.is_floating():
        raise TypeError(f"fma needs floating-point operands, got {ty}")
    return N.fma(cast(a, ty), cast(b, ty), cast(c, ty)), ty


def where(cond: torch.Tensor, a: Operand, b: Operand) -> tuple[torch.Tensor, Any]:
    ty = _computation_type(a, b)
    return torch.where(cond, cast(a, ty), cast(b, ty)), ty


def unary(op: str, x: Operand) -> tuple[torch.Tensor, Any]:
    """neg, invert, abs."""
    t, ty = x.value, x.dtype
    if op == "neg":
        return -t, ty  # float: the sign bit flips (NaN too); int: 0 - x, wrapping
    if op == "invert":
        if ty.is_floating():
            raise TypeError(f"wrong type argument to unary invert ({ty})")
        return ~t, ty
    if op == "abs":
        if N.is_unsigned(ty) or ty.is_bool():
            return t, ty
        return t.abs(), ty
    raise ValueError(f"unknown unary operation {op!r}")


#: what Triton 3.9 compiles each float32 math function to (PTX, read from the compiled kernels), and whether that
#: instruction flushes subnormal inputs (``.ftz``); the value is the float64 function rounded once to float32,
#: which is within the instruction's documented bound (``docs/GLUON_API.md``, ``tests/interp/silicon``)
MATH_F32 = {
    "sqrt": ("sqrt.approx.ftz.f32", True),
    "rsqrt": ("rsqrt.approx.ftz.f32", True),
    "exp2": ("ex2.approx.ftz.f32", True),
    "exp": ("mul.f32 by log2(e), then ex2.approx.f32", False),
    "log": ("libdevice __nv_logf", False),
    "log2": ("libdevice __nv_log2f", False),
    "sin": ("libdevice __nv_sinf (ftz)", True),
    "cos": ("libdevice __nv_cosf (ftz)", True),
    "erf": ("libdevice __nv_erff", False),
    "floor": ("cvt.rmi.ftz.f32.f32", True),
    "ceil": ("cvt.rpi.ftz.f32.f32", True),
}
_F64_FN = {
    "sqrt": N.sqrt64,
    "rsqrt": lambda t: 1.0 / N.sqrt64(t),
    "exp2": torch.exp2,
    "exp": torch.exp,
    "log": torch.log,
    "log2": torch.log2,
    "sin": torch.sin,
    "cos": torch.cos,
    "erf": torch.erf,
    "floor": torch.floor,
    "ceil": torch.ceil,
}
_LOG2E_F32 = torch.tensor(1.4426950216293335, dtype=torch.float32)  # 0x3FB8AA3B, the constant in the PTX


def math1(op: str, x: Operand) -> tuple[torch.Tensor, Any]:
    """A one-argument math function (``gl.exp``, ``gl.sqrt``, ...). Triton accepts float32 and float64; other
    inputs are computed in float32 (integers) or in float32 and rounded back (float16 / bfloat16)."""
    t, ty = x.value, x.dtype
    if not isinstance(t, torch.Tensor):
        t, ty = constant(t, gl.float32), gl.float32
    if ty.name == "fp64":
        if op == "sqrt":
            return N.fsqrt_rn(t), ty
        return _F64_FN[op](t), ty
    back = ty if ty.is_floating() and ty.name != "fp32" else None
    if ty.name != "fp32":
        t = N.convert(t, ty, gl.float32)
    out = _math_f32(op, t)
    if back is not None:
        return N.convert(out, gl.float32, back), back
    return out, gl.float32


def _math_f32(op: str, t: torch.Tensor) -> torch.Tensor:
    _, ftz = MATH_F32[op]
    if ftz:
        t = N.flush_subnormal(t)
    if op == "exp":  # mul.f32 x, log2(e) (rounded to float32), then ex2.approx.f32 (no flush)
        t = t * _LOG2E_F32
        op = "exp2"
        out = torch.exp2(t.to(torch.float64)).to(torch.float32)
        return N.canonical_nan(out)
    if op in ("floor", "ceil"):
        return N.canonical_nan(_F64_FN[op](t))
    out = _F64_FN[op](t.to(torch.float64)).to(torch.float32)
    if op == "exp2":  # .ftz: a subnormal result is flushed too
        out = N.flush_subnormal(out)
    return N.canonical_nan(out)
