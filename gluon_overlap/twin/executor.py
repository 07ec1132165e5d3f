"""Run a Gluon kernel's own source on the CPU: every partition of both CTAs of every cluster.

``launch(kernel, grid, args, num_ctas=2)`` is the CPU counterpart of ``kernel[grid](*args, num_ctas=2)``:
the same ``@gluon.jit`` function, the same arguments (host :class:`TensorDescriptor`\\ s built over CPU
tensors by the same code that builds them for the GPU), and the TMA stores land in the CPU tensor
the output descriptor was built over.  Each CTA starts as one process of the discrete-event engine
(:mod:`gluon_overlap.twin.engine`); ``gl.warp_specialize`` forks it into its partitions.  A partition
is a greenlet: when it calls a builtin that waits, arrives, loads, multiplies or stores, it hands the
operation to the engine and is suspended until the engine's scheduler has executed it -- so the
seeded interleavings, the completion bias and the deadlock report of the engine apply to the real
kernel.  :mod:`gluon_overlap.twin.execdata` gives the operations their effect on real bytes and
reports hazards (races found by :mod:`gluon_overlap.twin.races`, out-of-bounds accesses, reads of
uninitialized memory, stores still in flight at exit) with the kernel line that caused them.

``call(fn, *args)`` runs one ``@gluon.jit`` function (e.g. ``Counter.next``) outside a launch.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from greenlet import greenlet

from gluon_overlap.twin import engine as E
from gluon_overlap.twin import gluon_cpu as G
from gluon_overlap.twin.memory import DeviceDescriptor, ExecutorError, TmemAlloc
from gluon_overlap.twin.races import Clocks, join, tick

__all__ = ["ExecutionResult", "ExecutorError", "call", "launch"]


# =====================================================================================
# happens-before bookkeeping (the engine calls these hooks)
# =====================================================================================
class SyncState:
    """Vector clocks of processes, pipes and barriers (see :mod:`gluon_overlap.twin.races`)."""

    def __init__(self) -> None:
        self.clocks = Clocks()
        self.proc_comp: dict[int, int] = {}
        self.tensor_comp: dict[int, int] = {}
        self.store_comp: dict[int, int] = {}
        self.vc: dict[int, np.ndarray] = {}
        self.tensor_vc: dict[int, np.ndarray] = {}
        self.stores_issued: dict[int, int] = {}
        self.stores_waited: dict[int, int] = {}  # stores a returned store_wait has covered
        self.bar_comp: dict[int, int] = {}
        self.bar_pending: dict[int, np.ndarray] = {}
        self.bar_phase: dict[int, np.ndarray] = {}
        self.on_process_exit: Callable[[E.Process], None] | None = None

    # --- components ------------------------------------------------------------------
    def new_process(self, proc: E.Process, start: np.ndarray | None) -> None:
        pid = proc.pid
        self.proc_comp[pid] = self.clocks.component(f"{proc.name}")
        self.tensor_comp[pid] = self.clocks.component(f"{proc.name}.tensor-pipe")
        self.store_comp[pid] = self.clocks.component(f"{proc.name}.store-pipe")
        self.vc[pid] = self.clocks.zeros() if start is None else start.copy()
        self.tensor_vc[pid] = self.clocks.zeros()
        self.stores_issued[pid] = self.stores_waited[pid] = 0

    def new_barrier(self, bar: E.Barrier) -> None:
        self.bar_comp[id(bar)] = self.clocks.component(bar.label)
        self.bar_pending[id(bar)] = self.clocks.zeros()

    # --- process clocks --------------------------------------------------------------
    def step(self, proc: E.Process) -> np.ndarray:
        """Advance ``proc``'s own component (one more operation) and return its clock."""
        vc = tick(self.vc[proc.pid], self.proc_comp[proc.pid])
        self.vc[proc.pid] = vc
        return vc

    def tensor_step(self, proc: E.Process) -> tuple[np.ndarray, int, int]:
        """Clock of a tensor-pipe op of ``proc``: after the process and after every earlier op of its pipe."""
        comp = self.tensor_comp[proc.pid]
        vc = join(self.step(proc), self.tensor_vc[proc.pid])
        vc = tick(vc, comp)
        self.tensor_vc[proc.pid] = vc
        return vc, comp, int(vc[comp])

    def store_step(self, proc: E.Process) -> tuple[np.ndarray, int, int]:
        vc = self.step(proc)
        self.stores_issued[proc.pid] += 1
        return vc, self.store_comp[proc.pid], self.stores_issued[proc.pid]

    # --- engine hooks ----------------------------------------------------------------
    def on_arrive(self, bar: E.Barrier, op: E.Op | None) -> None:
        if id(bar) not in self.bar_pending or op is None:
            return
        vc = op.x.vc if op.kind == "commit" else self.step(op.proc)
        self.bar_pending[id(bar)] = join(self.bar_pending[id(bar)], vc)

    def on_tx(self, bar: E.Barrier, op: E.Op) -> None:
        """A TMA load's bytes land in ``bar``'s current phase: date its writes to that phase."""
        key = id(bar)
        if key not in self.bar_pending:
            return
        self.bar_pending[key] = join(self.bar_pending[key], op.x.vc)
        for epoch in op.x.epochs.get(key, ()):
            epoch.comp, epoch.val = self.bar_comp[key], bar.completed + 1

    def on_phase(self, bar: E.Barrier) -> None:
        key = id(bar)
        if key not in self.bar_pending:
            return
        self.bar_phase[key] = tick(self.bar_pending[key], self.bar_comp[key], bar.completed)
        self.bar_pending[key] = self.clocks.zeros()

    def on_wait_return(self, proc: E.Process, op: E.Op) -> None:
        pid = proc.pid
        if op.kind == "store_wait":
            done = self.stores_issued[pid] - len(proc.queues.get("store", ()))
            self.stores_waited[pid] = max(self.stores_waited[pid], self.stores_issued[pid] - op.pendings)
            self.vc[pid] = tick(self.vc[pid], self.store_comp[pid], done)
            return
        phase = self.bar_phase.get(id(op.bar))
        if phase is not None:
            self.vc[pid] = join(self.vc[pid], phase)

    def on_exit(self, proc: E.Process) -> None:
        if self.on_process_exit is not None:
            self.on_process_exit(proc)


