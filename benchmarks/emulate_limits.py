"""How good ``budget.emulate_estimate`` is: estimated vs measured time and peak memory of ``gluon-overlap emulate``.

Run: ``.venv/bin/python benchmarks/emulate_limits.py``.  Each problem runs as its own process (``/usr/bin/time``
semantics through ``resource``), so the peak memory is the command's.  The estimate should be at or above the
measured memory, and near the measured time on an idle machine (on a loaded one the time grows, the
estimate does not).  Problems near the one-minute limit are included on purpose.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

from gluon_overlap import limits
from gluon_overlap.emulate import budget

PROBLEMS = [
    ("mxfp8", 1024, 1024, 2048),
    ("nvfp4", 2048, 2048, 1024),
    ("mxfp8", 4096, 4096, 128),
    ("mxfp4", 256, 256, 32768),
    ("nvfp4", 4096, 4096, 1024),
]


def main() -> None:
    print(
        f"cpus: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}, "
        f"memory: {limits.machine_memory_bytes() / 1e9:.1f} GB"
    )
    print(f"{'problem':28s} {'est s':>6s} {'meas s':>6s} {'est MB':>7s} {'meas MB':>7s} {'est ops':>8s} {'events':>8s}")
    for fmt, m, n, k in PROBLEMS:
        est = budget.emulate_estimate(m, n, k, fmt, fmt)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "gluon_overlap",
                "emulate",
                "--a-format",
                fmt,
                "--b-format",
                fmt,
                "--m",
                str(m),
                "--n",
                str(n),
                "--k",
                str(k),
                "--json",
            ],
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KB, the largest child so far
        events = json.loads(proc.stdout)["events"] if proc.returncode in (0, 1) else proc.stderr.strip()[:60]
        peak_mb = f"{peak / 1024:7.0f}" if peak > before else "   (<=)"
        print(
            f"{fmt} {m}x{n}x{k}".ljust(28) + f" {est.seconds:6.1f} {seconds:6.1f} {est.bytes / 1e6:7.0f} {peak_mb} "
            f"{est.operations:8.0f} {events!s:>8s}"
        )


if __name__ == "__main__":
    main()
