"""Shared output helpers: a readable table by default, JSON with ``--json``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from gluon_overlap.text import format_table  # noqa: F401  (re-exported for the command modules)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of a table")


def emit(args: argparse.Namespace, data: Any, render: Callable[[Any], str]) -> None:
    """Print ``data`` as JSON (``--json``) or through ``render``."""
    if getattr(args, "json", False):
        json.dump(data, sys.stdout, indent=2, sort_keys=False, default=_json_default)
        sys.stdout.write("\n")
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


def on_off(value: str) -> bool:
    """argparse type for ``--overlap on|off``."""
    v = value.lower()
    if v in ("on", "true", "1", "yes"):
        return True
    if v in ("off", "false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected 'on' or 'off', got {value!r}")
