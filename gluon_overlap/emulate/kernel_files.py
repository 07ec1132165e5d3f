"""Where the copies of edited kernels live: a private, content-addressed, bounded folder.

Gluon and the executor read a kernel's source from its file, so an edited kernel (a ``--break``, a
learner's ``--kernel`` file, an exercise) is imported from a file of its own.  That file must be one
nobody else can place or change, and the folder must not grow without end:

* **private**: ``$XDG_CACHE_HOME/gluon-overlap/kernels`` (default ``~/.cache/...``), created with
  mode 0700 and used only when it is a real directory (not a link) owned by this user with no group
  or other access; otherwise a per-process folder from :func:`tempfile.mkdtemp` (mode 0700), removed
  at exit.  ``GLUON_OVERLAP_KERNEL_DIR`` names another folder (checked the same way).  Two users
  therefore never share a folder, and never block each other.
* **content-addressed and verified**: a copy's name carries the SHA-256 of its text; the text
  executed is the verified source string itself (compiled from memory, with the file only for
  line look-ups), and a file whose bytes differ from that text is rewritten before use.
* **bounded**: after each new copy, the oldest copies beyond :data:`MAX_COPIES` files or
  :data:`MAX_BYTES` bytes are removed.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import shutil
import stat
import sys
import tempfile
import types
from pathlib import Path

from gluon_overlap import store
from gluon_overlap.text import DISPLAY_NAMES, exception_text

MAX_COPIES = 64  #: kernel copies kept in the folder
MAX_BYTES = 8 * 2**20  #: bytes of kernel copies kept in the folder
FOLDER_ENV = "GLUON_OVERLAP_KERNEL_DIR"
_PREFIX = "gluon_overlap_user_kernel_"

_folder: Path | None = None
#: the store the copies live in (its folder, limits and pruning: :mod:`gluon_overlap.store`)
COPIES = store.Store("kernels", suffix=".py", max_entries=MAX_COPIES, max_bytes=MAX_BYTES)


_own_temporary: list[tuple[int, Path]] = []  #: (pid that made it, folder) of the per-process folders


def _per_process_folder() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="gluon-overlap-kernels-"))  # mode 0700, a fresh unpredictable name
    _own_temporary.append((os.getpid(), folder))
    atexit.register(remove_own_temporary_folders)
    return folder


def remove_own_temporary_folders() -> None:
    """Remove the per-process folders this process made (not those of a parent it was forked from)."""
    for pid, folder in list(_own_temporary):
        if pid == os.getpid():
            shutil.rmtree(folder, ignore_errors=True)
            _own_temporary.remove((pid, folder))


def kernel_folder() -> Path:
    """The private folder for this process's kernel copies (chosen once, see the module docstring)."""
    global _folder
    if _folder is not None and store.is_private(_folder):
        return _folder
    chosen = None
    named = os.environ.get(FOLDER_ENV, "")
    if named:
        chosen = store.make_private(Path(named).expanduser())
        if chosen is None:
            raise ValueError(
                f"{FOLDER_ENV}={named!r} must be a directory of this user's that no one else can "
                "read or write (mode 0700), or a place where one can be created"
            )
    else:
        chosen = COPIES.folder()
    _folder = chosen if chosen is not None else _per_process_folder()
    return _folder


def prune(folder: Path, keep: Path | None = None) -> None:
    """Remove the oldest kernel copies in ``folder`` past :data:`MAX_COPIES` files or :data:`MAX_BYTES` bytes
    (never ``keep``)."""
    COPIES.prune(folder, keep)


def kernel_copy(source: str, stem: str, salt: str = "") -> Path:
    """The private file holding ``source`` (written, or rewritten when its bytes differ)."""
    if not stem.isidentifier():
        raise ValueError(f"stem={stem!r} must be a Python identifier")
    data = source.encode()
    digest = hashlib.sha256(salt.encode() + b"\0" + data).hexdigest()[:32]
    folder = kernel_folder()
    path = folder / f"{stem}_{digest}.py"
    if store.matches(path, data):
        try:
            os.utime(path)  # recently used: pruned last
        except OSError:
            pass
        return path
    store.write_atomically(path, data)
    prune(folder, keep=path)
    return path


