"""One call to run the real kernel (``gluon_overlap/kernel.py``, or an edited copy) on the CPU executor
and compare C with the float reference; seed sweeps and break matrices on top of it."""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from gluon_overlap.compiler.precheck import REFUSAL_PREFIX, failure_text
from gluon_overlap.emulate import kernel_files

#: the seed's test tolerance
from gluon_overlap.emulate.budget import check_run_options, emulate_estimate
from gluon_overlap.emulate.config import KernelConfig, compile_error, launch, with_kernel_grid
from gluon_overlap.emulate.kernel_files import import_failure
from gluon_overlap.emulate.kernels import check_breaks
from gluon_overlap.emulate.wallclock import WallClock, WallClockExceeded
from gluon_overlap.interp.data import ExecBackend
from gluon_overlap.interp.engine import Deadlock, Engine, Hazard
from gluon_overlap.interp.launch import ExecutionResult
from gluon_overlap.interp.ops import Op
from gluon_overlap.limits import ATOL, RTOL  # the seed's tolerance: one home
from gluon_overlap.tmem import make_plan

#: illustrative unit costs for timed runs of the twin (NOT a performance model; see twin.timing for that):
#: enough to make the MMA idle gap that the overlap removes visible on a timeline
UNIT_COSTS = {
    "tma_load": 3.0,
    "scale_copy": 0.25,
    "mma": 4.0,
    "commit": 0.0,
    "tmem_load": 1.0,
    "smem_store": 0.25,
    "tma_store": 1.0,
    "wait": 0.0,
    "arrive": 0.0,
    "expect": 0.0,
    "store_wait": 0.0,
}


