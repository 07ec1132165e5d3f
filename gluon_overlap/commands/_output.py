"""Shared output helpers and argument types: a readable table by default, JSON with ``--json``.

The argument types refuse, in the parser (one line, exit status 2), what no command can use:
sizes that are not positive integers below 2**31, seeds outside 64 bits, non-finite or absurd
numbers, output paths that cannot be written.
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import shlex
import shutil
import stat
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gluon_overlap import text
from gluon_overlap.store import AtomicFile, write_atomically  # noqa: F401  (the commands' files)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A command's table (:func:`gluon_overlap.text.format_table`), wrapped to fit :data:`~gluon_overlap.text.CLI_WIDTH`
    columns."""
    return text.format_table(headers, rows, max_width=text.CLI_WIDTH)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of a table")


def emit(args: argparse.Namespace, data: Any, render: Callable[[Any], str]) -> None:
    """Print ``data`` as JSON (``--json``) or through ``render``."""
    if getattr(args, "json", False):
        try:  # the whole document first: an error must not leave half a JSON object on stdout
            text = json.dumps(data, indent=2, sort_keys=False, default=_json_default, allow_nan=False)
        except ValueError as exc:
            raise ValueError(f"the result holds a non-finite number, which JSON cannot carry ({exc})") from None
        _write_stdout(text + "\n")
    else:
        _write_stdout(render(data) + "\n")


def _write_stdout(text: str) -> None:
    """Write the result; an ``OSError`` other than a reader that left (``| head``) names ``<stdout>``."""
    try:
        sys.stdout.write(text)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, "<stdout>") from None


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    raise TypeError(f"cannot serialise {type(o).__name__}")


def add_format_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``--a-format`` / ``--b-format`` with the three format names."""
    from gluon_overlap.tmem import FORMAT_VEC_SIZE  # torch-free

    choices = list(FORMAT_VEC_SIZE)
    parser.add_argument("--a-format", choices=choices, required=required, help="format of A (M x K)")
    parser.add_argument("--b-format", choices=choices, required=required, help="format of B (N x K)")


def on_off(value: str) -> bool:
    """argparse type for ``--overlap on|off``."""
    v = value.lower()
    if v in ("on", "true", "1", "yes"):
        return True
    if v in ("off", "false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected 'on' or 'off', got {value!r}")


def _integer(value: str) -> int:
    from gluon_overlap.commands.numbers import parse_integer

    try:
        return parse_integer(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def size(value: str) -> int:
    """argparse type: a problem size or count, ``1 <= n < 2**31``."""
    from gluon_overlap.limits import MAX_DIM

    n = _integer(value)
    if not 0 < n < MAX_DIM:
        raise argparse.ArgumentTypeError(f"{n} must be a positive integer below 2**31")
    return n


def seed(value: str) -> int:
    """argparse type: a random seed, ``0 <= seed < 2**63``."""
    from gluon_overlap.limits import MAX_SEED

    n = _integer(value)
    if not 0 <= n <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{n} must be in 0 .. 2**63 - 1")
    return n


def bounded_float(low: float, high: float) -> Callable[[str], float]:
    """argparse type: a finite number with ``low <= x <= high``."""

    def parse(value: str) -> float:
        from gluon_overlap.commands.numbers import parse_number

        try:
            x = parse_number(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if not math.isfinite(x):
            raise argparse.ArgumentTypeError(f"{value!r} is not a finite number")
        if not low <= x <= high:
            raise argparse.ArgumentTypeError(f"{x:g} must be between {low:g} and {high:g}")
        return x

    parse.__name__ = "number"
    return parse


def _existing_ancestor(path: Path) -> Path:
    for parent in (path, *path.parents):
        if os.path.lexists(parent):
            return parent
    return Path(".")


MIN_FREE_BYTES = 64 * 1024  #: a file system with less free space than this is taken as full

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe): writing to it waits for a reader"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a block device"),
)


def _stat_or_explain(path: Path, option: str, value: str) -> os.stat_result | None:
    """``os.stat(path)`` (following links); None when nothing is there; ``ValueError`` saying what is wrong
    with the path otherwise (a symlink loop, a file on the way, a folder that cannot be searched)."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(f"{option} {value!r} is a symbolic link loop") from None
        if exc.errno == errno.ENOTDIR:
            raise ValueError(f"{option} {value!r}: a part of the path is a file, not a directory") from None
        raise ValueError(f"{option} {value!r}: {exc.strerror or exc}") from None


