"""The kernel's three partitions as Python generators, one to one with the Gluon code.

Each function below mirrors the seed's partition of the same name: the same
loops, the same :class:`Counter` index / phase arithmetic, the same persistent
:class:`SpsTileScheduler`.  Instead of touching hardware they ``yield`` the
operations of :mod:`gluon_overlap.twin.engine` (waits, arrives, expects, TMA
loads, scale copies, MMAs, commits, TMEM loads, stores), each carrying what it
touches.  The engine applies the barrier semantics and a backend gives the
operations their meaning (data or cost).

Two-CTA facts built in (SEMANTICS.md sections 3 and 6):

* ``load_ready``, ``acc_empty`` and ``overlap`` are *pair* barriers: one object
  per cluster, stored in the lead (CTA 0) with count ``1 x 2``; both CTAs arrive
  on it, only the lead waits.  ``load_empty`` and ``acc_ready`` exist per CTA with
  count 1 and receive one arrival from each multicast commit of the lead.
* Each CTA loads its own halves of A, B and the A scales; the lead loads the B
  scales once and multicasts them into both CTAs.  Every load signals the lead's
  ``load_ready``; each CTA ``expect``\\ s its own ``nbytes_per_cta``.
* Only the lead's MMA partition issues scale copies, MMAs and commits; the other
  CTA's MMA partition walks the same loops with its waits skipped and issues
  nothing.

Use :func:`launch` to create the barriers and spawn all partitions of all
clusters on an engine; the ``breaks`` of the :class:`KernelConfig` switch on the
deliberate protocol bugs listed in :data:`BREAKS`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from dataclasses import dataclass, field

from gluon_overlap.tmem import BLOCK_M, BLOCK_N, FORMAT_VEC_SIZE, NUM_CTAS, ROWS_PER_CTA, TmemPlan, Window
from gluon_overlap.twin.engine import (
    Arrive,
    Barrier,
    Commit,
    Engine,
    Expect,
    Mma,
    ScaleCopy,
    SmemStore,
    StoreWait,
    TmaLoad,
    TmaStore,
    TmemLoad,
    Wait,
)

NUM_BUFFERS = 5  # the seed's load stages
NUM_SMS = 148  # B200
SUBTILE_STAGES = 2  # epilogue staging buffers (the seed: 1 if there is only one subtile, else 2)

#: the deliberate protocol bugs a learner can switch on
BREAKS = {
    "skip-overlap-wait": "the MMA does not wait on the overlap barrier before tile i+1",
    "early-release": "the epilogue releases the overlap barrier one subtile too early "
                     "(before loading drain step early_release_subtile instead of after it)",
    "even-low-to-high": "even tiles drain low-to-high, so the overlapped columns are drained last",
    "skip-acc-empty-wait": "the MMA does not wait on acc_empty (tile i+2 may reuse a window not yet drained)",
    "wrong-overlap-phase": "the MMA waits on the overlap barrier with parity i % 2 instead of (i + 1) % 2",
}
OVERLAP_ONLY_BREAKS = ("skip-overlap-wait", "early-release", "even-low-to-high", "wrong-overlap-phase")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _elements_per_byte(fmt: str) -> int:
    return 1 if fmt == "mxfp8" else 2


@dataclass(frozen=True)
class KernelConfig:
    """Everything the partitions need: the plan, the problem shape, the grid, the breaks."""

    plan: TmemPlan
    m: int
    n: int
    k: int
    clusters: int | None = None  # CTA pairs of the persistent grid; None: the seed's min(tiles, SMs / 2)
    num_buffers: int = NUM_BUFFERS
    breaks: frozenset[str] = field(default_factory=frozenset)
    num_sms: int = NUM_SMS

    def __post_init__(self) -> None:
        for name in ("m", "n", "k", "num_buffers", "num_sms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        if self.k % self.plan.block_k:
            raise ValueError(f"k={self.k} must be a multiple of block_k={self.plan.block_k}")
        if self.plan.block_n != BLOCK_N:
            raise ValueError(f"plan.block_n={self.plan.block_n} must be {BLOCK_N} (the seed's tile)")
        if self.clusters is not None and (isinstance(self.clusters, bool) or not isinstance(self.clusters, int)
                                          or self.clusters <= 0):
            raise ValueError(f"clusters={self.clusters!r} must be a positive integer")
        breaks = frozenset(self.breaks)
        object.__setattr__(self, "breaks", breaks)
        for b in breaks:
            if b not in BREAKS:
                raise ValueError(f"break={b!r} is not a known break switch; expected one of {sorted(BREAKS)}")
            if b in OVERLAP_ONLY_BREAKS and not self.plan.overlap:
                raise ValueError(f"break={b!r} needs overlap on (with overlap off there is no overlap barrier "
                                 "and even tiles already drain low-to-high)")

    # --- grid ---------------------------------------------------------------------
    @property
    def num_pid_m(self) -> int:
        return cdiv(self.m, BLOCK_M)

    @property
    def num_pid_n(self) -> int:
        return cdiv(self.n, BLOCK_N)

    @property
    def num_tiles(self) -> int:
        return self.num_pid_m * self.num_pid_n

    @property
    def grid(self) -> int:
        """Number of clusters (programs) of the persistent launch."""
        if self.clusters is not None:
            return self.clusters
        return max(1, min(self.num_tiles, self.num_sms // NUM_CTAS))

    @property
    def k_steps(self) -> int:
        return self.k // self.plan.block_k

    @property
    def num_acc(self) -> int:
        return 2 if self.plan.overlap else 1

    def tiles_of(self, cluster: int) -> list[int]:
        return list(range(cluster, self.num_tiles, self.grid))

    # --- bytes ----------------------------------------------------------------------
    @property
    def scale_k(self) -> int:
        """k-scales per row in one K block."""
        return self.plan.block_k // FORMAT_VEC_SIZE[self.plan.a_format]

    def load_bytes(self) -> dict[str, int]:
        """Bytes each TMA load delivers to each destination CTA (the global block sizes)."""
        bk = self.plan.block_k
        return {
            "a": ROWS_PER_CTA * bk // _elements_per_byte(self.plan.a_format),
            "b": ROWS_PER_CTA * bk // _elements_per_byte(self.plan.b_format),
            "a_scale": ROWS_PER_CTA * self.scale_k,
            "b_scale": BLOCK_N * self.scale_k,  # the full block, multicast into both CTAs
        }

    @property
    def nbytes_per_cta(self) -> int:
        """What each CTA ``expect``\\ s on ``load_ready`` per stage (38912 for nvfp4)."""
        return sum(self.load_bytes().values())

    @property
    def mma_flops(self) -> int:
        return 2 * BLOCK_M * BLOCK_N * self.plan.block_k


# ----------------------------------------------------------------------------
# the seed's helpers
# ----------------------------------------------------------------------------


class Counter:
    """The seed's ``Counter``: ring index plus phase; also counts its uses.

    ``target`` is the barrier completion the current use waits for
    (SEMANTICS.md section 1): ``j // n + 1`` for consumers (phase0 = 0),
    ``j // n`` for producers (phase0 = 1), with ``j`` the use number.
    """

    __slots__ = ("index", "phase", "num_barriers", "phase0", "uses")

    def __init__(self, index: int, phase: int, num_barriers: int, phase0: int, uses: int):
        self.index, self.phase, self.num_barriers, self.phase0, self.uses = index, phase, num_barriers, phase0, uses

    @staticmethod
    def create(phase: int, num_barriers: int) -> Counter:
        return Counter(0, phase, num_barriers, phase, 0)

    def next(self, pred: bool = True) -> Counter:
        incr = self.index + (1 if pred else 0)
        rollover = incr == self.num_barriers
        index = 0 if rollover else incr
        phase = self.phase ^ 1 if rollover else self.phase
        return Counter(index, phase, self.num_barriers, self.phase0, self.uses + (1 if pred else 0))

    @property
    def target(self) -> int:
        lap = self.uses // self.num_barriers
        return lap + 1 if self.phase0 == 0 else lap


class SpsTileScheduler:
    """The seed's persistent static schedule: program ``c`` takes tiles ``c, c + grid, ...``."""

    __slots__ = ("has_work", "tile_id", "pid_m", "pid_n", "num_pid_m", "num_pid_n", "num_programs")

    def __init__(self, tile_id: int, num_pid_m: int, num_pid_n: int, num_programs: int):
        self.tile_id, self.num_pid_m, self.num_pid_n, self.num_programs = tile_id, num_pid_m, num_pid_n, num_programs
        self.has_work = tile_id < num_pid_m * num_pid_n
        self.pid_m = tile_id // num_pid_n if self.has_work else 0
        self.pid_n = tile_id % num_pid_n if self.has_work else 0

    @staticmethod
    def initialize(program_id: int, num_pid_m: int, num_pid_n: int, num_programs: int) -> SpsTileScheduler:
        return SpsTileScheduler(program_id, num_pid_m, num_pid_n, num_programs)

    def get_offsets(self) -> tuple[int, int]:
        return self.pid_m * BLOCK_M, self.pid_n * BLOCK_N

    def step(self) -> SpsTileScheduler:
        return SpsTileScheduler(self.tile_id + self.num_programs, self.num_pid_m, self.num_pid_n, self.num_programs)


