"""Does an epilogue's shared-memory traffic slow tensor-core MMAs that read their operands from shared memory?
(an H200, sm_90; Gluon, Triton 3.9)

The second timing model priced the overlap's cost as shared-memory contention: while the MMAs read their operands
from shared memory, an epilogue drained meanwhile adds its ``st.shared`` and its TMA store's read (2 x 8 KB a
subtile), and whatever exceeded shared memory's spare bandwidth (128 B/clk, less what the mainloop moved) slowed the
MMAs and the drain alike (fair sharing).  This measurement replaced that law (the third model:
``costs.drain_smem_bytes_per_clk``).  Hopper cannot run tcgen05, but its ``wgmma`` with both operands in shared memory
(SS) reads them the same way, so it can answer the question behind that price: how many MMA clocks does one
drained kilobyte cost, and does it depend, as the model says, on how much of shared memory the MMAs already use?

One CTA per SM, two partitions (``gl.warp_specialize``):

* the **MMA** warpgroup (the default partition, 4 warps) issues ``iters`` ``warpgroup_mma`` of [64, 64] x [64, N]
  float16 (zeros: low power, so the clock stays put; a tensor core's speed does not depend on the values) from
  shared memory, keeping one in flight beyond the current.  N = 64 reads 16 KB per 128 tensor clocks (128 B/clk:
  shared memory's width), N = 128 24 KB per 256 (96 B/clk), N = 256 40 KB per 512 (80 B/clk); ``RS n256`` keeps A in
  registers (64 B/clk);
* the **drain** (a worker partition, 4 warps) repeats one of three steps ``drains`` times: ``st.shared`` of a
  128 x 32 float16 subtile (8 KB) and the proxy fence; the kernel's epilogue step, the same plus a TMA store of it
  into an L2-resident C (another 8 KB read out of shared memory), double-buffered with ``store_wait(1)``; or TMA
  stores of a stored subtile only.

Each partition reads ``clock64`` at its start and end, the drain also after every subtile, so the subtiles it
finished while the MMAs ran are counted on the SM's own clock.  Per configuration: the MMAs alone, the drain alone,
and both, with a drain a quarter as long as the MMAs and one that outlasts them; medians over the SMs and launches.
The MMAs' lost clocks per drained KB, and the drain's speed beside them, are the measured law.

Run on the device: ``python3 benchmarks/h200_smem_contention.py --out result.json`` (needs Triton 3.9's Gluon:
``../shared/tools/triton39-for-h200``); ``--compile-only`` cross-compiles every variant for sm_90a here, without a
GPU.  Without a GPU (and without ``--compile-only``) it says so and does nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch
from _h200 import compile_for_sm90, write_record
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

ROWS, COLS, K_BLOCK, M_ROWS = 128, 32, 64, 64  # host-side values of the four shapes below
SUB_M = gl.constexpr(ROWS)  # the kernel's epilogue subtile per CTA: 128 rows x 32 float16 columns = 8 KB
SUB_N = gl.constexpr(COLS)
BK = gl.constexpr(K_BLOCK)  # K of one warpgroup_mma: four m64nNk16 instructions
MMA_M = gl.constexpr(M_ROWS)
LOAD_ROWS, LOAD_COLS = 128, 64  # one TMA load: 128 x 64 float16 = 16 KB, half an FP8 stage's A or B per CTA
LOAD_M = gl.constexpr(LOAD_ROWS)
LOAD_K = gl.constexpr(LOAD_COLS)
F16_MACS_PER_CLK = 2048  # H100/H200 dense float16: 989 TFLOP/s / (132 SMs x 1.83 GHz) / 2


@gluon.jit
def _clock():
    return gl.inline_asm("mov.u64 $0, %clock64;", "=l", [], gl.int64, is_pure=False)


@gluon.jit
def _mma_partition(a_smem, b_smem, out, iters, N: gl.constexpr, A_IN_REGS: gl.constexpr):
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, N, 16])
    acc = gl.zeros([MMA_M, N], gl.float32, acc_layout)
    pid = gl.program_id(0)
    if A_IN_REGS:
        a = a_smem.load(gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2))
    else:
        a = a_smem
    t0 = _clock()
    for _ in range(iters):
        acc = warpgroup_mma(a, b_smem, acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    t1 = _clock()
    gl.store(out + pid * 4 + 0, t1 - t0)
    gl.store(out + pid * 4 + 3, t1 + gl.sum(gl.sum(acc, axis=1), axis=0).to(gl.int64))  # its end; keeps the MMAs live


@gluon.jit
def _drain_partition(c_desc, c_smem, out, log, drains, MODE: gl.constexpr):
    """MODE 0: st.shared + fence per subtile; 1: the epilogue's step, st.shared + fence + TMA store; 2: TMA stores of
    one stored subtile (the TMA's shared-memory reads alone).  Logs its clock after each subtile."""
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [8, 4], [4, 1], [1, 0])
    pid = gl.program_id(0)
    x = gl.zeros([SUB_M, SUB_N], gl.float16, layout) + pid.to(gl.float16)
    if MODE == 2:
        c_smem.index(0).store(x)
        c_smem.index(1).store(x)
        fence_async_shared()
    t0 = _clock()
    for j in range(drains):
        buf = c_smem.index(j % 2)
        if MODE != 0:
            tma.store_wait(1)  # the store two subtiles back has read its buffer
        if MODE != 2:
            buf.store(x)
            fence_async_shared()
        if MODE != 0:
            tma.async_store(c_desc, [pid * SUB_M, (j % 8) * SUB_N], buf)
        gl.store(log + pid * drains + j, _clock())
    if MODE != 0:
        tma.store_wait(0)
    t1 = _clock()
    gl.store(out + pid * 4 + 1, t1 - t0)
    gl.store(out + pid * 4 + 2, t0)


