"""How long does an mbarrier hand-over take on an H200 (sm_90): a local arrive, and a remote (DSMEM) one in a pair?

The timing model prices every hand-over between the kernel's partitions with two latencies: an arrive on a barrier
of the waiter's own CTA wakes it after ``mbarrier_local_clk``, an arrive over distributed shared memory on a barrier of
the *other* CTA of the pair (``acc_empty`` and the overlap barrier: the peer's epilogue arrives on the leader's
barrier; the model charges the same value to every arrival from the other CTA, the peer's TMA completions and the
lead's multicast commits too) after ``mbarrier_remote_clk``.  Both were estimates (40 and ~200 clocks) and the B300
fit put the remote one at 403 clocks.  Hopper has the same cluster mbarriers (``mbarrier.arrive.shared::cluster``
on an address made with ``mapa``, ``mbarrier.try_wait.parity``): this measures both hops with the instructions the
compiled kernel uses.

Ping-pong: one thread of each side, each spinning on its own barrier (count 1) with ``try_wait.parity`` and, once it
returns, arriving on the other side's barrier.  The leader reads ``%clock64`` (SM clocks) and ``%globaltimer`` (ns)
before and after ``iters`` round trips (after ``warm`` untimed ones): one hop = a round trip / 2, from an arrive's
issue to the waiter's loop leaving with the phase flipped, i.e. what the model calls the latency.  Three pairs:

* ``remote``: the two CTAs of a 2-CTA cluster (``.reqnctapercluster 2, 1, 1``; two SMs of one GPC), arrives over
  DSMEM on the peer's barrier -- the kernel's ``acc_empty`` / overlap hand-over;
* ``local``: two warps of one CTA -- the kernel's per-CTA hand-overs (``acc_ready``, ``load_empty``, ...);
* ``remote-relay``: as ``remote``, but each side is a 4-warp group that synchronises with ``bar.sync`` before one
  thread arrives (the compiled kernel's epilogue does ``bar.sync 0, 128`` then one elected arrive).

Each runs with one pair alone and with a pair on every SM at once (``--clusters``), ``--repeats`` times.

The PTX is written here (no compiler needed on the device) and loaded through the CUDA driver with ``ctypes``;
PyTorch only allocates the output.  ``--compile-only`` checks the PTX with Triton's ``ptxas`` (runs without a GPU).
Run on the device: ``python3 benchmarks/h200_mbarrier_latency.py --out result.json``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: per thread that reports: clocks, nanoseconds, SM id, cluster rank
OUT_WORDS = 4

_HEADER = """.version 8.0
.target sm_90a
.address_size 64
"""


# One side's loop.  %r3: own barrier (shared::cta), %r5: the other side's barrier; %p7: this thread starts each round
# (the leader's talker), %p8: it answers (the follower's talker); %p6: it reports.  ``sync_lead`` / ``sync_follow`` go
# before the leader's / the follower's arrive (the relay variant's bar.sync).
def _loop(arrive_space: str, sync_lead: str = "", sync_follow: str = "") -> str:
    return f"""
    add.u32 %r22, %r20, %r21;
    mov.u32 %r6, 0;
    mov.u32 %r7, 0;
    mov.u64 %rd2, 0;
    mov.u64 %rd4, 0;
LOOP:
    setp.ne.u32 %p3, %r6, %r20;
    @%p3 bra NOSTART;
    mov.u64 %rd2, %clock64;
    mov.u64 %rd4, %globaltimer;
