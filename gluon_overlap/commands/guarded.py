"""Run a command's work in a guarded child process: a kernel that loops, exits or ignores Ctrl-C
cannot hang, end or lie about the command.

:func:`run_guarded` forks one child (cheap: copy-on-write; one child for a whole ``--seeds`` sweep)
that runs ``work(channel)`` and sends its return value back through a pipe.  The child

* ignores Ctrl-C and SIGTERM (the parent handles them: the child is killed, the parent raises
  :class:`KeyboardInterrupt` -- ``cli.Terminated`` for SIGTERM --, the command exits 130 or 143 with one
  line);
* turns ``os._exit`` / ``exit`` / ``sys.exit`` of the code it runs into :class:`KernelExit`, an
  exception that the executor reports as the kernel's error with its line;
* announces each phase with its wall-clock budget (:meth:`Channel.phase`): an alarm in the child
  raises :class:`WallClockExceeded` inside the running code when the budget is spent (so the report
  names the kernel line it was at), and the parent kills the child if it still has not answered
  :data:`GRACE_SECONDS` later;
* writes the kernel's own prints to stderr, so stdout carries only the command's table or JSON;
* leads a process group of its own, which the parent kills when the work ends: a process the kernel's code
  forks does not outlive the command.

When the child ends without an answer (killed, or a way out that bypasses Python), the parent raises
:class:`ChildLost` with the phase it was in and what ended it.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from gluon_overlap.emulate.wallclock import KernelExit, WallClockExceeded  # noqa: F401  (one pair of classes)
from gluon_overlap.interrupts import Held

GRACE_SECONDS = 5.0  #: how long past its budget a phase may go before the parent kills the child
_HEADER = struct.Struct("!Q")


class ChildLost(Exception):  # noqa: N818
    """The child ended (or was killed) without sending its result."""

    def __init__(self, phase: str, how: str, progress: list[Any], stopped_by_clock: bool, seconds: float | None = None):
        super().__init__(f"{how} during {phase}")
        self.phase, self.how, self.progress, self.stopped_by_clock = phase, how, progress, stopped_by_clock
        self.seconds = seconds  #: the wall-clock budget of that phase (None: none)


class ChildError(Exception):
    """An unexpected exception in the child (its type and message, the traceback text in ``detail``)."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


def fork_available() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


