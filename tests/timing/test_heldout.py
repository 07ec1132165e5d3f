"""The pre-registered predictions against the published rows found after them (issue 28): the data are the source's,
the comparison reads the registrations (never a model run for a B300 cell) and is current, the fit reads exactly the
published B300 tables, and the second registration names every cell still unseen."""

from __future__ import annotations

import json
import shutil

import pytest

from gluon_overlap import regenerate
from gluon_overlap.timing import fit, heldout


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(heldout.COMPARISON.read_text())


@pytest.mark.parametrize("name", [fit.B300_TABLE, *heldout.HELD_OUT_TABLES.values()])
def test_each_published_row_reproduces_the_sources_own_speedup_column(name):
    """The source printed off, on and the speedup: a mistyped number would break their agreement.  (It printed the
    speedup of its unrounded throughputs: rounding them to 0.1 TFLOP/s moves it by under 0.01 pp.)"""
    raw = json.loads((fit.PUBLISHED_DIR / name).read_text())
    assert "10865" in raw["source"]
    for row in raw["rows"]:
        if "speedup_pct" in row:
            assert (row["on"] / row["off"] - 1) * 100 == pytest.approx(row["speedup_pct"], abs=0.01), row


def test_the_heldout_product_names_every_registration_it_reads():
    """``regenerate heldout`` is stale when any registration changes: its inputs name the three files
    :func:`heldout.comparison` loads."""
    product = next(p for p in regenerate.PRODUCTS if p.name == "heldout")
    registrations = [i for i in product.inputs if i.startswith("data/fit/")]
    root = fit.PUBLISHED_DIR.parent.parent
    expected = (fit.PREREGISTERED, fit.PREREGISTERED_UNSEEN, fit.PREREGISTERED_THIRD)
    assert registrations == [str(path.relative_to(root)) for path in expected]


def test_the_fit_reads_the_published_b300_tables_and_nothing_else():
    """The fit product's published inputs are exactly the B300 tables the fit loads; the GB300 facts never reach it."""
    product = next(p for p in regenerate.PRODUCTS if p.name == "fit")
    published = [i for i in product.inputs if i.startswith("data/published")]
    assert published == [f"data/published/{name}" for name in fit.CALIBRATION_TABLES]
    tables = fit.load_tables()
    assert [(t.gpu, t.a_format, t.b_format) for t in tables] == [
        ("b300", "mxfp8", "mxfp8"),
        ("b300", "mxfp8", "mxfp4"),
        ("b300", "mxfp4", "mxfp4"),
    ]
    assert fit.cell_count(tables) == 12


@pytest.mark.parametrize("key, path", [("revised", fit.PREREGISTERED_UNSEEN), ("third", fit.PREREGISTERED_THIRD)])
def test_the_later_registrations_name_exactly_the_unseen_cells(committed, key, path):
    """The cells they call unseen are the B300 cells no published table here holds; each registers them with bands."""
    seen = {(t.pair, p.k) for t in fit.load_tables() for p in t.points}
    every = {
        (pair, k)
        for pair in ("mxfp8 x mxfp8", "mxfp8 x mxfp4", "mxfp4 x mxfp4", "nvfp4 x nvfp4")
        for k in (512, 1024, 2048, 4096, 8192)
    }
    assert set(fit.UNSEEN_B300_CELLS) == every - seen
    registration = heldout.load_registration(path)
    assert {(c["pair"], c["k"]) for c in registration["unseen"]["b300"]} == every - seen
    rows = committed[key]["unseen_b300"]
    assert [(r["pair"], r["k"]) for r in rows] == list(fit.UNSEEN_B300_CELLS)
    for r in rows:
        lo, hi = r["speedup_band_pct"]
        assert lo <= r["speedup_pct"] <= hi and r["tflops_off_band"][0] <= r["tflops_off"] <= r["tflops_off_band"][1]


@pytest.mark.parametrize("key", ["revised", "third"])
def test_the_later_models_are_judged_on_every_cell_they_were_fitted_to(committed, key):
    revised = committed[key]
    assert revised["summary"]["cells"] == len(revised["cells"]) == 12
    assert all(c["in_sample"] for c in revised["cells"])
    worst = max(revised["cells"], key=lambda c: abs(c["off_error_pct"]))
    assert revised["summary"]["off_error_pct"]["worst"] == worst["off_error_pct"]


def test_the_committed_comparison_is_current(committed):
    assert heldout.comparison() == committed


def test_the_first_registrations_cells_are_its_numbers_beside_the_published_ones(committed):
    """Spot values from the two files by hand: mixed pair at K = 512 (registered 23.21 % [13.67, 27.93], published
    2046.7 / 1751.0) and mxfp4 at K = 1024 (registered off 3643.84, published 3483.1)."""
    cells = {(c["pair"], c["k"]): c for c in committed["cells"]}
    mixed = cells[("mxfp8 x mxfp4", 512)]
    assert not mixed["in_sample"]
    assert mixed["measured_gain_pct"] == pytest.approx(16.89, abs=0.01)
    assert mixed["gain_error_pp"] == pytest.approx(23.21 - 16.89, abs=0.01)
    assert mixed["gain_in_band"] and not mixed["meets_gain_goal"]
    fp4 = cells[("mxfp4 x mxfp4", 1024)]
    assert fp4["off_error_pct"] == pytest.approx((3643.84 / 3483.1 - 1) * 100, abs=0.01)
    assert cells[("mxfp8 x mxfp8", 512)]["in_sample"]
    assert len(cells) == 12


