"""Timing mode of the twin: the same partitions on the same engine, with costs instead of data.

:mod:`gluon_overlap.twin.protocol`'s generators (load, MMA and epilogue partitions of both CTAs)
run on :class:`gluon_overlap.twin.engine.Engine` in ``timed=True`` mode; :class:`CostBackend` gives
every operation a duration from :mod:`gluon_overlap.twin.costs` and models the shared resources
itself (the engine only orders, applies the mbarrier semantics and advances the earliest event):

* the **tensor pipe** of the pair (scale copies and MMAs occupy it back to back, in issue order;
  a commit arrives ``mma_pipeline_latency`` after the last op before it leaves the pipe);
* each SM's **L2 link** (TMA loads in, TMA stores out, each direction its own queue);
* the cluster's **share of HBM**: the L2-miss part of every load and the write-back of every
  stored C subtile queue on one FIFO served at ``HBM x efficiency / active clusters``.  So at small K,
  where a tile's fp16 output (128 KB) outweighs its operands, the write-back of tile ``i`` delays the
  loads of tile ``i + 1``: the kernel becomes bandwidth-bound and the overlap cannot help past that.

**One representative cluster, not all of them.**  The seed launches ``min(tiles, SMs / 2)``
persistent clusters (74 on a B200) and cluster ``c`` takes tiles ``c, c + C, ...``; every cluster
runs the same code on equally sized tiles, so they proceed in step and the kernel ends when the
clusters with ``ceil(tiles / C)`` tiles end (wave quantization: 14 tiles for 8192 x 8192 on 74
clusters, though 13.84 would do).  We simulate exactly one such cluster -- cluster 0, both CTAs, all
three partitions, every barrier -- and give it what its wave-mates leave it: ``1 / active`` of the
HBM bandwidth, and L2 hits for the panels its wave-mates fetch (:func:`costs.hbm_miss_fraction`).
What this leaves out: clusters drifting out of step (which would smooth HBM bursts; L2 write-back
buffering does that too, so the model is slightly pessimistic for the single-buffered kernel when
it is bandwidth-bound) and L2-slice / NoC contention beyond the per-SM link.  Simulating all 74
clusters event by event would cost 74x the time and, with identical clusters, give the same answer.

**Where the overlap gain comes from.**  Single-buffered (overlap off) there is one accumulator: the
MMA of tile ``i + 1`` waits on ``acc_empty``, i.e. for the *whole* drain of tile ``i`` (8 subtiles of
TMEM load, convert, shared store, TMA store).  With overlap on it waits only for ``overlap``, released
after subtile ``early_release_subtile`` (0 or 1) of tile ``i``, and on ``acc_empty`` of tile ``i - 1``,
long done.  The hidden drain is a fixed cost per tile while the mainloop grows with K, so the gain
is largest at small K and shrinks as 1/K -- until, at the smallest K, HBM bounds both variants.

:func:`predict` runs one problem; :func:`sweep` the seed's table; :func:`calibrate_tensor_efficiency`
solves the one calibrated number per MMA kind from the *single-buffered* published results.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass

from gluon_overlap.hardware import Hardware
from gluon_overlap.tmem import NUM_CTAS, SEED_FORMAT_PAIRS, TmemPlan, make_plan
from gluon_overlap.twin import costs
from gluon_overlap.twin.engine import Backend, Engine, Op
from gluon_overlap.twin.protocol import KernelConfig, launch

SEED_KS = (512, 1024, 2048, 4096, 8192)
SEED_M = SEED_N = 8192
#: the published single-buffered 2-CTA results (NOTES.md): (format, M=N=K) -> TFLOP/s
PUBLISHED_SINGLE_BUFFERED = {
    ("mxfp8", 8192): 2895.0,
    ("mxfp8", 16384): 2755.0,
    ("nvfp4", 8192): 5730.0,
    ("nvfp4", 16384): 5562.0,
}
_PAIR_BARRIERS = ("acc_empty", "overlap")  # arrived on by both CTAs' epilogues (DSMEM for CTA 1)
_EPILOGUE_GATES = ("acc_empty", "overlap")  # what the MMA waits on for the epilogue


class CostBackend(Backend):
    """Durations and shared resources of one cluster (see the module docstring)."""

    def __init__(self, hw: Hardware, config: KernelConfig):
        self.hw, self.config, self.plan = hw, config, config.plan
        plan = self.plan
        self.t_mma = costs.mma_time(hw, plan)
        self.t_issue = costs.mma_issue_time(hw)
        self.t_pipe_latency = costs.mma_pipeline_latency(hw)
        self.t_tmem = costs.tmem_load_time(hw, plan)
        self.t_smem = costs.smem_store_time(hw, plan)
        self.t_tma_store = costs.tma_store_time(hw, plan)
        self.t_tma_issue = hw.clk(hw.tma_issue_clk)
        self.t_local = costs.barrier_latency(hw, remote=False)
        self.t_remote = costs.barrier_latency(hw, remote=True)
        self.store_bytes = costs.subtile_out_bytes(plan)
        self.smem_overflow = costs.epilogue_smem_overflow(hw, plan)
        self._miss: dict[int, float] = {}
        self._sharers: dict[int, int] = {}
        # resource state (times in seconds)
        self.tensor_free = 0.0
        self.l2_in_free = [0.0] * NUM_CTAS
        self.l2_out_free = [0.0] * NUM_CTAS
        self.hbm_free = 0.0
        # bookkeeping for the time split
        self.busy: list[list[float]] = []  # merged tensor-pipe busy spans
        self.gated: list[tuple[float, float]] = []  # MMA blocked on the epilogue (acc_empty / overlap)
        self.hbm_bytes = 0.0

    # --- helpers -------------------------------------------------------------------
    def _wave(self, local: int | None) -> int:
        return local or 0

    def miss_fraction(self, wave: int) -> float:
        if wave not in self._miss:
            c = self.config
            self._miss[wave] = costs.hbm_miss_fraction(self.hw, self.plan, c.m, c.n, c.k, wave)
        return self._miss[wave]

    def sharers(self, wave: int) -> int:
        if wave not in self._sharers:
            c = self.config
            self._sharers[wave] = max(1, costs.active_clusters(self.hw, c.m, c.n, wave))
        return self._sharers[wave]

    def _hbm(self, now: float, nbytes: float, wave: int) -> float:
        self.hbm_bytes += nbytes
        self.hbm_free = max(now, self.hbm_free) + costs.hbm_time(self.hw, nbytes, self.sharers(wave))
        return self.hbm_free

    def _tensor(self, now: float, service: float) -> float:
        start = max(now, self.tensor_free)
        end = start + service
        self.tensor_free = end
        if self.busy and start <= self.busy[-1][1]:
            self.busy[-1][1] = end
        else:
            self.busy.append([start, end])
        return end

    def _steal_tensor_time(self, dt: float) -> None:
        """Push the tensor pipe back by ``dt`` (shared-memory cycles the epilogue took from the MMA)."""
        if dt > 0:
            self.tensor_free += dt
            self.busy[-1][1] = self.tensor_free

    # --- Backend protocol ------------------------------------------------------------
    def duration(self, op: Op) -> float:
        now = self.engine.now
        kind = op.kind
        if kind == "mma":
            return self._tensor(now, self.t_mma) - now
        if kind == "scale_copy":
            chunks = op.columns.cols // costs.SCALE_K_PER_CHUNK
            service = self.hw.clk(chunks * costs.SCALE_CHUNK_BYTES / self.hw.smem_bytes_per_clk)
            return self._tensor(now, service) - now
        if kind == "commit":
            return max(now, self.tensor_free) + self.t_pipe_latency - now
        if kind == "tma_load":
            wave = self._wave(op.local)
            miss = self.miss_fraction(wave)
            end = now
            for d in op.dests:
                self.l2_in_free[d] = max(now, self.l2_in_free[d]) + costs.l2_read_time(self.hw, op.nbytes)
                end = max(end, self.l2_in_free[d])
            if miss > 0:
                end = max(end, self._hbm(now, op.nbytes * miss, wave))
            return end + costs.tma_latency(self.hw, miss) - now
        if kind == "tma_store":
            cta = op.cta
            self.l2_out_free[cta] = max(now, self.l2_out_free[cta]) + self.t_tma_store
            self._hbm(now, self.store_bytes, self._wave(op.local))  # write-back; nobody waits for it
            return self.l2_out_free[cta] - now
        if kind == "tmem_load":
            return self.t_tmem
        if kind == "smem_store":
            if self.tensor_free > now:
                # fair share of an oversubscribed shared memory: the MMA and this subtile both lose the
                # overflow (both SMs lose the same, so the pair's tensor pipe is pushed back once)
                if op.cta == 0:
                    self._steal_tensor_time(self.smem_overflow)
                return self.t_smem + self.smem_overflow
            return self.t_smem
        if kind == "expect":
            return self.t_tma_issue
        return 0.0  # satisfied waits, arrives, store_wait: folded into the issue / sync costs

    def issue_cost(self, op: Op) -> float:
        if op.kind == "mma":
            return self.t_issue
        if op.kind == "tma_load":
            return self.t_tma_issue
        return 0.0

    def resource(self, op: Op) -> Hashable | None:
        return None  # resources are queued in duration() (several per op: L2 link and HBM)

    def wake_latency(self, op: Op) -> float:
        bar = op.bar
        remote = bar.name in _PAIR_BARRIERS or (bar.cta != 0 and bar.name in ("load_empty", "acc_ready"))
        lat = self.t_remote if remote else self.t_local
        if op.partition == "mma" and bar.name in _EPILOGUE_GATES:
            self.gated.append((op.t_issue, self.engine.now + lat))
        return lat


def _measure(spans: Iterable[tuple[float, float]], minus: Sequence[Sequence[float]]) -> float:
    """Total length of the union of ``spans`` minus the (sorted, disjoint) spans ``minus``."""
    total = 0.0
    merged: list[list[float]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        elif b > a:
            merged.append([a, b])
    j = 0
    for a, b in merged:
        length = b - a
        while j < len(minus) and minus[j][1] <= a:
            j += 1
        i = j
        while i < len(minus) and minus[i][0] < b:
            length -= max(0.0, min(b, minus[i][1]) - max(a, minus[i][0]))
            i += 1
        total += length
    return total


@dataclass(frozen=True)
class Prediction:
    """The model's answer for one problem and one mode (times in seconds)."""

    gpu: str
    a_format: str
    b_format: str
    m: int
    n: int
    k: int
    overlap: bool
    time_s: float
    tflops: float
    mainloop_s: float  # tensor pipe busy (MMAs + scale copies) on the critical cluster
    exposed_epilogue_s: float  # tensor pipe idle while the MMA waits for an epilogue drain (and the last drain)
    idle_s: float  # everything else: waiting for loads / HBM, write-back tail, launch overhead
    tiles: int
    clusters: int
    tiles_per_cluster: int
    hbm_bytes_per_tile: float

    def to_dict(self) -> dict:
        return asdict(self)


