"""The timing model's prediction of one launch: the kernel's recorded operations timed on the engine.

The kernel's recorded operations (:mod:`gluon_overlap.timing.recordings`) run on the engine in timed mode, each
priced by :class:`gluon_overlap.timing.backend.CostBackend` (the tensor pipe, each SM's L2 path, the cluster's share
of HBM).

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

:func:`predict` runs one problem and one mode (overlap off or on).  The band around it is
:mod:`gluon_overlap.timing.band`, the tables of the series :mod:`gluon_overlap.timing.table` (:func:`model_table`
is the one prediction function the ``model`` command and notebook 07 use), the calibration of an MMA kind's
efficiency :mod:`gluon_overlap.timing.calibration`, the fit of the unpinned parameters
:mod:`gluon_overlap.timing.fit`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from gluon_overlap.emulate.config import KernelConfig
from gluon_overlap.hardware import Hardware
from gluon_overlap.interp.engine import Engine
from gluon_overlap.timing import costs, run_cache
from gluon_overlap.timing.backend import CostBackend
from gluon_overlap.timing.recordings import launch_recorded as launch
from gluon_overlap.timing.streams import roles
from gluon_overlap.tmem import BLOCK_M, BLOCK_N, TmemPlan, make_plan

SEED_KS = (512, 1024, 2048, 4096, 8192)
SEED_M = SEED_N = 8192


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


def kernel_config(
    hw: Hardware, a_format: str, b_format: str, m: int, n: int, k: int, overlap: bool, kernel_path: str | None = None
) -> KernelConfig:
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
        sim = KernelConfig(
            config.plan,
            m=BLOCK_M,
            n=BLOCK_N * config.grid * tiles,
            k=ksteps * config.plan.block_k,
            clusters=config.grid,
            num_sms=config.num_sms,
            kernel_path=config.kernel_path,
            breaks=config.breaks,
        )
        last = full_tiles - 1

        def wave_of(i: int) -> int:
            return last if i == tiles - 1 else i

    backend = CostBackend(hw, sim, problem=(config.m, config.n, config.k), wave_of=wave_of)
    # the run depends on the real problem only through its waves' L2 misses and sharers: runs of other K (or M, N)
    # with the same ones are the same run (e.g. every K of a truncated run at M = N = 8192), so they are cached
    waves = [backend._wave(i) for i in range(tiles)]
    key = (
        hw,
        config.module().__name__,
        sim.plan,
        sim.m,
        sim.n,
        sim.k,
        sim.grid,
        sim.breaks,
        tuple((backend.miss_fraction(w), backend.sharers(w)) for w in waves),
    )
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
            cross = points[(t2, s2)][key] - points[(t2, s1)][key] - points[(t1, s2)][key] + f11
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


def predict(
    hw: Hardware,
    a_format: str,
    b_format: str,
    m: int,
    n: int,
    k: int,
    overlap: bool,
    check: bool = True,
    kernel_path: str | None = None,
) -> Prediction:
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
        gpu=hw.name,
        a_format=a_format,
        b_format=b_format,
        m=m,
        n=n,
        k=k,
        overlap=overlap,
        time_s=total,
        tflops=2.0 * m * n * k / total / 1e12,
        mainloop_s=mainloop,
        exposed_epilogue_s=exposed,
        idle_s=idle,
        tiles=config.num_tiles,
        clusters=config.grid,
        tiles_per_cluster=tiles_per_cluster,
        hbm_bytes_per_tile=totals["hbm_bytes"] / max(1, tiles_per_cluster),
        extrapolated=extrapolated,
        extrapolation_error=error,
    )


def headline(off: Prediction, on: Prediction) -> dict[str, float]:
    """TFLOP/s off and on and the speedup of the overlap, in percent."""
    return {"tflops_off": off.tflops, "tflops_on": on.tflops, "speedup_pct": (on.tflops / off.tflops - 1.0) * 100.0}
