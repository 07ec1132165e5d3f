"""How long the CPU twin takes: nvfp4 1024^3 (overlap on / off, the seed's grid) and the 200-seed sweep.

Run: ``.venv/bin/python benchmarks/twin_speed.py``.  Targets (2-core CPU): 1024^3 under 10 s,
the 200-seed interleaving sweep of tests/test_twin.py under 60 s.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

from gluon_overlap.formats import random_problem  # noqa: E402
from gluon_overlap.twin.emulate import emulate  # noqa: E402


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
    p, t = timed(lambda: random_problem(1024, 1024, 1024, "nvfp4", "nvfp4", seed=0))
    print(f"random_problem nvfp4 1024^3: {t:.2f} s")
    for overlap in (True, False):
        for clusters in (None, 2):
            r, t = timed(lambda overlap=overlap, clusters=clusters: emulate(p, overlap=overlap, clusters=clusters))
            print(f"emulate nvfp4 1024^3 overlap={'on ' if overlap else 'off'} clusters={r.config.grid:2d}: "
                  f"{t:.2f} s  ({r.steps} ops, matches={r.matches_reference}, hazards={len(r.hazards)})")
    r, t = timed(lambda: emulate(p, overlap=True, timed=True))
    print(f"emulate nvfp4 1024^3 overlap=on timed (unit costs): {t:.2f} s")
    small = random_problem(512, 768, 512, "nvfp4", "nvfp4", seed=11)
    _, t = timed(lambda: [emulate(small, clusters=2, seed=s, trace=False) for s in range(200)])
    print(f"200 seeds, nvfp4 512x768x512 on 2 clusters (the CI sweep): {t:.2f} s ({t / 200 * 1000:.0f} ms/run)")


if __name__ == "__main__":
    main()
