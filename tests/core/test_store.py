"""The one private store (gluon_overlap.store): private folders, atomic writes, bounds, locks."""

from __future__ import annotations

import os
import threading
import time

import pytest

from gluon_overlap import store


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "gluon-overlap"


def test_a_value_round_trips_in_a_private_folder(home):
    s = store.Store("things")
    assert s.read("k") is None
    path = s.write("k", b"value")
    assert path == home / "things" / "k.json" and s.read("k") == b"value"
    assert (home / "things").stat().st_mode & 0o777 == 0o700
    assert s.keys() == ["k"]


def test_a_folder_others_can_reach_is_never_used(home):
    (home / "things").mkdir(parents=True)
    os.chmod(home / "things", 0o755)
    s = store.Store("things")
    assert s.folder() is None and s.write("k", b"v") is None and s.read("k") is None


def test_a_linked_or_oversized_entry_is_not_read(home, tmp_path):
    s = store.Store("things", max_file_bytes=4)
    s.write("big", b"12345")
    assert s.read("big") is None
    (tmp_path / "elsewhere").write_bytes(b"x")
    (home / "things" / "link.json").symlink_to(tmp_path / "elsewhere")
    assert s.read("link") is None


def test_the_oldest_entries_go_past_the_bounds(home):
    s = store.Store("things", max_entries=3)
    for i in range(5):
        s.write(f"k{i}", b"v")
        os.utime(home / "things" / f"k{i}.json", (1000 + i, 1000 + i))
    s.write("k5", b"v")
    assert s.keys() == ["k3", "k4", "k5"]


def test_an_environment_switch_turns_a_store_off(home, monkeypatch):
    s = store.Store("things", env="GLUON_OVERLAP_TEST_STORE")
    monkeypatch.setenv("GLUON_OVERLAP_TEST_STORE", "off")
    assert not s.enabled and s.write("k", b"v") is None and s.read("k") is None


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt), store.AtomicFile(target) as f:
        f.temp.write_text("half")
        raise KeyboardInterrupt
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    store.write_atomically(target, "new")
    assert target.read_text() == "new"


def test_one_computes_while_the_other_waits_or_moves_on(home):
    s = store.Store("things")
    inside = threading.Event()
    release = threading.Event()

    def holder():
        with s.computing("k") as held:
            assert held
            inside.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    inside.wait(10)
    with s.computing("k", wait=False) as held:
        assert held is False  # another holds it: the caller computes something else first
    release.set()
    t.join()
    start = time.perf_counter()
    with s.computing("k", wait=False) as held:
        assert held
    assert time.perf_counter() - start < 5


def test_digest_separates_its_parts():
    assert store.digest("ab", "c") != store.digest("a", "bc")