@dataclass
class EmulationResult:
    """What a twin run produced, and how it compares with the reference."""

    config: KernelConfig
    seed: int
    c: torch.Tensor  # float16 [M, N]; NaN where nothing was stored
    reference: torch.Tensor  # float32 [M, N]
    hazards: list[Hazard]
    deadlock: Deadlock | None
    steps: int
    time: float
    trace: list[Op] = field(repr=False)
    step_limit_hit: bool = False
    kernel: str = "gluon_overlap/kernel.py"  # the kernel source that ran
    failure: str | None = None  # the kernel raised (message and line), or None
    seconds: float = 0.0  # wall-clock time of the run
    max_steps: int | None = None  # the run's step budget
    time_limit: float | None = None  # the run's wall-clock budget (seconds)
    stopped_by: str | None = None  # the budget that stopped the run: "steps", "wall-clock", or None
    #: the phase before the run whose own wall-clock budget stopped it ("the compiler's check of the kernel"), or
    #: None; ``stopped_in_seconds`` is that budget
    stopped_in: str | None = None
    stopped_in_seconds: float | None = None

    @property
    def error(self) -> torch.Tensor:
        """|C - reference| in float32 (inf where C is NaN)."""
        err = (self.c.float() - self.reference).abs()
        return torch.nan_to_num(err, nan=float("inf"))

    @functools.cached_property
    def bad(self) -> torch.Tensor:
        """Boolean [M, N]: elements outside the seed's tolerance."""
        return ~torch.isclose(self.c.float(), self.reference, atol=ATOL, rtol=RTOL)

    @property
    def matches_reference(self) -> bool:
        return not bool(self.bad.any())

    @property
    def max_abs_err(self) -> float:
        return float(self.error.max())

    @property
    def rel_err(self) -> float:
        """max |C - ref| / max |ref|."""
        return float(self.error.max() / self.reference.abs().max().clamp_min(1e-30))

    @property
    def refused(self) -> str | None:
        """The compiler's refusal of the kernel (the run did not start), or None."""

        if self.failure is not None and self.failure.startswith(REFUSAL_PREFIX):
            return self.failure[len(REFUSAL_PREFIX) :]
        return None

    @property
    def ok(self) -> bool:
        return (
            self.matches_reference
            and not self.hazards
            and self.deadlock is None
            and not self.step_limit_hit
            and self.failure is None
        )

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary; ``events`` is the number of recorded operations."""
        c = self.config
        return {
            "a_format": c.plan.a_format,
            "b_format": c.plan.b_format,
            "m": c.m,
            "n": c.n,
            "k": c.k,
            "overlap": c.plan.overlap,
            "clusters": c.grid,
            "breaks": sorted(c.breaks),
            "seed": self.seed,
            "matches_reference": self.matches_reference,
            "max_abs_err": _finite(self.max_abs_err),
            "rel_err": _finite(self.rel_err),
            "wrong_elements": int(self.bad.sum()),
            "tiles": c.num_tiles,
            "tiles_per_cluster": [len(c.tiles_of(cl)) for cl in range(c.grid)],
            "hazards": [h.to_dict() for h in self.hazards],
            "deadlock": self.deadlock.to_dict() if self.deadlock else None,
            "events": len(self.trace),
            "steps": self.steps,
            "step_limit_hit": self.step_limit_hit,
            "kernel": self.kernel,
            "failure": self.failure,
            "refused": self.refused,
            "budget": {
                "steps": self.max_steps,
                "seconds": self.time_limit,
                "stopped_by": self.stopped_by,
                "stopped_in": self.stopped_in,
                "stopped_in_seconds": self.stopped_in_seconds,
            },
        }


def _finite(x: float) -> float | None:
    """``x``, or None when C holds NaN (unstored elements): keeps the JSON valid."""
    return x if math.isfinite(x) else None


def emulate(
    problem: Any,
    *,
    overlap: bool = True,
    clusters: int | None = None,
    breaks: Iterable[str] = (),
    seed: int = 0,
    trace: bool = True,
    max_steps: int | None = None,
    epilogue_block_n: int | None = None,
    timed: bool = False,
    costs: dict[str, float] | None = None,
    completion_bias: float = 1.0,
    kernel: str | None = None,
    schedule: str = "uniform",
    time_limit: float | None = None,
) -> EmulationResult:
    """Run the kernel (``kernel``: a path to an edited copy of ``gluon_overlap/kernel.py``; default the
    real one) on a :class:`gluon_overlap.formats.Problem`, with the ``breaks`` edits applied to a copy.

    Data mode (default): scheduler seed ``seed`` picks the interleaving (``completion_bias`` < 1
    makes async completions late, > 1 early; ``schedule="holdback"`` holds partitions back for long stretches;
    see :class:`~gluon_overlap.interp.engine.Engine`).
    ``timed=True``: one deterministic interleaving with :data:`UNIT_COSTS` (or ``costs``) as
    durations, for timelines.

    Budgets: ``max_steps`` operations (default :func:`step_budget`) and ``time_limit`` seconds of wall
    clock for the run (default :func:`default_time_limit`); importing the kernel file and the compiler's
    check of it have their own (:data:`IMPORT_SECONDS`, :data:`COMPILE_SECONDS`).  A kernel
    that loops, exits (``sys.exit``, ``os._exit``, ``SystemExit``) or runs past a budget never hangs or
    ends the calling process: the run's ``failure`` says what it did and where (the kernel line), and
    ``stopped_by`` which budget stopped it (``"steps"``, ``"wall-clock"``, or None).  A kernel file that
    cannot be imported (it exits, or loops, at import) is a ``ValueError`` with its line.  Ctrl-C
    (``KeyboardInterrupt``) is the caller's and propagates.  Only a kernel that swallows every exception in an
    endless loop, or blocks in one call into C, outlasts the budget in this process
    (:mod:`gluon_overlap.emulate.wallclock`); ``gluon-overlap emulate`` kills its child process then.
    """
    kw = {} if epilogue_block_n is None else {"epilogue_block_n": epilogue_block_n}
    plan = make_plan(problem.a.format, problem.b.format, overlap=overlap, **kw)
    breaks = check_breaks(breaks, overlap)  # before frozenset() could take a name for its letters
    config = KernelConfig(
        plan, problem.m, problem.n, problem.k, clusters=clusters, breaks=frozenset(breaks), kernel_path=kernel
    )
    return run_config(
        problem,
        config,
        seed=seed,
        trace=trace,
        max_steps=max_steps,
        timed=timed,
        costs=costs,
        completion_bias=completion_bias,
        schedule=schedule,
        time_limit=time_limit,
    )


def step_budget(config: KernelConfig) -> int:
    """Operations a run may execute before it is stopped as runaway (an edited kernel that loops):
    ten times what the seed's kernel needs for the problem, plus a margin."""
    per_tile = config.k_steps * 12 + config.plan.num_subtiles * 8 + 16
    tiles = max(len(config.tiles_of(c)) for c in range(config.grid))
    return 10 * (per_tile * tiles + 64) * 2 * 3 * config.grid + 10_000


