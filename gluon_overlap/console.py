"""The ``gluon-overlap`` console script (and ``python -m gluon_overlap``): Ctrl-C honoured from its first line.

Python's own Ctrl-C handler raises ``KeyboardInterrupt`` wherever the interpreter is, and some C code
swallows it: torch's extension imports numpy while it initialises and, if that import fails, clears
the error and carries on -- a Ctrl-C that lands there (about 1.5 s into ``compile``) was lost, and the
command ran to its end.  So before anything else is imported this module installs

* a SIGINT handler that remembers the interrupt before it raises ``KeyboardInterrupt``, and
* an audit hook (``sys.addaudithook``) that raises it again at the next ``import`` when it was
  remembered but is no longer on its way out (swallowed): no ``KeyboardInterrupt`` is being handled
  at that moment, so cleanup code that runs because of it (a partial file removed) is never cut short.

:func:`gluon_overlap.cli.main` reports the interrupt in one line and exits 130
(:func:`gluon_overlap.interrupts.acknowledge` ends the re-raising once it has).  Nothing is installed when
``cli.main`` is called in-process (tests, notebooks): only the console script's process gets the handler and
the hook.  From this module's first line to :func:`main` a Ctrl-C is noted, not raised, and ``main`` raises it
inside its ``try``: there is no instant, once this module is being imported, at which a Ctrl-C is lost or ends the
command with a traceback.
"""

from __future__ import annotations

import signal

#: Ctrl-Cs that came between this module's first line and :func:`main`'s ``try``: noted, not raised (a
#: ``KeyboardInterrupt`` raised there -- the return to the caller, main's first line -- has no handler and ends the
#: process with a traceback; seen on a loaded machine, a signal sent the moment this module was imported).  This
#: module is the console script's alone: nothing else imports it.
_early_interrupts: list[int] = []
signal.signal(signal.SIGINT, lambda signum, frame: _early_interrupts.append(signum))

import os  # noqa: E402  (after the handler: a Ctrl-C during these imports is noted too)
import sys  # noqa: E402

from gluon_overlap.interrupts import EXIT_INTERRUPTED, acknowledge, command_name, install  # noqa: E402


def main() -> None:
    """The console script: the interrupt machinery first, then :func:`gluon_overlap.cli.entry`."""
    try:
        install()  # a Ctrl-C may land while signal.signal() returns: our handler raises it here
        if _early_interrupts:  # one came before install(): it is this command's interrupt
            raise KeyboardInterrupt
        from gluon_overlap.cli import entry
    except KeyboardInterrupt:  # during the CLI's own (light) imports: nothing was started, nothing to clean
        acknowledge()
        try:
            print(f"{command_name()}: error: interrupted", file=sys.stderr, flush=True)
        finally:
            os._exit(EXIT_INTERRUPTED)
    entry()
