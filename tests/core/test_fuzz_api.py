"""Property-based tests of the public Python API, as tests/cli/test_fuzz_cli.py drives the command line.

Every function a notebook or the README shows is called with odd values (negative, zero, huge,
bool, float, NaN, infinity, strings, None, containers): it must either return a correct result or
raise ``ValueError`` naming the parameter -- never ``TypeError``, ``KeyError``, ``IndexError``,
``ZeroDivisionError``, a hang or an answer outside TMEM's 512 columns.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gluon_overlap import limits, pingpong, tmem
from gluon_overlap.emulate import budget
from gluon_overlap.explorer import explain_plan_error
from gluon_overlap.hardware import parse_description
from gluon_overlap.interp.launch import MAX_EXECUTOR_PROGRAMS, check_launch
from gluon_overlap.plots import tmem as ptmem

ODD = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**31 - 1, 2**63, 7, 48]),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["mxfp8", "mxfp4", "nvfp4", "NVFP4", "", "fp8"]),
    st.lists(st.integers(), max_size=3),
)
FORMAT = st.one_of(st.sampled_from(["mxfp8", "mxfp4", "nvfp4"]), ODD)
SMALL = st.one_of(st.sampled_from([32, 64, 128, 256, 8, 16]), ODD)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PLAN = tmem.make_plan("nvfp4", "nvfp4")


def _refusal_names(exc: ValueError, *names: str) -> None:
    message = str(exc)
    assert message and any(name in message for name in names), message


@FUZZ
@given(FORMAT, FORMAT, SMALL, SMALL, st.one_of(st.booleans(), ODD))
def test_check_config_and_make_plan(a, b, block_k, epi, overlap):
    for call in (
        lambda: limits.check_config(a, b, block_k, epi, overlap),
        lambda: tmem.make_plan(a, b, block_k, epi, overlap),
    ):
        try:
            plan = call()
        except ValueError as exc:
            _refusal_names(exc, "format", "block_k", "epilogue_block_n", "overlap", "BLOCK_K", "column")
            continue
        assert plan.right.end <= 512 and plan.b_scale.end <= 512


@FUZZ
@given(FORMAT, FORMAT, SMALL, SMALL, st.one_of(st.booleans(), ODD))
def test_the_explorers_explainer(a, b, block_k, epi, overlap):
    try:
        said = explain_plan_error(a, b, block_k, epi, overlap)
    except ValueError as exc:
        _refusal_names(exc, "format", "block_k", "epilogue_block_n", "overlap")
        return
    assert said == "" or said.endswith(".")
    assert (said == "") == (limits.config_refusal(a, b, block_k, epi, overlap) is None)


@FUZZ
@given(ODD, ODD, ODD)
def test_plan_methods_stay_inside_tmem(tile, sub, chunk):
    for name, call in (
        ("tile", lambda: PLAN.accumulator(tile)),
        ("tile", lambda: PLAN.drain_order(tile)),
        ("subtile", lambda: PLAN.subtile_columns(0, sub)),
        ("k_chunk", lambda: PLAN.a_scale_column(chunk)),
        ("n_chunk", lambda: PLAN.b_scale_column(sub, chunk)),
        ("tile", lambda: PLAN.subtile_columns(tile, 0)),
    ):
        try:
            out = call()
        except ValueError as exc:
            _refusal_names(exc, name, "k_chunk", "subtile", "tile")
            continue
        if isinstance(out, tmem.Window):
            assert 0 <= out.offset < out.end <= 512
        elif isinstance(out, int):
            assert 0 <= out < 512


@FUZZ
@given(st.sampled_from(["A", "B", "C", 0, None]), ODD, ODD)
def test_scale_cell(operand, row, k):
    try:
        cell = ptmem.scale_cell(PLAN, operand, row, k)
    except ValueError as exc:
        _refusal_names(exc, "operand", "row", "k=")
        return
    assert PLAN.a_scale.offset <= cell.column < PLAN.b_scale.end <= 512


@FUZZ
@given(ODD)
def test_tile_schedule(n):
    try:
        steps = pingpong.tile_schedule(PLAN, n)
    except ValueError as exc:
        _refusal_names(exc, "num_tiles", "plan")
        return
    assert len(steps) == n and [s.tile for s in steps] == list(range(n))


@FUZZ
@given(ODD, ODD, ODD, ODD)
def test_check_problem(m, n, k, clusters):
    try:
        limits.check_problem(m, n, k)
        limits.clusters_for(m, n, None)
    except ValueError as exc:
        _refusal_names(exc, "m=", "n=", "k=")
        return
    assert m >= 1 and n % 8 == 0 and k % 128 == 0


@FUZZ
@given(st.one_of(ODD, st.tuples(ODD, ODD)), ODD, ODD, ODD, ODD, st.one_of(st.none(), st.lists(ODD, max_size=3)))
def test_launch_arguments(grid, num_ctas, seed, bias, max_steps, clusters):
    try:
        dims = check_launch(grid, num_ctas, seed=seed, completion_bias=bias, max_steps=max_steps, clusters=clusters)
    except ValueError as exc:
        _refusal_names(exc, "grid", "num_ctas", "seed", "completion_bias", "max_steps", "clusters")
        return
    assert all(isinstance(d, int) and d > 0 for d in dims) and math.prod(dims) <= MAX_EXECUTOR_PROGRAMS
    assert math.isfinite(bias) and bias > 0


@FUZZ
@given(st.one_of(st.none(), st.dictionaries(st.sampled_from(["mma", "tma_load", 3]), ODD, max_size=2)), ODD, ODD)
def test_twin_run_options(costs, bias, max_steps):
    try:
        budget.check_run_options(costs, bias, max_steps)
    except ValueError as exc:
        _refusal_names(exc, "costs", "completion_bias", "max_steps")
        return
    assert all(math.isfinite(v) and v >= 0 for v in (costs or {}).values())


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200),
        st.recursive(
            st.one_of(st.integers(), st.floats(), st.text(max_size=4), st.none()),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
            max_leaves=20,
        ).map(lambda v: __import__("json").dumps(v)),
    )
)
def test_hardware_descriptions(data):
    with pytest.raises(ValueError, match="x.json"):
        parse_description(data, "x.json")


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text"),
        (b'{"name": ' + b"9" * 100_000 + b"}", "more than 40"),
        (b"[" * 100_000 + b"]" * 100_000, "nested 100000 levels deep"),
        (b" " * 2_000_000, "more than the 1,000,000"),
    ],
)
def test_odd_hardware_files_are_refused_before_parsing(data, needle):
    with pytest.raises(ValueError, match=needle):
        parse_description(data, "x.json")


def test_the_executor_refuses_bad_launch_arguments_before_running():
    pytest.importorskip("torch")
    from gluon_overlap.interp.launch import launch

    for kwargs, needle in (
        (dict(grid="4"), "grid='4' must be"),
        (dict(grid=2**31), "the CPU executor runs at most"),
        (dict(grid=2, clusters=[5]), r"clusters\[...\]=5 must be below 2"),
        (dict(grid=1, max_steps=-1), "max_steps=-1 must be positive"),
        (dict(grid=1, completion_bias=math.inf), "completion_bias=inf must be finite"),
    ):
        grid = kwargs.pop("grid")
        with pytest.raises(ValueError, match=needle):
            launch(None, grid, (), **kwargs)


def test_emulate_refuses_negative_costs_and_an_infinite_bias():
    pytest.importorskip("torch")
    from gluon_overlap.emulate.runs import emulate
    from gluon_overlap.formats import random_problem

    problem = random_problem(256, 256, 256, "nvfp4", "nvfp4", seed=0)
    with pytest.raises(ValueError, match=r"costs\['mma'\]=-1 must be at least 0"):
        emulate(problem, timed=True, costs={"mma": -1})
    with pytest.raises(ValueError, match="completion_bias=inf must be finite"):
        emulate(problem, completion_bias=math.inf)


@FUZZ
@given(st.one_of(ODD, st.floats(min_value=0.0, max_value=1e7), st.sampled_from([0.1, 0.0999, 604800.0, 604800.5])))
def test_a_wall_clock_budget_is_seconds_within_the_rule(time_limit):
    try:
        budget.check_run_options(time_limit=time_limit)
    except ValueError as exc:
        message = str(exc)
        assert message.startswith(f"time_limit={time_limit!r}"), message  # the parameter and the value
        assert "must be" in message, message  # and the rule
        assert time_limit is not None
        return
    assert time_limit is None or (
        not isinstance(time_limit, bool)
        and isinstance(time_limit, (int, float))
        and budget.MIN_TIME_LIMIT <= time_limit <= budget.MAX_TIME_LIMIT
    )


def test_emulate_refuses_a_bad_wall_clock_budget_before_running():
    pytest.importorskip("torch")
    from gluon_overlap.emulate.runs import emulate
    from gluon_overlap.formats import random_problem

    problem = random_problem(256, 256, 256, "nvfp4", "nvfp4", seed=0)
    for value, rule in (
        (0, "must be above 0"),
        (-1.0, "must be above 0"),
        (math.nan, "must be finite"),
        (math.inf, "must be finite"),
        ("5", "must be a number"),
        (True, "must be a number"),
        (0.05, "must be between 0.1 and 604800 seconds"),
        (1e9, "must be between 0.1 and 604800"),
    ):
        with pytest.raises(
            ValueError, match=f"time_limit={value!r}".replace("(", r"\(").replace(".", r"\.") + " " + rule
        ):
            emulate(problem, time_limit=value)