@dataclass
class PartitionArgs:
    """The seed's ``PartitionArgs`` for one CTA of one cluster: config plus barrier handles."""

    config: KernelConfig
    cluster: int
    cta: int
    load_empty_bars: list[Barrier]  # this CTA's
    load_ready_bars: list[Barrier]  # the pair's (in the lead)
    acc_empty_bars: list[Barrier]  # the pair's
    acc_ready_bars: list[Barrier]  # this CTA's
    overlap_bar: Barrier  # the pair's
    all_load_empty: list[list[Barrier]]  # [cta][stage], for the multicast commit
    all_acc_ready: list[list[Barrier]]  # [cta][index]

    @property
    def plan(self) -> TmemPlan:
        return self.config.plan

    @property
    def is_lead(self) -> bool:
        return self.cta == 0

    def get_sps_scheduler(self) -> SpsTileScheduler:
        c = self.config
        return SpsTileScheduler.initialize(self.cluster, c.num_pid_m, c.num_pid_n, c.grid)


# ----------------------------------------------------------------------------
# partitions
# ----------------------------------------------------------------------------


def issue_loads(p: PartitionArgs, producer: Counter, pid_m: int, pid_n: int, kstep: int, tile: int,
                local: int) -> Generator:
    """``mbarrier.expect`` plus the TMA loads of one stage (this CTA's share)."""
    c = p.config
    index = producer.index
    bar = p.load_ready_bars[index]
    nbytes = c.load_bytes()
    yield Expect(bar, c.nbytes_per_cta, tile=tile, local=local)
    own = (p.cta,)
    yield TmaLoad(bar, "a", index, kstep, pid_m, pid_n, nbytes["a"], own, tile=tile, local=local)
    yield TmaLoad(bar, "b", index, kstep, pid_m, pid_n, nbytes["b"], own, tile=tile, local=local)
    yield TmaLoad(bar, "a_scale", index, kstep, pid_m, pid_n, nbytes["a_scale"], own, tile=tile, local=local)
    if p.is_lead:  # the lead multicasts the B scales into both CTAs
        yield TmaLoad(bar, "b_scale", index, kstep, pid_m, pid_n, nbytes["b_scale"], tuple(range(NUM_CTAS)),
                      tile=tile, local=local)


