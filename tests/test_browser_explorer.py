"""Level-2 test of the explorer: a real JupyterLab in a real headless Chromium.

A fresh JupyterLab server (isolated config, runtime, workspaces and settings in ``tmp_path``) serves a
copy of ``notebooks/explorer.ipynb``; Debian's Chromium, driven by Playwright, opens it, runs all
cells, waits for the plots, moves the step slider, toggles overlap and picks an invalid format pair.
On failure the server log and a full-page screenshot are kept in ``tmp_path`` (the paths are printed).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "explorer.ipynb"
PLOT = "img.tmem-explorer-plot"

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing: install Debian's Chromium with `sudo apt-get install chromium` "
                "(Playwright drives it through executable_path; `playwright install` is not used)",
                allow_module_level=True)

from playwright.sync_api import sync_playwright  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """A JupyterLab server of its own: port, token and every Jupyter/IPython/matplotlib folder under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.log_path = root / "jupyterlab.log"
        self.notebooks = root / "notebooks"
        self.notebooks.mkdir()
        shutil.copy(NOTEBOOK, self.notebooks / NOTEBOOK.name)
        dirs = {name: root / name for name in ("config", "data", "runtime", "ipython", "mpl", "tmp", "workspaces",
                                               "settings")}
        for d in dirs.values():
            d.mkdir()
        # no "Jupyter news" / update toasts
        notify = dirs["settings"] / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        notify.parent.mkdir(parents=True)
        notify.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        env = dict(os.environ)
        env.update(JUPYTER_CONFIG_DIR=str(dirs["config"]), JUPYTER_DATA_DIR=str(dirs["data"]),
                   JUPYTER_RUNTIME_DIR=str(dirs["runtime"]), IPYTHONDIR=str(dirs["ipython"]),
                   MPLCONFIGDIR=str(dirs["mpl"]), TMPDIR=str(dirs["tmp"]), TRITON_DEFAULT_FP_FUSION="1",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
        # the venv's share/jupyter (widget extension, python3 kernel) stays on the path through sys.prefix
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
               "--ServerApp.port_retries=0", "--ServerApp.allow_root=True", f"--IdentityProvider.token={self.token}",
               f"--ServerApp.root_dir={self.notebooks}", f"--LabApp.workspaces_dir={dirs['workspaces']}",
               f"--LabApp.user_settings_dir={dirs['settings']}"]
        self._log = open(self.log_path, "w")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(cmd, cwd=self.notebooks, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}; log: {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"JupyterLab did not answer within {timeout} s; log: {self.log_path}")

    def stop(self) -> None:
        try:
            req = urllib.request.Request(f"{self.base}/api/shutdown?token={self.token}", method="POST")
            urllib.request.urlopen(req, timeout=5).close()
            self.proc.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        finally:
            self._log.close()


def _only_localhost(route) -> None:
    if urlparse(route.request.url).hostname == "127.0.0.1":
        route.continue_()
    else:
        route.abort()


def _image_sources(page) -> list[str]:
    return page.eval_on_selector_all(PLOT, "els => els.map(e => e.getAttribute('src') || '')")


def _wait_redrawn(page, index: int, old_src: str, timeout: float = 30_000) -> None:
    """Wait until plot ``index`` shows a new image that has loaded."""
    page.wait_for_function(
        """([sel, i, old]) => { const img = document.querySelectorAll(sel)[i];
             return img && img.getAttribute('src') && img.getAttribute('src') !== old
                    && img.complete && img.naturalWidth > 0; }""",
        arg=[PLOT, index, old_src], timeout=timeout)


def _assert_no_error_shown(page) -> None:
    assert page.locator(".tmem-explorer-error").count() == 0 or not page.locator(".tmem-explorer-error").is_visible()
    stderr = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
    assert stderr.count() == 0, stderr.all_inner_texts()
    assert "Traceback" not in page.locator(".jp-Notebook").inner_text()


def test_explorer_in_jupyterlab(tmp_path):
    server = LabServer(tmp_path)
    started = time.monotonic()
    page = None
    try:
        server.wait_ready()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1100})
                page.set_default_timeout(60_000)
                page.route("**/*", _only_localhost)
                page.goto(f"{server.base}/lab/tree/{NOTEBOOK.name}?token={server.token}")
                # the toolbar says "idle" before a kernel exists: wait for the status bar's "<kernel> | Idle"
                page.get_by_text(re.compile(r"\| Idle$")).first.wait_for(timeout=90_000)
                page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
                page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
                page.wait_for_function(
                    """sel => { const imgs = document.querySelectorAll(sel);
                         return imgs.length === 3 && [...imgs].every(i => i.complete && i.naturalWidth > 0); }""",
                    arg=PLOT, timeout=90_000)
                _assert_no_error_shown(page)
                explorer = page.locator(".tmem-explorer")
                explorer.scroll_into_view_if_needed()
                before = explorer.screenshot()

                # one key press on the step slider = one redraw of the ping-pong plot
                src = _image_sources(page)
                handle = page.locator(".tmem-explorer .widget-slider .noUi-handle").first
                handle.click()
                assert float(handle.get_attribute("aria-valuenow")) == 0
                for _ in range(3):
                    old = _image_sources(page)[1]
                    handle.press("ArrowRight")
                    _wait_redrawn(page, 1, old)
                assert float(handle.get_attribute("aria-valuenow")) == 3
                after_step = explorer.screenshot()
                assert after_step != before
                assert _image_sources(page)[0] == src[0]  # the ruler did not change

                # overlap off: the ruler changes
                old = _image_sources(page)[0]
                page.locator(".tmem-explorer .widget-checkbox input[type=checkbox]").click()
                _wait_redrawn(page, 0, old)
                assert explorer.screenshot() != after_step
                _assert_no_error_shown(page)

                # an invalid pair shows the plan's message in the error box, not a traceback
                page.locator(".tmem-explorer .widget-dropdown select").nth(1).select_option(label="mxfp8")
                box = page.locator(".tmem-explorer-error")
                box.wait_for(state="visible", timeout=30_000)
                assert "different scale-block sizes" in box.inner_text()
                assert "Traceback" not in page.locator(".jp-Notebook").inner_text()
            except BaseException:
                if page is not None:
                    shot = tmp_path / "failure.png"
                    try:
                        page.screenshot(path=str(shot), full_page=True)
                        print(f"screenshot: {shot}")
                    except Exception as exc:  # noqa: BLE001 -- keep the original failure
                        print(f"no screenshot: {exc}")
                raise
            finally:
                browser.close()
    except BaseException:
        print(f"server log: {server.log_path}\n" + server.log_path.read_text()[-4000:])
        raise
    finally:
        server.stop()
    print(f"browser test took {time.monotonic() - started:.1f} s")
