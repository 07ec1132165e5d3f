"""The timing model's disk cache of runs (twin.run_cache): a cached table is the simulated one, digit for digit;
a bad, foreign or unsafe cache is never used; edited kernels are never cached."""

from __future__ import annotations

import json
import os

import pytest

from gluon_overlap.timing import model as timing
from gluon_overlap.timing import run_cache
from gluon_overlap.timing.table import model_table

PAIRS = [("mxfp8", "mxfp8")]
KS = [512]


@pytest.fixture
def cache_on(tmp_path, monkeypatch):
    """The cache on, in a fresh private cache home; the model's in-process caches emptied."""
    home = tmp_path / "cache-home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.setenv(run_cache.ENV, "on")
    _fresh_process()
    yield home / "gluon-overlap" / "model-runs"
    monkeypatch.setenv(run_cache.ENV, "off")
    _fresh_process()


def _fresh_process() -> None:
    """As if in a new process: no runs in memory, the cache file read again."""
    timing.forget()
    run_cache.forget()


def _table() -> dict:
    return model_table("b200", PAIRS, KS, workers=1)


def test_a_cached_table_is_the_simulated_one_digit_for_digit(cache_on, monkeypatch):
    cold = _table()
    simulated = run_cache.stats()["simulated"]
    assert simulated > 0 and run_cache.stats()["reused"] == 0
    files = list(cache_on.glob("runs-*.json"))
    assert len(files) == 1 and oct(cache_on.stat().st_mode & 0o777) == "0o700"
    _fresh_process()
    warm = _table()
    assert run_cache.stats() == {"reused": simulated, "simulated": 0}
    assert json.dumps(warm, sort_keys=True) == json.dumps(cold, sort_keys=True)
    # and both are what the model gives with no cache at all
    monkeypatch.setenv(run_cache.ENV, "off")
    _fresh_process()
    assert json.dumps(_table(), sort_keys=True) == json.dumps(cold, sort_keys=True)
    assert run_cache.stats()["reused"] == 0


@pytest.mark.parametrize(
    "content", ["not json", '{"code": "other", "runs": {}}', "[1, 2]", '{"code": "%s", "runs": {"k": [1, 2, "x", 4]}}']
)
def test_a_bad_or_foreign_cache_file_is_ignored_and_rewritten(cache_on, content):
    expected = _table()
    path = next(cache_on.glob("runs-*.json"))
    path.write_text(content.replace("%s", run_cache.code_hash()))
    _fresh_process()
    assert json.dumps(_table(), sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert run_cache.stats()["reused"] == 0
    assert json.loads(path.read_text())["code"] == run_cache.code_hash()  # rewritten, whole


def test_a_poisoned_entry_cannot_change_the_answer_unless_the_code_matches(cache_on):
    """Entries are keyed by the code hash: the same entries under another hash are not read."""
    _table()
    path = next(cache_on.glob("runs-*.json"))
    raw = json.loads(path.read_text())
    raw["runs"] = {k: [1.0, 1.0, 1.0, 1.0] for k in raw["runs"]}
    raw["code"] = "0" * 64
    path.write_text(json.dumps(raw))
    _fresh_process()
    _table()
    assert run_cache.stats()["reused"] == 0


def test_another_version_of_the_package_starts_a_new_file_and_removes_the_old(cache_on, monkeypatch):
    _table()
    (old,) = cache_on.glob("runs-*.json")
    monkeypatch.setattr(run_cache, "_code_hash", "f" * 64)
    _fresh_process()
    _table()
    assert run_cache.stats()["reused"] == 0
    (new,) = cache_on.glob("runs-*.json")
    assert new != old and new.name.startswith("runs-ffff")


def test_a_folder_others_can_write_is_never_used(cache_on):
    cache_on.mkdir(parents=True)
    os.chmod(cache_on, 0o777)
    _table()
    _fresh_process()
    _table()
    assert run_cache.stats()["reused"] == 0 and not list(cache_on.glob("runs-*.json"))


def test_off_means_off(cache_on, monkeypatch):
    monkeypatch.setenv(run_cache.ENV, "off")
    _fresh_process()
    _table()
    assert not cache_on.exists() or not list(cache_on.glob("runs-*.json"))


def test_an_edited_kernel_is_always_simulated(cache_on, tmp_path):
    from gluon_overlap.emulate.kernels import DEFAULT_KERNEL
    from gluon_overlap.hardware import load_hardware

    copy = tmp_path / "kernel_copy.py"
    copy.write_text(open(DEFAULT_KERNEL).read())
    hw = load_hardware("b200")
    timing.predict(hw, "mxfp8", "mxfp8", 8192, 8192, 512, True, kernel_path=str(copy))
    assert run_cache.stats() == {"reused": 0, "simulated": 0} and run_cache.take_new() == {}
    timing.predict(hw, "mxfp8", "mxfp8", 8192, 8192, 512, True)  # the shipped kernel.py: cached
    assert run_cache.stats()["simulated"] == 1
