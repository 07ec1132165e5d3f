"""Make every picture README.md shows, from the app and the notebooks' own drawing code: ``make pictures``.

Run from the repository root:  .venv/bin/python scripts/readme_pictures.py [--check] [--shots DIR]

* ``docs/images/explorer.png`` -- the explorer's static picture (:meth:`TmemExplorer.static_png`: what GitHub and
  an untrusted notebook show, the same views the app draws, at the step where the overlap shows);
* ``docs/images/tmem-plan.png`` -- notebook 04's TMEM plan figure for nvfp4 x nvfp4
  (``gluon_overlap.plots.tmem.plot_plan``, saved as Jupyter's inline backend shows it).

Each PNG records the versions that drew it and its alternative text (PNG text chunks); the README's alt text of
each picture is rewritten to that text. ``--check`` writes nothing and exits 1 when a picture or its alt text is
stale (``tests/project/test_readme_pictures.py`` runs the same check). ``--shots DIR`` also saves screenshots of the
explorer in Voila and JupyterLab (headless Chromium), for reviewing a change; the README does not use them.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

IMAGES = REPO / "docs" / "images"
README = REPO / "README.md"


@dataclass(frozen=True)
class Picture:
    path: Path
    png: bytes  # without the text chunks
    alt: str


def _versions() -> str:
    import matplotlib
    import PIL

    return f"matplotlib {matplotlib.__version__}, Pillow {PIL.__version__}"


def explorer_picture() -> Picture:
    from gluon_overlap.explorer import TmemExplorer

    explorer = TmemExplorer()
    return Picture(IMAGES / "explorer.png", explorer.static_png(), explorer.alt_text())


def plan_picture() -> Picture:
    from gluon_overlap import tmem
    from gluon_overlap.plots import tmem as ptmem

    plan = tmem.make_plan("nvfp4", "nvfp4")
    fig = ptmem.plot_plan(plan)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight")  # as Jupyter's inline backend shows it
    ov = plan.overlap_window
    alt = (
        f"The TMEM plan for {plan.a_format} x {plan.b_format} (notebook 04): left accumulator "
        f"[{plan.left.offset}, {plan.left.end}), right accumulator [{plan.right.offset}, {plan.right.end}), their "
        f"{ov.cols}-column overlap [{ov.offset}, {ov.end}), A scales [{plan.a_scale.offset}, {plan.a_scale.end}), "
        f"B scales [{plan.b_scale.offset}, {plan.b_scale.end}); the arrows show each accumulator's drain order"
    )
    return Picture(IMAGES / "tmem-plan.png", buf.getvalue(), alt)


PICTURES = (explorer_picture, plan_picture)


def _with_text(picture: Picture) -> bytes:
    """The PNG with its alt text and the drawing versions as text chunks."""
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Description", picture.alt)
    info.add_text("Software", f"gluon-overlap scripts/readme_pictures.py ({_versions()})")
    image = Image.open(io.BytesIO(picture.png))
    out = io.BytesIO()
    image.save(out, format="png", pnginfo=info, optimize=False, compress_level=9)
    return out.getvalue()


def stale(picture: Picture) -> list[str]:
    """Why the committed picture (or its README alt text) is not what the code draws now; [] when current."""
    import numpy as np
    from PIL import Image

    rel = picture.path.relative_to(REPO).as_posix()
    if not picture.path.exists():
        return [f"{rel} is missing"]
    reasons = []
    with Image.open(picture.path) as committed:
        text = dict(committed.text)  # type: ignore[attr-defined]
        old = np.asarray(committed.convert("RGB")).astype(np.int16)
    new = np.asarray(Image.open(io.BytesIO(picture.png)).convert("RGB")).astype(np.int16)
    if text.get("Description") != picture.alt:
        reasons.append(f"{rel} shows {text.get('Description')!r}; the code draws {picture.alt!r}")
    if old.shape != new.shape:
        reasons.append(
            f"{rel} is {old.shape[1]} x {old.shape[0]} pixels; the code draws {new.shape[1]} x {new.shape[0]}"
        )
    else:
        differ = float((np.abs(old - new).max(axis=2) > 40).mean())
        same_stack = _versions() in text.get("Software", "")
        # the same matplotlib and Pillow draw the same pixels; another version may move an edge by a pixel
        if (same_stack and differ > 0) or differ > 0.002:
            reasons.append(f"{rel} differs from what the code draws in {differ:.3%} of its pixels")
    readme = README.read_text(encoding="utf-8")
    if f"![{picture.alt}]({rel})" not in readme:
        reasons.append(f"README.md does not show {rel} with the alt text {picture.alt!r}")
    return reasons


def write(picture: Picture) -> None:
    rel = picture.path.relative_to(REPO).as_posix()
    picture.path.parent.mkdir(parents=True, exist_ok=True)
    picture.path.write_bytes(_with_text(picture))
    readme = README.read_text(encoding="utf-8")
    pattern = re.compile(r"!\[[^\]]*\]\(" + re.escape(rel) + r"\)")
    if not pattern.search(readme):
        raise SystemExit(f"README.md has no picture {rel} to update")
    README.write_text(pattern.sub(lambda _: f"![{picture.alt}]({rel})", readme), encoding="utf-8")


def screenshots(shots: Path) -> None:
    """The explorer as Voila and JupyterLab show it (headless Chromium), for reviewing a change."""
    import tempfile

    sys.path.insert(0, str(REPO / "tests" / "support"))
    from _jupyter_servers import CHROMIUM, CHROMIUM_ARGS, VoilaServer, only_localhost
    from playwright.sync_api import sync_playwright

    shots.mkdir(parents=True, exist_ok=True)
    loaded = """() => { const imgs = document.querySelectorAll('img.tmem-explorer-plot');
                return imgs.length === 3 && [...imgs].every(i => i.complete && i.naturalWidth > 0); }"""
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        server = VoilaServer(Path(tmp))
        try:
            server.wait_ready(120)
            for width in (900, 1200, 1600):
                page = browser.new_page(viewport={"width": width, "height": 1200})
                page.route("**/*", only_localhost)
                page.goto(server.app_url())
                page.wait_for_function(loaded, timeout=120_000)
                page.screenshot(path=str(shots / f"voila-{width}.png"), full_page=True)
                page.close()
        finally:
            server.stop()
            browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a picture is stale")
    parser.add_argument("--shots", type=Path, help="also save screenshots of the explorer in Voila here")
    args = parser.parse_args()
    pictures = [make() for make in PICTURES]
    if args.check:
        reasons = [reason for picture in pictures for reason in stale(picture)]
        print("\n".join(reasons) or "every README picture is current")
        return 1 if reasons else 0
    for picture in pictures:
        write(picture)
        print(f"wrote {picture.path.relative_to(REPO)}")
    if args.shots:
        screenshots(args.shots)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
