"""Exercises where the learner *writes* Gluon (notebooks 03a-05b), checked by running and compiling it.

An answer is a Python file (in the notebooks, a ``%%writefile my_....py`` cell) that defines the function(s) the
exercise asks for.  A checker

1. reads the file and refuses an answer that is not the learner's own work (:mod:`.guard`): it may import Gluon
   and, from ``gluon_overlap``, only the helpers the exercise allows; nothing that reaches other code by name or
   by text; and the functions that run must be the file's own;
2. splices it into a *harness*: the source of the real kernel with the part the exercise asks for cut out (the
   answer's text comes first, so its line numbers are the file's own);
3. runs it on the CPU executor over a problem set drawn from a seeded generator (:mod:`.problems`: all four
   format pairs, M >= 512, odd K steps, several tiles, ragged edges, four interleavings), against the float64
   reference: a compiler refusal, a hazard, a deadlock or a wrong C is reported with the answer's line
   (:mod:`.kernel_checks`);
4. cross-compiles the result for ``sm_100a`` (:func:`gluon_overlap.compiler.compile.cross_compile`).

Each check prints ``PASS`` / ``FAIL`` in one line -- what went wrong and where, never the recipe -- and returns a
:class:`~.check.Verdict`.  Hints, in three tiers, are :func:`gluon_overlap.exercises.hints.hint`; the solutions
(``answers/``) are printed only by :func:`solution` (on request).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import gluon_overlap.exercises.guard as guard
import gluon_overlap.exercises.kernel_checks as K
from gluon_overlap.exercises.answer_files import (  # noqa: F401  (re-exported: the notebooks' and tests' names)
    ANSWERS,
    Answer,
    AnswerRefused,
    Spliced,
    load_answer,
    load_spliced,
    module_text,
    remove_top_level,
    replace_section,
    splice,
    where,
)
from gluon_overlap.exercises.check import Verdict, verdict
from gluon_overlap.exercises.compile_words import compile_error_words, cross_compile_answer  # noqa: F401
from gluon_overlap.exercises.hints import hint  # noqa: F401  (ex.hint in the notebooks)
from gluon_overlap.exercises.problems import DEFAULT_SEED, Run, kernel_runs

if TYPE_CHECKING:
    from gluon_overlap.exercises.runs import Case
    from gluon_overlap.interp.launch import ExecutionResult

KernelStopped = K.KernelStopped


# =====================================================================================
# The exercises
# =====================================================================================
@dataclass(frozen=True)
class WritingExercise:
    """One writing exercise: what it asks, the names the answer defines, what it may import, how it is checked."""

    notebook: str
    name: str
    asks: str
    entry: str | tuple[str, ...]
    solution_file: str
    allowed: frozenset[str] = field(default_factory=frozenset)
    runner: Callable[..., tuple[bool, str]] | None = None
    forbidden: frozenset[str] = field(default_factory=frozenset)  # names of the harness that hold the answer

    @property
    def title(self) -> str:
        return f"{self.notebook} {self.name}"

    def solution_path(self) -> Path:
        return ANSWERS / self.solution_file

    def solution_text(self) -> str:
        return self.solution_path().read_text()

    def check(
        self, answer: str | Path, *, quiet: bool = False, seed: int = DEFAULT_SEED, progress: bool = False
    ) -> Verdict:
        """Check the answer file at ``answer``: PASS when every run is clean and right and it compiles."""
        if self.runner is None:
            raise ValueError(f"the exercise {self.title!r} has no checker")
        try:
            loaded = load_answer(answer, self.entry, self.allowed, self.forbidden)
            passed, message = self.runner(loaded, seed=seed, progress=progress and not quiet)
        except AnswerRefused as exc:
            return verdict(self.title, False, str(exc), quiet=quiet)
        return verdict(self.title, passed, message, quiet=quiet)


def _kernel_lib(*names: str) -> frozenset[str]:
    return frozenset(f"gluon_overlap.kernel.{n}" for n in names)


def harness_library_codes(harness: str, extra: frozenset[str] = frozenset()) -> frozenset:
    """The code objects of the library helpers a harness imports (and of the ``extra`` names the exercise lets
    the answer import): the only library code the spliced kernel may run."""
    import ast
    import importlib

    objects = []
    names = set(extra)
    for node in ast.walk(ast.parse(harness)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gluon_overlap"):
            names |= {f"{node.module}.{a.name}" for a in node.names}
    for full in names:
        module, name = full.rsplit(".", 1)
        obj = getattr(importlib.import_module(module), name, None)
        if obj is not None:
            objects.append(obj)
    return guard.allowed_library_codes(objects)


def _check_kernel_part(
    answer: Answer,
    *,
    title: str,
    harness: str,
    kernel_name: str,
    runs: tuple[Run, ...],
    args_of: Callable[[Any], Callable],
    compile_args: Callable[[Any], tuple],
    allowed: frozenset,
    reference_file: str,
    entry: str | tuple[str, ...],
    extra: Callable[[K.Ran], str | None] | None = None,
    progress: bool = False,
    summary: Callable[[Any], str] | None = None,
) -> tuple[bool, str]:
    """Splice, run over ``runs``, cross-compile: ``(passed, message)``."""
    spliced = load_spliced(answer, harness, kernel_name)

    def reference() -> Spliced:
        return _reference(reference_file, entry, harness, kernel_name)

    outcome = K.check_runs(
        spliced,
        runs,
        args_of(spliced.module),
        title=title,
        allowed=harness_library_codes(harness, allowed),
        reference=reference,
        extra=extra,
    )
    if not outcome.passed:
        return False, outcome.message
    compiled = cross_compile_answer(spliced.kernel, compile_args(spliced.module), answer, spliced.text)
    facts = (
        summary(compiled)
        if summary is not None
        else (f"{compiled.ptx_counts.get('tcgen05.mma', 0)} tcgen05.mma in the PTX")
    )
    return (
        True,
        f"compiles for sm_100a ({facts}); {outcome.message}: no hazard, no deadlock, C matches the float64 reference.",
    )


@functools.lru_cache(maxsize=16)
def _reference(solution_file: str, entry: str | tuple[str, ...], harness: str, kernel_name: str) -> Spliced:
    """A solution spliced into a harness: what a wrong C is compared with."""
    answer = load_answer(ANSWERS / solution_file, entry, frozenset(_ALL_ALLOWED))
    return load_spliced(answer, harness, kernel_name)


#: every library name any writing exercise's solution imports (for loading the references)
_ALL_ALLOWED = {
    "gluon_overlap.kernel.element_kind",
    "gluon_overlap.kernel.drain_column",
    "gluon_overlap.kernel.Counter",
    "gluon_overlap.steps.overlap.drain_steps",
}


def _step_args(
    production: bool = False, overlap: bool = False, descriptors: Callable[..., tuple] | None = None
) -> Callable[[Any], Callable[[Any, Any], tuple]]:
    """``args_of(module) -> args_of(problem, c)`` for a step kernel (or the production kernel)."""
    from gluon_overlap.steps import host
    from gluon_overlap.tmem import make_plan

    def for_module(module: Any) -> Callable[[Any, Any], tuple]:
        def args_of(problem: Any, c: Any) -> tuple:
            plan = make_plan(problem.a.format, problem.b.format, overlap=overlap)
            operands = (
                problem.a.data,
                problem.b.data,
                problem.a_scale_swizzled,
                problem.b_scale_swizzled,
                c,
                plan,
                problem.m,
                problem.n,
                problem.k,
            )
            if production:
                return module.kernel_args(*operands)
            return host.step_args(*operands, descriptors=descriptors)

        return args_of

    return for_module


# --- notebook 03a: the single-buffered kernel ------------------------------------------------
K_LOOP_CALL = """    # ---- the K loop (the answer's k_loop) ----
    k_loop(a_desc, b_desc, a_scale_desc, b_scale_desc, a_smem, b_smem, a_scale_smem, b_scale_smem,
           a_scale, b_scale, acc_tmem, a_scale_tmem, b_scale_tmem, load_bar, mma_bar, off_m, off_n, K, TMEM_PLAN)
