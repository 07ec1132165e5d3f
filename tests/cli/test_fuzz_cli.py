"""Fuzzing every command's argument grammar: sizes, numbers, names, paths, ``--json``, junk tokens.

For every generated command line the CLI must end with exit status 0, 1 or 2, print a message on
stderr whenever the status is not 0 (one line for status 2), never let an exception escape (no
traceback), and finish within :data:`CALL_LIMIT_S`.  ``main`` runs in-process, so an escaping
exception fails the test with its own traceback; a few command lines also run as real processes.

Arguments are drawn from each option's grammar: well-formed values on both sides of every limit
(K multiples of 128 and not, N multiples of 8 and not, 2**31 - 1 and 2**31, seeds past 64 bits),
malformed ones (``1e3``, ``abc``, empty, 5000 digits), non-finite floats, unknown names, and output
paths that can and cannot be written.  Valid runs are kept short: ``emulate`` problems whose
estimate (``budget.emulate_estimate``) exceeds :data:`EMULATE_RUN_S` are not run (their refusal
beyond the machine's limits is tested in test_limits.py), ``compile`` runs only two seed variants
(the in-process cache makes repeats free), and ``model`` takes M, N and K of at most 65536 with a
bounded simulated work; larger model problems are covered by the timing model's own tests, which
answer them in closed form.
"""

from __future__ import annotations

import argparse
import functools
import io
import os
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout

import hypothesis
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from gluon_overlap import cli, limits
from gluon_overlap.emulate import budget

CALL_LIMIT_S = 60.0
EMULATE_RUN_S = 3.0  #: emulate runs estimated longer than this are not executed here
MODEL_MAX_OPS = 100_000  #: model runs simulating more than this are not executed here
#: the fast fuzz tests (``make test``) execute model runs of at most this many rows (pairs x K values): each
#: pair's first run records the kernel (seconds), and the grammar is what is fuzzed; the longer sweep
#: (``make test-slow``) runs whole tables up to MODEL_MAX_OPS
MODEL_FAST_ROWS = 2
COMPILE_VARIANTS = {("nvfp4", "nvfp4", True), ("mxfp8", "mxfp4", False)}

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

FORMATS = ["mxfp8", "mxfp4", "nvfp4"]
NAME_JUNK = ["fp16", "MXFP8", "", "nvfp4 ", "mxfp8-mxfp4", "../etc/passwd", "é", "-1"]
SIZE_EDGES = [
    "0",
    "-1",
    "1",
    "7",
    "8",
    "100",
    "128",
    "192",
    "256",
    "264",
    "300",
    "384",
    "512",
    "1024",
    "65536",
    "2147483520",
    "2147483647",
    "2147483648",
    "99999999999999999999",
    "1e3",
    "abc",
    "",
    " 256",
    "0x100",
    "256.0",
    "9" * 5000,
    "-0",
    "+128",
    "1_024",
]
FLOAT_EDGES = [
    "nan",
    "inf",
    "-inf",
    "0",
    "-1",
    "1e-300",
    "1e300",
    "0.5",
    "2",
    "1",
    "abc",
    "",
    "1e3",
    "1000.1",
    "0.001",
    "0.0009",
    "NaN",
    "Infinity",
]
SEED_EDGES = ["0", "1", "-1", "9223372036854775807", "9223372036854775808", "18446744073709551616", "abc", "1.5"]
JUNK_TOKENS = ["--bogus", "-x", "--json", "--", "--m", "%s", "--help=no", "--k=", "\t"]
PATH_KINDS = [
    "new_file",
    "existing_file",
    "directory",
    "under_a_file",
    "missing_parent",
    "empty",
    "too_long",
    "dev_null",
    "nul_byte",
]


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("fuzz")
    existing = root / "existing.txt"
    existing.write_text("old\n")
    return {
        "new_file": str(root / "new.out"),
        "existing_file": str(existing),
        "directory": str(root),
        "under_a_file": str(existing / "child.out"),
        "missing_parent": str(root / "no" / "such" / "file.out"),
        "empty": "",
        "too_long": str(root / ("x" * 300)),
        "dev_null": os.devnull,
        "nul_byte": str(root / "a\x00b"),
    }


