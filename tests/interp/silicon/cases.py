"""The silicon suite's case table: for each case, the kernel, a seeded input builder, the exact launch, and how
its outputs are compared (bit for bit, within a documented error bound, order-independent, or as a race).

Host code is torch only, so one case builds the same bits on CUDA (``record.py``) and on the CPU executor
(``compare.py``): inputs are drawn on the CPU from a seeded generator and then moved to the device.

``CASES`` is the table; ``case(name)`` looks one up; ``Case.build(device)`` returns a :class:`Launch`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from . import kernels as K


# =====================================================================================================
# the table's types
# =====================================================================================================
@dataclass
class Launch:
    """One launch's arguments, the tensors it writes (compared), and the inputs of an approximate op."""

    args: tuple
    outputs: dict[str, torch.Tensor]
    inputs: dict[str, torch.Tensor] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """One case of the suite.

    ``check``: ``"exact"`` (bit for bit), ``"approx:<op>"`` (within :data:`APPROX` [op]'s documented bound of
    the exact value, special values exactly), or ``"race"`` (the executor must report a race; the GPU's
    outcomes over ``launches`` runs are recorded). ``canon`` names an order-independent view of the outputs
    (:data:`CANON`) compared instead of the raw bytes (atomics). ``options`` are launch options
    (``enable_fp_fusion``)."""

    name: str
    category: str
    kernel: Any
    builder: Callable[[str], Launch]
    grid: tuple[int, ...]
    num_warps: int = 4
    check: str = "exact"
    canon: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    launches: int = 1
    note: str = ""
    num_ctas: int = 1  # CTAs a program (cluster) has

    def build(self, device: str = "cpu") -> Launch:
        return self.builder(device)

    @property
    def launch_options(self) -> dict[str, Any]:
        return dict(self.options)

    @property
    def fp_fusion(self) -> bool:
        return bool(self.launch_options.get("enable_fp_fusion", True))


CASES: list[Case] = []


def _add(
    name: str, category: str, kernel: Any, builder: Callable[[str], Launch], grid: tuple[int, ...], **kw: Any
) -> None:
    if any(c.name == name for c in CASES):
        raise ValueError(f"duplicate case name {name!r}")
    CASES.append(Case(name, category, kernel, builder, grid, **kw))


def case(name: str) -> Case:
    for c in CASES:
        if c.name == name:
            return c
    raise KeyError(f"no silicon case named {name!r}")


# =====================================================================================================
# seeded inputs (drawn on the CPU, then moved)
# =====================================================================================================
TORCH_DTYPES = {
    "f64": torch.float64,
    "f32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "e4m3": torch.float8_e4m3fn,
    "e5m2": torch.float8_e5m2,
    "i64": torch.int64,
    "i32": torch.int32,
    "i16": torch.int16,
    "i8": torch.int8,
    "u64": torch.uint64,
    "u32": torch.uint32,
    "u16": torch.uint16,
    "u8": torch.uint8,
    "bool": torch.bool,
}
BITS_OF = {
    torch.float64: torch.int64,
    torch.float32: torch.int32,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
    torch.float8_e4m3fn: torch.uint8,
    torch.float8_e5m2: torch.uint8,
}
INT_LIMITS = {
    "i64": (-(2**63), 2**63 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "i16": (-(2**15), 2**15 - 1),
    "i8": (-128, 127),
    "u64": (0, 2**64 - 1),
    "u32": (0, 2**32 - 1),
    "u16": (0, 2**16 - 1),
    "u8": (0, 255),
}


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def random_bits(dtype: torch.dtype, n: int, seed: int) -> torch.Tensor:
    """n values whose bit patterns are uniformly random (every exponent, subnormals, infinities, NaNs)."""
    width = torch.finfo(dtype).bits if dtype.is_floating_point else torch.iinfo(dtype).bits
    raw = torch.randint(0, 2 ** min(width, 62), (n,), dtype=torch.int64, generator=_gen(seed))
    if width == 64:  # the top two bits too
        raw = raw ^ (torch.randint(0, 4, (n,), dtype=torch.int64, generator=_gen(seed + 1)) << 62)
    return raw_to(raw, dtype, width)


def raw_to(raw: torch.Tensor, dtype: torch.dtype, width: int) -> torch.Tensor:
    """int64 bit patterns (the low ``width`` bits) reinterpreted as ``dtype``."""
    signed = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[width]
    low = raw & ((1 << width) - 1) if width < 64 else raw
    if width < 64:
        low = torch.where(low >= 2 ** (width - 1), low - 2**width, low)
    return low.to(signed).view(dtype)


def every_code(dtype: torch.dtype) -> torch.Tensor:
    """All 2**bits values of an 8- or 16-bit dtype, in code order."""
    width = torch.finfo(dtype).bits if dtype.is_floating_point else torch.iinfo(dtype).bits
    return raw_to(torch.arange(2**width, dtype=torch.int64), dtype, width)


def random_ints(kind: str, n: int, seed: int, lo: int | None = None, hi: int | None = None) -> torch.Tensor:
    """n integers uniform over [lo, hi] (default: the dtype's whole range)."""
    dlo, dhi = INT_LIMITS[kind]
    lo, hi = dlo if lo is None else lo, dhi if hi is None else hi
    if hi - lo >= 2**62:  # the whole 64-bit range: random bits
        return random_bits(TORCH_DTYPES[kind], n, seed)
    vals = torch.randint(0, hi - lo + 1, (n,), dtype=torch.int64, generator=_gen(seed)) + lo
    return vals.to(TORCH_DTYPES[kind]) if not kind.startswith("u") or kind == "u8" else _to_unsigned(vals, kind)


def _to_unsigned(vals: torch.Tensor, kind: str) -> torch.Tensor:
    width = int(kind[1:])
    return raw_to(vals, TORCH_DTYPES[kind], width)


def ints(kind: str, values: list[int]) -> torch.Tensor:
    """Exact integers of a dtype (unsigned ones through their bit patterns)."""
    width = int(kind[1:])
    raw = (
        torch.tensor([v % (1 << width) if kind.startswith("u") or v < 0 else v for v in values], dtype=torch.int64)
        if width < 64
        else torch.tensor([v - (1 << 64) if v >= 2**63 else v for v in values], dtype=torch.int64)
    )
    return raw_to(raw, TORCH_DTYPES[kind], width)


def log_uniform(n: int, seed: int, lo_exp: float, hi_exp: float, signed: bool = True) -> torch.Tensor:
    """float64 values with log2|x| uniform in [lo_exp, hi_exp] (and random signs)."""
    g = _gen(seed)
    mags = torch.pow(2.0, torch.rand(n, dtype=torch.float64, generator=g) * (hi_exp - lo_exp) + lo_exp)
    if signed:
        mags = torch.where(torch.rand(n, dtype=torch.float64, generator=g) < 0.5, -mags, mags)
    return mags


def uniform(n: int, seed: int, lo: float, hi: float) -> torch.Tensor:
    return torch.rand(n, dtype=torch.float64, generator=_gen(seed)) * (hi - lo) + lo


F32_SPECIALS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    math.inf,
    -math.inf,
    math.nan,
    2.0**-126,
    -(2.0**-126),
    2.0**-149,
    -(2.0**-149),
    2.0**-127 * 1.5,
    3.4028234663852886e38,
    -3.4028234663852886e38,
    0.5,
    -0.5,
    1.5,
    2.5,
    -2.5,
    3.5,
    65504.0,
    65519.99,
    65520.0,
    65536.0,
    -65520.0,
    57344.0,
    61439.0,
    61440.0,
    61441.0,
    -61440.0,
    448.0,
    464.0,
    464.1,
    479.9,
    480.0,
    -480.0,
    2.0**-24,
    2.0**-25,
    2.0**-14,
    2.0**-16,
    2.0**-17,
    2.0**-6,
    2.0**-9,
    2.0**-10,
    2.0**-133,
    2.0**-134,
    1e-40,
    -1e-40,
    1.00048828125,
    1.0009765625,
    1.00390625,
    1.0 + 2.0**-8 + 2.0**-9,
]


def specials(dtype: torch.dtype, extra: list[float] = ()) -> torch.Tensor:
    """The boundary values of :data:`F32_SPECIALS` (plus ``extra``) as float64, then cast to ``dtype``
    (float64 keeps them exact; narrower dtypes round them on the host, never on the path under test)."""
    return torch.tensor(F32_SPECIALS + list(extra), dtype=torch.float64).to(dtype)