"""
EPILOGUE_CALL = """    # ---- the epilogue (the answer's epilogue) ----
    epilogue(acc_tmem, c_desc, c_smem, off_m, off_n, TMEM_PLAN)
"""


@functools.cache
def _single_buffered_harness(title: str, call: str) -> str:
    from gluon_overlap.steps import single_buffered

    return replace_section(module_text(single_buffered), title, call)


def single_buffered_runs(seed: int = DEFAULT_SEED) -> tuple[Run, ...]:
    """One cluster per tile (step 1 is not persistent): four to nine tiles, offsets up to 512, odd K steps."""
    return kernel_runs("single-buffered", seed, persistent=False, holdback=False)


def _step_compile_args(a: str = "nvfp4", b: str = "nvfp4", overlap: bool = False) -> Callable[[Any], tuple]:
    from gluon_overlap.steps import host

    return lambda module: host.meta_args(a, b, overlap=overlap)


def _run_k_loop(answer: Answer, *, seed: int = DEFAULT_SEED, progress: bool = False) -> tuple[bool, str]:
    return _check_kernel_part(
        answer,
        title="03a K loop",
        harness=_single_buffered_harness("the K loop", K_LOOP_CALL),
        kernel_name="single_buffered_kernel",
        runs=single_buffered_runs(seed),
        args_of=_step_args(),
        compile_args=_step_compile_args(),
        allowed=_kernel_lib("element_kind"),
        reference_file="k_loop.py",
        entry="k_loop",
    )


def _run_epilogue(answer: Answer, *, seed: int = DEFAULT_SEED, progress: bool = False) -> tuple[bool, str]:
    return _check_kernel_part(
        answer,
        title="03a epilogue",
        harness=_single_buffered_harness("the epilogue", EPILOGUE_CALL),
        kernel_name="single_buffered_kernel",
        runs=single_buffered_runs(seed),
        args_of=_step_args(),
        compile_args=_step_compile_args(),
        allowed=_kernel_lib("drain_column"),
        reference_file="epilogue.py",
        entry="epilogue",
    )


# --- notebook 03b: the host side -----------------------------------------------------------
DESCRIPTOR_NAMES = ("a_desc", "b_desc", "c_desc", "a_scale_desc", "b_scale_desc")
LAYOUT_FIELDS = ("swizzle_byte_width", "element_bitwidth", "rank", "transposed", "fp4_padded", "cga_layout")


def _layout_fields(layout: Any) -> dict[str, Any]:
    return {
        f: (tuple(tuple(x) for x in getattr(layout, f)) if f == "cga_layout" else getattr(layout, f, None))
        for f in LAYOUT_FIELDS
    }


def descriptor_difference(got: Any, want: Any, name: str) -> str | None:
    """What differs between two TMA descriptors, in words (None: nothing) -- what is wrong, not how to build it."""
    if type(got).__name__ != "TensorDescriptor":
        return f"{name} is a {type(got).__name__}, not a TensorDescriptor"
    for attr in ("block_shape", "shape", "strides"):
        g, w = list(getattr(got, attr)), list(getattr(want, attr))
        if len(g) != len(w):
            return f"{name}.{attr} is {g}: {len(g)} dimensions, not the kernel's {len(w)}"
        bad = [d for d, (x, y) in enumerate(zip(g, w, strict=True)) if x != y]
        if bad:
            how = ", ".join(f"{d} ({'too large' if g[d] > w[d] else 'too small'})" for d in bad)
            return f"{name}.{attr} is {g}: not what the kernel needs in dimension(s) {how}"
    if type(got.layout).__name__ != type(want.layout).__name__:
        return f"{name}'s layout is a {type(got.layout).__name__}, the kernel needs a {type(want.layout).__name__}"
    got_fields, want_fields = _layout_fields(got.layout), _layout_fields(want.layout)
    for f in LAYOUT_FIELDS:
        if got_fields[f] != want_fields[f]:
            return f"{name}'s layout has {f}={got_fields[f]!r}, which is not what the kernel needs"
    if got.base.data_ptr() != want.base.data_ptr() and got.base.device.type != "meta":
        return f"{name} covers another tensor than the one you were given"
    return None


def descriptor_problems(seed: int) -> list[tuple[str, str, int, int, int]]:
    """``(a_format, b_format, m, n, k)`` the descriptor answer is called with: every pair, varied sizes."""
    import random

    from gluon_overlap.tmem import SUPPORTED_PAIRS, default_block_k

    rng = random.Random(f"descriptors:{seed}")
    out = []
    for a, b in SUPPORTED_PAIRS:
        for _ in range(2):
            k = rng.choice((3, 5, 8)) * default_block_k(a, b)
            out.append((a, b, rng.choice((256, 512, 640, 1000)), rng.choice((264, 512, 776)), k))
    return out


def _run_descriptors(answer: Answer, *, seed: int = DEFAULT_SEED, progress: bool = False) -> tuple[bool, str]:
    from gluon_overlap import kernel
    from gluon_overlap.compiler.compile import cross_compile, meta_operands
    from gluon_overlap.formats import random_problem
    from gluon_overlap.steps import single_buffered
    from gluon_overlap.tmem import make_plan

    mine = answer.module.make_descriptors
    own = guard.compiled_codes(answer.text, answer.module.__file__)
    for a, b, m, n, k in descriptor_problems(seed):
        plan = make_plan(a, b)
        problem = random_problem(m, n, k, a, b, seed=seed)
        import torch

        c = torch.empty(m, n, dtype=torch.float16)
        operands = (problem.a.data, problem.b.data, problem.a_scale_swizzled, problem.b_scale_swizzled, c)
        traced = guard.traced_call(mine, *operands, plan)
        refused = guard.foreign_function_code(traced, allowed=own)
        if refused:
            return False, refused
        if traced.error is not None:
            return False, (
                f"{a} x {b}, M={m}, N={n}, K={k}: your make_descriptors raised "
                f"{type(traced.error).__name__}: {traced.error}{_answer_line(traced, answer)}"
            )
        got = traced.value
        want = kernel.make_descriptors(*operands, plan)  # the reference: the production kernel's host side
        if not isinstance(got, (tuple, list)) or len(got) != 5:
            size = f" of {len(got)}" if isinstance(got, (tuple, list)) else ""
            return False, (
                f"{a} x {b}: return the five descriptors {DESCRIPTOR_NAMES}, got a "
                f"{type(got).__name__}{size}{_answer_line(traced, answer)}"
            )
        for name, g, w in zip(DESCRIPTOR_NAMES, got, want, strict=True):
            diff = descriptor_difference(g, w, name)
            if diff:
                return False, (
                    f"{a} x {b}, M={m}, N={n}, K={k}: {diff} ({_descriptor_line(answer, name, diff)}). "
                    "(ex.hint('03b descriptors') for a hint)"
                )
    problems = len(descriptor_problems(seed))

    def args_for(module: Any) -> Callable[[Any, Any], tuple]:
        return _step_args(descriptors=mine)(module)

    spliced_like = _own_spliced(answer, single_buffered)
    outcome = K.check_runs(
        spliced_like,
        single_buffered_runs(seed),
        args_for(None),
        title="03b descriptors",
        allowed=guard.allowed_library_codes([single_buffered.single_buffered_kernel])
        | harness_library_codes(module_text(single_buffered)),
    )
    if not outcome.passed:
        return False, outcome.message
    plan = make_plan("mxfp8", "mxfp4")
    args = (*mine(*meta_operands("mxfp8", "mxfp4", 1024), plan), 1024, 1024, 1024, plan)
    try:
        compiled = cross_compile(single_buffered.single_buffered_kernel, args, num_ctas=2)
    except Exception as exc:  # the compiler's errors
        return False, "the single-buffered kernel does not compile with your descriptors: " + compile_error_words(
            exc, answer, answer.text
        )
    return True, (
        f"the five descriptors match the kernel's for {problems} problems (all four format pairs); the "
        f"kernel compiles with them ({compiled.shared_bytes} bytes of shared memory for mxfp8 x mxfp4); "
        f"{outcome.message}: clean and right."
    )


def _descriptor_line(answer: Answer, name: str, diff: str) -> str:
    """The answer's line that most likely made the wrong field: the assignment of the descriptor's box (a shape
    difference) or layout (a layout field), else its from_tensor call."""
    stem = name.removesuffix("_desc")  # "a", "b", "c", "a_scale", "b_scale"
    wants = ("_layout",) if "layout" in diff else ("_block", "_5d", "_layout")
    for suffix in wants:
        for n, text in enumerate(answer.text.splitlines(), 1):
            code = text.split("#", 1)[0]
            if re.search(rf"\b{stem}{suffix}\s*=", code):
                return f"{answer.name} line {n} `{text.strip()}`"
    for n, text in enumerate(answer.text.splitlines(), 1):
        if "from_tensor(" in text and re.search(rf"\b{stem}", text):
            return f"{answer.name} line {n} `{text.strip()}`"
    return answer.quote("return")


def _own_spliced(answer: Answer, module: ModuleType) -> Spliced:
    """The library's step kernel, run as it is (the descriptors are the answer): a stand-in for a spliced module
    whose file is the step module's own."""
    import inspect

    from gluon_overlap.steps import single_buffered

    return Spliced(answer, module, single_buffered.single_buffered_kernel, inspect.getsource(module))


