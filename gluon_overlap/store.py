"""The package's private disk store and its one atomic writer.

Three things are kept between processes, each in a folder of its own under the user's cache home
(``$XDG_CACHE_HOME/gluon-overlap/<name>``, default ``~/.cache/gluon-overlap/<name>``):

* ``kernels/`` -- copies of edited kernels (:mod:`gluon_overlap.emulate.kernel_files`);
* ``verdicts/`` -- the compiler's verdicts on kernels (:mod:`gluon_overlap.compiler.verdicts`);
* ``model-runs/`` and ``step-figures/`` -- the timing model's simulated runs and per-step figures
  (:mod:`gluon_overlap.timing.run_cache`, :mod:`gluon_overlap.steps.predict`).

Every one of them is a :class:`Store`: **private** (a real directory, not a link, owned by this user with no
group or other access, created with mode 0700; anything else is not used), **content-addressed** (an entry's name
is a digest of what its value depends on, so a stale entry is never read: it is simply never asked for),
**bounded** (after a write, the least recently used entries past the store's limits are removed) and
**written atomically** (:func:`write_atomically`: a temporary file beside the target, renamed over it; a reader
sees the old file or the new one, never half of one).  A store that cannot be used (no home, a folder someone
else owns, a read-only disk) reads nothing and writes nothing: every cache here only saves time.

:class:`AtomicFile` and :func:`write_atomically` are also what the commands write their ``--trace``, ``--emit``
and ``--csv`` files with.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import filelock

__all__ = ["AtomicFile", "Store", "cache_home", "digest", "is_private", "make_private", "matches", "write_atomically"]


class AtomicFile:
    """A file written whole or not at all: the data goes to a temporary file in the target's folder, renamed
    over the target by :meth:`commit`; :meth:`discard` (or an exception in a ``with`` block, Ctrl-C included)
    removes it.  ``os.devnull`` is written directly."""

    def __init__(self, target: str | os.PathLike, create_parents: bool = False):
        self.target = Path(os.path.realpath(Path(target).expanduser()))
        self.direct = str(target) == os.devnull
        if self.direct:
            self.temp = Path(os.devnull)
            return
        if create_parents:
            self.target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=self.target.parent, prefix=f".{self.target.name}.", suffix=".partial")
        os.close(fd)
        self.temp = Path(name)

    def commit(self) -> Path:
        if not self.direct:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(self.temp, 0o666 & ~umask)  # the mode a plain open() would have given
            os.replace(self.temp, self.target)
        return self.target

    def discard(self) -> None:
        if not self.direct:
            try:
                os.unlink(self.temp)
            except OSError:
                pass

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def write_atomically(target: str | os.PathLike, data: str | bytes, create_parents: bool = False) -> Path:
    """Write ``data`` to ``target`` through an :class:`AtomicFile`; return the path written."""
    out = AtomicFile(target, create_parents)
    try:
        with open(out.temp, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        return out.commit()  # inside: a rename that fails (or is interrupted) leaves no temporary file either
    except BaseException:
        out.discard()
        raise


def digest(*parts: str | bytes) -> str:
    """SHA-256 (hex) of ``parts``, each followed by a NUL byte: the name of an entry that depends on them."""
    h = hashlib.sha256()
    for part in parts:
        h.update((part.encode() if isinstance(part, str) else part) + b"\0")
    return h.hexdigest()


def is_private(path: Path) -> bool:
    """``path`` is a real directory (no symlink) owned by this user, with no group or other access."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    getuid = getattr(os, "getuid", None)
    owner_ok = getuid is None or st.st_uid == getuid()
    return stat.S_ISDIR(st.st_mode) and owner_ok and not st.st_mode & 0o077


def make_private(path: Path) -> Path | None:
    """``path`` created (mode 0700) or found private; None when it cannot be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    except OSError:
        return None
    return path if is_private(path) and os.access(path, os.W_OK | os.X_OK) else None


def cache_home() -> Path | None:
    """``$XDG_CACHE_HOME`` (when absolute), else ``$HOME/.cache``; None without a usable home."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg)
    home = os.environ.get("HOME", "") or (os.path.expanduser("~") if os.name != "nt" else "")
    return Path(home) / ".cache" if home and os.path.isabs(home) else None


