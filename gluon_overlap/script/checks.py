"""What ``gluon-overlap run`` checks of a script before anything heavy is imported: it exists, is a file and
compiles as Python (a mistyped path is answered at once, not after torch and Triton have loaded)."""

from __future__ import annotations

import os


def check_script(path: str | os.PathLike) -> str:
    """The script's absolute path; a missing, unreadable or non-compiling file is a ``ValueError`` / ``OSError``
    (before anything runs)."""
    path = os.path.abspath(os.fspath(path))
    if not os.path.exists(path):
        raise ValueError(f"script {path!r} does not exist")
    if os.path.isdir(path):
        raise ValueError(f"script {path!r} is a folder, not a Python file")
    with open(path, "rb") as f:
        source = f.read()
    try:
        compile(source, path, "exec")
    except SyntaxError as exc:
        raise ValueError(f"script {os.path.basename(path)} does not compile: {exc.msg} (line {exc.lineno})") from None
    except ValueError as exc:  # null bytes
        raise ValueError(f"script {os.path.basename(path)} is not Python source: {exc}") from None
    return path
