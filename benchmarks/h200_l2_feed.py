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
* ``kernel, K rotated``: the same tiles and bytes, cluster ``c`` starting its K walk ``c + c // 32`` blocks later,
  so the clusters sharing an A panel (``c ... c + 31``) or a B panel (``c, c + 32, c + 64``) no longer read the same
  K block at the same moment (in step vs out of step; with ``K / 128`` blocks, at least ``32 / (K / 128)`` CTAs
  still meet on an A box);
* ``grouped``: tutorial 11's order (groups of 8 tile rows, column by column within a group);
* ``private``: every CTA reads its own rows of a second pair of tensors, cycling over 256 bytes of K: nothing
  shared, L2-resident, its tensors (8.7 MB) as large as the shared ones at K = 512 (the baseline).

``sharing()`` counts, for the first wave, the distinct boxes and the most CTAs loading one box at the same load.
Every order makes the same loads per CTA, and each launch repeats its walk over the tiles until about 8 GB have
been loaded (a millisecond), so start-up and the uneven last wave weigh little.

K = 512, 1024 and 2048 bytes (A and B together 8, 17 and 34 MB), M = N = 8192.  The H200's L2 is 50 MB in two
partitions; if a partition keeps its own copy of what SMs on both sides read, the K = 2048 row may partly measure
HBM (the K = 512 and 1024 rows fit either way).  Time: CUDA events around single launches with L2 left warm (no
flush between them, unlike ``do_bench``), the GPU kept busy while the host enqueues (``torch.cuda._sleep``), the
median of ``REPEATS``; the rate is the bytes the TMA engines brought in over that time.  The first ``TRACE`` loads
of every CTA are logged as (A row, B row, K offset), to be checked against ``coords()``.

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
from _h200 import compile_for_sm90, write_record
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

