"""The capstone (notebook 05b): the learner writes the overlap into the real warp-specialized kernel -- and then
adapts it to a configuration the package does not ship.

**The capstone.**  The harness is ``gluon_overlap/kernel.py`` with the overlap's own code cut out: the MMA and the
epilogue partitions (the ``acc_empty`` / ``overlap`` waits and the window of each tile; the drain order, the early
release and the window's release), the two helpers that read windows and drain columns from the plan, and the
allocation and init of the ``overlap`` barrier.  The answer file supplies ``mma_partition``,
``epilogue_partition`` and ``allocate_overlap_barrier``; the plan (``p.TMEM_PLAN``) is still the kernel's.  The
problem set runs the overlap on *and off*: with it off (one window, ``make_plan(a, b, overlap=False)``) the
``acc_empty`` hand-over is the only guard of the window, so an answer without it races there.

**The adaptation.**  The mx formats at ``BLOCK_K = 256`` (twice the fp8 default: half the MMA issues and barrier
round trips per tile) and ``EPILOGUE_BLOCK_N = 16``, in a kernel that must leave TMEM columns ``[0, 32)`` to
something else for its whole life (a fused epilogue's second, small accumulator: an MMA result lives only in TMEM).
No :class:`~gluon_overlap.tmem.TmemPlan` can say that (``make_plan`` puts its left window on those columns), and the
package's kernel could not run it anyway -- five stages of 256-byte rows do not fit in shared memory.  The kernel
gets no plan: ``p.TMEM_PLAN`` holds only the formats, the block sizes and the reserved columns
(:class:`~gluon_overlap.exercises.views.KernelFormats`).  The learner derives the layout (both windows, now
overlapping by the scale columns *plus* the reserved ones, and both scale slots), the early-release step and the
number of stages, and edits the partitions to use them.

Both are checked the same way: the whole kernel on the CPU executor over a problem set the learner does not choose
(M >= 512, an odd number of K steps, two clusters of three tiles or more, every format pair the configuration
covers, four interleavings including hold-back), against the float64 reference, with hazards, deadlocks and the
code that ran (:mod:`~gluon_overlap.exercises.guard`); then a timed run of one cluster of every pair (the B300
model) must show the overlap -- each next tile's first MMA issued while the tile before is still draining, released
right after the last subtile that holds a shared column --; then the kernel is cross-compiled for ``sm_100a``.  The
adaptation's recordings must also show that no MMA, scale copy or TMEM load or store touches the reserved columns,
and that the layout leaves no other column unused.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gluon_overlap.exercises.answer_files as A
import gluon_overlap.exercises.kernel_checks as K
from gluon_overlap.exercises.problems import DEFAULT_SEED, Run, kernel_runs

if TYPE_CHECKING:
    from gluon_overlap.compiler.compile import CrossCompiled

KERNEL = "mma_scaled_warp_specialized_kernel"
#: what the answer files define
CAPSTONE_ENTRIES = ("mma_partition", "epilogue_partition", "allocate_overlap_barrier")
ADAPTATION_ENTRIES = CAPSTONE_ENTRIES + ("NUM_BUFFERS", "LEFT", "RIGHT", "A_SCALES", "B_SCALES")
#: the adaptation's configuration: every mx pair (all three have the same scale columns at this BLOCK_K)
ADAPTATION_BLOCK_K = 256
ADAPTATION_EPILOGUE_BLOCK_N = 16
#: ``(first column, columns)`` the adaptation's kernel leaves to a fused part for its whole life
ADAPTATION_RESERVED = (0, 32)
ADAPTATION_PAIRS = (("mxfp8", "mxfp8"), ("mxfp8", "mxfp4"), ("mxfp4", "mxfp4"))

_BARRIER_LINES = (
    "    # The ping-pong barrier guarding the shared columns (initialized but unused with overlap off).\n"
    "    overlap_bar = mbarrier.allocate_mbarrier(batch=1, two_ctas=TWO_CTAS)\n"
    "    mbarrier.init(overlap_bar.index(0), count=1)\n"
)
_BARRIER_CALL = "    overlap_bar = allocate_overlap_barrier(TWO_CTAS)  # (the answer's)\n"


# =====================================================================================
# harnesses
# =====================================================================================
@functools.cache
def capstone_harness() -> str:
    """``kernel.py`` with the overlap's code cut out (the answer file supplies it)."""
    from gluon_overlap import kernel

    text = A.module_text(kernel) + "\n"
    for header in ("def drain_column", "def accumulator_window", "def mma_partition", "def epilogue_partition"):
        text = A.remove_top_level(text, header)
    return A.replace_once(text, _BARRIER_LINES, _BARRIER_CALL)


