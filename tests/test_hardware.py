"""Hardware descriptions: every number has a provenance, the vendor leads match NOTES.md, errors are clean."""

from __future__ import annotations

import json

import pytest

from gluon_overlap import hardware
from gluon_overlap.hardware import KINDS, known_gpus, load_hardware

# NOTES.md, "Dense tensor peaks" (PFLOP/s) and "B200 has 148 SMs"
NOTES_PEAKS = {"b200": (4.5, 9.0), "gb200": (5.0, 10.0)}


def test_the_three_described_gpus_exist():
    assert {"b200", "gb200", "b300"} <= set(known_gpus())


@pytest.mark.parametrize("gpu", ["b200", "gb200", "b300"])
def test_every_number_says_where_it_comes_from(gpu):
    hw = load_hardware(gpu)
    assert hw.records, "no provenance records"
    for name, rec in hw.records.items():
        assert rec["kind"] in KINDS, name
        assert len(rec["source"]) > 10, name
        assert rec["value"] == getattr(hw, name)
    # the only fitted numbers are the tensor efficiencies, and they say what they were fitted to
    calibrated = {n for n, r in hw.records.items() if r["kind"] == "calibrated"}
    assert calibrated == {"tensor_efficiency_fp8", "tensor_efficiency_fp4"}
    for name in calibrated:
        assert "single-buffered" in hw.records[name]["source"]


@pytest.mark.parametrize("gpu", ["b200", "gb200"])
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


@pytest.mark.parametrize("gpu", ["b200", "gb200", "b300"])
def test_implied_clock_is_a_plausible_boost_clock(gpu):
    hw = load_hardware(gpu)
    assert 1.5 < hw.clock_ghz < 2.3
    # per-SM dense FP8 rate times SMs gives back the vendor peak
    assert hw.peak_flops_per_sm("fp8") * hw.sms == pytest.approx(hw.peak_fp8_pflops * 1e15)


def test_unknown_gpu_lists_the_known_ones():
    with pytest.raises(ValueError, match="known GPUs: b200, b300, gb200"):
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


def test_a_slower_epilogue_variant_scales_every_epilogue_latency():
    hw = load_hardware("b200")
    slow = hw.with_epilogue_scaled(2.0)
    for name in hw.EPILOGUE_LATENCIES:
        assert getattr(slow, name) == 2.0 * getattr(hw, name)
    assert slow.tmem_ld_bytes_per_clk == hw.tmem_ld_bytes_per_clk / 2.0
    assert slow.tensor_efficiency_fp8 == hw.tensor_efficiency_fp8  # nothing else changes
    with pytest.raises(ValueError, match="factor"):
        hw.with_epilogue_scaled(0)
