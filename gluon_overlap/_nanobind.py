"""Hide the spurious "nanobind: leaked ..." report Triton 3.9's bindings print at interpreter exit.

Once a Gluon kernel module has been imported, Triton's nanobind extension reports "leaked"
instances, types and functions on stderr while the interpreter shuts down -- after every useful
output is complete.  The report is noise (and, at the end of a pytest run, it buries the summary
line), so commands and the test session silence stderr in an ``atexit`` handler, which runs before
that shutdown.
"""

from __future__ import annotations

import atexit
import os
import sys

_registered = False


def quiet_leak_report_at_exit() -> None:
    """Register (once) an exit handler that flushes stdout/stderr, then points fd 2 at /dev/null."""
    global _registered
    if _registered:
        return

    def silence() -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)

    atexit.register(silence)
    _registered = True
