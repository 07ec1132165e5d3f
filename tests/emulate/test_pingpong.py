"""The shipped ping-pong (gluon_overlap/data/ping_pong.json) is the executor's recording of kernel.py.

Re-records the eight seed variants and a sample of the other configurations the explorer offers and
compares them with the shipped data; checks that every recorded kernel line is still in kernel.py and
that the explorer's reader is torch-free.
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from gluon_overlap import limits, pingpong, tmem
from gluon_overlap.emulate.pingpong_record import record, recorded_configs

SEED_VARIANTS = [tmem.make_plan(a, b, overlap=ov) for a, b in limits.SUPPORTED_PAIRS for ov in (True, False)]
OTHERS = random.Random(0).sample([p for p in recorded_configs() if p not in SEED_VARIANTS], 4)


def test_the_recording_covers_exactly_what_the_explorer_offers_and_plan_accepts():
    assert sorted(pingpong.recorded_keys()) == sorted(pingpong.config_key(p) for p in recorded_configs())
    assert all(pingpong.config_key(p) in pingpong.recorded_keys() for p in SEED_VARIANTS)


@pytest.mark.parametrize("plan", SEED_VARIANTS + OTHERS, ids=pingpong.config_key)
def test_shipped_recording_equals_a_fresh_run_of_the_kernel(plan):
    shipped = pingpong._data()["configs"][pingpong.config_key(plan)]
    fresh = record(plan)
    assert fresh == shipped, (
        "gluon_overlap/data/ping_pong.json is stale: run `python -m gluon_overlap.regenerate ping-pong`"
    )


def test_every_recorded_line_is_found_in_kernel_py():
    lines = {tuple(pair) for cfg in pingpong._data()["configs"].values() for pair in cfg["lines"]}
    assert lines
    for function, text in lines:
        line = pingpong.KernelLine(function, text)
        assert line.lineno > 0, (function, text)
        source = pingpong.KERNEL_FILE.read_text().splitlines()[line.lineno - 1]
        assert pingpong.normalized_line(source) == text


def test_normalized_lines_ignore_comments_and_whitespace():
    assert pingpong.normalized_line("    acc = acc_sub.load()   # tcgen05.ld") == "acc = acc_sub.load()"
    assert pingpong.normalized_line("\tx  =  f(a,  b)") == "x = f(a, b)"


def test_the_reader_and_the_explorer_import_no_torch():
    code = (
        "import sys; import gluon_overlap.pingpong, gluon_overlap.explorer; "
        "print('torch' in sys.modules, 'triton' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: pingpong.schedule(tmem.make_plan("nvfp4", "nvfp4"), 0), "num_tiles=0 must be positive"),
        (lambda: pingpong.schedule(tmem.make_plan("nvfp4", "nvfp4"), 9), "num_tiles=9 must be below 9"),
        (lambda: pingpong.tile_schedule(tmem.make_plan("nvfp4", "nvfp4"), -1), "num_tiles=-1 must be positive"),
        (
            lambda: pingpong.tile_schedule(tmem.make_plan("mxfp4", "mxfp4", 1024), 2),
            "no recorded ping-pong for mxfp4-mxfp4-k1024-e32-on: plan refuses it",
        ),
        (lambda: pingpong.recording("plan"), "plan='plan' must be a gluon_overlap.tmem.TmemPlan"),
    ],
)
def test_out_of_range_requests_are_refused(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()
