"""The writing exercises (notebooks 03a-05b): each checker passes the right answer; it reads an answer file before
running any of it and refuses what reaches for the library; a compiler error, a hazard and a deadlock come back in
one line with the answer's line; the harnesses cut out exactly the asked part.  The wrong answers, ten and more per
exercise, are tests/test_wrong_answers.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gluon_overlap.exercises import capstone, guard
from gluon_overlap.exercises import writing as W

EXERCISES = {e.title: e for e in W.writing_exercises()}


def _answer(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _one_line_fail(result, out: str) -> None:
    assert not result.passed and out.startswith("FAIL"), out
    assert "\n" not in out.strip() and "Traceback" not in out


def test_eight_writing_exercises_in_03a_to_05b():
    assert set(EXERCISES) == {"03a K loop", "03a epilogue", "03b descriptors", "04 release", "05 Counter",
                              "05 load partition", "05b capstone", "05b adaptation"}


@pytest.mark.parametrize("title", sorted(EXERCISES))
def test_right_answer_passes(title, tmp_path, capsys):
    """The solution, copied where a learner's file would be (its file name kept: the spliced kernel is the one the
    notebook checks, one compile shared through Triton's cache)."""
    exercise = EXERCISES[title]
    result = exercise.check(_answer(tmp_path, exercise.solution_path().name, exercise.solution_text()),
                            progress=False)
    assert result.passed, str(result)
    assert capsys.readouterr().out.startswith("PASS")
    if title.startswith("05b"):
        assert "the overlap happened" in result.message and "TMEM loads" in result.message
        from gluon_overlap.exercises.capstone import ADAPTATION_PAIRS
        from gluon_overlap.tmem import SUPPORTED_PAIRS

        timed = result.message.split("the overlap happened", 1)[1]
        for a, b in ADAPTATION_PAIRS if title.endswith("adaptation") else SUPPORTED_PAIRS:
            assert f"{a} x {b}:" in timed, (title, a, b)  # every pair's timed run judged the release


def test_a_compiler_error_is_one_line_with_its_line(tmp_path, capsys):
    exercise = EXERCISES["03a K loop"]
    text = exercise.solution_text().replace("b_smem.permute((1, 0))", "b_smem")
    result = exercise.check(_answer(tmp_path, "my_k_loop.py", text))
    out = capsys.readouterr().out
    _one_line_fail(result, out)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "tcgen05_mma_scaled(" in t)
    assert "compiler for sm_100a" in out and f"my_k_loop.py line {line} " in out, out


@pytest.mark.parametrize(("text", "word"), [
    ("import gluon_overlap.kernel\n", "imports"),
    ("from gluon_overlap.tmem import make_plan\n", "library"),
    ("import importlib\n", "imports"),
    ("x = __import__('gluon_overlap')\n", "__import__"),
    ("x = exec('1')\n", "exec"),
    ("import triton.experimental.gluon as g\nx = g.sys\n", ".sys"),
    ("import triton.experimental.gluon as g\nx = g.jit.__globals__\n", "__globals__"),
    ("x = globals()\n", "globals"),
    ("x = vars()\n", "vars"),
    ("x = open('answers/k_loop.py').read()\n", "open"),
    ("from . import answers\n", "relative"),
    ("import os\n", "imports"),
    ("def f():\n    global x\n", "global"),
])
def test_an_answer_file_is_vetted_before_it_runs(text, word):
    with pytest.raises(guard.Refused, match="line") as caught:
        guard.vet_source(text, "my.py", frozenset({"gluon_overlap.kernel.Counter"}))
    assert word in str(caught.value)


def test_a_clean_answer_passes_the_vetting():
    for exercise in EXERCISES.values():
        guard.vet_source(exercise.solution_text(), exercise.solution_file, exercise.allowed, exercise.forbidden)


def test_missing_and_unreadable_answers_are_refused(tmp_path, capsys):
    exercise = EXERCISES["05 Counter"]
    answers = (str(tmp_path / "nope.py"), 42, _answer(tmp_path, "bad.py", "def f(:\n"),
               _answer(tmp_path, "empty.py", "x = 1\n"), _answer(tmp_path, "mod.py", "import gluon_overlap.kernel\n"),
               _answer(tmp_path, "exits.py", "raise SystemExit(3)\n"))
    for answer in answers:
        _one_line_fail(exercise.check(answer), capsys.readouterr().out)


def test_check_by_title_refuses_unknown_titles():
    with pytest.raises(ValueError, match="is not a writing exercise"):
        W.check("03 nope", "x.py")


