"""steps.predict: the one prediction function of the per-step figures -- its checks, its bands, its cache, and its
agreement with the timing model's own replay of the warp-specialized kernel."""

from __future__ import annotations

import pytest

from gluon_overlap.steps import predict as P


def test_bad_arguments_are_refused_with_the_rule():
    with pytest.raises(ValueError, match="step=4 must be 1, 2 or 3"):
        P.predict_step(4, 512)
    with pytest.raises(ValueError, match="k=100 must be a positive multiple of 128"):
        P.predict_step(1, 100)
    with pytest.raises(ValueError, match="single-buffered kernel, has one accumulator"):
        P.predict_step(1, 512, overlap=True)
    with pytest.raises(ValueError, match="only steps 2 and 3"):
        P.overlap_saving(1, 512)


def test_band_holds_the_nominal_and_the_cache_gives_the_same_figure(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    P._memory.clear()
    first = P.predict_step(1, 384)  # a figure no notebook shows (not shipped): timed, then cached
    lo, hi = first.band()
    assert lo <= first.nominal.per_tile <= hi and lo < hi
    assert len(list((tmp_path / "gluon-overlap" / "step-figures").glob("*.json"))) == 1 + len(first.corners)
    P._memory.clear()  # from disk now
    assert P.predict_step(1, 384) == first
    assert first.us().endswith("]") and "µs [" in first.us()


def test_the_shipped_figures_are_the_notebooks_figures_under_this_code():
    """data/step_figures.json holds exactly the runs behind the notebooks' figures, keyed on this code: after an
    edit of the kernels or of the code that prices them the keys change, and this fails until the file is
    rewritten (the notebooks would still be right, computing their figures live, only slower)."""
    P._shipped_figures.clear()
    assert set(P.shipped_figures()) == set(P.notebook_figure_keys()), (
        "stale data/step_figures.json: rewrite it with  python -m gluon_overlap.regenerate step-figures"
    )


@pytest.mark.parametrize("index", [0, 47, 104])
def test_a_shipped_figure_equals_a_live_run(index, tmp_path):
    """A shipped figure is what a timed run computes now, to the last digit (one sample each of step 1, 2, 3)."""
    keys = P.notebook_figure_keys()
    key = sorted(keys, key=lambda k: (keys[k][0], keys[k][2], keys[k][3], keys[k][1].name, k))[index]
    step, hw, k, overlap = keys[key]
    live = P._compute(step, hw, "nvfp4", "nvfp4", k, overlap, key, tmp_path / "figure.json")
    assert live == P.shipped_figures()[key]


def test_an_unreadable_shipped_file_ships_nothing(tmp_path, monkeypatch):
    bad = tmp_path / "step_figures.json"
    bad.write_text("{not json")
    monkeypatch.setattr(P, "SHIPPED_PATH", bad)
    monkeypatch.setattr(P, "_shipped_figures", [])
    assert P.shipped_figures() == {}
    bad.write_text('{"figures": {"k": {"per_tile": 1.0}}}')  # a figure without all its fields
    monkeypatch.setattr(P, "_shipped_figures", [])
    assert P.shipped_figures() == {}


def test_step_3_agrees_with_the_timing_models_replay():
    """The executor's direct run of kernel.py (roles learnt while it runs) and the model's replay of its recording
    (roles from the recording) price the same operations: per-tile times agree within a few percent (the HBM
    write-back tail the model adds at the end; and with overlap on, whether a subtile's shared-memory store lands
    while the tensor pipe is busy -- then it moves at the drain's measured share, about 40 B/clk on the B300, not at
    the full 128 -- can differ between the two runs' orders of simultaneous events: up to about 4.5 % (nvfp4, K = 512,
    the direct run the faster))."""
    from gluon_overlap.emulate.config import KernelConfig
    from gluon_overlap.hardware import load_hardware
    from gluon_overlap.timing import model as timing
    from gluon_overlap.tmem import make_plan

    hw = load_hardware(P.DEFAULT_GPU)
    for overlap in (False, True):
        config = KernelConfig(
            make_plan("nvfp4", "nvfp4", overlap=overlap), m=P.M, n=P.N, k=512, clusters=1, num_sms=hw.sms
        )
        replay = timing._run(hw, config, P.TILES, 2)["end"] / P.TILES
        direct = P.predict_step(3, 512, overlap=overlap, with_band=False).nominal.per_tile
        assert direct <= replay * 1.01 and direct == pytest.approx(replay, rel=0.05)


def test_percent_band_has_no_negative_zero():
    assert P.percent_band(0.1234, (-0.001, 0.21)) == "12% [0, 21]"
    assert P.percent_band(-0.19, (-0.21, 0.0)) == "-19% [-21, 0]"


def test_step_figures_have_titles_labelled_axes_and_only_drawn_legend_entries():
    from matplotlib.colors import to_hex

    from gluon_overlap.plots import steps as ps
    from gluon_overlap.steps import measure
    from gluon_overlap.steps.single_buffered import single_buffered_kernel

    run = measure.run_step(single_buffered_kernel, measure.make_problem(256, 256, 256), timed=True)
    for fig in (ps.plot_step_timeline(run.run), ps.plot_idle([run.mma_time().row("step 1")])):
        ax = fig.axes[0]
        assert ax.get_title() and "µs" in ax.get_xlabel() and ax.get_ylabel()
        legend = ax.get_legend()
        drawn = {to_hex(p.get_facecolor()) for p in ax.patches}
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            assert to_hex(handle.get_facecolor()) in drawn, text.get_text()
    labels = [t.get_text() for t in ps.plot_step_timeline(run.run).axes[0].get_yticklabels()]
    assert all("stream" in label or "TMA" in label or "tensor" in label for label in labels), labels
    assert not any("epilogue ops (+ waits)" in label for label in labels)  # a single stream has no epilogue partition


@pytest.mark.parametrize("step, k, overlap", [(1, 512, False), (2, 512, True), (3, 512, True), (3, 2048, False)])
def test_a_figure_timed_without_data_is_the_data_runs_and_that_run_is_right(step, k, overlap):
    """The figures are timed with no data moving; a run that moves the data and checks C gives the same times."""
    from gluon_overlap.hardware import load_hardware
    from gluon_overlap.steps import measure

    hw = load_hardware(P.DEFAULT_GPU)
    m, n = (P.M, P.N // P.TILES) if step == 1 else (P.M, P.N)
    problem = measure.make_problem(m, n, k, "nvfp4", "nvfp4", seed=0)
    runs = {
        data: measure.run_step(
            P.step_kernel(step),
            problem,
            overlap=overlap,
            num_clusters=None if step == 1 else 1,
            timed=True,
            hardware=hw,
            data=data,
        )
        for data in (True, False)
    }
    assert runs[True].clean and runs[False].run.ok
    assert runs[True].mma_time() == runs[False].mma_time()