def mma_scaled_load_partition(p: PartitionArgs) -> Generator:
    state = Counter.create(1, p.config.num_buffers)
    scheduler = p.get_sps_scheduler()
    i = 0
    while scheduler.has_work:
        tile = scheduler.tile_id
        for kstep in range(p.config.k_steps):
            yield Wait(p.load_empty_bars[state.index], state.phase, target=state.target, tile=tile, local=i)
            yield from issue_loads(p, state, scheduler.pid_m, scheduler.pid_n, kstep, tile, i)
            state = state.next()
        scheduler = scheduler.step()
        i += 1


def issue_mma(p: PartitionArgs, consumer: Counter, acc: Window, use_acc: bool, kstep: int, tile: int,
              local: int) -> Generator:
    """Wait for the stage, copy its scales into TMEM, MMA, commit to the stage's load_empty."""
    plan = p.plan
    index = consumer.index
    yield Wait(p.load_ready_bars[index], consumer.phase, target=consumer.target, tile=tile, local=local)
    yield ScaleCopy("a_scale", index, kstep, plan.a_scale, tile=tile, local=local)
    yield ScaleCopy("b_scale", index, kstep, plan.b_scale, tile=tile, local=local)
    yield Mma(index, kstep, acc, use_acc, p.config.mma_flops, tile=tile, local=local)
    yield Commit(tuple(p.all_load_empty[cta][index] for cta in range(NUM_CTAS)), tile=tile, local=local)


def mma_scaled_mma_partition(p: PartitionArgs) -> Generator:
    c = p.config
    plan = p.plan
    breaks = c.breaks
    lead = p.is_lead  # the non-lead CTA walks the loops, skips its waits and issues nothing
    load_state = Counter.create(0, c.num_buffers)
    acc_state = Counter.create(1, c.num_acc)
    scheduler = p.get_sps_scheduler()
    i = 0
    while scheduler.has_work:
        tile = scheduler.tile_id
        # Before reusing an accumulator window, wait until its epilogue drained all of it.
        if lead and "skip-acc-empty-wait" not in breaks:
            yield Wait(p.acc_empty_bars[acc_state.index], acc_state.phase, target=acc_state.target,
                       tile=tile, local=i)
        # Wait for the preceding epilogue to drain the overlapped columns (completion i).
        if lead and plan.overlap and "skip-overlap-wait" not in breaks:
            phase = i % 2 if "wrong-overlap-phase" in breaks else (i + 1) % 2
            yield Wait(p.overlap_bar, phase, target=i, tile=tile, local=i)
        acc = plan.accumulator(i)
        use_acc = False
        for kstep in range(c.k_steps):
            if lead:
                yield from issue_mma(p, load_state, acc, use_acc, kstep, tile, i)
            load_state = load_state.next()
            use_acc = True
        if lead:
            yield Commit(tuple(p.all_acc_ready[cta][acc_state.index] for cta in range(NUM_CTAS)),
                         tile=tile, local=i)
        acc_state = acc_state.next()
        scheduler = scheduler.step()
        i += 1


