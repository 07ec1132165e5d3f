"""``gluon-overlap emulate``: run the real kernel (``gluon_overlap/kernel.py``, or ``--kernel FILE``) on
the CPU executor over a random problem.

JSON output: ``kernel`` (the file executed), ``matches_reference``, ``max_abs_err``, ``rel_err``,
``wrong_elements``, ``tiles``, ``tiles_per_cluster``, ``hazards`` (list of objects: kind, time,
partition, cta, cluster, tile, local, columns, stage, detail, line), ``deadlock`` (null or the blocked
processes with barrier and phase), ``failure`` (null, or the error the kernel raised), ``events``
(the number of recorded operations; null after a ``--seeds`` sweep without ``--trace``;
``--trace FILE`` writes them all, one JSON object per line, and
``trace`` says ``file``, ``events`` and ``seed``), ``steps``, ``step_limit_hit`` and ``budget``
(``steps``, ``seconds``: the run's step and wall-clock budgets; ``stopped_by``: null, ``"steps"`` or
``"wall-clock"``; ``stopped_in``, ``stopped_in_seconds``: null, or the phase before the run -- the import
or the compiler's check, each with its own wall-clock budget -- whose clock stopped it).  With ``--timed``:
``timed`` true and ``seed`` null.  With ``--seeds N``: ``sweep``
with ``seeds``, ``hazard_runs``, ``deadlock_runs``, ``wrong_c_runs``, ``failed_runs``,
``first_failing_seed``, ``first_failing_bias`` and ``first_failing_schedule`` (replay it with
``--seed S --schedule ...``; with ``--trace``: ``traced_seed`` and ``traced_run``,
the first failing run or, when none fails, the first); the other keys describe the first failing run
(or the last one, or the traced one).  The work runs in a guarded child process
(:mod:`gluon_overlap.commands.guarded`).  Exit status 0 when every run is clean, 1 when one found a
hazard, a deadlock or a wrong C, was stopped by a budget or the kernel raised or exited; 2 for an
error; 130 after Ctrl-C, 143 after SIGTERM (no partial trace either way).
``refused`` is null, or why Triton's compiler refuses the kernel for sm_100a (then nothing ran).  The
compiler's check runs first, in its own phase with :data:`COMPILE_SECONDS` of wall clock (Triton's frontend
runs the kernel's constexpr functions, which may loop or exit); a run stopped where it leaves no result (a
budget spent outside the kernel's partitions, an exit of the kernel's host code, a killed process) still has
every key, ``failure`` saying why and, where it can, the kernel line.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

from gluon_overlap.commands._output import (
    add_format_args,
    add_json_flag,
    bounded_float,
    emit,
    format_table,
    output_file,
    seed,
    size,
)
from gluon_overlap.commands._vocabulary import add_overlap_option
from gluon_overlap.emulate.budget import MAX_TIME_LIMIT, MIN_TIME_LIMIT
from gluon_overlap.text import CLI_WIDTH

BREAK_NAMES = (
    "skip-overlap-wait",
    "early-release",
    "even-low-to-high",
    "skip-acc-empty-wait",
    "wrong-overlap-phase",
)  # the named edits of gluon_overlap.emulate.kernels.BREAKS (a test checks)


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
    parser.add_argument(
        "--clusters",
        type=size,
        default=None,
        help="CTA pairs of the persistent grid (default: what the kernel file's launch_grid "
        "returns; the seed's is min(tiles, 74)); more than the number of tiles is capped to "
        "it, as the real grid is",
    )
    parser.add_argument(
        "--break",
        dest="breaks",
        action="append",
        default=[],
        choices=BREAK_NAMES,
        help="apply a named edit of the kernel that plants a protocol bug (repeatable)",
    )
    parser.add_argument(
        "--kernel",
        metavar="FILE",
        default=None,
        help="run the kernel in FILE: an edited copy of gluon_overlap/kernel.py (same entry points)",
    )
    parser.add_argument("--seed", type=seed, default=None, help="scheduler seed: picks the interleaving (0)")
    parser.add_argument(
        "--seeds",
        type=size,
        default=None,
        metavar="N",
        help="run N interleavings (seeds 0..N-1, cycling completion biases 1, 0.05, 20 under the "
        "uniform schedule, then the same under the holdback schedule) and "
        "report how many found a problem",
    )
    parser.add_argument(
        "--schedule",
        choices=("uniform", "holdback"),
        default="uniform",
        help="how --seed picks the interleaving: uniform picks, or one partition held back for long "
        "stretches (uniform)",
    )
    parser.add_argument("--problem-seed", type=seed, default=0, help="seed of the random problem (0)")
    parser.add_argument(
        "--timed",
        action="store_true",
        help="one deterministic interleaving with illustrative unit costs instead of --seed",
    )
    parser.add_argument(
        "--trace",
        metavar="FILE",
        default=None,
        type=output_file,
        help="write every event as JSON lines to FILE (with --seeds: of the first failing run, "
        "or the first run when none fails)",
    )
    parser.add_argument(
        "--time-limit",
        type=bounded_float(MIN_TIME_LIMIT, MAX_TIME_LIMIT),
        default=None,
        metavar="SECONDS",
        help="wall-clock budget of one run (default: 20 x the estimate, at least 60 s); a run past "
        "it, or past its step budget, is stopped and reported",
    )
    add_json_flag(parser)
    parser.set_defaults(func=run, check=check_args)  # cli.main checks the arguments before it imports torch


def check_options(args: argparse.Namespace) -> None:
    """Options that contradict each other are refused (before any work)."""
    seeds, timed = getattr(args, "seeds", None), getattr(args, "timed", False)
    if seeds is not None and timed:
        raise ValueError("--seeds sweeps interleavings; --timed runs the one deterministic interleaving: choose one")
    if getattr(args, "seed", None) is not None and timed:
        raise ValueError(
            "--timed runs one deterministic interleaving and ignores the scheduler seed: drop --seed "
            f"{args.seed} or --timed"
        )
    if getattr(args, "seed", None) is not None and seeds is not None:
        raise ValueError(f"--seeds {seeds} runs seeds 0..{seeds - 1}; --seed {args.seed} picks one: choose one")


def check_args(args: argparse.Namespace) -> Any:
    """Before any work: contradicting options, the kernel's rules (``gluon_overlap.limits``), the machine's
    limits (memory and time, estimated), and ``--clusters`` capped at the number of tiles as the real grid
    is.  Returns the estimate."""
    from gluon_overlap.emulate.budget import check_emulate, check_sweep, check_trace_space
    from gluon_overlap.limits import check_pair, clusters_for

    check_options(args)
    check_pair(args.a_format, args.b_format)
    if getattr(args, "kernel", None):  # a path that is not a readable text file: said now, before any import
        from pathlib import Path

        from gluon_overlap.emulate.kernel_files import read_kernel_file

        read_kernel_file(Path(args.kernel))
    if args.clusters is not None:
        capped = clusters_for(args.m, args.n, args.clusters)
        if capped != args.clusters:
            print(
                f"gluon-overlap emulate: note: --clusters {args.clusters} capped to {capped}, the number of "
                f"256 x 256 tiles (the kernel's launch_grid never launches more clusters than tiles)",
                file=sys.stderr,
            )
            args.clusters = capped
    estimate = check_emulate(args.m, args.n, args.k, args.a_format, args.b_format, args.clusters)
    seeds = getattr(args, "seeds", None)
    if seeds is not None:
        check_sweep(estimate, seeds)
    if getattr(args, "trace", None):
        check_trace_space(args.trace, estimate)
    return estimate


def verdict(d: dict) -> str:
    """``OK``, or ``BROKEN`` followed by what is broken (the table's first row, before the details)."""
    sweep = d.get("sweep")
    if sweep:
        if sweep["failed_runs"] == 0:
            return f"OK in all {sweep['seeds']} interleavings"
        kinds = [
            f"{n} with {what}"
            for n, what in (
                (sweep["hazard_runs"], "a hazard"),
                (sweep["deadlock_runs"], "a deadlock"),
                (sweep["wrong_c_runs"], "a wrong C"),
            )
            if n
        ]
        return f"BROKEN: {sweep['failed_runs']} of {sweep['seeds']} interleavings failed" + (
            f" ({', '.join(kinds)})" if kinds else ""
        )
    problems = []
    stopped = (d.get("budget") or {}).get("stopped_by")
    if d.get("refused"):
        problems.append("the compiler refuses the kernel")
    elif stopped:
        problems.append(f"stopped by the {'step' if stopped == 'steps' else 'wall-clock'} budget")
    elif d["failure"]:
        problems.append("the kernel raised an error")
    if d["deadlock"]:
        problems.append("deadlock")
    if d["hazards"]:
        first = d["hazards"][0]
        problems.append(
            f"{len(d['hazards'])} hazard{'s' * (len(d['hazards']) > 1)} (first: {first['kind']} in "
            f"the {first['partition']} partition)"
        )
    if d["matches_reference"] is False:
        wrong = d["wrong_elements"]
        problems.append("C differs from the reference" + (f" in {wrong} elements" if wrong else ""))
    if not problems:
        return "OK"
    clean_c = d["matches_reference"] is True and not d.get("refused") and not d["failure"]
    return (
        "BROKEN: "
        + "; ".join(problems)
        + (" -- C happens to match the reference in this interleaving" if clean_c else "")
    )


def _render(d: dict) -> str:
    sweep = d.get("sweep")
    rows = [
        ("result", verdict(d)),
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
            (
                "interleavings tried",
                f"{sweep['seeds']} (seeds 0..{sweep['seeds'] - 1}, cycling "
                + ", ".join(f"{s} {b:g}" for b, s in zip(sweep["biases"], sweep["schedules"], strict=True))
                + ")",
            ),
            ("runs with a hazard", sweep["hazard_runs"]),
            ("runs with a deadlock", sweep["deadlock_runs"]),
            ("runs with a wrong C", sweep["wrong_c_runs"]),
            (
                "first failing seed",
                "none"
                if first is None
                else f"{first} (bias {sweep['first_failing_bias']:g}, "
                f"{sweep['first_failing_schedule']}); details below",
            ),
        ]
    else:
        rows.append(("seed", "none (--timed: one deterministic interleaving)" if d.get("timed") else d["seed"]))
    rows += [
        ("matches reference", d["matches_reference"]),
        ("max abs err", "n/a (C has unstored elements)" if d["max_abs_err"] is None else d["max_abs_err"]),
        ("wrong elements", d["wrong_elements"]),
        ("hazards", len(d["hazards"])),
        ("deadlock", "yes" if d["deadlock"] else "no"),
        (
            "events",
            d["events"]
            if d["events"] is not None
            else "not recorded (a sweep runs untraced; --trace records the first failing run)",
        ),
        ("budget", _render_budget(d["budget"])),
        (
            "stopped by",
            {"steps": f"the step budget ({d['budget']['steps']} steps)", "wall-clock": _clock_text(d["budget"])}.get(
                d["budget"]["stopped_by"], "nothing (the run ended by itself)"
            ),
        ),
    ]
    if d.get("refused"):
        rows.append(("compiler refuses", d["refused"]))
    elif d["failure"]:
        rows.append(("kernel raised", d["failure"]))
    if d.get("trace"):
        t = d["trace"]
        which = f" ({sweep['traced_run']})" if sweep and sweep.get("traced_run") else ""
        rows.append(("trace", f"{t['file']}: {t['events']} events of seed {t['seed']}{which}"))
    out = [format_table(["quantity", "value"], rows)]
    if d["hazards"]:
        hz = [
            (
                h["kind"],
                h["partition"],
                h["cta"],
                h["cluster"],
                f"{h['tile']} (#{h['local']})" if h.get("local") is not None else h["tile"],
                f"[{h['columns'][0]},{h['columns'][1]})"
                if h["columns"]
                else (h["stage"] if h["stage"] is not None else ""),
                (h.get("line") or "")[:60],
            )
            for h in d["hazards"][:20]
        ]
        out.append("")
        out.append(
            format_table(
                ["hazard", "partition", "cta", "cluster", "tile (cluster's #)", "columns/stage", "kernel line"], hz
            )
        )
        out.append(textwrap.fill(f"first: {d['hazards'][0]['detail']}", CLI_WIDTH, subsequent_indent="  "))
        if len(d["hazards"]) > 20:
            out.append(f"... and {len(d['hazards']) - 20} more")
    if d["deadlock"]:
        out.append("")
        out += [
            textwrap.fill(line, CLI_WIDTH, subsequent_indent="  ") if len(line) > CLI_WIDTH else line
            for line in d["deadlock_text"].splitlines()
        ]
    return "\n".join(out)


#: wall-clock budget of importing a kernel file (an endless loop at import is stopped after it)
IMPORT_SECONDS = 60.0
#: wall-clock budget of the compiler's check of the kernel (``twin.precheck``: Triton's frontend runs the
#: kernel's constexpr functions and helpers, which may loop); its own, so that a run's budget is the run's
COMPILE_SECONDS = 120.0
#: a run's default wall-clock budget: this many times the estimate, and at least MIN_RUN_SECONDS (the Python
#: API's default, :func:`gluon_overlap.emulate.runs.default_time_limit`, is the same rule)
RUN_SECONDS_FACTOR = 20.0
MIN_RUN_SECONDS = 60.0
#: the phase of the compiler's check (its name ends the failure text of a run stopped there)
COMPILE_PHASE = "the compiler's check of the kernel"


def time_budget(args: argparse.Namespace, estimate: Any) -> float:
    """Seconds one run may take (``--time-limit``, or :data:`RUN_SECONDS_FACTOR` x the estimate)."""
    if args.time_limit is not None:
        return args.time_limit
    return max(MIN_RUN_SECONDS, RUN_SECONDS_FACTOR * estimate.seconds)


def _budget(
    steps: int, seconds: float, stopped_by: str | None, phase: str | None = None, phase_seconds: float | None = None
) -> dict:
    """The run's budgets and which one stopped it; ``stopped_in``: the phase before the run (the import or the
    compiler's check, with its own wall-clock budget ``stopped_in_seconds``) whose clock stopped it, else null."""
    before_run = stopped_by == "wall-clock" and phase is not None and not _is_run_phase(phase)
    return {
        "steps": steps,
        "seconds": seconds,
        "stopped_by": stopped_by,
        "stopped_in": phase if before_run else None,
        "stopped_in_seconds": phase_seconds if before_run else None,
    }


def _is_run_phase(phase: str) -> bool:
    return phase.startswith(("the run of seed", "the traced replay"))


def _placeholder(config: Any, seed: int | None, kernel: str, failure: str) -> dict:
    """A run's summary when it left no result (stopped before it could report): nothing matched.  The
    keys of ``EmulationResult.summary``."""
    return {
        "a_format": config.plan.a_format,
        "b_format": config.plan.b_format,
        "m": config.m,
        "n": config.n,
        "k": config.k,
        "overlap": config.plan.overlap,
        "clusters": config.grid,
        "breaks": sorted(config.breaks),
        "seed": seed,
        "matches_reference": False,
        "max_abs_err": None,
        "rel_err": None,
        "wrong_elements": None,
        "tiles": config.num_tiles,
        "tiles_per_cluster": [len(config.tiles_of(c)) for c in range(config.grid)],
        "hazards": [],
        "deadlock": None,
        "events": 0,
        "steps": None,
        "step_limit_hit": False,
        "kernel": kernel,
        "failure": failure,
        "refused": None,
    }


def _config(args: argparse.Namespace) -> Any:
    from gluon_overlap.emulate.config import KernelConfig
    from gluon_overlap.tmem import make_plan

    plan = make_plan(args.a_format, args.b_format, overlap=args.overlap)
    return KernelConfig(
        plan, args.m, args.n, args.k, clusters=args.clusters, breaks=frozenset(args.breaks), kernel_path=args.kernel
    )


def _stopped(
    args: argparse.Namespace,
    config: Any,
    phase: str,
    failure: str,
    stopped_by: str | None,
    seconds: float,
    progress: list[dict],
    phase_seconds: float | None = None,
) -> dict:
    """The document of a run that left no result: stopped (a budget, an exit of the kernel's code outside
    its partitions) in ``phase``, after the sweep's runs in ``progress``.  The keys of a normal document."""
    from gluon_overlap.emulate.runs import SWEEP_BIASES, SWEEP_SCHEDULES, step_budget, sweep_bias, sweep_schedule

    planned = 0 if args.seed is None else args.seed  # the run that was to come (a sweep starts at seed 0)
    seed = int(phase.rsplit(" ", 1)[-1]) if phase[-1:].isdigit() else planned
    data = _placeholder(config, seed, config.kernel_path or "gluon_overlap/kernel.py", failure)
    data["budget"] = _budget(step_budget(config), seconds, stopped_by, phase, phase_seconds)
    data["ok"] = False
    data["deadlock_text"] = None
    if args.timed:
        data["seed"] = None
        data["timed"] = True
    if args.trace:
        data["trace"] = None  # nothing is written: a stopped run leaves no (partial) trace
    if args.seeds is not None:
        done = [r for r in progress if r["seed"] != seed]
        failed = [r for r in done if not r["ok"]]
        first = failed[0]["seed"] if failed else seed
        data["sweep"] = {
            "seeds": len(done) + 1,
            "biases": list(SWEEP_BIASES),
            "schedules": list(SWEEP_SCHEDULES),
            "hazard_runs": sum(r["hazard"] for r in done),
            "deadlock_runs": sum(r["deadlock"] for r in done),
            "wrong_c_runs": sum(r["wrong"] for r in done) + 1,
            "failed_runs": len(failed) + 1,
            "first_failing_seed": first,
            "first_failing_bias": sweep_bias(first),
            "first_failing_schedule": sweep_schedule(first),
            "seconds": None,
        }
        if args.trace:
            data["sweep"]["traced_seed"] = None
            data["sweep"]["traced_run"] = None
    return data


def _raised_by_kernel(exc: BaseException, channel: Any) -> bool:
    """Whether ``exc`` was raised in (or passed through) the kernel file's code.  ``KeyboardInterrupt`` is
    always the kernel's own: the guarded child ignores Ctrl-C (the parent stops it)."""
    from gluon_overlap.compiler.precheck import kernel_line_of

    return isinstance(exc, KeyboardInterrupt) or kernel_line_of(exc, channel.watched_files) is not None


def _stop_text(exc: BaseException, channel: Any) -> str:
    """Why the guarded work was stopped, with the innermost kernel line it was at (if any)."""
    from gluon_overlap.compiler.precheck import failure_text

    return failure_text(exc, channel.watched_files)


def _work(args: argparse.Namespace, channel: Any, seconds: float, trace_path: str | None) -> dict:
    """Everything ``emulate`` computes (run in the guarded child); the JSON-ready document, with
    ``"ok"``."""
    from gluon_overlap.commands.guarded import WallClockExceeded
    from gluon_overlap.emulate.runs import import_kernel

    config = _config(args)
    channel.phase("the import of the kernel file", IMPORT_SECONDS)
    # a file that does not exist or import, a break that does not apply: exit 2 (the child ignores Ctrl-C, so a
    # KeyboardInterrupt at import is the kernel's own)
    module = import_kernel(config, interrupts_are_the_kernels=True)
    channel.end_phase()
    channel.watched_files = {module.__file__}
    from gluon_overlap.formats import random_problem

    problem = random_problem(args.m, args.n, args.k, args.a_format, args.b_format, seed=args.problem_seed)
    progress: list[dict] = []
    try:
        return _runs(args, channel, config, module, problem, seconds, trace_path, progress)
    except (WallClockExceeded, SystemExit) as exc:
        # Stopped outside the kernel's partitions (where the executor reports it as the run's error): in
        # the compiler's check, in the engine, or in the kernel module's host code at launch.  No result.
        channel.end_phase()
        return _stopped(
            args,
            config,
            channel.phase_name,
            _stop_text(exc, channel),
            "wall-clock" if isinstance(exc, WallClockExceeded) else None,
            seconds,
            progress,
            channel.seconds,
        )
    except BaseException as exc:  # noqa: BLE001  (anything else the kernel file's own code raised)
        if not _raised_by_kernel(exc, channel):
            raise
        channel.end_phase()  # a learner's bug in the host code (kernel_args, a constexpr function): exit 1
        return _stopped(args, config, channel.phase_name, _stop_text(exc, channel), None, seconds, progress)


def _runs(
    args: argparse.Namespace,
    channel: Any,
    config: Any,
    module: Any,
    problem: Any,
    seconds: float,
    trace_path: str | None,
    progress: list[dict],
) -> dict:
    """The compiler's check, then the run (or the sweep's runs, and the traced replay)."""
    from gluon_overlap.emulate.config import compile_error, with_kernel_grid
    from gluon_overlap.emulate.runs import run_config, step_budget, sweep, sweep_bias, sweep_schedule

    channel.phase(COMPILE_PHASE, COMPILE_SECONDS)
    config = with_kernel_grid(config, module)  # an edited kernel's own launch_grid picks the grid
    compile_error(config, problem)  # the verdict is cached: each run reports it without compiling again
    channel.end_phase()
    steps = step_budget(config)
    sweep_data = None
    if args.seeds is not None:
        stops: dict[int, str | None] = {}

        def on_run(seed: int, r: Any) -> None:
            if r is None:
                channel.phase(f"the run of seed {seed}", seconds, arm=False)
                return
            channel.end_phase()
            stops[seed] = r.stopped_by
            record = {
                "seed": seed,
                "ok": r.ok,
                "hazard": bool(r.hazards),
                "deadlock": r.deadlock is not None,
                "wrong": not r.matches_reference,
                "stopped_by": stops[seed],
            }
            progress.append(record)
            channel.progress(record)

        found = sweep(
            problem,
            args.seeds,
            overlap=args.overlap,
            clusters=config.clusters,
            breaks=args.breaks,
            kernel=args.kernel,
            on_run=on_run,
            time_limit=seconds,
        )
        sweep_data = found.summary()
        chosen = found.first_failure or found.last
        if trace_path is not None:  # the sweep ran untraced: replay the first failing run (or the first) traced
            seed = found.first_failure.seed if found.first_failure else 0
            channel.phase(f"the traced replay of seed {seed}", seconds, arm=False)
            chosen = run_config(
                problem,
                config,
                seed=seed,
                trace=True,
                completion_bias=sweep_bias(seed),
                schedule=sweep_schedule(seed),
                time_limit=seconds,
            )
            channel.end_phase()
            stops[seed] = chosen.stopped_by
            sweep_data["traced_seed"] = seed
            sweep_data["traced_run"] = "the first failing run" if found.first_failure else "the first run; none failed"
        data = chosen.summary()
        data["budget"] = _budget(steps, seconds, stops.get(chosen.seed))
        data["sweep"] = sweep_data
        if trace_path is None:
            data["events"] = None  # the sweep's runs are not recorded: say so instead of a count of 0
        data["ok"] = found.ok
    else:
        seed = 0 if args.seed is None else args.seed
        channel.phase(f"the run of seed {seed}", seconds, arm=False)  # the run's own budget stops it in time
        result = run_config(
            problem,
            config,
            seed=seed,
            trace=True,
            timed=args.timed,
            schedule=getattr(args, "schedule", "uniform"),
            time_limit=seconds,
        )
        channel.end_phase()
        data = result.summary()
        data["budget"] = _budget(steps, seconds, result.stopped_by)
        data["ok"] = result.ok
        data["deadlock_text"] = str(result.deadlock) if result.deadlock else None
        chosen = result
    if args.timed:
        data["seed"] = None
        data["timed"] = True
    if sweep_data is not None:
        data["deadlock_text"] = str(chosen.deadlock) if chosen.deadlock else None
    if trace_path is not None:
        with open(trace_path, "w") as f:
            for op in chosen.trace:
                f.write(json.dumps(op.to_dict()) + "\n")
        data["trace"] = {"file": args.trace, "events": len(chosen.trace), "seed": chosen.seed}
    return data


def _lost(args: argparse.Namespace, lost: Any, seconds: float) -> dict:
    """The document of a run whose process ended without an answer (killed past its budget, or a way out
    the guard could not turn into an exception)."""
    budget = seconds if lost.seconds is None else lost.seconds  # the budget of the phase it was in
    what = (
        f"it did not stop at its wall-clock budget of {budget:g} s and was killed"
        if lost.stopped_by_clock
        else lost.how
    )
    if lost.phase.startswith("the import") or lost.phase == "the start":
        subject = f"kernel file {args.kernel!r} does not import" if args.kernel else "the emulation did not start"
        raise ValueError(f"{subject}: {what} during {lost.phase}")
    return _stopped(
        args,
        _config(args),
        lost.phase,
        f"the kernel's process ended: {what} during {lost.phase}",
        "wall-clock" if lost.stopped_by_clock else None,
        seconds,
        lost.progress,
        budget,
    )


def _clock_text(b: dict) -> str:
    if b.get("stopped_in"):
        return f"the wall-clock budget of {b['stopped_in']} ({b['stopped_in_seconds']:g} s)"
    return f"the wall-clock budget ({b['seconds']:g} s)"


def _render_budget(b: dict) -> str:
    return f"{b['steps']} steps, {b['seconds']:g} s wall-clock" if b["steps"] is not None else f"{b['seconds']:g} s"


def run(args: argparse.Namespace) -> int:
    estimate = check_args(args)  # light, and done once already by cli.main before it imported torch
    from gluon_overlap.commands.guarded import ChildLost, run_guarded
    from gluon_overlap.store import AtomicFile

    seconds = time_budget(args, estimate)
    trace = None
    try:  # the temporary trace file is made inside: a Ctrl-C or SIGTERM right after it still removes it
        trace = AtomicFile(args.trace) if args.trace else None
        try:
            data = run_guarded(lambda channel: _work(args, channel, seconds, str(trace.temp) if trace else None))
        except ChildLost as lost:
            data = _lost(args, lost, seconds)
        if trace and data.get("trace"):
            trace.commit()
        elif trace:  # a stopped run: what the child may have written is partial
            trace.discard()
    except BaseException:
        if trace:
            trace.discard()
        raise
    ok = data.pop("ok")
    if args.json:
        data.pop("deadlock_text", None)
    emit(args, data, _render)
    return 0 if ok else 1
