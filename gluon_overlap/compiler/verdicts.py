"""The compiler's verdict on a kernel (:class:`PrecheckResult`), and a per-user disk cache of verdicts
(:mod:`gluon_overlap.compiler.precheck` asks the compiler).

Asking Triton's frontend and ``sm_100a`` passes about a kernel takes about half a second (the frontend walks
the kernel's Python, then ``gluon_to_ttgir`` and the allocation passes run): more than a run of the executor on
a small problem.  Each process asked again about every kernel it launched, so a notebook that tries twenty
broken protocols paid ten seconds, and paid them again every time it ran.  This module keeps the verdicts:

* **keyed by everything a verdict depends on**: the kernel launch's key in :mod:`~gluon_overlap.compiler.precheck`
  (Triton's hash of the kernel's source, every function it calls, its file, the signature and the constexprs;
  the launch options), the kernel's file, and a fingerprint of the toolchain: the Triton version, the size and
  modification time of Triton's compiler library and of every Python file of the installed ``triton``
  package, the bytes of ``precheck.py`` and of this file, the target and the hardware limits the verdict
  compares with.  An edit to any of these asks the compiler again.
* **checked when read**: a verdict names kernel lines; it is used only when every line it names still reads
  as it did (the file may have changed in place), and only when the file parses as a verdict, else the
  compiler is asked (and the file rewritten).
* **private and bounded**: ``$XDG_CACHE_HOME/gluon-overlap/verdicts`` (default ``~/.cache/...``), used only
  when it is a directory of this user's that no one else can read or write (as the kernel copies'); one small
  file per verdict, written atomically, the oldest removed past :data:`MAX_ENTRIES`.
* only verdicts the compiler gave are stored: a kernel whose compile-time Python exits or raises, or that
  the launcher cannot type, is asked about again each time.

``GLUON_OVERLAP_VERDICT_CACHE=off`` turns it off (reading and writing); ``tests/interp/test_precheck.py`` runs with it
off, so it always asks the compiler, and ``tests/interp/test_verdict_cache.py`` checks that a verdict read back equals
the compiler's, field for field.
"""

from __future__ import annotations

import functools
import hashlib
import json
import linecache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gluon_overlap.store import Store
from gluon_overlap.text import SourceLine


@dataclass(frozen=True)
class Refusal:
    """One reason the compiler refuses the kernel: which check, the compiler's words, the kernel line."""

    check: str  # "frontend", "verifier", "lowering", "shared memory", "tensor memory"
    reason: str
    line: Any = None  # a gluon_cpu.SourceLine, or None when the compiler named no line

    def __str__(self) -> str:
        at = f" (at {self.line})" if self.line is not None else ""
        return f"the compiler refuses this kernel for sm_100a ({self.check}): {self.reason}{at}"


@dataclass
class PrecheckResult:
    """What the compiler said about one kernel + constexprs + launch options."""

    refusals: list[Refusal]
    shared_bytes: int | None = None  # dynamic shared memory per CTA the allocator placed
    tmem_cols: int | None = None  # TMEM columns the allocator placed
    seconds: float = 0.0  # wall time of the compiler's work (0 for a cache hit)
    cached: bool = False
    skipped: str | None = None  # why the compiler could not be asked (an argument it cannot type), or None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.refusals

    def message(self) -> str:
        return "; ".join(str(r) for r in self.refusals)


ENV = "GLUON_OVERLAP_VERDICT_CACHE"
MAX_ENTRIES = 4000  #: verdict files kept (each well under 1 KB; the test suite makes about 200)
MAX_FILE_BYTES = 64 * 2**10  #: a larger file is not read
_FORMAT = 1  #: the layout of a verdict file


#: where verdicts are kept (private, bounded, written atomically: :mod:`gluon_overlap.store`)
VERDICTS = Store(
    "verdicts", max_entries=MAX_ENTRIES, max_bytes=MAX_ENTRIES * MAX_FILE_BYTES, max_file_bytes=MAX_FILE_BYTES, env=ENV
)


def enabled() -> bool:
    return VERDICTS.enabled


@functools.cache
def toolchain_fingerprint(limits: tuple) -> str:
    """SHA-256 over what a verdict depends on besides the kernel: the Triton version, the installed Triton's
    files (path, size and modification time: a stat, not a read of its 100 MB library), this package's
    precheck and this module (bytes), and ``limits`` (target, PTX version, shared memory and TMEM limits)."""
    import triton

    digest = hashlib.sha256(f"format {_FORMAT}\ntriton {triton.__version__}\n{limits!r}\n".encode())
    root = Path(triton.__file__).resolve().parent
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".so")):
        try:
            st = path.stat()
        except OSError:
            continue
        digest.update(f"{path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    here = Path(__file__).resolve().parent
    for own in ("precheck.py", "verdicts.py"):
        digest.update((here / own).read_bytes() + b"\0")
    return digest.hexdigest()


def verdict_key(launch_key: str, kernel_file: str, limits: tuple) -> str:
    """The file name of one verdict: the launch, the kernel's file and the toolchain."""
    text = f"{toolchain_fingerprint(limits)}\n{launch_key}\n{kernel_file}"
    return hashlib.sha256(text.encode()).hexdigest()


def _line_to_json(line: Any) -> Any:
    if line is None:
        return None
    return {"file": line.file, "lineno": line.lineno, "function": line.function, "text": line.text}


def _line_from_json(raw: Any) -> Any:
    """The ``SourceLine`` a stored verdict names; ``ValueError`` when it is malformed or no longer reads so."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != {"file", "lineno", "function", "text"}:
        raise ValueError("not a source line")
    file, lineno, function, text = raw["file"], raw["lineno"], raw["function"], raw["text"]
    if not (
        isinstance(file, str)
        and isinstance(function, str)
        and isinstance(text, str)
        and isinstance(lineno, int)
        and not isinstance(lineno, bool)
        and lineno > 0
    ):
        raise ValueError("not a source line")
    linecache.checkcache(file)
    if linecache.getline(file, lineno).strip() != text:
        raise ValueError("the line it names has changed")
    return SourceLine(file, lineno, function, text)


def _size(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise ValueError("not a size")


def load(key: str) -> PrecheckResult | None:
    """The stored verdict (a ``PrecheckResult`` marked ``cached``), or None: off, absent, unreadable, not a
    verdict, or naming a line that has changed."""
    data = VERDICTS.read(key)
    if data is None:
        return None
    try:
        raw = json.loads(data.decode("utf-8"))
        if not isinstance(raw, dict) or raw.get("key") != key or not isinstance(raw.get("refusals"), list):
            return None
        refusals = []
        for r in raw["refusals"]:
            if not (isinstance(r, dict) and isinstance(r.get("check"), str) and isinstance(r.get("reason"), str)):
                return None
            refusals.append(Refusal(r["check"], r["reason"], _line_from_json(r.get("line"))))
        notes = raw.get("notes", [])
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            return None
        result = PrecheckResult(
            refusals, _size(raw.get("shared_bytes")), _size(raw.get("tmem_cols")), 0.0, True, None, notes
        )
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return result


def store(key: str, result: PrecheckResult) -> None:
    """Keep a verdict the compiler gave (atomically); a cache that cannot be written is skipped silently."""
    if not enabled() or result.skipped is not None:
        return
    record = {
        "key": key,
        "shared_bytes": result.shared_bytes,
        "tmem_cols": result.tmem_cols,
        "notes": list(result.notes),
        "refusals": [{"check": r.check, "reason": r.reason, "line": _line_to_json(r.line)} for r in result.refusals],
    }
    VERDICTS.write(key, json.dumps(record, separators=(",", ":")).encode())
