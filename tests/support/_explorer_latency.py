"""Click-to-picture latency of the explorer in a real browser, per control (used by the browser test and by
``benchmarks/explorer_latency.py``).

The page records, with ``performance.now()``, the moment of each user event (a capture listener on the
document: key, mouse, change) and every ``load`` of an explorer plot and every showing of the red refusal box.
After each action the page is left alone for :data:`SETTLE_S` (a person looks at the new picture); the action's
latency is the time from its event to the last picture that loaded (or the box that showed) in that window --
the whole update a learner waits for, on this machine as loaded as it is.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

SETTLE_S = 1.2
PLOT = "img.tmem-explorer-plot"

INSTALL = """() => {
  if (window.__lat) return;
  const lat = window.__lat = {events: [], updates: []};
  for (const type of ['keydown', 'mousedown', 'change'])
    document.addEventListener(type, () => lat.events.push(performance.now()), true);
  const watch = img => { if (!img.__watched) { img.__watched = true;
      img.addEventListener('load', () => lat.updates.push(performance.now())); } };
  document.querySelectorAll('img.tmem-explorer-plot').forEach(watch);
  const box = () => document.querySelector('.tmem-explorer-error');
  let shown = false;
  new MutationObserver(() => {
    document.querySelectorAll('img.tmem-explorer-plot').forEach(watch);
    const b = box(); const now = !!(b && b.offsetParent !== null);
    if (now && !shown) lat.updates.push(performance.now());
    shown = now;
  }).observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
}"""

TAKE = """() => { const lat = window.__lat; const out = {events: lat.events, updates: lat.updates};
  lat.events = []; lat.updates = []; return out; }"""


#: true once the action's pictures are in: the first came and nothing more for ``quiet`` ms -- or, with no picture,
#: once ``settle`` ms passed since the action's first event (it brought none)
SETTLED = """([settle, quiet]) => { const lat = window.__lat, now = performance.now();
  if (!lat.events.length) return false;
  const start = lat.events[0], after = lat.updates.filter(t => t >= start);
  if (!after.length) return now - start >= settle;
  return now - after[after.length - 1] >= quiet; }"""


def measure(page: Any, action: Callable[[], None], quiet: float | None = None) -> float | None:
    """Milliseconds from ``action``'s first event to the last picture (or refusal box) it brought; None when it
    brought none within :data:`SETTLE_S`.

    Without ``quiet`` the page is left alone for :data:`SETTLE_S` after each action (the benchmark: a person looks
    at the new picture while the worker draws ahead). With ``quiet`` seconds (the tests) the wait ends as soon as
    the action's pictures stopped coming -- its first picture in, then none for ``quiet`` -- and, when it brings
    none, after :data:`SETTLE_S` as before: the same pictures are required within the same time, sooner."""
    page.evaluate(INSTALL)
    page.evaluate(TAKE)
    action()
    if quiet is None:
        page.wait_for_timeout(SETTLE_S * 1000)
    else:
        page.wait_for_function(SETTLED, arg=[SETTLE_S * 1000, quiet * 1000], polling=50, timeout=(SETTLE_S + 60) * 1000)
    seen = page.evaluate(TAKE)
    if not seen["events"] or not seen["updates"]:
        return None
    start = seen["events"][0]
    after = [t for t in seen["updates"] if t >= start]
    return max(after) - start if after else None


def _select(page: Any, index: int, label: str) -> Callable[[], None]:
    return lambda: page.locator(".tmem-explorer .widget-dropdown select").nth(index).select_option(label=label)


def _key(page: Any, slider: int, key: str) -> Callable[[], None]:
    return lambda: page.locator(".tmem-explorer .widget-slider .noUi-handle").nth(slider).press(key)


def _click(page: Any, selector: str, index: int) -> Callable[[], None]:
    return lambda: page.locator(selector).nth(index).click()


def actions(page: Any, rounds: int) -> list[tuple[str, Callable[[], None]]]:
    """What a learner does, control by control, ``rounds`` changes each (the dropdowns picked by their plain
    labels, as a script would); each format change alternates a refused pair (the red box) and an accepted one
    whose pictures differ from the last shown (a change to identical pictures brings nothing to wait for)."""
    out: list[tuple[str, Callable[[], None]]] = []
    out += [
        ("step slider (arrow key)", _key(page, 0, "ArrowRight" if i % 4 < 2 else "ArrowLeft")) for i in range(rounds)
    ]
    out += [
        ("scale row slider (arrow key)", _key(page, 1, "ArrowRight" if i % 4 < 2 else "ArrowLeft"))
        for i in range(rounds)
    ]
    out += [
        ("scale k slider (arrow key)", _key(page, 2, "ArrowRight" if i % 2 == 0 else "ArrowLeft"))
        for i in range(rounds)
    ]
    out += [
        ("scale operand A/B", _click(page, ".tmem-explorer .widget-toggle-buttons button", 1 - i % 2))
        for i in range(rounds)
    ]
    out += [("overlap on/off", lambda: page.locator(".tmem-explorer-overlap").click()) for _ in range(rounds)]
    out += [("EPILOGUE_BLOCK_N menu", _select(page, 3, ("16", "64", "32")[i % 3])) for i in range(rounds)]
    # refused and accepted in turn, each accepted pair with its own plan (mxfp8 x mxfp4 draws what mxfp8 x mxfp8
    # draws: no new picture to wait for)
    formats = [
        ("A format menu", 0, "mxfp8"),
        ("B format menu", 1, "mxfp8"),
        ("A format menu", 0, "mxfp4"),
        ("B format menu", 1, "mxfp4"),
        ("A format menu", 0, "nvfp4"),
        ("B format menu", 1, "nvfp4"),
    ]
    for i in range(-(-rounds // len(formats)) * len(formats)):  # whole cycles: they end on an accepted pair
        name, index, label = formats[i % len(formats)]
        out.append((name, _select(page, index, label)))
    # last: a BLOCK_K picked by hand stops following the seed's default (the formats above rely on it)
    out += [("BLOCK_K menu", _select(page, 2, ("64", "128", "256")[i % 3])) for i in range(rounds)]
    return out


def run(page: Any, rounds: int, quiet: float | None = None) -> dict[str, list[float | None]]:
    """Each action measured, by control (``quiet``: see :func:`measure`)."""
    times: dict[str, list[float | None]] = {}
    for name, action in actions(page, rounds):
        times.setdefault(name, []).append(measure(page, action, quiet))
    return times


def summary(times: dict[str, list[float | None]]) -> dict[str, dict[str, float | int]]:
    """Median and worst per control (ms), and how many actions brought no picture."""
    out = {}
    for name, values in times.items():
        got = [v for v in values if v is not None]
        out[name] = {
            "n": len(values),
            "missing": len(values) - len(got),
            "median_ms": round(statistics.median(got), 1) if got else float("nan"),
            "worst_ms": round(max(got), 1) if got else float("nan"),
        }
    return out
