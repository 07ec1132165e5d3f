"""What the wall-clock budget of the Python ``emulate()`` costs per call (notebooks call it many times).

``emulate()`` runs each call under :class:`gluon_overlap.emulate.wallclock.WallClock` (a shared watchdog
thread, the ``os._exit`` guard).  This times ``emulate`` on the small standard launch (256 x 256 x 256,
mxfp8 x mxfp8) with the budget and with it replaced by a no-op, interleaved so that the machine's load
falls on both alike, and checks that both give the same C, trace, steps and hazards.

    .venv/bin/python benchmarks/emulate_wall_clock.py [--repeat N]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

from gluon_overlap.emulate import runs as em
from gluon_overlap.formats import random_problem


class _NoBudget(contextlib.nullcontext):
    fired = False

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(self)


def _key(r: em.EmulationResult) -> tuple:
    return (r.c.float().nan_to_num(7.0).sum().item(), len(r.trace), r.steps, len(r.hazards), r.failure)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    repeat = parser.parse_args().repeat
    problem = random_problem(256, 256, 256, "mxfp8", "mxfp8")
    em.emulate(problem)  # imports, the compiler's (cached) verdict
    guarded_clock = em.WallClock
    times: dict[str, list[float]] = {"with the budget": [], "without": []}
    keys: dict[str, list[tuple]] = {"with the budget": [], "without": []}
    try:
        for i in range(repeat):
            for name, clock in (("with the budget", guarded_clock), ("without", _NoBudget)):
                em.WallClock = clock  # type: ignore[misc]
                start = time.perf_counter()
                r = em.emulate(problem, seed=i % 3)
                times[name].append(time.perf_counter() - start)
                keys[name].append(_key(r))
    finally:
        em.WallClock = guarded_clock  # type: ignore[misc]
    assert keys["with the budget"] == keys["without"], "the budget changed a result"
    for name, ts in times.items():
        print(
            f"emulate() {name:16s}: median {statistics.median(ts) * 1e3:6.1f} ms, min {min(ts) * 1e3:6.1f} ms "
            f"({repeat} calls)"
        )
    start = time.perf_counter()
    for _ in range(1000):
        with guarded_clock(60.0, lambda name: False):
            pass
    print(f"the budget alone (enter + exit): {(time.perf_counter() - start):.3f} ms per call (1000 calls)")


if __name__ == "__main__":
    main()