@functools.cache
def adaptation_harness() -> str:
    """The capstone's harness with no TMEM plan in the kernel: the scale slots and the stage count are the
    answer's (``A_SCALES``, ``B_SCALES``, ``NUM_BUFFERS``)."""
    text = capstone_harness()
    text = A.replace_once(
        text,
        "NUM_BUFFERS = 5  #: shared-memory stages of the load ring\n",
        "# (NUM_BUFFERS, the stages of the load ring, is the answer's)\n",
    )
    text = A.replace_once(
        text,
        "tmem_pool.slice(TMEM_PLAN.a_scale.offset, TMEM_PLAN.a_scale.cols)",
        "tmem_pool.slice(A_SCALES[0], A_SCALES[1])",
    )
    text = A.replace_once(
        text,
        "tmem_pool.slice(TMEM_PLAN.b_scale.offset, TMEM_PLAN.b_scale.cols)",
        "tmem_pool.slice(B_SCALES[0], B_SCALES[1])",
    )
    return text


# =====================================================================================
# running
# =====================================================================================
def adaptation_formats(a: str, b: str) -> Any:
    """What the adaptation's kernel gets as ``TMEM_PLAN``: formats, block sizes and the reserved columns."""
    from gluon_overlap.exercises.views import Columns, KernelFormats

    return KernelFormats(a, b, ADAPTATION_BLOCK_K, ADAPTATION_EPILOGUE_BLOCK_N, reserved=Columns(*ADAPTATION_RESERVED))