# =====================================================================================
# the runtime of one launch
# =====================================================================================
@dataclass
class ClusterState:
    num_ctas: int
    objects: list[Any] = field(default_factory=list)  # allocations, in program order
    next_alloc: list[int] = field(default_factory=list)
    two_ctas: bool = False

    def __post_init__(self) -> None:
        self.next_alloc = [0] * self.num_ctas


class Ctx:
    """One process's view: which cluster, CTA and partition, and the tile it is working on."""

    def __init__(self, runtime: Runtime, cluster: int, cta: int, partition: str, num_warps: int):
        self.runtime, self.cluster, self.cta, self.partition, self.num_warps = runtime, cluster, cta, partition, \
            num_warps
        self.program = (cluster, 0, 0)
        self.proc: E.Process | None = None
        self.tile: int | None = cluster
        self.local: int | None = 0
        self._scheduled = 0
        self.kstep = 0  # K steps of the current tile's MMAs (annotation)
        self.inits_unfenced = False  # this CTA initialized barriers since its last cluster barrier

    def on_schedule(self, tile_id: Any, has_work: Any) -> None:
        """A tile scheduler moved on (a field-named ``tile_id`` aggregate was built): annotate ops."""
        if has_work:
            self.tile = int(tile_id)
            self.local = self._scheduled
            self._scheduled += 1


