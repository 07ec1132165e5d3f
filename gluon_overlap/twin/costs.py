"""Cost formulas of the timing model: pure functions of a :class:`~gluon_overlap.hardware.Hardware`.

Each function prices one operation of the seed kernel, in seconds, from first principles:

* **TMA load of a stage** (per CTA): the stage's bytes (``nbytes_per_cta`` of the four descriptors;
  the B scales are multicast so each CTA counts the full 256 rows) cross the SM's L2 link at
  ``l2_read_bytes_per_clk_per_sm``; the *L2-miss* part of them additionally queues on the
  cluster's share of HBM bandwidth (see :func:`hbm_miss_fraction` for which bytes miss).
* **MMA per K block**: ``2 x 256 x 256 x BLOCK_K`` FLOPs of one 2-CTA ``tcgen05.mma`` over
  the two SMs' tensor rate of the format pair (``kind::mxf8f6f4`` runs at the FP8 rate even
  with an fp4 operand; ``kind::mxf4`` / ``mxf4nvf4`` at the FP4 rate) times the calibrated
  ``tensor_efficiency``.
* **Scale copies**: one ``tcgen05.cp ... 32x128b.warpx4`` per 512-byte chunk (4 TMEM columns),
  at shared-memory read bandwidth; they sit in the tensor pipe in issue order with the MMAs.
* **Epilogue subtile** (per CTA, 128 rows x 32 columns): ``tcgen05.ld`` of 16 KB, conversion to
  fp16, ``st.shared`` of 8 KB, fence + barrier, TMA store issue; the TMA store then reads the 8 KB
  at the SM's L2 write bandwidth, and the bytes are written back to HBM on the cluster's share.
* **Barrier latency**: a local arrive, a remote (peer-CTA, DSMEM) arrive.

Nothing here knows about events or time order; :mod:`gluon_overlap.twin.timing` composes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gluon_overlap.hardware import Hardware
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


def mma_time(hw: Hardware, plan: TmemPlan) -> float:
    """Seconds the tensor pipes of the pair spend on one K block's MMA."""
    cls = rate_class(plan.a_format, plan.b_format)
    rate = NUM_CTAS * hw.peak_flops_per_sm(cls) * hw.tensor_efficiency(cls)
    return mma_flops_per_k_block(plan.block_k) / rate


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
def l2_read_time(hw: Hardware, nbytes: float) -> float:
    """Seconds ``nbytes`` take over one SM's L2 -> shared-memory link."""
    return hw.clk(nbytes / hw.l2_read_bytes_per_clk_per_sm)


def hbm_time(hw: Hardware, nbytes: float, sharers: int) -> float:
    """Seconds ``nbytes`` take on 1/``sharers`` of the GPU's achievable HBM bandwidth."""
    return nbytes * sharers / hw.hbm_bytes_per_s


def tma_latency(hw: Hardware, miss_fraction: float) -> float:
    """Round-trip latency of a TMA load; an L2 miss adds the HBM latency (weighted by the miss share)."""
    return hw.clk(hw.tma_latency_clk + min(1.0, miss_fraction) * hw.dram_extra_latency_clk)


def tile_grid(m: int, n: int) -> tuple[int, int]:
    """(tiles along M, tiles along N) of the 256 x 256 output tiles."""
    return math.ceil(m / BLOCK_M), math.ceil(n / BLOCK_N)


