"""Re-run the timing model's trials that docs/NOTES.md records ("Three trials on the memory system", 2026-12-05).

A trial holds some description values of the B300 (or swaps one law of the backend), refits the five fitted values
from the committed optimum (``gluon_overlap.timing.fit.fit``, 12 published cells, the same loss) and judges every
cell against issue 28's goals.  Nothing is written; the committed model is untouched.

    .venv/bin/python benchmarks/model_trials.py                 # every trial (about 20 s each on 2 cores)
    .venv/bin/python benchmarks/model_trials.py l2-12 committed  # some of them
    .venv/bin/python benchmarks/model_trials.py --list
    .venv/bin/python benchmarks/model_trials.py --hold mbarrier_remote_clk=170.18 committed  # at the H200's hop
    .venv/bin/python benchmarks/model_trials.py --copy-record b200.json scale-copy-measured  # a Blackwell measurement

``scale-copy-measured`` prices the scale copies as ``benchmarks/blackwell_scale_copy.py`` measured them on a Blackwell
part (its record's "every SM" rows); it runs only with ``--copy-record``.

The run cache is off for these processes (a swapped law is not part of the code hash the cache is keyed by).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from unittest import mock

os.environ["GLUON_OVERLAP_MODEL_CACHE"] = "off"

from gluon_overlap.hardware import load_hardware  # noqa: E402
from gluon_overlap.interp.ops import Mma, ScaleCopy  # noqa: E402
from gluon_overlap.timing import backend, costs, fit, model  # noqa: E402
from gluon_overlap.tmem import make_plan  # noqa: E402

GAIN_GOAL_PP, OFF_GOAL_PCT = 4.0, 10.0  # issue 28


@contextlib.contextmanager
def _swapped(patch: contextlib.AbstractContextManager) -> Iterator[None]:
    """Run under ``patch`` (a ``unittest.mock`` patcher of the backend); the runs made under it are forgotten after."""
    try:
        with patch:
            yield
    finally:
        model.forget()


def _priced(prices: dict[type, Callable]) -> contextlib.AbstractContextManager[None]:
    """The backend prices the operations of these classes with these functions."""
    return _swapped(mock.patch.dict(backend._PRICE_OF_CLASS, prices))


def _is_fp4(b: backend.CostBackend) -> bool:
    return (b.plan.a_format, b.plan.b_format) == ("mxfp4", "mxfp4")


def fp4_tile_cost(us: float) -> contextlib.AbstractContextManager[None]:
    """No mechanism, the reference: ``us`` more on the tensor pipe at the first MMA of every mxfp4 x mxfp4 tile."""
    plain = backend.CostBackend._price_mma

    def price(self: backend.CostBackend, op: Mma, now: float) -> float:
        if op.kstep == 0 and _is_fp4(self):
            return self._tensor(now, self.t_mma + us * 1e-6) - now
        return plain(self, op, now)

    return _priced({Mma: price})


def scale_copies_exposed_at_tile_start(clk_each: float) -> contextlib.AbstractContextManager[None]:
    """The scale copies (``tcgen05.cp``, UTCCP in the SASS: 3 a K step for kind::mxf8f6f4, 6 for kind::mxf4) issued
    into an idle tensor pipe -- a tile's first K step, in both runs -- cost ``clk_each`` each, one after the other,
    before its first MMA; copies issued behind busy MMAs cost what the committed model says.  The chain of
    :func:`scale_copy_chain_at_tile_start` with its latency equal to its interval."""
    return scale_copy_chain_at_tile_start(clk_each, clk_each)


def scale_copy_chain_at_tile_start(latency_clk: float, interval_clk: float) -> contextlib.AbstractContextManager[None]:
    """Copies issued into an idle tensor pipe, pipelined: the first costs ``latency_clk``, each further one before the
    next MMA ``interval_clk`` (six of them fit beside a K step's MMAs when ``interval_clk`` is at most a sixth of it);
    copies issued behind busy MMAs cost what the committed model says.  Priced as the record a measurement of such a
    part would write (:func:`measured_scale_copies`)."""
    record = copy_record(lambda n: latency_clk + (n - 1) * interval_clk, committed_copy_clk)
    return measured_scale_copies(copy_costs_from_record(record))


def overlap_off_write_back(efficiency: float) -> contextlib.AbstractContextManager[None]:
    """No derivation: the overlap-off launches write C back at ``efficiency`` x HBM (their clusters drain together,
    in bursts), the overlapped ones at the fitted ``hbm_write_efficiency``."""
    plain = backend.CostBackend._tma_store_terms

    def terms(self: backend.CostBackend, local: int | None) -> tuple[int, float, float, float]:
        wave, data, shared, hbm = plain(self, local)
        if not self.plan.overlap:
            hw = dataclasses.replace(self.hw, hbm_write_efficiency=efficiency)
            hbm = costs.hbm_write_time(hw, self.store_bytes, self.sharers(wave))
        return wave, data, shared, hbm

    return _swapped(mock.patch.object(backend.CostBackend, "_tma_store_terms", terms))


def write_back_buffer(mb: float) -> contextlib.AbstractContextManager[None]:
    """L2 holds at most ``mb`` MB of C not yet written back (GPU-wide, shared by the active clusters): a TMA store's
    read ends no earlier than the cluster's write-back queue is down to its share (0 MB: stores wait for their
    write-back)."""
    plain = backend.CostBackend._price_tma_store

    def price(self: backend.CostBackend, op: backend.Op, now: float) -> float:
        held = mb * 1e6 / self.hw.hbm_write_bytes_per_s  # seconds of write-back the buffer holds
        return max(plain(self, op, now), self.hbm_free - held - now)

    return _priced({backend.TmaStore: price})


def didt_throttle(offset: float, window_us: float) -> contextlib.AbstractContextManager[None]:
    """di/dt issue throttling (the issue rate capped at a moving average of recent issue plus an offset; an NVIDIA
    patent by Nelson, Choquette and Giroux describes it): an mxfp4 x mxfp4 MMA runs at ``min(1, a + offset)`` of its
    rate, ``a`` the tensor pipe's activity averaged over ``window_us``.  FP8-kind MMAs (half the multiply-adds an
    instruction) are not throttled."""
    plain = backend.CostBackend._price_mma
    window = window_us * 1e-6

    def price(self: backend.CostBackend, op: Mma, now: float) -> float:
        if not _is_fp4(self):
            return plain(self, op, now)
        ema, at = getattr(self, "trial_didt", (0.0, 0.0))  # one run's activity average, on its backend
        start = max(now, self.tensor_free)
        if start > at:
            ema *= math.exp(-(start - at) / window)
        rate = min(1.0, ema + offset)
        service = self.t_mma / rate
        end = self._tensor(now, service)
        self.trial_didt = (rate - (rate - ema) * math.exp(-service / window), end)
        return end - now

    return _priced({Mma: price})


#: the format pairs of the B300's published tables, as blackwell_scale_copy.py's record names them
RECORD_PAIRS = {
    ("mxfp8", "mxfp8"): "mxfp8 x mxfp8",
    ("mxfp8", "mxfp4"): "mxfp8 x mxfp4",
    ("mxfp4", "mxfp4"): "mxfp4 x mxfp4",
}
COPY_FIGURES = ("copies_per_step", "cold_copies_exposed_clk", "copies_behind_mmas_clk_per_step")


def committed_copy_clk(copies: int) -> float:
    """The committed model's price of ``copies`` scale copies: each 512-byte chunk at the B300's shared-memory bytes a
    clock (4 clocks a copy)."""
    return copies * costs.SCALE_CHUNK_BYTES / load_hardware("b300").smem_bytes_per_clk


def copy_record(exposed: Callable[[int], float], behind: Callable[[int], float]) -> dict:
    """The "every SM" rows a ``blackwell_scale_copy.py`` record would hold if a K step's ``n`` copies cost
    ``exposed(n)`` cycles into an idle pipe and ``behind(n)`` behind busy MMAs (``n``: the kernel's count for the
    pair)."""
    rows = {}
    for pair, name in RECORD_PAIRS.items():
        n = costs.scale_copy_chunks(make_plan(*pair))
        rows[name] = {
            "every SM": {
                "copies_per_step": n,
                "cold_copies_exposed_clk": exposed(n),
                "copies_behind_mmas_clk_per_step": behind(n),
            }
        }
    return {"pairs": rows}


@dataclass(frozen=True)
class CopyCost:
    """What one K step's scale copies cost the tensor pipe, measured (cycles; a negative difference counts as 0)."""

    copies_per_step: int
    exposed_clk: float  # a K step's copies issued into an idle pipe, before its MMA (a tile's start, a starved step)
    behind_clk: float  # a K step's copies issued behind busy MMAs


