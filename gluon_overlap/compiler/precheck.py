"""Refuse, before it runs, a kernel that Triton's compiler (or the ``sm_100a`` launch) would refuse.

The executor interprets a kernel's Python; the GPU runs what Triton 3.9 compiles.  A learner's edit
that the compiler rejects (an epilogue partition with one warp, a ``tcgen05_copy`` between mismatched
CGA layouts) or that no Blackwell SM can hold (shared memory over 232,448 bytes per CTA, more than
512 TMEM columns) must not read "OK" on the laptop.  :func:`precheck` asks the compiler itself: it
traces the exact kernel with the launch's arguments and constexprs through Triton's real Gluon
frontend (``GluonASTSource.make_ir``), the ``gluon_to_ttgir`` pipeline of the NVIDIA backend for
``sm_100a`` and the backend's warp-group, shared-memory and tensor-memory allocation passes --
and, for the one op whose lowering (``ConvertTritonGPUToLLVM``) is known to refuse what the verifiers
accept -- a ``tcgen05_copy`` from a shared layout with no ``tcgen05.cp`` form -- a lowering of a probe
module holding just that copy.  It skips lowering the whole kernel (about 20x the cost), LLVM and
``ptxas``, where a full compile spends its time.  It then compares the allocated sizes with the
hardware limits, as Triton's launcher does for shared memory.

A refusal carries the compiler's reason and the kernel line it names: the innermost frontend error
location (``CompilationError``), the location of an MLIR diagnostic (a verifier error such as
``'ttng.tmem_copy' op The source and destination must have the same cga layout``), or the largest
allocation for a size limit.  Results are cached in-process on the source's hash (the kernel's
source with every function it calls, the signature and the constexprs) and the launch options, and
on disk between processes (:mod:`gluon_overlap.compiler.verdicts`, keyed by the same and the toolchain).

Checks the compiler does *not* make are not invented here: Triton 3.9 accepts ``worker_num_regs``
outside the ``setmaxnreg`` range (24..256, multiples of 8) without complaint, so the precheck does too.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from gluon_overlap.compiler import verdicts as verdict_cache
from gluon_overlap.compiler.verdicts import PrecheckResult, Refusal
from gluon_overlap.limits import SMEM_PER_CTA_LIMIT
from gluon_overlap.text import SourceLine, exception_text
from gluon_overlap.tmem import TMEM_COLS

__all__ = [
    "REFUSAL_PREFIX",
    "CompilerRefusal",
    "PrecheckResult",
    "Refusal",
    "clear_cache",
    "failure_text",
    "kernel_line_of",
    "precheck",
    "precheck_error",
    "refusal_error",
]

#: how a refused run's ``error`` starts (``ExecutionResult.error``, ``EmulationResult.failure``)
REFUSAL_PREFIX = "CompilerRefusal: "

#: compute capability of the target (``sm_100a``) and the PTX version the allocation pass is told
TARGET_CAPABILITY = 100
PTX_VERSION = 88
#: what a verdict compares with besides the kernel (part of its key in the disk cache, ``twin.verdict_cache``)
_LIMITS = (TARGET_CAPABILITY, PTX_VERSION, SMEM_PER_CTA_LIMIT, TMEM_COLS)


class CompilerRefusal(Exception):
    """The compiler (or the launch) would refuse the kernel; the message names the reason and the line."""


_cache: dict[str, PrecheckResult] = {}
#: id(jit function) -> (the function, the refusal of its references): it has no source hash to key on
_reference_refusals: dict[int, tuple[Any, PrecheckResult]] = {}


def clear_cache() -> None:
    """Forget every cached result."""
    _cache.clear()
    _reference_refusals.clear()


# =====================================================================================
# the entry point
# =====================================================================================
#: one compile at a time: the compiler's diagnostics are read from this process's stderr (a file descriptor
#: every thread shares), and the caches below are shared; launches in threads wait here for each other
_compiler_lock = threading.RLock()


def precheck(kernel: Any, args: Sequence[Any], *, num_ctas: int, num_warps: int) -> PrecheckResult:
    """Ask Triton 3.9's frontend and ``sm_100a`` backend (up to memory allocation) about ``kernel``
    launched as ``kernel[grid](*args, num_ctas=num_ctas, num_warps=num_warps)``."""
    with _compiler_lock:
        return _precheck(kernel, args, num_ctas=num_ctas, num_warps=num_warps)


def _precheck(kernel: Any, args: Sequence[Any], *, num_ctas: int, num_warps: int) -> PrecheckResult:
    fn = kernel if hasattr(kernel, "params") else getattr(kernel, "fn", kernel)
    if not hasattr(fn, "params"):
        return PrecheckResult([], skipped=f"{type(kernel).__name__} is not a @gluon.jit function")
    try:
        src = _source(fn, tuple(args))
    except _CannotType as exc:
        return PrecheckResult([], skipped=str(exc))
    refused = _reference_refusals.get(id(fn))
    if refused is not None and refused[0] is fn:  # Triton hashes a kernel once: its refusal stays
        return refused[1]
    try:
        key = f"{src.hash()}|{num_ctas}|{num_warps}"
    except RuntimeError as exc:  # the launcher's dependency check refuses what the kernel refers to
        result = PrecheckResult([_reference_refusal(fn, exc)])
        _reference_refusals[id(fn)] = (fn, result)
        return result
    hit = _cache.get(key)
    if hit is not None:
        return PrecheckResult(hit.refusals, hit.shared_bytes, hit.tmem_cols, 0.0, True, hit.skipped, hit.notes)
    disk_key = verdict_cache.verdict_key(key, "|".join(sorted(_kernel_files(fn))), _LIMITS)
    kept = verdict_cache.load(disk_key)
    if kept is None:
        start = time.perf_counter()
        kept = _ask_compiler(fn, src, num_ctas, num_warps)
        kept.seconds = time.perf_counter() - start
        verdict_cache.store(disk_key, kept)
    _cache[key] = kept
    return kept


def refusal_error(kernel: Any, args: Sequence[Any], *, num_ctas: int, num_warps: int) -> str | None:
    """The run's error text when the compiler refuses the launch (``CompilerRefusal: ...``), else None."""
    verdict = precheck(kernel, args, num_ctas=num_ctas, num_warps=num_warps)
    return None if verdict.ok else REFUSAL_PREFIX + verdict.message()