def kernel_config(hw: Hardware, a_format: str, b_format: str, m: int, n: int, k: int, overlap: bool) -> KernelConfig:
    plan: TmemPlan = make_plan(a_format, b_format, overlap=overlap)
    if k % plan.block_k:
        raise ValueError(f"k={k} must be a multiple of BLOCK_K={plan.block_k} for {a_format} x {b_format}")
    return KernelConfig(plan, m=m, n=n, k=k, num_sms=hw.sms)


def predict(hw: Hardware, a_format: str, b_format: str, m: int, n: int, k: int, overlap: bool) -> Prediction:
    """Simulate the critical cluster of the seed's launch and return time, TFLOP/s and the split."""
    config = kernel_config(hw, a_format, b_format, m, n, k, overlap)
    backend = CostBackend(hw, config)
    engine = Engine(backend, timed=True, trace=False)
    launch(engine, config, clusters=[0])
    result = engine.run()
    if result.deadlock is not None or result.hazards:
        raise RuntimeError(f"timing run failed: {result.deadlock or result.hazards[0]}")
    end = max(result.time, backend.hbm_free)
    total = end + costs.launch_overhead(hw)
    mainloop = sum(b - a for a, b in backend.busy)
    last_busy = backend.busy[-1][1] if backend.busy else 0.0
    exposed = _measure(backend.gated + [(last_busy, result.time)], backend.busy)
    idle = total - mainloop - exposed
    tiles_per_cluster = len(config.tiles_of(0))
    return Prediction(
        gpu=hw.name, a_format=a_format, b_format=b_format, m=m, n=n, k=k, overlap=overlap, time_s=total,
        tflops=2.0 * m * n * k / total / 1e12, mainloop_s=mainloop, exposed_epilogue_s=exposed, idle_s=idle,
        tiles=config.num_tiles, clusters=config.grid, tiles_per_cluster=tiles_per_cluster,
        hbm_bytes_per_tile=backend.hbm_bytes / max(1, tiles_per_cluster),
    )


