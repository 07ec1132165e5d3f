"""Run a Gluon kernel's own source on the CPU: every partition of both CTAs of every cluster.

``launch(kernel, grid, args, num_ctas=2)`` is the CPU counterpart of ``kernel[grid](*args, num_ctas=2)``:
the same ``@gluon.jit`` function, the same arguments (host :class:`TensorDescriptor`\\ s built over CPU
tensors by the same code that builds them for the GPU), and the TMA stores land in the CPU tensor
the output descriptor was built over.  Each CTA starts as one process of the discrete-event engine
(:mod:`gluon_overlap.interp.engine`); ``gl.warp_specialize`` forks it into its partitions.  A partition
is a greenlet: when it calls a builtin that waits, arrives, loads, multiplies or stores, it hands the
operation to the engine and is suspended until the engine's scheduler has executed it -- so the
seeded interleavings, the completion bias and the deadlock report of the engine apply to the real
kernel.  :mod:`gluon_overlap.interp.data` gives the operations their effect on real bytes and
reports hazards (races found by :mod:`gluon_overlap.interp.races`, out-of-bounds accesses, reads of
uninitialized memory, stores still in flight at exit) with the kernel line that caused them.

``call(fn, *args)`` runs one ``@gluon.jit`` function (e.g. ``Counter.next``) outside a launch.
"""

from __future__ import annotations

import inspect
import math
from collections import deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch

from gluon_overlap.compiler.precheck import precheck_error
from gluon_overlap.interp import engine as E
from gluon_overlap.interp import ops
from gluon_overlap.interp.context import (
    CALL_RUNTIME,
    ExecutorError,
    KernelGreenlet,
    SourceLine,
    current_or_none,
    default_fp_fusion,
    emit,
)
from gluon_overlap.interp.data import ExecBackend
from gluon_overlap.interp.memory import DeviceDescriptor, TmemAlloc
from gluon_overlap.interp.races import SyncState
from gluon_overlap.interp.rebind import Rebinder
from gluon_overlap.interp.tensors import Pointer, RuntimeInt
from gluon_overlap.registry import check_int, check_number, check_positive_int, check_seed
from gluon_overlap.text import exception_text

__all__ = ["CpuKernel", "ExecutionResult", "ExecutorError", "call", "cpu", "launch"]


# =====================================================================================
# the runtime of one launch
# =====================================================================================
#: the most programs (clusters x CTAs) one executor launch may start: each is a set of processes
MAX_EXECUTOR_PROGRAMS = 2**16