def matches(path: Path, data: bytes) -> bool:
    """``path`` is a regular file (not a link) holding exactly ``data``."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
            return False
        with open(path, "rb") as f:
            return f.read() == data
    except OSError:
        return False


class Store:
    """One private, bounded folder of entries named by their key (see the module docstring).

    ``name``: the folder under the cache home; ``suffix``: every entry's file suffix; ``max_entries`` /
    ``max_bytes``: the bounds kept after each write; ``max_file_bytes``: a larger entry is not read; ``env``: an
    environment variable that turns the store off (``off``, ``0``, ``no``, ``false``).  ``folder`` names the folder
    itself instead of one under the cache home (checked the same way)."""

    def __init__(
        self,
        name: str,
        *,
        suffix: str = ".json",
        max_entries: int = 1000,
        max_bytes: int = 2**26,
        max_file_bytes: int = 2**23,
        env: str | None = None,
        folder: Path | None = None,
    ):
        self.name, self.suffix, self.env = name, suffix, env
        self.max_entries, self.max_bytes, self.max_file_bytes = max_entries, max_bytes, max_file_bytes
        self._named = folder

    @property
    def enabled(self) -> bool:
        return self.env is None or os.environ.get(self.env, "").strip().lower() not in ("off", "0", "no", "false")

    def folder(self) -> Path | None:
        """The store's folder, made private if it is new; None when there is no usable one."""
        if self._named is not None:
            return make_private(self._named)
        home = cache_home()
        return make_private(home / "gluon-overlap" / self.name) if home is not None else None

    def path(self, key: str, folder: Path | None = None) -> Path | None:
        folder = folder if folder is not None else self.folder()
        return None if folder is None else self._entry(folder, key)

    def _entry(self, folder: Path, key: str) -> Path:
        return folder / f"{key}{self.suffix}"

    def read(self, key: str) -> bytes | None:
        """The entry's bytes (and it is marked recently used), or None: off, absent, a link, too large."""
        path = self.path(key) if self.enabled else None
        if path is None:
            return None
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > self.max_file_bytes:
                return None
            data = path.read_bytes()
        except OSError:
            return None
        try:
            os.utime(path)  # recently used: removed last
        except OSError:
            pass
        return data

    def write(self, key: str, data: bytes) -> Path | None:
        """Keep ``data`` under ``key`` (atomically; unchanged bytes are only marked used); the least recently used
        entries past the bounds are removed.  None when the store is off or cannot be written."""
        folder = self.folder() if self.enabled else None
        if folder is None:
            return None
        path = self._entry(folder, key)
        try:
            if matches(path, data):
                os.utime(path)
                return path
            write_atomically(path, data)
            self.prune(folder, keep=path)
        except OSError:
            return None
        return path

    def keys(self) -> list[str]:
        folder = self.folder() if self.enabled else None
        if folder is None:
            return []
        return sorted(p.name[: -len(self.suffix)] for p in folder.glob(f"*{self.suffix}") if not p.is_symlink())

    def remove(self, key: str) -> None:
        path = self.path(key) if self.enabled else None
        if path is not None:
            path.unlink(missing_ok=True)

    def prune(self, folder: Path, keep: Path | None = None) -> None:
        """Remove the least recently used entries past :attr:`max_entries` files or :attr:`max_bytes` bytes
        (never ``keep``)."""
        entries = []
        for p in folder.glob(f"*{self.suffix}"):
            try:
                st = os.lstat(p)
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, p))
        entries.sort(key=lambda e: (e[2] != keep, -e[0]))  # the one to keep, then the newest first
        total = 0
        for n, (_, size, p) in enumerate(entries):
            total += size
            if p != keep and (n >= self.max_entries or total > self.max_bytes):
                try:
                    p.unlink()
                except OSError:
                    pass

    @contextmanager
    def computing(self, key: str, wait: bool = True) -> Iterator[bool]:
        """Hold the entry's lock while its value is computed, so two processes do not compute it at once.  Yields
        False when ``wait`` is False and another process holds it; True otherwise (also where no lock can be
        taken: then compute anyway)."""
        path = self.path(key) if self.enabled else None
        if path is None:
            yield True
            return
        lock = filelock.FileLock(str(path.with_suffix(".lock")))
        try:
            lock.acquire(timeout=-1 if wait else 0)
        except filelock.Timeout:
            yield False
            return
        except OSError:
            yield True
            return
        try:
            yield True
        finally:
            lock.release()
