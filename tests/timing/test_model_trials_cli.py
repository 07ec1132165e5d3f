"""benchmarks/model_trials.py's command line refuses a malformed or unknown ``--hold`` or ``--copy-record`` with a
clear message (the trials themselves take seconds each and are reported in docs/NOTES.md, not run here), and its
measured scale-copy law prices what a record says."""

from __future__ import annotations

import json

import benchmark_scripts  # tests/support is on sys.path (tests/conftest.py)
import pytest


@pytest.fixture(scope="module")
def trials():
    """The script, imported; it turns the run cache off for its process, which the suite has off already."""
    return benchmark_scripts.load_keeping_environment("model_trials")


@pytest.mark.parametrize(
    ("hold", "message"),
    [
        ("mbarrier_remote_clk", "NAME=VALUE with a finite number"),
        ("mbarrier_remote_clk=fast", "NAME=VALUE with a finite number"),
        ("mbarrier_remote_clk=nan", "NAME=VALUE with a finite number"),
        ("no_such_value=3", "'no_such_value' is not a value of the B300 description"),
    ],
)
def test_a_bad_hold_is_refused_before_any_fit(trials, monkeypatch, capsys, hold, message):
    monkeypatch.setattr("sys.argv", ["model_trials.py", "--hold", hold, "committed"])
    monkeypatch.setattr(trials, "run", lambda *a: pytest.fail("a trial ran"))
    with pytest.raises(SystemExit) as exit_info:
        trials.main()
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_good_hold_reaches_every_trial_run(trials, monkeypatch):
    seen = []
    monkeypatch.setattr("sys.argv", ["model_trials.py", "--hold", "mbarrier_remote_clk=170.18", "committed"])
    monkeypatch.setattr(
        trials, "run", lambda name, held, copies: seen.append((name, held, copies)) or {"loss": float("nan")}
    )
    with pytest.raises(SystemExit, match="did not converge"):
        trials.main()
    assert seen == [("committed", {"mbarrier_remote_clk": 170.18}, None)]


def test_a_hold_that_contradicts_a_trials_own_is_refused(trials, monkeypatch, capsys):
    with pytest.raises(ValueError, match="holds mbarrier_remote_clk = 279.5 itself"):
        trials.run("remote-hop-h200-thread", {"mbarrier_remote_clk": 170.0})
    monkeypatch.setattr("sys.argv", ["model_trials.py", "--hold", "mbarrier_remote_clk=170", "remote-hop-h200-thread"])
    monkeypatch.setattr(trials, "run", lambda *a: pytest.fail("a trial ran"))
    with pytest.raises(SystemExit) as exit_info:
        trials.main()
    assert exit_info.value.code == 2
    assert "remote-hop-h200-thread hold themselves" in capsys.readouterr().err


def _record(exposed: dict[str, float], behind: dict[str, float]) -> dict:
    """A blackwell_scale_copy.py record's "every SM" rows for the published pairs (3, 3 and 6 copies a step)."""
    copies = {"mxfp8 x mxfp8": 3, "mxfp8 x mxfp4": 3, "mxfp4 x mxfp4": 6}
    return {
        "pairs": {
            name: {
                "every SM": {
                    "copies_per_step": n,
                    "cold_copies_exposed_clk": exposed[name],
                    "copies_behind_mmas_clk_per_step": behind[name],
                }
            }
            for name, n in copies.items()
        }
    }


def _committed_copy_clk() -> dict[str, float]:
    """The committed model's price of a K step's copies: each 512-byte chunk at the shared memory's 128 B a clock."""
    from gluon_overlap.hardware import load_hardware

    per_copy = 512 / load_hardware("b300").smem_bytes_per_clk
    return {"mxfp8 x mxfp8": 3 * per_copy, "mxfp8 x mxfp4": 3 * per_copy, "mxfp4 x mxfp4": 6 * per_copy}


