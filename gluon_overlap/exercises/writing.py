"""Exercises where the learner *writes* Gluon (notebooks 03-05), checked by compiling and running it.

An answer is a Python file (in the notebooks, a ``%%writefile my_....py`` cell) that defines one
``@gluon.jit`` function, aggregate or host function -- the *entry* of the exercise.  A checker

1. reads the file and refuses an answer that is not the learner's own work: the entry must be
   defined in the file, and the file may import from ``gluon_overlap`` only the helpers the
   exercise allows (never the function it asks for, nor a step kernel);
2. splices it into a *harness*: the source of the real kernel with the part the exercise asks
   for cut out (the answer's text comes first, so its line numbers are the file's own);
3. cross-compiles the result for ``sm_100a`` (:func:`gluon_overlap.compiler.compile.cross_compile`): a
   compiler error is reported in one line, with the answer's line it points at;
4. runs it on the CPU executor (:func:`gluon_overlap.interp.launch.launch`, through
   :func:`gluon_overlap.steps.measure.run_step`) for small problems under three interleavings,
   against the float64 reference: a hazard or deadlock is reported with its line.

Each check prints ``PASS`` / ``FAIL`` with a hint and returns a :class:`~.check.Verdict`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gluon_overlap.exercises.check import Verdict, verdict
from gluon_overlap.exercises.runs import INTERLEAVINGS, Case

ANSWERS = Path(__file__).parent / "answers"


# =====================================================================================
# Reading an answer
# =====================================================================================
class AnswerRefused(Exception):
    """The answer cannot be checked (missing, not Python, not the learner's work): the message says why."""


@dataclass(frozen=True)
class Answer:
    """A learner's file, loaded on its own (to check what it defines) and its text."""

    path: Path
    text: str
    module: Any

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def lines(self) -> int:
        return len(self.text.splitlines())


def read_text(answer: str | Path) -> tuple[Path, str]:
    """The path and text of an answer file (``answer`` is its path)."""
    if not isinstance(answer, (str, Path)):
        raise AnswerRefused(f"give the path of your answer file (e.g. 'my_k_loop.py'), got {type(answer).__name__}")
    path = Path(answer)
    if not path.is_file():
        raise AnswerRefused(f"there is no file {str(path)!r}: run the %%writefile cell first")
    return path, path.read_text()


def imported_library_names(text: str) -> list[tuple[int, str]]:
    """``(line, "module.name")`` of every name the file imports from ``gluon_overlap`` (a whole-module import
    counts as ``module.*``)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "gluon_overlap":
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.append((node.lineno, "a relative import (.*)"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"{alias.name}.*") for alias in node.names
                      if alias.name.split(".")[0] == "gluon_overlap"]
    return found


def load_answer(answer: str | Path, entry: str, allowed: frozenset[str]) -> Answer:
    """Read, vet and import an answer file; :class:`AnswerRefused` says what is wrong, in one line."""
    from gluon_overlap.exercises.kernels import load_module

    path, text = read_text(answer)
    try:
        compile(text, str(path), "exec")
    except SyntaxError as exc:
        raise AnswerRefused(f"{path.name} line {exc.lineno}: Python cannot read it ({exc.msg}): "
                            f"`{(exc.text or '').strip()}`") from None
    for line, name in imported_library_names(text):
        if name not in allowed:
            may = ", ".join(sorted(n.rsplit(".", 1)[1] for n in allowed)) or "nothing"
            raise AnswerRefused(f"{path.name} line {line} imports {name} from the library: write it yourself "
                                f"(this exercise may import only {may} from gluon_overlap)")
    stem = re.sub(r"\W", "_", path.stem) or "answer"
    if not stem[0].isalpha():
        stem = "a_" + stem
    try:
        module = load_module(text, stem)
    except Exception as exc:  # the learner's module may raise anything while importing
        raise AnswerRefused(f"{path.name} does not import: {type(exc).__name__}: {exc}") from None
    obj = getattr(module, entry, None)
    if obj is None:
        raise AnswerRefused(f"{path.name} defines no {entry!r}: keep the name of the skeleton")
    if defining_module(obj) != module.__name__:
        raise AnswerRefused(f"{path.name}: {entry} comes from {defining_module(obj)}, not from this file: "
                            "write it here")
    return Answer(path, text, module)


def defining_module(obj: Any) -> str:
    """The module an entry was defined in (a ``@gluon.jit`` function's Python function, an aggregate's class)."""
    fn = getattr(obj, "fn", obj)
    return getattr(fn, "__module__", "") or ""


# =====================================================================================
# Harnesses: the real kernel's source with one part cut out
# =====================================================================================
def module_text(module) -> str:
    """A module's source without its ``from __future__`` line (it can then follow an answer's text)."""
    from gluon_overlap.exercises.kernels import module_source

    return "\n".join(line for line in module_source(module).splitlines()
                     if not line.startswith("from __future__ import"))


def replace_section(text: str, title: str, new: str) -> str:
    """Replace the ``# ---- title ...`` section of a kernel (up to the next section comment or the end
    of the function) by ``new``."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip().startswith(f"# ---- {title}")]
    if len(starts) != 1:
        raise ValueError(f"the section {title!r} must occur once, found {len(starts)}")
    start = starts[0]
    end = start + 1
    while end < len(lines) and not lines[end].strip().startswith("# ---- ") and not (
            lines[end] and not lines[end][0].isspace()):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[:start] + new.splitlines() + lines[end:])


