"""Fitting the timing model's unpinned parameters to published measurements, and saying how well it generalizes.

Five numbers of the model are not pinned by any first principle or measurement (``FITTED``):

* ``tensor_efficiency_fp8`` -- the fraction of the vendor FP8 peak a ``kind::mxf8f6f4`` MMA sustains (the slope of
  time in K for mxfp8 x mxfp8 and the mixed pair);
* ``tensor_efficiency_fp4`` -- the same for the K = 64 FP4 MMA (``kind::mxf4``), which no vendor number gives on
  Blackwell Ultra (its quoted FP4 peak is the K = 96 form's);
* ``epilogue_cost_factor`` -- the epilogue drain's cost over its first-principles cycle estimates (the part of a
  tile the single-buffered kernel exposes and the overlap hides);
* ``hbm_write_efficiency`` -- the fraction of the HBM peak the C write-back streams at (searched within what an H200
  measured for writes): it bounds the launches whose C leaves fastest (FP4 at K = 512);
* ``mbarrier_remote_clk`` -- the latency of an arrival from the other CTA of the pair: charged to every wait on a
  barrier the other CTA arrives on (:func:`gluon_overlap.timing.streams.roles_of`) -- the hand-over of each
  accumulator between the two CTAs' epilogues and the lead's MMA warp (``acc_empty``, with the overlap on or off, and
  the overlap barrier), but also the peer's TMA completions on ``load_ready`` and the lead's multicast commits on the
  peer's ``load_empty`` and ``acc_ready`` (hidden by the load ring in this kernel); Blackwell's hop is not measured
  (searched within 100-600 clocks; the H200 measures 167-170 for the epilogue's form of it,
  ``data/measurements/h200-mbarrier-latency.json``, well under the fitted value: docs/NOTES.md).

They are solved from the authors' published B300 overlap-off / overlap-on tables (``CALIBRATION_TABLES`` in
``data/published/``: mxfp8 x mxfp8, mxfp8 x mxfp4 and mxfp4 x mxfp4, M = N = 8192, each with its source) by
minimising the sum of squared log errors of both throughputs in every published cell -- so the gain, their ratio, is
fitted through the mechanism, never set directly.  :func:`fit` returns the values, the residual scale and each
value's *post-fit range* (where the loss stays within ``DELTA_CHI2`` residual variances of its minimum with the others
held at the optimum); :func:`cross_validate` refits with one cell left out and predicts it.
``tests/timing/test_fit.py`` reruns :func:`fit` from the data and checks it gives the values committed in
``gluon_overlap/data/hardware/b300.json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gluon_overlap.hardware import DATA_DIR, FRACTIONS, LOWER_IS_FASTER, Hardware, load_hardware
from gluon_overlap.timing import run_cache
from gluon_overlap.timing.band import BAND_GROUPS
from gluon_overlap.timing.calibration import calibrate_tensor_efficiency, efficiency_range
from gluon_overlap.timing.model import predict
from gluon_overlap.timing.table import model_table

PUBLISHED_DIR = Path(__file__).resolve().parents[2] / "data" / "published"
B300_TABLE = "b300-overlap-mxfp8.json"
#: every published B300 overlap table found (M = N = 8192), by format pair
B300_TABLES: dict[tuple[str, str], str] = {
    ("mxfp8", "mxfp8"): B300_TABLE,
    ("mxfp8", "mxfp4"): "b300-overlap-mxfp8-mxfp4.json",
    ("mxfp4", "mxfp4"): "b300-overlap-mxfp4-mxfp4.json",
}
#: the published tables the fit reads: all of them (the first is the one fitted alone before)
CALIBRATION_TABLES = tuple(B300_TABLES.values())
#: what the fit can solve, with the prior interval it searches and why that interval
PRIORS: dict[str, tuple[float, float, str]] = {
    "tensor_efficiency_fp8": (
        0.5,
        0.9,
        "half to nine tenths of the vendor dense FP8 peak (the b200 single-buffered calibration gives 0.61-0.74)",
    ),
    "tensor_efficiency_fp4": (
        0.5,
        0.9,
        "half to nine tenths of the K = 64 FP4 form's rate (2x FP8), as for FP8",
    ),
    "epilogue_cost_factor": (
        0.2,
        2.0,
        "a drain 5x cheaper (dual issue, overlapped steps) to 2x dearer (stalls) "
        "than the sum of its first-principles cycle estimates",
    ),
    "hbm_write_efficiency": (
        0.55,
        0.82,
        "what an H200 measured for writes into HBM-sized buffers (data/measurements/h200-tma-store-drain.json): "
        "0.55 with 8 store streams per SM to 0.82 with 1-4",
    ),
    "l2_store_load_sharing": (0.0, 1.0, "separate store and load paths (0) to one shared L2 budget (1)"),
    "mbarrier_remote_clk": (
        100,
        600,
        "0.6 to 3.5 times a Hopper DSMEM arrive in the epilogue's form (170 clk on an H200, "
        "data/measurements/h200-mbarrier-latency.json): "
        "an arrival from the other CTA of the pair "
        "(on acc_empty and the overlap barrier at each tile's hand-over; on load_ready, load_empty and acc_ready too, "
        "where the load ring hides it) is the one hop only Hopper measures here; the tables pin it",
    ),
}
#: what the committed fit solves: ``l2_store_load_sharing`` was tried too and the tables cannot pin it (its post-fit
#: range is its whole prior, docs/NOTES.md), so it keeps its H200-based value and goes into the band instead
FITTED: tuple[str, ...] = BAND_GROUPS["fitted"]
#: the band groups whose corners are refitted (their parameters are estimates the fitted values trade off against)
REFIT_GROUPS = ("memory", "sync")
#: a value's post-fit range: loss within this many residual variances of the minimum (chi-square, 68.3 %, 5 dof)
DELTA_CHI2 = 5.89


@dataclass(frozen=True)
class Point:
    """One published row: K and the measured TFLOP/s with overlap off and on."""

    k: int
    off: float
    on: float

    @property
    def gain_pct(self) -> float:
        return (self.on / self.off - 1.0) * 100.0


@dataclass(frozen=True)
class Table:
    """A published overlap-off / overlap-on table of one format pair on one GPU at one M, N."""

    gpu: str
    a_format: str
    b_format: str
    m: int
    n: int
    points: tuple[Point, ...]
    source: str

    @property
    def pair(self) -> str:
        """The format pair as the tables and reports name it, e.g. ``"mxfp8 x mxfp4"``."""
        return f"{self.a_format} x {self.b_format}"


def load_table(name: str = B300_TABLE, directory: Path = PUBLISHED_DIR) -> Table:
    """Read a published table from ``data/published`` (ValueError naming the file if it is missing or malformed)."""
    path = directory / name
    if not path.is_file():
        raise ValueError(f"published table {path} not found (the fit needs the repository's data/ folder)")
    raw = json.loads(path.read_text())
    try:
        points = tuple(Point(int(r["k"]), float(r["off"]), float(r["on"])) for r in raw["rows"])
        return Table(
            raw["gpu"].lower(), raw["a_format"], raw["b_format"], int(raw["M"]), int(raw["N"]), points, raw["source"]
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: malformed published table ({exc})") from None


def load_tables(names: Sequence[str] = CALIBRATION_TABLES, directory: Path = PUBLISHED_DIR) -> list[Table]:
    """The published tables the fit reads (each as :func:`load_table` reads it)."""
    return [load_table(name, directory) for name in names]


def without(tables: Sequence[Table], pair: str, k: int) -> list[Table]:
    """``tables`` with the row of ``pair`` (:attr:`Table.pair`) at ``k`` left out (a table left empty is dropped)."""
    out = []
    for t in tables:
        kept = tuple(p for p in t.points if (t.pair, p.k) != (pair, k))
        if kept:
            out.append(replace(t, points=kept))
    return out


def _inputs(hw: Hardware | None, tables: Sequence[Table] | None) -> tuple[Hardware, list[Table]]:
    """The given description and tables, or the calibration tables and their GPU's description."""
    tables = list(tables) if tables is not None else load_tables()
    return hw or load_hardware(tables[0].gpu), tables


