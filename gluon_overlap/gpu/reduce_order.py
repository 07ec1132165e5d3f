"""Reductions and scans in the order the compiled kernel combines the values.

A float sum depends on the order of its additions, and the order is the layout's: Triton lowers ``tt.reduce``
(``ReduceOpToLLVM``) as

1. each thread combines its own registers that hold the reduced axis, as a tree: pairs that differ in the
   lowest register bit first (for 16-bit types, whose registers are packed in pairs, the lowest register bit
   last: ``[x0, x1] + [x2, x3]`` lanes of a ``f16x2``);
2. the lanes, by a butterfly of ``shfl.bfly``: the highest lane bit on the axis first;
3. the warps, through shared memory and one more butterfly: the highest warp bit first.

``tt.scan`` (``ScanOpToLLVM``) is a sequential scan within a thread, a Hillis-Steele scan of each thread's
last element across the lanes (``shfl.up``), warp totals through shared memory added in warp order, chunk
after chunk. Both were checked against the LLVM IR Triton 3.9 emits for sm_90a and against the H200
recording (``tests/interp/silicon``).

Which register, lane and warp holds which element is the layout's linear layout, asked from Triton itself
(:mod:`gluon_overlap.gpu.linear`), so every distributed layout Triton knows is read the same way.
Where a layout does not spread the axis over single bits (or a tensor has no layout), the reduction is a
pairwise tree in element order and the scan sequential.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gluon_overlap.gpu.linear import linear_layout

__all__ = ["reduce_along", "reduce_order", "scan_along", "scan_structure"]

Combine = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _axis_bits(ll: Any, axis: int, kind: str) -> list[tuple[int, int]] | None:
    """(basis index, coordinate bit) of ``kind``'s bases that move along ``axis`` only; None if a basis moves
    along the axis and another dimension at once, or not by a power of two."""
    out = []
    for i, basis in enumerate(getattr(ll, f"{kind}_bases")):
        v = int(basis[axis])
        if v == 0:
            continue
        if v & (v - 1) or any(int(c) != 0 for d, c in enumerate(basis) if d != axis):
            return None
        out.append((i, v.bit_length() - 1))
    return out


def reduce_order(layout: Any, shape: list[int], axis: int, elem_bits: int) -> list[int] | None:
    """The coordinate bits of ``axis`` in the order the compiled reduction combines over them, or None."""
    n = int(shape[axis])
    if n <= 1:
        return []
    ll = linear_layout(layout, shape)
    if ll is None:
        return None
    regs, lanes, warps = (_axis_bits(ll, axis, k) for k in ("reg", "lane", "warp"))
    if regs is None or lanes is None or warps is None or any(int(b[axis]) for b in getattr(ll, "block_bases", [])):
        return None
    bits = [j for _, j in regs] + [j for _, j in lanes] + [j for _, j in warps]
    if sorted(bits) != list(range(n.bit_length() - 1)) or n & (n - 1):
        return None
    reg_order = [j for _, j in sorted(regs)]
    if elem_bits == 16 and regs and min(regs)[0] == 0:  # packed pairs: register bit 0 is combined last
        reg_order = reg_order[1:] + reg_order[:1]
    lane_order = [j for _, j in sorted(lanes, reverse=True)]
    warp_order = [j for _, j in sorted(warps, reverse=True)]
    return reg_order + lane_order + warp_order


def reduce_along(t: torch.Tensor, axis: int, combine: Combine, order: list[int] | None) -> torch.Tensor:
    """Reduce ``t`` along ``axis`` (removed) with ``combine(first, second)``, combining over the axis's
    coordinate bits in ``order`` (None: a pairwise tree in element order, the lowest bit first)."""
    n = t.shape[axis]
    x = t.movedim(axis, -1)
    if n == 1:
        return x[..., 0]
    k = n.bit_length() - 1
    if n & (n - 1):  # not a power of two (no Gluon tensor is): left to right
        acc = x[..., 0]
        for i in range(1, n):
            acc = combine(acc, x[..., i])
        return acc
    if order is None:
        order = list(range(k))
    prefix = x.shape[:-1]
    x = x.reshape(*prefix, *([2] * k))  # dim len(prefix) + (k - 1 - j) is coordinate bit j
    dims = [k - 1 - i for i in range(k)]  # the coordinate bit of each remaining bit dimension
    for j in order:
        pos = len(prefix) + dims.index(j)
        x = combine(x.select(pos, 0), x.select(pos, 1))
        dims.remove(j)
    return x


# =====================================================================================
# scans
# =====================================================================================
def scan_structure(layout: Any, shape: list[int], axis: int) -> tuple[int, int, int, int] | None:
    """(elements per thread S, lanes T, warps W, repetitions B) along ``axis`` when the layout lays it out as
    Triton's scan lowering assumes (coordinate = e + S (l + T (w + W b))), else None."""
    n = int(shape[axis])
    ll = linear_layout(layout, shape)
    if ll is None or n & (n - 1):
        return None
    regs, lanes, warps = (_axis_bits(ll, axis, k) for k in ("reg", "lane", "warp"))
    if regs is None or lanes is None or warps is None:
        return None
    regs, lanes, warps = sorted(regs), sorted(lanes), sorted(warps)
    seq = [j for _, j in regs]
    # the contiguous elements: the first register bits, coordinate bits 0, 1, ...
    s_bits = 0
    while s_bits < len(seq) and seq[s_bits] == s_bits:
        s_bits += 1
    expected = list(range(s_bits, s_bits + len(lanes) + len(warps)))
    if [j for _, j in lanes] + [j for _, j in warps] != expected:
        return None
    block_bits = seq[s_bits:]
    if block_bits != list(range(expected[-1] + 1 if expected else s_bits, n.bit_length() - 1)):
        return None
    return 1 << s_bits, 1 << len(lanes), 1 << len(warps), 1 << len(block_bits)


