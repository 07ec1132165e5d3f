"""The Blackwell scale-copy measurement (benchmarks/blackwell_scale_copy.py), prepared for a part this project has
not been lent: every mode runs on this project's CPU executor and leaves the accumulator its MMAs must make, its
steady K step compiles to the production kernel's, and its host side derives the figures by hand and refuses any
other GPU before launching."""

from __future__ import annotations

import benchmark_scripts  # tests/support is on sys.path (tests/conftest.py)
import pytest
import torch

pytest.importorskip("triton")


@pytest.fixture(scope="module")
def bench():
    return benchmark_scripts.load("blackwell_scale_copy")


def _relative(c: torch.Tensor, want: torch.Tensor) -> float:
    return float(((c.double() - want).abs() / want.abs().clamp_min(1.0)).max())


@pytest.mark.parametrize("pair", [("mxfp8", "mxfp8"), ("mxfp8", "mxfp4"), ("mxfp4", "mxfp4"), ("nvfp4", "nvfp4")])
def test_every_mode_runs_clean_and_makes_its_mmas_sum(bench, pair):
    """Each mode on the executor (both CTAs, every interleaving check): no race, no deadlock, and C is the float64 sum
    of the MMAs the mode issues -- which for the modes that copy every step differs from what the same MMAs give with
    the scales copied once, so a copy that did not land (or landed late) would fail."""
    from gluon_overlap.interp.launch import launch

    p, plan = bench.problem(*pair)
    for mode, name in bench.MODES.items():
        steps = 7 if mode in (0, 1, 2) else 3  # more than the commit ring's 5 steps: its reuse waits run
        c = torch.full((256, 256), float("nan"), dtype=torch.float32)
        log = torch.zeros(2 * bench.LOG, dtype=torch.int64)
        result = launch(bench.scale_copy_kernel, (1,), bench.kernel_args(p, plan, c, log, steps, mode, False))
        assert result.error is None and result.deadlock is None and not result.hazards, (name, result.error)
        want = bench.expected(p, plan, mode, steps)
        assert _relative(c, want) < 1e-4, name  # float32 accumulation of exact products
        if mode in (0, 2, 3):  # scales copied each step: stage 1's scales reach the odd steps
            once = bench.expected(p, plan, mode + 1 if mode == 3 else 1, steps)
            assert _relative(once, want) > 1e-2, name


def test_expected_refuses_an_unknown_mode(bench):
    p, plan = bench.problem("mxfp8", "mxfp8")
    with pytest.raises(ValueError, match="must be one of"):
        bench.expected(p, plan, 6, 3)


def test_copies_per_step_are_the_compiled_kernels(bench):
    """The plan's scale columns give the UTCCPs a K step of the production kernel issues (read from its SASS)."""
    from gluon_overlap.timing.kernel_costs import shipped_mma_mix
    from gluon_overlap.tmem import make_plan

    for pair in bench.PAIRS:
        assert bench.copies_per_step(make_plan(*pair)) == shipped_mma_mix(*pair).scale_copies_per_k_step
    assert [bench.copies_per_step(make_plan(*pair)) for pair in bench.PAIRS] == [3, 3, 6, 12]


@pytest.mark.parametrize("pair", [("mxfp8", "mxfp8"), ("mxfp4", "mxfp4")])
def test_the_steady_k_step_compiles_to_the_kernels(bench, pair):
    """Cross-compiled for sm_100a: the steady mode's K step is the production kernel's (its MMAs and scale copies
    between two commits, read from the SASS); copying twice doubles the copies and nothing else."""
    from gluon_overlap.compiler.compile import cross_compile
    from gluon_overlap.timing.kernel_costs import count_mma_mix, shipped_mma_mix

    p, plan = bench.problem(*pair)
    c = torch.empty(256, 256, dtype=torch.float32, device="meta")
    log = torch.empty(2 * bench.LOG, dtype=torch.int64, device="meta")
    kernel_step = shipped_mma_mix(*pair)
    mixes = {}
    for mode in (0, 2):
        compiled = cross_compile(
            bench.scale_copy_kernel, bench.kernel_args(p, plan, c, log, 8, mode, True), num_ctas=2, num_warps=4
        )
        assert compiled.num_ctas == 2 and compiled.tmem_cols == 512
        assert "%clock64" in compiled.ptx and "%cluster_ctarank" in compiled.ptx
        mixes[mode] = count_mma_mix(compiled.sass, compiled.ptx, *pair, plan.block_k)
    assert mixes[0] == kernel_step
    assert mixes[2].mma_per_k_step == kernel_step.mma_per_k_step
    assert mixes[2].scale_copies_per_k_step == 2 * kernel_step.scale_copies_per_k_step


def test_the_figures_from_cycles_by_hand(bench):
    """Steady slopes over 8 and 72 steps, per-repetition means over 64: an FP4 step of 560 clk with its 6 copies
    adding 30 behind the MMAs and 72 a second time, 900 clk exposed at a cold start, copies alone 20 clk each."""
    short, long = bench.STEPS
    cycles = {
        "steady": {short: 1000 + 590 * short, long: 1000 + 590 * long},
        "steady, no copies": {short: 900 + 560 * short, long: 900 + 560 * long},
        "steady, copies twice": {short: 1000 + 662 * short, long: 1000 + 662 * long},
        "copies only": {short: 300 + 120 * short, long: 300 + 120 * long},
        "cold": {64: 64 * 1700},
        "cold, no copies": {64: 64 * 800},
    }
    got = bench.summarize(cycles, 6)
    assert got == pytest.approx(
        {
            "copies_per_step": 6,
            "mma_step_clk": 560,
            "kernel_step_clk": 590,
            "copies_behind_mmas_clk_per_step": 30,
            "second_copies_clk_per_step": 72,
            "cold_step_clk": 1700,
            "cold_copies_exposed_clk": 900,
            "copy_interval_idle_clk": 20,
        }
    )
    del cycles["cold"]
    with pytest.raises(ValueError, match="no 'cold' row"):
        bench.summarize(cycles, 6)


def test_the_lead_ctas_cycles(bench):
    rows = [[0, 100, 1100], [1, 100, 5000], [0, 0, 3000], [1, 0, 1], [0, 10, 2010]]
    assert bench.lead_cycles(rows) == 2000  # the median of the rank-0 rows: 1000, 3000, 2000
    with pytest.raises(ValueError, match="no lead CTA"):
        bench.lead_cycles([[1, 0, 5]])


@pytest.mark.parametrize(
    ("cap", "words"), [(None, "no CUDA GPU"), ((9, 0), "Hopper has no TMEM"), ((12, 0), "consumer Blackwell")]
)
def test_any_other_machine_is_refused_before_a_launch(bench, monkeypatch, cap, words):
    monkeypatch.setattr("gluon_overlap.device.capability", lambda device=None: cap)
    monkeypatch.setattr(bench, "measure", lambda *a: pytest.fail("measured"))
    with pytest.raises(SystemExit) as exit_info:
        bench.main([])
    message = str(exit_info.value.code)
    assert message.startswith("blackwell_scale_copy: ") and words in message and "--compile-only" in message


def test_a_blackwell_part_is_measured(bench, monkeypatch, tmp_path):
    monkeypatch.setattr("gluon_overlap.device.capability", lambda device=None: (10, 0))
    monkeypatch.setattr(bench, "measure", lambda *a: {"pairs": {}})
    out = tmp_path / "record.json"
    bench.main(["--out", str(out)])
    assert out.read_text().strip() == '{\n "pairs": {}\n}'
