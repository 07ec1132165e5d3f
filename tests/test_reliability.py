"""A learner's broken kernel, a bad output path, a full disk or Ctrl-C: each ends with a clear line and the
documented exit status (0 clean, 1 problem found, 2 error, 130 interrupted), no hang, no partial file.

Edited kernels run in the guarded child process (``gluon_overlap.commands.guarded``); their copies live in
a private folder (``gluon_overlap.twin.kernel_files``).  Most cases run ``cli.main`` in this process (the
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

from gluon_overlap import cli
from gluon_overlap.commands import _output, guarded
from gluon_overlap.commands.numbers import parse_integer, parse_number
from gluon_overlap.twin import kernel_files
from gluon_overlap.twin.kernels import DEFAULT_KERNEL, load_kernel

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--a-format", "mxfp8", "--b-format", "mxfp8", "--m", "256", "--n", "256", "--k", "256"]
#: the first statement of each epilogue tile: an edit placed before it runs inside a partition
EPILOGUE_LINE = "        mbarrier.wait(p.acc_ready_bars.index(acc_state.index), acc_state.phase)\n"
IMPORT_LINE = "import torch\n"


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
    return subprocess.run([sys.executable, "-m", "gluon_overlap", *argv], capture_output=True, text=True,
                          env=env, timeout=kw.pop("timeout", 180), **kw)


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
    cases = {str(tmp_path): "is a directory", str(fifo): "is a FIFO", str(binary): "is a binary file",
             str(latin): "is not UTF-8 text", str(loop): "cannot be reached",
             str(tmp_path / "none.py"): "does not exist"}
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


@pytest.mark.parametrize("exit_call, shown", [("sys.exit(3)", "SystemExit(3)"), ("exit()", "SystemExit(None)"),
                                               ("os._exit(0)", "the kernel called os._exit(0)")])
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


@pytest.mark.parametrize("exit_call, shown", [("os._exit(0)", "KernelExit: the kernel called os._exit(0)"),
                                               ("sys.exit(0)", "SystemExit: 0")])
def test_a_kernel_that_exits_in_a_partition_is_the_kernels_error(tmp_path, exit_call, shown):
    path = edited(tmp_path, "exits_late", EPILOGUE_LINE, f"import os, sys; {exit_call}")
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path, "--json"])
    assert code == 1, err
    d = json.loads(out)
    assert d["failure"].startswith(shown) and "exits_late.py:" in d["failure"] and exit_call in d["failure"], d
    assert not d["matches_reference"]


# --- budgets ---------------------------------------------------------------------------------------------
def test_an_endless_loop_in_a_partition_is_stopped_by_the_wall_clock_budget(tmp_path):
    path = edited(tmp_path, "spins", EPILOGUE_LINE, "while True:\n    pass")
    start = time.perf_counter()
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path, "--time-limit", "1", "--json"])
    took = time.perf_counter() - start
    assert code == 1, err
    d = json.loads(out)
    assert d["budget"]["stopped_by"] == "wall-clock" and d["budget"]["seconds"] == 1.0 and d["budget"]["steps"] > 0
    assert "wall-clock budget of 1 s" in d["failure"] and "spins.py:" in d["failure"] and "while True" in d["failure"]
    assert took < 1 + guarded.GRACE_SECONDS + 30, took
    from gluon_overlap.commands.emulate import _render

    table = _render(d)
    assert "the wall-clock budget (1 s)" in table and "BROKEN" in table, table


def test_a_loop_that_swallows_the_stop_is_killed_and_reported(tmp_path, monkeypatch):
    body = "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    path = edited(tmp_path, "swallows", EPILOGUE_LINE, body)
    monkeypatch.setattr(guarded, "GRACE_SECONDS", 1.0)
    code, out, err = run_cli(["emulate", *SMALL, "--kernel", path, "--time-limit", "1", "--json"])
    assert code == 1, err
    d = json.loads(out)
    assert d["budget"]["stopped_by"] == "wall-clock" and not d["matches_reference"]
    assert "wall-clock budget" in d["failure"], d["failure"]


def test_a_clean_run_reports_both_budgets_and_that_nothing_stopped_it():
    code, out, err = run_cli(["emulate", *SMALL, "--break", "early-release", "--json", "--time-limit", "90"])
    assert code in (0, 1), err
    d = json.loads(out)
    assert d["budget"] == {"steps": d["budget"]["steps"], "seconds": 90.0, "stopped_by": None}
    assert d["step_limit_hit"] is False and 0 < d["steps"] < d["budget"]["steps"]


def test_a_run_past_its_step_budget_says_so_in_its_summary():
    from gluon_overlap.formats import random_problem
    from gluon_overlap.twin.emulate import emulate

    r = emulate(random_problem(256, 256, 256, "mxfp8", "mxfp8"), max_steps=40)
    assert r.step_limit_hit and not r.ok and r.summary()["step_limit_hit"] is True


# --- Ctrl-C ----------------------------------------------------------------------------------------------
def interrupt_after(argv: list[str], seconds: float) -> tuple[int, str, str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "gluon_overlap", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    time.sleep(seconds)
    os.killpg(p.pid, signal.SIGINT)  # what a terminal sends the whole foreground group on Ctrl-C
    start = time.perf_counter()
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err, time.perf_counter() - start


def test_ctrl_c_during_a_seeds_sweep_exits_130_with_one_line_and_no_trace(tmp_path):
    path = edited(tmp_path, "slow", EPILOGUE_LINE, "while True:\n    pass")
    trace = tmp_path / "trace.jsonl"
    code, out, err, after = interrupt_after(["emulate", *SMALL, "--kernel", path, "--seeds", "4", "--trace",
                                             str(trace)], 12.0)
    assert code == 130, (code, out, err)
    assert one_error_line(err) == "gluon-overlap emulate: error: interrupted" and out == ""
    assert after < 10, after
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slow.py"]  # no trace, no partial trace


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


@pytest.mark.parametrize("extra, words", [(["--timed", "--seed", "3"], "--timed runs one deterministic"),
                                          (["--seeds", "3", "--seed", "1"], "--seeds 3 runs seeds 0..2"),
                                          (["--seeds", "3", "--timed"], "--seeds sweeps interleavings")])
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
    code, out, err = run_cli(["emulate", "--a-format", "mxfp8", "--b-format", "mxfp8", "--m", "256", "--n", "512",
                              "--k", "256", "--break", "skip-acc-empty-wait", "--clusters", "1", "--seeds", "3",
                              "--trace", str(trace), "--json"])
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
    monkeypatch.setattr(kernel_files, "_folder", None)
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


def test_no_fixed_shared_folder_remains_in_the_twin():
    for path in (ROOT / "gluon_overlap" / "twin").glob("*.py"):
        text = path.read_text()
        assert "gettempdir()" not in text and "/tmp/gluon-overlap" not in text, path


def test_the_folder_is_bounded(tmp_path):
    for i in range(10):
        (tmp_path / f"k_{i}.py").write_text("x" * 100)
        os.utime(tmp_path / f"k_{i}.py", (1000 + i, 1000 + i))
    kernel_files.prune(tmp_path, keep=tmp_path / "k_0.py", max_copies=4, max_bytes=10**6)
    assert sorted(p.name for p in tmp_path.glob("*.py")) == ["k_0.py", "k_7.py", "k_8.py", "k_9.py"]
    kernel_files.prune(tmp_path, max_copies=100, max_bytes=250)
    assert sorted(p.name for p in tmp_path.glob("*.py")) == ["k_8.py", "k_9.py"]


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to become a second user (the folder test above covers "
                    "foreign folders without it)")
def test_two_users_each_run_edited_kernels_without_blocking_each_other(tmp_path, fresh_kernel_folder):
    """This user (root) loads a --break copy first; then a forked process that has become uid 65534 loads the
    same break: it gets its own private folder under its own home, and the kernel loads."""
    mine = load_kernel(None, ["early-release"])
    assert Path(mine.__file__).parent == fresh_kernel_folder
    import shutil
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="second-user-home-"))  # pytest's own folders are root's alone (0700)
    request_cleanup = shutil.rmtree
    os.chown(home, 65534, 65534)
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
            theirs = load_kernel(None, ["early-release"])
            folder = Path(theirs.__file__).parent
            ok = (folder == home / ".cache" / "gluon-overlap" / "kernels" and os.stat(folder).st_uid == 65534
                  and stat.S_IMODE(os.stat(folder).st_mode) == 0o700 and hasattr(theirs, "kernel_args"))
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
    cases = {str(fifo): "is a FIFO", str(loop): "is a symbolic link loop", "/dev/zero": "is a device",
             str(tmp_path): "is a directory"}
    for path, words in cases.items():
        code, out, err = run_cli(["emulate", *SMALL, "--trace", path])
        assert code == 2 and words in one_error_line(err), (path, err)
    emit_cases = {str(fifo): "is not a directory", str(loop): "is a symbolic link loop",
                  "/dev/zero": "is not a directory", str(tmp_path / "dangling"): "a place that does not exist"}
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
    with pytest.raises(KeyboardInterrupt), _output.AtomicFile(target) as f:
        f.temp.write_text("half")
        raise KeyboardInterrupt
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    _output.write_atomically(target, "new")
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
    assert [p.name for p in written] == ["a.json", "a.ptx"] and sorted(p.name for p in emit_dir.iterdir()) == \
        ["a.json", "a.ptx"]


# --- streams, tracebacks, the Triton cache ---------------------------------------------------------------
PLAN = ["plan", "--a-format", "mxfp8", "--b-format", "mxfp8"]


def _status_of(command: str, env: dict) -> subprocess.CompletedProcess:
    """Run ``command`` in bash; its exit status is written to a file (its own stdout may be closed)."""
    import tempfile

    with tempfile.NamedTemporaryFile("r") as status:
        res = subprocess.run(["bash", "-c", f"{command}; echo rc=${{PIPESTATUS[0]}} > {status.name}"],
                             capture_output=True, text=True, env=env, timeout=60)
        res.stdout = status.read()
    return res


def test_closed_or_full_standard_streams_end_cleanly():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = f"{sys.executable} -m gluon_overlap {' '.join(PLAN)}"
    for redirect, code, words in ((">&-", 2, "standard output is closed"), (">/dev/full", 2, "No space left"),
                                  ("--json >/dev/full", 2, "No space left"), ("2>&-", 0, ""), (">&- 2>&-", 2, ""),
                                  ("| head -c 10 >/dev/null", 0, "")):
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
    assert code == 2 and "TRITON_CACHE_DIR is set but empty" in one_error_line(err.replace(
        "compiling mxfp8 x mxfp8, overlap on for sm_100a ...\n", ""))


def test_without_a_cache_home_copies_go_to_a_per_run_folder_that_is_removed(monkeypatch):
    import tempfile

    monkeypatch.setattr(kernel_files, "_folder", None)
    monkeypatch.setattr(kernel_files, "_cache_home", lambda: None)  # no HOME, no XDG_CACHE_HOME
    monkeypatch.delenv(kernel_files.FOLDER_ENV, raising=False)
    before = {p.name for p in Path(tempfile.gettempdir()).glob("gluon-overlap-kernels-*")}
    code, out, err = run_cli(["emulate", *SMALL, "--break", "early-release", "--json"])
    assert code == 0, err
    assert json.loads(out)["breaks"] == ["early-release"]
    after = {p.name for p in Path(tempfile.gettempdir()).glob("gluon-overlap-kernels-*")}
    assert after == before  # the guarded child removed the folder it made (atexit does not run there)
