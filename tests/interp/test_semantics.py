"""The interpreter's element semantics against independent references: mpmath's correctly rounded arithmetic for
fma and the narrowing casts, Python's integers for division, torch's own float32 -> float16 rounding, the
reduction trees read from the LLVM IR Triton 3.9 emits, and the ordering atomics give between programs.

(The H200 recording, tests/interp/test_silicon.py, checks the same semantics against silicon case by case;
these check them on inputs of any value.)"""

from __future__ import annotations

import math
import re

import mpmath
import pytest
import semantics_kernels as S  # tests/support is on sys.path (tests/conftest.py)
import torch
import triton.experimental.gluon.language as gl
from hypothesis import example, given
from hypothesis import strategies as st
from silicon import kernels as K  # tests/interp is on sys.path (this file's folder)

from gluon_overlap.gpu import numerics as N
from gluon_overlap.gpu import reduce_order as R
from gluon_overlap.interp.launch import launch

F32 = st.floats(min_value=-(2.0**100), max_value=2.0**100, allow_nan=False, width=32).filter(
    lambda v: v == 0 or abs(v) > 2.0**-100
)


def _mp_round(x: mpmath.mpf, prec: int, rounding: str = "n") -> float:
    with mpmath.workprec(prec):
        return float(mpmath.mpf(x, rounding=rounding))


def _exact(*factors: float) -> mpmath.mpf:
    with mpmath.workprec(4000):
        return mpmath.mpf(factors[0]) * mpmath.mpf(factors[1]) + mpmath.mpf(factors[2])


# =====================================================================================
# fused multiply-add: one rounding
# =====================================================================================
@given(F32, F32, F32)
@example(5.0, 1.2095016600076288e16, 1.0)  # a * b on a float32 midpoint, c below float64's ulp: TwoSum must see c
def test_fma_float32_is_the_correctly_rounded_a_times_b_plus_c(a, b, c):
    got = N.fma(*(torch.tensor([v], dtype=torch.float32) for v in (a, b, c)))
    exact = _exact(a, b, c)
    if 1e-36 < abs(exact) < 3.4e38 or exact == 0:  # normal results (mpmath has no subnormals, no overflow)
        want = _mp_round(exact, 24)
        assert float(got) == want or (want == 0 and float(got) == 0), (a, b, c, float(got), want)


@given(
    st.floats(min_value=-200, max_value=200, width=16),
    st.floats(min_value=-200, max_value=200, width=16),
    st.floats(min_value=-200, max_value=200, width=16),
)
def test_fma_float16_rounds_once(a, b, c):
    got = N.fma(*(torch.tensor([v], dtype=torch.float16) for v in (a, b, c)))
    exact = _exact(a, b, c)
    if 2.0**-14 <= abs(exact) < 65504 or exact == 0:
        want = _mp_round(exact, 11)
        assert float(got) == want or (want == 0 and float(got) == 0), (a, b, c, float(got), want)


@given(
    st.floats(min_value=-1e100, max_value=1e100),
    st.floats(min_value=-1e100, max_value=1e100),
    st.floats(min_value=-1e100, max_value=1e100),
)
def test_fma_float64_rounds_once(a, b, c):
    got = float(N.fma(*(torch.tensor([v], dtype=torch.float64) for v in (a, b, c))))
    exact = _exact(a, b, c)
    if exact == 0 or abs(exact) > 1e-300:
        assert got == _mp_round(exact, 53) or (exact == 0 and got == 0)


def test_a_contracted_multiply_add_follows_the_launchs_fp_fusion():
    torch.manual_seed(0)
    a, b = torch.randn(128), torch.randn(128)
    c = -(a.double() * b.double() * (1 + 1e-3 * torch.randn(128, dtype=torch.float64))).float()
    fused, unfused = torch.empty(128), torch.empty(128)
    for out, fusion in ((fused, True), (unfused, False)):
        res = launch(S.mul_add, (1,), (a, b, c, out, 128), num_ctas=1, enable_fp_fusion=fusion, precheck=False)
        assert res.ok, res.error
    assert torch.equal(fused.view(torch.int32), N.fma(a, b, c).view(torch.int32))
    assert torch.equal(unfused.view(torch.int32), (a * b + c).view(torch.int32))
    assert not torch.equal(fused, unfused)  # the operands make the product's rounding show


