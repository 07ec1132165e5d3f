"""Cold and warm cross-compile times of the kernel's eight variants (sm_100a, no GPU needed).

Cold: a fresh process with an empty TRITON_CACHE_DIR compiles every variant.
Warm: another fresh process with the same (now filled) cache -- every compile is a cache hit.
Each pass runs in its own process, so the in-process cache of gluon_overlap.compiler.compile plays no part.

    .venv/bin/python benchmarks/compile_times.py [--repeat N]
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


def worker() -> None:
    """Compile all variants in this process; print {slug: seconds} as JSON."""
    import gluon_overlap.kernel  # noqa: F401 -- import torch and triton before the clock starts
    from gluon_overlap.compiler import compile as gc

    times = {}
    for variant in gc.VARIANTS:
        start = time.perf_counter()
        gc.compile_variant(variant.a_format, variant.b_format, variant.overlap)
        times[variant.slug] = time.perf_counter() - start
    print(json.dumps(times))


def run_pass(cache_dir: str) -> dict[str, float]:
    env = dict(os.environ, TRITON_CACHE_DIR=cache_dir, TRITON_DEFAULT_FP_FUSION="1")
    out = subprocess.run([sys.executable, __file__, "--worker"], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="cold/warm pairs to run (default 1)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return
    cold: dict[str, list[float]] = {}
    warm: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="triton-cache-") as cache_dir:
            for sink in (cold, warm):  # the first pass fills the empty cache, the second hits it
                for slug, seconds in run_pass(cache_dir).items():
                    sink.setdefault(slug, []).append(seconds)
    print(f"{'variant':18s} {'cold s':>8s} {'warm ms':>8s}")
    for slug in cold:
        print(f"{slug:18s} {statistics.median(cold[slug]):8.2f} {1000 * statistics.median(warm[slug]):8.1f}")
    total_cold = sum(statistics.median(v) for v in cold.values())
    total_warm = sum(statistics.median(v) for v in warm.values())
    print(f"{'all 8':18s} {total_cold:8.2f} {1000 * total_warm:8.1f}")
    print(
        f"(median of {args.repeat} run(s); cpu count {os.cpu_count()}; the first variant of a pass also "
        "hashes the kernel's source once per process)"
    )


if __name__ == "__main__":
    main()