def model_points(hw: Hardware, table: Table, ks: Sequence[int] | None = None) -> list[Point]:
    """The model's (off, on) TFLOP/s at the table's K (or ``ks``)."""

    out = []
    for k in ks if ks is not None else [p.k for p in table.points]:
        off = predict(hw, table.a_format, table.b_format, table.m, table.n, k, False, check=False).tflops
        on = predict(hw, table.a_format, table.b_format, table.m, table.n, k, True, check=False).tflops
        out.append(Point(k, off, on))
    return out


def loss(hw: Hardware, tables: Sequence[Table]) -> float:
    """Sum over every row of every table of (log model - log measured)^2 for both throughputs."""
    total = 0.0
    for table in tables:
        model = model_points(hw, table)
        total += sum(
            math.log(m.off / p.off) ** 2 + math.log(m.on / p.on) ** 2 for m, p in zip(model, table.points, strict=True)
        )
    return total


def cell_count(tables: Sequence[Table]) -> int:
    """How many published rows ``tables`` hold."""
    return sum(len(t.points) for t in tables)


def _nelder_mead(
    f: Callable[[list[float]], float], x0: list[float], step: float, tol: float, max_evals: int
) -> tuple[list[float], float, int]:
    """Minimise ``f`` on the unit cube (points clipped into it) by the Nelder-Mead simplex method."""
    clip = lambda x: [min(1.0, max(0.0, v)) for v in x]  # noqa: E731
    n = len(x0)
    simplex = [clip(x0)] + [clip([v + (step if i == j else 0.0) for j, v in enumerate(x0)]) for i in range(n)]
    values = [f(x) for x in simplex]
    evals = n + 1
    while evals < max_evals:
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if max(abs(a - b) for x in simplex[1:] for a, b in zip(x, simplex[0], strict=True)) < tol:
            break
        centroid = [sum(x[i] for x in simplex[:-1]) / n for i in range(n)]
        worst = simplex[-1]
        reflect = clip([c + (c - w) for c, w in zip(centroid, worst, strict=True)])
        fr = f(reflect)
        evals += 1
        if fr < values[0]:
            expand = clip([c + 2 * (c - w) for c, w in zip(centroid, worst, strict=True)])
            fe = f(expand)
            evals += 1
            simplex[-1], values[-1] = (expand, fe) if fe < fr else (reflect, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflect, fr
        else:
            contract = clip([c + 0.5 * (w - c) for c, w in zip(centroid, worst, strict=True)])
            fc = f(contract)
            evals += 1
            if fc < values[-1]:
                simplex[-1], values[-1] = contract, fc
            else:  # shrink towards the best
                for i in range(1, n + 1):
                    simplex[i] = [b + 0.5 * (v - b) for b, v in zip(simplex[0], simplex[i], strict=True)]
                    values[i] = f(simplex[i])
                    evals += 1
    best = min(range(n + 1), key=values.__getitem__)
    return simplex[best], values[best], evals


@dataclass
class FitResult:
    """The fitted values, the loss at them, the residual scale and each value's post-fit range."""

    values: dict[str, float]
    loss: float
    sigma2: float  # residual variance of one log throughput: loss / (observations - fitted parameters)
    evaluations: int
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)


