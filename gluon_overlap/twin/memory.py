"""The executor's memories: shared memory, tensor memory, mbarrier slots, registers, TMA descriptors.

Gluon code names *cluster-wide* (logical) tensors: ``a_bufs`` is ``[5, 256, BLOCK_K]`` although each
CTA of the pair holds only its 128 rows.  A layout's CGA bases say how the logical tensor is spread
over the CTAs (SEMANTICS.md section 3): a non-zero basis splits that dimension (CTA ``r`` holds block
``r``), an all-zero basis duplicates the tensor in every CTA.  Here every allocation keeps one
``torch`` tensor per CTA with the CTA's own (local) shape, and a view is the allocation plus the
transforms the kernel applied (``index``, ``slice``, ``permute``, ``reshape``), evaluated when an
operation actually touches the bytes.

Shared memory starts as garbage (NaN for floats, ``0x7f`` for bytes), tensor memory as NaN, as on
the hardware where nothing clears them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import triton.experimental.gluon.language as gl

from gluon_overlap.twin.races import Shadow

#: gl dtype name -> torch dtype of the storage
_TORCH_DTYPES = {
    "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2, "fp16": torch.float16, "bf16": torch.bfloat16,
    "fp32": torch.float32, "fp64": torch.float64,
}
_GL_DTYPES = {
    torch.uint8: gl.uint8, torch.int8: gl.int8, torch.int16: gl.int16, torch.int32: gl.int32, torch.int64: gl.int64,
    torch.float8_e4m3fn: gl.float8e4nv, torch.float8_e5m2: gl.float8e5, torch.float16: gl.float16,
    torch.bfloat16: gl.bfloat16, torch.float32: gl.float32, torch.float64: gl.float64,
}


class ExecutorError(ValueError):
    """The kernel asked the executor for something it cannot do (an unimplemented builtin, a view it
    cannot follow); the message names the builtin and the kernel line."""


def torch_dtype(dtype: Any) -> torch.dtype:
    name = getattr(dtype, "name", str(dtype))
    if name not in _TORCH_DTYPES:
        raise ExecutorError(f"the executor has no storage for dtype {dtype}")
    return _TORCH_DTYPES[name]


def gl_dtype(dtype: torch.dtype) -> Any:
    if dtype not in _GL_DTYPES:
        raise ExecutorError(f"the executor has no Gluon dtype for torch {dtype}")
    return _GL_DTYPES[dtype]


def garbage(shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    """What uninitialized memory holds here: NaN for floating point, 0x7f bytes otherwise."""
    if dtype.is_floating_point and dtype.itemsize >= 2:
        return torch.full(shape, float("nan"), dtype=dtype)
    return torch.full(shape, 0x7F, dtype=torch.uint8).view(dtype) if dtype.itemsize == 1 else \
        torch.full(shape, 0x7F7F7F7F if dtype.itemsize >= 4 else 0x7F7F, dtype=dtype)


_SPLIT_CACHE: dict[tuple[int, int, int], tuple[Any, list[int]]] = {}


def cga_split_dims(layout: Any, rank: int, num_ctas: int) -> list[int]:
    """Dimensions of a rank-``rank`` tensor that ``layout``'s CGA bases split across the CTAs
    (the bases describe the trailing dimensions; a leading stage dimension is never split).

    Memoized per layout object: reading ``cga_layout`` off a Gluon layout is slow, and views ask
    for it on every access (a fifth of a large run's time before)."""
    key = (id(layout), rank, num_ctas)
    hit = _SPLIT_CACHE.get(key)
    if hit is not None and hit[0] is layout:
        return list(hit[1])
    dims = _cga_split_dims(layout, rank, num_ctas)
    _SPLIT_CACHE[key] = (layout, dims)  # holding the layout keeps its id from being reused
    return list(dims)


def _cga_split_dims(layout: Any, rank: int, num_ctas: int) -> list[int]:
    bases = [list(b) for b in (getattr(layout, "cga_layout", None) or [])]
    if num_ctas == 1 or not bases:
        return []
    dims = []
    for basis in bases[: int(math.log2(num_ctas))]:
        offset = rank - len(basis)
        nonzero = [offset + i for i, v in enumerate(basis) if v != 0]
        if len(nonzero) > 1 or any(basis[i - offset] not in (0, 1) for i in nonzero):
            raise ExecutorError(f"the executor supports CGA bases with one unit entry, got {bases}")
        dims.extend(nonzero)
    return dims


def local_shape(shape: list[int], split: list[int]) -> list[int]:
    out = list(shape)
    for d in split:
        if out[d] % 2:
            raise ExecutorError(f"dimension {d} of shape {shape} is split across 2 CTAs but is odd")
        out[d] //= 2
    return out


# =====================================================================================
# shared memory
# =====================================================================================
class SmemAlloc:
    """One ``allocate_shared_memory`` of a cluster: a local tensor and an access history per CTA."""

    def __init__(self, name: str, dtype: Any, shape: list[int], layout: Any, num_ctas: int):
        self.name, self.dtype, self.shape, self.layout = name, dtype, list(shape), layout
        self.split = cga_split_dims(layout, len(shape), num_ctas)
        self.local_shape = local_shape(self.shape, self.split)
        tdt = torch_dtype(dtype)
        self.storage = [garbage(self.local_shape, tdt) for _ in range(num_ctas)]
        # one access-history cell per leading index (a pipeline stage), unless that dimension is split
        cells = self.shape[0] if len(self.shape) > 1 and 0 not in self.split else 1
        self.shadows = [Shadow(f"smem {name} (cta{c})", cells) for c in range(num_ctas)]
        self.num_ctas = num_ctas

    @property
    def nbytes_per_cta(self) -> int:
        return math.prod(self.local_shape) * self.storage[0].element_size()


class SmemView:
    """A shared-memory descriptor: an allocation and the transforms applied to it."""

    def __init__(self, alloc: SmemAlloc, transforms: tuple = (), shape: list[int] | None = None,
                 dtype: Any = None, layout: Any = None, valid: bool = True):
        self.alloc = alloc
        self.transforms = transforms
        self.shape = list(alloc.shape if shape is None else shape)
        self.dtype = alloc.dtype if dtype is None else dtype
        self.layout = alloc.layout if layout is None else layout
        self.valid = valid  # False after an out-of-bounds index / slice (reported when it was made)

    def __repr__(self) -> str:
        return f"smem {self.alloc.name}{list(self.shape)}"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes_per_cta(self) -> int:
        split = self.split_dims()
        return math.prod(local_shape(self.shape, split)) * torch_dtype(self.dtype).itemsize

    @property
    def type(self) -> SmemView:
        return self

    # --- where the view sits in the allocation ---------------------------------------
    def cells(self) -> tuple[int, int]:
        """The allocation's access-history cells this view covers."""
        n = self.alloc.shadows[0].size
        if n == 1 or not self.transforms:
            return 0, n
        op = self.transforms[0]
        if op[0] == "index":
            return op[1], op[1] + 1
        if op[0] == "slice" and op[3] == 0:
            return op[1], op[1] + op[2]
        return 0, n

    def split_dims(self) -> list[int]:
        """Split dimensions of the view (only index / slice views keep track of them)."""
        dims = list(self.alloc.split)
        for op in self.transforms:
            if op[0] == "index":
                dims = [d - 1 for d in dims]
            elif op[0] in ("permute", "reshape"):
                return cga_split_dims(self.layout, len(self.shape), self.alloc.num_ctas) if op[0] == "permute" \
                    else []
        return dims

    def local(self, cta: int) -> torch.Tensor:
        """CTA ``cta``'s own part of the view, as a writable torch view of its storage.

        Only ``index`` / ``slice`` views can be written (that is what TMA and ``store`` target)."""
        t = self.alloc.storage[cta]
        dims = list(self.alloc.split)
        for op in self.transforms:
            if op[0] == "index":
                t = t[op[1]]
                dims = [d - 1 for d in dims]
            elif op[0] == "slice":
                _, start, length, dim = op
                if dim in dims:
                    raise ExecutorError("writing through a slice of a CTA-split dimension is not supported")
                t = t.narrow(dim, start, length)
            else:
                raise ExecutorError(f"writing through a {op[0]} view of shared memory is not supported")
        return t

    def logical(self, cta: int) -> torch.Tensor:
        """The whole (cluster-wide) view as CTA ``cta``'s operation sees it: split dimensions are
        gathered from every CTA, duplicated ones read from ``cta``'s own copy."""
        alloc = self.alloc
        transforms = list(self.transforms)
        parts = alloc.storage
        split = list(alloc.split)
        # apply a leading index first, per CTA, so that one stage is gathered, not all of them
        if transforms and transforms[0][0] == "index" and 0 not in split:
            i = transforms.pop(0)[1]
            parts = [p[i] for p in parts]
            split = [d - 1 for d in split]
        if split:
            t = parts[0]
            for d in split:  # two CTAs: one split dimension
                t = torch.cat([parts[0], parts[1]], dim=d)
        else:
            t = parts[cta]
        for op in transforms:
            if op[0] == "index":
                t = t[op[1]]
            elif op[0] == "slice":
                t = t.narrow(op[3], op[1], op[2])
            elif op[0] == "permute":
                t = t.permute(*op[1])
            elif op[0] == "reshape":
                t = t.reshape(*op[1])
            elif op[0] == "reinterpret":
                t = t.contiguous().view(op[1]).reshape(*op[2])
        return t


# =====================================================================================
# tensor memory
# =====================================================================================
@dataclass(frozen=True)
class Columns:
    """A half-open range of 32-bit TMEM columns (the shape of :class:`gluon_overlap.tmem.Window`)."""

    offset: int
    cols: int

    @property
    def end(self) -> int:
        return self.offset + self.cols


class TmemAlloc:
    """``allocate_tensor_memory``: per CTA 128 lanes x ``cols`` 32-bit columns, starting as NaN."""

    LANES = 128

    def __init__(self, name: str, dtype: Any, shape: list[int], layout: Any, num_ctas: int):
        self.name, self.dtype, self.shape, self.layout = name, dtype, list(shape), layout
        self.two_ctas = bool(getattr(layout, "two_ctas", False))
        rows = shape[-2]
        self.split = cga_split_dims(layout, 2, num_ctas)
        local_rows = rows // 2 if 0 in self.split else rows
        if local_rows > self.LANES:
            raise ExecutorError(f"a TMEM allocation of {local_rows} rows per CTA does not fit the 128 lanes")
        self.buffers = shape[0] if len(shape) == 3 else 1
        self.cols = self.buffers * shape[-1]
        self.storage = [torch.full((self.LANES, self.cols), float("nan"), dtype=torch.float32)
                        for _ in range(num_ctas)]
        self.bytes = [s.view(torch.uint8) for s in self.storage]
        self.shadows = [Shadow(f"TMEM (cta{c})", self.cols) for c in range(num_ctas)]


class TmemType:
    def __init__(self, layout: Any):
        self.layout = layout


class TmemView:
    """A tensor-memory descriptor: columns ``[offset, offset + cols)`` of an allocation, holding an
    accumulator (``kind="acc"``) or block scales (``kind="scales"``)."""

    def __init__(self, alloc: TmemAlloc, offset: int, shape: list[int], dtype: Any, layout: Any, kind: str = "acc"):
        self.alloc, self.offset, self.shape, self.dtype, self.layout, self.kind = \
            alloc, offset, list(shape), dtype, layout, kind

    def __repr__(self) -> str:
        return f"TMEM[{self.offset}, {self.offset + self.columns.cols})"

    @property
    def type(self) -> TmemType:
        return TmemType(self.layout)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def split(self) -> bool:
        """Rows split across the CTAs (CTA ``r`` holds rows ``r * R / 2 ...``)."""
        return 0 in cga_split_dims(self.layout, 2, len(self.alloc.storage))

    def local_rows(self) -> int:
        return self.shape[-2] // 2 if self.split else self.shape[-2]

    @property
    def columns(self) -> Columns:
        if self.kind == "scales":
            # 4 columns per packed chunk of 128 rows x 4 k-scales (tcgen05.cp 32x128b.warpx4)
            return Columns(self.offset, self.local_rows() * self.shape[-1] // 128)
        width = self.shape[-1] * torch_dtype(self.dtype).itemsize // 4
        return Columns(self.offset, max(1, width))


# =====================================================================================
# mbarriers
# =====================================================================================
class BarrierAlloc:
    """A batch of mbarriers; ``pair`` ones exist once per cluster, in the lead CTA (SEMANTICS.md 3)."""

    def __init__(self, name: str, batch: int, pair: bool, num_ctas: int):
        self.name, self.batch, self.pair = name, batch, pair and num_ctas > 1
        # [cta][index] -> engine Barrier once initialized (a pair barrier only has a cta-0 copy)
        self.copies: list[list[Any]] = [[None] * batch for _ in range(num_ctas)]
        self.shape = [batch]


class BarrierRef:
    """``bars.index(i)``: one mbarrier of a batch."""

    def __init__(self, alloc: BarrierAlloc, index: int, valid: bool = True):
        self.alloc, self.index_, self.valid = alloc, index, valid
        self.shape = [1]

    def __repr__(self) -> str:
        return f"{self.alloc.name}[{self.index_}]"

    def copy_for(self, cta: int) -> Any:
        """The engine barrier an arrive / expect / wait of CTA ``cta`` reaches (None: not initialized)."""
        return self.alloc.copies[0 if self.alloc.pair else cta][self.index_]


class BarrierBatch:
    """The descriptor ``allocate_mbarrier(batch=n)`` returns."""

    def __init__(self, alloc: BarrierAlloc):
        self.alloc = alloc
        self.shape = [alloc.batch]


# =====================================================================================
# registers and descriptors
# =====================================================================================
class RegTensor:
    """A distributed register tensor: CTA-local values plus the logical (cluster-wide) shape."""

    def __init__(self, local: torch.Tensor, shape: list[int], dtype: Any):
        self.local, self.shape, self.dtype = local, list(shape), dtype

    def __repr__(self) -> str:
        return f"RegTensor({self.dtype}, {self.shape})"

    @property
    def type(self) -> RegTensor:
        return self

    def to(self, dtype: Any, **_: Any) -> RegTensor:
        return RegTensor(self.local.to(torch_dtype(dtype)), self.shape, dtype)

    def _binary(self, other: Any, fn: Any) -> RegTensor:
        value = other.local if isinstance(other, RegTensor) else other
        return RegTensor(fn(self.local, value), self.shape, self.dtype)

    def __add__(self, other):
        return self._binary(other, torch.add)

    __radd__ = __add__

    def __mul__(self, other):
        return self._binary(other, torch.mul)

    __rmul__ = __mul__

    def __sub__(self, other):
        return self._binary(other, torch.sub)

    def __truediv__(self, other):
        return self._binary(other, torch.div)


class DeviceDescriptor:
    """What a kernel sees of a host :class:`TensorDescriptor`: dtype, shapes, layout, bytes per CTA."""

    def __init__(self, host: Any, name: str, num_ctas: int):
        self.host, self.name = host, name
        self.base: torch.Tensor = host.base
        self.dtype = gl_dtype(self.base.dtype)
        self.shape = [int(s) for s in host.shape]
        self.strides = [int(s) for s in host.strides]
        self.block_shape = [int(b) for b in host.block_shape]
        self.layout = host.layout
        self.split = cga_split_dims(self.layout, len(self.block_shape), num_ctas)
        self.local_block = local_shape(self.block_shape, self.split)

    def __repr__(self) -> str:
        return f"descriptor {self.name}{self.block_shape}"

    @property
    def nbytes_per_cta(self) -> int:
        return math.prod(self.local_block) * self.base.element_size()

    def read_block(self, coord: list[int], shape: list[int]) -> torch.Tensor:
        """The ``shape`` box at ``coord``, zero where it leaves the tensor (TMA out-of-bounds fill)."""
        out = torch.zeros(shape, dtype=self.base.dtype)
        src, dst = [], []
        for c, n, size in zip(coord, shape, self.shape, strict=True):
            lo, hi = max(c, 0), min(c + n, size)
            if hi <= lo:
                return out
            src.append(slice(lo, hi))
            dst.append(slice(lo - c, hi - c))
        out[tuple(dst)] = self.base[tuple(src)]
        return out

    def clip(self, coord: list[int], shape: list[int]) -> tuple[slice, ...] | None:
        """The part of the tensor a ``shape`` box at ``coord`` covers (None: it lies wholly outside)."""
        out = []
        for c, n, size in zip(coord, shape, self.shape, strict=True):
            lo, hi = max(c, 0), min(c + n, size)
            if hi <= lo:
                return None
            out.append(slice(lo, hi))
        return tuple(out)

    def write_block(self, coord: list[int], value: torch.Tensor) -> None:
        """Store ``value`` at ``coord``; what falls outside the tensor is dropped (TMA stores clip)."""
        src, dst = [], []
        for c, n, size in zip(coord, value.shape, self.shape, strict=True):
            lo, hi = max(c, 0), min(c + n, size)
            if hi <= lo:
                return
            dst.append(slice(lo, hi))
            src.append(slice(lo - c, hi - c))
        self.base[tuple(dst)] = value[tuple(src)].to(self.base.dtype)
