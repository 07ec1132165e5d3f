"""``gluon-overlap run [OPTIONS] SCRIPT.py [ARGS...]``: run an unmodified Gluon script on the CPU interpreter.

The script runs as ``python SCRIPT.py ARGS...`` would (``__main__``, ``sys.argv``, its folder on ``sys.path``), with
its ``device="cuda"`` tensors made on the CPU, the ``torch.cuda`` calls it makes answered as a Blackwell device
would, and every ``kernel[grid](...)`` of a ``@gluon.jit`` kernel run on the interpreter
(:func:`gluon_overlap.script.runner.run_script`).  The command's options come before ``SCRIPT``; everything after it
is the script's.  The script's own prints go to stderr; stdout carries the report.

JSON output: ``script``, ``argv``, ``ok``, ``exit_status`` (the script's ``sys.exit`` code, 0 when it ended
normally, null when it was stopped), ``script_error`` (null, or what the script raised with its line),
``stopped_by`` (null, ``"launch"``: a launch ended in an error or a deadlock, as a GPU fault or hang would end the
script, or ``"wall-clock"``), ``launches`` (one object per launch: ``kernel``, ``line`` -- the script line that
launched it --, ``grid``, ``num_warps``, ``num_ctas``, ``ok``, ``hazards`` -- each with kind, partition, cta,
cluster, detail and the kernel line --, ``deadlock`` and ``deadlock_text``, ``error``, ``step_limit_hit``,
``steps``, ``seconds``, ``note``), the counts ``hazards``, ``deadlocks``, ``errors``, ``seconds`` and ``output``
(what the script printed, its last 64 KB).

The script runs in a guarded child process (:mod:`gluon_overlap.commands.guarded`): one that loops is stopped at
``--time-limit``, one that exits or ignores Ctrl-C cannot end the command.  Exit status 0 when the script ran to
its end with exit status 0 and every launch was clean; 1 when a launch found a hazard, a deadlock or an error,
or the script raised, exited non-zero or was stopped; 2 for an error (a script that does not exist or does not
compile, a bad option); 130 after Ctrl-C, 143 after SIGTERM.
"""

from __future__ import annotations

import argparse
from typing import Any

from gluon_overlap.commands._output import add_json_flag, bounded_float, emit, format_table, seed, size

