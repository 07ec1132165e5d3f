"""``gluon-overlap bench``: the seed's benchmark table on a Blackwell GPU, optionally saved as CSV."""

from __future__ import annotations

import argparse
import sys

from gluon_overlap.commands._output import check_writable_dir, output_file, resolve_triton_cache, seed, size


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from gluon_overlap.bench import DEFAULT_KS, DEFAULT_M, DEFAULT_N

    parser = subparsers.add_parser(
        "bench",
        help="time the kernel with overlap off and on (and cuBLAS) on an sm_100/sm_103 GPU",
        description="For each format pair and K: TFLOP/s of the kernel with overlap off and on, timed by CUDA-graph "
        "replay, the speedup, and torch._scaled_mm (cuBLAS) where torch supports the pair. Needs a B200/GB200/B300/"
        "GB300; elsewhere it exits with status 2 and says why (after checking the arguments, the CSV path and Triton's "
        "cache folder). The CSV is written whole or not at all. CSV columns: a_format,b_format,m,n,k,tflops_off,"
        "tflops_on,speedup_pct,tflops_cublas,gpu.",
    )
    parser.add_argument("--m", type=size, default=DEFAULT_M, help=f"rows of A and C (default {DEFAULT_M})")
    parser.add_argument(
        "--n", type=size, default=DEFAULT_N, help=f"rows of B, columns of C, a multiple of 8 (default {DEFAULT_N})"
    )
    parser.add_argument(
        "--k",
        type=size,
        nargs="+",
        default=list(DEFAULT_KS),
        help=f"reduction sizes, multiples of 128 (default {' '.join(map(str, DEFAULT_KS))})",
    )
    parser.add_argument(
        "--formats",
        nargs="+",
        default=None,
        metavar="A-B",
        help="format pairs such as mxfp8-mxfp4 (default: the seed's four)",
    )
    parser.add_argument("--no-cublas", action="store_true", help="skip the torch._scaled_mm baseline")
    parser.add_argument(
        "--csv",
        nargs="?",
        const="auto",
        default=None,
        metavar="FILE",
        type=_csv_file,
        help="save the rows as CSV (without FILE: data/bench/<gpu>.csv)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the random operands (default 0)")
    parser.set_defaults(func=run)
    return parser


def _csv_file(value: str) -> str:
    return value if value == "auto" else output_file(value)  # its folder must exist, as for every output


def resolve_pairs(formats: list[str] | None) -> list[tuple[str, str]]:
    from gluon_overlap.bench import parse_pair
    from gluon_overlap.limits import SUPPORTED_PAIRS, check_pair

    return list(SUPPORTED_PAIRS) if not formats else [check_pair(*parse_pair(f)) for f in formats]


def check_args(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Before the GPU is touched, in the order a user meets them: the pairs, the sizes (``gluon_overlap.limits``),
    the CSV path (a ``--csv FILE`` was already checked by the parser), then Triton's cache folder (named, with
    the variable to set, when it cannot be used)."""
    from gluon_overlap.bench import check_sizes, default_csv_path
    from gluon_overlap.limits import check_problem

    pairs = resolve_pairs(args.formats)
    check_sizes(args.m, args.n, args.k)
    for k in args.k:
        check_problem(args.m, args.n, k, "--")
    if args.csv == "auto":
        check_writable_dir(str(default_csv_path("gpu").parent), "--csv", create_parents=True)  # the default: made
    resolve_triton_cache()  # the kernels are compiled before they are timed
    return pairs


def run(args: argparse.Namespace) -> int:
    from gluon_overlap.bench import default_csv_path, format_table, require_blackwell, run_benchmark, write_csv

    pairs = check_args(args)  # everything that needs no GPU first
    require_blackwell()  # ValueError -> "gluon-overlap bench: error: cannot benchmark here: ..." and status 2
    import torch

    from gluon_overlap.limits import check_bench

    check_bench(args.m, args.n, args.k, gpu_free=torch.cuda.mem_get_info()[0])  # before any operand
    print(format_table([]), flush=True)
    rows = run_benchmark(
        args.m,
        args.n,
        args.k,
        pairs,
        cublas=not args.no_cublas,
        seed=args.seed,
        progress=lambda line: print(line, flush=True),
    )
    print()
    print(format_table(rows))
    if args.csv:
        path = default_csv_path(rows[0].gpu) if args.csv == "auto" else args.csv
        print(f"wrote {write_csv(rows, path)}", file=sys.stderr)  # whole or not at all (Ctrl-C, a full disk)
    return 0
