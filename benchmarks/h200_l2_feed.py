"""Does the kernel's own load stream get less of L2 than tiles no other SM reads?  (an H200, sm_90; Gluon, Triton 3.9)

A timing-model trial (docs/NOTES.md, 2026-12-05) fits the published B300 rows three times better if L2 serves the
kernel's TMA loads at about 12 TB/s -- below the 16 TB/s a Blackwell lower bound gives (Triton's tutorial 11, a 1-CTA
kernel with a grouped tile order, on a part it does not name).  One way both could hold: the *pattern* of this
kernel's loads costs L2 bandwidth.  Its persistent schedule walks the 256 x 256 tiles row-major with a cluster
stride, so one wave of clusters reads a few A row panels, each by up to 32 clusters at the same K block at once
(the clusters run in step along K), and every B column panel.  This measures that pattern's feed rate on Hopper,
against tiles no other SM reads, with no MMA in the way.

One CTA per SM (a five-stage ring of 2 x 16 KB takes 160 KB of shared memory), a plain grid of ``2 x clusters``
programs (program ``p`` is CTA ``p % 2`` of cluster ``p // 2``).  Per K step a CTA loads its own 128 rows of A and
128 rows of B (128 x 128 bytes each: an FP8 K step of BLOCK_K = 128, 32 KB, as in the kernel's ``load_partition``)
on one mbarrier, waits for it and reissues into the stage.  Tile orders (``ORDERS``):

* ``kernel``: the kernel's schedule (cluster ``c`` takes tiles ``c, c + C, ...``, row-major over the tile grid);
* ``kernel, K rotated``: the same tiles and bytes, each cluster starting its K walk ``c`` blocks later, so clusters
  that share a panel no longer read the same K block at the same moment (in step vs out of step);
* ``grouped``: tutorial 11's order (groups of 8 tile rows, column by column within a group);
* ``private``: every CTA reads its own rows of a second pair of tensors, cycling over 512 bytes of K: nothing
  shared, L2-resident (the baseline).

K = 512 and 2048 bytes (A and B together 8 and 32 MB: they fit the H200's 50 MB L2), M = N = 8192.  Time: CUDA
events around single launches, back to back with L2 left warm (``do_bench`` would flush L2 before each one, and the
first wave's misses would then be timed too); the median of ``REPEATS``.  The rate is the bytes the TMA engines
brought in over that time.  The first
``TRACE`` loads of every CTA log their (A row, B row, K) so the record shows which order ran.

Run on the device: ``python3 benchmarks/h200_l2_feed.py --out result.json`` (needs Triton 3.9's Gluon:
``../shared/tools/triton39-for-h200``); ``--compile-only`` cross-compiles every order for sm_90a here, without a GPU.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

ROWS, K_BYTES = 128, 128  # one TMA box: a CTA's 128 rows of one FP8 K step (BLOCK_K = 128) = 16 KB
TILE = 256  # a cluster's tile is 256 x 256: two CTAs of 128 rows each, of A and of B
GROUP_M = 8  # tutorial 11's grouped order
STAGES = 5  # the kernel's ring depth
TRACE = 8  # loads logged per CTA
PRIVATE_K = 512  # bytes of K the private order cycles over
ORDERS = {0: "kernel", 1: "kernel, K rotated", 2: "grouped", 3: "private"}
BOX_BYTES = ROWS * K_BYTES
REPEATS = 20  # timed launches per row (after 3 untimed)
# the same numbers as the kernels see them (a @gluon.jit function reads only gl.constexpr globals)
_ROWS, _K_BYTES, _TILE = gl.constexpr(ROWS), gl.constexpr(K_BYTES), gl.constexpr(TILE)
_GROUP_M, _STAGES, _TRACE = gl.constexpr(GROUP_M), gl.constexpr(STAGES), gl.constexpr(TRACE)


@gluon.jit
def _rows_of(tile, half, tiles_m, TILES_N: gl.constexpr, ORDER: gl.constexpr):
    """The first A row and B row a CTA (``half`` of its cluster) reads for ``tile`` in ``ORDER``."""
    if ORDER == 2:
        per_group = _GROUP_M * TILES_N
        first_m = (tile // per_group) * _GROUP_M
        size_m = gl.minimum(tiles_m - first_m, _GROUP_M)
        tile_m = first_m + (tile % per_group) % size_m
        tile_n = (tile % per_group) // size_m
    else:
        tile_m = tile // TILES_N
        tile_n = tile % TILES_N
    return tile_m * _TILE + half * _ROWS, tile_n * _TILE + half * _ROWS


@gluon.jit
def _issue(
    a_desc,
    b_desc,
    a_bufs,
    b_bufs,
    bars,
    trace,
    j,
    k_steps,
    clusters,
    tiles_m,
    TILES_N: gl.constexpr,
    ORDER: gl.constexpr,
):
    """Issue load ``j`` of this CTA: its A and B boxes of one K step, on stage ``j % _STAGES``'s barrier."""
    pid = gl.program_id(0)
    cluster = pid // 2
    half = pid % 2
    step = j % k_steps
    if ORDER == 1:
        step = (step + cluster) % k_steps
    if ORDER == 3:
        a_row = pid * _ROWS
        b_row = pid * _ROWS
    else:
        a_row, b_row = _rows_of(cluster + (j // k_steps) * clusters, half, tiles_m, TILES_N, ORDER)
    s = j % _STAGES
    bar = bars.index(s)
    mbarrier.expect(bar, 2 * a_desc.block_type.nbytes)
    tma.async_load(a_desc, [a_row, step * _K_BYTES], bar, a_bufs.index(s))
    tma.async_load(b_desc, [b_row, step * _K_BYTES], bar, b_bufs.index(s))
    if j < _TRACE:
        gl.store(trace + (pid * _TRACE + j) * 3 + 0, a_row)
        gl.store(trace + (pid * _TRACE + j) * 3 + 1, b_row)
        gl.store(trace + (pid * _TRACE + j) * 3 + 2, step * _K_BYTES)


@gluon.jit
def feed_kernel(a_desc, b_desc, trace, k_steps, num_tiles, tiles_m, TILES_N: gl.constexpr, ORDER: gl.constexpr):
    """Every CTA loads its tiles' K steps through a five-stage ring, as the kernel's load partition does, with the
    MMA's release replaced by the load's own arrival."""
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [_STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [_STAGES] + b_desc.block_type.shape, b_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [_STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(_STAGES):
        mbarrier.init(bars.index(s), count=1)
    clusters = gl.num_programs(0) // 2
    cluster = gl.program_id(0) // 2
    total = gl.maximum((num_tiles - cluster + clusters - 1) // clusters, 0) * k_steps
    for j in range(gl.minimum(total, _STAGES)):
        _issue(a_desc, b_desc, a_bufs, b_bufs, bars, trace, j, k_steps, clusters, tiles_m, TILES_N, ORDER)
    for j in range(total):
        mbarrier.wait(bars.index(j % _STAGES), (j // _STAGES) % 2)
        if j + _STAGES < total:
            _issue(a_desc, b_desc, a_bufs, b_bufs, bars, trace, j + _STAGES, k_steps, clusters, tiles_m, TILES_N, ORDER)
    for s in gl.static_range(_STAGES):
        mbarrier.invalidate(bars.index(s))


def tile_of(order: str, tile: int, tiles_m: int, tiles_n: int) -> tuple[int, int]:
    """(tile row, tile column) of ``tile`` in ``order`` (the host's reading of ``_rows_of``, for the report)."""
    if order == "grouped":
        per_group = GROUP_M * tiles_n
        first_m = (tile // per_group) * GROUP_M
        size_m = min(tiles_m - first_m, GROUP_M)
        return first_m + (tile % per_group) % size_m, (tile % per_group) // size_m
    return tile // tiles_n, tile % tiles_n


def sharing(order: str, clusters: int, tiles_m: int, tiles_n: int) -> dict:
    """How the first wave's clusters share panels in ``order``: distinct A row panels and B column panels, and the
    most clusters reading one of each (the CTAs reading one 16 KB box at the same K block when in step)."""
    if order == "private":
        return {"a_panels": clusters, "b_panels": clusters, "most_sharing_a": 1, "most_sharing_b": 1}
    tiles = [tile_of(order, t, tiles_m, tiles_n) for t in range(min(clusters, tiles_m * tiles_n))]
    rows = [m for m, _ in tiles]
    cols = [n for _, n in tiles]
    return {
        "a_panels": len(set(rows)),
        "b_panels": len(set(cols)),
        "most_sharing_a": max(rows.count(r) for r in set(rows)),
        "most_sharing_b": max(cols.count(c) for c in set(cols)),
    }


def _descriptors(device: str, m: int, n: int, k: int, sms: int):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout.get_default_for([ROWS, K_BYTES], gl.float8e4nv)
    tensors = {
        "shared": (
            torch.zeros((m, k), dtype=torch.float8_e4m3fn, device=device),
            torch.zeros((n, k), dtype=torch.float8_e4m3fn, device=device),
        ),
        "private": (
            torch.zeros((sms * ROWS, PRIVATE_K), dtype=torch.float8_e4m3fn, device=device),
            torch.zeros((sms * ROWS, PRIVATE_K), dtype=torch.float8_e4m3fn, device=device),
        ),
    }
    descs = {
        key: tuple(TensorDescriptor(t, list(t.shape), list(t.stride()), [ROWS, K_BYTES], layout) for t in pair)
        for key, pair in tensors.items()
    }
    return tensors, descs


def _args(descs: dict, trace, order: int, m: int, n: int, k: int) -> tuple:
    a_desc, b_desc = descs["private" if ORDERS[order] == "private" else "shared"]
    k_steps = (PRIVATE_K if ORDERS[order] == "private" else k) // K_BYTES
    tiles_m, tiles_n = m // TILE, n // TILE
    if ORDERS[order] == "private":  # the same number of loads per CTA as the kernel's order at this K
        k_steps_per_tile = k // K_BYTES
        return a_desc, b_desc, trace, k_steps, tiles_m * tiles_n * k_steps_per_tile // k_steps, tiles_m, tiles_n, order
    return a_desc, b_desc, trace, k_steps, tiles_m * tiles_n, tiles_m, tiles_n, order


def compile_only(m: int = 8192, n: int = 8192) -> dict[str, str]:
    """Cross-compile every order for sm_90a (no GPU); returns each order's PTX."""
    import triton
    from triton.backends.compiler import GPUTarget

    from gluon_overlap.compiler.compile import source_for

    sms = 132
    _, descs = _descriptors("meta", m, n, 512, sms)
    trace = torch.empty(sms * TRACE * 3, dtype=torch.int32, device="meta")
    ptx = {}
    for order, name in ORDERS.items():
        ck = triton.compile(
            source_for(feed_kernel, _args(descs, trace, order, m, n, 512)),
            target=GPUTarget("cuda", 90, 32),
            options={"num_warps": 1},
        )
        ptx[name] = ck.asm["ptx"]
        print(f"{name}: TMA loads {ptx[name].count('cp.async.bulk.tensor')}, shared {ck.metadata.shared} B")
    return ptx


def _seconds(launch) -> float:
    """Median time of single launches, back to back, L2 left warm."""
    for _ in range(3):
        launch()
    times = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


def measure(m: int, n: int, ks: list[int]) -> dict:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    clusters = sms // 2
    grid = 2 * clusters
    trace = torch.zeros(grid * TRACE * 3, dtype=torch.int32, device="cuda")
    rows = []
    for k in ks:
        tensors, descs = _descriptors("cuda", m, n, k, sms)
        for order, name in ORDERS.items():
            args = _args(descs, trace, order, m, n, k)
            launch = functools.partial(feed_kernel[(grid,)], *args, num_warps=1)
            seconds = _seconds(launch)
            k_steps, num_tiles = args[3], args[4]
            loads = sum(max(0, -(-(num_tiles - c) // clusters)) * k_steps for c in range(clusters)) * 2
            nbytes = loads * 2 * BOX_BYTES
            row = {
                "order": name,
                "k": k,
                "ctas": grid,
                "bytes": nbytes,
                "seconds": seconds,
                "tb_s": nbytes / seconds / 1e12,
                "sharing": sharing(name, clusters, m // TILE, n // TILE),
                "trace_first_cta_pair": trace.view(grid, TRACE, 3)[:2].tolist(),
            }
            rows.append(row)
            print(json.dumps({key: row[key] for key in ("order", "k", "tb_s")}), file=sys.stderr)
        del tensors
    q = "--query-gpu=clocks.sm,clocks.max.sm,clocks.mem"
    smi = subprocess.run(["nvidia-smi", q, "--format=csv"], capture_output=True, text=True).stdout
    return {"device": torch.cuda.get_device_name(0), "sms": sms, "m": m, "n": n, "rows": rows, "nvidia_smi": smi}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON here (default: stdout)")
    parser.add_argument("--compile-only", action="store_true", help="cross-compile for sm_90a, no GPU")
    parser.add_argument("--k", type=int, nargs="+", default=[512, 2048], help="K in bytes (multiples of 128)")
    args = parser.parse_args()
    if any(k <= 0 or k % K_BYTES for k in args.k):
        parser.error(f"--k: every K must be a positive multiple of {K_BYTES}, got {args.k}")
    if args.compile_only:
        compile_only()
        return
    if not torch.cuda.is_available():
        print("h200_l2_feed: no GPU here; it measures an H200 (sm_90). Nothing done.")
        return
    text = json.dumps(measure(8192, 8192, args.k), indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
