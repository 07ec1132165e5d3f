"""A plain (non-editable) install works outside the checkout.

The package is built into a wheel from a copy of just what the wheel is made of (``pyproject.toml``,
``README.md``, ``gluon_overlap/``), installed with ``pip install --no-deps --no-index --target`` into a
fresh folder (no network: the dependencies are the ones already installed), and the CPU commands
``plan``, ``model`` and ``emulate`` run from a folder outside the checkout with only that folder on
``PYTHONPATH``. A file the package reads at run time that the wheel lacks (the hardware descriptions,
once outside the package) makes these commands fail.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "gluon_overlap"


def _source_files() -> set[str]:
    """Every file of the package in the checkout (what a wheel must carry), relative to the repo."""
    return {
        p.relative_to(REPO).as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(PACKAGE, src / "gluon_overlap", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = root / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(dist), str(src)],
        check=True,
        cwd=root,
        capture_output=True,
        text=True,
    )
    wheel = next(dist.glob("gluon_overlap-*.whl"))
    target = root / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(wheel)],
        check=True,
        cwd=root,
        capture_output=True,
        text=True,
    )
    elsewhere = root / "elsewhere"  # a working folder with nothing of the checkout in it
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(target), MPLBACKEND="Agg", TRITON_DEFAULT_FP_FUSION="1")
    return {"wheel": wheel, "target": target, "cwd": elsewhere, "env": env}


def _run(installed, *args: str, console_script: bool = False) -> subprocess.CompletedProcess:
    cmd = (
        [str(installed["target"] / "bin" / "gluon-overlap")]
        if console_script
        else [sys.executable, "-m", "gluon_overlap"]
    )
    return subprocess.run(
        [*cmd, *args], cwd=installed["cwd"], env=installed["env"], capture_output=True, text=True, timeout=240
    )


def test_the_wheel_carries_every_file_of_the_package(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    assert _source_files() <= names, sorted(_source_files() - names)
    hardware = {p.relative_to(REPO).as_posix() for p in (PACKAGE / "data" / "hardware").glob("*.json")}
    assert hardware and hardware <= names
    assert all(n.startswith(("gluon_overlap/", "gluon_overlap-")) for n in names), sorted(names)


def test_the_installed_copy_is_the_one_imported(installed):
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gluon_overlap, gluon_overlap.hardware as h; print(gluon_overlap.__file__); print(h.DATA_DIR)",
        ],
        cwd=installed["cwd"],
        env=installed["env"],
        capture_output=True,
        text=True,
        check=True,
    )
    module, data_dir = done.stdout.split()
    target = installed["target"].resolve()
    assert Path(module).resolve().is_relative_to(target) and Path(data_dir).resolve().is_relative_to(target)


def test_plan_runs_from_the_installed_wheel(installed):
    done = _run(installed, "plan", "--a-format", "nvfp4", "--b-format", "nvfp4", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    # the seed's nvfp4 plan: 16 A + 32 B scale columns overlap, the right accumulator starts at 256 - 48
    assert plan["overlap_cols"] == 48 and plan["right_accum_columns"] == [208, 464]
    assert plan["b_scale_columns"] == [480, 512]


SMALL_MODEL = ("--a-format", "nvfp4", "--b-format", "nvfp4", "--m", "2048", "--n", "2048", "--k", "512")


def test_model_runs_from_the_installed_wheel(installed):
    # one small row: what matters here is that the hardware description is read from the installed package
    done = _run(installed, "model", "--gpu", "b200", *SMALL_MODEL, "--json")
    assert done.returncode == 0, done.stderr
    installed_model = json.loads(done.stdout)
    # the same command from the checkout, in this process (the package this test imports is the checkout's)
    from gluon_overlap import cli

    assert Path(cli.__file__).resolve().is_relative_to(REPO.resolve())
    here, said = io.StringIO(), io.StringIO()
    with redirect_stdout(here), redirect_stderr(said):
        code = cli.main(["model", "--gpu", "b200", *SMALL_MODEL, "--json"])
    assert code == 0, said.getvalue()
    assert installed_model == json.loads(here.getvalue())  # the same description, read from the installed package
    assert installed_model["gpu"] == "b200" and installed_model["rows"]


def test_the_console_script_runs_from_the_installed_wheel(installed):
    # the `gluon-overlap` script pip wrote: the same entry point as `python -m gluon_overlap` (whose model run
    # above reads the installed hardware description), so a cheap command shows it works
    table = _run(installed, "plan", "--a-format", "nvfp4", "--b-format", "nvfp4", console_script=True)
    assert table.returncode == 0, table.stderr
    assert "nvfp4 x nvfp4" in table.stdout and re.search(r"^overlap columns\s+48\b", table.stdout, re.M), table.stdout


def test_emulate_runs_from_the_installed_wheel(installed):
    done = _run(
        installed,
        "emulate",
        "--a-format",
        "nvfp4",
        "--b-format",
        "nvfp4",
        "--m",
        "256",
        "--n",
        "256",
        "--k",
        "256",
        "--overlap",
        "on",
        "--clusters",
        "1",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["matches_reference"] is True and result["hazards"] == [] and result["deadlock"] is None
