"""The pre-registered predictions against the published rows found after they were written (issue 28).

**The first registration** (``data/fit/preregistered-heldout-pairs.json``) was written by the model fitted to one
published table, B300 mxfp8 x mxfp8, for the other pairs; their published rows were found afterwards (7 cells:
mxfp8 x mxfp4 at every K, mxfp4 x mxfp4 at K = 512 and 1024).  This module compares the *registered* numbers with
them -- no model runs for these cells, so nothing here can move a prediction towards a measurement -- and judges
every cell against the goals of issue 28, worst case first:

* ``gain_pp``: |predicted - measured gain| <= 4 percentage points;
* ``off_pct``: overlap-off TFLOP/s within 10 %;
* ``band``: the band holds the measured gain (and the bands' median width <= 10 pp).

**The revision.**  Those rows then joined the fit (:data:`gluon_overlap.timing.fit.CALIBRATION_TABLES`), with the
mechanisms they pointed at; the revised model's predictions, with bands, were registered again
(``data/fit/preregistered-unseen-cells.json``) before any of the 8 B300 cells nobody here has seen (mxfp4 x mxfp4 at
K >= 2048, every nvfp4 x nvfp4 row) -- ``revised`` in :func:`comparison` judges the revised model in sample on the 12
cells it was fitted to and lists what it registered for the unseen ones.

**The third model** replaced the revision's shared-memory contention with what was measured (each CTA's half of B read
once; the MMAs' operand reads first, an overlapped drain at half of what they leave) and fitted the overlap
hand-over with the other four values; it registered the same unseen cells again
(``data/fit/preregistered-unseen-cells-third.json``), and ``third`` judges it as ``revised`` judges the second.

Two coarser published facts are compared too: the GB300 gain range the upstream authors report over four formats
and K (:func:`gb300_range`, for each registration), and a kindred kernel's FP4 throughput on the GB300
(:func:`kindred_fp4`: the upstream 2-CTA block-scaled example with one accumulator, close to this kernel with the
overlap off; a live run of the current model, made after that measurement was seen).

``python -m gluon_overlap.regenerate heldout`` writes :data:`COMPARISON`; ``tests/timing/test_heldout.py`` checks it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gluon_overlap.timing.fit import (
    B300_TABLE,
    B300_TABLES,
    PREREGISTERED,
    PREREGISTERED_THIRD,
    PREREGISTERED_UNSEEN,
    PUBLISHED_DIR,
    Table,
    load_tables,
    median,
)

#: the published tables of the first registration's held-out pairs (B300, M = N = 8192), by pair; they have joined
#: the fit since (``fit.CALIBRATION_TABLES``)
HELD_OUT_TABLES: dict[tuple[str, str], str] = {pair: name for pair, name in B300_TABLES.items() if name != B300_TABLE}
GB300_RANGE = "gb300-overlap-gain-range.json"
KINDRED = "gb300-2cta-block-scaled-k64.json"
COMPARISON = PREREGISTERED.parent / "heldout-comparison.json"
#: issue 28's goals, each judged on every cell
GOALS: dict[str, float] = {"gain_pp": 4.0, "off_pct": 10.0, "band_median_width_pp": 10.0}


@dataclass(frozen=True)
class Cell:
    """One published (pair, K) row beside the prediction registered for it."""

    pair: str
    k: int
    in_sample: bool  # a row of a table the registering model was fitted to
    measured_off: float
    measured_on: float
    off: float
    off_band: tuple[float, float]
    on: float
    gain: float
    gain_band: tuple[float, float]

    @property
    def measured_gain(self) -> float:
        return (self.measured_on / self.measured_off - 1.0) * 100.0

    @property
    def gain_error_pp(self) -> float:
        return self.gain - self.measured_gain

    @property
    def off_error_pct(self) -> float:
        return (self.off / self.measured_off - 1.0) * 100.0

    @property
    def on_error_pct(self) -> float:
        return (self.on / self.measured_on - 1.0) * 100.0

    @property
    def gain_in_band(self) -> bool:
        return self.gain_band[0] <= self.measured_gain <= self.gain_band[1]

    @property
    def off_in_band(self) -> bool:
        return self.off_band[0] <= self.measured_off <= self.off_band[1]

    @property
    def meets_gain_goal(self) -> bool:
        return abs(self.gain_error_pp) <= GOALS["gain_pp"]

    @property
    def meets_off_goal(self) -> bool:
        return abs(self.off_error_pct) <= GOALS["off_pct"]

    def row(self) -> dict[str, Any]:
        """The cell as the comparison file keeps it."""
        r2 = lambda v: round(v, 2)  # noqa: E731
        return {
            "pair": self.pair,
            "k": self.k,
            "in_sample": self.in_sample,
            "measured_off": self.measured_off,
            "measured_on": self.measured_on,
            "measured_gain_pct": r2(self.measured_gain),
            "registered_off": self.off,
            "registered_off_band": list(self.off_band),
            "registered_on": self.on,
            "registered_gain_pct": self.gain,
            "registered_gain_band_pct": list(self.gain_band),
            "gain_error_pp": r2(self.gain_error_pp),
            "off_error_pct": r2(self.off_error_pct),
            "on_error_pct": r2(self.on_error_pct),
            "gain_in_band": self.gain_in_band,
            "off_in_band": self.off_in_band,
            "meets_gain_goal": self.meets_gain_goal,
            "meets_off_goal": self.meets_off_goal,
        }


def load_registration(path: Path = PREREGISTERED) -> dict:
    """The pre-registered predictions (ValueError naming the file when it is missing or not JSON)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"pre-registered predictions {path}: {exc}") from None


