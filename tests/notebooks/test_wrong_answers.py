"""Every exercise refuses plausible wrong answers -- a sloppy learner's and a cheating one's (tests/wrong_answers.py) --
in one line that says what went wrong and names the learner's line, never with a traceback.

At least ten per exercise; the kernel exercises' runs take seconds each, so the first few of each run in the default
suite and the rest under ``-m slow`` (``make test-slow``)."""

from __future__ import annotations

import inspect
import types

import pytest
import wrong_answers as W

from gluon_overlap.exercises import nb02, nb03, nb04, nb05, nb06
from gluon_overlap.exercises import writing as ex

WRITING = {"03a K loop": W.K_LOOP, "03a epilogue": W.EPILOGUE, "03b descriptors": W.DESCRIPTORS,
           "04 release": W.RELEASE, "05 Counter": W.COUNTER, "05 load partition": W.LOAD_PARTITION,
           "05b capstone": W.CAPSTONE, "05b adaptation": W.ADAPTATION}
FUNCTIONS = {"02 scale byte offset": (nb02.check_scale_byte_offset, W.BYTE_OFFSET),
             "02 scale TMEM column": (nb02.check_scale_tmem, W.TMEM_COLUMN),
             "04 drain order": (nb04.check_drain_order, W.DRAIN_ORDER),
             "04 early release": (nb04.check_early_release, W.EARLY_RELEASE),
             "05 Counter walk": (nb05.check_counter, W.COUNTER_WALK),
             "05 barrier scopes": (nb05.check_barriers, W.BARRIER_SCOPES),
             "08 expect bytes": (nb03.check_expect_bytes, W.EXPECT_BYTES)}
KERNEL_FIXES = {"03b find the bug": (nb03, W.FIND_BUG_03B), "04 find the bug": (nb04, W.FIND_BUG_04)}
#: how many wrong answers of each kernel exercise run in the default suite (the rest: -m slow)
FAST = 3


def _cases(table: dict, fast: int | None = FAST):
    out = []
    for title, entry in table.items():
        wrongs = entry[1] if isinstance(entry, tuple) else entry
        for n, wrong in enumerate(wrongs):
            slow = fast is not None and (n >= fast or title.startswith("05b") and n >= (2 if title.endswith("capstone") else 1))
            marks = (pytest.mark.slow,) if slow else ()
            out.append(pytest.param(title, n, id=f"{title}-{n}-{wrong.name}", marks=marks))
    return out


def test_at_least_ten_wrong_answers_per_exercise():
    from gluon_overlap.exercises import exercises, writing_exercises

    counts = {t: len(w) for t, w in WRITING.items()}
    counts |= {t: len(w) for t, (_, w) in FUNCTIONS.items()} | {t: len(w) for t, (_, w) in KERNEL_FIXES.items()}
    counts["06 find the bug"] = len(W.FIND_BUG_06)
    every = {e.title for e in writing_exercises()} | {f"{e.notebook} {e.name}" for e in exercises()}
    assert set(counts) == every
    assert all(n >= 10 for n in counts.values()), counts
    assert len(W.CAPSTONE) > 10


def _one_line_fail(verdict, out: str, wrong: W.Wrong, answer_file: str | None) -> None:
    assert not verdict.passed, f"{wrong.name} PASSED: {verdict.message}"
    assert out.startswith("FAIL") and "\n" not in out.strip() and "Traceback" not in out, out
    assert any(word in out for word in wrong.words), (wrong.name, out)
    if wrong.names_line:
        named = f"{answer_file} line" if answer_file else "line "
        assert named in out, (wrong.name, out)


def _answer_text(title: str, wrong: W.Wrong) -> str:
    if isinstance(wrong.answer, str):
        return wrong.answer
    text = ex.exercise(title).solution_text()
    for old, new in wrong.answer:
        assert text.count(old) == 1, (wrong.name, old)
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize(("title", "n"), _cases(WRITING))
def test_writing_exercise_refuses(title, n, tmp_path, capsys):
    wrong = WRITING[title][n]
    path = tmp_path / f"wrong_{n}.py"
    path.write_text(_answer_text(title, wrong))
    verdict = ex.check(title, str(path), progress=False)
    _one_line_fail(verdict, capsys.readouterr().out, wrong, path.name)


