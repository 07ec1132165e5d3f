"""Run an unmodified Gluon script on the CPU interpreter: its ``kernel[grid](...)`` launches, its CUDA tensors.

:func:`run_script` runs a Python file as ``python SCRIPT.py ARGS...`` would (``__name__ == "__main__"``, ``sys.argv``,
its folder first on ``sys.path`` so that ``importlib.import_module("07-persistence")`` finds its neighbours) inside
:func:`cuda_on_cpu`, which for the length of the run

* makes ``device="cuda"`` tensors on the CPU (a torch function mode: factories, ``.to("cuda")``, ``.cuda()``);
* answers the ``torch.cuda`` calls scripts make to allocate, synchronize and ask what they run on as a Blackwell
  device would (``is_available``, ``get_device_capability() == (10, 0)``, ``get_device_properties(...)
  .multi_processor_count``, ``synchronize``, events), and Triton's ``driver.active`` (``get_current_target()`` is
  ``cuda`` 100);
* launches every ``@gluon.jit`` kernel on the interpreter (:func:`gluon_overlap.interp.launch.launch`) and keeps a
  :class:`LaunchReport` of each: the script line that launched it, the grid, hazards, deadlock, error;
* runs a ``triton.autotune`` kernel with its first config (no benchmarking), and ``triton.testing.do_bench``
  calls the function once (the time it reports is the CPU's, not a GPU's).

A launch that ends in an error (a kernel fault, a trap) or a deadlock stops the script there, as the GPU would (a
fault poisons the context; a deadlock never returns); a hazard does not (the data still flowed): the script goes on
and the hazard is reported.  Everything is restored afterwards.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import linecache
import os
import runpy
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from gluon_overlap.script.checks import check_script
from gluon_overlap.text import SourceLine, exception_text

__all__ = ["LaunchReport", "ScriptReport", "ScriptStopped", "cuda_on_cpu", "run_script"]

#: what the interpreter tells a script about "its GPU" (a B200's counts)
DEVICE_NAME = "gluon-overlap CPU interpreter (sm_100a semantics)"
SM_COUNT = 148
CAPABILITY = (10, 0)


class ScriptStopped(BaseException):  # noqa: N818  (not an Exception: a script's `except Exception` must not eat it)
    """A launch ended the script (a kernel error or a deadlock), as a GPU fault or hang would."""


@dataclass
class LaunchReport:
    """One ``kernel[grid](...)`` of the script, run on the interpreter."""

    kernel: str
    line: SourceLine | None  # the script line that launched it
    grid: tuple[int, ...]
    num_warps: int
    num_ctas: int
    hazards: list[Any]
    deadlock: Any
    error: str | None
    step_limit_hit: bool
    steps: int
    seconds: float
    note: str = ""  # e.g. which autotune config ran

    @property
    def ok(self) -> bool:
        return not self.hazards and self.deadlock is None and self.error is None and not self.step_limit_hit

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "line": str(self.line) if self.line else None,
            "grid": list(self.grid),
            "num_warps": self.num_warps,
            "num_ctas": self.num_ctas,
            "ok": self.ok,
            "hazards": [h.to_dict() for h in self.hazards],
            "deadlock": self.deadlock.to_dict() if self.deadlock is not None else None,
            "deadlock_text": str(self.deadlock) if self.deadlock is not None else None,
            "error": self.error,
            "step_limit_hit": self.step_limit_hit,
            "steps": self.steps,
            "seconds": round(self.seconds, 3),
            "note": self.note,
        }


@dataclass
class ScriptReport:
    """What running a script on the interpreter found."""

    script: str
    argv: list[str]
    launches: list[LaunchReport] = field(default_factory=list)
    exit_status: int | None = None  # the script's sys.exit code (0 when it ended normally)
    script_error: str | None = None  # what the script raised (not through a launch), with its line
    stopped_by: str | None = None  # None, "launch" (an error or deadlock), "wall-clock"
    output: str = ""  # what the script printed (its last 64 KB)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            self.script_error is None
            and self.stopped_by is None
            and not self.exit_status
            and all(launch.ok for launch in self.launches)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "script": self.script,
            "argv": self.argv,
            "ok": self.ok,
            "exit_status": self.exit_status,
            "script_error": self.script_error,
            "stopped_by": self.stopped_by,
            "launches": [launch.to_dict() for launch in self.launches],
            "hazards": sum(len(launch.hazards) for launch in self.launches),
            "deadlocks": sum(launch.deadlock is not None for launch in self.launches),
            "errors": sum(launch.error is not None for launch in self.launches),
            "seconds": round(self.seconds, 3),
            "output": self.output,
        }


# =====================================================================================
# CUDA answered on the CPU
# =====================================================================================
def _cpu_device(device: Any) -> Any:
    if isinstance(device, str) and device.split(":", 1)[0] == "cuda":
        return "cpu"
    if isinstance(device, torch.device) and device.type == "cuda":
        return torch.device("cpu")
    if isinstance(device, int) and not isinstance(device, bool):  # .to(0) / device=0 mean the first GPU
        return "cpu"
    return device


class _CudaTensorsOnCpu(torch.overrides.TorchFunctionMode):
    """``device="cuda"`` (or ``cuda:N``, ``torch.device("cuda")``) becomes the CPU; ``.cuda()`` is the tensor."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = dict(kwargs or {})
        if "device" in kwargs:
            kwargs["device"] = _cpu_device(kwargs["device"])
        name = getattr(func, "__name__", "")
        if name == "cuda" and args and isinstance(args[0], torch.Tensor):
            return args[0]
        if name == "to" and len(args) > 1:
            args = (args[0],) + tuple(_cpu_device(a) for a in args[1:])
        return func(*args, **kwargs)