def cells(
    registration: dict | None = None,
    directory: Path = PUBLISHED_DIR,
    tables: list[Table] | None = None,
    fitted_pairs: tuple[tuple[str, str], ...] = (("mxfp8", "mxfp8"),),
) -> list[Cell]:
    """Every published B300 row (``tables``, or those in ``directory``) beside its registered prediction (ValueError
    when one has none); a row of ``fitted_pairs`` (the pairs the registering model was fitted to) is in sample."""
    registration = registration or load_registration()
    registered = registration["tables"]["b300"]
    out = []
    for table in tables if tables is not None else load_tables(directory=directory):
        pair = table.pair
        by_k = {r["k"]: r for r in registered.get(pair, [])}
        for p in table.points:
            if (table.m, table.n) != (8192, 8192) or p.k not in by_k:
                raise ValueError(f"{pair} at M = {table.m}, N = {table.n}, K = {p.k}: no registered prediction")
            r = by_k[p.k]
            out.append(
                Cell(
                    pair,
                    p.k,
                    (table.a_format, table.b_format) in fitted_pairs,
                    p.off,
                    p.on,
                    r["tflops_off"],
                    tuple(r["tflops_off_band"]),
                    r["tflops_on"],
                    r["speedup_pct"],
                    tuple(r["speedup_band_pct"]),
                )
            )
    return out


def summary(group: list[Cell]) -> dict[str, Any]:
    """Per goal: the worst cell, the median, how many cells meet it -- the worst case beside the average."""
    if not group:
        raise ValueError("no cells to judge")

    def worst(values: list[float]) -> tuple[float, Cell]:
        i = max(range(len(values)), key=lambda j: abs(values[j]))
        return values[i], group[i]

    out: dict[str, Any] = {"cells": len(group)}
    for key in ("gain_error_pp", "off_error_pct", "on_error_pct"):
        values = [getattr(c, key) for c in group]
        w, cell = worst(values)
        out[key] = {
            "worst": round(w, 2),
            "worst_at": f"{cell.pair}, K = {cell.k}",
            "median_abs": round(median([abs(v) for v in values]), 2),
        }
    widths = [c.gain_band[1] - c.gain_band[0] for c in group]
    out["cells_meeting_gain_goal"] = sum(c.meets_gain_goal for c in group)
    out["cells_meeting_off_goal"] = sum(c.meets_off_goal for c in group)
    out["gain_in_band"] = sum(c.gain_in_band for c in group)
    out["off_in_band"] = sum(c.off_in_band for c in group)
    out["gain_band_median_width_pp"] = round(median(widths), 2)
    out["gain_band_widest_pp"] = round(max(widths), 2)
    return out