NOSTART:
    {sync_lead}
    @%p7 mbarrier.arrive.{arrive_space}.b64 _, [%r5];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r3], %r7;
    @!%p4 bra WAIT;
    {sync_follow}
    @%p8 mbarrier.arrive.{arrive_space}.b64 _, [%r5];
    xor.b32 %r7, %r7, 1;
    add.u32 %r6, %r6, 1;
    setp.lt.u32 %p5, %r6, %r22;
    @%p5 bra LOOP;
    mov.u64 %rd3, %clock64;
    mov.u64 %rd5, %globaltimer;
    sub.u64 %rd6, %rd3, %rd2;
    sub.u64 %rd7, %rd5, %rd4;
    mov.u32 %r8, %smid;
    cvt.u64.u32 %rd8, %r8;
    cvt.u64.u32 %rd9, %r9;
    mul.wide.u32 %rd10, %r10, {OUT_WORDS * 8};
    add.u64 %rd11, %rd1, %rd10;
    @%p6 st.global.u64 [%rd11], %rd6;
    @%p6 st.global.u64 [%rd11+8], %rd7;
    @%p6 st.global.u64 [%rd11+16], %rd8;
    @%p6 st.global.u64 [%rd11+24], %rd9;
"""


_PARAMS = "(.param .u64 out_ptr, .param .u32 warm, .param .u32 iters)"
_REGS = """    .reg .pred %p<12>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    ld.param.u64 %rd1, [out_ptr];
    ld.param.u32 %r20, [warm];
    ld.param.u32 %r21, [iters];
    mov.u32 %r1, %tid.x;
