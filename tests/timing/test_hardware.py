"""Hardware descriptions: every number has a provenance, the vendor leads match NOTES.md, errors are clean."""

from __future__ import annotations

import json

import pytest

from gluon_overlap import hardware
from gluon_overlap.hardware import KINDS, known_gpus, load_hardware

# NOTES.md, "Dense tensor peaks" (PFLOP/s) and "B200 has 148 SMs"
NOTES_PEAKS = {"b200": (4.5, 9.0), "gb200": (5.0, 10.0), "gb300": (5.0, 15.0)}
GPUS = ["b200", "gb200", "b300", "gb300"]


def test_the_four_described_gpus_exist():
    assert set(GPUS) <= set(known_gpus())


@pytest.mark.parametrize("gpu", GPUS)
def test_every_number_says_where_it_comes_from(gpu):
    hw = load_hardware(gpu)
    assert hw.records, "no provenance records"
    for name, rec in hw.records.items():
        assert rec["kind"] in KINDS, name
        assert len(rec["source"]) > 10, name
        assert rec["value"] == getattr(hw, name)
    # the only fitted numbers are the tensor efficiencies, the epilogue's cost factor, the HBM write efficiency and the
    # overlap hand-over's remote arrive, and they say what they were fitted to: the single-buffered published results
    # or the published B300 overlap tables (data/published)
    calibrated = {n for n, r in hw.records.items() if r["kind"] == "calibrated"}
    assert calibrated == {
        "tensor_efficiency_fp8",
        "tensor_efficiency_fp4",
        "epilogue_cost_factor",
        "hbm_write_efficiency",
        "mbarrier_remote_clk",
    }
    for name in calibrated:
        source = hw.records[name]["source"]
        assert "single-buffered" in source or "b300-overlap-*.json" in source, name


@pytest.mark.parametrize("gpu", GPUS)
def test_every_number_has_a_plausible_range_with_its_reasoning(gpu):
    hw = load_hardware(gpu)
    for name, rec in hw.records.items():
        lo, hi = rec["range"]
        assert lo <= rec["value"] <= hi, name
        assert len(rec["range_source"]) > 10, name
        assert hw.value_range(name) == (lo, hi)
    # every uncertain parameter belongs to exactly one group of the band; the exact ones have zero width
    grouped = [n for names in hardware.GROUPS.values() for n in names]
    assert len(grouped) == len(set(grouped))
    for name in set(hardware.parameter_names()) - set(grouped):
        assert hw.value_range(name)[0] == hw.value_range(name)[1], name


@pytest.mark.parametrize("gpu", ["b200", "gb200", "gb300"])
def test_vendor_peaks_match_notes(gpu):
    hw = load_hardware(gpu)
    assert (hw.peak_fp8_pflops, hw.peak_fp4_pflops) == NOTES_PEAKS[gpu]
    assert hw.provenance("peak_fp8_pflops")["kind"] == "vendor lead"


def test_b200_and_b300_facts():
    b200, b300 = load_hardware("b200"), load_hardware("b300")
    assert b200.sms == 148
    assert 13.0 <= b300.peak_fp4_pflops <= 14.0  # NOTES.md: ~13-14
    assert b300.peak_fp8_pflops == 4.5
    assert 7.7 <= b200.hbm_tb_s <= 8.0


@pytest.mark.parametrize("gpu", GPUS)
def test_implied_clock_is_a_plausible_boost_clock(gpu):
    hw = load_hardware(gpu)
    assert 1.5 < hw.clock_ghz < 2.3
    # per-SM dense FP8 rate times SMs gives back the vendor peak
    assert hw.peak_flops_per_sm("fp8") * hw.sms == pytest.approx(hw.peak_fp8_pflops * 1e15)


def test_unknown_gpu_lists_the_known_ones():
    with pytest.raises(ValueError, match="known GPUs: b200, b300, gb200, gb300"):
        load_hardware("h100")


def test_a_description_missing_a_number_is_rejected(tmp_path, monkeypatch):
    raw = json.loads((hardware.DATA_DIR / "b200.json").read_text())
    del raw["params"]["hbm_tb_s"]
    (tmp_path / "broken.json").write_text(json.dumps(raw))
    monkeypatch.setattr(hardware, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match="missing parameters.*hbm_tb_s"):
        load_hardware("broken")