class Runtime:
    """Everything one launch shares: engine, clusters, the rebound kernel code."""

    def __init__(self, engine: E.Engine, grid: tuple[int, ...], num_ctas: int, rebinder: G.Rebinder,
                 num_warps: int):
        self.engine, self.grid, self.num_ctas, self.rebinder, self.num_warps = engine, grid, num_ctas, rebinder, \
            num_warps
        self.sync: SyncState = engine.backend.sync_state
        self.clusters = [ClusterState(num_ctas) for _ in range(int(np.prod(grid)))]
        self._cluster_bars: dict[int, E.Barrier] = {}
        self._cluster_syncs: dict[tuple[int, int], int] = {}
        self.error: BaseException | None = None
        self.want_lines = getattr(engine.backend, "data", True)  # kernel lines on every op (for reports)
        self.spawns: list[tuple[E.Process, E.Process | None, int]] = []
        self.ops_of: dict[int, int] = {}  # ops each process has handed to the engine
        self.error_line: G.SourceLine | None = None  # the innermost kernel line the error passed through

    def kernel_line(self, exc: BaseException) -> G.SourceLine | None:
        """The innermost line of kernel code in ``exc``'s traceback (a typo, a wrong attribute, a bad
        shape raise from inside the kernel's own Python: the report must say where)."""
        import linecache

        line = None
        tb = exc.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code in self.kernel_codes:
                text = linecache.getline(code.co_filename, tb.tb_lineno).strip()
                line = G.SourceLine(code.co_filename, tb.tb_lineno, code.co_name, text)
            tb = tb.tb_next
        return line

    @property
    def kernel_codes(self) -> set:
        return self.rebinder.codes

    def cpu(self, fn: Any) -> Callable:
        """The CPU version of a jit function (plain callables pass through)."""
        return self.rebinder.convert(fn, getattr(fn, "__name__", "?"))

    def two_cta_tmem(self, cluster: int) -> bool:
        return any(isinstance(o, TmemAlloc) and o.two_ctas for o in self.clusters[cluster].objects)

    @staticmethod
    def partition_name(fn: Any) -> str:
        name = getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", "partition")
        for suffix in ("_partition", "_worker", "_part"):
            if name.endswith(suffix) and len(name) > len(suffix):
                return name[: -len(suffix)]
        return name

    # --- processes -------------------------------------------------------------------
    def start(self, fn: Callable, args: tuple, cluster: int, cta: int, partition: str, num_warps: int,
              start_vc: np.ndarray | None) -> Ctx:
        ctx = Ctx(self, cluster, cta, partition, num_warps)
        gen = self._process(ctx, fn, args)
        proc = self.engine.spawn(gen, partition=partition, cta=cta, cluster=cluster)
        ctx.proc = proc
        parent = G.STATE.ctx
        #: (child, parent, number of ops the parent had executed when it forked the child)
        self.spawns.append((proc, parent.proc if parent is not None else None,
                            self.ops_of.get(parent.proc.pid, 0) if parent is not None else 0))
        self.sync.new_process(proc, start_vc)
        return ctx

    def _process(self, ctx: Ctx, fn: Callable, args: tuple):
        """The engine-facing generator of one process: runs ``fn`` in a greenlet, relaying its ops."""
        state = G.STATE

        def body():
            return fn(*args)

        g = greenlet(body)
        value: Any = None
        first = True
        while True:
            prev = state.ctx
            state.ctx = ctx
            try:
                op = g.switch() if first else g.switch(value)
                first = False
            except KeyboardInterrupt:  # Ctrl-C stops the command; it is not the kernel's failure
                raise
            except BaseException as exc:  # the kernel raised: stop the run, report it
                self.error = exc
                self.error_line = self.kernel_line(exc)
                self.engine.max_steps = 0
                return
            finally:
                state.ctx = prev
            if g.dead:
                return
            self.ops_of[ctx.proc.pid] = self.ops_of.get(ctx.proc.pid, 0) + 1
            value = yield op

    def spawn_partitions(self, ctx: Ctx, partitions: Sequence[tuple[Any, tuple]], warps: Sequence[int],
                         result: list) -> E.Barrier:
        """Start each partition as a process of ``ctx``'s CTA; the first one's return value goes to
        ``result``.  Each arrives on the returned barrier when it ends."""
        join_bar = self.engine.barrier("warp_specialize", 0, cta=ctx.cta, cluster=ctx.cluster,
                                       count=len(partitions))
        self.sync.new_barrier(join_bar)
        start_vc = self.sync.step(ctx.proc)
        for n, ((fn, args), nw) in enumerate(zip(partitions, warps, strict=True)):
            body = self.cpu(fn)

            def run(body=body, args=args, first=n == 0):
                value = body(*args)
                if first:
                    result.append(value)
                G.emit(E.Arrive(join_bar, 1))  # this partition is done

            self.start(run, (), ctx.cluster, ctx.cta, self.partition_name(fn), nw, start_vc)
        return join_bar

    def join_partitions(self, ctx: Ctx, join_bar: E.Barrier) -> None:
        G.emit(E.Wait(join_bar, 0))

    def cluster_sync(self, ctx: Ctx) -> None:
        """A cluster barrier: every CTA's process arrives, then waits for all of them."""
        key = ctx.cluster
        bar = self._cluster_bars.get(key)
        if bar is None:
            bar = self.engine.barrier("cluster_barrier", 0, cta=0, cluster=key, count=self.num_ctas)
            self.sync.new_barrier(bar)
            self._cluster_bars[key] = bar
        n = self._cluster_syncs.get((key, ctx.cta), 0)
        self._cluster_syncs[(key, ctx.cta)] = n + 1
        G.emit(E.Arrive(bar, 1))
        G.emit(E.Wait(bar, n % 2))


# =====================================================================================
# results and the entry points
# =====================================================================================
@dataclass
class ExecutionResult:
    """What one launch on the executor did."""

    hazards: list[E.Hazard]
    deadlock: E.Deadlock | None
    trace: list[E.Op] = field(repr=False)
    steps: int = 0
    time: float = 0.0
    step_limit_hit: bool = False
    error: str | None = None  # the kernel raised (message with the kernel line), or None
    spawns: list = field(default_factory=list, repr=False)  # (process, parent, parent's ops before the fork)

    @property
    def ok(self) -> bool:
        return not self.hazards and self.deadlock is None and not self.step_limit_hit and self.error is None

    @property
    def end_time(self) -> float:
        return self.time


