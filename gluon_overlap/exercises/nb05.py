"""Exercises of notebook 05 (the warp-specialized kernel): Counter parities, barrier scopes."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import NamedTuple

from gluon_overlap.exercises.check import Verdict, answered_at, call_answer, more, verdict

#: (num_barriers, start phase) of the rings the Counter checker walks, 12 uses each
RINGS = ((5, 0), (5, 1), (2, 0), (2, 1), (1, 1), (1, 0), (3, 0), (7, 1))
USES = 16


def counter_walk(num_barriers: int, start_phase: int, uses: int = USES) -> list[tuple[int, int]]:
    """``(index, phase)`` of uses ``0 ... uses - 1``, from running the kernel's own ``Counter``
    (``create`` then ``next``) on the CPU executor."""
    from gluon_overlap.interp.launch import call
    from gluon_overlap.kernel import Counter

    counter = call(Counter.create, start_phase, num_barriers)
    walk = []
    for _ in range(uses):
        walk.append((int(counter.index), int(counter.phase)))
        counter = call(Counter.next, counter)
    return walk


def counter_miss(j: int, n: int, got: tuple[int, int], want: tuple[int, int], pred_false: bool = False) -> str:
    """Which property of a ring walk failed at use ``j`` -- the start, an advance, the wrap-around, ``pred=False``
    -- and whether the index or the parity is off; never the right pair."""
    what = " and ".join(
        w for w, bad in (("the barrier index", got[0] != want[0]), ("the parity", got[1] != want[1])) if bad
    )
    if pred_false:
        branch = "a use after next(pred=False), which must leave the counter as it was"
    elif j == 0:
        branch = "the first use, straight from the start phase"
    elif j < n:
        branch = f"a use within the first lap (uses 0 to {n - 1})"
    elif j % n == 0:
        branch = "a wrap-around (the index comes back to barrier 0)"
    else:
        branch = f"a use within lap {j // n} (after {j // n} wrap-around(s))"
    return f"{what} is wrong at {branch}"


def check_counter(fn: Callable[[int, int, int], tuple], *, quiet: bool = False) -> Verdict:
    """``fn(j, num_barriers, start_phase) -> (index, phase)``: which barrier use ``j`` (from 0) of a
    ring picks and which parity it waits for; checked against the real ``Counter``."""
    name = "05 Counter walk"
    for n, start in RINGS:
        for j, want in enumerate(counter_walk(n, start)):
            got, failed = call_answer(name, fn, j, n, start, quiet=quiet)
            if failed is not None:
                return failed
            try:
                if isinstance(got, (str, bytes)) or len(got) != 2 or any(isinstance(g, bool) for g in got):
                    raise ValueError
                got_norm = (int(got[0]), int(got[1]))
            except (TypeError, ValueError, IndexError):
                return verdict(
                    name, False, f"return (index, phase); your function{answered_at(name)} gave {got!r}", quiet=quiet
                )
            if got_norm != want:
                return verdict(
                    name,
                    False,
                    f"use {j} of a ring of {n} barriers, start phase {start}: your function"
                    f"{answered_at(name)} said {got_norm}; {counter_miss(j, n, got_norm, want)}. "
                    f"{more(name)}",
                    quiet=quiet,
                )
    return verdict(name, True, f"{len(RINGS)} rings x {USES} uses agree with the kernel's Counter.", quiet=quiet)


class BarrierFact(NamedTuple):
    """One barrier as the kernel's source declares it (the checker's reference; an answer made of these is the
    library's, not the learner's)."""

    scope: str
    arrivals: int


def source_init_counts() -> dict[str, int]:
    """``{barrier: count}`` of the ``mbarrier.init(..., count=...)`` lines in ``gluon_overlap.kernel``'s kernel
    (``tcgen05_mma_barrier_count`` is 1 for it): what the source says, before the compiler doubles a pair barrier's
    count.  Not the exercise's answer -- every count is 1."""
    return {barrier: count for barrier, (count, _) in _read_barriers().items()}


