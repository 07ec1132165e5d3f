"""The CPU executor against real silicon: every case of ``tests/interp/silicon/cases.py`` was run on an H200
(sm_90a, Triton 3.9.0; ``data/silicon/h200.json``, how in ``data/silicon/README.md``), and here runs on the
executor and is compared with that recording -- bit for bit for exact operations, within the documented error
bound for approximate ones, and a planted race must be reported. Nothing is skipped: a case the executor gets
wrong fails until the executor is fixed (or the recording is made again, for a changed case).

Also checked: the recording covers every case with today's inputs and says how it was measured; the GPU's own
values of the approximate operations obey the bounds the comparator holds the executor to; the GPU repeated
itself on every case but the races, which varied; each kernel compiles for sm_100a."""

from __future__ import annotations

import math

import pytest
import torch
from silicon import cases as C  # tests/interp is on sys.path (this file's folder)
from silicon import compare, compiling
from silicon.runner import inputs_fingerprint, tensor_record

RECORDING = compare.load_recording()
NAMES = [c.name for c in C.CASES]


@pytest.fixture(scope="module")
def verdicts() -> dict[str, compare.Verdict]:
    """Every case on the executor, in two worker processes (a crash or hang is that case's verdict)."""
    return {v.name: v for v in compare.compare_all(RECORDING, jobs=2, case_timeout=300)}


@pytest.mark.parametrize("name", NAMES)
def test_executor_agrees_with_silicon(verdicts, name):
    v = verdicts[name]
    assert v.ok, f"{v.status} ({v.mismatches}/{v.total} differ, max ulp {v.max_ulp}): {v.detail}"


def test_the_docs_table_shows_this_comparison(verdicts):
    """data/silicon/executor.json (docs/GLUON_API.md's silicon table) is what the comparison gives today."""
    import json
    from pathlib import Path

    shipped = json.loads((Path(compare.ROOT) / "data" / "silicon" / "executor.json").read_text())
    now = json.loads(json.dumps(compare.summary_record([verdicts[n] for n in NAMES], RECORDING)))
    assert shipped == now, "run: python -m gluon_overlap.regenerate silicon gluon-api"


# =====================================================================================================
# the recording itself
# =====================================================================================================
def test_the_recording_has_every_case_with_todays_inputs():
    missing = [n for n in NAMES if n not in RECORDING["cases"]]
    assert not missing, f"not recorded: {missing}"
    extra = sorted(set(RECORDING["cases"]) - set(NAMES))
    assert not extra, f"recorded cases that no longer exist: {extra}"
    stale = [
        c.name
        for c in C.CASES
        if RECORDING["cases"][c.name].get("inputs_sha256") != inputs_fingerprint(c.build("cpu").args)
    ]
    assert not stale, f"inputs changed since the recording: {stale}"


def test_the_recording_is_of_todays_kernels_and_launches():
    from silicon.record import kernels_sha256

    assert RECORDING["provenance"]["kernels_sha256"] == kernels_sha256(), "kernels.py changed: record it again"
    changed = [
        c.name
        for c in C.CASES
        if (lambda r: (r["grid"], r["num_warps"], r["options"], r["canon"]))(RECORDING["cases"][c.name])
        != (list(c.grid), c.num_warps, dict(c.options), c.canon)
    ]
    assert not changed, f"launched otherwise than recorded: {changed}"


def test_the_recording_says_how_it_was_measured():
    p = RECORDING["provenance"]
    assert p["device"] == "cuda"
    assert "H200" in p["gpu"] and p["compute_capability"] == "9.0"
    assert p["triton"] == "3.9.0"
    assert p["TRITON_DEFAULT_FP_FUSION"] == "1"
    for key in ("driver", "cuda_runtime", "torch", "date_utc", "command", "ptxas"):
        assert p.get(key) and "unavailable" not in str(p[key]), key


TRAPS = {c.name for c in C.CASES if c.check == "trap"}


def test_every_gpu_run_succeeded_and_repeated_itself():
    runs = {n: r for n, r in RECORDING["cases"].items() if n not in TRAPS}
    failed = {
        n: r.get("error") or r.get("crash") or r.get("timeout")
        for n, r in runs.items()
        if r.get("error") or r.get("crash") or r.get("timeout")
    }
    assert not failed, failed
    varied = [n for n, r in runs.items() if r["check"] != "race" and not r["repeat_identical"]]
    assert not varied, f"not deterministic on the GPU: {varied}"


@pytest.mark.parametrize("name", sorted(TRAPS))
def test_the_trap_cases_faulted_on_silicon(name):
    assert "illegal instruction" in RECORDING["cases"][name].get("error", ""), RECORDING["cases"][name]


@pytest.mark.parametrize("name", [c.name for c in C.CASES if c.check == "race"])
def test_the_planted_races_varied_on_silicon(name):
    r = RECORDING["cases"][name]
    assert r["launches"] >= 20 and r["distinct"] >= 2, (r["launches"], r["distinct"])


