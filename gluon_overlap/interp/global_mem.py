"""Global memory through pointers: races between programs, and the atomics that order them.

Two programs (CTAs) of a grid run in no order the kernel can rely on: a store and another program's load or
store of the same element, with no chain of synchronization between them, is a race -- the GPU's answer
depends on which landed last (``tests/interp/silicon``: 49 different results in 50 launches). As for shared
memory (:mod:`gluon_overlap.interp.races`), the check is happens-before, so it holds under every interleaving:
each element remembers its last write and its last read (an epoch of the process that made it), and an access
is checked against them with the accessor's vector clock.

What orders two programs are atomics: ``gl.atomic_*`` with ``sem="acq_rel"`` (the default), ``"acquire"`` or
``"release"`` synchronize through the element they touch -- a release leaves the issuer's clock there, an
acquire joins the clock left there -- so the "last program to arrive reads everyone's partials" pattern is
ordered, and a counter read without an atomic is not. Atomics never race with each other.

Approximations (they can only hide a race, never invent one): one last read is kept per element (a write is
checked against it, not against every earlier reader); the threads of one partition are one process (a race
between two warps of one partition is not seen); views of one storage with different element sizes are
tracked apart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from gluon_overlap.gpu import numerics as N
from gluon_overlap.interp.races import Epoch, join

__all__ = ["GlobalMemory", "rmw"]


class _Shadow:
    """One storage's history: the epoch index of each element's last write and last read (-1: none)."""

    __slots__ = ("writer", "reader")

    def __init__(self, size: int):
        self.writer = torch.full((size,), -1, dtype=torch.int32)
        self.reader = torch.full((size,), -1, dtype=torch.int32)


def _distinct(values: torch.Tensor) -> list[int]:
    """The distinct non-negative entries (most often one or none: no sort then)."""
    if values.numel() == 0:
        return []
    low, high = (int(v) for v in torch.aminmax(values))
    if high < 0:
        return []
    if low == high:
        return [high]
    return [v for v in torch.unique(values).tolist() if v >= 0]


class GlobalMemory:
    """Race detection and atomic synchronization for pointer accesses (``gl.load`` / ``gl.store`` /
    ``gl.atomic_*``) of one launch; ``report(kind, op, detail)`` records a hazard."""

    def __init__(self, sync: Any, report: Callable[[str, Any, str], None]):
        self.sync = sync
        self.report = report
        self._shadows: dict[tuple[int, int], _Shadow] = {}
        self._epochs: list[tuple[Epoch, bool]] = []  # (when, atomic)
        self._released: dict[tuple[int, int], dict[int, np.ndarray]] = {}  # storage -> element -> clock
        self._reported: set[tuple] = set()

    @staticmethod
    def _key(flat: torch.Tensor) -> tuple[int, int]:
        return flat.untyped_storage().data_ptr(), flat.element_size()

    def _shadow(self, flat: torch.Tensor) -> _Shadow:
        key = self._key(flat)
        sh = self._shadows.get(key)
        if sh is None:
            sh = self._shadows[key] = _Shadow(flat.numel())
        return sh

    # --- atomics' synchronization ----------------------------------------------------
    def acquire(self, op: Any, flat: torch.Tensor, idx: torch.Tensor) -> None:
        """The issuing process joins the clocks released at these elements."""
        released = self._released.get(self._key(flat))
        if not released:
            return
        pid = op.proc.pid
        seen: set[int] = set()
        for i in idx.tolist():
            clock = released.get(i)
            if clock is not None and id(clock) not in seen:
                seen.add(id(clock))
                self.sync.vc[pid] = join(self.sync.vc[pid], clock)

    def release(self, op: Any, flat: torch.Tensor, idx: torch.Tensor) -> None:
        """These elements remember the issuing process's clock (joined with what they held)."""
        released = self._released.setdefault(self._key(flat), {})
        vc = self.sync.vc[op.proc.pid].copy()
        joined: dict[int, np.ndarray] = {}
        for i in idx.tolist():
            old = released.get(i)
            if old is None:
                released[i] = vc
                continue
            new = joined.get(id(old))
            if new is None:
                new = joined[id(old)] = join(old, vc)
            released[i] = new

    # --- the race check ----------------------------------------------------------------
    def access(self, op: Any, flat: torch.Tensor, idx: torch.Tensor, kind: str, what: str, name: str) -> None:
        """Check (and record) an access -- ``kind`` "read", "write", "atomic" (a read-modify-write or an atomic
        store) or "atomic_read" (``gl.atomic_load``) -- to elements ``idx`` of ``flat`` by ``op``'s process, at its
        clock now."""
        if idx.numel() == 0:
            return
        vc = self.sync.step(op.proc)
        comp = self.sync.proc_comp[op.proc.pid]
        epoch = Epoch(comp, int(vc[comp]), what, op)
        sh = self._shadow(flat)
        atomic = kind in ("atomic", "atomic_read")
        reads = kind in ("read", "atomic_read")
        for prev in _distinct(sh.writer[idx]):
            earlier, earlier_atomic = self._epochs[prev]
            if earlier.op.proc is op.proc or earlier.before(vc) or (atomic and earlier_atomic):
                continue
            self._race(
                "read-after-write" if reads else "write-after-write", op, epoch, earlier, sh.writer, idx, prev, name
            )
            break
        if not reads:
            for prev in _distinct(sh.reader[idx]):
                earlier, earlier_atomic = self._epochs[prev]
                if earlier.op.proc is op.proc or earlier.before(vc) or (atomic and earlier_atomic):
                    continue
                self._race("write-after-read", op, epoch, earlier, sh.reader, idx, prev, name)
                break
        self._epochs.append((epoch, atomic))
        if reads:
            sh.reader[idx] = len(self._epochs) - 1
        else:  # the reads before this write are checked (and reported) against it: a later access needs only it
            sh.writer[idx] = len(self._epochs) - 1
            sh.reader[idx] = -1

    def _race(
        self,
        kind: str,
        op: Any,
        epoch: Epoch,
        earlier: Epoch,
        owners: torch.Tensor,
        idx: torch.Tensor,
        prev: int,
        name: str,
    ) -> None:
        key = (kind, str(earlier.op.line), str(op.line))
        if key in self._reported:  # one report per pair of kernel lines (a grid repeats it per program)
            return
        self._reported.add(key)
        element = int(idx[(owners[idx] == prev).nonzero()[0, 0]])
        where = f" (at {earlier.op.line})" if earlier.op.line is not None else ""
        verb = {
            "write-after-write": ("writes", "also writes"),
            "read-after-write": ("reads", "wrote"),
            "write-after-read": ("writes", "read"),
        }[kind]
        self.report(
            f"global-{kind}",
            op,
            f"{epoch.what} {verb[0]} element {element} of {name} that {earlier.what} of "
            f"{earlier.op.proc.name}{where} {verb[1]}, and nothing orders the two (no atomic or barrier "
            f"between the programs): the result depends on which runs first",
        )


