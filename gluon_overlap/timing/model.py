"""Timing mode of the twin: the real kernel's operations on the same engine, with costs instead of data.

The operations of ``gluon_overlap/kernel.py`` -- its load, MMA and epilogue partitions of both CTAs, recorded
by the executor (:mod:`gluon_overlap.timing.streams`) -- run on :class:`gluon_overlap.interp.engine.Engine` in
``timed=True`` mode; :class:`CostBackend` gives
every operation a duration from :mod:`gluon_overlap.timing.costs` and models the shared resources
itself (the engine only orders, applies the mbarrier semantics and advances the earliest event):

* the **tensor pipe** of the pair (scale copies and MMAs occupy it back to back, in issue order;
  a commit arrives ``mma_pipeline_latency`` after the last op before it leaves the pipe);
* each SM's **L2 path** (TMA loads in, TMA stores out, each direction its own queue, each served at the SM's link
  or its share of L2's GPU-wide rate, whichever is smaller).  A TMA store completes when its engine has read the
  subtile out of shared memory -- that is all the kernel's ``tma.store_wait`` (``cp.async.bulk.wait_group.read``)
  waits for -- and ``l2_store_load_sharing`` of its time is also taken from the SM's loads (measured on an H200:
  loads and stores share part of L2);
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

**Huge problems** are not walked tile by tile: past the pipeline's fill every K step and every tile repeat, so
the totals are affine in both, and :func:`predict` extrapolates from five truncated runs (reporting the misfit
at a check point) when tiles x K steps exceeds :data:`SIM_BUDGET`.

**Roles, not names.**  Which arrivals are remote (DSMEM, the peer CTA), which waits gate the MMA on the epilogue
and which arrives are the epilogue's come from :func:`gluon_overlap.timing.streams.roles`, read from what each
recorded process does; nothing here knows what a barrier or a partition is called.

:func:`predict` runs one problem; :func:`compare` one row (off, on, speedup, split and the **bands** of
:func:`band`: every band group of :data:`BAND_GROUPS` at the fast and the slow end of its post-fit range);
:func:`sweep` the seed's table; :func:`model_table` is the series' one prediction function (the ``model`` command
and notebooks 03-07 use it).  The parameters no first principle pins are fitted by :mod:`gluon_overlap.timing.fit`
to published measurements; :func:`calibrate_tensor_efficiency` solves one MMA kind's efficiency from the
*single-buffered* published results, :func:`efficiency_range` its range.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace

from gluon_overlap.emulate.config import KernelConfig
from gluon_overlap.hardware import DATA_DIR, GROUPS, LOWER_IS_FASTER, Hardware, load_hardware
from gluon_overlap.interp.engine import Backend, Engine
from gluon_overlap.interp.ops import Op
from gluon_overlap.timing import costs, run_cache
from gluon_overlap.timing.recordings import launch_recorded as launch
from gluon_overlap.timing.streams import Roles, roles
from gluon_overlap.tmem import BLOCK_M, BLOCK_N, NUM_CTAS, SEED_FORMAT_PAIRS, TmemPlan, make_plan

SEED_KS = (512, 1024, 2048, 4096, 8192)
SEED_M = SEED_N = 8192
#: the published single-buffered 2-CTA results (NOTES.md): (format, M=N=K) -> TFLOP/s
PUBLISHED_SINGLE_BUFFERED = {
    ("mxfp8", 8192): 2895.0,
    ("mxfp8", 16384): 2755.0,
    ("nvfp4", 8192): 5730.0,
    ("nvfp4", 16384): 5562.0,
}


#: the op kinds :class:`CostBackend` prices, and the synchronisation kinds whose cost is their waiting
_PRICED = frozenset({"tma_load", "tma_store", "mma", "scale_copy", "commit", "tmem_load", "smem_store", "expect"})
_UNPRICED_SYNC = frozenset({"wait", "store_wait", "arrive"})


class CostBackend(Backend):
    """Durations and shared resources of one cluster (see the module docstring)."""

    def __init__(self, hw: Hardware, config: KernelConfig, problem: tuple[int, int, int] | None = None,
                 wave_of: Callable[[int], int] | None = None):
        """``problem`` is the real (m, n, k) the costs are computed for (default: the config's own) and
        ``wave_of`` maps the simulated cluster's tile index to the real problem's wave (default: itself);
        both differ from the config only in a truncated steady-state run (see :func:`predict`)."""
        self.hw, self.config, self.plan = hw, config, config.plan
        self.problem = problem if problem is not None else (config.m, config.n, config.k)
        self.wave_of = wave_of if wave_of is not None else (lambda i: i)
        plan = self.plan
        self.t_mma = costs.mma_time(hw, plan)
        self.t_issue = costs.mma_issue_time(hw)
        self.t_pipe_latency = costs.mma_pipeline_latency(hw)
        self.t_tmem = costs.tmem_load_time(hw, plan)
        self.t_smem = costs.smem_store_time(hw, plan)
        self.t_arrive = costs.epilogue_arrive_time(hw)
        self._store: dict[int, float] = {}
        self.t_tma_issue = hw.clk(hw.tma_issue_clk)
        self.t_local = costs.barrier_latency(hw, remote=False)
        self.t_remote = costs.barrier_latency(hw, remote=True)
        self.store_bytes = costs.subtile_out_bytes(plan)
        self.smem_overflow = costs.epilogue_smem_overflow(hw, plan)
        self._miss: dict[int, float] = {}
        self._sharers: dict[int, int] = {}
        # per-operation cost terms that depend only on their arguments, computed once per run
        self._load: dict[tuple[float, int], float] = {}
        self._latency: dict[int, float] = {}
        self._hbm_time: dict[tuple[float, int], float] = {}
        self._scale_copy: dict[int, float] = {}
        # resource state (times in seconds)
        self.tensor_free = 0.0
        self.l2_in_free = [0.0] * NUM_CTAS
        self.l2_out_free = [0.0] * NUM_CTAS
        self.hbm_free = 0.0
        # bookkeeping for the time split
        self.busy: list[list[float]] = []  # merged tensor-pipe busy spans
        self.gated: list[tuple[float, float]] = []  # MMA blocked on the epilogue (acc_empty / overlap)
        self.hbm_bytes = 0.0
        self.roles: Roles | None = None  # set by :func:`_run` from the recording it replays

    # --- helpers -------------------------------------------------------------------
    def _wave(self, local: int | None) -> int:
        return self.wave_of(local or 0)

    def miss_fraction(self, wave: int) -> float:
        if wave not in self._miss:
            m, n, k = self.problem
            self._miss[wave] = costs.hbm_miss_fraction(self.hw, self.plan, m, n, k, wave)
        return self._miss[wave]

    def sharers(self, wave: int) -> int:
        if wave not in self._sharers:
            m, n, _ = self.problem
            self._sharers[wave] = max(1, costs.active_clusters(self.hw, m, n, wave))
        return self._sharers[wave]

    def store_time(self, wave: int) -> float:
        """One subtile's TMA store data time: its shared-memory read at the SM's share of L2's store rate
        (every SM of the wave's active clusters stores at the same time)."""
        if wave not in self._store:
            self._store[wave] = costs.tma_store_data_time(self.hw, self.plan, NUM_CTAS * self.sharers(wave))
        return self._store[wave]

    def load_time(self, nbytes: float, wave: int) -> float:
        key = (nbytes, wave)
        t = self._load.get(key)
        if t is None:
            t = self._load[key] = costs.l2_read_time(self.hw, nbytes, NUM_CTAS * self.sharers(wave))
        return t

    def tma_latency(self, wave: int) -> float:
        t = self._latency.get(wave)
        if t is None:
            t = self._latency[wave] = costs.tma_latency(self.hw, self.miss_fraction(wave))
        return t

    def _hbm(self, now: float, nbytes: float, wave: int) -> float:
        self.hbm_bytes += nbytes
        key = (nbytes, wave)
        t = self._hbm_time.get(key)
        if t is None:
            t = self._hbm_time[key] = costs.hbm_time(self.hw, nbytes, self.sharers(wave))
        self.hbm_free = max(now, self.hbm_free) + t
        return self.hbm_free

    def scale_copy_time(self, cols: int) -> float:
        t = self._scale_copy.get(cols)
        if t is None:
            chunks = cols // costs.SCALE_K_PER_CHUNK
            t = self._scale_copy[cols] = self.hw.clk(chunks * costs.SCALE_CHUNK_BYTES / self.hw.smem_bytes_per_clk)
        return t

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
            return self._tensor(now, self.scale_copy_time(op.columns.cols)) - now
        if kind == "commit":
            end = max(now, self.tensor_free) + self.t_pipe_latency
            return end - now
        if kind == "tma_load":
            wave = self._wave(op.local)
            miss = self.miss_fraction(wave)
            end = now
            for d in op.dests:
                self.l2_in_free[d] = max(now, self.l2_in_free[d]) + self.load_time(op.nbytes, wave)
                end = max(end, self.l2_in_free[d])
            if miss > 0:
                end = max(end, self._hbm(now, op.nbytes * miss, wave))
            return end + self.tma_latency(wave) - now
        if kind == "tma_store":
            # completes when its engine has read the subtile out of shared memory (what the kernel's
            # cp.async.bulk.wait_group.read waits for); the HBM write-back is queued, and nobody waits for it
            # (the engine starts it after its issue: tma_issue_clk); part of its L2 time is lost to the loads
            cta = op.cta
            wave = self._wave(op.local)
            start = now + self.t_tma_issue
            data = self.store_time(wave)
            self.l2_out_free[cta] = max(start, self.l2_out_free[cta]) + data
            self.l2_in_free[cta] = max(start, self.l2_in_free[cta]) + self.hw.l2_store_load_sharing * data
            self._hbm(now, self.store_bytes, wave)
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
        if kind == "arrive" and id(op) in self.roles.drain_arrives:
            return self.t_arrive  # the BAR.SYNC of the 4 warps before the one thread's arrive
        if kind in _UNPRICED_SYNC:
            return 0.0  # satisfied waits, store waits, arrives: their waiting is what the engine times
        raise ValueError(f"the timing model has no cost for a {kind!r} operation: it prices the operations "
                         f"of the warp-specialized kernel ({', '.join(sorted(_PRICED | _UNPRICED_SYNC))})")

    def issue_cost(self, op: Op) -> float:
        if op.kind == "mma":
            return self.t_issue
        if op.kind == "tma_load":
            return self.t_tma_issue
        return 0.0

    def resource(self, op: Op) -> Hashable | None:
        return None  # resources are queued in duration() (several per op: L2 link and HBM)

    def wake_latency(self, op: Op) -> float:
        # roles from the recording (twin.streams.roles): an arrival from the other CTA travels over DSMEM, and a
        # wait of the MMA issuer on a barrier the epilogue arrives on is the MMA blocked on the epilogue
        lat = self.t_remote if id(op.bar) in self.roles.remote else self.t_local
        if id(op) in self.roles.gate_waits:
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
    extrapolated: bool = False  # True: a steady-state extrapolation of truncated runs (see :func:`predict`)
    extrapolation_error: float = 0.0  # relative misfit of the extrapolation at a check point it was not fitted to

    def to_dict(self) -> dict:
        return asdict(self)


#: a run simulates every tile of the critical cluster when its tiles have at most this many K steps (or tiles x K
#: steps is at most ``SIM_BUDGET``); beyond, the steady state is extrapolated from truncated runs (a long problem is
#: a formula, not a simulation of every step).  At few K steps the tiles do not repeat (the HBM queue and the
#: waves' L2 reuse take ~5 tiles to settle), so those are always full runs; they are cheap.
FULL_KSTEPS = 7
SIM_BUDGET = 128
_T_FIT = (3, 5)  # tiles of the truncated runs
#: K steps of the truncated runs and (tiles, K steps) of the check run, small box first: past the 5-stage pipeline's
#: fill; the large box when the small one's check misses by more than ``CHECK_TOLERANCE`` (an HBM queue that takes
#: longer to settle, e.g. one row of tiles whose B panels all come from HBM)
_BOXES = (((8, 12), (4, 16)), ((24, 40), (6, 44)))
CHECK_TOLERANCE = 5e-3
_LARGE_BOX: set[tuple] = set()  # launches whose nominal run needed the large box (their band corners use it too)
_RUNS: dict[tuple, dict[str, float]] = {}


def forget() -> None:
    """Forget this process's simulated runs (the next prediction simulates again, or reads the disk cache)."""
    _RUNS.clear()
    _LARGE_BOX.clear()


def kernel_config(hw: Hardware, a_format: str, b_format: str, m: int, n: int, k: int, overlap: bool,
                  kernel_path: str | None = None) -> KernelConfig:
    """The seed's launch of ``kernel_path`` (default ``gluon_overlap/kernel.py``) on ``hw``.  K need not be a
    multiple of BLOCK_K: the kernel's last K step then runs past K (TMA fills zeros)."""
    plan: TmemPlan = make_plan(a_format, b_format, overlap=overlap)
    return KernelConfig(plan, m=m, n=n, k=k, num_sms=hw.sms, kernel_path=kernel_path)


def _tiles_on_critical_cluster(config: KernelConfig) -> int:
    return -(-config.num_tiles // config.grid)


def _run(hw: Hardware, config: KernelConfig, tiles: int, ksteps: int) -> dict[str, float]:
    """Simulate the critical cluster (cluster 0, both CTAs, every barrier) over its first ``tiles`` tiles of
    ``ksteps`` K steps each, pricing every operation for the real problem; ``tiles`` equal to the cluster's
    count and ``ksteps`` to the real K steps is the full run.  In a truncated run the last simulated tile is
    given the real last wave's costs (its ragged HBM share), the others their own waves'."""
    full_tiles = _tiles_on_critical_cluster(config)
    if tiles == full_tiles and ksteps == config.k_steps:
        sim, wave_of = config, None
    else:
        sim = KernelConfig(config.plan, m=BLOCK_M, n=BLOCK_N * config.grid * tiles, k=ksteps * config.plan.block_k,
                           clusters=config.grid, num_sms=config.num_sms, kernel_path=config.kernel_path,
                           breaks=config.breaks)
        last = full_tiles - 1

        def wave_of(i: int) -> int:
            return last if i == tiles - 1 else i

    backend = CostBackend(hw, sim, problem=(config.m, config.n, config.k), wave_of=wave_of)
    # the run depends on the real problem only through its waves' L2 misses and sharers: runs of other K (or M, N)
    # with the same ones are the same run (e.g. every K of a truncated run at M = N = 8192), so they are cached
    waves = [backend._wave(i) for i in range(tiles)]
    key = (hw, config.module().__name__, sim.plan, sim.m, sim.n, sim.k, sim.grid, sim.breaks,
           tuple((backend.miss_fraction(w), backend.sharers(w)) for w in waves))
    if key in _RUNS:
        return _RUNS[key]
    # between processes: the unedited kernel's runs are kept on disk, keyed by the package's code (twin.run_cache)
    disk_key = None
    if config.kernel_path is None and not config.breaks:
        disk_key = run_cache.run_key(hw, sim.plan, (sim.m, sim.n, sim.k, sim.grid), key[-1])
        cached = run_cache.get(disk_key)
        if cached is not None:
            _RUNS[key] = cached
            return cached
    engine = Engine(backend, timed=True, trace=False)
    # The one place the kernel is launched: the recorded operation streams of the real kernel.py (the executor
    # runs it once per configuration, twin.streams; tests/timing/test_streams.py: a replay equals a direct run).
    backend.roles = roles(launch(engine, sim, clusters=[0]))
    result = engine.run()
    if result.deadlock is not None or result.hazards:
        raise RuntimeError(f"timing run failed: {result.deadlock or result.hazards[0]}")
    end = max(result.time, backend.hbm_free)
    mainloop = sum(b - a for a, b in backend.busy)
    last_busy = backend.busy[-1][1] if backend.busy else 0.0
    exposed = _measure(backend.gated + [(last_busy, result.time)], backend.busy)
    out = _RUNS[key] = {"end": end, "mainloop": mainloop, "exposed": exposed, "hbm_bytes": backend.hbm_bytes}
    if disk_key is not None:
        run_cache.put(disk_key, out)
    return out


def _bilinear(points: dict[tuple[int, int], dict[str, float]], t: int, s: int) -> dict[str, float]:
    """Evaluate the affine-in-tiles, affine-in-K-steps surface through the 2 x 2 (or fewer) points at (t, s)."""
    ts = sorted({p[0] for p in points})
    ss = sorted({p[1] for p in points})
    t1, t2 = ts[0], ts[-1]
    s1, s2 = ss[0], ss[-1]
    out = {}
    for key in ("end", "mainloop", "exposed", "hbm_bytes"):
        f11 = points[(t1, s1)][key]
        value = f11
        dt = (points[(t2, s1)][key] - f11) / (t2 - t1) if t2 != t1 else 0.0
        ds = (points[(t1, s2)][key] - f11) / (s2 - s1) if s2 != s1 else 0.0
        value += (t - t1) * dt + (s - s1) * ds
        if t2 != t1 and s2 != s1:
            cross = (points[(t2, s2)][key] - points[(t2, s1)][key] - points[(t1, s2)][key] + f11)
            value += (t - t1) * (s - s1) * cross / ((t2 - t1) * (s2 - s1))
        out[key] = value
    return out


def _steady_state(hw: Hardware, config: KernelConfig, check: bool = True) -> tuple[dict[str, float], bool, float]:
    """The critical cluster's totals: a full run when it is small, else a steady-state extrapolation.

    Past the pipeline's fill every further K step of a tile and every further tile of the cluster repeat the
    same operations at the same costs, so the totals are affine in the K steps and in the tiles (with a cross
    term: a tile's length grows with K).  Four truncated runs (3 or 5 tiles, 8 or 12 K steps) fix that
    surface; a fifth run (4 tiles, 16 K steps) checks it (unless ``check`` is False), and the relative misfit
    there is returned with the answer (0 for a periodic steady state).  A misfit above ``CHECK_TOLERANCE`` means
    the steady state had not settled: the runs are redone with 24 or 40 K steps (checked at 6 tiles, 44 K steps),
    and the launch's band corners (``check=False``) use that box too."""
    tiles, ksteps = _tiles_on_critical_cluster(config), config.k_steps
    if ksteps <= FULL_KSTEPS or tiles * ksteps <= SIM_BUDGET:
        return _run(hw, config, tiles, ksteps), False, 0.0
    launch_key = (config.module().__name__, config.plan, config.m, config.n, config.k, config.grid, config.breaks)
    for box, (s_fit, check_at) in enumerate(_BOXES):
        if box == 0 and launch_key in _LARGE_BOX:
            continue
        tfit = sorted({min(tiles, t) for t in _T_FIT})
        sfit = sorted({min(ksteps, s) for s in s_fit})
        points = {(t, s): _run(hw, config, t, s) for t in tfit for s in sfit}
        if not check:
            return _bilinear(points, tiles, ksteps), True, 0.0
        check_t, check_s = min(tiles, check_at[0]), min(ksteps, check_at[1])
        measured = _run(hw, config, check_t, check_s)
        error = abs(_bilinear(points, check_t, check_s)["end"] / measured["end"] - 1.0)
        if error <= CHECK_TOLERANCE or box == len(_BOXES) - 1:
            return _bilinear(points, tiles, ksteps), True, error
        _LARGE_BOX.add(launch_key)
    raise AssertionError("unreachable")  # pragma: no cover


def predict(hw: Hardware, a_format: str, b_format: str, m: int, n: int, k: int, overlap: bool,
            check: bool = True, kernel_path: str | None = None) -> Prediction:
    """Simulate the critical cluster of the seed's launch and return time, TFLOP/s and the split
    (``check=False``: skip the check run of an extrapolation; the band's corners do; ``kernel_path``: another
    copy of the kernel, e.g. an edited one)."""
    config = kernel_config(hw, a_format, b_format, m, n, k, overlap, kernel_path)
    totals, extrapolated, error = _steady_state(hw, config, check)
    total = totals["end"] + costs.launch_overhead(hw)
    mainloop, exposed = totals["mainloop"], totals["exposed"]
    if extrapolated:  # the split's surfaces are fitted too: keep each part within what the total allows
        mainloop = min(max(0.0, mainloop), total)
        exposed = min(max(0.0, exposed), total - mainloop)
    idle = total - mainloop - exposed
    tiles_per_cluster = _tiles_on_critical_cluster(config)
    return Prediction(
        gpu=hw.name, a_format=a_format, b_format=b_format, m=m, n=n, k=k, overlap=overlap, time_s=total,
        tflops=2.0 * m * n * k / total / 1e12, mainloop_s=mainloop, exposed_epilogue_s=exposed, idle_s=idle,
        tiles=config.num_tiles, clusters=config.grid, tiles_per_cluster=tiles_per_cluster,
        hbm_bytes_per_tile=totals["hbm_bytes"] / max(1, tiles_per_cluster),
        extrapolated=extrapolated, extrapolation_error=error,
    )


def _headline(off: Prediction, on: Prediction) -> dict[str, float]:
    return {"tflops_off": off.tflops, "tflops_on": on.tflops, "speedup_pct": (on.tflops / off.tflops - 1.0) * 100.0}


#: the band's uncertainty groups, after the fit (:mod:`gluon_overlap.timing.fit`); each moves to the fast and the
#: slow end of its parameters' ranges.  ``fitted``: the values the published B300 table pins, over their post-fit
#: ranges; ``memory`` (with ``l2_store_load_sharing``, which the table cannot pin) and ``sync``: estimates over their
#: prior ranges, with the fitted values *refitted* at each corner where the description holds such a refit
#: (``post_fit_corners``), and the corner pulled in as far as the measurements require; ``tensor``: the FP4 rate,
#: which no published overlap table here measures.  The epilogue's per-instruction estimates are not a group: the
#: fitted ``epilogue_cost_factor`` scales their sum, which is what the data pin.
BAND_GROUPS: dict[str, tuple[str, ...]] = {
    "fitted": ("epilogue_cost_factor", "tensor_efficiency_fp8"),
    "memory": GROUPS["memory"],
    "sync": GROUPS["sync"],
    "tensor": ("peak_fp4_pflops", "tensor_efficiency_fp4"),
}
BAND_METHOD = ("each uncertainty group moved to the fast and the slow end of its parameters' ranges (off and on "
               "share the corner); 'fitted' over the post-fit ranges, 'memory' and 'sync' with the fitted values "
               "refitted at each corner; the larger deviation of a group's two corners below and above the "
               "nominal; groups combine in quadrature; a group none of whose parameters the row's MMA kind "
               "reads is skipped")


def _rate_specific(name: str) -> str | None:
    """``"fp8"`` / ``"fp4"`` for a parameter only that MMA rate class reads, else None."""
    for cls in ("fp8", "fp4"):
        if name.endswith(f"_{cls}") or name.startswith(f"peak_{cls}_"):
            return cls
    return None


def band_corner(hw: Hardware, group: str, fast: bool) -> Hardware:
    """``hw`` with every parameter of band group ``group`` at the end of its range that makes the kernel faster
    (``fast``) or slower, and the fitted values the description refitted for that corner."""
    if group not in BAND_GROUPS:
        raise ValueError(f"group={group!r} is not one of {sorted(BAND_GROUPS)}")
    side = f"{group}-{'fast' if fast else 'slow'}"
    changes: dict[str, float] = {}
    for name in BAND_GROUPS[group]:
        lo, hi = hw.value_range(name)
        changes[name] = lo if (name in LOWER_IS_FASTER) == fast else hi
    # where the description holds a refit of this corner, the data-consistent corner replaces the prior's ends
    changes.update(post_fit_corners(hw.name).get(side, {}))
    return replace(hw, name=f"{hw.name}-{side}", **changes)


def post_fit_corners(gpu: str) -> dict[str, dict[str, float]]:
    """The refitted values of a description's band corners (its ``post_fit_corners``; empty if none)."""
    if gpu not in _POST_FIT:
        path = DATA_DIR / f"{gpu}.json"
        raw = json.loads(path.read_text()) if path.is_file() else {}
        _POST_FIT[gpu] = {side: dict(v["values"]) for side, v in raw.get("post_fit_corners", {}).items()}
    return _POST_FIT[gpu]


_POST_FIT: dict[str, dict[str, dict[str, float]]] = {}


def band_groups_for(a_format: str, b_format: str) -> list[str]:
    """The band groups that matter for a pair: those with a parameter its MMA rate class reads."""
    cls = costs.rate_class(a_format, b_format)
    return [g for g, names in BAND_GROUPS.items() if any(_rate_specific(n) in (None, cls) for n in names)]


def band(hw: Hardware, a_format: str, b_format: str, m: int, n: int, k: int,
         nominal: dict[str, float] | None = None) -> dict:
    """How far the headline numbers move when the uncertain parameters move within their post-fit ranges.

    Every band group (:data:`BAND_GROUPS`) that matters for the pair is moved to its fast and its slow corner
    (:func:`band_corner`; the off and on runs share the corner, so the speedup sees correlated costs).  A group's
    deviation below and above the nominal is the larger of its two corners'; independent groups combine in
    quadrature.  Returns ``{quantity: [lo, hi]}`` for ``tflops_off``, ``tflops_on`` and ``speedup_pct``, and under
    ``"by_group"`` every corner's numbers."""
    if nominal is None:
        nominal = _headline(predict(hw, a_format, b_format, m, n, k, False),
                            predict(hw, a_format, b_format, m, n, k, True))

    by_group: dict[str, dict[str, dict[str, float]]] = {}
    below = {q: 0.0 for q in nominal}
    above = {q: 0.0 for q in nominal}
    for group in band_groups_for(a_format, b_format):
        corners = {}
        for fast in (True, False):
            c = band_corner(hw, group, fast)
            corners["fast" if fast else "slow"] = _headline(
                predict(c, a_format, b_format, m, n, k, False, check=False),
                predict(c, a_format, b_format, m, n, k, True, check=False))
        by_group[group] = corners
        for q, v in nominal.items():
            lo = min(cv[q] for cv in corners.values())
            hi = max(cv[q] for cv in corners.values())
            below[q] += max(0.0, v - lo) ** 2
            above[q] += max(0.0, hi - v) ** 2
    out: dict = {q: [v - math.sqrt(below[q]), v + math.sqrt(above[q])] for q, v in nominal.items()}
    out["by_group"] = by_group
    return out


def compare(hw: Hardware, a_format: str, b_format: str, m: int, n: int, k: int, with_band: bool = True) -> dict:
    """One row of the seed's table: off, on, speedup, the time split of both and (``with_band``) the bands."""
    off = predict(hw, a_format, b_format, m, n, k, overlap=False)
    on = predict(hw, a_format, b_format, m, n, k, overlap=True)
    head = _headline(off, on)
    row = {"gpu": hw.name, "a_format": a_format, "b_format": b_format, "m": m, "n": n, "k": k, **head}
    if with_band:
        b = band(hw, a_format, b_format, m, n, k, nominal=head)
        row["speedup_band_pct"] = b["speedup_pct"]
        row["tflops_off_band"] = b["tflops_off"]
        row["tflops_on_band"] = b["tflops_on"]
        row["band_by_group"] = b["by_group"]
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
    row["extrapolated"] = off.extrapolated or on.extrapolated
    row["extrapolation_error"] = max(off.extrapolation_error, on.extrapolation_error)
    return row


def sweep(hw: Hardware, pairs: Sequence[tuple[str, str]] = SEED_FORMAT_PAIRS, ks: Sequence[int] = SEED_KS,
          m: int = SEED_M, n: int = SEED_N, with_band: bool = True, progress: bool = False,
          workers: int | None = None) -> list[dict]:
    """The seed's benchmark table, predicted: one :func:`compare` row per (pair, K), in that order.

    ``progress``: a progress bar on stderr (tqdm), shown only when stderr is a terminal.  ``workers``: processes
    that share the pairs (each pair's rows in one process, so its recordings and cached runs are shared across its
    K); default one per CPU this process may use, at most 2 and at most one per pair (1: all in this process)."""
    jobs = [(a, b, k) for a, b in pairs for k in ks]
    if workers is None:
        workers = min(2, len(pairs), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    bar = None
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(jobs), desc=f"model {hw.name}", unit="row", file=sys.stderr, leave=False)
    try:
        if workers > 1 and len(pairs) > 1 and "fork" in multiprocessing.get_all_start_methods():
            done = _sweep_in_processes(hw, pairs, ks, m, n, with_band, workers, bar)
        else:
            done = {}
            for a, b, k in jobs:
                done[(a, b, k)] = compare(hw, a, b, m, n, k, with_band=with_band)
                if bar is not None:
                    bar.update()
    finally:
        if bar is not None:
            bar.close()
    run_cache.save()  # the runs simulated here and in the workers, for the next process (twin.run_cache)
    return [done[job] for job in jobs]


_PROGRESS = None  # a worker's queue to the parent's progress bar


def _worker_init(queue: object) -> None:
    global _PROGRESS
    _PROGRESS = queue
    # the parent alone answers Ctrl-C and SIGTERM (the CLI turns SIGTERM into an exception); it ends the pool, whose
    # workers must then just stop, without a traceback of their own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        import torch

        torch.set_num_threads(1)  # the recordings build small CPU tensors; one thread per process
    except ImportError:  # pragma: no cover
        pass


def _pair_rows(args: tuple) -> dict[tuple[str, str, int], dict]:
    hw, (a, b), ks, m, n, with_band = args
    out = {}
    for k in ks:
        out[(a, b, k)] = compare(hw, a, b, m, n, k, with_band=with_band)
        if _PROGRESS is not None:
            _PROGRESS.put(1)
    return out, run_cache.take_new()


def _sweep_in_processes(hw: Hardware, pairs: Sequence[tuple[str, str]], ks: Sequence[int], m: int, n: int,
                        with_band: bool, workers: int, bar: object) -> dict:
    """:func:`sweep`'s rows computed by ``workers`` forked processes, one pair at a time each."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.SimpleQueue()
    done: dict = {}
    with ctx.Pool(workers, initializer=_worker_init, initargs=(queue,)) as pool:
        pending = pool.map_async(_pair_rows, [(hw, pair, tuple(ks), m, n, with_band) for pair in pairs], chunksize=1)
        while not pending.ready() or not queue.empty():
            while not queue.empty():
                queue.get()
                if bar is not None:
                    bar.update()
            pending.wait(0.05)
        for rows, runs in pending.get():
            done.update(rows)
            run_cache.add(runs)
    return done


def model_table(gpu: str | Hardware = "b300", pairs: Sequence[tuple[str, str]] = SEED_FORMAT_PAIRS,
                ks: Sequence[int] = SEED_KS, m: int = SEED_M, n: int = SEED_N, *, band: bool = True,
                epilogue_scale: float = 1.0, progress: bool = False, workers: int | None = None) -> dict:
    """**The** prediction function of the series: the timing model's table for one GPU.

    Returns ``{"gpu", "description", "m", "n", "epilogue_scale", "clusters", "tiles_per_cluster", "band_method",
    "band_groups", "parameters", "rows"}``; each row (one per format pair and K, :func:`compare`) holds
    ``tflops_off``, ``tflops_on``, ``speedup_pct`` and, with ``band``, ``tflops_off_band``, ``tflops_on_band``,
    ``speedup_band_pct`` (``[lo, hi]``), plus the time split of both runs (microseconds).  ``gpu`` is a name of
    ``gluon_overlap/data/hardware`` or a :class:`Hardware`; ``epilogue_scale`` a what-if factor on every epilogue
    subtile cost; ``progress`` a progress bar on stderr when it is a terminal; ``workers`` as in :func:`sweep`."""
    hw = load_hardware(gpu) if isinstance(gpu, str) else gpu
    if epilogue_scale != 1.0:
        hw = hw.with_epilogue_scaled(epilogue_scale)
    rows = sweep(hw, pairs, ks, m, n, with_band=band, progress=progress, workers=workers)
    return {"gpu": hw.name, "description": hw.description, "epilogue_scale": epilogue_scale, "m": m, "n": n,
            "clusters": rows[0]["clusters"], "tiles_per_cluster": rows[0]["tiles_per_cluster"],
            "band_method": BAND_METHOD, "band_groups": {g: list(names) for g, names in BAND_GROUPS.items()},
            "parameters": {name: hw.provenance(name) for name in sorted(hw.records)}, "rows": rows}


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

    return _golden(loss, 0.3, 1.0, tol)


def efficiency_range(hw: Hardware, fmt: str, tol: float = 1e-4) -> tuple[float, float]:
    """The tensor efficiency solved from each published single-buffered size *alone*: the spread between the
    sizes is what the one-number calibration cannot explain, so it is the calibrated value's plausible range."""
    cls = costs.rate_class(fmt, fmt)
    sizes = sorted(size for f, size in PUBLISHED_SINGLE_BUFFERED if f == fmt)
    solved = []
    for size in sizes:
        def loss(eta: float, size: int = size) -> float:
            variant = _with_efficiency(hw, cls, eta)
            model = predict(variant, fmt, fmt, size, size, size, overlap=False).tflops
            return math.log(model / PUBLISHED_SINGLE_BUFFERED[(fmt, size)]) ** 2

        solved.append(_golden(loss, 0.3, 1.0, tol))
    return min(solved), max(solved)


def _golden(loss: Callable[[float], float], lo: float, hi: float, tol: float) -> float:
    """The minimum of a unimodal ``loss`` on ``[lo, hi]`` by golden-section search, to within ``tol``."""
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
