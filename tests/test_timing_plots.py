"""Performance plots and the measured-CSV path (no Blackwell needed: a small hand-written CSV)."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from gluon_overlap.hardware import load_hardware
from gluon_overlap.plots import perf
from gluon_overlap.twin import timing

HEADER = "a_format,b_format,m,n,k,tflops_off,tflops_on,speedup_pct,tflops_cublas,gpu\n"


@pytest.fixture(scope="module")
def rows():
    return timing.sweep(load_hardware("b200"), pairs=(("mxfp8", "mxfp8"), ("nvfp4", "nvfp4")), ks=(512, 2048))


def test_every_plot_is_a_figure_with_its_panels(rows):
    hw = load_hardware("b200")
    assert len(perf.plot_throughput(rows).axes) == 2
    assert len(perf.plot_time_split(rows).axes) == 2
    assert isinstance(perf.plot_exposed_share(rows), Figure)
    assert isinstance(perf.plot_roofline(hw, rows), Figure)


def test_measured_csv_is_read_and_compared(tmp_path, rows):
    (tmp_path / "b200.csv").write_text(HEADER + "mxfp8,mxfp8,8192,8192,512,1000.0,1250.0,25.0,,b200\n"
                                                "nvfp4,nvfp4,4096,4096,512,1.0,1.0,0.0,2.0,b200\n")
    measured = perf.load_measured(tmp_path)
    assert [(m["a_format"], m["k"], m["tflops_on"]) for m in measured] == [("mxfp8", 512, 1250.0),
                                                                           ("nvfp4", 512, 1.0)]
    errors = perf.model_error(rows, measured)
    assert len(errors) == 1  # the 4096 x 4096 row has no model row
    model = next(r for r in rows if r["a_format"] == "mxfp8" and r["k"] == 512)
    assert errors[0]["on_err_pct"] == round(100 * (model["tflops_on"] / 1250.0 - 1), 1)
    assert errors[0]["gain_measured_pct"] == 25.0
    assert len(perf.plot_throughput(rows, measured).axes) == 2


def test_a_csv_missing_columns_is_rejected(tmp_path):
    (tmp_path / "bad.csv").write_text("a_format,b_format,k\nmxfp8,mxfp8,512\n")
    with pytest.raises(ValueError, match="missing columns"):
        perf.load_measured(tmp_path)


@pytest.mark.parametrize("device, gpu, expected", [
    ("NVIDIA B200", "b200", True), ("NVIDIA GB200", "b200", False), ("NVIDIA GB200", "gb200", True),
    ("NVIDIA B300 SXM6 AC", "b300", True), ("b200", "b200", True), ("NVIDIA H200", "b200", False),
])
def test_measured_rows_are_matched_to_the_described_gpu(device, gpu, expected):
    assert perf.gpu_matches(gpu, device) is expected