class _DeviceProperties:
    name = DEVICE_NAME
    major, minor = CAPABILITY
    multi_processor_count = SM_COUNT
    total_memory = 180 * 2**30
    max_shared_memory_per_block_optin = 232448
    warp_size = 32
    regs_per_multiprocessor = 65536

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"multi_processor_count={self.multi_processor_count})"
        )


class _Event:
    """``torch.cuda.Event``: records the wall clock (the CPU's time, not a GPU's)."""

    def __init__(self, enable_timing: bool = False, *args: Any, **kwargs: Any):
        self.t = time.perf_counter()

    def record(self, stream: Any = None) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def wait(self, stream: Any = None) -> None:
        pass

    def elapsed_time(self, end: _Event) -> float:
        return (end.t - self.t) * 1e3


class _Stream:
    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def synchronize(self) -> None:
        pass

    def wait_stream(self, other: Any) -> None:
        pass

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


_TORCH_CUDA = {
    "is_available": lambda: True,
    "device_count": lambda: 1,
    "current_device": lambda: 0,
    "is_initialized": lambda: True,
    "init": _nothing,
    "get_device_capability": lambda device=None: CAPABILITY,
    "get_device_name": lambda device=None: DEVICE_NAME,
    "get_device_properties": lambda device=None: _DeviceProperties(),
    "synchronize": _nothing,
    "set_device": _nothing,
    "empty_cache": _nothing,
    "manual_seed": lambda seed: torch.manual_seed(seed),
    "manual_seed_all": lambda seed: torch.manual_seed(seed),
    "Event": _Event,
    "Stream": _Stream,
    "current_stream": lambda device=None: _Stream(),
    "default_stream": lambda device=None: _Stream(),
    "stream": lambda s=None: contextlib.nullcontext(),
    "device": lambda d=None: contextlib.nullcontext(),
    "memory_allocated": lambda device=None: 0,
    "max_memory_allocated": lambda device=None: 0,
    "reset_peak_memory_stats": _nothing,
    "mem_get_info": lambda device=None: (160 * 2**30, 180 * 2**30),
}


class _CpuDriverUtils:
    @staticmethod
    def get_device_properties(device: Any = None) -> dict[str, int]:
        return {
            "multiprocessor_count": SM_COUNT,
            "max_shared_mem": 232448,
            "max_num_regs": 65536,
            "warpSize": 32,
            "sm_clock_rate": 1965000,
            "mem_clock_rate": 3996000,
            "mem_bus_width": 8192,
        }


