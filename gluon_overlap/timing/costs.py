"""Cost formulas of the timing model: pure functions of a :class:`~gluon_overlap.hardware.Hardware`.

Each function prices one operation of the seed kernel, in seconds, from first principles:

* **TMA load of a stage** (per CTA): the stage's bytes (``nbytes_per_cta`` of the four descriptors;
  the B scales are multicast so each CTA counts the full 256 rows) reach shared memory at the SM's L2 link
  ``l2_read_bytes_per_clk_per_sm`` or its share of L2's GPU-wide load rate ``l2_read_tb_s``, whichever is
  smaller; the *L2-miss* part of them additionally queues on the cluster's share of HBM bandwidth (see
  :func:`hbm_miss_fraction` for which bytes miss).
* **MMA per K block**: ``2 x 256 x 256 x BLOCK_K`` FLOPs of one 2-CTA ``tcgen05.mma`` over
  the two SMs' tensor rate of the instruction the compiled kernel issues (its kind and K per instruction, read
  from the SASS: :func:`gluon_overlap.timing.kernel_costs.shipped_mma_mix`): ``kind::mxf8f6f4`` (K = 32) runs at
  the FP8 rate even with an fp4 operand; ``kind::mxf4`` / ``mxf4nvf4`` with K = 64 at ``fp4_k64_rate_per_fp8``
  times it -- the vendor FP4 peak on sm_100, two thirds of it on Blackwell Ultra, whose peak is quoted for a
  K = 96 form this kernel does not issue (:meth:`gluon_overlap.hardware.Hardware.mma_flops_per_sm`) -- times the
  calibrated ``tensor_efficiency``.
  The MMAs read their operands out of the SM's shared memory (A, this CTA's half of B -- read once for both tensor
  cores of the pair, as a B200 microbenchmark shows -- and the scale copies' reads:
  :func:`mainloop_smem_read_bytes_per_cta`); what those reads leave of it is what an epilogue drained meanwhile can
  use (:func:`drain_smem_bytes_per_clk`).  The TMA's stage writes do not count: measured on an H200, they do not
  take from the MMAs' shared-memory budget.
* **Scale copies**: one ``tcgen05.cp ... 32x128b.warpx4`` per 512-byte chunk (4 TMEM columns),
  at shared-memory read bandwidth; they sit in the tensor pipe in issue order with the MMAs.
* **Epilogue subtile** (per CTA, 128 rows x 32 columns): priced from the compiled kernel's own instruction
  mix (:mod:`gluon_overlap.timing.kernel_costs`): the LDTM of 16 KB, the 16 F2FP conversions per thread, the
  BAR.SYNCs, the STS.128 of 8 KB, the proxy fence.  The TMA store then reads the 8 KB out of shared memory
  at the SM's share of L2's GPU-wide store rate ``l2_write_tb_s`` (measured on an H200: every SM storing at
  once, L2 accepts stores at half its load rate), taking ``l2_store_load_sharing`` of that time from the
  SM's loads too; the bytes are written back to HBM on the cluster's share of the HBM *write* bandwidth
  (``hbm_write_efficiency``: writes stream less efficiently than reads), and only the launch's end waits for that:
  ``tma.store_wait`` lowers to ``cp.async.bulk.wait_group.read``, which waits for the shared-memory read only.
* **Barrier latency**: a local arrive, a remote (peer-CTA, DSMEM) arrive.

**Shared memory beside the MMAs** (measured on an H200, ``data/measurements/h200-smem-contention.json``): the MMAs'
operand reads come first and lose nothing to a drain; a subtile's ``st.shared`` issued while the tensor pipe is busy
moves at ``smem_drain_share`` of what the reads leave, its TMA store's read at half that
(:func:`drain_smem_bytes_per_clk`), both at the full width once the pipe is idle
(:class:`gluon_overlap.timing.backend.CostBackend`).  These are bandwidths: ``epilogue_cost_factor`` does not scale
them.

Every per-subtile epilogue cost (LDTM + conversions, BAR.SYNCs + STS + fence, the arrive's BAR.SYNC, the TMA
store's shared-memory read) is multiplied by ``epilogue_cost_factor``: the one *calibrated* number of the drain,
fitted to the published B300 overlap-off / overlap-on table (:mod:`gluon_overlap.timing.fit`).  The first-principles
estimates fix how the drain's cost splits over its steps and how it scales with the format; the factor fixes its
size, which no first principle pins (dual issue, how far the 4 warps' steps overlap, how L2 absorbs a burst).

Nothing here knows about events or time order; :mod:`gluon_overlap.timing.model` composes them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from gluon_overlap.hardware import Hardware
from gluon_overlap.limits import grid_for
from gluon_overlap.timing.kernel_costs import EpilogueMix, shipped_mix, shipped_mma_mix
from gluon_overlap.tmem import (
    BLOCK_M,
    BLOCK_N,
    FORMAT_ELEMENT_KIND,
    NUM_CTAS,
    ROWS_PER_CTA,
    SCALE_K_PER_CHUNK,
    SCALE_ROWS_PER_CHUNK,
    TmemPlan,
)

SCALE_CHUNK_BYTES = SCALE_ROWS_PER_CHUNK * SCALE_K_PER_CHUNK  # one packed [32, 4, 4] chunk: 512 bytes
OUT_BYTES = 2  # float16 C
EPILOGUE_WARPS = 4  # the default partition: one warp per SM sub-partition
WARP_SIZE = 32


def rate_class(a_format: str, b_format: str) -> str:
    """``"fp8"`` if an e4m3 operand is involved (kind::mxf8f6f4), else ``"fp4"``."""
    kinds = {FORMAT_ELEMENT_KIND[a_format], FORMAT_ELEMENT_KIND[b_format]}
    return "fp8" if "e4m3" in kinds else "fp4"


def elements_per_byte(fmt: str) -> int:
    return 2 if FORMAT_ELEMENT_KIND[fmt] == "e2m1" else 1


@dataclass(frozen=True)
class StageBytes:
    """Bytes one CTA's TMA loads of one K block bring in (the seed's ``nbytes_per_cta`` sum)."""

    a: int
    b: int
    a_scale: int
    b_scale: int

    @property
    def total(self) -> int:
        return self.a + self.b + self.a_scale + self.b_scale


def stage_bytes_per_cta(plan: TmemPlan) -> StageBytes:
    """Per-CTA bytes of one load stage: its 128 rows of A and B, its A scales, all 256 rows of B scales.

    nvfp4 x nvfp4 (BLOCK_K = 256): 16384 + 16384 + 2048 + 4096 = 38912, the ``expect`` byte count
    seen in the compiled kernel (NOTES/SEMANTICS).  Global-memory bytes of packed fp4 are counted
    (the padded shared-memory layout of a mixed fp4 operand costs no extra L2/HBM traffic).
    """
    scale_k = plan.block_k // plan.vec_size
    return StageBytes(
        a=ROWS_PER_CTA * plan.block_k // elements_per_byte(plan.a_format),
        b=ROWS_PER_CTA * plan.block_k // elements_per_byte(plan.b_format),
        a_scale=ROWS_PER_CTA * scale_k,
        b_scale=BLOCK_N * scale_k,
    )


def smem_operand_bytes_per_cta(plan: TmemPlan) -> tuple[int, int]:
    """Shared-memory bytes of one CTA's A and B blocks of one stage: an fp4 operand next to an fp8 one (the mixed
    pair, ``kind::mxf8f6f4``) is stored *padded*, one byte per element (``fp4_padded`` in the kernel's layout; the
    TMA unpacks it), so it takes as much shared memory -- and as much of its bandwidth -- as fp8."""
    mixed = len({FORMAT_ELEMENT_KIND[plan.a_format], FORMAT_ELEMENT_KIND[plan.b_format]}) == 2
    per_byte = (lambda fmt: 1) if mixed else elements_per_byte  # noqa: E731
    return (
        ROWS_PER_CTA * plan.block_k // per_byte(plan.a_format),
        ROWS_PER_CTA * plan.block_k // per_byte(plan.b_format),
    )


def operand_bytes(plan: TmemPlan, rows: int, k: int) -> tuple[float, float]:
    """Global bytes of ``rows`` rows of A and of B (data + scales) over the whole K."""
    scale = k / plan.vec_size
    a = rows * (k / elements_per_byte(plan.a_format) + scale)
    b = rows * (k / elements_per_byte(plan.b_format) + scale)
    return a, b


# --- tensor pipe ----------------------------------------------------------------------------
def mma_flops_per_k_block(block_k: int) -> int:
    """FLOPs of one 2-CTA MMA of a 256 x 256 tile over ``block_k``."""
    return 2 * BLOCK_M * BLOCK_N * block_k


@functools.lru_cache(maxsize=64)
def mma_k_per_instruction(a_format: str, b_format: str) -> int:
    """K of one MMA instruction of the compiled kernel (BLOCK_K / MMAs per K step, counted in its SASS)."""
    return shipped_mma_mix(a_format, b_format).k_per_instruction


def mma_time(hw: Hardware, plan: TmemPlan) -> float:
    """Seconds the tensor pipes of the pair spend on one K block's MMA."""
    cls = rate_class(plan.a_format, plan.b_format)
    per_sm = hw.mma_flops_per_sm(cls, mma_k_per_instruction(plan.a_format, plan.b_format))
    return mma_flops_per_k_block(plan.block_k) / (NUM_CTAS * per_sm * hw.tensor_efficiency(cls))