#: the default wall-clock budget of a run: this many times the estimate of
#: :func:`gluon_overlap.emulate.budget.emulate_estimate`, and at least :data:`MIN_RUN_SECONDS`
RUN_SECONDS_FACTOR = 20.0
MIN_RUN_SECONDS = 60.0
#: wall-clock budgets of importing a kernel file and of the compiler's check of it (Triton's frontend runs the
#: kernel's constexpr functions, which may loop), each its own: ``time_limit`` is the run's alone
IMPORT_SECONDS = 60.0
COMPILE_SECONDS = 120.0
COMPILE_PHASE = "the compiler's check of the kernel"  #: the name of that phase in reports


def default_time_limit(config: KernelConfig) -> float:
    """The wall-clock budget of a run of ``config`` when none is given (the command line's default too)."""

    estimate = emulate_estimate(
        config.m, config.n, config.k, config.plan.a_format, config.plan.b_format, config.clusters
    )
    return max(MIN_RUN_SECONDS, RUN_SECONDS_FACTOR * estimate.seconds)


def run_config(
    problem: Any,
    config: KernelConfig,
    *,
    seed: int = 0,
    trace: bool = True,
    max_steps: int | None = None,
    timed: bool = False,
    costs: dict[str, float] | None = None,
    completion_bias: float = 1.0,
    schedule: str = "uniform",
    time_limit: float | None = None,
) -> EmulationResult:
    """Like :func:`emulate` for a ready :class:`KernelConfig`."""
    if (problem.m, problem.n, problem.k) != (config.m, config.n, config.k):
        raise ValueError(
            f"problem shape {(problem.m, problem.n, problem.k)} differs from the config's "
            f"{(config.m, config.n, config.k)}"
        )
    if (problem.a.format, problem.b.format) != (config.plan.a_format, config.plan.b_format):
        raise ValueError(
            f"problem formats {(problem.a.format, problem.b.format)} differ from the plan's "
            f"{(config.plan.a_format, config.plan.b_format)}"
        )
    check_run_options(costs, completion_bias, max_steps, seed, time_limit)
    backend = ExecBackend(costs=dict(UNIT_COSTS if costs is None else costs) if timed else None)
    default_steps = max_steps is None
    if max_steps is None:
        max_steps = step_budget(config)
    seconds = default_time_limit(config) if time_limit is None else float(time_limit)
    engine = Engine(
        backend,
        seed=seed,
        trace=trace,
        max_steps=max_steps,
        timed=timed,
        completion_bias=completion_bias,
        schedule=schedule,
    )
    c = torch.full((config.m, config.n), float("nan"), dtype=torch.float16)
    kernel_files: set[str] = set()

    def is_kernel(name: str) -> bool:
        return name in kernel_files or _is_kernel_copy(name)

    start = time.perf_counter()
    stopped_in = None
    with WallClock(IMPORT_SECONDS, is_kernel, "the import of the kernel file"):
        module = import_kernel(config)
        kernel_files.add(module.__file__)
    with WallClock(COMPILE_SECONDS, is_kernel, COMPILE_PHASE) as clock:
        try:  # its own budget, so that the run's is the run's
            resolved = with_kernel_grid(config, module)  # an edited kernel's own launch_grid
            if resolved != config:
                config = resolved
                max_steps = engine.max_steps = step_budget(config) if default_steps else max_steps
                seconds = default_time_limit(config) if time_limit is None else seconds
            refused = compile_error(config, problem)
            res = None if refused is None else ExecutionResult([], None, [], error=refused)  # as launch says it
        except (WallClockExceeded, SystemExit) as exc:  # a helper the frontend runs loops or exits
            res = _stopped_launch(engine, exc, kernel_files)
            stopped_in = COMPILE_PHASE if isinstance(exc, WallClockExceeded) else None
    if res is None:
        with WallClock(seconds, is_kernel) as clock:
            try:  # the compiler's verdict is in: the launch does not ask again
                res = launch(engine, config, problem=problem, c=c, precheck=False)
            except (WallClockExceeded, SystemExit) as exc:  # stopped outside the kernel's partitions
                res = _stopped_launch(engine, exc, kernel_files)
    seconds_used = time.perf_counter() - start
    if res.error is not None and res.error.startswith("WallClockExceeded") and clock.fired:
        stopped_by: str | None = "wall-clock"
    else:
        stopped_by = "steps" if res.step_limit_hit else None
    return EmulationResult(
        config,
        seed,
        c,
        problem.reference,
        res.hazards,
        res.deadlock,
        res.steps,
        res.time,
        res.trace,
        res.step_limit_hit,
        config.kernel_path or "gluon_overlap/kernel.py",
        res.error,
        seconds_used,
        max_steps,
        seconds,
        stopped_by,
        stopped_in,
        COMPILE_SECONDS if stopped_in else None,
    )