def compare(hw: Hardware, a_format: str, b_format: str, m: int, n: int, k: int) -> dict:
    """One row of the seed's table: off, on, speedup and the time split of both."""
    off = predict(hw, a_format, b_format, m, n, k, overlap=False)
    on = predict(hw, a_format, b_format, m, n, k, overlap=True)
    row = {
        "gpu": hw.name, "a_format": a_format, "b_format": b_format, "m": m, "n": n, "k": k,
        "tflops_off": off.tflops, "tflops_on": on.tflops, "speedup_pct": (on.tflops / off.tflops - 1.0) * 100.0,
    }
    for tag, p in (("off", off), ("on", on)):
        row[f"time_us_{tag}"] = p.time_s * 1e6
        row[f"mainloop_us_{tag}"] = p.mainloop_s * 1e6
        row[f"exposed_epilogue_us_{tag}"] = p.exposed_epilogue_s * 1e6
        row[f"idle_us_{tag}"] = p.idle_s * 1e6
    row["tiles_per_cluster"] = on.tiles_per_cluster
    row["clusters"] = on.clusters
    row["tiles"] = on.tiles
    # HBM traffic of the whole problem (the critical cluster's per-tile bytes x all tiles), overlap on
    row["hbm_bytes"] = on.hbm_bytes_per_tile * on.tiles
    row["flops"] = 2.0 * m * n * k
    return row


