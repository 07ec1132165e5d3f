"""Re-run the timing model's trials that docs/NOTES.md records ("Three trials on the memory system", 2026-12-05).

A trial holds some description values of the B300 (or swaps one law of the backend), refits the five fitted values
from the committed optimum (``gluon_overlap.timing.fit.fit``, 12 published cells, the same loss) and judges every
cell against issue 28's goals.  Nothing is written; the committed model is untouched.

    .venv/bin/python benchmarks/model_trials.py                 # every trial (about 20 s each on 2 cores)
    .venv/bin/python benchmarks/model_trials.py l2-12 committed  # some of them
    .venv/bin/python benchmarks/model_trials.py --list

The run cache is off for these processes (a swapped law is not part of the code hash the cache is keyed by).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

os.environ["GLUON_OVERLAP_MODEL_CACHE"] = "off"

from gluon_overlap.hardware import load_hardware  # noqa: E402
from gluon_overlap.timing import backend, fit, model  # noqa: E402

GAIN_GOAL_PP, OFF_GOAL_PCT = 4.0, 10.0  # issue 28


@contextlib.contextmanager
def stores_wait_for_write_back() -> Iterator[None]:
    """A TMA store's read of shared memory ends no earlier than its bytes leave the cluster's HBM queue (L2 full
    of dirty lines, every store evicting one to HBM)."""
    plain = backend.CostBackend._price_tma_store

    def paced(self: backend.CostBackend, op: backend.Op, now: float) -> float:
        return max(plain(self, op, now), self.hbm_free - now)

    backend._PRICE_OF_CLASS[backend.TmaStore] = paced
    try:
        yield
    finally:
        backend._PRICE_OF_CLASS[backend.TmaStore] = plain
        model.forget()


@dataclass(frozen=True)
class Trial:
    about: str
    held: dict[str, float] = field(default_factory=dict)
    law: Callable[[], contextlib.AbstractContextManager[None]] | None = None  # a backend law swapped for the run


TRIALS = {
    "committed": Trial("the committed description, refitted from its own optimum (the baseline)"),
    "stores-wait-for-write-back": Trial("stores paced by their write-back", law=stores_wait_for_write_back),
    "l2-11": Trial("L2 -> SM at 11 TB/s", {"l2_read_tb_s": 11.0}),
    "l2-12": Trial("L2 -> SM at 12 TB/s", {"l2_read_tb_s": 12.0}),
    "l2-12.5": Trial("L2 -> SM at 12.5 TB/s", {"l2_read_tb_s": 12.5}),
    "l2-13": Trial("L2 -> SM at 13 TB/s", {"l2_read_tb_s": 13.0}),
    "l2-12-sharing-0.4": Trial(
        "L2 at 12, a store taking 0.4 of its time from the loads", {"l2_read_tb_s": 12.0, "l2_store_load_sharing": 0.4}
    ),
    "l2-12-sharing-0.55": Trial(
        "L2 at 12, a store taking 0.55 of its time from the loads",
        {"l2_read_tb_s": 12.0, "l2_store_load_sharing": 0.55},
    ),
    "l2-12-sharing-1.0": Trial(
        "L2 at 12, a store taking all of its time from the loads", {"l2_read_tb_s": 12.0, "l2_store_load_sharing": 1.0}
    ),
}


def run(name: str) -> dict:
    """Refit under trial ``name`` and judge every published cell; returns the figures NOTES quotes."""
    trial = TRIALS[name]
    hw = fit._apply(load_hardware("b300"), trial.held)
    tables = fit.load_tables()
    model.forget()  # the same values under another law are another run
    with trial.law() if trial.law else contextlib.nullcontext():
        names = [n for n in fit.FITTED if n not in trial.held]
        result = fit.fit(hw, tables, names=names, with_ranges=False, start={n: getattr(hw, n) for n in names})
        hw = fit._apply(hw, result.values)
        cells = []
        for table in tables:
            for predicted, published in zip(fit.model_points(hw, table), table.points, strict=True):
                gain_model = (predicted.on / predicted.off - 1) * 100
                gain_published = (published.on / published.off - 1) * 100
                cells.append(
                    {
                        "pair": table.pair,
                        "k": published.k,
                        "gain_error_pp": gain_model - gain_published,
                        "off_error_pct": (predicted.off / published.off - 1) * 100,
                        "on_error_pct": (predicted.on / published.on - 1) * 100,
                    }
                )
    worst = max(cells, key=lambda c: abs(c["gain_error_pp"]))
    return {
        "values": result.values,
        "loss": result.loss,
        "cells": cells,
        "gain_within_goal": sum(abs(c["gain_error_pp"]) <= GAIN_GOAL_PP for c in cells),
        "off_within_goal": sum(abs(c["off_error_pct"]) <= OFF_GOAL_PCT for c in cells),
        "worst_gain": worst,
    }


def report(name: str, out: dict, seconds: float) -> None:
    print(f"== {name}: {TRIALS[name].about} ({seconds:.0f} s)")
    print("   refitted: " + ", ".join(f"{k} {v:.4g}" for k, v in out["values"].items()))
    for c in out["cells"]:
        print(
            f"   {c['pair']:15s} K = {c['k']:5d}  gain {c['gain_error_pp']:+6.2f} pp  off {c['off_error_pct']:+6.2f} %"
            f"  on {c['on_error_pct']:+6.2f} %"
        )
    w = out["worst_gain"]
    print(
        f"   loss {out['loss']:.4f}; gains within {GAIN_GOAL_PP:g} pp: {out['gain_within_goal']} of "
        f"{len(out['cells'])} (worst {w['gain_error_pp']:+.2f}, {w['pair']} K = {w['k']}); off within "
        f"{OFF_GOAL_PCT:g} %: {out['off_within_goal']}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trials", nargs="*", help="trial names (default: all)")
    parser.add_argument("--list", action="store_true", help="list the trials and stop")
    args = parser.parse_args()
    if args.list:
        for name, trial in TRIALS.items():
            print(f"{name:28s} {trial.about}")
        return
    unknown = [t for t in args.trials if t not in TRIALS]
    if unknown:
        parser.error(f"unknown trial(s) {', '.join(unknown)}; --list shows them")
    for name in args.trials or list(TRIALS):
        t0 = time.perf_counter()
        out = run(name)
        if not math.isfinite(out["loss"]):
            sys.exit(f"{name}: the fit did not converge")
        report(name, out, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
