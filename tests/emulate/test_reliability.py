"""A learner's broken kernel, a bad output path, a full disk or Ctrl-C: each ends with a clear line and the
documented exit status (0 clean, 1 problem found, 2 error, 130 interrupted), no hang, no partial file.

Edited kernels run in the guarded child process (``gluon_overlap.commands.guarded``); their copies live in
a private folder (``gluon_overlap.emulate.kernel_files``).  Most cases run ``cli.main`` in this process (the
guard forks from it); Ctrl-C, ``os._exit`` at import, closed streams and a second user run real processes.
"""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import stat
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import gluon_overlap.compiler.precheck  # noqa: F401, E402  (Triton's compiler frontend)

# The commands' work runs in a child forked from this process: what this process has imported, every child
# has for free.  A command started from a shell imports torch and the twin in its child, once; here each of
# the ~30 commands would import them again (3-5 s each on 2 busy cores), which is what made this file slow.
import gluon_overlap.emulate.runs  # noqa: F401, E402  (torch, the interpreter, the kernel harness)
from gluon_overlap import cli, store
from gluon_overlap.commands import _output, guarded
from gluon_overlap.commands.numbers import parse_integer, parse_number
from gluon_overlap.emulate import kernel_files
from gluon_overlap.emulate.kernels import DEFAULT_KERNEL, load_kernel

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--a-format", "mxfp8", "--b-format", "mxfp8", "--m", "256", "--n", "256", "--k", "256"]
#: the first statement of each epilogue tile: an edit placed before it runs inside a partition
EPILOGUE_LINE = "        mbarrier.wait(p.acc_ready_bars.index(acc_state.index), acc_state.phase)\n"
IMPORT_LINE = "import torch\n"
#: the first statement of ``kernel_args``: plain Python the launch runs
HOST_LINE = "    descs = make_descriptors(a_data, b_data, a_scale_swizzled, b_scale_swizzled, c, plan)\n"


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def run_process(argv: list[str], **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)} | kw.pop("env", {})
    return subprocess.run(
        [sys.executable, "-m", "gluon_overlap", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=kw.pop("timeout", 180),
        **kw,
    )


def edited(tmp_path: Path, name: str, before: str, insert: str) -> str:
    """A copy of the kernel with ``insert`` placed before the line ``before``."""
    source = DEFAULT_KERNEL.read_text()
    assert source.count(before) == 1
    indent = before[: len(before) - len(before.lstrip())]
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(before, "".join(indent + line + "\n" for line in insert.splitlines()) + before))
    return str(path)


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# --- kernel files that are not kernels ------------------------------------------------------------------
def test_kernel_paths_that_are_not_python_files_say_what_they_are(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\x7fELF\x00\x01\x02")
    latin = tmp_path / "latin.py"
    latin.write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    loop = tmp_path / "loop.py"
    loop.symlink_to(loop)
    cases = {
        str(tmp_path): "is a directory",
        str(fifo): "is a FIFO",
        str(binary): "is a binary file",
        str(latin): "is not UTF-8 text",
        str(loop): "cannot be reached",
        str(tmp_path / "none.py"): "does not exist",
    }
    for path, words in cases.items():
        start = time.perf_counter()
        code, out, err = run_cli(["emulate", *SMALL, "--kernel", path])
        assert code == 2 and out == "", (path, err)
        assert words in one_error_line(err) and path in err, (path, err)
        assert time.perf_counter() - start < 5, path  # checked before any import; a FIFO is never opened


def test_an_unreadable_kernel_file_says_permission_denied(tmp_path, monkeypatch):
    path = tmp_path / "mine.py"
    path.write_text(DEFAULT_KERNEL.read_text())
    real_open = open

    def deny(file, *args, **kw):  # as root every file is readable: the denial is what a learner would meet
        if str(file) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, *args, **kw)

    monkeypatch.setattr("builtins.open", deny)
    with pytest.raises(ValueError, match="is not readable .permission denied."):
        load_kernel(path)


@pytest.mark.parametrize(
    "exit_call, shown",
    [
        ("sys.exit(3)", "SystemExit(3)"),
        ("exit()", "SystemExit(None)"),
        ("os._exit(0)", "the kernel called os._exit(0)"),
    ],
)
def test_a_kernel_that_exits_at_import_is_an_error_with_its_line(tmp_path, exit_call, shown):
    path = edited(tmp_path, "exits", IMPORT_LINE, f"import os, sys; {exit_call}")
    line = DEFAULT_KERNEL.read_text().splitlines().index(IMPORT_LINE.strip()) + 1
    if exit_call.startswith("os."):  # a real process too: unguarded, os._exit would end it with status 0
        res = run_process(["emulate", *SMALL, "--kernel", path])
        code, out, err = res.returncode, res.stdout, res.stderr
    else:
        code, out, err = run_cli(["emulate", *SMALL, "--kernel", path])
    assert code == 2 and out == "", (code, out, err)
    msg = one_error_line(err)
    assert "does not import" in msg and shown in msg and f"exits.py:{line}" in msg, msg


def line_of(path: str, text: str) -> int:
    """The number of the first line of ``path`` whose stripped text is ``text``."""
    return [line.strip() for line in Path(path).read_text().splitlines()].index(text) + 1


def test_an_exit_written_in_a_partition_is_refused_by_the_compiler_with_its_line(tmp_path):
    """A @gluon.jit partition cannot import or exit: Triton's frontend refuses the statement, so nothing runs."""
    statement = "import os, sys; os._exit(0)"
    path = edited(tmp_path, "exits_late", EPILOGUE_LINE, statement)
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path, "--json"])
    assert code == 1, err
    d = json.loads(out)
    assert "unsupported AST node type: Import" in d["refused"], d
    assert f"exits_late.py:{line_of(path, statement)} `{statement}`" in d["refused"], d["refused"]
    assert d["failure"].startswith("CompilerRefusal: ") and d["events"] == 0 and not d["matches_reference"]


#: a module-level helper goes before the epilogue partition; a call to it before the epilogue's first wait
PARTITION_DEF = "@gluon.jit\ndef epilogue_partition(p):\n"


def with_helper(tmp_path: Path, name: str, helper: str, call: str = "stop_here()") -> str:
    """A copy of the kernel with ``helper`` defined at module level and ``call`` in the epilogue partition."""
    first = edited(tmp_path, name, PARTITION_DEF, helper + "\n\n")
    source = Path(first).read_text()
    assert source.count(EPILOGUE_LINE) == 1
    Path(first).write_text(source.replace(EPILOGUE_LINE, "        " + call + "\n" + EPILOGUE_LINE))
    return first


@pytest.mark.parametrize(
    "exit_call, shown", [("os._exit(0)", "KernelExit: the kernel called os._exit(0)"), ("sys.exit(0)", "SystemExit: 0")]
)
def test_a_helper_that_exits_while_the_compiler_runs_it_is_the_kernels_error(tmp_path, exit_call, shown):
    """A constexpr function runs in Triton's frontend at launch (on a GPU machine too): an exit there is the
    kernel's error with the helper's line, exit 1 -- never a clean run, never a silent end of the command."""
    helper = f"@gluon.constexpr_function\ndef stop_here():\n    import os, sys\n    {exit_call}"
    path = with_helper(tmp_path, "exits_compiling", helper)
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path, "--json"])
    assert code == 1, err
    d = json.loads(out)
    assert d["failure"].startswith(shown), d["failure"]
    assert f"exits_compiling.py:{line_of(path, exit_call)} `{exit_call}`" in d["failure"], d["failure"]
    assert d["refused"] is None and not d["matches_reference"] and d["events"] == 0


