"""The TMEM storage plan: the single source of truth for where everything lives.

Each SM of a Blackwell GPU has 256 KB of tensor memory (TMEM): 128 lanes x 512
columns of 32-bit cells.  The 2-CTA block-scaled MMA of this series computes a
256 x 256 tile; CTA ``r`` of the pair holds accumulator rows ``128 r ... 128 r + 127``
in its own 128 lanes, for all 256 columns.  So per CTA a ``BLOCK_N = 256``
float32 accumulator takes 256 columns, and two of them (double buffering) take
all 512 -- leaving no room for the A and B scale factors that ``tcgen05.mma``
with block scaling reads from TMEM.

Why the scales take the columns they do (per CTA, 2-CTA layout):

* **A scales** are split by M across the two CTAs (``TensorMemoryScalesLayout``
  with ``cga_layout=[[1, 0]]``): each CTA keeps the scales of its own 128 rows.
  One K block of ``BLOCK_K`` elements carries ``BLOCK_K / VEC`` scales per row,
  and a ``tcgen05.cp ... 32x128b.warpx4`` copy puts the 128 rows x 4 k-scales of
  one packed ``[32, 4, 4]`` chunk into 4 columns.  So A needs
  ``BLOCK_K / VEC`` columns.
* **B scales** are *duplicated* in both CTAs (``cga_layout=[[0, 0]]``): the MMA
  of each CTA half needs the scales of all 256 N rows, i.e. ``256 / 128 = 2``
  chunks of 128 rows, so B needs ``BLOCK_K / VEC x (BLOCK_N / 128)`` columns.

With overlap *off* the kernel keeps one accumulator (``[0, 256)``) and puts the
scales right after it.  With overlap *on* the right accumulator starts
``overlap_cols = a_scale_cols + b_scale_cols`` columns before the left one ends,
so that both accumulators and the scales exactly fill the 512 columns.  The
epilogue of tile ``i`` drains the overlapped columns first (even tiles high to
low, odd tiles low to high) and, after its drain step number
``early_release_subtile`` (a *position in the drain order*, counted from 0, exactly as the
seed compares it with its loop index ``s``), releases the *overlap* barrier so that the MMA
of tile ``i + 1`` may start.

Everything else -- the Gluon kernel, the CPU twin, the explorer, the plots and
the compile checks -- reads offsets from a :class:`TmemPlan`; none recomputes one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gluon_overlap.registry import (
    FORMAT_ELEMENT_KIND,
    FORMAT_VEC_SIZE,
    SUPPORTED_PAIRS,
    check_bool,
    check_format,
    check_int,
    check_positive_int,
)

# --- fixed facts of the seed's configuration --------------------------------
TMEM_LANES = 128
TMEM_COLS = 512
BLOCK_M = 256
BLOCK_N = 256
NUM_CTAS = 2
ROWS_PER_CTA = BLOCK_M // NUM_CTAS
SCALE_ROWS_PER_CHUNK = 128  # one packed scale chunk covers 128 M/N rows ...
SCALE_K_PER_CHUNK = 4  # ... and 4 consecutive k-scales
DEFAULT_EPILOGUE_BLOCK_N = 32
#: column counts ``tcgen05.alloc`` accepts (a power of two, 32 .. 512)
TMEM_ALLOC_SIZES = (32, 64, 128, 256, 512)

#: the format registry (:mod:`gluon_overlap.registry`), re-exported: every module reads these
#: ``SEED_FORMAT_PAIRS`` is the older name of ``SUPPORTED_PAIRS`` (kept as an alias)
SEED_FORMAT_PAIRS = SUPPORTED_PAIRS


def default_block_k(a_format: str, b_format: str) -> int:
    """The seed's BLOCK_K: 128 when an fp8 operand is involved, else 256."""
    kinds = {
        FORMAT_ELEMENT_KIND[check_format(a_format, "a_format")],
        FORMAT_ELEMENT_KIND[check_format(b_format, "b_format")],
    }
    return 128 if "e4m3" in kinds else 256