def run_cli(argv: list[str]) -> tuple[int, str, str, float]:
    """Run ``gluon-overlap *argv`` in-process: (status, stdout, stderr, seconds)."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - start


def check_outcome(argv: list[str]) -> tuple[int, str, str]:
    code, out, err, seconds = run_cli(argv)
    assert code in (0, 1, 2), f"{argv}: exit status {code}"
    assert "Traceback" not in err and "Traceback" not in out, f"{argv}: {err}"
    if code != 0:
        assert err.strip(), f"{argv}: exit status {code} without a message on stderr"
    if code == 2:
        assert len(err.strip().splitlines()) <= 2, f"{argv}: more than a one-line error (+ a note): {err!r}"
        assert "error" in err.splitlines()[-1], err
    assert seconds < CALL_LIMIT_S, f"{argv}: took {seconds:.1f} s"
    return code, out, err


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The CLI's parser, built once for :func:`parsed` (a test helper; the runs under test build their own)."""
    return cli.build_parser()


def parsed(argv: list[str]) -> argparse.Namespace | None:
    """The namespace ``argv`` parses to, or None where the parser refuses it (quietly)."""
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        try:
            return _parser().parse_args(argv)
        except SystemExit:
            return None


Spec = dict[str, tuple[st.SearchStrategy, st.SearchStrategy]]  # option -> (good values, bad values)


def options(draw, spec: Spec, required: tuple[str, ...] = ()) -> list[str]:
    """Options of ``spec`` in random order: each of ``required`` nine times in ten, up to three others.

    Half the command lines are *clean* (good values only, so the commands really run); the others
    take a bad value for each option with probability one in three, and now and then a junk token.
    """
    clean = draw(st.booleans())
    names = [name for name in required if draw(st.integers(0, 9))]
    names += draw(st.lists(st.sampled_from(sorted(set(spec) - set(required))), unique=True, max_size=3))
    names = draw(st.permutations(names))
    argv: list[str] = []
    for name in names:
        good, bad = spec[name]
        value = draw(good if clean or draw(st.integers(0, 2)) else bad)
        if value is None:  # a flag
            argv.append(name)
        elif isinstance(value, list):
            argv += [name, *value]
        else:
            argv += [name, value]
    if not clean and draw(st.integers(0, 4)) == 0:
        argv.insert(draw(st.integers(0, len(argv))), draw(st.sampled_from(JUNK_TOKENS)))
    return argv


fmt = (st.sampled_from(FORMATS), st.sampled_from(NAME_JUNK))
size = (
    st.sampled_from(["1", "8", "128", "256", "264", "300", "384", "512", "1024", "2560"]),
    st.one_of(st.sampled_from(SIZE_EDGES), st.integers(-5, 5000).map(str)),
)
bench_size = (
    st.sampled_from(["8", "128", "256", "512"]),
    st.one_of(st.sampled_from(SIZE_EDGES), st.integers(-5, 600).map(str)),
)
model_size = (
    st.one_of(
        st.sampled_from(["8", "128", "256", "384", "512", "1024", "4096", "8192", "65536"]),
        st.integers(1, 8192).map(lambda x: str(8 * x)),
    ),
    st.one_of(st.sampled_from(SIZE_EDGES), st.integers(-5, 65536).map(str)),
)
number = (
    st.sampled_from(["0.5", "1", "2", "0.001", "1000", "0.75"]),
    st.one_of(st.sampled_from(FLOAT_EDGES), st.floats(allow_nan=True, allow_infinity=True).map(repr)),
)
seed = (st.integers(0, 2**63 - 1).map(str), st.one_of(st.sampled_from(SEED_EDGES), st.integers(-5, 2**70).map(str)))
flag = (st.none(), st.none())
paths_good = st.sampled_from(["new_file", "existing_file", "dev_null"])
paths_bad = st.sampled_from(PATH_KINDS)


def one_of(*values: str, bad: tuple[str, ...] = ()) -> tuple[st.SearchStrategy, st.SearchStrategy]:
    return st.sampled_from(values), st.sampled_from(bad or ("", "nonsense"))


def listed(values: tuple[st.SearchStrategy, st.SearchStrategy], max_size: int = 3):
    good, bad = values
    return (
        st.lists(good, min_size=1, max_size=max_size),
        st.lists(st.one_of(good, bad), min_size=0, max_size=max_size),
    )


