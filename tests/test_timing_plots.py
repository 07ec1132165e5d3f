"""Performance plots and the measured-CSV path (no Blackwell needed: a small hand-written CSV)."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from gluon_overlap.hardware import load_hardware
from gluon_overlap.plots import perf
from gluon_overlap.twin import timing

HEADER = "a_format,b_format,m,n,k,tflops_off,tflops_on,speedup_pct,tflops_cublas,gpu\n"


@pytest.fixture(scope="module")
def twin_rows():
    """mxfp8 x mxfp8 and mxfp8 x mxfp4 predict nearly the same numbers: their series coincide."""
    return timing.sweep(load_hardware("b200"), pairs=(("mxfp8", "mxfp8"), ("mxfp8", "mxfp4"), ("nvfp4", "nvfp4")),
                        ks=(512, 1024, 2048, 8192))


@pytest.fixture(scope="module")
def rows(twin_rows):
    """Two pairs at two K: the rows of ``twin_rows`` for them (sweep computes each (pair, K) row on its own)."""
    pairs, ks = {("mxfp8", "mxfp8"), ("nvfp4", "nvfp4")}, {512, 2048}
    return [r for r in twin_rows if (r["a_format"], r["b_format"]) in pairs and r["k"] in ks]


def test_every_plot_is_a_figure_with_its_panels(rows):
    hw = load_hardware("b200")
    assert len(perf.plot_throughput(rows).axes) == 2
    assert len(perf.plot_time_split(rows).axes) == 2
    assert isinstance(perf.plot_exposed_share(rows), Figure)
    assert isinstance(perf.plot_roofline(hw, rows), Figure)




def _series(ax):
    return [line for line in ax.lines if len(line.get_xdata()) > 2]


def test_exposed_share_keeps_coinciding_series_visible(twin_rows):
    ax = perf.plot_exposed_share(twin_rows).axes[0]
    lines = _series(ax)  # off and on per pair
    assert len(lines) == 6
    by_pair = [lines[i:i + 2] for i in range(0, 6, 2)]
    markers = [pair[0].get_marker() for pair in by_pair]
    assert len(set(markers)) == 3 and all(a.get_marker() == b.get_marker() for a, b in by_pair)
    # the pair drawn first under a coinciding one is wider, so it shows around it
    assert by_pair[0][0].get_linewidth() > by_pair[1][0].get_linewidth()
    off0, off1 = by_pair[0][0].get_ydata(), by_pair[1][0].get_ydata()
    assert max(abs(a - b) for a, b in zip(off0, off1, strict=True)) < 0.5  # they do coincide (percent points)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("mxfp8-mxfp4") and "on top of mxfp8-mxfp8" in t for t in legend)
    assert "nvfp4-nvfp4" in legend


def test_roofline_labels_each_k_once_per_group_and_names_coinciding_series(twin_rows):
    ax = perf.plot_roofline(load_hardware("b200"), twin_rows).axes[0]
    labels = [(a.get_text(), a.xy) for a in ax.texts if a.get_text().startswith("K=")]
    for k in (512, 1024, 2048, 8192):
        spots = [xy for text, xy in labels if text == f"K={k}"]
        assert 1 <= len(spots) <= 2  # the fp8 pairs share their labels, nvfp4 sits elsewhere or with them
        for i, a in enumerate(spots):  # never two identical labels on top of each other
            assert all(abs(a[0] - b[0]) / a[0] > 0.1 or abs(a[1] - b[1]) / a[1] > 0.1 for b in spots[i + 1:])
    points = [line for line in ax.lines if line.get_linestyle() == "None"]
    assert len({line.get_marker() for line in points}) == 3
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("mxfp8-mxfp4 (on mxfp8-mxfp8 at K=") for t in legend)  # where they coincide
    assert "hollow: overlap off" in legend


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
