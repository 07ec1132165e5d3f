"""The three block-scaled formats of the seed: mxfp8, mxfp4 and nvfp4.

A block-scaled tensor stores low-precision *elements* plus one *scale* per block of
``vec_size`` consecutive elements along K (the reduction dimension):

========  =======================  ===========  ==========  ===================
format    element                  scale        vec_size    bits per value
========  =======================  ===========  ==========  ===================
mxfp8     e4m3 (1 byte)            e8m0         32          8 + 8/32 = 8.25
mxfp4     e2m1 (2 per byte, K)     e8m0         32          4 + 8/32 = 4.25
nvfp4     e2m1 (2 per byte, K)     e4m3         16          4 + 8/16 = 4.5
========  =======================  ===========  ==========  ===================

Layouts are the ones the kernel and :mod:`triton.tools.mxfp` use: an ``M x K`` operand's
mxfp8 data is ``float8_e4m3fn [M, K]``; fp4 data is ``uint8 [M, K // 2]`` with element
``2i`` in the low nibble and ``2i + 1`` in the high nibble; scales are ``[M, K // vec_size]``
(``uint8`` e8m0 codes, or ``float8_e4m3fn`` for nvfp4), *not* swizzled (see
:mod:`gluon_overlap.swizzle`).

Quantization rules (:func:`quantize`), per block of ``vec_size`` values with ``amax = max |x|``:

* **mx formats** (OCP MX v1.0): scale ``2**e`` with ``e = floor(log2(amax)) - emax`` where
  ``emax`` is the element format's largest exponent (e4m3: 8, e2m1: 2), clamped to e8m0's
  range ``[-127, 127]``.
* **nvfp4**: scale ``amax / 6`` rounded to nearest-even e4m3 (saturating at 448). If that
  rounds to zero although ``amax > 0`` (``amax <= 6 x 2**-10``, about 5.9e-3) the smallest positive
  e4m3 (``2**-9``) is used instead. That keeps a tiny block from flushing to zero only while its
  largest element still rounds to e2m1's smallest value 0.5 at that scale: for block maxima in
  ``(2**-11, 6 x 2**-10]``, about 4.9e-4 to 5.9e-3. A block whose ``amax <= 2**-11`` (about 4.9e-4)
  dequantizes to all zeros. (Production nvfp4 adds a per-tensor float32 scale that avoids this;
  the seed does not, and neither do we.)
* **an all-zero block** gets scale 1.0 in every format (e8m0 code 127, e4m3 ``0x38``).
* elements are ``x / scale`` rounded to nearest, ties to even, saturating at the element
  maximum (448 or 6). The division is done in float64, so rounding is exact. (A consequence
  of the OCP rule for mxfp8: a block whose amax has mantissa 1.875 maps it to 480 > 448, which
  saturates -- e4m3's largest binade stops at 1.75 x 2**8.)

Non-finite input (NaN, +-Inf, or a float64 value beyond float32's range): by default
:func:`quantize` raises ``ValueError`` naming how many values and where the first one is.
With ``nonfinite="propagate"`` it follows the OCP rule instead: each block that contains a
non-finite value gets a NaN scale (e8m0 code 255, e4m3 ``0x7F``), its elements are stored as
zero, and the whole block dequantizes to NaN; other blocks are unaffected.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from gluon_overlap.registry import FORMAT_NAMES, FORMATS, check_int
from gluon_overlap.swizzle import swizzle_scales, swizzled_shape

NONFINITE_MODES = ("raise", "propagate")

#: the 8 non-negative e2m1 magnitudes, indexed by code & 7 (codes 8..15 are the negatives)
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E8M0_BIAS = 127
E8M0_NAN = 255
E4M3_NAN = 0x7F
E4M3_ONE = 0x38
E4M3_MAX = 448.0
E2M1_MAX = 6.0


@dataclass(frozen=True)
class FormatSpec:
    """Static facts about one block-scaled format."""

    name: str
    element: str  # "e4m3" | "e2m1"
    scale: str  # "e8m0" | "e4m3"
    vec_size: int  # elements per scale
    elements_per_byte: int  # 1 | 2
    element_max: float  # 448.0 | 6.0
    torch_element_dtype: torch.dtype  # float8_e4m3fn | uint8 (packed fp4)
    torch_scale_dtype: torch.dtype  # uint8 (e8m0 codes) | float8_e4m3fn
    element_emax: int  # largest exponent of the element format (e4m3: 8, e2m1: 2)

    @property
    def bits_per_value(self) -> float:
        """Storage per element, scale overhead included (e.g. 4.25 for mxfp4)."""
        return 8 / self.elements_per_byte + 8 / self.vec_size


def _spec(name: str) -> FormatSpec:
    """The torch facts of one format; element kind, VEC_SIZE and scale come from :mod:`gluon_overlap.registry`."""
    fmt = FORMATS[name]
    fp8 = fmt.element == "e4m3"
    return FormatSpec(
        name,
        fmt.element,
        fmt.scale,
        fmt.vec_size,
        fmt.elements_per_byte,
        E4M3_MAX if fp8 else E2M1_MAX,
        torch.float8_e4m3fn if fp8 else torch.uint8,
        torch.float8_e4m3fn if fmt.scale == "e4m3" else torch.uint8,
        8 if fp8 else 2,
    )


_SPECS = {name: _spec(name) for name in FORMAT_NAMES}


def get_format(name: str, parameter: str = "format") -> FormatSpec:
    """The :class:`FormatSpec` of ``name``; ``ValueError`` for an unknown name."""
    if not isinstance(name, str) or name not in _SPECS:
        raise ValueError(f"{parameter}={name!r} is not a known format; expected one of {list(FORMAT_NAMES)}")
    return _SPECS[name]


# --- element and scale codecs ------------------------------------------------


def _e2m1_table(device: torch.device | str) -> torch.Tensor:
    mags = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=device)
    return torch.cat([mags, -mags])


def _e4m3_grid(device: torch.device | str) -> torch.Tensor:
    """The 127 finite non-negative e4m3 values, ascending; index == code (0x00..0x7E)."""
    codes = torch.arange(0, 0x7F, dtype=torch.uint8, device=device)
    return codes.view(torch.float8_e4m3fn).to(torch.float64)


def _check_codes(codes: torch.Tensor, parameter: str, limit: int) -> None:
    if not isinstance(codes, torch.Tensor) or codes.dtype != torch.uint8:
        got = codes.dtype if isinstance(codes, torch.Tensor) else type(codes).__name__
        raise ValueError(f"{parameter} must be a torch.uint8 tensor of codes, got {got}")
    if limit < 255 and codes.numel() and int(codes.max()) > limit:
        raise ValueError(f"{parameter} holds code {int(codes.max())}; codes must be <= {limit}")


def decode_e2m1(codes: torch.Tensor) -> torch.Tensor:
    """float32 values of 4-bit e2m1 codes (one code per uint8, 0..15; bit 3 is the sign)."""
    _check_codes(codes, "codes", 15)
    return torch.take(_e2m1_table(codes.device), codes.long())


def decode_e8m0(codes: torch.Tensor) -> torch.Tensor:
    """float32 values ``2**(code - 127)`` of e8m0 codes; code 0 is 2**-127, code 255 is NaN."""
    _check_codes(codes, "codes", 255)
    bits = codes.to(torch.int32) << 23
    bits = torch.where(codes == 0, torch.full_like(bits, 0x00400000), bits)  # 2**-127 is a float32 subnormal
    bits = torch.where(codes == E8M0_NAN, torch.full_like(bits, 0x7FC00000), bits)
    return bits.view(torch.float32)


def _round_to_grid(a: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
    """Index of the nearest ``grid`` value to each non-negative ``a`` (ties to the even index, saturating)."""
    n = grid.numel()
    lo = (torch.searchsorted(grid, a, right=True) - 1).clamp(0, n - 1)
    hi = (lo + 1).clamp(max=n - 1)
    d_lo = a - grid[lo]
    d_hi = grid[hi] - a
    up = (d_hi < d_lo) | ((d_hi == d_lo) & (lo % 2 == 1))
    return lo + (up & (lo < n - 1)).long()


def encode_e2m1(values: torch.Tensor) -> torch.Tensor:
    """Nearest e2m1 codes (ties to even, +-Inf and |x| > 6 saturate to +-6); ValueError for NaN."""
    _check_float(values, "values")
    if torch.isnan(values).any():
        raise ValueError("values contains NaN; e2m1 has no NaN encoding")
    v = values.to(torch.float64)
    grid = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float64, device=v.device)
    mag = _round_to_grid(v.abs(), grid)
    return (mag | (torch.signbit(v).long() << 3)).to(torch.uint8)


def encode_e4m3(values: torch.Tensor) -> torch.Tensor:
    """Nearest float8_e4m3fn values (ties to even, saturating at +-448, +-Inf -> +-448, NaN -> NaN)."""
    _check_float(values, "values")
    v = values.to(torch.float64)
    mag = _round_to_grid(v.abs().nan_to_num(nan=0.0, posinf=E4M3_MAX * 2), _e4m3_grid(v.device))
    code = mag | (torch.signbit(v).long() << 7)
    code = torch.where(torch.isnan(v), torch.full_like(code, E4M3_NAN), code)
    return code.to(torch.uint8).view(torch.float8_e4m3fn)


def pack_fp4(codes: torch.Tensor) -> torch.Tensor:
    """Pack e2m1 codes ``[..., K]`` into ``uint8 [..., K // 2]``: element 2i low nibble, 2i+1 high."""
    _check_codes(codes, "codes", 15)
    if codes.dim() == 0 or codes.shape[-1] % 2:
        raise ValueError(f"codes.shape[-1] must be even to pack two fp4 codes per byte, got {tuple(codes.shape)}")
    pairs = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    return pairs[..., 0] | (pairs[..., 1] << 4)


def unpack_fp4(packed: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`pack_fp4`: ``uint8 [..., K // 2]`` -> codes ``uint8 [..., K]``."""
    _check_codes(packed, "packed", 255)
    if packed.dim() == 0:
        raise ValueError("packed must have at least one dimension")
    pairs = torch.stack([packed & 0xF, packed >> 4], dim=-1)
    return pairs.reshape(*packed.shape[:-1], packed.shape[-1] * 2)


# --- quantized tensors --------------------------------------------------------


@dataclass(frozen=True)
class QuantizedTensor:
    """Elements and un-swizzled scales of one ``[MN, K]`` operand, quantized along K."""

    format: str
    data: torch.Tensor  # mxfp8: float8_e4m3fn [MN, K]; fp4: uint8 [MN, K // 2]
    scales: torch.Tensor  # [MN, K // vec_size]: uint8 e8m0 codes or float8_e4m3fn (nvfp4)

    def __post_init__(self) -> None:
        spec = get_format(self.format)
        for name in ("data", "scales"):
            value = getattr(self, name)
            if not isinstance(value, torch.Tensor):
                raise ValueError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if self.data.dtype != spec.torch_element_dtype or self.data.dim() != 2:
            raise ValueError(
                f"data must be a 2-D {spec.torch_element_dtype} tensor for {spec.name}, "
                f"got {self.data.dtype} with shape {tuple(self.data.shape)}"
            )
        mn, k = self.shape
        if k % spec.vec_size:
            raise ValueError(
                f"K={k} ({tuple(self.data.shape)} data) must be a multiple of {spec.name}'s scale block "
                f"vec_size={spec.vec_size}: every scale covers {spec.vec_size} elements"
            )
        want = (mn, k // spec.vec_size)
        if self.scales.dtype != spec.torch_scale_dtype or tuple(self.scales.shape) != want:
            raise ValueError(
                f"scales must be a {spec.torch_scale_dtype} tensor of shape {want} for {spec.name} "
                f"(K={k}, vec_size={spec.vec_size}), got {self.scales.dtype} {tuple(self.scales.shape)}"
            )

    @property
    def spec(self) -> FormatSpec:
        return get_format(self.format)

    @property
    def shape(self) -> tuple[int, int]:
        """Logical ``(MN, K)`` (the packed fp4 data is half as wide)."""
        return int(self.data.shape[0]), int(self.data.shape[1]) * self.spec.elements_per_byte

    @property
    def nbytes(self) -> int:
        """Bytes of storage: elements plus scales."""
        return self.data.numel() * self.data.element_size() + self.scales.numel() * self.scales.element_size()

    def element_values(self) -> torch.Tensor:
        """float32 ``[MN, K]`` element values before scaling."""
        if self.spec.element == "e4m3":
            return self.data.to(torch.float32)
        return decode_e2m1(unpack_fp4(self.data))

    def scale_values(self) -> torch.Tensor:
        """float32 ``[MN, K // vec_size]`` scale values."""
        if self.spec.scale == "e8m0":
            return decode_e8m0(self.scales)
        return self.scales.to(torch.float32)

    def dequantize(self) -> torch.Tensor:
        return dequantize(self)


def dequantize(q: QuantizedTensor) -> torch.Tensor:
    """float32 ``[MN, K]``: each element times its block's scale (exact; a NaN scale gives NaN)."""
    return q.element_values() * q.scale_values().repeat_interleave(q.spec.vec_size, dim=1)


def _check_float(x: object, parameter: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{parameter} must be a torch.Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise ValueError(
            f"{parameter} must have a floating-point dtype (float16/bfloat16/float32/float64), got {x.dtype}"
        )


def quantize(x: torch.Tensor, format: str, *, nonfinite: str = "raise") -> QuantizedTensor:
    """Quantize a real ``[MN, K]`` float tensor along K (the last dim); see the module docstring for the rules.

    ``nonfinite``: ``"raise"`` (default) rejects NaN/Inf with a ValueError; ``"propagate"`` gives the
    affected blocks a NaN scale.
    """
    spec = get_format(format)
    _check_float(x, "x")
    if x.device.type == "meta":
        raise ValueError(
            "x is on the 'meta' device (a shape without values); quantize needs the values -- use a CPU or CUDA tensor"
        )
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D [MN, K] (quantized along K), got rank {x.dim()} shape {tuple(x.shape)}")
    if nonfinite not in NONFINITE_MODES:
        raise ValueError(f"nonfinite={nonfinite!r} must be one of {list(NONFINITE_MODES)}")
    mn, k = x.shape
    if k == 0 or k % spec.vec_size:
        raise ValueError(
            f"K={k} (x.shape[1]) must be a positive multiple of {spec.name}'s scale block vec_size={spec.vec_size}"
        )
    nblocks = k // spec.vec_size

    finite = torch.isfinite(x.to(torch.float32))  # float64 values beyond float32's range count as Inf
    if not bool(finite.all()):
        if nonfinite == "raise":
            bad = (~finite).nonzero()
            r, c = (int(v) for v in bad[0])
            raise ValueError(
                f"x contains {bad.shape[0]} non-finite value(s) (first x[{r}, {c}] = {float(x[r, c])}); "
                "block-scaled formats cannot encode them -- clean the input or pass nonfinite='propagate' "
                "to get NaN block scales"
            )
    block_bad = ~finite.reshape(mn, nblocks, spec.vec_size).all(dim=-1)

    xb = x.to(torch.float64).reshape(mn, nblocks, spec.vec_size)
    xb = torch.where(block_bad[..., None], torch.zeros_like(xb), xb)
    amax = xb.abs().amax(dim=-1)
    zero_block = amax == 0

    if spec.scale == "e8m0":
        _, exp = torch.frexp(amax)  # amax = m * 2**exp with m in [0.5, 1): floor(log2(amax)) = exp - 1
        e = (exp.long() - 1 - spec.element_emax).clamp(-E8M0_BIAS, E8M0_BIAS)
        e = torch.where(zero_block, torch.zeros_like(e), e)
        scale_code = (e + E8M0_BIAS).to(torch.uint8)
        scale = decode_e8m0(scale_code).to(torch.float64)
        scale_code = torch.where(block_bad, torch.full_like(scale_code, E8M0_NAN), scale_code)
        scales = scale_code
    else:
        idx = _round_to_grid(amax / spec.element_max, _e4m3_grid(x.device))
        idx = torch.where((idx == 0) & ~zero_block, torch.ones_like(idx), idx)  # underflow -> 2**-9, not 0
        idx = torch.where(zero_block, torch.full_like(idx, E4M3_ONE), idx)
        scale_code = idx.to(torch.uint8)
        scale = scale_code.view(torch.float8_e4m3fn).to(torch.float64)
        scale_code = torch.where(block_bad, torch.full_like(scale_code, E4M3_NAN), scale_code)
        scales = scale_code.view(torch.float8_e4m3fn)

    q = (xb / scale[..., None]).reshape(mn, k)
    if spec.element == "e4m3":
        data = encode_e4m3(q)
    else:
        data = pack_fp4(encode_e2m1(q))
    return QuantizedTensor(spec.name, data, scales)


# --- random operands and problems -------------------------------------------

#: the seed draws scales with MXScaleTensor.random(low=1/128, high=2): e8m0 codes 120..128
RANDOM_SCALE_CODES = (E8M0_BIAS - 7, E8M0_BIAS + 1)


def _check_positive_int(value: object, parameter: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{parameter}={value!r} must be a positive int")
    return value


def random_quantized(
    mn: int, k: int, format: str, *, generator: torch.Generator, device: torch.device | str = "cpu"
) -> QuantizedTensor:
    """Like the seed's ``random_quantized_tensor``: uniform random e2m1 values, scales 2**-7 .. 2**1.

    Random numbers come from ``generator`` (on its own device) and are then moved to ``device``, so a
    CPU generator gives the same operand on every device. For mxfp8 the elements are e2m1 values
    stored as e4m3 (exactly, as in the seed).
    """
    spec = get_format(format)
    _check_positive_int(mn, "mn")
    _check_positive_int(k, "k")
    if k % spec.vec_size:
        raise ValueError(f"k={k} must be a multiple of {spec.name}'s scale block vec_size={spec.vec_size}")
    gen_device = generator.device
    codes = torch.randint(0, 16, (mn, k), generator=generator, device=gen_device, dtype=torch.uint8)
    lo, hi = RANDOM_SCALE_CODES
    scale_codes = torch.randint(
        lo, hi + 1, (mn, k // spec.vec_size), generator=generator, device=gen_device, dtype=torch.uint8
    )
    codes, scale_codes = codes.to(device), scale_codes.to(device)
    if spec.element == "e4m3":
        data = decode_e2m1(codes).to(torch.float8_e4m3fn)
    else:
        data = pack_fp4(codes)
    if spec.scale == "e8m0":
        scales = scale_codes
    else:
        scales = decode_e8m0(scale_codes).to(torch.float8_e4m3fn)  # powers of two: exact in e4m3
    return QuantizedTensor(spec.name, data, scales)


def reference_matmul(a_ref: torch.Tensor, b_ref: torch.Tensor) -> torch.Tensor:
    """``a_ref @ b_ref.T`` accumulated in float64, returned as float32 ``[M, N]`` (A is M x K, B is N x K)."""
    for name, t in (("a_ref", a_ref), ("b_ref", b_ref)):
        _check_float(t, name)
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
    if a_ref.shape[1] != b_ref.shape[1]:
        raise ValueError(
            f"a_ref is {tuple(a_ref.shape)} and b_ref is {tuple(b_ref.shape)}: both must be "
            "K-major with the same K (C = A @ B.T)"
        )
    return (a_ref.to(torch.float64) @ b_ref.to(torch.float64).T).to(torch.float32)


@dataclass(frozen=True)
class Problem:
    """One matmul problem as the kernel receives it, plus its float references."""

    a: QuantizedTensor
    b: QuantizedTensor
    a_scale_swizzled: torch.Tensor
    b_scale_swizzled: torch.Tensor
    a_ref: torch.Tensor
    b_ref: torch.Tensor
    reference: torch.Tensor

    @property
    def m(self) -> int:
        return self.a.shape[0]

    @property
    def n(self) -> int:
        return self.b.shape[0]

    @property
    def k(self) -> int:
        return self.a.shape[1]


def random_problem(
    m: int, n: int, k: int, a_format: str, b_format: str, seed: int = 0, device: torch.device | str = "cpu"
) -> Problem:
    """Like the seed's ``make_problem``: random A ``[m, k]`` and B ``[n, k]``, swizzled scales, reference.

    Deterministic in ``seed`` and identical on CPU and CUDA (a seeded CPU ``torch.Generator`` draws the
    codes). The reference is exact for these inputs: every product and partial sum fits float64.
    """
    get_format(a_format, "a_format")
    get_format(b_format, "b_format")
    for name, v in (("m", m), ("n", n), ("k", k)):
        _check_positive_int(v, name)
    for name, fmt in (("a_format", a_format), ("b_format", b_format)):
        vec = get_format(fmt).vec_size
        if k % vec:
            raise ValueError(f"k={k} must be a multiple of {name}={fmt!r}'s scale block vec_size={vec}")
    check_int("seed", seed, 0, 2**63)  # a 64-bit seed, as the command line's --problem-seed
    generator = torch.Generator(device="cpu")
    generator.manual_seed(seed)
    a = random_quantized(m, k, a_format, generator=generator, device=device)
    b = random_quantized(n, k, b_format, generator=generator, device=device)
    a_ref, b_ref = a.dequantize(), b.dequantize()
    return Problem(
        a, b, swizzle_scales(a.scales), swizzle_scales(b.scales), a_ref, b_ref, reference_matmul(a_ref, b_ref)
    )


def meta_operands(a_format: str, b_format: str, m: int, n: int, k: int) -> tuple[torch.Tensor, ...]:
    """``(a_data, b_data, a_scale_swizzled, b_scale_swizzled, c)`` of an ``m x n x k`` problem on ``device="meta"``
    (shapes and dtypes only, no memory): what descriptors are built over when no data moves (cross-compiling, the
    timing model)."""
    out = []
    for fmt, rows in ((a_format, m), (b_format, n)):
        spec = get_format(fmt)
        data = torch.empty(rows, k // spec.elements_per_byte, dtype=spec.torch_element_dtype, device="meta")
        scales = torch.empty(swizzled_shape(rows, k // spec.vec_size), dtype=spec.torch_scale_dtype, device="meta")
        out.append((data, scales))
    c = torch.empty(m, n, dtype=torch.float16, device="meta")
    return out[0][0], out[1][0], out[0][1], out[1][1], c