def import_source(source: str, stem: str, label: str | None = None, *, salt: str = "") -> types.ModuleType:
    """Import kernel source text as a module from its private copy (:func:`kernel_copy`); ``label`` is the
    name the executor's reports show for that file.  The module's own exceptions propagate (``SystemExit``
    as well: the caller decides what a kernel that exits at import means)."""
    path = kernel_copy(source, stem, salt)
    name = _PREFIX + path.stem
    if name in sys.modules:
        return sys.modules[name]
    if label is not None:
        DISPLAY_NAMES[str(path)] = label
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None  # a .py path always has a spec
    module = importlib.util.module_from_spec(spec)
    code = compile(source, str(path), "exec", dont_inherit=True)  # the verified text, not the file's bytes
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


MAX_KERNEL_BYTES = 4 * 2**20  #: a kernel file larger than this is not an edited copy of kernel.py
#: the kernel every edited copy starts from
KERNEL_SOURCE = Path(__file__).resolve().parents[1] / "kernel.py"


def how_to_copy() -> str:
    """The next step when a kernel file is missing: how to make an edited copy of the kernel."""
    return (
        f"make an edited copy of the kernel first (cp {KERNEL_SOURCE} my_kernel.py, then edit it; in Python "
        "gluon_overlap.emulate.kernels.edited_copy(old, new) writes one)"
    )


def read_kernel_file(path: Path) -> str:
    """The text of the kernel file ``path``; ``ValueError`` that says what it is when it is not a readable
    text file (missing, a directory, a FIFO or device, unreadable, too large, binary, not UTF-8).
    A FIFO is never opened (opening one with no writer would wait forever)."""
    shown = repr(str(path))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"kernel file {shown} does not exist: {how_to_copy()}") from None
    except OSError as exc:  # a symlink loop, a name too long, a folder on the way that cannot be searched
        raise ValueError(f"kernel file {shown} cannot be reached: {exc.strerror or exc}") from None
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    for test, what in kinds:
        if test(st.st_mode):
            raise ValueError(f"kernel file {shown} is {what}, not a Python file")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"kernel file {shown} is not a regular file")
    if st.st_size > MAX_KERNEL_BYTES:
        raise ValueError(
            f"kernel file {shown} is {st.st_size} bytes, more than a kernel source "
            f"({MAX_KERNEL_BYTES // 2**20} MiB at most)"
        )
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_KERNEL_BYTES + 1)
    except PermissionError:
        raise ValueError(f"kernel file {shown} is not readable (permission denied)") from None
    except OSError as exc:
        raise ValueError(f"kernel file {shown} cannot be read: {exc.strerror or exc}") from None
    if b"\0" in data:
        raise ValueError(f"kernel file {shown} is a binary file (it holds NUL bytes), not Python source")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"kernel file {shown} is not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x}); is it a binary file?"
        ) from None


def import_failure(exc: BaseException, shown: str | os.PathLike) -> str:
    """What went wrong importing a kernel copy, with the line of the kernel file it happened at."""
    line = None
    tb = exc.__traceback__
    while tb is not None:  # the innermost frame in a kernel copy
        if _folder is not None and Path(tb.tb_frame.f_code.co_filename).parent == _folder:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None and isinstance(exc, SyntaxError) and exc.lineno:
        line = exc.lineno
    if type(exc) is SystemExit:
        what = f"it exits at import (SystemExit({exc.code!r}))"
    elif isinstance(exc, SystemExit):  # os._exit turned into an exception by the guarded process
        what = f"it exits at import ({exc})"
    elif isinstance(exc, SyntaxError):
        what = f"{type(exc).__name__}: {exc.msg}"
    else:
        what = exception_text(exc)
    return what + (f" at {Path(shown).name}:{line}" if line else "")