def _apply(hw: Hardware, values: dict[str, float]) -> Hardware:
    changes: dict[str, Any] = dict(values)  # keyword arguments of replace(): parameters being fitted
    return replace(hw, name=hw.name + "-fitting", **changes)


def fit(
    hw: Hardware | None = None,
    tables: Sequence[Table] | None = None,
    names: Sequence[str] = FITTED,
    tol: float = 2e-3,
    max_evals: int = 400,
    with_ranges: bool = True,
    start: dict[str, float] | None = None,
) -> FitResult:
    """Solve ``names`` (within their :data:`PRIORS`) so the model reproduces the tables' rows.

    The search starts from the middle of each prior (or from ``start``, for a refit near a known optimum), so the
    answer depends on the data only, never on the values committed in the description."""
    hw, tables = _inputs(hw, tables)
    bounds = [PRIORS[n][:2] for n in names]

    def values_of(x: Sequence[float]) -> dict[str, float]:
        return {n: lo + v * (hi - lo) for n, v, (lo, hi) in zip(names, x, bounds, strict=True)}

    def objective(x: Sequence[float]) -> float:
        return loss(_apply(hw, values_of(x)), tables)

    x0 = [0.5 if start is None else (start[n] - lo) / (hi - lo) for n, (lo, hi) in zip(names, bounds, strict=True)]
    x, best, evals = _nelder_mead(objective, x0, 0.25 if start is None else 0.08, tol, max_evals)
    values = {n: round(v, 4) for n, v in values_of(x).items()}
    dof = max(1, 2 * cell_count(tables) - len(names))
    result = FitResult(values, best, best / dof, evals)
    if with_ranges:
        result.ranges = post_fit_ranges(hw, tables, values, best + DELTA_CHI2 * result.sigma2)
    return result