def copy_costs_from_record(record: object, where: str = "every SM") -> dict[tuple[str, str], CopyCost]:
    """The measured copy costs of the published pairs from a ``blackwell_scale_copy.py`` record (its ``where`` rows);
    a ValueError names what is missing or malformed."""
    pairs = record.get("pairs") if isinstance(record, dict) else None
    if not isinstance(pairs, dict):
        raise ValueError("the record has no 'pairs' object: is it blackwell_scale_copy.py's output?")
    out = {}
    for pair, name in RECORD_PAIRS.items():
        row = pairs.get(name, {}).get(where) if isinstance(pairs.get(name), dict) else None
        if not isinstance(row, dict):
            raise ValueError(f"the record has no {where!r} row for {name}")
        figures = {}
        for key in COPY_FIGURES:
            value = row.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name}, {where}: {key} must be a finite number, got {value!r}")
            figures[key] = float(value)
        copies = figures["copies_per_step"]
        model_copies = costs.scale_copy_chunks(make_plan(*pair))
        if copies != model_copies:
            raise ValueError(
                f"{name}, {where}: copies_per_step is {copies:g}, but the kernel issues {model_copies} a K step "
                "(a record of another kernel?)"
            )
        out[pair] = CopyCost(
            int(copies), figures["cold_copies_exposed_clk"], figures["copies_behind_mmas_clk_per_step"]
        )
    return out


