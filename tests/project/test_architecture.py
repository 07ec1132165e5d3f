"""The house drawn from its imports: no import circle, packages that depend one way, none holding too much.

Every import counts, those inside functions too: a lazy import does not remove a circle.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping, Set
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "gluon_overlap"

#: what each package may import from the project (besides itself); the ground floor is everything not listed here
ALLOWED = {
    "gpu": set(),
    "interp": {"gpu", "compiler", "registry", "text"},
    "compiler": {"kernel", "formats", "limits", "registry", "swizzle", "tmem", "text", "store", "device", "interrupts"},
    "emulate": {
        "interp",
        "gpu",
        "compiler",
        "kernel",
        "formats",
        "limits",
        "registry",
        "swizzle",
        "tmem",
        "text",
        "store",
        "device",
        "pingpong",
    },
    "timing": {
        "interp",
        "gpu",
        "emulate",
        "compiler",
        "hardware",
        "kernel",
        "formats",
        "limits",
        "registry",
        "swizzle",
        "tmem",
        "text",
        "store",
        "device",
    },
}
#: the largest share of the package's lines one package may hold
MAX_SHARE = 0.25


def _modules() -> dict[str, Path]:
    return {
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
        for p in PACKAGE.rglob("*.py")
    }


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports, anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            # ``from pkg import sub`` reads ``pkg``'s namespace too (and runs its __init__): an edge to both
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        found |= {n for n in names if n in modules and n != name}
    return found


@functools.cache
def _graph() -> dict[str, frozenset[str]]:
    """The package's import graph, parsed once per test process (0.9 s; the tests only read it)."""
    modules = _modules()
    return {name: frozenset(_imports(name, path, modules)) for name, path in modules.items()}


def _circles(graph: Mapping[str, Set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def _top(module: str) -> str:
    """The package (or ground-floor module) a module belongs to: ``interp``, ``timing``, ``kernel``, ..."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "gluon_overlap"


def test_no_import_circle():
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_package_circle():
    """Packages depend one way too: collapsing modules to their package leaves no circle."""
    graph: dict[str, set[str]] = {}
    for module, imported in _graph().items():
        graph.setdefault(_top(module), set()).update(_top(m) for m in imported if _top(m) != _top(module))
    for names in list(graph.values()):
        for name in names:
            graph.setdefault(name, set())
    assert _circles(graph) == []


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_imports_only_what_it_stands_on(package):
    """The interpreter knows nothing of this kernel; the timing model reads compiled evidence through data, not by
    compiling; the kernel harness does not reach up into the model.  (The root package's __init__, which every
    ``from gluon_overlap import x`` reads, imports nothing of ours; the circle test covers it.)"""
    wrong = {
        f"{m} -> {i}"
        for m, imported in _graph().items()
        if _top(m) == package
        for i in imported
        if _top(i) not in (package, "gluon_overlap") and _top(i) not in ALLOWED[package]
    }
    assert not wrong, sorted(wrong)


def test_the_timing_model_does_not_compile():
    imported = {i for m, found in _graph().items() if _top(m) == "timing" for i in found}
    assert "gluon_overlap.compiler.compile" not in imported


def test_no_package_holds_more_than_a_quarter_of_the_lines():
    lines: dict[str, int] = {}
    for module, path in _modules().items():
        lines[_top(module)] = lines.get(_top(module), 0) + len(path.read_text().splitlines())
    total = sum(lines.values())
    shares = {name: count / total for name, count in lines.items()}
    assert max(shares.values()) <= MAX_SHARE, {k: round(v, 3) for k, v in sorted(shares.items())}


def test_the_twin_is_gone():
    assert not (PACKAGE / "twin").exists()
