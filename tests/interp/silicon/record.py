"""Record the silicon suite on a GPU: every case of ``cases.py`` launched with Triton, its outputs' raw bytes
written with how they were measured.

    python tests/interp/silicon/record.py --out data/silicon/h200.json --jobs 12

writes ``{"provenance": {...}, "cases": {name: {...}}}``: per case the outputs (dtype, shape, zlib+base64
bytes), whether a second launch on fresh inputs gave the same bytes, the PTX instructions of interest, the
inputs' SHA-256 (a recording of other inputs is stale), and for a race case the distinct outcomes of its
launches with their counts. ``--device executor`` writes the same file from the CPU executor instead (a dry run
of this script where no GPU is)."""

from __future__ import annotations

import argparse
import ast
import datetime
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/interp: the silicon package

from silicon.cases import CASES  # noqa: E402
from silicon.runner import run_cases  # noqa: E402

ROOT = HERE.parents[2]


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable ({type(exc).__name__})"


def kernels_sha256(text: str | None = None) -> str:
    """The kernels' source as recorded, its module docstring left out (an edit to any code of kernels.py makes the
    recording stale; the docstring is prose about the file)."""
    source = (HERE / "kernels.py").read_text() if text is None else text
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(getattr(first, "value", None), ast.Constant)
        and isinstance(first.value.value, str)
    ):
        lines = source.splitlines(keepends=True)
        source = "".join(lines[: first.lineno - 1] + lines[first.end_lineno :])
    return hashlib.sha256(source.encode()).hexdigest()


def provenance(device: str, argv: list[str]) -> dict[str, Any]:
    import torch
    import triton

    info: dict[str, Any] = {
        "device": device,
        "kernels_sha256": kernels_sha256(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *argv]),
        "TRITON_DEFAULT_FP_FUSION": os.environ.get("TRITON_DEFAULT_FP_FUSION", "(unset: Triton's default, 1)"),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update(
            gpu=torch.cuda.get_device_name(0),
            compute_capability=".".join(map(str, torch.cuda.get_device_capability(0))),
            multiprocessors=props.multi_processor_count,
            cuda_runtime=torch.version.cuda,
            driver=_run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
            nvidia_smi_cuda=next(
                (
                    line.split("CUDA Version:")[1].strip(" |")
                    for line in _run(["nvidia-smi"]).splitlines()
                    if "CUDA Version:" in line
                ),
                "unknown",
            ),
        )
        from triton.backends.nvidia.compiler import get_ptxas

        major, minor = torch.cuda.get_device_capability(0)
        ptxas = get_ptxas(major * 10 + minor)
        info["ptxas"] = f"{ptxas.path}: " + (_run([ptxas.path, "--version"]).splitlines() or ["?"])[-1]
    else:
        from gluon_overlap.interp import launch as executor

        info["executor"] = f"{executor.__name__} ({Path(executor.__file__).resolve().relative_to(ROOT)})"
    return info


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "silicon" / "h200.json")
    parser.add_argument("--device", choices=("cuda", "executor"), default="cuda")
    parser.add_argument("--jobs", type=int, default=8, help="worker processes (each compiles its own cases)")
    parser.add_argument("--cases", default="", help="only cases whose name contains this text")
    parser.add_argument("--case-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("record.py: no CUDA device (use --device executor for a dry run)", file=sys.stderr)
            return 2
    names = [c.name for c in CASES if args.cases in c.name]
    results = run_cases(names, args.device, jobs=args.jobs, case_timeout=args.case_timeout, progress=True)
    by_name = {c.name: c for c in CASES}
    cases = {}
    for name in names:
        c = by_name[name]
        cases[name] = {
            "category": c.category,
            "check": c.check,
            "canon": c.canon,
            "grid": list(c.grid),
            "num_warps": c.num_warps,
            "num_ctas": c.num_ctas,
            "options": dict(c.options),
            "note": c.note,
            **results.get(name, {"crash": "no result"}),
        }
    record = {
        "format": 1,
        "provenance": provenance(
            args.device,
            [str(Path(__file__).relative_to(ROOT) if Path(__file__).is_relative_to(ROOT) else __file__), *argv],
        ),
        "cases": cases,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n")
    tmp.replace(args.out)
    bad = [n for n, r in cases.items() if r.get("error") and args.device == "cuda" or "crash" in r or "timeout" in r]
    print(
        f"{len(cases)} cases -> {args.out} ({args.out.stat().st_size / 1e6:.2f} MB); "
        f"{len(bad)} without a result: {', '.join(bad[:20])}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
