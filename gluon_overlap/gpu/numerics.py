"""Element arithmetic as the compiled kernel computes it on an NVIDIA GPU (sm_90a / sm_100a, Triton 3.9).

Pure functions on torch tensors in *register form* (:func:`reg_dtype`: each Gluon dtype's values; the unsigned
16/32/64-bit types live as the bits of their signed twin, because torch has few kernels for ``uint16/32/64``).
They are the interpreter's semantics, measured against an H200 (``tests/interp/silicon``, ``data/silicon``):

* **types** -- Triton's own promotion rules (``TritonSemantic.computation_type_impl``, called, not copied);
* **IEEE rounding** -- float32 and float64 ``+ - *`` are torch's (IEEE, round to nearest even); float16 and
  bfloat16 are computed exactly in float64 and rounded once (:func:`round_to`), as ``add.f16`` / ``add.bf16``
  do; ``fma`` (and a contracted ``x * y + z``) is one rounding of the exact ``x * y + z`` (round to odd in
  float64, then to the format -- exact for every format up to float32; float64 is computed exactly with
  integers);
* **NaN** -- results of float32 / float16 / bfloat16 arithmetic and of the ``cvt`` instructions that make
  NaNs are the GPU's canonical NaN (``0x7fffffff`` / ``0x7fff``); float64 ``+ - *`` propagate like x86;
* **flush to zero** where the instruction Triton picks is an ``.ftz`` one (``floor``, ``ceil``, the
  approximate ``sqrt`` / ``rsqrt`` / ``exp2`` and libdevice's ``sin`` / ``cos``);
* **PTX ``min`` / ``max``** -- a NaN loses to a number (two NaNs: the canonical NaN), ``-0 < +0``; with
  ``propagate_nan=ALL`` any NaN wins, canonical;
* **integers** -- wrap; ``//`` and ``%`` truncate; ``x // 0`` and ``x % 0`` are all ones, ``INT_MIN // -1`` is
  ``INT_MIN`` and ``INT_MIN % -1`` is 0 (what ``div.s32`` / ``rem.s32`` give), and a 64-bit division whose
  operands both fit in 32 bits runs as ``div.u32`` (LLVM's slow-division bypass), so ``x // 0`` is
  ``0xFFFFFFFF`` there; shift counts are clamped to the width (``shl.b32`` semantics);
* **casts** -- ``cvt`` with ``.satfinite`` to fp8 (±448 / ±57344), ``cvt.rzi`` saturating float -> int
  (NaN -> 0; an 8-bit target is converted to 16 bits and truncated, so ``inf -> int8`` is -1), ``rtz``
  narrowing, e5m2 -> bfloat16 by the exponent shift Triton emits (the inf / NaN codes become finite).

Nothing here raises on any input value: undefined integer operations give the GPU's answer.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import torch
import triton.experimental.gluon.language as gl
from triton.language.semantic import TritonSemantic

__all__ = [
    "FLOAT_FORMATS",
    "canonical_nan",
    "computation_type",
    "convert",
    "fadd",
    "fma",
    "fminmax",
    "fmul",
    "integer_promote",
    "reg_dtype",
    "round_to",
    "scalar_type",
]

# =====================================================================================
# dtypes
# =====================================================================================
#: gl dtype name -> torch dtype of its values in registers (unsigned 16/32/64: the signed twin's bits)
REG_DTYPES = {
    "int1": torch.bool,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint16": torch.int16,
    "uint32": torch.int32,
    "uint64": torch.int64,
    "fp8e4nv": torch.float8_e4m3fn,
    "fp8e5": torch.float8_e5m2,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "fp32": torch.float32,
    "fp64": torch.float64,
}
SIGNED_OF_WIDTH = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}


def reg_dtype(dtype: Any) -> torch.dtype:
    """The torch dtype a Gluon dtype's values have in registers."""
    return REG_DTYPES[dtype.name]


def to_reg(t: torch.Tensor) -> torch.Tensor:
    """Storage values (``torch.uint16/32/64`` included) in register form."""
    if t.dtype in (torch.uint16, torch.uint32, torch.uint64):
        return t.view(SIGNED_OF_WIDTH[t.element_size() * 8])
    return t


