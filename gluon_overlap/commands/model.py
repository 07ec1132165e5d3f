"""``gluon-overlap model``: the timing model's prediction of the seed's benchmark table."""

from __future__ import annotations

import argparse
import textwrap

from gluon_overlap.commands._output import add_format_args, add_json_flag, bounded_float, emit, format_table, size
from gluon_overlap.text import CLI_WIDTH

DEFAULT_KS = (512, 1024, 2048, 4096, 8192)
#: the --epilogue-scale what-if accepts factors in this range (beyond it the model's numbers mean nothing)
EPILOGUE_SCALE_RANGE = (1e-3, 1e3)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "model",
        help="predict TFLOP/s with overlap off / on from the timing model (no GPU needed)",
        description="Time the real kernel's operations (recorded by the CPU executor) with costs instead of data "
        "on a described GPU "
        "and print the seed's table: format, K, predicted TFLOP/s off and on, speedup, and per row the "
        "time split of the critical cluster (mainloop / exposed epilogue / idle, in microseconds).",
    )
    parser.add_argument(
        "--gpu",
        default="b200",
        type=gpu_name,
        help="hardware description in gluon_overlap/data/hardware (default b200)",
    )
    add_format_args(parser, required=False)
    parser.add_argument("--m", type=size, default=8192, help="rows of A and C (default 8192)")
    parser.add_argument("--n", type=size, default=8192, help="rows of B, columns of C, a multiple of 8 (default 8192)")
    parser.add_argument(
        "--k",
        type=size,
        nargs="+",
        default=list(DEFAULT_KS),
        help="reduction sizes, multiples of 128 (default 512 1024 2048 4096 8192)",
    )
    parser.add_argument(
        "--epilogue-scale",
        type=bounded_float(*EPILOGUE_SCALE_RANGE),
        default=1.0,
        metavar="F",
        help="what if an epilogue subtile took F times as long as the description's cycle "
        "estimates (e.g. 0.5 or 2); the overlap's gain at small K is about proportional to it",
    )
    add_json_flag(parser)
    parser.set_defaults(func=run, check=_check_first)  # cli.main checks the arguments before it imports torch
    return parser


def gpu_name(value: str) -> str:
    """argparse type: a GPU that has a description, checked at once (before torch is imported)."""
    from gluon_overlap.hardware import known_gpus  # light: reads a folder's names

    known = known_gpus()
    if value.lower() not in known:
        raise argparse.ArgumentTypeError(f"{value!r} is not described; known GPUs: {', '.join(known)}")
    return value.lower()


def _pairs(args: argparse.Namespace) -> list[tuple[str, str]]:
    from gluon_overlap.limits import SUPPORTED_PAIRS, check_pair

    if (args.a_format is None) != (args.b_format is None):
        raise ValueError("give both --a-format and --b-format (or neither, for the seed's four pairs)")
    if args.a_format is None:
        return list(SUPPORTED_PAIRS)
    return [check_pair(args.a_format, args.b_format)]


def check_args(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Before any work: the pairs and sizes the kernel takes (``gluon_overlap.limits``)."""
    from gluon_overlap.commands.model_work import check_model_work
    from gluon_overlap.limits import check_model

    pairs = _pairs(args)
    check_model(args.m, args.n, args.k, pairs)
    check_model_work(args.k, pairs)  # the work estimated: refused past the limit, like emulate's
    return pairs


def _check_first(args: argparse.Namespace) -> None:
    """What cli.main checks before it imports torch: the arguments and the GPU's description."""
    from gluon_overlap.hardware import load_hardware

    check_args(args)
    load_hardware(args.gpu)


def run(args: argparse.Namespace) -> int:
    pairs = check_args(args)  # light, and done once already by cli.main before it imported torch
    from gluon_overlap.hardware import load_hardware

    hw = load_hardware(args.gpu)
    from gluon_overlap.timing.table import model_table

    # a progress bar on stderr when it is a terminal; none with --json (the output is for a program)
    data = model_table(
        hw, pairs, args.k, args.m, args.n, epilogue_scale=args.epilogue_scale, progress=not getattr(args, "json", False)
    )
    emit(args, data, render)
    return 0


def _split(row: dict, tag: str) -> str:
    return "/".join(f"{row[f'{part}_us_{tag}']:.1f}" for part in ("mainloop", "exposed_epilogue", "idle"))


def _band(lo_hi: list[float], fmt: str) -> str:
    return "[" + "..".join(format(v, fmt) for v in lo_hi) + "]"


def render(data: dict) -> str:
    head = (
        f"Predicted by the timing model for {data['gpu']} ({data['description']})\n"
        f"M={data['m']} N={data['n']}: {data['clusters']} clusters, {data['tiles_per_cluster']} tiles "
        "on the critical cluster. Split = mainloop / exposed epilogue / idle, microseconds.\n"
        "Bands: the uncertain parameters moved within their post-fit ranges, plus the fit's residual scatter "
        "(method, ranges, reasons: --json)."
    )
    if data["epilogue_scale"] != 1.0:
        head += f"\nWhat-if: every epilogue subtile cost scaled by {data['epilogue_scale']:g}."
    if any(r.get("extrapolated") for r in data["rows"]):
        worst = max(r.get("extrapolation_error", 0.0) for r in data["rows"])
        head += f"\nSteady-state extrapolation of truncated runs (misfit at a check point {worst:.1e})."
    rows = [
        [
            f"{r['a_format']}-{r['b_format']}",
            r["k"],
            round(r["tflops_off"], 1),
            _band(r["tflops_off_band"], ".0f"),
            round(r["tflops_on"], 1),
            _band(r["tflops_on_band"], ".0f"),
            f"{r['speedup_pct']:.2f}%",
            _band(r["speedup_band_pct"], ".1f"),
            _split(r, "off"),
            _split(r, "on"),
        ]
        for r in data["rows"]
    ]
    table = format_table(
        [
            "format",
            "K",
            "off TFLOP/s",
            "off band",
            "on TFLOP/s",
            "on band",
            "speedup",
            "speedup band %",
            "split off (us)",
            "split on (us)",
        ],
        rows,
    )
    return "\n".join(textwrap.fill(line, CLI_WIDTH) for line in head.splitlines()) + "\n\n" + table
