"""``gluon-overlap plan``: print the TMEM plan of one configuration."""

from __future__ import annotations

import argparse
import textwrap
from typing import TYPE_CHECKING

from gluon_overlap.commands._output import add_format_args, add_json_flag, emit, format_table, size
from gluon_overlap.commands._vocabulary import add_block_k_option, add_overlap_option
from gluon_overlap.text import CLI_WIDTH

if TYPE_CHECKING:
    from gluon_overlap.tmem import TmemPlan


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "plan",
        help="print the TMEM column plan (accumulator and scale windows, early release, drain order)",
        description="Print where the accumulators and the A/B scales live in the 512 TMEM columns of each CTA.",
    )
    add_format_args(parser)
    add_block_k_option(parser, size)
    parser.add_argument("--epilogue-block-n", type=size, default=32, help="columns per epilogue subtile (default 32)")
    add_overlap_option(parser)
    add_json_flag(parser)
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from gluon_overlap.limits import SMEM_PER_CTA_LIMIT, check_config, smem_bytes_per_cta

    plan = check_config(args.a_format, args.b_format, args.block_k, args.epilogue_block_n, args.overlap)
    data = plan.to_dict() | {"shared_bytes": smem_bytes_per_cta(plan), "shared_bytes_limit": SMEM_PER_CTA_LIMIT}
    emit(args, data, lambda d: render(plan, d["shared_bytes"]))
    return 0


def render(plan: TmemPlan, shared_bytes: int | None = None) -> str:
    """A readable table of the plan's windows followed by the epilogue facts."""
    rows: list[list[object]] = []
    for name, win in plan.windows().items():
        if name == "right" and not plan.overlap:
            rows.append([name, "-", "-", "-", "same as left (single buffer)"])
            continue
        rows.append([name, win.offset, win.cols, win.end, _note(plan, name)])
    head = (
        f"TMEM plan per CTA: {plan.a_format} x {plan.b_format}, BLOCK_K={plan.block_k}, "
        f"BLOCK_N={plan.block_n}, EPILOGUE_BLOCK_N={plan.epilogue_block_n}, "
        f"overlap {'on' if plan.overlap else 'off'} ({plan.tmem_cols} columns)"
    )
    table = format_table(["window", "offset", "cols", "end", "note"], rows)
    ov = plan.overlap_window
    facts = [
        f"overlap columns        {plan.overlap_cols}" + (f"  ([{ov.offset}, {ov.end}) shared)" if ov else ""),
        f"early release after    drain step {plan.early_release_subtile} (position in the drain order)"
        if plan.overlap
        else "early release          none (no overlap barrier)",
        f"drain order even tile  {plan.even_drain_order}",
        f"drain order odd tile   {plan.odd_drain_order}",
        f"unused columns         {plan.unused_cols()}",
    ]
    if shared_bytes is not None:
        from gluon_overlap.limits import SMEM_PER_CTA_LIMIT

        facts.append(f"shared memory per CTA  {shared_bytes:,} bytes (limit {SMEM_PER_CTA_LIMIT:,})")
    return "\n".join([textwrap.fill(head, CLI_WIDTH), "", table, "", *facts])


def _note(plan: TmemPlan, name: str) -> str:
    if name == "left":
        return "even tiles" if plan.overlap else "every tile"
    if name == "right":
        return "odd tiles"
    if name == "a_scale":
        return f"BLOCK_K/VEC = {plan.block_k}/{plan.vec_size}: M split over the 2 CTAs"
    return f"BLOCK_K/VEC x BLOCK_N/128 = {plan.block_k // plan.vec_size} x {plan.block_n // 128}: duplicated"