def mainloop_smem_read_bytes_per_cta(hw: Hardware, plan: TmemPlan) -> float:
    """Bytes the MMAs of one K block read out of one CTA's shared memory: A once, this CTA's half of B
    ``smem_b_operand_reads`` times (1: a 2-CTA MMA reads each half once and gives it to both tensor cores -- on a
    B200 a pair's M = 256, N = 64 SS MMA takes 43.4 clocks, 118 B/clk for A + half of B once, while twice would need
    142 B/clk, beyond the 127 B/clk one-CTA shapes show the reads are capped at; docs/NOTES.md), and the scales once
    (the ``tcgen05.cp`` copies).  A padded fp4 operand counts one byte per element.  The TMA's stage writes are not
    counted: measured on an H200, TMA loads do not take from the MMAs' shared-memory budget."""
    a_smem, b_smem = smem_operand_bytes_per_cta(plan)
    stage = stage_bytes_per_cta(plan)
    return a_smem + hw.smem_b_operand_reads * b_smem + stage.a_scale + stage.b_scale


def scale_copy_chunks(plan: TmemPlan) -> int:
    """``tcgen05.cp`` instructions per K block: A and B scale columns / 4 columns per chunk."""
    return (plan.a_scale_cols + plan.b_scale_cols) // SCALE_K_PER_CHUNK


