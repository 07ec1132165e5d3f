"""Every exercise's checker passes its solution and fails wrong answers (with what went wrong, never a traceback);
the checkers' references agree with independent ones (brute force, the compiled PTX); the library's answers are
refused whatever the route (tests/test_wrong_answers.py holds ten and more wrong answers per exercise)."""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
import types

import pytest

from gluon_overlap import exercises, swizzle
from gluon_overlap.compiler import compile as gc
from gluon_overlap.exercises import guard, kernels, nb02, nb03, nb04, nb05, nb06

ALL = exercises.exercises()


@pytest.fixture(scope="module")
def learner_solutions(tmp_path_factory):
    """The solutions module's text in a file of the learner's (the library's own functions are refused)."""
    from gluon_overlap.exercises import solutions

    path = tmp_path_factory.mktemp("learner") / "learner_solutions.py"
    path.write_text(inspect.getsource(solutions))
    spec = importlib.util.spec_from_file_location("learner_solutions", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["learner_solutions"] = module
    spec.loader.exec_module(module)
    return module


def _as_learner(solution, learner):
    if isinstance(solution, types.FunctionType) and solution.__module__ == "gluon_overlap.exercises.solutions":
        return getattr(learner, solution.__name__)
    return solution


@pytest.mark.parametrize("exercise", ALL, ids=[f"{e.notebook}-{e.name}" for e in ALL])
def test_checker_passes_the_solution(exercise, learner_solutions, capsys):
    result = exercise.checker(_as_learner(exercise.solution(), learner_solutions))
    assert result.passed, str(result)
    assert capsys.readouterr().out.startswith("PASS")


def test_every_exercise_has_hints_and_a_solution(capsys):
    from gluon_overlap.exercises import hints, solution, writing_exercises

    titles = {f"{e.notebook} {e.name}" for e in ALL} | {e.title for e in writing_exercises()}
    assert titles == set(hints.HINTS)
    for title in sorted(titles):
        for level in (1, 2, 3):
            hints.hint(title, level)
        out = capsys.readouterr().out
        assert out.count(f"[{title}] hint") == 3 and "recipe" in out
        solution(title)
        assert capsys.readouterr().out.strip()
    with pytest.raises(ValueError, match="no hints"):
        hints.hint("99 nope")
    with pytest.raises(ValueError, match="level"):
        hints.hint("04 drain order", 4)


def test_hints_go_one_tier_deeper_per_call(capsys):
    from gluon_overlap.exercises import hints

    hints._shown.pop("04 early release", None)
    for tier in ("nudge", "concept", "recipe", "recipe"):
        hints.hint("04 early release")
        assert f"the {tier}:" in capsys.readouterr().out


def test_byte_offset_reference_is_the_closed_form():
    """The checker's brute force (unique ids through swizzle_scales) agrees with swizzle.scale_byte_offset."""
    for mn, scale_k in nb02.byte_shapes():
        positions = nb02.swizzled_positions(mn, scale_k)
        assert len(positions) == mn * scale_k
        assert all(swizzle.scale_byte_offset(r, k, scale_k) == p for (r, k), p in positions.items())


def test_barrier_reference_matches_the_compiled_inits():
    """The barrier checker's reference reads scopes and counts from the kernel's source; the PTX of the compiled
    kernel must init exactly those counts (pair barriers with twice the source's count)."""
    from gluon_overlap.kernel import NUM_BUFFERS

    want = nb05._reference_barriers()
    copies = {"load_empty": NUM_BUFFERS, "load_ready": NUM_BUFFERS, "acc_empty": 2, "acc_ready": 2, "overlap": 1}
    expected = sorted(n for name, (_, n) in want.items() for _ in range(copies[name]))
    ptx = gc.strip_ptx_comments(gc.compile_variant("nvfp4", "nvfp4", True).ptx)
    inits = sorted(int(x) for x in re.findall(r"mbarrier\.init\.[\w:.]+\s+\[[^\]]+\],\s*(\d+);", ptx))
    assert inits == expected


def test_expect_reference_is_the_compiled_kernels_and_reaches_past_the_shipped_plans():
    """The expect checker's reference (Gluon's nbytes_per_cta over freshly built descriptors) is the expect_tx count
    of the compiled PTX at the package's BLOCK_K; it asks about every pair at BLOCK_K values the package does not
    ship too, so a table of the four shipped counts cannot pass (tests/support/wrong_answers.py: 'a lookup table')."""
    from gluon_overlap.tmem import SEED_FORMAT_PAIRS, make_plan

    for a, b in SEED_FORMAT_PAIRS:
        assert nb03.descriptor_expect_bytes(make_plan(a, b, overlap=False)) == nb03.compiled_expect_bytes(a, b)
    plans = nb03.expect_plans()
    shipped = {(a, b): make_plan(a, b).block_k for a, b in SEED_FORMAT_PAIRS}
    others = [p for p in plans if p.block_k != shipped[(p.a_format, p.b_format)]]
    assert {(p.a_format, p.b_format) for p in others} == set(SEED_FORMAT_PAIRS)  # every pair at another BLOCK_K
    assert len(plans) >= 10
    assert nb03.descriptor_expect_bytes(make_plan("nvfp4", "nvfp4", block_k=128)) == 19456  # 8192 x 2 + 1024 + 2048


def test_barrier_fail_names_no_barrier_and_keeps_the_dicts_order(capsys):
    """With two scopes, naming the first barrier whose scope is wrong names its answer: a FAIL says how many are
    wrong and the question to ask, in no barrier's name; format errors come in the answer's own key order."""
    from gluon_overlap.exercises import solutions

    first_attempt = {b: ("cta", 1) for b in ("load_empty", "load_ready", "acc_empty", "acc_ready", "overlap")}
    result = nb05.check_barriers(first_attempt, quiet=True)
    assert not result.passed and result.message.startswith("3 of 5 scopes are wrong"), result.message
    assert not any(b in result.message for b in first_attempt), result.message
    counts = {k: (scope, 1) for k, (scope, _) in solutions.BARRIERS.items()}
    result = nb05.check_barriers(counts, quiet=True)
    assert "3 of 5 arrival counts" in result.message and not any(b in result.message for b in counts)
    bad = {"overlap": ("pair", "2"), "load_empty": ("cta", "1"), "load_ready": ("pair", 2), "acc_empty": ("pair", 2),
           "acc_ready": ("cta", 1)}
    assert nb05.check_barriers(bad, quiet=True).message.startswith("overlap:")  # the dict's first key, not sorted
    for library in (nb05._reference_barriers(), dict(solutions.BARRIERS), solutions.BARRIERS):
        assert "library" in nb05.check_barriers(library, quiet=True).message
    assert not hasattr(nb05, "kernel_barriers")


def test_planted_bugs_are_one_edit_each():
    for module, bug in ((nb03, nb03.BUG), (nb04, nb04.BUG)):
        src = module.buggy_source()
        assert src.count(bug[1]) == 1 and bug[0] not in src


def test_patch_source_refuses_ambiguous_edits():
    with pytest.raises(ValueError, match="exactly once, found 0 times"):
        kernels.patch_source("a = 1\n", "b = 2", "c")
    with pytest.raises(ValueError, match="exactly once, found 2 times"):
        kernels.patch_source("a\na\n", "a", "b")
    with pytest.raises(ValueError, match="no @gluon.jit function named 'nope'"):
        kernels.load_kernel("x = 1\n", "nope", "no_kernel")


def test_the_06_mystery_kernel_really_has_its_bug():
    """The bug of notebook 06's exercise is caught by the executor (a race on the staging buffer)."""
    from gluon_overlap.emulate.runs import emulate
    from gluon_overlap.formats import random_problem

    problem = random_problem(512, 768, 512, "nvfp4", "nvfp4", seed=11)
    run = emulate(problem, clusters=2, kernel=str(nb06.mystery_kernel()))
    assert any(h.kind == "smem-write-after-read" for h in run.hazards)


def _library_routes() -> dict[str, list]:
    """The library's answer reached every way a function answer can: the function itself, a wrapper calling it, a
    wrapper that imports it at call time, a copied code object, and library source run by exec."""
    from gluon_overlap.exercises import solutions
    from gluon_overlap.plots.tmem import scale_cell

    byte_source = inspect.getsource(solutions.scale_byte_offset)
    namespace: dict = {}
    exec(compile(byte_source, "<string>", "exec"), namespace)  # the library's text, compiled at run time
    return {
        "02 scale byte offset": [
            swizzle.scale_byte_offset, solutions.scale_byte_offset,
            lambda row, k, scale_k: swizzle.scale_byte_offset(row, k, scale_k),
            lambda row, k, scale_k: __import__("importlib").import_module("gluon_overlap.swizzle").scale_byte_offset(
                row, k, scale_k),
            lambda row, k, scale_k: sys.modules["gluon_overlap.swizzle"].scale_byte_offset(row, k, scale_k),
            types.FunctionType(solutions.scale_byte_offset.__code__, {}, "mine"),
            namespace["scale_byte_offset"]],
        "02 scale TMEM column": [lambda plan, operand, row, k: (scale_cell(plan, operand, row, k).column,
                                                                scale_cell(plan, operand, row, k).lanes)],
        "08 expect bytes": [nb03.compiled_expect_bytes, solutions.expect_bytes,
                            lambda plan: nb03.descriptor_expect_bytes(
                                __import__("gluon_overlap.tmem").tmem.make_plan(plan.a_format, plan.b_format,
                                                                                 block_k=plan.block_k))],
        "04 drain order": [lambda plan, tile: plan.drain_order(tile), solutions.drain_order],
        "04 early release": [lambda plan: plan.early_release_subtile, solutions.early_release],
        "05 Counter walk": [lambda j, n, start: nb05.counter_walk(n, start)[j]],
    }


@pytest.mark.parametrize("title", sorted(_library_routes()))
def test_checker_refuses_the_library_answer(title, capsys):
    exercise = next(e for e in ALL if f"{e.notebook} {e.name}" == title)
    for answer in _library_routes()[title]:
        result = exercise.checker(answer)
        out = capsys.readouterr().out
        assert not result.passed and out.startswith("FAIL"), out
        assert any(w in out for w in ("library", "run time", "raised")), out


def test_04_fix_that_disables_the_overlap_fails():
    """Handing back the whole drain before the release is correct C, but no overlap: not the fix."""
    no_overlap = kernels.patch_source(nb04.buggy_source(), nb04.BUG[1],
                                      "HEAD: gl.constexpr = TMEM_PLAN.num_subtiles if")
    result = nb04.check_overlap(kernels.load_kernel(no_overlap, "overlap_kernel", "no_overlap"), quiet=True)
    assert not result.passed and "no overlap" in result.message, result.message


def test_traced_call_names_the_line_and_sees_library_code():
    def answer(x):
        y = x + 1
        return swizzle.scale_byte_offset(y, 0, 4)

    traced = guard.traced_call(answer, 3)
    assert traced.value == swizzle.scale_byte_offset(4, 0, 4)
    assert "return swizzle.scale_byte_offset" in traced.return_line[2]
    assert "the library's gluon_overlap/swizzle.py" in guard.foreign_function_code(traced)