#: the default wall-clock budget of a whole script (seconds)
SCRIPT_SECONDS = 600.0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run an unmodified Gluon script on the CPU interpreter (its CUDA tensors on the CPU)",
        description="Run SCRIPT.py as python would, its device='cuda' tensors on the CPU and its Gluon kernel "
        "launches on the interpreter; report each launch (the script line, hazards, deadlocks, errors with the "
        "kernel line) and what the script did. Options come before SCRIPT; what follows it is the script's.",
    )
    parser.add_argument("script", metavar="SCRIPT.py", type=_script_file, help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's own arguments")
    parser.add_argument("--seed", type=seed, default=0, help="scheduler seed of every launch: the interleaving (0)")
    parser.add_argument(
        "--max-steps",
        type=size,
        default=None,
        metavar="N",
        help="operations one launch may execute before it is stopped (default: no limit)",
    )
    parser.add_argument(
        "--resident-clusters",
        type=size,
        default=None,
        metavar="N",
        help="clusters of a grid running at once, the rest started as they end or taken over by "
        "clc.try_cancel (default: all at once, as when the grid fits the GPU)",
    )
    parser.add_argument(
        "--time-limit",
        type=bounded_float(1.0, 86400.0),
        default=SCRIPT_SECONDS,
        metavar="SECONDS",
        help=f"wall-clock budget of the whole script ({SCRIPT_SECONDS:g} s)",
    )
    parser.add_argument(
        "--no-precheck",
        dest="precheck",
        action="store_false",
        help="do not ask Triton's compiler first whether it accepts each kernel for sm_100a",
    )
    add_json_flag(parser)
    parser.set_defaults(func=run)


def _script_file(value: str) -> str:
    """argparse type: a script that exists and compiles, checked while the arguments are read (before torch and
    Triton are imported: a mistyped path is answered at once)."""
    from gluon_overlap.script.checks import check_script

    try:
        return check_script(value)
    except (ValueError, OSError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _work(args: argparse.Namespace, channel: Any) -> dict:
    """The script on the interpreter (in the guarded child): the report's document."""
    from gluon_overlap.commands.guarded import WallClockExceeded
    from gluon_overlap.script.runner import run_script

    def on_start(path: str) -> None:
        channel.watched_files.add(path)
        channel.phase("the script", args.time_limit)

    report = run_script(
        args.script,
        args.args,
        seed=args.seed,
        max_steps=args.max_steps,
        precheck=args.precheck,
        on_start=on_start,
        budget_exceptions=(WallClockExceeded,),
        resident_clusters=args.resident_clusters,
    )
    channel.end_phase()
    return report.to_dict()


def _lost(args: argparse.Namespace, lost: Any) -> dict:
    """The document of a script whose process ended without an answer (killed past its budget, or a way out the
    guard could not turn into an exception)."""
    what = (
        f"it did not stop at its wall-clock budget of {args.time_limit:g} s and was killed"
        if lost.stopped_by_clock
        else lost.how
    )
    return {
        "script": args.script,
        "argv": list(args.args),
        "ok": False,
        "exit_status": None,
        "script_error": f"the script's process ended: {what} during {lost.phase}",
        "stopped_by": "wall-clock" if lost.stopped_by_clock else "killed",
        "launches": [],
        "hazards": 0,
        "deadlocks": 0,
        "errors": 0,
        "seconds": None,
        "output": "",
    }


def _launch_result(launch: dict) -> str:
    if launch["error"]:
        return "error"
    if launch["deadlock_text"]:
        return "deadlock"
    if launch["step_limit_hit"]:
        return "step budget"
    if launch["hazards"]:
        return f"{len(launch['hazards'])} hazard(s)"
    return "clean"


def _render(d: dict) -> str:
    rows = [
        ("script", d["script"]),
        ("arguments", " ".join(d["argv"]) or "none"),
        ("launches", len(d["launches"])),
        ("hazards", d["hazards"]),
        ("deadlocks", d["deadlocks"]),
        ("launch errors", d["errors"]),
        (
            "script ended",
            "stopped by a launch (an error or deadlock ends a GPU program too)"
            if d["stopped_by"] == "launch"
            else "stopped by its wall-clock budget"
            if d["stopped_by"] == "wall-clock"
            else "killed"
            if d["stopped_by"] == "killed"
            else f"exit status {d['exit_status']}",
        ),
    ]
    if d["script_error"]:
        rows.append(("script raised", d["script_error"]))
    rows.append(("seconds", d["seconds"] if d["seconds"] is not None else "n/a"))
    rows.append(("result", "OK" if d["ok"] else "PROBLEM"))
    out = [format_table(["quantity", "value"], rows)]
    if d["launches"]:
        out.append("")
        out.append(
            format_table(
                ["#", "kernel", "launched at", "grid", "warps", "ctas", "result", "steps", "seconds"],
                [
                    (
                        i,
                        launch["kernel"],
                        (launch["line"] or "?")[:60],
                        "x".join(str(g) for g in launch["grid"]) or "-",
                        launch["num_warps"],
                        launch["num_ctas"],
                        _launch_result(launch),
                        launch["steps"],
                        launch["seconds"],
                    )
                    for i, launch in enumerate(d["launches"])
                ],
            )
        )
    for i, launch in enumerate(d["launches"]):
        if launch["ok"]:
            continue
        out.append("")
        out.append(f"launch #{i} ({launch['kernel']}, {launch['line']}):")
        if launch["error"]:
            out.append(f"  error: {launch['error']}")
        for h in launch["hazards"][:10]:
            out.append(f"  {h['kind']}: {h['partition']} cta{h['cta']} cluster{h['cluster']} at {h['line']}")
            out.append(f"    {h['detail']}")
        if len(launch["hazards"]) > 10:
            out.append(f"  ... and {len(launch['hazards']) - 10} more hazard(s)")
        if launch["deadlock_text"]:
            out.extend("  " + line for line in launch["deadlock_text"].splitlines())
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from gluon_overlap.commands.guarded import ChildLost, run_guarded

    try:
        data = run_guarded(lambda channel: _work(args, channel))
    except ChildLost as lost:
        data = _lost(args, lost)
    if not args.json:
        for launch in data["launches"]:
            launch.pop("deadlock", None)
    emit(args, data, _render)
    return 0 if data["ok"] else 1
