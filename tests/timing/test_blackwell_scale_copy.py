"""The Blackwell scale-copy measurement (benchmarks/blackwell_scale_copy.py), prepared for a part this project has
not been lent: every mode runs on this project's CPU executor and leaves the accumulator its MMAs must make, its
steady K step compiles to the production kernel's, its clock reads bracket exactly the work they time, and its host
side derives the figures by hand, stops on a wrong C or an unwritten log and refuses any other GPU before launching."""

from __future__ import annotations

import re
from collections import Counter

import benchmark_scripts  # tests/support is on sys.path (tests/conftest.py)
import pytest
import torch

pytest.importorskip("triton")

PAIRS = [("mxfp8", "mxfp8"), ("mxfp8", "mxfp4"), ("mxfp4", "mxfp4"), ("nvfp4", "nvfp4")]


@pytest.fixture(scope="module")
def bench():
    return benchmark_scripts.load("blackwell_scale_copy")


def _relative(c: torch.Tensor, want: torch.Tensor) -> float:
    return float(((c.double() - want).abs() / want.abs().clamp_min(1.0)).max())


def _steps(mode: int) -> int:
    """More steps than the commit ring's 5 for the steady modes (its reuse waits run); a multiple of 4 for copies only
    (an even count: its last copy brings stage 1's scales, not the stage 0 the slots would hold without copies)."""
    return {0: 7, 1: 7, 2: 7, 3: 3, 4: 3, 5: 4}[mode]


def _lead_ops(bench, mode: int, steps: int) -> dict[str, int]:
    """The lead CTA's issuing warp as the executor records it: a scale copy is one per operand (A, B); every MMA
    carries its commit; the done and accumulator commits close each mode; it waits for the loads, the copies made
    once, the commit ring's reuse (steady modes) or every repetition (cold modes), and the done commit."""
    copies = {0: 2 * steps, 1: 2, 2: 4 * steps, 3: 2 * steps, 4: 2, 5: 2 * steps}[mode]
    mmas = 1 if mode == 5 else steps
    setup = 1 if mode in (1, 4) else 0
    in_loop = max(0, steps - bench.RING) if mode <= 2 else steps if mode <= 4 else 0
    return {"scale_copy": copies, "mma": mmas, "commit": mmas + setup + 2, "wait": 1 + setup + in_loop + 1}


@pytest.mark.parametrize("pair", PAIRS)
def test_every_mode_runs_clean_and_makes_its_mmas_sum(bench, pair):
    """Each mode on the executor (both CTAs, both partitions): no race, no deadlock, the operations and waits the mode
    promises, and C is the float64 sum of the MMAs it issues -- which for the modes that copy every step differs from
    what the same MMAs give with the scales copied once, so a copy that did not land (or landed late) would fail."""
    from gluon_overlap.interp.launch import launch

    p, plan = bench.problem(*pair)
    for mode, name in bench.MODES.items():
        steps = _steps(mode)
        c = torch.full((256, 256), float("nan"), dtype=torch.float32)
        log = torch.full((bench.LOG,), -1, dtype=torch.int64)
        result = launch(bench.scale_copy_kernel, (1,), bench.kernel_args(p, plan, c, log, steps, mode, False))
        assert result.ok, (name, result.error, result.deadlock, result.hazards[:1])
        issuer = [op for op in result.trace if op.cta == 0 and op.partition == "_issue"]
        ops = Counter(op.kind for op in issuer if op.kind in ("scale_copy", "mma", "commit", "wait"))
        assert ops == _lead_ops(bench, mode, steps), name
        want = bench.expected(p, plan, mode, steps)
        assert _relative(c, want) < bench.C_TOLERANCE, name
        if mode in (0, 2, 3, 5):  # scales copied each step: stage 1's reach the odd steps (the last, for copies only)
            once = {0: 1, 2: 1, 3: 4}.get(mode)
            other = (
                bench.expected(p, plan, once, steps) if once is not None else bench.expected(p, plan, 5, 2 * steps - 1)
            )
            assert _relative(other, want) > 1e-2, name
        assert (log == -1).all()  # untimed: nothing logged


