"""Hide the spurious "nanobind: leaked ..." report Triton 3.9's bindings print at interpreter exit.

Once a Gluon kernel module has been imported, Triton's nanobind extension reports "leaked"
instances, types and functions on stderr while the interpreter shuts down -- after every useful
output is complete.  The report is noise (and, at the end of a pytest run, it buries the summary
line), so commands and the test session silence stderr in an ``atexit`` handler, which runs before
that shutdown.

The handler must not fail before it silences anything: when stdout is a pipe whose reader has
gone (``gluon-overlap compile --json | head -1``) flushing it raises ``BrokenPipeError``, and when
stderr has been closed flushing that raises ``ValueError``; either used to skip the redirection and
let the report through.  Now each flush is tried on its own, a dead stdout is pointed at /dev/null
too (so the interpreter's own last flush stays quiet), and fd 2 is redirected in any case.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import TextIO

_registered = False


def _flush(stream: TextIO | None) -> bool:
    """Flush ``stream``; False if its reader has gone or it is closed."""
    try:
        if stream is not None:
            stream.flush()
        return True
    except (OSError, ValueError):
        return False


def silence_stderr_now() -> None:
    """Flush what can be flushed, then point fd 2 (and a broken stdout) at /dev/null."""
    stdout_ok = _flush(sys.stdout)
    _flush(sys.stderr)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        if not stdout_ok:
            try:
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError, AttributeError):
                os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    finally:
        os.close(devnull)


def quiet_leak_report_at_exit() -> None:
    """Register (once) an exit handler that flushes stdout/stderr, then points fd 2 at /dev/null."""
    global _registered
    if _registered:
        return
    atexit.register(silence_stderr_now)
    _registered = True