@st.composite
def plan_argv(draw):
    return [
        "plan",
        *options(
            draw,
            required=("--a-format", "--b-format"),
            spec={
                "--a-format": fmt,
                "--b-format": fmt,
                "--block-k": (st.sampled_from(["64", "128", "256", "512", "2816"]), size[1]),
                "--epilogue-block-n": (st.sampled_from(["16", "32", "64", "256"]), st.one_of(size[1], st.just("48"))),
                "--overlap": flag,
                "--no-overlap": flag,
                "--json": flag,
            },
        ),
    ]


@st.composite
def emulate_argv(draw):
    return [
        "emulate",
        *options(
            draw,
            required=("--a-format", "--b-format", "--m", "--n", "--k"),
            spec={
                "--a-format": fmt,
                "--b-format": fmt,
                "--m": size,
                "--n": size,
                "--k": size,
                "--overlap": one_of("on", "off", bad=("maybe", "", "ON ", "2")),
                "--clusters": (st.sampled_from(["1", "2", "3", "10000", "100000"]), size[1]),
                "--break": one_of(
                    "skip-overlap-wait",
                    "early-release",
                    "even-low-to-high",
                    "skip-acc-empty-wait",
                    "wrong-overlap-phase",
                    bad=("nonsense", ""),
                ),
                "--seed": seed,
                "--problem-seed": seed,
                "--timed": flag,
                "--trace": (paths_good, paths_bad),
                "--json": flag,
            },
        ),
    ]


@st.composite
def model_argv(draw, required: tuple[str, ...] = ()):
    return [
        "model",
        *options(
            draw,
            required=required,
            spec={
                "--gpu": one_of("b200", "b300", "gb200", bad=("h100", "", "../b200", "B200", "b200.json")),
                "--a-format": fmt,
                "--b-format": fmt,
                "--m": model_size,
                "--n": model_size,
                "--k": listed(model_size),
                "--epilogue-scale": number,
                "--json": flag,
            },
        ),
    ]


@st.composite
def compile_argv(draw):
    return [
        "compile",
        *options(
            draw,
            required=("--a-format", "--b-format"),
            spec={
                "--a-format": fmt,
                "--b-format": fmt,
                "--overlap": one_of("on", "off", bad=("maybe", "yes!")),
                "--block-k": (st.sampled_from(["128", "256", "512"]), size[1]),
                "--emit": (st.just("directory"), paths_bad),
                "--json": flag,
            },
        ),
    ]


@st.composite
def bench_argv(draw):
    return [
        "bench",
        *options(
            draw,
            {
                "--m": bench_size,
                "--n": bench_size,
                "--k": listed(bench_size),
                "--formats": (
                    st.lists(
                        st.sampled_from(["mxfp8-mxfp4", "nvfp4-nvfp4", "mxfp4xmxfp4", "mxfp8,mxfp8"]),
                        min_size=1,
                        max_size=3,
                    ),
                    st.lists(
                        st.sampled_from(["mxfp4-mxfp8", "fp16-fp16", "mxfp8", "", "nvfp4-mxfp4"]),
                        min_size=0,
                        max_size=3,
                    ),
                ),
                "--no-cublas": flag,
                "--csv": (st.sampled_from(["new_file", "<auto>"]), paths_bad),
                "--seed": seed,
            },
        ),
    ]


def resolve_paths(argv: list[str], paths: dict[str, str]) -> list[str]:
    out = []
    for i, token in enumerate(argv):
        if i and argv[i - 1] in ("--trace", "--emit", "--csv") and token in paths:
            out.append(paths[token])
        elif token == "<auto>":
            continue  # bare --csv: the default path
        else:
            out.append(token)
    return out


def affordable(argv: list[str], model_rows: int | None = MODEL_FAST_ROWS) -> bool:
    """False for a valid command line whose run would be long (see the module docstring); ``model_rows``:
    the most rows a model run may have (None: no limit but MODEL_MAX_OPS)."""
    args = parsed(argv)
    if args is None or not getattr(args, "func", None):
        return True
    try:
        if args.command == "emulate":
            limits.check_pair(args.a_format, args.b_format)
            limits.check_problem(args.m, args.n, args.k)
            return (
                budget.emulate_estimate(args.m, args.n, args.k, args.a_format, args.b_format, args.clusters).seconds
                <= EMULATE_RUN_S
            )
        if args.command == "model":
            pairs = (
                list(limits.SUPPORTED_PAIRS)
                if args.a_format is None
                else [limits.check_pair(args.a_format, args.b_format)]
            )
            if model_rows is not None and len(pairs) * len(args.k) > model_rows:
                return False
            return limits.model_operations(args.m, args.n, args.k, pairs) <= MODEL_MAX_OPS
        if args.command == "compile":
            from gluon_overlap.compiler import compile as gc

            variant = gc.Variant(args.a_format, args.b_format, args.overlap, args.block_k)
            return (variant.a_format, variant.b_format, variant.overlap) in COMPILE_VARIANTS and variant.default_block_k
    except ValueError:
        return True  # refused before any work
    return True