def check_launch(
    grid: object,
    num_ctas: object = 2,
    *,
    seed: object = 0,
    completion_bias: object = 1.0,
    max_steps: object = None,
    clusters: object = None,
) -> tuple[int, ...]:
    """The arguments of :func:`gluon_overlap.interp.launch.launch`; returns the grid as a tuple.

    ``grid``: a positive int or a sequence of 1 to 3 positive ints whose product is at most
    :data:`MAX_EXECUTOR_PROGRAMS`; ``num_ctas`` 1 or 2; ``seed`` a 64-bit seed; ``completion_bias`` a
    finite number > 0; ``max_steps`` ``None`` or a positive int; ``clusters`` ``None`` or indices of the grid.
    """
    if isinstance(grid, (str, bytes)) or not isinstance(grid, (int, tuple, list)) or isinstance(grid, bool):
        raise ValueError(f"grid={grid!r} must be a positive int or a tuple of 1 to 3 positive ints")
    dims = (grid,) if isinstance(grid, int) else tuple(grid)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"grid={grid!r} must have 1 to 3 dimensions")
    dims = tuple(check_positive_int(f"grid[{i}]", g) for i, g in enumerate(dims))
    programs = math.prod(dims)
    if programs > MAX_EXECUTOR_PROGRAMS:
        raise ValueError(
            f"grid={grid!r} has {programs:,} programs; the CPU executor runs at most "
            f"{MAX_EXECUTOR_PROGRAMS:,} (each is a set of processes)"
        )
    if isinstance(num_ctas, bool) or num_ctas not in (1, 2):
        raise ValueError(f"num_ctas={num_ctas!r} must be 1 or 2: the executor runs clusters of 1 or 2 CTAs")
    check_seed("seed", seed)
    check_number("completion_bias", completion_bias, 0.0, low_inclusive=False)
    if max_steps is not None:
        check_positive_int("max_steps", max_steps)
    if clusters is not None:
        if isinstance(clusters, (str, bytes)) or not hasattr(clusters, "__iter__"):
            raise ValueError(f"clusters={clusters!r} must be a sequence of cluster indices")
        for c in clusters:
            check_int("clusters[...]", c, 0, programs)
    return dims


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
        self.runtime, self.cluster, self.cta, self.partition, self.num_warps = (
            runtime,
            cluster,
            cta,
            partition,
            num_warps,
        )
        grid = runtime.grid
        self.program = (
            cluster % grid[0],
            (cluster // grid[0]) % (grid[1] if len(grid) > 1 else 1),
            cluster // (grid[0] * (grid[1] if len(grid) > 1 else 1)),
        )
        self.proc: E.Process | None = None
        self.tile: int | None = cluster
        self.local: int | None = 0
        self._scheduled = 0
        self.kstep = 0  # K steps of the current tile's MMAs (annotation)
        self.inits_unfenced = False  # this CTA initialized barriers since its last cluster barrier
        self.sync_barrier: ops.Barrier | None = None  # the barrier a synchronous MMA (no mbarriers=) waits on
        self.cluster_rounds = 0  # cluster barriers this process (and, for a partition, its parent before) passed
        self.cp_seq = 0  # cp.async copies this process issued
        self.cp_groups: list[int] = []  # the number of the last copy of each committed cp.async group
        self.cp_comp: int | None = None  # the clock component dating its copies (made on first use)

    def on_tile_loop(self, tile_id: int) -> None:
        """An iteration of a persistent tile loop (``for tile_id in range(program_id, num_tiles, num_programs)``)
        began: its ops belong to ``tile_id`` (annotation only).  The cluster-local index is left unset (None, the
        timing model's wave 0, as before): such a loop carries no count of its own, and the reports must not
        call every tile the cluster's first."""
        self.tile = int(tile_id)
        self.local = None

    def on_schedule(self, tile_id: Any, has_work: Any) -> None:
        """A tile scheduler moved on (a field-named ``tile_id`` aggregate was built): annotate ops."""
        if has_work:
            self.tile = int(tile_id)
            self.local = self._scheduled
            self._scheduled += 1


class Runtime:
    """Everything one launch shares: engine, clusters, the rebound kernel code."""

    def __init__(
        self,
        engine: E.Engine,
        grid: tuple[int, ...],
        num_ctas: int,
        rebinder: Rebinder,
        num_warps: int,
        fp_fusion: bool = True,
    ):
        self.engine, self.grid, self.num_ctas, self.rebinder, self.num_warps = (
            engine,
            grid,
            num_ctas,
            rebinder,
            num_warps,
        )
        self.fp_fusion = fp_fusion  # the compiler contracts x * y + z into an FMA (enable_fp_fusion)
        # the executor's engine runs on its data backend (an ExecBackend): the race bookkeeping is shared with it
        self.sync: SyncState = cast(ExecBackend, engine.backend).sync_state
        self.clusters = [ClusterState(num_ctas) for _ in range(int(np.prod(grid)))]
        #: the engine barrier of each cluster barrier round, per (cluster, round)
        self._cluster_bars: dict[tuple[int, int], ops.Barrier] = {}
        #: what CTA 0 hands the cluster's other CTAs at a cluster barrier round (a scalar atomic's old value)
        self.cluster_values: dict[tuple[int, int], Any] = {}
        #: the processes that run a CTA's threads now, per (cluster, cta): its main process, or the partitions
        #: of its warp_specialize (a partition that returned has left; its warps take part in no barrier)
        self._live: dict[tuple[int, int], int] = {}
        self.error: BaseException | None = None
        self.want_lines = getattr(engine.backend, "data", True)  # kernel lines on every op (for reports)
        self.spawns: list[tuple[E.Process, E.Process | None, int]] = []
        self.ops_of: dict[int, int] = {}  # ops each process has handed to the engine
        self.error_line: SourceLine | None = None  # the innermost kernel line the error passed through
        #: clusters of the grid not started yet (in grid order); a try_cancel takes the first, an ending one starts it
        self.pending: deque[int] = deque()
        self.cancelled: list[int] = []
        self._running_ctas: dict[int, int] = {}
        self._start_cluster: Callable[[int], None] | None = None

    def cancel_cluster(self) -> int | None:
        """``clc.try_cancel``: the next cluster that has not started is cancelled (never runs); its index, or None."""
        if not self.pending:
            return None
        cluster = self.pending.popleft()
        self.cancelled.append(cluster)
        return cluster

    def cluster_started(self, cluster: int) -> None:
        self._running_ctas[cluster] = self.num_ctas

    def _main_ended(self, ctx: Ctx) -> None:
        """A CTA's main process ended; when the whole cluster has, the next one waiting starts (its SMs are free)."""
        left = self._running_ctas.get(ctx.cluster, 0) - 1
        self._running_ctas[ctx.cluster] = left
        if left == 0 and self.pending and self._start_cluster is not None and self.error is None:
            self._start_cluster(self.pending.popleft())

    def kernel_line(self, exc: BaseException) -> SourceLine | None:
        """The innermost line of kernel code in ``exc``'s traceback (a typo, a wrong attribute, a bad
        shape raise from inside the kernel's own Python: the report must say where)."""
        import linecache

        line = None
        tb = exc.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code in self.kernel_codes:
                text = linecache.getline(code.co_filename, tb.tb_lineno).strip()
                line = SourceLine(code.co_filename, tb.tb_lineno, code.co_name, text)
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
        name: str = getattr(fn, "__name__", "") or getattr(getattr(fn, "fn", None), "__name__", "partition")
        for suffix in ("_partition", "_worker", "_part"):
            if name.endswith(suffix) and len(name) > len(suffix):
                return name[: -len(suffix)]
        return name

    # --- processes -------------------------------------------------------------------
    def start(
        self,
        fn: Callable,
        args: tuple,
        cluster: int,
        cta: int,
        partition: str,
        num_warps: int,
        start_vc: np.ndarray | None,
    ) -> Ctx:
        ctx = Ctx(self, cluster, cta, partition, num_warps)
        gen = self._process(ctx, fn, args)
        proc = self.engine.spawn(gen, partition=partition, cta=cta, cluster=cluster)
        ctx.proc = proc
        parent = current_or_none()
        #: (child, parent, number of ops the parent had executed when it forked the child)
        self.spawns.append(
            (
                proc,
                parent.proc if parent is not None else None,
                self.ops_of.get(parent.proc.pid, 0) if parent is not None else 0,
            )
        )
        self.sync.new_process(proc, start_vc)
        return ctx

    def _process(self, ctx: Ctx, fn: Callable, args: tuple) -> Generator[Any, Any, None]:
        """The engine-facing generator of one process: runs ``fn`` in a greenlet, relaying its ops."""

        def body() -> Any:
            return fn(*args)

        g = KernelGreenlet(body)
        g.ctx = ctx
        value: Any = None
        first = True
        proc = ctx.proc  # start() sets it before the engine first advances this generator
        assert proc is not None
        while True:
            try:
                op = g.switch() if first else g.switch(value)
                first = False
            except KeyboardInterrupt:  # Ctrl-C stops the command; it is not the kernel's failure
                raise
            except BaseException as exc:  # the kernel raised: stop the whole run (a trap ends the grid), report it
                if self.error is None:
                    self.error = exc
                    self.error_line = self.kernel_line(exc)
                self.engine.halt()
                return
            if g.dead:
                if ctx.partition == "main":
                    self._main_ended(ctx)
                return
            self.ops_of[proc.pid] = self.ops_of.get(proc.pid, 0) + 1
            value = yield op

    def spawn_partitions(
        self, ctx: Ctx, partitions: Sequence[tuple[Any, tuple]], warps: Sequence[int], result: list
    ) -> ops.Barrier:
        """Start each partition as a process of ``ctx``'s CTA; the first one's return value goes to
        ``result``.  Each arrives on the returned barrier when it ends."""
        join_bar = self.engine.barrier("warp_specialize", 0, cta=ctx.cta, cluster=ctx.cluster, count=len(partitions))
        self.sync.new_barrier(join_bar)
        start_vc = self.sync.step(ctx.proc)
        where = (ctx.cluster, ctx.cta)
        self._live[where] = len(partitions)  # the main process's threads now run the default partition
        for n, ((fn, args), nw) in enumerate(zip(partitions, warps, strict=True)):
            body = self.cpu(fn)

            def run(body: Callable = body, args: tuple = args, first: bool = n == 0) -> None:
                value = body(*args)
                if first:
                    result.append(value)
                self._live[where] -= 1  # this partition is done: its warps take part in no cluster barrier
                emit(ops.Arrive(join_bar, 1))

            child = self.start(run, (), ctx.cluster, ctx.cta, self.partition_name(fn), nw, start_vc)
            child.cluster_rounds = ctx.cluster_rounds
        return join_bar

    def join_partitions(self, ctx: Ctx, join_bar: ops.Barrier) -> None:
        emit(ops.Wait(join_bar, 0))
        self._live[(ctx.cluster, ctx.cta)] = 1

    def live_processes(self, cluster: int) -> int:
        """How many processes run the threads of ``cluster`` now (one per CTA outside warp_specialize)."""
        return sum(self._live.get((cluster, cta), 1) for cta in range(self.num_ctas))

    def cluster_sync(self, ctx: Ctx) -> None:
        """A cluster barrier (``barrier.cluster.arrive`` + ``wait``): every thread of the cluster that has not
        left must arrive, so inside warp_specialize every running partition of every CTA must call it; a
        barrier some partitions never reach deadlocks, as on the GPU.  Rounds are counted per process (a
        partition starts from its parent's count), and a round's size is the live processes when it opens."""
        key = (ctx.cluster, ctx.cluster_rounds)
        bar = self._cluster_bars.get(key)
        if bar is None:
            bar = self.engine.barrier(
                "cluster_barrier",
                ctx.cluster_rounds,
                cta=0,
                cluster=ctx.cluster,
                count=self.live_processes(ctx.cluster),
            )
            self.sync.new_barrier(bar)
            self._cluster_bars[key] = bar
        ctx.cluster_rounds += 1
        emit(ops.Arrive(bar, 1))
        emit(ops.Wait(bar, 0))


# =====================================================================================
# results and the entry points
# =====================================================================================
@dataclass
class ExecutionResult:
    """What one launch on the executor did."""

    hazards: list[E.Hazard]
    deadlock: E.Deadlock | None
    trace: list[ops.Op] = field(repr=False)
    steps: int = 0
    time: float = 0.0
    step_limit_hit: bool = False
    error: str | None = None  # the kernel raised (message with the kernel line), or None
    spawns: list = field(default_factory=list, repr=False)  # (process, parent, parent's ops before the fork)
    cancelled: list = field(default_factory=list)  # clusters a clc.try_cancel took over (they never ran)
    #: the code objects of every @gluon.jit function the run rebound for the CPU (what could execute): the
    #: exercises check that a learner's kernel ran the learner's code (gluon_overlap.exercises.guard)
    codes: frozenset = field(default_factory=frozenset, repr=False)

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


def device_arguments(kernel: Any, args: Sequence[Any], num_ctas: int) -> list[Any]:
    """What the kernel body receives for each launch argument, as on the GPU: a host descriptor becomes
    a device descriptor, a tensor a pointer to its storage, a non-constexpr int a runtime ``i32``."""
    names = descriptor_names(kernel, args)
    fn = getattr(kernel, "fn", kernel)
    params = list(inspect.signature(fn).parameters)
    constexpr = {p.name for p in getattr(kernel, "params", ()) if getattr(p, "is_constexpr", False)}
    out: list[Any] = []
    for i, a in enumerate(args):
        pname = params[i] if i < len(params) else f"arg{i}"
        if id(a) in names:
            out.append(DeviceDescriptor(a, names[id(a)], num_ctas))
        elif isinstance(a, torch.Tensor):
            if a.device.type != "cpu":
                raise ExecutorError(f"argument {pname} is on {a.device}: the executor runs on CPU tensors")
            out.append(Pointer.of(a, pname))
        elif isinstance(a, int) and not isinstance(a, bool) and pname not in constexpr and hasattr(kernel, "params"):
            out.append(RuntimeInt(a))
        else:
            out.append(a)
    return out


def launch(
    kernel: Any,
    grid: Sequence[int] | int,
    args: Sequence[Any],
    *,
    num_ctas: int = 2,
    num_warps: int = 4,
    seed: int = 0,
    completion_bias: float = 1.0,
    timed: bool = False,
    costs: Any = None,
    backend: Any = None,
    max_steps: int | None = None,
    trace: bool = True,
    clusters: Sequence[int] | None = None,
    engine: E.Engine | None = None,
    precheck: bool = True,
    enable_fp_fusion: bool | None = None,
    resident_clusters: int | None = None,
) -> ExecutionResult:
    """Run ``kernel[grid](*args, num_ctas=num_ctas)`` on the CPU and return what happened.

    ``seed`` / ``completion_bias`` pick the interleaving (data mode); ``timed=True`` runs one
    deterministic interleaving with durations (``costs``: a dict of op kind -> duration, or a
    backend given as ``backend``).  ``clusters`` restricts the run to some clusters of the grid (the
    timing model runs one); ``engine`` lets the caller supply its own engine (and backend).  ``precheck``
    (default on) first asks Triton's compiler whether it would accept the kernel
    (:mod:`gluon_overlap.compiler.precheck`): a refusal is the run's ``error``, ``CompilerRefusal: ...``; so is an
    exit (``SystemExit``) of the kernel's own Python that the compiler runs (a constexpr function), with its line.
    The first error a partition raises ends the whole run. ``enable_fp_fusion`` is Triton's launch option (None:
    ``TRITON_DEFAULT_FP_FUSION``, on by default): whether ``x * y + z`` is contracted into one FMA.
    ``resident_clusters`` clusters run at once (default: all of them); each further one starts when one ends, unless
    a ``clc.try_cancel`` took it over first."""

    grid = check_launch(
        grid, num_ctas, seed=seed, completion_bias=completion_bias, max_steps=max_steps, clusters=clusters
    )
    if precheck:
        refused = precheck_error(kernel, args, num_ctas=num_ctas, num_warps=num_warps)
        if refused is not None:
            return ExecutionResult([], None, [], error=refused)
    if engine is None:
        be = backend if backend is not None else ExecBackend(costs=costs)
        engine = E.Engine(be, seed=seed, trace=trace, max_steps=max_steps, timed=timed, completion_bias=completion_bias)
    be = cast(ExecBackend, engine.backend)
    rebinder = Rebinder()
    cpu_kernel = rebinder.convert(kernel, getattr(kernel, "__name__", "kernel"))
    # constexpr arguments reach the kernel as the frontend gives them: an aggregate class (``MMAImpl``), a jit
    # function or a module becomes its CPU counterpart, a gl.constexpr its plain value
    dev_args = [rebinder.convert(a) for a in device_arguments(kernel, args, num_ctas)]
    if enable_fp_fusion is not None and not isinstance(enable_fp_fusion, bool):
        raise ValueError(f"enable_fp_fusion={enable_fp_fusion!r} must be True, False or None")
    rt = Runtime(engine, grid, num_ctas, rebinder, num_warps, default_fp_fusion(enable_fp_fusion))
    be.runtime = rt
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the per-K-block matmuls are small: intra-op threads cost more than they save
    try:

        def start_cluster(cl: int) -> None:
            rt.cluster_started(cl)
            for cta in range(num_ctas):
                rt.start(cpu_kernel, tuple(dev_args), cl, cta, "main", num_warps, None)

        order = list(range(len(rt.clusters)) if clusters is None else clusters)
        resident = (
            len(order) if resident_clusters is None else check_positive_int("resident_clusters", resident_clusters)
        )
        rt._start_cluster = start_cluster
        rt.pending.extend(order[resident:])
        for cl in order[:resident]:
            start_cluster(cl)
        try:
            res = engine.run()
        except ExecutorError as exc:
            # The backend could not give an op its effect (registers that do not fit a buffer, a TMA box that
            # does not fit its destination): the kernel is wrong, so it is reported like a kernel error.
            rt.error = exc
            res = E.RunResult(engine.now, engine.steps, None, engine.hazards, engine.trace, False)
    finally:
        torch.set_num_threads(threads)
    deadlock = res.deadlock
    if deadlock is not None:  # a CTA waiting for its own partitions to end says nothing new
        deadlock.blocked = [b for b in deadlock.blocked if b.get("barrier_name") != "warp_specialize"]
    error = None
    if rt.error is not None:
        error = exception_text(rt.error)
        if rt.error_line is not None and f"(at {rt.error_line.name}:" not in error:
            error += f" (at {rt.error_line})"
    return ExecutionResult(
        res.hazards,
        res.deadlock if rt.error is None else None,
        res.trace,
        res.steps,
        res.time,
        res.step_limit_hit and rt.error is None,
        error,
        rt.spawns,
        list(rt.cancelled),
        frozenset(rebinder.codes),
    )


def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run one ``@gluon.jit`` function (or aggregate method) on the CPU and return its Python result,
    e.g. ``call(Counter.create, 1, 5)``.  Only builtins that need no launch (arithmetic, ``where``,
    ``to_tensor``, constexpr functions) are available."""
    rebinder = Rebinder()
    token = CALL_RUNTIME.set(_CallRuntime(rebinder))
    try:
        return rebinder.convert(fn, getattr(fn, "__name__", "fn"))(*args, **kwargs)
    finally:
        CALL_RUNTIME.reset(token)


class _CallRuntime:
    def __init__(self, rebinder: Rebinder):
        self.rebinder = rebinder

    @property
    def kernel_codes(self) -> set:
        return self.rebinder.codes


class CpuKernel:
    """``cpu(kernel)[grid](*args, num_warps=4, num_ctas=1, **options)``: the CPU launch, written as the GPU one.

    The grid is what Triton takes: an int, a tuple of 1 to 3 ints, or a callable given the launch's keyword
    arguments (``lambda meta: (triton.cdiv(n, meta["BLOCK"]),)``).  Keyword arguments that name the kernel's
    parameters are bound to them, as Triton binds them; ``num_warps`` / ``num_ctas`` are the launch options (Triton's
    defaults, 4 and 1); the others (``seed``, ``completion_bias``, ``timed``, ``max_steps``, ...) are :func:`launch`'s.
    The call returns the :class:`ExecutionResult` (the GPU launch returns nothing: here the hazards, the deadlock and
    the trace are the point)."""

    def __init__(self, kernel: Any):
        if not hasattr(kernel, "fn") or not callable(getattr(kernel, "fn", None)):
            raise ValueError(f"cpu() takes a @gluon.jit kernel, got {type(kernel).__name__}")
        self.kernel = kernel

    def __getitem__(self, grid: Any) -> Callable[..., ExecutionResult]:
        def run(*args: Any, num_warps: int = 4, num_ctas: int = 1, **kwargs: Any) -> ExecutionResult:
            params = inspect.signature(self.kernel.fn).parameters
            names = list(params)
            options = {k: kwargs.pop(k) for k in list(kwargs) if k not in names}
            defaults = {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}
            bound = _bind(names, args, {**{n: v for n, v in defaults.items() if n not in names[: len(args)]}, **kwargs})
            shape = grid(dict(zip(names, bound, strict=True))) if callable(grid) else grid
            return launch(self.kernel, shape, bound, num_ctas=num_ctas, num_warps=num_warps, **options)

        return run


def _bind(names: list[str], args: tuple, kwargs: dict[str, Any]) -> tuple:
    """Positional and keyword arguments of a launch, in the kernel's parameter order."""
    if len(args) > len(names):
        raise ValueError(f"the kernel takes {len(names)} arguments ({', '.join(names)}), got {len(args)}")
    bound = dict(zip(names, args, strict=False))
    for name, value in kwargs.items():
        if name in bound:
            raise ValueError(f"argument {name!r} given twice (by position and by name)")
        bound[name] = value
    missing = [n for n in names if n not in bound]
    if missing:
        raise ValueError(f"missing kernel argument(s): {', '.join(missing)}")
    return tuple(bound[n] for n in names)


def cpu(kernel: Any) -> CpuKernel:
    """The CPU launcher of a ``@gluon.jit`` kernel: ``cpu(kernel)[grid](*args, num_warps=4)``
    (see :class:`CpuKernel`)."""
    return CpuKernel(kernel)