def measured_scale_copies(costs_by_pair: dict[tuple[str, str], CopyCost]) -> contextlib.AbstractContextManager[None]:
    """Scale copies priced as measured: a K step whose first copy finds the tensor pipe idle (a tile's start, or a
    step the loads starved) pays the measured exposed cycles, any other the measured cost behind busy MMAs -- decided
    once a step, at its first copy -- each copy instruction its share of the step's; the cycles are the measuring
    part's, counted at the modelled part's clock."""
    plain_mma = backend.CostBackend._price_mma

    def copy(self: backend.CostBackend, op: ScaleCopy, now: float) -> float:
        cost = costs_by_pair[(self.plan.a_format, self.plan.b_format)]
        if not getattr(self, "trial_step_open", False):  # the step's first copy decides for all of them
            self.trial_step_open, self.trial_copies_exposed = True, self.tensor_free <= now
        step_clk = cost.exposed_clk if self.trial_copies_exposed else cost.behind_clk
        chunks = op.columns.cols // costs.SCALE_K_PER_CHUNK  # this instruction's share of the step's copies
        return self._tensor(now, self.hw.clk(max(step_clk, 0.0) * chunks / cost.copies_per_step)) - now

    def mma(self: backend.CostBackend, op: Mma, now: float) -> float:
        self.trial_step_open = False
        return plain_mma(self, op, now)

    return _priced({ScaleCopy: copy, Mma: mma})


@dataclass(frozen=True)
class Trial:
    about: str
    held: dict[str, float] = field(default_factory=dict)
    law: Callable[[], contextlib.AbstractContextManager[None]] | None = None  # a backend law swapped for the run
    needs_record: bool = False  # its law comes from --copy-record