def scale_copy_time(hw: Hardware, plan: TmemPlan) -> float:
    """Seconds of the scale copies of one K block (512 B per chunk at shared-memory bandwidth)."""
    return hw.clk(scale_copy_chunks(plan) * SCALE_CHUNK_BYTES / hw.smem_bytes_per_clk)


def mma_issue_time(hw: Hardware) -> float:
    """Seconds the single MMA warp needs to issue one K block (wait, copies, MMA, commit)."""
    return hw.clk(hw.mma_issue_clk)


def mma_pipeline_latency(hw: Hardware) -> float:
    return hw.clk(hw.mma_pipeline_latency_clk)


# --- loads ------------------------------------------------------------------------------------
def load_bytes_per_s_per_sm(hw: Hardware, loading_sms: int = 1) -> float:
    """How fast one SM's TMA loads fill while ``loading_sms`` SMs load at once: its L2 -> shared-memory link,
    or its share of the GPU-wide rate at which L2 serves TMA loads, whichever is smaller."""
    link = hw.l2_read_bytes_per_clk_per_sm * hw.clock_ghz * 1e9
    return min(link, hw.l2_read_tb_s * 1e12 / max(1, loading_sms))


def l2_read_time(hw: Hardware, nbytes: float, loading_sms: int = 1) -> float:
    """Seconds ``nbytes`` take to reach one SM's shared memory from L2 (see :func:`load_bytes_per_s_per_sm`)."""
    return nbytes / load_bytes_per_s_per_sm(hw, loading_sms)


def hbm_time(hw: Hardware, nbytes: float, sharers: int) -> float:
    """Seconds ``nbytes`` of reads take on 1/``sharers`` of the GPU's achievable HBM bandwidth."""
    return nbytes * sharers / hw.hbm_bytes_per_s


def hbm_write_time(hw: Hardware, nbytes: float, sharers: int) -> float:
    """Seconds ``nbytes`` of write-back take on 1/``sharers`` of the GPU's achievable HBM write bandwidth."""
    return nbytes * sharers / hw.hbm_write_bytes_per_s


