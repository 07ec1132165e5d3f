"""Level-2 tests of the explorer: a real JupyterLab and a real Voila in a real headless Chromium.

One JupyterLab and one Voila server for the module (isolated config, runtime, workspaces and settings
in a temporary folder, see ``tests/support/_jupyter_servers.py``), both started at once, serve copies of the
notebooks; one Debian Chromium, driven by Playwright, visits them, each test in a fresh browser context
(no shared storage) and its own JupyterLab workspace (no shared tabs), each on its own copy of the
notebook, its kernels shut down afterwards. One test opens ``explorer.ipynb`` and uses the
explorer as a learner would: it checks the static picture JupyterLab shows before the cells run, runs
them, reads the BLOCK_K menu and the tooltips, moves the step slider, toggles overlap and picks an
invalid format pair; then it changes every control as a learner does -- the dropdowns picked by their plain
labels -- and each must answer with its picture (or the refusal box); the click-to-picture times are printed
(``tests/support/_explorer_latency.py``; ``benchmarks/explorer_latency.py`` records them with more changes per
control). Under Voila (what ``make explorer`` serves) the same explorer must come up as an app, without code
cells, and pass the same two checks. Two JupyterLab visits come first: every notebook opens (all at once, each
starting its kernel) without JupyterLab changing it, and a trusted notebook reopened from its saved widget
state says to run the cell.

Voila also serves the explorer at 900, 1,200 and 1,600 px (no plot, label or menu may be cut): opened at the
narrowest, then the window widened, as a learner does (the layout is CSS alone: the page drawn at a width is the
page resized to it).

Each test prints how long it took and the time from "run" to the three plots on screen. On failure
the server log's tail is printed and a full-page screenshot is kept in ``tmp_path`` (its path printed).
"""

from __future__ import annotations

import json
import platform
import re
import time
from dataclasses import dataclass
from pathlib import Path

import _explorer_latency as latency  # noqa: E402
import pytest
from _jupyter_servers import CHROMIUM, CHROMIUM_ARGS, NOTEBOOK, LabServer, VoilaServer, only_localhost  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

PLOT = "img.tmem-explorer-plot"

if not Path(CHROMIUM).exists():
    pytest.skip(
        f"{CHROMIUM} is missing: install Debian's Chromium with `sudo apt-get install chromium` "
        "(Playwright drives it through executable_path; `playwright install` is not used)",
        allow_module_level=True,
    )

from playwright.sync_api import sync_playwright  # noqa: E402

PLOTS_LOADED = """sel => { const imgs = document.querySelectorAll(sel);
                     return imgs.length === 3 && [...imgs].every(i => i.complete && i.naturalWidth > 0); }"""


def _image_sources(page) -> list[str]:
    return page.eval_on_selector_all(PLOT, "els => els.map(e => e.getAttribute('src') || '')")


def _wait_redrawn(page, index: int, old_src: str, timeout: float = 30_000) -> None:
    """Wait until plot ``index`` shows a new image that has loaded."""
    page.wait_for_function(
        """([sel, i, old]) => { const img = document.querySelectorAll(sel)[i];
             return img && img.getAttribute('src') && img.getAttribute('src') !== old
                    && img.complete && img.naturalWidth > 0; }""",
        arg=[PLOT, index, old_src],
        timeout=timeout,
    )


def _assert_no_error_shown(page) -> None:
    box = page.locator(".tmem-explorer-error")
    assert box.count() == 0 or not box.is_visible()
    stderr = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    assert stderr.count() == 0, stderr.all_inner_texts()
    assert "Traceback" not in page.locator("body").inner_text()