class _CpuDriver:
    """What ``triton.runtime.driver.active`` answers during a run."""

    utils = _CpuDriverUtils()

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 100, 32)

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")

    def get_device_interface(self) -> Any:
        return torch.cuda

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def set_current_device(self, device: Any) -> None:
        pass

    def get_empty_cache_for_benchmark(self) -> torch.Tensor:
        return torch.empty(16, dtype=torch.int8)

    def clear_cache(self, cache: Any) -> None:
        pass

    def get_benchmarker(self) -> Callable[..., Any]:
        return _do_bench

    def is_active(self) -> bool:
        return True


def _do_bench(
    fn: Callable[[], Any], *args: Any, quantiles: Any = None, return_mode: str = "mean", **kwargs: Any
) -> Any:
    """``triton.testing.do_bench`` on the CPU: ``fn`` runs once; the milliseconds it took (the CPU's)."""
    t = time.perf_counter()
    fn()
    ms = (time.perf_counter() - t) * 1e3
    if quantiles is not None:
        return [ms for _ in quantiles]
    return ms


@contextlib.contextmanager
def _patched(obj: Any, values: dict[str, Any]) -> Iterator[None]:
    """Set attributes of ``obj`` for the block; the old ones (or their absence) come back after."""
    missing = object()
    old = {name: getattr(obj, name, missing) for name in values}
    try:
        for name, value in values.items():
            setattr(obj, name, value)
        yield
    finally:
        for name, value in old.items():
            if value is missing:
                with contextlib.suppress(AttributeError):
                    delattr(obj, name)
            else:
                setattr(obj, name, value)


# =====================================================================================
# launches
# =====================================================================================
#: files whose frames are not "the script's" when a launch looks for the line that made it
_LIBRARY_ROOTS = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch, contextlib) if m.__file__) + (
    os.path.dirname(os.path.dirname(__file__)) + os.sep,
)


def _launch_line() -> SourceLine | None:
    """The innermost frame of the script's own code (not Triton, torch, the standard library or this package)."""
    import triton

    roots = _LIBRARY_ROOTS + (os.path.dirname(triton.__file__) + os.sep,)
    f: types.FrameType | None = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(roots) and not name.startswith("<"):
            return SourceLine(name, f.f_lineno, f.f_code.co_name, linecache.getline(name, f.f_lineno).strip())
        f = f.f_back
    return None