def test_a_plain_python_helper_called_by_a_partition_is_refused_like_triton_s_launcher_does(tmp_path):
    """Triton's launcher hashes the kernel with what it calls and refuses a plain function (it was an internal
    error here): a refusal naming the function and the partition's line that calls it; nothing runs."""
    path = with_helper(tmp_path, "plain_helper", "def stop_here():\n    import os\n    os._exit(0)")
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path, "--json"])
    assert code == 1, err
    d = json.loads(out)
    assert "Unsupported function referenced: stop_here" in d["refused"], d["refused"]
    assert f"plain_helper.py:{line_of(path, 'stop_here()')} `stop_here()`" in d["refused"], d["refused"]
    assert d["events"] == 0


def _launch_in_guard(path: str, seconds: float | None = None):
    """Run the kernel at ``path`` on the executor in the guarded child, without the compiler's check (the
    executor then runs partition code the compiler would refuse); the run's error and steps."""
    from gluon_overlap.emulate.config import NUM_CTAS, KernelConfig, kernel_arguments
    from gluon_overlap.formats import random_problem
    from gluon_overlap.interp.launch import launch
    from gluon_overlap.tmem import make_plan

    def work(channel):
        config = KernelConfig(make_plan("mxfp8", "mxfp8"), 256, 256, 256, kernel_path=path)
        module = config.module()
        channel.watched_files = {module.__file__}
        problem = random_problem(256, 256, 256, "mxfp8", "mxfp8")
        c = __import__("torch").full((256, 256), float("nan"), dtype=__import__("torch").float16)
        args = kernel_arguments(config, problem, c, module)
        channel.phase("the run", seconds)
        r = launch(
            module.mma_scaled_warp_specialized_kernel, (1,), args, num_ctas=NUM_CTAS, precheck=False, trace=False
        )
        channel.end_phase()
        return r.error, r.steps, bool(c.isnan().any())

    return guarded.run_guarded(work)


@pytest.mark.parametrize(
    "exit_call, shown", [("os._exit(0)", "KernelExit: the kernel called os._exit(0)"), ("sys.exit(0)", "SystemExit: 0")]
)
def test_an_exit_inside_a_running_partition_is_the_kernels_error_with_its_line(tmp_path, exit_call, shown):
    """The guard itself, inside a running kernel: os._exit would end the child silently and SystemExit would
    end it with the kernel's code; both become the run's error with the partition's line (the loader and MMA
    partitions ran before the epilogue reached it)."""
    statement = f"import os, sys; {exit_call}"
    path = edited(tmp_path, "exits_running", EPILOGUE_LINE, statement)
    error, steps, unstored = _launch_in_guard(path)
    assert error.startswith(shown), error
    assert f"exits_running.py:{line_of(path, statement)} `{statement}`" in error, error
    assert steps > 0 and unstored  # it ran, and stopped before the epilogue stored anything


def test_a_stop_swallowed_once_is_repeated_until_the_kernel_stops(tmp_path):
    """The first stop lands in the kernel's loop and is swallowed; the next loop spends its time in the
    executor's runtime integers, called from the kernel's line: the repeated stop still ends it there (the
    executor compiles nothing here: try/except would be refused by the compiler)."""
    body = (
        "try:\n    while True:\n        pass\nexcept BaseException:\n    pass\n"
        "spin = gl.program_id(0)\nwhile spin >= 0:\n    spin = spin + 1"
    )
    path = edited(tmp_path, "swallows_once", EPILOGUE_LINE, body)
    start = time.perf_counter()
    error, steps, unstored = _launch_in_guard(path, seconds=1.0)
    assert error.startswith("WallClockExceeded: the run used its wall-clock budget of 1 s"), error
    loop_lines = {line_of(path, "while spin >= 0:"), line_of(path, "spin = spin + 1")}
    assert any(f"swallows_once.py:{n} " in error for n in loop_lines), error
    assert time.perf_counter() - start < 1 + guarded.GRACE_SECONDS + 30


def test_halting_the_engine_ends_the_run_with_no_deadlock_and_no_more_steps():
    """What the executor does when a partition raises (a trap ends the whole grid): ``Engine.halt`` ends the
    run at once -- a process that would arrive forever does not run on, a waiter is not called deadlocked."""
    from gluon_overlap.interp.engine import Engine
    from gluon_overlap.interp.ops import Arrive, Wait

    engine = Engine(seed=0)
    never, busy_bar = engine.barrier("never"), engine.barrier("busy")
    arrivals = []

    def waiter():
        yield Wait(never, 0)

    def busy():  # endless: only the step budget (none here) or a halt ends it
        while True:
            arrivals.append(1)
            yield Arrive(busy_bar)

    def trap():
        yield Wait(engine.barrier("open"), 1)  # a fresh barrier's phase 1 passes: one step
        engine.halt()
        return

    for n, gen in enumerate((waiter(), busy(), trap())):
        engine.spawn(gen, partition=f"p{n}", cta=0, cluster=0)
    result = engine.run()
    assert engine.halted and result.deadlock is None and not result.step_limit_hit
    assert result.steps == 2 + len(arrivals) and len(arrivals) < 100  # it ended where the trap halted it


# --- budgets ---------------------------------------------------------------------------------------------
#: the compiler's check's budget in the tests of helpers that loop (the frontend reaches them well within it)
COMPILE_BUDGET = 4.0
#: a loop that compiles (runtime i32 values) and never ends: the executor runs it like the GPU would
SPIN = "spin = gl.program_id(0)\nwhile spin >= 0:\n    spin = spin + 1"


def test_an_endless_loop_in_a_partition_is_stopped_by_the_wall_clock_budget(tmp_path):
    path = edited(tmp_path, "spins", EPILOGUE_LINE, SPIN)
    start = time.perf_counter()
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path, "--time-limit", "1", "--json"])
    took = time.perf_counter() - start
    assert code == 1, err
    d = json.loads(out)
    assert d["refused"] is None, d["refused"]  # the compiler accepts the loop: it runs
    assert d["budget"]["stopped_by"] == "wall-clock" and d["budget"]["seconds"] == 1.0 and d["budget"]["steps"] > 0
    assert "wall-clock budget of 1 s" in d["failure"], d["failure"]
    loop_lines = {line_of(path, "while spin >= 0:"), line_of(path, "spin = spin + 1")}
    assert any(f"spins.py:{n} " in d["failure"] for n in loop_lines), d["failure"]
    assert took < 1 + guarded.GRACE_SECONDS + 30, took
    from gluon_overlap.commands.emulate import _render

    table = _render(d)
    assert "the wall-clock budget (1 s)" in table and "BROKEN" in table, table