def clusters_for(hw: Hardware, tiles: int) -> int:
    """The seed's grid: ``max(1, min(tiles, SMs // 2))`` persistent clusters."""
    return max(1, min(tiles, hw.sms // NUM_CTAS))


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
    last_row: dict[int, int] = {}
    last_col: dict[int, int] = {}
    for w in range(wave):
        r, q = _wave_panels(tiles_n, tiles, c, w)
        last_row.update(dict.fromkeys(r, w))
        last_col.update(dict.fromkeys(q, w))

    def fetched(panels: set[int], last: dict[int, int]) -> int:
        return sum(1 for p in panels if p not in last or (wave - last[p]) * per_wave > usable)

    bytes_from_hbm = fetched(rows, last_row) * a_panel + fetched(cols, last_col) * b_panel
    return min(1.0, bytes_from_hbm / (active * NUM_CTAS * stage.total))


def active_clusters(hw: Hardware, m: int, n: int, wave: int) -> int:
    """How many clusters process a tile in ``wave`` (fewer in the last, ragged wave)."""
    tiles_m, tiles_n = tile_grid(m, n)
    tiles = tiles_m * tiles_n
    c = clusters_for(hw, tiles)
    return max(0, min(c, tiles - wave * c))


# --- epilogue -----------------------------------------------------------------------------------
def subtile_out_bytes(plan: TmemPlan) -> int:
    """float16 bytes one CTA stores per epilogue subtile (128 rows x EPILOGUE_BLOCK_N)."""
    return ROWS_PER_CTA * plan.epilogue_block_n * OUT_BYTES


def tmem_load_time(hw: Hardware, plan: TmemPlan) -> float:
    """``tcgen05.ld`` of one fp32 subtile (128 lanes x EPILOGUE_BLOCK_N columns) and its wait."""
    nbytes = ROWS_PER_CTA * plan.epilogue_block_n * 4
    return hw.clk(hw.tmem_ld_latency_clk + nbytes / hw.tmem_ld_bytes_per_clk + hw.cvt_clk_per_subtile)


def smem_store_time(hw: Hardware, plan: TmemPlan) -> float:
    """``st.shared`` of the fp16 subtile, the async-proxy fence, the 4-warp barrier, the TMA issue."""
    nbytes = subtile_out_bytes(plan)
    return hw.clk(nbytes / hw.smem_bytes_per_clk + hw.epilogue_sync_clk + hw.tma_issue_clk)


def tma_store_time(hw: Hardware, plan: TmemPlan) -> float:
    """Time the TMA engine needs to read the subtile out of shared memory into L2."""
    return hw.clk(subtile_out_bytes(plan) / hw.l2_write_bytes_per_clk_per_sm)


def barrier_latency(hw: Hardware, remote: bool) -> float:
    """arrive -> waiter wakes; ``remote`` for an arrive on the peer CTA's (pair) barrier."""
    return hw.clk(hw.mbarrier_remote_clk if remote else hw.mbarrier_local_clk)


def launch_overhead(hw: Hardware) -> float:
    return hw.launch_overhead_us * 1e-6


def epilogue_smem_overflow(hw: Hardware, plan: TmemPlan) -> float:
    """Seconds an epilogue subtile drained *during* MMAs costs the tensor pipe in shared-memory bandwidth.

    While the MMAs run, each SM's shared memory serves the MMA's operand reads and the TMA loads'
    writes (the stage's A and B bytes, twice, per MMA time).  A subtile drained meanwhile adds its
    ``st.shared`` and its TMA store's read (2 x 8 KB) within one subtile period; what exceeds the
    spare bandwidth in that period is the overflow.  With fair sharing (every requester slowed by
    demand / capacity) both the MMAs and the subtile lose exactly this much:
    ``tau0 * (demand / capacity - 1) = (extra - spare * tau0) / capacity``.  Zero when the drain runs
    while the tensor pipe is idle (overlap off), so it only ever *reduces* the overlap's gain.  Note
    the fair-share consequence: a *faster* epilogue (smaller ``tau0``) overflows more.
    """
    stage = stage_bytes_per_cta(plan)
    mma_clk = mma_time(hw, plan) * hw.clock_ghz * 1e9
    used = 2 * (stage.a + stage.b) / mma_clk  # B/clk the mainloop itself moves through shared memory
    spare = max(0.0, hw.smem_bytes_per_clk - used)
    period_clk = (tmem_load_time(hw, plan) + smem_store_time(hw, plan)) * hw.clock_ghz * 1e9
    extra = 2 * subtile_out_bytes(plan)
    return hw.clk(max(0.0, extra - spare * period_clk) / hw.smem_bytes_per_clk)