class _Session:
    """The launches of one script run, and how each is run."""

    OPTIONS = (
        "num_warps",
        "num_ctas",
        "num_stages",
        "maxnreg",
        "enable_fp_fusion",
        "debug",
        "launch_cooperative_grid",
        "launch_pdl",
        "instrumentation_mode",
        "fpsan_homomorphic_casts",
        "warmup",
    )

    def __init__(
        self,
        seed: int,
        completion_bias: float,
        max_steps: int | None,
        precheck: bool,
        resident_clusters: int | None = None,
    ):
        self.seed, self.completion_bias, self.max_steps, self.precheck = seed, completion_bias, max_steps, precheck
        self.resident_clusters = resident_clusters
        self.launches: list[LaunchReport] = []
        self.next_note = ""  # said of the next launch (which autotune config runs)

    def launch(self, fn: Any, args: tuple, grid: Any, kwargs: dict[str, Any], note: str = "") -> None:
        from gluon_overlap.interp.launch import _bind, launch

        line = _launch_line()
        note, self.next_note = note or self.next_note, ""
        name = getattr(getattr(fn, "fn", fn), "__name__", "kernel")
        is_gluon = getattr(fn, "is_gluon", lambda: False)()
        params = list(inspect.signature(fn.fn).parameters)
        options = {k: kwargs.pop(k) for k in list(kwargs) if k not in params and k in self.OPTIONS}
        unknown = [k for k in kwargs if k not in params]
        num_warps = int(options.get("num_warps", kwargs.get("num_warps", 4)) or 4)
        num_ctas = int(options.get("num_ctas", kwargs.get("num_ctas", 1)) or 1)
        report = LaunchReport(name, line, (), num_warps, num_ctas, [], None, None, False, 0, 0.0, note)
        self.launches.append(report)
        t = time.perf_counter()
        try:
            if not is_gluon:
                raise ValueError(f"{name} is a @triton.jit kernel: the interpreter runs @gluon.jit kernels")
            if unknown:
                raise ValueError(f"{name}() got unexpected keyword argument(s) {', '.join(unknown)}")
            for opt in ("num_warps", "num_ctas"):  # a kernel parameter of that name is the launch option too
                if opt in params and opt not in kwargs and opt not in options and len(args) <= params.index(opt):
                    kwargs[opt] = num_warps if opt == "num_warps" else num_ctas
            defaults = {
                n: p.default
                for n, p in inspect.signature(fn.fn).parameters.items()
                if p.default is not inspect.Parameter.empty and n not in params[: len(args)] and n not in kwargs
            }
            bound = _bind(params, args, {**defaults, **kwargs})
            shape = grid(dict(zip(params, bound, strict=True))) if callable(grid) else grid
            shape = tuple(int(g) for g in ((shape,) if isinstance(shape, int) else shape))
            report.grid = shape
            res = launch(
                fn,
                shape,
                bound,
                num_ctas=num_ctas,
                num_warps=num_warps,
                seed=self.seed,
                completion_bias=self.completion_bias,
                max_steps=self.max_steps,
                trace=False,
                precheck=self.precheck,
                resident_clusters=self.resident_clusters,
            )
        except ScriptStopped:
            raise
        except (ValueError, TypeError) as exc:
            report.error = exception_text(exc)
        else:
            report.hazards, report.deadlock, report.error = res.hazards, res.deadlock, res.error
            report.step_limit_hit, report.steps = res.step_limit_hit, res.steps
        report.seconds = time.perf_counter() - t
        if report.error is not None or report.deadlock is not None or report.step_limit_hit:
            why = report.error or ("a deadlock" if report.deadlock is not None else "its step budget")
            raise ScriptStopped(f"the launch of {name} at {line} stopped the script: {why}")


@contextlib.contextmanager
def cuda_on_cpu(session: _Session | None = None) -> Iterator[_Session]:
    """CUDA answered on the CPU and Gluon launches run on the interpreter, for the block (see the module)."""
    import triton
    import triton.testing
    from triton.runtime import autotuner
    from triton.runtime.driver import driver as drivers
    from triton.runtime.jit import JITFunction

    session = session or _Session(0, 1.0, None, True)

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> None:
        if warmup:
            return None
        session.launch(self, args, grid, dict(kwargs))
        return None

    def prune_configs(self: Any, kwargs: dict, *rest: Any, **kw: Any) -> list:
        pruned = original_prune(self, kwargs, *rest, **kw)
        if len(pruned) > 1:
            session.next_note = f"triton.autotune: the first of {len(pruned)} configs ({pruned[0]}), not benchmarked"
        return pruned[:1]  # the first config runs: no benchmarking on a CPU

    original_prune = autotuner.Autotuner.prune_configs
    previous_driver = drivers._active
    try:
        drivers._active = _CpuDriver()
        with contextlib.ExitStack() as stack:
            stack.enter_context(_patched(torch.cuda, _TORCH_CUDA))
            stack.enter_context(_patched(JITFunction, {"run": run}))
            stack.enter_context(_patched(autotuner.Autotuner, {"prune_configs": prune_configs}))
            stack.enter_context(_patched(triton.testing, {"do_bench": _do_bench, "do_bench_cudagraph": _do_bench}))
            stack.enter_context(_CudaTensorsOnCpu())
            yield session
    finally:
        drivers._active = previous_driver


