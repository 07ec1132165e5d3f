"""The timing model's fit to the published B300 overlap table: reproducible from data/, honest about its error,
with bands that hold the measurements."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gluon_overlap.hardware import load_hardware
from gluon_overlap.timing import fit
from gluon_overlap.timing.band import post_fit_corners, post_fit_scatter
from gluon_overlap.timing.table import compare


@pytest.fixture(scope="module")
def table() -> fit.Table:
    return fit.load_table()


@pytest.fixture(scope="module")
def tables() -> list[fit.Table]:
    return fit.load_tables()


@pytest.fixture(scope="module")
def b300():
    return load_hardware("b300")


@pytest.fixture(scope="module")
def fit_report() -> dict:
    return json.loads(fit.FIT_REPORT.read_text())


def test_the_published_table_is_in_data_with_its_source(table):
    assert table.gpu == "b300" and (table.a_format, table.b_format, table.m, table.n) == ("mxfp8", "mxfp8", 8192, 8192)
    assert "triton-lang/triton" in table.source and "10865" in table.source
    assert [p.k for p in table.points] == [512, 1024, 2048, 4096, 8192]
    assert table.points[0].off == 1754.7 and table.points[0].on == 2093.0


def test_a_missing_or_malformed_table_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        fit.load_table("nope.json", tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps({"gpu": "b300", "rows": [{"k": 512}]}))
    with pytest.raises(ValueError, match="malformed"):
        fit.load_table("bad.json", tmp_path)


def test_leaving_a_cell_out_drops_that_row_only(tables):
    """Leave-one-cell-out refits on every other row: the mixed pair at K = 512 goes, its other four rows and the
    other tables stay; a table left with no row is dropped."""
    rest = fit.without(tables, "mxfp8 x mxfp4", 512)
    assert fit.cell_count(rest) == fit.cell_count(tables) - 1 == 11
    mixed = next(t for t in rest if t.pair == "mxfp8 x mxfp4")
    assert [p.k for p in mixed.points] == [1024, 2048, 4096, 8192]
    single = [dataclasses.replace(tables[2], points=tables[2].points[:1])]
    assert fit.without(single, single[0].pair, single[0].points[0].k) == []


def test_the_fit_run_from_the_data_gives_the_committed_values(tables, b300):
    """The fit starts from the middle of its priors (never from the committed values) and lands on them."""
    result = fit.fit(b300, tables, with_ranges=False)
    for name in fit.FITTED:
        tolerance = 2.0 if name.endswith("_clk") else 0.004  # clocks are hundreds; the rest fractions near one
        assert result.values[name] == pytest.approx(getattr(b300, name), abs=tolerance), name
        rec = b300.provenance(name)
        assert rec["kind"] == "calibrated" and "b300-overlap-*.json" in rec["source"]


def test_the_committed_report_is_the_committed_description(fit_report, b300):
    for name, entry in fit_report["fitted"].items():
        assert entry["value"] == getattr(b300, name)
        assert list(b300.value_range(name)) == entry["post_fit_range"]
        lo, hi = entry["prior"]
        assert lo <= entry["post_fit_range"][0] <= entry["value"] <= entry["post_fit_range"][1] <= hi
    assert set(fit_report["post_fit_corners"]) == {f"{g}-{s}" for g in fit.REFIT_GROUPS for s in ("fast", "slow")}
    assert set(post_fit_corners("b300")) == set(fit_report["post_fit_corners"])


def test_in_sample_the_model_meets_the_published_tables(tables, b300):
    """Against the published numbers (not against the model), every cell: overlap-off TFLOP/s within 10 % (issue 28's
    goal), overlap-on within 10 %, every gain positive; the gain error's median <= 3 pp and its worst <= 6 pp (issue
    28 asks for 4 pp in every cell: the mxfp4 x mxfp4 rows miss it by 1.5 and 1.0 pp, docs/NOTES.md says why)."""
    gains = []
    for table in tables:
        model = fit.model_points(b300, table)
        err = fit.errors(model, table.points)
        assert max(abs(e) for q in ("off_pct", "on_pct") for e in err[q]) <= 10.0, table.a_format + table.b_format
        assert all(m.gain_pct > 0 for m in model)
        gains += err["gain_pp"]
    assert fit.median([abs(e) for e in gains]) <= 3.0
    assert max(abs(e) for e in gains) <= 6.0


def test_the_reported_cross_validation_generalizes(fit_report):
    """Leave one cell out, refit on the other 11, predict it: the committed report's errors (recomputed by
    ``python -m gluon_overlap.regenerate fit``; 12 refits are too slow for a test), the calibration pair's K first."""
    cv = fit_report["cross_validation"]
    assert [(r["pair"], r["k"]) for r in cv][:5] == [("mxfp8 x mxfp8", k) for k in (512, 1024, 2048, 4096, 8192)]
    assert len(cv) == 12
    assert fit_report["cv_median_abs_gain_error_pp"] == fit.median([abs(r["gain_pp"]) for r in cv]) <= 3.0
    assert fit_report["cv_worst_abs_gain_error_pp"] == max(abs(r["gain_pp"]) for r in cv)
    assert fit_report["cv_median_abs_tflops_error_pct"] <= 4.0


