"""The packed-block scale layout the kernel's TMA loads and ``tcgen05.cp`` copies.

A block-scaled MMA reads its scales from TMEM. ``tcgen05.cp`` copies them there in chunks of
**128 rows x 4 scale columns** (512 bytes): 32 lanes x 16 bytes, broadcast to the 4 TMEM
sub-partitions of 32 lanes each (the ``32x128b.warpx4`` shape). Inside one chunk, row
``r = 32 * group + lane`` and scale column ``k4`` live at byte ``16 * lane + 4 * group + k4``.
Four scale columns are exactly one 128-wide K chunk for the mx formats (4 x 32) and half of one
for nvfp4 (4 x 16 = 64 elements).

So the host stores scales ``[MN, SK]`` as ``(REP_MN, REP_K, 32, 4, 4)`` (the seed's
``swizzle_scales_packed_block``): padded with zero bytes to multiples of ``[128, 4]``, reshaped to
``(REP_MN, 4, 32, REP_K, 4)`` = (row block, group, lane, k block, k4) and permuted to
``(REP_MN, REP_K, 32, 4, 4)`` = (row block, k block, lane, group, k4). Each 512-byte chunk is then
contiguous, and the kernel's TMA descriptor sees it as ``(1, REP_MN, REP_K, 2, 256)``
(:func:`tma_view_5d`; a TMA box dimension is at most 256 elements, so 512 bytes are 2 x 256).
In shared memory the kernel undoes the permutation *logically* with a reshape/permute
(:func:`unswizzle_smem_tile`) before ``tcgen05.cp``.
"""

from __future__ import annotations

import torch

ROWS_PER_CHUNK = 128  # 4 groups x 32 lanes
LANES = 32
GROUPS = 4
SCALES_PER_CHUNK = 4  # scale columns per chunk
CHUNK_BYTES = ROWS_PER_CHUNK * SCALES_PER_CHUNK  # 512


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    """View a 1-byte tensor (uint8 / float8) as uint8 so that padding and copies work for every dtype."""
    if t.element_size() != 1:
        raise ValueError(f"scales must have a 1-byte dtype (uint8 e8m0 codes or float8_e4m3fn), got {t.dtype}")
    return t.view(torch.uint8)


def swizzled_shape(mn: int, scale_k: int) -> tuple[int, int, int, int, int]:
    """Shape ``(REP_MN, REP_K, 32, 4, 4)`` of the packed-block layout of ``[mn, scale_k]`` scales."""
    return (_cdiv(mn, ROWS_PER_CHUNK), _cdiv(scale_k, SCALES_PER_CHUNK), LANES, GROUPS, SCALES_PER_CHUNK)


def swizzle_scales(scales: torch.Tensor) -> torch.Tensor:
    """``[MN, SK]`` -> ``(REP_MN, REP_K, 32, 4, 4)``: the seed's ``swizzle_scales_packed_block``.

    Pads with zero bytes to multiples of ``[128, 4]``; keeps the dtype.
    """
    if not isinstance(scales, torch.Tensor) or scales.dim() != 2:
        shape = tuple(scales.shape) if isinstance(scales, torch.Tensor) else type(scales).__name__
        raise ValueError(f"scales must be a 2-D [MN, SK] tensor, got {shape}")
    raw = _as_bytes(scales)
    mn, sk = raw.shape
    rep_mn, rep_k = swizzled_shape(mn, sk)[:2]
    raw = torch.nn.functional.pad(raw, (0, rep_k * SCALES_PER_CHUNK - sk, 0, rep_mn * ROWS_PER_CHUNK - mn))
    out = raw.reshape(rep_mn, GROUPS, LANES, rep_k, SCALES_PER_CHUNK).permute(0, 3, 2, 1, 4).contiguous()
    return out.view(scales.dtype)


def _check_swizzled(swizzled: torch.Tensor) -> None:
    if not isinstance(swizzled, torch.Tensor) or swizzled.dim() != 5 or tuple(swizzled.shape[2:]) != (32, 4, 4):
        shape = tuple(swizzled.shape) if isinstance(swizzled, torch.Tensor) else type(swizzled).__name__
        raise ValueError(f"swizzled must have shape (REP_MN, REP_K, 32, 4, 4), got {shape}")


def unswizzle_scales(swizzled: torch.Tensor, mn: int, scale_k: int) -> torch.Tensor:
    """Exact inverse of :func:`swizzle_scales`: ``(REP_MN, REP_K, 32, 4, 4)`` -> ``[mn, scale_k]`` (padding dropped)."""
    _check_swizzled(swizzled)
    rep_mn, rep_k = int(swizzled.shape[0]), int(swizzled.shape[1])
    if not (0 < mn and _cdiv(mn, ROWS_PER_CHUNK) == rep_mn):
        raise ValueError(f"mn={mn} does not match REP_MN={rep_mn}: need ceil(mn / 128) == REP_MN")
    if not (0 < scale_k and _cdiv(scale_k, SCALES_PER_CHUNK) == rep_k):
        raise ValueError(f"scale_k={scale_k} does not match REP_K={rep_k}: need ceil(scale_k / 4) == REP_K")
    raw = _as_bytes(swizzled).permute(0, 3, 2, 1, 4)  # the permutation swaps dims 1 and 3: its own inverse
    raw = raw.reshape(rep_mn * ROWS_PER_CHUNK, rep_k * SCALES_PER_CHUNK)[:mn, :scale_k].contiguous()
    return raw.view(swizzled.dtype)


