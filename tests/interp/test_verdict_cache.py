"""The disk cache of the compiler's verdicts (gluon_overlap.compiler.verdicts): a verdict read back equals the
one the compiler gives (with the cache off), field for field; a file that is not a verdict, or names a line
that changed, is never served; a folder others can write is never used; off means off."""

from __future__ import annotations

import json
import os

import pytest
from mutants import BY_NAME, write_mutant
from test_precheck import _args

from gluon_overlap.compiler import precheck as pc
from gluon_overlap.compiler import verdicts as verdict_cache
from gluon_overlap.emulate.kernels import load_kernel


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """A fresh cache home with the cache on; no verdict of this process's memory."""
    home = tmp_path / "cache-home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.setenv(verdict_cache.ENV, "on")
    pc.clear_cache()
    yield home / "gluon-overlap" / "verdicts"
    pc.clear_cache()


def _verdict(module):
    pc.clear_cache()  # only the disk may answer, not this process's memory
    return pc.precheck(module.mma_scaled_warp_specialized_kernel, _args(module), num_ctas=2, num_warps=4)


def _fields(v):
    return v.refusals, v.shared_bytes, v.tmem_cols, v.skipped, v.notes


@pytest.mark.parametrize("name", [None, "seven-stages", "scale-copy-cga-mismatch", "epilogue-one-warp"])
def test_a_verdict_read_back_equals_the_compilers(name, cache_home, tmp_path, monkeypatch):
    """The real kernel (accepted, with its sizes) and three refusals (shared memory, verifier, frontend)."""
    module = load_kernel(None if name is None else write_mutant(BY_NAME[name], tmp_path))
    first = _verdict(module)
    assert not first.cached and first.seconds > 0
    assert len(list(cache_home.glob("*.json"))) == 1
    again = _verdict(module)
    assert again.cached and again.seconds == 0.0
    monkeypatch.setenv(verdict_cache.ENV, "off")
    live = _verdict(module)  # the compiler, asked again
    assert not live.cached
    assert _fields(again) == _fields(live) == _fields(first)
    assert (live.ok, bool(live.refusals)) == (name is None, name is not None)
    if name is None:
        assert live.shared_bytes > 0 and live.tmem_cols > 0
    else:
        assert all(r.line is not None for r in live.refusals)


@pytest.mark.parametrize("damage", ["not json", "another key", "a changed line", "a bad size", "too large"])
def test_a_damaged_verdict_is_not_served_and_is_rewritten(damage, cache_home, tmp_path):
    module = load_kernel(write_mutant(BY_NAME["seven-stages"], tmp_path))
    first = _verdict(module)
    (path,) = cache_home.glob("*.json")
    record = json.loads(path.read_text())
    if damage == "not json":
        path.write_text("{not json")
    elif damage == "another key":
        path.write_text(json.dumps({**record, "key": "0" * 64}))
    elif damage == "a changed line":
        changed = json.loads(path.read_text())
        changed["refusals"][0]["line"]["text"] = "x = 1  # not what the file says"
        path.write_text(json.dumps(changed))
    elif damage == "a bad size":
        path.write_text(json.dumps({**record, "shared_bytes": -1}))
    else:
        path.write_text(json.dumps({**record, "notes": ["x" * verdict_cache.MAX_FILE_BYTES]}))
    again = _verdict(module)
    assert not again.cached  # asked the compiler
    assert _fields(again) == _fields(first)
    assert json.loads(path.read_text()) == record  # and rewrote the file


def test_a_folder_others_can_write_is_never_used(cache_home, tmp_path):
    module = load_kernel(write_mutant(BY_NAME["seven-stages"], tmp_path))
    _verdict(module)
    (path,) = cache_home.glob("*.json")
    os.chmod(cache_home, 0o777)
    try:
        assert not _verdict(module).cached  # not read
        path.unlink()
        _verdict(module)
        assert not path.exists()  # not written
    finally:
        os.chmod(cache_home, 0o700)


def test_off_reads_and_writes_nothing(cache_home, tmp_path, monkeypatch):
    module = load_kernel(write_mutant(BY_NAME["seven-stages"], tmp_path))
    monkeypatch.setenv(verdict_cache.ENV, "off")
    assert not _verdict(module).cached and not _verdict(module).cached
    assert not cache_home.exists() or not list(cache_home.glob("*.json"))


def test_the_key_covers_the_launch_the_kernel_file_and_the_limits():
    key = verdict_cache.verdict_key("launch", "/a/kernel.py", (100, 88, 232448, 512))
    others = {
        verdict_cache.verdict_key("launch2", "/a/kernel.py", (100, 88, 232448, 512)),
        verdict_cache.verdict_key("launch", "/b/kernel.py", (100, 88, 232448, 512)),
        verdict_cache.verdict_key("launch", "/a/kernel.py", (100, 88, 232448, 1024)),
    }
    assert key not in others and len(others) == 3
    assert key == verdict_cache.verdict_key("launch", "/a/kernel.py", (100, 88, 232448, 512))