ROWS, K_BYTES = 128, 128  # one TMA box: a CTA's 128 rows of one FP8 K step (BLOCK_K = 128) = 16 KB
TILE = 256  # a cluster's tile is 256 x 256: two CTAs of 128 rows each, of A and of B
GROUP_M = 8  # tutorial 11's grouped order
STAGES = 5  # the kernel's ring depth
TRACE = 8  # loads logged per CTA
PRIVATE_K = 256  # bytes of K the private order cycles over: its tensors (8.7 MB) as large as the shared ones at K = 512
ORDERS = {0: "kernel", 1: "kernel, K rotated", 2: "grouped", 3: "private"}
BOX_BYTES = ROWS * K_BYTES
REPEATS = 10  # timed launches per row (after 2 untimed)
# the same numbers as the kernels see them (a @gluon.jit function reads only gl.constexpr globals)
_ROWS, _K_BYTES, _TILE = gl.constexpr(ROWS), gl.constexpr(K_BYTES), gl.constexpr(TILE)
_GROUP_M, _STAGES, _TRACE = gl.constexpr(GROUP_M), gl.constexpr(STAGES), gl.constexpr(TRACE)
_PRIVATE_STEPS = gl.constexpr(PRIVATE_K // K_BYTES)


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
    load,
    k_steps,
    clusters,
    tiles_m,
    TILES_N: gl.constexpr,
    ORDER: gl.constexpr,
):
    """Issue this CTA's ``j``-th load, the ``load``-th of its walk: the A and B boxes of one K step, on stage
    ``j % _STAGES``'s barrier."""
    pid = gl.program_id(0)
    cluster = pid // 2
    half = pid % 2
    step = load % k_steps
    if ORDER == 1:  # out of step: the clusters sharing an A panel (c ... c + 31) or a B panel (c, c + 32, ...) apart
        step = (step + cluster + cluster // TILES_N) % k_steps
    if ORDER == 3:  # private rows, cycling over PRIVATE_K bytes of K
        a_row = pid * _ROWS
        b_row = pid * _ROWS
        step = step % _PRIVATE_STEPS
    else:
        a_row, b_row = _rows_of(cluster + (load // k_steps) * clusters, half, tiles_m, TILES_N, ORDER)
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
def feed_kernel(a_desc, b_desc, trace, k_steps, num_tiles, tiles_m, walks, TILES_N: gl.constexpr, ORDER: gl.constexpr):
    """Every CTA loads its tiles' K steps through a five-stage ring, as the kernel's load partition does, with the
    MMA's release replaced by the load's own arrival; the walk over its tiles is repeated ``walks`` times."""
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [_STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [_STAGES] + b_desc.block_type.shape, b_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [_STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(_STAGES):
        mbarrier.init(bars.index(s), count=1)
    clusters = gl.num_programs(0) // 2
    cluster = gl.program_id(0) // 2
    per_walk = gl.maximum((num_tiles - cluster + clusters - 1) // clusters, 0) * k_steps
    total = per_walk * walks
    for j in range(gl.minimum(total, _STAGES)):
        _issue(a_desc, b_desc, a_bufs, b_bufs, bars, trace, j, j % per_walk, k_steps, clusters, tiles_m, TILES_N, ORDER)
    for j in range(total):
        mbarrier.wait(bars.index(j % _STAGES), (j // _STAGES) % 2)
        nxt = j + _STAGES
        if nxt < total:
            _issue(
                a_desc,
                b_desc,
                a_bufs,
                b_bufs,
                bars,
                trace,
                nxt,
                nxt % per_walk,
                k_steps,
                clusters,
                tiles_m,
                TILES_N,
                ORDER,
            )
    for s in gl.static_range(_STAGES):
        mbarrier.invalidate(bars.index(s))


def coords(order: str, pid: int, load: int, clusters: int, k: int, tiles_m: int, tiles_n: int) -> tuple[int, int, int]:
    """(A row, B row, K byte offset) of a CTA's ``load``-th load of its walk in ``order``: the host's reading of
    ``_issue``, for the report and to check the recorded trace against."""
    cluster, half = divmod(pid, 2)
    k_steps = k // K_BYTES
    step = load % k_steps
    if order == "kernel, K rotated":
        step = (step + cluster + cluster // tiles_n) % k_steps
    if order == "private":
        return pid * ROWS, pid * ROWS, (step % (PRIVATE_K // K_BYTES)) * K_BYTES
    tile = cluster + (load // k_steps) * clusters
    if order == "grouped":
        per_group = GROUP_M * tiles_n
        first_m = (tile // per_group) * GROUP_M
        size_m = min(tiles_m - first_m, GROUP_M)
        tile_m, tile_n = first_m + (tile % per_group) % size_m, (tile % per_group) // size_m
    else:
        tile_m, tile_n = divmod(tile, tiles_n)
    return tile_m * TILE + half * ROWS, tile_n * TILE + half * ROWS, step * K_BYTES


def sharing(order: str, clusters: int, k: int, tiles_m: int, tiles_n: int) -> dict:
    """How the first wave's CTAs share boxes in ``order``: distinct A and B boxes over its first K steps, and the most
    CTAs loading one A box (one B box) at the same load index -- the ones that meet in L2 when the CTAs run in step."""
    most_a = most_b = 0
    boxes_a, boxes_b = set(), set()
    for load in range(k // K_BYTES):
        a_at, b_at = {}, {}
        for pid in range(2 * clusters):
            a_row, b_row, k_off = coords(order, pid, load, clusters, k, tiles_m, tiles_n)
            a_at[(a_row, k_off)] = a_at.get((a_row, k_off), 0) + 1
            b_at[(b_row, k_off)] = b_at.get((b_row, k_off), 0) + 1
        most_a, most_b = max(most_a, *a_at.values()), max(most_b, *b_at.values())
        boxes_a |= set(a_at)
        boxes_b |= set(b_at)
    return {
        "a_boxes": len(boxes_a),
        "b_boxes": len(boxes_b),
        "most_ctas_on_an_a_box": most_a,
        "most_ctas_on_a_b_box": most_b,
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


def walks_for(k: int, m: int = 8192, n: int = 8192) -> int:
    """Walks over the tiles per launch: about 8 GB loaded, so a launch lasts about a millisecond."""
    per_walk = (m // TILE) * (n // TILE) * 2 * (k // K_BYTES) * 2 * BOX_BYTES
    return max(1, round(2**33 / per_walk))


def _args(descs: dict, trace, order: int, m: int, n: int, k: int) -> tuple:
    """``feed_kernel``'s arguments: every order makes the same loads per CTA (the private one at its own rows)."""
    a_desc, b_desc = descs["private" if ORDERS[order] == "private" else "shared"]
    tiles_m, tiles_n = m // TILE, n // TILE
    return a_desc, b_desc, trace, k // K_BYTES, tiles_m * tiles_n, tiles_m, walks_for(k, m, n), tiles_n, order


def compile_only(m: int = 8192, n: int = 8192) -> dict[str, tuple[str, int]]:
    """Cross-compile every order for sm_90a (no GPU); returns each order's PTX and shared-memory bytes."""
    sms = 132
    _, descs = _descriptors("meta", m, n, 512, sms)
    trace = torch.empty(sms * TRACE * 3, dtype=torch.int32, device="meta")
    built = {}
    for order, name in ORDERS.items():
        ck = compile_for_sm90(feed_kernel, _args(descs, trace, order, m, n, 512), num_warps=1)
        built[name] = (ck.asm["ptx"], ck.metadata.shared)
        print(f"{name}: TMA loads {built[name][0].count('cp.async.bulk.tensor')}, shared {built[name][1]} B")
    return built


def _seconds(launch) -> float:
    """Median time of single launches, L2 left warm; the GPU is kept busy (``torch.cuda._sleep``) while the host
    records the start and enqueues the launch, so the host's launch time is not timed."""
    for _ in range(2):
        launch()
    times = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(5_000_000)  # about 2.5 ms at the H200's clock: longer than any enqueue
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
    tiles_m, tiles_n = m // TILE, n // TILE
    trace = torch.zeros(grid * TRACE * 3, dtype=torch.int32, device="cuda")
    rows = []
    for k in ks:
        tensors, descs = _descriptors("cuda", m, n, k, sms)
        for order, name in ORDERS.items():
            args = _args(descs, trace, order, m, n, k)
            trace.zero_()
            launch = functools.partial(feed_kernel[(grid,)], *args, num_warps=1)
            seconds = _seconds(launch)
            k_steps, num_tiles, walks = args[3], args[4], args[6]
            loads = sum(max(0, -(-(num_tiles - c) // clusters)) * k_steps for c in range(clusters)) * 2 * walks
            nbytes = loads * 2 * BOX_BYTES
            row = {
                "order": name,
                "k": k,
                "ctas": grid,
                "walks": walks,
                "bytes": nbytes,
                "seconds": seconds,
                "tb_s": nbytes / seconds / 1e12,
                "sharing": sharing(name, clusters, k, tiles_m, tiles_n),
                "trace": trace.view(grid, TRACE, 3).tolist(),  # every CTA's first loads: (A row, B row, K offset)
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
    parser.add_argument("--k", type=int, nargs="+", default=[512, 1024, 2048], help="K in bytes (multiples of 128)")
    args = parser.parse_args()
    if any(k <= 0 or k % K_BYTES for k in args.k):
        parser.error(f"--k: every K must be a positive multiple of {K_BYTES}, got {args.k}")
    if args.compile_only:
        compile_only()
        return
    if not torch.cuda.is_available():
        print("h200_l2_feed: no GPU here; it measures an H200 (sm_90). Nothing done.")
        return
    write_record(measure(8192, 8192, args.k), args.out)


if __name__ == "__main__":
    main()
