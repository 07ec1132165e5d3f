"""Cross-compiling the Gluon kernel for ``sm_100a`` on any machine -- no GPU needed.

``triton.compile`` accepts a :class:`~triton.experimental.gluon.GluonASTSource` and an
explicit target (``GPUTarget("cuda", 100, 32)``), so the kernel goes all the way to an
``sm_100a`` cubin without a CUDA driver.  The TMA descriptors it is traced with are built
by the *same* :func:`gluon_overlap.kernel.kernel_args` the launch wrapper uses, over
``device="meta"`` tensors (shapes and dtypes only, no memory).

What the artifacts show (:class:`CompileStats`): shared memory, TMEM columns, warps,
CTAs per cluster, registers, counts of ``tcgen05`` / ``mbarrier`` instructions in the PTX,
the MMA kind, and -- read back from the TTGIR -- the TMEM column offsets, the epilogue's
drain orders and the subtile after which the overlap barrier is released.  The tests and
notebook 05 compare those with the :class:`~gluon_overlap.tmem.TmemPlan`.

Compiling is slow cold (2-6 s a variant on a laptop-class CPU, LLVM dominates) and fast
warm: Triton's on-disk cache (``TRITON_CACHE_DIR``) is reused, and results are also
cached in-process, keyed on the variant.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from gluon_overlap import formats, kernel
from gluon_overlap.compiler.artifacts import (
    TmemEvidence,
    mma_kind,
    ptx_counts,
    ptx_lines,
    sass_counts,
    sass_lines,
    strip_ptx_comments,
    tmem_alloc_columns,
    ttgir_barrier_names,
    ttgir_tmem_evidence,
)
from gluon_overlap.limits import check_pair, check_smem
from gluon_overlap.tmem import FORMAT_ELEMENT_KIND, SEED_FORMAT_PAIRS, TmemPlan, check_format, make_plan

if TYPE_CHECKING:
    import torch

#: a ``@gluon.jit`` function (Triton's ``JITFunction``: Triton ships no type information)
GluonFunction: TypeAlias = Any

__all__ = [  # the artifact readers come along, so a notebook's ``gc.ptx_lines(...)`` reads like its compile
    "NUM_CTAS",
    "TARGET_ARCH",
    "VARIANTS",
    "CompileStats",
    "CompiledVariant",
    "CrossCompiled",
    "Variant",
    "compare_stats",
    "compile_all",
    "compile_variant",
    "cross_compile",
    "expected_mma_kind",
    "gluon_source",
    "kernel_source",
    "meta_operands",
    "plan_offsets",
    "ptx_counts",
    "ptx_lines",
    "sass_counts",
    "sass_lines",
    "source_for",
    "strip_ptx_comments",
    "tmem_alloc_columns",
    "ttgir_barrier_names",
    "write_artifacts",
]

#: compute capability and warp size of the target; the kernel needs 2-CTA clusters
TARGET_ARCH = 100
NUM_CTAS = 2
#: problem size the (meta) descriptors are made with; the compiled code does not depend on it
TRACE_SIZE = 8192


@dataclass(frozen=True, order=True)
class Variant:
    """One compiled configuration: a format pair, overlap on/off and BLOCK_K (``None``: the seed's).

    Refused (``ValueError``) unless the kernel supports the pair (:func:`gluon_overlap.limits.check_pair`)
    and the plan's shared memory fits one CTA (:func:`gluon_overlap.limits.check_smem`).
    """

    a_format: str
    b_format: str
    overlap: bool
    block_k: int | None = None

    def __post_init__(self) -> None:

        check_format(self.a_format, "a_format")
        check_format(self.b_format, "b_format")
        if not isinstance(self.overlap, bool):
            raise ValueError(f"overlap={self.overlap!r} must be True or False")
        plan = make_plan(self.a_format, self.b_format, block_k=self.block_k, overlap=self.overlap)
        check_pair(self.a_format, self.b_format)
        check_smem(plan)
        object.__setattr__(self, "block_k", plan.block_k)

    @property
    def default_block_k(self) -> bool:
        return self.block_k == make_plan(self.a_format, self.b_format).block_k

    @property
    def label(self) -> str:
        bk = "" if self.default_block_k else f", BLOCK_K={self.block_k}"
        return f"{self.a_format} x {self.b_format}, overlap {'on' if self.overlap else 'off'}{bk}"

    @property
    def slug(self) -> str:
        """File-name friendly label, e.g. ``nvfp4-nvfp4-on`` (``-bk128`` appended for a non-default BLOCK_K)."""
        bk = "" if self.default_block_k else f"-bk{self.block_k}"
        return f"{self.a_format}-{self.b_format}-{'on' if self.overlap else 'off'}{bk}"

    def plan(self) -> TmemPlan:
        return make_plan(self.a_format, self.b_format, block_k=self.block_k, overlap=self.overlap)


#: the seed's eight variants: four format pairs x overlap off / on
VARIANTS = tuple(Variant(a, b, ov) for a, b in SEED_FORMAT_PAIRS for ov in (False, True))


def expected_mma_kind(a_format: str, b_format: str) -> str:
    """The PTX ``tcgen05.mma`` kind the hardware needs for a format pair.

    Any fp8 operand -> ``mxf8f6f4`` (32-element scale blocks); nvfp4 -> ``mxf4nvf4`` with
    16-element blocks; mxfp4 x mxfp4 -> ``mxf4`` with 32-element blocks.
    """
    kinds = {
        FORMAT_ELEMENT_KIND[check_format(a_format, "a_format")],
        FORMAT_ELEMENT_KIND[check_format(b_format, "b_format")],
    }
    if "e4m3" in kinds:
        return "mxf8f6f4.block_scale.block32"
    if "nvfp4" in (a_format, b_format):
        return "mxf4nvf4.block_scale.block16"
    return "mxf4.block_scale.block32"


# =====================================================================================
# Statistics read from the artifacts
# =====================================================================================
def cuobjdump_path() -> Path:
    """The ``cuobjdump`` Triton ships (works offline on an ``sm_100a`` cubin)."""
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("triton is not installed")
    return Path(spec.submodule_search_locations[0]) / "backends" / "nvidia" / "bin" / "cuobjdump"


def _cuobjdump(cubin: bytes, flag: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        out = subprocess.run([str(cuobjdump_path()), flag, str(path)], capture_output=True, text=True, check=True)
    return out.stdout


def resource_usage(cubin: bytes) -> dict[str, int]:
    """``cuobjdump -res-usage``: registers per thread (``REG``), static shared memory, stack, ..."""
    text = _cuobjdump(cubin, "-res-usage")
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", text)
    if not m:
        raise ValueError(f"unexpected cuobjdump -res-usage output: {text!r}")
    return {
        "registers": int(m.group(1)),
        "stack": int(m.group(2)),
        "static_shared": int(m.group(3)),
        "local": int(m.group(4)),
    }


def sass_text(cubin: bytes) -> str:
    """The SASS of the cubin (``cuobjdump -sass``)."""
    return _cuobjdump(cubin, "-sass")


@dataclass(frozen=True)
class CompileStats:
    """The statistics of one compiled variant (``to_dict`` gives the CLI's JSON)."""

    a_format: str
    b_format: str
    overlap: bool
    shared_bytes: int  # dynamic shared memory per CTA (Triton's metadata.shared)
    tmem_cols: int  # TMEM columns allocated per CTA (metadata.tmem_size)
    num_warps: int  # warps per CTA (4 default + the workers, rounded to a warp group)
    num_ctas: int  # CTAs per cluster
    registers: int  # registers per thread at launch (cuobjdump -res-usage)
    ptx_counts: dict = field(default_factory=dict)
    mma_kind: str = ""
    tmem_offsets: dict = field(default_factory=dict)
    plan_offsets: dict = field(default_factory=dict)
    drain_order_even: list = field(default_factory=list)
    drain_order_odd: list = field(default_factory=list)
    early_release_subtile: int | None = None
    release_barriers: list = field(default_factory=list)  # barrier each epilogue release arrives on, in order
    plan: dict = field(default_factory=dict)  # the TmemPlan the kernel was compiled with

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CompiledVariant:
    """The artifacts of one variant plus their statistics."""

    variant: Variant
    plan: TmemPlan
    ttgir: str
    ptx: str
    cubin: bytes
    stats: CompileStats
    evidence: TmemEvidence
    compile_seconds: float  # wall time of triton.compile in this process (a cache hit is fast)

    @property
    def sass(self) -> str:
        return _sass_cached(self.cubin)


@functools.lru_cache(maxsize=16)
def _sass_cached(cubin: bytes) -> str:
    return sass_text(cubin)


# =====================================================================================
# Compiling
# =====================================================================================
def gluon_source(variant: Variant, size: int = TRACE_SIZE) -> Any:
    """The ``GluonASTSource`` of a variant: signature and constexprs of the real launch."""
    from triton.experimental.gluon import GluonASTSource

    plan = variant.plan()
    a, b, a_s, b_s, c = formats.meta_operands(variant.a_format, variant.b_format, size, size, size)
    args = kernel.kernel_args(a, b, a_s, b_s, c, plan, size, size, size)
    fn = kernel.mma_scaled_warp_specialized_kernel
    signature: dict[str, str] = {}
    constexprs: dict[tuple[int, ...], Any] = {}
    for index, (param, value) in enumerate(zip(fn.params, args, strict=True)):
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[(index,)] = value
        elif hasattr(value, "__mangle__"):
            signature[param.name] = value.__mangle__()
        else:
            signature[param.name] = "i32"
    return GluonASTSource(fn, signature, constexprs)


def plan_offsets(plan: TmemPlan) -> dict[str, list[int]]:
    """The TMEM column offsets ``plan`` prescribes, as :meth:`TmemEvidence.offsets` reads them from the TTGIR."""
    return {
        "accumulators": sorted({plan.left.offset, plan.right.offset}),
        "a_scale": [plan.a_scale.offset],
        "b_scale": [plan.b_scale.offset],
    }


def _compile_uncached(variant: Variant) -> CompiledVariant:
    import triton
    from triton.backends.compiler import GPUTarget

    from gluon_overlap.interrupts import deferred

    src = gluon_source(variant)
    start = time.perf_counter()
    with deferred():  # Triton's C++ passes call back into Python: a Ctrl-C raised there would abort the process
        ck = triton.compile(src, target=GPUTarget("cuda", TARGET_ARCH, 32), options={"num_ctas": NUM_CTAS})
    seconds = time.perf_counter() - start
    plan = variant.plan()
    ttgir, ptx, cubin = ck.asm["ttgir"], ck.asm["ptx"], ck.asm["cubin"]
    evidence = ttgir_tmem_evidence(ttgir, plan.epilogue_block_n)
    md = ck.metadata
    stats = CompileStats(
        a_format=variant.a_format,
        b_format=variant.b_format,
        overlap=variant.overlap,
        shared_bytes=int(md.shared),
        tmem_cols=int(md.tmem_size),
        num_warps=int(md.num_warps),
        num_ctas=int(md.num_ctas),
        registers=resource_usage(cubin)["registers"],
        ptx_counts=ptx_counts(ptx),
        mma_kind=mma_kind(ptx),
        tmem_offsets=evidence.offsets(),
        plan_offsets=plan_offsets(plan),
        drain_order_even=list(evidence.drain_order_even),
        drain_order_odd=list(evidence.drain_order_odd),
        early_release_subtile=evidence.early_release_subtile,
        release_barriers=list(evidence.arrive_barriers),
        plan=plan.to_dict(),
    )
    return CompiledVariant(variant, plan, ttgir, ptx, cubin, stats, evidence, seconds)


_compiled: dict[Variant, CompiledVariant] = {}  # the in-process cache, keyed on the variant


def compile_variant(a_format: str, b_format: str, overlap: bool = True, block_k: int | None = None) -> CompiledVariant:
    """Cross-compile one variant for ``sm_100a`` (cached in-process and in ``TRITON_CACHE_DIR``)."""
    variant = Variant(a_format, b_format, bool(overlap), block_k)
    if variant not in _compiled:
        _compiled[variant] = _compile_uncached(variant)
    return _compiled[variant]


ProgressCallback = Callable[[int, int, Variant, float, bool], None]


def print_progress(done: int, total: int, variant: Variant, seconds: float, reused: bool) -> None:
    """Default progress line: ``[3/8] mxfp4 x mxfp4, overlap off  2.3 s``."""
    how = "already compiled in this process" if reused else f"{seconds:.1f} s"
    print(f"[{done}/{total}] {variant.label:32s} {how}", flush=True)


def compile_all(
    variants: Iterable[Variant] = VARIANTS, progress: ProgressCallback | None = print_progress
) -> list[CompiledVariant]:
    """Compile several variants, reporting each one through ``progress`` as it finishes."""
    variants = list(variants)
    results = []
    for done, variant in enumerate(variants, start=1):
        reused = variant in _compiled
        start = time.perf_counter()
        result = compile_variant(variant.a_format, variant.b_format, variant.overlap, variant.block_k)
        if progress is not None:
            progress(done, len(variants), variant, time.perf_counter() - start, reused)
        results.append(result)
    return results


def clear_cache() -> None:
    """Forget the in-process results (Triton's on-disk cache is left alone)."""
    _compiled.clear()
    _sass_cached.cache_clear()


def kernel_source(fn: GluonFunction, docstring: bool = False) -> str:
    """Source of one of the kernel's Gluon functions, dedented, without its docstring unless asked."""
    import ast
    import inspect
    import textwrap

    src = textwrap.dedent(inspect.getsource(fn.fn if hasattr(fn, "fn") else fn))  # a JITFunction's Python function
    node = ast.parse(src).body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        raise ValueError(f"{getattr(fn, '__name__', fn)!r} is not a function or a class")
    if not docstring and ast.get_docstring(node) is not None:
        doc = node.body[0]
        lines = src.splitlines(keepends=True)
        del lines[doc.lineno - 1 : doc.end_lineno]
        src = "".join(lines)
    return src


def write_artifacts(compiled: CompiledVariant, folder: str | os.PathLike) -> list[Path]:
    """Write ``<slug>.ttgir / .ptx / .cubin / .sass / .json`` into ``folder``; return the paths."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    slug = compiled.variant.slug
    files = {
        f"{slug}.ttgir": compiled.ttgir,
        f"{slug}.ptx": compiled.ptx,
        f"{slug}.sass": compiled.sass,
        f"{slug}.json": json.dumps(compiled.stats.to_dict(), indent=2) + "\n",
    }
    paths = []
    for name, text in files.items():
        (out / name).write_text(text)
        paths.append(out / name)
    (out / f"{slug}.cubin").write_bytes(compiled.cubin)
    paths.append(out / f"{slug}.cubin")
    return sorted(paths)


def compare_stats(off: CompileStats, on: CompileStats) -> dict[str, tuple]:
    """Every statistic that differs between two variants: ``{name: (off value, on value)}``."""
    diff: dict[str, tuple] = {}
    a, b = off.to_dict(), on.to_dict()
    for key in a:
        if key == "ptx_counts":
            for name in a[key]:
                if a[key][name] != b[key][name]:
                    diff[name] = (a[key][name], b[key][name])
        elif a[key] != b[key]:
            diff[key] = (a[key], b[key])
    return diff


# =====================================================================================
# Any @gluon.jit kernel (the step kernels of notebooks 03-04, a learner's edit, ...)
# =====================================================================================
def meta_operands(a_format: str, b_format: str, size: int = TRACE_SIZE) -> tuple[torch.Tensor, ...]:
    """``(a_data, b_data, a_scale_swizzled, b_scale_swizzled, c)`` of a ``size``-cubed problem on
    ``device="meta"`` (shapes and dtypes only): what descriptors for cross-compiling are built over."""
    check_format(a_format, "a_format")
    check_format(b_format, "b_format")
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0 or size % 256:
        raise ValueError(f"size={size!r} must be a positive multiple of 256")
    return formats.meta_operands(a_format, b_format, size, size, size)


def source_for(fn: GluonFunction, args: tuple) -> Any:
    """The ``GluonASTSource`` of ``fn`` launched as ``fn[grid](*args)``: descriptors and ints become
    the signature, the ``gl.constexpr`` parameters are bound to their values."""
    from triton.experimental.gluon import GluonASTSource

    params = getattr(fn, "params", None)
    if params is None:
        raise ValueError(f"fn must be a @gluon.jit function, got {type(fn).__name__}")
    if len(args) != len(params):
        raise ValueError(
            f"{fn.__name__} takes {len(params)} arguments ({', '.join(p.name for p in params)}), got {len(args)}"
        )
    signature: dict[str, str] = {}
    constexprs: dict[tuple[int, ...], Any] = {}
    for index, (param, value) in enumerate(zip(params, args, strict=True)):
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[(index,)] = value
        elif hasattr(value, "__mangle__"):
            signature[param.name] = value.__mangle__()
        elif hasattr(value, "data_ptr") and hasattr(value, "dtype"):  # a tensor: a pointer argument
            from triton.runtime.jit import mangle_type

            signature[param.name] = mangle_type(value)
        elif isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(
                f"argument {param.name}={value!r}: only tensor descriptors, tensors, ints and "
                "constexpr parameters can be cross-compiled"
            )
        else:
            signature[param.name] = "i32"
    return GluonASTSource(fn, signature, constexprs)


@dataclass(frozen=True)
class CrossCompiled:
    """The ``sm_100a`` artifacts of one kernel and what they show."""

    name: str
    ttgir: str
    ptx: str
    cubin: bytes
    shared_bytes: int  # dynamic shared memory per CTA
    tmem_cols: int  # TMEM columns allocated per CTA
    num_warps: int
    num_ctas: int
    registers: int  # registers per thread (cuobjdump -res-usage)
    ptx_counts: dict
    mma_kind: str  # kind::... of the block-scaled tcgen05.mma ("" when there is none)
    compile_seconds: float  # wall time of triton.compile here (an on-disk cache hit is fast)

    @property
    def sass(self) -> str:
        return _sass_cached(self.cubin)

    def summary(self) -> dict:
        """The numbers, without the artifacts (JSON-ready)."""
        return {
            "name": self.name,
            "shared_bytes": self.shared_bytes,
            "tmem_cols": self.tmem_cols,
            "num_warps": self.num_warps,
            "num_ctas": self.num_ctas,
            "registers": self.registers,
            "ptx_counts": dict(self.ptx_counts),
            "mma_kind": self.mma_kind,
        }


def cross_compile(fn: GluonFunction, args: tuple, *, num_ctas: int = NUM_CTAS, num_warps: int = 4) -> CrossCompiled:
    """Compile any ``@gluon.jit`` kernel for ``sm_100a`` on this machine (no GPU needed).

    ``args`` are the launch's positional arguments: TMA descriptors (e.g. built over
    :func:`meta_operands` by ``kernel.make_descriptors``), ints and constexpr values.
    """
    import triton
    from triton.backends.compiler import GPUTarget

    for name, value, low in (("num_ctas", num_ctas, 1), ("num_warps", num_warps, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low or value & (value - 1):
            raise ValueError(f"{name}={value!r} must be a positive power of two")
    src = source_for(fn, tuple(args))
    start = time.perf_counter()
    ck = triton.compile(
        src, target=GPUTarget("cuda", TARGET_ARCH, 32), options={"num_ctas": num_ctas, "num_warps": num_warps}
    )
    seconds = time.perf_counter() - start
    ptx, md = ck.asm["ptx"], ck.metadata
    kinds = set(re.findall(r"\btcgen05\.mma\.[\w.:]*?kind::([\w.]+)", strip_ptx_comments(ptx)))
    return CrossCompiled(
        fn.__name__,
        ck.asm["ttgir"],
        ptx,
        ck.asm["cubin"],
        int(md.shared),
        int(md.tmem_size),
        int(md.num_warps),
        int(md.num_ctas),
        resource_usage(ck.asm["cubin"])["registers"],
        ptx_counts(ptx),
        ",".join(sorted(kinds)),
        seconds,
    )
