"""``gluon-overlap plan | compile | emulate | model | bench | run``.

Each sub-command prints a readable table, or JSON with ``--json``.  Exit status: 0 when the
run is clean, 1 when the run found a problem (a hazard, a failed compile check), 2 for every
error -- a bad argument (the argument parser), an invalid configuration (a ``ValueError`` of the
package), a path that cannot be written, a problem too large for this machine, or anything
unexpected.  An error is always one line on stderr, ``gluon-overlap COMMAND: error: ...``,
never a traceback (set ``GLUON_OVERLAP_TRACEBACK=1`` to see one of an unexpected error).  Ctrl-C
(SIGINT) ends a command with 130 and SIGTERM with 143, each with one line; neither leaves a partial
output file, and a guarded child process (``gluon_overlap.commands.guarded``) is killed first.
"""

from __future__ import annotations

import argparse
import atexit
import difflib
import importlib
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from gluon_overlap import __version__, interrupts
from gluon_overlap.commands import COMMANDS

TRACEBACK_ENV = "GLUON_OVERLAP_TRACEBACK"
#: exit statuses besides 0 (clean), 1 (a problem found) and 2 (an error)
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
EXIT_STATUSES = (
    "exit status: 0 clean, 1 the run found a problem, 2 an error (one line on stderr), "
    f"{EXIT_INTERRUPTED} interrupted (Ctrl-C), {EXIT_TERMINATED} terminated (SIGTERM); "
    "an interrupted or terminated command leaves no partial output file"
)
#: the commands whose work imports Triton (its C++ extension is imported with torch, where a Ctrl-C cannot abort it)
TRITON_COMMANDS = frozenset({"compile", "emulate", "model", "run"})


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is: it stops as after Ctrl-C (every cleanup that runs on
    ``KeyboardInterrupt`` runs: partial files removed, a guarded child killed), then exits 143."""


def _on_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
    raise Terminated()


@contextmanager
def _sigterm_like_ctrl_c() -> Iterator[None]:
    """While the command runs, SIGTERM raises :class:`Terminated`; the previous handler comes back after."""
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def one_line(text: object) -> str:
    """``text`` on one line (newlines become ``; ``), for an error message."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip()) or type(text).__name__


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (no usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gluon-overlap",
        description="Blackwell 2-CTA block-scaled matmul with overlapping TMEM accumulators: "
        "plan the TMEM layout, cross-compile the Gluon kernel, emulate its protocol on a CPU, "
        "model and benchmark its speed; run any Gluon script on the CPU interpreter.",
        epilog=EXIT_STATUSES + ".",
    )
    parser.add_argument("--version", action="version", version=f"gluon-overlap {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"gluon_overlap.commands.{name}")
        except ModuleNotFoundError as exc:  # a command still being written
            if exc.name != f"gluon_overlap.commands.{name}":
                raise
            continue
        module.add_parser(sub)
    return parser


def _reader_left() -> int:
    """stdout's reader has gone (``... | head``): not an error; keep the exit quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush then goes nowhere
    except (OSError, ValueError):
        pass
    return 0


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    for action in parser._subparsers._group_actions if parser._subparsers else []:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


#: how alike (difflib's ratio of the names without their dashes) a known option must be to be suggested
SUGGEST_RATIO = 0.75


def _one_edit_apart(a: str, b: str) -> bool:
    """``a`` becomes ``b`` by one inserted, deleted or replaced character, or two neighbours swapped."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def nearest_option(name: str, options: list[str]) -> str | None:
    """The known option a mistyped ``name`` most likely meant, or None when none is close.

    Names are compared without their leading dashes (``--timed`` is not near ``--m`` because both start with
    ``--``): an option one typo away (``--mm``, ``--sede``), or one whose name is at least
    :data:`SUGGEST_RATIO` alike (``--blockk`` -> ``--block-k``)."""
    bare = name.lstrip("-").lower()
    if not bare:
        return None
    scored = []
    for option in options:
        other = option.lstrip("-").lower()
        ratio = difflib.SequenceMatcher(None, bare, other).ratio()
        if other != bare and (
            ratio >= SUGGEST_RATIO
            or (len(other) > 1 and _one_edit_apart(bare, other))
            or (len(other) == 1 and bare in (other * 2, other + "="))
        ):
            scored.append((ratio, option))
    return max(scored)[1] if scored else None


def _unrecognized(sub: argparse.ArgumentParser, extras: list[str]) -> str:
    """The one-line error for arguments ``sub`` does not take, with the nearest right spelling."""
    options = [s for action in sub._actions for s in action.option_strings]  # noqa: SLF001
    hints = []
    for extra in extras:
        name = extra.split("=", 1)[0]
        close = nearest_option(name, options) if name.startswith("-") else None
        if close is not None and close != name:
            hints.append(f"{name}: did you mean {close}?")
    say = f"unrecognized arguments: {' '.join(extras)}"
    return say + ("; " + " ".join(hints) if hints else "")


def traceback_wanted() -> bool:
    """``GLUON_OVERLAP_TRACEBACK`` asks for tracebacks (1, true, yes, on); unset, empty, 0, false, no, off: not."""
    return os.environ.get(TRACEBACK_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _stream_usable(stream: object) -> bool:
    """``stream`` exists and, when it has a file descriptor, the descriptor is open."""
    if stream is None:
        return False
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001  (no descriptor: a StringIO, pytest's capture)
        return True
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _guard_streams() -> str | None:
    """A closed stderr is replaced by the null device (errors then go nowhere instead of crashing); a closed
    stdout is an error, returned as its message."""
    if not _stream_usable(sys.stderr):
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115  (lives as long as the process)
    if not _stream_usable(sys.stdout):
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return "standard output is closed, so there is nowhere to print the result (run without >&-)"
    return None


def _output_failed(exc: OSError) -> str:
    """Writing the result to stdout failed (a full disk, ``> /dev/full``): quiet the interpreter's last flush."""
    _reader_left()
    return f"cannot write the result to standard output: {exc.strerror or one_line(exc)}"


def main(argv: list[str] | None = None) -> int:
    closed = _guard_streams()
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = _subparser(parser, getattr(args, "command", None))
        sub.error(_unrecognized(sub, extras))
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    prefix = f"gluon-overlap {args.command}: error:"
    if closed:
        print(f"{prefix} {closed}", file=sys.stderr)
        return 2
    from gluon_overlap._nanobind import quiet_leak_report_at_exit

    quiet_leak_report_at_exit()  # Triton's nanobind "leaked" report at exit is noise, even under `| head`
    try:
        with _sigterm_like_ctrl_c():
            if args.command != "plan":  # every other command imports torch: do it where a Ctrl-C cannot abort it
                check = getattr(args, "check", None)
                if check is not None:  # the command's own checks of its arguments first: a refusal is said at once
                    check(args)
                with interrupts.deferred():
                    import torch  # noqa: F401

                    if args.command in TRITON_COMMANDS:  # the same for Triton's C++ extension, which they import
                        import triton.experimental.gluon  # noqa: F401
            status = int(args.func(args) or 0)
            if interrupts.interrupted():  # a Ctrl-C swallowed after the last import: still an interrupt
                raise KeyboardInterrupt
            try:
                sys.stdout.flush()  # a reader that left shows here, not at interpreter exit
            except OSError as exc:
                if isinstance(exc, BrokenPipeError):
                    raise
                raise OSError(exc.errno, exc.strerror, "<stdout>") from None
        return status
    except BrokenPipeError:  # e.g. `gluon-overlap model --json | head`: the reader left, not an error
        return _reader_left()
    except ValueError as exc:
        message = one_line(exc)
    except OSError as exc:
        if getattr(exc, "filename", None) == "<stdout>":
            message = _output_failed(exc)
        else:
            what = f" {exc.filename!r}" if getattr(exc, "filename", None) else ""
            message = f"cannot use{what}: {exc.strerror or one_line(exc)}"
    except MemoryError:
        message = "ran out of memory (try a smaller problem)"
    except KeyboardInterrupt as exc:
        interrupts.acknowledge()
        terminated = isinstance(exc, Terminated)
        try:
            print(f"{prefix} {'terminated (SIGTERM)' if terminated else 'interrupted'}", file=sys.stderr)
        except (OSError, ValueError):
            pass
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except Exception as exc:  # a bug: still one line, the traceback on request
        if traceback_wanted():
            raise
        message = f"internal error, {type(exc).__name__}: {one_line(exc)} (set {TRACEBACK_ENV}=1 for the traceback)"
    try:
        print(f"{prefix} {message}", file=sys.stderr)
    except (OSError, ValueError):
        pass
    return 2


def entry() -> None:
    """The console script's work (:mod:`gluon_overlap.console` installs the Ctrl-C handling of
    :mod:`gluon_overlap.interrupts` first): :func:`main`,
    then a quick exit.  Once the result is written and the exit handlers have run (partial files removed,
    stderr quieted), the interpreter's teardown of torch, Triton and the model's objects only costs time
    (about a second after ``model``), so it is skipped.  A Ctrl-C after :func:`main` returned still exits 130."""
    try:
        status = main()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    except KeyboardInterrupt:
        interrupts.acknowledge()
        try:
            print(f"{interrupts.command_name()}: error: interrupted", file=sys.stderr, flush=True)
        except (OSError, ValueError, KeyboardInterrupt):
            pass
        status = EXIT_INTERRUPTED
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the exit handlers run to their end
    atexit._run_exitfuncs()
    os._exit(status)


if __name__ == "__main__":
    entry()