def descriptor_names(kernel: Any, args: Sequence[Any]) -> dict[int, str]:
    """Names of the descriptor arguments: the kernel's parameter names without ``_desc``."""
    fn = getattr(kernel, "fn", kernel)
    params = list(inspect.signature(fn).parameters)
    names = {}
    for name, value in zip(params, args, strict=False):
        if hasattr(value, "block_shape") and hasattr(value, "base"):
            names[id(value)] = name[:-5] if name.endswith("_desc") else name
    return names


def launch(kernel: Any, grid: Sequence[int] | int, args: Sequence[Any], *, num_ctas: int = 2, num_warps: int = 4,
           seed: int = 0, completion_bias: float = 1.0, timed: bool = False, costs: Any = None,
           backend: Any = None, max_steps: int | None = None, trace: bool = True,
           clusters: Sequence[int] | None = None, engine: E.Engine | None = None) -> ExecutionResult:
    """Run ``kernel[grid](*args, num_ctas=num_ctas)`` on the CPU and return what happened.

    ``seed`` / ``completion_bias`` pick the interleaving (data mode); ``timed=True`` runs one
    deterministic interleaving with durations (``costs``: a dict of op kind -> duration, or a
    backend given as ``backend``).  ``clusters`` restricts the run to some clusters of the grid (the
    timing model runs one); ``engine`` lets the caller supply its own engine (and backend)."""
    from gluon_overlap.twin.execdata import ExecBackend

    if num_ctas not in (1, 2):
        raise ExecutorError(f"num_ctas={num_ctas}: the executor runs clusters of 1 or 2 CTAs")
    grid = (grid,) if isinstance(grid, int) else tuple(int(g) for g in grid)
    if any(g <= 0 for g in grid):
        raise ExecutorError(f"grid={grid} must be positive")
    if engine is None:
        be = backend if backend is not None else ExecBackend(costs=costs)
        engine = E.Engine(be, seed=seed, trace=trace, max_steps=max_steps, timed=timed,
                          completion_bias=completion_bias)
    be = engine.backend
    rebinder = G.Rebinder()
    cpu_kernel = rebinder.convert(kernel, getattr(kernel, "__name__", "kernel"))
    names = descriptor_names(kernel, args)
    dev_args = [DeviceDescriptor(a, names[id(a)], num_ctas) if id(a) in names else a for a in args]
    rt = Runtime(engine, grid, num_ctas, rebinder, num_warps)
    be.runtime = rt
    previous = G.STATE.runtime, G.STATE.ctx
    G.STATE.runtime, G.STATE.ctx = rt, None
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the per-K-block matmuls are small: intra-op threads cost more than they save
    try:
        for cl in (range(len(rt.clusters)) if clusters is None else clusters):
            for cta in range(num_ctas):
                rt.start(cpu_kernel, tuple(dev_args), cl, cta, "main", num_warps, None)
        try:
            res = engine.run()
        except ExecutorError as exc:
            # The backend could not give an op its effect (registers that do not fit a buffer, a TMA box that
            # does not fit its destination): the kernel is wrong, so it is reported like a kernel error.
            rt.error = exc
            res = E.RunResult(engine.now, engine.steps, None, engine.hazards, engine.trace, False)
    finally:
        torch.set_num_threads(threads)
        G.STATE.runtime, G.STATE.ctx = previous
    deadlock = res.deadlock
    if deadlock is not None:  # a CTA waiting for its own partitions to end says nothing new
        deadlock.blocked = [b for b in deadlock.blocked if b.get("barrier_name") != "warp_specialize"]
    error = None
    if rt.error is not None:
        error = f"{type(rt.error).__name__}: {rt.error}"
        if rt.error_line is not None and f"(at {rt.error_line.name}:" not in error:
            error += f" (at {rt.error_line})"
    return ExecutionResult(res.hazards, res.deadlock if rt.error is None else None, res.trace, res.steps, res.time,
                           res.step_limit_hit and rt.error is None, error, rt.spawns)


def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run one ``@gluon.jit`` function (or aggregate method) on the CPU and return its Python result,
    e.g. ``call(Counter.create, 1, 5)``.  Only builtins that need no launch (arithmetic, ``where``,
    ``to_tensor``, constexpr functions) are available."""
    rebinder = G.Rebinder()
    previous = G.STATE.runtime
    G.STATE.runtime = _CallRuntime(rebinder)
    try:
        return rebinder.convert(fn, getattr(fn, "__name__", "fn"))(*args, **kwargs)
    finally:
        G.STATE.runtime = previous


class _CallRuntime:
    def __init__(self, rebinder: G.Rebinder):
        self.rebinder = rebinder

    @property
    def kernel_codes(self) -> set:
        return self.rebinder.codes
