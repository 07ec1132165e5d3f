"""How long the timing model takes on a CPU (the seed's sweep per GPU, a huge problem), and its calibration.

    .venv/bin/python benchmarks/model_sweep.py              # time the sweeps (with and without bands)
    .venv/bin/python benchmarks/model_sweep.py --cli        # time the default `gluon-overlap model` (fresh process)
    .venv/bin/python benchmarks/model_sweep.py --calibrate  # refit (gluon_overlap.timing.fit), write the descriptions

The sweep is 4 format pairs x K in 512..8192 x overlap off/on at M = N = 8192 (40 predictions of the critical
cluster, plus 2 per band corner: 8 or 10 corners per row).  The huge problem is the largest the kernel accepts
(every size below 2^31, its TMA coordinates' limit: M = N = 2^31 - 8, K = 2^31 - 128): a steady-state extrapolation
from five truncated runs, not a simulation of every tile.
``--calibrate`` reruns the fit of :mod:`gluon_overlap.timing.fit` (the published B300 overlap table and the
single-buffered points of NOTES.md) and writes every description.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from gluon_overlap.hardware import known_gpus, load_hardware
from gluon_overlap.timing.calibration import calibration_error
from gluon_overlap.timing.table import compare, sweep


def time_sweeps(repeats: int) -> None:
    for gpu in known_gpus():
        hw = load_hardware(gpu)
        for with_band in (False, True):
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                rows = sweep(hw, with_band=with_band)
                best = min(best, time.perf_counter() - t0)
            gains = [r["speedup_pct"] for r in rows]
            print(
                f"{gpu:6s} sweep of {len(rows)} rows {'with' if with_band else 'without'} bands: best of {repeats} "
                f"= {best:.2f} s; speedup {min(gains):.1f}% .. {max(gains):.1f}%"
            )
    hw = load_hardware("b200")
    t0 = time.perf_counter()
    row = compare(hw, "nvfp4", "nvfp4", 2**31 - 8, 2**31 - 8, 2**31 - 128)
    print(
        f"b200 nvfp4 M=N=2^31-8 K=2^31-128 with bands: {time.perf_counter() - t0:.2f} s "
        f"(extrapolated: {row['extrapolated']}, misfit {row['extrapolation_error']:.1e})"
    )


def calibrate() -> None:
    """Refit (``gluon_overlap.timing.fit``): the B300 table's fit, its ranges, cross-validation and band corners, the
    b200 single-buffered recalibration, and every description updated (several minutes on 2 cores)."""
    from gluon_overlap.timing import fit

    fit.main()
    hw = load_hardware("b200")
    for fmt in ("mxfp8", "nvfp4"):
        errs = calibration_error(hw, fmt)
        print(fmt, "residuals", ", ".join(f"{size}^3: {100 * e:+.2f}%" for size, e in sorted(errs.items())))


def time_cli(repeats: int) -> None:
    """The default ``gluon-overlap model --json`` (b200, 4 pairs x 5 K, bands), each run a fresh process, in three
    cases: as after an install (the shipped recordings, no run cache), everything recorded live (as after an edit
    of the kernel or the executor), and repeated (the per-user run cache warm)."""
    import os
    import tempfile

    from gluon_overlap.timing import recordings

    with tempfile.TemporaryDirectory() as home:
        base = {**os.environ, "XDG_CACHE_HOME": home}
        cases = [
            ("after an install (shipped recordings, no run cache)", {run_cache_env(): "off"}, False),
            ("recorded live (kernel or executor edited)", {run_cache_env(): "off"}, True),
            ("repeated (run cache warm)", {run_cache_env(): "on"}, False),
        ]
        for label, env, live in cases:
            hidden = recordings.SHIPPED.with_suffix(".hidden")
            if live:
                recordings.SHIPPED.rename(hidden)
            try:
                subprocess.run(
                    [sys.executable, "-m", "gluon_overlap", "model", "--json"],
                    check=True,
                    env={**base, **env},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )  # warm-up
                best = float("inf")
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    subprocess.run(
                        [sys.executable, "-m", "gluon_overlap", "model", "--json"],
                        check=True,
                        env={**base, **env},
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    best = min(best, time.perf_counter() - t0)
            finally:
                if live:
                    hidden.rename(recordings.SHIPPED)
            print(f"gluon-overlap model --json, {label}: best of {repeats} = {best:.2f} s", flush=True)


def run_cache_env() -> str:
    from gluon_overlap.timing import run_cache

    return run_cache.ENV


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--cli", action="store_true", help="time the default `gluon-overlap model` command")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.calibrate:
        calibrate()
    elif args.cli:
        time_cli(args.repeats)
    else:
        time_sweeps(args.repeats)


if __name__ == "__main__":
    main()