def scan_along(
    t: torch.Tensor, axis: int, combine: Combine, structure: tuple[int, int, int, int] | None
) -> torch.Tensor:
    """Inclusive scan of ``t`` along ``axis`` in the compiled order (``structure`` from :func:`scan_structure`;
    None: sequential)."""
    x = t.movedim(axis, -1)
    n = x.shape[-1]
    if structure is None or n <= 1:
        outs = [x[..., 0]]
        for i in range(1, n):
            outs.append(combine(outs[-1], x[..., i]))
        return torch.stack(outs, -1).movedim(-1, axis)
    S, T, W, B = structure
    prefix = x.shape[:-1]
    x = x.reshape(*prefix, B, W, T, S)
    # 1. within a thread: sequential
    s = [x[..., 0]]
    for e in range(1, S):
        s.append(combine(s[-1], x[..., e]))
    # 2. across the lanes: Hillis-Steele on each thread's last element
    v = s[-1]  # [..., B, W, T]
    lane = torch.arange(T)
    i = 1
    while i < T:
        shifted = torch.cat([v[..., :i], v[..., :-i]], dim=-1)  # v[l - i] (lanes below i keep their own)
        v = torch.where(lane >= i, combine(shifted, v), v)
        i <<= 1
    chunks_last, chunks_rest = [], []
    total = None  # the running total of the chunks so far (per thread: a broadcast value)
    for b in range(B):
        if W > 1:  # AddPartialReduce: warp totals through shared memory, added in warp order
            p = v[..., b, :, T - 1]  # [..., W]
            prefix_sums = [p[..., 0]] if total is None else [total, combine(total, p[..., 0])]
            for w in range(1, W):
                prefix_sums.append(combine(prefix_sums[-1], p[..., w]))
            first_chunk = total is None
            masked = [prefix_sums[max(w - 1, 0)] if first_chunk else prefix_sums[w] for w in range(W)]
            total = prefix_sums[-1]
            m = torch.stack(masked, -1).unsqueeze(-1)  # [..., W, 1]
            vb = v[..., b, :, :]  # [..., W, T]
            last = combine(m.expand_as(vb), vb)
            if first_chunk:  # the first warp of the first chunk has nothing before it
                last = torch.cat([vb[..., :1, :], last[..., 1:, :]], dim=-2)
            before = torch.cat([m, last[..., :-1]], dim=-1)  # lane l: lane l-1's value; lane 0: the warps before
            first_thread = torch.zeros(W, T, dtype=torch.bool)
        else:  # AddPartialReduceOneWarp
            vb = v[..., b, 0, :]  # [..., T]
            if total is None:
                total = vb
            else:
                vb = combine(total, vb)
            before = torch.cat([total[..., :1], vb[..., :-1]], dim=-1) if T > 1 else vb
            if B > 1:
                total = vb[..., T - 1 : T].expand_as(vb)
            last = vb.unsqueeze(-2)
            before = before.unsqueeze(-2)
            first_thread = torch.zeros(1, T, dtype=torch.bool)
        first_thread[0, 0] = b == 0
        rest = []
        for e in range(S - 1):
            se = s[e][..., b, :, :]
            rest.append(torch.where(first_thread, se, combine(before, se)))
        chunks_last.append(last)
        chunks_rest.append(rest)
    out = [torch.stack([chunks_rest[b][e] for b in range(B)], dim=-3) for e in range(S - 1)]
    out.append(torch.stack(chunks_last, dim=-3))
    y = torch.stack(out, -1).reshape(*prefix, n)
    return y.movedim(-1, axis)