def drain_order(plan: TmemPlan, i: int, breaks: frozenset[str]) -> list[int]:
    """Window-relative subtile indices tile ``i`` drains, in order (the plan's, unless broken)."""
    if "even-low-to-high" in breaks and i % 2 == 0:
        return list(range(plan.num_subtiles))
    return plan.drain_order(i)


def mma_scaled_epilogue_partition(p: PartitionArgs) -> Generator:
    c = p.config
    plan = p.plan
    breaks = c.breaks
    early = "early-release" in breaks
    subtile_stages = 1 if plan.num_subtiles == 1 else SUBTILE_STAGES
    acc_state = Counter.create(0, c.num_acc)
    sub_acc_state = Counter.create(0, subtile_stages)
    scheduler = p.get_sps_scheduler()
    row0 = ROWS_PER_CTA * p.cta
    i = 0
    while scheduler.has_work:
        tile = scheduler.tile_id
        off_m, off_n = scheduler.get_offsets()
        yield Wait(p.acc_ready_bars[acc_state.index], acc_state.phase, target=acc_state.target, tile=tile, local=i)
        for s, sub in enumerate(drain_order(plan, i, breaks)):
            cols = plan.subtile_columns(i, sub)
            release = plan.overlap and s == plan.early_release_subtile
            if release and early:
                yield Arrive(p.overlap_bar, 1, tile=tile, local=i)
            acc = yield TmemLoad(sub, s, cols, tile=tile, local=i)
            # Signal once the overlapped columns are drained so the next MMA can proceed.
            if release and not early:
                yield Arrive(p.overlap_bar, 1, tile=tile, local=i)
            yield StoreWait(subtile_stages - 1, tile=tile, local=i)
            yield SmemStore(sub_acc_state.index, acc, sub, tile=tile, local=i)
            yield TmaStore(sub_acc_state.index, off_m + row0, off_n + plan.epilogue_block_n * sub, ROWS_PER_CTA,
                           plan.epilogue_block_n, sub, tile=tile, local=i)
            sub_acc_state = sub_acc_state.next()
        yield Arrive(p.acc_empty_bars[acc_state.index], 1, tile=tile, local=i)
        acc_state = acc_state.next()
        scheduler = scheduler.step()
        i += 1
    yield StoreWait(0)


PARTITIONS = (
    ("epilogue", mma_scaled_epilogue_partition),
    ("mma", mma_scaled_mma_partition),
    ("load", mma_scaled_load_partition),
)


@dataclass
class Launch:
    """What :func:`launch` created: the config and per-cluster partition arguments."""

    config: KernelConfig
    args: list[list[PartitionArgs]]  # [cluster][cta]


def launch(engine: Engine, config: KernelConfig, clusters: Iterable[int] | None = None) -> Launch:
    """Init every cluster's barriers (the seed's counts, pair barriers x2) and spawn all partitions.

    ``clusters`` restricts the launch to some cluster ids of the grid (default: all of them); the
    timing model runs only the cluster with the most tiles.
    """
    all_args = []
    for cl in (range(config.grid) if clusters is None else clusters):
        load_empty = [[engine.barrier("load_empty", s, cta=cta, cluster=cl, count=1)
                       for s in range(config.num_buffers)] for cta in range(NUM_CTAS)]
        load_ready = [engine.barrier("load_ready", s, cta=0, cluster=cl, count=1 * NUM_CTAS)
                      for s in range(config.num_buffers)]
        acc_empty = [engine.barrier("acc_empty", a, cta=0, cluster=cl, count=1 * NUM_CTAS)
                     for a in range(config.num_acc)]
        acc_ready = [[engine.barrier("acc_ready", a, cta=cta, cluster=cl, count=1) for a in range(config.num_acc)]
                     for cta in range(NUM_CTAS)]
        overlap = engine.barrier("overlap", 0, cta=0, cluster=cl, count=1 * NUM_CTAS)
        cluster_args = []
        for cta in range(NUM_CTAS):
            pa = PartitionArgs(config, cl, cta, load_empty[cta], load_ready, acc_empty, acc_ready[cta], overlap,
                               load_empty, acc_ready)
            cluster_args.append(pa)
            for name, fn in PARTITIONS:
                engine.spawn(fn(pa), partition=name, cta=cta, cluster=cl)
        all_args.append(cluster_args)
    return Launch(config, all_args)