# =====================================================================================
# rounding to narrow formats, conversions
# =====================================================================================
@given(st.floats(width=32, allow_nan=False))
def test_round_to_float16_agrees_with_torchs_rounding_of_float32(x):
    t = torch.tensor([x], dtype=torch.float32)
    got = N.narrow(t.double(), N.FLOAT_FORMATS["fp16"])
    assert got.view(torch.int16).item() == t.half().view(torch.int16).item()


@given(st.floats(min_value=-60000, max_value=60000, allow_nan=False))
def test_round_toward_zero_to_float16_and_e5m2(x):
    for name, prec in (("fp16", 11), ("fp8e5", 3)):
        got = float(N.round_to(torch.tensor([x], dtype=torch.float64), N.FLOAT_FORMATS[name], "rz"))
        if abs(x) >= 2.0**-14:
            assert got == _mp_round(mpmath.mpf(x), prec, "d") or abs(got) == N.FLOAT_FORMATS[name].max_finite


def test_saturating_fp8_casts_and_their_nans():
    x = torch.tensor([1e6, -1e6, math.inf, -math.inf, 500.0, 464.0, 463.9, math.nan])
    e4m3 = N.convert(x, gl.float32, gl.float8e4nv).view(torch.uint8).tolist()
    assert e4m3 == [0x7E, 0xFE, 0x7E, 0xFE, 0x7E, 0x7E, 0x7E, 0x7F]  # +-448; 464 rounds to even (448); NaN
    e5m2 = N.convert(x, gl.float32, gl.float8e5).view(torch.uint8).tolist()
    assert e5m2[:4] == [0x7B, 0xFB, 0x7B, 0xFB] and e5m2[-1] == 0x7F  # +-57344, inf too (satfinite)


def test_float_to_int_saturates_and_maps_nan_to_zero_except_for_64_bit_operands():
    x = torch.tensor([math.nan, math.inf, -math.inf, 1e10, -1e10, 300.7, -300.7, 2.5])
    assert N.convert(x, gl.float32, gl.int32).tolist() == [0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 300, -300, 2]
    # int8 goes through a saturating 16-bit cvt, then truncates: inf -> 0x7fff -> -1, 300 -> 0x012c -> 44
    assert N.convert(x, gl.float32, gl.int8).tolist() == [0, -1, 0, -1, 0, 44, -44, 2]
    assert N.convert(x, gl.float32, gl.uint8).tolist() == [0, 255, 0, 255, 0, 44, 0, 2]
    assert N.convert(x, gl.float32, gl.int64).tolist()[:3] == [-(2**63), 2**63 - 1, -(2**63)]
    assert N.convert(x.double(), gl.float64, gl.int32).tolist()[0] == -(2**31)


def test_a_float_constant_is_folded_with_its_nan_payload():
    """APFloat folds constants: a NaN keeps its payload's top bits (0x7e00), where a cvt makes 0x7fff."""
    from gluon_overlap.gpu.arith import constant

    assert constant(math.nan, gl.float16).view(torch.int16).item() == 0x7E00
    assert N.convert(torch.tensor([math.nan]), gl.float32, gl.float16).view(torch.int16).item() == 0x7FFF