def to_storage(t: torch.Tensor, storage: torch.dtype) -> torch.Tensor:
    """Register values of the storage's own Gluon type, as the storage dtype (a bit view for the twins)."""
    if t.dtype == storage:
        return t
    if (
        storage in (torch.uint16, torch.uint32, torch.uint64)
        and t.element_size() == torch.empty(0, dtype=storage).element_size()
        and not t.dtype.is_floating_point
    ):
        return t.view(storage)
    return t.to(storage)


_SEM = TritonSemantic(None)  # only its typing rules are used (they need no builder)


def scalar_type(x: Any) -> Any:
    """The Gluon dtype Triton gives a Python constant (int32, uint32, int64, float32 or float64, int1)."""
    return _SEM.to_tensor_type(x)


def computation_type(a: Any, a_scalar: bool, b: Any, b_scalar: bool, div_or_mod: bool = False) -> Any:
    """Triton's type of a binary operation (``TritonSemantic.computation_type_impl``)."""
    return _SEM.computation_type_impl(a, a_scalar, b, b_scalar, div_or_mod)


def integer_promote(a: Any, b: Any) -> Any:
    return _SEM.integer_promote_impl(a, b)


def is_unsigned(dtype: Any) -> bool:
    return dtype.is_int_unsigned() and not dtype.is_bool()


def int_width(dtype: Any) -> int:
    return dtype.int_bitwidth


# =====================================================================================
# float formats, rounding, NaNs
# =====================================================================================
class FloatFormat:
    """A binary float format: precision (significand bits), exponent range, its largest finite value,
    whether it has infinities, and its canonical NaN's bit pattern (what the GPU's instructions produce)."""

    def __init__(
        self,
        name: str,
        bits: int,
        precision: int,
        emin: int,
        emax: int,
        max_finite: float,
        has_inf: bool,
        canonical_nan: int,
        torch_dtype: torch.dtype,
    ):
        self.name, self.bits, self.precision, self.emin, self.emax = name, bits, precision, emin, emax
        self.max_finite, self.has_inf, self.canonical_nan_bits, self.torch_dtype = (
            max_finite,
            has_inf,
            canonical_nan,
            torch_dtype,
        )


FLOAT_FORMATS = {
    "fp64": FloatFormat("fp64", 64, 53, -1022, 1023, 1.7976931348623157e308, True, 0x7FF8000000000000, torch.float64),
    "fp32": FloatFormat("fp32", 32, 24, -126, 127, 3.4028234663852886e38, True, 0x7FFFFFFF, torch.float32),
    "fp16": FloatFormat("fp16", 16, 11, -14, 15, 65504.0, True, 0x7FFF, torch.float16),
    "bf16": FloatFormat("bf16", 16, 8, -126, 127, 3.3895313892515355e38, True, 0x7FFF, torch.bfloat16),
    "fp8e4nv": FloatFormat("fp8e4nv", 8, 4, -6, 8, 448.0, False, 0x7F, torch.float8_e4m3fn),
    "fp8e5": FloatFormat("fp8e5", 8, 3, -14, 15, 57344.0, True, 0x7F, torch.float8_e5m2),
}


def _bits_dtype(t: torch.dtype) -> torch.dtype:
    return SIGNED_OF_WIDTH[torch.empty(0, dtype=t).element_size() * 8]


def _const_bits(bits: int, dtype: torch.dtype) -> torch.Tensor:
    width = torch.empty(0, dtype=dtype).element_size() * 8
    signed = bits - (1 << width) if bits >= 1 << (width - 1) else bits
    return torch.tensor(signed, dtype=_bits_dtype(dtype)).view(dtype)


_CANON: dict[torch.dtype, torch.Tensor] = {
    f.torch_dtype: _const_bits(f.canonical_nan_bits, f.torch_dtype) for f in FLOAT_FORMATS.values()
}


def isnan(t: torch.Tensor) -> torch.Tensor:
    if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        b = t.view(torch.uint8) & 0x7F
        return b == 0x7F if t.dtype == torch.float8_e4m3fn else b > 0x7C
    return torch.isnan(t)


def canonical_nan(t: torch.Tensor) -> torch.Tensor:
    """``t`` with every NaN replaced by the GPU's canonical NaN of its format."""
    if t.dtype not in _CANON:
        return t
    nan = isnan(t)
    if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return torch.where(nan, torch.tensor(0x7F, dtype=torch.uint8), t.view(torch.uint8)).view(t.dtype)
    if not bool(nan.any()):
        return t
    return torch.where(nan, _CANON[t.dtype], t)


