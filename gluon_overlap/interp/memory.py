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

import functools
import math
from dataclasses import dataclass
from typing import Any

import torch

from gluon_overlap.interp import ops
from gluon_overlap.interp.context import ExecutorError, caller_line, current, emit, where
from gluon_overlap.interp.races import IntervalShadow, Shadow
from gluon_overlap.interp.registry import builtin
from gluon_overlap.interp.tensors import RegTensor, gl_dtype, torch_dtype

__all__ = [
    "BarrierAlloc",
    "BarrierBatch",
    "BarrierRef",
    "Columns",
    "DeviceDescriptor",
    "ExecutorError",
    "OutOfRange",
    "RegTensor",
    "SmemAlloc",
    "SmemView",
    "TmemAlloc",
    "TmemView",
    "gl_dtype",
    "torch_dtype",
]


class OutOfRange:
    """Why a view (``bufs.index(i)``, ``bars.index(i)``, a slice) lies outside its allocation, and the kernel line
    that computed it.  Computing such a view is not a hazard -- a kernel may compute an index it only uses under a
    false predicate; the hazard is reported at the view's first *use*, naming both lines (once per view)."""

    __slots__ = ("kind", "detail", "line", "reported")

    def __init__(self, kind: str, detail: str):
        self.kind, self.detail, self.line, self.reported = kind, detail, caller_line(), False


