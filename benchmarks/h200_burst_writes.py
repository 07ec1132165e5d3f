"""Do TMA stores that come in bursts get less of HBM than the same bytes stored smoothly?  (an H200, sm_90; Gluon,
Triton 3.9)

A timing-model trial (docs/NOTES.md, "An FP4 hunt", 2026-12-05) meets every published B300 gain if the overlap-off
launches write C back at 0.62 of HBM's peak and the overlapped ones at the fitted 0.72.  Its only story: with the
overlap off every cluster drains a whole tile at once, in step with the others (bursts), while the overlapped
epilogue spreads its stores over the next tile's mainloop.  No derivation says bursts write less efficiently; this
measures it on Hopper's HBM.

One CTA per SM, one warp, a 128 x 32 float16 subtile (8 KB, the kernel's epilogue subtile) in shared memory, stored
by TMA over and over into a 2 GiB C (far beyond L2, so every byte is written back), two stores in flight
(``store_wait(1)``, as the kernel's epilogue).  Three modes, every CTA on the GPU's global timer (``%globaltimer``,
ns) so that all of them keep the same schedule:

* ``stream``: subtiles back to back, as fast as they go (the reference rate R);
* ``bursts``: every ``period`` ns, ``BURST`` subtiles (128 KB, a tile of the kernel's C per CTA) back to back, then
  nothing until the next period -- every SM at once, as the overlap-off drains;
* ``smooth``: the same subtiles and average, one every ``period / BURST`` ns.

The period is set so the asked average is a fraction (``DUTIES``: 0.5 ... 0.95) of R.  Per launch: the bytes stored
over the time from the first scheduled store to the end (CUDA events cannot see the schedule; the kernel logs the
global timer at its first scheduled store and at its end) -- if bursts write less efficiently, their achieved
average falls short of the asked one at a lower duty than the smooth mode's does.  The bursts' own rate (bytes over
the time from a burst's first store to its last ``store_wait(0)``) is logged too.

Run on the device: ``python3 benchmarks/h200_burst_writes.py --out result.json`` (needs Triton 3.9's Gluon:
``../shared/tools/triton39-for-h200``); ``--compile-only`` cross-compiles every mode for sm_90a here, without a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma

ROWS, COLS = 128, 32  # the kernel's epilogue subtile: 128 x 32 float16 = 8 KB
SUBTILE_BYTES = ROWS * COLS * 2
BURST = 16  # subtiles a burst: 128 KB, one CTA's share of a 256 x 256 float16 tile
C_ROWS, C_COLS = 65536, 16384  # 2 GiB of float16: far beyond the H200's 50 MB L2
MODES = {0: "stream", 1: "bursts", 2: "smooth"}
DUTIES = (0.5, 0.7, 0.8, 0.9, 0.95)  # asked average over the stream's rate
PERIODS = 200  # bursts a launch
_ROWS, _COLS, _BURST = gl.constexpr(ROWS), gl.constexpr(COLS), gl.constexpr(BURST)


@gluon.jit
def _now():
    return gl.inline_asm("mov.u64 $0, %globaltimer;", "=l", [], gl.int64, is_pure=False)


@gluon.jit
def _wait_until(t):
    while _now() < t:
        pass


@gluon.jit
def burst_kernel(c_desc, log, subtiles, period_ns, MODE: gl.constexpr):
    """Store ``subtiles`` subtiles (a multiple of BURST) in ``MODE``; log (first scheduled store, end, summed burst
    time) in ns per CTA."""
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [8, 4], [1, 1], [1, 0])
    pid = gl.program_id(0)
    n = gl.num_programs(0)
    c_smem = gl.allocate_shared_memory(gl.float16, [_ROWS, _COLS], c_desc.layout)
    c_smem.store(gl.zeros([_ROWS, _COLS], gl.float16, layout) + pid.to(gl.float16))
    fence_async_shared()
    tiles_c = c_desc.shape[1] // _COLS
    tiles = (c_desc.shape[0] // _ROWS) * tiles_c
    # every CTA starts at the same period boundary of the global timer, eight periods on (all have started by then)
    start = (_now() // period_ns + 8) * period_ns
    _wait_until(start)
    burst_ns = gl.to_tensor(0).to(gl.int64)
    began = start
    for i in range(subtiles):
        at = i.to(gl.int64) * period_ns  # int64: a launch's schedule outgrows 32 bits of ns
        if MODE == 1:
            if i % _BURST == 0:
                _wait_until(start + at // _BURST)  # burst i // BURST starts its period
                began = _now()
        if MODE == 2:
            _wait_until(start + at // _BURST)
        t = (pid + i * n) % tiles
        tma.store_wait(1)
        tma.async_store(c_desc, [(t // tiles_c) * _ROWS, (t % tiles_c) * _COLS], c_smem)
        if MODE == 1:
            if i % _BURST == _BURST - 1:
                tma.store_wait(0)
                burst_ns += _now() - began
    tma.store_wait(0)
    gl.store(log + pid * 3 + 0, start)
    gl.store(log + pid * 3 + 1, _now())
    gl.store(log + pid * 3 + 2, burst_ns)


def period_for(duty: float, stream_tb_s: float, ctas: int) -> int:
    """The period (ns) at which ``ctas`` CTAs storing BURST subtiles each ask for ``duty`` x the stream's rate."""
    if not 0 < duty <= 1 or stream_tb_s <= 0 or ctas <= 0:
        raise ValueError(f"duty {duty} must be in (0, 1], the stream rate {stream_tb_s} and ctas {ctas} positive")
    return round(ctas * BURST * SUBTILE_BYTES / (duty * stream_tb_s * 1e12) * 1e9)