def _use_the_explorer(page) -> None:
    """What a learner does with the explorer once its plots are up (the same in JupyterLab and Voila)."""
    _assert_no_error_shown(page)
    explorer = page.locator(".tmem-explorer")
    explorer.scroll_into_view_if_needed()
    assert not page.locator(".tmem-explorer-offline").is_visible()  # live: no "run this cell" note

    # the BLOCK_K menu shows the value the plan uses (a plain label), its label the seed's default, and every
    # control says what it does
    selects = explorer.locator(".widget-dropdown select")
    block_k = selects.nth(2).evaluate("s => s.options[s.selectedIndex] ? s.options[s.selectedIndex].text : ''")
    assert block_k == "256"
    labels = selects.evaluate_all("ss => ss.flatMap(s => [...s.options].map(o => o.text))")
    assert not any("\xa0" in label or " " in label for label in labels), labels
    assert "(seed default 256)" in explorer.locator(".tmem-explorer-label").nth(2).inner_text()
    controls = ".widget-dropdown, .tmem-explorer-overlap, .widget-slider, .widget-toggle-buttons"
    # the hover text sits on the control or on its visible label (ipywidgets 8 puts it on the label)
    titles = explorer.evaluate(
        """(el, sel) => [...el.querySelectorAll(sel)].map(w => {
        const t = [w, ...w.querySelectorAll('[title]')].find(e => e.getAttribute('title') && e.getClientRects().length);
        return t ? t.getAttribute('title') : ''; })""",
        controls,
    )
    assert len(titles) == 9 and all(len(t) > 20 for t in titles), titles

    # the plots carry twice the pixels they are shown with (sharp text)
    sizes = page.eval_on_selector_all(PLOT, "els => els.map(e => [e.naturalWidth, e.getBoundingClientRect().width])")
    assert all(natural >= 1.9 * shown > 0 for natural, shown in sizes), sizes

    before = explorer.screenshot()
    # one key press on the step slider = one redraw of the ping-pong plot; it starts past step 0 (where the
    # overlap shows)
    src = _image_sources(page)
    handle = explorer.locator(".widget-slider .noUi-handle").first
    handle.click()
    first = float(handle.get_attribute("aria-valuenow"))
    assert first > 0
    for _ in range(3):
        old = _image_sources(page)[1]
        handle.press("ArrowRight")
        _wait_redrawn(page, 1, old)
    assert float(handle.get_attribute("aria-valuenow")) == first + 3
    after_step = explorer.screenshot()
    assert after_step != before
    assert _image_sources(page)[0] == src[0]  # the ruler did not change

    # overlap off: the ruler changes
    old = _image_sources(page)[0]
    explorer.locator(".tmem-explorer-overlap").click()
    _wait_redrawn(page, 0, old)
    assert explorer.screenshot() != after_step
    _assert_no_error_shown(page)

    # an unsupported pair is named under the menus; chosen by its plain label (as a script does), it says why
    # in plan's words, not a traceback, and that BLOCK_K followed the seed's default
    assert "B format mxfp8, mxfp4" in explorer.locator(".tmem-explorer-note").inner_text()
    selects.nth(1).select_option(label="mxfp8")
    box = page.locator(".tmem-explorer-error")
    box.wait_for(state="visible", timeout=30_000)
    assert "format pair nvfp4 x mxfp8 is not one the kernel supports" in box.inner_text()
    assert "BLOCK_K changed from 256 to 128" in page.locator(".tmem-explorer-changed").inner_text()
    assert "Traceback" not in page.locator("body").inner_text()

    # back to the pair it started with: the box goes, the plots come back, BLOCK_K follows the default again
    selects.nth(1).select_option(label="nvfp4")
    box.wait_for(state="hidden", timeout=30_000)
    page.wait_for_function(PLOTS_LOADED, arg=PLOT, timeout=30_000)
    block_k = selects.nth(2).evaluate("s => s.options[s.selectedIndex] ? s.options[s.selectedIndex].text : ''")
    assert block_k == "256"
    _assert_no_error_shown(page)


NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
#: where each test's copy lies in the JupyterLab server's folder (one copy per test: no test sees another's edits)
EXPLORER, TRUSTED, EVERY = "explorer.ipynb", "trusted/explorer.ipynb", "every"


@dataclass
class Servers:
    lab: LabServer
    voila: VoilaServer


def _stale_kernelspec(tmp: Path) -> Path:
    """A copy of the first notebook with the old kernel display name "Python 3" (JupyterLab rewrites it)."""
    stale = tmp / "stale-kernelspec.ipynb"
    nb = json.loads(NOTEBOOKS[0].read_text(encoding="utf-8"))
    nb["metadata"]["kernelspec"]["display_name"] = "Python 3"
    stale.write_text(json.dumps(nb), encoding="utf-8")
    return stale