def _read_barriers() -> dict[str, tuple[int, bool]]:
    """``{barrier: (init count, pair-scoped)}`` read from the kernel's source by its AST, in allocation order."""
    from gluon_overlap import kernel
    from gluon_overlap.compiler.compile import kernel_source

    tree = ast.parse(kernel_source(kernel.mma_scaled_warp_specialized_kernel))
    pairs: dict[str, bool] = {}
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.targets[0], ast.Name):
            call = node.value
            if getattr(call.func, "attr", "") == "allocate_mbarrier":
                pairs[node.targets[0].id] = any(kw.arg == "two_ctas" for kw in call.keywords)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "init":
            target = node.args[0]
            while isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute):  # bars.index(s)
                target = target.func.value
            count = next(kw.value for kw in node.keywords if kw.arg == "count")
            if isinstance(target, ast.Name):  # mma_barrier_count == 1
                counts[target.id] = (
                    count.value if isinstance(count, ast.Constant) and isinstance(count.value, int) else 1
                )
    return {var.removesuffix("_bars").removesuffix("_bar"): (counts[var], pair) for var, pair in pairs.items()}


def _reference_barriers() -> dict[str, BarrierFact]:
    """The checker's reference: per barrier its scope (``"pair"`` for ``allocate_mbarrier(..., two_ctas=...)``,
    else ``"cta"``) and the arrivals that complete a phase of the copy that is waited on (the init count, twice
    that for a pair barrier, whose one copy in the lead CTA receives both CTAs' arrivals: docs/SEMANTICS.md §3)."""
    return {
        barrier: BarrierFact("pair" if pair else "cta", count * (2 if pair else 1))
        for barrier, (count, pair) in _read_barriers().items()
    }


SCOPE_QUESTION = (
    "ask of each barrier who waits on it and who arrives: must the lead CTA wait on it before it issues "
    "the MMA, for work of both CTAs (one copy, in the lead, that both CTAs arrive on), or is it "
    "signalled by the MMA's completion, which the lead's commit multicasts into each CTA's own copy?"
)
COUNT_QUESTION = (
    "count, for each barrier, the arrivals that complete one phase of the copy that is waited on: who "
    "arrives on it, and from how many CTAs?"
)


def _library_made(answer: dict) -> bool:
    """The answer is (or is built from) the library's own table: the checker's reference or the solution's."""
    import gluon_overlap.exercises.solutions as solutions

    theirs = {id(v) for v in solutions.BARRIERS.values()}
    return answer is solutions.BARRIERS or any(isinstance(v, BarrierFact) or id(v) in theirs for v in answer.values())


def check_barriers(answer: dict, *, quiet: bool = False) -> Verdict:
    """``answer``: ``{barrier: (scope, arrivals)}`` for the kernel's five barriers -- scope ``"pair"`` or ``"cta"``,
    and how many arrivals complete one phase of the copy that is waited on.  A FAIL says how many scopes (then
    counts) are wrong and the question that settles them, never which barrier: with two scopes, naming the barrier
    would name its answer."""
    name = "05 barrier scopes"
    want = _reference_barriers()
    if not isinstance(answer, dict) or set(answer) != set(want):
        got = list(answer) if isinstance(answer, dict) else type(answer).__name__
        return verdict(name, False, f"give a dict with the keys {list(want)}, got {got}", quiet=quiet)
    if _library_made(answer):
        return verdict(
            name,
            False,
            "that table is the library's own (its reference or solutions.BARRIERS): write yours",
            quiet=quiet,
        )
    for barrier in answer:  # the dict's own order
        got = answer[barrier]
        if not isinstance(got, tuple | list) or len(got) != 2:
            return verdict(name, False, f"{barrier}: give (scope, arrivals), got {got!r}", quiet=quiet)
        if got[0] not in ("pair", "cta"):
            return verdict(name, False, f'{barrier}: the scope is "pair" or "cta", got {got[0]!r}', quiet=quiet)
        if not isinstance(got[1], int) or isinstance(got[1], bool):
            return verdict(name, False, f"{barrier}: {got[1]!r} is not a count of arrivals (give an int)", quiet=quiet)
    total = len(want)
    scopes = sum(answer[b][0] != want[b].scope for b in answer)
    if scopes:
        return verdict(name, False, f"{scopes} of {total} scopes are wrong: {SCOPE_QUESTION} {more(name)}", quiet=quiet)
    counts = sum(answer[b][1] != want[b].arrivals for b in answer)
    if counts:
        return verdict(
            name,
            False,
            f"the scopes are right; {counts} of {total} arrival counts per phase are wrong: "
            f"{COUNT_QUESTION} {more(name)}",
            quiet=quiet,
        )
    return verdict(name, True, "all five barriers: scope and arrivals right.", quiet=quiet)
