"""The timing model's backend: every operation of the kernel's recorded streams given a duration, on the engine.

The operations of ``gluon_overlap/kernel.py`` -- its load, MMA and epilogue partitions of both CTAs, recorded by the
interpreter (:mod:`gluon_overlap.timing.streams`) -- run on :class:`gluon_overlap.interp.engine.Engine` in
``timed=True`` mode; :class:`CostBackend` gives every operation a duration from :mod:`gluon_overlap.timing.costs` and
models the shared resources itself (the engine only orders, applies the mbarrier semantics and advances the
earliest event):

* the **tensor pipe** of the pair (scale copies and MMAs occupy it back to back, in issue order; a commit arrives
  ``mma_pipeline_latency`` after the last op before it leaves the pipe);
* each SM's **shared memory beside the tensor pipe**: a subtile's ``st.shared`` and its TMA store's read, issued while
  the pipe is busy, move at the share of shared memory the MMAs' operand reads leave
  (:func:`gluon_overlap.timing.costs.drain_smem_bytes_per_clk`), and at its full width once the pipe is idle; the
  MMAs lose nothing to them (both measured on an H200);
* each SM's **L2 path** (TMA loads in, TMA stores out, each direction its own queue, each served at the SM's link or
  its share of L2's GPU-wide rate, whichever is smaller).  A TMA store completes when its engine has read the
  subtile out of shared memory -- that is all the kernel's ``tma.store_wait`` (``cp.async.bulk.wait_group.read``)
  waits for -- and ``l2_store_load_sharing`` of its time is also taken from the SM's loads (measured on an H200);
* the cluster's **share of HBM**: the L2-miss part of every load (at ``HBM x hbm_efficiency / active clusters``) and
  the write-back of every stored C subtile (at ``HBM x hbm_write_efficiency / active clusters``) queue on one FIFO;
  the launch ends when it is empty.

**Roles, not names.**  Which arrivals are remote (DSMEM, the peer CTA), which waits gate the MMA on the epilogue and
which arrives are the epilogue's come from :func:`gluon_overlap.timing.streams.roles`, read from what each recorded
process does; nothing here knows what a barrier or a partition is called.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import Any, Protocol

from gluon_overlap.emulate.config import KernelConfig
from gluon_overlap.hardware import Hardware
from gluon_overlap.interp.engine import Backend
from gluon_overlap.interp.ops import (
    Arrive,
    Commit,
    Expect,
    Mma,
    Op,
    ScaleCopy,
    SmemStore,
    StoreWait,
    TmaLoad,
    TmaStore,
    TmemLoad,
    Wait,
)
from gluon_overlap.timing import costs
from gluon_overlap.tmem import NUM_CTAS

#: the op kinds :class:`CostBackend` prices, and the synchronisation kinds whose cost is their waiting
_PRICED = frozenset({"tma_load", "tma_store", "mma", "scale_copy", "commit", "tmem_load", "smem_store", "expect"})
_UNPRICED_SYNC = frozenset({"wait", "store_wait", "arrive"})


class RoleSets(Protocol):
    """What the backend reads of a launch's roles: :class:`gluon_overlap.timing.streams.Roles`, or roles learnt
    while the kernel runs (the steps' live runs)."""

    @property
    def remote(self) -> Set[int]: ...

    @property
    def gate_waits(self) -> Set[int]: ...

    @property
    def drain_arrives(self) -> Set[int]: ...


class CostBackend(Backend):
    """Durations and shared resources of one cluster (see the module docstring).

    Its :meth:`resource` is the base's (None for every operation): the resources are queued in :meth:`duration`
    (several per operation: the L2 link and HBM)."""

    def __init__(
        self,
        hw: Hardware,
        config: KernelConfig,
        problem: tuple[int, int, int] | None = None,
        wave_of: Callable[[int], int] | None = None,
    ):
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
        # shared memory beside the MMAs: a st.shared's and a TMA store read's bytes per second while the pipe is busy,
        # and the full width; bandwidths, so ``epilogue_cost_factor`` (which scales the instruction estimates) does not
        # scale them: beside the MMAs a subtile's st.shared takes the longer of its estimate and its bytes at that rate
        clock = hw.clock_ghz * 1e9
        self.drain_sts_rate = costs.drain_smem_bytes_per_clk(hw, plan) * clock
        self.drain_tma_rate = costs.drain_smem_bytes_per_clk(hw, plan, tma_read=True) * clock
        self.smem_rate = hw.smem_bytes_per_clk * clock
        self.sts_bytes = costs.subtile_sts_bytes(plan)
        self.t_sts_full = self.sts_bytes / self.smem_rate * hw.epilogue_cost_factor
        self._miss: dict[int, float] = {}
        self._sharers: dict[int, int] = {}
        # per-operation cost terms that depend only on their arguments, computed once per run
        self._load: dict[tuple[float, int], float] = {}
        self._latency: dict[int, float] = {}
        self._hbm_time: dict[tuple[float, int], float] = {}  # HBM read time of a load's L2-miss bytes, per wave
        self._scale_copy: dict[int, float] = {}
        # a TMA load's and a TMA store's terms, by (tile loop index, bytes) and by tile loop index
        self._load_terms: dict[tuple[int | None, int], tuple[int, float, float, float, float, float]] = {}
        self._store_terms: dict[int | None, tuple[int, float, float, float]] = {}
        # resource state (times in seconds)
        self.tensor_free = 0.0
        self.l2_in_free = [0.0] * NUM_CTAS
        self.l2_out_free = [0.0] * NUM_CTAS
        self.hbm_free = 0.0
        # bookkeeping for the time split
        self.busy: list[list[float]] = []  # merged tensor-pipe busy spans
        self.gated: list[tuple[float, float]] = []  # MMA blocked on the epilogue (acc_empty / overlap)
        self.hbm_bytes = 0.0
        self.roles: RoleSets | None = None  # set by :func:`_run` from the recording it replays

    # --- helpers -------------------------------------------------------------------
    def _wave(self, local: int | None) -> int:
        return self.wave_of(local or 0)

    def miss_fraction(self, wave: int) -> float:
        miss = self._miss.get(wave)
        if miss is None:
            m, n, k = self.problem
            miss = self._miss[wave] = costs.hbm_miss_fraction(self.hw, self.plan, m, n, k, wave)
        return miss

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

    def scale_copy_time(self, cols: int) -> float:
        t = self._scale_copy.get(cols)
        if t is None:
            chunks = cols // costs.SCALE_K_PER_CHUNK
            t = self._scale_copy[cols] = self.hw.clk(chunks * costs.SCALE_CHUNK_BYTES / self.hw.smem_bytes_per_clk)
        return t

    def _tensor(self, now: float, service: float) -> float:
        free = self.tensor_free
        start = free if free > now else now  # max(now, free)
        end = start + service
        self.tensor_free = end
        busy = self.busy
        if busy and start <= busy[-1][1]:
            busy[-1][1] = end
        else:
            busy.append([start, end])
        return end

    def _shared_time(self, now: float, nbytes: float, slow: float) -> float:
        """Seconds ``nbytes`` of a drain's shared-memory traffic take from ``now``: at ``slow`` bytes per second while
        the tensor pipe is busy (until ``tensor_free``; nothing moves at 0), then at the full width."""
        busy = self.tensor_free - now
        if busy <= 0:
            return nbytes / self.smem_rate
        if nbytes <= slow * busy:
            return nbytes / slow
        return busy + (nbytes - slow * busy) / self.smem_rate

    # --- Backend protocol ------------------------------------------------------------
    def duration(self, op: Op) -> float:
        assert self.engine is not None, "attach the backend to an engine"
        now = self.engine.now
        price = _PRICE_OF_CLASS.get(op.__class__)
        if price is not None:  # the kernel's own operation classes: straight to their price
            return price(self, op, now)
        return self._duration_of_kind(op, now)

    def _duration_of_kind(self, op: Op, now: float) -> float:
        """:meth:`duration` of any operation, by its kind (and its class for scale copies and TMA loads)."""
        kind = op.kind
        if kind == "mma":
            return self._price_mma(op, now)
        if isinstance(op, ScaleCopy):
            return self._price_scale_copy(op, now)
        if kind == "commit":
            return self._price_commit(op, now)
        if isinstance(op, TmaLoad):
            return self._price_tma_load(op, now)
        if kind == "tma_store":
            return self._price_tma_store(op, now)
        if kind == "tmem_load":
            return self.t_tmem
        if kind == "smem_store":
            return self._price_smem_store(op, now)
        if kind == "expect":
            return self.t_tma_issue
        if kind == "arrive":
            return self._price_arrive(op, now)
        if kind in _UNPRICED_SYNC:
            return 0.0  # satisfied waits, store waits, arrives: their waiting is what the engine times
        raise ValueError(
            f"the timing model has no cost for a {kind!r} operation: it prices the operations "
            f"of the warp-specialized kernel ({', '.join(sorted(_PRICED | _UNPRICED_SYNC))})"
        )

    def _price_mma(self, op: Op, now: float) -> float:
        return self._tensor(now, self.t_mma) - now

    def _price_scale_copy(self, op: ScaleCopy, now: float) -> float:
        return self._tensor(now, self.scale_copy_time(op.columns.cols)) - now

    def _price_commit(self, op: Op, now: float) -> float:
        end = max(now, self.tensor_free) + self.t_pipe_latency
        return end - now

    def _price_tma_load(self, op: TmaLoad, now: float) -> float:
        nbytes = op.nbytes
        key = (op.local, nbytes)
        terms = self._load_terms.get(key)
        if terms is None:
            terms = self._load_terms[key] = self._tma_load_terms(op.local, nbytes)
        _, miss, load, miss_bytes, hbm, latency = terms
        l2_in_free = self.l2_in_free
        end = now
        for d in op.dests:
            free = l2_in_free[d]
            free = l2_in_free[d] = (free if free > now else now) + load  # max(now, free) + load
            if free > end:  # end = max(end, free)
                end = free
        if miss > 0:  # the L2-miss bytes queue on the cluster's HBM share: end = max(end, their finish)
            self.hbm_bytes += miss_bytes
            free = self.hbm_free
            free = self.hbm_free = (free if free > now else now) + hbm
            if free > end:
                end = free
        return end + latency - now

    def _tma_load_terms(self, local: int | None, nbytes: int) -> tuple[int, float, float, float, float, float]:
        """What a TMA load of ``nbytes`` in tile ``local`` costs: its wave, L2-miss fraction, L2 read time, bytes
        from HBM, their HBM time and the TMA latency (each as :meth:`_wave`, :meth:`miss_fraction`,
        :meth:`load_time`, :func:`costs.hbm_time` and :meth:`tma_latency` give it)."""
        wave = self._wave(local)
        miss = self.miss_fraction(wave)
        miss_bytes = nbytes * miss
        hbm = 0.0  # not read unless some bytes miss
        if miss > 0:
            cached = self._hbm_time.get((miss_bytes, wave))  # read times, cached per (bytes, wave)
            if cached is None:
                cached = self._hbm_time[(miss_bytes, wave)] = costs.hbm_time(self.hw, miss_bytes, self.sharers(wave))
            hbm = cached
        return wave, miss, self.load_time(nbytes, wave), miss_bytes, hbm, self.tma_latency(wave)

    def _price_tma_store(self, op: Op, now: float) -> float:
        # completes when its engine has read the subtile out of shared memory (what the kernel's
        # cp.async.bulk.wait_group.read waits for); the HBM write-back is queued, and nobody waits for it
        # (the engine starts it after its issue: tma_issue_clk); part of its L2 time is lost to the loads
        cta = op.cta
        terms = self._store_terms.get(op.local)
        if terms is None:
            terms = self._store_terms[op.local] = self._tma_store_terms(op.local)
        _, data, shared, hbm = terms
        start = now + self.t_tma_issue
        if self.tensor_free > start:  # its shared-memory read beside the MMAs, if slower than L2 takes the bytes
            read = self._shared_time(start, self.store_bytes, self.drain_tma_rate)
            if read > data:
                data = read
        out_free, in_free = self.l2_out_free, self.l2_in_free
        free = out_free[cta]
        out_free[cta] = end = (free if free > start else start) + data  # max(start, free) + data
        free = in_free[cta]
        in_free[cta] = (free if free > start else start) + shared
        self.hbm_bytes += self.store_bytes  # the write-back queues on the cluster's HBM share; only the end waits
        free = self.hbm_free
        self.hbm_free = (free if free > now else now) + hbm
        return end - now

    def _tma_store_terms(self, local: int | None) -> tuple[int, float, float, float]:
        """What a TMA store in tile ``local`` costs: its wave, its L2 data time, the part of it taken from the SM's
        loads and its write-back's HBM time (:meth:`store_time`, :func:`costs.hbm_write_time`; cached per tile by the
        caller)."""
        wave = self._wave(local)
        data = self.store_time(wave)
        hbm = costs.hbm_write_time(self.hw, self.store_bytes, self.sharers(wave))
        return wave, data, self.hw.l2_store_load_sharing * data, hbm

    def _price_tmem_load(self, op: Op, now: float) -> float:
        return self.t_tmem

    def _price_smem_store(self, op: Op, now: float) -> float:
        # the BAR.SYNCs and the fence at their cost; the STS bytes beside the MMAs at what their reads leave
        if self.tensor_free > now:
            sts = max(self.t_sts_full, self._shared_time(now, self.sts_bytes, self.drain_sts_rate))
            return self.t_smem - self.t_sts_full + sts
        return self.t_smem

    def _price_expect(self, op: Op, now: float) -> float:
        return self.t_tma_issue

    def _price_arrive(self, op: Op, now: float) -> float:
        assert self.roles is not None, "set the backend's roles (the recording's) before it prices an arrive"
        if id(op) in self.roles.drain_arrives:
            return self.t_arrive  # the BAR.SYNC of the 4 warps before the one thread's arrive
        return 0.0

    def _price_wait(self, op: Op, now: float) -> float:
        return 0.0  # a satisfied wait or store wait: its waiting is what the engine times

    def issue_cost(self, op: Op) -> float:
        if op.kind == "mma":
            return self.t_issue
        if op.kind == "tma_load":
            return self.t_tma_issue
        return 0.0

    def wake_latency(self, op: Op) -> float:
        # roles from the recording (twin.streams.roles): an arrival from the other CTA travels over DSMEM, and a
        # wait of the MMA issuer on a barrier the epilogue arrives on is the MMA blocked on the epilogue
        assert self.engine is not None and self.roles is not None, "attach the backend to an engine and set its roles"
        assert isinstance(op, Wait), "the engine wakes only waits"
        lat = self.t_remote if id(op.bar) in self.roles.remote else self.t_local
        if id(op) in self.roles.gate_waits:
            self.gated.append((op.t_issue, self.engine.now + lat))
        return lat


#: :meth:`CostBackend.duration` of the kernel's operation classes, by exact class (a subclass, or any other
#: operation, is priced by its kind: :meth:`CostBackend._duration_of_kind`)
_PRICE_OF_CLASS: dict[type, Callable[[CostBackend, Any, float], float]] = {
    Mma: CostBackend._price_mma,
    ScaleCopy: CostBackend._price_scale_copy,
    Commit: CostBackend._price_commit,
    TmaLoad: CostBackend._price_tma_load,
    TmaStore: CostBackend._price_tma_store,
    TmemLoad: CostBackend._price_tmem_load,
    SmemStore: CostBackend._price_smem_store,
    Expect: CostBackend._price_expect,
    Arrive: CostBackend._price_arrive,
    Wait: CostBackend._price_wait,
    StoreWait: CostBackend._price_wait,
}