def remove_top_level(text: str, header: str) -> str:
    """Remove the top-level definition starting with ``header`` (``"class Counter"``), decorators included."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header)]
    if len(starts) != 1:
        raise ValueError(f"{header!r} must start one line, found {len(starts)}")
    start = starts[0]
    while start > 0 and lines[start - 1].startswith("@"):
        start -= 1
    end = starts[0] + 1
    while end < len(lines) and (not lines[end] or lines[end][0].isspace()):
        end += 1
    return "\n".join(lines[:start] + [f"# ({header} is the answer's, above)"] + lines[end:])


def splice(answer: Answer, harness: str) -> str:
    """The answer's text first (its line numbers stay the file's), then the harness."""
    return answer.text.rstrip("\n") + "\n\n\n# ======== the harness: the given kernel ========\n" + harness + "\n"


def load_spliced(answer: Answer, harness: str, kernel_name: str):
    """Import answer + harness as one module (file label: the answer's name); its ``kernel_name`` function."""
    from gluon_overlap.emulate.kernels import import_source

    stem = "spliced_" + (re.sub(r"\W", "_", answer.path.stem) or "answer")
    try:
        module = import_source(splice(answer, harness), stem, label=answer.name)
    except Exception as exc:
        raise AnswerRefused(f"your file and the kernel around it do not import together: "
                            f"{type(exc).__name__}: {exc}") from None
    return module, getattr(module, kernel_name)


# =====================================================================================
# Reporting lines in plain words
# =====================================================================================
def where(line: Any, answer: Answer) -> str:
    """``"my_k_loop.py line 12 `...`"`` for a line of the answer, ``"the given kernel (fn) `...`"`` otherwise."""
    if line is None:
        return "an unknown line"
    lineno, text = getattr(line, "lineno", None), getattr(line, "text", str(line)).strip()
    if lineno is not None and lineno <= answer.lines:
        return f"{answer.name} line {lineno} `{text}`"
    return f"the given kernel ({getattr(line, 'function', '?')}) `{text}`"


def _compilation_errors(exc: BaseException) -> list[BaseException]:
    from triton.compiler.errors import CompilationError

    chain, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, CompilationError):
            chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def compile_error_words(exc: BaseException, answer: Answer, spliced: str) -> str:
    """One line: where the compiler stopped (a line of the answer when it can be found) and why."""
    chain = _compilation_errors(exc)
    if not chain:
        first = str(exc).strip().splitlines()
        return f"{type(exc).__name__}: {first[-1] if first else ''}"
    inner = chain[-1]
    why = (inner.error_message or "").strip().splitlines()
    why_text = why[-1] if why else type(inner).__name__
    node_line = getattr(inner.node, "lineno", None)
    code = ""
    if inner.src and node_line:
        code = inner.src.split("\n")[node_line - 1].strip()
    place = "the given kernel"
    if code:
        hits = [i + 1 for i, line in enumerate(spliced.splitlines()) if line.strip() == code]
        mine = [h for h in hits if h <= answer.lines]
        if mine:
            place = f"{answer.name} line {mine[0]}"
    return f"{place} `{code}`: {why_text}" if code else f"{place}: {why_text}"


