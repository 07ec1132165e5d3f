"""The interrupt state of the ``gluon-overlap`` process: a Ctrl-C remembered until the command reports it.

:mod:`gluon_overlap.console` installs :func:`install` before anything else is imported; :mod:`gluon_overlap.cli`
reports the interrupt and calls :func:`acknowledge`.  Why an audit hook: see :mod:`gluon_overlap.console`.
"""

from __future__ import annotations

import signal
import sys

EXIT_INTERRUPTED = 130
_pending = False  # a Ctrl-C arrived and the command has not reported it yet
_installed = False


def _on_sigint(signum: int, frame: object) -> None:
    global _pending
    _pending = True
    raise KeyboardInterrupt


def _on_audit(event: str, args: tuple) -> None:
    if event == "import" and _pending and not isinstance(sys.exc_info()[1], KeyboardInterrupt):
        raise KeyboardInterrupt  # the first one was swallowed: stop at this import instead


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