class Channel:
    """The child's side: announce phases (with their wall-clock budget) and send progress records."""

    def __init__(self, fd: int):
        self._fd = fd
        self.clock_fired = False
        self.phase_name = "the start"  #: the phase announced last
        self.seconds: float | None = None  #: its wall-clock budget
        self.watched_files: set[str] = set()  #: source files of the code under guard (the kernel's)

    def send(self, kind: str, payload: Any) -> None:
        data = pickle.dumps((kind, payload), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def phase(self, name: str, seconds: float | None, arm: bool = True) -> None:
        """Start phase ``name`` with ``seconds`` of wall-clock budget (None: no limit).  ``arm=False``: the
        work keeps its budget itself (``emulate(time_limit=...)``); the parent still kills the child
        :data:`GRACE_SECONDS` past it."""
        self.clock_fired = False
        self.phase_name, self.seconds = name, seconds
        signal.setitimer(signal.ITIMER_REAL, 0)
        self.send("phase", (name, seconds))
        if seconds is not None and arm:
            signal.setitimer(signal.ITIMER_REAL, seconds, 0.5)  # then every 0.5 s, should the code swallow it

    def end_phase(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    def progress(self, record: Any) -> None:
        self.send("progress", record)

    def runs_watched_code(self, frame: Any) -> bool:
        """Whether ``frame`` or one of its callers is code of :attr:`watched_files`."""
        while frame is not None:
            if frame.f_code.co_filename in self.watched_files:
                return True
            frame = frame.f_back
        return False


def _child(work: Callable[[Channel], Any], write_fd: int) -> None:
    """The child's whole life; never returns."""
    real_exit = os._exit
    status = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills this process
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # and SIGTERM (its handler, inherited, is the parent's)
        _own_process_group()
        _die_with_parent()
        try:
            os.dup2(2, 1)  # the kernel's prints go to stderr; the parent prints the command's output
        except OSError:  # no stderr (closed): the prints go nowhere
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
        sys.stdout = sys.stderr
        if "torch" in sys.modules:  # OpenMP's thread pool does not survive fork: one thread avoids its hang
            sys.modules["torch"].set_num_threads(1)
        channel = Channel(write_fd)

        def on_alarm(signum: int, frame: Any) -> None:
            # the first alarm stops whatever runs; the repeats (every 0.5 s) only the guarded code, should it
            # have swallowed the first (its frames anywhere on the stack: a kernel's loop spends its time in
            # the executor's runtime values, called from the kernel's line)
            if channel.clock_fired and not channel.runs_watched_code(frame):
                return
            channel.clock_fired = True
            raise WallClockExceeded(f"{channel.phase_name} used its wall-clock budget of {channel.seconds:g} s")

        def kernel_exit(code: int = 0) -> None:
            raise KernelExit(code)

        signal.signal(signal.SIGALRM, on_alarm)
        os._exit = kernel_exit  # type: ignore[assignment]
        try:
            result = work(channel)
            channel.end_phase()
            channel.send("result", result)
        except OSError as exc:
            channel.end_phase()
            channel.send("raise", ("OSError", (exc.errno, exc.strerror or str(exc)), exc.filename))
        except (ValueError, MemoryError) as exc:
            channel.end_phase()
            channel.send("raise", (type(exc).__name__, str(exc), None))
        except BaseException as exc:  # noqa: BLE001  (a bug, or the code run found a way out)
            channel.end_phase()
            channel.send("bug", (f"{type(exc).__name__}: {exc}", traceback.format_exc()))
    except BaseException:  # noqa: BLE001  (the pipe is gone: the parent left)
        status = 1
    finally:
        files = sys.modules.get("gluon_overlap.emulate.kernel_files")
        if files is not None:  # atexit does not run after os._exit: remove this process's own temporary folder
            files.remove_own_temporary_folders()
        real_exit(status)


def _own_process_group() -> None:
    """Make the child the leader of a process group of its own: whatever the code it runs forks joins it, and
    the parent ends the whole group when the work is done (:func:`_end_group`)."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass


def _set_group(pid: int) -> None:
    """The parent's half of :func:`_own_process_group` (whichever runs first makes the group)."""
    try:
        os.setpgid(pid, pid)
    except OSError:  # the child did it already, or has ended
        pass


def _end_group(pid: int) -> None:
    """Kill what is left of the child's process group (processes the kernel's code forked); the child itself
    has been reaped, and a group id is not reused while the group has members."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _die_with_parent() -> None:
    """Linux: the child is killed when the parent dies (no orphan running a looping kernel)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    """``n`` bytes from ``fd``; None at end of file; TimeoutError past ``deadline``."""
    chunks, need = [], n
    while need:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise TimeoutError
        chunk = os.read(fd, min(need, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        need -= len(chunk)
    return b"".join(chunks)


def _kill(pid: int) -> int:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return _reap(pid)


def _reap(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue


def _how_it_ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"the process was killed by signal {name}"
    return f"the process ended with exit status {os.WEXITSTATUS(status)}"


def run_guarded(work: Callable[[Channel], Any]) -> Any:
    """``work(channel)`` run in a child process; its return value (picklable).

    Re-raises the child's ``ValueError`` / ``OSError`` / ``MemoryError`` as the same type (one line for
    the command line), an unexpected exception as :class:`ChildError`; :class:`ChildLost` when the child
    ended without an answer or overran a phase's budget; :class:`KeyboardInterrupt` on Ctrl-C (the
    child killed first)."""
    if not fork_available():  # no fork (Windows): the work runs here, unguarded
        return work(_InlineChannel())
    sys.stdout.flush()
    sys.stderr.flush()
    read_fd, write_fd = os.pipe()
    held = Held()  # a Ctrl-C during the fork is raised below, once the child is in its group and is killed first
    try:
        pid = os.fork()
    except BaseException:
        held.close()
        raise
    if pid == 0:  # pragma: no cover  (the child; coverage does not follow it)
        os.close(read_fd)
        _child(work, write_fd)
    os.close(write_fd)
    _set_group(pid)
    progress: list[Any] = []
    phase, seconds, deadline, fired = "the start", None, None, False
    reaped = False
    try:
        held.end()
        while True:
            try:
                header = _read_exact(read_fd, _HEADER.size, deadline)
                body = None if header is None else _read_exact(read_fd, _HEADER.unpack(header)[0], deadline)
            except TimeoutError:
                fired, reaped = True, True
                _kill(pid)
                raise ChildLost(
                    phase, "it did not stop at its wall-clock budget and was killed", progress, True, seconds
                ) from None
            if body is None:
                status, reaped = _reap(pid), True
                raise ChildLost(phase, _how_it_ended(status), progress, fired, seconds)
            kind, payload = pickle.loads(body)
            if kind in ("result", "raise", "bug"):
                _reap(pid)
                reaped = True
            if kind == "phase":
                phase, seconds = payload
                deadline = None if seconds is None else time.monotonic() + seconds + GRACE_SECONDS
            elif kind == "progress":
                progress.append(payload)
            elif kind == "result":
                return payload
            elif kind == "raise":
                name, message, filename = payload
                if name == "OSError":
                    raise OSError(*message, filename) if filename is not None else OSError(*message)
                raise (MemoryError if name == "MemoryError" else ValueError)(message)
            elif kind == "bug":
                raise ChildError(*payload)
    except BaseException:
        if not reaped:
            _kill(pid)  # Ctrl-C (or anything else) in the parent: the child goes first
        raise
    finally:
        held.close()
        os.close(read_fd)
        _end_group(pid)  # no process the kernel forked outlives the command


class _InlineChannel(Channel):
    """The channel when there is no child: phases and progress are only recorded."""

    def __init__(self) -> None:
        self.clock_fired = False
        self.phase_name, self.seconds = "the start", None
        self.watched_files = set()

    def send(self, kind: str, payload: Any) -> None:
        pass

    def phase(self, name: str, seconds: float | None, arm: bool = True) -> None:
        self.phase_name, self.seconds = name, seconds

    def end_phase(self) -> None:
        pass