def test_harness_cuts_out_exactly_the_asked_part():
    """The harness kernels no longer contain the part the answer supplies (so the answer is what runs)."""
    k_loop = W._single_buffered_harness("the K loop", W.K_LOOP_CALL)
    assert "tcgen05_mma_scaled(" not in k_loop.split("def single_buffered_kernel")[1]
    epilogue = W._single_buffered_harness("the epilogue", W.EPILOGUE_CALL)
    assert ".load()" not in epilogue.split("def single_buffered_kernel")[1]
    assert "mbarrier.arrive(overlap_bar" not in W._overlap_harness()
    assert "\nclass Counter" not in W._kernel_harness("class Counter")
    assert "\ndef load_partition" not in W._kernel_harness("def load_partition")
    cap = capstone.capstone_harness()
    for gone in ("\ndef mma_partition", "\ndef epilogue_partition", "\ndef drain_column", "\ndef accumulator_window",
                 "mbarrier.wait(p.overlap_bar", "mbarrier.arrive(p.overlap_bar", "early_release_subtile:"):
        assert gone not in cap, gone
    assert "allocate_overlap_barrier(TWO_CTAS)" in cap
    adapt = capstone.adaptation_harness()
    assert "TMEM_PLAN.a_scale" not in adapt and "\nNUM_BUFFERS = " not in adapt and "A_SCALES[0]" in adapt


def test_the_adaptation_is_not_a_configuration_the_package_runs():
    """Five stages of BLOCK_K = 256 for the mx formats do not fit in shared memory: the package's kernel cannot run
    the adaptation's configuration, so no function of the package holds its answer."""
    from gluon_overlap import kernel
    from gluon_overlap.compiler.compile import meta_operands
    from gluon_overlap.compiler.precheck import precheck
    from gluon_overlap.tmem import TmemPlan

    plan = TmemPlan("mxfp8", "mxfp8", capstone.ADAPTATION_BLOCK_K, capstone.ADAPTATION_EPILOGUE_BLOCK_N, True)
    args = kernel.kernel_args(*meta_operands("mxfp8", "mxfp8", 1024), plan, 1024, 1024, 1024)
    verdict = precheck(kernel.mma_scaled_warp_specialized_kernel, args, num_ctas=2, num_warps=4)
    assert not verdict.ok and "shared memory" in verdict.message()


def test_no_plan_of_the_package_describes_the_adaptation():
    """The adaptation leaves TMEM columns to a fused part: make_plan's layout for its formats and sizes puts the left
    window on them, and a TmemPlan cannot own fewer than 512 columns unless a power of two (480 is not)."""
    from gluon_overlap.tmem import TmemPlan, make_plan

    first, count = capstone.ADAPTATION_RESERVED
    reserved = set(range(first, first + count))
    for a, b in capstone.ADAPTATION_PAIRS:
        plan = make_plan(a, b, block_k=capstone.ADAPTATION_BLOCK_K,
                         epilogue_block_n=capstone.ADAPTATION_EPILOGUE_BLOCK_N)
        touched = {c for w in plan.windows().values() for c in w.columns()} & reserved
        assert touched, plan
    with pytest.raises(ValueError, match="tmem_cols"):
        TmemPlan("mxfp8", "mxfp8", capstone.ADAPTATION_BLOCK_K, capstone.ADAPTATION_EPILOGUE_BLOCK_N, True,
                 tmem_cols=512 - count)


def test_the_capstone_runs_the_overlap_on_and_off():
    """With the overlap off the acc_empty hand-over is the only guard of the one window: the problem set has such
    runs (two pairs), besides every pair with the overlap on; both kinds have two clusters and odd K steps."""
    runs = capstone.capstone_runs()
    off = [r for r in runs if not r.case.overlap]
    on = [r for r in runs if r.case.overlap]
    assert len({(r.case.a_format, r.case.b_format) for r in off}) == 2
    assert len({(r.case.a_format, r.case.b_format) for r in on}) == 4
    for r in runs:
        steps = r.case.k // (128 if "mxfp8" in (r.case.a_format, r.case.b_format) else 256)
        assert r.case.num_clusters == 2 and r.case.m >= 512 and steps % 2 == 1, r.label


def test_settrace_works_after_a_wall_clock_budget():
    """twin.wallclock once dropped a pending stop with PyThreadState_SetAsyncExc(id, NULL), which leaves CPython
    3.11's eval loop signalled with nothing to raise: the next sys.settrace hung the thread (the traced calls of the
    function exercises did, after any executor run).  Run in a child, so that a regression fails instead of hanging."""
    code = ("import sys\nfrom gluon_overlap.emulate.wallclock import WallClock\n"
            "with WallClock(5, lambda f: False):\n    pass\n"
            "sys.settrace(lambda *a: None)\nx = (lambda: 1)()\nsys.settrace(None)\nprint('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_wrong_drain_names_the_tile_it_belongs_to(tmp_path, capsys):
    """The step-2 kernel walks its tiles with a plain ``for tile_id in range(program_id, ..., num_programs)`` and
    drains tile i - 1 inside tile i: an answer that never drains the head of the cluster's second tile (i = 1) must
    be told so -- the second tile, not the cluster index and not the tile whose K loop was running."""
    exercise = EXERCISES["04 release"]
    text = exercise.solution_text().replace(
        "        drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN, 0, HEAD)\n",
        "        if i != 2:  # forgets the head of tile i - 1 = 1\n"
        "            drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN, 0, HEAD)\n")
    assert text != exercise.solution_text()
    result = exercise.check(_answer(tmp_path, "my_release.py", text), progress=False)
    out = capsys.readouterr().out
    _one_line_fail(result, out)
    assert "never makes a TMEM load" in out and "tile 1 (the second tile it computes" in out, out
