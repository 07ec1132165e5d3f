"""Exercises of notebook 05 (the warp-specialized kernel): Counter parities, barrier scopes."""

from __future__ import annotations

import ast
from collections.abc import Callable

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
                return verdict(name, False, f"return (index, phase); your function{answered_at(name)} gave {got!r}",
                               quiet=quiet)
            if got_norm != want:
                role = "a producer (starts at 1)" if start else "a consumer (starts at 0)"
                return verdict(name, False, f"use {j} of a ring of {n}, {role}: the Counter gives barrier {want[0]} "
                               f"parity {want[1]}; your function{answered_at(name)} said {got_norm}. {more(name)}",
                               quiet=quiet)
    return verdict(name, True, f"{len(RINGS)} rings x {USES} uses agree with the kernel's Counter.", quiet=quiet)


def kernel_barriers() -> dict[str, tuple[str, int]]:
    """``{barrier: (scope, arrivals per phase)}`` read from the source of ``gluon_overlap.kernel``:
    ``"pair"`` for ``allocate_mbarrier(..., two_ctas=...)``, else ``"cta"``; arrivals = the init
    count (``tcgen05_mma_barrier_count`` is 1 for this kernel), twice that for a pair barrier,
    whose one copy in the lead CTA receives both CTAs' arrivals (docs/SEMANTICS.md, section 3)."""
    from gluon_overlap import kernel
    from gluon_overlap.compiler.compile import kernel_source

    tree = ast.parse(kernel_source(kernel.mma_scaled_warp_specialized_kernel))
    scopes: dict[str, str] = {}
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(node.targets[0], ast.Name):
            call = node.value
            if getattr(call.func, "attr", "") == "allocate_mbarrier":
                pair = any(kw.arg == "two_ctas" for kw in call.keywords)
                scopes[node.targets[0].id] = "pair" if pair else "cta"
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "init":
            target = node.args[0]
            while isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute):  # bars.index(s)
                target = target.func.value
            count = next(kw.value for kw in node.keywords if kw.arg == "count")
            if isinstance(target, ast.Name):  # mma_barrier_count == 1
                counts[target.id] = count.value if isinstance(count, ast.Constant) and isinstance(count.value, int) \
                    else 1
    result: dict[str, tuple[str, int]] = {}
    for var, scope in scopes.items():
        barrier = var.removesuffix("_bars").removesuffix("_bar")
        result[barrier] = (scope, counts[var] * (2 if scope == "pair" else 1))
    return result


def check_barriers(answer: dict, *, quiet: bool = False) -> Verdict:
    """``answer``: ``{barrier: (scope, arrivals)}`` for the kernel's five barriers -- scope
    ``"pair"`` or ``"cta"``, and how many arrivals complete one phase of the copy that is waited on."""
    import gluon_overlap.exercises.solutions as solutions

    name = "05 barrier scopes"
    want = kernel_barriers()
    if answer is solutions.BARRIERS:
        return verdict(name, False, "that is the library's own table (solutions.BARRIERS): write yours", quiet=quiet)
    if not isinstance(answer, dict) or set(answer) != set(want):
        got = sorted(answer) if isinstance(answer, dict) else type(answer).__name__
        return verdict(name, False, f"give a dict with the keys {sorted(want)}, got {got}", quiet=quiet)
    for barrier, (scope, arrivals) in sorted(want.items()):
        got = answer[barrier]
        if not isinstance(got, tuple | list) or len(got) != 2:
            return verdict(name, False, f"{barrier}: give (scope, arrivals), got {got!r}", quiet=quiet)
        if got[0] != scope:
            return verdict(name, False, f"{barrier}: you said {got[0]!r}; that is not how it is scoped (which "
                           f"barriers must the lead wait on before it issues?). {more(name)}", quiet=quiet)
        if got[1] != arrivals or isinstance(got[1], bool):
            how = ("not a count" if not isinstance(got[1], int) or isinstance(got[1], bool)
                   else "too many" if got[1] > arrivals else "too few")
            return verdict(name, False, f"{barrier}: you said {got[1]!r} arrival(s) per phase: {how} for a phase of "
                           f"the copy that is waited on. {more(name)}", quiet=quiet)
    return verdict(name, True, "all five barriers: scope and arrivals right.", quiet=quiet)
