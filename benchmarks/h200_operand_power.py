"""Does a dense FP8 GEMM's sustained speed depend on the *values* of its operands? (an H200, sm_90)

The B300 rows disagree with one clock: mxfp8 x mxfp4 (the same ``kind::mxf8f6f4`` MMA as mxfp8 x mxfp8, its fp4
operand padded to a byte) runs 17 % faster than mxfp8 x mxfp8 with the overlap off at K = 8192 and equals it at
K = 512 (docs/NOTES.md).  A power-limited clock that depends on the operands would do that.  Hopper cannot run the
Blackwell kinds, but it can answer the question behind it: with the *same instruction* (cuBLAS's FP8 e4m3 GEMM via
``torch._scaled_mm``), does a B operand that holds only FP4 (e2m1) values -- the values a padded fp4 operand holds,
here as e4m3 encodings -- let the GPU run a sustained GEMM faster or at a higher clock than random e4m3 values?

Each operand set runs back to back for ``--seconds`` (the GPU reaches its power limit within about a second), timed
in windows of ``--window`` seconds with CUDA events; ``nvidia-smi`` samples the SM clock and the power draw every
100 ms meanwhile (its ``power.draw`` is itself an average over about a second; the clock moves in 15 MHz steps).
The sets run in order, then in reverse order (a warming GPU would favour the first), with ``--rest`` idle seconds
before each.  The steady state is the second half of each run.

Run on the device (needs only PyTorch with CUDA): ``python3 benchmarks/h200_operand_power.py --out result.json``
(without ``--out`` the JSON goes to stdout; without a GPU it says so and does nothing).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import threading
import time

import torch

E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)  # every value an fp4 (e2m1) element can hold, but sign


def random_e4m3(shape: tuple[int, int], gen: torch.Generator) -> torch.Tensor:
    """Normal values cast to e4m3: every exponent and mantissa bit in use."""
    return torch.randn(shape, device="cuda", generator=gen).to(torch.float8_e4m3fn)


def e2m1_valued(shape: tuple[int, int], gen: torch.Generator) -> torch.Tensor:
    """Uniformly drawn e2m1 values (with a random sign) held in e4m3: the values of a padded fp4 operand."""
    mags = torch.tensor(E2M1_MAGNITUDES, device="cuda")
    idx = torch.randint(0, len(E2M1_MAGNITUDES), shape, device="cuda", generator=gen)
    sign = torch.randint(0, 2, shape, device="cuda", generator=gen) * 2 - 1
    return (mags[idx] * sign).to(torch.float8_e4m3fn)


def zeros(shape: tuple[int, int], gen: torch.Generator) -> torch.Tensor:
    return torch.zeros(shape, device="cuda").to(torch.float8_e4m3fn)


SETS = {
    "e4m3 x e4m3": (random_e4m3, random_e4m3),
    "e4m3 x e2m1-valued": (random_e4m3, e2m1_valued),
    "e2m1-valued x e2m1-valued": (e2m1_valued, e2m1_valued),
    "zeros x zeros": (zeros, zeros),
}


class Sampler:
    """``nvidia-smi`` every 100 ms: (seconds since start, SM clock MHz, power W, temperature C)."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, float, float, float]] = []
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [
                "nvidia-smi",
                "--query-gpu=clocks.sm,power.draw,temperature.gpu",
                "--format=csv,noheader,nounits",
                "-lms",
                "100",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                clk, pw, temp = (float(v) for v in line.strip().split(","))
            except ValueError:
                continue
            self.rows.append((time.perf_counter() - self.t0, clk, pw, temp))

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def between(self, t0: float, t1: float) -> list[tuple[float, float, float, float]]:
        return [r for r in self.rows if t0 <= r[0] <= t1]

    def stop(self) -> None:
        self.proc.terminate()


def run_set(name: str, n: int, seconds: float, window: float, sampler: Sampler, seed: int) -> dict:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    make_a, make_b = SETS[name]
    a = make_a((n, n), gen)
    b = make_b((n, n), gen)  # N x K, row-major: b.t() is the column-major K x N operand cuBLAS wants
    one = torch.tensor(1.0, device="cuda")
    flops = 2 * n**3

    def gemm() -> torch.Tensor:
        return torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    for _ in range(3):
        gemm()
    torch.cuda.synchronize()
    # how many GEMMs make one window
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        gemm()
    end.record()
    torch.cuda.synchronize()
    per = start.elapsed_time(end) / 5 / 1e3
    batch = max(1, round(window / per))
    windows = []
    t_start = sampler.now()
    while sampler.now() - t_start < seconds:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        w0 = sampler.now()
        s.record()
        for _ in range(batch):
            gemm()
        e.record()
        e.synchronize()
        w1 = sampler.now()
        tflops = batch * flops / (s.elapsed_time(e) / 1e3) / 1e12
        windows.append({"t0": w0 - t_start, "t1": w1 - t_start, "tflops": tflops})
    t_end = sampler.now()
    half = t_start + (t_end - t_start) / 2
    steady = [w["tflops"] for w in windows if w["t0"] + t_start >= half]
    samples = sampler.between(half, t_end)
    return {
        "set": name,
        "gemms_per_window": batch,
        "windows": windows,
        "steady_tflops_median": statistics.median(steady),
        "steady_tflops_min": min(steady),
        "steady_tflops_max": max(steady),
        "steady_sm_clock_mhz_median": statistics.median(r[1] for r in samples) if samples else None,
        "steady_power_w_median": statistics.median(r[2] for r in samples) if samples else None,
        "steady_temperature_c_max": max(r[3] for r in samples) if samples else None,
        "samples": [list(r) for r in sampler.between(t_start, t_end)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8192, help="M = N = K")
    ap.add_argument("--seconds", type=float, default=6.0, help="each set's run")
    ap.add_argument("--window", type=float, default=0.25, help="seconds per timed window")
    ap.add_argument("--rest", type=float, default=3.0, help="idle seconds before each run")
    ap.add_argument("--out", help="write the JSON here (default: print it)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("h200_operand_power: needs an NVIDIA GPU (the lent H200); none here, nothing measured")
        return
    sampler = Sampler()
    order = list(SETS) + list(reversed(SETS))
    runs = []
    for i, name in enumerate(order):
        time.sleep(args.rest)
        r = run_set(name, args.n, args.seconds, args.window, sampler, seed=i)
        r["pass"] = 1 if i < len(SETS) else 2
        runs.append(r)
        print(
            f"{name:28s} pass {r['pass']}: {r['steady_tflops_median']:7.1f} TFLOP/s "
            f"[{r['steady_tflops_min']:.1f}, {r['steady_tflops_max']:.1f}]  SM {r['steady_sm_clock_mhz_median']} MHz  "
            f"{r['steady_power_w_median']} W",
            flush=True,
        )
    sampler.stop()
    info = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "n": args.n,
        "seconds": args.seconds,
        "window_s": args.window,
        "rest_s": args.rest,
        "power_limit": subprocess.run(
            ["nvidia-smi", "--query-gpu=power.limit,clocks.max.sm", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        ).stdout.strip(),
    }
    doc = {"info": info, "runs": runs}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    else:
        print(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