# =====================================================================================
# integers: what C leaves undefined, the GPU answers
# =====================================================================================
@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 2**31 - 1))
def test_int32_division_truncates_and_answers_undefined_cases(a, b):
    ta, tb = torch.tensor([a], dtype=torch.int32), torch.tensor([b], dtype=torch.int32)
    q = N.idivmod(ta, tb, gl.int32, "div").item()
    r = N.idivmod(ta, tb, gl.int32, "mod").item()
    if b == 0:
        assert (q, r) == (-1, -1)
    elif a == -(2**31) and b == -1:
        assert (q, r) == (-(2**31), 0)
    else:
        assert q == int(a / b) if abs(a) < 2**52 else q == math.trunc(a / b)
        assert q * b + r == a and abs(r) < abs(b) and (r == 0 or (r < 0) == (a < 0))


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_uint64_division_is_unsigned(a, b):
    as_i64 = [v - 2**64 if v >= 2**63 else v for v in (a, b)]
    ta, tb = (torch.tensor([v], dtype=torch.int64) for v in as_i64)
    q = N.idivmod(ta, tb, gl.uint64, "div").item() % 2**64
    r = N.idivmod(ta, tb, gl.uint64, "mod").item() % 2**64
    if b == 0:  # div.u64 by zero: all ones; both operands below 2^32: LLVM's div.u32 bypass, 0xFFFFFFFF
        assert q == r == (0xFFFFFFFF if a < 2**32 else 2**64 - 1)
    else:
        assert (q, r) == divmod(a, b)


def test_division_by_zero_in_a_kernel_gives_the_gpus_answer_not_a_crash():
    a = torch.tensor([-(2**31), -(2**31), 7, -7] * 32, dtype=torch.int32)
    b = torch.tensor([-1, 0, 0, 2] * 32, dtype=torch.int32)
    q, r = torch.empty_like(a), torch.empty_like(a)
    res = launch(S.divide, (1,), (a, b, q, r, 128), num_ctas=1, precheck=False)
    assert res.ok, res.error
    assert q[:4].tolist() == [-(2**31), -1, -1, -3] and r[:4].tolist() == [0, -1, -1, -1]


def test_shift_counts_are_clamped_to_the_width():
    a = torch.tensor([-5, -5, -5, 0x61], dtype=torch.int32)
    c = torch.tensor([31, 32, -1, 33], dtype=torch.int32)
    assert N.shift(a, c, gl.int32, True).tolist() == [-(2**31), 0, 0, 0]
    assert N.shift(a, c, gl.int32, False).tolist() == [-1, -1, -1, 0]
    assert N.shift(a, c, gl.uint32, False).tolist() == [1, 0, 0, 0]


# =====================================================================================
# min / max
# =====================================================================================
def test_ptx_min_max_lose_nan_and_order_signed_zeros():
    a = torch.tensor([math.nan, 1.0, -0.0, 0.0, math.nan])
    b = torch.tensor([2.0, math.nan, 0.0, -0.0, math.nan])
    mx = N.fminmax(a, b, True, False)
    mn = N.fminmax(a, b, False, False)
    assert mx[:2].tolist() == [2.0, 1.0] and mn[:2].tolist() == [2.0, 1.0]
    assert [math.copysign(1, v) for v in mx[2:4].tolist()] == [1, 1]
    assert [math.copysign(1, v) for v in mn[2:4].tolist()] == [-1, -1]
    assert mx.view(torch.int32)[4].item() == 0x7FFFFFFF  # two NaNs: the canonical one
    assert N.fminmax(a, b, True, True).view(torch.int32)[:2].tolist() == [0x7FFFFFFF] * 2  # propagate_nan=ALL


# =====================================================================================
# reductions in the compiled order (trees read from Triton 3.9's LLVM IR for sm_90a)
# =====================================================================================
def _tree(t: torch.Tensor, order: list[int] | None) -> str:
    """The combination tree ``reduce_along`` builds, as text over the element indices."""
    names = [[f"r{i}"] for i in range(t.numel())]
    table = {i: n[0] for i, n in enumerate(names)}
    codes = torch.arange(t.numel(), dtype=torch.int64)

    def combine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        for j, (x, y) in enumerate(zip(a.reshape(-1).tolist(), b.reshape(-1).tolist(), strict=True)):
            table[len(table)] = f"({table[x]}+{table[y]})"
            out.reshape(-1)[j] = len(table) - 1
        return out

    return table[int(R.reduce_along(codes, 0, combine, order))]