def test_the_summary_reports_the_worst_case_beside_the_median(committed):
    held = [c for c in committed["cells"] if not c["in_sample"]]
    summary = committed["summary"]["held_out"]
    assert summary["cells"] == len(held) == 7
    worst = max(held, key=lambda c: abs(c["gain_error_pp"]))
    assert summary["gain_error_pp"]["worst"] == worst["gain_error_pp"]
    assert summary["gain_error_pp"]["worst_at"] == f"{worst['pair']}, K = {worst['k']}"
    assert summary["gain_error_pp"]["median_abs"] <= abs(worst["gain_error_pp"])
    assert summary["cells_meeting_gain_goal"] == sum(abs(c["gain_error_pp"]) <= 4.0 for c in held)
    assert summary["cells_meeting_off_goal"] == sum(abs(c["off_error_pct"]) <= 10.0 for c in held)


def test_the_gb300_range_names_every_registered_gain_outside_the_published_one(committed):
    rng = committed["gb300_range"]
    lo, hi = rng["published_gain_pct"]
    assert (lo, hi) == (2.53, 22.37) and "11039" in rng["source"]
    outside = {(r["pair"], r["k"]) for r in rng["registered_outside"]}
    registration = heldout.load_registration()
    for pair, rows in registration["tables"]["gb300"].items():
        for r in rows:
            assert ((pair, r["k"]) in outside) == (not lo <= r["speedup_pct"] <= hi)
    for key, path in (("revised", fit.PREREGISTERED_UNSEEN), ("third", fit.PREREGISTERED_THIRD)):
        later = committed[key]["gb300_range"]
        registered = heldout.load_registration(path)["tables"]["gb300"]
        gains = [r["speedup_pct"] for rows in registered.values() for r in rows]
        assert later["registered_gain_pct"] == [min(gains), max(gains)]
        assert len(later["registered_outside"]) == sum(not lo <= g <= hi for g in gains)


def test_a_published_row_without_a_registered_prediction_is_a_clear_error(tmp_path):
    for name in (fit.B300_TABLE, *heldout.HELD_OUT_TABLES.values(), heldout.GB300_RANGE, heldout.KINDRED):
        shutil.copy(fit.PUBLISHED_DIR / name, tmp_path / name)
    path = tmp_path / heldout.HELD_OUT_TABLES[("mxfp4", "mxfp4")]
    raw = json.loads(path.read_text())
    raw["rows"].append({"k": 3072, "off": 1.0, "on": 1.0})
    path.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="K = 3072: no registered prediction"):
        heldout.cells(directory=tmp_path)


def test_a_missing_registration_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="pre-registered predictions"):
        heldout.load_registration(tmp_path / "nope.json")


def test_what_the_rows_say_by_themselves_is_their_arithmetic():
    """By hand from the published mxfp8 x mxfp8 rows (B300: 160 SMs, 80 clusters, 1024 tiles, BLOCK_K = 128): a launch
    at K = 512 is 2 * 8192^2 * 512 FLOPs; K = 512 -> 1024 adds 4 K steps to each of the critical cluster's 13 tiles
    (1024 = 12 x 80 + 64: 64 clusters run 13 tiles, and the launch ends with them)."""
    rows = {(r["pair"], r["k"]): r for r in heldout.derived()}
    r = rows[("mxfp8 x mxfp8", 512)]
    off, on = 2 * 8192**2 * 512 / 1754.7e12, 2 * 8192**2 * 512 / 2093.0e12
    off2 = 2 * 8192**2 * 1024 / 2228.0e12
    assert r["tiles_per_cluster"] == 13
    assert r["off_us"] == pytest.approx(off * 1e6, abs=0.01) and r["on_us"] == pytest.approx(on * 1e6, abs=0.01)
    assert r["saved_per_tile_us"] == pytest.approx((off - on) * 1e6 / 13, abs=0.001)
    assert r["step_ns_off"] == pytest.approx((off2 - off) / (4 * 13) * 1e9, abs=0.1)
    assert r["c_write_tb_s_on"] == pytest.approx(8192**2 * 2 / on / 1e12, abs=0.01)
    fp4 = rows[("mxfp4 x mxfp4", 512)]  # BLOCK_K = 256: K = 512 -> 1024 adds 2 steps per tile
    step = (2 * 8192**2 * 1024 / 3483.1e12 - 2 * 8192**2 * 512 / 2217.0e12) / (2 * 13)
    assert fp4["step_ns_off"] == pytest.approx(step * 1e9, abs=0.1)
    beyond = 2 * 8192**2 * 512 / 2217.0e12 / 13 - 2 * step
    assert fp4["off_beyond_steps_per_tile_us"] == pytest.approx(beyond * 1e6, abs=0.001)
    assert "step_ns_off" not in rows[("mxfp4 x mxfp4", 1024)]  # the last published K has no slope after it
    assert "off_beyond_steps_per_tile_us" not in rows[("mxfp8 x mxfp8", 1024)]  # the smallest K only