def with_negative_nan(x: torch.Tensor) -> torch.Tensor:
    """x with a negative quiet NaN appended (the sign of a NaN is a bit like any other)."""
    width = torch.finfo(x.dtype).bits
    nan_bits = torch.tensor([math.nan], dtype=x.dtype).view(BITS_OF[x.dtype]).to(torch.int64) & ((1 << width) - 1)
    return torch.cat([x, raw_to(nan_bits | (1 << (width - 1)), x.dtype, width)])


def _dev(t: torch.Tensor, device: str) -> torch.Tensor:
    """A copy on ``device`` (moved as raw bytes: torch's unsigned 16/32/64-bit dtypes have few kernels)."""
    if device == "cpu":
        return t.clone()
    if device == "meta":
        return torch.empty(t.shape, dtype=t.dtype, device="meta")
    return t.contiguous().view(torch.uint8).to(device).view(t.dtype).reshape(t.shape)


def filled(shape: Any, dtype: torch.dtype, device: str, pattern: int = 0x5A) -> torch.Tensor:
    """An output buffer prefilled with a byte pattern, so untouched elements are visible."""
    n = math.prod(shape) if isinstance(shape, (tuple, list)) else shape
    size = torch.empty(0, dtype=dtype).element_size()
    raw = torch.full((n * size,), pattern, dtype=torch.uint8)
    out = raw.view(dtype).reshape(shape)
    return _dev(out, device)


