"""What a Blackwell measurement of the scale copies would decide: the refit under each candidate record, written down.

``benchmarks/blackwell_scale_copy.py`` measures, on a B200 / B300, what a K step's scale copies cost the tensor pipe
when they find it idle (a tile's start) and when they queue behind busy MMAs; ``model_trials.py --copy-record`` then
refits the model with the copies priced so. No Blackwell part is lent, so this script writes the *candidate* records
-- the committed price and the laws NOTES discusses -- as such records would read, refits under each (the remote hop
fitted, and held at the H200's measured hand-over), and writes every cell's error and the law's predictions of the
B300's unseen mxfp4 x mxfp4 cells to ``data/fit/scale-copy-decision.json``: a registration made before the
measurement, which notebook 07c reads. These records are hypotheses, not measurements.

    .venv/bin/python benchmarks/scale_copy_decision.py             # about 6 refits a process, ~30 s each on 2 cores
    .venv/bin/python benchmarks/scale_copy_decision.py --jobs 4

``tests/timing/test_scale_copy_decision.py`` re-evaluates every recorded refit (the model at its recorded values under
its record's law) and checks each figure.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

os.environ["GLUON_OVERLAP_MODEL_CACHE"] = "off"  # a swapped law is not part of the code hash the cache is keyed by
sys.path.insert(0, str(Path(__file__).resolve().parent))

import model_trials  # noqa: E402

from gluon_overlap.hardware import load_hardware  # noqa: E402
from gluon_overlap.timing import fit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "fit" / "scale-copy-decision.json"
#: the remote hop fitted (None), and held at the H200's measured epilogue-form hand-over (data/measurements)
HOPS: dict[str, float | None] = {"fitted": None, "held at the H200's 170.18 clk": 170.18}
#: the B300 cells no published table holds yet, whose predictions each law registers (mxfp4 x mxfp4, M = N = 8192)
UNSEEN_KS = (2048, 4096, 8192)


@dataclass(frozen=True)
class Law:
    """A candidate record: a K step's copies' cycles into an idle pipe and behind busy MMAs, given its copy count."""

    key: str
    about: str
    exposed: Callable[[int], float]
    behind: Callable[[int], float]


_committed = model_trials.committed_copy_clk

LAWS = (
    Law("committed", "the committed price both ways (a copy's 512 bytes at 128 B a clock)", _committed, _committed),
    Law(
        "idle-150-each",
        "each copy into an idle pipe 150 clk; behind busy MMAs as committed",
        lambda n: 150.0 * n,
        _committed,
    ),
    Law(
        "idle-450-then-16",
        "into an idle pipe one latency of 450 clk, then 16 clk a copy; behind busy MMAs as committed",
        lambda n: 450.0 + 16.0 * (n - 1),
        _committed,
    ),
    Law(
        "idle-300-then-90",
        "into an idle pipe 300 clk for the first copy, then 90 clk a copy; behind busy MMAs as committed",
        lambda n: 300.0 + 90.0 * (n - 1),
        _committed,
    ),
    Law(
        "busy-10-each", "into an idle pipe as committed; 10 clk a copy behind busy MMAs", _committed, lambda n: 10.0 * n
    ),
    Law(
        "busy-20-each", "into an idle pipe as committed; 20 clk a copy behind busy MMAs", _committed, lambda n: 20.0 * n
    ),
    Law(
        "busy-40-each", "into an idle pipe as committed; 40 clk a copy behind busy MMAs", _committed, lambda n: 40.0 * n
    ),
)


def record_for(law: Law) -> dict:
    """The record a ``blackwell_scale_copy.py`` run would write if the part behaved as ``law`` says."""
    return model_trials.copy_record(law.exposed, law.behind)


def unseen_predictions(hw: object, copy_costs: dict) -> list[dict]:
    """The law's mxfp4 x mxfp4 predictions at the unseen K (``hw`` the refitted description)."""
    table = next(t for t in fit.load_tables() if t.a_format == t.b_format == "mxfp4")
    with model_trials.measured_scale_copies(copy_costs):
        points = fit.model_points(hw, table, UNSEEN_KS)
    return [{"k": p.k, "off_tflops": p.off, "on_tflops": p.on, "gain_pct": p.gain_pct} for p in points]


def refit(law_key: str, hop: str) -> dict:
    """One refit: the law's record priced by ``model_trials``'s measured-copy law, the hop fitted or held."""
    law = next(lw for lw in LAWS if lw.key == law_key)
    record = record_for(law)
    copy_costs = model_trials.copy_costs_from_record(record)
    held = {} if HOPS[hop] is None else {"mbarrier_remote_clk": HOPS[hop]}
    t0 = time.perf_counter()
    out = model_trials.run(model_trials.MEASURED, held, copy_costs)
    hw = fit._apply(fit._apply(load_hardware("b300"), held), out["values"])
    with model_trials.measured_scale_copies(copy_costs):
        loss_at_values = fit.loss(hw, fit.load_tables())  # the fit's loss is its optimum's; its values are rounded
    return {
        "law": law.key,
        "about": law.about,
        "hop": hop,
        "held": held,
        "record": record,
        "values": out["values"],
        "loss": out["loss"],
        "loss_at_values": loss_at_values,
        "gain_within_goal": out["gain_within_goal"],
        "off_within_goal": out["off_within_goal"],
        "worst_gain": out["worst_gain"],
        "cells": out["cells"],
        "unseen_mxfp4": unseen_predictions(hw, copy_costs),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="refits run at once (processes)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if not args.out.parent.is_dir():
        parser.error(f"--out {args.out}: its folder does not exist")
    runs = [(law.key, hop) for law in LAWS for hop in HOPS]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(refit, *zip(*runs, strict=True)))
    for r in results:
        w = r["worst_gain"]
        print(
            f"{r['law']:18s} hop {r['hop']:30s} loss {r['loss']:.4f}  gains within 4 pp {r['gain_within_goal']:2d}"
            f"  worst {w['gain_error_pp']:+6.2f} ({w['pair']} K = {w['k']})  ({r['seconds']:.0f} s)"
        )
    doc = {
        "about": "Candidate records of benchmarks/blackwell_scale_copy.py (hypotheses, not measurements) and the "
        "timing model refitted under each by benchmarks/model_trials.py's measured-copy law, the remote hop fitted "
        "and held at the H200's hand-over; every published B300 cell's error, issue 28's goals counted, and each "
        "law's predictions of the unseen mxfp4 x mxfp4 cells (M = N = 8192), registered before a Blackwell "
        "measurement or those rows.",
        "goals": {"gain_error_pp": model_trials.GAIN_GOAL_PP, "off_error_pct": model_trials.OFF_GOAL_PCT},
        "committed_clk_per_copy": model_trials.committed_copy_clk(1),
        "runs": results,
        "provenance": {
            "command": "python benchmarks/scale_copy_decision.py --jobs " + str(args.jobs),
            "commit": _commit(),
            "date_utc": datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat(),
            "seconds": round(time.perf_counter() - t0, 1),
        },
    }
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(args.out)
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
