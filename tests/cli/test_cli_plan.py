"""The `gluon-overlap plan` command: table, JSON, and clean errors (numbers from the seed's test)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gluon_overlap.cli import main

SEED_PLANS = {
    # (a, b): right accumulator, A scales, B scales, early-release subtile (seed's test_tmem_overlap_accum)
    ("nvfp4", "nvfp4"): ([208, 256], [464, 16], [480, 32], 1),
    ("mxfp8", "mxfp8"): ([244, 256], [500, 4], [504, 8], 0),
}


def run_json(capsys, *argv: str) -> dict:
    assert main(["plan", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _range(offset_width: list[int]) -> list[int]:
    """The seed's ``[offset, width]`` as the JSON's ``[start, end)``."""
    return [offset_width[0], offset_width[0] + offset_width[1]]


@pytest.mark.parametrize("pair", SEED_PLANS)
def test_plan_json_has_the_seeds_numbers(capsys, pair):
    data = run_json(capsys, "--a-format", pair[0], "--b-format", pair[1])
    right, a_scale, b_scale, early = SEED_PLANS[pair]
    assert data["left_accum_columns"] == [0, 256]
    assert data["right_accum_columns"] == _range(right)
    assert data["a_scale_columns"] == _range(a_scale)
    assert data["b_scale_columns"] == _range(b_scale)
    assert data["early_release_drain_step"] == early
    assert data["overlap_cols"] == a_scale[1] + b_scale[1]
    assert data["drain_order_even"] == list(range(7, -1, -1))
    assert data["drain_order_odd"] == list(range(8))


def test_plan_json_has_no_old_keys(capsys):
    """The ``[offset, width]`` keys and ``early_release_subtile`` had their release: they are gone."""
    data = run_json(capsys, "--a-format", "nvfp4", "--b-format", "nvfp4")
    assert not {"left_accum", "right_accum", "a_scale", "b_scale", "early_release_subtile"} & set(data)
    assert all(not key.endswith(("_accum", "_scale")) for key in data)


def test_plan_no_overlap_matches_the_seed(capsys):
    data = run_json(capsys, "--a-format", "nvfp4", "--b-format", "nvfp4", "--no-overlap")
    assert data["right_accum_columns"] == [0, 256] and data["a_scale_columns"] == [256, 272]
    assert data["b_scale_columns"] == [272, 304]
    assert data["overlap_cols"] == 0


def test_plan_table_is_readable(capsys):
    assert main(["plan", "--a-format", "nvfp4", "--b-format", "nvfp4"]) == 0
    out = capsys.readouterr().out
    assert "right" in out and "208" in out and "464" in out
    assert "early release after    drain step 1" in out and "early_release_subtile" not in out


def test_plan_refuses_a_bad_configuration_cleanly(capsys):
    assert main(["plan", "--a-format", "nvfp4", "--b-format", "mxfp8"]) == 2
    err = capsys.readouterr().err
    assert "VEC_SIZE" in err and "Traceback" not in err


def test_plan_refuses_an_epilogue_block_that_does_not_divide_block_n(capsys):
    assert main(["plan", "--a-format", "mxfp8", "--b-format", "mxfp8", "--epilogue-block-n", "48"]) == 2
    assert "does not divide" in capsys.readouterr().err


def test_unknown_format_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--a-format", "fp16", "--b-format", "mxfp8"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_console_script_help_works():
    out = subprocess.run(
        [sys.executable, "-m", "gluon_overlap", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "plan" in out