def precheck_error(kernel: Any, args: Sequence[Any], *, num_ctas: int, num_warps: int) -> str | None:
    """:func:`refusal_error`, or the kernel's own exit while the compiler ran it.

    The frontend runs the kernel's plain Python -- constexpr functions, and helpers a jit function calls --
    at compile time.  One that calls ``sys.exit`` / ``exit`` (or ``os._exit``, which the guarded child of
    :mod:`gluon_overlap.commands.guarded` turns into ``SystemExit``) would end the launch on a GPU
    machine too; here it is the run's error, ``SystemExit: ...`` with the kernel line that exited (nothing
    ran).  Other exceptions are the frontend's to report (a ``CompilationError``: a refusal)."""
    try:
        return refusal_error(kernel, args, num_ctas=num_ctas, num_warps=num_warps)
    except SystemExit as exc:
        return failure_text(exc, _kernel_files(kernel))


def _kernel_files(kernel: Any) -> set[str]:
    fn = kernel if hasattr(kernel, "params") else getattr(kernel, "fn", kernel)
    code = getattr(getattr(fn, "fn", fn), "__code__", None)
    return {code.co_filename} if code is not None else set()


def failure_text(exc: BaseException, files: set[str]) -> str:
    """``"Type: message"`` of ``exc`` with ``" (at LINE)"``, its innermost line in one of ``files``, if any."""
    line = kernel_line_of(exc, files)
    return exception_text(exc) + (f" (at {line})" if line is not None else "")