def _answer_line(traced: guard.Traced, answer: Answer) -> str:
    if traced.return_line is None:
        return ""
    _, lineno, text = traced.return_line
    return f" (at {answer.name} line {lineno} `{text}`)"


# --- notebook 04: the overlap's release and wait ------------------------------------------------
RELEASE_BLOCK = "            if k == 0:\n                if i > 0:\n"
RELEASE_END = "                mbarrier.wait(overlap_bar, (i + 1) % 2)\n"
RELEASE_CALL = (
    "            if k == 0:\n"
    "                # (the answer's release_head)\n"
    "                release_head(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, i, overlap_bar, "
    "TMEM_PLAN, HEAD)\n"
)


@functools.cache
def _overlap_harness() -> str:
    from gluon_overlap.steps import overlap

    text = module_text(overlap) + "\n"
    start = text.index(RELEASE_BLOCK)
    end = text.index(RELEASE_END, start) + len(RELEASE_END)
    return text[:start] + RELEASE_CALL + text[end:]


def overlap_step_runs(seed: int = DEFAULT_SEED) -> tuple[Run, ...]:
    """Step 2 is persistent: two clusters of three or four tiles, odd K steps, all pairs."""
    return kernel_runs("overlap-step", seed, persistent=True, overlap=True, holdback=False)