def test_bad_arguments_are_refused(bench):
    p, plan = bench.problem("mxfp8", "mxfp8")
    c = torch.zeros(256, 256)
    log = torch.zeros(bench.LOG, dtype=torch.int64)
    with pytest.raises(ValueError, match="must be one of"):
        bench.expected(p, plan, 6, 3)
    with pytest.raises(ValueError, match="must be one of"):
        bench.kernel_args(p, plan, c, log, 3, 7, False)
    for mode, steps in ((0, 0), (3, -1), (5, 6), (0, 2.0)):
        with pytest.raises(ValueError, match="must be a positive int"):
            bench.kernel_args(p, plan, c, log, steps, mode, False)


def test_copies_per_step_are_the_compiled_kernels(bench):
    """The model's count of a K step's scale copies is what the production kernel's SASS issues, for every pair."""
    from gluon_overlap.timing.kernel_costs import shipped_mma_mix
    from gluon_overlap.tmem import make_plan

    counts = [bench.scale_copy_chunks(make_plan(*pair)) for pair in bench.PAIRS]
    assert counts == [shipped_mma_mix(*pair).scale_copies_per_k_step for pair in bench.PAIRS] == [3, 3, 6, 12]


def _compile(bench, pair, mode):
    from gluon_overlap.compiler.compile import cross_compile

    p, plan = bench.problem(*pair)
    c = torch.empty(256, 256, dtype=torch.float32, device="meta")
    log = torch.empty(bench.LOG, dtype=torch.int64, device="meta")
    args = bench.kernel_args(p, plan, c, log, 8, mode, True)
    return cross_compile(bench.scale_copy_kernel, args, num_ctas=2, num_warps=4), plan


@pytest.mark.parametrize("pair", [("mxfp8", "mxfp8"), ("mxfp4", "mxfp4")])
def test_the_steady_k_step_compiles_to_the_kernels(bench, pair):
    """Cross-compiled for sm_100a: the steady mode's K step is the production kernel's (its MMAs and scale copies
    between two commits, read from the SASS); copying twice doubles the copies and nothing else."""
    from gluon_overlap.timing.kernel_costs import count_mma_mix, shipped_mma_mix

    kernel_step = shipped_mma_mix(*pair)
    mixes = {}
    for mode in (0, 2):
        compiled, plan = _compile(bench, pair, mode)
        assert compiled.num_ctas == 2 and compiled.tmem_cols == 512
        mixes[mode] = count_mma_mix(compiled.sass, compiled.ptx, *pair, plan.block_k)
    assert mixes[0] == kernel_step
    assert mixes[2].mma_per_k_step == kernel_step.mma_per_k_step
    assert mixes[2].scale_copies_per_k_step == 2 * kernel_step.scale_copies_per_k_step


_ASYNC = re.compile(r"\b(UTMALDG|UTCCP|UTC\w*MMA|UTCBAR)\b")
_WAIT = re.compile(r"\bSYNCS\.PHASECHK")
_CLOCK = re.compile(r"\bSR_CLOCK")
_TIMED_WORK = re.compile(r"\b(UTCCP|UTC\w*MMA)\b")


def _instructions(sass: str) -> list[str]:
    return [line.split("*/", 1)[1] for line in sass.splitlines() if re.match(r"\s*/\*[0-9a-f]{4}\*/", line)]