"""


def _remote_kernel(name: str, side: str) -> str:
    """Two CTAs of a cluster, side = cluster rank.  ``side``: ``thread``, thread 0 of each side alone (its warp's
    other lanes wait at the cluster barrier); ``warp``, the 32 threads of a warp all spin and thread 0 arrives (the
    compiled MMA and load warps' form); ``relay``, 128 threads a side all spin, then meet at ``bar.sync 1, 128``
    before thread 0 arrives (the compiled epilogue's order)."""
    threads = 128 if side == "relay" else 32
    if side == "relay":
        body = _loop("shared::cluster", "@%p2 bar.sync 1, 128;", "@!%p2 bar.sync 1, 128;")
    else:
        body = _loop("shared::cluster")
    skip = "    @!%p1 bra SKIP;" if side == "thread" else ""
    return f"""
.visible .entry {name}{_PARAMS}
.reqntid {threads}, 1, 1
.reqnctapercluster 2, 1, 1
{{
{_REGS}    .shared .align 8 .b64 bar;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r9, %r2;
    mov.u32 %r11, %clusterid.x;
    shl.b32 %r10, %r11, 1;
    add.u32 %r10, %r10, %r2;
    mov.u32 %r3, bar;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [%r3], 1;
    fence.mbarrier_init.release.cluster;
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;
    xor.b32 %r4, %r2, 1;
    mapa.shared::cluster.u32 %r5, %r3, %r4;
    setp.eq.u32 %p2, %r2, 0;
    setp.ne.u32 %p9, %r2, 0;
    and.pred %p6, %p1, %p2;
    and.pred %p7, %p1, %p2;
    and.pred %p8, %p1, %p9;
{skip}
{body}
SKIP:
    barrier.cluster.arrive.release;
    barrier.cluster.wait.acquire;
    ret;
}}
"""


def _local_kernel(name: str, converged: bool) -> str:
    """Two warps of one CTA, side = warp, spinning on its own barrier: lane 0 of each alone, or (``converged``) all
    32 lanes, lane 0 arriving."""
    return f"""
.visible .entry {name}{_PARAMS}
.reqntid 64, 1, 1
{{
{_REGS}    .shared .align 8 .b64 bars[2];
    shr.u32 %r12, %r1, 5;
    and.b32 %r13, %r1, 31;
    mov.u32 %r9, %r12;
    mov.u32 %r10, %ctaid.x;
    mov.u32 %r14, bars;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [%r14], 1;
    @%p1 mbarrier.init.shared::cta.b64 [%r14+8], 1;
    bar.sync 0;
    mul.lo.u32 %r15, %r12, 8;
    add.u32 %r3, %r14, %r15;
    xor.b32 %r16, %r12, 1;
    mul.lo.u32 %r17, %r16, 8;
    add.u32 %r5, %r14, %r17;
    setp.eq.u32 %p10, %r13, 0;
    setp.eq.u32 %p2, %r12, 0;
    setp.ne.u32 %p9, %r12, 0;
    and.pred %p6, %p10, %p2;
    and.pred %p7, %p10, %p2;
    and.pred %p8, %p10, %p9;
{"" if converged else "    @!%p10 bra DONE;"}
{_loop("shared::cta")}
DONE:
    ret;
}}
"""


KERNELS = {
    "remote": ("remote_pingpong", 32, 2),
    "remote-warp": ("remote_warp_pingpong", 32, 2),
    "remote-relay": ("remote_relay_pingpong", 128, 2),
    "local": ("local_pingpong", 64, 1),
    "local-warp": ("local_warp_pingpong", 64, 1),
}


def ptx() -> str:
    """The module: the three ping-pong kernels."""
    return (
        _HEADER
        + _remote_kernel("remote_pingpong", "thread")
        + _remote_kernel("remote_warp_pingpong", "warp")
        + _remote_kernel("remote_relay_pingpong", "relay")
        + _local_kernel("local_pingpong", converged=False)
        + _local_kernel("local_warp_pingpong", converged=True)
    )


def _triton_tool(name: str) -> Path:
    import triton  # noqa: PLC0415 -- only to find the tools it ships

    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name


def assemble() -> dict[str, str]:
    """Assemble the PTX for sm_90a with Triton's ``ptxas`` (no GPU needed); the SASS of each kernel, by name.
    Raises ``RuntimeError`` with ptxas's message if it refuses the PTX."""
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / "pingpong.ptx", Path(tmp) / "pingpong.cubin"
        src.write_text(ptx())
        run = subprocess.run(
            [str(_triton_tool("ptxas")), "-arch=sm_90a", str(src), "-o", str(cubin)], capture_output=True, text=True
        )
        if run.returncode != 0:
            raise RuntimeError(f"ptxas refused the PTX:\n{run.stderr}")
        dump = subprocess.run(
            [str(_triton_tool("cuobjdump")), "-sass", str(cubin)], capture_output=True, text=True, check=True
        ).stdout
    sass: dict[str, str] = {}
    for part in dump.split("Function : ")[1:]:
        name, _, body = part.partition("\n")
        sass[name.strip()] = body
    return sass


def compile_only() -> None:
    """Check the PTX assembles and print each kernel's instructions that the measurement is about."""
    try:
        sass = assemble()
    except RuntimeError as err:
        sys.exit(str(err))
    for name, body in sass.items():
        arrives = body.count("SYNCS.ARRIVE")
        waits = body.count("SYNCS.PHASECHK")
        print(f"{name}: sm_90a ok, {arrives} mbarrier arrive(s), {waits} try_wait(s) in its SASS")


class Driver:
    """The few CUDA driver calls this needs, through ``ctypes`` (the primary context PyTorch made current)."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(rc, ctypes.byref(name))
            raise RuntimeError(f"{what}: CUDA driver error {rc} ({(name.value or b'?').decode()})")

    def load(self, source: str) -> ctypes.c_void_p:
        module = ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), source.encode() + b"\0"), "cuModuleLoadData")
        return module

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), f"cuModuleGetFunction {name}")
        return fn

    def launch(self, fn: ctypes.c_void_p, blocks: int, threads: int, out_ptr: int, warm: int, iters: int) -> None:
        args = [ctypes.c_uint64(out_ptr), ctypes.c_uint32(warm), ctypes.c_uint32(iters)]
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
        rc = self.lib.cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, None, params, None)
        self.check(rc, "cuLaunchKernel")
        self.check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")


def run_kernel(drv: Driver, fn: ctypes.c_void_p, kind: str, pairs: int, warm: int, iters: int) -> dict:
    """One launch with ``pairs`` pairs; per pair the leader's clocks and ns per hop (a round trip / 2)."""
    import torch  # noqa: PLC0415 -- the device's PyTorch allocates the output

    _, threads, ctas_per_pair = KERNELS[kind]
    reporters = pairs * (1 if kind.startswith("local") else 2)
    out = torch.zeros(reporters * OUT_WORDS, dtype=torch.int64, device="cuda")
    drv.launch(fn, pairs * ctas_per_pair, threads, out.data_ptr(), warm, iters)
    rows = out.view(reporters, OUT_WORDS).cpu().tolist()
    leaders = [r for r in rows if r[0] > 0]
    hops_clk = [r[0] / iters / 2 for r in leaders]
    hops_ns = [r[1] / iters / 2 for r in leaders]
    return {
        "pairs": pairs,
        "leaders_reporting": len(leaders),
        "hop_clk": [round(h, 2) for h in hops_clk],
        "hop_ns": [round(h, 2) for h in hops_ns],
        "ghz": [round(r[0] / r[1], 4) for r in leaders if r[1] > 0],
        "leader_sms": [r[2] for r in leaders],
    }


def measure(repeats: int, warm: int, iters: int, sms: int) -> dict:
    """Every kernel, one pair alone and a pair on every SM (two SMs per remote pair), ``repeats`` times."""
    import torch  # noqa: PLC0415

    torch.zeros(1, device="cuda")  # makes the primary context current
    drv = Driver()
    module = drv.load(ptx())
    results: dict[str, dict] = {}
    for kind, (name, _, ctas_per_pair) in KERNELS.items():
        fn = drv.function(module, name)
        for label, pairs in (("one pair", 1), ("every SM", sms // ctas_per_pair)):
            runs = [run_kernel(drv, fn, kind, pairs, warm, iters) for _ in range(repeats)]
            hops = [h for r in runs for h in r["hop_clk"]]
            per_run_median = [statistics.median(r["hop_clk"]) for r in runs]
            results[f"{kind}, {label}"] = {
                "pairs": pairs,
                "median_hop_clk": round(statistics.median(hops), 2),
                "min_hop_clk": round(min(hops), 2),
                "max_hop_clk": round(max(hops), 2),
                "per_run_median_hop_clk": [round(h, 2) for h in per_run_median],
                "median_hop_ns": round(statistics.median(h for r in runs for h in r["hop_ns"]), 2),
                "median_ghz": round(statistics.median(g for r in runs for g in r["ghz"]), 4),
                "runs": runs if pairs == 1 else [{k: v for k, v in r.items() if k != "leader_sms"} for r in runs],
            }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile-only", action="store_true", help="assemble the PTX with ptxas and stop")
    parser.add_argument("--print-ptx", action="store_true", help="print the PTX and stop")
    parser.add_argument("--warm", type=int, default=1000, help="untimed round trips first")
    parser.add_argument("--iters", type=int, default=20000, help="timed round trips")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, help="write the JSON here (default: stdout)")
    args = parser.parse_args()
    if args.print_ptx:
        print(ptx())
        return
    if args.compile_only:
        compile_only()
        return
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        print("no GPU: nothing measured (use --compile-only to check the PTX)")
        return
    props = torch.cuda.get_device_properties(0)
    result = {
        "device": props.name,
        "sms": props.multi_processor_count,
        "capability": f"{props.major}.{props.minor}",
        "torch": torch.__version__,
        "warm": args.warm,
        "iters": args.iters,
        "repeats": args.repeats,
        "results": measure(args.repeats, args.warm, args.iters, props.multi_processor_count),
        "ptx": ptx(),
    }
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text)
        summary = {k: v["median_hop_clk"] for k, v in result["results"].items()}
        print(json.dumps(summary, indent=1))
    else:
        print(text)


if __name__ == "__main__":
    main()
