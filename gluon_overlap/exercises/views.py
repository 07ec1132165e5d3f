"""What an exercise hands a learner's code: the inputs it needs, never the answer it asks for.

A :class:`~gluon_overlap.tmem.TmemPlan` knows its drain orders and its early-release step; an exercise that asks
for those hands the learner a :class:`PlanView` instead -- the plan's formats, sizes and windows, computed here,
with no way back to the plan.  :class:`KernelFormats` is what the adaptation's kernel gets in place of a plan: the
formats and block sizes, no TMEM column at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gluon_overlap.registry import FORMAT_VEC_SIZE

if TYPE_CHECKING:
    from gluon_overlap.tmem import TmemPlan


@dataclass(frozen=True)
class Columns:
    """A half-open range of TMEM columns ``[offset, offset + cols)``."""

    offset: int
    cols: int

    @property
    def end(self) -> int:
        return self.offset + self.cols

    def columns(self) -> range:
        return range(self.offset, self.end)


@dataclass(frozen=True)
class PlanView:
    """A TMEM plan's inputs and windows, without its drain order or early release (notebook 04's exercises)."""

    a_format: str
    b_format: str
    block_k: int
    epilogue_block_n: int
    block_n: int
    overlap_cols: int
    left: Columns
    right: Columns

    @classmethod
    def of(cls, plan: TmemPlan) -> PlanView:
        """The view of a :class:`~gluon_overlap.tmem.TmemPlan` (with overlap on)."""
        return cls(
            plan.a_format,
            plan.b_format,
            plan.block_k,
            plan.epilogue_block_n,
            plan.block_n,
            plan.overlap_cols,
            Columns(plan.left.offset, plan.left.cols),
            Columns(plan.right.offset, plan.right.cols),
        )

    @property
    def num_subtiles(self) -> int:
        """EPILOGUE_BLOCK_N-wide subtiles of a window."""
        return self.block_n // self.epilogue_block_n

    @property
    def overlap(self) -> bool:
        """The windows overlap (these exercises only ask about plans with overlap on)."""
        return True

    @property
    def overlap_window(self) -> Columns:
        """The columns both windows use."""
        return Columns(self.right.offset, self.left.end - self.right.offset)

    def accumulator(self, tile: int) -> Columns:
        """The window of the ``tile``-th tile of a cluster: left for even tiles, right for odd."""
        return self.right if tile % 2 else self.left

    def window_name(self, tile: int) -> str:
        return "right" if tile % 2 else "left"

    def subtile_columns(self, tile: int, subtile: int) -> Columns:
        """Absolute TMEM columns of subtile ``subtile`` (counted from the window's low end) of ``tile``."""
        if not 0 <= subtile < self.num_subtiles:
            raise ValueError(f"subtile={subtile} must be in [0, {self.num_subtiles})")
        window = self.accumulator(tile)
        return Columns(window.offset + subtile * self.epilogue_block_n, self.epilogue_block_n)

    def __str__(self) -> str:
        return (
            f"plan({self.a_format} x {self.b_format}, block_k={self.block_k}, "
            f"epilogue_block_n={self.epilogue_block_n}, overlap {self.overlap_cols} columns)"
        )


@dataclass(frozen=True)
class ScalePlanView:
    """Where a plan's scale chunks start (notebook 02's TMEM exercise): the chunk columns, nothing else."""

    a_format: str
    b_format: str
    block_k: int
    block_n: int
    vec_size: int
    overlap: bool
    a_scale_offset: int
    b_scale_offset: int

    @classmethod
    def of(cls, plan: TmemPlan) -> ScalePlanView:
        return cls(
            plan.a_format,
            plan.b_format,
            plan.block_k,
            plan.block_n,
            plan.vec_size,
            plan.overlap,
            plan.a_scale.offset,
            plan.b_scale.offset,
        )

    @property
    def k_chunks(self) -> int:
        """Packed chunks of 4 k-scales per BLOCK_K step."""
        return self.block_k // self.vec_size // 4

    def a_scale_column(self, k_chunk: int) -> int:
        """First TMEM column of the A-scale chunk number ``k_chunk``."""
        if not 0 <= k_chunk < self.k_chunks:
            raise ValueError(f"k_chunk={k_chunk} must be in [0, {self.k_chunks})")
        return self.a_scale_offset + 4 * k_chunk

    def b_scale_column(self, n_chunk: int, k_chunk: int) -> int:
        """First TMEM column of the B-scale chunk (128 N rows ``n_chunk``, k chunk ``k_chunk``)."""
        per_k = self.block_n // 128
        if not 0 <= n_chunk < per_k:
            raise ValueError(f"n_chunk={n_chunk} must be in [0, {per_k})")
        if not 0 <= k_chunk < self.k_chunks:
            raise ValueError(f"k_chunk={k_chunk} must be in [0, {self.k_chunks})")
        return self.b_scale_offset + 4 * (per_k * k_chunk + n_chunk)

    def __str__(self) -> str:
        return (
            f"plan({self.a_format} x {self.b_format}, overlap {'on' if self.overlap else 'off'}, "
            f"block_k={self.block_k})"
        )


@dataclass(frozen=True)
class StagePlanView:
    """What one load stage of the single-buffered kernel is made of (notebook 08's expect exercise): the formats and
    the block sizes, no byte count."""

    a_format: str
    b_format: str
    block_k: int
    block_n: int
    vec_size: int

    @classmethod
    def of(cls, plan: TmemPlan) -> StagePlanView:
        return cls(plan.a_format, plan.b_format, plan.block_k, plan.block_n, plan.vec_size)

    def __str__(self) -> str:
        return f"plan({self.a_format} x {self.b_format}, block_k={self.block_k})"


@dataclass(frozen=True)
class KernelFormats:
    """The adaptation kernel's ``TMEM_PLAN``: formats and block sizes, and the columns the kernel must leave alone
    (``reserved``) -- where the accumulators and the scales live is the learner's to say."""

    a_format: str
    b_format: str
    block_k: int
    epilogue_block_n: int
    block_n: int = 256
    overlap: bool = True
    tmem_cols: int = 512
    reserved: Columns = Columns(0, 0)
    vec_size: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "vec_size", FORMAT_VEC_SIZE[self.a_format])