@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4, 5])
def test_the_two_clock_reads_bracket_the_timed_work(bench, mode):
    """In the issuing warp's SASS: everything asynchronous issued before the first clock read (the loads, the scale
    copies made once) has been waited for by then; the timed copies and MMAs come after it; the last asynchronous
    operation before the second read is a commit, waited for, with no copy or MMA after it -- so the reads bracket
    exactly the work the mode times, and the issuing warp meets no thread barrier (the production MMA warp's form)."""
    compiled, _plan = _compile(bench, ("mxfp8", "mxfp8"), mode)
    ins = _instructions(compiled.sass)
    clocks = [i for i, text in enumerate(ins) if _CLOCK.search(text)]
    assert len(clocks) == 2
    first, second = clocks
    issuer = next(i for i, text in enumerate(ins) if "UTMALDG" in text)  # the issuing warp's code starts with its loads
    before = [i for i in range(issuer, first) if _ASYNC.search(ins[i])]
    assert before and any(_WAIT.search(ins[i]) for i in range(before[-1], first))
    assert any(_TIMED_WORK.search(ins[i]) for i in range(first, second))
    last = max(i for i in range(first, second) if _ASYNC.search(ins[i]))
    assert "UTCBAR" in ins[last] and any(_WAIT.search(ins[i]) for i in range(last, second))
    assert not any("BAR.SYNC" in ins[i] for i in range(issuer, second))


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
    rows = [[3, 100, 1100], [5, 0, 3000], [7, 10, 2010]]
    assert bench.lead_cycles(rows) == 2000  # the median of 1000, 3000, 2000
    with pytest.raises(ValueError, match="cluster 1 wrote no log row"):
        bench.lead_cycles([[3, 0, 5], [-1, -1, -1]])
    with pytest.raises(ValueError, match="no row"):
        bench.lead_cycles([])


def _fake_launcher(bench, wrong_c: bool = False):
    """A launcher that does on the CPU what the kernel promises: C as its MMAs sum it, and a row per cluster whose
    cycles follow a known law per mode -- fill and drain plus a per-step cost."""
    per_step = {0: 590, 1: 560, 2: 662, 3: 1700, 4: 800, 5: 120}
    fixed = {0: 1000, 1: 900, 2: 1000, 3: 0, 4: 0, 5: 300}
    launches = []

    def launch(args: tuple, clusters: int) -> list[list[int]]:
        c_desc, log, steps, plan, mode = args[2], args[5], args[6], args[7], args[8]
        launches.append((plan.a_format, plan.b_format, mode, steps, clusters))
        c = c_desc.base
        c.copy_(bench.expected(launch.problem[(plan.a_format, plan.b_format)], plan, mode, steps))
        if wrong_c:
            c[0, 0] += 1e3
        rows = [[2 * k, 0, fixed[mode] + per_step[mode] * steps + k % 2] for k in range(clusters)]
        log.copy_(torch.tensor(rows, dtype=torch.int64).view(-1))
        return rows

    launch.problem = {pair: bench.problem(*pair)[0] for pair in bench.PAIRS}
    return launch, launches


def test_a_whole_measurement_on_a_stand_in_launcher(bench):
    """``measure`` end to end with the GPU replaced by a launcher that keeps the kernel's promises: every pair, mode,
    step count and placement launched, the figures the known cycle law gives, C checked; a wrong C stops it."""
    launch, launches = _fake_launcher(bench)
    record = bench.measure((("mxfp4", "mxfp4"),), device="cpu", name="stand-in", sms=8, launch=launch)
    assert record["device"] == "stand-in" and record["sms"] == 8
    per_placement = 4 * 2 + 2  # the steady modes at two step counts, the cold ones at one
    assert len(launches) == 2 * per_placement * (1 + bench.REPEATS)
    assert {clusters for *_, clusters in launches} == {1, 4}
    row = record["pairs"]["mxfp4 x mxfp4"]
    assert row["copies_per_step"] == 6
    for where, clusters in (("one cluster", 1), ("every SM", 4)):
        got = row[where]
        assert got["lead_sms"] == clusters and got["worst_c_error"] < bench.C_TOLERANCE
        assert got["mma_step_clk"] == 560 and got["copies_behind_mmas_clk_per_step"] == 30
        assert got["second_copies_clk_per_step"] == 72 and got["copy_interval_idle_clk"] == 20
        assert got["cold_copies_exposed_clk"] == pytest.approx(900, abs=1)
    broken, _ = _fake_launcher(bench, wrong_c=True)
    with pytest.raises(RuntimeError, match="off the sum of its MMAs"):
        bench.measure((("mxfp8", "mxfp8"),), device="cpu", name="stand-in", sms=2, launch=broken)


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
