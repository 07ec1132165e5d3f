"""The unedited kernel's recordings for the timing model, shipped with the package and checked against its source.

Recording the kernel (:func:`gluon_overlap.timing.streams.record`: the interpreter runs ``kernel.py`` once per
configuration) is half of a ``model`` run's work, and what it records depends only on the kernel and the
interpreter, not on the GPU description or the costs.  So, like the ping-pong schedule (``data/ping_pong.json``),
the recordings of every configuration the timing model's default tables need (each shipped description, every
format pair, overlap off and on; :func:`gluon_overlap.regenerate.recording_configs`) are shipped in
``data/recordings.zip`` (one JSON member per configuration), stamped with the SHA-256 of the sources they come from
(:data:`RECORDING_MODULES`: the kernel, the interpreter and what they import).  The timing model uses a shipped
recording only when that stamp equals the installed sources' (any edit to the kernel or the interpreter, a
``--break`` or another ``--kernel`` file: recorded live), and only for timing: a shipped operation carries what the
engine and the cost model read (kind, barriers, columns, bytes, tile, the TMA load's per-CTA byte targets), not the
interpreter's data views or source lines.

``python -m gluon_overlap.regenerate recordings`` rewrites the file (about a minute);
``tests/timing/test_recordings.py`` checks that it is current, that each of its recordings equals a live one field by
field, and that a model table timed from it equals one timed from live recordings digit for digit.
"""

from __future__ import annotations

import hashlib
import json
import os
import types
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from gluon_overlap.interp import ops
from gluon_overlap.interp.gc_pause import gc_paused
from gluon_overlap.interp.memory import Columns
from gluon_overlap.timing import streams

PACKAGE = Path(__file__).resolve().parents[1]
SHIPPED = PACKAGE / "data" / "recordings.zip"
#: the modules a recording depends on (tests/timing/test_recordings.py checks that recording imports no other)
RECORDING_MODULES = (
    "__init__.py",
    "device.py",
    "formats.py",
    "kernel.py",
    "limits.py",
    "registry.py",
    "store.py",
    "swizzle.py",
    "text.py",
    "tmem.py",
    "compiler/__init__.py",
    "compiler/precheck.py",
    "compiler/verdicts.py",
    "emulate/__init__.py",
    "emulate/config.py",
    "emulate/kernel_files.py",
    "emulate/kernels.py",
    "emulate/wallclock.py",
    "gpu/__init__.py",
    "gpu/arith.py",
    "gpu/linear.py",
    "gpu/numerics.py",
    "gpu/reduce_order.py",
    "interp/__init__.py",
    "interp/async_ops.py",
    "interp/atomics.py",
    "interp/clc.py",
    "interp/context.py",
    "interp/cp_async.py",
    "interp/data.py",
    "interp/engine.py",
    "interp/gc_pause.py",
    "interp/global_mem.py",
    "interp/language.py",
    "interp/launch.py",
    "interp/memory.py",
    "interp/ops.py",
    "interp/races.py",
    "interp/rebind.py",
    "interp/registry.py",
    "interp/tensors.py",
    "timing/__init__.py",
    "timing/streams.py",
)
_STAMPED = ("proc", "t_issue", "t_start", "t_end", "line", "x")  # per run, or the executor's: not shipped


@lru_cache(maxsize=1)
def sources_hash() -> str:
    """SHA-256 over :data:`RECORDING_MODULES` (name and bytes) and the Triton version."""
    import triton

    digest = hashlib.sha256(f"triton {triton.__version__}\n".encode())
    for name in RECORDING_MODULES:
        digest.update(name.encode() + b"\0" + (PACKAGE / name).read_bytes() + b"\0")
    return digest.hexdigest()


def config_key(plan: Any, m: int, n: int, k: int, grid: int, clusters: tuple[int, ...] | None) -> str:
    return repr((plan, m, n, k, grid, clusters))


def _slots(cls: type) -> list[str]:
    return [s for c in reversed(cls.__mro__) for s in getattr(c, "__slots__", ()) if s not in _STAMPED]


@cache
def _op_class(name: str) -> tuple[type[ops.Op], list[str]]:
    cls = getattr(ops, name, None)
    if not (isinstance(cls, type) and issubclass(cls, ops.Op)):
        raise ValueError(f"{name!r} is not an operation")
    return cls, _slots(cls)


def _encode_value(value: Any, bar_index: dict[int, int]) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, ops.Barrier):
        return {"bar": bar_index[id(value)]}
    if isinstance(value, Columns):
        return {"columns": [value.offset, value.cols]}
    if isinstance(value, tuple) and all(isinstance(v, ops.Barrier) for v in value) and value:
        return {"bars": [bar_index[id(v)] for v in value]}
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return {"ints": list(value)}
    raise TypeError(f"a recorded operation field of type {type(value).__name__} cannot be shipped")


def _decode_value(value: Any, bars: list[ops.Barrier]) -> Any:
    if not isinstance(value, dict):
        return value
    if "bar" in value:
        return bars[value["bar"]]
    if "columns" in value:
        return Columns(*value["columns"])
    if "bars" in value:
        return tuple(bars[i] for i in value["bars"])
    return tuple(value["ints"])