def check_free_space(folder: Path, option: str, value: str, need: int = MIN_FREE_BYTES) -> None:
    """``ValueError`` when the file system of ``folder`` has less than ``need`` bytes free."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # not measurable here: the write itself will tell
    if free < need:
        raise ValueError(f"{option} {value!r}: the file system of {str(folder)!r} is full ({free} bytes free)")


def check_writable_file(value: str, option: str, create_parents: bool = False) -> None:
    """``ValueError`` unless ``value`` names a regular file this process can create or overwrite, through a
    temporary file in its folder (with ``create_parents``, missing parent directories count as creatable).
    ``os.devnull`` is accepted (written directly); FIFOs, devices, sockets, directories, symlink loops and
    full file systems are refused, each with its own message."""
    if not value:
        raise ValueError(f"{option} '' is an empty path: give a file name".lstrip())
    if value.endswith(os.sep):
        raise ValueError(f"{option} {value!r} is a directory, not a file")
    if value == os.devnull:
        return
    path = Path(value).expanduser()
    st = _stat_or_explain(path, option, value)
    if st is not None:
        for test, what in _KINDS:
            if test(st.st_mode):
                raise ValueError(f"{option} {value!r} is {what}, not a regular file")
        if not os.access(path, os.W_OK):
            raise ValueError(f"{option} {value!r} exists and cannot be overwritten")
        path = Path(os.path.realpath(path))  # a link to a file: the file is what gets replaced
    elif os.path.islink(path):  # a link to a place that does not exist: write there
        path = Path(os.path.realpath(path))
    parent = path.parent
    ancestor = _existing_ancestor(parent)
    st = _stat_or_explain(ancestor, option, value)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{option} {value!r}: {str(ancestor)!r} is a file, not a directory")
    if ancestor != parent and not create_parents:
        raise ValueError(missing_folder(option, value, parent))
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {value!r}: directory {str(ancestor)!r} is not writable")
    check_free_space(ancestor, option, value)


def missing_folder(option: str, value: str, folder: Path) -> str:
    """The one rule of every output option (``--trace``, ``--emit``, ``bench --csv``): the folder that will hold
    the output must exist; a command creates its output (a file, or ``--emit``'s folder) but no folder above it,
    so that a mistyped path is refused instead of silently growing a tree of folders."""
    return (
        f"{option} {value!r}: directory {str(folder)!r} does not exist (create it first, e.g. "
        f"mkdir -p {shlex.quote(str(folder))}; commands make no missing folders)"
    ).lstrip()


def check_writable_dir(value: str, option: str, create_parents: bool = False) -> None:
    """``ValueError`` unless ``value`` is a directory this process writes into, or can be created as one in
    an existing folder (with ``create_parents``, missing folders above it count as creatable)."""
    if not value:
        raise ValueError(f"{option} needs a directory name")
    path = Path(value).expanduser()
    st = _stat_or_explain(path, option, value)
    if st is None and os.path.islink(path):
        raise ValueError(f"{option} {value!r} is a symbolic link to a place that does not exist")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{option} {value!r} is not a directory")
    ancestor = _existing_ancestor(path)
    if st is None and not create_parents and ancestor != path.parent and ancestor.is_dir():
        raise ValueError(missing_folder(option, value, path.parent))
    st = _stat_or_explain(ancestor, option, value)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{option} {value!r}: {str(ancestor)!r} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {value!r}: directory {str(ancestor)!r} is not writable")
    check_free_space(ancestor, option, value)


def output_file(value: str, create_parents: bool = False) -> str:
    """argparse type: a file that can be written (checked before any work starts)."""
    try:
        check_writable_file(value, "", create_parents)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).strip()) from None
    except OSError as exc:  # e.g. a name too long for the file system
        raise argparse.ArgumentTypeError(f"{value[:60]!r}: {exc.strerror or exc}") from None
    return value


def output_dir(value: str) -> str:
    """argparse type: a directory that exists or can be created, and can be written into."""
    try:
        check_writable_dir(value, "")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).strip()) from None
    except OSError as exc:  # e.g. a name too long for the file system
        raise argparse.ArgumentTypeError(f"{value[:60]!r}: {exc.strerror or exc}") from None
    return value


def resolve_triton_cache() -> Path:
    """The folder Triton will keep compiled kernels in, resolved as Triton does (``TRITON_CACHE_DIR``, else
    ``$TRITON_HOME/.triton/cache``, else ``~/.triton/cache``), created if missing and checked writable:
    ``ValueError`` that names the folder and the variable to set otherwise.  Call before compiling."""
    hint = "set TRITON_CACHE_DIR to a folder you can write (e.g. TRITON_CACHE_DIR=$PWD/.cache/triton)"
    named = os.environ.get("TRITON_CACHE_DIR")
    if named is not None:
        if not named.strip():
            raise ValueError(
                f"TRITON_CACHE_DIR is set but empty, so Triton has no cache folder for compiled "
                f"kernels: {hint}, or unset it to use ~/.triton/cache"
            )
        folder, source = Path(named).expanduser(), "TRITON_CACHE_DIR"
    else:
        home = os.environ.get("TRITON_HOME") or os.path.expanduser("~/")
        if not home or home.startswith("~"):
            raise ValueError(
                f"Triton's cache folder is ~/.triton/cache, but there is no home folder (HOME is not set): {hint}"
            )
        folder, source = Path(home) / ".triton" / "cache", "TRITON_HOME" if os.environ.get("TRITON_HOME") else "HOME"
    where = f"Triton's cache folder {str(folder)!r} (from {source})"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ValueError(f"{where} is a file, not a folder: {hint}") from None
    except OSError as exc:
        raise ValueError(f"{where} cannot be created ({exc.strerror or exc}): {hint}") from None
    if not folder.is_dir():
        raise ValueError(f"{where} is not a folder: {hint}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{where} is not writable: {hint}")
    check_free_space(folder, source, str(folder))
    return folder
