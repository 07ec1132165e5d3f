"""The interrupt state of the ``gluon-overlap`` process: a Ctrl-C remembered until the command reports it.

:mod:`gluon_overlap.console` installs :func:`install` before anything else is imported; :mod:`gluon_overlap.cli`
reports the interrupt and calls :func:`acknowledge`.  Why an audit hook: see :mod:`gluon_overlap.console`.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_INTERRUPTED = 130
_pending = False  # a Ctrl-C arrived and the command has not reported it yet
_installed = False
_deferring = 0  # inside deferred(): a Ctrl-C is remembered, and raised when the block ends


def _on_sigint(signum: int, frame: object) -> None:
    global _pending
    _pending = True
    if not _deferring:
        raise KeyboardInterrupt


def _on_audit(event: str, args: tuple) -> None:
    if event == "import" and _pending and not _deferring and not isinstance(sys.exc_info()[1], KeyboardInterrupt):
        raise KeyboardInterrupt  # the first one was swallowed: stop at this import instead


@contextmanager
def deferred() -> Iterator[None]:
    """A Ctrl-C inside the block is remembered and raised as ``KeyboardInterrupt`` when the block ends.

    For the import of torch (and of Triton's extension) and for a Triton compile: their C++ code calls back into
    Python, and a ``KeyboardInterrupt`` raised in such a callback crosses C++ frames that do not expect it -- the
    process aborts (exit -6, "terminate called after throwing an instance of 'nanobind::python_error'", seen once in
    about 200 interrupted compiles) instead of reporting the interrupt.  The import takes about two seconds and a
    cold compile of one variant a few, so the report comes at most that late."""
    held = Held()
    try:
        yield
    finally:
        due = held.close()
    if due:
        raise KeyboardInterrupt


class Held:
    """A span, begun when made, in which a Ctrl-C is only remembered (as in :func:`deferred`), for a span that does
    not fit a ``with`` block: it ends at :meth:`end` (a remembered Ctrl-C raised there) or :meth:`close` (not raised),
    whichever comes first.  For ``os.fork``: a Ctrl-C during it lands in an at-fork callback, where Python prints it
    as an ignored exception and goes on."""

    def __init__(self) -> None:
        global _deferring
        _deferring += 1
        self._open = True

    def close(self) -> bool:
        """End the span (once); whether a remembered Ctrl-C is now due."""
        global _deferring
        if self._open:
            self._open = False
            _deferring -= 1
        return not _deferring and _pending

    def end(self) -> None:
        """End the span (once) and raise a remembered Ctrl-C."""
        if self.close():
            raise KeyboardInterrupt


def install() -> None:
    """Install the SIGINT handler and the audit hook (once per process; an audit hook cannot be removed)."""
    global _installed
    signal.signal(signal.SIGINT, _on_sigint)
    if not _installed:
        sys.addaudithook(_on_audit)
        _installed = True


def acknowledge() -> None:
    """The interrupt has been reported: no more re-raising at imports."""
    global _pending
    _pending = False


def interrupted() -> bool:
    """Whether a Ctrl-C arrived that has not been reported yet."""
    return _pending


def command_name() -> str:
    """``gluon-overlap COMMAND`` from this process's arguments (for the one-line report)."""
    names = [a for a in sys.argv[1:] if not a.startswith("-")]
    return f"gluon-overlap {names[0]}" if names else "gluon-overlap"