def kernel_line_of(exc: BaseException, files: set[str]) -> Any:
    """The innermost line of ``exc``'s traceback in one of ``files`` (a ``SourceLine``), or None."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename in files:
            line = _source_line(code.co_filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return line


class _CannotType(Exception):
    pass


def _source(fn: Any, args: tuple) -> Any:
    """The ``GluonASTSource`` of the launch: constexpr parameters bound, the rest typed as Triton's
    launcher types them (descriptors by their ``__mangle__``, tensors as pointers, ints, floats)."""
    from triton.experimental.gluon import GluonASTSource
    from triton.runtime.jit import mangle_type

    if len(args) != len(fn.params):
        raise _CannotType(f"{len(args)} arguments for {len(fn.params)} parameters")
    signature, constexprs = {}, {}
    for index, (param, value) in enumerate(zip(fn.params, args, strict=True)):
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[(index,)] = value
        elif hasattr(value, "__mangle__"):
            signature[param.name] = value.__mangle__()
        elif value is None:
            signature[param.name] = "constexpr"
            constexprs[(index,)] = None
        else:
            try:
                signature[param.name] = mangle_type(value)
            except Exception as exc:  # an argument the launcher has no type for: let the run decide
                raise _CannotType(f"argument {param.name}: {type(value).__name__} has no Triton type ({exc})") from None
    return GluonASTSource(fn, signature, constexprs)


def _ask_compiler(fn: Any, src: Any, num_ctas: int, num_warps: int) -> PrecheckResult:
    from triton._C.libtriton import ir, nvidia, passes
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.compiler.errors import CompilationError

    target = GPUTarget("cuda", TARGET_CAPABILITY, 32)
    backend = make_backend(target)
    try:
        options = backend.parse_options({"num_ctas": num_ctas, "num_warps": num_warps})
    except (AssertionError, ValueError) as exc:
        return PrecheckResult([Refusal("launch options", str(exc))])
    with _captured_stderr() as diagnostics:
        try:
            context = ir.context()
            ir.load_dialects(context)
            backend.load_dialects(context)
            codegen = backend.get_codegen_implementation(options)
            module = src.make_ir(target, options, codegen, backend.get_module_map(), context)
            module = backend.gluon_to_ttgir(module, {}, options, TARGET_CAPABILITY)
            pm = ir.pass_manager(module.context)
            pm.enable_debug()
            passes.ttgpuir.add_allocate_warp_groups(pm, False)
            passes.convert.add_scf_to_cf(pm)
            passes.gluon.add_inliner(pm)
            nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, TARGET_CAPABILITY, PTX_VERSION)
            nvidia.passes.ttnvgpuir.add_allocate_tensor_memory(pm)
            pm.run(module, "precheck_allocation")
            shared = module.get_int_attr("ttg.shared") or 0
            tmem = module.get_int_attr("ttg.tensor_memory_size") or 0
            text = str(module)
        except CompilationError as exc:
            return PrecheckResult([_frontend_refusal(fn, exc)])
        except RuntimeError as exc:  # an MLIR verifier / pass failure: its diagnostic names the location
            return PrecheckResult([_diagnostic_refusal(diagnostics(), str(exc))])
    refusals = _tmem_copy_refusals(text)
    if shared > SMEM_PER_CTA_LIMIT:
        line, what = _largest_allocation(text, "ttg.local_alloc")
        refusals.append(
            Refusal(
                "shared memory",
                f"out of resource: shared memory, Required: {shared}, Hardware limit: "
                f"{SMEM_PER_CTA_LIMIT} (Triton's launcher refuses it; the largest buffer is {what})",
                line,
            )
        )
    if tmem > TMEM_COLS:
        line, what = _largest_allocation(text, "ttng.tmem_alloc")
        refusals.append(
            Refusal(
                "tensor memory",
                f"{tmem} TMEM columns allocated, the SM has {TMEM_COLS} "
                f"(tcgen05.alloc cannot succeed; the largest allocation is {what})",
                line,
            )
        )
    return PrecheckResult(refusals, shared, tmem)


_TMEM_COPY = re.compile(
    r"^\s*ttng\.tmem_copy [^:]*: (?P<src>!ttg\.memdesc<[^>]*>), (?P<dst>!ttg\.memdesc<[^>]*>)"
    r".*loc\((?P<loc>#loc\d+)\)\s*$",
    re.MULTILINE,
)
_LOC = re.compile(r'^(?P<name>#loc\d+) = loc\("(?P<file>[^"]+)":(?P<line>\d+):\d+\)', re.MULTILINE)


def _tmem_copy_refusals(text: str) -> list[Refusal]:
    """Lower each distinct ``ttng.tmem_copy`` (shared layout -> TMEM layout) of the TTGIR ``text`` the way
    ``ConvertTritonGPUToLLVM`` does, in a probe module of its own: the lowering refuses copies the
    verifiers accept (``failed to find valid tcgen05.copy layout`` for a shared layout with no
    ``tcgen05.cp`` form).  Lowering the whole kernel would find the same refusal at about 20x the cost
    (8.7 s against 0.45 s for ``kernel.py`` at 2 CTAs); the probe holds only the two allocations and the
    copy, under the kernel's own module attributes and layout aliases."""
    copies: dict[tuple[str, str], str] = {}  # (source type, destination type) -> the first copy's location
    for m in _TMEM_COPY.finditer(text):
        copies.setdefault((m.group("src"), m.group("dst")), m.group("loc"))
    if not copies:
        return []
    header = [line for line in text.splitlines() if line.startswith("#") and not line.startswith("#loc")]
    module_line = next(line for line in text.splitlines() if line.startswith("module attributes"))
    locations = {m.group("name"): (m.group("file"), int(m.group("line"))) for m in _LOC.finditer(text)}
    refusals = []
    for (src_type, dst_type), loc in copies.items():
        reason = _probe_tmem_copy(header, module_line, src_type, dst_type)
        if reason is not None:
            where = locations.get(loc)
            refusals.append(Refusal("lowering", reason, _source_line(*where) if where else None))
    return refusals