def _function_answer(wrong: W.Wrong):
    answer = wrong.answer
    if isinstance(answer, str) and answer.startswith("copied:"):
        module, name = answer.removeprefix("copied:").rsplit(".", 1)
        fn = getattr(__import__(module, fromlist=[name]), name)
        return types.FunctionType(fn.__code__, {}, "byte_offset")  # the library's code object, in a new function
    if answer == "library:BARRIERS":
        from gluon_overlap.exercises import solutions

        return solutions.BARRIERS
    if answer == "library:dict(BARRIERS)":
        from gluon_overlap.exercises import solutions

        return dict(solutions.BARRIERS)
    if answer == "library:reference":
        from gluon_overlap.exercises import nb05

        return nb05._reference_barriers()
    return answer


@pytest.mark.parametrize(("title", "n"), _cases(FUNCTIONS, fast=None))
def test_function_exercise_refuses(title, n, capsys):
    checker, wrongs = FUNCTIONS[title]
    wrong = wrongs[n]
    verdict = checker(_function_answer(wrong))
    _one_line_fail(verdict, capsys.readouterr().out, wrong, None)


def _kernel_answer(module, wrong: W.Wrong):
    from gluon_overlap.exercises.kernels import load_kernel, patch_source
    from gluon_overlap.steps import overlap, single_buffered

    name = "single_buffered_kernel" if module is nb03 else "overlap_kernel"
    kind = wrong.answer[0]
    if kind == "buggy":
        return module.buggy_kernel()
    if kind == "library":
        return single_buffered.single_buffered_kernel if module is nb03 else overlap.overlap_kernel
    if kind == "text":
        return patch_source(module.buggy_source(), module.BUG[1], module.BUG[0])
    if kind == "other":
        other = overlap if module is nb03 else single_buffered
        return load_kernel(inspect.getsource(other), "overlap_kernel" if module is nb03 else "single_buffered_kernel",
                           "other_kernel")
    text = module.buggy_source()
    for old, new in wrong.answer[1:]:
        text = patch_source(text, old, new)
    return load_kernel(text, name, f"wrong_fix_{abs(hash(text)) % 10**6}")


@pytest.mark.parametrize(("title", "n"), _cases(KERNEL_FIXES))
def test_find_the_bug_refuses(title, n, capsys):
    module, wrongs = KERNEL_FIXES[title]
    wrong = wrongs[n]
    checker = nb03.check_single_buffered if module is nb03 else nb04.check_overlap
    verdict = checker(_kernel_answer(module, wrong))
    out = capsys.readouterr().out
    file = None if not wrong.names_line else "wrong_fix_"
    assert not verdict.passed, verdict.message
    assert out.startswith("FAIL") and "\n" not in out.strip() and "Traceback" not in out, out
    assert any(word in out for word in wrong.words), (wrong.name, out)
    if file:
        assert ".py line" in out, out


def _fix_06(wrong: W.Wrong):
    answer = wrong.answer
    if not isinstance(answer, tuple) or len(answer) != 2 or not all(isinstance(a, str) for a in answer):
        return answer if answer != ("SAME",) else (nb06.MYSTERY, nb06.MYSTERY)
    named = {"MYSTERY": nb06.MYSTERY,
             "MYSTERY_LOOSE": nb06.MYSTERY.replace("STORE_STAGES - 1", "STORE_STAGES"),
             "STORE_ONLY": "            c_smem.store(acc)\n",
             "MYSTERY_ONE": nb06.MYSTERY.replace("STORE_STAGES - 1", "1"),
             "NO_STORE": "            tma.store_wait(pendings=STORE_STAGES - 1)\n"}
    return tuple(named.get(a, a) for a in answer)


@pytest.mark.parametrize("n", [pytest.param(n, id=w.name, marks=() if n < FAST else (pytest.mark.slow,))
                               for n, w in enumerate(W.FIND_BUG_06)])
def test_06_find_the_bug_refuses(n, capsys):
    wrong = W.FIND_BUG_06[n]
    verdict = nb06.check_fix(_fix_06(wrong))
    out = capsys.readouterr().out
    assert not verdict.passed and out.startswith("FAIL") and "\n" not in out.strip(), out
    assert any(word in out for word in wrong.words), (wrong.name, out)