def _is_kernel_copy(filename: str) -> bool:
    """A file of the private folder of edited kernels' copies (:mod:`gluon_overlap.emulate.kernel_files`)."""

    return kernel_files._folder is not None and os.path.dirname(filename) == str(kernel_files._folder)  # noqa: SLF001


def import_kernel(config: KernelConfig, interrupts_are_the_kernels: bool = False) -> Any:
    """``config.module()``; a kernel file whose import is stopped by the wall clock does not import, nor one that
    raises ``KeyboardInterrupt`` where Ctrl-C cannot reach (``interrupts_are_the_kernels``: the guarded child)."""
    stops = (WallClockExceeded, KeyboardInterrupt) if interrupts_are_the_kernels else WallClockExceeded
    try:
        return config.module()
    except stops as exc:
        path = config.kernel_path or "gluon_overlap/kernel.py"
        raise ValueError(f"kernel file {str(path)!r} does not import: {import_failure(exc, path)}") from None


def _stopped_launch(engine: Engine, exc: BaseException, kernel_files: set[str]) -> Any:
    """What a launch that was stopped outside the kernel's partitions leaves (the executor reports a stop
    inside one as the run's error): the engine's state so far, the stop as the error with its kernel line."""

    error = failure_text(exc, kernel_files)
    return ExecutionResult(list(engine.hazards), None, list(engine.trace), engine.steps, engine.now, False, error)


def format_hazards(hazards: list[Hazard], limit: int = 8) -> str:
    """One line per hazard (the first ``limit``), plus a count of the rest."""
    lines = [str(h) for h in hazards[:limit]]
    if len(hazards) > limit:
        lines.append(f"... {len(hazards) - limit} more")
    return "\n".join(lines) if lines else "no hazards"


#: the (completion bias, schedule) pairs a seed sweep cycles through: uniform picks with async completions
#: as likely as a process, late, early; then the same three with a schedule that holds one partition at a
#: time back for long stretches (see :class:`~gluon_overlap.interp.engine.Engine`)
SWEEP_SETTINGS = (
    (1.0, "uniform"),
    (0.05, "uniform"),
    (20.0, "uniform"),
    (1.0, "holdback"),
    (0.05, "holdback"),
    (20.0, "holdback"),
)
SWEEP_BIASES = tuple(bias for bias, _ in SWEEP_SETTINGS)
SWEEP_SCHEDULES = tuple(schedule for _, schedule in SWEEP_SETTINGS)


def sweep_bias(seed: int) -> float:
    """The completion bias seed ``seed`` of a sweep runs with (the sweep cycles :data:`SWEEP_SETTINGS`)."""
    return SWEEP_BIASES[seed % len(SWEEP_SETTINGS)]


def sweep_schedule(seed: int) -> str:
    """The schedule (``uniform`` or ``holdback``) seed ``seed`` of a sweep runs with."""
    return SWEEP_SCHEDULES[seed % len(SWEEP_SETTINGS)]


@dataclass
class SweepResult:
    """What ``seeds`` interleavings of one problem found."""

    seeds: int
    hazard_runs: int
    deadlock_runs: int
    wrong_c_runs: int
    failed_runs: int  # any of the above, or the kernel raised
    first_failure: EmulationResult | None  # the first failing run (its seed and bias say how to replay it)
    last: EmulationResult  # the last run (for its summary)
    seconds: float

    @property
    def ok(self) -> bool:
        return self.failed_runs == 0

    def summary(self) -> dict[str, Any]:
        first = self.first_failure
        return {
            "seeds": self.seeds,
            "biases": list(SWEEP_BIASES),
            "schedules": list(SWEEP_SCHEDULES),
            "hazard_runs": self.hazard_runs,
            "deadlock_runs": self.deadlock_runs,
            "wrong_c_runs": self.wrong_c_runs,
            "failed_runs": self.failed_runs,
            "first_failing_seed": first.seed if first else None,
            "first_failing_bias": sweep_bias(first.seed) if first else None,
            "first_failing_schedule": sweep_schedule(first.seed) if first else None,
            "seconds": round(self.seconds, 3),
        }


