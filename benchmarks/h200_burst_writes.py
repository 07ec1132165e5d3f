"""Do TMA stores that come in bursts get less of HBM than the same bytes stored smoothly?  (an H200, sm_90; Gluon,
Triton 3.9)

A timing-model trial (docs/NOTES.md, "An FP4 hunt", 2026-12-05) meets every published B300 gain if the overlap-off
launches write C back at 0.62 of HBM's peak and the overlapped ones at the fitted 0.72.  Its only story: with the
overlap off every cluster drains a whole tile at once, in step with the others (bursts), while the overlapped
epilogue spreads its stores over the next tile's mainloop.  No derivation says bursts write less efficiently; this
measures it on Hopper's HBM, and whether L2 absorbs the bursts instead.

One CTA per SM (each logs its ``%smid``), one warp, a 128 x 32 float16 subtile (8 KB, the kernel's epilogue
subtile) in shared memory, stored by TMA over and over into a 2 GiB C (forty times L2: the bytes must reach HBM in
the end), two stores in flight (``store_wait(1)``, as the kernel's epilogue).  Three modes:

* ``stream``: subtiles back to back, as fast as they go (the reference rate R; ``torch``'s ``fill_`` of C is
  recorded beside it, a plain HBM write rate);
* ``bursts``: every period, ``burst`` subtiles back to back, then nothing until the next period -- every SM at
  once, as the overlap-off drains.  ``burst`` = 8 is one CTA's share of a 256 x 256 tile (64 KB); 32 and 128 make
  a period's bytes (8.6 ... 138 MB) straddle L2's size, so that absorption by L2 shows;
* ``smooth``: the same subtiles and average, evenly spaced within each period.

Time: the periods start on the GPU's global timer (``%globaltimer``, the only clock all SMs share; it ticks
coarsely, so it only marks the period boundaries, all CTAs from one base a kernel launched just before read);
within a period, spacing and burst lengths are in the SM's own cycles (``%clock64``), converted with the cycles per
ns a calibration launch measures.  The rate is taken over the middle half of the run (from the store a quarter in
to the one three quarters in, all CTAs), away from the start and from the write-back L2 still holds at the end; each
CTA also logs how late its last burst began against the schedule.  If bursts write less efficiently, the bursts'
achieved average falls short of the asked one at a lower duty than the smooth stores' does; if L2 absorbs them, the
bursts run faster than R while a period's bytes fit in L2.

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
from _h200 import compile_for_sm90, write_record
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma

ROWS, COLS = 128, 32  # the kernel's epilogue subtile: 128 x 32 float16 = 8 KB
SUBTILE_BYTES = ROWS * COLS * 2
TILE_SUBTILES = 8  # one CTA's share of a 256 x 256 float16 tile: 128 rows x 256 columns = 64 KB
BURSTS = (TILE_SUBTILES, 32, 128)  # subtiles a burst
C_ROWS, C_COLS = 65536, 16384  # 2 GiB of float16: forty times the H200's L2
MODES = {0: "stream", 1: "bursts", 2: "smooth"}
DUTIES = (0.5, 0.7, 0.8, 0.9, 0.95)  # asked average over the stream's rate
STORES_PER_CTA = 3200  # a launch: 132 x 3200 x 8 KB = 3.5 GB
LOG = 6  # per CTA: smid, first scheduled ns, ns a quarter in, ns three quarters in, burst cycles, latest burst start
START_NS = 100_000  # from the base read to the first period: far longer than a launch gap
_ROWS, _COLS, _LOG, _START_NS = gl.constexpr(ROWS), gl.constexpr(COLS), gl.constexpr(LOG), gl.constexpr(START_NS)


@gluon.jit
def _now():
    return gl.inline_asm("mov.u64 $0, %globaltimer;", "=l", [], gl.int64, is_pure=False)


@gluon.jit
def _cycles():
    return gl.inline_asm("mov.u64 $0, %clock64;", "=l", [], gl.int64, is_pure=False)


@gluon.jit
def _smid():
    return gl.inline_asm("mov.u32 $0, %smid;", "=r", [], gl.int32, is_pure=False)


@gluon.jit
def _first_period(base, period_ns):
    """The first period boundary ``START_NS`` after ``base``: every CTA computes the same one."""
    return ((base + _START_NS) // period_ns + 1) * period_ns


@gluon.jit
def _period_due(start, i, burst, period_ns):
    """When store ``i`` (int64; the first of its burst) may go: its period's boundary on the shared timer."""
    return start + (i // burst) * period_ns


@gluon.jit
def _slot_due(began, i, burst, slot_cycles):
    """When smooth store ``i`` may go, in the SM's cycles from its period's first store: evenly spaced."""
    return began + (i % burst) * slot_cycles


@gluon.jit
def base_kernel(out):
    """The global timer now: the base every CTA of the next launch counts its periods from."""
    gl.store(out, _now())


@gluon.jit
def calibrate_kernel(out, span_ns):
    """Each CTA counts its cycles over ``span_ns`` of the global timer: cycles per ns (x 1e6, as an integer)."""
    pid = gl.program_id(0)
    t0 = _now()
    c0 = _cycles()
    t1 = _now()
    while t1 < t0 + span_ns:
        t1 = _now()
    c1 = _cycles()
    gl.store(out + pid, (c1 - c0) * 1_000_000 // (t1 - t0))


@gluon.jit
def burst_kernel(c_desc, log, base_ptr, stores, period_ns, burst, slot_cycles, MODE: gl.constexpr):
    """Store ``stores`` subtiles (a multiple of ``burst``) in ``MODE``: stream, bursts of ``burst`` a period, or one
    every ``slot_cycles`` within each period.  Logs ``LOG`` int64 per CTA (see ``LOG``)."""
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [8, 4], [1, 1], [1, 0])
    pid = gl.program_id(0)
    n = gl.num_programs(0)
    c_smem = gl.allocate_shared_memory(gl.float16, [_ROWS, _COLS], c_desc.layout)
    c_smem.store(gl.zeros([_ROWS, _COLS], gl.float16, layout) + pid.to(gl.float16))
    fence_async_shared()
    tiles_c = c_desc.shape[1] // _COLS
    tiles = (c_desc.shape[0] // _ROWS) * tiles_c
    # the same for every CTA: the first period boundary START_NS after the base the previous launch read
    start = _first_period(gl.load(base_ptr), period_ns)
    while _now() < start:
        pass
    first = _now()
    quarter = first
    three_quarters = first
    burst_cycles = gl.to_tensor(0).to(gl.int64)
    latest = gl.to_tensor(0).to(gl.int64)
    began = _cycles()
    for i in range(stores):
        if i == stores // 4:
            quarter = _now()
        if i == 3 * stores // 4:
            three_quarters = _now()
        if MODE != 0:
            if i % burst == 0:  # a new period: wait for its boundary on the shared timer
                due = _period_due(start, i.to(gl.int64), burst, period_ns)
                while _now() < due:
                    pass
                latest = gl.maximum(latest, _now() - due)
                began = _cycles()
            elif MODE == 2:  # evenly spaced within the period, on this SM's cycles
                while _cycles() < _slot_due(began, i.to(gl.int64), burst, slot_cycles):
                    pass
        t = (pid + i * n) % tiles
        tma.store_wait(1)
        tma.async_store(c_desc, [(t // tiles_c) * _ROWS, (t % tiles_c) * _COLS], c_smem)
        if MODE == 1:
            if i % burst == burst - 1:  # the burst's last store has left shared memory
                tma.store_wait(0)
                burst_cycles += _cycles() - began
    tma.store_wait(0)
    gl.store(log + pid * _LOG + 0, _smid().to(gl.int64))
    gl.store(log + pid * _LOG + 1, first)
    gl.store(log + pid * _LOG + 2, quarter)
    gl.store(log + pid * _LOG + 3, three_quarters)
    gl.store(log + pid * _LOG + 4, burst_cycles)
    gl.store(log + pid * _LOG + 5, latest)


def schedule(duty: float, stream_tb_s: float, ctas: int, burst: int, cycles_per_ns: float) -> tuple[int, int]:
    """(period in ns, cycles between smooth stores) at which ``ctas`` CTAs storing ``burst`` subtiles a period ask for
    ``duty`` x the stream's rate."""
    if not 0 < duty <= 1 or stream_tb_s <= 0 or ctas <= 0 or burst <= 0 or cycles_per_ns <= 0:
        raise ValueError(
            f"duty {duty} must be in (0, 1], and the stream rate {stream_tb_s}, ctas {ctas}, burst {burst} and "
            f"cycles per ns {cycles_per_ns} positive"
        )
    period = round(ctas * burst * SUBTILE_BYTES / (duty * stream_tb_s * 1e12) * 1e9)
    return period, round(period * cycles_per_ns / burst)


def summarize(log: list[list[int]], stores: int, cycles_per_ns: float) -> dict:
    """A launch's figures from its log (one ``LOG`` row per CTA): the rate over the middle half of the run (all CTAs,
    earliest quarter mark to latest three-quarter mark), the bursts' own rate, how late the latest burst began, and
    whether every CTA ran on its own SM."""
    if not log or any(len(row) != LOG for row in log):
        raise ValueError(f"a log is one row of {LOG} numbers per CTA, got {log!r:.80}")
    ctas = len(log)
    middle_ns = max(row[3] for row in log) - min(row[2] for row in log)
    middle_bytes = ctas * (3 * stores // 4 - stores // 4) * SUBTILE_BYTES
    out = {
        "tb_s": middle_bytes / middle_ns / 1e3 if middle_ns > 0 else None,
        "latest_burst_start_ns": max(row[5] for row in log),
        "one_cta_per_sm": len({row[0] for row in log}) == ctas,
    }
    burst_cycles = statistics.median(row[4] for row in log)
    if burst_cycles > 0:  # bursts: every CTA's bytes over the median CTA's time inside its bursts
        out["burst_tb_s"] = ctas * stores * SUBTILE_BYTES / (burst_cycles / cycles_per_ns) / 1e3
    return out


def _descriptor(device: str):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout.get_default_for([ROWS, COLS], gl.float16)
    c = torch.empty((C_ROWS, C_COLS), dtype=torch.float16, device=device)
    return c, TensorDescriptor(c, list(c.shape), list(c.stride()), [ROWS, COLS], layout)


def _burst_args(desc, log, base, mode: int, period: int, burst: int, slot: int) -> tuple:
    """``burst_kernel``'s arguments.  None of them is 1 (an integer Triton would compile in as a constant), so each
    mode's code is the one ``--compile-only`` builds, up to Triton's divisibility hints."""
    return desc, log, base, STORES_PER_CTA, period, burst, slot, mode


def compile_only() -> dict[str, str]:
    """Cross-compile every mode (and the two helper kernels) for sm_90a (no GPU); returns each one's PTX."""
    _, desc = _descriptor("meta")
    log = torch.empty(132 * LOG, dtype=torch.int64, device="meta")
    ptx = {}
    launches = {name: (burst_kernel, _burst_args(desc, log, log, m, 9_000, 8, 2_222)) for m, name in MODES.items()}
    launches["base"] = (base_kernel, (log,))
    launches["calibrate"] = (calibrate_kernel, (log, 200_000))
    for name, (kernel, args) in launches.items():
        ck = compile_for_sm90(kernel, args, num_warps=1)
        ptx[name] = ck.asm["ptx"]
        print(f"{name}: TMA stores {ptx[name].count('cp.async.bulk.tensor')}, shared {ck.metadata.shared} B")
    return ptx


def _launch(desc, ctas: int, mode: int, period: int, burst: int, slot: int, cycles_per_ns: float) -> dict:
    log = torch.zeros(ctas * LOG, dtype=torch.int64, device="cuda")
    base = torch.zeros(1, dtype=torch.int64, device="cuda")
    base_kernel[(1,)](base, num_warps=1)  # on the device just before, in stream order: no host round trip between
    burst_kernel[(ctas,)](*_burst_args(desc, log, base, mode, period, burst, slot), num_warps=1)
    torch.cuda.synchronize()
    return summarize(log.view(ctas, LOG).tolist(), STORES_PER_CTA, cycles_per_ns)


def measure(repeats: int) -> dict:
    ctas = torch.cuda.get_device_properties(0).multi_processor_count
    c, desc = _descriptor("cuda")
    cal = torch.zeros(ctas, dtype=torch.int64, device="cuda")
    calibrate_kernel[(ctas,)](cal, 200_000, num_warps=1)
    cycles_per_ns = statistics.median(cal.tolist()) / 1e6
    stream_period = 1_000_000  # only places the start; stream mode never waits on it
    _launch(desc, ctas, 0, stream_period, TILE_SUBTILES, 2, cycles_per_ns)  # compile and warm up
    stream = [_launch(desc, ctas, 0, stream_period, TILE_SUBTILES, 2, cycles_per_ns) for _ in range(repeats)]
    stream_tb_s = statistics.median(r["tb_s"] for r in stream)
    fill = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fill[0].record()
    c.fill_(1.0)
    fill[1].record()
    fill[1].synchronize()
    rows = [
        {"mode": "stream", "duty": 1.0, "runs": stream, "tb_s": stream_tb_s},
        {"mode": "fill_", "tb_s": c.numel() * 2 / (fill[0].elapsed_time(fill[1]) * 1e-3) / 1e12},
    ]
    print(json.dumps({"mode": "stream", "tb_s": stream_tb_s, "fill_tb_s": rows[1]["tb_s"]}), file=sys.stderr)
    for burst in BURSTS:
        for duty in DUTIES:
            period, slot = schedule(duty, stream_tb_s, ctas, burst, cycles_per_ns)
            for mode in (1, 2):
                runs = [_launch(desc, ctas, mode, period, burst, slot, cycles_per_ns) for _ in range(repeats)]
                row = {
                    "mode": MODES[mode],
                    "burst_subtiles": burst,
                    "duty": duty,
                    "period_ns": period,
                    "asked_tb_s": duty * stream_tb_s,
                    "runs": runs,
                    "tb_s": statistics.median(r["tb_s"] for r in runs),
                }
                if mode == 1:
                    row["burst_tb_s"] = statistics.median(r["burst_tb_s"] for r in runs)
                rows.append(row)
                print(json.dumps({k: row[k] for k in ("mode", "burst_subtiles", "duty", "tb_s")}), file=sys.stderr)
    q = "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem"
    smi = subprocess.run(["nvidia-smi", q, "--format=csv"], capture_output=True, text=True).stdout
    device = torch.cuda.get_device_name(0)
    return {"device": device, "ctas": ctas, "cycles_per_ns": cycles_per_ns, "rows": rows, "nvidia_smi": smi}


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
    write_record(measure(args.repeats), args.out)


if __name__ == "__main__":
    main()