def gb300_range(registration: dict, directory: Path = PUBLISHED_DIR) -> dict[str, Any]:
    """The registered GB300 gains over every pair and K beside the published range (gains outside it named)."""
    published = json.loads((directory / GB300_RANGE).read_text())
    lo, hi = published["gain_pct"]
    rows = [(pair, r["k"], r["speedup_pct"]) for pair, rs in registration["tables"]["gb300"].items() for r in rs]
    gains = [g for _, _, g in rows]
    return {
        "published_gain_pct": [lo, hi],
        "source": published["source"],
        "registered_gain_pct": [min(gains), max(gains)],
        "registered_outside": [{"pair": p, "k": k, "gain_pct": g} for p, k, g in rows if not lo <= g <= hi],
        "cells": len(rows),
    }


def kindred_fp4(directory: Path = PUBLISHED_DIR) -> list[dict[str, Any]]:
    """The model's overlap-off TFLOP/s (GB300, M = N = K) beside the kindred single-accumulator example's."""
    from gluon_overlap.hardware import load_hardware
    from gluon_overlap.timing.model import predict

    published = json.loads((directory / KINDRED).read_text())
    hw = load_hardware("gb300")
    out = []
    for r in published["rows"]:
        fmt, size = r["format"], r["mnk"]
        model = predict(hw, fmt, fmt, size, size, size, overlap=False, check=False).tflops
        out.append(
            {
                "format": fmt,
                "mnk": size,
                "scheduler": r["scheduler"],
                "published": r["tflops"],
                "model_off": round(model, 1),
                "error_pct": round((model / r["tflops"] - 1) * 100, 2),
            }
        )
    return out


def derived(
    directory: Path = PUBLISHED_DIR, gpu: str = "b300", tables: list[Table] | None = None
) -> list[dict[str, Any]]:
    """What the published rows say by themselves, per pair and K (no model): a launch's time overlap off and on
    (2 M N K FLOPs / TFLOP/s), the time the overlap saves, per launch and per tile of the critical cluster (the one
    with the most tiles of the seed's persistent grid on ``gpu``, ceil(tiles / clusters): the launch ends when it
    does), the rate C (fp16) leaves at, and the time of one K step of a tile (BLOCK_K of the pair's plan) from the
    slope of the time between this K and the next, and at the smallest K what a tile costs beyond its K steps."""
    from gluon_overlap.hardware import load_hardware
    from gluon_overlap.timing.costs import clusters_for, tile_grid
    from gluon_overlap.tmem import make_plan

    hw = load_hardware(gpu)
    out = []
    for table in tables if tables is not None else load_tables(directory=directory):
        tiles_m, tiles_n = tile_grid(table.m, table.n)
        per_cluster = math.ceil(tiles_m * tiles_n / clusters_for(hw, tiles_m * tiles_n))  # the critical cluster's tiles
        block_k = make_plan(table.a_format, table.b_format).block_k
        c_bytes = table.m * table.n * 2
        times = [
            (p.k, 2 * table.m * table.n * p.k / (p.off * 1e12), 2 * table.m * table.n * p.k / (p.on * 1e12))
            for p in table.points
        ]
        for i, (k, off_s, on_s) in enumerate(times):
            row: dict[str, Any] = {
                "pair": table.pair,
                "k": k,
                "tiles_per_cluster": per_cluster,
                "off_us": round(off_s * 1e6, 2),
                "on_us": round(on_s * 1e6, 2),
                "saved_us": round((off_s - on_s) * 1e6, 2),
                "saved_per_tile_us": round((off_s - on_s) * 1e6 / per_cluster, 3),
                "c_write_tb_s_off": round(c_bytes / off_s / 1e12, 2),
                "c_write_tb_s_on": round(c_bytes / on_s / 1e12, 2),
            }
            if i + 1 < len(times):
                k2, off2, on2 = times[i + 1]
                steps = (k2 - k) / block_k * per_cluster  # more K steps on the critical path of a cluster
                step_off = (off2 - off_s) / steps
                row["step_ns_off"] = round(step_off * 1e9, 1)
                row["step_ns_on"] = round((on2 - on_s) / steps * 1e9, 1)
                row["step_from_to_k"] = [k, k2]
                if i == 0:  # beyond its K steps, overlap off (drain, pipeline fill, writing C); at larger K this is
                    # the difference of two large numbers, dominated by the slope's noise
                    row["off_beyond_steps_per_tile_us"] = round((off_s / per_cluster - k / block_k * step_off) * 1e6, 3)
            out.append(row)
    return out


