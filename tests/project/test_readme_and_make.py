"""The README's pictures are committed, and its make commands do what it says (read with `make -n`)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_pictures_are_committed_pngs():
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert {"docs/images/explorer.png", "docs/images/tmem-plan.png"} <= set(pictures)
    for rel in pictures:
        with Image.open(REPO / rel) as image:
            assert image.format == "PNG" and image.width >= 600, rel


def test_readme_names_the_commands_and_the_troubleshooting_cases():
    for needle in (
        "make lab",
        "make explorer",
        "make test",
        "LAB_ARGS",
        "voila notebooks/explorer.ipynb",
        "Read it on GitHub without installing",
        "Who it is for",
        "No GPU",
        "Hopper",
        "macOS or Windows",
        "proxied package index",
    ):
        assert needle in README, needle


def _dry_run(*args: str) -> list[list[str]]:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = subprocess.run(["make", "-n", "-s", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [shlex.split(line) for line in out.splitlines() if line.strip()]


def test_make_lab_opens_at_the_repository_root_and_passes_arguments_through():
    commands = [
        c for c in _dry_run("lab", "LAB_ARGS=--no-browser --ip 0.0.0.0 --port 8888") if c and c[0].endswith("/jupyter")
    ]
    assert len(commands) == 1
    lab = commands[0]
    assert lab[1] == "lab" and f"--ServerApp.root_dir={REPO}" in lab
    assert (REPO / "notebooks").is_dir() and (REPO / "docs").is_dir()  # both under the root it opens
    assert lab[-5:] == ["--no-browser", "--ip", "0.0.0.0", "--port", "8888"]


def test_make_explorer_serves_the_explorer_notebook_with_voila():
    commands = [
        c for c in _dry_run("explorer", "EXPLORER_ARGS=--no-browser --port=8899") if c and c[0].endswith("/voila")
    ]
    from _jupyter_servers import VOILA_FLAGS  # the browser tests serve the explorer as make explorer does

    assert commands == [
        [commands[0][0], str(REPO / "notebooks" / "explorer.ipynb"), *VOILA_FLAGS, "--no-browser", "--port=8899"]
    ]


def test_setup_leaves_no_metadata_folder_and_silences_only_known_notices():
    """``make setup`` removes pip's leftover ``gluon_overlap.egg-info`` (JupyterLab's file browser showed it at
    the top level); the only warnings silenced are setuptools' editable-install notice and jupyter_server's
    ServerApp.token deprecation, which JupyterLab's own notebook_shim triggers."""
    setup = (REPO / "scripts" / "setup_env.sh").read_text()
    assert "rm -rf gluon_overlap.egg-info" in setup
    assert 'PYTHONWARNINGS="ignore:Editable installation"' in setup
    make = (REPO / "Makefile").read_text()
    assert "export PYTHONWARNINGS ?= ignore:ServerApp.token config is deprecated" in make
    assert "ServerApp.token=" not in make + setup  # the token, where one is set, is IdentityProvider.token


def test_jupyterlab_never_opens_with_the_news_pop_up():
    """The set-up answers JupyterLab's "fetch the news?" question for its environment, so the pop-up does not
    cover the explorer on first open (a JupyterLab settings override, read from sys.prefix)."""
    import json
    import sys

    if not (Path(sys.prefix) / ".gluon-overlap-installed").exists():
        pytest.skip("not the environment scripts/setup_env.sh made")
    overrides = json.loads((Path(sys.prefix) / "share/jupyter/lab/settings/overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification["fetchNews"] == "false" and notification["checkForUpdates"] is False
