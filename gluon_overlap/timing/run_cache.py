"""A per-user disk cache of the timing model's simulated runs, so a second ``model`` is quick.

A simulated run (:func:`gluon_overlap.timing.model._run`) is a pure function of the package's code, the hardware
description's values and the launch it simulates; its answer is four floats.  This module keeps those answers
between processes:

* **keyed by everything the answer depends on**: the SHA-256 of every ``.py`` and ``.json`` file of the
  installed ``gluon_overlap`` package (kernel, executor, engine, costs, shipped SASS counts, ...), the Triton
  version, and per run the description's values (every field but its name and provenance) with the launch's
  plan, shape and L2 waves.
  Any edit to the package starts a new cache file; only the unedited ``kernel.py`` is cached (edited kernels
  and ``--break`` runs are always simulated).
* **private and bounded**: ``$XDG_CACHE_HOME/gluon-overlap/model-runs`` (default ``~/.cache/...``), used only
  when it is a directory of this user's that no one else can read or write (as the kernel copies'); one file
  per code hash, older ones removed, at most :data:`MAX_ENTRIES` runs.  A file that does not parse, or holds
  anything but finite numbers, is ignored (and rewritten).
* **written atomically**, once per ``model`` table, by the process that prints it.

``GLUON_OVERLAP_MODEL_CACHE=off`` turns it off (reading and writing).  The test suite runs with it off (so every
test simulates; ``tests/conftest.py``), except the tests of this module.
Floats are stored as JSON numbers, which round-trip exactly: a cached table is the simulated one, digit for digit
(``tests/timing/test_run_cache.py``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path
from typing import Any

from gluon_overlap import store

ENV = "GLUON_OVERLAP_MODEL_CACHE"
MAX_ENTRIES = 20_000  #: runs kept in one cache file (the default table needs about 500 per description)
MAX_FILE_BYTES = 8 * 2**20  #: a larger file is not read
FIELDS = ("end", "mainloop", "exposed", "hbm_bytes")

_code_hash: str | None = None
_loaded: dict[str, list[float]] | None = None
_new: dict[str, list[float]] = {}
_stats = {"reused": 0, "simulated": 0}


#: one entry per code hash (:func:`code_hash`): a new code's runs replace the old ones
RUNS = store.Store("model-runs", max_entries=1, max_bytes=MAX_FILE_BYTES, max_file_bytes=MAX_FILE_BYTES, env=ENV)


def enabled() -> bool:
    return RUNS.enabled


def code_hash() -> str:
    """SHA-256 over the package's Python sources and data files (path and bytes, in path order: the kernel, the
    executor, the costs, the shipped SASS counts and descriptions) and the Triton version."""
    global _code_hash
    if _code_hash is None:
        import triton

        root = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256(f"triton {triton.__version__}\n".encode())
        files = [p for p in root.rglob("*") if p.suffix in (".py", ".json") and "__pycache__" not in p.parts]
        for path in sorted(files):
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
        _code_hash = digest.hexdigest()
    return _code_hash


def run_key(hw: Any, plan: Any, shape: tuple, waves: tuple) -> str:
    """The cache key of one run: the description's values (not its name), the plan, the shape, the waves."""
    values = tuple(
        (f.name, getattr(hw, f.name))
        for f in dataclasses.fields(hw)
        if f.compare and f.name not in ("name", "description")
    )
    return hashlib.sha256(repr((values, plan, shape, waves)).encode()).hexdigest()


def _entry() -> str:
    return f"runs-{code_hash()[:24]}"


def _valid(entry: Any) -> bool:
    return (
        isinstance(entry, list)
        and len(entry) == len(FIELDS)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in entry)
    )


def _load() -> dict[str, list[float]]:
    global _loaded
    if _loaded is None:
        _loaded = {}
        data = RUNS.read(_entry())
        if data is not None:
            try:
                raw = json.loads(data)
                if isinstance(raw, dict) and raw.get("code") == code_hash() and isinstance(raw.get("runs"), dict):
                    _loaded = {k: v for k, v in raw["runs"].items() if isinstance(k, str) and _valid(v)}
            except (ValueError, UnicodeDecodeError):
                _loaded = {}  # unreadable or not ours: simulate, and rewrite it on save
    return _loaded


def get(key: str) -> dict[str, float] | None:
    """A cached run's totals, or None (always None when the cache is off)."""
    if not enabled():
        return None
    entry = _load().get(key) or _new.get(key)
    if entry is None:
        return None
    _stats["reused"] += 1
    return dict(zip(FIELDS, entry, strict=True))


def put(key: str, totals: dict[str, float]) -> None:
    """Remember a simulated run (saved by :func:`save`)."""
    _stats["simulated"] += 1
    if enabled():
        _new[key] = [float(totals[f]) for f in FIELDS]


def take_new() -> dict[str, list[float]]:
    """The runs simulated since the last call (a worker hands them to the process that saves)."""
    out = dict(_new)
    _new.clear()
    return out


def add(entries: dict[str, list[float]]) -> None:
    """Runs another process simulated, to be saved with this one's."""
    if enabled():
        _new.update({k: v for k, v in entries.items() if _valid(v)})


def stats() -> dict[str, int]:
    """How many runs this process took from the cache and how many it simulated (since the last reset)."""
    return dict(_stats)


def reset_stats() -> None:
    _stats["reused"] = _stats["simulated"] = 0


def forget() -> None:
    """Drop this process's view of the cache (read again on next use) and its unsaved runs."""
    global _loaded
    _loaded = None
    _new.clear()
    reset_stats()


def save() -> None:
    """Write the cache file with the new runs (atomically; older code hashes' files removed).  A cache that
    cannot be written is skipped silently: it only saves time."""
    if not enabled() or not _new:
        return
    runs = {**_load(), **_new}
    if len(runs) > MAX_ENTRIES:
        runs = dict(_new)
    if RUNS.write(_entry(), json.dumps({"code": code_hash(), "runs": runs}, separators=(",", ":")).encode()) is None:
        _new.clear()  # a cache that cannot be written only costs time
        return
    _load().update(_new)
    _new.clear()