#: the published cells whose gain the band misses: mxfp4 x mxfp4 at K = 512, where the model's C write-back bounds the
#: overlapped run and leaves a gain of 6.6 % [1.1, 11.6] against the measured 12.1 % (the hardware's overlap-off run is
#: slower than the model's), and at K = 1024, 18.5 % [14.5, 22.1] against 13.5 % (docs/NOTES.md)
BAND_MISSES = {("mxfp4", "mxfp4", 512), ("mxfp4", "mxfp4", 1024)}


def test_bands_hold_the_measured_gain_and_are_narrow(tables, b300):
    """The band -- parameter corners plus the calibration's own scatter -- holds the measured gain in every published
    cell but those named in ``BAND_MISSES`` (checked to be outside, so a change that moves one is noticed), and is
    narrow: median width <= 10 pp."""
    widths = []
    for table in tables:
        for p in table.points:
            row = compare(b300, table.a_format, table.b_format, table.m, table.n, p.k)
            lo, hi = row["speedup_band_pct"]
            inside = lo <= p.gain_pct <= hi
            assert inside != ((table.a_format, table.b_format, p.k) in BAND_MISSES), (table.a_format, p.k, lo, hi)
            assert row["band_scatter"]["speedup_pp"] > 0
            widths.append(hi - lo)
    assert fit.median(widths) <= 10.0


def test_the_scatter_is_the_fits_own_residual(fit_report):
    """post_fit_scatter is computed from the in-sample rows of the report and carried by every description."""
    gains = [r["gain_error_pp"] for r in fit_report["in_sample"]]
    expected = fit.scatter(gains, fit_report["sigma2"], len(fit_report["fitted"]))
    assert fit_report["post_fit_scatter"] == expected
    for gpu in ("b200", "gb200", "b300", "gb300"):
        assert post_fit_scatter(gpu) == {k: expected[k] for k in ("speedup_pp", "tflops_rel")}


def test_the_third_registration_is_the_models_prediction(b300):
    """The third model's predictions were written before any unseen cell was seen
    (data/fit/preregistered-unseen-cells-third.json).  The model must still give them: a change that moves one has to
    say so by registering again, never silently."""
    doc = json.loads(fit.PREREGISTERED_THIRD.read_text())
    assert set(doc["tables"]) == {"b300", "gb300"}
    assert {(c["pair"], c["k"]) for c in doc["unseen"]["b300"]} == set(fit.UNSEEN_B300_CELLS)
    rows = doc["tables"]["b300"]
    assert set(rows) == {f"{a} x {b}" for a, b in (("mxfp8", "mxfp8"),) + fit.HELD_OUT_PAIRS}
    for pair, k in (("mxfp4 x mxfp4", 4096), ("nvfp4 x nvfp4", 512), ("nvfp4 x nvfp4", 8192)):
        a, b = pair.split(" x ")
        registered = next(r for r in rows[pair] if r["k"] == k)
        now = compare(b300, a, b, 8192, 8192, k, with_band=False)
        assert now["speedup_pct"] == pytest.approx(registered["speedup_pct"], abs=0.01), (pair, k)
        assert now["tflops_off"] == pytest.approx(registered["tflops_off"], abs=0.01), (pair, k)
        lo, hi = registered["speedup_band_pct"]
        assert lo <= registered["speedup_pct"] <= hi


def test_the_second_registration_is_a_record_of_the_second_model():
    """The second registration is never rewritten: it still holds what the second model (shared memory priced by
    fair sharing, B read twice) said, e.g. nvfp4 x nvfp4 at K = 1024: 18.33 % gain, 3261 TFLOP/s overlap off."""
    doc = json.loads(fit.PREREGISTERED_UNSEEN.read_text())
    registered = next(r for r in doc["tables"]["b300"]["nvfp4 x nvfp4"] if r["k"] == 1024)
    assert (registered["speedup_pct"], round(registered["tflops_off"])) == (18.33, 3261)
    assert "revised timing model" in doc["about"]


def test_the_first_registration_is_a_record_of_the_first_model():
    """The first registration is never rewritten: it still holds what the model fitted to mxfp8 x mxfp8 alone said
    (e.g. mxfp4 x mxfp4 at K = 1024: 22.84 % gain, 3643.84 TFLOP/s overlap off), which the revision no longer says."""
    doc = json.loads(fit.PREREGISTERED.read_text())
    registered = next(r for r in doc["tables"]["b300"]["mxfp4 x mxfp4"] if r["k"] == 1024)
    assert (registered["speedup_pct"], registered["tflops_off"]) == (22.84, 3643.84)
    assert "mxfp8 x mxfp8 rows only" in doc["about"]
