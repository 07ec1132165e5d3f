"""The one parser for numbers typed on the command line.

Python's ``int()`` and ``float()`` accept more than a person means by a number: ``1_0`` and ``1__0``
(digit separators), non-ASCII digits (``'١٢'``), surrounding whitespace.  Every option of every
command parses its numbers here instead: plain ASCII decimal digits, an optional sign, and for
non-integers an optional fraction and exponent.
"""

from __future__ import annotations

import re

_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = re.compile(r"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)


def parse_integer(text: str) -> int:
    """``text`` as a decimal integer; ``ValueError`` naming it otherwise (``1_0``, ``1.0``, ``0x10``)."""
    if not isinstance(text, str) or not _INTEGER.fullmatch(text):
        raise ValueError(f"expected an integer (decimal digits only), got {str(text)[:40]!r}")
    return int(text, 10)


def parse_number(text: str) -> float:
    """``text`` as a decimal number (``2``, ``0.5``, ``1e-3``); ``inf`` and ``nan`` parse (the caller's
    range check refuses them with its own message); ``ValueError`` for anything else (``1_0``)."""
    if not isinstance(text, str) or not (_NUMBER.fullmatch(text) or _NON_FINITE.fullmatch(text)):
        raise ValueError(f"expected a number, got {str(text)[:40]!r}")
    return float(text)