def _mlir_error(stderr: str, answer: Answer) -> str | None:
    """The first ``file:line:col: error: message`` the MLIR passes printed, with the line named for the reader."""
    m = re.search(r"^(\S+?):(\d+):(\d+): error: (.+)$", stderr, re.MULTILINE)
    if m is None:
        return None
    lineno, message = int(m.group(2)), m.group(4).strip()
    following = stderr[m.end():].lstrip("\n").splitlines()
    code = following[0].strip() if following else ""
    place = f"{answer.name} line {lineno}" if lineno <= answer.lines else "the given kernel"
    message = re.sub(r"'[\w.]+' op ", "", message)  # "'ttng.tc_gen5_mma_scaled' op mxf4nvf4 ..." -> "mxf4nvf4 ..."
    return f"{place} `{code}`: {message}" if code else f"{place}: {message}"


def cross_compile_answer(kernel, args: tuple, answer: Answer, spliced: str):
    """Compile for sm_100a; :class:`AnswerRefused` with the compiler's complaint in one line.  The MLIR passes
    print their errors on the process's stderr (file descriptor 2), so it is captured while compiling."""
    import os
    import sys
    import tempfile

    from gluon_overlap.compiler.compile import cross_compile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as capture:
        os.dup2(capture.fileno(), 2)
        try:
            return cross_compile(kernel, args, num_ctas=2)
        except Exception as exc:  # the compiler's errors: CompilationError, asserts, MLIR failures
            os.dup2(saved, 2)
            capture.seek(0)
            printed = capture.read().decode(errors="replace")
            words = _mlir_error(printed, answer) or compile_error_words(exc, answer, spliced)
            raise AnswerRefused("the compiler for sm_100a refused it: " + words) from None
        finally:
            os.dup2(saved, 2)
            os.close(saved)


class KernelStopped(AnswerRefused):
    """The executor could not run the answer at all (it raised): the compiler may say why more plainly."""


def run_and_compile(kernel, compile_args: tuple, answer: Answer, spliced: str, cases: tuple[Case, ...], hint: str,
                    extra: Callable[[Any, Case], str | None] | None = None) -> tuple[bool, str, Any]:
    """Run on the executor first (fast: a wrong answer is reported without waiting for the compiler); when it
    could not run, or when it ran clean, cross-compile for sm_100a.  ``(passed, message, compiled or None)``."""
    try:
        ok, summary = run_cases(kernel, cases, answer, hint, extra)
    except KernelStopped:
        cross_compile_answer(kernel, compile_args, answer, spliced)  # the compiler's words, if it refuses too
        raise
    if not ok:
        return False, summary, None
    return True, summary, cross_compile_answer(kernel, compile_args, answer, spliced)