def _probe_tmem_copy(header: list[str], module_line: str, src_type: str, dst_type: str) -> str | None:
    """The lowering's refusal of one ``tmem_copy`` from ``src_type`` to ``dst_type``, or None."""
    from triton._C.libtriton import ir, nvidia

    body = "\n".join(
        [
            *header,
            module_line,
            "  tt.func public @tmem_copy_probe() {",
            f"    %src = ttg.local_alloc : () -> {src_type}",
            f"    %dst = ttng.tmem_alloc : () -> {dst_type}",
            f"    ttng.tmem_copy %src, %dst : {src_type}, {dst_type}",
            "    tt.return",
            "  }",
            "}",
            "",
        ]
    )
    with tempfile.TemporaryDirectory() as tmp, _captured_stderr() as diagnostics:
        path = os.path.join(tmp, "probe.ttgir")
        with open(path, "w") as f:
            f.write(body)
        context = ir.context()
        ir.load_dialects(context)
        nvidia.load_dialects(context)
        try:
            probe = ir.parse_mlir_module(path, context)
            pm = ir.pass_manager(context)
            pm.enable_debug()
            nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, TARGET_CAPABILITY, PTX_VERSION)
            nvidia.passes.ttnvgpuir.add_allocate_tensor_memory(pm)
            nvidia.passes.ttgpuir.add_to_llvmir(pm, TARGET_CAPABILITY, PTX_VERSION)
            pm.run(probe, "precheck_tmem_copy")
        except RuntimeError as exc:
            words = re.search(r"error: (.*)", diagnostics())
            return " ".join((words.group(1) if words else str(exc)).split())[:300]
    return None


# =====================================================================================
# mapping the compiler's errors to kernel lines
# =====================================================================================
@contextlib.contextmanager
def _captured_stderr() -> Iterator[Any]:
    """Capture file descriptor 2 (MLIR prints its diagnostics there, not into the exception)."""
    captured = {"text": ""}
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield lambda: captured["text"] or _read(tmp)
        finally:
            captured["text"] = _read(tmp)
            os.dup2(saved, 2)
            os.close(saved)


def _read(tmp: Any) -> str:
    tmp.flush()
    tmp.seek(0)
    return tmp.read().decode(errors="replace")


def _source_line(file: str, lineno: int, function: str = "") -> Any:
    text = linecache.getline(file, lineno).strip()
    return SourceLine(file, lineno, function, text)


_DIAGNOSTIC = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$", re.MULTILINE)


def _diagnostic_refusal(diagnostics: str, fallback: str) -> Refusal:
    """The first ``file:line:col: error: message`` MLIR printed (with the message's continuation lines
    folded into one line), or the exception's own text."""
    match = _DIAGNOSTIC.search(diagnostics)
    if match is None:
        return Refusal("verifier", fallback.strip().splitlines()[-1] if fallback.strip() else "pass failed")
    # The first line is the reason; MLIR continues long messages (whole layouts) on the next lines,
    # which a one-line report leaves out (a clause ending in ':' announces them).
    reason = " ".join(match.group("msg").split())
    reason = re.sub(r"\s*[^.:]*:$", "", reason) or reason
    if len(reason) > 300:
        reason = reason[:300] + " ..."
    return Refusal("verifier", reason, _source_line(match.group("file"), int(match.group("line"))))