def test_a_number_without_provenance_is_rejected(tmp_path, monkeypatch):
    raw = json.loads((hardware.DATA_DIR / "b200.json").read_text())
    raw["params"]["sms"]["kind"] = "guess"
    (tmp_path / "broken.json").write_text(json.dumps(raw))
    monkeypatch.setattr(hardware, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match="sms needs a 'kind'"):
        load_hardware("broken")


def test_invalid_values_name_the_parameter():
    hw = load_hardware("b200")
    with pytest.raises(ValueError, match="tensor_efficiency_fp8=1.5"):
        hw.scaled(tensor_efficiency_fp8=1.5)


def test_a_slower_epilogue_variant_scales_every_epilogue_cost():
    hw = load_hardware("b200")
    slow = hw.with_epilogue_scaled(2.0)
    for name in hw.EPILOGUE_LATENCIES:
        assert getattr(slow, name) == 2.0 * getattr(hw, name)
    for name in hw.EPILOGUE_RATES:
        assert getattr(slow, name) == getattr(hw, name) / 2.0
    assert slow.tensor_efficiency_fp8 == hw.tensor_efficiency_fp8  # nothing else changes


@pytest.mark.parametrize("factor", [0, -1.0, float("inf"), float("nan"), 1e300, True, "2"])
def test_extreme_epilogue_scales_are_refused_cleanly(factor):
    with pytest.raises(ValueError, match="factor"):
        load_hardware("b200").with_epilogue_scaled(factor)


def test_a_corner_moves_a_whole_group_to_one_end_of_its_ranges():
    hw = load_hardware("b200")
    fast, slow = hw.corner("epilogue", True), hw.corner("epilogue", False)
    assert fast.tmem_ld_latency_clk == hw.value_range("tmem_ld_latency_clk")[0]  # a latency: low is fast
    assert fast.cvt_per_clk_per_smsp == hw.value_range("cvt_per_clk_per_smsp")[1]  # a rate: high is fast
    assert slow.tmem_ld_latency_clk == hw.value_range("tmem_ld_latency_clk")[1]
    assert fast.hbm_tb_s == hw.hbm_tb_s  # another group's parameter does not move
    with pytest.raises(ValueError, match="group"):
        hw.corner("everything", True)


# --- the schema: a malformed description names its file and its field ---------------------------------
def _broken(tmp_path, monkeypatch, edit):
    raw = json.loads((hardware.DATA_DIR / "b200.json").read_text())
    edit(raw)
    (tmp_path / "broken.json").write_text(json.dumps(raw))
    monkeypatch.setattr(hardware, "DATA_DIR", tmp_path)


@pytest.mark.parametrize(
    "edit, needle",
    [
        (
            lambda r: r["params"]["hbm_tb_s"].update(value=float("nan")),
            r"broken.json: params.hbm_tb_s.value=nan must be",
        ),
        (lambda r: r["params"]["hbm_tb_s"].update(value=0), r"broken.json: params.hbm_tb_s.value=0 must be > 0"),
        (lambda r: r["params"]["l2_write_tb_s"].update(value=-7.4), r"params.l2_write_tb_s.value=-7.4 must be > 0"),
        (lambda r: r["params"]["sms"].update(value="148"), r"params.sms.value='148' must be a number"),
        (lambda r: r["params"]["sms"].update(value=148.5), r"params.sms.value=148.5 must be a whole number"),
        (lambda r: r["params"]["smem_bytes_per_clk"].update(value=float("inf")), r"smem_bytes_per_clk.value=inf"),
        (lambda r: r["params"]["hbm_efficiency"].update(value=1.5), r"params.hbm_efficiency.value=1.5 must be in"),
        (lambda r: r["params"]["hbm_tb_s"].pop("range"), r"params.hbm_tb_s.range is missing \(it must be \[lo, hi\]\)"),
        (lambda r: r["params"]["hbm_tb_s"].update(range=[1, 2]), r"params.hbm_tb_s.range=\[1, 2\] must contain"),
        (lambda r: r["params"]["hbm_tb_s"].update(range=[float("nan"), 8]), r"params.hbm_tb_s.range=nan"),
        (lambda r: r["params"]["hbm_tb_s"].pop("range_source"), r"params.hbm_tb_s.range_source"),
        (lambda r: r["params"]["hbm_tb_s"].pop("value"), r"params.hbm_tb_s.value is missing"),
        (lambda r: r["params"].update(hbm_tb_s=8.0), r"params.hbm_tb_s must be an object"),
        (lambda r: r.update(params=[1, 2]), r"broken.json: 'params' must be an object"),
        (lambda r: r.pop("name"), r"broken.json: name is missing"),
        (lambda r: r.update(name=""), r"broken.json: 'name' must be a non-empty string"),
        (lambda r: r["params"]["hbm_tb_s"].update(range=[1]), r"params.hbm_tb_s.range must be \[lo, hi\]"),
        (lambda r: r["params"]["hbm_tb_s"].update(kind="guess"), r"hbm_tb_s needs a 'kind' in"),
        (lambda r: r["params"].update(extra_knob={}), r"unknown \['extra_knob'\]"),
    ],
)
def test_a_malformed_description_is_a_clear_value_error(tmp_path, monkeypatch, edit, needle):
    _broken(tmp_path, monkeypatch, edit)
    with pytest.raises(ValueError, match=needle):
        load_hardware("broken")