def run_cases(kernel, cases: tuple[Case, ...], answer: Answer, hint: str,
              extra: Callable[[Any, Case], str | None] | None = None, descriptors=None) -> tuple[bool, str]:
    """Run every case under every interleaving: ``(True, summary)`` or ``(False, what went wrong)``."""
    from gluon_overlap.steps.measure import make_problem, run_step

    runs = 0
    for case in cases:
        problem = make_problem(case.m, case.n, case.k, case.a_format, case.b_format)
        for seed, bias in INTERLEAVINGS:
            try:
                result = run_step(kernel, problem, overlap=case.overlap, num_clusters=case.num_clusters, seed=seed,
                                  completion_bias=bias, descriptors=descriptors)
            except Exception as exc:  # an answer may not even trace on the executor
                raise KernelStopped(f"{case.label}: the executor refused it: {type(exc).__name__}: {exc}") from None
            runs += 1
            at = f"{case.label}, interleaving {seed}"
            run = result.run
            if run.error:
                raise KernelStopped(f"{at}: the kernel stopped: {_answer_lines(run.error, answer)}")
            if run.deadlock is not None:
                text, line = blocked_wait(run, answer)
                return False, (f"{at}: deadlock, nobody can go on ({text}" +
                               (f"; at {where(line, answer)}" if line is not None else "") + f"). Hint: {hint}")
            if run.step_limit_hit:
                return False, f"{at}: the kernel never ends (the executor stopped it). Hint: {hint}"
            if run.hazards:
                h = run.hazards[0]
                return False, (f"{at}: {len(run.hazards)} hazard(s); the first, {h.kind}, at {where(h.line, answer)}:"
                               f" {h.detail}. Hint: {hint}")
            wrong = result.wrong_tiles()
            if wrong:
                nan = bool(result.c.isnan().any())
                return False, (f"{at}: C is wrong in tile(s) {wrong}" + (" (left unwritten: NaN)" if nan else "") +
                               f", though no hazard was seen. Hint: {hint}")
            if extra is not None:
                problem_text = extra(result, case)
                if problem_text:
                    return False, f"{at}: {problem_text}"
    return True, f"{runs} executor runs ({len(cases)} problems x {len(INTERLEAVINGS)} interleavings)"


def blocked_wait(run, answer: Answer) -> tuple[str, Any]:
    """A deadlock in words: the blocked process to name (one waiting at a line of the answer, if any) and the line
    of its wait (the last wait it issued: a blocked wait is in the trace, never completed)."""
    rows = [b for b in run.deadlock.blocked if isinstance(b, dict)] or [{}]
    lines = []
    for b in rows:
        waits = [op for op in run.trace if op.kind == "wait" and op.proc is not None
                 and str(op.proc) == f"Process({b.get('process')})"]
        lines.append(waits[-1].line if waits else None)
    pick = next((i for i, ln in enumerate(lines) if getattr(ln, "lineno", answer.lines + 1) <= answer.lines), 0)
    b = rows[pick]
    text = (f"{b.get('process')} waits on {b.get('barrier')} for parity {b.get('phase')}, "
            f"{b.get('completed')} phase(s) completed" if b.get("barrier") else str(run.deadlock).strip())
    return text, lines[pick]


def _answer_lines(message: str, answer: Answer) -> str:
    """Rename ``file:line`` mentions of the spliced module so that lines past the answer read as the kernel's."""
    def rename(m: re.Match) -> str:
        return m.group(0) if int(m.group(1)) <= answer.lines else "the given kernel"
    return re.sub(re.escape(answer.name) + r":(\d+)", rename, message)


# =====================================================================================
# The exercises
# =====================================================================================
@dataclass(frozen=True)
class WritingExercise:
    """One writing exercise: what it asks, the name the answer defines, what it may import, how it is checked."""

    notebook: str
    name: str
    asks: str
    entry: str
    solution_file: str
    allowed: frozenset[str] = field(default_factory=frozenset)
    runner: Callable[[Answer], tuple[bool, str]] | None = None

    @property
    def title(self) -> str:
        return f"{self.notebook} {self.name}"

    def solution_path(self) -> Path:
        return ANSWERS / self.solution_file

    def solution_text(self) -> str:
        return self.solution_path().read_text()

    def check(self, answer: str | Path, *, quiet: bool = False) -> Verdict:
        """Check the answer file at ``answer``: PASS when it compiles and every run is clean and right."""
        try:
            loaded = load_answer(answer, self.entry, self.allowed)
            passed, message = self.runner(loaded)
        except AnswerRefused as exc:
            return verdict(self.title, False, str(exc), quiet=quiet)
        return verdict(self.title, passed, message, quiet=quiet)


def _kernel_lib(*names: str) -> frozenset[str]:
    return frozenset(f"gluon_overlap.kernel.{n}" for n in names)


# --- notebook 03: the single-buffered kernel -------------------------------------------------
SB_CASES = (Case(256, 256, 512, "nvfp4", "nvfp4"), Case(256, 512, 256, "mxfp8", "mxfp4"))

