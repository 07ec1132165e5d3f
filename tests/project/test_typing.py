"""The package type-checks: mypy with pyproject.toml's ``[tool.mypy]`` finds no error, and the modules whose Gluon
device code those settings leave unannotated still annotate every public host-side function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gluon_overlap"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")


def test_mypy_finds_no_error():
    # the files, the settings and the cache folder (.cache/mypy: a second run takes seconds) come from pyproject.toml
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"mypy (exit {done.returncode}):\n{done.stdout}{done.stderr}"
    assert "Success: no issues found" in done.stdout


# --- the modules of Gluon device code -------------------------------------------------------------------------------
#: the writing exercises' answers: a learner's answer files (Gluon, host code written as a learner would), read by the
#: exercises as text; not the package's API
ANSWERS = "gluon_overlap.exercises.answers"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def relaxed_modules() -> list[Path]:
    """The package's modules for which pyproject.toml turns ``disallow_untyped_defs`` off."""
    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"].get("overrides", [])
    patterns = [
        m
        for o in overrides
        if o.get("disallow_untyped_defs") is False
        for m in ([o["module"]] if isinstance(o["module"], str) else o["module"])
    ]
    return sorted(p for p in PACKAGE.rglob("*.py") if any(_matches(_module_name(p), pat) for pat in patterns))


def _matches(module: str, pattern: str) -> bool:
    """mypy's rule: ``a.b.*`` names ``a.b`` and every module below it; other patterns name one module."""
    if pattern.endswith(".*"):
        return module == pattern[:-2] or module.startswith(pattern[:-1])
    return module == pattern


def _is_gluon(decorator: ast.expr) -> bool:
    """``@gluon.jit``, ``@gluon.aggregate``, ``@gluon.constexpr_function``, ``@gluon.must_use_result``, ..."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target).startswith("gluon.")


def unannotated_public_functions(source: str) -> list[str]:
    """The public (no leading underscore) host-side functions and methods of ``source`` that lack an annotation of
    a parameter (``self`` / ``cls`` aside) or of the return; Gluon functions and aggregates are not host-side."""
    found = []

    def check(fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: str, method: bool) -> None:
        if fn.name.startswith("_") or any(_is_gluon(d) for d in fn.decorator_list):
            return
        args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs, fn.args.vararg, fn.args.kwarg]
        args = [a for a in args if a is not None]
        if (
            method
            and args
            and args[0].arg in ("self", "cls")
            and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
        ):
            args = args[1:]
        missing = [a.arg for a in args if a.annotation is None] + (["return"] if fn.returns is None else [])
        if missing:
            found.append(f"{owner}{fn.name} (line {fn.lineno}): no annotation of {', '.join(missing)}")

    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            check(node, "", method=False)
        elif (
            isinstance(node, ast.ClassDef)
            and not node.name.startswith("_")
            and not any(_is_gluon(d) for d in node.decorator_list)
        ):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    check(item, f"{node.name}.", method=True)
    return found


def test_the_relaxed_modules_are_those_of_gluon_device_code():
    relaxed = relaxed_modules()
    assert {_module_name(p) for p in relaxed} >= {"gluon_overlap.kernel", ANSWERS}
    for path in relaxed:
        if _module_name(path).startswith(ANSWERS):
            continue
        defs = [
            n
            for n in ast.parse(path.read_text()).body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
        assert any(_is_gluon(d) for n in defs for d in n.decorator_list), (
            f"{_module_name(path)} has no Gluon function, yet mypy lets it go unannotated"
        )


def test_public_host_functions_of_the_kernel_modules_are_annotated():
    missing = {
        _module_name(p): unannotated_public_functions(p.read_text())
        for p in relaxed_modules()
        if not _module_name(p).startswith(ANSWERS)
    }
    assert missing and not {m: fns for m, fns in missing.items() if fns}


def test_the_annotation_check_finds_what_is_missing():
    source = """
@gluon.jit
def kernel(a, B: gl.constexpr):
    pass

@gluon.aggregate
class Ring:
    index: gl.tensor

    @gluon.jit
    def next(self):
        pass

def launch(x, *, grid: int) -> None:
    pass

def _private(x):
    pass

def typed(x: int, *rest: int, **kw: str) -> int:
    return x

class Host:
    def method(self, y):
        pass

    @staticmethod
    def helper(self) -> None:
        pass
"""
    assert unannotated_public_functions(source) == [
        "launch (line 14): no annotation of x",
        "Host.method (line 24): no annotation of y, return",
        "Host.helper (line 28): no annotation of self",
    ]