def release_order(run: ExecutionResult, head: int, subtiles: int, cluster: int = 0) -> dict[int, list[int]]:
    """Per CTA of ``cluster``: how many TMEM loads it had issued when it arrived on the ``overlap`` barrier,
    for each arrival in order (an executor run's trace)."""
    counts: dict[int, list[int]] = {}
    loads: dict[int, int] = {}
    for op in run.trace:
        if op.proc is None or op.proc.cluster != cluster:
            continue
        if op.kind == "tmem_load":
            loads[op.cta] = loads.get(op.cta, 0) + 1
        elif op.kind == "arrive" and getattr(getattr(op, "bar", None), "label", "").startswith("overlap"):
            counts.setdefault(op.cta, []).append(loads.get(op.cta, 0))
    return counts


def overlap_is_early(result: Any, case: Case) -> str | None:
    """None when each CTA releases every tile but the last right after its head (the plan's
    ``early_release_subtile``), and drains each subtile once; else what is wrong.  ``result`` is a
    :class:`~gluon_overlap.steps.measure.StepRun` or a :class:`~.kernel_checks.Ran`."""
    from gluon_overlap.tmem import make_plan

    plan = make_plan(case.a_format, case.b_format, overlap=True)
    head, n = plan.early_release_subtile + 1, plan.num_subtiles
    run: Any = getattr(result, "run", None)
    run = run if hasattr(run, "trace") else result.result
    tiles = len(range(0, -(-case.m // 256) * -(-case.n // 256), case.num_clusters or 1))
    for cta, arrivals in sorted(release_order(run, head, n).items()):
        want = [t * n + head for t in range(tiles - 1)]
        if arrivals != want:
            line = next(
                (
                    op.line
                    for op in run.trace
                    if op.kind == "arrive"
                    and op.proc is not None
                    and op.proc.cluster == 0
                    and getattr(op.bar, "label", "").startswith("overlap")
                ),
                None,
            )
            at = f" (the arrive: {line})" if line is not None else ""
            if arrivals and arrivals[0] >= n:
                return (
                    f"no overlap: CTA {cta} released the shared columns only after draining {arrivals[0]} "
                    f"subtiles{at}; C is right, but the next tile's MMA waited for the whole drain"
                )
            k = next(
                (k for k, (g, w) in enumerate(zip(arrivals, want, strict=False)) if g != w),
                min(len(arrivals), len(want)),
            )
            if k >= len(arrivals) or k >= len(want):
                return (
                    f"CTA {cta} arrived on overlap {len(arrivals)} time(s){at}; the overlap needs one arrival per "
                    f"tile but the last ({len(want)} here), right after the subtiles that hold shared columns"
                )
            when = (
                "too early: before every shared column was read"
                if arrivals[k] < want[k]
                else "later than needed: after more than the subtiles that hold shared columns"
            )
            return (
                f"CTA {cta} arrived on overlap for the cluster's tile {k} after its TMEM load number "
                f"{arrivals[k]}{at}: {when}"
            )
    total = sum(1 for op in run.trace if op.kind == "tmem_load" and op.proc is not None and op.proc.cluster == 0)
    if total != 2 * tiles * n:
        return f"the CTAs issued {total} TMEM loads for {tiles} tiles of {n} subtiles each: drain each subtile once"
    return None


def _release_extra(ran: K.Ran) -> str | None:
    return overlap_is_early(ran, ran.run.case)


def _run_release(answer: Answer, *, seed: int = DEFAULT_SEED, progress: bool = False) -> tuple[bool, str]:
    ok, message = _check_kernel_part(
        answer,
        title="04 release",
        harness=_overlap_harness(),
        kernel_name="overlap_kernel",
        runs=overlap_step_runs(seed),
        args_of=_step_args(overlap=True),
        compile_args=_step_compile_args(overlap=True),
        allowed=frozenset({"gluon_overlap.steps.overlap.drain_steps"}),
        reference_file="overlap_release.py",
        entry="release_head",
        extra=_release_extra,
        summary=lambda c: f"{c.ptx_counts.get('mbarrier.arrive', 0)} mbarrier.arrive in the PTX",
    )
    if ok:
        message = message.replace(
            "C matches the float64 reference.",
            "C matches the float64 reference, and each "
            "CTA releases every tile right after the subtiles that hold shared columns.",
        )
    return ok, message


# --- notebook 05: the warp-specialized kernel ---------------------------------------------------
def ws_runs(seed: int = DEFAULT_SEED) -> tuple[Run, ...]:
    """The warp-specialized kernel: two clusters of three or four tiles, odd K steps (the 5-stage ring wraps),
    all pairs, every interleaving including hold-back for the first."""
    return kernel_runs("warp-specialized", seed, persistent=True, overlap=True)


@functools.cache
def _kernel_harness(header: str) -> str:
    from gluon_overlap import kernel

    return remove_top_level(module_text(kernel), header)


def _production_compile_args(module: Any) -> tuple:
    from gluon_overlap.compiler.compile import meta_operands
    from gluon_overlap.tmem import make_plan

    plan = make_plan("nvfp4", "nvfp4", overlap=True)
    return module.kernel_args(*meta_operands("nvfp4", "nvfp4", 1024), plan, 1024, 1024, 1024)


def counter_walk_reference(num_barriers: int, start_phase: int, uses: int) -> list[tuple[int, int]]:
    """``(index, phase)`` of uses ``0 ... uses - 1`` of a ring, from the rule (not from the kernel's Counter)."""
    return [(j % num_barriers, start_phase ^ ((j // num_barriers) & 1)) for j in range(uses)]


#: (ring size, start phase, the pred of each use: 1 advance, 0 stay) the Counter checker walks
COUNTER_WALKS = (
    (5, 1, "1" * 13),
    (5, 0, "1" * 13),
    (2, 1, "1" * 7),
    (2, 0, "1" * 7),
    (1, 0, "1" * 5),
    (1, 1, "1" * 5),
    (3, 0, "1101101001111"),
    (4, 1, "0111011110011"),
    (2, 0, "0010110111"),
    (7, 1, "1" * 16),
)


def counter_walk_with_pred(num_barriers: int, start_phase: int, preds: str) -> list[tuple[int, int]]:
    """``(index, phase)`` before each use, from the rule, when use ``u`` advances only if ``preds[u] == "1"``."""
    index, phase, out = 0, start_phase, []
    for p in preds:
        out.append((index, phase))
        if p == "1":
            index += 1
            if index == num_barriers:
                index, phase = 0, phase ^ 1
    out.append((index, phase))
    return out


def _run_counter(answer: Answer, *, seed: int = DEFAULT_SEED, progress: bool = False) -> tuple[bool, str]:
    from gluon_overlap.interp.launch import call

    mine = answer.module.Counter
    for n, start, preds in COUNTER_WALKS:
        want = counter_walk_with_pred(n, start, preds)
        try:
            counter = call(mine.create, start, n)
            walk = [(int(counter.index), int(counter.phase))]
            for p in preds:
                counter = call(mine.next, counter, p == "1")
                walk.append((int(counter.index), int(counter.phase)))
        except Exception as exc:
            line = answer.find("def next") or answer.find("def create")
            return False, (
                f"running your Counter on the CPU raised {type(exc).__name__}: {exc} ({answer.name} line {line})"
            )
        if walk != want:
            from gluon_overlap.exercises.nb05 import counter_miss

            j = next(j for j, (g, w) in enumerate(zip(walk, want, strict=True)) if g != w)
            before = ", ".join(f"next(pred={'True' if p == '1' else 'False'})" for p in preds[:j][-3:])
            line = answer.find("def next") if j else answer.find("def create")
            uses = sum(p == "1" for p in preds[:j])  # the uses the counter has moved past
            pred_false = j > 0 and preds[j - 1] == "0"
            return False, (
                f"a ring of {n} barriers created with phase {start}, after {j} call(s) of next "
                f"(the last: {before or 'none'}): yours is {walk[j]}; "
                f"{counter_miss(uses, n, walk[j], want[j], pred_false)} "
                f"({answer.name} line {line} `{answer.line(line or 0)}` onwards). "
                "(ex.hint('05 Counter') for a hint)"
            )
    return _check_kernel_part(
        answer,
        title="05 Counter",
        harness=_kernel_harness("class Counter"),
        kernel_name="mma_scaled_warp_specialized_kernel",
        runs=ws_runs(seed),
        args_of=_step_args(production=True, overlap=True),
        compile_args=_production_compile_args,
        allowed=frozenset(),
        reference_file="counter.py",
        entry="Counter",
        summary=lambda c: f"{c.ptx_counts.get('mbarrier.wait', 0)} mbarrier waits in the PTX",
    )


def _run_load_partition(answer: Answer, *, seed: int = DEFAULT_SEED, progress: bool = False) -> tuple[bool, str]:
    return _check_kernel_part(
        answer,
        title="05 load partition",
        harness=_kernel_harness("def load_partition"),
        kernel_name="mma_scaled_warp_specialized_kernel",
        runs=ws_runs(seed),
        args_of=_step_args(production=True, overlap=True),
        compile_args=_production_compile_args,
        allowed=_kernel_lib("Counter"),
        reference_file="load_partition.py",
        entry="load_partition",
        summary=lambda c: f"{c.ptx_counts.get('mbarrier.wait', 0)} mbarrier waits in the PTX",
    )


# --- notebook 05b: the capstone and the adaptation ----------------------------------------------
def _run_capstone(answer: Answer, *, seed: int = DEFAULT_SEED, progress: bool = False) -> tuple[bool, str]:
    import gluon_overlap.exercises.capstone as capstone

    return capstone.check(answer, adaptation=False, seed=seed, title="05b capstone", progress=progress)


def _run_adaptation(answer: Answer, *, seed: int = DEFAULT_SEED, progress: bool = False) -> tuple[bool, str]:
    import gluon_overlap.exercises.capstone as capstone

    return capstone.check(answer, adaptation=True, seed=seed, title="05b adaptation", progress=progress)


def writing_exercises() -> tuple[WritingExercise, ...]:
    """The writing exercises of notebooks 03a-05b."""
    from gluon_overlap.exercises.capstone import ADAPTATION_ENTRIES, CAPSTONE_ENTRIES

    return (
        WritingExercise(
            "03a",
            "K loop",
            "write the K loop of the single-buffered kernel: the loads of a K step, "
            "the waits, the scale copies and the MMA",
            "k_loop",
            "k_loop.py",
            _kernel_lib("element_kind"),
            _run_k_loop,
        ),
        WritingExercise(
            "03a",
            "epilogue",
            "write the epilogue: drain the accumulator subtile by subtile into C",
            "epilogue",
            "epilogue.py",
            _kernel_lib("drain_column"),
            _run_epilogue,
        ),
        WritingExercise(
            "03b",
            "descriptors",
            "write the host side: the five TMA descriptors with their shared layouts and CGA layouts",
            "make_descriptors",
            "descriptors.py",
            frozenset(),
            _run_descriptors,
        ),
        WritingExercise(
            "04",
            "release",
            "write the overlap hand-over of step 2: release the previous tile's "
            "shared columns and wait for the pair's release",
            "release_head",
            "overlap_release.py",
            frozenset({"gluon_overlap.steps.overlap.drain_steps"}),
            _run_release,
        ),
        WritingExercise(
            "05",
            "Counter",
            "write Counter.next: the ring's index and the parity flip on wrap-around",
            "Counter",
            "counter.py",
            frozenset(),
            _run_counter,
        ),
        WritingExercise(
            "05",
            "load partition",
            "write the load worker's loop",
            "load_partition",
            "load_partition.py",
            _kernel_lib("Counter"),
            _run_load_partition,
        ),
        WritingExercise(
            "05b",
            "capstone",
            "write the overlap into the warp-specialized kernel: the MMA "
            "partition's waits and windows, the epilogue's drain order and early release, the overlap "
            "barrier",
            CAPSTONE_ENTRIES,
            "overlap.py",
            frozenset(),
            _run_capstone,
        ),
        WritingExercise(
            "05b",
            "adaptation",
            "adapt the overlap to the mx formats at BLOCK_K = 256 and "
            "EPILOGUE_BLOCK_N = 16 in a kernel that leaves TMEM columns [0, 32) to a fused part, with "
            "no TMEM plan in the kernel",
            ADAPTATION_ENTRIES,
            "adaptation.py",
            frozenset(),
            _run_adaptation,
            forbidden=frozenset(
                {
                    "make_plan",
                    "TmemPlan",
                    "validate",
                    "matmul",
                    "matmul_raw",
                    "kernel_args",
                    "scale_columns",
                    "expected_swizzled_shape",
                }
            ),
        ),
    )


def exercise(title: str) -> WritingExercise:
    """The writing exercise called ``title`` (e.g. ``"03a K loop"``)."""
    found = {e.title: e for e in writing_exercises()}
    if title not in found:
        raise ValueError(f"title={title!r} is not a writing exercise; there are {sorted(found)}")
    return found[title]


def check(
    title: str, answer: str | Path, *, quiet: bool = False, seed: int = DEFAULT_SEED, progress: bool | None = None
) -> Verdict:
    """Check the answer file ``answer`` of the writing exercise ``title`` (``seed``: another draw of problems;
    ``progress``: a line per run, on by default for the checks that take a minute)."""
    if progress is None:
        progress = title.startswith("05b")
    return exercise(title).check(answer, quiet=quiet, seed=seed, progress=progress)


def solution(title: str) -> None:
    """Print the answer file of writing exercise ``title`` (``ex.solution(title)`` in the notebooks): the answer --
    read it after your own attempt.  The other exercises' solutions: :func:`gluon_overlap.exercises.solution`."""
    for e in writing_exercises():
        if e.title == title:
            print(f"# {e.solution_path().name} -- the solution of [{title}]")
            print(e.solution_text())
            return
    raise ValueError(
        f"{title!r} is not a writing exercise; there are {sorted(e.title for e in writing_exercises())} "
        "(the others' solutions: gluon_overlap.exercises.solution)"
    )