K_LOOP_CALL = """    # ---- the K loop (the answer's k_loop) ----
    k_loop(a_desc, b_desc, a_scale_desc, b_scale_desc, a_smem, b_smem, a_scale_smem, b_scale_smem,
           a_scale, b_scale, acc_tmem, a_scale_tmem, b_scale_tmem, load_bar, mma_bar, off_m, off_n, K, TMEM_PLAN)
"""
EPILOGUE_CALL = """    # ---- the epilogue (the answer's epilogue) ----
    epilogue(acc_tmem, c_desc, c_smem, off_m, off_n, TMEM_PLAN)
"""


def _single_buffered_harness(title: str, call: str) -> str:
    from gluon_overlap.steps import single_buffered

    return replace_section(module_text(single_buffered), title, call)


def _check_single_buffered_part(answer: Answer, title: str, call: str, hint: str) -> tuple[bool, str]:
    from gluon_overlap.steps import host

    harness = _single_buffered_harness(title, call)
    module, kernel = load_spliced(answer, harness, "single_buffered_kernel")
    ok, summary, compiled = run_and_compile(kernel, host.meta_args("nvfp4", "nvfp4"), answer,
                                            splice(answer, harness), SB_CASES, hint)
    if not ok:
        return False, summary
    return True, f"compiles for sm_100a ({compiled.ptx_counts['tcgen05.mma']} tcgen05.mma in the PTX); {summary}: " \
                  "no hazard, no deadlock, C matches the float64 reference."


def _run_k_loop(answer: Answer) -> tuple[bool, str]:
    return _check_single_buffered_part(
        answer, "the K loop", K_LOOP_CALL,
        "per K step: expect(load_bar, stage_bytes) and the four async_loads, wait(load_bar, phase), the two "
        "tcgen05_copy, tcgen05_mma_scaled(..., use_acc=use_acc, multicast=True, mbarriers=[mma_bar]), "
        "wait(mma_bar, phase), then flip phase and set use_acc")


def _run_epilogue(answer: Answer) -> tuple[bool, str]:
    return _check_single_buffered_part(
        answer, "the epilogue", EPILOGUE_CALL,
        "for each of the plan's num_subtiles steps: load the subtile at drain_column(TMEM_PLAN, 0, step) from TMEM, "
        "store_wait(0) before overwriting c_smem, store it as float16, fence_async_shared(), async_store at "
        "[off_m, off_n + column]; store_wait(0) at the end")


# --- notebook 03: the host side -----------------------------------------------------------
DESCRIPTOR_NAMES = ("a_desc", "b_desc", "c_desc", "a_scale_desc", "b_scale_desc")
LAYOUT_FIELDS = ("swizzle_byte_width", "element_bitwidth", "rank", "transposed", "fp4_padded", "cga_layout")


def _layout_fields(layout) -> dict[str, Any]:
    return {f: (tuple(tuple(x) for x in getattr(layout, f)) if f == "cga_layout" else getattr(layout, f, None))
            for f in LAYOUT_FIELDS}


def descriptor_difference(got, want, name: str) -> str | None:
    """What differs between two TMA descriptors, in words (None: nothing)."""
    if type(got).__name__ != "TensorDescriptor":
        return f"{name} is a {type(got).__name__}, not a TensorDescriptor (TensorDescriptor.from_tensor makes one)"
    for attr, why in (("block_shape", "the box one TMA load moves, for the *pair* (the CGA layout splits it)"),
                      ("shape", "the tensor the descriptor covers (the scales as (1, REP_MN, REP_K, 2, 256))"),
                      ("strides", "the tensor's strides")):
        g, w = list(getattr(got, attr)), list(getattr(want, attr))
        if g != w:
            return f"{name}.{attr} is {g}, the kernel needs {w} ({why})"
    if type(got.layout).__name__ != type(want.layout).__name__:
        return f"{name}'s layout is a {type(got.layout).__name__}, the kernel needs an NVMMASharedLayout"
    g, w = _layout_fields(got.layout), _layout_fields(want.layout)
    for f in LAYOUT_FIELDS:
        if g[f] != w[f]:
            hints = {"swizzle_byte_width": "operands: get_default_for picks the widest swizzle the row allows; "
                                           "scales: 0, the packed chunks are moved as they are",
                     "fp4_padded": "only an fp4 operand next to an fp8 one is padded (one element a byte)",
                     "cga_layout": "[[1, 0]] splits the first dimension over the pair; the A scales split their "
                                   "chunk dimension ([[0, 1, 0, 0, 0]]), the B scales are whole in both CTAs "
                                   "([[0, 0, 0, 0, 0]])"}
            return f"{name}'s layout has {f}={g[f]!r}, the kernel needs {w[f]!r}" + (
                f" ({hints[f]})" if f in hints else "")
    return None