def test_an_endless_loop_in_a_helper_the_compiler_runs_is_stopped_with_its_line(tmp_path, monkeypatch):
    """The compiler's check has its own budget (a run's budget is the run's); a helper that loops there is
    stopped at it, and the report names the helper's line."""
    from gluon_overlap.commands import emulate

    monkeypatch.setattr(emulate, "COMPILE_SECONDS", COMPILE_BUDGET)
    path = with_helper(
        tmp_path,
        "loops_compiling",
        "@gluon.constexpr_function\ndef stop_here():\n    n = 0\n    while n >= 0:\n        n = n + 1",
    )
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path, "--json"])
    assert code == 1, err
    d = json.loads(out)
    assert d["failure"].startswith(
        f"WallClockExceeded: the compiler's check of the kernel used its wall-clock budget of {COMPILE_BUDGET:g} s"
    ), d["failure"]
    loop_lines = {line_of(path, "while n >= 0:"), line_of(path, "n = n + 1")}
    assert any(f"loops_compiling.py:{n} " in d["failure"] for n in loop_lines), d["failure"]
    assert d["budget"]["stopped_by"] == "wall-clock" and d["refused"] is None and not d["matches_reference"]
    # the clock that stopped it is the compiler's check's own, not the run's (which never started)
    assert d["budget"]["stopped_in"] == "the compiler's check of the kernel", d["budget"]
    assert d["budget"]["stopped_in_seconds"] == COMPILE_BUDGET and d["budget"]["seconds"] != COMPILE_BUDGET
    # the table the command prints without --json is this document rendered (one run of the loop, not two)
    from gluon_overlap.commands.emulate import _render

    table = " ".join(_render(d).split())  # the table fits 100 columns: a long kernel path makes its cells wrap
    assert (
        f"stopped by the wall-clock budget of the compiler's check of the kernel ({COMPILE_BUDGET:g} s)"
    ) in table, table


@pytest.mark.parametrize(
    "statement, shown",
    [
        ("raise RuntimeError('my bug')", "RuntimeError: my bug"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt"),  # the kernel's own: the guarded child ignores Ctrl-C
        ("raise GeneratorExit('odd')", "GeneratorExit: odd"),
        ("x = 1 + 'a'", "TypeError: unsupported operand"),
        ("open('/nonexistent-dir/x')", "FileNotFoundError: [Errno 2]"),
        ("raise ValueError('mine')", "ValueError: mine"),
    ],
)
def test_a_bug_in_the_kernel_files_host_code_is_the_kernels_error_with_its_line(tmp_path, statement, shown):
    """``kernel_args`` (plain Python run at launch) raising anything is the kernel's error, exit 1, with the
    line -- never an "internal error" of the command, never blamed on the command's input."""
    path = edited(tmp_path, "host_bug", HOST_LINE, statement)
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path, "--json"])
    assert code == 1, err
    d = json.loads(out)
    assert d["failure"].startswith(shown), d["failure"]
    assert f"host_bug.py:{line_of(path, statement)} `{statement}`" in d["failure"], d["failure"]
    assert d["refused"] is None and not d["matches_reference"] and d["budget"]["stopped_by"] is None


GRID_LINE = "    return (max(1, min(num_tiles, sm_count // NUM_CTAS)), )\n"  #: the body of launch_grid
FOUR_TILES = ["--a-format", "mxfp8", "--b-format", "mxfp8", "--m", "512", "--n", "512", "--k", "256"]


def test_an_edited_launch_grid_picks_the_grid_the_kernel_runs_on(tmp_path):
    """The executor launches the grid the kernel file's own launch_grid returns (as matmul_raw does on a GPU):
    an edit of it is seen -- never ignored -- and one that returns no valid grid is refused in one line."""
    from gluon_overlap.emulate.runs import emulate

    one = edited(tmp_path, "one_cluster", GRID_LINE, "return (1, )")
    code, out, err = run_cli(["emulate", *FOUR_TILES, "--kernel", one, "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert d["clusters"] == 1 and d["tiles_per_cluster"] == [4] and d["matches_reference"], d
    code, out, err = run_cli(["emulate", *FOUR_TILES, "--kernel", one, "--clusters", "2", "--json"])
    assert code == 0 and json.loads(out)["tiles_per_cluster"] == [2, 2], err  # --clusters still decides
    from gluon_overlap.formats import random_problem

    r = emulate(random_problem(512, 512, 256, "mxfp8", "mxfp8"), kernel=one)  # the Python API too
    assert r.config.grid == 1 and r.summary()["tiles_per_cluster"] == [4] and r.ok
    for n, (returned, words) in enumerate(
        [
            ("(0, )", "grid[0]=0 must be positive"),
            ("'abc'", "must be a tuple of one int"),
            ("(1.5, )", "grid[0]=1.5 must be an integer"),
            ("(2, 2)", "must be a tuple of one int"),
        ]
    ):
        path = edited(tmp_path, f"bad_grid_{n}", GRID_LINE, f"return {returned}")
        code, out, err = run_cli(["emulate", *FOUR_TILES, "--kernel", path])
        assert code == 2 and out == "", (out, err)
        assert one_error_line(err).startswith(
            f"gluon-overlap emulate: error: the kernel file's launch_grid(4, 148) returned {eval(returned)!r}: "
        ), err
        assert words in err, err
    path = edited(tmp_path, "grid_raises", GRID_LINE, "raise RuntimeError('no grid')")
    code, out, err = run_cli(["emulate", *FOUR_TILES, "--kernel", path, "--json"])
    assert code == 1, err
    assert json.loads(out)["failure"].startswith("RuntimeError: no grid (at grid_raises.py:"), out


def test_a_process_the_kernel_forks_does_not_outlive_the_command(tmp_path):
    """The guarded child leads a process group of its own and the command ends the group: a kernel whose host
    code forks a process that sleeps leaves nothing running behind it."""
    marker = tmp_path / "grandchild.pid"
    fork = (
        f"import os, time\nif os.fork() == 0:\n    open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        "    time.sleep(120)"
    )
    path = edited(tmp_path, "forks", HOST_LINE, fork)
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path])
    assert code == 0, err  # the fork itself is harmless: the run is the parent's
    deadline = time.monotonic() + 10
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline, "the forked process never started"
        time.sleep(0.05)
    pid = int(marker.read_text())
    while time.monotonic() < deadline:  # killed: gone, or a zombie waiting for init to reap it
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            break
        if state in ("Z", "X"):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the process the kernel forked (pid {pid}) is still running")


@pytest.mark.parametrize(
    "statement, shown",
    [("raise KeyboardInterrupt", "KeyboardInterrupt"), ("raise GeneratorExit('odd')", "GeneratorExit: odd")],
)
def test_a_kernel_that_raises_a_stop_at_import_does_not_import(tmp_path, statement, shown):
    path = edited(tmp_path, "stops_at_import", IMPORT_LINE, statement)
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path])
    assert code == 2 and out == "", (out, err)
    assert one_error_line(err) == (
        f"gluon-overlap emulate: error: kernel file {path!r} does not import: {shown} "
        f"at stops_at_import.py:{line_of(path, statement)}"
    )