def encode(recording: Any) -> dict:
    """A recording as JSON data: barriers, then per stream its identity, forks and operations."""
    bar_index = {id(b): i for i, b in enumerate(recording.barriers)}
    encoded = []
    for s in recording.streams:
        issued = []
        for op in s.ops:
            values = [_encode_value(getattr(op, name), bar_index) for name in _slots(type(op))]
            entry = [type(op).__name__, values]
            if op.kind == "tma_load":  # the per-CTA byte targets the engine completes (the executor's multicast)
                targets = getattr(op.x, "tx_targets", None)
                if targets is not None:
                    entry.append([[bar_index[id(b)], nbytes] for b, nbytes in targets])
            issued.append(entry)
        encoded.append(
            {
                "partition": s.partition,
                "cta": s.cta,
                "cluster": s.cluster,
                "forks": [list(f) for f in s.forks],
                "ops": issued,
            }
        )
    return {
        "barriers": [[b.name, b.index, b.cta, b.cluster, b.count] for b in recording.barriers],
        "roots": list(recording.roots),
        "streams": encoded,
    }


def decode(data: dict) -> Any:
    """The :class:`~gluon_overlap.timing.streams.Recording` of :func:`encode`'s data."""
    bars = [
        ops.Barrier(name, index, cta=cta, cluster=cluster, count=count)
        for name, index, cta, cluster, count in data["barriers"]
    ]
    columns: dict[tuple[int, int], Columns] = {}  # one (immutable) Columns per range and recording

    def value_of(value: dict) -> Any:  # _decode_value, a Columns made once per range
        if "bar" in value:
            return bars[value["bar"]]
        if "columns" in value:
            offset, cols = value["columns"]
            found = columns.get((offset, cols))
            if found is None:
                found = columns[(offset, cols)] = Columns(offset, cols)
            return found
        return _decode_value(value, bars)

    decoded = []
    for s in data["streams"]:
        issued = []
        for entry in s["ops"]:
            cls, names = _op_class(entry[0])
            op = cls.__new__(cls)
            op.proc = op.line = op.x = None
            op.t_issue = op.t_start = op.t_end = 0.0
            for name, value in zip(names, entry[1], strict=True):
                setattr(op, name, value_of(value) if value.__class__ is dict else value)
            if len(entry) > 2:
                op.x = types.SimpleNamespace(tx_targets=[(bars[i], n) for i, n in entry[2]])
            issued.append(op)
        decoded.append(
            streams.Stream(s["partition"], s["cta"], s["cluster"], tuple(issued), tuple(tuple(f) for f in s["forks"]))
        )
    return streams.Recording(tuple(decoded), tuple(data["roots"]), tuple(bars))


def _member(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:32] + ".json"


_archives: dict[int, zipfile.ZipFile | None] = {}


def _shipped_archive() -> zipfile.ZipFile | None:
    """The shipped archive when it comes from the installed sources, else None (opened once per process: forked
    workers must not share one file offset)."""
    pid = os.getpid()
    if pid not in _archives:
        _archives[pid] = None
        try:
            archive = zipfile.ZipFile(SHIPPED)
            if archive.read("sources").decode() == sources_hash():
                _archives[pid] = archive
        except (OSError, KeyError, ValueError, zipfile.BadZipFile):
            pass
    return _archives[pid]


def shipped(key: str) -> Any | None:
    """The shipped recording of ``key`` (a fresh copy), or None when there is none or the sources changed."""
    archive = _shipped_archive()
    if archive is None:
        return None
    with gc_paused():  # a recording is some 10^5 new containers: the collector's scans would cost half its parse
        try:
            data = json.loads(archive.read(_member(key)))
        except (KeyError, ValueError, zipfile.BadZipFile):
            return None
        return decode(data) if data.get("key") == key else None


_asked: dict[str, tuple[Any, tuple[int, ...] | None]] | None = None
_SHIPPED: dict[str, Any] = {}  # recordings taken from the archive (kept apart: they have no data views)


@contextmanager
def noting() -> Iterator[dict[str, tuple[Any, tuple[int, ...] | None]]]:
    """Inside, every recording asked of :func:`recording` is noted (key -> ``(config, clusters)``): how the
    regenerator learns which recordings the timing model's default tables need."""
    global _asked
    _asked = {}
    try:
        yield _asked
    finally:
        _asked = None


def recording(config: Any, clusters: Iterable[int] | None = None) -> Any:
    """The timing model's recording of ``config``: for the unedited kernel the shipped one when it comes from the
    installed sources, else (or when it has none) recorded live (:func:`gluon_overlap.timing.streams.record`)."""
    clusters = None if clusters is None else tuple(clusters)
    key = config_key(config.plan, config.m, config.n, config.k, config.grid, clusters)
    if _asked is not None:
        _asked[key] = (config, clusters)
    if config.kernel_path is None and not config.breaks:
        if key not in _SHIPPED:
            found = shipped(key)
            if found is None:
                return streams.record(config, clusters)
            _SHIPPED[key] = found
        return _SHIPPED[key]
    return streams.record(config, clusters)


def launch_recorded(engine: Any, config: Any, clusters: Iterable[int] | None = None) -> Any:
    """The timing model's launch: replay the recorded streams of ``config`` on ``engine``."""
    rec = recording(config, clusters)
    streams.replay(engine, rec)
    return rec


def write(configs: Iterable[tuple[Any, tuple[int, ...] | None]], path: Path = SHIPPED) -> int:
    """Record ``configs`` (``(config, clusters)`` pairs) live and write them to ``path``; returns how many."""
    configs = list(configs)
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr(_entry("sources"), sources_hash())
        for config, clusters in sorted(
            configs, key=lambda c: config_key(c[0].plan, c[0].m, c[0].n, c[0].k, c[0].grid, c[1])
        ):
            key = config_key(config.plan, config.m, config.n, config.k, config.grid, clusters)
            data = {"key": key, **encode(streams.record(config, clusters))}
            archive.writestr(_entry(_member(key)), json.dumps(data, separators=(",", ":")))
    tmp.replace(path)
    _archives.clear()
    return len(configs)


def _entry(name: str) -> zipfile.ZipInfo:
    """A member with a fixed time stamp: the same recordings give the same bytes."""
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    return info
