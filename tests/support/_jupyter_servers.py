"""Local JupyterLab and Voila servers for the browser tests (and the README pictures script).

Each server gets its own port, token and every Jupyter / IPython / matplotlib folder under ``root``
(nothing of the user's set-up leaks in), serves a copy of ``notebooks/explorer.ipynb``, and logs to
``root/<name>.log``. Chromium is Debian's (``/usr/bin/chromium``), driven by Playwright.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "explorer.ipynb"
CHROMIUM = "/usr/bin/chromium"
#: what ``make explorer`` passes to Voila (the Makefile's VOILA_FLAGS; tests/test_readme_and_make.py keeps them equal)
VOILA_FLAGS = ["--preheat_kernel=True", "--pool_size=1"]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def only_localhost(route) -> None:
    """Playwright route handler: the page may reach the local server only (no CDN, no telemetry)."""
    if urlparse(route.request.url).hostname == "127.0.0.1":
        route.continue_()
    else:
        route.abort()


class _Server:
    name = "server"

    def __init__(self, root: Path, notebooks: list[Path] | dict[str, Path] | None = None) -> None:
        """Serve copies of ``notebooks`` (by default the explorer): a list keeps their names, a mapping
        gives each copy's path relative to the served folder (sub-folders are made)."""
        self.root = root
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.log_path = root / f"{self.name}.log"
        self.notebooks = root / "notebooks"
        self.notebooks.mkdir()
        copies = notebooks if isinstance(notebooks, dict) else {p.name: p for p in notebooks or [NOTEBOOK]}
        for name, path in copies.items():
            (self.notebooks / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, self.notebooks / name)
        self.dirs = {
            name: root / name
            for name in ("config", "data", "runtime", "ipython", "mpl", "tmp", "workspaces", "settings")
        }
        for d in self.dirs.values():
            d.mkdir(exist_ok=True)
        env = dict(os.environ)
        env.update(
            JUPYTER_CONFIG_DIR=str(self.dirs["config"]),
            JUPYTER_DATA_DIR=str(self.dirs["data"]),
            JUPYTER_RUNTIME_DIR=str(self.dirs["runtime"]),
            IPYTHONDIR=str(self.dirs["ipython"]),
            MPLCONFIGDIR=str(self.dirs["mpl"]),
            TMPDIR=str(self.dirs["tmp"]),
            TRITON_DEFAULT_FP_FUSION="1",
            # JupyterLab's notebook_shim reads ServerApp.token while it starts (as the Makefile says)
            PYTHONWARNINGS="ignore:ServerApp.token config is deprecated",
            PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
        )
        # the venv's share/jupyter (widget extension, python3 kernel, Voila's templates) stays on the
        # path through sys.prefix
        self.env = env
        self._log = open(self.log_path, "w")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(
            self.command(), cwd=self.notebooks, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )

    def command(self) -> list[str]:
        raise NotImplementedError

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _answers(self) -> bool:
        raise NotImplementedError

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; log: {self.log_path}")
            if self._answers():
                return
            time.sleep(0.2)
        raise TimeoutError(f"{self.name} did not answer within {timeout} s; log: {self.log_path}")

    def _terminate(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        try:
            self._terminate()
        finally:
            self._log.close()

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


class LabServer(_Server):
    """JupyterLab serving the notebook folder; open :meth:`notebook_url`."""

    name = "jupyterlab"

    def __init__(self, root: Path, notebooks: list[Path] | dict[str, Path] | None = None) -> None:
        # no "Jupyter news" / update toasts
        notify = root / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        notify.parent.mkdir(parents=True)
        notify.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        super().__init__(root, notebooks)

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.allow_root=True",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.notebooks}",
            f"--LabApp.workspaces_dir={self.dirs['workspaces']}",
            f"--LabApp.user_settings_dir={self.dirs['settings']}",
            "--LabApp.expose_app_in_browser=True",
        ]

    def lab_url(self) -> str:
        return f"{self.base}/lab?token={self.token}"

    def notebook_url(self, name: str = NOTEBOOK.name, workspace: str | None = None) -> str:
        """The notebook opened in JupyterLab; in its own ``workspace`` (layout) if one is named, so that
        visits to one server do not reopen each other's tabs."""
        where = f"/workspaces/{workspace}" if workspace else ""
        return f"{self.base}/lab{where}/tree/{name}?token={self.token}"

    def _api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(f"{self.base}/api/{path}?token={self.token}", method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def end_sessions(self) -> None:
        """Shut down every notebook session (and its kernel) the server has open."""
        for session in self._api("sessions"):
            try:
                self._api(f"sessions/{session['id']}", method="DELETE")
            except urllib.error.HTTPError as exc:
                if exc.code != 404:  # 404: it ended meanwhile (a page's own shutdown still under way)
                    raise

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/api/status?token={self.token}", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        try:
            req = urllib.request.Request(f"{self.base}/api/shutdown?token={self.token}", method="POST")
            urllib.request.urlopen(req, timeout=5).close()
            self.proc.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            self._terminate()
        finally:
            self._log.close()


class VoilaServer(_Server):
    """Voila serving the notebook as an app (what ``make explorer`` runs); open :meth:`app_url`."""

    name = "voila"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "voila",
            str(self.notebooks / NOTEBOOK.name),
            "--no-browser",
            "--Voila.ip=127.0.0.1",
            f"--port={self.port}",
            "--Voila.port_retries=0",
            f"--token={self.token}",
            *VOILA_FLAGS,
        ]

    def app_url(self) -> str:
        return f"{self.base}/?token={self.token}"

    def _answers(self) -> bool:
        # only the port: a GET of the app would execute the notebook
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex(("127.0.0.1", self.port)) == 0
