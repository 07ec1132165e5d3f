"""Compare the CPU executor with the silicon recording, case by case.

    python tests/interp/silicon/compare.py [--recording data/silicon/h200.json] [--cases TEXT] [--json FILE]

prints one row per case (verdict, mismatching elements, the largest ulp distance, what differs) and a summary
per category, and exits 1 when any case fails. The rules (``compare_case``):

- ``exact``: every output byte equal, after the case's order-independent view (atomics); the executor must
  also finish without an error, a hazard or a deadlock (a report on a correct kernel is a false alarm);
- ``approx:<op>``: every element within the op's documented bound (``cases.APPROX``: the bound and its source)
  of the exact value of the same input, NaN / infinities / zeros (their signs too) exactly where the GPU has
  them; the ulp distance to the GPU is reported, not bounded;
- ``race``: the executor must report a race (a hazard naming one); the GPU's distinct outcomes are shown;
- ``trap``: the GPU stopped the kernel (a CUDA fault, recorded); the executor must stop it too, with an error
  or a hazard -- never a silent answer.

The executor runs each case in a worker process (``runner.run_cases``), so a crash (SIGFPE) or a hang is that
case's verdict, not the comparator's end."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))  # tests/interp: the silicon package

from silicon.cases import APPROX, CASES, Case, canonical, categories  # noqa: E402
from silicon.runner import run_cases, tensor_from_record  # noqa: E402

ROOT = HERE.parents[2]
RECORDING = ROOT / "data" / "silicon" / "h200.json"

PASSING = {"match", "within-bound", "race-reported", "trap-reported"}


@dataclass
class Verdict:
    """One case's comparison."""

    name: str
    category: str
    check: str
    status: str  # match | mismatch | within-bound | out-of-bound | race-reported | race-missed | error | crash |
    #              timeout | hazard | deadlock | stale | gpu-error | no-recording
    mismatches: int = 0
    total: int = 0
    max_ulp: float | None = None  # executor vs GPU, float outputs
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in PASSING


# =====================================================================================================
# bits, ulps
# =====================================================================================================
INT_OF_WIDTH = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}


def _width(dtype: torch.dtype) -> int:
    return torch.finfo(dtype).bits if dtype.is_floating_point else torch.iinfo(dtype).bits


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bits as a signed integer tensor of the same width."""
    return t.contiguous().view(INT_OF_WIDTH[_width(t.dtype)]).reshape(-1)


def ordered(t: torch.Tensor) -> torch.Tensor:
    """Float bits mapped to integers that count representable values (+0 and -0 both 0), as int64."""
    b = bits(t).to(torch.int64)
    w = _width(t.dtype)
    if w < 64:
        b = b & ((1 << w) - 1)
        sign = (b >> (w - 1)) & 1
        mag = b & ((1 << (w - 1)) - 1)
    else:
        sign = (b < 0).to(torch.int64)
        mag = b & (2**63 - 1)
    return torch.where(sign == 1, -mag, mag)


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|ordered(a) - ordered(b)| as float64 (inf where exactly one is NaN, 0 where both are)."""
    d = (ordered(a).double() - ordered(b).double()).abs()
    an, bn = torch.isnan(a.reshape(-1)), torch.isnan(b.reshape(-1))
    d = torch.where(an & bn, torch.zeros_like(d), d)
    return torch.where(an ^ bn, torch.full_like(d, math.inf), d)


def _describe(name: str, want: torch.Tensor, got: torch.Tensor, idx: torch.Tensor, limit: int = 3) -> str:
    parts = []
    w, g = want.reshape(-1), got.reshape(-1)
    mask = (1 << _width(want.dtype)) - 1
    wb, gb = bits(want), bits(got)
    for i in idx[:limit].tolist():
        wv, gv = w[i], g[i]
        if wv.dtype.is_floating_point:
            parts.append(
                f"{name}[{i}]: gpu {float(wv)!r} (0x{int(wb[i]) & mask:x}) "
                f"executor {float(gv)!r} (0x{int(gb[i]) & mask:x})"
            )
        elif wv.dtype in (torch.uint64, torch.uint32, torch.uint16):  # int() of a uint64 above 2^63 overflows
            parts.append(f"{name}[{i}]: gpu {int(wb[i]) & mask} executor {int(gb[i]) & mask}")
        else:
            parts.append(f"{name}[{i}]: gpu {int(wv)} executor {int(gv)}")
    return "; ".join(parts)