# =====================================================================================
# read-modify-write
# =====================================================================================
def _float_max_min(old: torch.Tensor, val: torch.Tensor, is_max: bool) -> torch.Tensor:
    """Triton's float atomic max / min: a value with its sign bit clear goes through the signed integer
    max (min) of the bits, one with it set through the unsigned min (max) -- so -0 < +0, and NaN bits order
    like the integers they are."""
    bits = N.SIGNED_OF_WIDTH[old.element_size() * 8]
    o, v = old.view(bits).to(torch.int64), val.view(bits).to(torch.int64)
    width = old.element_size() * 8
    negative = v < 0
    if width < 64:
        uo, uv = o & ((1 << width) - 1), v & ((1 << width) - 1)
        pos = torch.maximum(o, v) if is_max else torch.minimum(o, v)
        neg = torch.minimum(uo, uv) if is_max else torch.maximum(uo, uv)
        out = torch.where(negative, neg, pos)
        out = torch.where(out >= 1 << (width - 1), out - (1 << width), out)
    else:
        pos = torch.maximum(o, v) if is_max else torch.minimum(o, v)
        less = (o ^ N.MIN64) < (v ^ N.MIN64)
        neg = torch.where(less == is_max, o, v)
        out = torch.where(negative, neg, pos)
    return out.to(bits).view(old.dtype)


def _combine(how: str, old: torch.Tensor, val: torch.Tensor, cmp: torch.Tensor | None, dtype: Any) -> torch.Tensor:
    if how == "add":
        if not dtype.is_floating():
            return old + val
        if dtype.name == "fp32":  # atom.add.f32 flushes subnormal inputs and results
            return N.flush_subnormal(N.fadd(N.flush_subnormal(old), N.flush_subnormal(val)))
        return N.fadd(old, val)  # .noftz for f16 / bf16; f64 keeps subnormals
    if how in ("max", "min"):
        if dtype.is_floating():
            return _float_max_min(old, val, how == "max")
        return N.iminmax(old, val, dtype, how == "max")
    if how == "and":
        return old & val
    if how == "or":
        return old | val
    if how == "xor":
        return old ^ val
    if how == "xchg":
        return val
    if how == "load":
        return old
    if how == "cas":
        if cmp is None:
            raise ValueError("a compare-and-swap needs the values to compare with")
        bits = N.SIGNED_OF_WIDTH[old.element_size() * 8]
        return torch.where(old.view(bits) == cmp.view(bits), val, old)
    raise ValueError(f"unknown atomic operation {how!r}")


def rmw(
    flat: torch.Tensor, idx: torch.Tensor, values: torch.Tensor, cmp: torch.Tensor | None, how: str, dtype: Any
) -> torch.Tensor:
    """Apply an atomic ``how`` at elements ``idx`` of ``flat`` (register form) lane by lane -- lanes that hit
    one element take turns in lane order -- and return the values each lane found there."""
    old = torch.empty_like(values)
    if idx.numel() == 0:
        return old
    order = torch.argsort(idx, stable=True)
    sorted_idx = idx[order]
    first = torch.ones_like(sorted_idx, dtype=torch.bool)
    first[1:] = sorted_idx[1:] != sorted_idx[:-1]
    group_start = torch.cummax(torch.where(first, torch.arange(len(idx)), torch.zeros_like(sorted_idx)), 0).values
    rank = torch.empty_like(idx)
    rank[order] = torch.arange(len(idx)) - group_start
    for r in range(int(rank.max()) + 1):  # lanes of rank r touch distinct elements
        lanes = (rank == r).nonzero().reshape(-1)
        where_ = idx[lanes]
        found = flat[where_]
        old[lanes] = found
        flat[where_] = _combine(how, found, values[lanes], None if cmp is None else cmp[lanes], dtype)
    return old