def test_the_measured_law_prices_what_the_record_says(trials):
    """A record of the committed model's own copy price gives its figures to the last digit; a record with the FP4
    copies exposed at 900 clk slows the FP4 tiles (both runs) and leaves every FP8-rate cell as it was."""
    from gluon_overlap.hardware import load_hardware
    from gluon_overlap.timing import fit, model

    hw = load_hardware("b300")
    tables = fit.load_tables()

    def points(record: dict | None) -> dict[str, list]:
        model.forget()
        if record is None:
            return {t.pair: fit.model_points(hw, t) for t in tables}
        with trials.measured_scale_copies(trials.copy_costs_from_record(record)):
            return {t.pair: fit.model_points(hw, t) for t in tables}

    plain = points(None)
    same = _committed_copy_clk()
    assert points(_record(same, same)) == plain
    slow = points(_record({**same, "mxfp4 x mxfp4": 900.0}, same))
    model.forget()
    fp4 = next(t.pair for t in tables if t.a_format == t.b_format == "mxfp4")
    for pair, cells in slow.items():
        if pair == fp4:
            assert all(s.off < p.off and s.on < p.on for s, p in zip(cells, plain[pair], strict=True))
        else:
            assert cells == plain[pair]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ([], "no 'pairs' object"),
        ({"pairs": {}}, "no 'every SM' row for mxfp8 x mxfp8"),
        (
            {
                "pairs": {
                    n: {"every SM": {**r["every SM"], "copies_per_step": 3}}
                    for n, r in _record(_committed_copy_clk(), _committed_copy_clk())["pairs"].items()
                }
            },
            "mxfp4 x mxfp4, every SM: copies_per_step is 3, but the kernel issues 6",
        ),
        (
            _record(
                {n: 1.0 for n in ("mxfp8 x mxfp8", "mxfp8 x mxfp4")} | {"mxfp4 x mxfp4": float("nan")},
                _committed_copy_clk(),
            ),
            "cold_copies_exposed_clk must be a finite number",
        ),
    ],
)
def test_a_bad_record_is_refused(trials, record, message):
    with pytest.raises(ValueError, match=message):
        trials.copy_costs_from_record(record)


def test_the_measured_trial_needs_a_good_record_before_any_fit(trials, monkeypatch, capsys, tmp_path):
    with pytest.raises(ValueError, match="needs copy_costs: a measurement"):
        trials.run("scale-copy-measured")
    monkeypatch.setattr(trials, "run", lambda *a: pytest.fail("a trial ran"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"pairs": {}}))
    for argv, message in (
        (["scale-copy-measured"], "needs --copy-record"),
        (["--copy-record", str(tmp_path / "missing.json"), "scale-copy-measured"], "No such file"),
        (["--copy-record", str(bad), "scale-copy-measured"], "no 'every SM' row"),
        (["--copy-record", str(bad), "--copy-rows", "one cluster", "scale-copy-measured"], "no 'one cluster' row"),
        (["--copy-record", str(tmp_path / "missing.json"), "committed"], "read only by trial scale-copy-measured"),
    ):
        monkeypatch.setattr("sys.argv", ["model_trials.py", *argv])
        with pytest.raises(SystemExit) as exit_info:
            trials.main()
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err, argv


def test_every_trial_runs_by_default_and_the_measured_one_only_with_its_record(trials, monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(trials, "run", lambda name, held, copies: seen.append((name, copies)) or {"loss": 0.0})
    monkeypatch.setattr(trials, "report", lambda *a: None)
    monkeypatch.setattr("sys.argv", ["model_trials.py"])
    trials.main()
    assert [n for n, _ in seen] == [n for n in trials.TRIALS if n != "scale-copy-measured"]
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            _record({"mxfp8 x mxfp8": 450.0, "mxfp8 x mxfp4": 450.0, "mxfp4 x mxfp4": 900.0}, _committed_copy_clk())
        )
    )
    seen.clear()
    monkeypatch.setattr("sys.argv", ["model_trials.py", "--copy-record", str(good), "scale-copy-measured"])
    trials.main()
    ((name, copies),) = seen
    assert name == "scale-copy-measured"
    assert copies[("mxfp4", "mxfp4")] == trials.CopyCost(6, 900.0, 24.0)