# =====================================================================================================
# the three checks
# =====================================================================================================
def compare_exact(want: dict[str, torch.Tensor], got: dict[str, torch.Tensor]) -> tuple[int, int, float | None, str]:
    """(mismatching elements, elements, largest ulp distance among float mismatches, first mismatches)."""
    mismatches = total = 0
    worst: float | None = None
    details = []
    nan_payload_only = True
    for key, w in want.items():
        g = got.get(key)
        if g is None or g.dtype != w.dtype or g.shape != w.shape:
            return (
                w.numel(),
                w.numel(),
                None,
                f"{key}: executor gave {None if g is None else (g.dtype, g.shape)}, GPU {w.dtype} {tuple(w.shape)}",
            )
        diff = (bits(w) != bits(g)).nonzero().reshape(-1)
        total += w.numel()
        if diff.numel() == 0:
            continue
        mismatches += diff.numel()
        if w.dtype.is_floating_point:
            d = ulp_distance(w.reshape(-1)[diff], g.reshape(-1)[diff])
            both_nan = torch.isnan(w.reshape(-1)[diff]) & torch.isnan(g.reshape(-1)[diff])
            nan_payload_only &= bool(both_nan.all())
            worst = max(worst or 0.0, float(d.max()))
        else:
            nan_payload_only = False
        details.append(_describe(key, w, g, diff))
    note = "; ".join(details)
    if mismatches and nan_payload_only:
        note = "only NaN bit patterns differ; " + note
    return mismatches, total, worst, note


def flush_subnormal(x: torch.Tensor) -> torch.Tensor:
    """float32 subnormals to a zero of the same sign (what .ftz does to inputs)."""
    tiny = x.abs() < 2.0**-126
    return torch.where(tiny & (x != 0), torch.copysign(torch.zeros_like(x), x), x)


