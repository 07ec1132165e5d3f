"""How fast do TMA stores drain when every SM stores tiles at once?  (Hopper H200; Triton's TMA store.)

Each program of a persistent grid stores 128 x 32 float16 tiles (8 KB, the kernel's epilogue subtile) through a
tensor descriptor (``cp.async.bulk.tensor`` global <- shared, then ``cp.async.bulk.wait_group.read``) at
successive tile positions of C.  C either fits in L2 (rewritten many times) or is far larger (HBM).  Baselines:
``torch.fill_`` (plain stores) and a device copy.  Prints one JSON object; see data/measurements/.
Run on the device: ``python3 benchmarks/tma_store_drain.py``.
"""

import functools
import json
import subprocess

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def store_tiles(d, R, C, T, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.program_id(0)
    n = tl.num_programs(0)
    x = tl.zeros([BM, BN], tl.float16) + p.to(tl.float16)
    nc = C // BN
    nt = (R // BM) * nc
    for i in range(T):
        t = (p + i * n) % nt
        d.store([(t // nc) * BM, (t % nc) * BN], x)


@triton.jit
def load_tiles(d, out, R, C, T, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.program_id(0)
    n = tl.num_programs(0)
    acc = tl.zeros([BM, BN], tl.float32)
    nc = C // BN
    nt = (R // BM) * nc
    for i in tl.range(T, num_stages=3):
        t = (p + i * n) % nt
        acc += d.load([(t // nc) * BM, (t % nc) * BN]).to(tl.float32)
    tl.store(out + p, tl.sum(acc))


@triton.jit
def load_and_store_tiles(d_in, d_out, out, R, C, T, BM: tl.constexpr, BN: tl.constexpr):
    """Every iteration loads one tile of ``d_in`` and stores one into ``d_out``: loads and stores at once."""
    p = tl.program_id(0)
    n = tl.num_programs(0)
    acc = tl.zeros([BM, BN], tl.float32)
    x = tl.zeros([BM, BN], tl.float16) + p.to(tl.float16)
    nc = C // BN
    nt = (R // BM) * nc
    for i in tl.range(T, num_stages=3):
        t = (p + i * n) % nt
        acc += d_in.load([(t // nc) * BM, (t % nc) * BN]).to(tl.float32)
        d_out.store([(t // nc) * BM, (t % nc) * BN], x)
    tl.store(out + p, tl.sum(acc))


def bench(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200) * 1e-3  # seconds


def main():
    if not torch.cuda.is_available():
        print("tma_store_drain: needs an NVIDIA GPU (the lent H200); none here, nothing measured")
        return
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = {"gpu": torch.cuda.get_device_name(0), "sms": sms, "triton": triton.__version__, "rows": []}
    BM, BN = 128, 32
    for label, rows, cols in (("fits_l2_16MB", 8192, 1024), ("hbm_2GiB", 65536, 16384)):
        c = torch.empty(rows, cols, dtype=torch.float16, device="cuda")
        d = TensorDescriptor.from_tensor(c, [BM, BN])
        total = 2**31  # bytes stored per launch
        for per_sm in (1, 2, 4, 8):
            grid = sms * per_sm
            t_per = total // (BM * BN * 2) // grid
            s = bench(functools.partial(store_tiles[(grid,)], d, rows, cols, t_per, BM=BM, BN=BN, num_warps=4))
            nbytes = grid * t_per * BM * BN * 2
            out["rows"].append(
                {
                    "what": "tma_store",
                    "c": label,
                    "programs_per_sm": per_sm,
                    "bytes": nbytes,
                    "seconds": s,
                    "tb_s": nbytes / s / 1e12,
                }
            )
        s = bench(functools.partial(c.fill_, 1.0))
        out["rows"].append(
            {"what": "fill_", "c": label, "bytes": c.numel() * 2, "seconds": s, "tb_s": c.numel() * 2 / s / 1e12}
        )
        if label.startswith("fits"):
            res = torch.empty(sms * 8, dtype=torch.float32, device="cuda")
            for per_sm in (1, 2, 4, 8):
                grid = sms * per_sm
                t_per = total // (BM * BN * 2) // grid
                s = bench(functools.partial(load_tiles[(grid,)], d, res, rows, cols, t_per, BM=BM, BN=BN, num_warps=4))
                nbytes = grid * t_per * BM * BN * 2
                out["rows"].append(
                    {
                        "what": "tma_load",
                        "c": label,
                        "programs_per_sm": per_sm,
                        "bytes": nbytes,
                        "seconds": s,
                        "tb_s": nbytes / s / 1e12,
                    }
                )
            c2 = torch.empty_like(c)
            d2 = TensorDescriptor.from_tensor(c2, [BM, BN])
            for per_sm in (2, 4, 8):
                grid = sms * per_sm
                t_per = total // (BM * BN * 2) // grid
                s = bench(
                    functools.partial(
                        load_and_store_tiles[(grid,)], d, d2, res, rows, cols, t_per, BM=BM, BN=BN, num_warps=4
                    )
                )
                nbytes = 2 * grid * t_per * BM * BN * 2
                out["rows"].append(
                    {
                        "what": "tma_load_and_store",
                        "c": label,
                        "programs_per_sm": per_sm,
                        "bytes": nbytes,
                        "seconds": s,
                        "tb_s": nbytes / s / 1e12,
                    }
                )
    a = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    s = bench(functools.partial(b.copy_, a))
    out["rows"].append(
        {
            "what": "copy_read+write",
            "c": "hbm_1GiB",
            "bytes": 2 * a.numel(),
            "seconds": s,
            "tb_s": 2 * a.numel() / s / 1e12,
        }
    )
    q = "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem"
    out["nvidia_smi"] = subprocess.run(["nvidia-smi", q, "--format=csv"], capture_output=True, text=True).stdout
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