@dataclass(frozen=True)
class Window:
    """A half-open range of TMEM columns ``[offset, offset + cols)``."""

    offset: int
    cols: int

    @property
    def end(self) -> int:
        return self.offset + self.cols

    def columns(self) -> range:
        return range(self.offset, self.end)

    def intersect(self, other: Window) -> Window | None:
        lo, hi = max(self.offset, other.offset), min(self.end, other.end)
        return Window(lo, hi - lo) if hi > lo else None

    def as_pair(self) -> list[int]:
        """``[offset, width]`` (the older JSON form; prefer :meth:`as_range`)."""
        return [self.offset, self.cols]

    def as_range(self) -> list[int]:
        """``[start, end)`` as a list."""
        return [self.offset, self.end]


@dataclass(frozen=True)
class TmemPlan:
    """Per-CTA TMEM column plan of the 2-CTA block-scaled matmul.

    Build one with :func:`make_plan` (which fills in the seed's defaults) or
    directly; ``__post_init__`` validates the configuration and raises a
    ``ValueError`` that names the parameter, its value and the limit.
    """

    a_format: str
    b_format: str
    block_k: int
    epilogue_block_n: int = DEFAULT_EPILOGUE_BLOCK_N
    overlap: bool = True
    block_n: int = BLOCK_N
    tmem_cols: int = TMEM_COLS
    # derived (filled in by __post_init__)
    vec_size: int = field(init=False)
    a_scale_cols: int = field(init=False)
    b_scale_cols: int = field(init=False)
    overlap_cols: int = field(init=False)
    left: Window = field(init=False)
    right: Window = field(init=False)
    a_scale: Window = field(init=False)
    b_scale: Window = field(init=False)
    #: drain *step* (position in :meth:`drain_order`, from 0) after which the epilogue arrives
    #: on the overlap barrier; with the drain orders used, the whole overlap is read by then
    early_release_subtile: int = field(init=False)

    def __post_init__(self) -> None:
        check_format(self.a_format, "a_format")
        check_format(self.b_format, "b_format")
        check_bool("overlap", self.overlap)
        va, vb = FORMAT_VEC_SIZE[self.a_format], FORMAT_VEC_SIZE[self.b_format]
        if va != vb:
            raise ValueError(
                f"a_format={self.a_format!r} (VEC_SIZE={va}) and b_format={self.b_format!r} "
                f"(VEC_SIZE={vb}) use different scale-block sizes; one MMA needs one VEC_SIZE "
                "(pair nvfp4 only with nvfp4)"
            )
        for name in ("block_k", "epilogue_block_n", "block_n", "tmem_cols"):
            check_positive_int(name, getattr(self, name))
        if self.tmem_cols not in TMEM_ALLOC_SIZES:
            raise ValueError(
                f"tmem_cols={self.tmem_cols} must be one of {list(TMEM_ALLOC_SIZES)}: an SM has "
                f"{TMEM_COLS} TMEM columns and tcgen05.alloc takes a power of two from 32 up"
            )
        chunk_k = va * SCALE_K_PER_CHUNK
        if self.block_k % chunk_k:
            raise ValueError(
                f"block_k={self.block_k} must be a multiple of VEC_SIZE x 4 = {chunk_k} "
                f"for {self.a_format} (one packed scale chunk holds 4 k-scales)"
            )
        if self.block_n % SCALE_ROWS_PER_CHUNK:
            raise ValueError(f"block_n={self.block_n} must be a multiple of {SCALE_ROWS_PER_CHUNK}")
        if self.block_n % self.epilogue_block_n:
            raise ValueError(
                f"epilogue_block_n={self.epilogue_block_n} does not divide block_n={self.block_n}: "
                f"{self.block_n} % {self.epilogue_block_n} = {self.block_n % self.epilogue_block_n}"
            )
        a_cols, b_cols = scale_columns(self.a_format, self.block_k, self.block_n)
        scale_cols = a_cols + b_cols
        left = Window(0, self.block_n)
        if self.overlap:
            if scale_cols >= self.block_n:
                raise ValueError(
                    f"overlap of {scale_cols} columns (A {a_cols} + B {b_cols} scale columns at "
                    f"block_k={self.block_k}) must be smaller than block_n={self.block_n}: "
                    f"{scale_cols - self.block_n + 1} column(s) too many"
                )
            if 2 * self.block_n > self.tmem_cols:
                raise ValueError(
                    f"two accumulators of block_n={self.block_n} need {2 * self.block_n} columns, "
                    f"more than tmem_cols={self.tmem_cols}"
                )
            overlap_cols = scale_cols
            right = Window(self.block_n - overlap_cols, self.block_n)
            a_scale = Window(self.tmem_cols - overlap_cols, a_cols)
            early = (overlap_cols - 1) // self.epilogue_block_n
        else:
            need = self.block_n + scale_cols
            if need > self.tmem_cols:
                raise ValueError(
                    f"one accumulator ({self.block_n} columns) plus {scale_cols} scale columns "
                    f"(block_k={self.block_k}) need {need} columns: {need - self.tmem_cols} more "
                    f"than tmem_cols={self.tmem_cols}"
                )
            overlap_cols = 0
            right = left
            a_scale = Window(self.block_n, a_cols)
            early = 0
        b_scale = Window(a_scale.end, b_cols)
        for name, value in (
            ("vec_size", va),
            ("a_scale_cols", a_cols),
            ("b_scale_cols", b_cols),
            ("overlap_cols", overlap_cols),
            ("left", left),
            ("right", right),
            ("a_scale", a_scale),
            ("b_scale", b_scale),
            ("early_release_subtile", early),
        ):
            object.__setattr__(self, name, value)

    # --- epilogue ------------------------------------------------------------
    @property
    def num_subtiles(self) -> int:
        """Number of EPILOGUE_BLOCK_N-wide subtiles the epilogue drains per tile."""
        return self.block_n // self.epilogue_block_n

    @property
    def even_drain_order(self) -> list[int]:
        """Subtile indices (within the window) drained by even tiles, in order."""
        n = self.num_subtiles
        return list(range(n - 1, -1, -1)) if self.overlap else list(range(n))

    @property
    def odd_drain_order(self) -> list[int]:
        """Subtile indices (within the window) drained by odd tiles, in order."""
        return list(range(self.num_subtiles))

    def drain_order(self, tile: int) -> list[int]:
        """Drain order of the ``tile``-th tile a cluster processes (its local index)."""
        check_int("tile", tile, 0)
        return self.odd_drain_order if (self.overlap and tile % 2) else self.even_drain_order

    def accumulator(self, tile: int) -> Window:
        """The accumulator window the ``tile``-th tile of a cluster writes."""
        check_int("tile", tile, 0)
        return self.right if (self.overlap and tile % 2) else self.left

    def window_name(self, tile: int) -> str:
        check_int("tile", tile, 0)
        return "right" if (self.overlap and tile % 2) else "left"

    def subtile_columns(self, tile: int, subtile: int) -> Window:
        """Absolute TMEM columns of subtile ``subtile`` (window-relative index) of ``tile``."""
        acc = self.accumulator(tile)
        check_int("subtile", subtile, 0, self.num_subtiles)
        return Window(acc.offset + subtile * self.epilogue_block_n, self.epilogue_block_n)

    @property
    def overlap_window(self) -> Window | None:
        """The columns both accumulators use (``None`` with overlap off)."""
        return self.left.intersect(self.right) if self.overlap else None

    # --- scales -------------------------------------------------------------
    @property
    def k_chunks(self) -> int:
        """Packed chunks of 4 k-scales per BLOCK_K step."""
        return self.block_k // self.vec_size // SCALE_K_PER_CHUNK

    def a_scale_column(self, k_chunk: int) -> int:
        """First TMEM column of the A-scale chunk of 4 k-scales number ``k_chunk``."""
        check_int("k_chunk", k_chunk, 0, self.k_chunks)
        return self.a_scale.offset + SCALE_K_PER_CHUNK * k_chunk

    def b_scale_column(self, n_chunk: int, k_chunk: int) -> int:
        """First TMEM column of the B-scale chunk (128 N rows ``n_chunk``, k chunk ``k_chunk``)."""
        per_k = self.block_n // SCALE_ROWS_PER_CHUNK
        check_int("n_chunk", n_chunk, 0, per_k)
        check_int("k_chunk", k_chunk, 0, self.k_chunks)
        return self.b_scale.offset + SCALE_K_PER_CHUNK * (per_k * k_chunk + n_chunk)

    # --- ownership ------------------------------------------------------------
    def windows(self) -> dict[str, Window]:
        """The four named windows (``right`` equals ``left`` with overlap off)."""
        return {"left": self.left, "right": self.right, "a_scale": self.a_scale, "b_scale": self.b_scale}

    def column_owners(self) -> list[tuple[str, ...]]:
        """For each of the ``tmem_cols`` columns, the buffers that use it (maybe none)."""
        owners: list[list[str]] = [[] for _ in range(self.tmem_cols)]
        for name, win in self.windows().items():
            if name == "right" and not self.overlap:
                continue
            for c in win.columns():
                owners[c].append(name)
        return [tuple(o) for o in owners]

    def unused_cols(self) -> int:
        return sum(1 for o in self.column_owners() if not o)

    def to_dict(self) -> dict:
        """JSON-ready description: every column range as ``[start, end)`` under a ``*_columns`` name, and
        ``early_release_drain_step`` (a position in the drain order, not a subtile index).

        The older ``[offset, width]`` keys (``left_accum``, ``right_accum``, ``a_scale``, ``b_scale``) and
        ``early_release_subtile`` were kept for one release and are gone.
        """
        return {
            "a_format": self.a_format,
            "b_format": self.b_format,
            "block_k": self.block_k,
            "block_n": self.block_n,
            "epilogue_block_n": self.epilogue_block_n,
            "overlap": self.overlap,
            "tmem_cols": self.tmem_cols,
            "vec_size": self.vec_size,
            "left_accum_columns": self.left.as_range(),
            "right_accum_columns": self.right.as_range(),
            "a_scale_columns": self.a_scale.as_range(),
            "b_scale_columns": self.b_scale.as_range(),
            "overlap_columns": self.overlap_window.as_range() if self.overlap_window else None,
            "early_release_drain_step": self.early_release_subtile,
            "overlap_cols": self.overlap_cols,
            "num_subtiles": self.num_subtiles,
            "drain_order_even": self.even_drain_order,
            "drain_order_odd": self.odd_drain_order,
            "unused_cols": self.unused_cols(),
        }


def scale_columns(a_format: str, block_k: int, block_n: int = BLOCK_N) -> tuple[int, int]:
    """TMEM columns per CTA of one K step's A and B scales: one column per k-scale for A's 128 rows, and
    one per k-scale per 128-row chunk of B's ``block_n`` rows (B's scales are duplicated in both CTAs)."""
    scale_k = block_k // FORMAT_VEC_SIZE[a_format]
    return scale_k, scale_k * (block_n // SCALE_ROWS_PER_CHUNK)


def make_plan(
    a_format: str,
    b_format: str,
    block_k: int | None = None,
    epilogue_block_n: int = DEFAULT_EPILOGUE_BLOCK_N,
    overlap: bool = True,
) -> TmemPlan:
    """Build the plan with the seed's defaults (``block_k`` from the formats)."""
    if block_k is None:
        block_k = default_block_k(a_format, b_format)
    return TmemPlan(a_format, b_format, block_k, epilogue_block_n, overlap)
