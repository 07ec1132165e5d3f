"""The epilogue's instruction mix, read from the compiled kernel, is what the timing model prices.

The shipped snapshot (gluon_overlap/data/kernel_mix.json) must equal what a fresh sm_100a compile of
kernel.py says now, so a kernel change that changes the epilogue's instructions fails here until the
snapshot is regenerated (``python -m gluon_overlap.regenerate epilogue-mix``) -- and then moves the model.
"""

from __future__ import annotations

import pytest

from gluon_overlap.hardware import load_hardware
from gluon_overlap.timing import costs, kernel_costs
from gluon_overlap.tmem import ROWS_PER_CTA, SEED_FORMAT_PAIRS, make_plan

pytest.importorskip("triton")

VARIANTS = [(a, b, ov) for a, b in SEED_FORMAT_PAIRS for ov in (False, True)]


@pytest.fixture(scope="module")
def compiled():
    from gluon_overlap.compiler.compile import compile_variant

    return {(a, b, ov): compile_variant(a, b, ov) for a, b, ov in VARIANTS}


@pytest.mark.parametrize("a, b, overlap", VARIANTS)
def test_the_shipped_mix_is_what_the_compiled_kernel_contains(compiled, a, b, overlap):
    cv = compiled[(a, b, overlap)]
    fresh = kernel_costs.count_mix(cv.sass, cv.ptx, a, b, overlap)
    assert kernel_costs.shipped_mix(a, b, overlap) == fresh


@pytest.mark.parametrize("a, b, overlap", VARIANTS)
def test_the_mix_agrees_with_the_plan_and_first_principles(a, b, overlap):
    plan = make_plan(a, b, overlap=overlap)
    mix = kernel_costs.shipped_mix(a, b, overlap)
    assert mix.subtiles == plan.num_subtiles  # one LDTM per subtile of the 256-column window
    assert mix.tmem_ld_columns == plan.epilogue_block_n
    # one F2FP packs two fp32 into an f16x2: a thread holding 32 columns of its row needs 16
    assert mix.cvt_per_subtile == plan.epilogue_block_n // 2
    # the STS of 128 threads write exactly the fp16 subtile the TMA store then reads
    assert 128 * mix.sts_per_subtile * mix.sts_bytes_per_thread == ROWS_PER_CTA * plan.epilogue_block_n * 2
    assert (mix.bars_per_subtile, mix.fences_per_subtile, mix.store_waits_per_subtile, mix.tma_stores_per_subtile) == (
        2,
        1,
        1,
        1,
    )
    # acc_empty, plus the early release on overlap: one remote arrive and one barrier before it each
    assert mix.remote_arrives_per_tile == mix.extra_bars_per_tile == (2 if overlap else 1)


def test_store_wait_waits_for_the_shared_memory_read_only(compiled):
    for cv in compiled.values():
        # tma.store_wait(pendings=STORE_STAGES - 1) with two staging buffers
        assert kernel_costs.read_store_wait(cv.ptx) == "cp.async.bulk.wait_group.read 1"
        semantics = kernel_costs.read_wait_semantics(cv.ptx)
        assert "not the global writes" in semantics["tma.store_wait"]
        assert {"load_ready", "acc_ready / load_empty", "overlap / acc_empty"} <= set(semantics)


def test_a_wait_without_read_would_be_read_as_waiting_for_the_writes():
    ptx = "cp.async.bulk.wait_group 1;\ncp.async.bulk.wait_group 0;"
    assert kernel_costs.read_store_wait(ptx) == "cp.async.bulk.wait_group 1"
    assert "and their global writes" in kernel_costs.read_wait_semantics(ptx)["tma.store_wait"]


def test_the_model_prices_the_counted_instructions(monkeypatch):
    hw = load_hardware("b200")
    plan = make_plan("nvfp4", "nvfp4")
    mix = kernel_costs.shipped_mix("nvfp4", "nvfp4", True)
    # hand arithmetic from the counts and the description's rates
    ld = hw.tmem_ld_latency_clk + 128 * 32 * 4 / hw.tmem_ld_bytes_per_clk + 16 * 32 / hw.cvt_per_clk_per_smsp
    sts = 2 * hw.bar_sync_clk + 8192 / hw.smem_bytes_per_clk + hw.fence_clk
    f = hw.epilogue_cost_factor  # the fitted scale of the whole drain (twin.fit)
    assert costs.tmem_load_time(hw, plan) == pytest.approx(hw.clk(ld) * f)
    assert costs.smem_store_time(hw, plan) == pytest.approx(hw.clk(sts) * f)
    # a kernel whose epilogue converted twice as much would move the model by exactly that much
    doubled = kernel_costs.EpilogueMix(**{**mix.to_dict(), "cvt_per_subtile": 2 * mix.cvt_per_subtile})
    monkeypatch.setattr(costs, "shipped_mix", lambda a, b, ov: doubled)
    costs.epilogue_mix.cache_clear()
    try:
        more = costs.tmem_load_time(hw, plan) - hw.clk(ld) * f
        assert more == pytest.approx(hw.clk(16 * 32 / hw.cvt_per_clk_per_smsp) * f)
    finally:
        costs.epilogue_mix.cache_clear()