def test_an_import_that_outlasts_its_budget_does_not_import(tmp_path, monkeypatch):
    """The import has its own wall-clock budget; a kernel file that sleeps or loops at import is stopped at it
    and does not import (exit 2, one line with its line) -- not an internal error."""
    from gluon_overlap.commands import emulate

    monkeypatch.setattr(emulate, "IMPORT_SECONDS", 0.5)
    path = edited(tmp_path, "sleeps_at_import", IMPORT_LINE, "import time; time.sleep(3)")
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path])
    assert code == 2 and out == "", (out, err)
    assert one_error_line(err) == (
        f"gluon-overlap emulate: error: kernel file {path!r} does not import: WallClockExceeded: the import of the "
        f"kernel file used its wall-clock budget of 0.5 s at sleeps_at_import.py:"
        f"{line_of(path, 'import time; time.sleep(3)')}"
    )


def test_a_loop_that_swallows_the_stop_is_killed_and_reported(tmp_path, monkeypatch):
    from gluon_overlap.commands import emulate

    body = (
        "@gluon.constexpr_function\ndef stop_here():\n    while True:\n        try:\n            while True:\n"
        "                pass\n        except BaseException:\n            pass"
    )
    path = with_helper(tmp_path, "swallows", body)
    code, out, err = run_cli(["emulate", *SMALL, "--json"])  # a clean run's document, for its keys
    assert code == 0, err
    clean = json.loads(out)
    monkeypatch.setattr(guarded, "GRACE_SECONDS", 1.0)
    monkeypatch.setattr(emulate, "COMPILE_SECONDS", COMPILE_BUDGET)
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path, "--time-limit", "1", "--json"])
    assert code == 1, err
    d = json.loads(out)
    assert d["budget"]["stopped_by"] == "wall-clock" and not d["matches_reference"] and d["refused"] is None
    assert (
        f"the kernel's process ended: it did not stop at its wall-clock budget of {COMPILE_BUDGET:g} s and was "
        "killed during the compiler's check of the kernel"
    ) == d["failure"], d["failure"]
    assert set(d) == set(clean) and set(d["budget"]) == set(clean["budget"]), set(d) ^ set(clean)


def test_a_clean_run_reports_both_budgets_and_that_nothing_stopped_it():
    code, out, err = run_cli(["emulate", *SMALL, "--break", "early-release", "--json", "--time-limit", "90"])
    assert code in (0, 1), err
    d = json.loads(out)
    assert d["budget"] == {
        "steps": d["budget"]["steps"],
        "seconds": 90.0,
        "stopped_by": None,
        "stopped_in": None,
        "stopped_in_seconds": None,
    }
    assert d["step_limit_hit"] is False and 0 < d["steps"] < d["budget"]["steps"]


# --- Ctrl-C and SIGTERM -----------------------------------------------------------------------------------
def ready_then_spin(tmp_path: Path, name: str, marker: Path, where: str = "the run") -> str:
    """A kernel that appends its process id to ``marker`` -- the readiness signal -- and then spins: in the
    epilogue partition when the executor runs it (``where="the run"``; the compiler accepts the loop), or in a
    helper that Triton's frontend runs during the compiler's check (``where="the compiler"``; sooner)."""
    in_run = where == "the run"
    helper = (
        "@gluon.constexpr_function\ndef ready_here():\n"
        "    from gluon_overlap.interp.context import current_or_none\n"
        f"    if (current_or_none() is not None) == {in_run}:  # the executor's partition, or the frontend\n"
        "        import os\n"
        f"        with open({str(marker)!r}, 'a') as f:\n"
        "            f.write(str(os.getpid()) + '\\n')\n"
        + ("" if in_run else "        while True:\n            pass\n")
    )
    call = ["ready_here()", *SPIN.splitlines()] if in_run else ["ready_here()"]
    return with_helper(tmp_path, name, helper, "\n        ".join(call))


def start_cli(argv: list[str]) -> subprocess.Popen:
    """The command as a terminal starts it: Ctrl-C at its default.  An *ignored* SIGINT is inherited across exec
    (a shell's background job), and a test process may carry one from the runner or an earlier test: it must not
    pass on, or the command would rightly ignore the Ctrl-C this file sends."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: nothing to reset here
        previous = None
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "gluon_overlap", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def wait_until_ready(p: subprocess.Popen, marker: Path, timeout: float = 120.0) -> int:
    """The id of the process that runs the kernel, once it has written it to ``marker`` (polled, no fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker.exists() and marker.read_text().endswith("\n"):
            return int(marker.read_text().split()[0])
        assert p.poll() is None, ("the command ended before its kernel ran", p.communicate())
        time.sleep(0.05)
    p.kill()
    raise AssertionError(f"the kernel did not start within {timeout} s: {p.communicate()}")


def stop_and_wait(p: subprocess.Popen, sig: int, whole_group: bool) -> tuple[int, str, str, float]:
    """Send ``sig`` to the command (or, like a terminal's Ctrl-C, to its whole process group)."""
    (os.killpg if whole_group else os.kill)(p.pid, sig)
    start = time.perf_counter()
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err, time.perf_counter() - start


def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_ctrl_c_during_a_seeds_sweep_exits_130_with_one_line_and_no_trace(tmp_path):
    marker = tmp_path / "ready"
    path = ready_then_spin(tmp_path, "slow", marker)  # seed 0 spins: the sweep is stopped in its first run
    trace = tmp_path / "trace.jsonl"
    p = start_cli(["emulate", *SMALL, "--kernel", path, "--seeds", "4", "--trace", str(trace)])
    child = wait_until_ready(p, marker)
    assert child != p.pid  # the kernel runs in the guarded child
    code, out, err, after = stop_and_wait(p, signal.SIGINT, whole_group=True)  # what a terminal sends on Ctrl-C
    assert code == 130, (code, out, err)
    assert one_error_line(err) == "gluon-overlap emulate: error: interrupted" and out == ""
    assert after < 10, after
    assert gone(child)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["ready", "slow.py"]  # no trace, no partial trace


def test_sigterm_while_the_child_works_exits_143_with_one_line_no_trace_and_no_child(tmp_path):
    """``kill PID`` (SIGTERM to the command alone, not its group): the guarded child is killed by the command,
    the partial trace removed, one line, exit 143 -- not a raw death."""
    marker = tmp_path / "ready"
    path = ready_then_spin(tmp_path, "slow", marker, where="the compiler")  # the child is busy compiling
    trace = tmp_path / "trace.jsonl"
    p = start_cli(["emulate", *SMALL, "--kernel", path, "--trace", str(trace), "--json"])
    child = wait_until_ready(p, marker)
    assert any(q.name.endswith(".partial") for q in tmp_path.iterdir())  # the trace's temporary file exists
    code, out, err, after = stop_and_wait(p, signal.SIGTERM, whole_group=False)
    assert code == 143, (code, out, err)
    assert one_error_line(err) == "gluon-overlap emulate: error: terminated (SIGTERM)" and out == ""
    assert after < 10, after
    assert gone(child), "the guarded child outlived the command"
    assert sorted(q.name for q in tmp_path.iterdir()) == ["ready", "slow.py"]


def test_sigterm_in_this_process_ends_the_command_like_ctrl_c_and_the_handler_is_put_back(tmp_path, monkeypatch):
    """A real SIGTERM delivered while a command writes an atomic file: exit 143, one line, no partial file; the
    process's own SIGTERM handler is back afterwards; the help's epilog lists the exit statuses."""
    import gluon_overlap.commands.plan as plan_cmd

    target = tmp_path / "out.txt"

    def terminated_while_writing(args):
        with store.AtomicFile(target) as f:
            f.temp.write_text("half")
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises here, at once
        return 0

    monkeypatch.setattr(plan_cmd, "run", terminated_while_writing)
    before = signal.getsignal(signal.SIGTERM)
    start = time.perf_counter()
    code, out, err = run_cli(PLAN)
    assert code == 143 and one_error_line(err) == "gluon-overlap plan: error: terminated (SIGTERM)", (code, err)
    assert time.perf_counter() - start < 4 and list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is before
    epilog = " ".join(cli.build_parser().format_help().split())
    assert "130 interrupted (Ctrl-C), 143 terminated (SIGTERM)" in epilog, epilog


# --- options and numbers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["1_0", "1__0", "_10", "10_", "\u0661\u0662", "0x10", "1.0", "", "1e3", "+-1"])
def test_integers_are_plain_decimal_digits(text):
    with pytest.raises(ValueError, match="expected an integer"):
        parse_integer(text)
    code, _, err = run_cli(["emulate", *SMALL[:-2], "--k", text or "''"])
    assert code == 2 and "--k" in one_error_line(err)


def test_numbers_parse_as_written():
    assert [parse_integer(t) for t in ("256", "+7", "-0", "0012")] == [256, 7, 0, 12]
    assert [parse_number(t) for t in ("0.5", "2", ".5", "1e-3", "5.")] == [0.5, 2.0, 0.5, 1e-3, 5.0]
    for bad in ("1_0.5", "1_0", "0x1p3", "1e", "--1", "\u0661"):
        with pytest.raises(ValueError, match="expected a number"):
            parse_number(bad)
    code, _, err = run_cli(["model", "--epilogue-scale", "1_0"])
    assert code == 2 and "--epilogue-scale" in one_error_line(err)


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--timed", "--seed", "3"], "--timed runs one deterministic"),
        (["--seeds", "3", "--seed", "1"], "--seeds 3 runs seeds 0..2"),
        (["--seeds", "3", "--timed"], "--seeds sweeps interleavings"),
    ],
)
def test_conflicting_options_are_refused_before_any_work(extra, words):
    start = time.perf_counter()
    code, out, err = run_cli(["emulate", *SMALL, *extra])
    assert code == 2 and out == "" and words in one_error_line(err)
    assert time.perf_counter() - start < 5