@pytest.mark.parametrize("name", [c.name for c in C.CASES if c.check.startswith("approx:")])
def test_the_gpu_obeys_the_stated_bound(name):
    """The bound the executor is held to holds on silicon (else the bound, not the executor, is wrong)."""
    bad, detail = compare.gpu_within_bound(C.case(name), RECORDING["cases"][name])
    assert bad == 0, f"{bad} GPU values outside {C.APPROX[name.split('_')[1]]['bound']}: {detail}"


# =====================================================================================================
# the comparator's own rules, on made-up results (a check that says NO must fail)
# =====================================================================================================
def _results(c: C.Case, gpu_outputs: dict[str, torch.Tensor], **extra) -> tuple[dict, dict]:
    fp = inputs_fingerprint(c.build("cpu").args)
    recs = {k: tensor_record(t) for k, t in gpu_outputs.items()}
    return (
        {"inputs_sha256": fp, "outputs": recs, "repeat_identical": True, "outputs_canonical": False},
        {"inputs_sha256": fp, **extra},
    )


def test_the_comparator_counts_a_one_bit_difference_and_its_ulps():
    c = C.case("float_add_f32_all_exponents")
    want = torch.tensor([1.0, 2.0, -3.0])
    got = want.clone()
    got.view(torch.int32)[1] += 1
    gpu, ex = _results(c, {"out": want})
    ex["outputs"] = {"out": tensor_record(got)}
    v = compare.compare_case(c, gpu, ex)
    assert (v.status, v.mismatches, v.total, v.max_ulp) == ("mismatch", 1, 3, 1.0)
    ex["outputs"] = {"out": tensor_record(want.clone())}
    assert compare.compare_case(c, gpu, ex).status == "match"


def test_a_nan_payload_difference_is_a_mismatch_named_as_such():
    c = C.case("float_add_f32_all_exponents")
    want = torch.tensor([math.nan, 1.0])
    got = want.clone()
    got.view(torch.int32)[0] = 0x7FFFFFFF
    gpu, ex = _results(c, {"out": want})
    ex["outputs"] = {"out": tensor_record(got)}
    v = compare.compare_case(c, gpu, ex)
    assert v.status == "mismatch" and v.detail.startswith("only NaN bit patterns differ")


def test_an_approximate_result_passes_within_its_bound_and_fails_outside():
    c = C.case("approx_exp2_f32")
    x = c.build("cpu").inputs["x"]
    exact = compare.reference("exp2", {"x": x}).float()
    finite = torch.isfinite(exact) & (exact.abs() > 2.0**-126)
    gpu, ex = _results(c, {"out": exact})
    for shift, status in ((2, "within-bound"), (3, "out-of-bound")):
        got = exact.clone()
        got.view(torch.int32)[finite] += shift
        ex["outputs"] = {"out": tensor_record(got)}
        assert compare.compare_case(c, gpu, ex).status == status, shift


def test_a_race_must_be_reported_and_a_hazard_on_a_correct_kernel_fails():
    race = C.case("race_last_writer_wins")
    gpu, ex = _results(race, {"out": torch.zeros(256, dtype=torch.int32)}, outputs={}, hazards=[])
    gpu.update(launches=50, distinct=50)
    assert compare.compare_case(race, gpu, ex).status == "race-missed"
    ex["hazards"] = [{"kind": "global-race", "text": "global-race: two programs store out[0]"}]
    assert compare.compare_case(race, gpu, ex).status == "race-reported"
    plain = C.case("int_add_i32_wrap")
    out = torch.arange(4, dtype=torch.int32)
    gpu, ex = _results(
        plain,
        {"out": out},
        outputs={"out": tensor_record(out)},
        hazards=[{"kind": "global-out-of-bounds", "text": "a false alarm"}],
    )
    assert compare.compare_case(plain, gpu, ex).status == "hazard"


def test_a_crash_and_a_stale_recording_are_verdicts_of_their_own():
    c = C.case("int_add_i32_wrap")
    gpu, _ = _results(c, {"out": torch.zeros(1, dtype=torch.int32)})
    assert compare.compare_case(c, gpu, {"crash": "SIGFPE", "stderr": ""}).status == "crash"
    assert compare.compare_case(c, gpu, {"timeout": 300.0}).status == "timeout"
    assert compare.compare_case(c, gpu, {"inputs_sha256": "0" * 64, "outputs": {}}).status == "stale"


# =====================================================================================================
# every kernel compiles for Blackwell too
# =====================================================================================================
DISTINCT = compiling.distinct_cases()


@pytest.fixture(scope="module")
def sm100() -> dict[str, object]:
    out: dict[str, object] = {}
    for c in DISTINCT:
        try:
            out[c.name] = compiling.compile_case(c, 100)
        except Exception as exc:  # noqa: BLE001  (reported per case)
            out[c.name] = exc
    return out


@pytest.mark.parametrize("name", [c.name for c in DISTINCT])
def test_the_kernel_compiles_for_sm100a(sm100, name):
    result = sm100[name]
    assert not isinstance(result, Exception), f"{type(result).__name__}: {str(result)[-1500:]}"
    assert ".target sm_100a" in result.asm["ptx"]