# =====================================================================================
# the script
# =====================================================================================
class _Tee(io.TextIOBase):
    """The script's prints: to the real stream, and the last ``limit`` characters kept."""

    def __init__(self, stream: Any, limit: int = 64 * 1024):
        self.stream, self.limit = stream, limit
        self.kept: list[str] = []
        self.size = 0

    def write(self, text: str) -> int:
        self.stream.write(text)
        self.kept.append(text)
        self.size += len(text)
        while self.size > self.limit and len(self.kept) > 1:
            self.size -= len(self.kept.pop(0))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def text(self) -> str:
        return "".join(self.kept)[-self.limit :]


def _script_line(exc: BaseException, path: str) -> SourceLine | None:
    """The innermost line of ``exc``'s traceback in the script (or a module next to it)."""
    folder = os.path.dirname(path) + os.sep
    line = None
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name == path or name.startswith(folder):
            line = SourceLine(
                name, tb.tb_lineno, tb.tb_frame.f_code.co_name, linecache.getline(name, tb.tb_lineno).strip()
            )
        tb = tb.tb_next
    return line


class ScriptExit(SystemExit):
    """``os._exit(code)`` called by the script: its exit status, without ending this process."""

    def __str__(self) -> str:
        return f"the script called os._exit({self.code!r})"


def _script_exit(code: int = 0) -> None:
    raise ScriptExit(code)


def run_script(
    path: str | os.PathLike,
    argv: Sequence[str] = (),
    *,
    seed: int = 0,
    completion_bias: float = 1.0,
    max_steps: int | None = None,
    precheck: bool = True,
    on_start: Callable[[str], None] | None = None,
    budget_exceptions: tuple[type[BaseException], ...] = (),
    resident_clusters: int | None = None,
) -> ScriptReport:
    """Run the Python script at ``path`` with arguments ``argv`` as ``python path argv...`` would, its CUDA
    tensors on the CPU and its Gluon launches on the interpreter; the :class:`ScriptReport`.

    ``seed`` / ``completion_bias`` / ``max_steps`` / ``precheck`` / ``resident_clusters`` are those of every launch
    (:func:`gluon_overlap.interp.launch.launch`).  ``on_start(path)`` is called just before the script starts (the
    guarded command announces its phase there), ``budget_exceptions`` the exceptions that mean its wall-clock
    budget was spent (``stopped_by == "wall-clock"``).  What the script raises is its ``script_error``, with its
    line; ``sys.exit(n)`` (or ``os._exit(n)`` under a guard) its ``exit_status``."""
    path = check_script(path)
    report = ScriptReport(path, [str(a) for a in argv])
    session = _Session(seed, completion_bias, max_steps, precheck, resident_clusters)
    saved_argv, saved_path, saved_stdout = sys.argv, list(sys.path), sys.stdout
    saved_modules = set(sys.modules)
    tee = _Tee(sys.stdout)
    sys.argv = [path, *report.argv]
    sys.path.insert(0, os.path.dirname(path))
    t = time.perf_counter()
    try:
        sys.stdout = tee
        if on_start is not None:
            on_start(path)
        with cuda_on_cpu(session), _patched(os, {"_exit": _script_exit}):
            runpy.run_path(path, run_name="__main__")
        report.exit_status = 0
    except ScriptStopped:
        report.stopped_by = "launch"
    except SystemExit as exc:
        code = exc.code
        report.exit_status = code if isinstance(code, int) else (0 if code is None else 1)
        if not isinstance(code, int | type(None)):
            report.script_error = f"SystemExit: {code}"
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001  (the script's own failure: reported with its line)
        if isinstance(exc, budget_exceptions):
            report.stopped_by = "wall-clock"
        line = _script_line(exc, path)
        report.script_error = exception_text(exc) + (f" (at {line})" if line is not None else "")
    finally:
        sys.stdout = saved_stdout
        sys.argv = saved_argv
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:  # the script's own modules: a later run imports them afresh
            module = sys.modules.get(name)
            file = getattr(module, "__file__", None) if isinstance(module, types.ModuleType) else None
            if file and os.path.dirname(os.path.abspath(file)) == os.path.dirname(path):
                del sys.modules[name]
    report.seconds = time.perf_counter() - t
    report.launches = session.launches
    report.output = tee.text()
    return report