MEASURED = "scale-copy-measured"
TRIALS = {
    "committed": Trial("the committed description, refitted from its own optimum (the baseline)"),
    "stores-wait-for-write-back": Trial("stores paced by their write-back", law=lambda: write_back_buffer(0.0)),
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
    # the FP4 hunt (a helper's review, same day): per-tile costs that fall on mxfp4 x mxfp4
    "fp4-tile-0.3": Trial("reference, no mechanism: +0.3 us per mxfp4 tile", law=lambda: fp4_tile_cost(0.3)),
    "scale-copies-38": Trial(
        "the scale copies exposed at a tile's start, 38 clk each (the most the mxfp8 K step leaves)",
        law=lambda: scale_copies_exposed_at_tile_start(38),
    ),
    "scale-copies-150": Trial(
        "the scale copies exposed at a tile's start, 150 clk each (an MMA-like latency, unmeasured)",
        law=lambda: scale_copies_exposed_at_tile_start(150),
    ),
    "scale-copy-chain-150-90": Trial(
        "scale copies into an idle pipe pipelined: the first 150 clk, each further one 90 (six fit in a K step)",
        law=lambda: scale_copy_chain_at_tile_start(150.0, 90.0),
    ),
    "scale-copy-chain-300-90": Trial(
        "scale copies into an idle pipe pipelined: the first 300 clk, each further one 90",
        law=lambda: scale_copy_chain_at_tile_start(300.0, 90.0),
    ),
    "scale-copy-chain-450-16": Trial(
        "scale copies into an idle pipe: one latency of 450 clk, then 16 clk each (the pipe's issue rate)",
        law=lambda: scale_copy_chain_at_tile_start(450.0, 16.0),
    ),
    MEASURED: Trial(
        "the scale copies as blackwell_scale_copy.py measured them (--copy-record: exposed into an idle pipe, "
        "and behind busy MMAs)",
        needs_record=True,
    ),
    "off-write-back-0.62": Trial(
        "overlap-off launches write back at 0.62 x HBM (no derivation)", law=lambda: overlap_off_write_back(0.62)
    ),
    "write-back-buffer-2": Trial("L2 holds 2 MB of C not yet written back", law=lambda: write_back_buffer(2.0)),
    "write-back-buffer-4": Trial("L2 holds 4 MB of C not yet written back", law=lambda: write_back_buffer(4.0)),
    "didt-0.5-1": Trial("di/dt throttle of mxfp4 MMAs, offset 0.5, window 1 us", law=lambda: didt_throttle(0.5, 1.0)),
    "remote-hop-h200-relay": Trial(
        "remote hop held at the H200's epilogue-form hand-over (170 clk)", {"mbarrier_remote_clk": 170.18}
    ),
    "remote-hop-h200-warp": Trial(
        "remote hop held at the H200's whole-warp hand-over (144.7 clk, the MMA warp's form)",
        {"mbarrier_remote_clk": 144.74},
    ),
    "remote-hop-h200-thread": Trial(
        "remote hop held at the H200's lone-thread hand-over (279.5 clk)", {"mbarrier_remote_clk": 279.5}
    ),
    "local-hop-h200": Trial("local hop at the H200's measurement (62.5 clk)", {"mbarrier_local_clk": 62.5}),
}


def _clashes(trial: Trial, extra_held: dict[str, float]) -> list[str]:
    """The names ``extra_held`` gives another value than ``trial`` holds itself."""
    return [n for n, v in extra_held.items() if n in trial.held and trial.held[n] != v]


def _law(name: str, copy_costs: dict[tuple[str, str], CopyCost] | None) -> contextlib.AbstractContextManager[None]:
    trial = TRIALS[name]
    if trial.needs_record:
        if copy_costs is None:
            raise ValueError(f"trial {name!r} needs copy_costs: a measurement (copy_costs_from_record)")
        return measured_scale_copies(copy_costs)
    return trial.law() if trial.law else contextlib.nullcontext()


