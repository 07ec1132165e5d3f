"""environment.yml and pyproject.toml must name the same packages with the same pins."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = ROOT / "scripts" / "setup_env.sh"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")


def _pins(specs: list[str]) -> dict[str, str]:
    reqs = [Requirement(s) for s in specs]
    return {r.name.lower().replace("_", "-"): str(r.specifier) for r in reqs}


def pyproject_requirements() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return _pins(project["dependencies"] + project["optional-dependencies"]["test"])


def conda_environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def conda_pip_requirements() -> dict[str, str]:
    pip_sections = [d["pip"] for d in conda_environment()["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "environment.yml needs exactly one pip section"
    return _pins([s for s in pip_sections[0] if not s.startswith("-e")])


def test_environment_yml_matches_pyproject():
    assert conda_pip_requirements() == pyproject_requirements()


def test_triton_is_pinned_to_3_9_0():
    assert pyproject_requirements()["triton"] == "==3.9.0"


def test_environment_is_named_and_installs_the_package():
    env = conda_environment()
    assert env["name"] == "gluon-overlap"
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip_section


def test_installed_versions_satisfy_the_pins():
    import torch
    import triton

    reqs = pyproject_requirements()
    assert Version(triton.__version__) in Requirement("triton" + reqs["triton"]).specifier
    assert Version(torch.__version__.split("+")[0]) in Requirement("torch" + reqs["torch"]).specifier


def test_the_setup_script_installs_the_pinned_triton_and_a_torch_the_pins_allow():
    """scripts/setup_env.sh resolves torch together with Triton: its versions must be pyproject.toml's."""
    names = "TRITON_VERSION|TORCH_CPU_VERSION|TORCH_CUDA_VERSION"
    versions = dict(re.findall(rf"^({names})=([\d.]+)", SETUP_SCRIPT.read_text(), re.M))
    reqs = pyproject_requirements()
    assert "==" + versions["TRITON_VERSION"] == reqs["triton"]
    for torch_version in (versions["TORCH_CPU_VERSION"], versions["TORCH_CUDA_VERSION"]):
        assert Version(torch_version) in Requirement("torch" + reqs["torch"]).specifier


def test_the_setup_script_never_installs_a_torch_without_the_triton_beside_it():
    """PyPI's torch==2.13.0 is a CUDA build pinned to Triton 3.7: every install from the default index names
    triton too, so pip refuses a torch whose Triton pin disagrees instead of installing it (docs/NOTES.md)."""
    lines = SETUP_SCRIPT.read_text().splitlines()
    installs = [line for line in lines if '"${PIP[@]}" install' in line and '"torch==' in line]
    from_default_index = [line for line in installs if "--index-url" not in line]
    assert from_default_index, installs
    assert all('"triton==$TRITON_VERSION"' in line for line in from_default_index), from_default_index
