"""Every picture README.md shows is what the app and the notebooks' drawing code draw now (``make pictures``
remakes them): the same pixels, and the README's alt text is the picture's own description."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("readme_pictures", REPO / "scripts" / "readme_pictures.py")
pictures = importlib.util.module_from_spec(_spec)
sys.modules["readme_pictures"] = pictures  # its dataclass looks its module up there
_spec.loader.exec_module(pictures)


@pytest.mark.parametrize("make", pictures.PICTURES, ids=lambda f: f.__name__)
def test_readme_picture_is_current(make):
    picture = make()
    assert pictures.stale(picture) == [], "run `make pictures` (scripts/readme_pictures.py)"


def test_the_staleness_check_can_fail(tmp_path, monkeypatch):
    """A picture drawn by other code (here: another step of the explorer) is reported stale."""
    from gluon_overlap.explorer import TmemExplorer

    current = pictures.explorer_picture()
    other = TmemExplorer(step=0)
    reasons = pictures.stale(pictures.Picture(current.path, other.static_png(), other.alt_text()))
    assert any("shows" in r for r in reasons) and any("pixels" in r for r in reasons), reasons
