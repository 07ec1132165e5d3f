"""Breaks and mutations find their place in kernel.py by normalized lines: rewording every comment,
adding blank lines to a copy of kernel.py changes none of them (the broken copies
parse to the same program as the broken original)."""

from __future__ import annotations

import ast
import io
import tokenize

import mutants  # noqa: E402
import pytest

from gluon_overlap.emulate import kernels as K

ORIGINAL = K.DEFAULT_KERNEL.read_text()


def reworded(source: str) -> str:
    """Every comment (a tokenize COMMENT token) reworded, and a blank line after each comment-only line."""
    lines = source.splitlines()
    comments = {
        tok.start[0] - 1: tok.start[1]
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    out = []
    for i, line in enumerate(lines):
        if i not in comments:
            out.append(line)
        elif not line[: comments[i]].strip():
            out += [line[: comments[i]] + "# (a reworded note)", ""]
        else:
            out.append(line[: comments[i]].rstrip() + "   # reworded")
    return "\n".join(out) + "\n"


REWORDED = reworded(ORIGINAL)
#: mutations whose text quotes a comment to tell two identical code blocks apart (see find_anchor)
QUOTES_A_COMMENT = {"mma-into-wrong-window"}


def test_the_rewording_changes_text_but_not_the_program():
    assert REWORDED != ORIGINAL and ast.dump(ast.parse(REWORDED)) == ast.dump(ast.parse(ORIGINAL))


@pytest.mark.parametrize("name", sorted(K.BREAKS))
def test_every_break_applies_to_a_reworded_kernel(name):
    broken = K.break_source(ORIGINAL, [name])
    assert broken != ORIGINAL
    assert ast.dump(ast.parse(K.break_source(REWORDED, [name]))) == ast.dump(ast.parse(broken))


@pytest.mark.parametrize("mutation", mutants.MUTATIONS, ids=lambda m: m.name)
def test_every_mutation_applies_to_a_reworded_kernel(mutation):
    broken = K.apply_edits(ORIGINAL, mutation.edits)
    exact = ORIGINAL
    for edit in mutation.edits:  # what the exact-text edit did before anchors
        exact = exact.replace(edit.old, edit.new)
    assert broken == exact
    if mutation.name in QUOTES_A_COMMENT:
        with pytest.raises(ValueError, match="does not apply to this kernel"):  # loudly, never the wrong block
            K.apply_edits(REWORDED, mutation.edits)
        return
    assert ast.dump(ast.parse(K.apply_edits(REWORDED, mutation.edits))) == ast.dump(ast.parse(broken))


def test_an_edit_that_no_longer_fits_fails_loudly():
    with pytest.raises(ValueError, match=r"expected 1 occurrence\(s\) of 'mbarrier.wait\(p.nothing\)', found 0"):
        K.apply_edits(ORIGINAL, (K.Edit("mbarrier.wait(p.nothing)", "pass"),))
    code = "if USE_OVERLAP and i % 2 != 0:\n    acc_tmem = p.tmem_pool.slice(RIGHT[0], RIGHT[1])\n"
    with pytest.raises(ValueError, match="found 2"):  # the MMA's and the epilogue's: ambiguous
        K.apply_edits(ORIGINAL, (K.Edit(code, code),))


def test_a_named_anchor_restricts_the_match():
    source = "x = 1\n# @anchor: first\ny = f(a)\n# @anchor: second\ny = f(a)\n"
    out = K.apply_edits(source, (K.Edit("y = f(a)\n", "y = g(a)\n", anchor="second"),))
    assert out == "x = 1\n# @anchor: first\ny = f(a)\n# @anchor: second\ny = g(a)\n"
    with pytest.raises(ValueError, match="anchor 'third' is not tagged"):
        K.apply_edits(source, (K.Edit("y = f(a)\n", "y = g(a)\n", anchor="third"),))


def test_fragments_and_lines_keep_indentation_and_comments():
    source = "def k():\n        w(a, (i + 1) % 2)  # the parity\n        z = 0\n"
    out = K.apply_edits(source, (K.Edit("w(a,  (i + 1) % 2)", "w(a, i % 2)"),))
    assert out == "def k():\n        w(a, i % 2)  # the parity\n        z = 0\n"
    out = K.apply_edits(source, (K.Edit("    z = 0\n", "    z = 1\n    y = 2\n"),))
    assert out == "def k():\n        w(a, (i + 1) % 2)  # the parity\n        z = 1\n        y = 2\n"