def unseen(registration: dict) -> list[dict[str, Any]]:
    """The B300 cells a registration names as unseen (its own ``unseen`` list), each with its registered numbers and
    bands."""
    rows = registration["tables"]["b300"]
    out = []
    for cell in registration.get("unseen", {}).get("b300", []):
        pair, k = cell["pair"], cell["k"]
        r = next((r for r in rows.get(pair, []) if r["k"] == k), None)
        if r is None:
            raise ValueError(f"{pair} at K = {k}: the registration holds no prediction for this unseen cell")
        out.append({"pair": pair, **r})
    return out


def _judged_in_sample(registration: dict, tables: list[Table], directory: Path, about: str) -> dict[str, Any]:
    """A later model's registration judged in sample on every published cell (it was fitted to all of them), with its
    predictions for the unseen cells and its GB300 range: one entry of :func:`comparison`."""
    judged = cells(registration, tables=tables, fitted_pairs=tuple((t.a_format, t.b_format) for t in tables))
    return {
        "about": about,
        "summary": summary(judged),
        "cells": [c.row() for c in judged],
        "unseen_b300": unseen(registration),
        "gb300_range": gb300_range(registration, directory),
    }


def comparison(directory: Path = PUBLISHED_DIR) -> dict[str, Any]:
    """Everything :data:`COMPARISON` holds: the first registration judged on the rows found since (top level), and
    the second (``revised``) and third (``third``) models judged in sample, each with its registration of the unseen
    cells."""
    registration = load_registration()
    second = load_registration(PREREGISTERED_UNSEEN)
    third = load_registration(PREREGISTERED_THIRD)
    tables = load_tables(directory=directory)
    every = cells(registration, tables=tables)
    held = [c for c in every if not c.in_sample]
    return {
        "about": "the predictions registered in data/fit/preregistered-heldout-pairs.json (code "
        f"{registration['code'][:12]}) beside the published rows found after they were committed; no model is run "
        "for the B300 cells, so nothing here was tuned to them",
        "goals": GOALS,
        "unseen": "the B300 table's mxfp4 x mxfp4 rows at K = 2048, 4096, 8192 and its nvfp4 x nvfp4 rows: the only "
        "copy found ends before them",
        "summary": {
            "held_out": summary(held),
            "in_sample": summary([c for c in every if c.in_sample]),
            "all": summary(every),
        },
        "cells": [c.row() for c in every],
        "gb300_range": gb300_range(registration, directory),
        "revised": _judged_in_sample(
            second,
            tables,
            directory,
            "the second model, fitted to every published B300 row found (the report data/fit/b300-fit.json held "
            f"before the third), as registered in data/fit/preregistered-unseen-cells.json (code "
            f"{second['code'][:12]}): in sample on those rows, and its predictions for the cells nobody here has seen",
        ),
        "third": _judged_in_sample(
            third,
            tables,
            directory,
            "the third model (shared memory as measured; data/fit/b300-fit.json), as registered in "
            f"data/fit/preregistered-unseen-cells-third.json (code {third['code'][:12]}): in sample on the rows, and "
            "its predictions for the cells nobody here has seen",
        ),
        "kindred_fp4_gb300": kindred_fp4(directory),
        "derived": derived(tables=tables),
    }


def write_comparison(path: Path = COMPARISON) -> dict[str, Any]:  # pragma: no cover - run by regenerate
    doc = comparison()
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc
