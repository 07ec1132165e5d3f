"""gluon_overlap.swizzle: the seed's packed-block layout, its inverse, the TMA view and the in-SMEM unswizzle."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gluon_overlap import swizzle as S
from gluon_overlap.formats import random_problem


def _labelled(mn: int, sk: int) -> torch.Tensor:
    """A scale matrix whose every entry is unique (int64) so that positions can be traced."""
    return torch.arange(mn * sk, dtype=torch.int64).reshape(mn, sk) + 1


def _labelled_bytes(mn: int, sk: int) -> torch.Tensor:
    return (torch.arange(mn * sk).reshape(mn, sk) % 251 + 1).to(torch.uint8)


def _swizzle_loop(scales: torch.Tensor) -> torch.Tensor:
    """The packed-block layout written as explicit loops (an independent statement of the seed's layout)."""
    mn, sk = scales.shape
    rep_mn, rep_k = -(-mn // 128), -(-sk // 4)
    out = torch.zeros(rep_mn, rep_k, 32, 4, 4, dtype=scales.dtype)
    for r in range(mn):
        for k in range(sk):
            out[r // 128, k // 4, r % 32, (r % 128) // 32, k % 4] = scales[r, k]
    return out


@pytest.mark.parametrize("mn, sk", [(128, 4), (200, 9), (1, 1), (256, 8), (129, 5)])
def test_swizzle_matches_explicit_loops_and_inverts(mn, sk):
    scales = _labelled_bytes(mn, sk)
    sw = S.swizzle_scales(scales)
    assert sw.shape == (-(-mn // 128), -(-sk // 4), 32, 4, 4) and sw.dtype == torch.uint8 and sw.is_contiguous()
    assert torch.equal(sw, _swizzle_loop(scales))
    assert torch.equal(S.unswizzle_scales(sw, mn, sk), scales)


def test_padding_is_zero_bytes():
    sw = S.swizzle_scales(torch.full((200, 9), 7, dtype=torch.uint8))
    assert sw.shape == (2, 3, 32, 4, 4)
    assert int((sw == 7).sum()) == 200 * 9 and int((sw == 0).sum()) == 256 * 12 - 200 * 9


def test_swizzle_keeps_float8_scales():
    scales = torch.rand(130, 6, generator=torch.Generator().manual_seed(0)).to(torch.float8_e4m3fn)
    sw = S.swizzle_scales(scales)
    assert sw.dtype == torch.float8_e4m3fn
    back = S.unswizzle_scales(sw, 130, 6)
    assert torch.equal(back.view(torch.uint8), scales.view(torch.uint8))


@settings(max_examples=40, deadline=None)
@given(mn=st.integers(1, 300), sk=st.integers(1, 13))
def test_inverse_on_awkward_shapes(mn, sk):
    labels = _labelled(mn, sk)  # unique 16-bit labels, carried as two byte planes
    lo, hi = (labels & 0xFF).to(torch.uint8), (labels >> 8).to(torch.uint8)
    sw_lo, sw_hi = S.swizzle_scales(lo), S.swizzle_scales(hi)
    assert torch.equal(S.unswizzle_scales(sw_lo, mn, sk), lo)
    assert torch.equal(S.unswizzle_scales(sw_hi, mn, sk), hi)
    moved = sw_lo.long() | (sw_hi.long() << 8)
    assert sorted(moved[moved > 0].tolist()) == list(range(1, mn * sk + 1))  # a permutation plus zero padding


def test_index_map_against_brute_force():
    mn, sk = 200, 9
    scales = _labelled(mn, sk)
    sw = _swizzle_loop(scales)
    flat = sw.reshape(-1)
    where = {int(v): i for i, v in enumerate(flat.tolist()) if v}
    for r in range(mn):
        for k in range(sk):
            loc = S.scale_location(r, k)
            assert int(sw[loc]) == int(scales[r, k])
            assert S.scale_byte_offset(r, k, sk) == where[int(scales[r, k])]


def test_index_map_by_hand():
    assert S.scale_location(0, 0) == (0, 0, 0, 0, 0)
    assert S.scale_location(33, 1) == (0, 0, 1, 1, 1)  # row 33 = group 1, lane 1
    assert S.scale_location(127, 3) == (0, 0, 31, 3, 3)
    assert S.scale_location(128, 4) == (1, 1, 0, 0, 0)
    # within one 512-byte chunk: byte = 16 * lane + 4 * group + k4
    assert S.scale_byte_offset(33, 1, 4) == 16 + 4 + 1
    assert S.scale_byte_offset(128, 0, 8) == 2 * 512  # second row block starts after REP_K = 2 chunks


def test_tma_view_is_a_view_of_whole_chunks():
    sw = S.swizzle_scales(_labelled_bytes(256, 16))
    v = S.tma_view_5d(sw)
    assert v.shape == (1, 2, 4, 2, 256)
    assert v.data_ptr() == sw.data_ptr()
    # chunk (rep_mn, rep_k) is 512 consecutive bytes: row 0 of the view's last two dims is lanes 0..15
    assert torch.equal(v[0, 1, 2].reshape(-1), sw[1, 2].reshape(-1))
    assert torch.equal(v[0, 1, 2, 0, :16], sw[1, 2, 0].reshape(-1))


@pytest.mark.parametrize("fmt, block_k, rep_mn", [("mxfp8", 128, 1), ("nvfp4", 256, 1), ("mxfp4", 256, 2)])
def test_smem_unswizzle_undoes_the_swizzle_for_one_tile(fmt, block_k, rep_mn):
    """Load one tile's scales the way the kernel's TMA does, unswizzle them as the kernel does in SMEM,
    and compare with the tile cut out of the *un-swizzled* scales."""
    p = random_problem(384, 128, 1024, fmt, fmt, seed=1)
    vec = p.a.spec.vec_size
    rep_k = block_k // (vec * 4)
    view = S.tma_view_5d(p.a_scale_swizzled)
    for pid_m in range(-(-p.m // (128 * rep_mn))):
        for k in range(0, p.k, block_k):
            block = S.tma_block(view, pid_m * rep_mn, (k // block_k) * rep_k, rep_mn, rep_k)
            tile = S.unswizzle_smem_tile(block)
            assert tile.shape == (rep_mn * 128, block_k // vec)
            rows = slice(pid_m * rep_mn * 128, (pid_m + 1) * rep_mn * 128)
            want = p.a.scales[rows, k // vec : (k + block_k) // vec]
            assert torch.equal(tile[: want.shape[0]].view(torch.uint8), want.view(torch.uint8))
            assert not tile[want.shape[0] :].view(torch.uint8).any()  # rows past M: TMA zero fill


def test_bad_shapes_are_value_errors():
    with pytest.raises(ValueError, match="2-D"):
        S.swizzle_scales(torch.zeros(4, dtype=torch.uint8))
    with pytest.raises(ValueError, match="1-byte dtype"):
        S.swizzle_scales(torch.zeros(4, 4, dtype=torch.float32))
    sw = S.swizzle_scales(torch.zeros(200, 9, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"mn=100 does not match REP_MN=2"):
        S.unswizzle_scales(sw, 100, 9)
    with pytest.raises(ValueError, match=r"scale_k=13 does not match REP_K=3"):
        S.unswizzle_scales(sw, 200, 13)
    with pytest.raises(ValueError, match=r"\(REP_MN, REP_K, 32, 4, 4\)"):
        S.tma_view_5d(torch.zeros(2, 3, 32, 16, dtype=torch.uint8))
    with pytest.raises(ValueError, match="contiguous"):
        S.tma_view_5d(sw.transpose(0, 1))
    with pytest.raises(ValueError, match=r"\(1, rep_mn, rep_k, 2, 256\)"):
        S.unswizzle_smem_tile(torch.zeros(1, 1, 1, 512, dtype=torch.uint8))
    with pytest.raises(ValueError, match="row=-1"):
        S.scale_location(-1, 0)
    with pytest.raises(ValueError, match="k=4 must be < scale_k=4"):
        S.scale_byte_offset(0, 4, 4)
