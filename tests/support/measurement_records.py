"""The recorded device measurements (``data/measurements/*.json``) and the figures their readings and docs/NOTES.md
quote, for the tests that check one against the other."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "docs" / "NOTES.md"


def load(name: str) -> dict:
    """``data/measurements/<name>.json``, parsed."""
    return json.loads((ROOT / "data" / "measurements" / f"{name}.json").read_text(encoding="utf-8"))


def three_h200_measurements() -> str:
    """NOTES' "Three H200 measurements, taken" (2026-12-05), up to the next paragraph heading."""
    text = NOTES.read_text(encoding="utf-8")
    first = text.index("**Three H200 measurements, taken")
    return text[first : text.index("**The rows' per-tile figures**", first)]


def _plain(text: str) -> str:
    return " ".join(text.replace("**", "").split()).lower()


def assert_quoted(figures: list[str], *texts: str) -> None:
    """Every figure (computed by the caller from the data) stands in every text, whatever its line breaks, bold marks
    and capitals."""
    for text in texts:
        plain = _plain(text)
        for figure in figures:
            assert _plain(figure) in plain, (figure, text[:80])