@pytest.mark.parametrize(
    "spt, bits, want",
    [
        (4, 32, "((r0+r1)+(r2+r3))"),
        (8, 32, "(((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)))"),
        (4, 16, "((r0+r2)+(r1+r3))"),  # 16-bit: registers packed in pairs, the pair's halves added last
        (8, 16, "(((r0+r2)+(r4+r6))+((r1+r3)+(r5+r7)))"),
    ],
)
def test_a_threads_registers_are_reduced_as_the_compiled_tree(spt, bits, want):
    layout = gl.BlockedLayout([spt], [32], [1], [0])
    order = R.reduce_order(layout, [spt * 32], 0, bits)
    assert order[: spt.bit_length() - 1] == (
        [1, 2, 0][: spt.bit_length() - 1]
        if bits == 16 and spt == 8
        else [1, 0]
        if bits == 16
        else list(range(spt.bit_length() - 1))
    )
    codes = torch.arange(spt)
    assert _tree(codes, order[: spt.bit_length() - 1]) == want


def test_lanes_then_warps_are_combined_highest_bit_first():
    layout = gl.BlockedLayout([4], [32], [4], [0])  # registers: bits 0-1, lanes: 2-6, warps: 7-8
    assert R.reduce_order(layout, [512], 0, 32) == [0, 1, 6, 5, 4, 3, 2, 8, 7]


def test_a_float16_sum_keeps_float16_partials():
    """+60000 x 4 and -60000 x 4 per thread: each half overflows float16 (inf and -inf), so the sum is NaN on the
    GPU although the exact total is 0."""
    x = torch.where(torch.arange(512) % 8 < 4, 60000.0, -60000.0).half()
    order = R.reduce_order(gl.BlockedLayout([8], [32], [2], [0]), [512], 0, 16)
    assert math.isnan(float(R.reduce_along(x, 0, N.fadd, order)))


# =====================================================================================
# atomics and races between programs
# =====================================================================================
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_acq_rel_ticket_orders_the_partials_and_relaxed_does_not(seed):
    torch.manual_seed(seed)
    x = torch.randn(8 * 128)
    for sem, racy in (("acq_rel", False), ("relaxed", True)):
        partial, counter, out = torch.zeros(128), torch.zeros(1, dtype=torch.int32), torch.zeros(1)
        res = launch(
            S.last_block_sum, (8,), (x, partial, counter, out, sem, 128), num_ctas=1, seed=seed, precheck=False
        )
        assert res.error is None and res.deadlock is None
        kinds = {h.kind for h in res.hazards}
        assert (kinds == {"global-read-after-write"}) if racy else not kinds, kinds
        assert int(counter) == 8
        assert torch.allclose(out, x.sum().reshape(1), rtol=1e-5, atol=1e-4)


def test_lanes_of_one_atomic_on_one_element_take_turns():
    values = torch.randint(0, 10, (4 * 128,), generator=torch.Generator().manual_seed(3), dtype=torch.int32)
    bins = torch.zeros(16, dtype=torch.int32)
    res = launch(S.histogram, (4,), (values, bins, 128), num_ctas=1, precheck=False)
    assert res.ok, res.error
    assert torch.equal(bins[:10], torch.bincount(values, minlength=10).to(torch.int32))


def test_unordered_stores_of_two_programs_are_a_race_named_with_the_line():
    out = torch.zeros(128, dtype=torch.int32)
    res = launch(S.racy_store, (3,), (out, 128), num_ctas=1, precheck=False)
    races = [h for h in res.hazards if h.kind == "global-write-after-write"]
    assert len(races) == 1 and "gl.store(out_ptr + offs" in str(races[0])  # one report per pair of lines


def test_a_layout_split_over_a_cluster_stores_each_half_once():
    out = torch.zeros(2 * 256, dtype=torch.int32)
    res = launch(S.split_store, (2,), (out, 256), num_ctas=2, precheck=False)
    assert res.ok, [str(h) for h in res.hazards]
    assert out.tolist() == list(range(256)) + [1000 + i for i in range(256)]