def _with_this_python(path: Path, tmp: Path) -> Path:
    """A copy of ``path`` whose ``language_info.version`` is this Python's: JupyterLab writes the running kernel's
    Python version there when the kernel starts, so a notebook executed with another patch release (3.11.7 here,
    3.11.2 for a user of the system Python) comes out changed in that one field, whatever else it holds; every other
    byte is checked as committed."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    info = nb["metadata"].get("language_info")
    if not info or info.get("version") == platform.python_version():
        return path
    info["version"] = platform.python_version()
    copy = tmp / "this-python" / path.name
    copy.parent.mkdir(exist_ok=True)
    copy.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return copy


def _distinct_copy(tmp: Path) -> Path:
    """The explorer with one extra metadata key: trusting it (by content) leaves the plain copy untrusted."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    nb["metadata"]["gluon_overlap_test"] = "the copy this module trusts"
    copy = tmp / "explorer-to-trust.ipynb"
    copy.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return copy


def _trust(path: Path, data_dir: Path) -> None:
    """What ``jupyter trust`` does, in this process: sign the notebook in the server's signature store."""
    import nbformat
    from nbformat.sign import NotebookNotary

    notary = NotebookNotary(data_dir=str(data_dir))
    try:
        notary.sign(nbformat.read(path, as_version=4))
    finally:
        notary.store.close()


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """JupyterLab and Voila, started together (their start-ups overlap); stopped after the module."""
    tmp = tmp_path_factory.mktemp("servers")
    copies = {
        EXPLORER: NOTEBOOK,
        TRUSTED: _distinct_copy(tmp),
        **{f"{EVERY}/{p.name}": p for p in [*(_with_this_python(p, tmp) for p in NOTEBOOKS), _stale_kernelspec(tmp)]},
    }
    (tmp / "lab").mkdir()
    (tmp / "voila").mkdir()
    lab = LabServer(tmp / "lab", copies)
    try:
        voila = VoilaServer(tmp / "voila")
    except BaseException:
        lab.stop()
        raise
    try:
        _trust(lab.notebooks / TRUSTED, lab.dirs["data"])
        yield Servers(lab, voila)
    finally:
        voila.proc.terminate()  # both shut down at once: Voila on SIGTERM while JupyterLab is asked to
        try:
            lab.stop()
        finally:
            voila.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _browse(tmp_path, browser, server, visit) -> dict[str, float]:
    """Run ``visit(page)`` in a fresh browser context; on failure print the server log and keep a screenshot."""
    started = time.monotonic()
    context = page = None
    try:
        server.wait_ready()
        context = browser.new_context(viewport={"width": 1400, "height": 1100})
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.route("**/*", only_localhost)
        times = visit(page)
    except BaseException:
        if page is not None:
            shot = tmp_path / "failure.png"
            try:
                page.screenshot(path=str(shot), full_page=True)
                print(f"screenshot: {shot}")
            except Exception as exc:  # noqa: BLE001 -- keep the original failure
                print(f"no screenshot: {exc}")
        print(f"server log: {server.log_path}\n" + server.log_tail())
        raise
    finally:
        if context is not None:
            context.close()
        if isinstance(server, LabServer) and server.proc.poll() is None:
            server.end_sessions()  # the next test starts with no kernel of this one running
    times["total"] = time.monotonic() - started
    print(f"{server.name}: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))
    return times


#: notebooks opened together (each starts its kernel); all fifteen at once once left a kernel short of ready after
#: 120 s on a loaded host
KERNELS_AT_ONCE = 4


# open the given notebooks at once (each starts its kernel) and report whether JupyterLab changed it
OPEN_AND_CHECK = """async paths => Promise.all(paths.map(async path => {
    const app = window.jupyterapp;
    const widget = await app.commands.execute('docmanager:open', {path});
    await widget.context.ready;
    await widget.sessionContext.ready;
    const kernel = widget.sessionContext.session.kernel;
    const deadline = Date.now() + 120000;
    while (kernel.status !== 'idle' && Date.now() < deadline) await new Promise(r => setTimeout(r, 100));
    const cameUp = kernel.status === 'idle';
    await new Promise(r => setTimeout(r, 1000));  // JupyterLab writes the kernel's spec right after it is ready
    const dirty = widget.context.model.dirty;
    await widget.sessionContext.shutdown();
    widget.context.model.dirty = false;  // close without the "save your changes?" dialog
    widget.dispose();
    return {path, dirty, cameUp};
}))"""


def test_every_notebook_opens_unmodified_in_jupyterlab(tmp_path, servers, browser):
    """Open each notebook and start its kernel, as a learner does (a few at a time): JupyterLab must not change it.

    A copy of one notebook with the old display name "Python 3" is opened too and must come out changed,
    which shows the check can fail.
    """
    names = [p.name for p in NOTEBOOKS] + ["stale-kernelspec.ipynb"]

    def visit(page):
        page.goto(f"{servers.lab.base}/lab/workspaces/every?token={servers.lab.token}")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands.hasCommand('docmanager:open')")
        paths = [f"{EVERY}/{name}" for name in names]
        results = []
        for start in range(0, len(paths), KERNELS_AT_ONCE):  # a few kernels at a time: a loaded 2-core host keeps up
            results += page.evaluate(OPEN_AND_CHECK, paths[start : start + KERNELS_AT_ONCE])
        assert all(r["cameUp"] for r in results), results  # every kernel was ready (idle) within the wait
        changed = {r["path"].split("/", 1)[1]: r["dirty"] for r in results}
        assert changed.pop("stale-kernelspec.ipynb") is True, "the check missed JupyterLab rewriting a stale kernelspec"
        assert not any(changed.values()), [name for name, dirty in changed.items() if dirty]
        return {}

    _browse(tmp_path, browser, servers.lab, visit)


def test_a_trusted_notebook_reopened_says_to_run_the_cell(tmp_path, servers, browser):
    """A trusted notebook shows the saved widget state (no kernel behind it): a note says to run the cell."""

    def visit(page):
        page.goto(servers.lab.notebook_url(TRUSTED, workspace="trusted"))
        page.get_by_text(re.compile(r"\| Idle$")).first.wait_for(timeout=90_000)
        note = page.locator(".tmem-explorer-offline")
        note.wait_for(state="visible", timeout=30_000)
        assert "run this cell" in note.inner_text()
        assert page.locator('.jp-OutputArea-output[data-mime-type="image/png"]').count() == 0  # the widget view
        return {}

    _browse(tmp_path, browser, servers.lab, visit)


def test_explorer_in_jupyterlab(tmp_path, servers, browser):
    def visit(page):
        page.goto(servers.lab.notebook_url(EXPLORER, workspace="explorer"))
        # the toolbar says "idle" before a kernel exists: wait for the status bar's "<kernel> | Idle"
        page.get_by_text(re.compile(r"\| Idle$")).first.wait_for(timeout=90_000)
        # before the cells run (an untrusted notebook): the stored static picture, not a raw repr
        picture = page.locator('.jp-OutputArea-output[data-mime-type="image/png"] img')
        picture.first.wait_for(timeout=30_000)
        assert picture.first.evaluate("i => i.complete && i.naturalWidth > 0")
        assert "VBox(children" not in page.locator(".jp-Notebook").inner_text()
        assert page.locator(PLOT).count() == 0

        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        run = time.monotonic()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        page.wait_for_function(PLOTS_LOADED, arg=PLOT, timeout=90_000)
        to_plots = time.monotonic() - run
        _use_the_explorer(page)
        _every_control_answers(page)
        return {"run to plots": to_plots}

    _browse(tmp_path, browser, servers.lab, visit)


def test_explorer_as_a_voila_app(tmp_path, servers, browser):
    def visit(page):
        opened = time.monotonic()
        page.goto(servers.voila.app_url(), wait_until="commit")
        first_response = time.monotonic() - opened
        page.wait_for_function(PLOTS_LOADED, arg=PLOT, timeout=90_000)
        to_plots = time.monotonic() - opened
        # an app: the notebook's prose and the explorer, no code cells, no stored picture
        body = page.locator("body").inner_text()
        assert "The TMEM layout explorer" in body and "from gluon_overlap.explorer import" not in body
        assert page.locator('.jp-OutputArea-output[data-mime-type="image/png"]').count() == 0
        _use_the_explorer(page)
        _every_control_answers(page)
        return {"first response": first_response, "open to plots": to_plots}

    _browse(tmp_path, browser, servers.voila, visit)


#: what a learner's window may be: narrow, usual, wide
WIDTHS = (900, 1200, 1600)

FITS = """() => {
  const vw = document.documentElement.clientWidth, out = [];
  const clipped = el => { const r = el.getBoundingClientRect();
    if (r.width === 0) return null;
    if (r.left < -0.5 || r.right > vw + 0.5) return `reaches ${Math.round(r.left)}..${Math.round(r.right)} of ${vw}`;
    for (let a = el.parentElement; a; a = a.parentElement) {
      const st = getComputedStyle(a);
      if (st.overflowX !== 'visible' || st.overflowY !== 'visible') { const b = a.getBoundingClientRect();
        // across: nothing may stick out of a box that clips or scrolls (down the page is what scrolling is for)
        if (r.left < b.left - 0.5 || r.right > b.right + 0.5) return `cut by ${a.className || a.tagName}`; } }
    return null; };
  for (const img of document.querySelectorAll('img.tmem-explorer-plot')) {
    const why = clipped(img); if (why) out.push(`plot ${why}`);
    if (img.naturalWidth < 1.9 * img.getBoundingClientRect().width) out.push('plot shown larger than drawn'); }
  const texts = document.querySelectorAll(
    '.tmem-explorer .widget-label, .tmem-explorer-label, .tmem-explorer button, .tmem-explorer select, ' +
    '.tmem-explorer-note, .tmem-explorer .widget-readout');
  for (const el of texts) {
    if (el.offsetParent === null) continue;
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible')
      out.push(`text cut: ${(el.innerText || el.value || '').slice(0, 40)}`);
    const why = clipped(el); if (why) out.push(`text ${(el.innerText || '').slice(0, 30)} ${why}`); }
  return out; }"""


def test_explorer_fits_narrow_and_wide_windows_in_voila(tmp_path, servers, browser):
    """At 900, 1,200 and 1,600 px no plot, label, menu or legend is cut: the plots scale down to the page (their
    legends and labels lie inside each figure: tests/notebooks/test_explorer_layout.py measures them in matplotlib), and
    every control's text shows whole. Opened at 900 px, then widened (the layout is CSS alone, so each width is laid
    out as a page opened at it). Fails on a clipped or covered element, naming it."""

    def visit(page):
        found = {}
        page.set_viewport_size({"width": WIDTHS[0], "height": 1100})
        page.goto(servers.voila.app_url(), wait_until="commit")
        page.wait_for_function(PLOTS_LOADED, arg=PLOT, timeout=90_000)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 1100})
            page.wait_for_function(
                "w => document.documentElement.clientWidth <= w && window.innerWidth === w", arg=width
            )
            page.wait_for_timeout(300)  # the layout settles after the images load or the window changes
            problems = page.evaluate(FITS)
            if problems:
                page.screenshot(path=str(tmp_path / f"voila-{width}.png"), full_page=True)
            found[width] = problems
        assert found == {width: [] for width in WIDTHS}, found
        return {}

    _browse(tmp_path, browser, servers.voila, visit)


#: after a change, the wait for its pictures ends once none came for this long (a change's pictures arrive within
#: ~0.1 s of each other; the benchmark waits its whole --settle instead); a change that brings no picture within
#: _explorer_latency.SETTLE_S is missing, as before
QUIET_S = 0.3
#: changes per control (the benchmark makes more; every format pair of the cycle is picked whatever the number)
ROUNDS = 2


def _every_control_answers(page) -> None:
    """Each control, changed as a learner does (dropdowns picked by their plain labels), brings its new picture
    (or the refusal box); the click-to-picture times are printed (benchmarks/explorer_latency.py records them)."""
    page.locator(".tmem-explorer").scroll_into_view_if_needed()
    page.wait_for_timeout(1000)  # the worker draws the likely next pictures while the learner looks
    timings = latency.summary(latency.run(page, rounds=ROUNDS, quiet=QUIET_S))
    for name, row in timings.items():
        print(f"  {name:<30} median {row['median_ms']:7.1f} ms  worst {row['worst_ms']:7.1f} ms  (n={row['n']})")
    missing = {name: row["missing"] for name, row in timings.items() if row["missing"]}
    assert missing == {}, f"controls whose change brought no picture: {missing}"
    _assert_no_error_shown(page)
