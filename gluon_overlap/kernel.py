"""The warp-specialized 2-CTA block-scaled Gluon matmul with overlapping TMEM accumulators.

``C[M, N] = (A * a_scales) @ (B * b_scales).T`` in float16, for A ``M x K`` and B
``N x K`` in mxfp8 / mxfp4 / nvfp4, on a Blackwell data-center GPU (sm_100 / sm_103).

How the work is split
---------------------
* A **cluster of two CTAs** computes one 256 x 256 output tile at a time: CTA ``r``
  owns accumulator rows ``128 r ... 128 r + 127``.  Only the *lead* (even) CTA issues
  the ``tcgen05`` MMA, which reads the shared memory of both CTAs (``cta_group::2``).
* Each CTA runs **three partitions** at once (``gl.warp_specialize``):

  - the **load** worker (1 warp) streams A, B and their scales into a ring of five
    shared-memory stages with TMA;
  - the **MMA** worker (1 warp) copies the scales into TMEM and issues the block-scaled
    MMAs into an accumulator window;
  - the **epilogue** (the kernel's 4 default warps) drains the accumulator from TMEM in
    32-column subtiles, converts to float16 and stores it with TMA.

* The grid is **persistent**: ``min(#tiles, #SMs / 2)`` clusters, each walking the tile
  list with stride ``num_programs`` (a static schedule).  Tile ``i`` of a cluster is its
  ``i``-th tile, and its parity picks the accumulator window.

Five kinds of mbarriers connect the partitions (the producer side of a ring starts at
phase 1 so its first waits pass: the slots start out empty):

==============  =======  =================================================================
barrier         scope    meaning of one completed phase
==============  =======  =================================================================
load_ready[s]   pair     stage ``s`` holds the A/B/scale bytes of both CTAs (TMA tx-count)
load_empty[s]   per CTA  the MMA that read stage ``s`` finished (tcgen05 commit)
acc_ready[w]    per CTA  every MMA of the tile in window ``w`` finished (tcgen05 commit)
acc_empty[w]    pair     both epilogues drained window ``w`` completely
overlap         pair     both epilogues drained the columns the two windows share
==============  =======  =================================================================

Where the columns live -- both accumulator windows, the A and B scale slots, the
drain order of each tile parity and the subtile after which ``overlap`` is released --
comes from a :class:`gluon_overlap.tmem.TmemPlan`, passed to the kernel as the
constexpr ``TMEM_PLAN``.  Nothing here recomputes an offset.

The launch wrapper :func:`matmul` (and :func:`matmul_raw`, the seed's calling
convention) checks every input and the GPU before launching; see :func:`validate`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton

try:
    import triton.experimental.gluon as gluon
    import triton.experimental.gluon.language as gl
    from triton.experimental.gluon.language.nvidia.blackwell import (
        TensorMemoryLayout,
        TensorMemoryScalesLayout,
        allocate_tensor_memory,
        mbarrier,
        tcgen05_commit,
        tcgen05_copy,
        tcgen05_mma_barrier_count,
        tcgen05_mma_scaled,
        tensor_memory_descriptor,
        tma,
    )
    from triton.experimental.gluon.nvidia.blackwell import TensorDescriptor
except ImportError as exc:  # e.g. Triton 3.6 / 3.7 lack tcgen05_mma_barrier_count, allocate_mbarrier
    raise ImportError(
        f"gluon_overlap.kernel needs the Gluon API of triton==3.9.0, but triton {triton.__version__} is "
        f"installed ({exc}); install triton==3.9.0 (`make setup` does)"
    ) from exc

from gluon_overlap.device import SUPPORTED_CAPABILITIES, check_device
from gluon_overlap.formats import FORMAT_NAMES, QuantizedTensor, get_format
from gluon_overlap.swizzle import swizzled_shape
from gluon_overlap.tmem import (
    BLOCK_M,
    BLOCK_N,
    DEFAULT_EPILOGUE_BLOCK_N,
    FORMAT_ELEMENT_KIND,
    NUM_CTAS,
    TMEM_COLS,
    TmemPlan,
    check_format,
    make_plan,
)

# --- the seed's fixed configuration -------------------------------------------------
NUM_BUFFERS = 5  #: shared-memory stages of the load ring
EPILOGUE_BLOCK_N = DEFAULT_EPILOGUE_BLOCK_N  #: columns per epilogue subtile
CGA_LAYOUT = ((1, 0),)  #: the M dimension is split across the two CTAs of a cluster
OUT_DTYPE = torch.float16
#: K must be a multiple of this: every row of A, B (fp8: K bytes, fp4: K/2 bytes, or the
#: 32-byte-aligned padded fp4 of a mixed pair) is then TMA-aligned and the scales need no K padding.
K_MULTIPLE = 128


# =====================================================================================
# Compile-time helpers (plain Python evaluated while the kernel is traced)
# =====================================================================================
@gluon.constexpr_function
def element_kind(fmt):
    """MMA element type of a format name: ``"e4m3"`` (mxfp8) or ``"e2m1"`` (mxfp4, nvfp4)."""
    return FORMAT_ELEMENT_KIND[fmt]


@gluon.constexpr_function
def descriptor_format(elem_dtype, scale_dtype):
    """The format a pair of descriptors carries: fp8 elements are mxfp8; packed fp4 (uint8)
    elements are nvfp4 with float8 scales and mxfp4 with e8m0 (uint8) scales."""
    if elem_dtype == gl.float8e4nv:
        return "mxfp8"
    return "nvfp4" if scale_dtype == gl.float8e4nv else "mxfp4"


@gluon.constexpr_function
def check_plan_matches(plan, a_format, b_format, block_k, epilogue_block_n, block_n):
    """Refuse (at compile time) a TMEM plan made for other descriptors than the kernel got."""
    got = (plan.a_format, plan.b_format, plan.block_k, plan.epilogue_block_n, plan.block_n)
    want = (a_format, b_format, block_k, epilogue_block_n, block_n)
    if got != want:
        raise ValueError(f"TMEM_PLAN was made for (a_format, b_format, block_k, epilogue_block_n, block_n)={got}, "
                         f"but the descriptors say {want}")
    return True


@gluon.constexpr_function
def check_descriptors_match(plan, block_m, block_n, block_k, epilogue_block_n, a_block, b_block, c_block,
                            a_scale_block, b_scale_block, a_elem_per_byte, b_elem_per_byte):
    """Refuse (at compile time) descriptors whose block shapes disagree with the kernel's constexprs.

    The partitions read BLOCK_K, BLOCK_N and the subtile width from the *descriptors*, while the
    plan is checked against the constexpr parameters: both must describe the same tiles.
    """
    rep_k = plan.block_k // (plan.vec_size * 4)
    want = {
        "A block": [block_m, block_k // a_elem_per_byte],
        "B block": [block_n, block_k // b_elem_per_byte],
        "C block": [block_m, epilogue_block_n],
        "A-scale block": [1, block_m // 128, rep_k, 2, 256],
        "B-scale block": [1, block_n // 128, rep_k, 2, 256],
    }
    got = {"A block": a_block, "B block": b_block, "C block": c_block, "A-scale block": a_scale_block,
           "B-scale block": b_scale_block}
    for name, shape in want.items():
        if [int(x) for x in got[name]] != shape:
            raise ValueError(f"the {name} descriptor has block shape {[int(x) for x in got[name]]}, but BLOCK_M="
                             f"{block_m}, BLOCK_N={block_n}, BLOCK_K={block_k}, EPILOGUE_BLOCK_N={epilogue_block_n} "
                             f"and the plan need {shape}")
    return True


@gluon.constexpr_function
def drain_column(plan, tile_parity, step):
    """First column, relative to its window, of the subtile the epilogue drains at ``step`` of a
    tile of parity ``tile_parity``, read from the plan (``plan.drain_order`` -- even tiles high to
    low, odd tiles low to high -- and ``plan.subtile_columns``).  The same number is the subtile's
    column offset inside the output tile."""
    subtile = plan.subtile_columns(tile_parity, plan.drain_order(tile_parity)[step])
    return subtile.offset - plan.accumulator(tile_parity).offset


@gluon.constexpr_function
def accumulator_window(plan, tile_parity):
    """``(offset, cols)`` of the accumulator window a tile of parity ``tile_parity`` uses."""
    window = plan.accumulator(tile_parity)
    return (window.offset, window.cols)


# =====================================================================================
# Small building blocks
# =====================================================================================
@gluon.aggregate
class Counter:
    """Walks a ring of ``num_barriers`` mbarriers: which barrier is next and which parity to wait for.

    Use number ``j`` (from 0) of a ring is barrier ``j % n``; every time the index wraps
    around, the barrier is one phase further, so the parity to wait for flips.  Starting
    with ``phase = 0`` waits for the *first* completion of each barrier (a consumer: "wait
    until it is full"); starting with ``phase = 1`` passes the first lap at once (a
    producer: the slots start out empty, and "parity 1" is the phase before ``init``).
    """

    index: gl.tensor
    phase: gl.tensor
    num_barriers: gl.constexpr

    @gluon.jit
    def create(phase, num_barriers: gl.constexpr):
        return Counter(gl.to_tensor(0), gl.to_tensor(phase), num_barriers)

    @gluon.must_use_result
    @gluon.jit
    def next(self, pred=True):
        # Advance by one use (or not at all when ``pred`` is false); wrapping flips the parity.
        incr = self.index + gl.where(pred, 1, 0)
        rollover = incr == self.num_barriers
        index = gl.where(rollover, 0, incr)
        phase = gl.where(rollover, self.phase ^ 1, self.phase)
        return Counter(index, phase, self.num_barriers)


@gluon.aggregate
class TileScheduler:
    """Persistent static schedule: cluster ``p`` takes tiles ``p, p + P, p + 2P, ...``
    (``P = num_programs``), row-major over the ``NUM_PID_M x NUM_PID_N`` tile grid.  All three
    partitions run their own copy and therefore agree on the sequence of tiles."""

    has_work: gl.tensor
    tile_id: gl.tensor
    pid_m: gl.tensor
    pid_n: gl.tensor
    TILE_M: gl.constexpr
    TILE_N: gl.constexpr
    NUM_PID_M: gl.tensor
    NUM_PID_N: gl.tensor

    @gluon.jit
    def initialize(TILE_M: gl.constexpr, TILE_N: gl.constexpr, NUM_PID_M, NUM_PID_N):
        # program_id is the cluster index: both CTAs of a pair see the same value.
        return TileScheduler._at(gl.program_id(axis=0), TILE_M, TILE_N, NUM_PID_M, NUM_PID_N)

    @gluon.jit
    def _at(tile_id, TILE_M: gl.constexpr, TILE_N: gl.constexpr, NUM_PID_M, NUM_PID_N):
        has_work = tile_id < NUM_PID_M * NUM_PID_N
        pid_m = gl.to_tensor(0)
        pid_n = gl.to_tensor(0)
        if has_work:
            pid_m = tile_id // NUM_PID_N
            pid_n = tile_id % NUM_PID_N
        return TileScheduler(has_work, tile_id, pid_m, pid_n, TILE_M, TILE_N, NUM_PID_M, NUM_PID_N)

    @gluon.jit
    def get_offsets(self):
        return self.pid_m * self.TILE_M, self.pid_n * self.TILE_N

    @gluon.jit
    def step(self):
        return TileScheduler._at(self.tile_id + gl.num_programs(axis=0), self.TILE_M, self.TILE_N,
                                 self.NUM_PID_M, self.NUM_PID_N)


@gluon.jit
def unswizzle_scales_shared_memory(smem, BLOCK_MN: gl.constexpr, BLOCK_K: gl.constexpr, VEC_SIZE: gl.constexpr):
    """View a ``(1, REP_MN, REP_K, 2, 256)`` packed-block scale tile as ``[BLOCK_MN, BLOCK_K / VEC]``.

    No data moves: reshape/permute only change the shared-memory descriptor, and
    ``tcgen05_copy`` then sends each 512-byte ``[32, 4, 4]`` chunk to 4 TMEM columns.
    """
    smem = smem.reshape((smem.shape[1], smem.shape[2], 32, 4, 4))
    smem = smem.permute((0, 3, 2, 1, 4))
    return smem.reshape((BLOCK_MN, BLOCK_K // VEC_SIZE))


@gluon.jit
def async_mma_scaled(a_smem, b_smem, a_scale_smem, b_scale_smem, acc_tmem, tmem_pool, TMEM_PLAN: gl.constexpr,
                     mma_bar, use_acc):
    """Copy one K step's scales into their TMEM slots and issue one block-scaled 2-CTA MMA.

    The scale slots are rewritten every K step without a barrier: ``tcgen05.cp`` and
    ``tcgen05.mma`` run in issue order on the tensor pipe, so the copy of step ``k + 1``
    cannot overtake the MMA of step ``k`` that still reads the old scales.
    """
    A_ELEM_PER_BYTE: gl.constexpr = 2 if a_smem.dtype == gl.uint8 else 1
    BLOCK_M: gl.constexpr = a_smem.shape[0]
    BLOCK_N: gl.constexpr = b_smem.shape[0]
    BLOCK_K: gl.constexpr = a_smem.shape[1] * A_ELEM_PER_BYTE
    VEC_SIZE: gl.constexpr = TMEM_PLAN.vec_size

    a_scale = unswizzle_scales_shared_memory(a_scale_smem, BLOCK_M, BLOCK_K, VEC_SIZE)
    b_scale = unswizzle_scales_shared_memory(b_scale_smem, BLOCK_N, BLOCK_K, VEC_SIZE)

    # A scales are split by M like the accumulator (CTA r keeps its own 128 rows);
    # B scales are duplicated: each CTA's half of the MMA needs all 256 N rows.
    two_ctas: gl.constexpr = acc_tmem.type.layout.two_ctas
    a_scale_layout: gl.constexpr = TensorMemoryScalesLayout(cga_layout=[[1, 0]] if two_ctas else [])
    b_scale_layout: gl.constexpr = TensorMemoryScalesLayout(cga_layout=[[0, 0]] if two_ctas else [])
    # The scale slots are slices of the one 512-column allocation, at the plan's columns.
    a_scale_tmem = tmem_pool.slice(TMEM_PLAN.a_scale.offset, TMEM_PLAN.a_scale.cols).reinterpret(
        dtype=a_scale.dtype, shape=a_scale.shape, layout=a_scale_layout)
    b_scale_tmem = tmem_pool.slice(TMEM_PLAN.b_scale.offset, TMEM_PLAN.b_scale.cols).reinterpret(
        dtype=b_scale.dtype, shape=b_scale.shape, layout=b_scale_layout)
    tcgen05_copy(a_scale, a_scale_tmem)
    tcgen05_copy(b_scale, b_scale_tmem)

    # ``mbarriers=[mma_bar]`` = this MMA followed by a commit: mma_bar gets one arrival
    # (multicast to both CTAs) once the MMA -- and everything issued before it -- is done.
    tcgen05_mma_scaled(a_smem, b_smem.permute((1, 0)), acc_tmem, a_scale_tmem, b_scale_tmem,
                       element_kind(TMEM_PLAN.a_format), element_kind(TMEM_PLAN.b_format),
                       use_acc=use_acc, multicast=True, mbarriers=[mma_bar])


@gluon.aggregate
class PartitionArgs:
    """Everything the three partitions share: descriptors, buffers, barriers, the plan."""

    a_desc: tma.tensor_descriptor
    b_desc: tma.tensor_descriptor
    c_desc: tma.tensor_descriptor
    a_scale_desc: tma.tensor_descriptor
    b_scale_desc: tma.tensor_descriptor
    a_bufs: gl.shared_memory_descriptor
    b_bufs: gl.shared_memory_descriptor
    a_scale_bufs: gl.shared_memory_descriptor
    b_scale_bufs: gl.shared_memory_descriptor
    load_empty_bars: gl.shared_memory_descriptor
    load_ready_bars: gl.shared_memory_descriptor
    tmem_pool: tensor_memory_descriptor
    acc_empty_bars: gl.shared_memory_descriptor
    acc_ready_bars: gl.shared_memory_descriptor
    overlap_bar: gl.shared_memory_descriptor
    NUM_PID_M: gl.tensor
    NUM_PID_N: gl.tensor
    TMEM_PLAN: gl.constexpr

    @gluon.jit
    def scheduler(self):
        return TileScheduler.initialize(self.a_desc.block_shape[0], self.b_desc.block_shape[0], self.NUM_PID_M,
                                        self.NUM_PID_N)


# =====================================================================================
# The three partitions
# =====================================================================================
@gluon.jit
def load_partition(p):
    """1 warp per CTA: fill the five-stage ring, one K step (A, B, A scales, B scales) per stage.

    Waits:   ``load_empty[s]`` as a *producer* (Counter phase starts at 1): use ``j`` of the
             ring waits for completion ``j // 5`` -- the first lap passes at once, later laps
             wait for the MMA commit that freed the slot.
    Signals: ``load_ready[s]`` (pair-scoped, in the lead CTA) through ``expect`` = one arrival
             plus the byte count; the TMA engine subtracts the bytes as they land, so the
             phase completes when both CTAs' bytes are in.
    """
    A_ELEM_PER_BYTE: gl.constexpr = 2 if p.a_desc.dtype == gl.uint8 else 1
    B_ELEM_PER_BYTE: gl.constexpr = 2 if p.b_desc.dtype == gl.uint8 else 1
    BLOCK_M: gl.constexpr = p.a_desc.block_shape[0]
    BLOCK_N: gl.constexpr = p.b_desc.block_shape[0]
    BLOCK_K: gl.constexpr = p.a_desc.block_shape[1] * A_ELEM_PER_BYTE
    REP_M: gl.constexpr = p.a_scale_desc.block_shape[1]
    REP_N: gl.constexpr = p.b_scale_desc.block_shape[1]
    A_REP_K: gl.constexpr = p.a_scale_desc.block_shape[2]
    B_REP_K: gl.constexpr = p.b_scale_desc.block_shape[2]
    K = p.a_desc.shape[1] * A_ELEM_PER_BYTE
    stage_bytes: gl.constexpr = (p.a_desc.nbytes_per_cta + p.b_desc.nbytes_per_cta + p.a_scale_desc.nbytes_per_cta
                                 + p.b_scale_desc.nbytes_per_cta)

    state = Counter.create(1, p.load_empty_bars.shape[0])
    scheduler = p.scheduler()
    while scheduler.has_work:
        for k in range(0, K, BLOCK_K):
            # Wait until the MMA has finished reading this stage's previous contents.
            mbarrier.wait(p.load_empty_bars.index(state.index), state.phase)
            bar = p.load_ready_bars.index(state.index)
            mbarrier.expect(bar, stage_bytes)
            # Each CTA loads its own 128 rows of A and B (the CGA layout splits them); the
            # lead multicasts the B-scale tile, which both CTAs need whole.
            tma.async_load(p.a_desc, [scheduler.pid_m * BLOCK_M, k // A_ELEM_PER_BYTE], bar,
                           p.a_bufs.index(state.index), multicast=True)
            tma.async_load(p.b_desc, [scheduler.pid_n * BLOCK_N, k // B_ELEM_PER_BYTE], bar,
                           p.b_bufs.index(state.index), multicast=True)
            tma.async_load(p.a_scale_desc, [0, scheduler.pid_m * REP_M, (k // BLOCK_K) * A_REP_K, 0, 0], bar,
                           p.a_scale_bufs.index(state.index), multicast=True)
            tma.async_load(p.b_scale_desc, [0, scheduler.pid_n * REP_N, (k // BLOCK_K) * B_REP_K, 0, 0], bar,
                           p.b_scale_bufs.index(state.index), multicast=True)
            state = state.next()
        scheduler = scheduler.step()


@gluon.jit
def mma_partition(p):
    """1 warp per CTA (only the lead CTA's really issues; the other's waits are skipped).

    Per tile ``i`` of this cluster:

    1. wait ``acc_empty[i % 2]`` as a producer (phase starts at 1): the window is free once
       tile ``i - 2`` was fully drained by both epilogues (tiles 0 and 1 pass at once);
    2. with overlap on, wait ``overlap`` with parity ``(i + 1) % 2``: tile ``i - 1`` has
       drained the shared columns (tile 0 passes at once: parity 1 is "before init");
    3. for each K step wait ``load_ready[s]`` as a consumer (phase starts at 0), copy the
       scales and issue the MMA, whose commit arrives on ``load_empty[s]`` -- the same
       stage index, so the stage is handed back as soon as the MMA has read it;
    4. commit to ``acc_ready[i % 2]``: one arrival once all of the tile's MMAs are done.
    """
    A_ELEM_PER_BYTE: gl.constexpr = 2 if p.a_desc.dtype == gl.uint8 else 1
    BLOCK_K: gl.constexpr = p.a_desc.block_shape[1] * A_ELEM_PER_BYTE
    K = p.a_desc.shape[1] * A_ELEM_PER_BYTE
    TMEM_PLAN: gl.constexpr = p.TMEM_PLAN
    USE_OVERLAP: gl.constexpr = TMEM_PLAN.overlap
    LEFT: gl.constexpr = accumulator_window(TMEM_PLAN, 0)
    RIGHT: gl.constexpr = accumulator_window(TMEM_PLAN, 1)

    load_state = Counter.create(0, p.load_ready_bars.shape[0])
    acc_state = Counter.create(1, p.acc_empty_bars.shape[0])
    scheduler = p.scheduler()
    i = 0
    while scheduler.has_work:
        # (1) The whole window must be free: the epilogue of tile i - 2 drained all of it.
        mbarrier.wait(p.acc_empty_bars.index(acc_state.index), acc_state.phase)
        if USE_OVERLAP:
            # (2) The columns shared with the other window must be free too: the epilogue of
            # tile i - 1 releases them early, long before it has drained its whole window.
            mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)
        # Even tiles write the left window, odd tiles the right one (the same with overlap off).
        if USE_OVERLAP and i % 2 != 0:
            acc_tmem = p.tmem_pool.slice(RIGHT[0], RIGHT[1])
        else:
            acc_tmem = p.tmem_pool.slice(LEFT[0], LEFT[1])

        use_acc = False  # the first K step overwrites whatever the window held
        for _k in range(0, K, BLOCK_K):
            # (3) Wait for stage s to be full in both CTAs, then consume it.
            s = load_state.index
            mbarrier.wait(p.load_ready_bars.index(s), load_state.phase)
            async_mma_scaled(p.a_bufs.index(s), p.b_bufs.index(s), p.a_scale_bufs.index(s), p.b_scale_bufs.index(s),
                             acc_tmem, p.tmem_pool, TMEM_PLAN, p.load_empty_bars.index(s), use_acc)
            load_state = load_state.next()
            use_acc = True
        # (4) Tell the epilogue the accumulator is complete.
        tcgen05_commit(p.acc_ready_bars.index(acc_state.index))
        acc_state = acc_state.next()
        scheduler = scheduler.step()
        i += 1


@gluon.jit
def epilogue_partition(p):
    """The default partition (4 warps per CTA): TMEM -> registers -> float16 -> SMEM -> TMA store.

    Per tile ``i``: wait ``acc_ready[i % 2]`` as a consumer (phase starts at 0), then drain
    the window's 32-column subtiles in the plan's order.  With overlap on, even tiles drain
    the left window high to low and odd tiles the right window low to high, so the shared
    columns go first; right after subtile ``early_release_subtile`` has been read into
    registers the epilogue arrives on ``overlap`` (the next tile's MMA may now overwrite
    them), and after the last subtile on ``acc_empty[i % 2]`` (the whole window is free).
    """
    TILE_M: gl.constexpr = p.c_desc.block_shape[0]
    EPILOGUE_BLOCK_N: gl.constexpr = p.c_desc.block_shape[1]
    TMEM_PLAN: gl.constexpr = p.TMEM_PLAN
    USE_OVERLAP: gl.constexpr = TMEM_PLAN.overlap
    NUM_SUBTILES: gl.constexpr = TMEM_PLAN.num_subtiles
    SUBTILE_COLS: gl.constexpr = TMEM_PLAN.epilogue_block_n  # == EPILOGUE_BLOCK_N (checked at compile time)
    EARLY_RELEASE: gl.constexpr = TMEM_PLAN.early_release_subtile
    LEFT: gl.constexpr = accumulator_window(TMEM_PLAN, 0)
    RIGHT: gl.constexpr = accumulator_window(TMEM_PLAN, 1)
    # Two SMEM staging buffers let the TMA store of one subtile overlap the load of the next.
    STORE_STAGES: gl.constexpr = 1 if NUM_SUBTILES == 1 else 2

    acc_state = Counter.create(0, p.acc_ready_bars.shape[0])
    c_smems = gl.allocate_shared_memory(p.c_desc.dtype, [STORE_STAGES, TILE_M, EPILOGUE_BLOCK_N], p.c_desc.layout)
    store_state = Counter.create(0, STORE_STAGES)
    scheduler = p.scheduler()
    i = 0
    while scheduler.has_work:
        off_m, off_n = scheduler.get_offsets()
        # Wait until every MMA of this tile has completed.
        mbarrier.wait(p.acc_ready_bars.index(acc_state.index), acc_state.phase)
        if USE_OVERLAP and i % 2 != 0:
            acc_tmem = p.tmem_pool.slice(RIGHT[0], RIGHT[1])
        else:
            acc_tmem = p.tmem_pool.slice(LEFT[0], LEFT[1])

        for step in gl.static_range(NUM_SUBTILES):
            # Which subtile to drain now: the plan's order for this tile's parity.
            if USE_OVERLAP and i % 2 == 0:  # even tile: the left window, drained high to low
                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), SUBTILE_COLS)
                store_n = off_n + drain_column(TMEM_PLAN, 0, step)
            else:  # odd tile (or overlap off): drained low to high
                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 1, step), SUBTILE_COLS)
                store_n = off_n + drain_column(TMEM_PLAN, 1, step)
            acc = acc_sub.load().to(p.c_desc.dtype)  # tcgen05.ld + wait::ld: the columns are now in registers
            if USE_OVERLAP and step == EARLY_RELEASE:
                # The last shared column has been read: release the overlap to the next tile's MMA.
                mbarrier.arrive(p.overlap_bar.index(0), count=1)
            c_smem = c_smems.index(store_state.index)
            tma.store_wait(pendings=STORE_STAGES - 1)  # the store that used this buffer has read it
            c_smem.store(acc)
            tma.async_store(p.c_desc, [off_m, store_n], c_smem)
            store_state = store_state.next()
        # The whole window has been read: the MMA of tile i + 2 may reuse it.
        mbarrier.arrive(p.acc_empty_bars.index(acc_state.index), count=1)
        acc_state = acc_state.next()
        scheduler = scheduler.step()
        i += 1
    tma.store_wait(0)


# =====================================================================================
# The kernel
# =====================================================================================
@gluon.jit
def mma_scaled_warp_specialized_kernel(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, M, N, K,
                                       num_buffers: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                                       BLOCK_K: gl.constexpr, EPILOGUE_BLOCK_N: gl.constexpr,
                                       CGA_LAYOUT: gl.constexpr, TMEM_PLAN: gl.constexpr):
    """Allocate SMEM, TMEM and barriers, then fork into the epilogue, MMA and load partitions."""
    gl.static_assert(check_plan_matches(TMEM_PLAN, descriptor_format(a_desc.dtype, a_scale_desc.dtype),
                                        descriptor_format(b_desc.dtype, b_scale_desc.dtype), BLOCK_K,
                                        EPILOGUE_BLOCK_N, BLOCK_N))
    A_ELEM_PER_BYTE: gl.constexpr = 2 if a_desc.dtype == gl.uint8 else 1
    B_ELEM_PER_BYTE: gl.constexpr = 2 if b_desc.dtype == gl.uint8 else 1
    gl.static_assert(check_descriptors_match(TMEM_PLAN, BLOCK_M, BLOCK_N, BLOCK_K, EPILOGUE_BLOCK_N,
                                             a_desc.block_shape, b_desc.block_shape, c_desc.block_shape,
                                             a_scale_desc.block_shape, b_scale_desc.block_shape, A_ELEM_PER_BYTE,
                                             B_ELEM_PER_BYTE))
    NUM_CTAS: gl.constexpr = gl.num_ctas()
    TWO_CTAS: gl.constexpr = NUM_CTAS > 1
    BLOCK_M_PER_CTA: gl.constexpr = BLOCK_M // NUM_CTAS
    gl.static_assert(BLOCK_M_PER_CTA == 128)  # tcgen05_mma_scaled rejects 64-row blocks
    USE_OVERLAP: gl.constexpr = TMEM_PLAN.overlap
    num_acc_buffers: gl.constexpr = 2 if USE_OVERLAP else 1

    # The load ring: NUM_BUFFERS stages of A, B and their packed scale tiles.
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [num_buffers] + a_desc.block_shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [num_buffers] + b_desc.block_shape, b_desc.layout)
    a_scale_bufs = gl.allocate_shared_memory(a_scale_desc.dtype, [num_buffers] + a_scale_desc.block_shape,
                                             a_scale_desc.layout)
    b_scale_bufs = gl.allocate_shared_memory(b_scale_desc.dtype, [num_buffers] + b_scale_desc.block_shape,
                                             b_scale_desc.layout)

    # All 512 TMEM columns in one allocation; the plan's windows are slices of it.  The
    # allocator never sees the slices: only the barrier protocol keeps the aliasing safe.
    tmem_layout: gl.constexpr = TensorMemoryLayout([BLOCK_M_PER_CTA, BLOCK_N], col_stride=1, cga_layout=CGA_LAYOUT,
                                                   two_ctas=TWO_CTAS)
    tmem_pool = allocate_tensor_memory(gl.float32, [BLOCK_M, TMEM_PLAN.tmem_cols], tmem_layout)

    # How many arrivals one multicast MMA commit delivers to a CTA's barrier (1 here).
    mma_barrier_count: gl.constexpr = tcgen05_mma_barrier_count(
        [a_bufs.index(0), b_bufs.index(0), a_scale_bufs.index(0), b_scale_bufs.index(0)], multicast=True,
        two_ctas=TWO_CTAS)
    # Barriers the lead CTA waits on before issuing are pair-scoped (two_ctas=True: one copy,
    # in the lead, that both CTAs arrive on); barriers signalled by MMA completion are per CTA.
    load_empty_bars = mbarrier.allocate_mbarrier(batch=num_buffers)
    load_ready_bars = mbarrier.allocate_mbarrier(batch=num_buffers, two_ctas=TWO_CTAS)
    for s in gl.static_range(num_buffers):
        mbarrier.init(load_empty_bars.index(s), count=mma_barrier_count)
        mbarrier.init(load_ready_bars.index(s), count=1)
    acc_empty_bars = mbarrier.allocate_mbarrier(batch=num_acc_buffers, two_ctas=TWO_CTAS)
    acc_ready_bars = mbarrier.allocate_mbarrier(batch=num_acc_buffers)
    for w in gl.static_range(num_acc_buffers):
        mbarrier.init(acc_empty_bars.index(w), count=1)
        mbarrier.init(acc_ready_bars.index(w), count=1)
    # The ping-pong barrier guarding the shared columns (initialized but unused with overlap off).
    overlap_bar = mbarrier.allocate_mbarrier(batch=1, two_ctas=TWO_CTAS)
    mbarrier.init(overlap_bar.index(0), count=1)

    p = PartitionArgs(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, a_bufs, b_bufs, a_scale_bufs, b_scale_bufs,
                      load_empty_bars, load_ready_bars, tmem_pool, acc_empty_bars, acc_ready_bars, overlap_bar,
                      gl.cdiv(M, BLOCK_M), gl.cdiv(N, BLOCK_N), TMEM_PLAN)
    gl.warp_specialize([
        (epilogue_partition, (p, )),  # default partition: the kernel's num_warps (4)
        (mma_partition, (p, )),  # worker: 1 warp, 24 registers
        (load_partition, (p, )),  # worker: 1 warp, 24 registers
    ], [1, 1], [24, 24])


# =====================================================================================
# Host side: descriptors, validation, launch
# =====================================================================================
from gluon_overlap import limits  # noqa: E402  (torch-free; kept with the host side it serves)
from gluon_overlap.limits import check_pair  # noqa: E402
from gluon_overlap.swizzle import swizzle_scales  # noqa: E402


def scale_block_k(plan: TmemPlan) -> int:
    """Packed scale chunks (4 k-scales each) per BLOCK_K step."""
    return plan.block_k // (plan.vec_size * 4)


def make_descriptors(a_data: torch.Tensor, b_data: torch.Tensor, a_scale_swizzled: torch.Tensor,
                     b_scale_swizzled: torch.Tensor, c: torch.Tensor, plan: TmemPlan) -> tuple:
    """The five TMA descriptors of the kernel (works on CUDA and on ``device="meta"`` tensors).

    ``a_scale_swizzled`` / ``b_scale_swizzled`` are the ``(REP_MN, REP_K, 32, 4, 4)`` packed
    blocks of :func:`gluon_overlap.swizzle.swizzle_scales`; the kernel sees them as
    ``(1, REP_MN, REP_K, 2, 256)``.
    """
    a_fp4 = FORMAT_ELEMENT_KIND[plan.a_format] == "e2m1"
    b_fp4 = FORMAT_ELEMENT_KIND[plan.b_format] == "e2m1"
    mixed = a_fp4 != b_fp4  # an fp4 operand next to an fp8 one is loaded padded to one byte per element
    cga = tuple(tuple(x) for x in CGA_LAYOUT)
    a_block = [BLOCK_M, plan.block_k // (2 if a_fp4 else 1)]
    b_block = [plan.block_n, plan.block_k // (2 if b_fp4 else 1)]
    a_layout = gl.NVMMASharedLayout.get_default_for(a_block, gl.uint8 if a_fp4 else gl.float8e4nv,
                                                    fp4_padded=(mixed and a_fp4), cga_layout=cga)
    b_layout = gl.NVMMASharedLayout.get_default_for(b_block, gl.uint8 if b_fp4 else gl.float8e4nv,
                                                    fp4_padded=(mixed and b_fp4), cga_layout=cga)
    a_desc = TensorDescriptor.from_tensor(a_data, a_block, a_layout)
    b_desc = TensorDescriptor.from_tensor(b_data, b_block, b_layout)
    c_block = [BLOCK_M, plan.epilogue_block_n]
    c_layout = gl.NVMMASharedLayout.get_default_for(c_block, gl.float16, cga_layout=cga)
    c_desc = TensorDescriptor.from_tensor(c, c_block, c_layout)
    rep_k = scale_block_k(plan)
    # A scales: each CTA loads its own 128-row chunk (split by M); B scales: broadcast to both.
    a_scale_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5,
                                          cga_layout=[[0, 1, 0, 0, 0]])
    b_scale_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5,
                                          cga_layout=[[0, 0, 0, 0, 0]])
    a_scale_5d = a_scale_swizzled.reshape(1, a_scale_swizzled.shape[0], a_scale_swizzled.shape[1], 2, 256)
    b_scale_5d = b_scale_swizzled.reshape(1, b_scale_swizzled.shape[0], b_scale_swizzled.shape[1], 2, 256)
    a_scale_desc = TensorDescriptor.from_tensor(a_scale_5d, [1, BLOCK_M // 128, rep_k, 2, 256], a_scale_layout)
    b_scale_desc = TensorDescriptor.from_tensor(b_scale_5d, [1, plan.block_n // 128, rep_k, 2, 256],
                                                b_scale_layout)
    return a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc


def kernel_args(a_data: torch.Tensor, b_data: torch.Tensor, a_scale_swizzled: torch.Tensor,
                b_scale_swizzled: torch.Tensor, c: torch.Tensor, plan: TmemPlan, m: int, n: int, k: int) -> tuple:
    """Positional arguments of :func:`mma_scaled_warp_specialized_kernel` (constexprs included)."""
    descs = make_descriptors(a_data, b_data, a_scale_swizzled, b_scale_swizzled, c, plan)
    return (*descs, m, n, k, NUM_BUFFERS, BLOCK_M, plan.block_n, plan.block_k, plan.epilogue_block_n, CGA_LAYOUT,
            plan)


# --- validation ----------------------------------------------------------------------
def infer_format(data: torch.Tensor, scales: torch.Tensor) -> str:
    """Format of a raw operand from its dtypes (the seed's convention)."""
    for name, t in (("data", data), ("scales", scales)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"operand {name} must be a torch.Tensor, got {type(t).__name__}")
    specs = [get_format(name) for name in FORMAT_NAMES]
    by_data = [s for s in specs if s.torch_element_dtype == data.dtype]
    if not by_data:
        known = ", ".join(f"{s.torch_element_dtype} ({s.name})" for s in specs)
        raise ValueError(f"operand data dtype {data.dtype} is not one of {known}")
    for spec in by_data:
        if spec.torch_scale_dtype == scales.dtype:
            return spec.name
    wanted = " or ".join(f"{s.torch_scale_dtype} ({s.name})" for s in by_data)
    raise ValueError(f"{data.dtype} data needs {wanted} scales, got {scales.dtype}")


def expected_swizzled_shape(mn: int, k: int, fmt: str) -> tuple[int, int, int, int, int]:
    """Shape of the packed-block (swizzled) scales of an ``mn x k`` operand."""
    return swizzled_shape(mn, k // get_format(fmt).vec_size)


def _check_operand(name: str, data: torch.Tensor, swizzled: torch.Tensor, fmt: str, rows_name: str) -> tuple[int, int]:
    spec = get_format(fmt)
    expected_data, expected_scale = spec.torch_element_dtype, spec.torch_scale_dtype
    if data.dtype != expected_data:
        raise ValueError(f"{name} data has dtype {data.dtype}; {fmt} needs {expected_data}")
    if swizzled.dtype != expected_scale:
        raise ValueError(f"{name} scales have dtype {swizzled.dtype}; {fmt} needs {expected_scale}")
    if data.dim() != 2:
        raise ValueError(f"{name} data must be 2-D ({rows_name} x K), got shape {tuple(data.shape)}")
    if not data.is_contiguous():
        raise ValueError(f"{name} data must be contiguous (row-major, K-major), got strides {data.stride()}")
    rows, cols = data.shape
    k = cols * spec.elements_per_byte
    if rows <= 0 or k <= 0:
        raise ValueError(f"{name} must be non-empty, got shape {tuple(data.shape)}")
    row_bytes = data.stride(0) * data.element_size()
    if data.stride(1) != 1 or row_bytes % 16:
        # is_contiguous() ignores the stride of a size-1 dimension, but the TMA descriptor is built from it
        raise ValueError(f"{name} data has strides {data.stride()}: TMA needs unit element stride and a row stride "
                         f"that is a multiple of 16 bytes (got {row_bytes} bytes), even for a single row")
    want = expected_swizzled_shape(rows, k, fmt)
    if tuple(swizzled.shape) != want:
        hint = ""
        if swizzled.dim() == 2:
            hint = " (these look like un-swizzled scales: pass swizzle.swizzle_scales(scales))"
        raise ValueError(f"{name} scales have shape {tuple(swizzled.shape)}; the packed-block layout of a "
                         f"{rows} x {k} {fmt} operand is {want}{hint}")
    if not swizzled.is_contiguous():
        raise ValueError(f"{name} swizzled scales must be contiguous")
    dense = [1]
    for extent in reversed(swizzled.shape[1:]):
        dense.insert(0, dense[0] * extent)
    if list(swizzled.stride()) != dense:
        raise ValueError(f"{name} swizzled scales have strides {swizzled.stride()}; the 5-D TMA view needs the "
                         f"dense strides {tuple(dense)} (a size-1 dimension's stride counts too)")
    return rows, k


@dataclass(frozen=True)
class Validated:
    """The checked problem: formats, sizes and the TMEM plan of one launch."""

    a_format: str
    b_format: str
    m: int
    n: int
    k: int
    plan: TmemPlan


def validate(a_data: torch.Tensor, b_data: torch.Tensor, a_scale_swizzled: torch.Tensor,
             b_scale_swizzled: torch.Tensor, a_format: str, b_format: str, overlap: bool = True,
             check_gpu: bool = True) -> Validated:
    """Check everything about a launch; raise ValueError naming the problem. Nothing is launched.

    Order: formats, dtypes and shapes first (device independent), then :func:`check_placement`
    (one device, TMA base alignment, CUDA, then the GPU).
    """
    check_format(a_format, "a_format")
    check_format(b_format, "b_format")
    check_pair(a_format, b_format)  # the one list of pairs (gluon_overlap.limits), shared with every command
    if not isinstance(overlap, bool):
        raise ValueError(f"overlap={overlap!r} must be True or False")
    tensors = {"A": a_data, "B": b_data, "A scales": a_scale_swizzled, "B scales": b_scale_swizzled}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    m, ka = _check_operand("A", a_data, a_scale_swizzled, a_format, "M")
    n, kb = _check_operand("B", b_data, b_scale_swizzled, b_format, "N")
    if ka != kb:
        raise ValueError(f"A has K={ka} but B has K={kb}: the reduction dimensions must match")
    k = ka
    # the rules of gluon_overlap.limits, which every command applies too
    if k % limits.K_MULTIPLE:
        raise ValueError(f"K={k} must be a multiple of {limits.K_MULTIPLE} (TMA row alignment of the fp4/fp8 "
                         "operands and whole 4-scale groups)")
    if n % limits.N_MULTIPLE:
        raise ValueError(f"N={n} must be a multiple of {limits.N_MULTIPLE}: each float16 row of C must be 16-byte "
                         "aligned for TMA")
    for name, size in (("M", m), ("N", n), ("K", k)):
        if size >= limits.MAX_DIM:
            raise ValueError(f"{name}={size} must be below 2**31 (32-bit TMA coordinates)")
    plan = make_plan(a_format, b_format, overlap=overlap)
    mixed = FORMAT_ELEMENT_KIND[a_format] != FORMAT_ELEMENT_KIND[b_format]
    padded = {name for name, fmt in (("A", a_format), ("B", b_format)) if mixed and fmt != "mxfp8"}
    check_placement(tensors, padded, check_gpu)
    return Validated(a_format, b_format, m, n, k, plan)


def check_placement(tensors: dict[str, torch.Tensor], padded_fp4: set[str], check_gpu: bool = True) -> torch.device:
    """Check where the tensors live; return their one device.

    ``tensors`` maps names to tensors; the ``padded_fp4`` ones are loaded as padded fp4 next
    to an fp8 operand.  Order: one device; TMA base alignment (16 bytes, 32 for padded fp4),
    checked on any device since a misaligned view stays misaligned when moved; CUDA; the GPU.
    """
    devices = {t.device for t in tensors.values()}
    if len(devices) != 1:
        raise ValueError(f"all tensors must be on one device, got {sorted(str(d) for d in devices)}")
    device = devices.pop()
    for name, t in tensors.items():
        if t.data_ptr() % 16:
            raise ValueError(f"{name} must start at a 16-byte-aligned address (TMA), but data_ptr() % 16 = "
                             f"{t.data_ptr() % 16}")
        if name in padded_fp4 and t.data_ptr() % 32:
            raise ValueError(f"{name} is loaded as padded fp4 next to an fp8 operand and must start at a "
                             f"32-byte-aligned address (TMA), but data_ptr() % 32 = {t.data_ptr() % 32}")
    if device.type != "cuda":
        raise ValueError(f"the tensors are on {device.type!r}; the kernel needs CUDA tensors on an sm_100/sm_103 GPU")
    if check_gpu:
        check_device(device)
    return device


# --- launch --------------------------------------------------------------------------
def matmul_raw(a_data: torch.Tensor, b_data: torch.Tensor, a_scale_swizzled: torch.Tensor,
               b_scale_swizzled: torch.Tensor, *, overlap: bool = True, a_format: str | None = None,
               b_format: str | None = None) -> torch.Tensor:
    """The seed's ``mma_scaled_warp_specialized(A, B, A_scale, B_scale, use_overlap)``: raw tensors
    and packed-block scales in, float16 ``C = A @ B.T`` out.  Formats are inferred from dtypes
    unless given."""
    a_format = a_format or infer_format(a_data, a_scale_swizzled)
    b_format = b_format or infer_format(b_data, b_scale_swizzled)
    v = validate(a_data, b_data, a_scale_swizzled, b_scale_swizzled, a_format, b_format, overlap)
    device = a_data.device
    c = torch.empty(v.m, v.n, device=device, dtype=OUT_DTYPE)
    args = kernel_args(a_data, b_data, a_scale_swizzled, b_scale_swizzled, c, v.plan, v.m, v.n, v.k)
    num_tiles = triton.cdiv(v.m, BLOCK_M) * triton.cdiv(v.n, v.plan.block_n)
    grid = launch_grid(num_tiles, torch.cuda.get_device_properties(device).multi_processor_count)
    # Triton launches on the *current* device: make it the tensors' one (they may be on cuda:1).
    with torch.cuda.device(device):
        mma_scaled_warp_specialized_kernel[grid](*args, num_ctas=NUM_CTAS)
    return c


def launch_grid(num_tiles: int, sm_count: int) -> tuple[int]:
    """The persistent grid: one cluster of ``NUM_CTAS`` CTAs per ``NUM_CTAS`` SMs, never more
    clusters than tiles, at least one."""
    return (max(1, min(num_tiles, sm_count // NUM_CTAS)), )


def matmul(a: QuantizedTensor, b: QuantizedTensor, *, overlap: bool = True,
           a_scale_swizzled: torch.Tensor | None = None, b_scale_swizzled: torch.Tensor | None = None) -> torch.Tensor:
    """``C = dequant(a) @ dequant(b).T`` in float16 for two :class:`gluon_overlap.formats.QuantizedTensor`.

    The scales are swizzled into the packed-block layout unless already-swizzled ones are
    passed (e.g. ``Problem.a_scale_swizzled``).
    """
    for name, q in (("a", a), ("b", b)):
        if not all(hasattr(q, attr) for attr in ("format", "data", "scales")):
            raise ValueError(f"{name} must be a QuantizedTensor (format, data, scales), got {type(q).__name__}")
    if a_scale_swizzled is None or b_scale_swizzled is None:

        a_scale_swizzled = swizzle_scales(a.scales) if a_scale_swizzled is None else a_scale_swizzled
        b_scale_swizzled = swizzle_scales(b.scales) if b_scale_swizzled is None else b_scale_swizzled
    return matmul_raw(a.data, b.data, a_scale_swizzled, b_scale_swizzled, overlap=overlap, a_format=a.format,
                      b_format=b.format)


__all__ = [
    "BLOCK_M", "BLOCK_N", "CGA_LAYOUT", "EPILOGUE_BLOCK_N", "K_MULTIPLE", "NUM_BUFFERS", "NUM_CTAS", "OUT_DTYPE",
    "SUPPORTED_CAPABILITIES", "TMEM_COLS", "Validated", "check_device", "check_placement", "expected_swizzled_shape",
    "infer_format", "kernel_args", "launch_grid", "make_descriptors", "matmul", "matmul_raw",
    "mma_scaled_warp_specialized_kernel", "validate",
]