def _run_descriptors(answer: Answer) -> tuple[bool, str]:
    from gluon_overlap import kernel
    from gluon_overlap.compiler.compile import cross_compile, meta_operands
    from gluon_overlap.steps import single_buffered
    from gluon_overlap.tmem import SEED_FORMAT_PAIRS, make_plan

    mine = answer.module.make_descriptors
    for a, b in SEED_FORMAT_PAIRS:
        plan = make_plan(a, b)
        operands = meta_operands(a, b, 1024)
        try:
            got = mine(*operands, plan)
        except Exception as exc:
            return False, f"{a} x {b}: your make_descriptors raised {type(exc).__name__}: {exc}"
        want = kernel.make_descriptors(*operands, plan)  # the reference: the production kernel's host side
        if not isinstance(got, (tuple, list)) or len(got) != 5:
            return False, f"{a} x {b}: return the five descriptors {DESCRIPTOR_NAMES}, got {type(got).__name__}"
        for name, g, w in zip(DESCRIPTOR_NAMES, got, want, strict=True):
            diff = descriptor_difference(g, w, name)
            if diff:
                return False, f"{a} x {b}: {diff}."
    try:
        ok, summary = run_cases(single_buffered.single_buffered_kernel, SB_CASES, answer,
                                "the descriptors must cover the tensors you were given, unchanged", descriptors=mine)
    except KernelStopped as stopped:
        return False, str(stopped)
    if not ok:
        return False, summary
    plan = make_plan("mxfp8", "mxfp4")
    args = (*mine(*meta_operands("mxfp8", "mxfp4", 1024), plan), 1024, 1024, 1024, plan)
    try:
        compiled = cross_compile(single_buffered.single_buffered_kernel, args, num_ctas=2)
    except Exception as exc:  # the compiler's errors
        return False, "the single-buffered kernel does not compile with your descriptors: " + \
            compile_error_words(exc, answer, answer.text)
    return True, (f"the five descriptors match the kernel's for all four format pairs; the kernel compiles with "
                  f"them ({compiled.shared_bytes} bytes of shared memory for mxfp8 x mxfp4); {summary}: clean and "
                  "right.")


# --- notebook 04: the overlap's release and wait ------------------------------------------------
OVERLAP_CASES = (Case(256, 768, 256, "nvfp4", "nvfp4", overlap=True, num_clusters=1),
                 Case(256, 768, 512, "mxfp8", "mxfp8", overlap=True, num_clusters=1))
RELEASE_BLOCK = ("            if k == 0:\n"
                 "                if i > 0:\n")
RELEASE_END = "                mbarrier.wait(overlap_bar, (i + 1) % 2)\n"
RELEASE_CALL = ("            if k == 0:\n"
                "                # (the answer's release_head)\n"
                "                release_head(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, i, overlap_bar, "
                "TMEM_PLAN, HEAD)\n")


def _overlap_harness() -> str:
    from gluon_overlap.steps import overlap

    text = module_text(overlap) + "\n"
    start = text.index(RELEASE_BLOCK)
    end = text.index(RELEASE_END, start) + len(RELEASE_END)
    return text[:start] + RELEASE_CALL + text[end:]


