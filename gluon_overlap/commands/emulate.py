"""``gluon-overlap emulate``: run the real kernel (``gluon_overlap/kernel.py``, or ``--kernel FILE``) on
the CPU executor over a random problem.

JSON output: ``kernel`` (the file executed), ``matches_reference``, ``max_abs_err``, ``rel_err``,
``wrong_elements``, ``tiles``, ``tiles_per_cluster``, ``hazards`` (list of objects: kind, time,
partition, cta, cluster, tile, local, columns, stage, detail, line), ``deadlock`` (null or the blocked
processes with barrier and phase), ``failure`` (null, or the error the kernel raised), ``events``
(the number of recorded operations; ``--trace FILE`` writes them all, one JSON object per line) and
``steps``, ``refused`` (null, or why Triton's compiler refuses the kernel for sm_100a: then nothing ran).
With ``--seeds N``: ``sweep`` with ``seeds``, ``hazard_runs``, ``deadlock_runs``,
``wrong_c_runs``, ``failed_runs``, ``first_failing_seed``, ``first_failing_bias`` and
``first_failing_schedule`` (replay it with ``--seed S --schedule ...``); the other keys
describe the first failing run (or the last one).  Exit status 0 when every run is clean, 1 when one
found a hazard, a deadlock or a wrong C.
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
    output_file,
    seed,
    size,
)
from gluon_overlap.commands._vocabulary import add_overlap_option

BREAK_NAMES = ("skip-overlap-wait", "early-release", "even-low-to-high", "skip-acc-empty-wait",
               "wrong-overlap-phase")  # the named edits of gluon_overlap.twin.kernels.BREAKS (a test checks)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "emulate",
        help="run the real kernel on the CPU executor (real data, hazards, deadlocks)",
        description="Run gluon_overlap/kernel.py (or --kernel FILE) on the CPU executor: every partition of both "
        "CTAs of every cluster, real TMA / TMEM / MMA data, one interleaving chosen by --seed (or --seeds N of "
        "them). Compares C with the float reference and reports hazards with the kernel line.",
    )
    add_format_args(parser)
    parser.add_argument("--m", type=size, required=True, help="rows of A and C")
    parser.add_argument("--n", type=size, required=True, help="rows of B, columns of C (a multiple of 8)")
    parser.add_argument("--k", type=size, required=True, help="reduction size (a multiple of 128)")
    add_overlap_option(parser)
    parser.add_argument("--clusters", type=size, default=None,
                        help="CTA pairs of the persistent grid (default: the seed's min(tiles, 74)); "
                        "more than the number of tiles is capped to it, as the real grid is")
    parser.add_argument("--break", dest="breaks", action="append", default=[], choices=BREAK_NAMES,
                        help="apply a named edit of the kernel that plants a protocol bug (repeatable)")
    parser.add_argument("--kernel", metavar="FILE", default=None,
                        help="run the kernel in FILE: an edited copy of gluon_overlap/kernel.py (same entry points)")
    parser.add_argument("--seed", type=seed, default=0, help="scheduler seed: picks the interleaving (0)")
    parser.add_argument("--seeds", type=size, default=None, metavar="N",
                        help="run N interleavings (seeds 0..N-1, cycling completion biases 1, 0.05, 20 under the "
                        "uniform schedule, then the same under the holdback schedule) and "
                        "report how many found a problem")
    parser.add_argument("--schedule", choices=("uniform", "holdback"), default="uniform",
                        help="how --seed picks the interleaving: uniform picks, or one partition held back for long "
                        "stretches (uniform)")
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
    from gluon_overlap.limits import check_emulate, check_pair, check_sweep, check_trace_space, clusters_for

    check_pair(args.a_format, args.b_format)
    if args.clusters is not None:
        capped = clusters_for(args.m, args.n, args.clusters)
        if capped != args.clusters:
            print(f"gluon-overlap emulate: note: --clusters {args.clusters} capped to {capped}, the number of "
                  f"256 x 256 tiles (the kernel's launch_grid never launches more clusters than tiles)",
                  file=sys.stderr)
            args.clusters = capped
    estimate = check_emulate(args.m, args.n, args.k, args.a_format, args.b_format, args.clusters)
    seeds = getattr(args, "seeds", None)
    if seeds is not None:
        check_sweep(estimate, seeds)
    if getattr(args, "trace", None):
        check_trace_space(args.trace, estimate)


def _render(d: dict) -> str:
    sweep = d.get("sweep")
    status = "OK" if (sweep["failed_runs"] == 0 if sweep else d["matches_reference"] and not d["hazards"]
                      and not d["deadlock"] and not d["failure"]) else "BROKEN"
    rows = [
        ("kernel", d["kernel"]),
        ("formats", f"{d['a_format']} x {d['b_format']}"),
        ("shape (m, n, k)", f"{d['m']} x {d['n']} x {d['k']}"),
        ("overlap", "on" if d["overlap"] else "off"),
        ("clusters", d["clusters"]),
        ("tiles (per cluster)", f"{d['tiles']} ({min(d['tiles_per_cluster'])}..{max(d['tiles_per_cluster'])})"),
        ("breaks", ", ".join(d["breaks"]) or "none"),
    ]
    if sweep:
        first = sweep["first_failing_seed"]
        rows += [
            ("interleavings tried", f"{sweep['seeds']} (seeds 0..{sweep['seeds'] - 1}, cycling " + ", ".join(
                f"{s} {b:g}" for b, s in zip(sweep["biases"], sweep["schedules"], strict=True)) + ")"),
            ("runs with a hazard", sweep["hazard_runs"]),
            ("runs with a deadlock", sweep["deadlock_runs"]),
            ("runs with a wrong C", sweep["wrong_c_runs"]),
            ("first failing seed", "none" if first is None else f"{first} (bias {sweep['first_failing_bias']:g}, "
                                                                 f"{sweep['first_failing_schedule']}); details below"),
        ]
    else:
        rows.append(("seed", d["seed"]))
    rows += [
        ("matches reference", d["matches_reference"]),
        ("max abs err", "n/a (C has unstored elements)" if d["max_abs_err"] is None else d["max_abs_err"]),
        ("wrong elements", d["wrong_elements"]),
        ("hazards", len(d["hazards"])),
        ("deadlock", "yes" if d["deadlock"] else "no"),
        ("events", d["events"]),
        ("result", status if not sweep or sweep["failed_runs"] else f"OK in all {sweep['seeds']} interleavings"),
    ]
    if d.get("refused"):
        rows.insert(-1, ("compiler refuses", d["refused"]))
    elif d["failure"]:
        rows.insert(-1, ("kernel raised", d["failure"]))
    out = [format_table(["quantity", "value"], rows)]
    if d["hazards"]:
        hz = [(h["kind"], h["partition"], h["cta"], h["cluster"],
               f"{h['tile']} (#{h['local']})" if h.get("local") is not None else h["tile"],
               f"[{h['columns'][0]},{h['columns'][1]})" if h["columns"] else (h["stage"] if h["stage"] is not None
                                                                              else ""),
               (h.get("line") or "")[:60]) for h in d["hazards"][:20]]
        out.append("")
        out.append(format_table(["hazard", "partition", "cta", "cluster", "tile (cluster's #)", "columns/stage",
                                 "kernel line"], hz))
        out.append(f"first: {d['hazards'][0]['detail']}")
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
    from gluon_overlap.twin.emulate import run_config, sweep
    from gluon_overlap.twin.kernel_launch import KernelConfig

    plan = make_plan(args.a_format, args.b_format, overlap=args.overlap)
    config = KernelConfig(plan, args.m, args.n, args.k, clusters=args.clusters, breaks=frozenset(args.breaks),
                          kernel_path=args.kernel)
    config.module()  # a kernel file that does not exist or import, or a break that does not apply: exit 2 now
    problem = random_problem(args.m, args.n, args.k, args.a_format, args.b_format, seed=args.problem_seed)
    if args.seeds is not None:
        if args.timed:
            raise ValueError("--seeds sweeps interleavings; --timed runs the one deterministic interleaving: "
                             "choose one")
        found = sweep(problem, args.seeds, overlap=args.overlap, clusters=args.clusters, breaks=args.breaks,
                      kernel=args.kernel)
        result = found.first_failure or found.last
        data = result.summary()
        data["sweep"] = found.summary()
        ok = found.ok
    else:
        result = run_config(problem, config, seed=args.seed, trace=True, timed=args.timed,
                            schedule=getattr(args, "schedule", "uniform"))
        data = result.summary()
        ok = result.ok
    if not args.json:
        data["deadlock_text"] = str(result.deadlock) if result.deadlock else None
    if args.trace:
        with open(args.trace, "w") as f:
            for op in result.trace:
                f.write(json.dumps(op.to_dict()) + "\n")
    emit(args, data, _render)
    return 0 if ok else 1