def post_fit_ranges(
    hw: Hardware, tables: Sequence[Table], values: dict[str, float], threshold: float, tol: float = 0.01
) -> dict[str, tuple[float, float]]:
    """For each fitted value, the interval (within its prior) where the loss stays below ``threshold``, the
    others held at their fitted values (bisection on each side)."""
    out = {}
    for name, value in values.items():
        lo_prior, hi_prior = PRIORS[name][:2]
        ends = []
        for end in (lo_prior, hi_prior):
            inside, outside = value, end
            if loss(_apply(hw, {**values, name: end}), tables) <= threshold:
                ends.append(end)
                continue
            while abs(outside - inside) > tol * (hi_prior - lo_prior):
                mid = (inside + outside) / 2
                if loss(_apply(hw, {**values, name: mid}), tables) <= threshold:
                    inside = mid
                else:
                    outside = mid
            ends.append(inside)
        out[name] = (round(min(ends), 4), round(max(ends), 4))
    return out


def errors(model: Sequence[Point], measured: Sequence[Point]) -> dict[str, list[float]]:
    """Per row: gain error (percentage points), and relative TFLOP/s errors (%) off and on."""
    return {
        "gain_pp": [m.gain_pct - p.gain_pct for m, p in zip(model, measured, strict=True)],
        "off_pct": [(m.off / p.off - 1) * 100 for m, p in zip(model, measured, strict=True)],
        "on_pct": [(m.on / p.on - 1) * 100 for m, p in zip(model, measured, strict=True)],
    }


def cross_validate(hw: Hardware | None = None, tables: Sequence[Table] | None = None, **fit_kwargs: Any) -> list[dict]:
    """Leave one published cell out: refit on the others, predict the left-out one.  One dict per cell (pair and K)
    with the refitted values and the held-out prediction's errors."""
    hw, tables = _inputs(hw, tables)
    out = []
    for table in tables:
        for held in table.points:
            res = fit(hw, without(tables, table.pair, held.k), with_ranges=False, **fit_kwargs)
            pred = model_points(_apply(hw, res.values), table, [held.k])[0]
            err = errors([pred], [held])
            out.append(
                {
                    "pair": table.pair,
                    "k": held.k,
                    "values": res.values,
                    "off": pred.off,
                    "on": pred.on,
                    "gain_pct": pred.gain_pct,
                    **{key: v[0] for key, v in err.items()},
                }
            )
    return out


