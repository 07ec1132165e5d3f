"""docs/GLUON_API.md, rendered from the registry of builtins: what the interpreter implements, and what not.

:func:`api_table` lists one row per registered builtin (its Gluon name, the operation it emits, its data
effect, its cost kind) and, per namespace, the builtins Triton's Gluon modules export that have no row
(:func:`not_implemented`).  Importing this module imports the modules that register builtins.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from triton.runtime.jit import JITFunction

import gluon_overlap.interp.rebind  # noqa: F401  (imports every module that registers builtins)
from gluon_overlap.interp.registry import NAMESPACES, REGISTRY, namespace

#: the Gluon class whose builtin methods each value namespace implements
_VALUE_CLASSES = {
    "tensor": ("triton.experimental.gluon.language", "tensor"),
    "smem": ("triton.experimental.gluon.language", "shared_memory_descriptor"),
    "tmem": ("triton.experimental.gluon.language.nvidia.blackwell", "tensor_memory_descriptor"),
}


def _is_gluon_builtin(v: Any) -> bool:
    return (callable(v) and getattr(v, "__triton_builtin__", False) and not isinstance(v, type)) or isinstance(
        v, JITFunction
    )


def _gluon_builtin_names(ns: str) -> list[str]:
    """The builtins (``@builtin`` and library ``@jit`` functions, or a class's builtin methods) Triton's
    Gluon exports for namespace ``ns``."""
    if ns in _VALUE_CLASSES:
        module, cls_name = _VALUE_CLASSES[ns]
        cls = getattr(importlib.import_module(module), cls_name)
        return sorted(n for n in dir(cls) if not n.startswith("_") and _is_gluon_builtin(getattr(cls, n, None)))
    mod = importlib.import_module(NAMESPACES[ns])
    names = set(getattr(mod, "__all__", ())) | {n for n in dir(mod) if not n.startswith("_")}
    return sorted(n for n in names if _is_gluon_builtin(getattr(mod, n, None)))


def not_implemented() -> dict[str, list[str]]:
    """Per namespace, the Gluon builtins Triton 3.9 exports that have no row (a kernel that calls one stops
    with an error naming the builtin and the kernel line)."""
    out = {}
    for ns in NAMESPACES:
        if ns == "barriers":
            continue
        have = set(namespace(ns))
        out[ns] = [n for n in _gluon_builtin_names(ns) if n not in have]
    return out


#: the executor's comparison with the H200 recording (``python -m gluon_overlap.regenerate silicon``)
SILICON_SUMMARY = Path(__file__).resolve().parents[2] / "data" / "silicon" / "executor.json"

#: the operations that exist only on Blackwell (sm_100a): an H200 (sm_90a) cannot run them
BLACKWELL_ONLY = (
    "`tcgen05_mma`",
    "`tcgen05_mma_scaled`",
    "`tcgen05_copy`",
    "`tcgen05_commit`",
    "tensor memory (`allocate_tensor_memory`, TMEM loads and stores)",
    "2-CTA MMA clusters",
)


def _cell(text: Any) -> str:
    """Text for a markdown table cell (a ``|`` would end the cell)."""
    return str(text).replace("|", "\\|")


def silicon_section(summary: dict[str, Any] | None) -> list[str]:
    """The docs' table of how the executor agrees with real silicon, per category and per approximate op."""
    if summary is None:
        return []
    rec = summary.get("recording", {})
    lines = [
        "## Checked against silicon",
        "",
        f"The differential suite `tests/interp/silicon/` ({summary['cases']} cases) ran on an "
        f"{rec.get('gpu')} (compute capability {rec.get('compute_capability')}, Triton {rec.get('triton')}, "
        f"driver {rec.get('driver')}, {rec.get('date_utc')}); `data/silicon/h200.json` holds what it computed "
        "and `tests/interp/test_silicon.py` compares the executor with it in CI. Exact operations must match "
        "bit for bit (NaN bit patterns too: the GPU's canonical NaNs), approximate ones must stay within the "
        "bound PTX states for the instruction Triton compiles them to, a planted race must be reported and a "
        "faulting kernel must stop. Written by `python -m gluon_overlap.regenerate silicon`: "
        f"**{summary['passed']} of {summary['cases']} cases agree**.",
        "",
        "| category | agree | what the cases exercise | not yet |",
        "|---|---|---|---|",
    ]
    for c in summary["categories"]:
        failing = ", ".join(f"`{f}`" for f in c["failing"]) or "-"
        lines.append(f"| {c['category']} | {c['passed']}/{c['cases']} | {_cell(c['checks'])} | {failing} |")
    lines += [
        "",
        "Approximate operations (float32): the executor computes the float64 function at the input the "
        "instruction sees (flushed where the instruction has `.ftz`) and rounds it once, which is within "
        "the stated bound; the bound is checked on the GPU's own values too.",
        "",
        "| op | compiled to (sm_90a and sm_100a) | bound | source | executor | max ulp to the GPU |",
        "|---|---|---|---|---|---|",
    ]
    for a in summary["approx"]:
        ulp = "-" if a["max_ulp_to_gpu"] is None else f"{a['max_ulp_to_gpu']:.0f}"
        lines.append(
            f"| `{a['op']}` | `{_cell(a['compiled_to'])}` | {_cell(a['bound'])} | {_cell(a['source'])} | "
            f"{a['verdict']} | {ulp} |"
        )
    lines += [
        "",
        "**What this cannot check**: only what Hopper and Blackwell share runs on an H200. The "
        "Blackwell-only operations -- " + ", ".join(BLACKWELL_ONLY) + " -- do not exist on Hopper, so no "
        "silicon recording checks them: their semantics here rest on the PTX ISA, Triton's lowering, the "
        "compiled sm_100a artifacts and the float64 reference of the project's own tests.",
        "",
    ]
    return lines


def _load_summary() -> dict[str, Any] | None:
    try:
        return json.loads(SILICON_SUMMARY.read_text())
    except (OSError, ValueError):
        return None


def api_table(summary: dict[str, Any] | None = None) -> str:
    """docs/GLUON_API.md: the builtins implemented (one row each), the ones left out and (with the summary of
    ``data/silicon/executor.json``) the comparison with silicon."""
    lines = [
        "# The Gluon API the CPU executor implements",
        "",
        "Generated from the registry (`gluon_overlap/interp/registry.py`) by "
        "`python -m gluon_overlap.regenerate gluon-api`; a test checks this file equals the generated text.",
        "",
        "Each row is one builtin: the engine operation it emits (none: it runs inside the calling partition), "
        "what the data backend does with it, and the cost kind the timing model prices.",
        "",
    ]
    for ns, module in NAMESPACES.items():
        rows = sorted((b for b in REGISTRY.values() if b.namespace == ns), key=lambda b: b.name)
        if not rows:
            continue
        lines += [
            f"## `{ns}` ({module})",
            "",
            "| builtin | emits | data effect | cost kind | leaves out |",
            "|---|---|---|---|---|",
        ]
        for b in rows:
            emits = b.op.__name__ if b.op is not None else "-"
            lines.append(f"| `{b.name}` | {emits} | {_cell(b.effect or '-')} | {b.cost} | {_cell(b.note or '-')} |")
        lines.append("")
    lines += [
        "## Not implemented",
        "",
        "Builtins Triton 3.9's Gluon modules export that have no row: a kernel that calls one stops with "
        "`ExecutorError: <module>.<name> is not implemented by the CPU executor (at <file>:<line> ...)`.",
        "",
    ]
    for ns, names in not_implemented().items():
        lines.append(f"- `{ns}`: " + (", ".join(f"`{n}`" for n in names) if names else "(none)"))
    lines.append("")
    lines += silicon_section(summary if summary is not None else _load_summary())
    return "\n".join(lines)