def tma_view_5d(swizzled: torch.Tensor) -> torch.Tensor:
    """The ``(1, REP_MN, REP_K, 2, 256)`` view the kernel's TMA descriptor is built on (no copy)."""
    _check_swizzled(swizzled)
    if not swizzled.is_contiguous():
        raise ValueError("swizzled must be contiguous (as swizzle_scales returns it) to be viewed as 5-D for TMA")
    return swizzled.reshape(1, swizzled.shape[0], swizzled.shape[1], 2, 256)


def tma_block(view_5d: torch.Tensor, rep_mn_offset: int, rep_k_offset: int, rep_mn: int, rep_k: int) -> torch.Tensor:
    """What one TMA load with box ``[1, rep_mn, rep_k, 2, 256]`` at ``[0, rep_mn_offset, rep_k_offset, 0, 0]``
    brings into shared memory.

    TMA's out-of-bounds rule: box elements whose coordinate is outside ``[0, size)`` in any dimension --
    below 0 (a negative offset) or past the end -- are filled with zeros; the in-bounds part lands at
    its own place in the box.  Offsets are signed 32-bit coordinates; box sizes are 1 .. 256.
    """
    if (
        not isinstance(view_5d, torch.Tensor)
        or view_5d.dim() != 5
        or tuple(view_5d.shape[3:]) != (2, 256)
        or view_5d.shape[0] != 1
    ):
        shape = tuple(view_5d.shape) if isinstance(view_5d, torch.Tensor) else type(view_5d).__name__
        raise ValueError(f"view_5d must have shape (1, REP_MN, REP_K, 2, 256), got {shape}")
    for name, v in (("rep_mn_offset", rep_mn_offset), ("rep_k_offset", rep_k_offset)):
        if isinstance(v, bool) or not isinstance(v, int) or not -(2**31) <= v < 2**31:
            raise ValueError(f"{name}={v!r} must be an int in the signed 32-bit range of a TMA coordinate")
    for name, v in (("rep_mn", rep_mn), ("rep_k", rep_k)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 256:
            raise ValueError(f"{name}={v!r} must be an int in 1 .. 256 (a TMA box dimension)")
    raw = _as_bytes(view_5d)
    block = torch.zeros((1, rep_mn, rep_k, 2, 256), dtype=torch.uint8, device=raw.device)
    spans = []
    for offset, box, size in ((rep_mn_offset, rep_mn, raw.shape[1]), (rep_k_offset, rep_k, raw.shape[2])):
        lo, hi = max(offset, 0), min(offset + box, size)
        if hi <= lo:
            return block.view(view_5d.dtype)  # entirely out of bounds: all zeros
        spans.append((slice(lo - offset, hi - offset), slice(lo, hi)))
    (dst_mn, src_mn), (dst_k, src_k) = spans
    block[:, dst_mn, dst_k] = raw[:, src_mn, src_k]
    return block.view(view_5d.dtype)


def unswizzle_smem_tile(block: torch.Tensor) -> torch.Tensor:
    """The seed's ``unswizzle_scales_shared_memory`` in torch: ``(1, rep_mn, rep_k, 2, 256)`` ->
    ``[rep_mn * 128, rep_k * 4]`` (reshape to ``(rep_mn, rep_k, 32, 4, 4)``, permute ``(0, 3, 2, 1, 4)``,
    reshape)."""
    if not isinstance(block, torch.Tensor) or block.dim() != 5 or tuple(block.shape[3:]) != (2, 256):
        shape = tuple(block.shape) if isinstance(block, torch.Tensor) else type(block).__name__
        raise ValueError(f"block must have shape (1, rep_mn, rep_k, 2, 256), got {shape}")
    rep_mn, rep_k = int(block.shape[1]), int(block.shape[2])
    raw = _as_bytes(block).reshape(rep_mn, rep_k, LANES, GROUPS, SCALES_PER_CHUNK).permute(0, 3, 2, 1, 4)
    return raw.reshape(rep_mn * ROWS_PER_CHUNK, rep_k * SCALES_PER_CHUNK).contiguous().view(block.dtype)


def scale_location(row: int, k: int) -> tuple[int, int, int, int, int]:
    """Where scale ``(row, k)`` lands in the swizzled tensor: ``(rep_mn, rep_k, lane32, group4, k4)``."""
    for name, v in (("row", row), ("k", k)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name}={v!r} must be a non-negative int")
    in_chunk = row % ROWS_PER_CHUNK
    return (row // ROWS_PER_CHUNK, k // SCALES_PER_CHUNK, in_chunk % LANES, in_chunk // LANES, k % SCALES_PER_CHUNK)


def scale_byte_offset(row: int, k: int, scale_k: int) -> int:
    """Flat byte offset of scale ``(row, k)`` in the contiguous swizzled buffer of a ``[*, scale_k]`` scale matrix."""
    if isinstance(scale_k, bool) or not isinstance(scale_k, int) or scale_k <= 0:
        raise ValueError(f"scale_k={scale_k!r} must be a positive int")
    if k >= scale_k:
        raise ValueError(f"k={k} must be < scale_k={scale_k}")
    rep_mn, rep_k, lane, group, k4 = scale_location(row, k)
    chunk = rep_mn * _cdiv(scale_k, SCALES_PER_CHUNK) + rep_k
    return chunk * CHUNK_BYTES + lane * 16 + group * SCALES_PER_CHUNK + k4