def _args_of(module: Any, adaptation: bool) -> Callable[..., tuple]:
    """``args_of(problem, c, case)``: the kernel's arguments, built by the spliced module's own ``kernel_args``
    (the capstone's plan has the overlap of the run's case: its runs mix on and off)."""
    from gluon_overlap.tmem import make_plan

    def args_of(problem: Any, c: Any, case: Any) -> tuple:
        a, b = problem.a.format, problem.b.format
        plan = adaptation_formats(a, b) if adaptation else make_plan(a, b, overlap=case.overlap)
        return module.kernel_args(
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

    args_of.needs_case = True  # type: ignore[attr-defined]
    return args_of


def _meta_args(module: Any, adaptation: bool, a: str = "nvfp4", b: str = "nvfp4") -> tuple:
    from gluon_overlap.compiler.compile import meta_operands
    from gluon_overlap.tmem import make_plan

    plan = adaptation_formats(a, b) if adaptation else make_plan(a, b, overlap=True)
    return module.kernel_args(*meta_operands(a, b, 1024), plan, 1024, 1024, 1024)


def capstone_runs(seed: int = DEFAULT_SEED) -> tuple[Run, ...]:
    """All four format pairs with the overlap on, two clusters of three or four tiles, odd K steps; the first
    problem under every interleaving (hold-back included), the others under one each -- and, right after the first
    problem, two pairs with the overlap off (one window: the ``acc_empty`` hand-over alone guards it)."""
    import random

    from gluon_overlap.tmem import SUPPORTED_PAIRS

    on = kernel_runs("capstone", seed, persistent=True, overlap=True)
    rng = random.Random(f"capstone-off:{seed}")
    pairs = tuple(rng.sample(SUPPORTED_PAIRS, 2))
    off = kernel_runs(
        "capstone-off", seed, persistent=True, overlap=False, pairs=pairs, first=None, full_interleavings_for=0
    )
    first = sum(1 for r in on if r.case == on[0].case)
    return on[:first] + off + on[first:]


def adaptation_runs(seed: int = DEFAULT_SEED) -> tuple[Run, ...]:
    """The three mx pairs at BLOCK_K = 256 (K a multiple of 256, odd steps), two clusters."""
    from gluon_overlap.exercises.runs import Case

    runs = []
    first = None
    for run in kernel_runs("adaptation", seed, persistent=True, overlap=True, pairs=ADAPTATION_PAIRS, first=None):
        first = first or (run.case.a_format, run.case.b_format)
        steps = 3 if (run.case.a_format, run.case.b_format) == first else 5
        case = Case(
            run.case.m,
            run.case.n,
            steps * ADAPTATION_BLOCK_K,
            run.case.a_format,
            run.case.b_format,
            overlap=True,
            num_clusters=2,
        )
        runs.append(Run(case, run.data_seed, run.seed, run.bias, run.schedule))
    return tuple(runs)


@functools.cache
def _reference(adaptation: bool) -> A.Spliced:
    """The solution spliced into the harness: the reference a wrong C is compared with."""
    name = "adaptation.py" if adaptation else "overlap.py"
    answer = A.load_answer(A.ANSWERS / name, ADAPTATION_ENTRIES if adaptation else CAPSTONE_ENTRIES, frozenset())
    return A.load_spliced(answer, adaptation_harness() if adaptation else capstone_harness(), KERNEL)


def check(
    answer: A.Answer, *, adaptation: bool, seed: int = DEFAULT_SEED, title: str, progress: bool = False
) -> tuple[bool, str]:
    """Run the capstone's (or the adaptation's) checks on a loaded answer: ``(passed, message)``."""
    from gluon_overlap.tmem import SUPPORTED_PAIRS, make_plan

    harness = adaptation_harness() if adaptation else capstone_harness()
    spliced = A.load_spliced(answer, harness, KERNEL)
    if adaptation:
        problem = _adaptation_constants(answer, spliced)
        if problem:
            return False, problem
    args_of = _args_of(spliced.module, adaptation)
    runs = adaptation_runs(seed) if adaptation else capstone_runs(seed)
    # every pair is timed: a release that comes late but safe shows only in time, and a per-pair mistake (a release
    # step keyed to BLOCK_K, right for nvfp4 and mxfp8, one subtile late for mxfp4) only in that pair's run
    timed_pairs = ADAPTATION_PAIRS if adaptation else SUPPORTED_PAIRS
    timed_runs = [
        next(r for r in runs if (r.case.a_format, r.case.b_format) == pair and r.case.overlap) for pair in timed_pairs
    ]
    shown = _Progress(len(runs) + len(timed_pairs) + 1, progress)
    judged = _layout_judge(answer, spliced.file) if adaptation else None

    def extra(ran: K.Ran) -> str | None:
        shown.tick(ran.run.label)
        return judged(ran) if judged is not None else None

    try:
        outcome = K.check_runs(
            spliced,
            runs,
            args_of,
            title=title,
            allowed=frozenset(),
            reference=lambda: _reference(adaptation),
            extra=extra,
            culprits=_layout_lines(answer) if adaptation else None,
            races_first=True,
        )
    except K.KernelStopped as stopped:
        words = str(stopped)
        if adaptation:
            words = _stages_words(words, answer)
            if f"{answer.name} line" not in words:
                more = _layout_lines(answer)(words)
                words += f" -- {more}" if more else ""
        return False, words
    if not outcome.passed:
        return False, outcome.message
    # the overlap, read from a timed run of one cluster (B300 model)
    reports = []
    for pair, run in zip(timed_pairs, timed_runs, strict=True):
        ran = K.launch_case(spliced.kernel, run, args_of, files={spliced.file, str(answer.path)}, timed=True)
        shown.tick(f"timed run, {pair[0]} x {pair[1]}")
        if not ran.result.ok:
            return False, f"the timed run of {pair[0]} x {pair[1]} failed: {ran.result.error or ran.result.hazards}"
        subtiles = 256 // ADAPTATION_EPILOGUE_BLOCK_N if adaptation else make_plan(*pair).num_subtiles
        complaint = K.overlap_report(ran, answer, spliced.file, subtiles)
        if complaint:
            return False, f"{run.case.label} (timed, one cluster): {complaint}. (ex.hint({title!r}) for a hint)"
        reports.append(_overlap_words(ran, pair))
    compiled = _cross_compile(spliced, answer, adaptation)
    shown.tick("cross-compiled for sm_100a")
    if isinstance(compiled, str):
        return False, compiled
    ptx = compiled.ptx_counts
    return True, (
        f"{outcome.message}: no hazard, no deadlock, C matches the float64 reference; the overlap happened "
        f"({'; '.join(reports)}); compiles for sm_100a ({ptx.get('tcgen05.mma', 0)} tcgen05.mma, "
        f"{ptx.get('mbarrier.arrive', 0)} mbarrier.arrive in the PTX)"
    )


class _Progress:
    """One line per finished run when ``on`` (the notebook's check takes about a minute)."""

    def __init__(self, total: int, on: bool):
        self.total, self.on, self.done = total, on, 0

    def tick(self, what: str) -> None:
        self.done += 1
        if self.on:
            print(f"  [{self.done}/{self.total}] {what}: ok", flush=True)


def _overlap_words(ran: K.Ran, pair: tuple[str, str]) -> str:
    """``"nvfp4 x nvfp4: tile 1's first MMA after 2 of tile 0's 8 subtiles"`` from a timed run."""
    mmas, loads = defaultdict(list), defaultdict(list)
    for op in ran.result.trace:
        if op.proc is None or op.proc.cluster != 0 or op.local is None:
            continue
        if op.kind == "mma":
            mmas[op.local].append(op)
        elif op.kind == "tmem_load" and op.cta == 0:
            loads[op.local].append(op)
    first = min(op.t_issue for op in mmas[1])
    before = sum(1 for op in loads[0] if op.t_end <= first)
    return f"{pair[0]} x {pair[1]}: tile 1's first MMA issued after {before} of tile 0's {len(loads[0])} TMEM loads"


def _cross_compile(spliced: A.Spliced, answer: A.Answer, adaptation: bool) -> CrossCompiled | str:
    from gluon_overlap.exercises.compile_words import cross_compile_answer

    pair = ADAPTATION_PAIRS[0] if adaptation else ("nvfp4", "nvfp4")
    try:
        return cross_compile_answer(spliced.kernel, _meta_args(spliced.module, adaptation, *pair), answer, spliced.text)
    except A.AnswerRefused as exc:
        return str(exc)


# =====================================================================================
# the adaptation's own judgements
# =====================================================================================
def _adaptation_constants(answer: A.Answer, spliced: A.Spliced) -> str | None:
    """The constants must be what the kernel can use: NUM_BUFFERS a positive int, the four column ranges
    ``gl.constexpr((first column, columns))``."""
    module = spliced.module
    stages = module.__dict__.get("NUM_BUFFERS")
    at = answer.quote("NUM_BUFFERS")
    if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
        return f"{at}: NUM_BUFFERS must be a positive int (the stages of the load ring), got {stages!r}"
    room = _stages_that_fit()
    if stages < room:  # more than fit, the compiler refuses (with the shared memory it asked for)
        return (
            f"{at}: {stages} stage{'s' if stages > 1 else ''} leave{'s' if stages == 1 else ''} room for "
            f"another in the 232,448 bytes of shared memory per CTA: the ring should be as deep as fits, so the "
            f"loads run ahead of the MMA (count a stage's bytes for every pair, the epilogue's staging buffers "
            f"too)"
        )
    for name in ("LEFT", "RIGHT", "A_SCALES", "B_SCALES"):
        value = getattr(module.__dict__.get(name), "value", None)
        at = answer.quote(name)
        if not (
            isinstance(value, tuple)
            and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            and value[1] > 0
            and value[0] >= 0
        ):
            return f"{at}: {name} must be gl.constexpr((first column, columns)) with two ints, got {value!r}"
    return _slots_apart(answer, module)


def _slots_apart(answer: A.Answer, module: Any) -> str | None:
    """Only the two windows may share columns: a scale slot inside a window (or the other slot), or past column
    512, would have the MMA read scales as accumulator (or accumulate over them) -- said at the slot's line."""
    ranges = {name: module.__dict__[name].value for name in ("LEFT", "RIGHT", "A_SCALES", "B_SCALES")}

    for name, (first, cols) in ranges.items():
        if first + cols > 512:
            return f"{answer.quote(name)}: {name} ends at column {first + cols}, past the 512 columns of TMEM"
    for name in ("A_SCALES", "B_SCALES"):
        first, cols = ranges[name]
        for other in ("LEFT", "RIGHT", "A_SCALES", "B_SCALES"):
            o_first, o_cols = ranges[other]
            if other != name and first < o_first + o_cols and o_first < first + cols:
                return (
                    f"{answer.quote(name)}: {name} [{first}, {first + cols}) shares columns with {other} [{o_first}, "
                    f"{o_first + o_cols}): only the two windows may share columns (an MMA would read the scales "
                    "as its accumulator, or a scale copy would overwrite a partial sum)"
                )
    return None


def _stages_that_fit() -> int:
    """The deepest load ring every adaptation pair fits (one NUM_BUFFERS serves them all), per CTA."""
    from gluon_overlap.limits import SMEM_PER_CTA_LIMIT, smem_bytes_per_cta
    from gluon_overlap.tmem import make_plan

    plans = [
        make_plan(a, b, block_k=ADAPTATION_BLOCK_K, epilogue_block_n=ADAPTATION_EPILOGUE_BLOCK_N)
        for a, b in ADAPTATION_PAIRS
    ]
    stages = 1
    while all(smem_bytes_per_cta(p, stages + 1) <= SMEM_PER_CTA_LIMIT for p in plans):
        stages += 1
    return stages


def _layout_lines(answer: A.Answer) -> Callable[[str], str]:
    """For a failure the given kernel showed (a scale copy, a slot's view): the answer's layout constants it read."""

    def culprits(message: str) -> str:
        found = [line for n in ("A_SCALES", "B_SCALES", "LEFT", "RIGHT", "NUM_BUFFERS") if (line := answer.find(n))]
        if not any(word in message for word in ("scale", "TMEM", "MMA")) or not found:
            return ""
        shown = ", ".join(f"line {line} `{answer.line(line)}`" for line in found[:4])
        return f"the given kernel used your layout: {answer.name} {shown}"

    return culprits


def _stages_words(message: str, answer: A.Answer) -> str:
    """A shared-memory refusal names the answer's NUM_BUFFERS line (the given kernel allocates what it asks)."""
    if "shared memory" in message:
        if answer.find("NUM_BUFFERS"):
            return message + f" -- the stages come from {answer.quote('NUM_BUFFERS')}"
    return message


def _layout_judge(answer: A.Answer, file: str) -> Callable[[K.Ran], str | None]:
    """A clean run's TMEM layout: nothing touches the reserved columns, and the windows, the scale slots and the
    reserved block use every column -- two windows that overlap by the scale columns plus the reserved ones."""
    first, count = ADAPTATION_RESERVED
    reserved = set(range(first, first + count))

    def judge(ran: K.Ran) -> str | None:
        windows: dict[int, tuple[int, int]] = {}
        scales: set[tuple[int, int]] = set()
        for op in ran.result.trace:
            cols = _columns_of(op)
            if cols is None:
                continue
            touched = reserved & set(range(*cols))
            if touched:
                return _reserved_words(op, cols, answer, file)
            if op.proc.cluster != 0:
                continue
            if op.kind == "mma" and op.local is not None and op.local < 2:
                windows.setdefault(op.local, cols)
            elif op.kind == "scale_copy":
                scales.add(cols)
        if len(windows) < 2:
            return None
        used = set(reserved)
        for lo, hi in list(windows.values()) + sorted(scales):
            used |= set(range(lo, hi))
        unused = sorted(set(range(512)) - used)
        if not unused:
            return None
        shared = set(range(*windows[0])) & set(range(*windows[1]))
        scale_cols = len({c for lo, hi in scales for c in range(lo, hi)})
        at = f" ({answer.quote('RIGHT')})" if answer.find("RIGHT") else ""
        return (
            f"the windows [{windows[0][0]}, {windows[0][1]}) and [{windows[1][0]}, {windows[1][1]}) share "
            f"{len(shared)} columns, the scales take {scale_cols} and the reserved block {count}, so TMEM "
            f"{'column' if len(unused) == 1 else 'columns'} {_ranges(unused)} "
            f"{'is' if len(unused) == 1 else 'are'} never used{at}: the windows must overlap by the scale "
            f"columns plus the reserved ones, so that everything fits in the 512 columns with none unused"
        )

    return judge


def _columns_of(op: Any) -> tuple[int, int] | None:
    """``(first, end)`` of the TMEM columns an MMA, a scale copy or a TMEM load or store touches (None: another op)."""
    if op.proc is None:
        return None
    if op.kind == "mma":
        return (op.window.offset, op.window.end)
    if op.kind in ("scale_copy", "tmem_load", "tmem_store"):
        return (op.columns.offset, op.columns.end)
    return None


def _reserved_words(op: Any, cols: tuple[int, int], answer: A.Answer, file: str) -> str:
    """An operation on the reserved columns in words: what it was, where, and the answer's constant behind it."""
    first, count = ADAPTATION_RESERVED
    what = {
        "mma": "an MMA into",
        "scale_copy": f"a scale copy of {getattr(op, 'operand', '')} into",
        "tmem_load": "a TMEM load of",
        "tmem_store": "a TMEM store into",
    }[op.kind]
    words = (
        f"{A.where(op.line, answer, file)} made {what} TMEM columns [{cols[0]}, {cols[1]}) (tile {op.local}, "
        f"cluster {op.proc.cluster}, CTA {op.proc.cta}), which touches the reserved columns [{first}, "
        f"{first + count}): the fused part owns them for the whole kernel"
    )
    module = answer.module.__dict__
    b_first = str(getattr(op, "operand", "")).lower().startswith("b")  # the copy of B's scales (b_scale)
    names = {"scale_copy": ("B_SCALES", "A_SCALES") if b_first else ("A_SCALES", "B_SCALES")}.get(
        op.kind, ("LEFT", "RIGHT")
    )
    for name in names:
        value = getattr(module.get(name), "value", None)
        line = answer.find(name)
        if (
            isinstance(value, tuple)
            and len(value) == 2
            and line
            and value[0] < cols[1]
            and cols[0] < value[0] + value[1]
        ):
            words += f"; it is your {name} ({answer.name} line {line} `{answer.line(line)}`)"
            break
    return words


def _ranges(columns: list[int]) -> str:
    """``"0..7, 480..511"``: sorted columns as runs."""
    runs: list[list[int]] = []
    for c in columns:
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ", ".join(f"{lo}..{hi}" if hi > lo else str(lo) for lo, hi in runs)
