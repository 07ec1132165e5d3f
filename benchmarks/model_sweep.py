"""How long the timing model takes on a CPU (the seed's sweep per GPU), and its calibration.

    .venv/bin/python benchmarks/model_sweep.py              # time the sweep on every described GPU
    .venv/bin/python benchmarks/model_sweep.py --calibrate  # re-solve the tensor efficiencies (~1 min)

The sweep is 4 format pairs x K in 512..8192 x overlap off/on at M = N = 8192 (40 simulated runs of
the critical cluster).  ``--calibrate`` prints the values that belong in gluon_overlap/data/hardware/*.json
(``tensor_efficiency_fp8`` / ``_fp4``) and the residuals at the published single-buffered points.
"""

from __future__ import annotations

import argparse
import time

from gluon_overlap.hardware import known_gpus, load_hardware
from gluon_overlap.twin import timing


def time_sweeps(repeats: int) -> None:
    for gpu in known_gpus():
        hw = load_hardware(gpu)
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            rows = timing.sweep(hw)
            best = min(best, time.perf_counter() - t0)
        gains = [r["speedup_pct"] for r in rows]
        print(f"{gpu:6s} sweep of {len(rows)} rows ({2 * len(rows)} runs): best of {repeats} = {best:.2f} s; "
              f"speedup {min(gains):.1f}% .. {max(gains):.1f}%")


def calibrate() -> None:
    hw = load_hardware("b200")
    for fmt in ("mxfp8", "nvfp4"):
        t0 = time.perf_counter()
        eta = timing.calibrate_tensor_efficiency(hw, fmt)
        cls = "fp8" if fmt == "mxfp8" else "fp4"
        errs = timing.calibration_error(hw.scaled(**{f"tensor_efficiency_{cls}": eta}), fmt)
        shown = ", ".join(f"{size}^3: {100 * e:+.2f}%" for size, e in sorted(errs.items()))
        print(f"tensor_efficiency_{cls} = {eta:.4f} ({fmt}; residuals {shown}; {time.perf_counter() - t0:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.calibrate:
        calibrate()
    else:
        time_sweeps(args.repeats)


if __name__ == "__main__":
    main()