def round_to(x: torch.Tensor, fmt: FloatFormat, mode: str = "rn", overflow: str = "ieee") -> torch.Tensor:
    """float64 ``x`` rounded once to ``fmt`` (``mode`` "rn": to nearest even, "rz": toward zero), as float64
    values of the format (NaN stays NaN). ``overflow``: "ieee" (rn -> inf, rz -> the largest finite value) or
    "satfinite" (the largest finite value, infinities too). Subnormals of the format are exact."""
    x = x.to(torch.float64)
    a = x.abs()
    _, e = torch.frexp(a)  # a = m 2^e, m in [0.5, 1)
    exponent = torch.clamp(e - 1, min=fmt.emin)
    quantum = torch.ldexp(torch.ones_like(a), exponent - (fmt.precision - 1))
    scaled = a / quantum  # exact: a power-of-two scaling below 2^precision
    scaled = torch.round(scaled) if mode == "rn" else torch.trunc(scaled)
    r = scaled * quantum
    finite = torch.isfinite(a)
    too_big = r > fmt.max_finite
    if overflow == "satfinite":
        r = torch.where(too_big | (a == math.inf), torch.full_like(r, fmt.max_finite), r)
    elif mode == "rz" or not fmt.has_inf:
        r = torch.where(too_big & finite, torch.full_like(r, fmt.max_finite), r)
    else:
        r = torch.where(too_big, torch.full_like(r, math.inf), r)
    r = torch.where(finite | (overflow == "satfinite"), r, a)  # inf stays inf (ieee), NaN stays NaN
    r = torch.where(torch.isnan(a), a, r)
    return torch.copysign(r, x)


def narrow(x: torch.Tensor, fmt: FloatFormat, mode: str = "rn", overflow: str = "ieee") -> torch.Tensor:
    """float64 ``x`` rounded once to ``fmt``, in its torch dtype; NaNs canonical."""
    r = round_to(x, fmt, mode, overflow)
    if fmt.torch_dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        out = r.to(torch.float32).to(fmt.torch_dtype)  # exact: representable (NaN fixed below)
    else:
        out = r.to(fmt.torch_dtype)  # exact: every value is representable
    return canonical_nan(out)


def _fmt(t_or_dtype: Any) -> FloatFormat:
    name = (
        t_or_dtype.name
        if hasattr(t_or_dtype, "name")
        else {
            torch.float64: "fp64",
            torch.float32: "fp32",
            torch.float16: "fp16",
            torch.bfloat16: "bf16",
            torch.float8_e4m3fn: "fp8e4nv",
            torch.float8_e5m2: "fp8e5",
        }[t_or_dtype]
    )
    return FLOAT_FORMATS[name]


def flush_subnormal(t: torch.Tensor) -> torch.Tensor:
    """Subnormal values to a zero of the same sign (an ``.ftz`` instruction's view of its inputs)."""
    tiny = torch.finfo(t.dtype).tiny
    return torch.where((t.abs() < tiny) & (t != 0), torch.copysign(torch.zeros_like(t), t), t)