def test_a_scalar_atomic_in_a_cluster_runs_once_and_gives_every_cta_its_result():
    """A scalar ``atomic_add`` in a 2-CTA cluster: the counter rises by 1 per cluster and both halves of the block
    hold the same ticket -- as the compiled kernel does it (test below: the atomic predicated to one CTA, its result
    handed over through a cluster barrier and ``ld.shared::cluster``; data/silicon's ``cluster_*`` cases)."""
    for seed in range(3):
        count = torch.arange(5, 9, dtype=torch.int32)
        tickets = torch.full((4 * 256,), -1, dtype=torch.int32)
        res = launch(K.cluster_ticket_kernel, (4,), (count, tickets, 256), num_ctas=2, seed=seed, precheck=False)
        assert res.ok, (res.error, [str(h) for h in res.hazards][:1])
        assert count.tolist() == [6, 7, 8, 9]
        assert tickets.view(4, 256).tolist() == [[5 + c] * 256 for c in range(4)]


def test_the_compiled_scalar_atomic_of_a_cluster_is_one_ctas_and_handed_over(compiled):
    ptx = compiled["cluster_ticket"].ptx
    atom = re.search(r"@%p\d+ atom\.global[\w.]*add", ptx)
    assert atom, "the atomic is predicated"
    after = ptx[atom.end() :]
    for step in ("barrier.cluster.arrive", "barrier.cluster.wait", "mapa.shared::cluster", "ld.shared::cluster"):
        assert step in after, step
    assert "barrier.cluster.wait" in ptx[: atom.start()]  # a cluster barrier before it too


@pytest.mark.parametrize(
    "store_sem, load_sem, racy",
    [("release", "acquire", False), ("relaxed", "acquire", True), ("release", "relaxed", True)],
)
def test_a_flag_raised_with_release_and_read_with_acquire_orders_the_data(store_sem, load_sem, racy):
    for seed in range(3):
        data, out = torch.zeros(128, dtype=torch.int32), torch.zeros(128, dtype=torch.int32)
        flag = torch.zeros(1, dtype=torch.int32)
        res = launch(
            S.flag_handoff, (2,), (data, flag, out, store_sem, load_sem, 128), num_ctas=1, seed=seed, precheck=False
        )
        assert res.error is None and res.deadlock is None, (res.error, res.deadlock)
        kinds = {h.kind for h in res.hazards}
        assert (kinds == {"global-read-after-write"}) if racy else not kinds, kinds
        assert out.tolist() == [3 * i for i in range(128)] and int(flag) == 1


# =====================================================================================
# the kernels above are Triton 3.9 Gluon
# =====================================================================================
def _compile_cases() -> list[tuple[str, object, tuple, int]]:
    def m(n: int, dtype: torch.dtype = torch.int32) -> torch.Tensor:
        return torch.empty(n, dtype=dtype, device="meta")

    f32 = torch.float32
    return [
        ("last_block_sum", S.last_block_sum, (m(1024, f32), m(128, f32), m(1), m(1, f32), "acq_rel", 128), 1),
        ("histogram", S.histogram, (m(512), m(16), 128), 1),
        ("mul_add", S.mul_add, (m(128, f32), m(128, f32), m(128, f32), m(128, f32), 128), 1),
        ("divide", S.divide, (m(128), m(128), m(128), m(128), 128), 1),
        ("racy_store", S.racy_store, (m(128), 128), 1),
        ("split_store", S.split_store, (m(512), 256), 2),
        ("cluster_ticket", K.cluster_ticket_kernel, (m(4), m(1024), 256), 2),
        ("flag_handoff", S.flag_handoff, (m(128), m(1), m(128), "release", "acquire", 128), 1),
    ]


@pytest.fixture(scope="module")
def compiled():
    from _cross_compile import compile_all

    return compile_all(_compile_cases())


@pytest.mark.e2e
@pytest.mark.parametrize("name", [c[0] for c in _compile_cases()])
def test_the_semantics_kernels_cross_compile_for_sm100a(compiled, name):
    from _cross_compile import assert_compiled

    assert_compiled(compiled[name], name)
