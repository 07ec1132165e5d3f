"""The step kernels of notebooks 03-04: cold and warm cross-compile times, executor wall times (data
mode, one interleaving), and the MMA time split they reach in timed mode (B200 cost model).

Cold compiles run in a fresh process with an empty TRITON_CACHE_DIR; warm ones in another fresh process
over the filled cache.  Executor times are wall-clock seconds on this machine, median of ``--repeat``.

    .venv/bin/python benchmarks/steps.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CASES = (("single_buffered", False), ("overlap", False), ("overlap", True))


def compile_worker() -> None:
    """Compile both step kernels for every format pair in this process; print {label: seconds} as JSON."""
    import gluon_overlap.kernel  # noqa: F401 -- import torch and triton before the clock starts
    from gluon_overlap.steps import host, overlap, single_buffered
    from gluon_overlap.tmem import SEED_FORMAT_PAIRS

    kernels = {"single_buffered": single_buffered.single_buffered_kernel, "overlap": overlap.overlap_kernel}
    times = {}
    for a, b in SEED_FORMAT_PAIRS:
        for name, ov in CASES:
            start = time.perf_counter()
            host.compile_step(kernels[name], a, b, ov)
            times[f"{name} {a}x{b} overlap {'on' if ov else 'off'}"] = time.perf_counter() - start
    print(json.dumps(times))


def compile_pass(cache: str) -> dict:
    env = dict(os.environ, TRITON_CACHE_DIR=cache)
    out = subprocess.run(
        [sys.executable, __file__, "--compile-worker"], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def executor_times(repeat: int) -> list[dict]:
    from gluon_overlap import kernel
    from gluon_overlap.steps import measure, overlap, single_buffered

    kernels = {
        "single_buffered": single_buffered.single_buffered_kernel,
        "overlap": overlap.overlap_kernel,
        "warp_specialized": kernel.mma_scaled_warp_specialized_kernel,
    }
    rows = []
    for m, n, k, clusters in ((256, 256, 512, None), (256, 1024, 512, 1), (1024, 1024, 1024, 2)):
        problem = measure.make_problem(m, n, k, "nvfp4")
        for name, fn in kernels.items():
            if name == "single_buffered" and clusters is not None and clusters < (m // 256) * (n // 256):
                continue
            for ov in (False,) if name == "single_buffered" else (False, True):  # one window only
                walls = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    result = measure.run_step(fn, problem, overlap=ov, num_clusters=clusters)
                    walls.append(time.perf_counter() - start)
                    assert result.clean, (name, m, n, k)
                timed = measure.run_step(fn, problem, overlap=ov, num_clusters=clusters, timed=True).mma_time()
                rows.append(
                    {
                        "kernel": name,
                        "overlap": ov,
                        "problem": f"{m}x{n}x{k}",
                        "clusters": clusters or (m // 256) * (n // 256),
                        "wall_s": statistics.median(walls),
                        "us_per_tile": timed.per_tile * 1e6,
                        "mma_idle": timed.idle_share,
                    }
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compile-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compile_worker:
        compile_worker()
        return
    with tempfile.TemporaryDirectory() as cache:
        cold, warm = compile_pass(cache), compile_pass(cache)
    print(f"{'compile':50s} {'cold s':>7} {'warm s':>7}")
    for label in cold:
        print(f"{label:50s} {cold[label]:7.2f} {warm[label]:7.2f}")
    print(f"\n{'executor (nvfp4)':44s} {'wall s':>7} {'us/tile':>8} {'MMA idle':>9}")
    for row in executor_times(args.repeat):
        label = f"{row['kernel']} overlap {'on' if row['overlap'] else 'off'} {row['problem']} x{row['clusters']}"
        print(f"{label:44s} {row['wall_s']:7.2f} {row['us_per_tile']:8.2f} {row['mma_idle']:9.0%}")


if __name__ == "__main__":
    main()