def fuzz(argv: list[str], paths: dict[str, str], model_rows: int | None = MODEL_FAST_ROWS) -> None:
    argv = resolve_paths(argv, paths)
    assume(affordable(argv, model_rows))
    code, _, _ = check_outcome(argv)
    event(f"{argv[0] if argv else '-'}: exit {code}")


@SETTINGS
@given(argv=plan_argv())
def test_fuzz_plan(paths, argv):
    fuzz(argv, paths)


@settings(SETTINGS, max_examples=20)  # more in test_fuzz_every_command_longer (slow)
@given(argv=emulate_argv())
def test_fuzz_emulate(paths, argv):
    fuzz(argv, paths)


@settings(SETTINGS, max_examples=20)  # more, and whole tables, in test_fuzz_every_command_longer (slow)
@given(argv=model_argv(required=("--a-format", "--b-format", "--k")))  # mostly runs of MODEL_FAST_ROWS rows
def test_fuzz_model(paths, argv):
    fuzz(argv, paths)


@settings(SETTINGS, max_examples=40)
@given(argv=compile_argv())
def test_fuzz_compile(paths, argv):
    fuzz(argv, paths)


@SETTINGS
@given(argv=bench_argv())
def test_fuzz_bench(paths, argv):
    fuzz(argv, paths)


@settings(SETTINGS, max_examples=40)
@given(
    argv=st.lists(
        st.one_of(
            st.sampled_from(["plan", "compile", "emulate", "model", "bench", "--version", "--json"] + JUNK_TOKENS),
            st.text(max_size=8),
        ),
        max_size=5,
    )
)
def test_fuzz_anything(paths, argv):
    if argv and argv[0] == "--version" or "--help" in argv or "-h" in argv:
        assume(False)
    fuzz(argv, paths)


@pytest.mark.slow
@hypothesis.seed(2026)  # other examples than the derandomized runs above, the same every time
@settings(SETTINGS, max_examples=150, derandomize=False)
@given(argv=st.one_of(plan_argv(), emulate_argv(), model_argv(), compile_argv(), bench_argv()))
def test_fuzz_every_command_longer(paths, argv):
    """The long sweep (``make test-slow``): every command's grammar, many more examples, whole model tables."""
    fuzz(argv, paths, model_rows=None)


# --- the same guarantees for real processes (exit status, stderr, no traceback) -----------------------
@pytest.mark.parametrize(
    "argv, status",
    [
        (["emulate", "--a-format", "nvfp4", "--b-format", "nvfp4", "--m", "65536", "--n", "65536", "--k", "256"], 2),
        (["model", "--epilogue-scale", "inf"], 2),
        (["plan", "--a-format", "mxfp4", "--b-format", "mxfp8"], 2),
        (
            [
                "emulate",
                "--a-format",
                "mxfp8",
                "--b-format",
                "mxfp8",
                "--m",
                "256",
                "--n",
                "256",
                "--k",
                "256",
                "--problem-seed",
                "99999999999999999999",
            ],
            2,
        ),
        (["plan", "--a-format", "nvfp4", "--b-format", "nvfp4", "--json"], 0),
    ],
)
def test_real_processes_end_cleanly(argv, status):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.run(
        [sys.executable, "-m", "gluon_overlap", *argv], capture_output=True, text=True, timeout=CALL_LIMIT_S, env=env
    )
    assert proc.returncode == status
    assert "Traceback" not in proc.stderr
    if status:
        assert len(proc.stderr.strip().splitlines()) == 1 and "error" in proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--a-format", "nvfp4", "--b-format", "nvfp4", "--json"],
        ["model", "--a-format", "nvfp4", "--b-format", "nvfp4", "--k", "512"],
    ],
)
def test_a_reader_that_leaves_is_not_an_error(argv):
    """``gluon-overlap ... | head -0``: the pipe closes before the command writes; exit 0, nothing on stderr."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | {"PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gluon_overlap", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=CALL_LIMIT_S) == 0
    assert err == ""
