"""Redraw time of the TMEM explorer per control change, in its own process (median, p90 and worst over ~50 changes
per control), drawn on demand (no prefetch worker), and the PNG encoder against Pillow's. The click-to-picture
time in a browser is ``benchmarks/explorer_latency.py``.

Run: .venv/bin/python benchmarks/explorer_redraw.py [--changes 50] [--raw times.json]

``--raw`` also writes every measured time (ms) per control as JSON, to compare runs made under the
same machine load (e.g. interleaved runs before and after a change).

"cold" configuration changes visit configurations never drawn before (every background is drawn);
"cycling" changes revisit a few configurations (backgrounds come from the explorer's small cache).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from gluon_overlap import limits
from gluon_overlap.explorer import BLOCK_K_CHOICES, TmemExplorer


def _measure(explorer: TmemExplorer, changes) -> list[float]:
    times = []
    for control, value in changes:
        start = time.perf_counter()
        control.value = value
        times.append((time.perf_counter() - start) * 1e3)
    return times


_RAW: dict[str, list[float]] = {}


def _report(name: str, times: list[float]) -> None:
    _RAW[name] = times
    q = statistics.quantiles(times, n=10)
    print(
        f"{name:<34} n={len(times):3d}  median {statistics.median(times):6.1f} ms  p90 {q[-1]:6.1f} ms  "
        f"max {max(times):6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument("--raw", help="also write the raw times (ms) per control to this JSON file")
    args = parser.parse_args()
    n = args.changes
    e = TmemExplorer(prefetch=False)
    _measure(e, [(e.step, 1)])  # warm up fonts and caches
    _report("step slider", _measure(e, [(e.step, (7 * i) % (e.step.max + 1)) for i in range(1, n + 1)]))
    _report("scale row slider", _measure(e, [(e.row, (37 * i) % 256) for i in range(1, n + 1)]))
    _report("scale operand A/B", _measure(e, [(e.operand, "AB"[i % 2]) for i in range(1, n + 1)]))
    _report("overlap on/off (cycling)", _measure(e, [(e.overlap, i % 2 == 0) for i in range(1, n + 1)]))
    _report(
        "EPILOGUE_BLOCK_N (cycling)", _measure(e, [(e.epilogue_block_n, (16, 32, 64)[i % 3]) for i in range(1, n + 1)])
    )
    valid = limits.accepted(
        "block_k", BLOCK_K_CHOICES, a_format="nvfp4", b_format="nvfp4", epilogue_block_n=32, overlap=True
    )  # the BLOCK_K values plan accepts (64, 128, 256)
    _report("BLOCK_K (accepted values, cycling)", _measure(e, [(e.block_k, valid[i % len(valid)]) for i in range(n)]))
    e.a_format.value, e.b_format.value = "mxfp4", "mxfp4"
    _report("refused <-> accepted (error box)", _measure(e, [(e.block_k, (512, 128)[i % 2]) for i in range(n)]))
    _report_encoders(e, n)
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(_RAW, f)


def _report_encoders(explorer: TmemExplorer, n: int) -> None:
    """The PNG encoder the views use (``explorer.view.fast_png``) against Pillow's, on one step view's pixels."""
    import io

    import numpy as np
    from PIL import Image

    from gluon_overlap.explorer.view import fast_png

    rgb = np.ascontiguousarray(np.asarray(explorer.figures()["step"].canvas.buffer_rgba())[:, :, :3])

    def timed(encode) -> list[float]:
        times = []
        for _ in range(n):
            start = time.perf_counter()
            encode()
            times.append((time.perf_counter() - start) * 1e3)
        return times

    def pillow(level: int):
        return lambda: Image.fromarray(rgb).save(io.BytesIO(), format="png", compress_level=level)

    _report(f"encode {rgb.shape[1]}x{rgb.shape[0]}: fast_png", timed(lambda: fast_png(rgb)))
    _report("encode: Pillow compress_level=1", timed(pillow(1)))
    _report("encode: Pillow compress_level=0", timed(pillow(0)))


if __name__ == "__main__":
    main()