def tma_latency(hw: Hardware, miss_fraction: float) -> float:
    """Round-trip latency of a TMA load; an L2 miss adds the HBM latency (weighted by the miss share)."""
    return hw.clk(hw.tma_latency_clk + min(1.0, miss_fraction) * hw.dram_extra_latency_clk)


def tile_grid(m: int, n: int) -> tuple[int, int]:
    """(tiles along M, tiles along N) of the 256 x 256 output tiles."""
    return math.ceil(m / BLOCK_M), math.ceil(n / BLOCK_N)


def clusters_for(hw: Hardware, tiles: int) -> int:
    """The seed's grid on ``hw``: ``max(1, min(tiles, SMs // 2))`` persistent clusters."""
    return grid_for(tiles, None, hw.sms)


def _wave_panels(tiles_n: int, tiles: int, clusters: int, wave: int) -> tuple[set[int], set[int]]:
    """The A row panels and B column panels the tiles of ``wave`` use."""
    ids = range(wave * clusters, min(tiles, (wave + 1) * clusters))
    return {t // tiles_n for t in ids}, {t % tiles_n for t in ids}


def wave_footprint(plan: TmemPlan, m: int, n: int, k: int, clusters: int, wave: int) -> float:
    """Bytes one wave touches: its A and B panels over the whole K, plus the C tiles it writes."""
    tiles_m, tiles_n = tile_grid(m, n)
    rows, cols = _wave_panels(tiles_n, tiles_m * tiles_n, clusters, wave)
    a_panel, _ = operand_bytes(plan, BLOCK_M, k)
    _, b_panel = operand_bytes(plan, BLOCK_N, k)
    active = len(range(wave * clusters, min(tiles_m * tiles_n, (wave + 1) * clusters)))
    return len(rows) * a_panel + len(cols) * b_panel + active * BLOCK_M * BLOCK_N * OUT_BYTES


@functools.lru_cache(maxsize=1 << 14)  # pure; the timing model asks for the same waves again in every run
def hbm_miss_fraction(hw: Hardware, plan: TmemPlan, m: int, n: int, k: int, wave: int) -> float:
    """Fraction of a cluster's load bytes in ``wave`` that come from HBM (the rest hit L2).

    The persistent schedule gives cluster ``c`` tiles ``c, c + C, c + 2C, ...`` (row-major tile ids),
    so wave ``w`` is tiles ``wC ... wC + C - 1``.  The clusters of a wave run in step along K, so a
    K block of an A row panel (or B column panel) that several clusters of the wave use is fetched
    from HBM once and the others hit L2.  Across waves, a panel last used ``d`` waves ago is still in
    L2 if ``d`` waves' footprints (:func:`wave_footprint`, an LRU stack-distance estimate) fit in the
    usable L2 (``l2_mb x l2_resident_fraction``); otherwise it is fetched again.
    """
    tiles_m, tiles_n = tile_grid(m, n)
    tiles = tiles_m * tiles_n
    c = clusters_for(hw, tiles)
    active = len(range(wave * c, min(tiles, (wave + 1) * c)))
    if active == 0:
        return 0.0
    stage = stage_bytes_per_cta(plan)
    a_panel = NUM_CTAS * (stage.a + stage.a_scale)  # one 256-row panel of A for one K block
    b_panel = NUM_CTAS * stage.b + stage.b_scale
    usable = hw.l2_mb * 1e6 * hw.l2_resident_fraction
    per_wave = wave_footprint(plan, m, n, k, c, wave)
    rows, cols = _wave_panels(tiles_n, tiles, c, wave)

    def last_row_use(r: int) -> int | None:  # the last wave before ``wave`` that used A row panel r
        first_tile, last_tile = r * tiles_n, min(tiles, (r + 1) * tiles_n) - 1
        last = min(last_tile, wave * c - 1)
        return last // c if last >= first_tile else None

    def last_col_use(q: int) -> int | None:  # the last wave before ``wave`` that used B column panel q
        j = (wave * c - 1 - q) // tiles_n
        return (q + j * tiles_n) // c if j >= 0 else None

    def fetched(panels: set[int], last_use: Callable[[int], int | None]) -> int:
        count = 0
        for p in panels:
            last = last_use(p)
            count += last is None or (wave - last) * per_wave > usable
        return count

    bytes_from_hbm = fetched(rows, last_row_use) * a_panel + fetched(cols, last_col_use) * b_panel
    return min(1.0, bytes_from_hbm / (active * NUM_CTAS * stage.total))


def active_clusters(hw: Hardware, m: int, n: int, wave: int) -> int:
    """How many clusters process a tile in ``wave`` (fewer in the last, ragged wave)."""
    tiles_m, tiles_n = tile_grid(m, n)
    tiles = tiles_m * tiles_n
    c = clusters_for(hw, tiles)
    return max(0, min(c, tiles - wave * c))


# --- epilogue ----------------------------------------------------------------------------------
# One subtile (128 rows x EPILOGUE_BLOCK_N columns per CTA) is priced from the instructions ptxas emitted for it
# (:mod:`gluon_overlap.timing.kernel_costs`), in the order the SASS runs them on the epilogue's critical path:
#
#   LDTM.x32 (latency + 16 KB at the TMEM read rate) -> 16 x F2FP per thread (each of the 4 warps on its own
#   sub-partition) | [overlap arrive: BAR.SYNC + remote arrive] | DEPBAR (store wait) -> BAR.SYNC -> 4 x STS.128
#   (8 KB at the shared-memory rate) -> MEMBAR.CTA + FENCE.VIEW.ASYNC -> BAR.SYNC | next LDTM, then UTMASTG.
#
# ptxas issues the next subtile's LDTM *before* this subtile's UTMASTG, so the TMA issue is off the critical path:
# it delays the store's start, not the epilogue.  The store wait (``cp.async.bulk.wait_group.read 1``) waits only
# for the shared-memory read of the store two subtiles back, which the TMA engine performs as fast as L2 accepts
# the subtile (:func:`tma_store_time`); the HBM write-back is never waited for.
@functools.lru_cache(maxsize=64)
def epilogue_mix(a_format: str, b_format: str, overlap: bool, epilogue_block_n: int) -> EpilogueMix:
    """The shipped instruction mix of the compiled variant (checked against a fresh compile by the tests)."""
    mix = shipped_mix(a_format, b_format, overlap)
    if mix.tmem_ld_columns != epilogue_block_n:
        raise ValueError(
            f"the compiled kernel drains {mix.tmem_ld_columns}-column subtiles, the plan "
            f"{epilogue_block_n}: the model prices only the compiled EPILOGUE_BLOCK_N"
        )
    return mix


def plan_mix(plan: TmemPlan) -> EpilogueMix:
    return epilogue_mix(plan.a_format, plan.b_format, plan.overlap, plan.epilogue_block_n)


def subtile_out_bytes(plan: TmemPlan) -> int:
    """float16 bytes one CTA stores per epilogue subtile (128 rows x EPILOGUE_BLOCK_N)."""
    return ROWS_PER_CTA * plan.epilogue_block_n * OUT_BYTES


def subtile_tmem_bytes(plan: TmemPlan) -> int:
    """TMEM bytes the 4 warps' LDTM of one subtile read (128 lanes x columns x 4 B)."""
    mix = plan_mix(plan)
    return EPILOGUE_WARPS * WARP_SIZE * mix.tmem_ld_columns * 4


def subtile_sts_bytes(plan: TmemPlan) -> int:
    """Shared-memory bytes the 128 threads' STS of one subtile write."""
    mix = plan_mix(plan)
    return EPILOGUE_WARPS * WARP_SIZE * mix.sts_per_subtile * mix.sts_bytes_per_thread


def cvt_clk(hw: Hardware, plan: TmemPlan) -> float:
    """Clocks of one subtile's conversions: each warp's F2FPs on its own sub-partition, the 4 in parallel."""
    return plan_mix(plan).cvt_per_subtile * WARP_SIZE / hw.cvt_per_clk_per_smsp


def tmem_load_time(hw: Hardware, plan: TmemPlan) -> float:
    """LDTM of one fp32 subtile, its wait, and the conversions to fp16 (they consume the LDTM's registers)."""
    cycles = hw.tmem_ld_latency_clk + subtile_tmem_bytes(plan) / hw.tmem_ld_bytes_per_clk + cvt_clk(hw, plan)
    return hw.clk(cycles * hw.epilogue_cost_factor)


def smem_store_time(hw: Hardware, plan: TmemPlan) -> float:
    """After the store wait: the BAR.SYNCs, the STS.128 of the fp16 subtile and the proxy fence."""
    mix = plan_mix(plan)
    cycles = (
        mix.bars_per_subtile * hw.bar_sync_clk
        + subtile_sts_bytes(plan) / hw.smem_bytes_per_clk
        + mix.fences_per_subtile * hw.fence_clk
    )
    return hw.clk(cycles * hw.epilogue_cost_factor)


def epilogue_arrive_time(hw: Hardware) -> float:
    """The BAR.SYNC the 4 warps pass before one thread arrives on the overlap / acc_empty pair barrier."""
    return hw.clk(hw.bar_sync_clk * hw.epilogue_cost_factor)


def store_bytes_per_s_per_sm(hw: Hardware, storing_sms: int) -> float:
    """How fast one SM's TMA engine can push a subtile into L2 while ``storing_sms`` SMs store at once:
    its link, or its share of the GPU-wide rate at which L2 accepts TMA stores, whichever is smaller."""
    link = hw.l2_write_bytes_per_clk_per_sm * hw.clock_ghz * 1e9
    return min(link, hw.l2_write_tb_s * 1e12 / max(1, storing_sms))


def tma_store_data_time(hw: Hardware, plan: TmemPlan, storing_sms: int = 1) -> float:
    """The time a TMA store's engine needs to read the subtile out of shared memory into L2 (what
    ``cp.async.bulk.wait_group.read`` waits for); ``l2_store_load_sharing`` of it is also lost to the loads."""
    return subtile_out_bytes(plan) / store_bytes_per_s_per_sm(hw, storing_sms) * hw.epilogue_cost_factor


def tma_store_time(hw: Hardware, plan: TmemPlan, storing_sms: int = 1) -> float:
    """Issue of the TMA store plus :func:`tma_store_data_time`."""
    return hw.clk(hw.tma_issue_clk) + tma_store_data_time(hw, plan, storing_sms)


def barrier_latency(hw: Hardware, remote: bool) -> float:
    """arrive -> waiter wakes; ``remote`` for an arrive on the peer CTA's (pair) barrier."""
    return hw.clk(hw.mbarrier_remote_clk if remote else hw.mbarrier_local_clk)


def launch_overhead(hw: Hardware) -> float:
    return hw.launch_overhead_us * 1e-6


#: a TMA store's shared-memory read beside the MMAs moves at this fraction of a st.shared's rate: measured on an H200,
#: TMA stores alone beside wgmma got 0.25 of what the reads left, the epilogue's step (st.shared + TMA store) 0.49-0.50
TMA_READ_SHARE_RATIO = 0.5


def drain_smem_bytes_per_clk(hw: Hardware, plan: TmemPlan, tma_read: bool = False) -> float:
    """Shared-memory bytes per clock a subtile's ``st.shared`` (or, ``tma_read``, its TMA store's read) gets while the
    MMAs run.

    Measured on an H200 (``data/measurements/h200-smem-contention.json``: wgmma reading 64-96 of 128 B/clk beside the
    epilogue's step): the MMAs' operand reads keep their bandwidth (they lose at most 0.01 % of their time to the
    epilogue's step) and the step moves ``smem_drain_share`` (0.49-0.50) of what the reads leave; a TMA store's read
    alone gets half that (0.25: :data:`TMA_READ_SHARE_RATIO`), and as the kernel overlaps one subtile's st.shared with
    the previous one's store, a step at ``share`` and ``share / 2`` moves 16 KB in the time its slower half takes --
    the measured ``share`` for the pair.  Beside reads that fill shared memory the drain crawls (1.8 B/clk, taken as
    0: it waits for the pipe).  The reads are :func:`mainloop_smem_read_bytes_per_cta` over the MMA's time of one K
    block."""
    mma_clk = mma_time(hw, plan) * hw.clock_ghz * 1e9
    spare = hw.smem_bytes_per_clk - mainloop_smem_read_bytes_per_cta(hw, plan) / mma_clk
    share = hw.smem_drain_share * (TMA_READ_SHARE_RATIO if tma_read else 1.0)
    return max(0.0, share * spare)