@gluon.jit
def _load_partition(l_desc, l_smem, bars, log, loads):
    """TMA loads of a 128 x 64 float16 tile (16 KB) from an L2-resident tensor into two buffers in turn (each waits
    for the load before last into its buffer): the stage writes a mainloop's TMA makes.  Logs its clock per load."""
    pid = gl.program_id(0)
    for j in range(loads):
        b = j % 2
        if j >= 2:
            mbarrier.wait(bars.index(b), ((j // 2) - 1) % 2)
        mbarrier.expect(bars.index(b), l_desc.block_type.nbytes)
        tma.async_load(l_desc, [pid * LOAD_M, 0], bars.index(b), l_smem.index(b))
        gl.store(log + pid * loads + j, _clock())
    for j in range(gl.maximum(loads - 2, 0), loads):
        mbarrier.wait(bars.index(j % 2), (j // 2) % 2)


@gluon.jit
def contention_kernel(
    c_desc,
    l_desc,
    out,
    log,
    load_log,
    iters,
    drains,
    loads,
    N: gl.constexpr,
    A_IN_REGS: gl.constexpr,
    MODE: gl.constexpr,
):
    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([MMA_M, BK], gl.float16)
    b_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BK, N], gl.float16)
    fill_a: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    fill_b: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [4, 1], [1, 0])
    a_smem = gl.allocate_shared_memory(gl.float16, [MMA_M, BK], a_layout, gl.zeros([MMA_M, BK], gl.float16, fill_a))
    b_smem = gl.allocate_shared_memory(gl.float16, [BK, N], b_layout, gl.zeros([BK, N], gl.float16, fill_b))
    c_smem = gl.allocate_shared_memory(gl.float16, [2, SUB_M, SUB_N], c_desc.layout)
    l_smem = gl.allocate_shared_memory(gl.float16, [2, LOAD_M, LOAD_K], l_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    fence_async_shared()
    gl.warp_specialize(
        [
            (_mma_partition, (a_smem, b_smem, out, iters, N, A_IN_REGS)),
            (_drain_partition, (c_desc, c_smem, out, log, drains, MODE)),
            (_load_partition, (l_desc, l_smem, bars, load_log, loads)),
        ],
        [4, 1],
        [64, 48],
    )


#: (name, N, A in registers): shared-memory bytes the MMA reads per tensor clock: 128, 96, 80, 64
MMA_SHAPES = (
    ("SS n64", 64, False),
    ("SS n128", 128, False),
    ("SS n256", 256, False),
    ("RS n256", 256, True),
)
#: drain modes: what one subtile moves through shared memory (bytes)
MODES = {
    0: ("st.shared", ROWS * COLS * 2),
    1: ("st.shared + TMA store", 2 * ROWS * COLS * 2),
    2: ("TMA store", ROWS * COLS * 2),
}


def mma_clk_per_iter(n: int) -> int:
    return M_ROWS * n * K_BLOCK // F16_MACS_PER_CLK


def mma_smem_bytes_per_clk(n: int, a_in_regs: bool) -> float:
    """Shared-memory bytes per tensor clock of one [64, 64] x [64, n] float16 warpgroup_mma at the float16 rate."""
    nbytes = (0 if a_in_regs else M_ROWS * K_BLOCK * 2) + K_BLOCK * n * 2
    return nbytes / mma_clk_per_iter(n)


def _descriptors(device: str, sms: int):
    """C (the drain's TMA stores: 64 KB per SM) and L (the loader's TMA loads: 16 KB per SM), both L2-resident."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    c = torch.zeros((sms * ROWS, 8 * COLS), dtype=torch.float16, device=device)
    c_layout = gl.NVMMASharedLayout.get_default_for([ROWS, COLS], gl.float16)
    l_src = torch.zeros((sms * LOAD_ROWS, LOAD_COLS), dtype=torch.float16, device=device)
    l_layout = gl.NVMMASharedLayout.get_default_for([LOAD_ROWS, LOAD_COLS], gl.float16)
    return (
        (c, l_src),
        TensorDescriptor(c, list(c.shape), list(c.stride()), [ROWS, COLS], c_layout),
        TensorDescriptor(l_src, list(l_src.shape), list(l_src.stride()), [LOAD_ROWS, LOAD_COLS], l_layout),
    )


def compile_only() -> None:
    """Cross-compile every variant for sm_90a (no GPU): checks that the kernel builds."""
    _, c_desc, l_desc = _descriptors("meta", 132)
    out = torch.empty(4 * 132, dtype=torch.int64, device="meta")
    log = torch.empty(132 * 100, dtype=torch.int64, device="meta")
    for name, n, regs in MMA_SHAPES:
        for mode in MODES:
            args = (c_desc, l_desc, out, log, log, 1000, 100, 100, n, regs, mode)
            ck = compile_for_sm90(contention_kernel, args, num_warps=4)
            ptx = ck.asm["ptx"]
            print(
                f"{name} mode {mode}: wgmma {ptx.count('wgmma.mma_async')}, st.shared {ptx.count('st.shared')}, "
                f"TMA {ptx.count('cp.async.bulk.tensor')}, shared {ck.metadata.shared} B"
            )


def _during(log: torch.Tensor, sms: int, count: int, ends: list[int]) -> list[int]:
    stamps = log.view(sms, count).cpu()
    return [int((stamps[i] <= ends[i]).sum()) for i in range(sms)]


def run_one(descs, sms: int, iters: int, drains: int, n: int, regs: bool, mode: int, loads: int = 0) -> dict:
    """One launch; per SM: the MMAs' clocks, the drain's clocks, and how many subtiles (loads) finished while the
    MMAs ran."""
    c_desc, l_desc = descs
    out = torch.zeros(4 * sms, dtype=torch.int64, device="cuda")
    log = torch.zeros(sms * max(1, drains), dtype=torch.int64, device="cuda")
    load_log = torch.zeros(sms * max(1, loads), dtype=torch.int64, device="cuda")
    contention_kernel[(sms,)](c_desc, l_desc, out, log, load_log, iters, drains, loads, n, regs, mode, num_warps=4)
    torch.cuda.synchronize()
    rows = out.view(sms, 4).cpu()
    mma_clk = rows[:, 0].tolist()
    drain_clk = rows[:, 1].tolist()
    ends = rows[:, 3].tolist()  # the MMAs' end clock (their accumulator sums to 0: zero operands)
    during = _during(log, sms, drains, ends) if drains and iters else [0]
    loads_during = _during(load_log, sms, loads, ends) if loads and iters else [0]
    load_clk = [0]
    if loads:  # the loader's span: its first stamp is one load in, so scale from loads - 1 intervals
        stamps = load_log.view(sms, loads).cpu()
        load_clk = ((stamps[:, -1] - stamps[:, 0]) * loads / max(1, loads - 1)).tolist()
    return {
        "mma_clk": statistics.median(mma_clk),
        "mma_clk_range": [min(mma_clk), max(mma_clk)],
        "drain_clk": statistics.median(drain_clk),
        "during": statistics.median(during),
        "during_range": [min(during), max(during)],
        "loads_during": statistics.median(loads_during),
        "load_clk": statistics.median(load_clk),
    }


def measure(iters_clk: int, repeats: int) -> dict:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    _, c_desc, l_desc = _descriptors("cuda", sms)
    descs = (c_desc, l_desc)
    rows = []
    for name, n, regs in MMA_SHAPES:
        iters = max(1, iters_clk // mma_clk_per_iter(n))
        for mode, (what, nbytes) in MODES.items():
            run_one(descs, sms, 10, 10, n, regs, mode)  # compile and warm up
            mma0 = statistics.median(run_one(descs, sms, iters, 0, n, regs, mode)["mma_clk"] for _ in range(repeats))
            per_subtile = run_one(descs, sms, 0, 2000, n, regs, mode)["drain_clk"] / 2000
            for share in (0.25, 2.0):  # a drain alone of a quarter of the MMA's clocks; one that outlasts it
                drains = max(1, int(share * mma0 / per_subtile))
                both = [run_one(descs, sms, iters, drains, n, regs, mode) for _ in range(repeats)]
                row = {
                    "mma": name,
                    "n": n,
                    "a_in_regs": regs,
                    "drain": what,
                    "mode": mode,
                    "iters": iters,
                    "mma_smem_bytes_per_clk": round(mma_smem_bytes_per_clk(n, regs), 2),
                    "drain_bytes_per_subtile": nbytes,
                    "drain_alone_clk_per_subtile": round(per_subtile, 1),
                    "drains": drains,
                    "mma_alone_clk": mma0,
                    "mma_beside_drain_clk": statistics.median(r["mma_clk"] for r in both),
                    "mma_beside_drain_clk_range": [
                        min(r["mma_clk_range"][0] for r in both),
                        max(r["mma_clk_range"][1] for r in both),
                    ],
                    "drain_beside_mma_clk": statistics.median(r["drain_clk"] for r in both),
                    "subtiles_during_mma": statistics.median(r["during"] for r in both),
                    "subtiles_during_mma_range": [
                        min(r["during_range"][0] for r in both),
                        max(r["during_range"][1] for r in both),
                    ],
                }
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    return {"device": torch.cuda.get_device_name(0), "sms": sms, "rows": rows}


def measure_loads(iters_clk: int, repeats: int) -> dict:
    """Do TMA loads into shared memory (a mainloop's stage writes) draw on the MMAs' shared-memory budget?  Per MMA
    shape: a load stream alone, beside the MMAs, and the epilogue drain beside the MMAs without and with the loads
    (loads and drain both outlast the MMAs)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    _, c_desc, l_desc = _descriptors("cuda", sms)
    descs = (c_desc, l_desc)
    load_bytes = LOAD_ROWS * LOAD_COLS * 2
    rows = []
    for name, n, regs in MMA_SHAPES:
        iters = max(1, iters_clk // mma_clk_per_iter(n))
        run_one(descs, sms, 10, 10, n, regs, 1, 10)  # compile and warm up
        mma0 = statistics.median(run_one(descs, sms, iters, 0, n, regs, 1)["mma_clk"] for _ in range(repeats))
        load_alone = run_one(descs, sms, 0, 0, n, regs, 1, 4000)["load_clk"] / 4000
        drain_alone = run_one(descs, sms, 0, 2000, n, regs, 1)["drain_clk"] / 2000
        loads = int(2 * mma0 / load_alone)
        drains = int(2 * mma0 / drain_alone)
        runs = {
            "loads": [run_one(descs, sms, iters, 0, n, regs, 1, loads) for _ in range(repeats)],
            "drain": [run_one(descs, sms, iters, drains, n, regs, 1) for _ in range(repeats)],
            "drain and loads": [run_one(descs, sms, iters, drains, n, regs, 1, loads) for _ in range(repeats)],
        }
        for beside, rs in runs.items():
            row = {
                "mma": name,
                "n": n,
                "a_in_regs": regs,
                "mma_smem_bytes_per_clk": round(mma_smem_bytes_per_clk(n, regs), 2),
                "beside": beside,
                "iters": iters,
                "mma_alone_clk": mma0,
                "load_bytes": load_bytes,
                "load_alone_clk_per_load": round(load_alone, 1),
                "drain_bytes_per_subtile": MODES[1][1],
                "drain_alone_clk_per_subtile": round(drain_alone, 1),
                "loads": loads if "loads" in beside else 0,
                "drains": drains if "drain" in beside else 0,
                "mma_beside_clk": statistics.median(r["mma_clk"] for r in rs),
                "loads_during_mma": statistics.median(r["loads_during"] for r in rs),
                "subtiles_during_mma": statistics.median(r["during"] for r in rs),
            }
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    return {"device": torch.cuda.get_device_name(0), "sms": sms, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON here (default: stdout)")
    parser.add_argument("--compile-only", action="store_true", help="cross-compile for sm_90a, no GPU")
    parser.add_argument("--mma-clk", type=int, default=4_000_000, help="tensor clocks of MMA work per SM")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--loads", action="store_true", help="the second experiment: TMA loads beside the MMAs")
    args = parser.parse_args()
    if args.compile_only:
        compile_only()
        return
    if not torch.cuda.is_available():
        print("h200_smem_contention: no GPU here; it measures an H200 (sm_90). Nothing done.")
        return
    result = measure_loads(args.mma_clk, args.repeats) if args.loads else measure(args.mma_clk, args.repeats)
    write_record(result, args.out)


if __name__ == "__main__":
    main()