def _descriptor(device: str):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout.get_default_for([ROWS, COLS], gl.float16)
    c = torch.empty((C_ROWS, C_COLS), dtype=torch.float16, device=device)
    return c, TensorDescriptor(c, list(c.shape), list(c.stride()), [ROWS, COLS], layout)


def compile_only() -> dict[str, str]:
    """Cross-compile every mode for sm_90a (no GPU); returns each mode's PTX."""
    import triton
    from triton.backends.compiler import GPUTarget

    from gluon_overlap.compiler.compile import source_for

    _, desc = _descriptor("meta")
    log = torch.empty(132 * 3, dtype=torch.int64, device="meta")
    ptx = {}
    for mode, name in MODES.items():
        ck = triton.compile(
            source_for(burst_kernel, (desc, log, 1600, 100_000, mode)),
            target=GPUTarget("cuda", 90, 32),
            options={"num_warps": 1},
        )
        ptx[name] = ck.asm["ptx"]
        print(f"{name}: TMA stores {ptx[name].count('cp.async.bulk.tensor')}, shared {ck.metadata.shared} B")
    return ptx


def _launch(desc, ctas: int, subtiles: int, period_ns: int, mode: int) -> dict:
    log = torch.zeros(ctas * 3, dtype=torch.int64, device="cuda")
    burst_kernel[(ctas,)](desc, log, subtiles, period_ns, mode, num_warps=1)
    torch.cuda.synchronize()
    rows = log.view(ctas, 3).cpu()
    start, end = int(rows[:, 0].min()), int(rows[:, 1].max())
    nbytes = ctas * subtiles * SUBTILE_BYTES
    out = {"bytes": nbytes, "ns": end - start, "tb_s": nbytes / (end - start) / 1e3}
    if mode == 1:  # each CTA's bursts: its BURST subtiles over their own time, the median over the CTAs
        per_cta = [float(ns) for ns in rows[:, 2].tolist()]
        out["burst_tb_s"] = ctas * subtiles * SUBTILE_BYTES / statistics.median(per_cta) / 1e3
    return out


def measure(repeats: int) -> dict:
    ctas = torch.cuda.get_device_properties(0).multi_processor_count
    _, desc = _descriptor("cuda")
    subtiles = PERIODS * BURST
    _launch(desc, ctas, subtiles, 1, 0)  # compile and warm up
    stream = [_launch(desc, ctas, subtiles, 1, 0) for _ in range(repeats)]
    stream_tb_s = statistics.median(r["tb_s"] for r in stream)
    rows = [{"mode": "stream", "duty": 1.0, "runs": stream, "tb_s": stream_tb_s}]
    print(json.dumps({"mode": "stream", "tb_s": stream_tb_s}), file=sys.stderr)
    for duty in DUTIES:
        period = period_for(duty, stream_tb_s, ctas)
        for mode in (1, 2):
            runs = [_launch(desc, ctas, subtiles, period, mode) for _ in range(repeats)]
            row = {
                "mode": MODES[mode],
                "duty": duty,
                "period_ns": period,
                "asked_tb_s": duty * stream_tb_s,
                "runs": runs,
                "tb_s": statistics.median(r["tb_s"] for r in runs),
            }
            if mode == 1:
                row["burst_tb_s"] = statistics.median(r["burst_tb_s"] for r in runs)
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("mode", "duty", "tb_s")}), file=sys.stderr)
    q = "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem"
    smi = subprocess.run(["nvidia-smi", q, "--format=csv"], capture_output=True, text=True).stdout
    return {
        "device": torch.cuda.get_device_name(0),
        "ctas": ctas,
        "subtiles": subtiles,
        "rows": rows,
        "nvidia_smi": smi,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON here (default: stdout)")
    parser.add_argument("--compile-only", action="store_true", help="cross-compile for sm_90a, no GPU")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    if args.compile_only:
        compile_only()
        return
    if not torch.cuda.is_available():
        print("h200_burst_writes: no GPU here; it measures an H200 (sm_90). Nothing done.")
        return
    text = json.dumps(measure(args.repeats), indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
