"""``gluon-overlap plan | compile | emulate | model | bench``.

Each sub-command prints a readable table, or JSON with ``--json``.  A bad argument
exits with status 2 and a one-line message (argparse); a ``ValueError`` raised by the
package (an invalid configuration) exits with status 2 and its message, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from gluon_overlap import __version__
from gluon_overlap.commands import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gluon-overlap",
        description="Blackwell 2-CTA block-scaled matmul with overlapping TMEM accumulators: "
        "plan the TMEM layout, cross-compile the Gluon kernel, emulate its protocol on a CPU, "
        "model and benchmark its speed.",
    )
    parser.add_argument("--version", action="version", version=f"gluon-overlap {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"gluon_overlap.commands.{name}")
        except ModuleNotFoundError as exc:  # a command still being written
            if exc.name != f"gluon_overlap.commands.{name}":
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"gluon-overlap {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `gluon-overlap model --json | head`: the reader left, not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