def _frontend_refusal(fn: Any, exc: Exception) -> Refusal:
    """The innermost ``CompilationError`` of the chain (the kernel line the frontend stopped at) and
    the innermost reason (the exception that started it)."""
    from triton.compiler.errors import CompilationError

    innermost, reason = exc, None
    seen = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, CompilationError) and getattr(cur.node, "lineno", None) is not None:
            innermost = cur
            if cur.error_message:
                reason = cur.error_message
        elif not isinstance(cur, CompilationError):
            reason = f"{cur}" or type(cur).__name__
        cur = cur.__cause__ or cur.__context__
    reason = " ".join((reason or "the frontend stopped here").split())
    return Refusal("frontend", reason, _frontend_line(fn, innermost))


def _frontend_line(fn: Any, err: Any) -> Any:
    """File line of a ``CompilationError``: its ``node.lineno`` counts from the ``def`` line of the
    jit function whose source it carries."""
    lineno = getattr(err.node, "lineno", None)
    if lineno is None or err.src is None:
        return None
    for jit in _jit_functions(fn):
        if getattr(jit, "src", None) == err.src:
            return _source_line(jit.fn.__code__.co_filename, jit.def_file_line_number + lineno - 1)
    return None


def _jit_functions(fn: Any) -> Iterator[Any]:
    """Every jit function the kernel's module defines (top level and inside aggregates), kernel first."""
    yield fn
    for value in list(fn.fn.__globals__.values()):
        if hasattr(value, "src") and hasattr(value, "def_file_line_number"):
            yield value
        elif isinstance(value, type):
            for member in vars(value).values():
                if hasattr(member, "src") and hasattr(member, "def_file_line_number"):
                    yield member


_REFERENCED = re.compile(r"Unsupported function referenced: <function (?P<name>[\w.<>]+) at ")


def _reference_refusal(fn: Any, exc: RuntimeError) -> Refusal:
    """Triton's launcher hashes a kernel with every function it refers to and refuses a reference to a
    plain Python function (``Unsupported function referenced``) or a global that changed between
    compilations; the line is the first jit-function line that names the function."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    match = _REFERENCED.search(reason)
    line = None
    if match is not None:
        name = match.group("name").rsplit(".", 1)[-1]
        reason = (
            f"Unsupported function referenced: {name} (a plain Python function; a @gluon.jit function can "
            "call @gluon.jit and @gluon.constexpr_function functions)"
        )
        line = _name_line(fn, name)
    return Refusal("frontend", reason, line)


def _name_line(fn: Any, name: str) -> Any:
    """The first line of the kernel's jit functions (kernel first) that uses the name ``name``."""
    import ast

    for jit in _jit_functions(fn):
        try:
            tree = ast.parse(jit.src)
        except (SyntaxError, TypeError, ValueError):
            continue
        uses = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == name]
        if uses:
            return _source_line(jit.fn.__code__.co_filename, jit.def_file_line_number + min(uses) - 1)
    return None


_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)$", re.MULTILINE)
_FILE_LOC = re.compile(r'"([^"]+)":(\d+):(\d+)')
_ELEMENT_BITS = {"i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def _largest_allocation(text: str, op: str) -> tuple[Any, str]:
    """The kernel line and a description of the biggest ``op`` allocation in the printed module."""
    locs = dict(_LOC_DEF.findall(text))

    def file_loc(ref: str, depth: int = 0) -> tuple[str, int] | None:
        body = locs.get(ref, "")
        m = _FILE_LOC.search(body)
        if m is not None:
            return m.group(1), int(m.group(2))
        for inner in re.findall(r"#loc\d*", body):
            if depth < 8 and inner != ref:
                found = file_loc(inner, depth + 1)
                if found is not None:
                    return found
        return None

    best = (-1, None, "")
    for m in re.finditer(rf"(%[\w.]+) = {re.escape(op)}.*?memdesc<([\dx]+)x(\w+),.*?loc\((#loc\d*)\)", text):
        name, dims, elem, ref = m.groups()
        size = 1
        for d in dims.split("x"):
            size *= int(d)
        bits = _ELEMENT_BITS.get(elem, 8 if elem.startswith("f8") else 32)
        amount = size * bits // 8 if op == "ttg.local_alloc" else int(dims.split("x")[-1])
        if amount > best[0]:
            where = file_loc(ref)
            line = _source_line(*where) if where is not None else None
            unit = "bytes" if op == "ttg.local_alloc" else "columns"
            best = (amount, line, f"{name[1:]} ({dims}x{elem}, {amount} {unit})")
    return best[1], best[2] or "unknown"