def median(values: Sequence[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def refit_corners(
    hw: Hardware, tables: Sequence[Table], nominal: FitResult, steps: int = 4, **fit_kwargs: Any
) -> dict[str, dict]:
    """The post-fit corners of the band groups of :data:`REFIT_GROUPS`: for each group and side, the group's
    parameters moved towards the end of their prior ranges and the fitted values refitted there, as far as the
    data allow -- the whole way if the refit's loss stays within ``DELTA_CHI2`` residual variances of the
    nominal fit's, else the largest fraction that does (bisection, ``steps`` refits).  Returns
    ``{"memory-fast": {"fraction": t, "values": {every changed parameter: value}, "loss": ...}, ...}``."""

    threshold = nominal.loss + DELTA_CHI2 * nominal.sigma2
    out = {}
    for group in REFIT_GROUPS:
        for fast in (True, False):
            ends = {}
            for name in BAND_GROUPS[group]:
                lo, hi = hw.value_range(name)
                ends[name] = lo if (name in LOWER_IS_FASTER) == fast else hi

            def at(t: float, ends: dict[str, float] = ends) -> tuple[dict[str, float], FitResult]:
                moved = {n: getattr(hw, n) + t * (e - getattr(hw, n)) for n, e in ends.items()}
                moved = {n: int(round(v)) if isinstance(getattr(hw, n), int) else v for n, v in moved.items()}
                res = fit(replace(hw, **moved), tables, with_ranges=False, start=nominal.values, **fit_kwargs)
                return moved, res

            moved, res = at(1.0)
            fraction = 1.0
            if res.loss > threshold:
                inside, outside, best = 0.0, 1.0, None
                for _ in range(steps):
                    mid = (inside + outside) / 2
                    m, r = at(mid)
                    if r.loss <= threshold:
                        inside, best = mid, (m, r)
                    else:
                        outside = mid
                fraction = inside
                moved, res = best if best is not None else ({}, nominal)
            out[f"{group}-{'fast' if fast else 'slow'}"] = {
                "fraction": round(fraction, 4),
                "loss": round(res.loss, 6),
                "values": {**{n: round(v, 6) for n, v in moved.items()}, **res.values},
            }
    return out


def report(hw: Hardware | None = None, tables: Sequence[Table] | None = None) -> dict:
    """Everything the committed fit says: values and post-fit ranges, in-sample and leave-one-cell-out errors, and
    the refitted band corners (what ``python -m gluon_overlap.regenerate fit`` writes to ``data/fit/``)."""
    hw, tables = _inputs(hw, tables)
    res = fit(hw, tables)
    fitted = _apply(hw, res.values)
    in_sample: list[dict[str, Any]] = []
    for table in tables:
        model = model_points(fitted, table)
        err = errors(model, table.points)
        in_sample += [
            {
                "pair": table.pair,
                "k": m.k,
                "off": m.off,
                "on": m.on,
                "gain_pct": m.gain_pct,
                "measured_off": p.off,
                "measured_on": p.on,
                "measured_gain_pct": p.gain_pct,
                "gain_error_pp": g,
                "off_error_pct": o,
                "on_error_pct": n,
            }
            for m, p, g, o, n in zip(model, table.points, err["gain_pp"], err["off_pct"], err["on_pct"], strict=True)
        ]
    cv = cross_validate(hw, tables)
    gains = [r["gain_error_pp"] for r in in_sample]
    tflops = [r[q] for r in in_sample for q in ("off_error_pct", "on_error_pct")]
    return {
        "tables": [f"{PUBLISHED_DIR.name}/{name}" for name in CALIBRATION_TABLES],
        "sources": sorted({t.source for t in tables}),
        "gpu": tables[0].gpu,
        "fitted": {
            n: {
                "value": res.values[n],
                "post_fit_range": list(res.ranges[n]),
                "prior": list(PRIORS[n][:2]),
                "prior_source": PRIORS[n][2],
            }
            for n in res.values
        },
        "loss": res.loss,
        "sigma2": res.sigma2,
        "delta_chi2": DELTA_CHI2,
        "evaluations": res.evaluations,
        "in_sample": in_sample,
        "in_sample_median_abs_gain_error_pp": median([abs(v) for v in gains]),
        "in_sample_worst_abs_gain_error_pp": max(abs(v) for v in gains),
        "in_sample_median_abs_tflops_error_pct": median([abs(v) for v in tflops]),
        "in_sample_worst_abs_tflops_error_pct": max(abs(v) for v in tflops),
        "cross_validation": cv,
        "cv_median_abs_gain_error_pp": median([abs(r["gain_pp"]) for r in cv]),
        "cv_worst_abs_gain_error_pp": max(abs(r["gain_pp"]) for r in cv),
        "cv_median_abs_tflops_error_pct": median([abs(r[q]) for r in cv for q in ("off_pct", "on_pct")]),
        "cv_worst_abs_tflops_error_pct": max(abs(r[q]) for r in cv for q in ("off_pct", "on_pct")),
        "post_fit_corners": refit_corners(hw, tables, res),
        "post_fit_scatter": scatter(gains, res.sigma2, len(res.values)),
    }


def scatter(gain_errors_pp: Sequence[float], sigma2: float, fitted: int) -> dict:
    """The calibration's residual scatter, which every band adds in quadrature (``band``): the rms in-sample
    gain error over ``n - p`` degrees of freedom (``speedup_pp``) and the residual of one log throughput
    (``tflops_rel`` = sqrt(sigma2))."""
    n = len(gain_errors_pp)
    return {
        "speedup_pp": round(math.sqrt(sum(e * e for e in gain_errors_pp) / max(1, n - fitted)), 4),
        "tflops_rel": round(math.sqrt(sigma2), 5),
        "source": f"the fit's in-sample residuals ({n} published rows, {fitted} fitted values): rms gain error "
        "over n - p degrees of freedom, and the residual standard deviation of one log throughput",
    }


FIT_REPORT = PUBLISHED_DIR.parent / "fit" / "b300-fit.json"
_FIT_SOURCE = (
    "fitted (gluon_overlap.timing.fit, Nelder-Mead on the sum of squared log errors of overlap-off and "
    "overlap-on TFLOP/s in every published cell) to the authors' published B300 tables for mxfp8 x mxfp8, "
    "mxfp8 x mxfp4 and mxfp4 x mxfp4, M = N = 8192 (data/published/b300-overlap-*.json: triton-lang/triton "
    "PR #10865); report in data/fit/b300-fit.json"
)
_RANGE_SOURCE = (
    "post-fit range: where the fit's loss stays within {d} residual variances of its minimum, the other "
    "fitted values held at their optimum (data/fit/b300-fit.json)"
)
_TRANSFER = "the B300 fit's value (" + _FIT_SOURCE + "): {why}"
_WIDENED = "the B300 post-fit range widened by {pct}% each side for the transfer to another part"


def _record(
    raw: dict, name: str, value: float, rng: Sequence[float], kind: str, source: str, range_source: str
) -> None:
    rec = raw["params"][name]
    rec.update(
        value=round(value, 4),
        kind=kind,
        source=source,
        range=[round(rng[0], 4), round(rng[1], 4)],
        range_source=range_source,
    )


#: the fitted values every other description takes from the B300 fit, and why they transfer (ranges widened 10 %)
SAME_PART_TRANSFERS = (
    ("epilogue_cost_factor", "the same Blackwell SM and epilogue"),
    ("hbm_write_efficiency", "the same HBM3e write path"),
    ("mbarrier_remote_clk", "the same Blackwell SM pair's remote arrive"),
)


def write_descriptions(doc: dict) -> None:  # pragma: no cover - maintenance, run by main()
    """Put the fit into the hardware descriptions: the B300 fitted values and their post-fit ranges; the same
    Blackwell SM's drain (``epilogue_cost_factor``), the same SM pair's remote arrive (``mbarrier_remote_clk``) and the
    same HBM3e's write efficiency for every other description, their ranges widened by 10 % each side for the
    transfer; GB300 (the same Blackwell Ultra part at a higher clock) the B300 FP8 and FP4 efficiencies, widened by
    5 %; b200 and gb200 (sm_100) their FP8 and FP4 efficiencies from the b200 single-buffered calibration, redone with
    the fitted drain."""

    def load(gpu: str) -> dict:
        return json.loads((DATA_DIR / f"{gpu}.json").read_text())

    def save(gpu: str, raw: dict) -> None:
        (DATA_DIR / f"{gpu}.json").write_text(json.dumps(raw, indent=2) + "\n")

    f = doc["fitted"]
    rs = _RANGE_SOURCE.format(d=doc["delta_chi2"])

    def widen(r: Sequence[float], by: float, fraction: bool = True) -> list[float]:
        """``r`` widened by ``by`` each side; a fraction's upper end stays <= 1."""
        hi = r[1] * (1 + by)
        return [r[0] * (1 - by), min(1.0, hi) if fraction else hi]

    def transfer(raw: dict, name: str, why: str, by: float) -> None:
        e = f[name]
        rng = widen(e["post_fit_range"], by, fraction=name in FRACTIONS)
        _record(
            raw, name, e["value"], rng, "calibrated", _TRANSFER.format(why=why), _WIDENED.format(pct=round(by * 100))
        )

    def transfer_same_parts(raw: dict) -> None:
        """What every part shares with the B300: the SM's drain, the SM pair's remote arrive, the HBM3e writes."""
        for name, why in SAME_PART_TRANSFERS:
            transfer(raw, name, why, 0.1)

    # b200: the single-buffered calibration, redone with the fitted drain
    b200 = load("b200")
    b200["post_fit_scatter"] = doc["post_fit_scatter"]
    transfer_same_parts(b200)
    save("b200", b200)
    hw200 = load_hardware("b200")
    ratio = {}
    for fmt, cls in (("mxfp8", "fp8"), ("nvfp4", "fp4")):
        eta = calibrate_tensor_efficiency(hw200, fmt)
        lo, hi = efficiency_range(hw200, fmt)
        ratio[cls] = (eta, lo, hi)
        _record(
            b200,
            f"tensor_efficiency_{cls}",
            eta,
            [min(lo, eta), max(hi, eta)],
            "calibrated",
            b200["params"][f"tensor_efficiency_{cls}"]["source"].split(" [")[0]
            + f" [recalibrated with epilogue_cost_factor = {f['epilogue_cost_factor']['value']}]",
            b200["params"][f"tensor_efficiency_{cls}"]["range_source"],
        )
    save("b200", b200)
    fp4_per_fp8 = ratio["fp4"][0] / ratio["fp8"][0]
    for gpu in ("gb200", "b300", "gb300"):
        raw = load(gpu)
        if gpu in ("b300", "gb300"):  # GB300: the same Blackwell Ultra part, so the same refitted band corners
            raw["post_fit_corners"] = doc["post_fit_corners"]
        raw["post_fit_scatter"] = doc["post_fit_scatter"]  # the model's misfit scale, on every description
        if gpu == "b300":
            for name in FITTED:
                _record(raw, name, f[name]["value"], f[name]["post_fit_range"], "calibrated", _FIT_SOURCE, rs)
        elif gpu == "gb300":
            transfer_same_parts(raw)
            for name in ("tensor_efficiency_fp8", "tensor_efficiency_fp4"):
                transfer(raw, name, "GB300 is the same Blackwell Ultra part", 0.05)
        else:  # gb200: the b200 calibration (same sm_100 part)
            transfer_same_parts(raw)
            e8, lo8, hi8 = ratio["fp8"]
            _record(
                raw,
                "tensor_efficiency_fp8",
                e8,
                widen([min(lo8, e8), max(hi8, e8)], 0.05),
                "calibrated",
                "the b200 single-buffered calibration (same Blackwell part)",
                "the source's range widened by 5% each side for the transfer to another part",
            )
            lo4, hi4 = ratio["fp4"][1] / ratio["fp4"][0], ratio["fp4"][2] / ratio["fp4"][0]
            e4 = e8 * fp4_per_fp8
            _record(
                raw,
                "tensor_efficiency_fp4",
                e4,
                widen([e4 * lo4, e4 * hi4], 0.05),
                "calibrated",
                f"this part's FP8 efficiency x the b200 FP4 / FP8 efficiency ratio ({fp4_per_fp8:.4f}) of the "
                "single-buffered published results (NOTES.md; the same sm_100 FP4 MMA)",
                "the b200 FP4 spread between the two published sizes, widened by 5% each side",
            )
        save(gpu, raw)


#: the pre-registered predictions of the format pairs the first fit never read (written once by :func:`preregister`
#: from the model fitted to mxfp8 x mxfp8 alone, before any of their published rows was compared; never overwritten;
#: :mod:`.heldout` compares them with the rows found since)
PREREGISTERED = PUBLISHED_DIR.parent / "fit" / "preregistered-heldout-pairs.json"
HELD_OUT_PAIRS = (("mxfp8", "mxfp4"), ("mxfp4", "mxfp4"), ("nvfp4", "nvfp4"))
#: the second registration: the revised model's predictions (fitted to every published B300 row found) for the cells
#: nobody here has seen -- B300 mxfp4 x mxfp4 at K >= 2048 and nvfp4 x nvfp4 -- and GB300, written before any of them
PREREGISTERED_UNSEEN = PUBLISHED_DIR.parent / "fit" / "preregistered-unseen-cells.json"
#: the third registration: the same cells, by the model whose shared memory follows the measurements (B read once;
#: the MMAs' reads first, the drain at half of what they leave) with the overlap hand-over fitted; the second is kept
#: as a record, as the first is
PREREGISTERED_THIRD = PUBLISHED_DIR.parent / "fit" / "preregistered-unseen-cells-third.json"
UNSEEN_B300_CELLS: tuple[tuple[str, int], ...] = tuple(
    [("mxfp4 x mxfp4", k) for k in (2048, 4096, 8192)] + [("nvfp4 x nvfp4", k) for k in (512, 1024, 2048, 4096, 8192)]
)
_FIRST_ABOUT = (
    "predictions of the timing model, with bands, written before any published row of these pairs "
    "was compared with them (the published B300 table's other pairs are not in this repository; "
    "the model is fitted to its mxfp8 x mxfp8 rows only)"
)
_UNSEEN_ABOUT = (
    "predictions of the revised timing model (fitted to every published B300 row found: mxfp8 x mxfp8, "
    "mxfp8 x mxfp4, mxfp4 x mxfp4 at K = 512 and 1024), with bands, written before any published row of the "
    "cells in 'unseen' was seen: the B300 table's copy found ends before them"
)
_THIRD_ABOUT = (
    "predictions of the third timing model (shared memory as measured: each CTA's half of B read once, the MMAs' "
    "operand reads first and an overlapped drain at half of what they leave; the overlap hand-over fitted with the "
    "other four values to every published B300 row found), with bands, written before any published row of the cells "
    "in 'unseen' was seen: the B300 table's copy found ends before them"
)


def preregistration(gpus: Sequence[str] = ("b300", "gb300"), about: str = _FIRST_ABOUT) -> dict:
    """The model's tables, with bands, for the held-out pairs (and mxfp8 x mxfp8 beside them) on ``gpus``."""
    doc: dict[str, Any]
    doc = {
        "about": about,
        "code": run_cache.code_hash(),
        "fit": str(FIT_REPORT.relative_to(PUBLISHED_DIR.parent.parent)),
        "tables": {},
    }
    keep = ("k", "tflops_off", "tflops_off_band", "tflops_on", "tflops_on_band", "speedup_pct", "speedup_band_pct")
    for gpu in gpus:
        table = model_table(gpu, pairs=(("mxfp8", "mxfp8"),) + HELD_OUT_PAIRS)
        doc["tables"][gpu] = {
            f"{a} x {b}": [
                {key: _rounded(r[key]) for key in keep}
                for r in table["rows"]
                if (r["a_format"], r["b_format"]) == (a, b)
            ]
            for a, b in (("mxfp8", "mxfp8"),) + HELD_OUT_PAIRS
        }
    return doc


def _rounded(value: float | list[float]) -> float | list[float]:
    return [round(v, 2) for v in value] if isinstance(value, list) else round(value, 2)


def preregister(path: Path = PREREGISTERED, unseen: bool = False) -> Path:  # pragma: no cover - run once, by hand
    """Write :func:`preregistration` to ``path`` (``unseen``: a later registration, naming its unseen cells);
    refuses to overwrite it (a pre-registration is a record).  Run once, by hand (``python -c "from
    gluon_overlap.timing.fit import preregister, PREREGISTERED_THIRD; preregister(PREREGISTERED_THIRD, True)"``),
    never by ``regenerate``."""
    if path.exists():
        raise ValueError(f"{path} exists: a pre-registered prediction is never rewritten")
    about = {PREREGISTERED_UNSEEN: _UNSEEN_ABOUT, PREREGISTERED_THIRD: _THIRD_ABOUT}.get(path, _UNSEEN_ABOUT)
    doc = preregistration(about=about if unseen else _FIRST_ABOUT)
    if unseen:
        doc["unseen"] = {"b300": [{"pair": pair, "k": k} for pair, k in UNSEEN_B300_CELLS], "gb300": "every cell"}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def write_fit() -> dict:  # pragma: no cover - maintenance, run by python -m gluon_overlap.regenerate
    """Refit, write the report (:data:`FIT_REPORT`) and put the fit into the hardware descriptions."""
    FIT_REPORT.parent.mkdir(exist_ok=True)
    doc = report()
    FIT_REPORT.write_text(json.dumps(doc, indent=1) + "\n")
    write_descriptions(doc)
    return doc