def release_order(run, head: int, subtiles: int, cluster: int = 0) -> dict[int, list[int]]:
    """Per CTA of ``cluster``: how many TMEM loads it had issued when it arrived on the ``overlap`` barrier,
    for each arrival in order (an executor run's trace)."""
    counts: dict[int, list[int]] = {}
    loads: dict[int, int] = {}
    for op in run.trace:
        if op.proc is None or op.proc.cluster != cluster:
            continue
        if op.kind == "tmem_load":
            loads[op.cta] = loads.get(op.cta, 0) + 1
        elif op.kind == "arrive" and getattr(op.bar, "label", "").startswith("overlap"):
            counts.setdefault(op.cta, []).append(loads.get(op.cta, 0))
    return counts


def overlap_is_early(result, case: Case) -> str | None:
    """None when each CTA releases every tile but the last right after its head (the plan's
    ``early_release_subtile``), and drains each subtile once; else what is wrong."""
    from gluon_overlap.tmem import make_plan

    plan = make_plan(case.a_format, case.b_format, overlap=True)
    head, n = plan.early_release_subtile + 1, plan.num_subtiles
    tiles = result.tiles_of(0)
    for cta, arrivals in sorted(release_order(result.run, head, n).items()):
        want = [t * n + head for t in range(tiles - 1)]
        if arrivals != want:
            if arrivals and arrivals[0] >= n:
                return (f"CTA {cta} released the shared columns only after draining {arrivals[0]} subtiles: C is "
                        f"right, but that is no overlap -- the release comes after the head ({head} subtiles: "
                        "steps 0 ... early_release_subtile)")
            return (f"CTA {cta} arrived on overlap after {arrivals} TMEM loads; the overlap needs one arrival per "
                    f"tile but the last, right after each tile's head: {want}")
    total = sum(1 for op in result.run.trace if op.kind == "tmem_load" and op.proc is not None
                and op.proc.cluster == 0)
    if total != 2 * tiles * n:
        return f"the CTAs issued {total} TMEM loads for {tiles} tiles of {n} subtiles each: drain each subtile once"
    return None


def _run_release(answer: Answer) -> tuple[bool, str]:
    from gluon_overlap.steps import host

    harness = _overlap_harness()
    module, kernel = load_spliced(answer, harness, "overlap_kernel")
    ok, summary, compiled = run_and_compile(
        kernel, host.meta_args("nvfp4", "nvfp4", overlap=True), answer, splice(answer, harness), OVERLAP_CASES,
        "for i > 0 drain the head of tile i - 1 (drain_steps ... 0, HEAD), then arrive on overlap_bar once; every "
        "tile then waits for completion i of the pair barrier: parity (i + 1) % 2", overlap_is_early)
    if not ok:
        return False, summary
    return True, (f"compiles for sm_100a ({compiled.ptx_counts['mbarrier.arrive']} mbarrier.arrive in the PTX); "
                  f"{summary}: clean, right, and each CTA releases every tile right after its head.")


# --- notebook 05: the warp-specialized kernel ---------------------------------------------------
WS_CASES = (Case(256, 768, 1536, "nvfp4", "nvfp4", overlap=True, num_clusters=1),
            Case(512, 512, 768, "mxfp8", "mxfp8", overlap=True, num_clusters=2))


def _kernel_harness(header: str) -> str:
    from gluon_overlap import kernel

    return remove_top_level(module_text(kernel), header)


def _production_meta_args():
    from gluon_overlap import kernel
    from gluon_overlap.compiler.compile import meta_operands
    from gluon_overlap.tmem import make_plan

    plan = make_plan("nvfp4", "nvfp4", overlap=True)
    return kernel.kernel_args(*meta_operands("nvfp4", "nvfp4", 1024), plan, 1024, 1024, 1024)


def _check_production_part(answer: Answer, header: str, hint: str) -> tuple[bool, str]:
    harness = _kernel_harness(header)
    module, kernel = load_spliced(answer, harness, "mma_scaled_warp_specialized_kernel")
    ok, summary, compiled = run_and_compile(kernel, _production_meta_args(), answer, splice(answer, harness),
                                            WS_CASES, hint)
    if not ok:
        return False, summary
    return True, (f"the warp-specialized kernel with your part compiles for sm_100a "
                  f"({compiled.ptx_counts['mbarrier.wait']} mbarrier waits in the PTX); {summary}: no hazard, no "
                  "deadlock, C right.")


