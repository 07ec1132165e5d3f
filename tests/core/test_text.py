"""Tables of the command line (gluon_overlap.text.format_table): wrapped to fit, the rows' names kept whole."""

from __future__ import annotations

from gluon_overlap.text import format_table

PATH = "/tmp/pytest-of-root/pytest-90/popen-gw0/test_a_long_folder_name_here/kernel_file_name.py"


def test_a_long_unbreakable_value_leaves_the_row_names_whole():
    text = format_table(
        ["quantity", "value"],
        [
            ["matches reference", "True"],
            ["kernel", PATH],
            ["stopped by", "the wall-clock budget of the compiler's check " * 3],
        ],
        100,
    )
    lines = text.split("\n")
    assert any(line.startswith("matches reference  True") for line in lines)
    assert any(line.startswith("stopped by ") for line in lines)
    widest = len("matches reference") + 2 + len(PATH)  # the path cannot be wrapped: its column is as wide as it
    assert max(len(line) for line in lines) == widest


def test_a_wide_first_column_is_wrapped_when_that_makes_the_table_fit():
    lines = format_table(["a b c d", "e f g"], [["word " * 30, "x " * 40]], 60).split("\n")
    assert max(len(line) for line in lines) <= 60
    assert min(len(line.split("  ")[0]) for line in lines[2:] if line.strip()) > 10  # neither column squeezed


def test_a_table_that_fits_is_not_touched():
    assert format_table(["a", "b"], [["x", 1]], 100) == format_table(["a", "b"], [["x", 1]])