# =====================================================================================
# float arithmetic
# =====================================================================================
def _exact_binary(op: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a64, b64 = a.to(torch.float64), b.to(torch.float64)
    return a64 + b64 if op == "add" else a64 - b64 if op == "sub" else a64 * b64


def farith(op: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a op b`` (op: add, sub, mul) of two tensors of one float dtype, rounded once, GPU NaNs."""
    dt = a.dtype
    if dt == torch.float64:
        return a + b if op == "add" else a - b if op == "sub" else a * b
    if dt == torch.float32:
        out = a + b if op == "add" else a - b if op == "sub" else a * b
        return canonical_nan(out)
    # float16 / bfloat16 / fp8: exact in float64 (or, bfloat16, rounded with enough guard bits), then once
    return narrow(_exact_binary(op, a, b), _fmt(dt))


def fadd(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return farith("add", a, b)


def fmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return farith("mul", a, b)


def _round_to_odd_sum(p: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """float64 ``p + c`` rounded to odd (exact when representable; otherwise the neighbour toward zero with
    its last bit set): a later rounding to a format of at most 51 bits is then the correct rounding of the
    exact sum (Boldo & Melquiond, rounding to odd)."""
    s = p + c
    bp = s - c  # Knuth's TwoSum: the part of s that came from p, then from c
    err = (p - bp) + (c - (s - bp))  # p + c == s + err exactly
    inexact = (err != 0) & torch.isfinite(s)
    toward_zero = inexact & ((err < 0) != (s < 0))  # |exact| < |s|: truncation is one step toward zero
    bits = s.view(torch.int64)
    bits = torch.where(toward_zero, bits - 1, bits)  # sign-magnitude: one ulp toward zero
    bits = torch.where(inexact, bits | 1, bits)
    return bits.view(torch.float64)


def _fma64_exact(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """float64 fma, correctly rounded: exact rational arithmetic per element (Python's int / int division is
    correctly rounded, subnormals too)."""
    flat_a, flat_b, flat_c = (t.reshape(-1).tolist() for t in (a, b, c))
    out = []
    for x, y, z in zip(flat_a, flat_b, flat_c, strict=True):
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            out.append(x * y + z)  # inf / NaN: the unfused result has the same class
            continue
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        if exact == 0:  # an exact zero: the product is a zero (IEEE's sign rule) or cancels z (+0)
            out.append(x * y + z if (x == 0 or y == 0) and z == 0 else 0.0)
            continue
        try:
            out.append(exact.numerator / exact.denominator)
        except OverflowError:
            out.append(math.copysign(math.inf, exact))
    return torch.tensor(out, dtype=torch.float64).reshape(a.shape)


def fma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """``a * b + c`` with one rounding (``fma.rn``), for tensors of one float dtype (broadcast)."""
    a, b, c = torch.broadcast_tensors(a, b, c)
    dt = a.dtype
    if dt == torch.float64:
        return _fma64_exact(a, b, c)
    p = a.to(torch.float64) * b.to(torch.float64)  # exact: at most 2 x 24 significant bits
    s = _round_to_odd_sum(p, c.to(torch.float64))
    s = torch.where(torch.isfinite(p) & torch.isfinite(c.to(torch.float64)), s, p + c.to(torch.float64))
    if dt == torch.float32:
        return canonical_nan(s.to(torch.float32))  # round to odd, then to nearest: one correct rounding
    return narrow(s, _fmt(dt))


def fdiv_rn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``div.rn``: correctly rounded (float64 division rounded to the format is, for formats of at most 25 bits)."""
    if a.dtype == torch.float64:
        return a / b
    q = a.to(torch.float64) / b.to(torch.float64)
    return narrow(q, _fmt(a.dtype)) if a.dtype != torch.float32 else canonical_nan(q.to(torch.float32))


def sqrt64(a: torch.Tensor) -> torch.Tensor:
    """float64 square root, correctly rounded (numpy's is the hardware's ``sqrtsd``; torch's CPU kernel is not
    correctly rounded: one float32 result in seven differs by an ulp)."""
    with np.errstate(invalid="ignore"):
        return torch.from_numpy(np.sqrt(a.to(torch.float64).contiguous().numpy()))


def fsqrt_rn(a: torch.Tensor) -> torch.Tensor:
    """``sqrt.rn``: correctly rounded; float64's NaN for a negative input is ``0xfff8000000000000``."""
    r = sqrt64(a)
    if a.dtype == torch.float64:
        return torch.where(a < 0, _const_bits(0xFFF8000000000000, torch.float64), r)
    return narrow(r, _fmt(a.dtype)) if a.dtype != torch.float32 else canonical_nan(r.to(torch.float32))


def fminmax(a: torch.Tensor, b: torch.Tensor, is_max: bool, propagate_nan: bool) -> torch.Tensor:
    """PTX ``max`` / ``min`` (``.NaN`` when ``propagate_nan``): -0 < +0; a NaN loses to a number (or, with
    ``propagate_nan``, wins); the NaN produced is the canonical one (float64 ``max`` of two NaNs: the first)."""
    a, b = torch.broadcast_tensors(a, b)
    an, bn = isnan(a), isnan(b)
    # order -0 below +0: compare (value, sign) -- where the values are equal, pick by the sign bit
    if is_max:
        pick_a = (a > b) | ((a == b) & ~torch.signbit(a))
    else:
        pick_a = (a < b) | ((a == b) & torch.signbit(a))
    out = torch.where(pick_a, a, b)
    if propagate_nan:
        any_nan = an | bn
        return torch.where(any_nan, _CANON[a.dtype], out) if a.dtype in _CANON else out
    out = torch.where(an & ~bn, b, out)
    out = torch.where(bn & ~an, a, out)
    both = an & bn
    if a.dtype == torch.float64:
        return torch.where(both, a, out)
    return torch.where(both, _CANON[a.dtype], out) if a.dtype in _CANON else out


# =====================================================================================
# integers
# =====================================================================================
def _wide(t: torch.Tensor, unsigned: bool, width: int) -> torch.Tensor:
    """int64 values of an integer register tensor of at most 32 bits (unsigned: zero-extended)."""
    w = t.to(torch.int64)
    return w & ((1 << width) - 1) if unsigned and t.dtype != torch.uint8 else w


def _wrap(v: torch.Tensor, width: int, dtype: torch.dtype) -> torch.Tensor:
    """int64 values wrapped to ``width`` bits, in the register dtype ``dtype``."""
    if width == 64:
        return v.to(dtype)
    v = v & ((1 << width) - 1)
    if dtype != torch.uint8:
        v = torch.where(v >= 1 << (width - 1), v - (1 << width), v)
    return v.to(dtype)


MIN64 = -(1 << 63)
_BELOW_2_63 = 9223372036854774784.0  # the largest float64 below 2^63


def _ult64(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Unsigned ``a < b`` of 64-bit values held as int64."""
    return (a ^ MIN64) < (b ^ MIN64)


def _udivmod64(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Unsigned 64-bit quotient and remainder (b != 0) of int64-held values."""
    big = b < 0  # b >= 2^63: the quotient is 0 or 1
    safe = torch.where(big | (b == 0), torch.ones_like(b), b)
    half = (a >> 1) & 0x7FFFFFFFFFFFFFFF  # logical shift: non-negative
    q = torch.div(half, safe, rounding_mode="trunc") << 1
    r = a - q * safe
    fix = ~_ult64(r, safe)
    q = torch.where(fix, q + 1, q)
    r = torch.where(fix, r - safe, r)
    q_big = (~_ult64(a, b)).to(torch.int64)
    q = torch.where(big, q_big, q)
    r = torch.where(big, torch.where(q_big == 1, a - b, a), r)
    return q, r


def idivmod(a: torch.Tensor, b: torch.Tensor, dtype: Any, want: str) -> torch.Tensor:
    """Truncating integer ``a // b`` (want "div") or ``a % b`` ("mod") with the GPU's answers for the cases C
    leaves undefined (see the module docstring)."""
    a, b = torch.broadcast_tensors(a, b)
    width, unsigned = int_width(dtype), is_unsigned(dtype)
    rdt = a.dtype
    if width <= 32:
        wa, wb = _wide(a, unsigned, width), _wide(b, unsigned, width)
        zero = wb == 0
        safe = torch.where(zero, torch.ones_like(wb), wb)
        q = torch.div(wa, safe, rounding_mode="trunc")  # int64: INT32_MIN // -1 does not trap here
        out = q if want == "div" else wa - q * safe
        out = torch.where(zero, torch.full_like(out, -1), out)  # all ones
        return _wrap(out, width, rdt)
    a64, b64 = a.to(torch.int64), b.to(torch.int64)
    zero = b64 == 0
    small = ((a64 | b64) >> 32) == 0  # both fit in 32 unsigned bits: LLVM divides with div.u32
    by_zero = torch.where(small, torch.full_like(a64, 0xFFFFFFFF), torch.full_like(a64, -1))
    if unsigned:
        q, r = _udivmod64(a64, torch.where(zero, torch.ones_like(b64), b64))
    else:
        overflow = (a64 == MIN64) & (b64 == -1)
        safe = torch.where(zero | overflow, torch.ones_like(b64), b64)
        q = torch.div(a64, safe, rounding_mode="trunc")
        r = a64 - q * safe
        q = torch.where(overflow, torch.full_like(q, MIN64), q)
        r = torch.where(overflow, torch.zeros_like(r), r)
    out = q if want == "div" else r
    return torch.where(zero, by_zero, out).to(rdt)


def shift(a: torch.Tensor, count: torch.Tensor, dtype: Any, left: bool) -> torch.Tensor:
    """``a << count`` / ``a >> count`` (arithmetic for signed types, logical for unsigned), the count taken
    as unsigned and clamped to the width (``shl.b32`` / ``shr``)."""
    a, count = torch.broadcast_tensors(a, count)
    width, unsigned = int_width(dtype), is_unsigned(dtype)
    rdt = a.dtype
    if width < 64:
        c = torch.clamp(_wide(count, True, width), max=width)
        wa = _wide(a, unsigned, width)
        out = (wa << c) if left else (wa >> c)
        return _wrap(out, width, rdt)
    a64, c64 = a.to(torch.int64), count.to(torch.int64)
    big = (c64 < 0) | (c64 >= 64)
    c = torch.where(big, torch.zeros_like(c64), c64)
    if left:
        out = torch.where(big, torch.zeros_like(a64), a64 << c)
    elif unsigned:
        mask = torch.where(c == 0, torch.full_like(c, -1), (torch.ones_like(c) << (64 - c)) - 1)
        out = torch.where(big, torch.zeros_like(a64), (a64 >> c) & mask)
    else:
        out = torch.where(big, a64 >> 63, a64 >> c)
    return out.to(rdt)


def icompare(op: str, a: torch.Tensor, b: torch.Tensor, dtype: Any) -> torch.Tensor:
    """An integer comparison (unsigned types compare as unsigned)."""
    if is_unsigned(dtype) and a.dtype != torch.uint8:
        if int_width(dtype) < 64:
            a, b = _wide(a, True, int_width(dtype)), _wide(b, True, int_width(dtype))
        else:
            a, b = a ^ MIN64, b ^ MIN64
    return COMPARE[op](a, b)


def iminmax(a: torch.Tensor, b: torch.Tensor, dtype: Any, is_max: bool) -> torch.Tensor:
    a, b = torch.broadcast_tensors(a, b)
    greater = icompare("gt", a, b, dtype)
    return torch.where(greater == is_max, a, b)


COMPARE = {"lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge, "eq": torch.eq, "ne": torch.ne}


def umulhi(a: torch.Tensor, b: torch.Tensor, dtype: Any) -> torch.Tensor:
    """The high half of the unsigned product (``mul.hi.u32``; 64-bit: ``mul.hi.u64``)."""
    a, b = torch.broadcast_tensors(a, b)
    if int_width(dtype) <= 32:
        w = int_width(dtype)
        prod = _wide(a, True, w) * _wide(b, True, w)
        return _wrap(prod >> w, w, a.dtype)
    out = [
        ((x % (1 << 64)) * (y % (1 << 64))) >> 64
        for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist(), strict=True)
    ]
    return torch.tensor([v - (1 << 64) if v >= 1 << 63 else v for v in out], dtype=torch.int64).reshape(a.shape)


# =====================================================================================
# conversions
# =====================================================================================
def _int_to_float64_round_odd(t: torch.Tensor, dtype: Any) -> torch.Tensor:
    """An integer tensor's values as float64: exact up to 53 bits, rounded to odd beyond (so one more
    rounding to a narrower format is the correct rounding of the integer)."""
    width, unsigned = int_width(dtype), is_unsigned(dtype)
    if width <= 32:
        return _wide(t, unsigned, width).to(torch.float64)
    v = t.to(torch.int64)
    hi = (v >> 32).to(torch.float64)  # arithmetic: the signed high half
    if unsigned:
        hi = ((v >> 32) & 0xFFFFFFFF).to(torch.float64)
    lo = (v & 0xFFFFFFFF).to(torch.float64)
    return _round_to_odd_sum(hi * 4294967296.0, lo)


def int_to_float(t: torch.Tensor, src: Any, dst: Any) -> torch.Tensor:
    """``cvt.rn.f*.{s,u}*``: the integer rounded once to the float format."""
    fmt = _fmt(dst)
    width, unsigned = int_width(src), is_unsigned(src)
    if fmt.name == "fp64":
        if width <= 32:
            return _wide(t, unsigned, width).to(torch.float64)
        v = t.to(torch.int64)
        if not unsigned:
            return v.to(torch.float64)  # cvt.rn.f64.s64: one rounding (torch / x86 round to nearest)
        hi = ((v >> 32) & 0xFFFFFFFF).to(torch.float64) * 4294967296.0
        return hi + (v & 0xFFFFFFFF).to(torch.float64)  # hi is exact; one rounding of the sum
    x = _int_to_float64_round_odd(t, src)
    if fmt.name == "fp32":
        return x.to(torch.float32)
    return narrow(x, fmt)


def float_to_int(t: torch.Tensor, src: Any, dst: Any) -> torch.Tensor:
    """``cvt.rzi.{s,u}N.f*``: truncate toward zero, saturate to the range, NaN -> 0. A target narrower than
    16 bits is converted to 16 bits first and truncated (what LLVM emits: ``inf -> int8`` is ``0x7fff`` -> -1)."""
    width, unsigned = int_width(dst), is_unsigned(dst)
    cvt_width = max(width, 16)
    x = t.to(torch.float64)
    x = torch.trunc(x)
    lo, hi = (0, (1 << cvt_width) - 1) if unsigned else (-(1 << (cvt_width - 1)), (1 << (cvt_width - 1)) - 1)
    nan = torch.isnan(x)
    x = torch.where(nan, torch.zeros_like(x), x)
    # NaN -> 0, except where a 64-bit operand makes it the "integer indefinite" 0x80...0 (measured: cvt.rzi.s32.f64,
    # cvt.rzi.{s,u}64.f32 and .f64 give the sign bit alone)
    nan_bits = 1 << (cvt_width - 1) if (src.name == "fp64" or cvt_width == 64) else 0
    if cvt_width < 64:
        v = torch.clamp(x, lo, hi).to(torch.int64)
    else:
        big = x >= float(hi)  # 2^63 or 2^64 (as float64)
        small = x <= float(lo)
        if unsigned:
            over63 = x >= 9223372036854775808.0  # values in [2^63, 2^64) as int64 bits
            v = torch.where(
                over63,
                (x - 2.0**63).clamp(max=_BELOW_2_63).to(torch.int64) + MIN64,
                x.clamp(min=0, max=_BELOW_2_63).to(torch.int64),
            )
            v = torch.where(big, torch.full_like(v, -1), v)
            v = torch.where(small, torch.zeros_like(v), v)
        else:
            v = x.clamp(min=-(2.0**63), max=_BELOW_2_63).to(torch.int64)
            v = torch.where(big, torch.full_like(v, (1 << 63) - 1), v)
            v = torch.where(small, torch.full_like(v, MIN64), v)
    if nan_bits:
        v = torch.where(nan, torch.full_like(v, nan_bits if cvt_width < 64 else MIN64), v)
    return _wrap(v, width, reg_dtype(dst))


def _e5m2_to_bf16(t: torch.Tensor) -> torch.Tensor:
    """Triton's e5m2 -> bfloat16 (sm_90): the byte shifted into a bfloat16's high bits, exponent rebiased by a
    multiply by 2^112 (``mul.rn.bf16x2``): every code is a finite number, the inf / NaN codes too."""
    code = t.view(torch.uint8).to(torch.int64)
    sign = (code >> 7) & 1
    mag = code & 0x7F  # eeeeemm
    # as a bfloat16 with the e5m2 bits in place: exponent field e (5 bits) in the low exponent bits
    value = torch.where(
        (mag >> 2) == 0,
        (mag & 3).to(torch.float64) * 2.0**-16,
        (1 + (mag & 3).to(torch.float64) / 4) * torch.pow(2.0, (mag >> 2).to(torch.float64) - 15),
    )
    value = torch.where(sign == 1, -value, value)
    return narrow(value, FLOAT_FORMATS["bf16"])


def _fp8_to_f16(t: torch.Tensor) -> torch.Tensor:
    """``cvt.rn.f16x2.{e4m3,e5m2}x2``: exact, NaN codes -> 0x7fff (and e5m2's infinities stay infinite)."""
    return canonical_nan(t.to(torch.float16))


def convert(t: torch.Tensor, src: Any, dst: Any, rounding: str | None = None) -> torch.Tensor:
    """A value conversion (``tensor.to(dst)``) from Gluon dtype ``src`` to ``dst`` of register values, as
    Triton 3.9 lowers it for sm_90a / sm_100a."""
    if src.name == dst.name:
        return t
    if dst.is_bool():
        return t != 0
    if src.is_bool():
        t = t.to(torch.int64)
        src = gl.int64
    if src.is_int() and dst.is_int():
        width = int_width(src)
        wide = _wide(t, is_unsigned(src), width) if width < 64 else t.to(torch.int64)
        return _wrap(wide, int_width(dst), reg_dtype(dst))
    if src.is_int():
        return int_to_float(t, src, dst)
    if dst.is_int():
        return float_to_int(t, src, dst)
    return _float_to_float(t, src, dst, rounding)


def _float_to_float(t: torch.Tensor, src: Any, dst: Any, rounding: str | None) -> torch.Tensor:
    sbits, dbits = src.primitive_bitwidth, dst.primitive_bitwidth
    if src.is_fp8():
        if dst.name == "bf16" and src.name == "fp8e5":
            return _e5m2_to_bf16(t)
        h = _fp8_to_f16(t)
        return h if dst.name == "fp16" else _float_to_float(h, gl.float16, dst, None)
    if dbits > sbits or (dbits == sbits and dst.name != src.name):  # widening (and f16 <-> bf16)
        if dbits == sbits:  # cvt.rn.bf16.f16 / cvt.rn.f16.bf16: one rounding, canonical NaN
            return narrow(t.to(torch.float64), _fmt(dst))
        if src.name == "fp16":
            return canonical_nan(t.to(reg_dtype(dst))) if dst.name == "fp32" else t.to(reg_dtype(dst))
        return t.to(reg_dtype(dst))  # bf16 -> f32 / f64, f32 -> f64: exact, payloads kept
    # narrowing
    mode = "rz" if rounding == "rtz" else "rn"
    if dst.is_fp8():
        if dst.name == "fp8e5" and mode == "rz":  # cvt.rz.f16.f32, then the f16's high byte
            h = narrow(t.to(torch.float64), FLOAT_FORMATS["fp16"], "rz")
            return (h.view(torch.int16) >> 8).to(torch.uint8).view(torch.float8_e5m2)
        x = t.to(torch.float64) if src.name != "bf16" else t.to(torch.float32).to(torch.float64)
        return narrow(x, _fmt(dst), mode, "satfinite")
    if src.name == "fp64":
        x = t
        out = narrow(x, _fmt(dst), mode)
        # cvt.rn.{f32,f16,bf16}.f64 keeps a NaN's payload (its high bits), quiet
        return _nan_payload_from_f64(t, out, dst)
    # float32 -> float16 / bfloat16: one rounding; NaN canonical
    if mode == "rn":
        return canonical_nan(t.to(reg_dtype(dst)))
    return narrow(t.to(torch.float64), _fmt(dst), "rz")


def convert_constant(x: torch.Tensor, dst: Any) -> torch.Tensor:
    """A float64 constant converted at compile time (LLVM's APFloat): rounded once to nearest even, and a NaN
    quiet with the top bits of its payload (not the canonical NaN a ``cvt`` instruction makes)."""
    if dst.name == "fp64":
        return x
    if dst.is_fp8():  # e4m3 has one NaN code; e5m2's canonical one
        return narrow(x, _fmt(dst), "rn", "satfinite")
    return _nan_payload_from_f64(x, narrow(x, _fmt(dst)), dst)


def _nan_payload_from_f64(x: torch.Tensor, out: torch.Tensor, dst: Any) -> torch.Tensor:
    nan = torch.isnan(x)
    if not bool(nan.any()):
        return out
    fmt = _fmt(dst)
    b = x.view(torch.int64)
    sign = (b >> 63) & 1
    mant_bits = fmt.precision - 1
    exp_bits = fmt.bits - 1 - mant_bits
    payload = (b >> (52 - mant_bits)) & ((1 << mant_bits) - 1)
    payload = payload | (1 << (mant_bits - 1))  # quiet
    bits = (sign << (fmt.bits - 1)) | (((1 << exp_bits) - 1) << mant_bits) | payload
    width = fmt.bits
    bits = torch.where(bits >= 1 << (width - 1), bits - (1 << width), bits).to(SIGNED_OF_WIDTH[width])
    return torch.where(nan, bits.view(fmt.torch_dtype), out)