def test_a_timed_run_does_not_report_a_seed():
    code, out, err = run_cli(["emulate", *SMALL, "--timed", "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert d["seed"] is None and d["timed"] is True


def test_seeds_with_trace_traces_the_first_failing_run_and_says_which(tmp_path):
    trace = tmp_path / "t.jsonl"
    code, out, err = run_cli(
        [
            "emulate",
            "--a-format",
            "mxfp8",
            "--b-format",
            "mxfp8",
            "--m",
            "256",
            "--n",
            "512",
            "--k",
            "256",
            "--break",
            "skip-acc-empty-wait",
            "--clusters",
            "1",
            "--seeds",
            "3",
            "--trace",
            str(trace),
            "--json",
        ]
    )
    d = json.loads(out)
    events = trace.read_text().splitlines()
    assert len(events) == d["events"] == d["trace"]["events"] > 0
    assert all(json.loads(e) for e in events[:5])
    first = d["sweep"]["first_failing_seed"]
    assert d["trace"]["seed"] == d["sweep"]["traced_seed"] == (0 if first is None else first) == d["seed"]
    assert code == (0 if first is None else 1)
    assert d["sweep"]["traced_run"] == ("the first run; none failed" if first is None else "the first failing run")


def test_model_refuses_work_past_its_limit_with_the_estimate():
    ks = [str(128 * i) for i in range(1, 201)]
    start = time.perf_counter()
    code, out, err = run_cli(["model", "--a-format", "mxfp8", "--b-format", "mxfp8", "--k", *ks])
    assert code == 2 and "200 rows would take ~" in one_error_line(err) and "at most" in err
    assert time.perf_counter() - start < 5


# --- kernel copies in a private folder -------------------------------------------------------------------
@pytest.fixture
def fresh_kernel_folder(monkeypatch, tmp_path):
    """A new private folder of kernel copies, and none of the copies this worker imported before (an earlier
    test's import of the same copy would otherwise be served from ``sys.modules``, from the old folder)."""
    monkeypatch.setattr(kernel_files, "_folder", None)
    for name in [n for n in sys.modules if n.startswith(kernel_files._PREFIX)]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delenv(kernel_files.FOLDER_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "gluon-overlap" / "kernels"


def test_kernel_copies_are_private_content_addressed_and_verified(fresh_kernel_folder):
    src = "X = 1\n"
    path = kernel_files.kernel_copy(src, "k_test")
    assert path.parent == fresh_kernel_folder and path.read_text() == src
    assert stat.S_IMODE(os.stat(fresh_kernel_folder).st_mode) == 0o700
    assert os.stat(fresh_kernel_folder).st_uid == os.getuid()
    assert kernel_files.kernel_copy(src, "k_test") == path  # same text, same file
    assert kernel_files.kernel_copy("X = 2\n", "k_test") != path
    path.write_text("import os; X = 'tampered'\n")  # someone (or something) changed the copy
    module = kernel_files.import_source(src, "k_test")
    assert module.X == 1 and path.read_text() == src  # the verified text ran, and the file was rewritten


def test_a_folder_someone_else_owns_or_can_write_is_never_used(fresh_kernel_folder):
    fresh_kernel_folder.mkdir(parents=True)
    os.chmod(fresh_kernel_folder, 0o777)  # open to everyone: a place another user could plant a file
    (fresh_kernel_folder / "planted.py").write_text("raise SystemExit('planted')\n")
    folder = kernel_files.kernel_folder()
    assert folder != fresh_kernel_folder and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    if os.getuid() == 0:  # a folder owned by another user, mode 0700 (as root we can make one)
        os.chmod(fresh_kernel_folder, 0o700)
        os.chown(fresh_kernel_folder, 12345, 12345)
        kernel_files._folder = None
        assert kernel_files.kernel_folder() != fresh_kernel_folder


def test_no_fixed_shared_folder_remains_in_the_package():
    for path in (ROOT / "gluon_overlap").rglob("*.py"):
        text = path.read_text()
        assert "gettempdir()" not in text and "/tmp/gluon-overlap" not in text, path


def test_the_folder_is_bounded(tmp_path):
    for i in range(10):
        (tmp_path / f"k_{i}.py").write_text("x" * 100)
        os.utime(tmp_path / f"k_{i}.py", (1000 + i, 1000 + i))
    store.Store("kernels", suffix=".py", max_entries=4, max_bytes=10**6).prune(tmp_path, keep=tmp_path / "k_0.py")
    assert sorted(p.name for p in tmp_path.glob("*.py")) == ["k_0.py", "k_7.py", "k_8.py", "k_9.py"]
    store.Store("kernels", suffix=".py", max_entries=100, max_bytes=250).prune(tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.py")) == ["k_8.py", "k_9.py"]


@pytest.mark.skipif(
    os.getuid() != 0,
    reason="needs root to become a second user (the folder test above covers foreign folders without it)",
)
def test_two_users_each_run_edited_kernels_without_blocking_each_other(tmp_path, fresh_kernel_folder):
    """This user (root) loads a --break copy first; then a forked process that has become uid 65534 loads the
    same break: it gets its own private folder under its own home, and the kernel loads.

    The second user reads the kernel from a copy in its own home, as from its own installation: this checkout
    may lie in a folder only its owner can enter (a home folder is often 0700), which another user cannot read."""
    mine = load_kernel(None, ["early-release"])
    assert Path(mine.__file__).parent == fresh_kernel_folder
    import shutil
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="second-user-home-"))  # pytest's own folders are root's alone (0700)
    request_cleanup = shutil.rmtree
    their_kernel = home / "kernel.py"
    shutil.copy(DEFAULT_KERNEL, their_kernel)
    for path in (home, their_kernel):
        os.chown(path, 65534, 65534)
    pid = os.fork()
    if pid == 0:  # the second user
        status = 4
        try:
            os.setgid(65534)
            os.setuid(65534)
            os.environ["HOME"] = str(home)
            os.environ.pop("XDG_CACHE_HOME", None)
            kernel_files._folder = None
            for name in [n for n in sys.modules if n.startswith("gluon_overlap_user_kernel_")]:
                del sys.modules[name]  # what the first user imported is not this user's
            theirs = load_kernel(their_kernel, ["early-release"])
            folder = Path(theirs.__file__).parent
            ok = (
                folder == home / ".cache" / "gluon-overlap" / "kernels"
                and os.stat(folder).st_uid == 65534
                and stat.S_IMODE(os.stat(folder).st_mode) == 0o700
                and hasattr(theirs, "kernel_args")
            )
            status = 0 if ok else 3
            if not ok:
                print("second user's folder:", folder, file=sys.stderr)
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    request_cleanup(home, ignore_errors=True)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert Path(mine.__file__).is_file() and os.stat(fresh_kernel_folder).st_uid == 0


# --- output files ----------------------------------------------------------------------------------------
def test_output_paths_are_checked_before_any_work(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    cases = {
        str(fifo): "is a FIFO",
        str(loop): "is a symbolic link loop",
        "/dev/zero": "is a device",
        str(tmp_path): "is a directory",
        "": "--trace: '' is an empty path: give a file name",
    }
    for path, words in cases.items():
        code, out, err = run_cli(["emulate", *SMALL, "--trace", path])
        assert code == 2 and words in one_error_line(err), (path, err)
    emit_cases = {
        str(fifo): "is not a directory",
        str(loop): "is a symbolic link loop",
        "/dev/zero": "is not a directory",
        str(tmp_path / "dangling"): "a place that does not exist",
    }
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere" / "deeper")
    for path, words in emit_cases.items():  # refused by the parser, before compiling
        code, out, err = run_cli(["compile", "--a-format", "mxfp8", "--b-format", "mxfp8", "--emit", path])
        assert code == 2 and words in one_error_line(err), (path, err)
    _output.check_writable_file(os.devnull, "--trace")  # accepted: written directly
    monkeypatch.setattr(_output.shutil, "disk_usage", lambda p: type("U", (), {"free": 1000})())
    code, out, err = run_cli(["emulate", *SMALL, "--trace", str(tmp_path / "t.jsonl")])
    assert code == 2 and "is full" in one_error_line(err)


def test_a_full_disk_leaves_no_partial_trace(tmp_path, monkeypatch):
    trace = tmp_path / "t.jsonl"
    real_dumps = json.dumps
    calls = []

    def fill_up(obj, *a, **kw):  # the trace's lines are written through json.dumps: the disk fills at line 20
        calls.append(1)
        if len(calls) > 20 and isinstance(obj, dict) and "kind" in obj:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_dumps(obj, *a, **kw)

    monkeypatch.setattr(json, "dumps", fill_up)
    code, out, err = run_cli(["emulate", *SMALL, "--trace", str(trace)])
    monkeypatch.setattr(json, "dumps", real_dumps)
    assert code == 2 and "No space left on device" in one_error_line(err), err
    assert list(tmp_path.iterdir()) == []


def test_atomic_files_and_emits_are_whole_or_absent(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt), store.AtomicFile(target) as f:
        f.temp.write_text("half")
        raise KeyboardInterrupt
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    store.write_atomically(target, "new")
    assert target.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]

    from gluon_overlap.commands.compile import write_artifacts_atomically

    def half_then_full(compiled, folder):
        (Path(folder) / "a.ptx").write_text("ptx")
        raise OSError(errno.ENOSPC, "No space left on device")

    emit_dir = tmp_path / "emit"
    with pytest.raises(OSError):
        write_artifacts_atomically(None, str(emit_dir), half_then_full)
    assert list(emit_dir.iterdir()) == []

    def whole(compiled, folder):
        for name in ("a.ptx", "a.json"):
            (Path(folder) / name).write_text(name)
        return [Path(folder) / "a.json", Path(folder) / "a.ptx"]

    written = write_artifacts_atomically(None, str(emit_dir), whole)
    assert [p.name for p in written] == ["a.json", "a.ptx"] and sorted(p.name for p in emit_dir.iterdir()) == [
        "a.json",
        "a.ptx",
    ]


# --- streams, tracebacks, the Triton cache ---------------------------------------------------------------
PLAN = ["plan", "--a-format", "mxfp8", "--b-format", "mxfp8"]


def _status_of(command: str, env: dict) -> subprocess.CompletedProcess:
    """Run ``command`` in bash; its exit status is written to a file (its own stdout may be closed)."""
    import tempfile

    with tempfile.NamedTemporaryFile("r") as status:
        res = subprocess.run(
            ["bash", "-c", f"{command}; echo rc=${{PIPESTATUS[0]}} > {status.name}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        res.stdout = status.read()
    return res


def test_closed_or_full_standard_streams_end_cleanly():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = f"{sys.executable} -m gluon_overlap {' '.join(PLAN)}"
    for redirect, code, words in (
        (">&-", 2, "standard output is closed"),
        (">/dev/full", 2, "No space left"),
        ("--json >/dev/full", 2, "No space left"),
        ("2>&-", 0, ""),
        (">&- 2>&-", 2, ""),
        ("| head -c 10 >/dev/null", 0, ""),
    ):
        res = _status_of(f"{cmd} {redirect}", env)
        assert f"rc={code}" in res.stdout, (redirect, res)
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) <= 1, (redirect, res.stderr)
        assert words in res.stderr, (redirect, res.stderr)


def test_traceback_variable_zero_means_off(monkeypatch):
    import gluon_overlap.commands.plan as plan_cmd

    def boom(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(plan_cmd, "run", boom)  # add_parser binds the module's run when main builds the parser
    for value, wanted in (("0", False), ("", False), ("false", False), ("off", False), ("1", True), ("yes", True)):
        monkeypatch.setenv(cli.TRACEBACK_ENV, value)
        if wanted:
            with pytest.raises(RuntimeError, match="a bug"):
                cli.main(PLAN)
        else:
            code, out, err = run_cli(PLAN)
            assert code == 2 and "internal error, RuntimeError: a bug" in one_error_line(err), value


def test_the_triton_cache_is_resolved_and_checked_with_the_variable_to_set(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", "")
    with pytest.raises(ValueError, match="TRITON_CACHE_DIR is set but empty.*set TRITON_CACHE_DIR"):
        _output.resolve_triton_cache()
    monkeypatch.delenv("TRITON_CACHE_DIR")
    monkeypatch.delenv("TRITON_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ValueError, match="a-file/.triton/cache.*from HOME.*set TRITON_CACHE_DIR"):
        _output.resolve_triton_cache()
    monkeypatch.setattr(os.path, "expanduser", lambda p: p)  # no home at all: "~/" stays unexpanded
    monkeypatch.delenv("HOME")
    with pytest.raises(ValueError, match="no home folder.*set TRITON_CACHE_DIR"):
        _output.resolve_triton_cache()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    assert _output.resolve_triton_cache() == tmp_path / "cache" and (tmp_path / "cache").is_dir()
    monkeypatch.setenv("TRITON_CACHE_DIR", "")
    code, out, err = run_cli(["compile", "--a-format", "mxfp8", "--b-format", "mxfp8"])
    assert code == 2 and "TRITON_CACHE_DIR is set but empty" in one_error_line(
        err.replace("compiling mxfp8 x mxfp8, overlap on for sm_100a ...\n", "")
    )


def test_without_a_cache_home_copies_go_to_a_per_run_folder_that_is_removed(monkeypatch):
    import tempfile

    monkeypatch.setattr(kernel_files, "_folder", None)
    monkeypatch.setattr(store, "cache_home", lambda: None)  # no HOME, no XDG_CACHE_HOME
    monkeypatch.delenv(kernel_files.FOLDER_ENV, raising=False)
    before = {p.name for p in Path(tempfile.gettempdir()).glob("gluon-overlap-kernels-*")}
    code, out, err = run_cli(["emulate", *SMALL, "--break", "early-release", "--json"])
    assert code == 0, err
    assert json.loads(out)["breaks"] == ["early-release"]
    after = {p.name for p in Path(tempfile.gettempdir()).glob("gluon-overlap-kernels-*")}
    assert after == before  # the guarded child removed the folder it made (atexit does not run there)


# --- bench: the checks in the order a user meets them, the CSV whole or absent ---------------------------
BENCH = ["bench", "--m", "256", "--n", "256", "--k", "256", "--formats", "mxfp8-mxfp8", "--no-cublas"]


@pytest.fixture
def gpu_check_calls(monkeypatch):
    """``require_blackwell`` replaced by one that records that it was reached and refuses, as on this machine."""
    from gluon_overlap import bench

    calls = []

    def refuse():
        calls.append(1)
        raise ValueError("cannot benchmark here: (the test's) no sm_100 GPU")

    monkeypatch.setattr(bench, "require_blackwell", refuse)
    return calls


def test_bench_checks_the_arguments_then_the_csv_path_then_the_triton_cache_then_the_gpu(
    tmp_path, monkeypatch, gpu_check_calls
):
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    cases = [
        ([*BENCH, "--formats", "mxfp4-mxfp8"], "format pair"),
        ([*BENCH, "--k", "200"], "k=200 must be a positive multiple of 128"),
        ([*BENCH, "--csv", str(fifo)], "is a FIFO"),
        ([*BENCH, "--csv", "/dev/zero"], "is a device"),
    ]
    for argv, words in cases:
        code, out, err = run_cli(argv)
        assert code == 2 and words in one_error_line(err), (argv, err)
    monkeypatch.setenv("TRITON_CACHE_DIR", "")
    code, out, err = run_cli([*BENCH, "--csv", str(tmp_path / "out.csv")])
    assert code == 2 and "TRITON_CACHE_DIR is set but empty" in one_error_line(err), err
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "a-file"))
    code, out, err = run_cli(BENCH)
    assert code == 2 and f"{str(tmp_path / 'a-file')!r} (from TRITON_CACHE_DIR) is a file" in one_error_line(err)
    assert gpu_check_calls == []  # none of the above reached the GPU
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = run_cli([*BENCH, "--csv", str(tmp_path / "out.csv")])
    assert code == 2 and "cannot benchmark here" in one_error_line(err) and gpu_check_calls == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "cache", "fifo.csv"]  # and no CSV


def test_bench_refuses_this_machine_in_one_line_when_it_has_no_blackwell_gpu(tmp_path):
    from gluon_overlap.bench import require_blackwell

    try:
        require_blackwell()
    except ValueError:
        pass
    else:
        pytest.skip("this machine has a Blackwell GPU: bench would run")
    code, out, err = run_cli([*BENCH, "--csv", str(tmp_path / "out.csv")])
    assert code == 2 and one_error_line(err).startswith("gluon-overlap bench: error: cannot benchmark here: ")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def fake_gpu_bench(monkeypatch):
    """The bench command with the GPU's parts replaced: two rows of made-up numbers."""
    import torch

    from gluon_overlap import bench

    rows = [
        bench.BenchRow("mxfp8", "mxfp8", 256, 256, 256, 100.5, 110.25, None, "Test GPU"),
        bench.BenchRow("mxfp8", "mxfp8", 256, 256, 512, 200.0, 190.0, 180.125, "Test GPU"),
    ]
    monkeypatch.setattr(bench, "require_blackwell", lambda: "Test GPU")
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (2**40, 2**40))
    monkeypatch.setattr(bench, "run_benchmark", lambda *a, **kw: list(rows))
    return rows


def test_the_bench_csv_is_written_whole_or_not_at_all(tmp_path, monkeypatch, fake_gpu_bench):
    from gluon_overlap import bench

    target = tmp_path / "deep" / "b.csv"
    code, out, err = run_cli([*BENCH, "--csv", str(target)])  # its folder must exist, as for every output
    assert code == 2 and "directory" in err and "does not exist" in err and not target.parent.exists()
    target.parent.mkdir()
    code, out, err = run_cli([*BENCH, "--csv", str(target)])
    assert code == 0, err
    assert bench.read_csv(target) == fake_gpu_bench  # read back: the rows themselves
    assert target.read_text().splitlines()[0] == ",".join(bench.CSV_COLUMNS)
    assert sorted(p.name for p in target.parent.iterdir()) == ["b.csv"]
    old = target.read_text()
    real_replace = _output.os.replace
    for fault, code_wanted, words in (
        (KeyboardInterrupt(), 130, "interrupted"),
        (OSError(errno.ENOSPC, "No space left on device"), 2, "No space left"),
    ):

        def fail(*args, fault=fault):
            raise fault

        monkeypatch.setattr(_output.os, "replace", fail)  # the rename that completes the file fails
        code, out, err = run_cli([*BENCH, "--csv", str(target)])
        monkeypatch.setattr(_output.os, "replace", real_replace)
        assert code == code_wanted and words in one_error_line(err.replace(f"wrote {target}\n", "")), err
        assert target.read_text() == old and sorted(p.name for p in target.parent.iterdir()) == ["b.csv"]


# --- the Python API: emulate() in this process (what a notebook calls) -----------------------------------
@pytest.fixture(scope="module")
def small_problem():
    from gluon_overlap.formats import random_problem

    return random_problem(256, 256, 256, "mxfp8", "mxfp8")


def test_emulate_stops_an_endless_loop_at_its_wall_clock_budget_and_says_so(tmp_path, small_problem):
    from gluon_overlap.emulate.runs import emulate

    path = edited(tmp_path, "spins", EPILOGUE_LINE, SPIN)
    start = time.perf_counter()
    r = emulate(small_problem, kernel=path, time_limit=1.0)
    assert time.perf_counter() - start < 1 + 30  # stopped (the compiler's check and the run, under load)
    assert r.stopped_by == "wall-clock" and r.time_limit == 1.0 and not r.ok and not r.step_limit_hit
    assert r.failure.startswith("WallClockExceeded: the run used its wall-clock budget of 1 s"), r.failure
    loop_lines = {line_of(path, "while spin >= 0:"), line_of(path, "spin = spin + 1")}
    assert any(f"spins.py:{n} " in r.failure for n in loop_lines), r.failure
    assert r.summary()["budget"] == {
        "steps": r.max_steps,
        "seconds": 1.0,
        "stopped_by": "wall-clock",
        "stopped_in": None,
        "stopped_in_seconds": None,
    }
    assert 0 < r.steps < r.max_steps
    import threading  # no signal involved: the budget stops a run in any thread (a notebook's helper thread)

    results = []
    worker = threading.Thread(target=lambda: results.append(emulate(small_problem, kernel=path, time_limit=1.0)))
    worker.start()
    worker.join(60)
    assert not worker.is_alive() and results[0].stopped_by == "wall-clock", results
    assert any(f"spins.py:{n} " in results[0].failure for n in loop_lines), results[0].failure


def test_emulate_reports_which_budget_stopped_a_run(small_problem):
    from gluon_overlap.emulate.runs import default_time_limit, emulate, step_budget

    clean = emulate(small_problem)
    assert clean.ok and clean.stopped_by is None and clean.max_steps == step_budget(clean.config)
    assert clean.time_limit == default_time_limit(clean.config) >= 60
    steps = emulate(small_problem, max_steps=40)
    assert steps.stopped_by == "steps" and steps.step_limit_hit and not steps.ok
    assert steps.summary()["budget"] == {
        "steps": 40,
        "seconds": clean.time_limit,
        "stopped_by": "steps",
        "stopped_in": None,
        "stopped_in_seconds": None,
    }
    assert clean.c.float().nan_to_num(7).equal(emulate(small_problem, time_limit=5.0).c.float().nan_to_num(7))


def test_emulate_turns_a_kernels_exits_and_loops_into_its_errors_and_this_process_lives(
    tmp_path, small_problem, monkeypatch
):
    """A notebook's process must survive a kernel that exits or loops at import, in the compiler's check (a
    constexpr helper) or in a partition: each is the kernel's error with its line, under its phase's budget."""
    from gluon_overlap.emulate import runs as api
    from gluon_overlap.emulate.runs import emulate

    monkeypatch.setattr(api, "IMPORT_SECONDS", 0.5)
    monkeypatch.setattr(api, "COMPILE_SECONDS", COMPILE_BUDGET)

    real_exit = os._exit
    helper = "@gluon.constexpr_function\ndef stop_here():\n    import os\n    os._exit(0)"
    path = with_helper(tmp_path, "exits_compiling", helper)
    r = emulate(small_problem, kernel=path)
    assert r.failure.startswith("KernelExit: the kernel called os._exit(0)"), r.failure
    assert f"exits_compiling.py:{line_of(path, 'os._exit(0)')} `os._exit(0)`" in r.failure and not r.ok
    loops = "@gluon.constexpr_function\ndef stop_here():\n    n = 0\n    while n >= 0:\n        n = n + 1"
    path = with_helper(tmp_path, "loops_compiling", loops)
    r = emulate(small_problem, kernel=path, time_limit=30.0)
    assert r.stopped_by == "wall-clock" and r.failure.startswith(
        f"WallClockExceeded: the compiler's check of the kernel used its wall-clock budget of {COMPILE_BUDGET:g} s"
    ), r.failure
    assert any(f"loops_compiling.py:{line_of(path, t)} " in r.failure for t in ("while n >= 0:", "n = n + 1"))
    assert r.stopped_in == "the compiler's check of the kernel" and r.stopped_in_seconds == COMPILE_BUDGET
    at_import = {
        "import sys; sys.exit(3)": "it exits at import (SystemExit(3))",
        "import os; os._exit(4)": "it exits at import (the kernel called os._exit(4))",
        "while True: pass": "WallClockExceeded: the import of the kernel file used its wall-clock budget of 0.5 s",
    }
    line = DEFAULT_KERNEL.read_text().splitlines().index(IMPORT_LINE.strip()) + 1
    for n, (statement, words) in enumerate(at_import.items()):
        path = edited(tmp_path, f"at_import_{n}", IMPORT_LINE, statement)
        with pytest.raises(ValueError, match="does not import") as caught:
            emulate(small_problem, kernel=path)
        assert words in str(caught.value) and f"at_import_{n}.py:{line}" in str(caught.value), caught.value
    assert os._exit is real_exit  # the guard is gone after each call


def _launch_in_process(path: str, seconds: float | None):
    """Like :func:`_launch_in_guard`, but in this process under the API's :class:`WallClock`."""
    import torch

    from gluon_overlap.emulate.config import NUM_CTAS, KernelConfig, kernel_arguments
    from gluon_overlap.emulate.wallclock import WallClock
    from gluon_overlap.formats import random_problem
    from gluon_overlap.interp.launch import launch
    from gluon_overlap.tmem import make_plan

    config = KernelConfig(make_plan("mxfp8", "mxfp8"), 256, 256, 256, kernel_path=path)
    module = config.module()
    c = torch.full((256, 256), float("nan"), dtype=torch.float16)
    args = kernel_arguments(config, random_problem(256, 256, 256, "mxfp8", "mxfp8"), c, module)
    with WallClock(seconds, lambda name: name == module.__file__) as clock:
        r = launch(
            module.mma_scaled_warp_specialized_kernel, (1,), args, num_ctas=NUM_CTAS, precheck=False, trace=False
        )
    return r.error, r.steps, bool(c.isnan().any()), clock.fired


@pytest.mark.parametrize(
    "exit_call, shown", [("os._exit(0)", "KernelExit: the kernel called os._exit(0)"), ("sys.exit(0)", "SystemExit: 0")]
)
def test_an_exit_inside_a_running_partition_is_the_kernels_error_in_this_process_too(tmp_path, exit_call, shown):
    statement = f"import os, sys; {exit_call}"
    path = edited(tmp_path, "exits_running", EPILOGUE_LINE, statement)
    error, steps, unstored, fired = _launch_in_process(path, None)
    assert error.startswith(shown) and f"exits_running.py:{line_of(path, statement)} `{statement}`" in error, error
    assert steps > 0 and unstored and not fired


def test_a_stop_swallowed_once_is_repeated_in_this_process_too(tmp_path):
    body = (
        "try:\n    while True:\n        pass\nexcept BaseException:\n    pass\n"
        "spin = gl.program_id(0)\nwhile spin >= 0:\n    spin = spin + 1"
    )
    path = edited(tmp_path, "swallows_once", EPILOGUE_LINE, body)
    start = time.perf_counter()
    error, steps, unstored, fired = _launch_in_process(path, 0.5)
    assert error.startswith("WallClockExceeded: the run used its wall-clock budget of 0.5 s"), error
    assert any(f"swallows_once.py:{line_of(path, t)} " in error for t in ("while spin >= 0:", "spin = spin + 1"))
    assert fired and time.perf_counter() - start < 0.5 + 30
