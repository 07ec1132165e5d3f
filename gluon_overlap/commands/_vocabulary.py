"""The option vocabulary every sub-command shares: one spelling for one idea.

=====================  ==========================================================================
option                 meaning (every command that takes the idea spells it so)
=====================  ==========================================================================
``--a-format``         format of A; ``--b-format`` format of B
``--m --n --k``        problem sizes
``--block-k``          K elements per MMA step
``--epilogue-block-n`` accumulator columns per epilogue subtile
``--overlap [on|off]`` overlapping double-buffered accumulators (on) or one accumulator (off);
                       ``--no-overlap`` is ``--overlap off``.  ``plan --overlap`` / ``--no-overlap``
                       and ``compile|emulate --overlap on|off`` were the older, differing spellings:
                       every command now takes all of them (the mixed forms for one more release).
``--seed``             a random seed; ``--json`` machine-readable output
=====================  ==========================================================================
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from gluon_overlap.commands._output import on_off


def add_overlap_option(parser: argparse.ArgumentParser, help_extra: str = "") -> None:
    """``--overlap [on|off]`` (a bare ``--overlap`` is on) and ``--no-overlap``, both into ``args.overlap``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--overlap",
        type=on_off,
        nargs="?",
        const=True,
        default=True,
        metavar="on|off",
        help="overlapping double-buffered accumulators: on (default) or off (a single accumulator)" + help_extra,
    )
    group.add_argument(
        "--no-overlap", dest="overlap", action="store_const", const=False, help="the same as --overlap off"
    )


def add_block_k_option(parser: argparse.ArgumentParser, size_type: Callable[[str], int]) -> None:
    parser.add_argument(
        "--block-k",
        type=size_type,
        default=None,
        help="K elements per MMA step (default: the seed's, 128 with an fp8 operand, else 256); "
        "refused when the kernel's shared memory would not fit one CTA",
    )