def reference(op: str, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The exact value (float64) the op approximates, at the input the instruction sees."""
    spec = APPROX[op]
    if op == "truediv":
        return inputs["a"].double() / inputs["b"].double()
    x = inputs["x"]
    if spec["ftz"]:
        x = flush_subnormal(x)
    x = x.double()
    if op == "exp":
        t = (x * spec["prescale"]).float().double()  # RN(x * log2e_f32): an exact product, rounded once
        return torch.exp2(t)
    return {
        "sqrt": torch.sqrt,
        "rsqrt": torch.rsqrt,
        "exp2": torch.exp2,
        "log2": torch.log2,
        "log": torch.log,
        "sin": torch.sin,
        "cos": torch.cos,
    }[op](x)


def within_bound(op: str, value: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Elementwise: is the float32 ``value`` within APPROX[op]'s bound of the exact ``ref``? Non-finite and zero
    references need an exact class match (checked against the GPU separately); an .ftz op may also return a
    zero of the right sign where the correctly rounded result is subnormal."""
    spec = APPROX[op]
    v = value.reshape(-1).double()
    r = ref.reshape(-1)
    rounded = r.float()
    if "ulps" in spec:
        ok = ulp_distance(value.reshape(-1), rounded) <= spec["ulps"]
    else:
        ok = (v - r).abs() <= spec["rel"] * r.abs()
    if spec["ftz"]:
        ok |= (
            (rounded.abs() < 2.0**-126)
            & (value.reshape(-1) == 0)
            & (torch.signbit(value.reshape(-1)) == torch.signbit(rounded))
        )
    special = ~torch.isfinite(r) | (r == 0)
    return torch.where(special, torch.ones_like(ok), ok)


def special_class(t: torch.Tensor) -> torch.Tensor:
    """0 finite nonzero, 1 NaN, 2 +inf, 3 -inf, 4 +0, 5 -0."""
    t = t.reshape(-1)
    cls = torch.zeros(t.shape, dtype=torch.int64)
    cls[torch.isnan(t)] = 1
    cls[t == math.inf] = 2
    cls[t == -math.inf] = 3
    cls[(t == 0) & ~torch.signbit(t)] = 4
    cls[(t == 0) & torch.signbit(t)] = 5
    return cls


def compare_approx(
    op: str, want: torch.Tensor, got: torch.Tensor, inputs: dict[str, torch.Tensor]
) -> tuple[int, float, str]:
    """(elements out of bound or of another special class than the GPU's, max ulp executor vs GPU, detail)."""
    n = want.numel() if "x" not in inputs else inputs["x"].numel()
    if "a" in inputs:
        n = inputs["a"].numel()
    w, g = want.reshape(-1)[:n], got.reshape(-1)[:n]
    ref = reference(op, inputs)
    bad_bound = ~within_bound(op, g, ref)
    bad_class = (special_class(w) != special_class(g)) & ((special_class(w) != 0) | (special_class(g) != 0))
    bad = (bad_bound | bad_class).nonzero().reshape(-1)
    d = ulp_distance(w, g)
    finite = d[torch.isfinite(d)]
    detail = ""
    if bad.numel():
        i = int(bad[0])
        inp = {k: float(v.reshape(-1)[i]) for k, v in inputs.items()}
        detail = (
            f"{bad_bound.sum().item()} out of bound, {bad_class.sum().item()} special values differ; e.g. "
            f"input {inp}: exact {float(ref[i])!r}, gpu {float(w[i])!r}, executor {float(g[i])!r}"
        )
    return int(bad.numel()), float(finite.max()) if finite.numel() else 0.0, detail


def gpu_within_bound(c: Case, gpu: dict[str, Any]) -> tuple[int, str]:
    """The recording's own check: elements of the GPU's output outside the documented bound (0 when the
    stated bound holds on silicon)."""
    op = c.check.split(":", 1)[1]
    launch = c.build("cpu")
    out = tensor_from_record(gpu["outputs"]["out"])
    n = next(iter(launch.inputs.values())).numel()
    ref = reference(op, launch.inputs)
    bad = (~within_bound(op, out.reshape(-1)[:n], ref)).nonzero().reshape(-1)
    if not bad.numel():
        return 0, ""
    i = int(bad[0])
    return int(bad.numel()), (
        f"input {[float(v.reshape(-1)[i]) for v in launch.inputs.values()]}: exact "
        f"{float(ref[i])!r}, gpu {float(out.reshape(-1)[i])!r}"
    )


#: hazard kinds that name a race (the executor's are ``<space>-<access>-after-<access>``)
RACE_KIND = re.compile(r"race|(read|write)-after-(read|write)", re.IGNORECASE)


def _race_hazards(ex: dict[str, Any]) -> list[dict[str, str]]:
    return [h for h in ex.get("hazards", []) if RACE_KIND.search(h["kind"]) or RACE_KIND.search(h["text"])]


# =====================================================================================================
# one case, all cases
# =====================================================================================================
def compare_case(c: Case, gpu: dict[str, Any] | None, ex: dict[str, Any]) -> Verdict:
    v = Verdict(c.name, c.category, c.check, "match")
    if gpu is None:
        v.status, v.detail = "no-recording", "the recording has no such case (record it again)"
        return v
    if c.check == "trap":
        return _compare_trap(v, gpu, ex)
    for key in ("error", "crash", "timeout"):
        if gpu.get(key):
            v.status, v.detail = "gpu-error", f"the GPU run failed ({key}): {str(gpu[key])[:300]}"
            return v
    if "crash" in ex:
        v.status, v.detail = "crash", f"the executor's process died ({ex['crash']}): {ex.get('stderr', '')[-300:]}"
        return v
    if "timeout" in ex:
        v.status, v.detail = "timeout", f"no result within {ex['timeout']:.0f} s"
        return v
    if "outputs" not in ex:
        v.status, v.detail = "error", ex.get("error", "no outputs")
        return v
    if ex.get("inputs_sha256") != gpu.get("inputs_sha256"):
        v.status, v.detail = "stale", "the case's inputs changed since the recording (record it again)"
        return v
    if c.check == "race":
        v.extra = {"gpu_launches": gpu.get("launches"), "gpu_distinct_outcomes": gpu.get("distinct")}
        races = _race_hazards(ex)
        if races:
            v.status, v.detail = "race-reported", races[0]["text"][:300]
        else:
            v.status = "error" if ex.get("error") else "race-missed"
            v.detail = (
                (ex.get("error") or "") + f" (the GPU gave {gpu.get('distinct')} different results in "
                f"{gpu.get('launches')} launches; the executor reported no race)"
            )
        return v
    problems = []
    if ex.get("error"):
        problems.append(("error", ex["error"]))
    if ex.get("deadlock"):
        problems.append(("deadlock", ex["deadlock"]))
    if ex.get("hazards"):
        problems.append(("hazard", "; ".join(h["text"] for h in ex["hazards"][:2])))
    if ex.get("step_limit_hit"):
        problems.append(("error", "step limit hit"))
    want = {k: tensor_from_record(r) for k, r in gpu["outputs"].items()}
    if not gpu.get("outputs_canonical"):
        want = canonical(c, want)
    got = canonical(c, {k: tensor_from_record(r) for k, r in ex["outputs"].items()})
    if c.check.startswith("approx:"):
        op = c.check.split(":", 1)[1]
        launch = c.build("cpu")
        bad, worst, detail = compare_approx(op, want["out"], got["out"], launch.inputs)
        v.mismatches, v.total, v.max_ulp, v.detail = bad, next(iter(launch.inputs.values())).numel(), worst, detail
        v.status = "within-bound" if not bad else "out-of-bound"
    else:
        v.mismatches, v.total, v.max_ulp, v.detail = compare_exact(want, got)
        v.status = "match" if not v.mismatches else "mismatch"
    if problems:
        v.status = problems[0][0]
        if v.status == "error":  # the kernel stopped: its outputs are partial, not a comparison
            v.mismatches, v.total, v.max_ulp = 0, 0, None
        v.detail = "; ".join(f"{k}: {t[:300]}" for k, t in problems) + (f" | outputs: {v.detail}" if v.detail else "")
    if ex.get("options_not_taken"):
        v.extra["options_not_taken"] = ex["options_not_taken"]
    if gpu.get("repeat_identical") is False:
        v.extra["gpu_repeat_differed"] = True
    return v


def _compare_trap(v: Verdict, gpu: dict[str, Any], ex: dict[str, Any]) -> Verdict:
    """The GPU faulted on this kernel: the executor must say so (an error or a hazard), not answer."""
    if not gpu.get("error"):
        v.status, v.detail = "gpu-no-trap", "the recording shows the GPU ran this kernel (record it again)"
    elif "crash" in ex or "timeout" in ex:
        v.status = "crash" if "crash" in ex else "timeout"
        v.detail = f"the executor's process died ({ex.get('crash', 'timeout')})"
    elif ex.get("error") or ex.get("hazards"):
        v.status = "trap-reported"
        v.detail = (ex.get("error") or ex["hazards"][0]["text"])[:300]
    else:
        v.status = "trap-missed"
        v.detail = (
            f"the GPU stopped with '{gpu['error'].splitlines()[0][:120]}'; the executor ran it to the end "
            "without an error or a hazard"
        )
    return v


def load_recording(path: Path = RECORDING) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def compare_all(
    recording: dict[str, Any], names: list[str] | None = None, jobs: int = 1, case_timeout: float = 300.0
) -> list[Verdict]:
    """Run the cases on the executor (worker processes) and compare each with the recording."""
    chosen = [c for c in CASES if names is None or c.name in names]
    results = run_cases([c.name for c in chosen], "executor", jobs=jobs, case_timeout=case_timeout)
    return [
        compare_case(c, recording["cases"].get(c.name), results.get(c.name, {"crash": "no result"})) for c in chosen
    ]


# =====================================================================================================
# the table
# =====================================================================================================
def _fmt_ulp(u: float | None) -> str:
    if u is None:
        return "-"
    return "inf" if math.isinf(u) else f"{u:.0f}"


def table(verdicts: list[Verdict], width: int = 110) -> str:
    rows = [f"{'case':58} {'category':9} {'verdict':13} {'differ':>12} {'max ulp':>8}  detail"]
    for v in verdicts:
        differ = f"{v.mismatches}/{v.total}" if v.total else "-"
        rows.append(
            f"{v.name:58} {v.category:9} {v.status:13} {differ:>12} {_fmt_ulp(v.max_ulp):>8}  {v.detail[:width]}"
        )
    rows.append("")
    rows.append(summary(verdicts))
    return "\n".join(rows)


def summary(verdicts: list[Verdict]) -> str:
    rows = [f"{'category':10} {'pass':>9}  {'failing verdicts':40}  worst case"]
    for cat in categories():
        vs = [v for v in verdicts if v.category == cat]
        if not vs:
            continue
        failing = [v for v in vs if not v.ok]
        kinds: dict[str, int] = {}
        for v in failing:
            kinds[v.status] = kinds.get(v.status, 0) + 1
        worst = max(
            failing,
            key=lambda v: (v.status in ("crash", "timeout"), v.mismatches / max(v.total, 1), v.max_ulp or 0),
            default=None,
        )
        worst_text = (
            "-"
            if worst is None
            else (f"{worst.name} ({worst.status}, {worst.mismatches}/{worst.total}, max ulp {_fmt_ulp(worst.max_ulp)})")
        )
        rows.append(
            f"{cat:10} {len(vs) - len(failing):>4}/{len(vs):<4}  "
            f"{', '.join(f'{k} {n}' for k, n in sorted(kinds.items())) or '-':40}  {worst_text}"
        )
    passed = sum(v.ok for v in verdicts)
    rows.append(f"{'all':10} {passed:>4}/{len(verdicts):<4}")
    return "\n".join(rows)


#: what each category's cases exercise (the docs table's words)
CATEGORY_NOTES = {
    "memory": "masked loads with `other`, masked stores, broadcasting, mixed-type promotion",
    "int": "wrapping + - *, truncating // and %, shifts, bitwise ops, unsigned comparisons, umulhi, min / max",
    "int-ub": "INT_MIN // -1, x // 0, x % 0 and shift counts past the width, every width",
    "float": "IEEE + - * (every exponent, NaN bits), div_rn, sqrt_rn, float64 / and sqrt, floor / ceil (ftz), "
    "gl.fma and x * y + z with fp fusion on and off, clamp",
    "minmax": "maximum / minimum (and propagate_nan=ALL) with NaN and signed zeros, max / min reductions",
    "reduce": "sums in the compiled order and precision over 1-D and 2-D layouts (float16 partials), integer "
    "reductions, xor_sum, cumsum",
    "approx": "x / y, sqrt, rsqrt, exp2, exp, log2, log, sin, cos: within PTX's stated bound",
    "cast": "every narrowing and widening conversion: fp8 saturation, rtz, float -> int saturation, NaN codes, "
    "bitcasts",
    "layout": "convert_layout, join / split, permute / reshape (functions and tensor methods)",
    "atomic": "atomic_add / max / min / and / or / xor / xchg / cas across 64 programs, a scalar ticket",
    "race": "two programs writing the same addresses unordered: the executor must report the race",
    "tma": "TMA zero fill and clipping, NaN padding, descriptor types, stores at negative coordinates (a trap)",
    "ws": "warp-specialized rings, arrive counts",
    "cp.async": "cp.async copies, commit / wait groups, mbarrier arrival",
    "cluster": "2-CTA clusters: a scalar and a CTA-copied block stored and atomically counted by both CTAs (once "
    "per cluster), and the old value a scalar atomic_add returns to each CTA",
}


def summary_record(verdicts: list[Verdict], recording: dict[str, Any]) -> dict[str, Any]:
    """The comparison per category and per approximate op, for the docs table (``--summary``; written by
    ``python -m gluon_overlap.regenerate silicon`` to ``data/silicon/executor.json``)."""
    prov = recording.get("provenance", {})
    cats = []
    for cat in categories():
        vs = [v for v in verdicts if v.category == cat]
        if not vs:
            continue
        failing = [v for v in vs if not v.ok]
        cats.append(
            {
                "category": cat,
                "cases": len(vs),
                "passed": len(vs) - len(failing),
                "checks": CATEGORY_NOTES.get(cat, ""),
                "failing": [f"{v.name} ({v.status})" for v in failing],
            }
        )
    approx = []
    for v in verdicts:
        if v.check.startswith("approx:"):
            op = v.check.split(":", 1)[1]
            spec = APPROX[op]
            approx.append(
                {
                    "op": op,
                    "compiled_to": spec["ptx"],
                    "bound": spec["bound"],
                    "source": spec["source"],
                    "verdict": v.status,
                    "max_ulp_to_gpu": v.max_ulp,
                }
            )
    return {
        "about": "the CPU executor against data/silicon/h200.json, per category: python -m "
        "gluon_overlap.regenerate silicon (tests/interp/silicon/compare.py --summary)",
        "recording": {k: prov.get(k) for k in ("gpu", "compute_capability", "triton", "driver", "date_utc")},
        "cases": len(verdicts),
        "passed": sum(v.ok for v in verdicts),
        "categories": cats,
        "approx": approx,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recording", type=Path, default=RECORDING)
    parser.add_argument("--cases", default="", help="only cases whose name contains this text")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the verdicts here")
    parser.add_argument("--summary", type=Path, help="also write the per-category summary (the docs table) here")
    args = parser.parse_args(argv)
    if not args.recording.exists():
        print(f"compare.py: no recording at {args.recording}", file=sys.stderr)
        return 2
    recording = load_recording(args.recording)
    names = [c.name for c in CASES if args.cases in c.name]
    verdicts = compare_all(recording, names, jobs=args.jobs)
    print(table(verdicts))
    if args.json:
        args.json.write_text(json.dumps([asdict(v) | {"ok": v.ok} for v in verdicts], indent=1) + "\n")
    if args.summary:
        args.summary.write_text(json.dumps(summary_record(verdicts, recording), indent=1) + "\n")
    return 0 if all(v.ok for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
