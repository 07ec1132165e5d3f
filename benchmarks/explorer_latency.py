"""Click-to-picture latency of the explorer in a real browser (Voila and JupyterLab), per control; Voila's first
response. Median and worst of every control, on this machine as loaded as it is (the load average is printed).

Run: .venv/bin/python benchmarks/explorer_latency.py [--rounds 6] [--settle 1.5] [--json out.json]

Each server is started alone (Voila with the flags ``make explorer`` passes: one kernel kept ready), the page
opened in headless Chromium, and each control changed ``--rounds`` times as a learner does, with ``--settle``
seconds between changes (a person looks at the new picture; meanwhile the explorer's worker draws the likely
next ones). A change's latency runs from its input event to the last picture it brought
(``tests/support/_explorer_latency.py``). Voila's first response is timed twice: a request as soon as the server
listens (the kept kernel may still be starting) and one after the server had ``--warm`` seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))

import _explorer_latency as latency  # noqa: E402
from _jupyter_servers import CHROMIUM, CHROMIUM_ARGS, LabServer, VoilaServer, only_localhost  # noqa: E402

PLOTS = """() => { const imgs = document.querySelectorAll('img.tmem-explorer-plot');
                return imgs.length === 3 && [...imgs].every(i => i.complete && i.naturalWidth > 0); }"""


def _page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    page = context.new_page()
    page.set_default_timeout(180_000)
    page.route("**/*", only_localhost)
    return context, page


def _controls(page, rounds: int, settle: float) -> dict:
    page.wait_for_function(PLOTS, timeout=180_000)
    page.locator(".tmem-explorer").scroll_into_view_if_needed()
    page.wait_for_timeout(settle * 1000)
    latency.SETTLE_S = settle
    times = latency.run(page, rounds)
    return {"summary": latency.summary(times), "times_ms": times}


def first_response(server_url: str, page) -> tuple[float, float]:
    """Seconds to the first byte of the page and to its three plots."""
    start = time.monotonic()
    page.goto(server_url, wait_until="commit")
    first = time.monotonic() - start
    page.wait_for_function(PLOTS, timeout=180_000)
    return first, time.monotonic() - start


def voila(browser, rounds: int, settle: float, warm: float) -> dict:
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        launched = time.monotonic()
        server = VoilaServer(Path(tmp))
        try:
            server.wait_ready(180)
            out["server_listening_s"] = round(time.monotonic() - launched, 2)
            context, page = _page(browser)
            first, plots = first_response(server.app_url(), page)
            out["cold_first_response_s"], out["cold_open_to_plots_s"] = round(first, 2), round(plots, 2)
            context.close()
            time.sleep(warm)  # the next kept kernel runs the notebook ahead
            context, page = _page(browser)
            first, plots = first_response(server.app_url(), page)
            out["warm_first_response_s"], out["warm_open_to_plots_s"] = round(first, 2), round(plots, 2)
            out.update(_controls(page, rounds, settle))
            context.close()
        finally:
            server.stop()
    return out


def jupyterlab(browser, rounds: int, settle: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        server = LabServer(Path(tmp))
        try:
            server.wait_ready(180)
            context, page = _page(browser)
            page.goto(server.notebook_url())
            page.get_by_text(re.compile(r"\| Idle$")).first.wait_for()
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
            out = _controls(page, rounds, settle)
            context.close()
        finally:
            server.stop()
    return out


def _print(name: str, result: dict) -> None:
    print(f"== {name}")
    for key, value in result.items():
        if key.endswith("_s"):
            print(f"  {key:<32} {value:6.2f} s")
    for control, row in result["summary"].items():
        missing = f"  ({row['missing']} brought no picture)" if row["missing"] else ""
        print(
            f"  {control:<32} median {row['median_ms']:7.1f} ms   worst {row['worst_ms']:7.1f} ms   "
            f"n={row['n']}{missing}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="changes per control (default 6)")
    parser.add_argument("--settle", type=float, default=1.5, help="seconds between changes (default 1.5)")
    parser.add_argument("--warm", type=float, default=30.0, help="seconds Voila gets before the warm visit")
    parser.add_argument("--json", help="also write every measured time to this JSON file")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            results["voila"] = voila(browser, args.rounds, args.settle, args.warm)
            results["jupyterlab"] = jupyterlab(browser, args.rounds, args.settle)
        finally:
            browser.close()
    results["load_average"] = {"before": load_before, "after": os.getloadavg(), "cores": os.cpu_count()}
    print(f"load average (1, 5, 15 min) before {load_before}, after {os.getloadavg()} on {os.cpu_count()} cores")
    for name in ("voila", "jupyterlab"):
        _print(name, results[name])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
