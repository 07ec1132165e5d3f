"""Run a step kernel on the CPU executor and check it: correctness, hazards, deadlocks, MMA idle time.

The executor (:mod:`gluon_overlap.interp.launch`) runs the kernel's own Gluon source -- both
CTAs of every cluster -- on CPU tensors.  C is pre-filled with NaN, so a tile the kernel never
writes cannot pass for a right one.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from gluon_overlap.emulate.config import KernelConfig
from gluon_overlap.formats import Problem, random_problem
from gluon_overlap.hardware import Hardware, load_hardware
from gluon_overlap.interp.data import ExecBackend
from gluon_overlap.interp.engine import RunResult
from gluon_overlap.interp.launch import launch
from gluon_overlap.interp.ops import Arrive, Expect, Op, TmaLoad
from gluon_overlap.kernel import BLOCK_M

#: how close C must be to the float64 reference (float16 output: ~2^-11 relative rounding)
from gluon_overlap.limits import ATOL, RTOL  # the seed's tolerance: one home
from gluon_overlap.steps import host
from gluon_overlap.timing import streams
from gluon_overlap.timing.backend import CostBackend
from gluon_overlap.timing.streams import OTHER
from gluon_overlap.tmem import make_plan

if TYPE_CHECKING:
    from gluon_overlap.compiler.compile import GluonFunction


@dataclass(frozen=True)
class StepRun:
    """One executor run of a step kernel on one problem."""

    run: Any  # the executor's result (ok, hazards, deadlock, trace, end_time)
    c: torch.Tensor  # what the kernel stored (NaN where it stored nothing)
    problem: Problem
    overlap: bool
    num_clusters: int
    simulated: tuple[int, ...] | None = None  # the clusters that ran (None: all of them)

    def wrong_tiles(self) -> list[tuple[int, int]]:
        """``(tile_m, tile_n)`` of every 256 x 256 tile of C (of the clusters that ran) that is NaN or
        off the reference."""
        plan = make_plan(self.problem.a.format, self.problem.b.format, overlap=self.overlap)
        ref, got = self.problem.reference.double(), self.c.double()
        tiles_n = -(-self.problem.n // plan.block_n)
        bad = []
        for tm in range(0, self.problem.m, BLOCK_M):
            for tn in range(0, self.problem.n, plan.block_n):
                tile_id = (tm // BLOCK_M) * tiles_n + tn // plan.block_n
                if self.simulated is not None and tile_id % self.num_clusters not in self.simulated:
                    continue
                r = ref[tm : tm + BLOCK_M, tn : tn + plan.block_n]
                g = got[tm : tm + BLOCK_M, tn : tn + plan.block_n]
                if not torch.allclose(g, r, atol=ATOL, rtol=RTOL):  # NaN is never close
                    bad.append((tm // BLOCK_M, tn // plan.block_n))
        return bad

    def tiles_of(self, cluster: int) -> int:
        """Output tiles cluster ``cluster`` computes (the static schedule ``cluster, cluster + P, ...``)."""
        plan = make_plan(self.problem.a.format, self.problem.b.format, overlap=self.overlap)
        return len(range(cluster, host.num_tiles(self.problem.m, self.problem.n, plan), self.num_clusters))

    def mma_time(self, cluster: int = 0) -> MmaTime:
        """MMA busy and idle time of ``cluster`` (a timed run)."""
        return mma_time(self.run, self.tiles_of(cluster), cluster)

    @property
    def correct(self) -> bool:
        return not self.wrong_tiles()

    @property
    def clean(self) -> bool:
        """No hazard, no deadlock, no error, and C right."""
        return self.run.ok and self.correct


class LiveRoles:
    """The timing model's roles (:class:`gluon_overlap.timing.streams.Roles`), learnt while a kernel runs.

    The timing model reads who does what from a *recording* of ``kernel.py`` (which partition issues MMAs, which
    drains TMEM, which barriers get arrivals from the other CTA). A step kernel run directly on the executor has no
    recording, so its roles are learnt from each operation as it executes, by the same rules
    (``streams.roles_of``): a process's role is the first of issuer (MMA) or drain (TMEM load) it shows; an
    arrival on a barrier owned by another CTA makes that barrier remote; an arrive of a drain process is a drain
    arrive.  In a single-stream kernel the one process issues the MMAs first, so it is the issuer."""

    def __init__(self) -> None:
        self.partition_roles: dict = {}
        self.remote: set[int] = set()
        self.drain_arrives: set[int] = set()
        self.gates: frozenset[int] = frozenset()
        self.gate_waits: frozenset[int] = frozenset()  # only the whole-launch split needs them
        self.early_releases: frozenset[int] = frozenset()
        self.partition_waited: set[int] = set()

    def role_of(self, partition: Hashable) -> str:

        return self.partition_roles.get(partition, OTHER)

    def observe(self, op: Op) -> None:

        part = (op.proc.partition, op.proc.cluster)
        role = {"mma": streams.ISSUER, "tmem_load": streams.DRAIN, "tma_load": streams.LOADER}.get(op.kind)
        if role is not None and self.role_of(part) in (streams.OTHER, streams.LOADER):
            self.partition_roles[part] = role
        bars = (op.bar,) if isinstance(op, (Arrive, Expect, TmaLoad)) else tuple(getattr(op, "bars", ()) or ())
        for bar in bars:
            if bar.cta != op.cta:
                self.remote.add(id(bar))
        if op.kind == "arrive" and self.role_of(part) == streams.DRAIN:
            self.drain_arrives.add(id(op))


def hardware_costs(problem: Problem, overlap: bool, gpu: str = "b300", hardware: Hardware | None = None) -> CostBackend:
    """The timing model's cost backend (:class:`gluon_overlap.timing.backend.CostBackend`) for this
    problem on ``gpu`` (or on the description ``hardware``, e.g. a band corner), its roles learnt as the
    kernel runs (:class:`LiveRoles`): what a timed executor run uses to give each operation its duration."""

    class StepCostBackend(CostBackend):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.roles = self.live = LiveRoles()

        def duration(self, op: Op) -> float:
            if op.proc is not None:
                self.live.observe(op)
            return super().duration(op)

    hw = load_hardware(gpu) if hardware is None else hardware
    plan = make_plan(problem.a.format, problem.b.format, overlap=overlap)
    return StepCostBackend(hw, KernelConfig(plan, problem.m, problem.n, problem.k, num_sms=hw.sms))


def run_step(
    kernel: GluonFunction,
    problem: Problem,
    *,
    overlap: bool = False,
    num_clusters: int | None = None,
    seed: int = 0,
    completion_bias: float | None = None,
    timed: bool = False,
    gpu: str = "b300",
    max_steps: int | None = None,
    descriptors: host.Descriptors | None = None,
    hardware: Hardware | None = None,
    data: bool = True,
) -> StepRun:
    """Launch ``kernel`` (a step kernel, a learner's edit of one, or ``kernel.py``'s kernel, which
    takes the same descriptors) on the executor.

    ``num_clusters`` defaults to one cluster per output tile (what the single-buffered kernel
    needs); a persistent kernel may be given fewer.  ``timed=True`` runs one deterministic
    interleaving of cluster 0 alone with the durations of the timing model for ``gpu`` (seconds;
    the model prices one cluster's tensor core, links and HBM share, as the timing model does).
    ``descriptors``: a function like ``kernel.make_descriptors`` to build a step kernel's descriptors with;
    ``hardware``: a :class:`~gluon_overlap.hardware.Hardware` description to time with instead of ``gpu``'s.
    ``data=False`` (timed runs): move no data, only time the operations -- the same times (the kernels have no
    data-dependent control flow; ``tests/timing/test_step_predictions.py``), in about half the time, but no C to check.
    """

    production = len(getattr(kernel, "params", ())) == len(host.production_param_names())
    args, c = host.problem_args(problem, overlap=overlap, production=production, descriptors=descriptors)
    plan = args[-1]
    tiles = host.num_tiles(problem.m, problem.n, plan)
    clusters = tiles if num_clusters is None else num_clusters
    if isinstance(clusters, bool) or not isinstance(clusters, int) or not 1 <= clusters <= tiles:
        raise ValueError(
            f"num_clusters={num_clusters!r} must be an int in [1, {tiles}] (the problem has {tiles} tiles)"
        )
    extra: dict[str, Any] = {} if completion_bias is None else {"completion_bias": completion_bias}
    simulated = None
    if timed:
        extra["costs"] = hardware_costs(problem, overlap, gpu, hardware)
        simulated = extra["clusters"] = (0,)
    if timed and not data:
        extra["backend"] = ExecBackend(costs=extra["costs"], data=False)
    run = launch(kernel, grid=(clusters,), args=args, num_ctas=2, seed=seed, timed=timed, max_steps=max_steps, **extra)
    return StepRun(run, c, problem, overlap, clusters, simulated)


def make_problem(
    m: int, n: int, k: int, a_format: str = "nvfp4", b_format: str | None = None, seed: int = 0
) -> Problem:
    """A random CPU problem (``gluon_overlap.formats.random_problem``) for a step kernel."""
    return random_problem(m, n, k, a_format, b_format or a_format, seed=seed)


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def _span(op: Op) -> tuple[float, float]:
    return (op.t_start, op.t_end) if getattr(op, "asynchronous", False) else (op.t_issue, op.t_end)


@dataclass(frozen=True)
class MmaTime:
    """How a cluster's time splits on the executor's clock (timed mode)."""

    total: float  # from launch to the cluster's last operation
    busy: float  # the tensor core computing MMAs (union of their spans)
    idle_in_epilogue: float  # the tensor core idle while this cluster's epilogue drains TMEM or stores C
    tiles: int  # output tiles the cluster computed

    @property
    def idle(self) -> float:
        return self.total - self.busy

    @property
    def idle_share(self) -> float:
        return self.idle / self.total if self.total else 0.0

    @property
    def per_tile(self) -> float:
        return self.total / self.tiles if self.tiles else 0.0

    def row(self, step: str) -> dict:
        return {
            "step": step,
            "busy": self.busy,
            "idle": self.idle,
            "idle_in_epilogue": self.idle_in_epilogue,
            "total": self.total,
            "tiles": self.tiles,
        }


EPILOGUE_KINDS = ("tmem_load", "smem_store", "tma_store", "store_wait")


def mma_time(run: RunResult, tiles: int, cluster: int = 0) -> MmaTime:
    """Split the time of ``cluster`` (which computed ``tiles`` output tiles) of a timed executor run
    into MMA busy and idle time."""
    ops = [op for op in run.trace if op.proc is not None and op.cluster == cluster]
    if not ops:
        raise ValueError(f"cluster={cluster} ran no operation (the run has {len(run.trace)} operations)")
    total = max(op.t_end for op in ops)
    busy = _union([_span(op) for op in ops if op.kind == "mma"])
    drain = _union([_span(op) for op in ops if op.kind in EPILOGUE_KINDS])
    overlap_with_busy = 0.0
    for a0, a1 in drain:
        for b0, b1 in busy:
            overlap_with_busy += max(0.0, min(a1, b1) - max(a0, b0))
    drain_total = sum(b - a for a, b in drain)
    return MmaTime(total, sum(b - a for a, b in busy), drain_total - overlap_with_busy, tiles)
