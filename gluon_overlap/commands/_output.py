"""Shared output helpers: a readable table by default, JSON with ``--json``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of a table")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Render rows as an aligned plain-text table (numbers right-aligned)."""
    cells = [[str(h) for h in headers]] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) for row in rows) and rows for i in range(len(headers))]

    def line(r: Sequence[str]) -> str:
        padded = (c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        return "  ".join(padded).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v != 0 and abs(v) < 1e-3:
            return f"{v:.4g}"
        return f"{v:.1f}" if abs(v) >= 100 else f"{v:.3f}"
    return str(v)


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
    choices = ["mxfp8", "mxfp4", "nvfp4"]
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
