"""A section of docs/NOTES.md, for the tests that check the figures it quotes against the records they come from."""

from __future__ import annotations

from pathlib import Path

NOTES = Path(__file__).resolve().parents[2] / "docs" / "NOTES.md"


def section(start: str, end: str) -> str:
    """The text of docs/NOTES.md from the line starting with ``start`` up to the one starting with ``end``."""
    text = NOTES.read_text(encoding="utf-8")
    first = text.index(start)
    return text[first : text.index(end, first)]


def three_h200_measurements() -> str:
    """NOTES' "Three H200 measurements, taken" (2026-12-05), with its line breaks turned into spaces."""
    text = section("**Three H200 measurements, taken", "**The rows' per-tile figures**")
    return " ".join(text.split())
