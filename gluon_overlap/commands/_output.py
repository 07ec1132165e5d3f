"""Shared output helpers and argument types: a readable table by default, JSON with ``--json``.

The argument types refuse, in the parser (one line, exit status 2), what no command can use:
sizes that are not positive integers below 2**31, seeds outside 64 bits, non-finite or absurd
numbers, output paths that cannot be written.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gluon_overlap.text import format_table  # noqa: F401  (re-exported for the command modules)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of a table")


def emit(args: argparse.Namespace, data: Any, render: Callable[[Any], str]) -> None:
    """Print ``data`` as JSON (``--json``) or through ``render``."""
    if getattr(args, "json", False):
        try:  # the whole document first: an error must not leave half a JSON object on stdout
            text = json.dumps(data, indent=2, sort_keys=False, default=_json_default, allow_nan=False)
        except ValueError as exc:
            raise ValueError(f"the result holds a non-finite number, which JSON cannot carry ({exc})") from None
        sys.stdout.write(text + "\n")
    else:
        print(render(data))


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


def check_pair_args(args: argparse.Namespace) -> tuple[str, str]:
    """The ``--a-format`` / ``--b-format`` pair, if the kernel supports it (``limits.check_pair``)."""
    from gluon_overlap.limits import check_pair

    return check_pair(args.a_format, args.b_format)


def on_off(value: str) -> bool:
    """argparse type for ``--overlap on|off``."""
    v = value.lower()
    if v in ("on", "true", "1", "yes"):
        return True
    if v in ("off", "false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected 'on' or 'off', got {value!r}")


def _integer(value: str) -> int:
    try:
        return int(value.strip().replace("_", ""), 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {value[:40]!r}") from None


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
        try:
            x = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {value[:40]!r}") from None
        if not math.isfinite(x):
            raise argparse.ArgumentTypeError(f"{value!r} is not a finite number")
        if not low <= x <= high:
            raise argparse.ArgumentTypeError(f"{x:g} must be between {low:g} and {high:g}")
        return x

    parse.__name__ = "number"
    return parse


def _existing_ancestor(path: Path) -> Path:
    for parent in (path, *path.parents):
        if parent.exists():
            return parent
    return Path(".")


def check_writable_file(value: str, option: str, create_parents: bool = False) -> None:
    """``ValueError`` unless ``value`` names a file this process can create or overwrite (with
    ``create_parents``, missing parent directories count as creatable)."""
    path = Path(value).expanduser()
    if not value or value.endswith(os.sep) or path.is_dir():
        raise ValueError(f"{option} {value!r} is a directory, not a file")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise ValueError(f"{option} {value!r} exists and cannot be overwritten")
        return
    parent = path.parent
    ancestor = _existing_ancestor(parent)
    if not ancestor.is_dir():
        raise ValueError(f"{option} {value!r}: {str(ancestor)!r} is a file, not a directory")
    if ancestor != parent and not parent.exists() and not create_parents:
        raise ValueError(f"{option} {value!r}: directory {str(parent)!r} does not exist")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {value!r}: directory {str(ancestor)!r} is not writable")


def check_writable_dir(value: str, option: str) -> None:
    """``ValueError`` unless ``value`` is, or can be created as, a directory this process writes into."""
    path = Path(value).expanduser()
    if not value:
        raise ValueError(f"{option} needs a directory name")
    ancestor = _existing_ancestor(path)
    if not ancestor.is_dir():
        raise ValueError(f"{option} {value!r}: {str(ancestor)!r} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {value!r}: directory {str(ancestor)!r} is not writable")


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
