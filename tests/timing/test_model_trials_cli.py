"""benchmarks/model_trials.py's command line refuses a malformed or unknown ``--hold`` with a clear message (the
trials themselves take seconds each and are reported in docs/NOTES.md, not run here)."""

from __future__ import annotations

import os

import benchmark_scripts  # tests/support is on sys.path (tests/conftest.py)
import pytest


@pytest.fixture(scope="module")
def trials():
    """The script, imported; it turns the run cache off for its process, which the suite has off already."""
    before = os.environ.get("GLUON_OVERLAP_MODEL_CACHE")
    module = benchmark_scripts.load("model_trials")
    if before is None:
        os.environ.pop("GLUON_OVERLAP_MODEL_CACHE", None)
    else:
        os.environ["GLUON_OVERLAP_MODEL_CACHE"] = before
    return module


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
    monkeypatch.setattr(trials, "run", lambda name, held: seen.append((name, held)) or {"loss": float("nan")})
    with pytest.raises(SystemExit, match="did not converge"):
        trials.main()
    assert seen == [("committed", {"mbarrier_remote_clk": 170.18})]


def test_a_hold_that_contradicts_a_trials_own_is_refused(trials, monkeypatch, capsys):
    with pytest.raises(ValueError, match="holds mbarrier_remote_clk = 279.5 itself"):
        trials.run("remote-hop-h200-thread", {"mbarrier_remote_clk": 170.0})
    monkeypatch.setattr("sys.argv", ["model_trials.py", "--hold", "mbarrier_remote_clk=170", "remote-hop-h200-thread"])
    monkeypatch.setattr(trials, "run", lambda *a: pytest.fail("a trial ran"))
    with pytest.raises(SystemExit) as exit_info:
        trials.main()
    assert exit_info.value.code == 2
    assert "remote-hop-h200-thread hold themselves" in capsys.readouterr().err