def sweep(hw: Hardware, pairs: Sequence[tuple[str, str]] = SEED_FORMAT_PAIRS, ks: Sequence[int] = SEED_KS,
          m: int = SEED_M, n: int = SEED_N) -> list[dict]:
    """The seed's benchmark table, predicted: one :func:`compare` row per (pair, K)."""
    return [compare(hw, a, b, m, n, k) for a, b in pairs for k in ks]


# --- calibration -------------------------------------------------------------------------------
def _with_efficiency(hw: Hardware, rate_class: str, eta: float) -> Hardware:
    return hw.scaled(**{f"tensor_efficiency_{rate_class}": eta})


def calibration_error(hw: Hardware, fmt: str) -> dict[int, float]:
    """Relative error (model / published - 1) of the single-buffered model at each published size."""
    out = {}
    for (f, size), published in PUBLISHED_SINGLE_BUFFERED.items():
        if f == fmt:
            out[size] = predict(hw, fmt, fmt, size, size, size, overlap=False).tflops / published - 1.0
    return out


def calibrate_tensor_efficiency(hw: Hardware, fmt: str, tol: float = 1e-4) -> float:
    """Solve ``tensor_efficiency`` of ``fmt``'s MMA kind from the single-buffered published results.

    Minimises the sum over the published sizes of (log model - log published)^2 by golden-section
    search in ``(0.3, 1]``; only overlap-*off* runs are used, so the overlap gain is never fitted.
    """
    cls = costs.rate_class(fmt, fmt)

    def loss(eta: float) -> float:
        errs = calibration_error(_with_efficiency(hw, cls, eta), fmt).values()
        return sum(math.log1p(e) ** 2 for e in errs)

    lo, hi = 0.3, 1.0
    g = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = loss(x1), loss(x2)
    while hi - lo > tol:
        if f1 < f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = loss(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = loss(x2)
    return (lo + hi) / 2
