"""What ``emulate`` may cost on this machine: its estimate of memory and time before anything runs, and the
budgets of a run (seconds of wall clock, the run options).

``emulate`` runs the protocol on real data in this process, so besides the kernel's rules (:mod:`gluon_overlap.limits`)
it takes only what this machine holds and does in about a minute: :func:`emulate_estimate` prices a run (memory of
the operands, reference, C and per-cluster TMEM; operations of the protocol) and :func:`check_emulate` refuses
beyond half of the machine's memory (``os.sysconf``) or :data:`~gluon_overlap.limits.EMULATE_SECONDS_LIMIT`
seconds, printing the estimate.  Torch-free: the command line checks its arguments before importing torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gluon_overlap.limits import (
    BYTES_PER_INPUT,
    BYTES_PER_OUTPUT,
    EMULATE_MEMORY_FRACTION,
    EMULATE_SECONDS_LIMIT,
    OPS_PER_K_STEP,
    OPS_PER_TILE,
    check_pair,
    check_problem,
    check_size,
    clusters_for,
    describe_bytes,
    describe_seconds,
    machine_memory_bytes,
    num_tiles,
)
from gluon_overlap.registry import check_number, check_positive_int, check_seed
from gluon_overlap.tmem import BLOCK_M, BLOCK_N, make_plan

# --- the cost model of a run (measured on the 2-core CI machine, idle; see emulate_estimate) --------------
OPS_PER_CLUSTER = 2
SECONDS_PER_OP = 1.5e-4  #: the engine and the data backend, per recorded operation
MMA_FLOPS_PER_SECOND = 2e10  #: the twin's float32 matmuls, single-threaded
SECONDS_PER_OUTPUT = 1.2e-7  #: comparing C with the reference (isclose, errors), per element
SECONDS_PER_INPUT = 2e-8  #: making the random problem and its float64 reference, per element of A and B
BYTES_PER_CLUSTER = 600_000  #: TMEM (fp32 values and raw bytes) and shared-memory stages of both CTAs
BYTES_PER_OP = 1_000  #: one recorded operation of the trace
TRACE_BYTES_PER_OP = 250  #: one line of ``emulate --trace`` (JSON, ~190 bytes measured)
BASE_SECONDS = 2.0  #: importing torch and starting up
BASE_BYTES = 300_000_000


@dataclass(frozen=True)
class Estimate:
    """What one run of a command is expected to cost on this machine."""

    command: str
    bytes: float
    seconds: float
    operations: float
    memory_limit: float
    seconds_limit: float

    @property
    def fits(self) -> bool:
        return self.bytes <= self.memory_limit and self.seconds <= self.seconds_limit

    def describe(self) -> str:
        return (
            f"needs ~{describe_bytes(self.bytes)} of memory and ~{describe_seconds(self.seconds)} "
            f"(~{self.operations:.3g} protocol operations)"
        )

    def refusal(self) -> str:
        """The one-line reason a run is refused (empty when it fits)."""
        reasons = []
        if self.bytes > self.memory_limit:
            reasons.append(
                f"memory: needs ~{describe_bytes(self.bytes)}, {self.command} may use "
                f"{describe_bytes(self.memory_limit)} "
                f"(half of this machine's {describe_bytes(machine_memory_bytes())})"
            )
        if self.seconds > self.seconds_limit:
            reasons.append(
                f"time: ~{describe_seconds(self.seconds)} ({self.operations:.3g} protocol operations), "
                f"the limit is {describe_seconds(self.seconds_limit)}"
            )
        return "; ".join(reasons)

    def to_dict(self) -> dict:
        return {
            "bytes": self.bytes,
            "seconds": self.seconds,
            "operations": self.operations,
            "memory_limit": self.memory_limit,
            "seconds_limit": self.seconds_limit,
        }


def emulate_estimate(
    m: int,
    n: int,
    k: int,
    a_format: str,
    b_format: str,
    clusters: int | None = None,
    *,
    trace: bool = True,
    memory: int | None = None,
) -> Estimate:
    """Memory and time of ``gluon-overlap emulate`` on this machine, before anything is allocated.

    Memory: A and B with their float32 references and float64 temporaries (``BYTES_PER_INPUT`` per
    element), C, the float64 reference and the error temporaries (``BYTES_PER_OUTPUT`` per element of C),
    TMEM and shared-memory stages per cluster, and one record per protocol operation of the trace.
    Time: protocol operations (``OPS_PER_TILE`` per tile, ``OPS_PER_K_STEP`` per K step of a tile), the
    float32 MMAs, and the comparison of C with the reference.
    """
    check_pair(a_format, b_format)
    plan = make_plan(a_format, b_format)
    tiles = num_tiles(m, n)
    grid = clusters_for(m, n, clusters)
    k_steps = -(-k // plan.block_k)
    ops = tiles * (OPS_PER_TILE + OPS_PER_K_STEP * k_steps) + OPS_PER_CLUSTER * grid
    flops = 2.0 * tiles * BLOCK_M * BLOCK_N * k_steps * plan.block_k
    inputs = float(m + n) * k
    outputs = float(m) * n
    seconds = (
        BASE_SECONDS
        + SECONDS_PER_OP * ops
        + flops / MMA_FLOPS_PER_SECOND
        + SECONDS_PER_OUTPUT * outputs
        + SECONDS_PER_INPUT * inputs
    )
    nbytes = (
        BASE_BYTES
        + BYTES_PER_INPUT * inputs
        + BYTES_PER_OUTPUT * outputs
        + BYTES_PER_CLUSTER * grid
        + (BYTES_PER_OP * ops if trace else 0)
    )
    total = machine_memory_bytes() if memory is None else memory
    limit = EMULATE_MEMORY_FRACTION * total if total else math.inf
    return Estimate("emulate", nbytes, seconds, ops, limit, EMULATE_SECONDS_LIMIT)


def check_emulate(
    m: int,
    n: int,
    k: int,
    a_format: str,
    b_format: str,
    clusters: int | None = None,
    *,
    trace: bool = True,
    memory: int | None = None,
) -> Estimate:
    """The kernel's rules, then :func:`emulate_estimate` within this machine's limits; ``ValueError`` otherwise."""
    check_pair(a_format, b_format)
    check_problem(m, n, k, "--")
    if clusters is not None:
        check_size("--clusters", clusters)
    est = emulate_estimate(m, n, k, a_format, b_format, clusters, trace=trace, memory=memory)
    if not est.fits:
        raise ValueError(
            f"{m} x {n} x {k} is too large to emulate here: {est.refusal()}; "
            f"try a smaller problem (the twin's protocol is the same at any size)"
        )
    return est


EMULATE_SWEEP_SECONDS_LIMIT = 300.0  #: ``emulate --seeds N`` may take this long in all


def check_sweep(est: Estimate, seeds: int) -> float:
    """Seconds ``emulate --seeds`` is expected to take (one start-up, ``seeds`` runs); ``ValueError`` past
    :data:`EMULATE_SWEEP_SECONDS_LIMIT`."""
    seconds = BASE_SECONDS + seeds * max(est.seconds - BASE_SECONDS, 0.0)
    if seconds > EMULATE_SWEEP_SECONDS_LIMIT:
        per_run = max(est.seconds - BASE_SECONDS, 1e-9)
        most = max(1, int((EMULATE_SWEEP_SECONDS_LIMIT - BASE_SECONDS) / per_run))
        raise ValueError(
            f"--seeds {seeds} would take ~{describe_seconds(seconds)} "
            f"(~{describe_seconds(per_run)} a run); the limit is "
            f"{describe_seconds(EMULATE_SWEEP_SECONDS_LIMIT)}, so at most {most} seeds for this problem"
        )
    return seconds


def check_trace_space(path: str, est: Estimate) -> int:
    """Bytes ``emulate --trace path`` will write; ``ValueError`` when its file system has less free space."""
    import shutil
    from pathlib import Path

    need = int(TRACE_BYTES_PER_OP * est.operations)
    folder = Path(path).expanduser().resolve().parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return need  # not a place disk_usage can measure (e.g. a device): the write itself will tell
    if need > free:
        raise ValueError(
            f"--trace {path!r} would be ~{describe_bytes(need)} ({est.operations:.3g} events), but its "
            f"file system has {describe_bytes(free)} free"
        )
    return need


#: a run's wall-clock budget (``emulate(time_limit=...)``, ``gluon-overlap emulate --time-limit``), seconds
MIN_TIME_LIMIT, MAX_TIME_LIMIT = 0.1, 7 * 86400.0


def check_time_limit(parameter: str, value: object) -> float:
    """A wall-clock budget: a number of seconds, ``MIN_TIME_LIMIT <= value <= MAX_TIME_LIMIT``."""
    seconds = check_number(parameter, value, 0.0, low_inclusive=False)
    if not MIN_TIME_LIMIT <= seconds <= MAX_TIME_LIMIT:
        raise ValueError(
            f"{parameter}={value!r} must be between {MIN_TIME_LIMIT:g} and {MAX_TIME_LIMIT:g} seconds (seven days)"
        )
    return seconds


def check_run_options(
    costs: object = None,
    completion_bias: object = 1.0,
    max_steps: object = None,
    seed: object = 0,
    time_limit: object = None,
) -> None:
    """The options of a run (:func:`gluon_overlap.emulate.runs.run_config`): ``costs`` maps op kinds
    to finite durations >= 0, ``completion_bias`` is finite and > 0, ``max_steps`` ``None`` or positive,
    ``time_limit`` ``None`` or seconds within :func:`check_time_limit`."""
    if costs is not None:
        if not isinstance(costs, dict):
            raise ValueError(f"costs={costs!r} must be a dict of operation kind -> duration")
        for kind, value in costs.items():
            if not isinstance(kind, str):
                raise ValueError(f"costs key {kind!r} must be an operation kind (a string)")
            check_number(f"costs[{kind!r}]", value, 0.0)
    check_number("completion_bias", completion_bias, 0.0, low_inclusive=False)
    if max_steps is not None:
        check_positive_int("max_steps", max_steps)
    check_seed("seed", seed)
    if time_limit is not None:
        check_time_limit("time_limit", time_limit)