def test_a_sass_without_the_epilogue_is_refused():
    with pytest.raises(ValueError, match="no LDTM"):
        kernel_costs.epilogue_region("/*0000*/ NOP ;")


@pytest.mark.parametrize("a, b", SEED_FORMAT_PAIRS)
def test_the_shipped_mma_k_step_is_what_the_compiled_kernel_contains(compiled, a, b):
    """The MMA partition's K step as compiled (overlap on and off alike): 4 MMAs per K step, so K = 32 per
    kind::mxf8f6f4 instruction and K = 64 per kind::mxf4 / mxf4nvf4 one -- the sm_100 form, not Blackwell
    Ultra's K = 96 -- and one tcgen05.cp per 4 scale columns of the plan."""
    from gluon_overlap.tmem import default_block_k

    shipped = kernel_costs.shipped_mma_mix(a, b)
    for overlap in (False, True):
        cv = compiled[(a, b, overlap)]
        assert kernel_costs.count_mma_mix(cv.sass, cv.ptx, a, b, default_block_k(a, b)) == shipped
    fp8 = "mxfp8" in (a, b)
    assert shipped.kind.startswith("mxf8f6f4" if fp8 else ("mxf4nvf4" if a == "nvfp4" else "mxf4."))
    assert shipped.mma_per_k_step == 4 and shipped.k_per_instruction == (32 if fp8 else 64)
    assert shipped.scale_copies_per_k_step == costs.scale_copy_chunks(make_plan(a, b))


def test_the_compiled_fp4_mma_uses_the_k64_instruction_descriptor(compiled):
    """Bit 31 of a block-scaled instruction descriptor picks K = 64 (0) or K = 96 (1) for the fp4 kinds (CUTLASS
    cute/arch/mma_sm100_desc.hpp); every descriptor constant the fp4 kernels pass to tcgen05.mma has it clear."""
    import re

    for (a, b, _), cv in compiled.items():
        if "mxfp8" in (a, b):
            continue
        ptx = cv.ptx
        descs = set()
        for line in ptx.splitlines():
            m = re.search(r"tcgen05\.mma\.\S+ \[[^]]+\], %rd\d+, %rd\d+, (%r\d+),", line)
            if m:
                descs.add(m.group(1))
        values = {int(v) for r in descs for v in re.findall(rf"mov\.b32\s+{re.escape(r)},\s*(\d+);", ptx)}
        assert values and all(v >> 31 == 0 for v in values), (a, b, values)
        assert all((v >> 24) & 31 == 16 and (v >> 17) & 63 == 32 for v in values)  # M = 256, N = 256


def test_the_mma_time_prices_the_counted_instruction(monkeypatch):
    """An FP4 kernel issuing K = 96 instructions on Blackwell Ultra would run at the vendor FP4 peak: the model
    prices the instruction the SASS holds, not the format."""
    hw = load_hardware("b300")
    plan = make_plan("nvfp4", "nvfp4")
    k64 = costs.mma_time(hw, plan)
    per_sm = hw.peak_flops_per_sm("fp8") * 2.0 * hw.tensor_efficiency_fp4  # K = 64: twice the FP8 rate
    assert k64 == pytest.approx(2 * 256 * 256 * 256 / (2 * per_sm))
    wide = kernel_costs.MmaMix(**{**kernel_costs.shipped_mma_mix("nvfp4", "nvfp4").to_dict(), "k_per_instruction": 96})
    monkeypatch.setattr(costs, "shipped_mma_mix", lambda a, b: wide)
    costs.mma_k_per_instruction.cache_clear()
    try:
        assert costs.mma_time(hw, plan) == pytest.approx(k64 * 2.0 * hw.peak_fp8_pflops / hw.peak_fp4_pflops)
    finally:
        costs.mma_k_per_instruction.cache_clear()


def test_a_sass_without_an_mma_k_step_is_refused():
    with pytest.raises(ValueError, match="no K step"):
        kernel_costs.count_mma_mix("/*0000*/ NOP ;", "", "mxfp8", "mxfp8", 128)