def sweep(problem: Any, seeds: int, *, on_run: Any = None, **kw: Any) -> SweepResult:
    """Run seeds ``0 .. seeds-1`` (seed ``s`` with completion bias :func:`sweep_bias` and schedule
    :func:`sweep_schedule`) and count what they found; ``kw`` as for :func:`emulate` (no ``seed`` /
    ``completion_bias`` / ``schedule``).  ``on_run(seed, result)``, if given, is called before each run
    (``result`` None) and after it."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"seeds={seeds!r} must be a positive integer")
    counts = {"hazard": 0, "deadlock": 0, "wrong": 0, "failed": 0}
    first = last = None
    start = time.perf_counter()
    for seed in range(seeds):
        if on_run is not None:
            on_run(seed, None)
        r = emulate(
            problem, seed=seed, completion_bias=sweep_bias(seed), schedule=sweep_schedule(seed), trace=False, **kw
        )
        if on_run is not None:
            on_run(seed, r)
        last = r
        counts["hazard"] += bool(r.hazards)
        counts["deadlock"] += r.deadlock is not None
        counts["wrong"] += not r.matches_reference
        if not r.ok:
            counts["failed"] += 1
            first = first or r
        if r.refused is not None:  # the compiler refuses the kernel: every seed would say the same
            seeds = seed + 1
            break
    assert last is not None  # seeds >= 1: at least one run
    return SweepResult(
        seeds,
        counts["hazard"],
        counts["deadlock"],
        counts["wrong"],
        counts["failed"],
        first,
        last,
        time.perf_counter() - start,
    )


def find_failing_seed(
    problem: Any,
    breaks: Iterable[str],
    *,
    overlap: bool = True,
    clusters: int | None = None,
    seeds: Iterable[int] = range(200),
    need_wrong_output: bool = True,
    kernel: str | None = None,
) -> EmulationResult | None:
    """The first seed under which a broken protocol is caught: a deadlock, or a hazard (with a wrong C if
    ``need_wrong_output``).  ``None`` if no seed in ``seeds`` catches it.  Seed ``s`` runs with
    completion bias :func:`sweep_bias`."""
    for seed in seeds:
        r = emulate(
            problem,
            overlap=overlap,
            clusters=clusters,
            breaks=breaks,
            seed=seed,
            trace=False,
            completion_bias=sweep_bias(seed),
            schedule=sweep_schedule(seed),
            kernel=kernel,
        )
        if r.deadlock is not None:
            return r
        if r.hazards and (r.matches_reference is False or not need_wrong_output):
            return r
    return None


def catch_report(result: EmulationResult | None, tried: int, limit: int = 4) -> str:
    """What :func:`find_failing_seed` found, as text: the seed, the damage to C, the hazards, the deadlock."""
    if result is None:
        return f"not caught under {tried} interleavings"
    lines = [
        f"caught with scheduler seed {result.seed}: {int(result.bad.sum())} wrong elements of C, "
        f"{len(result.hazards)} hazard(s)"
    ]
    if result.hazards:
        lines.append(format_hazards(result.hazards, limit=limit))
    if result.deadlock is not None:
        lines.append(str(result.deadlock))
    return "\n".join(lines)


def describe_catch(result: EmulationResult | None, tried: int) -> str:
    """One table cell: ``hazard (seed 7)``, ``deadlock (seed 0)``, or ``not caught (30 seeds)``."""
    if result is None:
        return f"not caught ({tried} seeds)"
    how = (["hazard"] if result.hazards else []) + (["deadlock"] if result.deadlock is not None else [])
    if result.deadlock is None and not result.matches_reference:
        how.append("wrong C")
    return f"{', '.join(how) or 'wrong C'} (seed {result.seed})"


def break_matrix(
    problems: dict[tuple[str, str], Any],
    cases: Iterable[tuple[str, bool]],
    *,
    clusters: int | None,
    seeds_for: Any = lambda brk: range(100),
    need_wrong_output: bool = False,
) -> list[list[str]]:
    """For each format pair (a row) and each ``(break switch, overlap)`` case (a column), how the twin
    catches that broken protocol (:func:`describe_catch`); ``seeds_for(break)`` gives the seeds to try."""
    cases = list(cases)
    rows = []
    for (a_format, b_format), problem in problems.items():
        row = [f"{a_format} x {b_format}"]
        for brk, overlap in cases:
            seeds = seeds_for(brk)
            res = find_failing_seed(
                problem, [brk], overlap=overlap, clusters=clusters, seeds=seeds, need_wrong_output=need_wrong_output
            )
            row.append(describe_catch(res, len(seeds)))
        rows.append(row)
    return rows
