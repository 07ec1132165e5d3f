"""Layouts as Triton lays them out: the linear layout of a distributed layout, asked from Triton itself.

``GluonOpBuilder.to_linear_layout`` (Triton's C++) turns any distributed layout -- blocked, slice, MMA,
TMEM register layouts, linear -- over a shape into its register / lane / warp / block bases: element
coordinates are the XOR of the bases of the set bits of (register, lane, warp, CTA). The interpreter reads
two facts from them: the order of a reduction (:mod:`gluon_overlap.gpu.reduce_order`) and which CTA of a
cluster holds (and stores) which element (:func:`cta_owned`).
"""

from __future__ import annotations

import itertools
from typing import Any

import torch

__all__ = ["cta_owned", "linear_layout"]

_BUILDER: Any = None


def _builder() -> Any:
    global _BUILDER
    if _BUILDER is None:
        from triton._C.libtriton import gluon_ir, ir

        ctx = ir.context()
        ir.load_dialects(ctx)
        _BUILDER = (ctx, gluon_ir.GluonOpBuilder(ctx))
    return _BUILDER[1]


_LINEAR: dict[tuple[str, tuple[int, ...]], Any] = {}  # (repr of the layout, shape) -> linear layout
_OWNED: dict[tuple[str, tuple[int, ...], int, int], torch.Tensor | None] = {}


def _linear_layout_cached(key: str, layout: Any, shape: tuple[int, ...]) -> Any:
    from triton.experimental.gluon.language._layouts import DistributedLinearLayout

    if isinstance(layout, DistributedLinearLayout):
        return layout
    hit = _LINEAR.get((key, shape))
    if hit is None:
        b = _builder()
        hit = _LINEAR[(key, shape)] = b.to_linear_layout(layout._to_ir(b), list(shape))
    return hit


def _rank(layout: Any) -> int | None:
    """The rank a blocked / slice layout lays out (None: another kind of layout), checking what Triton's C++
    asserts on -- a failed assertion there ends the process, so a layout that would fail is not asked."""
    kind = type(layout).__name__
    if kind == "SliceLayout":
        parent = _rank(layout.parent)
        return None if parent is None else parent - 1
    if kind == "BlockedLayout":
        fields = [list(getattr(layout, f)) for f in ("size_per_thread", "threads_per_warp", "warps_per_cta", "order")]
        rank = len(fields[0])
        if any(len(f) != rank for f in fields) or sorted(fields[3]) != list(range(rank)):
            return -1
        if any(len(b) != rank or any(int(v) not in (0, 1) for v in b) for b in (layout.cga_layout or [])):
            return -1
        return rank
    return None


def linear_layout(layout: Any, shape: list[int]) -> Any:
    """The linear layout (register / lane / warp bases) of a distributed layout over ``shape``; None when
    there is none (no layout, an auto layout, a shape the layout does not take)."""
    if layout is None or not hasattr(layout, "_to_ir"):
        return None
    if type(layout).__name__ in ("AutoLayout", "CoalescedLayout"):
        return None
    rank = _rank(layout)
    if rank is not None and rank != len(shape):
        return None
    try:
        return _linear_layout_cached(repr(layout), layout, tuple(int(s) for s in shape))
    except Exception:  # noqa: BLE001  a layout Triton cannot lay over this shape: no order to follow
        return None


def _owned_cached(key: str, layout: Any, shape: tuple[int, ...], num_ctas: int, cta: int) -> torch.Tensor | None:
    k = (key, shape, num_ctas, cta)
    if k not in _OWNED:
        _OWNED[k] = _owned(layout, shape, num_ctas, cta)
    return _OWNED[k]


def _owned(layout: Any, shape: tuple[int, ...], num_ctas: int, cta: int) -> torch.Tensor | None:
    ll = linear_layout(layout, list(shape))
    if ll is None:
        return None
    blocks = [list(b) for b in ll.block_bases][: max(0, num_ctas.bit_length() - 1)]
    if not blocks:
        return None
    free = 0  # CTA-id bits whose basis is zero: those CTAs hold copies, and the compiled store masks them off
    offset = [0] * len(shape)
    for bit, basis in enumerate(blocks):
        if not any(basis):
            free |= 1 << bit
        elif cta >> bit & 1:
            offset = [o ^ int(v) for o, v in zip(offset, basis, strict=True)]
    mask = torch.zeros(shape, dtype=torch.bool)
    if cta & free:
        return mask
    if not any(offset) and not any(any(b) for b in blocks):
        return None
    bases = [list(b) for b in itertools.chain(ll.reg_bases, ll.lane_bases, ll.warp_bases) if any(b)]
    coords = torch.zeros((1, len(shape)), dtype=torch.int64)
    for b in bases:
        coords = torch.cat([coords, coords ^ torch.tensor(b, dtype=torch.int64)])
    coords = coords ^ torch.tensor(offset, dtype=torch.int64)
    mask[tuple(coords.T)] = True
    return mask


def cta_owned(layout: Any, shape: list[int], num_ctas: int, cta: int) -> torch.Tensor | None:
    """Which elements of a ``shape`` tensor in ``layout`` CTA ``cta`` of the cluster holds as their
    representative -- what a compiled store through pointers writes from that CTA (a copy held by a second CTA,
    where the layout's block basis is zero, is masked off) -- or None: all of them (one CTA, or no layout)."""
    if num_ctas <= 1:
        return None
    return (
        _owned_cached(repr(layout), layout, tuple(int(s) for s in shape), num_ctas, cta)
        if linear_layout(layout, shape) is not None
        else None
    )
