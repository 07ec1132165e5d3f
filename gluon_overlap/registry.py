"""The one registry of block-scaled formats and format pairs, and the argument checks every module shares.

Torch-free, imported by :mod:`gluon_overlap.tmem` (and through it by the kernel, the compile checks,
the CPU twin and the explorer), :mod:`gluon_overlap.limits`, :mod:`gluon_overlap.formats` and the
docs' tables.  Adding a format pair means: a row in :data:`PAIRS` (and the kernel, if its code must
change), then the tests.

=========  ========  =========  ==========  =================  ==========================
format     element   bits       VEC_SIZE    scale              MMA kind (tcgen05)
=========  ========  =========  ==========  =================  ==========================
mxfp8      e4m3      8          32          e8m0 (power of 2)  ``f8f6f4`` (``mxf8f6f4``)
mxfp4      e2m1      4          32          e8m0 (power of 2)  ``mxf4`` (``f8f6f4`` padded
                                                               when paired with mxfp8)
nvfp4      e2m1      4          16          e4m3               ``mxf4nvf4``
=========  ========  =========  ==========  =================  ==========================
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    """Static, torch-free facts of one block-scaled format."""

    name: str
    element: str  #: MMA element kind: "e4m3" | "e2m1"
    element_bits: int  #: 8 | 4
    vec_size: int  #: elements per scale
    scale: str  #: scale encoding: "e8m0" | "e4m3"
    mma_kind: str  #: the tcgen05 kind a pair of this format alone uses

    @property
    def elements_per_byte(self) -> int:
        return 8 // self.element_bits


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("mxfp8", "e4m3", 8, 32, "e8m0", "mxf8f6f4"),
        Format("mxfp4", "e2m1", 4, 32, "e8m0", "mxf4"),
        Format("nvfp4", "e2m1", 4, 16, "e4m3", "mxf4nvf4"),
    )
}
FORMAT_NAMES: tuple[str, ...] = tuple(FORMATS)


@dataclass(frozen=True)
class Pair:
    """One (A, B) format pair the kernel builds."""

    a: str
    b: str
    #: the fp4 operand of an fp8 x fp4 pair is loaded padded to one byte per element (``f8f6f4`` kind)
    padded: tuple[str, ...] = ()


PAIRS: tuple[Pair, ...] = (
    Pair("mxfp8", "mxfp8"),
    Pair("mxfp8", "mxfp4", padded=("B",)),
    Pair("mxfp4", "mxfp4"),
    Pair("nvfp4", "nvfp4"),
)
#: the format pairs the kernel supports (one name, used everywhere)
SUPPORTED_PAIRS: tuple[tuple[str, str], ...] = tuple((p.a, p.b) for p in PAIRS)

#: scale-vector size and MMA element kind of each format (views of :data:`FORMATS`)
FORMAT_VEC_SIZE: dict[str, int] = {n: f.vec_size for n, f in FORMATS.items()}
FORMAT_ELEMENT_KIND: dict[str, str] = {n: f.element for n, f in FORMATS.items()}


# --- shared argument checks ------------------------------------------------------------------------
def check_format(name: object, parameter: str = "format") -> str:
    """``name`` if it is one of the block-scaled formats, else ``ValueError`` naming the choices."""
    if not isinstance(name, str) or name not in FORMATS:
        raise ValueError(f"{parameter}={name!r} is not a known format; expected one of {list(FORMAT_NAMES)}")
    return name


def check_int(parameter: str, value: object, low: int | None = None, high: int | None = None) -> int:
    """``value`` if it is an ``int`` (not a bool) with ``low <= value < high``; ``ValueError`` naming the
    parameter, the value and the rule otherwise (``high`` is exclusive, ``None`` means unbounded)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{parameter}={value!r} must be an integer")
    value = int(value)  # numpy integers too
    if low is not None and value < low:
        rule = "positive" if low == 1 else "non-negative" if low == 0 else f"at least {low}"
        raise ValueError(f"{parameter}={value} must be {rule}")
    if high is not None and value >= high:
        raise ValueError(f"{parameter}={value} must be below {high}")
    return value


def check_positive_int(parameter: str, value: object) -> int:
    """``value`` if it is a positive ``int`` (``ValueError`` naming parameter, value and rule otherwise)."""
    return check_int(parameter, value, 1)


def check_bool(parameter: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{parameter}={value!r} must be True or False")
    return value


def check_number(parameter: str, value: object, low: float = 0.0, *, low_inclusive: bool = True) -> float:
    """A finite real number ``>= low`` (``> low`` when not ``low_inclusive``)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{parameter}={value!r} must be a number")
    if not math.isfinite(value):
        raise ValueError(f"{parameter}={value} must be finite")
    if value < low or (not low_inclusive and value == low):
        raise ValueError(f"{parameter}={value} must be {'at least' if low_inclusive else 'above'} {low:g}")
    return float(value)


#: the largest seed (``torch.Generator.manual_seed`` takes a signed 64-bit int)
MAX_SEED = 2**63 - 1


def check_seed(parameter: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{parameter}={value!r} must be an integer")
    if not 0 <= value <= MAX_SEED:
        raise ValueError(f"{parameter}={value} must be in 0 .. 2**63 - 1 (a 64-bit seed)")
    return value
