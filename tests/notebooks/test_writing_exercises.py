"""The writing exercises (notebooks 03-05): each checker passes the right answer, fails two wrong ones with
the reason in one line (a hazard or deadlock named by the answer's line, a compiler error, a wrong layout),
and refuses the library's own code handed in as the answer."""

from __future__ import annotations

import pytest

from gluon_overlap.exercises import writing as W

EXERCISES = {e.title: e for e in W.writing_exercises()}


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


#: per exercise: two wrong answers (edits of the solution) with a word the FAIL line must contain, and the
#: library's answer (a whole file) with the word its refusal must contain
WRONG = {
    "03 K loop": [
        (("mbarrier.wait(mma_bar, phase)", "mbarrier.wait(mma_bar, phase ^ 1)"), "deadlock"),
        (("        mbarrier.wait(load_bar, phase)\n", ""), "hazard"),
    ],
    "03 epilogue": [
        (("        tma.store_wait(0)  # the previous subtile's store has read c_smem\n", ""), "hazard"),
        (("[off_m, off_n + drain_column(TMEM_PLAN, 0, step)]", "[off_m, off_n]"), "C is wrong"),
    ],
    "03 descriptors": [
        (("fp4_padded=mixed and a_fp4", "fp4_padded=a_fp4"), "fp4_padded"),
        (("a_scale_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5,\n"
          "                                          cga_layout=[[0, 1, 0, 0, 0]])",
          "a_scale_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5,\n"
          "                                          cga_layout=[[0, 0, 0, 0, 0]])"), "cga_layout"),
    ],
    "04 release": [
        (("        drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN, 0, HEAD)\n"
          "        # ... is in registers now: this CTA releases them.\n"
          "        mbarrier.arrive(overlap_bar, count=1)\n",
          "        mbarrier.arrive(overlap_bar, count=1)\n"
          "        drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN, 0, HEAD)\n"),
         "hazard"),
        (("mbarrier.wait(overlap_bar, (i + 1) % 2)", "mbarrier.wait(overlap_bar, i % 2)"), "deadlock"),
        (("TMEM_PLAN, 0, HEAD)", "TMEM_PLAN, 0, TMEM_PLAN.num_subtiles)"), "no overlap"),
    ],
    "05 Counter": [
        (("phase = gl.where(rollover, self.phase ^ 1, self.phase)", "phase = self.phase"), "parity"),
        (("phase = gl.where(rollover, self.phase ^ 1, self.phase)", "phase = self.phase ^ 1"), "parity"),
    ],
    "05 load partition": [
        (("Counter.create(1, p.load_empty_bars", "Counter.create(0, p.load_empty_bars"), "deadlock"),
        (("            mbarrier.wait(p.load_empty_bars.index(state.index), state.phase)\n", ""),
         ("hazard", "deadlock")),
    ],
}
LIBRARY = {
    "03 K loop": ("from gluon_overlap.kernel import async_mma_scaled\n", "async_mma_scaled"),
    "03 epilogue": ("from gluon_overlap.steps.overlap import drain_steps\n", "drain_steps"),
    "03 descriptors": ("from gluon_overlap.kernel import make_descriptors\n", "make_descriptors"),
    "04 release": ("from gluon_overlap.steps.overlap import drain_steps as release_head\n", "not from this file"),
    "05 Counter": ("from gluon_overlap.kernel import Counter\n", "Counter"),
    "05 load partition": ("from gluon_overlap.kernel import load_partition\n", "load_partition"),
}


def _answer(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _one_line_fail(result, out: str) -> None:
    assert not result.passed and out.startswith("FAIL"), out
    assert "\n" not in out.strip() and "Traceback" not in out


def test_six_writing_exercises_in_03_to_05():
    assert len(EXERCISES) >= 6 and set(WRONG) == set(EXERCISES) == set(LIBRARY)
    assert {e.notebook for e in EXERCISES.values()} == {"03", "04", "05"}


@pytest.mark.parametrize("title", sorted(EXERCISES))
def test_right_answer_passes(title, tmp_path, capsys):
    """The solution, copied where a learner's file would be. It keeps the solution's file name, so the spliced
    kernel is the one the notebook checks and compiles (one compile, shared through Triton's cache)."""
    exercise = EXERCISES[title]
    result = exercise.check(_answer(tmp_path, exercise.solution_path().name, exercise.solution_text()))
    assert result.passed, str(result)
    assert capsys.readouterr().out.startswith("PASS")


@pytest.mark.parametrize("title", sorted(EXERCISES))
def test_wrong_answers_fail_with_the_reason(title, tmp_path, capsys):
    exercise = EXERCISES[title]
    for n, ((old, new), word) in enumerate(WRONG[title]):
        result = exercise.check(_answer(tmp_path, f"wrong_{n}.py", _edit(exercise.solution_text(), old, new)))
        out = capsys.readouterr().out
        _one_line_fail(result, out)
        assert any(w in out for w in ((word,) if isinstance(word, str) else word)), out


@pytest.mark.parametrize("title", sorted(EXERCISES))
def test_the_library_answer_is_refused(title, tmp_path, capsys):
    exercise = EXERCISES[title]
    text, word = LIBRARY[title]
    result = exercise.check(_answer(tmp_path, "library.py", text))
    out = capsys.readouterr().out
    _one_line_fail(result, out)
    assert word in out and ("library" in out or "not from this file" in out), out


def test_a_hazard_is_named_by_the_answer_line(tmp_path, capsys):
    exercise = EXERCISES["03 K loop"]
    text = _edit(exercise.solution_text(), "        mbarrier.wait(load_bar, phase)\n", "")
    exercise.check(_answer(tmp_path, "my_k_loop.py", text))
    out = capsys.readouterr().out
    assert "my_k_loop.py line " in out, out


def test_a_deadlock_is_named_by_the_answer_line(tmp_path, capsys):
    exercise = EXERCISES["03 K loop"]
    text = _edit(exercise.solution_text(), "mbarrier.wait(mma_bar, phase)", "mbarrier.wait(mma_bar, phase ^ 1)")
    exercise.check(_answer(tmp_path, "my_k_loop.py", text))
    out = capsys.readouterr().out
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "mbarrier.wait(mma_bar, phase ^ 1)" in t)
    assert "deadlock" in out and f"at my_k_loop.py line {line} " in out, out


def test_a_compiler_error_is_one_line_with_its_line(tmp_path, capsys):
    exercise = EXERCISES["03 K loop"]
    text = _edit(exercise.solution_text(), "b_smem.permute((1, 0))", "b_smem")
    result = exercise.check(_answer(tmp_path, "my_k_loop.py", text))
    out = capsys.readouterr().out
    _one_line_fail(result, out)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "tcgen05_mma_scaled(" in t)
    assert "compiler for sm_100a" in out and f"my_k_loop.py line {line} " in out, out
    assert "transposed" in out, out


def test_missing_and_unreadable_answers_are_refused(tmp_path, capsys):
    exercise = EXERCISES["05 Counter"]
    answers = (str(tmp_path / "nope.py"), 42, _answer(tmp_path, "bad.py", "def f(:\n"),
               _answer(tmp_path, "empty.py", "x = 1\n"), _answer(tmp_path, "mod.py", "import gluon_overlap.kernel\n"))
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
