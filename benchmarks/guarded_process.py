"""What running emulate's work in a guarded child process costs.

1. The bare guard: fork, one phase message, a small result back through the pipe, reap -- from a
   process that has imported torch (as the CLI's child does) -- median of N.
2. One ``emulate --break`` run (256 x 256 x 256), guarded vs. the same work in this process, and a
   ``--seeds 8`` sweep guarded (one child for all seeds) vs. in this process.

    .venv/bin/python benchmarks/guarded_process.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from gluon_overlap.commands import guarded


def bare(repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        guarded.run_guarded(lambda ch: (ch.phase("x", 10.0), {"ok": True, "rows": list(range(100))})[1])
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def emulate_args(extra: list[str]) -> argparse.Namespace:
    from gluon_overlap.cli import build_parser

    return build_parser().parse_args(
        [
            "emulate",
            "--a-format",
            "mxfp8",
            "--b-format",
            "mxfp8",
            "--m",
            "256",
            "--n",
            "256",
            "--k",
            "256",
            "--break",
            "early-release",
            *extra,
        ]
    )


def timed_emulate(extra: list[str], inline: bool, repeat: int) -> float:
    from gluon_overlap.commands import emulate

    args = emulate_args(extra)
    seconds = emulate.time_budget(args, emulate.check_args(args))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        if inline:
            emulate._work(args, guarded._InlineChannel(), seconds, None)
        else:
            guarded.run_guarded(lambda ch: emulate._work(args, ch, seconds, None))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    n = parser.parse_args().repeat
    import torch  # noqa: F401  (the CLI's child has torch; so does a test process)

    print(f"bare guard (fork + pipe + reap):      {bare(n * 4) * 1000:8.1f} ms")
    timed_emulate([], True, 1)  # warm: kernel copy, imports
    one_in, one_g = timed_emulate([], True, n), timed_emulate([], False, n)
    print(f"one run   in process / guarded:       {one_in:8.3f} s / {one_g:.3f} s  (+{(one_g - one_in) * 1000:.0f} ms)")
    sw_in, sw_g = (
        timed_emulate(["--seeds", "8"], True, max(1, n // 2)),
        timed_emulate(["--seeds", "8"], False, max(1, n // 2)),
    )
    print(f"--seeds 8 in process / guarded:       {sw_in:8.3f} s / {sw_g:.3f} s  (+{(sw_g - sw_in) * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
