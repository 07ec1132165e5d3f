"""``gluon-overlap emulate``: run the CPU twin of the kernel's protocol on a random problem.

JSON output: ``matches_reference``, ``max_abs_err``, ``rel_err``, ``wrong_elements``, ``tiles``,
``tiles_per_cluster``, ``hazards`` (list of objects: kind, time, partition, cta, cluster, tile,
columns, stage, detail), ``deadlock`` (null or the blocked processes with barrier and phase),
``events`` (the number of recorded operations; ``--trace FILE`` writes them all, one JSON object
per line) and ``steps``.  Exit status 0 when the run is clean, 1 when it found a hazard, a
deadlock or a wrong C.
"""

from __future__ import annotations

import argparse
import json
import sys

from gluon_overlap.commands._output import (
    add_format_args,
    add_json_flag,
    emit,
    format_table,
    on_off,
    output_file,
    seed,
    size,
)

BREAK_NAMES = ("skip-overlap-wait", "early-release", "even-low-to-high", "skip-acc-empty-wait",
               "wrong-overlap-phase")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "emulate",
        help="run the CPU twin of the kernel's protocol (real data, hazards, deadlocks)",
        description="Run the CPU twin: both CTAs of every cluster, real TMA / TMEM / MMA data, one "
        "interleaving chosen by --seed. Compares C with the float reference and reports hazards.",
    )
    add_format_args(parser)
    parser.add_argument("--m", type=size, required=True, help="rows of A and C")
    parser.add_argument("--n", type=size, required=True, help="rows of B, columns of C (a multiple of 8)")
    parser.add_argument("--k", type=size, required=True, help="reduction size (a multiple of 128)")
    parser.add_argument("--overlap", type=on_off, default=True, help="overlapping accumulators: on|off (on)")
    parser.add_argument("--clusters", type=size, default=None,
                        help="CTA pairs of the persistent grid (default: the seed's min(tiles, 74)); "
                        "more than the number of tiles is capped to it, as the real grid is")
    parser.add_argument("--break", dest="breaks", action="append", default=[], choices=BREAK_NAMES,
                        help="switch on a deliberate protocol bug (repeatable)")
    parser.add_argument("--seed", type=seed, default=0, help="scheduler seed: picks the interleaving (0)")
    parser.add_argument("--problem-seed", type=seed, default=0, help="seed of the random problem (0)")
    parser.add_argument("--timed", action="store_true",
                        help="one deterministic interleaving with illustrative unit costs instead of --seed")
    parser.add_argument("--trace", metavar="FILE", default=None, type=output_file,
                        help="write every event as JSON lines to FILE")
    add_json_flag(parser)
    parser.set_defaults(func=run)


def check_args(args: argparse.Namespace) -> None:
    """Before any work: the kernel's rules (``gluon_overlap.limits``), the machine's limits (memory and
    time, estimated), and ``--clusters`` capped at the number of tiles as the real grid is."""
    from gluon_overlap.limits import check_emulate, check_pair, check_trace_space, clusters_for

    check_pair(args.a_format, args.b_format)
    if args.clusters is not None:
        capped = clusters_for(args.m, args.n, args.clusters)
        if capped != args.clusters:
            print(f"gluon-overlap emulate: note: --clusters {args.clusters} capped to {capped}, the number of "
                  f"256 x 256 tiles (the kernel's launch_grid never launches more clusters than tiles)",
                  file=sys.stderr)
            args.clusters = capped
    estimate = check_emulate(args.m, args.n, args.k, args.a_format, args.b_format, args.clusters)
    if getattr(args, "trace", None):
        check_trace_space(args.trace, estimate)


def _render(d: dict) -> str:
    status = "OK" if d["matches_reference"] and not d["hazards"] and not d["deadlock"] else "BROKEN"
    rows = [
        ("formats", f"{d['a_format']} x {d['b_format']}"),
        ("shape (m, n, k)", f"{d['m']} x {d['n']} x {d['k']}"),
        ("overlap", "on" if d["overlap"] else "off"),
        ("clusters", d["clusters"]),
        ("tiles (per cluster)", f"{d['tiles']} ({min(d['tiles_per_cluster'])}..{max(d['tiles_per_cluster'])})"),
        ("breaks", ", ".join(d["breaks"]) or "none"),
        ("seed", d["seed"]),
        ("matches reference", d["matches_reference"]),
        ("max abs err", "n/a (C has unstored elements)" if d["max_abs_err"] is None else d["max_abs_err"]),
        ("wrong elements", d["wrong_elements"]),
        ("hazards", len(d["hazards"])),
        ("deadlock", "yes" if d["deadlock"] else "no"),
        ("events", d["events"]),
        ("result", status),
    ]
    out = [format_table(["quantity", "value"], rows)]
    if d["hazards"]:
        hz = [(h["kind"], h["time"], h["partition"], h["cta"], h["cluster"], h["tile"],
               f"[{h['columns'][0]},{h['columns'][1]})" if h["columns"] else (h["stage"] if h["stage"] is not None
                                                                              else "")) for h in d["hazards"][:20]]
        out.append("")
        out.append(format_table(["hazard", "time", "partition", "cta", "cluster", "tile", "columns/stage"], hz))
        if len(d["hazards"]) > 20:
            out.append(f"... and {len(d['hazards']) - 20} more")
    if d["deadlock"]:
        out.append("")
        out.append(d["deadlock_text"])
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    check_args(args)  # before torch is even imported
    from gluon_overlap.formats import random_problem
    from gluon_overlap.tmem import make_plan
    from gluon_overlap.twin.emulate import run_config
    from gluon_overlap.twin.protocol import KernelConfig

    plan = make_plan(args.a_format, args.b_format, overlap=args.overlap)
    config = KernelConfig(plan, args.m, args.n, args.k, clusters=args.clusters, breaks=frozenset(args.breaks))
    problem = random_problem(args.m, args.n, args.k, args.a_format, args.b_format, seed=args.problem_seed)
    result = run_config(problem, config, seed=args.seed, trace=True, timed=args.timed)
    data = result.summary()
    if not args.json:
        data["deadlock_text"] = str(result.deadlock) if result.deadlock else None
    if args.trace:
        with open(args.trace, "w") as f:
            for op in result.trace:
                f.write(json.dumps(op.to_dict()) + "\n")
    emit(args, data, _render)
    return 0 if result.ok else 1
