"""Make the README's pictures: the explorer as a Voila app (headless Chromium) and one figure of the series.

Run from the repository root:  .venv/bin/python scripts/readme_pictures.py [--shots DIR]

Writes ``docs/images/explorer.png`` (the explorer served by Voila, as ``make explorer`` shows it, at
1x device pixels) and ``docs/images/tmem-plan.png`` (notebook 04's TMEM plan figure for nvfp4 x
nvfp4). ``--shots DIR`` also saves what JupyterLab shows of ``notebooks/explorer.ipynb`` before and
after its cells run (for reviewing changes; not used by the README).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from _jupyter_servers import CHROMIUM, CHROMIUM_ARGS, LabServer, VoilaServer, only_localhost  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

PLOTS_LOADED = """() => { const imgs = document.querySelectorAll('img.tmem-explorer-plot');
                   return imgs.length === 3 && [...imgs].every(i => i.complete && i.naturalWidth > 0); }"""


def _page(browser):
    page = browser.new_page(viewport={"width": 1120, "height": 1200}, device_scale_factor=1)
    page.set_default_timeout(90_000)
    page.route("**/*", only_localhost)
    return page


def explorer_in_voila(browser, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = VoilaServer(Path(tmp))
        try:
            server.wait_ready()
            page = _page(browser)
            page.goto(server.app_url())
            page.wait_for_function(PLOTS_LOADED)
            page.locator(".tmem-explorer .widget-slider .noUi-handle").first.click()
            for _ in range(9):  # a step where tile 1 waits on the overlap barrier: all marks are on screen
                page.locator(".tmem-explorer .widget-slider .noUi-handle").first.press("ArrowRight")
            page.wait_for_timeout(1500)
            page.mouse.move(0, 0)
            page.locator(".tmem-explorer").screenshot(path=str(out))
        finally:
            server.stop()


def explorer_in_jupyterlab(browser, shots: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = LabServer(Path(tmp))
        try:
            server.wait_ready()
            page = _page(browser)
            page.set_viewport_size({"width": 1400, "height": 1100})
            page.goto(server.notebook_url())
            page.get_by_text(re.compile(r"\| Idle$")).first.wait_for()
            page.locator('.jp-OutputArea-output[data-mime-type="image/png"] img').first.wait_for()
            page.wait_for_timeout(1000)
            page.screenshot(path=str(shots / "after-lab-opened.png"))
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            page.wait_for_function(PLOTS_LOADED)
            page.wait_for_timeout(1000)
            page.locator(".tmem-explorer").scroll_into_view_if_needed()
            page.locator(".tmem-explorer").screenshot(path=str(shots / "after-lab-explorer.png"))
            page.locator(".tmem-explorer .widget-dropdown select").nth(1).select_option(label="mxfp8")
            page.locator(".tmem-explorer-error").wait_for(state="visible")
            page.locator(".tmem-explorer").screenshot(path=str(shots / "after-lab-error.png"))
        finally:
            server.stop()


def plan_figure(out: Path) -> None:
    from gluon_overlap import tmem
    from gluon_overlap.plots import tmem as ptmem

    plan = tmem.make_plan("nvfp4", "nvfp4")
    fig = ptmem.plot_plan(plan)
    fig.set_figwidth(11.5)
    fig.subplots_adjust(left=0.09, right=0.77)
    fig.legend(*ptmem.ruler_legend(plan), loc="upper left", bbox_to_anchor=(0.78, 0.88), fontsize=8, frameon=False)
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shots", type=Path, help="also save JupyterLab screenshots (before/after running) here")
    args = parser.parse_args()
    images = REPO / "docs" / "images"
    images.mkdir(parents=True, exist_ok=True)
    plan_figure(images / "tmem-plan.png")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            explorer_in_voila(browser, images / "explorer.png")
            if args.shots:
                args.shots.mkdir(parents=True, exist_ok=True)
                explorer_in_voila(browser, args.shots / "after-voila-explorer.png")
                explorer_in_jupyterlab(browser, args.shots)
        finally:
            browser.close()
    print(f"wrote {images / 'explorer.png'} and {images / 'tmem-plan.png'}")


if __name__ == "__main__":
    main()