def counter_walk_reference(num_barriers: int, start_phase: int, uses: int) -> list[tuple[int, int]]:
    """``(index, phase)`` of uses ``0 ... uses - 1`` of a ring, from the rule (not from the kernel's Counter)."""
    return [(j % num_barriers, start_phase ^ ((j // num_barriers) & 1)) for j in range(uses)]


def _run_counter(answer: Answer) -> tuple[bool, str]:
    from gluon_overlap.interp.launch import call

    mine = answer.module.Counter
    for n, start in ((5, 1), (5, 0), (2, 1), (2, 0), (1, 0)):
        try:
            counter = call(mine.create, start, n)
            walk = []
            for _ in range(12):
                walk.append((int(counter.index), int(counter.phase)))
                counter = call(mine.next, counter)
        except Exception as exc:
            return False, f"running your Counter on the CPU raised {type(exc).__name__}: {exc}"
        want = counter_walk_reference(n, start, 12)
        if walk != want:
            j = next(j for j, (g, w) in enumerate(zip(walk, want, strict=True)) if g != w)
            return False, (f"a ring of {n} barriers starting at phase {start}: use {j} should be barrier {want[j][0]}, "
                           f"parity {want[j][1]}; yours gives {walk[j]}. Hint: the index wraps to 0 after "
                           "num_barriers uses, and each wrap flips the parity")
    return _check_production_part(answer, "class Counter",
                                  "next() advances the index by one and flips the phase when it wraps")


def _run_load_partition(answer: Answer) -> tuple[bool, str]:
    return _check_production_part(
        answer, "def load_partition",
        "a producer: its Counter starts at phase 1; per K step wait load_empty[s] (the MMA freed the stage), "
        "expect the stage's bytes on load_ready[s], issue the four loads into stage s, then advance the Counter")


def writing_exercises() -> tuple[WritingExercise, ...]:
    """The six writing exercises of notebooks 03-05 (notebook 06 has the find-the-bug on the real kernel)."""
    return (
        WritingExercise("03", "K loop", "write the K loop of the single-buffered kernel: expect + four TMA loads, "
                        "wait, two tcgen05_copy + tcgen05_mma_scaled with a commit, wait", "k_loop", "k_loop.py",
                        _kernel_lib("element_kind"), _run_k_loop),
        WritingExercise("03", "epilogue", "write the epilogue: per subtile TMEM load -> float16 -> SMEM store -> "
                        "fence -> TMA store, with store_wait", "epilogue", "epilogue.py",
                        _kernel_lib("drain_column"), _run_epilogue),
        WritingExercise("03", "descriptors", "write the host side: the five TMA descriptors with their shared "
                        "layouts and CGA layouts", "make_descriptors", "descriptors.py",
                        frozenset({"gluon_overlap.tmem.BLOCK_M", "gluon_overlap.tmem.BLOCK_N"}), _run_descriptors),
        WritingExercise("04", "release", "write the overlap hand-over: drain the previous tile's head, arrive on "
                        "the pair-scoped overlap barrier, wait for its completion i", "release_head",
                        "overlap_release.py", frozenset({"gluon_overlap.steps.overlap.drain_steps"}), _run_release),
        WritingExercise("05", "Counter", "write Counter.next: the ring's index and the parity flip on wrap-around",
                        "Counter", "counter.py", frozenset(), _run_counter),
        WritingExercise("05", "load partition", "write the load worker's loop: wait load_empty, expect, four TMA "
                        "loads, advance the Counter", "load_partition", "load_partition.py",
                        _kernel_lib("Counter"), _run_load_partition),
    )


def exercise(title: str) -> WritingExercise:
    """The writing exercise called ``title`` (e.g. ``"03 K loop"``)."""
    found = {e.title: e for e in writing_exercises()}
    if title not in found:
        raise ValueError(f"title={title!r} is not a writing exercise; there are {sorted(found)}")
    return found[title]


def check(title: str, answer: str | Path, *, quiet: bool = False) -> Verdict:
    """Check the answer file ``answer`` of the writing exercise ``title``."""
    return exercise(title).check(answer, quiet=quiet)