def _pad(x: torch.Tensor, block: int) -> int:
    return -(-x.numel() // block)


# =====================================================================================================
# memory: masked loads / stores, broadcasting
# =====================================================================================================
def _masked_copy(kind: str, other: Any, seed: int, n: int = 1000, block: int = 256) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        dt = TORCH_DTYPES[kind]
        x = random_bits(dt, n, seed) if dt.is_floating_point else random_ints(kind, n, seed)
        y = filled(_pad(x, block) * block, dt, device)
        return Launch((_dev(x, device), y, n, other, 3, block), {"y": y})

    return build


for _kind, _other, _seed in [
    ("f32", -7.5, 1),
    ("f32", float("nan"), 2),
    ("f16", 0.0, 3),
    ("bf16", -1.0, 4),
    ("i32", -1, 5),
    ("i8", 100, 6),
    ("i64", 123456789012, 7),
]:
    _tag = (
        "nan" if isinstance(_other, float) and math.isnan(_other) else str(_other).replace("-", "m").replace(".", "p")
    )
    _add(f"masked_copy_{_kind}_other_{_tag}", "memory", K.masked_copy_kernel, _masked_copy(_kind, _other, _seed), (4,))


def _masked_tile(device: str) -> Launch:
    m, n, stride, bm, bn = 45, 70, 80, 32, 32
    x = random_bits(torch.float16, m * stride, 11).reshape(m, stride)
    y = filled((64, 96), torch.float16, device)
    return Launch((_dev(x, device), y, m, n, stride, 96, 2.5, bm, bn), {"y": y})


_add("masked_tile_2d_f16", "memory", K.masked_tile_kernel, _masked_tile, (2, 3))


def _broadcast(col_kind: str, row_kind: str, scalar_kind: str, seed: int) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        def draw(kind: str, n: int, s: int) -> torch.Tensor:
            dt = TORCH_DTYPES[kind]
            if dt.is_floating_point:
                return (torch.randn(n, generator=_gen(s), dtype=torch.float64) * 100).to(dt)
            return random_ints(kind, n, s, -100, 100) if not kind.startswith("u") else random_ints(kind, n, s, 0, 200)

        col, row, scalar = draw(col_kind, 32, seed), draw(row_kind, 64, seed + 1), draw(scalar_kind, 1, seed + 2)
        out = filled(2 * 32 * 64, torch.float32, device)
        return Launch((_dev(col, device), _dev(row, device), _dev(scalar, device), out, 32, 64), {"out": out})

    return build


_add("broadcast_f32", "memory", K.broadcast_kernel, _broadcast("f32", "f32", "f32", 21), (1,))
_add(
    "broadcast_i8_f16_f32",
    "memory",
    K.broadcast_kernel,
    _broadcast("i8", "f16", "f32", 24),
    (1,),
    note="int8 column + float16 row promote to float16, then times a float32 scalar",
)
_add("broadcast_u8_i32_i16", "memory", K.broadcast_kernel, _broadcast("u8", "i32", "i16", 27), (1,))


# =====================================================================================================
# integer arithmetic
# =====================================================================================================
def _binary(
    a: Callable[[], torch.Tensor],
    b: Callable[[], torch.Tensor],
    op: str,
    out_dtype: torch.dtype | None = None,
    block: int = 512,
) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        x, y = a(), b()
        assert x.numel() == y.numel()
        out = filled(_pad(x, block) * block, out_dtype or x.dtype, device)
        return Launch((_dev(x, device), _dev(y, device), out, x.numel(), op, block), {"out": out}, {"a": x, "b": y})

    return build


def _grid(n: int, block: int = 512) -> tuple[int]:
    return (-(-n // block),)


N = 1024  # values per elementwise case (the recording stays under 2 MB)
for _kind in ["i32", "i64", "i16", "i8", "u32", "u8", "u64"]:
    for _op in ["add", "sub", "mul"]:
        _add(
            f"int_{_op}_{_kind}_wrap",
            "int",
            K.binary_kernel,
            _binary(lambda k=_kind: random_ints(k, N, 31), lambda k=_kind: random_ints(k, N, 32), _op),
            _grid(N),
        )


def _divisors(kind: str, n: int, seed: int) -> torch.Tensor:
    """Small nonzero divisors (negative ones too for signed kinds)."""
    d = random_ints(kind, n, seed, -300 if kind[0] == "i" else 1, 300)
    return torch.where(d == 0, torch.ones_like(d) * 7, d) if kind != "u32" else d


for _kind in ["i32", "i64", "u32", "i8"]:
    for _op in ["floordiv", "mod"]:
        _add(
            f"int_{_op}_{_kind}_truncates",
            "int",
            K.binary_kernel,
            _binary(lambda k=_kind: random_ints(k, N, 41), lambda k=_kind: _divisors(k, N, 42), _op),
            _grid(N),
        )

for _kind, _width in [("i32", 32), ("u32", 32), ("i64", 64), ("i8", 8)]:
    for _op in ["shl", "shr"]:
        _add(
            f"int_{_op}_{_kind}",
            "int",
            K.binary_kernel,
            _binary(
                lambda k=_kind: random_ints(k, N, 51), lambda k=_kind, w=_width: random_ints(k, N, 52, 0, w - 1), _op
            ),
            _grid(N),
        )

for _op in ["and", "or", "xor"]:
    _add(
        f"int_{_op}_i32",
        "int",
        K.binary_kernel,
        _binary(lambda: random_ints("i32", N, 61), lambda: random_ints("i32", N, 62), _op),
        _grid(N),
    )
_add(
    "int_lt_u32_vs_i32_bits",
    "int",
    K.binary_kernel,
    _binary(lambda: random_ints("u32", N, 63), lambda: random_ints("u32", N, 64), "lt", torch.int8),
    _grid(N),
    note="unsigned comparison: the top bit is magnitude, not sign",
)
_add(
    "int_lt_i32",
    "int",
    K.binary_kernel,
    _binary(lambda: random_ints("i32", N, 63), lambda: random_ints("i32", N, 64), "lt", torch.int8),
    _grid(N),
)
_add(
    "int_umulhi_i32",
    "int",
    K.binary_kernel,
    _binary(lambda: random_ints("i32", N, 65), lambda: random_ints("i32", N, 66), "umulhi"),
    _grid(N),
)
_add(
    "int_umulhi_u32",
    "int",
    K.binary_kernel,
    _binary(lambda: random_ints("u32", N, 65), lambda: random_ints("u32", N, 66), "umulhi"),
    _grid(N),
)
for _kind in ["i32", "u32", "i64"]:
    for _op in ["maximum", "minimum"]:
        _add(
            f"int_{_op}_{_kind}",
            "int",
            K.binary_kernel,
            _binary(lambda k=_kind: random_ints(k, N, 67), lambda k=_kind: random_ints(k, N, 68), _op),
            _grid(N),
        )


def _unary(x: Callable[[], torch.Tensor], op: str, block: int = 512) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        v = x()
        out = filled(_pad(v, block) * block, v.dtype, device)
        return Launch((_dev(v, device), out, v.numel(), op, block), {"out": out}, {"x": v})

    return build


_add(
    "int_neg_i32",
    "int",
    K.unary_kernel,
    _unary(lambda: torch.cat([ints("i32", [-(2**31), 2**31 - 1, 0, -1]), random_ints("i32", 508, 71)]), "neg"),
    (1,),
)
_add("int_invert_i64", "int", K.unary_kernel, _unary(lambda: random_ints("i64", 512, 72), "invert"), (1,))
_add(
    "int_abs_i32",
    "int",
    K.unary_kernel,
    _unary(lambda: torch.cat([ints("i32", [-(2**31), 2**31 - 1, 0, -1]), random_ints("i32", 508, 73)]), "abs"),
    (1,),
)


# --- the cases C leaves undefined ---------------------------------------------------------------------
def _edge_pairs(kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    lo, hi = INT_LIMITS[kind]
    xs = [lo, lo + 1, -7, -1, 0, 1, 7, hi] if kind[0] == "i" else [0, 1, 7, hi - 1, hi]
    ds = [-1, 0, 1, 2, -2, lo, hi] if kind[0] == "i" else [0, 1, 2, hi]
    a = [x for x in xs for _ in ds]
    b = [d for _ in xs for d in ds]
    return ints(kind, a), ints(kind, b)


for _kind in ["i32", "i64", "i16", "i8", "u32", "u64"]:
    for _op in ["floordiv", "mod"]:
        _add(
            f"int_ub_{_op}_{_kind}_min_by_minus1_and_by_zero",
            "int-ub",
            K.binary_kernel,
            _binary(lambda k=_kind: _edge_pairs(k)[0], lambda k=_kind: _edge_pairs(k)[1], _op),
            (1,),
            note="INT_MIN // -1, INT_MIN % -1, x // 0, x % 0: undefined in C; the GPU answers",
        )


def _shift_counts(width: int) -> list[int]:
    return [0, 1, width - 1, width, width + 1, 2 * width, 255, -1, -width]


def _shift_operands(kind: str, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    counts = _shift_counts(width)
    values = [-5, 0x61] if kind[0] == "i" else [5, 0x61]
    a = [v for v in values for _ in counts]
    b = [c % (1 << width) if kind[0] == "u" else c for _ in values for c in counts]
    return ints(kind, a), ints(kind, b)


for _kind, _width in [("i32", 32), ("u32", 32), ("i64", 64), ("i8", 8)]:
    for _op in ["shl", "shr"]:
        _add(
            f"int_ub_{_op}_{_kind}_by_width_or_negative",
            "int-ub",
            K.binary_kernel,
            _binary(
                lambda k=_kind, w=_width: _shift_operands(k, w)[0],
                lambda k=_kind, w=_width: _shift_operands(k, w)[1],
                _op,
            ),
            (1,),
            note="shift counts >= the width or negative: poison in LLVM; the GPU answers",
        )


# =====================================================================================================
# float arithmetic (exact: IEEE-rounded, bit for bit)
# =====================================================================================================
def _bits_or_specials(dt: torch.dtype, n: int, seed: int) -> torch.Tensor:
    return torch.cat([specials(dt), random_bits(dt, n - len(F32_SPECIALS), seed)])


for _kind in ["f32", "f16", "bf16", "f64"]:
    for _op in ["add", "sub", "mul"]:
        _add(
            f"float_{_op}_{_kind}_all_exponents",
            "float",
            K.binary_kernel,
            _binary(
                lambda k=_kind: _bits_or_specials(TORCH_DTYPES[k], N, 81),
                lambda k=_kind: _bits_or_specials(TORCH_DTYPES[k], N, 82).flip(0),
                _op,
            ),
            _grid(N),
        )


def _normal_operands(dt: torch.dtype, n: int, seed: int) -> torch.Tensor:
    return (log_uniform(n, seed, -20, 20)).to(dt)


_add(
    "float_truediv_f64",
    "float",
    K.binary_kernel,
    _binary(
        lambda: _bits_or_specials(torch.float64, N, 96),
        lambda: _bits_or_specials(torch.float64, N, 97).flip(0),
        "truediv",
    ),
    _grid(N),
    note="float64 / is div.rn.f64: correctly rounded, so exact",
)
_add(
    "float_sqrt_f64",
    "float",
    K.unary_kernel,
    _unary(
        lambda: torch.cat([specials(torch.float64), random_bits(torch.float64, N - len(F32_SPECIALS), 98).abs()]),
        "sqrt",
    ),
    _grid(N),
    note="float64 gl.sqrt is sqrt.rn.f64: correctly rounded, so exact",
)
_add(
    "float_div_rn_f32",
    "float",
    K.binary_kernel,
    _binary(
        lambda: _bits_or_specials(torch.float32, N, 91),
        lambda: _bits_or_specials(torch.float32, N, 92).flip(0),
        "div_rn",
    ),
    _grid(N),
)
_add(
    "float_sqrt_rn_f32",
    "float",
    K.unary_kernel,
    _unary(
        lambda: torch.cat(
            [
                specials(torch.float32),
                random_bits(torch.float32, N - len(F32_SPECIALS), 93).abs(),
                random_bits(torch.float32, 64, 94),
            ]
        ),
        "sqrt_rn",
    ),
    _grid(N + 64),
)
for _op in ["neg", "abs", "floor", "ceil"]:
    _add(
        f"float_{_op}_f32",
        "float",
        K.unary_kernel,
        _unary(lambda: _bits_or_specials(torch.float32, N, 95), _op),
        _grid(N),
    )


def _ternary(
    a: Callable[[], torch.Tensor],
    b: Callable[[], torch.Tensor],
    c: Callable[[], torch.Tensor],
    op: str,
    block: int = 512,
) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        x, y, z = a(), b(), c()
        out = filled(_pad(x, block) * block, x.dtype, device)
        return Launch(
            (_dev(x, device), _dev(y, device), _dev(z, device), out, x.numel(), op, block),
            {"out": out},
            {"a": x, "b": y, "c": z},
        )

    return build


def _fma_operands(dt: torch.dtype, seed: int) -> tuple[Callable, Callable, Callable]:
    """a * b close to -c, so the product's rounding (fused or not) shows in most results."""

    def a() -> torch.Tensor:
        return log_uniform(N, seed, -4, 4).to(dt)

    def b() -> torch.Tensor:
        return log_uniform(N, seed + 1, -4, 4).to(dt)

    def c() -> torch.Tensor:
        prod = a().double() * b().double()
        return (-prod * (1 + uniform(N, seed + 2, -(2.0**-8), 2.0**-8))).to(dt)

    return a, b, c


for _kind in ["f32", "f16", "f64", "bf16"]:
    _a, _b, _c = _fma_operands(TORCH_DTYPES[_kind], 101)
    _add(f"fp_fma_{_kind}", "float", K.ternary_kernel, _ternary(_a, _b, _c, "fma"), _grid(N))
    for _op in ["mul_add", "add_mul", "mul_sub"]:
        _add(
            f"fp_{_op}_{_kind}_fusion_on",
            "float",
            K.ternary_kernel,
            _ternary(_a, _b, _c, _op),
            _grid(N),
            options=(("enable_fp_fusion", True),),
            note="TRITON_DEFAULT_FP_FUSION=1 (the project's setting): the compiler may contract to an FMA",
        )
    _add(
        f"fp_mul_add_{_kind}_fusion_off",
        "float",
        K.ternary_kernel,
        _ternary(_a, _b, _c, "mul_add"),
        _grid(N),
        options=(("enable_fp_fusion", False),),
        note="launched with enable_fp_fusion=False: no contraction",
    )

_add(
    "fp_clamp_f32_nan_and_signed_zero",
    "float",
    K.ternary_kernel,
    _ternary(
        lambda: torch.tensor([math.nan, -0.0, 0.0, 5.0, -5.0, 1.0, math.nan, 0.5] * 8, dtype=torch.float32),
        lambda: torch.tensor([0.0, 0.0, -0.0, -1.0, -1.0, math.nan, -1.0, -0.0] * 8, dtype=torch.float32),
        lambda: torch.tensor([1.0, -0.0, 0.0, 1.0, 1.0, 2.0, math.nan, 0.0] * 8, dtype=torch.float32),
        "clamp",
    ),
    (1,),
)


# --- maximum / minimum: NaN and signed zeros in both argument orders -------------------------------------
def _pairs(dt: torch.dtype) -> tuple[Callable, Callable]:
    vals = [math.nan, 0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, 2.0**-140, -3.5]
    a = [x for x in vals for _ in vals]
    b = [y for _ in vals for y in vals]
    return (
        lambda: with_negative_nan(torch.tensor(a, dtype=torch.float64).to(dt)),
        lambda: with_negative_nan(torch.tensor(b, dtype=torch.float64).to(dt)),
    )


for _kind in ["f32", "f16", "bf16", "f64"]:
    for _op in ["maximum", "minimum", "maximum_nan", "minimum_nan"]:
        _pa, _pb = _pairs(TORCH_DTYPES[_kind])
        _add(
            f"minmax_{_op}_{_kind}_nan_signed_zero_both_orders", "minmax", K.binary_kernel, _binary(_pa, _pb, _op), (1,)
        )


# =====================================================================================================
# reductions and scans: layouts whose per-thread / lane / warp split differs
# =====================================================================================================
def BL(spt: list[int], tpw: list[int], wpc: list[int], order: list[int]) -> gl.BlockedLayout:
    return gl.BlockedLayout(spt, tpw, wpc, order)


LAYOUTS_1D = {
    "t4_l32_w4": (BL([4], [32], [4], [0]), 4, 512),
    "t1_l32_w4_rep4": (BL([1], [32], [4], [0]), 4, 512),
    "t8_l32_w1": (BL([8], [32], [1], [0]), 1, 256),
    "t2_l32_w8": (BL([2], [32], [8], [0]), 8, 1024),
}


def _reduce1d(
    x: Callable[[], torch.Tensor], op: str, block: int, layout: Any, out_dtype: torch.dtype | None = None
) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        v = x()
        programs = v.numel() // block
        out = filled(programs, out_dtype or v.dtype, device)
        return Launch((_dev(v, device), out, op, block, layout), {"out": out}, {"x": v})

    return build


for _lname, (_layout, _warps, _block) in LAYOUTS_1D.items():
    _add(
        f"reduce_sum_f32_{_lname}",
        "reduce",
        K.reduce_1d_kernel,
        _reduce1d(
            lambda b=_block: (
                torch.randn(8 * b, generator=_gen(111), dtype=torch.float64) * log_uniform(8 * b, 112, -6, 6, False)
            ).float(),
            "sum",
            _block,
            _layout,
        ),
        (8,),
        num_warps=_warps,
    )
for _lname in ["t4_l32_w4", "t8_l32_w1"]:
    _layout, _warps, _block = LAYOUTS_1D[_lname]
    _add(
        f"reduce_sum_f16_{_lname}",
        "reduce",
        K.reduce_1d_kernel,
        _reduce1d(lambda b=_block: (torch.randn(8 * b, generator=_gen(113)) * 30).half(), "sum", _block, _layout),
        (8,),
        num_warps=_warps,
        note="float16 partial sums (gl.sum keeps the input dtype)",
    )
    _add(
        f"reduce_sum_bf16_{_lname}",
        "reduce",
        K.reduce_1d_kernel,
        _reduce1d(lambda b=_block: (torch.randn(8 * b, generator=_gen(114)) * 30).bfloat16(), "sum", _block, _layout),
        (8,),
        num_warps=_warps,
    )
    _add(
        f"reduce_sum_i32_wrap_{_lname}",
        "reduce",
        K.reduce_1d_kernel,
        _reduce1d(lambda b=_block: random_ints("i32", 8 * b, 115), "sum", _block, _layout),
        (8,),
        num_warps=_warps,
    )
    _add(
        f"reduce_sum_i8_promotes_{_lname}",
        "reduce",
        K.reduce_1d_kernel,
        _reduce1d(lambda b=_block: random_ints("i8", 8 * b, 116), "sum", _block, _layout, torch.int32),
        (8,),
        num_warps=_warps,
        note="int8 sums are taken in int32",
    )
    _add(
        f"reduce_sum_f16_in_f32_{_lname}",
        "reduce",
        K.reduce_1d_kernel,
        _reduce1d(
            lambda b=_block: (torch.randn(8 * b, generator=_gen(113)) * 30).half(),
            "sum_f32",
            _block,
            _layout,
            torch.float32,
        ),
        (8,),
        num_warps=_warps,
    )
    _add(
        f"reduce_xor_sum_i32_{_lname}",
        "reduce",
        K.reduce_1d_kernel,
        _reduce1d(lambda b=_block: random_ints("i32", 8 * b, 117), "xor_sum", _block, _layout),
        (8,),
        num_warps=_warps,
    )

# 64 x 60000 in float16: every pairwise partial overflows
_add(
    "reduce_sum_f16_64_x_60000_overflows",
    "reduce",
    K.reduce_1d_kernel,
    _reduce1d(lambda: torch.full((64,), 60000.0, dtype=torch.float16), "sum", 64, BL([1], [32], [2], [0])),
    (1,),
    num_warps=2,
    note="64 x 60000 (f32 total 3.84e6 is also inf in f16, either way)",
)


def _grouped_overflow() -> torch.Tensor:
    """+60000 in the first half of every thread's registers and -60000 in the second: an exact total of 0,
    but a thread's own partial sum overflows float16."""
    v = torch.empty(512, dtype=torch.float16)
    idx = torch.arange(512)
    v[:] = torch.where(idx % 8 < 4, 60000.0, -60000.0)
    return v


_add(
    "reduce_sum_f16_partials_overflow_total_zero",
    "reduce",
    K.reduce_1d_kernel,
    _reduce1d(_grouped_overflow, "sum", 512, BL([8], [32], [2], [0])),
    (1,),
    num_warps=2,
    note="per-thread partials +-240000 overflow float16; accumulating in float32 would give 0",
)

for _kind in ["f32", "f16", "bf16", "i32"]:
    for _op in ["max", "min"]:
        _add(
            f"reduce_{_op}_{_kind}_t4_l32_w4",
            "reduce",
            K.reduce_1d_kernel,
            _reduce1d(
                lambda k=_kind: (
                    (torch.randn(4096, generator=_gen(121)) * 1000).to(TORCH_DTYPES[k])
                    if k != "i32"
                    else random_ints("i32", 4096, 121)
                ),
                _op,
                512,
                BL([4], [32], [4], [0]),
                torch.float32 if _kind in ("f16", "bf16") else None,
            ),
            (8,),
            note="float16 / bfloat16 max and min are taken in float32",
        )


def _nan_and_zero_rows() -> torch.Tensor:
    """8 rows of 128: NaN first / middle / last / everywhere, -0 and +0 mixes, -inf, +inf."""
    rows = torch.randn(8, 128, generator=_gen(131))
    rows[0, 0] = math.nan
    rows[1, 77] = math.nan
    rows[2, 127] = math.nan
    rows[3, :] = math.nan
    rows[4, :] = 0.0
    rows[4, ::3] = -0.0
    rows[5, :] = -0.0
    rows[6, 5] = math.inf
    rows[6, 6] = math.nan
    rows[7, :] = -math.inf
    rows[7, 100] = math.nan
    return rows.reshape(-1)


for _op in ["max", "min"]:
    _add(
        f"reduce_{_op}_f32_with_nan_and_signed_zero",
        "minmax",
        K.reduce_1d_kernel,
        _reduce1d(_nan_and_zero_rows, _op, 128, BL([2], [32], [2], [0])),
        (8,),
        num_warps=2,
    )


LAYOUTS_2D = {
    "rows_t4_l8_w1": BL([1, 4], [4, 8], [4, 1], [1, 0]),
    "cols_t2_l4_w4": BL([2, 1], [4, 8], [4, 1], [0, 1]),
    "mixed_t2x2_l8x4_w2x2": BL([2, 2], [8, 4], [2, 2], [1, 0]),
}


def _reduce2d(dtype: torch.dtype, axis: int, layout: Any, seed: int) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        if dtype == torch.float32:
            x = (
                torch.randn(64 * 64, generator=_gen(seed), dtype=torch.float64)
                * log_uniform(64 * 64, seed + 1, -8, 8, False)
            ).float()
        else:
            x = (torch.randn(64 * 64, generator=_gen(seed)) * 40).to(dtype)
        out = filled(64, dtype, device)
        return Launch((_dev(x, device), out, "sum", axis, 64, 64, layout), {"out": out}, {"x": x})

    return build


for _lname, _layout in LAYOUTS_2D.items():
    for _axis in (0, 1):
        for _dt, _seed in [(torch.float32, 141), (torch.float16, 143)]:
            _add(
                f"reduce2d_sum_{str(_dt).split('.')[-1]}_axis{_axis}_{_lname}",
                "reduce",
                K.reduce_2d_kernel,
                _reduce2d(_dt, _axis, _layout, _seed),
                (1,),
            )


def _cumsum(layout: Any, warps: int, seed: int) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        x = (
            torch.randn(512, generator=_gen(seed), dtype=torch.float64) * log_uniform(512, seed + 1, -6, 6, False)
        ).float()
        out = filled(512, torch.float32, device)
        return Launch((_dev(x, device), out, 512, layout), {"out": out}, {"x": x})

    return build


_add("scan_cumsum_f32_t4_l32_w4", "reduce", K.cumsum_kernel, _cumsum(BL([4], [32], [4], [0]), 4, 151), (1,))
_add(
    "scan_cumsum_f32_t1_l32_w2_rep8",
    "reduce",
    K.cumsum_kernel,
    _cumsum(BL([1], [32], [2], [0]), 2, 153),
    (1,),
    num_warps=2,
)


# =====================================================================================================
# approximate operations (within a documented bound of the exact value)
# =====================================================================================================
#: op -> what Triton 3.9 compiles it to for sm_90a / sm_100a (read from the PTX), the error bound its
#: documentation states, and where. ``ftz``: subnormal inputs and results are flushed to sign-preserving zero.
APPROX: dict[str, dict[str, Any]] = {
    "truediv": dict(
        ptx="div.full.f32",
        ulps=2,
        ftz=False,
        bound="2 ulp across the full range of inputs",
        source="PTX ISA 9.7.3.8 (div): 'div.full.f32 ... The maximum ulp error is 2 across the full range of inputs'",
    ),
    "sqrt": dict(
        ptx="sqrt.approx.ftz.f32",
        rel=2.0**-23,
        ftz=True,
        bound="relative error 2^-23 over the positive finite range",
        source="PTX ISA 9.7.3.15 (sqrt): 'sqrt.approx.f32 ... maximum relative error over the entire "
        "positive finite floating-point range is 2^-23'",
    ),
    "rsqrt": dict(
        ptx="rsqrt.approx.ftz.f32",
        rel=2.0**-22.9,
        ftz=True,
        bound="relative error 2^-22.9 over the positive finite range",
        source="PTX ISA 9.7.3.16 (rsqrt): 'maximum relative error for rsqrt.f32 over the entire positive "
        "finite floating-point range is 2^-22.9'",
    ),
    "exp2": dict(
        ptx="ex2.approx.ftz.f32",
        ulps=2,
        ftz=True,
        bound="2 ulp from the correctly rounded result",
        source="PTX ISA 9.7.3.21 (ex2): 'The maximum ulp error is 2 ulp from correctly rounded result "
        "across the full range of inputs'",
    ),
    "exp": dict(
        ptx="mul.f32 x, 0f3FB8AA3B; ex2.approx.f32",
        ulps=2,
        ftz=False,
        prescale=1.4426950216293335,
        bound="2 ulp from 2^t correctly rounded, t = RN(x * 0x3FB8AA3B) (the product's rounding is not "
        "bounded against e^x: that error grows with |x|)",
        source="Triton 3.9's lowering of math.exp (PTX: mul.f32 by log2(e) in float32, then ex2.approx.f32) "
        "+ PTX ISA 9.7.3.21 (ex2)",
    ),
    "log2": dict(
        ptx="libdevice __nv_log2f (ftz)",
        ulps=1,
        ftz=True,
        bound="1 ulp (full range)",
        source="CUDA C++ Programming Guide, Mathematical Functions, single-precision table: log2f(x) 1 ulp "
        "(bounds from extensive, not exhaustive, tests)",
    ),
    "log": dict(
        ptx="libdevice __nv_logf (ftz)",
        ulps=1,
        ftz=True,
        bound="1 ulp (full range)",
        source="CUDA C++ Programming Guide, Mathematical Functions, single-precision table: logf(x) 1 ulp",
    ),
    "sin": dict(
        ptx="libdevice __nv_sinf (ftz)",
        ulps=2,
        ftz=True,
        bound="2 ulp (full range)",
        source="CUDA C++ Programming Guide, Mathematical Functions, single-precision table: sinf(x) 2 ulp",
    ),
    "cos": dict(
        ptx="libdevice __nv_cosf (ftz)",
        ulps=2,
        ftz=True,
        bound="2 ulp (full range)",
        source="CUDA C++ Programming Guide, Mathematical Functions, single-precision table: cosf(x) 2 ulp",
    ),
}

_APPROX_SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 2.0**-149, 2.0**-130, -(2.0**-130)]
_APPROX_INPUTS: dict[str, Callable[[], torch.Tensor]] = {
    "sqrt": lambda: torch.cat([torch.tensor(_APPROX_SPECIAL), log_uniform(4086, 161, -149, 127, False)]).float(),
    "rsqrt": lambda: torch.cat([torch.tensor(_APPROX_SPECIAL), log_uniform(4086, 162, -149, 127, False)]).float(),
    "exp2": lambda: torch.cat(
        [torch.tensor(_APPROX_SPECIAL + [128.0, -150.0, -126.5, 127.99]), uniform(4082, 163, -130, 128)]
    ).float(),
    "exp": lambda: torch.cat(
        [torch.tensor(_APPROX_SPECIAL + [88.7, -87.3, -103.0]), uniform(4083, 164, -90, 88.7)]
    ).float(),
    "log2": lambda: torch.cat(
        [
            torch.tensor(_APPROX_SPECIAL),
            log_uniform(4086, 165, -149, 127, False),
        ]
    ).float(),
    "log": lambda: torch.cat([torch.tensor(_APPROX_SPECIAL), log_uniform(4086, 166, -149, 127, False)]).float(),
    "sin": lambda: torch.cat(
        [torch.tensor(_APPROX_SPECIAL), uniform(3000, 167, -7, 7), uniform(1086, 168, -300, 300)]
    ).float(),
    "cos": lambda: torch.cat(
        [torch.tensor(_APPROX_SPECIAL), uniform(3000, 169, -7, 7), uniform(1086, 170, -300, 300)]
    ).float(),
}
for _op, _x in _APPROX_INPUTS.items():
    _add(
        f"approx_{_op}_f32",
        "approx",
        K.unary_kernel,
        _unary(_x, _op),
        _grid(4096),
        check=f"approx:{_op}",
        note=APPROX[_op]["bound"],
    )
_add(
    "approx_truediv_f32",
    "approx",
    K.binary_kernel,
    _binary(
        lambda: torch.cat(
            [
                torch.tensor([1.0, 0.0, -0.0, math.inf, math.nan, 1.0, 3.0, 2.0**-149, 1e38, 1e-38]),
                log_uniform(4086, 171, -126, 126),
            ]
        ).float(),
        lambda: torch.cat(
            [torch.tensor([0.0, 0.0, 1.0, math.inf, 1.0, 3.0, 7.0, 0.5, 1e-3, 1e38]), log_uniform(4086, 172, -126, 126)]
        ).float(),
        "truediv",
    ),
    _grid(4096),
    check="approx:truediv",
    note=APPROX["truediv"]["bound"],
)


# =====================================================================================================
# casts
# =====================================================================================================
def _cast(
    x: Callable[[], torch.Tensor], to: str, rounding: str | None = None, bitcast: bool = False, block: int = 512
) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        v = x()
        out = filled(_pad(v, block) * block, TORCH_DTYPES[to], device)
        return Launch((_dev(v, device), out, v.numel(), rounding, bitcast, block), {"out": out}, {"x": v})

    return build


def _cast_case(
    name: str,
    x: Callable[[], torch.Tensor],
    to: str,
    rounding: str | None = None,
    bitcast: bool = False,
    note: str = "",
) -> None:
    n = x().numel()
    _add(name, "cast", K.cast_kernel, _cast(x, to, rounding, bitcast), _grid(n), note=note)


# widening
for _src, _dst in [("f16", "f32"), ("bf16", "f32")]:
    _cast_case(f"cast_{_src}_to_{_dst}_every_code", lambda s=_src: every_code(TORCH_DTYPES[s]), _dst)
for _src in ["f16", "bf16"]:  # every 13th code (all exponents, both signs): the recording stays small
    _cast_case(f"cast_{_src}_to_f64_every_13th_code", lambda s=_src: every_code(TORCH_DTYPES[s])[::13], "f64")
_cast_case("cast_f32_to_f64", lambda: _bits_or_specials(torch.float32, N, 181), "f64")
for _src in ["e4m3", "e5m2"]:
    for _dst in ["f16", "bf16", "f32"]:
        _cast_case(
            f"cast_{_src}_to_{_dst}_every_code",
            lambda s=_src: every_code(TORCH_DTYPES[s]),
            _dst,
            note="including the inf / NaN codes",
        )
for _src, _dst in [("i8", "i32"), ("u8", "i32"), ("i8", "i64"), ("u8", "u32")]:
    _cast_case(f"cast_{_src}_to_{_dst}_every_code", lambda s=_src: every_code(TORCH_DTYPES[s]), _dst)
for _src, _dst in [("i16", "i32"), ("u16", "i64")]:
    _cast_case(f"cast_{_src}_to_{_dst}", lambda s=_src: random_ints(s, N, 180), _dst)
_cast_case("cast_i32_to_i64", lambda: random_ints("i32", N, 182), "i64")
_cast_case("cast_u32_to_i64", lambda: random_ints("u32", N, 183), "i64")

# narrowing floats, round to nearest and toward zero
for _src in ["f16", "bf16"]:
    for _dst in ["e4m3", "e5m2"]:
        _cast_case(
            f"cast_{_src}_to_{_dst}_every_code",
            lambda s=_src: every_code(TORCH_DTYPES[s]),
            _dst,
            note="round to nearest; saturation and NaN as the cvt instruction does them",
        )
_cast_case("cast_f16_to_bf16_every_code", lambda: every_code(torch.float16), "bf16")
_cast_case("cast_bf16_to_f16_every_code", lambda: every_code(torch.bfloat16), "f16")
for _dst in ["f16", "bf16", "e4m3", "e5m2"]:
    _cast_case(f"cast_f32_to_{_dst}_rtne", lambda: _bits_or_specials(torch.float32, 8192, 184), _dst)
    _cast_case(
        f"cast_f32_to_{_dst}_rtne_boundaries",
        lambda: torch.cat(
            [
                specials(torch.float32),
                with_negative_nan(specials(torch.float32)).neg(),
                log_uniform(2048, 185, -30, 17).float(),
            ]
        ),
        _dst,
        note="saturation at 448 / 57344 / 65504, inf, NaN, halfway values, subnormals",
    )
for _dst in ["f16", "bf16", "e5m2"]:  # Triton 3.9 lowers rtz from float32 to these (not to e4m3)
    _cast_case(
        f"cast_f32_to_{_dst}_rtz",
        lambda: _bits_or_specials(torch.float32, 8192, 186),
        _dst,
        "rtz",
        note="fp_downcast_rounding='rtz'",
    )
_cast_case("cast_f64_to_f32", lambda: _bits_or_specials(torch.float64, N, 187), "f32")
_cast_case(
    "cast_f64_to_f16",
    lambda: torch.cat([specials(torch.float64), log_uniform(2048, 188, -30, 17)]),
    "f16",
    note="one rounding or two (through float32)?",
)
_cast_case("cast_f64_to_bf16", lambda: torch.cat([specials(torch.float64), log_uniform(2048, 189, -140, 130)]), "bf16")

# float -> int
_F2I = [
    math.nan,
    -math.nan,
    math.inf,
    -math.inf,
    0.0,
    -0.0,
    0.5,
    -0.5,
    0.7,
    -0.7,
    1.5,
    -1.5,
    2.5,
    -2.5,
    127.0,
    127.5,
    128.0,
    -128.0,
    -128.5,
    -129.0,
    255.0,
    255.5,
    256.0,
    32767.0,
    32767.5,
    32768.0,
    -32768.0,
    -32769.0,
    65535.0,
    65536.0,
    2.0**31 - 128,
    2.0**31,
    -(2.0**31),
    -(2.0**31) - 256,
    2.0**32,
    2.0**32 - 256,
    2.0**63,
    -(2.0**63),
    2.0**64,
    1e30,
    -1e30,
    3.4028234663852886e38,
    2.0**-140,
    -1.0,
    -3.75,
]
for _dst in ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]:
    _cast_case(
        f"cast_f32_to_{_dst}_nan_inf_out_of_range",
        lambda: torch.cat([torch.tensor(_F2I, dtype=torch.float64).float(), log_uniform(467, 191, -2, 70).float()]),
        _dst,
        note="PTX cvt.rzi saturates and maps NaN to 0; C leaves these undefined",
    )
for _src, _dst in [("f16", "i32"), ("f16", "u8"), ("bf16", "i32"), ("f64", "i64"), ("f64", "i32"), ("f16", "i16")]:
    _cast_case(
        f"cast_{_src}_to_{_dst}_nan_inf_out_of_range",
        lambda s=_src: torch.cat([torch.tensor(_F2I, dtype=torch.float64), log_uniform(467, 192, -2, 70)]).to(
            TORCH_DTYPES[s]
        ),
        _dst,
    )

# int -> float (rounding of wide integers)
for _src, _dst in [
    ("i32", "f32"),
    ("i64", "f32"),
    ("i64", "f64"),
    ("u32", "f32"),
    ("u64", "f32"),
    ("u64", "f64"),
    ("i32", "f16"),
    ("i32", "bf16"),
    ("i16", "f16"),
]:
    _cast_case(f"cast_{_src}_to_{_dst}", lambda s=_src: random_ints(s, N, 193), _dst)

# narrowing ints and bitcasts
for _src, _dst in [("i32", "i8"), ("i32", "i16"), ("i32", "u8"), ("i64", "i32"), ("u32", "i8"), ("i32", "u32")]:
    _cast_case(f"cast_{_src}_to_{_dst}_truncates", lambda s=_src: random_ints(s, N, 194), _dst)
for _src, _dst in [("f32", "i32"), ("i32", "f32"), ("f16", "i16"), ("bf16", "u16"), ("e4m3", "u8"), ("e5m2", "i8")]:
    _cast_case(
        f"bitcast_{_src}_to_{_dst}",
        lambda s=_src: (
            random_bits(TORCH_DTYPES[s], N, 195) if TORCH_DTYPES[s].is_floating_point else random_ints(s, N, 195)
        ),
        _dst,
        bitcast=True,
    )


# =====================================================================================================
# layouts and shapes
# =====================================================================================================
def _convert(src: Any, dst: Any, dtype: torch.dtype, m: int = 64, n: int = 64) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        x = (
            random_bits(dtype, m * n, 201)
            if dtype.is_floating_point
            else random_ints({torch.int8: "i8", torch.int32: "i32"}[dtype], m * n, 201)
        )
        y = filled(m * n, dtype, device)
        return Launch((_dev(x, device), y, m, n, src, dst), {"y": y})

    return build


_CONVERTS = {
    "rows_to_cols": (BL([1, 4], [4, 8], [4, 1], [1, 0]), BL([4, 1], [8, 4], [1, 4], [0, 1])),
    "wide_to_narrow": (BL([1, 8], [2, 16], [4, 1], [1, 0]), BL([1, 1], [1, 32], [4, 1], [1, 0])),
    "warps_swap": (BL([2, 2], [8, 4], [2, 2], [1, 0]), BL([2, 2], [4, 8], [4, 1], [0, 1])),
}
for _cname, (_s, _d) in _CONVERTS.items():
    for _dt in [torch.float32, torch.float16, torch.int8]:
        _add(
            f"convert_layout_{_cname}_{str(_dt).split('.')[-1]}",
            "layout",
            K.convert_layout_kernel,
            _convert(_s, _d, _dt),
            (1,),
        )


def _join_split(member: bool) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        a = torch.randn(128, generator=_gen(211))
        b = torch.randn(128, generator=_gen(212))
        out = filled(4 * 128, torch.float32, device)
        return Launch((_dev(a, device), _dev(b, device), out, 128, member), {"out": out})

    return build


_add("shape_join_split", "layout", K.join_split_kernel, _join_split(False), (1,))
_add(
    "shape_join_split_tensor_method",
    "layout",
    K.join_split_kernel,
    _join_split(True),
    (1,),
    note="pairs.split(): the tensor method",
)


def _permute_reshape(member: bool) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        x = torch.arange(32 * 64, dtype=torch.int32) * 3 - 1000
        out = filled(2 * 32 * 64, torch.int32, device)
        return Launch((_dev(x, device), out, 32, 64, member), {"out": out})

    return build


_add("shape_permute_reshape", "layout", K.permute_reshape_kernel, _permute_reshape(False), (1,))
_add("shape_permute_reshape_tensor_methods", "layout", K.permute_reshape_kernel, _permute_reshape(True), (1,))


# =====================================================================================================
# atomics (many programs on the same addresses) and the planted races
# =====================================================================================================
PROGRAMS, ABLOCK = 64, 128


def _atomic(
    kind: str, op: str, values: Callable[[], torch.Tensor], init: Callable[[], torch.Tensor], masked: bool = False
) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        v = values()
        target = _dev(init(), device)
        old = filled(PROGRAMS * ABLOCK, TORCH_DTYPES[kind], device)
        return Launch((target, _dev(v, device), old, op, masked, ABLOCK), {"target": target, "old": old})

    return build


def _same_per_program(col: torch.Tensor) -> torch.Tensor:
    """One value per address, the same for every program (so each address's old values are a fixed set)."""
    return col.repeat(PROGRAMS)


_add(
    "atomic_add_i32_same_value",
    "atomic",
    K.atomic_rmw_kernel,
    _atomic(
        "i32",
        "add",
        lambda: _same_per_program(random_ints("i32", ABLOCK, 221, -1000, 1000)),
        lambda: random_ints("i32", ABLOCK, 222, -(10**6), 10**6),
    ),
    (PROGRAMS,),
    canon="sort_old_per_address",
    note="old values per address: init + k * v for k = 0..63 in some order",
)
_add(
    "atomic_add_i32_wraps",
    "atomic",
    K.atomic_rmw_kernel,
    _atomic("i32", "add", lambda: random_ints("i32", PROGRAMS * ABLOCK, 223), lambda: random_ints("i32", ABLOCK, 224)),
    (PROGRAMS,),
    canon="final_only",
)
_add(
    "atomic_add_f32_exact",
    "atomic",
    K.atomic_rmw_kernel,
    _atomic(
        "f32",
        "add",
        lambda: _same_per_program(torch.randint(-8, 8, (ABLOCK,), generator=_gen(225)).float() / 4),
        lambda: torch.randint(-100, 100, (ABLOCK,), generator=_gen(226)).float(),
    ),
    (PROGRAMS,),
    canon="sort_old_per_address",
    note="quarter-integers: every partial sum is exact, so the order does not show",
)
_add(
    "atomic_add_f16_exact",
    "atomic",
    K.atomic_rmw_kernel,
    _atomic(
        "f16",
        "add",
        lambda: _same_per_program(torch.randint(-4, 4, (ABLOCK,), generator=_gen(227)).half()),
        lambda: torch.randint(-100, 100, (ABLOCK,), generator=_gen(228)).half(),
    ),
    (PROGRAMS,),
    canon="sort_old_per_address",
)
_add(
    "atomic_add_i32_masked",
    "atomic",
    K.atomic_rmw_kernel,
    _atomic(
        "i32",
        "add",
        lambda: _same_per_program(random_ints("i32", ABLOCK, 229, -50, 50)),
        lambda: random_ints("i32", ABLOCK, 230, -1000, 1000),
        masked=True,
    ),
    (PROGRAMS,),
    canon="sort_old_per_address",
    note="lanes i % 3 == 0 masked off: target and old untouched there",
)
for _kind, _lo, _hi in [("i32", None, None), ("u32", None, None), ("f32", None, None), ("i64", None, None)]:
    for _op in ["max", "min"]:
        _add(
            f"atomic_{_op}_{_kind}",
            "atomic",
            K.atomic_rmw_kernel,
            _atomic(
                _kind,
                _op,
                (
                    lambda k=_kind: (
                        (torch.randn(PROGRAMS * ABLOCK, generator=_gen(231)) * 1e4).float()
                        if k == "f32"
                        else random_ints(k, PROGRAMS * ABLOCK, 231)
                    )
                ),
                (
                    lambda k=_kind: (
                        (torch.randn(ABLOCK, generator=_gen(232)) * 1e4).float()
                        if k == "f32"
                        else random_ints(k, ABLOCK, 232)
                    )
                ),
            ),
            (PROGRAMS,),
            canon="final_only",
            note="float max/min mixes positive and negative values",
        )
for _op in ["and", "or", "xor"]:
    _add(
        f"atomic_{_op}_i32",
        "atomic",
        K.atomic_rmw_kernel,
        _atomic(
            "i32", _op, lambda: random_ints("i32", PROGRAMS * ABLOCK, 233), lambda: random_ints("i32", ABLOCK, 234)
        ),
        (PROGRAMS,),
        canon="final_only",
    )
_add(
    "atomic_xchg_i32",
    "atomic",
    K.atomic_rmw_kernel,
    _atomic(
        "i32",
        "xchg",
        lambda: torch.arange(PROGRAMS * ABLOCK, dtype=torch.int32) + 1000,
        lambda: -torch.arange(ABLOCK, dtype=torch.int32),
    ),
    (PROGRAMS,),
    canon="xchg_multiset",
    note="the old values and the final value are a permutation of the initial value and every program's value",
)


def _cas(device: str) -> Launch:
    target = _dev(-torch.arange(ABLOCK, dtype=torch.int32), device)
    expected = torch.where(torch.arange(ABLOCK) % 4 == 3, 7, -torch.arange(ABLOCK)).to(torch.int32)
    values = torch.arange(PROGRAMS * ABLOCK, dtype=torch.int32) + 1
    old = filled(PROGRAMS * ABLOCK, torch.int32, device)
    return Launch(
        (target, _dev(expected, device), _dev(values, device), old, ABLOCK),
        {"target": target, "old": old, "expected": _dev(expected, device)},
    )


_add(
    "atomic_cas_i32_one_winner",
    "atomic",
    K.atomic_cas_kernel,
    _cas,
    (PROGRAMS,),
    canon="cas_winner",
    note="where cmp matches, exactly one program wins and the others see its value; elsewhere nothing changes",
)


def _ticket(step: int) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        counter = _dev(torch.tensor([5], dtype=torch.int32), device)
        tickets = filled(256, torch.int32, device)
        return Launch((counter, tickets, step), {"counter": counter, "tickets": tickets})

    return build


_add("atomic_ticket_scalar_i32", "atomic", K.atomic_ticket_kernel, _ticket(3), (256,), canon="sort_tickets")


def _racy_store(device: str) -> Launch:
    out = filled(256, torch.int32, device, 0)
    return Launch((out, 256), {"out": out})


def _racy_increment(device: str) -> Launch:
    count = _dev(torch.zeros(256, dtype=torch.int32), device)
    return Launch((count, 256), {"count": count})


_add(
    "race_last_writer_wins",
    "race",
    K.racy_store_kernel,
    _racy_store,
    (2048,),
    check="race",
    launches=50,
    note="every program stores its id to the same 256 addresses, unordered",
)
_add(
    "race_lost_increments",
    "race",
    K.racy_increment_kernel,
    _racy_increment,
    (2048,),
    check="race",
    launches=50,
    note="read-modify-write of the same 256 counters by every program, no atomics",
)


# =====================================================================================================
# TMA, mbarrier phases, store_wait, warp specialization
# =====================================================================================================
def _desc(t: torch.Tensor, block: list[int], padding: str = "zero") -> TensorDescriptor:
    gdt = {torch.float32: gl.float32, torch.float16: gl.float16, torch.int8: gl.int8}[t.dtype]
    layout = gl.NVMMASharedLayout.get_default_for(block, gdt)
    return TensorDescriptor(t, list(t.shape), list(t.stride()), block, layout, padding=padding)


def _tma_tile(
    dtype: torch.dtype, off_m: int, off_n: int, padding: str = "zero", check_types: bool = False
) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        m, n, bm, bn = 50, 40, 32, 32 if dtype == torch.float16 else 16
        x = _dev((torch.randn(m * n, generator=_gen(241)) * 10).to(dtype).reshape(m, n), device)
        backing = filled((64, 48), dtype, device)  # the out tensor is a 50 x 40 window of a larger buffer
        out = backing[:m, :n]
        tiles = filled(2 * 3 * bm * bn, dtype, device)
        return Launch(
            (_desc(x, [bm, bn], padding), _desc(out, [bm, bn]), tiles, off_m, off_n, check_types),
            {"backing": backing, "tiles": tiles},
        )

    return build


_add(
    "tma_tile_zero_fill_and_clip_f32",
    "tma",
    K.tma_tile_kernel,
    _tma_tile(torch.float32, 0, 0),
    (2, 3),
    note="blocks over a 50 x 40 tensor: the loads past its edges are zero, the stores are clipped",
)
_add("tma_tile_zero_fill_and_clip_f16", "tma", K.tma_tile_kernel, _tma_tile(torch.float16, 0, 0), (2, 2))
_add(
    "tma_tile_nan_padding_f32",
    "tma",
    K.tma_tile_kernel,
    _tma_tile(torch.float32, 0, 0, "nan"),
    (2, 3),
    note="TensorDescriptor(padding='nan'): out-of-bounds elements load as NaN",
)
_add(
    "tma_tile_block_type_equality",
    "tma",
    K.tma_tile_kernel,
    _tma_tile(torch.float32, 0, 0, check_types=True),
    (2, 3),
    note="gl.static_assert(in_desc.block_type == out_desc.block_type) first (tutorial 04)",
)
for _name, _dt, _om, _on, _g in [
    ("negative_coords_f32", torch.float32, -8, -16, (2, 3)),
    ("negative_rows_f16", torch.float16, -8, 0, (2, 2)),
    ("negative_cols_f16", torch.float16, 0, -16, (2, 2)),
]:
    _add(
        f"tma_tile_{_name}",
        "tma",
        K.tma_tile_kernel,
        _tma_tile(_dt, _om, _on),
        _g,
        check="trap",
        note="a TMA load and store at negative coordinates: the store faults ('an illegal instruction was "
        "encountered' on the H200)",
    )


def _tma_load_only(off_m: int, off_n: int) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        x = _dev((torch.randn(50 * 40, generator=_gen(242)) * 10).reshape(50, 40), device)
        tiles = filled(2 * 3 * 32 * 16, torch.float32, device)
        return Launch((_desc(x, [32, 16]), tiles, off_m, off_n), {"tiles": tiles})

    return build


def _tma_store_only(off_m: int, off_n: int) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        backing = filled((64, 48), torch.float32, device)
        return Launch((_desc(backing[:50, :40], [32, 16]), off_m, off_n), {"backing": backing})

    return build


for _om, _on in [(0, 0), (-8, 0), (0, -16)]:
    _tag = "at_zero" if (_om, _on) == (0, 0) else f"negative_{'rows' if _om else 'cols'}"
    _add(
        f"tma_load_only_{_tag}_f32",
        "tma",
        K.tma_load_tile_kernel,
        _tma_load_only(_om, _on),
        (2, 3),
        note="" if _tag == "at_zero" else "a TMA load at negative coordinates: the part outside is zero-filled",
    )
    _add(
        f"tma_store_only_{_tag}_f32",
        "tma",
        K.tma_store_tile_kernel,
        _tma_store_only(_om, _on),
        (2, 3),
        check="exact" if _tag == "at_zero" else "trap",
        note=""
        if _tag == "at_zero"
        else "a TMA store at negative coordinates: 'an illegal instruction was "
        "encountered' on the H200 (loads there are zero-filled)",
    )


def _band_sum(device: str) -> Launch:
    x = _dev((torch.randn(128 * 160, generator=_gen(251)) * 100).half().reshape(128, 160), device)
    out = filled(128 * 32, torch.float32, device)
    return Launch((_desc(x, [32, 32]), out, 5), {"out": out})


_add(
    "tma_mbarrier_phase_loop",
    "tma",
    K.tma_band_sum_kernel,
    _band_sum,
    (4,),
    note="one barrier, its phase flipping with each of 5 blocks",
)


def _store_ring(device: str) -> Launch:
    x = _dev((torch.randn(32 * 192, generator=_gen(252)) * 100).reshape(32, 192), device)
    out = _dev(torch.zeros(32, 192), device)
    return Launch((_desc(x, [32, 32]), _desc(out, [32, 32]), 6, 2), {"out": out})


_add(
    "tma_store_wait_ring",
    "tma",
    K.tma_store_ring_kernel,
    _store_ring,
    (1,),
    note="two staging buffers, store_wait(1) before reuse",
)


def _ws_ring(device: str) -> Launch:
    x = _dev((torch.randn(64 * 32 * 7, generator=_gen(253)) * 100).reshape(64, 32 * 7), device)
    out = filled(64 * 32, torch.float32, device)
    return Launch((_desc(x, [32, 32]), out, 7, 3), {"out": out})


_add(
    "ws_tma_ring_3_stages",
    "ws",
    K.ws_ring_kernel,
    _ws_ring,
    (2,),
    note="a one-warp TMA loader and the default partition through ready / empty barriers",
)


def _arrive_count(device: str) -> Launch:
    out = filled(64, torch.int32, device)
    return Launch((out,), {"out": out})


_add("ws_two_workers_arrive_count_2", "ws", K.ws_arrive_count_kernel, _arrive_count, (1,))


# =====================================================================================================
# cp.async
# =====================================================================================================
def _cp_copy(device: str) -> Launch:
    x = random_bits(torch.float32, 600, 261)
    y = filled(3 * 256, torch.float32, device)
    return Launch((_dev(x, device), y, 600, 256), {"y": y})


_add(
    "cp_async_masked_copy",
    "cp.async",
    K.cp_async_copy_kernel,
    _cp_copy,
    (3,),
    note="lanes past n are masked off the copy: what shared memory holds there is what is stored",
)


def _cp_ring(stages: int) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        x = (torch.randn(9 * 128, generator=_gen(262)) * 10).float()
        y = filled(9 * 128, torch.float32, device)
        return Launch((_dev(x, device), y, 9, stages, 128), {"y": y})

    return build


_add("cp_async_ring_3_stages", "cp.async", K.cp_async_ring_kernel, _cp_ring(3), (1,))
_add("cp_async_ring_2_stages", "cp.async", K.cp_async_ring_kernel, _cp_ring(2), (1,))


def _cp_mbarrier(per_thread: bool) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        x = (torch.randn(2 * 256, generator=_gen(263)) * 10).float()
        y = filled(2 * 256, torch.float32, device)
        return Launch((_dev(x, device), y, per_thread, 256), {"y": y})

    return build


_add("cp_async_mbarrier_arrive", "cp.async", K.cp_async_mbarrier_kernel, _cp_mbarrier(False), (2,))
_add(
    "cp_async_mbarrier_arrive_per_thread_noinc",
    "cp.async",
    K.cp_async_mbarrier_kernel,
    _cp_mbarrier(True),
    (2,),
    note="a barrier counting all 128 threads, each arriving with increment_count=False",
)


# =====================================================================================================
# clusters (num_ctas = 2): a value both CTAs hold whole, stored and counted by an atomic
# =====================================================================================================
CLUSTERS = 4


def _cluster_write(scalar: bool) -> Callable[[str], Launch]:
    def build(device: str) -> Launch:
        n = CLUSTERS * (1 if scalar else ABLOCK)
        out = filled(n, torch.int32, device)
        count = _dev(torch.zeros(n, dtype=torch.int32), device)
        return Launch((out, count, scalar, ABLOCK), {"out": out, "count": count})

    return build


for _scalar in (True, False):
    _add(
        f"cluster_{'scalar' if _scalar else 'unsplit_tensor'}_store_and_atomic",
        "cluster",
        K.cluster_write_kernel,
        _cluster_write(_scalar),
        (CLUSTERS,),
        num_ctas=2,
        note="how many CTAs of a 2-CTA cluster store and add a value both hold whole: the count says",
    )


def _cluster_ticket(device: str) -> Launch:
    count = _dev(torch.arange(CLUSTERS, dtype=torch.int32) * 10 + 5, device)
    tickets = filled(CLUSTERS * 2 * ABLOCK, torch.int32, device)
    return Launch((count, tickets, 2 * ABLOCK), {"count": count, "tickets": tickets})


_add(
    "cluster_scalar_atomic_result",
    "cluster",
    K.cluster_ticket_kernel,
    _cluster_ticket,
    (CLUSTERS,),
    num_ctas=2,
    note="the old value a scalar atomic_add of a 2-CTA cluster returns to each CTA, stored over each CTA's half",
)


# =====================================================================================================
# order-independent views (atomics): applied to the GPU's and the executor's outputs alike
# =====================================================================================================
def _sort_old(out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    old = out["old"].reshape(PROGRAMS, ABLOCK)
    return {
        "target": out["target"],
        "old_sorted": old.sort(dim=0).values
        if old.dtype != torch.uint32
        else old.view(torch.int32).to(torch.int64).remainder(2**32).sort(dim=0).values,
    }


def _final_only(out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"target": out["target"]}


def _xchg(out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    old = out["old"].reshape(PROGRAMS, ABLOCK)
    return {"old_and_final_sorted": torch.cat([old, out["target"].reshape(1, ABLOCK)]).sort(dim=0).values}


def _cas_winner(out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    old = out["old"].reshape(PROGRAMS, ABLOCK).to(torch.int64)
    final = out["target"].to(torch.int64)
    initial = -torch.arange(ABLOCK, dtype=torch.int64)
    expected = out["expected"].to(torch.int64)
    saw_initial = (old == initial).sum(0)
    saw_final = (old == final).sum(0)
    won = final != initial
    return {
        "per_address": torch.stack([saw_initial, saw_final, won.to(torch.int64), (expected == initial).to(torch.int64)])
    }


def _sort_tickets(out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"counter": out["counter"], "tickets_sorted": out["tickets"].sort().values}


CANON: dict[str, Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]]] = {
    "sort_old_per_address": _sort_old,
    "final_only": _final_only,
    "xchg_multiset": _xchg,
    "cas_winner": _cas_winner,
    "sort_tickets": _sort_tickets,
}


def canonical(c: Case, outputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The outputs a case compares: the raw ones, or their order-independent view."""
    return CANON[c.canon](outputs) if c.canon else outputs


def categories() -> list[str]:
    seen: dict[str, None] = {}
    for c in CASES:
        seen.setdefault(c.category, None)
    return list(seen)
