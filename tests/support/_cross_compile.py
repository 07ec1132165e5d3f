"""Shared by the idiom tests: cross-compile every test kernel for sm_100a once, and check one result."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gluon_overlap.compiler import compile as gc


def compile_all(cases: Iterable[tuple[str, Any, Any, int]]) -> dict[str, Any]:
    """``name -> artifacts`` (or the exception the compiler raised, reported by :func:`assert_compiled`)
    for cases ``(name, kernel, args, num_ctas)``."""
    out: dict[str, Any] = {}
    for name, fn, args, num_ctas in cases:
        try:
            out[name] = gc.cross_compile(fn, tuple(args), num_ctas=num_ctas, num_warps=4)
        except Exception as exc:  # noqa: BLE001  (reported per case)
            out[name] = exc
    return out


def assert_compiled(result: Any, name: str) -> None:
    """``result`` is an sm_100a cubin with its PTX, not a compiler error."""
    assert not isinstance(result, Exception), f"{name}: {type(result).__name__}: {str(result)[-2000:]}"
    assert result.cubin[:4] == b"\x7fELF"
    assert ".target sm_100a" in result.ptx