def garbage(shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    """What uninitialized memory holds here: NaN for floating point, 0x7f bytes otherwise."""
    if dtype.is_floating_point and dtype.itemsize >= 2:
        return torch.full(shape, float("nan"), dtype=dtype)
    return (
        torch.full(shape, 0x7F, dtype=torch.uint8).view(dtype)
        if dtype.itemsize == 1
        else torch.full(shape, 0x7F7F7F7F if dtype.itemsize >= 4 else 0x7F7F, dtype=dtype)
    )


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
class Payload:
    """What the data backend needs to give an operation its effect (``op.x``): the views, values, epochs."""

    def __init__(self, **fields: Any):
        self.__dict__.update(fields)


def _dtype_name(dtype: Any) -> str:
    return getattr(dtype, "name", str(dtype))


class SmemAlloc:
    """One ``allocate_shared_memory`` of a cluster: a local tensor and an access history per CTA."""

    def __init__(self, name: str, dtype: Any, shape: list[int], layout: Any, num_ctas: int):
        self.name, self.dtype, self.shape, self.layout = name, dtype, list(shape), layout
        self.split = cga_split_dims(layout, len(shape), num_ctas)
        self.local_shape = local_shape(self.shape, self.split)
        tdt = torch_dtype(dtype)
        self.storage = [garbage(self.local_shape, tdt) for _ in range(num_ctas)]
        # one access history per CTA over the elements of its local storage (runs of equal history are kept
        # as intervals): two partitions writing disjoint slices of one buffer are not a race
        numel = math.prod(self.local_shape)
        self.shadows = [IntervalShadow(f"smem {name} (cta{c})", numel) for c in range(num_ctas)]
        self.num_ctas = num_ctas
        #: elements per leading index (a pipeline stage) of the local storage, for reports
        self.stage_elems = math.prod(self.local_shape[1:]) if len(self.shape) > 1 and 0 not in self.split else numel

    def stage_of(self, elem: int) -> int:
        """The leading index (pipeline stage) of local element ``elem`` (0 for a rank-1 or split buffer)."""
        return elem // self.stage_elems if self.stage_elems else 0

    @property
    def nbytes_per_cta(self) -> int:
        return math.prod(self.local_shape) * self.storage[0].element_size()


#: (local shape, split dims, transforms) -> the runs of local elements a view covers
_REGIONS: dict[tuple, tuple[tuple[int, int], ...]] = {}


def _regions(shape: list[int], split: list[int], transforms: tuple) -> tuple[tuple[int, int], ...]:
    """Runs ``[lo, hi)`` of the flat local elements a view covers: the view's transforms applied to the element
    indices of the local storage.  Where a transform cannot be followed locally (an index or slice of a CTA-split
    dimension, a reshape or reinterpret), the view is taken to cover what it covered before it (a superset)."""
    idx = torch.arange(math.prod(shape), dtype=torch.int64).reshape(shape)
    dims = list(split)
    for op in transforms:
        if op[0] == "index" and 0 not in dims:
            idx = idx[op[1]]
            dims = [d - 1 for d in dims]
        elif op[0] == "slice" and op[3] not in dims:
            idx = idx.narrow(op[3], op[1], op[2])
        elif op[0] == "permute":
            idx = idx.permute(*op[1])
            dims = [op[1].index(d) for d in dims]
        else:
            break
    flat = torch.unique(idx.reshape(-1))  # sorted
    if flat.numel() == 0:
        return ()
    breaks = torch.nonzero(flat[1:] != flat[:-1] + 1).reshape(-1)
    starts = [int(flat[0])] + [int(flat[b + 1]) for b in breaks]
    ends = [int(flat[b]) + 1 for b in breaks] + [int(flat[-1]) + 1]
    return tuple(zip(starts, ends, strict=True))


class SmemView:
    """A shared-memory descriptor: an allocation and the transforms applied to it."""

    def __init__(
        self,
        alloc: SmemAlloc,
        transforms: tuple = (),
        shape: list[int] | None = None,
        dtype: Any = None,
        layout: Any = None,
        bad: OutOfRange | None = None,
    ):
        self.alloc = alloc
        self.transforms = transforms
        self.shape = list(alloc.shape if shape is None else shape)
        self.dtype = alloc.dtype if dtype is None else dtype
        self.layout = alloc.layout if layout is None else layout
        self.bad = bad  # why the view leaves its allocation (reported at its first use), or None

    @property
    def valid(self) -> bool:
        return self.bad is None

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

    @property
    def element_ty(self) -> Any:
        return self.dtype

    @property
    def block_type(self) -> BlockType:
        return BlockType(self.shape, self.dtype, self.layout)

    # --- the descriptor's Gluon methods (registry rows "smem.*") -----------------------
    @builtin("smem.index", effect="a view of one leading entry (out of range: a hazard where the view is used)")
    def index(self, index: Any) -> SmemView:
        index = int(index)
        bad = self.bad
        if bad is None and not 0 <= index < self.shape[0]:
            bad = OutOfRange("smem-out-of-bounds", f"index({index}) of {self}: only {self.shape[0]} entries")
        index = min(max(index, 0), self.shape[0] - 1)
        return SmemView(self.alloc, self.transforms + (("index", index),), self.shape[1:], self.dtype, self.layout, bad)

    @builtin("smem.slice", effect="a view of a sub-range of one dimension (out of range: a hazard where used)")
    def slice(self, start: Any, length: Any, dim: Any = 0) -> SmemView:
        start, length, dim = int(start), int(length), int(dim)
        bad = self.bad
        if bad is None and not (start >= 0 and length > 0 and start + length <= self.shape[dim]):
            bad = OutOfRange("smem-out-of-bounds", f"slice({start}, {length}, dim={dim}) of {self} leaves the buffer")
        start = min(max(start, 0), self.shape[dim] - 1)
        length = max(1, min(length, self.shape[dim] - start))
        shape = list(self.shape)
        shape[dim] = length
        return SmemView(
            self.alloc, self.transforms + (("slice", start, length, dim),), shape, self.dtype, self.layout, bad
        )

    @builtin("smem.permute", effect="a transposed view (e.g. a K-major B operand)")
    def permute(self, order: Any) -> SmemView:
        order = [int(o) for o in order]
        return SmemView(
            self.alloc,
            self.transforms + (("permute", tuple(order)),),
            [self.shape[o] for o in order],
            self.dtype,
            self.layout,
            self.bad,
        )

    @builtin("smem.reshape", effect="a reshaped view")
    def reshape(self, shape: Any) -> SmemView:
        shape = [int(s) for s in shape]
        if math.prod(shape) != self.numel:
            raise ExecutorError(f"reshape of {self} to {shape} changes the number of elements{where()}")
        return SmemView(
            self.alloc, self.transforms + (("reshape", tuple(shape)),), shape, self.dtype, self.layout, self.bad
        )

    @builtin("smem.reinterpret", effect="the same bytes as another dtype / shape / layout")
    def reinterpret(self, dtype: Any = None, shape: Any = None, layout: Any = None) -> SmemView:
        dtype = self.dtype if dtype is None else dtype
        shape = list(self.shape if shape is None else [int(s) for s in shape])
        return SmemView(
            self.alloc,
            self.transforms + (("reinterpret", torch_dtype(dtype), tuple(shape)),),
            shape,
            dtype,
            self.layout if layout is None else layout,
            self.bad,
        )

    @builtin("smem.load", op=ops.SmemLoad, effect="shared memory into registers (race-checked)")
    def load(self, layout: Any = None) -> RegTensor:
        op = ops.SmemLoad()
        op.x = Payload(view=self, layout=layout)
        return emit(op)

    @builtin("smem.store", op=ops.SmemStore, effect="registers into shared memory (race-checked)")
    def store(self, value: Any) -> None:
        if not isinstance(value, RegTensor):
            raise ExecutorError(f"store into {self} needs a register tensor, got {type(value).__name__}{where()}")
        if _dtype_name(value.dtype) != _dtype_name(self.dtype):
            # Gluon refuses this at compile time (no implicit conversion on a shared-memory store)
            raise ExecutorError(
                f"store of {_dtype_name(value.dtype)} registers into {self} of dtype "
                f"{_dtype_name(self.dtype)}: convert first (.to(...)){where()}"
            )
        op = ops.SmemStore()
        op.x = Payload(view=self, value=value)
        emit(op)

    @builtin("smem._keep_alive", effect="nothing (a lifetime hint)")
    def _keep_alive(self) -> None:
        return None

    # --- where the view sits in the allocation ---------------------------------------
    def regions(self) -> tuple[tuple[int, int], ...]:
        """The half-open runs of local storage elements (of each CTA) this view covers, for the race detector."""
        alloc = self.alloc
        key = (tuple(alloc.local_shape), tuple(alloc.split), self.transforms)
        hit = _REGIONS.get(key)
        if hit is None:
            hit = _REGIONS[key] = _regions(alloc.local_shape, alloc.split, self.transforms)
        return hit

    def split_dims(self) -> list[int]:
        """Split dimensions of the view (only index / slice views keep track of them)."""
        dims = list(self.alloc.split)
        for op in self.transforms:
            if op[0] == "index":
                dims = [d - 1 for d in dims]
            elif op[0] in ("permute", "reshape"):
                return cga_split_dims(self.layout, len(self.shape), self.alloc.num_ctas) if op[0] == "permute" else []
        return dims

    def local(self, cta: int) -> torch.Tensor:
        """CTA ``cta``'s own part of the view, as a writable torch view of its storage.

        ``index`` / ``slice`` / ``permute`` views are followed everywhere; a ``reshape`` or ``reinterpret`` where the
        bytes underneath are contiguous (what TMA, stores and stolen buffers target)."""
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
            elif op[0] == "permute":
                t = t.permute(*op[1])
                dims = [op[1].index(d) for d in dims]
            elif op[0] in ("reshape", "reinterpret") and not dims and t.is_contiguous():
                if op[0] == "reinterpret" and op[1] != t.dtype:
                    t = t.reshape(-1).view(torch.uint8).view(op[1])
                t = t.reshape(op[-1] if op[0] == "reinterpret" else op[1])
            else:
                raise ExecutorError(f"writing through a {op[0]} view of shared memory is not supported here")
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


def _is_scales_layout(layout: Any) -> bool:
    return type(layout).__name__ == "TensorMemoryScalesLayout"


def tmem_columns(n: int, dtype: Any, layout: Any, local_rows: int) -> int:
    """32-bit TMEM columns a ``[rows, n]`` tensor of ``dtype`` in ``layout`` takes.

    Scales (:class:`TensorMemoryScalesLayout`): 4 columns per packed chunk of 128 rows x 4 k-scales
    (``tcgen05.cp 32x128b.warpx4``).  Otherwise ``col_stride`` 32-bit columns between adjacent elements
    of a 32-bit type, and ``32 / bitwidth`` elements per column when packed (``col_stride=1``)."""
    if _is_scales_layout(layout):
        return max(1, local_rows * n // 128)
    bits = torch_dtype(dtype).itemsize * 8
    stride = int(getattr(layout, "col_stride", 1) or 1)
    return max(1, -(-n * bits * stride // 32))


@dataclass(frozen=True)
class TmemMap:
    """Where each element of a ``[rows, n]`` TMEM tensor lives when that is not the plain placement (row ``i`` in
    lane ``i``, element ``j`` at slot ``j * col_stride``): its lane and its slot (in units of the element's width)
    along the lane, as Triton's linear layout of the :class:`TensorMemoryLayout` gives them -- a 256-row tensor of
    (128, N) blocks keeps rows 128-255 in the columns after the first block; 64-row blocks use lanes 0-15 of each
    32-lane sub-partition."""

    lanes: torch.Tensor  # int64 [rows, n]
    slots: torch.Tensor  # int64 [rows, n]
    nslots: int  # slots per lane the whole tensor spans


_GLUON_BUILDER: list[Any] = []


def _gluon_builder() -> Any:
    """One MLIR context and Gluon builder for the process (made on first use: only odd TMEM layouts ask)."""
    if not _GLUON_BUILDER:
        from triton._C.libtriton import gluon_ir, ir

        ctx = ir.context()
        ir.load_dialects(ctx)
        _GLUON_BUILDER.extend([ctx, gluon_ir.GluonOpBuilder(ctx)])
    return _GLUON_BUILDER[1]


def _span(bases: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(dim0, dim1) of every input index of a linear layout given its bases (an XOR of the set bits' bases)."""
    idx = torch.arange(1 << len(bases), dtype=torch.int64)
    d0 = torch.zeros_like(idx)
    d1 = torch.zeros_like(idx)
    for k, (a, b) in enumerate(bases):
        bit = (idx >> k) & 1
        d0 ^= bit * int(a)
        d1 ^= bit * int(b)
    return d0, d1


@functools.lru_cache(maxsize=128)
def tmem_element_map(block: tuple[int, int], col_stride: int, rows: int, n: int) -> TmemMap | None:
    """The placement of a ``[rows, n]`` tensor in a ``TensorMemoryLayout(block, col_stride)``, from Triton's own
    linear layout of it; None when it is the plain one (the fast path)."""
    from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout

    if block[0] == 128 and rows <= 128:
        return None
    ll = _gluon_builder().to_linear_layout(
        TensorMemoryLayout(tuple(block), col_stride)._to_ir(_gluon_builder()), [rows, n]
    )
    lr0, lr1 = _span(ll.rows)
    ls0, ls1 = _span(ll.cols)
    lane = torch.arange(len(lr0), dtype=torch.int64)[:, None].expand(len(lr0), len(ls0)).reshape(-1)
    slot = torch.arange(len(ls0), dtype=torch.int64)[None, :].expand(len(lr0), len(ls0)).reshape(-1)
    d0 = (lr0[:, None] ^ ls0[None, :]).reshape(-1)
    d1 = (lr1[:, None] ^ ls1[None, :]).reshape(-1)
    lanes = torch.full((rows, n), -1, dtype=torch.int64)
    slots = torch.full((rows, n), -1, dtype=torch.int64)
    keep = (d0 < rows) & (d1 < n)
    # the first (lowest lane, then slot) place of an element that the layout repeats is where it is read
    order = torch.arange(len(d0) - 1, -1, -1)
    order = order[keep.flip(0)]
    lanes[d0[order], d1[order]] = lane[order]
    slots[d0[order], d1[order]] = slot[order]
    if bool((lanes < 0).any()) or int(lanes.max()) >= TmemAlloc.LANES:
        raise ExecutorError(f"the executor cannot place a [{rows}, {n}] tensor of TMEM block {tuple(block)}")
    return TmemMap(lanes, slots, len(ls0))


def _tmem_map_of(layout: Any, dtype: Any, rows: int, n: int) -> TmemMap | None:
    block = getattr(layout, "block", None)
    if _is_scales_layout(layout) or block is None:
        return None
    return tmem_element_map(tuple(int(b) for b in block), int(getattr(layout, "col_stride", 1) or 1), rows, n)


class TmemAlloc:
    """``allocate_tensor_memory``: per CTA 128 lanes x ``cols`` 32-bit columns, starting as NaN."""

    LANES = 128

    def __init__(self, name: str, dtype: Any, shape: list[int], layout: Any, num_ctas: int):
        self.name, self.dtype, self.shape, self.layout = name, dtype, list(shape), layout
        self.two_ctas = bool(getattr(layout, "two_ctas", False))
        rows = shape[-2]
        self.split = cga_split_dims(layout, 2, num_ctas)
        local_rows = rows // 2 if 0 in self.split else rows
        #: where each element of one buffer lives, when not the plain placement
        self.emap = _tmem_map_of(layout, dtype, local_rows, shape[-1])
        if self.emap is None and local_rows > self.LANES:
            raise ExecutorError(f"a TMEM allocation of {local_rows} rows per CTA does not fit the 128 lanes")
        self.buffers = math.prod(shape[:-2]) if len(shape) > 2 else 1
        if self.emap is not None:
            self.per_buffer = max(1, -(-self.emap.nslots * torch_dtype(dtype).itemsize // 4))
        else:
            self.per_buffer = tmem_columns(shape[-1], dtype, layout, local_rows)
        self.cols = self.buffers * self.per_buffer
        self.storage = [torch.full((self.LANES, self.cols), float("nan"), dtype=torch.float32) for _ in range(num_ctas)]
        self.bytes = [s.view(torch.uint8) for s in self.storage]
        self.shadows = [Shadow(f"TMEM (cta{c})", self.cols) for c in range(num_ctas)]


class TmemType:
    """``tmem.type``: element type, shape, layout, and ``get_reg_layout``."""

    def __init__(self, view: TmemView):
        self.view = view
        self.layout, self.shape, self.element_ty = view.layout, view.shape, view.dtype
        self.alloc_shape = view.alloc.shape

    def get_reg_layout(self, num_warps: Any = None, instr_variant: str = "32x32b") -> Any:
        return self.view.get_reg_layout(num_warps, instr_variant)


class TmemView:
    """A tensor-memory descriptor: columns ``[offset, offset + cols)`` of an allocation, holding an
    accumulator or other values (``kind="acc"``) or block scales (``kind="scales"``)."""

    def __init__(
        self,
        alloc: TmemAlloc,
        offset: int,
        shape: list[int],
        dtype: Any,
        layout: Any,
        kind: str = "acc",
        bad: OutOfRange | None = None,
        emap: TmemMap | None = None,
    ):
        self.alloc, self.offset, self.shape, self.dtype, self.layout, self.kind = (
            alloc,
            offset,
            list(shape),
            dtype,
            layout,
            kind,
        )
        self.bad = bad  # why the view leaves its allocation (reported at its first use), or None
        #: lanes and slots of this view's elements (relative to ``offset``) when not the plain placement
        self.emap = emap

    def __repr__(self) -> str:
        return f"TMEM[{self.offset}, {self.offset + self.columns.cols})"

    @property
    def type(self) -> TmemType:
        return TmemType(self)

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
        if self.emap is not None:  # the columns its elements span
            size = torch_dtype(self.dtype).itemsize
            lo = int(self.emap.slots.min()) * size // 4
            hi = (int(self.emap.slots.max()) + 1) * size
            per = -(-hi // 4) - lo
            if self.rank > 2:
                return Columns(self.offset + lo, self.alloc.per_buffer * (math.prod(self.shape[:-2]) - 1) + per)
            return Columns(self.offset + lo, per)
        per = tmem_columns(self.shape[-1], self.dtype, self.layout, self.local_rows())
        return Columns(self.offset, per * (math.prod(self.shape[:-2]) if self.rank > 2 else 1))

    @property
    def col_stride(self) -> int:
        return 1 if _is_scales_layout(self.layout) else int(getattr(self.layout, "col_stride", 1) or 1)

    # --- values -------------------------------------------------------------------------
    def _byte_index(self, emap: TmemMap) -> torch.Tensor:
        """Flat indices into a CTA's TMEM bytes of each byte of each element ``[rows, n, itemsize]`` (a view
        mapped by ``emap``, its own)."""
        size = torch_dtype(self.dtype).itemsize
        row_bytes = 4 * self.alloc.cols
        start = emap.lanes * row_bytes + 4 * self.offset + emap.slots * size
        return start[..., None] + torch.arange(size, dtype=torch.int64)

    def read(self, cta: int) -> torch.Tensor:
        """The ``[local rows, n]`` values CTA ``cta``'s TMEM holds at this view."""
        if self.emap is not None:
            tdt = torch_dtype(self.dtype)
            flat = self.alloc.bytes[cta].reshape(-1)
            idx = self._byte_index(self.emap)
            return flat[idx.reshape(-1)].reshape(idx.shape).contiguous().view(tdt).reshape(idx.shape[:2])
        rows, cols = self.local_rows(), self.columns
        tdt = torch_dtype(self.dtype)
        if tdt == torch.float32 and self.col_stride == 1:
            return self.alloc.storage[cta][:rows, cols.offset : cols.end].clone()
        raw = self.alloc.bytes[cta][:rows, 4 * cols.offset : 4 * cols.end]
        step = tdt.itemsize * self.col_stride if tdt.itemsize < 4 else 4 * self.col_stride
        n = self.shape[-1]
        lanes = raw.reshape(rows, -1)[:, : n * step].reshape(rows, n, step)[:, :, : tdt.itemsize]
        return lanes.contiguous().view(tdt).reshape(rows, n)

    def write(self, cta: int, values: torch.Tensor) -> None:
        if self.emap is not None:
            tdt = torch_dtype(self.dtype)
            idx = self._byte_index(self.emap)
            src = values.to(tdt).contiguous().view(torch.uint8).reshape(-1)
            self.alloc.bytes[cta].reshape(-1)[idx.reshape(-1)] = src
            return
        rows, cols = self.local_rows(), self.columns
        tdt = torch_dtype(self.dtype)
        if tdt == torch.float32 and self.col_stride == 1:
            self.alloc.storage[cta][:rows, cols.offset : cols.end] = values.to(torch.float32)
            return
        raw = self.alloc.bytes[cta][:rows, 4 * cols.offset : 4 * cols.end]
        step = tdt.itemsize * self.col_stride if tdt.itemsize < 4 else 4 * self.col_stride
        n = self.shape[-1]
        src = values.to(tdt).contiguous().view(torch.uint8).reshape(rows, n, tdt.itemsize)
        view = raw[:, : n * step].reshape(rows, n, step)
        view[:, :, : tdt.itemsize] = src
        raw[:, : n * step] = view.reshape(rows, n * step)

    # --- the descriptor's Gluon methods (registry rows "tmem.*") -------------------------
    @builtin("tmem.slice", effect="a view of a column range")
    def slice(self, start: Any, length: Any, dim: Any = 1) -> TmemView:
        start, length, dim = int(start), int(length), int(dim)
        if dim != self.rank - 1:
            raise ExecutorError(f"the executor slices TMEM along columns only, got dim={dim}{where()}")
        shape = list(self.shape)
        shape[dim] = length
        if self.emap is not None:  # the same places, fewer of them
            e = self.emap
            sub = TmemMap(e.lanes.narrow(1, start, length), e.slots.narrow(1, start, length), e.nslots)
            return TmemView(self.alloc, self.offset, shape, self.dtype, self.layout, self.kind, self.bad, sub)
        offset = self.offset + tmem_columns(start, self.dtype, self.layout, self.local_rows()) if start else self.offset
        return TmemView(self.alloc, offset, shape, self.dtype, self.layout, self.kind, self.bad)

    @builtin("tmem.index", effect="a view of one buffer of a 3-D allocation")
    def index(self, index: Any) -> TmemView:
        index = int(index)
        if self.rank != 3:
            raise ExecutorError(f"index() needs a 3-D TMEM descriptor, got shape {self.shape}{where()}")
        bad = self.bad
        if bad is None and not 0 <= index < self.shape[0]:
            bad = OutOfRange("tmem-out-of-bounds", f"index({index}) of a TMEM buffer of {self.shape[0]}")
        per = (
            self.alloc.per_buffer
            if self.emap is not None
            else tmem_columns(self.shape[-1], self.dtype, self.layout, self.local_rows())
        )
        return TmemView(
            self.alloc, self.offset + index * per, self.shape[1:], self.dtype, self.layout, self.kind, bad, self.emap
        )

    @builtin("tmem.reinterpret", effect="the same columns as another dtype / shape / layout")
    def reinterpret(self, dtype: Any = None, shape: Any = None, layout: Any = None) -> TmemView:
        dtype = self.dtype if dtype is None else dtype
        shape = list(self.shape if shape is None else [int(s) for s in shape])
        layout = self.layout if layout is None else layout
        kind = "scales" if _is_scales_layout(layout) else "acc"
        emap = self.emap
        if emap is not None or (kind == "acc" and _tmem_map_of(layout, dtype, self.local_rows(), shape[-1])):
            same = shape == self.shape and torch_dtype(dtype).itemsize == torch_dtype(self.dtype).itemsize
            if not same:
                raise ExecutorError(
                    f"reinterpret of {self} as {dtype} {shape}: the executor reinterprets TMEM "
                    f"with this layout only as the same shape and element width{where()}"
                )
        return TmemView(self.alloc, self.offset, shape, dtype, layout, kind, self.bad, emap)

    @builtin("tmem.load", op=ops.TmemLoad, effect="TMEM into registers (the issuing CTA's lanes; race-checked)")
    def load(self, layout: Any = None) -> RegTensor:
        ctx = current()
        if ctx.num_warps < 4 and self.local_rows() > 32 * ctx.num_warps:
            raise ExecutorError(
                f"tmem.load of {self.local_rows()} rows by a {ctx.num_warps}-warp partition: a tcgen05.ld reads "
                f"only its warp's 32-lane sub-partition, so {ctx.num_warps} warp(s) reach "
                f"{32 * ctx.num_warps} of the rows (use 4 warps or more){where()}"
            )
        op = ops.TmemLoad(self.columns)
        op.x = Payload(view=self, layout=layout)
        return emit(op)

    @builtin("tmem.store", op=ops.TmemStore, effect="registers into TMEM (race-checked)")
    def store(self, value: Any, pred: Any = True) -> None:
        if not isinstance(value, RegTensor):
            raise ExecutorError(f"tmem store into {self} needs a register tensor, got {type(value).__name__}{where()}")
        if pred:
            op = ops.TmemStore(self.columns)
            op.x = Payload(view=self, value=value)
            emit(op)

    @builtin("tmem.get_reg_layout", effect="the register layout of a tcgen05.ld / st of this descriptor")
    def get_reg_layout(self, num_warps: Any = None, instr_variant: str = "32x32b") -> Any:
        from triton.experimental.gluon.language._semantic import _compute_tmem_reg_layout

        nw = int(num_warps) if num_warps is not None else current().num_warps
        return _compute_tmem_reg_layout(
            self.dtype, list(self.shape), list(self.alloc.shape), self.layout, nw, instr_variant
        )


# =====================================================================================
# mbarriers
# =====================================================================================
class BarrierAlloc:
    """A batch of mbarriers; ``pair`` ones exist once per cluster, in the lead CTA (SEMANTICS.md 3)."""

    def __init__(self, name: str, batch: int, pair: bool, num_ctas: int):
        self.name, self.batch, self.pair = name, batch, pair and num_ctas > 1
        # [cta][index] -> engine Barrier once initialized (a pair barrier only has a cta-0 copy)
        self.copies: list[list[Any]] = [[None] * batch for _ in range(num_ctas)]
        #: [cta][index] -> the kernel line that invalidated the barrier (its life ended), or None
        self.invalidated: list[list[Any]] = [[None] * batch for _ in range(num_ctas)]
        self.shape = [batch]
        #: the allocation's bytes as data (a CLC response buffer allocated with the barriers' layout), or None
        self.smem: SmemAlloc | None = None


class BarrierRef:
    """``bars.index(i)``: one mbarrier of a batch (``bad``: the index was out of range, reported where it is used)."""

    def __init__(self, alloc: BarrierAlloc, index: int, bad: OutOfRange | None = None):
        self.alloc, self.index_, self.bad = alloc, index, bad
        self.shape = [1]

    @property
    def valid(self) -> bool:
        return self.bad is None

    def __repr__(self) -> str:
        return f"{self.alloc.name}[{self.index_}]"

    def as_smem(self) -> SmemView | None:
        """This barrier's 8-byte words as shared memory (what a CLC response is written into), or None."""
        smem = self.alloc.smem
        if smem is None:
            return None
        view = SmemView(smem, bad=self.bad)
        return view.index(self.index_) if len(smem.shape) > 1 else view

    def copy_for(self, cta: int) -> Any:
        """The engine barrier an arrive / expect / wait of CTA ``cta`` reaches (None: not initialized)."""
        return self.alloc.copies[0 if self.alloc.pair else cta][self.index_]


class BarrierBatch:
    """The descriptor ``allocate_mbarrier(batch=n)`` returns."""

    def __init__(self, alloc: BarrierAlloc):
        self.alloc = alloc
        #: the allocation's shape as Gluon has it (``[batch, 1]``, ``[batch, num_ctas]``), its layout and dtype
        self.shape = list(alloc.smem.shape) if alloc.smem is not None else [alloc.batch]
        self.layout = alloc.smem.layout if alloc.smem is not None else None
        self.dtype = alloc.smem.dtype if alloc.smem is not None else None

    @property
    def type(self) -> BarrierBatch:
        return self

    @builtin(
        "barriers.index",
        effect="one barrier of the batch (out of range: a hazard where it is used -- "
        "an index computed for a predicated-off arrive is no use)",
    )
    def index(self, index: Any) -> BarrierRef:
        index = int(index)
        bad = None
        if not 0 <= index < self.alloc.batch:
            bad = OutOfRange(
                "barrier-out-of-bounds", f"index({index}) of {self.alloc.name}: only {self.alloc.batch} barriers"
            )
        return BarrierRef(self.alloc, min(max(index, 0), self.alloc.batch - 1), bad)


# =====================================================================================
# registers and descriptors
# =====================================================================================
class BlockType:
    """The type of a descriptor's block (``desc.block_type`` / ``desc.type.block_type``)."""

    def __init__(self, shape: list[int], dtype: Any, layout: Any):
        self.shape, self.element_ty, self.layout = list(shape), dtype, layout

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * torch_dtype(self.element_ty).itemsize

    @property
    def scalar(self) -> Any:
        return self.element_ty

    def __eq__(self, other: object) -> bool:
        """Two block types are equal when shape, element type and layout are (``gl.static_assert(a.block_type ==
        b.block_type)``, as Triton's frontend compares them)."""
        if not isinstance(other, BlockType):
            return NotImplemented
        return (
            self.shape == other.shape
            and _dtype_name(self.element_ty) == _dtype_name(other.element_ty)
            and self.layout == other.layout
        )

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((tuple(self.shape), _dtype_name(self.element_ty)))

    def __repr__(self) -> str:
        return f"block_type({_dtype_name(self.element_ty)}, {self.shape})"


class DescriptorType:
    """``desc.type``: the block type and layout of a device-side tensor descriptor."""

    def __init__(self, desc: DeviceDescriptor):
        self.block_type = desc.block_type
        self.layout = desc.layout
        self.shape = desc.block_shape

    def nbytes_per_cta(self) -> int:
        return self.block_type.nbytes


def nan_fill(shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    """What TMA writes outside the tensor with ``padding="nan"``: the bit pattern the H200 gave for float32,
    0x7FF77FF7 (the 16-bit NaN 0x7FF7 twice); 0x7FF7 for 16-bit types; 0x7F (a NaN in e4m3 and e5m2) for 8-bit
    types (not measured)."""
    size = torch.empty(0, dtype=dtype).element_size()
    if size == 1:
        return torch.full(shape, 0x7F, dtype=torch.uint8).view(dtype)
    word = torch.full(shape + [size // 2], 0x7FF7, dtype=torch.int16)
    return word.view(dtype).reshape(shape)


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
        #: what TMA fills outside the tensor: "zero" or "nan" (``TensorDescriptor(padding=...)``)
        self.padding = str(getattr(host, "padding", "zero") or "zero")
        #: the global tensor the descriptor describes: its shape and strides over the base's storage
        base = self.base
        same = list(base.shape) == self.shape and [int(x) for x in base.stride()] == self.strides
        self.tensor: torch.Tensor = base if same else base.as_strided(self.shape, self.strides)

    @property
    def block_type(self) -> BlockType:
        """``desc.block_type``: the block's shape, element type and layout."""
        return BlockType(self.block_shape, self.dtype, self.layout)

    @property
    def type(self) -> DescriptorType:
        return DescriptorType(self)

    def __repr__(self) -> str:
        return f"descriptor {self.name}{self.block_shape}"

    @property
    def nbytes_per_cta(self) -> int:
        return math.prod(self.local_block) * self.base.element_size()

    def read_block(self, coord: list[int], shape: list[int]) -> torch.Tensor:
        """The ``shape`` box at ``coord``, zero (``padding="nan"``: NaN) where it leaves the tensor (TMA's
        out-of-bounds fill)."""
        out = (
            nan_fill(shape, self.base.dtype)
            if self.padding == "nan" and self.base.dtype.is_floating_point
            else torch.zeros(shape, dtype=self.base.dtype)
        )
        src, dst = [], []
        for c, n, size in zip(coord, shape, self.shape, strict=True):
            lo, hi = max(c, 0), min(c + n, size)
            if hi <= lo:
                return out
            src.append(slice(lo, hi))
            dst.append(slice(lo - c, hi - c))
        out[tuple(dst)] = self.tensor[tuple(src)]
        return out

    def read_rows(self, rows: list[int], y: int, width: int) -> torch.Tensor:
        """TMA gather: ``[len(rows), width]``, row ``i`` the ``width`` elements of row ``rows[i]`` from column ``y``;
        rows or columns outside the tensor are filled (zero, or the NaN padding)."""
        return (
            torch.cat([self.read_block([r, y], [1, width]) for r in rows])
            if rows
            else torch.zeros(0, width, dtype=self.base.dtype)
        )

    def write_rows(self, rows: list[int], y: int, value: torch.Tensor) -> None:
        """TMA scatter: row ``i`` of ``value`` to row ``rows[i]`` from column ``y``; what falls outside is dropped."""
        for i, r in enumerate(rows):
            self.write_block([r, y], value[i : i + 1])

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
        self.tensor[tuple(dst)] = value[tuple(src)].to(self.base.dtype)