def test_a_description_that_is_not_json_is_a_clear_value_error(tmp_path, monkeypatch):
    (tmp_path / "broken.json").write_text('{"name": "broken", ')
    monkeypatch.setattr(hardware, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match="broken.json: not valid JSON"):
        load_hardware("broken")
    (tmp_path / "broken.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="broken.json: the description must be a JSON object"):
        load_hardware("broken")


@pytest.mark.parametrize("gpu", GPUS)
def test_the_fp4_rate_the_kernel_gets_follows_its_instruction_form(gpu):
    """The kernel issues the K = 64 FP4 MMA (its SASS: 4 per BLOCK_K = 256).  On sm_100 parts that form is the
    vendor FP4 peak (2x FP8); Blackwell Ultra quotes its 3x FP4 peak for a K = 96 form, so the K = 64 form gets
    2x FP8 there too -- two thirds of the vendor figure -- with a range that stays below the vendor peak."""
    hw = load_hardware(gpu)
    fp8 = hw.peak_flops_per_sm("fp8")
    assert hw.mma_flops_per_sm("fp8", 32) == fp8
    assert hw.mma_flops_per_sm("fp4", 64) == pytest.approx(2.0 * fp8)
    lo, hi = hw.value_range("fp4_k64_rate_per_fp8")
    assert 2.0 <= lo <= hi and hi * hw.peak_fp8_pflops <= hw.peak_fp4_pflops + 1e-9
    if gpu in ("b200", "gb200"):
        assert hw.peak_fp4_pflops == pytest.approx(2.0 * hw.peak_fp8_pflops) and lo == hi
        with pytest.raises(ValueError, match="no K = 96"):
            hw.mma_flops_per_sm("fp4", 96)
    else:
        assert hw.peak_fp4_pflops >= 2.9 * hw.peak_fp8_pflops and hi < 3.0
        assert hw.mma_flops_per_sm("fp4", 96) == pytest.approx(hw.peak_flops_per_sm("fp4"))
        assert "K = 96" in hw.provenance("fp4_k64_rate_per_fp8")["source"]
    with pytest.raises(ValueError, match="K = 32"):
        hw.mma_flops_per_sm("fp8", 64)
    with pytest.raises(ValueError, match="K = 64"):
        hw.mma_flops_per_sm("fp4", 128)
    with pytest.raises(ValueError, match="rate_class"):
        hw.mma_flops_per_sm("fp16", 16)


@pytest.mark.parametrize("gpu", GPUS)
def test_the_l2_read_rate_is_at_least_the_blackwell_measurement(gpu):
    """Triton's tutorial 11 sustained 16.0 TB/s of TMA loads on Blackwell (nvfp4, 8192^3): neither the GPU-wide
    L2 rate nor the per-SM links at their slow ends may fall below it."""
    hw = load_hardware(gpu)
    assert hw.value_range("l2_read_tb_s")[0] >= 16.0
    link_lo = hw.value_range("l2_read_bytes_per_clk_per_sm")[0]
    assert link_lo * hw.sms * hw.clock_ghz * 1e9 >= 16.0e12


def test_rates_per_clock_are_not_latencies():
    """A corner moves a latency down and a rate up to be fast: shared memory's bytes per clock is a rate."""
    assert "smem_bytes_per_clk" not in hardware.LOWER_IS_FASTER
    assert "tmem_ld_bytes_per_clk" not in hardware.LOWER_IS_FASTER
    assert {"tma_latency_clk", "mbarrier_remote_clk", "launch_overhead_us"} <= hardware.LOWER_IS_FASTER
    b300 = load_hardware("b300")
    assert b300.corner("memory", True).smem_bytes_per_clk == b300.value_range("smem_bytes_per_clk")[1]
