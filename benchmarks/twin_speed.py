"""How long the executor takes to run gluon_overlap/kernel.py on the CPU, and where the time goes.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/twin_speed.py [--profile-top N]``.  Targets (issue 9,
2-core CPU): nvfp4 1024 x 1024 x 1024, overlap on, 2 clusters under 10 s; the 200-seed sweep of the
small case (nvfp4 512 x 768 x 512 on 2 clusters, tests/test_twin.py's) under 120 s.  Each target is
printed with its measured time and PASS / FAIL; the profile (cProfile, by own time) of one 1024^3 run
and of 20 sweep runs follows.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

from gluon_overlap.formats import random_problem  # noqa: E402
from gluon_overlap.twin.emulate import emulate, sweep  # noqa: E402

TARGET_1024_S = 10.0
TARGET_SWEEP_S = 120.0


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def profile(fn, top: int) -> str:
    """The ``top`` entries of ``fn``'s cProfile by own time, plus the grouped share of the executor's parts."""
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    total = sum(v[2] for v in stats.stats.values())  # own time of every function
    groups: dict[str, float] = {}
    for (file, _, func), v in stats.stats.items():
        if "gluon_overlap" in file:
            key = file.rsplit("/", 1)[-1]
        elif file == "~":  # C functions: torch kernels, greenlet switches, numpy, builtins
            key = ("torch (C)" if "torch" in func or "TensorBase" in func else
                   "greenlet switch" if "greenlet" in func else "numpy (C)" if "numpy" in func else "builtins")
        else:
            key = "torch (python)" if "torch" in file else "other python"
        groups[key] = groups.get(key, 0.0) + v[2]
    lines = [f"  {k:24s} {v:6.2f} s  {100 * v / total:5.1f} %" for k, v in
             sorted(groups.items(), key=lambda kv: -kv[1])[:10]]
    body = "\n".join(line for line in out.getvalue().splitlines() if line.strip())
    return "own time by module:\n" + "\n".join(lines) + "\n" + body


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile-top", type=int, default=15, help="profile entries to print (15)")
    ap.add_argument("--sweep-seeds", type=int, default=200, help="seeds of the sweep (200)")
    args = ap.parse_args()
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
    p, t = timed(lambda: random_problem(1024, 1024, 1024, "nvfp4", "nvfp4", seed=0))
    print(f"random_problem nvfp4 1024^3: {t:.2f} s")
    emulate(random_problem(256, 256, 256, "nvfp4", "nvfp4", seed=0), clusters=1)  # imports, first compile
    results = {}
    for overlap in (True, False):
        for clusters in (2, None):
            r, t = timed(lambda overlap=overlap, clusters=clusters: emulate(p, overlap=overlap, clusters=clusters,
                                                                            trace=False))
            results[(overlap, clusters)] = t
            print(f"emulate nvfp4 1024^3 overlap={'on ' if overlap else 'off'} clusters={r.config.grid:2d}: "
                  f"{t:6.2f} s  ({r.steps} ops, ok={r.ok})")
    r, t = timed(lambda: emulate(p, overlap=True, clusters=2, timed=True))
    print(f"emulate nvfp4 1024^3 overlap=on clusters= 2 timed (unit costs): {t:.2f} s")
    small = random_problem(512, 768, 512, "nvfp4", "nvfp4", seed=11)
    res, t_sweep = timed(lambda: sweep(small, args.sweep_seeds, overlap=True, clusters=2))
    print(f"sweep of {args.sweep_seeds} seeds, nvfp4 512x768x512 on 2 clusters: {t_sweep:.2f} s "
          f"({t_sweep / args.sweep_seeds * 1000:.0f} ms/run), failed runs: {res.failed_runs}")
    t1024 = results[(True, 2)]
    print()
    print(f"target nvfp4 1024^3 overlap on, 2 clusters < {TARGET_1024_S:g} s: {t1024:.2f} s "
          f"{'PASS' if t1024 < TARGET_1024_S else 'FAIL'}")
    sweep_target = TARGET_SWEEP_S * args.sweep_seeds / 200
    print(f"target {args.sweep_seeds}-seed sweep < {sweep_target:g} s: {t_sweep:.2f} s "
          f"{'PASS' if t_sweep < sweep_target else 'FAIL'}")
    print("\n=== where the time goes: one nvfp4 1024^3 run (overlap on, 2 clusters) ===")
    print(profile(lambda: emulate(p, overlap=True, clusters=2, trace=False), args.profile_top))
    print("\n=== where the time goes: 20 runs of the sweep's small case ===")
    print(profile(lambda: sweep(small, 20, overlap=True, clusters=2), args.profile_top))


if __name__ == "__main__":
    main()