def run(
    name: str, extra_held: dict[str, float] | None = None, copy_costs: dict[tuple[str, str], CopyCost] | None = None
) -> dict:
    """Refit under trial ``name`` (and ``extra_held`` description values on top of its own; ``copy_costs`` for the
    measured trial) and judge every published cell; returns the figures NOTES quotes."""
    trial = TRIALS[name]
    clash = _clashes(trial, extra_held or {})
    if clash:
        raise ValueError(f"trial {name!r} holds {', '.join(f'{n} = {trial.held[n]:g}' for n in clash)} itself")
    law = _law(name, copy_costs)
    held = {**trial.held, **(extra_held or {})}
    hw = fit._apply(load_hardware("b300"), held)
    tables = fit.load_tables()
    model.forget()  # the same values under another law are another run
    with law:
        names = [n for n in fit.FITTED if n not in held]
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


def _parse_holds(parser: argparse.ArgumentParser, holds: list[str]) -> dict[str, float]:
    """``NAME=VALUE`` pairs as description values; a parser error for a malformed pair or an unknown name."""
    fields = {f.name for f in dataclasses.fields(load_hardware("b300"))}
    held = {}
    for item in holds:
        name, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not sep or not math.isfinite(number):
            parser.error(f"--hold takes NAME=VALUE with a finite number, got {item!r}")
        if name not in fields:
            parser.error(f"--hold: {name!r} is not a value of the B300 description")
        held[name] = number
    return held


def _read_copy_record(parser: argparse.ArgumentParser, path: str, where: str) -> dict[tuple[str, str], CopyCost]:
    """The record's copy costs (its ``where`` rows); a parser error for a file that cannot be read or is not such a
    record."""
    try:
        with open(path) as f:
            record = json.load(f)
        return copy_costs_from_record(record, where)
    except (OSError, json.JSONDecodeError, ValueError) as exc:
        parser.error(f"--copy-record {path}: {exc}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trials", nargs="*", help="trial names (default: all)")
    parser.add_argument("--list", action="store_true", help="list the trials and stop")
    parser.add_argument(
        "--hold",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="also hold this B300 description value in every trial run (repeatable), e.g. mbarrier_remote_clk=170",
    )
    parser.add_argument(
        "--copy-record",
        metavar="JSON",
        help="a benchmarks/blackwell_scale_copy.py record: the measured scale-copy costs for " + MEASURED,
    )
    parser.add_argument(
        "--copy-rows",
        choices=("every SM", "one cluster"),
        default="every SM",
        help="which of the record's rows: a cluster on every SM pair (the kernel's case, the default) or one alone",
    )
    args = parser.parse_args()
    extra_held = _parse_holds(parser, args.hold)
    if args.list:
        for name, trial in TRIALS.items():
            print(f"{name:28s} {trial.about}")
        return
    unknown = [t for t in args.trials if t not in TRIALS]
    if unknown:
        parser.error(f"unknown trial(s) {', '.join(unknown)}; --list shows them")
    has_record = args.copy_record is not None
    names = args.trials or [n for n in TRIALS if has_record or not TRIALS[n].needs_record]
    if not has_record and any(TRIALS[n].needs_record for n in names):
        parser.error(f"trial {MEASURED} needs --copy-record (a benchmarks/blackwell_scale_copy.py record)")
    if has_record and not any(TRIALS[n].needs_record for n in names):
        parser.error(f"--copy-record is read only by trial {MEASURED}: name it, or no trial at all (every trial)")
    copy_costs = _read_copy_record(parser, args.copy_record, args.copy_rows) if has_record else None
    clashes = [n for n in names if _clashes(TRIALS[n], extra_held)]
    if clashes:
        parser.error(f"--hold changes a value that trial(s) {', '.join(clashes)} hold themselves")
    for name in names:
        t0 = time.perf_counter()
        out = run(name, extra_held, copy_costs)
        if not math.isfinite(out["loss"]):
            sys.exit(f"{name}: the fit did not converge")
        report(name, out, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
