"""A wall-clock budget for code run in this process (an edited kernel on the executor), and a guard
against its ``os._exit``.

:class:`WallClock` is what :func:`gluon_overlap.emulate.runs.emulate` wraps each run in -- the Python
API that notebooks call, where a kernel must neither hang nor end the notebook's process:

* a watchdog thread (one for the process) waits for the budget; when it is spent it raises :class:`WallClockExceeded` in
  the thread that runs the work (``PyThreadState_SetAsyncExc``: no signal, so it works in any thread
  and leaves ``SIGALRM`` and its timer to their owner).  The exception lands in the running code, so a
  partition's report names the kernel line it was at.  Should the kernel swallow it, the stop is
  repeated every :data:`REPEAT_SECONDS`, but only while kernel code is on the running stack;
* while the budget is active, ``os._exit`` called from kernel code raises :class:`KernelExit` (a
  ``SystemExit``) instead of ending the process; called from anything else it is the real one.

What it cannot stop: a single call into C that does not return (``time.sleep`` of an hour, a
blocking read) -- the exception is raised when the call returns --, and code that catches every
exception in an endless loop (each repeat is caught again).  The command line runs its work in
a child process (:mod:`gluon_overlap.commands.guarded`) that it kills in that case.

Cost: a lock and a set update per budget (microseconds); the thread starts once per process.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

REPEAT_SECONDS = 0.5  #: after a swallowed stop, how often it is repeated while kernel code runs


class WallClockExceeded(BaseException):  # noqa: N818  (a stop signal, like KeyboardInterrupt)
    """Raised in the running code when its wall-clock budget is spent."""


class KernelExit(SystemExit):  # noqa: N818
    """``os._exit(code)`` called by kernel code under a guard (it would end the process silently)."""

    def __str__(self) -> str:
        return f"the kernel called os._exit({self.code!r})"


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in thread ``thread_id`` at its next bytecode (None: drop one not yet raised)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


class _Drained(BaseException):  # noqa: N818
    """Raised and caught at once by :func:`_drop_pending_stop` (never escapes)."""


def _drop_pending_stop(thread_id: int) -> None:
    """Drop a stop raised in this thread but not yet delivered: replace it by one caught right here.
    (``PyThreadState_SetAsyncExc(id, NULL)`` would drop it too, but CPython 3.11 then leaves the thread's eval
    loop signalled with nothing to raise, and the next ``sys.settrace`` hangs the thread.)"""
    try:
        _raise_in(thread_id, _Drained)
        for _ in range(1000):  # delivered at the loop's first check of pending work
            pass
    except _Drained:
        return


def runs_code_of(frame: Any, is_watched: Callable[[str], bool]) -> bool:
    """Whether ``frame`` or one of its callers runs code of a file ``is_watched`` accepts."""
    while frame is not None:
        if is_watched(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


class _Watchdog:
    """One thread for every budget of the process: it sleeps until the earliest deadline, raises the stop
    in the thread whose budget is spent, and repeats it every :data:`REPEAT_SECONDS` while that thread runs
    kernel code.  A budget that starts or ends wakes it only when it must (a deadline earlier than the one
    it sleeps towards), so a call costs a lock, not a thread switch."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._clocks: set[WallClock] = set()
        self._wake_at = math.inf
        self._thread: threading.Thread | None = None

    def add(self, clock: WallClock) -> None:
        with self._cond:
            self._clocks.add(clock)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="gluon-overlap wall clock", daemon=True)
                self._thread.start()
            elif clock.deadline < self._wake_at:
                self._cond.notify()

    def remove(self, clock: WallClock) -> None:
        with self._cond:
            self._clocks.discard(clock)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for clock in [c for c in self._clocks if c.deadline <= now]:
                    clock._fire(now)  # noqa: SLF001  (under the lock: never after the budget ended)
                self._wake_at = min((c.deadline for c in self._clocks), default=math.inf)
                self._cond.wait(None if self._wake_at == math.inf else self._wake_at - now)


_watchdog = _Watchdog()


def _new_watchdog_in_child() -> None:  # a forked child has no watchdog thread (and maybe a held lock)
    global _watchdog
    _watchdog = _Watchdog()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_watchdog_in_child)


class WallClock:
    """``with WallClock(seconds, is_watched) as clock: work()`` -- ``work`` is stopped by
    :class:`WallClockExceeded` after ``seconds`` (None: no budget; only the ``os._exit`` guard).
    ``is_watched(filename)`` says which source files are the kernel's; ``what`` names the work in the
    stop's message.  ``clock.fired``: the stop was raised at least once."""

    def __init__(self, seconds: float | None, is_watched: Callable[[str], bool], what: str = "the run"):
        self.seconds, self.is_watched = seconds, is_watched
        message = f"{what} used its wall-clock budget of {seconds:g} s" if seconds is not None else what
        #: the stop's class (only a class can be raised in another thread): its text says the budget
        self.stop_class = type(
            "WallClockExceeded", (WallClockExceeded,), {"__str__": lambda _: message, "__module__": __name__}
        )
        self.fired = False
        self.deadline = math.inf
        self._thread_id = threading.get_ident()
        self._real_exit: Callable[[int], Any] | None = None

    def _fire(self, now: float) -> None:
        """The watchdog's side (its lock held): the first stop lands wherever the work is; a repeat only
        when the work runs kernel code (it swallowed the first)."""
        if not self.fired or runs_code_of(sys._current_frames().get(self._thread_id), self.is_watched):  # noqa: SLF001
            _raise_in(self._thread_id, self.stop_class)
            self.fired = True
        self.deadline = now + REPEAT_SECONDS

    def _guarded_exit(self, code: int = 0) -> None:
        if runs_code_of(sys._getframe(1), self.is_watched):  # noqa: SLF001
            raise KernelExit(code)
        assert self._real_exit is not None
        self._real_exit(code)

    def __enter__(self) -> WallClock:
        self._real_exit = os._exit
        os._exit = self._guarded_exit  # type: ignore[assignment]
        if self.seconds is not None:
            self.deadline = time.monotonic() + self.seconds
            _watchdog.add(self)
        return self

    def stop(self) -> None:
        """End the budget: no stop is raised after this returns (one raised but not yet delivered is
        dropped; one delivered while this runs is absorbed; ``fired`` stays True)."""
        for _ in range(8):
            try:
                if self.seconds is not None:
                    _watchdog.remove(self)
                    if threading.get_ident() == self._thread_id:
                        _drop_pending_stop(self._thread_id)
                    else:
                        _raise_in(self._thread_id, None)
                break
            except WallClockExceeded:
                continue
        if os._exit == self._guarded_exit and self._real_exit is not None:
            os._exit = self._real_exit  # type: ignore[assignment]

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        self.stop()
