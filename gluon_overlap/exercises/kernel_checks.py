"""Running a learner's kernel on the executor and saying, in one line with the learner's line, what went wrong.

:func:`check_runs` runs a spliced kernel over a problem set (:mod:`gluon_overlap.exercises.problems`) and reports
the first failure: a compiler refusal, an error, a deadlock (the blocked wait), a runaway kernel, a hazard (its
two accesses), a foreign function (:mod:`gluon_overlap.exercises.guard`), or a wrong C -- for which it runs the
exercise's reference answer on the same problem and names the first data movement of the learner's kernel that
differs from it (a TMA load of other coordinates, an MMA into other columns, a TMEM load or store of another
subtile).  :func:`overlap_report` judges, from a timed run's recording, whether the overlap happened.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

import gluon_overlap.exercises.guard as guard
from gluon_overlap.exercises.answer_files import Answer, AnswerRefused, Spliced, answer_lines, is_answer_line, where
from gluon_overlap.exercises.problems import Run

if TYPE_CHECKING:
    from gluon_overlap.exercises.runs import Case
    from gluon_overlap.interp.engine import Hazard
    from gluon_overlap.interp.launch import ExecutionResult

#: seconds a run of a learner's kernel may take on the executor before it is stopped (a Python loop that never
#: ends issues no operation, so the step budget cannot see it)
RUN_SECONDS = 120.0


class KernelStopped(AnswerRefused):
    """The executor could not run the answer at all (it raised): the compiler may say why more plainly."""


@dataclass
class Ran:
    """One executor run of a learner's kernel."""

    run: Run
    result: Any  # ExecutionResult
    c: torch.Tensor
    problem: Any

    def wrong_tiles(self, block_n: int = 256) -> list[tuple[int, int]]:
        from gluon_overlap.limits import ATOL, RTOL

        ref, got = self.problem.reference.double(), self.c.double()
        bad = []
        for tm in range(0, self.problem.m, 256):
            for tn in range(0, self.problem.n, block_n):
                if self.simulated_tile(tm // 256, tn // block_n, block_n) and not torch.allclose(
                    got[tm : tm + 256, tn : tn + block_n], ref[tm : tm + 256, tn : tn + block_n], atol=ATOL, rtol=RTOL
                ):
                    bad.append((tm // 256, tn // block_n))
        return bad

    def simulated_tile(self, tile_m: int, tile_n: int, block_n: int) -> bool:
        clusters = self.run.case.num_clusters
        if self.clusters_run is None or clusters is None:
            return True
        tiles_n = -(-self.problem.n // block_n)
        return (tile_m * tiles_n + tile_n) % clusters in self.clusters_run

    clusters_run: tuple[int, ...] | None = None


def step_budget(case: Case) -> int:
    """Operations a run may execute before it is stopped as runaway: ten times a generous count."""
    tiles = -(-case.m // 256) * -(-case.n // 256)
    return 20_000 + 400 * tiles * (case.k // 128 + 16)


def build_args(args_of: Callable[..., tuple], problem: Any, c: torch.Tensor, case: Case) -> tuple:
    """``args_of(problem, c)``, or ``args_of(problem, c, case)`` for a builder marked ``needs_case`` (a set of runs
    that mixes configurations the problem alone does not tell apart, e.g. overlap on and off)."""
    if getattr(args_of, "needs_case", False):
        return args_of(problem, c, case)
    return args_of(problem, c)


def launch_case(
    kernel: Any,
    run: Run,
    args_of: Callable[[Any, torch.Tensor], tuple],
    *,
    files: set[str],
    timed: bool = False,
    clusters: tuple[int, ...] | None = None,
) -> Ran:
    """Run ``kernel`` for ``run`` (``args_of(problem, c)`` builds its arguments; ``files``: the answer's files, for
    the wall-clock guard).  ``timed``: one deterministic interleaving with the timing model's B300 costs."""
    from gluon_overlap.emulate.wallclock import WallClock, WallClockExceeded
    from gluon_overlap.formats import random_problem
    from gluon_overlap.interp.data import ExecBackend
    from gluon_overlap.interp.engine import Engine
    from gluon_overlap.interp.launch import ExecutionResult, launch

    case = run.case
    problem = random_problem(case.m, case.n, case.k, case.a_format, case.b_format, seed=run.data_seed)
    c = torch.full((case.m, case.n), float("nan"), dtype=torch.float16)
    with WallClock(RUN_SECONDS, lambda f: f in files, "the answer's import") as _:
        args = build_args(args_of, problem, c, case)
    tiles = -(-case.m // 256) * -(-case.n // 256)
    grid = tiles if case.num_clusters is None else case.num_clusters
    if timed:
        from gluon_overlap.steps.measure import hardware_costs

        backend = ExecBackend(costs=hardware_costs(problem, case.overlap))
        clusters = (0,) if clusters is None else clusters
    else:
        backend = ExecBackend()
    engine = Engine(
        backend,
        seed=run.seed,
        timed=timed,
        max_steps=step_budget(case),
        completion_bias=run.bias or 1.0,
        schedule="uniform" if timed else run.schedule,
    )
    try:
        with WallClock(RUN_SECONDS, lambda f: f in files, "the run"):
            result = launch(
                kernel,
                grid=(grid,),
                args=args,
                num_ctas=2,
                engine=engine,
                clusters=None if clusters is None else list(clusters),
            )
    except WallClockExceeded as exc:
        result = ExecutionResult(
            [], None, list(engine.trace), engine.steps, engine.now, False, f"WallClockExceeded: {exc}"
        )
    ran = Ran(run, result, c, problem)
    ran.clusters_run = clusters
    return ran


# =====================================================================================
# the first failure of a set of runs
# =====================================================================================
@dataclass
class Outcome:
    """What a set of runs found: ``passed``, the one-line message, the clean runs."""

    passed: bool
    message: str
    runs: list[Ran]
    last: Ran | None = None  # the failing run, if any


def check_runs(
    spliced: Spliced,
    runs: tuple[Run, ...],
    args_of: Callable[[Any, torch.Tensor], tuple],
    *,
    title: str,
    allowed: frozenset,
    reference: Callable[[], Spliced] | None = None,
    extra: Callable[[Ran], str | None] | None = None,
    culprits: Callable[[str], str] | None = None,
    races_first: bool = False,
) -> Outcome:
    """See :func:`_check_runs`; a failure whose words name no line of the answer gets one: ``culprits(message)``
    (the exercise's guess, e.g. the constants a given line read) or the answer's last operation that ran."""
    outcome = _check_runs(
        spliced, runs, args_of, title=title, allowed=allowed, reference=reference, extra=extra, races_first=races_first
    )
    answer = spliced.answer
    if not outcome.passed and f"{answer.name} line" not in outcome.message:
        more = culprits(outcome.message) if culprits is not None else ""
        if not more and outcome.last is not None:
            line = _last_line(outcome.last.result, answer, spliced.file)
            if is_answer_line(line, answer, spliced.file):
                more = f"the last operation your file made: {where(line, answer, spliced.file)}"
            else:
                more = f"no line of {answer.name} made an operation (loads, waits, MMAs, stores...) at all"
        if more:
            head, sep, tail = outcome.message.rpartition(" (ex.hint(")
            outcome.message = (
                f"{head.rstrip('.')}; {more}.{sep}{tail}" if sep else f"{outcome.message.rstrip('.')}; {more}"
            )
    return outcome


def _check_runs(
    spliced: Spliced,
    runs: tuple[Run, ...],
    args_of: Callable[[Any, torch.Tensor], tuple],
    *,
    title: str,
    allowed: frozenset,
    reference: Callable[[], Spliced] | None = None,
    extra: Callable[[Ran], str | None] | None = None,
    races_first: bool = False,
) -> Outcome:
    """Run ``spliced.kernel`` for every run; the first failure in words (:class:`KernelStopped` when it could not
    run at all).  ``allowed``: the library helpers' code objects the kernel may run; ``reference``: builds the
    exercise's reference answer spliced into the same harness (for a wrong C); ``extra(ran)``: one more judgement
    of a clean run (None: nothing to say); ``races_first``: a run that raced and then deadlocked reports the race
    (a partition that waits for too little runs ahead, and the barrier counts it leaves behind block someone)."""
    answer = spliced.answer
    own = {spliced.file: guard.compiled_codes(spliced.text, spliced.file)}
    files = {spliced.file, str(answer.path)}
    done: list[Ran] = []
    checked_codes = False
    for run in runs:
        ran = launch_case(spliced.kernel, run, args_of, files=files)
        result = ran.result
        at = run.label
        if result.error:
            raise KernelStopped(f"{at}: {_error_words(result.error, answer, spliced.file)}")
        if not checked_codes:
            foreign = guard.foreign_kernel_code(
                result.codes, own, allowed, guard.referenced_codes(spliced.module.__dict__)
            )
            if foreign is not None:
                raise AnswerRefused(guard.foreign_code_message(foreign, own, answer.name))
            checked_codes = True
        if result.deadlock is not None and not (races_first and result.hazards):
            text, _ = blocked_wait(result, answer, spliced.file)
            return Outcome(False, f"{at}: deadlock, nobody can go on: {text}. {_more(title)}", done, ran)
        if result.step_limit_hit:
            line = _last_line(result, answer, spliced.file)
            return Outcome(
                False,
                f"{at}: the kernel never ends (the executor stopped it after "
                f"{result.steps} steps); the last operations came from {where(line, answer, spliced.file)}"
                f". {_more(title)}",
                done,
                ran,
            )
        if result.hazards:
            h = result.hazards[0]
            text = (
                f"{at}: {len(result.hazards)} hazard(s); the first, {h.kind}, at "
                f"{where(h.line, answer, spliced.file)}: {answer_lines(h.detail, answer)}"
            )
            if f"{answer.name} line" not in text:
                text += _own_lines_near(result, h, answer, spliced.file)
            return Outcome(False, f"{text}. {_more(title)}", done, ran)
        wrong = ran.wrong_tiles()
        if wrong:
            nan = bool(ran.c.isnan().any())
            why = first_difference(ran, reference, args_of, answer, spliced.file) if reference is not None else None
            return Outcome(
                False,
                f"{at}: C is wrong in tile(s) {wrong}"
                + (" (partly never written: NaN)" if nan else "")
                + ", though no hazard was seen"
                + (f"; {why}" if why else "")
                + f". {_more(title)}",
                done,
                ran,
            )
        if extra is not None:
            complaint = extra(ran)
            if complaint:
                return Outcome(False, f"{at}: {answer_lines(complaint, answer)}. {_more(title)}", done, ran)
        done.append(ran)
    return Outcome(
        True,
        f"{len(done)} executor runs ({len({r.run.case for r in done})} problems, "
        f"{len({(r.run.seed, r.run.schedule) for r in done})} interleavings)",
        done,
    )


def _own_lines_near(result: ExecutionResult, hazard: Hazard, answer: Answer, file: str) -> str:
    """``"; your lines in that CTA for tile 2: line 14 `...`, ..."``: the answer's operations of the process (or
    CTA) and tile the hazard was seen in, when the hazard's own text names only lines of the given kernel."""
    picked: list = []
    for op in result.trace:
        if (
            op.proc is None
            or op.proc.cluster != hazard.cluster
            or op.proc.cta != hazard.cta
            or (hazard.tile is not None and op.tile not in (hazard.tile, None))
        ):
            continue
        line = op.line
        if is_answer_line(line, answer, file) and all(p.lineno != line.lineno for p in picked):
            picked.append(line)
    if not picked:
        return ""
    shown = ", ".join(f"line {ln.lineno} `{ln.text.strip()}`" for ln in picked[-3:])
    return f"; your lines that ran in that CTA for that tile: {answer.name} {shown}"


def _more(title: str) -> str:
    return f"(ex.hint({title!r}) for a hint)"


def _error_words(error: str, answer: Answer, file: str) -> str:
    from gluon_overlap.compiler.precheck import REFUSAL_PREFIX

    text = answer_lines(error, answer)
    if text.startswith(REFUSAL_PREFIX):
        text = "the compiler for sm_100a refuses it " + text[len(REFUSAL_PREFIX) :].replace(
            "the compiler refuses this kernel for sm_100a ", ""
        )
    else:
        text = "the kernel stopped: " + text
    return text


def blocked_wait(result: ExecutionResult, answer: Answer, file: str) -> tuple[str, Any]:
    """A deadlock in words: every distinct blocked wait at a line of the answer (up to three; the first blocked
    process when none is the answer's) and the line of the first of them."""
    deadlock = result.deadlock
    assert deadlock is not None, "blocked_wait describes a run that ended in a deadlock"
    rows = [b for b in deadlock.blocked if isinstance(b, dict)] or [{}]
    picked: list[tuple[dict, Any]] = []
    seen = set()
    for b in rows:
        waits = [
            op
            for op in result.trace
            if op.kind == "wait" and op.proc is not None and str(op.proc) == f"Process({b.get('process')})"
        ]
        line = waits[-1].line if waits else None
        key = (getattr(line, "lineno", None), str(b.get("barrier", "")).split("[")[0])
        if is_answer_line(line, answer, file) and key not in seen:
            seen.add(key)
            picked.append((b, line))
    if not picked:
        picked = [(rows[0], None)]
    words = []
    for b, line in picked[:3]:
        text = (
            f"{b.get('process')} waits on {b.get('barrier')} for parity {b.get('phase')} "
            f"({b.get('completed')} phase(s) completed)"
            if b.get("barrier")
            else str(deadlock).strip()
        )
        if line is not None:
            text += f" at {where(line, answer, file)}"
        words.append(text)
    return "; ".join(words), None


def _last_line(result: ExecutionResult, answer: Answer, file: str) -> Any:
    for op in reversed(result.trace):
        if is_answer_line(op.line, answer, file):
            return op.line
    return result.trace[-1].line if result.trace else None


# =====================================================================================
# a wrong C: the first data movement that differs from the reference answer's
# =====================================================================================
def _process_key(op: Any) -> tuple:
    return (op.proc.cluster, op.proc.cta, op.proc.partition)


@dataclass(frozen=True)
class TileOf:
    """Which tile an operation works for: ``tile_id`` (the tile index the kernel computed) and ``ordinal``, the
    cluster's how-many-th tile it is (0 = its first), or None where the trace does not say."""

    cluster: int
    tile_id: int | None
    ordinal: int | None

    def __str__(self) -> str:
        if self.ordinal is None:
            return f"cluster {self.cluster}" + (f"'s tile {self.tile_id}" if self.tile_id is not None else "")
        return (
            f"cluster {self.cluster}'s tile {self.ordinal} ({_ORDINALS.get(self.ordinal, f'#{self.ordinal}')} "
            f"tile it computes, tile_id {self.tile_id})"
        )


_ORDINALS = {0: "the first", 1: "the second", 2: "the third", 3: "the fourth", 4: "the fifth"}


def data_tiles(trace: list[Any]) -> dict[int, TileOf]:
    """Per operation (by ``id``), the tile it works for, read from the data: an MMA, a TMA load or a scale copy
    belongs to the tile its process is computing (the interpreter's label: a scheduler aggregate or a persistent
    ``range(program_id, ..., num_programs)`` loop); a TMEM load to the tile of the last MMA that wrote any of its
    columns (a persistent kernel drains tile i - 1 while it computes tile i); a TMA store to the tile of its
    process's last TMEM load (it stores what that load read).  The ordinal counts the distinct tiles of the
    cluster's MMAs in issue order."""
    ordinals: dict[int, dict[Any, int]] = defaultdict(dict)
    written: dict[int, list[tuple[int, int, Any]]] = defaultdict(list)  # per cluster: (lo, hi, tile) of MMAs
    last_load: dict[int, Any] = {}  # per process: the tile of its last TMEM load
    out: dict[int, TileOf] = {}

    def of(cluster: int, tile: Any) -> TileOf:
        return TileOf(cluster, tile, ordinals[cluster].get(tile))

    for op in trace:
        if op.proc is None:
            continue
        cluster = op.proc.cluster
        if op.kind == "mma":
            seen = ordinals[cluster]
            seen.setdefault(op.tile, len(seen))
            written[cluster].append((op.window.offset, op.window.end, op.tile))
            out[id(op)] = of(cluster, op.tile)
        elif op.kind == "tmem_load":
            lo, hi = op.columns.offset, op.columns.end
            tile = next((t for a, b, t in reversed(written[cluster]) if a < hi and lo < b), op.tile)
            last_load[op.proc.pid] = tile
            out[id(op)] = of(cluster, tile)
        elif op.kind == "tma_store":
            out[id(op)] = of(cluster, last_load.get(op.proc.pid, op.tile))
        elif op.kind in ("tma_load", "scale_copy"):
            out[id(op)] = of(cluster, op.tile)
    return out


def _data_ops(trace: list[Any], tiles: dict[int, TileOf] | None = None) -> dict[tuple, list]:
    """Per (process, stream): the data movements in program order.  Streams: each TMA-loaded operand, the MMAs,
    the scale copies; the TMEM loads and the TMA stores of each tile (compared as sets: any drain order)."""
    tiles = data_tiles(trace) if tiles is None else tiles
    streams: dict[tuple, list] = defaultdict(list)
    for op in trace:
        if op.proc is None:
            continue
        key = _process_key(op)
        if op.kind == "tma_load":
            streams[(key, "tma_load", op.operand)].append(op)
        elif op.kind in ("mma", "scale_copy"):
            streams[(key, op.kind, getattr(op, "operand", ""))].append(op)
        elif op.kind in ("tmem_load", "tma_store"):
            tile = tiles.get(id(op))
            streams[(key, op.kind, tile.ordinal if tile is not None else op.local)].append(op)
    return streams


def _signature(op: Any) -> tuple:
    if op.kind == "tma_load":
        return (tuple(op.x.coord),) if op.x is not None else ()
    if op.kind == "mma":
        return (op.window.offset, op.window.end, bool(op.use_acc))
    if op.kind == "scale_copy":
        return (op.columns.offset, op.columns.end)
    if op.kind == "tmem_load":
        return (op.columns.offset, op.columns.end)
    if op.kind == "tma_store":
        return (op.row, op.col)
    return ()


def _words(op: Any) -> str:
    sig = _signature(op)
    if op.kind == "tma_load":
        return f"a TMA load of {op.operand} at {list(sig[0]) if sig else '?'}"
    if op.kind == "mma":
        return f"an MMA into TMEM columns [{sig[0]}, {sig[1]}) with use_acc={sig[2]}"
    if op.kind == "scale_copy":
        return f"a scale copy of {op.operand} into TMEM columns [{sig[0]}, {sig[1]})"
    if op.kind == "tmem_load":
        return f"a TMEM load of columns [{sig[0]}, {sig[1]})"
    return f"a TMA store of C at row {sig[0]}, column {sig[1]}"


def _what_differs(mine: Any, right: Any) -> str:
    """How an operation differs from a right kernel's at the same place, in words -- which field, never its right
    value (the message must not hand over the answer)."""
    a, b = _signature(mine), _signature(right)
    if mine.kind == "tma_load" and a and b and len(a[0]) == len(b[0]):
        dims = ", ".join(
            f"{d} ({'too large' if x > y else 'too small'})"
            for d, (x, y) in enumerate(zip(a[0], b[0], strict=True))
            if x != y
        )
        return f"its coordinate is not a right kernel's in dimension(s) {dims}"
    if mine.kind == "mma":
        wrong = [
            w
            for w, bad in (
                ("its TMEM columns (which window does this tile use?)", a[:2] != b[:2]),
                ("its use_acc (does this K step add to what the window holds?)", a[2] != b[2]),
            )
            if bad
        ]
        return "wrong " + " and ".join(wrong)
    if mine.kind == "scale_copy":
        return "its TMEM columns are not where a right kernel copies that scale tile"
    return "a right kernel makes another one there"


def first_difference(
    ran: Ran, reference: Callable[[], Spliced], args_of: Callable[[Any, torch.Tensor], tuple], answer: Answer, file: str
) -> str | None:
    """Run the reference answer on the same problem and interleaving; the learner's first data movement that
    differs from it (with its line), in words -- or None when none differs (or the reference cannot run)."""
    try:
        ref = reference()
        ref_ran = launch_case(ref.kernel, ran.run, args_of, files={ref.file})
    except Exception:  # a diagnosis is a bonus: never let it hide the verdict
        return None
    if not ref_ran.result.ok:
        return None
    my_tiles, their_tiles = data_tiles(ran.result.trace), data_tiles(ref_ran.result.trace)
    mine, theirs = _data_ops(ran.result.trace, my_tiles), _data_ops(ref_ran.result.trace, their_tiles)
    position = {id(op): n for n, op in enumerate(ran.result.trace)}

    def tile_of(op: Any, tiles: dict[int, TileOf]) -> TileOf:
        return tiles.get(id(op), TileOf(op.proc.cluster, op.tile, None))

    def first(key: tuple) -> float:
        ops = mine.get(key, [])
        return position.get(id(ops[0]), float("inf")) if ops else float("inf")

    for key in sorted(set(mine) | set(theirs), key=lambda k: (first(k), str(k))):
        a, b = mine.get(key, []), theirs.get(key, [])
        kind = key[1]
        if kind in ("tmem_load", "tma_store"):
            extra_ops = [op for op in a if _signature(op) not in {_signature(o) for o in b}]
            if extra_ops:
                op = extra_ops[0]
                return (
                    f"{where(op.line, answer, file)} made {_words(op)} for {tile_of(op, my_tiles)}, CTA "
                    f"{op.proc.cta}, which no right kernel makes there"
                )
            missing = [op for op in b if _signature(op) not in {_signature(o) for o in a}]
            if missing:
                return (
                    f"your kernel never makes {_words(missing[0])} for {tile_of(missing[0], their_tiles)}, "
                    f"CTA {missing[0].proc.cta}"
                )
            continue
        for n, (x, y) in enumerate(zip(a, b, strict=False)):
            if _signature(x) != _signature(y):
                return (
                    f"{where(x.line, answer, file)} made {_words(x)} (its #{n + 1} in CTA {x.proc.cta}, for "
                    f"{tile_of(x, my_tiles)}): {_what_differs(x, y)}"
                )
        if len(a) != len(b):
            what = key[2] or kind
            return (
                f"your kernel makes {len(a)} {kind.replace('_', ' ')}(s) of {what} in cluster {key[0][0]}, CTA "
                f"{key[0][1]}, a right kernel {len(b)}"
                + (f" (the last at {where(a[-1].line, answer, file)})" if a else "")
            )
    return _pairing_difference(ran.result.trace, ref_ran.result.trace, answer, file)


def _drain_pairs(trace: list[Any]) -> dict[tuple, list[tuple[tuple[int, int], tuple, Any]]]:
    """Per (process, tile): each TMA store of C with the TMEM load it follows (the subtile it stores), in order."""
    pairs: dict[tuple, list] = defaultdict(list)
    last: dict[tuple, Any] = {}
    for op in trace:
        if op.proc is None or op.kind not in ("tmem_load", "tma_store"):
            continue
        key = (_process_key(op), op.local)
        if op.kind == "tmem_load":
            last[key] = op
        elif key in last:
            load = last[key]
            pairs[key].append(((load.columns.offset, load.columns.end), _signature(op), op))
    return pairs


def _pairing_difference(mine: list[Any], theirs: list[Any], answer: Answer, file: str) -> str | None:
    """The same TMEM loads and the same TMA stores as a right kernel, but a subtile stored at another subtile's
    place of C: the first such store, in words."""
    ours, right = _drain_pairs(mine), _drain_pairs(theirs)
    for key, pairs in ours.items():
        wanted = {cols: store for cols, store, _ in right.get(key, [])}
        for cols, store, op in pairs:
            if cols in wanted and wanted[cols] != store:
                return (
                    f"{where(op.line, answer, file)} stored the subtile read from TMEM columns [{cols[0]}, "
                    f"{cols[1]}) at row {store[0]}, column {store[1]} of C in tile {op.tile} (cluster "
                    f"{op.proc.cluster}, CTA {op.proc.cta}), where a right kernel stores it at row "
                    f"{wanted[cols][0]}, column {wanted[cols][1]}"
                )
    return None


# =====================================================================================
# did the overlap happen?
# =====================================================================================
def overlap_report(ran: Ran, answer: Answer, file: str, num_subtiles: int) -> str | None:
    """From a timed run of one cluster: None when, at every tile change, the next tile's first MMA was issued
    before the tile's drain ended, and every CTA released the shared columns right after the last subtile that
    holds one; else what went wrong, naming the learner's line."""
    trace = [op for op in ran.result.trace if op.proc is not None and op.proc.cluster == 0]
    mmas: dict[int, list] = defaultdict(list)
    loads: dict[tuple[int, int], list] = defaultdict(list)
    for op in trace:
        if op.kind == "mma" and op.local is not None:
            mmas[op.local].append(op)
        elif op.kind == "tmem_load" and op.local is not None:
            loads[(op.cta, op.local)].append(op)
    tiles = sorted(mmas)
    windows = {i: (mmas[i][0].window.offset, mmas[i][0].window.end) for i in tiles}
    for i, nxt in zip(tiles, tiles[1:], strict=False):
        shared = set(range(*windows[i])) & set(range(*windows[nxt]))
        first_mma = min(op.t_issue for op in mmas[nxt])
        drain_end = max((op.t_end for cta in (0, 1) for op in loads.get((cta, i), [])), default=0.0)
        overlapped = bool(shared) and first_mma < drain_end
        for cta in (0, 1):
            drained = loads.get((cta, i), [])
            ready = _shared_read_at(drained, shared) if shared else None
            best = _fewest_subtiles(windows[i], shared, num_subtiles) if shared else None
            released = _release_after(trace, cta, i, drained)
            if not overlapped:
                if not shared:
                    cause = (
                        f"tile {nxt} writes TMEM columns [{windows[nxt][0]}, {windows[nxt][1]}), which share "
                        f"nothing with tile {i}'s [{windows[i][0]}, {windows[i][1]}): the two windows must "
                        "overlap (and alternate), or they do not fit beside the scales"
                    )
                elif ready is not None and best is not None and ready > best:
                    op = drained[ready - 1]
                    cause = (
                        f"CTA {cta}'s drain of tile {i} reads the shared columns {min(shared)}..{max(shared)} "
                        f"only by its TMEM load #{ready} (at {where(op.line, answer, file)}), but {best} "
                        "subtile(s) hold them: drain those first"
                    )
                elif released is None:
                    after = _first_arrive_after(trace, cta, i, drained)
                    at = (
                        f"; its first release comes after its last TMEM load, at {where(after, answer, file)}"
                        if after is not None
                        else ""
                    )
                    cause = (
                        f"CTA {cta}'s epilogue releases nothing before its whole drain of tile {i} is done"
                        f"{at}: release the shared columns as soon as they are read"
                    )
                else:
                    cause = (
                        f"tile {nxt}'s MMA waited for more than the release at "
                        f"{where(released[1], answer, file)}: it may wait only for what it overwrites"
                    )
                return f"no overlap: tile {nxt}'s first MMA was issued only after tile {i}'s drain ended; {cause}"
            if ready is not None and best is not None and ready > best:
                op = drained[ready - 1]
                return (
                    f"tile {i}, CTA {cta}: the drain reads the shared columns {min(shared)}..{max(shared)} only "
                    f"by its TMEM load #{ready} (at {where(op.line, answer, file)}), but {best} subtile(s) hold "
                    "them: drain those first, so the next tile starts as early as it can"
                )
            if released is not None and ready is not None and released[0] > ready:
                return (
                    f"tile {i}, CTA {cta}: the release (the arrive at {where(released[1], answer, file)}) comes "
                    f"after {released[0]} of its {len(drained)} TMEM loads, but the shared columns have all been "
                    "read before that: later than needed"
                )
    return None


def _shared_read_at(drained: list, shared: set[int]) -> int | None:
    """After how many of ``drained`` (TMEM loads in order) every shared column has been read (None: never)."""
    read: set[int] = set()
    for n, op in enumerate(drained, 1):
        read |= set(range(op.columns.offset, op.columns.end))
        if shared <= read:
            return n
    return None


def _fewest_subtiles(window: tuple[int, int], shared: set[int], num_subtiles: int) -> int:
    """How many of the window's subtiles hold a shared column: the earliest possible release."""
    width = (window[1] - window[0]) // num_subtiles
    return len({(c - window[0]) // width for c in shared})


def _first_arrive_after(trace: list, cta: int, tile: int, drained: list) -> Any:
    """The line of the first arrive of the draining process after its last TMEM load of ``tile`` (or None)."""
    if not drained:
        return None
    proc, last, seen = drained[0].proc, drained[-1], False
    for op in trace:
        if op is last:
            seen = True
        elif seen and op.proc is proc and op.kind == "arrive":
            return op.line
    return None


def _release_after(trace: list, cta: int, tile: int, drained: list) -> tuple[int, Any] | None:
    """The first arrive of CTA ``cta``'s draining process during tile ``tile``'s drain that comes before its last
    TMEM load: ``(TMEM loads of the tile before it, its line)``; None when it arrives only after the whole drain."""
    if not drained:
        return None
    proc = drained[0].proc
    count = 0
    for op in trace:
        if op.proc is not proc:
            continue
        if op.kind == "tmem_load" and op.local == tile:
            count += 1
        elif op.kind == "arrive" and op.local == tile and count < len(drained):
            return count, op.line
    return None


# =====================================================================================
# a find-the-bug answer: an edited copy of a kernel module
# =====================================================================================
#: a fix changes a line or two; an answer that changes more is another kernel
MAX_CHANGED_LINES = 6


def check_edited_kernel(
    title: str,
    kernel: Any,
    buggy_source: str,
    runs: tuple[Run, ...],
    args_of: Callable[[Any, torch.Tensor], tuple],
    *,
    allowed: frozenset,
    extra: Callable[[Ran], str | None] | None = None,
) -> Outcome:
    """A find-the-bug answer: ``kernel`` must be a ``@gluon.jit`` kernel of a copy of ``buggy_source`` edited in a
    few lines (not the library's own kernel); then it runs like a spliced answer (its whole file is the
    learner's)."""
    import difflib
    from pathlib import Path

    fn = getattr(kernel, "fn", None)
    code = getattr(fn, "__code__", None)
    if fn is None or code is None:
        return Outcome(
            False, f"expected a @gluon.jit kernel (load_kernel(fixed, ...)), got {type(kernel).__name__}", []
        )
    if guard.library_file(code.co_filename):
        return Outcome(
            False,
            f"that is the library's own kernel ({guard.describe(code)}): fix the buggy text and "
            "load it with load_kernel",
            [],
        )
    path = Path(code.co_filename)
    try:
        text = path.read_text()
    except OSError:
        return Outcome(False, f"the kernel's source file {path.name} cannot be read: load it with load_kernel", [])
    changed = [
        line
        for line in difflib.unified_diff(buggy_source.splitlines(), text.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    if len(changed) > 2 * MAX_CHANGED_LINES:
        return Outcome(
            False,
            f"your kernel differs from the buggy one in {len(changed)} added or removed lines: the "
            "bug is in one line; fix that line of ex.buggy_source() and leave the rest",
            [],
        )
    from gluon_overlap.text import DISPLAY_NAMES

    module = fn.__globals__
    shown = Path(DISPLAY_NAMES.get(str(path), path.name))  # the name load_kernel gave it, not its hashed copy's
    answer = Answer(shown, text, types_module(module))
    spliced = Spliced(answer, answer.module, kernel, text)
    return check_runs(spliced, runs, args_of, title=title, allowed=allowed, extra=extra)


def types_module(namespace: dict) -> Any:
    """A module-like view of a function's globals (what :class:`Spliced` needs: ``__file__``)."""
    import types

    mod = types.ModuleType(namespace.get("__name__", "kernel"))
    mod.__dict__.update(namespace)
    return mod
