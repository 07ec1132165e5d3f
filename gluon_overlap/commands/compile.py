"""``gluon-overlap compile``: cross-compile one kernel variant for sm_100a and print what it shows."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from gluon_overlap.commands._output import (
    add_format_args,
    add_json_flag,
    emit,
    format_table,
    output_dir,
    resolve_triton_cache,
    size,
)
from gluon_overlap.commands._vocabulary import add_block_k_option, add_overlap_option
from gluon_overlap.text import CLI_WIDTH

#: the keys of ``--json`` the CLI promises (more may follow them): the statistics, then ``matches_plan``
#: (every TMEM check passed), ``checks`` (each check: name, expected, found, ok) and ``not_checked``
#: (what the artifacts cannot show)
JSON_KEYS = (
    "shared_bytes",
    "tmem_cols",
    "num_warps",
    "num_ctas",
    "registers",
    "ptx_counts",
    "mma_kind",
    "tmem_offsets",
)
CHECK_KEYS = ("matches_plan", "checks", "not_checked")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "compile",
        help="cross-compile the Gluon kernel for sm_100a (no GPU needed) and print its statistics",
        description="Compile one variant of the warp-specialized kernel to an sm_100a cubin on any machine, then "
        "report shared memory, TMEM columns, warps, registers, tcgen05/mbarrier instruction counts, the MMA kind "
        "and the TMEM offsets found in the TTGIR next to the plan's. Exit status 1 when a check fails.",
    )
    add_format_args(parser)
    add_overlap_option(parser)
    add_block_k_option(parser, size)
    parser.add_argument(
        "--emit",
        metavar="DIR",
        default=None,
        type=output_dir,
        help="also write the TTGIR, PTX, cubin, SASS and statistics JSON into DIR",
    )
    add_json_flag(parser)
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from gluon_overlap._nanobind import quiet_leak_report_at_exit
    from gluon_overlap.compiler.compile import Variant, compile_variant, write_artifacts
    from gluon_overlap.evidence import NOT_CHECKED, evidence_checks, matches_plan

    # ValueError for a pair the kernel does not support or a BLOCK_K whose shared memory does not fit
    variant = Variant(args.a_format, args.b_format, args.overlap, args.block_k)
    resolve_triton_cache()  # before compiling: an unusable cache folder is named, with the variable to set
    quiet_leak_report_at_exit()
    print(f"compiling {variant.label} for sm_100a ...", file=sys.stderr, flush=True)
    compiled = compile_variant(variant.a_format, variant.b_format, variant.overlap, variant.block_k)
    data = compiled.stats.to_dict()
    data = {key: data[key] for key in JSON_KEYS} | {k: v for k, v in data.items() if k not in JSON_KEYS}
    checks = evidence_checks(compiled)
    data |= {"matches_plan": matches_plan(checks), "checks": checks, "not_checked": list(NOT_CHECKED)}
    if args.emit:
        data["artifacts"] = [str(p) for p in write_artifacts_atomically(compiled, args.emit, write_artifacts)]
    emit(args, data, render)
    failed = [c["name"] for c in checks if not c["ok"]]
    if failed:
        print(f"gluon-overlap compile: check failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def write_artifacts_atomically(compiled: Any, folder: str, write: Any) -> list[Path]:
    """``write(compiled, folder)`` made all-or-nothing: the files go to a temporary folder inside
    ``folder`` and are renamed into it once all are written; on any error (a full disk, Ctrl-C) the
    temporary folder is removed and ``folder`` holds no partial file."""
    out = Path(folder).expanduser()
    out.mkdir(exist_ok=True)  # the folder above it exists (checked by the parser: no folders are made above it)
    staging = Path(tempfile.mkdtemp(dir=out, prefix=".emit-"))
    try:
        written = write(compiled, staging)
        final = []
        for path in written:
            target = out / path.name
            os.chmod(path, 0o666 & ~_umask())
            os.replace(path, target)
            final.append(target)
        return sorted(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def render(data: dict) -> str:
    """Readable report: the statistics, then the TTGIR offsets next to the plan's."""
    head = (
        f"{data['a_format']} x {data['b_format']}, overlap {'on' if data['overlap'] else 'off'}, "
        f"BLOCK_K={data['plan']['block_k']}: sm_100a cubin"
    )
    stats = format_table(
        ["statistic", "value"],
        [
            ["shared memory (bytes/CTA)", data["shared_bytes"]],
            ["TMEM columns allocated", data["tmem_cols"]],
            ["warps per CTA", data["num_warps"]],
            ["CTAs per cluster", data["num_ctas"]],
            ["registers per thread", data["registers"]],
            ["MMA kind", data["mma_kind"]],
        ],
    )
    counts = format_table(["PTX instruction", "count"], [[k, v] for k, v in data["ptx_counts"].items()])
    rows = []
    for key in ("accumulators", "a_scale", "b_scale"):
        got, want = data["tmem_offsets"][key], data["plan_offsets"][key]
        rows.append([key, " ".join(map(str, got)), " ".join(map(str, want)), "yes" if got == want else "NO"])
    offsets = format_table(["TMEM slice", "TTGIR offsets", "plan offsets", "match"], rows)
    drain = [
        f"drain order even tiles  {data['drain_order_even']}",
        f"drain order odd tiles   {data['drain_order_odd']}",
        f"overlap released after  drain step {data['early_release_subtile']}"
        if data["early_release_subtile"] is not None
        else "overlap barrier        not used",
        "releases arrive on      " + (", ".join(data["release_barriers"]) or "nothing found"),
    ]
    checks = format_table(
        ["check", "expected", "found", "ok"],
        [[c["name"], _cell(c["expected"]), _cell(c["found"]), "yes" if c["ok"] else "NO"] for c in data["checks"]],
    )
    verdict = "the artifacts match the plan" if data["matches_plan"] else "the artifacts do NOT match the plan"
    unseen = [
        "not checked (the artifacts cannot show it):",
        *[
            textwrap.fill(text, CLI_WIDTH, initial_indent="  - ", subsequent_indent="    ")
            for text in data["not_checked"]
        ],
    ]
    drain = [textwrap.fill(line, CLI_WIDTH, subsequent_indent=" " * 24) for line in drain]
    parts = [head, "", stats, "", counts, "", offsets, "", *drain, "", checks, "", verdict, "", *unseen]
    if "artifacts" in data:
        parts += ["", "artifacts:", *[f"  {p}" for p in data["artifacts"]]]
    return "\n".join(parts)


def _cell(value: object) -> str:
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
