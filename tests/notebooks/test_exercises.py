"""Every exercise's checker passes its solution and fails wrong answers (with a hint, never a traceback);
the checkers' references agree with independent ones (brute force, the compiled PTX)."""

from __future__ import annotations

import re

import pytest

from gluon_overlap.compiler import compile as gc
from gluon_overlap import exercises, swizzle
from gluon_overlap.exercises import kernels, nb02, nb03, nb04, nb05, nb06

ALL = exercises.exercises()


def _wrong_answers() -> dict[tuple[str, str], list]:
    """At least one wrong answer per exercise (typical misconceptions)."""
    from gluon_overlap.exercises import solutions as s

    def old_lane_reading(plan, operand, row, k):  # "one row per lane": the notebook's old claim
        column, _ = s.scale_tmem(plan, operand, row, k)
        return column - (row % 128) // 32 + k % 4, [row % 128]

    return {
        ("02", "scale byte offset"): [lambda row, k, scale_k: row * 16 + k, lambda row, k, scale_k: 1 / 0],
        ("02", "scale TMEM column"): [old_lane_reading, lambda plan, operand, row, k: "464"],
        ("03", "expect bytes"): [lambda a, b: 2 * s.expect_bytes(a, b)],
        ("03", "find the bug"): [nb03.buggy_kernel],
        ("04", "drain order"): [lambda plan, tile: list(range(plan.num_subtiles)), lambda plan, tile: [0]],
        ("04", "early release"): [lambda plan: plan.overlap_cols // plan.epilogue_block_n,
                                  lambda plan: plan.early_release_subtile + 1],
        ("04", "find the bug"): [nb04.buggy_kernel],
        ("05", "Counter"): [lambda j, n, start: (j % n, (j // n) & 1)],
        ("05", "barrier scopes"): [{name: (scope, 1) for name, (scope, _) in s.BARRIERS.items()},
                                   {name: ("pair", n) for name, (_, n) in s.BARRIERS.items()}, ["load_ready"]],
        ("06", "find the bug"): [lambda fix=fix: fix for fix in nb06.wrong_fixes()] + [lambda: "not a pair"],
    }


def test_every_exercise_has_wrong_answers_here():
    assert {(e.notebook, e.name) for e in ALL} == set(_wrong_answers())
    assert {e.notebook for e in ALL} == {"02", "03", "04", "05", "06"}


@pytest.mark.parametrize("exercise", ALL, ids=[f"{e.notebook}-{e.name}" for e in ALL])
def test_checker_passes_the_solution(exercise, capsys):
    result = exercise.checker(exercise.solution())
    assert result.passed, str(result)
    assert capsys.readouterr().out.startswith("PASS")


@pytest.mark.parametrize("exercise", ALL, ids=[f"{e.notebook}-{e.name}" for e in ALL])
def test_checker_fails_wrong_answers(exercise, capsys):
    for wrong in _wrong_answers()[(exercise.notebook, exercise.name)]:
        answer = wrong() if exercise.needs_executor and exercise.name == "find the bug" else wrong
        result = exercise.checker(answer)
        out = capsys.readouterr().out
        assert not result.passed and out.startswith("FAIL"), out
        assert "\n" not in out.strip() and "Traceback" not in out


def test_byte_offset_reference_is_the_closed_form():
    """The checker's brute force (unique ids through swizzle_scales) agrees with swizzle.scale_byte_offset."""
    for mn, scale_k in nb02.BYTE_SHAPES:
        positions = nb02.swizzled_positions(mn, scale_k)
        assert len(positions) == mn * scale_k
        assert all(swizzle.scale_byte_offset(r, k, scale_k) == p for (r, k), p in positions.items())


def test_barrier_reference_matches_the_compiled_inits():
    """kernel_barriers reads scopes and counts from the kernel's source; the PTX of the compiled
    kernel must init exactly those counts (pair barriers with twice the source's count)."""
    from gluon_overlap.kernel import NUM_BUFFERS

    want = nb05.kernel_barriers()
    copies = {"load_empty": NUM_BUFFERS, "load_ready": NUM_BUFFERS, "acc_empty": 2, "acc_ready": 2, "overlap": 1}
    expected = sorted(n for name, (_, n) in want.items() for _ in range(copies[name]))
    ptx = gc.strip_ptx_comments(gc.compile_variant("nvfp4", "nvfp4", True).ptx)
    inits = sorted(int(x) for x in re.findall(r"mbarrier\.init\.[\w:.]+\s+\[[^\]]+\],\s*(\d+);", ptx))
    assert inits == expected


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
    from gluon_overlap.formats import random_problem
    from gluon_overlap.emulate.runs import emulate

    problem = random_problem(512, 768, 512, "nvfp4", "nvfp4", seed=11)
    run = emulate(problem, clusters=2, kernel=str(nb06.mystery_kernel()))
    assert any(h.kind == "smem-write-after-read" for h in run.hazards)


def _library_answers() -> dict[tuple[str, str], list]:
    """The library's own function (or a wrapper calling the library's answer) handed in as the learner's."""
    from gluon_overlap.plots.tmem import scale_cell

    return {
        ("02", "scale byte offset"): [swizzle.scale_byte_offset,
                                      lambda row, k, scale_k: swizzle.scale_byte_offset(row, k, scale_k)],
        ("02", "scale TMEM column"): [lambda plan, operand, row, k: (scale_cell(plan, operand, row, k).column,
                                                                    scale_cell(plan, operand, row, k).lanes)],
        ("03", "expect bytes"): [nb03.compiled_expect_bytes],
        ("04", "drain order"): [lambda plan, tile: plan.drain_order(tile)],
        ("04", "early release"): [lambda plan: plan.early_release_subtile],
        ("05", "Counter"): [lambda j, n, start: nb05.counter_walk(n, start)[j]],
    }


@pytest.mark.parametrize("key", sorted(_library_answers()), ids=lambda k: f"{k[0]}-{k[1]}")
def test_checker_refuses_the_library_answer(key, capsys):
    exercise = next(e for e in ALL if (e.notebook, e.name) == key)
    for answer in _library_answers()[key]:
        result = exercise.checker(answer)
        out = capsys.readouterr().out
        assert not result.passed and out.startswith("FAIL") and "library" in out, out


def test_04_fix_that_disables_the_overlap_fails():
    """Handing back the whole drain before the release is correct C, but no overlap: not the fix."""
    no_overlap = kernels.patch_source(nb04.buggy_source(), nb04.BUG[1],
                                      "HEAD: gl.constexpr = TMEM_PLAN.num_subtiles if")
    result = nb04.check_overlap(kernels.load_kernel(no_overlap, "overlap_kernel", "no_overlap"), quiet=True)
    assert not result.passed and "no overlap" in result.message, result.message
