"""What does a scale copy (``tcgen05.cp``) cost the kernel's tensor pipe?  (a Blackwell part: B200, GB200, B300, GB300)

Issue 28's open question.  Every K step the kernel copies its A and B scales from shared memory into one TMEM slot
(``tcgen05.cp``, UTCCP in the SASS: 3 copies a step for kind::mxf8f6f4, 6 for kind::mxf4) and then issues the 2-CTA
block-scaled MMA that reads them.  The timing model prices a copy as its 512 bytes at shared memory's 128 B a clock
(4 clocks, queued on the tensor pipe with the MMAs: 12 or 24 clocks a step); the trials that
mend its FP4 cells (docs/NOTES.md, "Three H200 measurements, taken") need the copies to cost something -- at a tile's
start, when they go into an idle pipe, or per copy behind busy MMAs -- and nothing has measured either.  A Hopper GPU
has no ``tcgen05``: this needs a Blackwell data-center part.

One kernel, the kernel's own instruction sequence with the loads taken out: a 2-CTA cluster loads two K steps of A,
B and their scales into shared memory once (stage ``j % 2`` serves step ``j``, so every copy brings other scales
than the slot holds).  Then one warp per CTA -- as the kernel's MMA partition: no thread barrier in its K step, only
the lead CTA's copies and MMAs issue -- runs one of ``MODES`` between two reads of the lead's clock (``%clock64``),
the first once everything issued before it has landed, the second once a commit of everything after it has
completed (``done``), while the other 4 warps wait to store the accumulator:

* ``steady``: per K step the scale copies and one MMA with its commit, as ``gluon_overlap.kernel.async_mma_scaled``
  (which it calls) -- the mainloop with its operands resident; a ring of ``RING`` commit barriers, the lead waiting
  for each before reuse, lets it run at most ``RING`` steps ahead (the kernel's load ring does the same);
* ``steady, no copies``: the same MMAs, the scales copied once before the clock starts (what the copies cost behind
  busy MMAs is the difference of the two per-step slopes);
* ``steady, copies twice``: every copy issued twice (the copy count at the same MMA: 6 against 3 for FP8);
* ``cold``: per repetition the copies, one MMA, its commit and the lead's wait for it: copies into an idle pipe, as at
  a tile's start (the exposed copy latency is the difference to the next mode);
* ``cold, no copies``: per repetition one MMA, its commit and the wait;
* ``copies only``: the copies of every step (four steps an iteration), then the done commit: their own rate, no MMA.

The steady modes run ``STEPS`` = 8 and 72 steps (the per-step cost is the slope: fill and drain cancel), the others
``REPS`` = 64 (the mean per repetition).  Each mode runs on one cluster alone and with a cluster on every SM pair
(the record counts the distinct SMs the leads ran on); the median of ``REPEATS`` launches.  Each cluster's lead
writes one log row (its SM and the two readings; a compiled 2-CTA kernel stores a scalar from the lead only, which
an H200 showed), and a row left unwritten stops the run, as does a C off the float64 sum of the MMAs the mode issues
(the copies did bring each step's scales).

Run on the device: ``python3 benchmarks/blackwell_scale_copy.py --out result.json``; ``--compile-only`` cross-compiles
every mode for sm_100a here, without a GPU; on any other GPU it refuses before launching.
``tests/timing/test_blackwell_scale_copy.py`` runs every mode on this project's CPU executor (no race, no deadlock,
its operations and waits, C exact), checks the compiled K step against the production kernel's and that the clock
reads bracket the timed work in the SASS, and runs ``measure`` on a stand-in launcher;
``benchmarks/model_trials.py --copy-record result.json scale-copy-measured`` puts the measured costs into the timing
model's trial.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from typing import Any

import torch
import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import (
    TensorMemoryLayout,
    TensorMemoryScalesLayout,
    allocate_tensor_memory,
    mbarrier,
    tcgen05_commit,
    tcgen05_copy,
    tcgen05_mma_barrier_count,
    tcgen05_mma_scaled,
    tensor_memory_descriptor,
    tma,
)
from triton.experimental.gluon.nvidia.blackwell import TensorDescriptor

from gluon_overlap.formats import Problem, random_problem
from gluon_overlap.kernel import (
    CGA_LAYOUT,
    accumulator_window,
    async_mma_scaled,
    element_kind,
    make_descriptors,
    unswizzle_scales_shared_memory,
)
from gluon_overlap.timing.costs import scale_copy_chunks
from gluon_overlap.tmem import TmemPlan, make_plan

MODES = {
    0: "steady",
    1: "steady, no copies",
    2: "steady, copies twice",
    3: "cold",
    4: "cold, no copies",
    5: "copies only",
}
STEADY_MODES = (0, 1, 2, 5)  # timed over two step counts (a slope)
STEPS = (8, 72)
REPS = 64
RING = 5  # commit barriers in flight: the kernel's load ring depth
REPEATS = 5  # launches per row, after one untimed
PAIRS = (("mxfp8", "mxfp8"), ("mxfp8", "mxfp4"), ("mxfp4", "mxfp4"), ("nvfp4", "nvfp4"))
LOG = 3  # per cluster, by its lead CTA: its SM, the clock before the first issue, the clock after the last wait
_RING, _LOG = gl.constexpr(RING), gl.constexpr(LOG)


@gluon.jit
def _clock(TIMED: gl.constexpr):
    """The SM's cycle counter (0 where the kernel is not timed: the CPU executor has no clock)."""
    if TIMED:
        return gl.inline_asm("mov.u64 $0, %clock64;", "=l", [], gl.int64, is_pure=False)
    else:
        return gl.to_tensor(0)


@gluon.jit
def _is_lead(TIMED: gl.constexpr):
    """Whether this is the lead CTA of its pair (rank 0: it issues the pair's copies and MMAs).  Untimed, on the CPU
    executor, which cannot read the rank, both CTAs say yes (their waits are then real in both)."""
    if TIMED:
        return gl.inline_asm("mov.u32 $0, %cluster_ctarank;", "=r", [], gl.int32, is_pure=False) == 0
    else:
        return True


@gluon.jit
def _smid():
    return gl.inline_asm("mov.u32 $0, %smid;", "=r", [], gl.int32, is_pure=False)


@gluon.aggregate
class Buffers:
    """What the two partitions share: the descriptors, the shared-memory stages, TMEM and the barriers."""

    a_desc: tma.tensor_descriptor
    b_desc: tma.tensor_descriptor
    c_desc: tma.tensor_descriptor
    a_scale_desc: tma.tensor_descriptor
    b_scale_desc: tma.tensor_descriptor
    a_smem: gl.shared_memory_descriptor
    b_smem: gl.shared_memory_descriptor
    a_scale_smem: gl.shared_memory_descriptor
    b_scale_smem: gl.shared_memory_descriptor
    tmem_pool: tensor_memory_descriptor
    load_bar: gl.shared_memory_descriptor
    setup_bar: gl.shared_memory_descriptor
    bars: gl.shared_memory_descriptor
    done_bar: gl.shared_memory_descriptor
    acc_bar: gl.shared_memory_descriptor
    TMEM_PLAN: gl.constexpr

    @gluon.jit
    def accumulator(self):
        ACC: gl.constexpr = accumulator_window(self.TMEM_PLAN, 0)
        return self.tmem_pool.slice(ACC[0], ACC[1])

    @gluon.jit
    def scale_slots(self, stage):
        """Stage ``stage``'s scale tiles and the TMEM slots they go to, typed as the MMA reads them (A split by M
        over the pair, B whole in both CTAs)."""
        A_ELEM_PER_BYTE: gl.constexpr = 2 if self.a_desc.dtype == gl.uint8 else 1
        BLOCK_K: gl.constexpr = self.a_desc.block_shape[1] * A_ELEM_PER_BYTE
        VEC: gl.constexpr = self.TMEM_PLAN.vec_size
        a_scale = unswizzle_scales_shared_memory(
            self.a_scale_smem.index(stage), self.a_desc.block_shape[0], BLOCK_K, VEC
        )
        b_scale = unswizzle_scales_shared_memory(
            self.b_scale_smem.index(stage), self.b_desc.block_shape[0], BLOCK_K, VEC
        )
        A_SLOT: gl.constexpr = self.TMEM_PLAN.a_scale
        B_SLOT: gl.constexpr = self.TMEM_PLAN.b_scale
        a_tmem = self.tmem_pool.slice(A_SLOT.offset, A_SLOT.cols).reinterpret(
            dtype=a_scale.dtype, shape=a_scale.shape, layout=TensorMemoryScalesLayout(cga_layout=[[1, 0]])
        )
        b_tmem = self.tmem_pool.slice(B_SLOT.offset, B_SLOT.cols).reinterpret(
            dtype=b_scale.dtype, shape=b_scale.shape, layout=TensorMemoryScalesLayout(cga_layout=[[0, 0]])
        )
        return a_scale, b_scale, a_tmem, b_tmem

    @gluon.jit
    def copy_scales(self, stage):
        """``tcgen05.cp`` of stage ``stage``'s A and B scales into their slots."""
        a_scale, b_scale, a_tmem, b_tmem = self.scale_slots(stage)
        tcgen05_copy(a_scale, a_tmem)
        tcgen05_copy(b_scale, b_tmem)

    @gluon.jit
    def mma(self, stage, bar, use_acc):
        """One 2-CTA block-scaled MMA of stage ``stage``'s operands with the scales the slots hold now, committed on
        ``bar``."""
        _a, _b, a_tmem, b_tmem = self.scale_slots(stage)
        tcgen05_mma_scaled(
            self.a_smem.index(stage),
            self.b_smem.index(stage).permute((1, 0)),
            self.accumulator(),
            a_tmem,
            b_tmem,
            element_kind(self.TMEM_PLAN.a_format),
            element_kind(self.TMEM_PLAN.b_format),
            use_acc=use_acc,
            multicast=True,
            mbarriers=[bar],
        )

    @gluon.jit
    def kernel_step(self, stage, bar, use_acc):
        """The production kernel's own K step (``kernel.async_mma_scaled``): the copies, then the MMA."""
        async_mma_scaled(
            self.a_smem.index(stage),
            self.b_smem.index(stage),
            self.a_scale_smem.index(stage),
            self.b_scale_smem.index(stage),
            self.accumulator(),
            self.tmem_pool,
            self.TMEM_PLAN,
            bar,
            use_acc,
        )

    @gluon.jit
    def load_both_stages(self):
        """Both K steps' A, B and scales, each CTA its own halves (the B scales whole), on the pair's barrier."""
        stage_bytes: gl.constexpr = (
            self.a_desc.nbytes_per_cta
            + self.b_desc.nbytes_per_cta
            + self.a_scale_desc.nbytes_per_cta
            + self.b_scale_desc.nbytes_per_cta
        )
        mbarrier.expect(self.load_bar, 2 * stage_bytes)
        for stage in gl.static_range(2):
            tma.async_load(
                self.a_desc,
                [0, stage * self.a_desc.block_shape[1]],
                self.load_bar,
                self.a_smem.index(stage),
                multicast=True,
            )
            tma.async_load(
                self.b_desc,
                [0, stage * self.b_desc.block_shape[1]],
                self.load_bar,
                self.b_smem.index(stage),
                multicast=True,
            )
            tma.async_load(
                self.a_scale_desc,
                [0, 0, stage * self.a_scale_desc.block_shape[2], 0, 0],
                self.load_bar,
                self.a_scale_smem.index(stage),
                multicast=True,
            )
            tma.async_load(
                self.b_scale_desc,
                [0, 0, stage * self.b_scale_desc.block_shape[2], 0, 0],
                self.load_bar,
                self.b_scale_smem.index(stage),
                multicast=True,
            )
        mbarrier.wait(self.load_bar, 0)  # a pair barrier: only the lead waits


@gluon.jit
def _issue(b, log, steps, MODE: gl.constexpr, TIMED: gl.constexpr):
    """1 warp per CTA, as the kernel's MMA partition (only the lead's copies and MMAs really issue): load two K steps,
    then run ``MODE`` between two reads of the clock; the lead logs its SM and the two readings."""
    b.load_both_stages()  # step j uses stage j % 2
    lead = _is_lead(TIMED)
    if MODE == 1 or MODE == 4:  # the scales of stage 0, copied once, before the clock starts
        b.copy_scales(0)
        tcgen05_commit(b.setup_bar)
        mbarrier.wait(b.setup_bar, 0)

    start = _clock(TIMED)
    if MODE <= 2:
        for j in range(steps):
            r = j % _RING
            if j >= _RING:  # the lead issues at most RING steps ahead of their completion, as the kernel's load ring
                mbarrier.wait(b.bars.index(r), (j // _RING - 1) % 2, pred=lead)
            if MODE == 0:
                b.kernel_step(j % 2, b.bars.index(r), j > 0)
            else:
                if MODE == 2:
                    b.copy_scales(j % 2)
                    b.copy_scales(j % 2)
                b.mma(j % 2, b.bars.index(r), j > 0)
    elif MODE <= 4:
        for j in range(steps):
            if MODE == 3:
                b.copy_scales(j % 2)
            b.mma(j % 2, b.bars.index(0), j > 0)
            mbarrier.wait(b.bars.index(0), j % 2, pred=lead)  # the pipe is idle again before the next repetition
    else:
        for _j in range(0, steps, 4):  # four steps an iteration: the loop's own instructions weigh less
            for u in gl.static_range(4):
                b.copy_scales(u % 2)
    tcgen05_commit(b.done_bar)  # everything issued so far is done: one completion, the same for both CTAs
    mbarrier.wait(b.done_bar, 0)
    end = _clock(TIMED)
    if MODE == 5:  # one MMA after the clock, so that C shows the last copy's scales arrived
        b.mma(1, b.bars.index(1), False)
    tcgen05_commit(b.acc_bar)  # the accumulator is final: the drain may read it
    if TIMED:
        if lead:  # one row per cluster: the lead's SM and its two readings
            row = gl.program_id(0) * _LOG
            gl.store(log + row, _smid())
            gl.store(log + row + 1, start)
            gl.store(log + row + 2, end)


@gluon.jit
def _drain(b):
    """The default partition (4 warps): once the accumulator is final, cluster 0 stores it into C (float32)."""
    SUBTILE: gl.constexpr = b.c_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b.b_desc.block_shape[0]
    acc_tmem = b.accumulator()
    c_smem = gl.allocate_shared_memory(b.c_desc.dtype, b.c_desc.block_shape, b.c_desc.layout)
    mbarrier.wait(b.acc_bar, 0)
    if gl.program_id(0) == 0:  # every cluster computes the same accumulator
        for sub in gl.static_range(BLOCK_N // SUBTILE):
            acc = acc_tmem.slice(sub * SUBTILE, SUBTILE).load()
            tma.store_wait(0)
            c_smem.store(acc)
            tma.async_store(b.c_desc, [0, sub * SUBTILE], c_smem)
        tma.store_wait(0)


@gluon.jit
def scale_copy_kernel(
    a_desc,
    b_desc,
    c_desc,
    a_scale_desc,
    b_scale_desc,
    log,
    steps,
    TMEM_PLAN: gl.constexpr,
    MODE: gl.constexpr,
    TIMED: gl.constexpr,
):
    """One of ``MODES`` over ``steps`` K steps (or repetitions) with the operands resident; C = the accumulator."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_N: gl.constexpr = b_desc.block_shape[0]
    a_smem = gl.allocate_shared_memory(a_desc.dtype, [2] + a_desc.block_shape, a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, [2] + b_desc.block_shape, b_desc.layout)
    a_scale_smem = gl.allocate_shared_memory(a_scale_desc.dtype, [2] + a_scale_desc.block_shape, a_scale_desc.layout)
    b_scale_smem = gl.allocate_shared_memory(b_scale_desc.dtype, [2] + b_scale_desc.block_shape, b_scale_desc.layout)
    tmem_layout: gl.constexpr = TensorMemoryLayout(
        [BLOCK_M // 2, BLOCK_N], col_stride=1, cga_layout=[[1, 0]], two_ctas=True
    )
    tmem_pool = allocate_tensor_memory(gl.float32, [BLOCK_M, TMEM_PLAN.tmem_cols], tmem_layout)

    # load_bar is the pair's (the lead waits for both CTAs' bytes); the others are per CTA: an MMA's or a commit's
    # completion arrives on both CTAs' copies
    load_bar = mbarrier.allocate_mbarrier(two_ctas=True)
    setup_bar = mbarrier.allocate_mbarrier()
    done_bar = mbarrier.allocate_mbarrier()
    acc_bar = mbarrier.allocate_mbarrier()
    bars = mbarrier.allocate_mbarrier(batch=_RING)
    count: gl.constexpr = tcgen05_mma_barrier_count(
        [a_smem.index(0), b_smem.index(0), a_scale_smem.index(0), b_scale_smem.index(0)], multicast=True, two_ctas=True
    )
    mbarrier.init(load_bar, count=1)
    mbarrier.init(setup_bar, count=count)
    mbarrier.init(done_bar, count=count)
    mbarrier.init(acc_bar, count=count)
    for ring_slot in gl.static_range(_RING):
        mbarrier.init(bars.index(ring_slot), count=count)
    gl.barrier(cluster=True)

    b = Buffers(
        a_desc,
        b_desc,
        c_desc,
        a_scale_desc,
        b_scale_desc,
        a_smem,
        b_smem,
        a_scale_smem,
        b_scale_smem,
        tmem_pool,
        load_bar,
        setup_bar,
        bars,
        done_bar,
        acc_bar,
        TMEM_PLAN,
    )
    gl.warp_specialize(
        [
            (_drain, (b,)),  # default partition: the kernel's num_warps (4)
            (_issue, (b, log, steps, MODE, TIMED)),  # worker: 1 warp
        ],
        [1],
        [48],
    )


# ---------------------------------------------------------------------------------------------------------------------
# Host side
# ---------------------------------------------------------------------------------------------------------------------
def problem(a_format: str, b_format: str, seed: int = 0) -> tuple[Problem, TmemPlan]:
    """A 256 x 256 problem of two K steps (the two stages) and the kernel's plan for the pair."""
    plan = make_plan(a_format, b_format)
    return random_problem(256, 256, 2 * plan.block_k, a_format, b_format, seed=seed), plan


def kernel_args(
    p: Problem, plan: TmemPlan, c: torch.Tensor, log: torch.Tensor, steps: int, mode: int, timed: bool
) -> tuple:
    """The kernel's arguments: the production kernel's descriptors, but a float32 C (the accumulator as it is).
    ``steps`` is at least 1 (a multiple of 4 for the copies-only mode, which copies four steps an iteration)."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} must be one of {sorted(MODES)}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1 or (mode == 5 and steps % 4):
        raise ValueError(
            f"steps={steps!r} must be a positive int{', a multiple of 4,' if mode == 5 else ''} for {MODES[mode]!r}"
        )
    a_desc, b_desc, _c16, a_scale_desc, b_scale_desc = make_descriptors(
        p.a.data, p.b.data, p.a_scale_swizzled, p.b_scale_swizzled, c.to(torch.float16), plan
    )
    c_block = [256, plan.epilogue_block_n]
    c_layout = gl.NVMMASharedLayout.get_default_for(c_block, gl.float32, cga_layout=tuple(tuple(x) for x in CGA_LAYOUT))
    c_desc = TensorDescriptor.from_tensor(c, c_block, c_layout)
    return a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, log, steps, plan, mode, timed


def expected(p: Problem, plan: TmemPlan, mode: int, steps: int) -> torch.Tensor:
    """The float64 sum of the MMAs ``mode`` issues: step ``j`` multiplies stage ``j % 2``'s operands with the scales
    the slots hold then (stage ``j % 2``'s, or stage 0's where they were copied once)."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} must be one of {sorted(MODES)}")
    bk = plan.block_k

    def deq(q: Any, data_stage: int, scale_stage: int) -> torch.Tensor:
        values = q.element_values()[:, data_stage * bk : (data_stage + 1) * bk].double()
        vec = q.spec.vec_size
        scales = q.scale_values()[:, scale_stage * bk // vec : (scale_stage + 1) * bk // vec].double()
        return values * scales.repeat_interleave(vec, dim=1)

    def product(stage: int, scale_stage: int) -> torch.Tensor:
        return deq(p.a, stage, scale_stage) @ deq(p.b, stage, scale_stage).T

    if mode == 5:  # the MMA after the copies: stage 1's operands, with the last copy's scales
        last = (steps - 1) % 2
        return product(1, last)
    fixed = mode in (1, 4)
    odd = steps // 2  # steps 1, 3, ... use stage 1
    even = steps - odd
    return even * product(0, 0) + (odd * product(1, 0 if fixed else 1) if odd else 0.0)


def compile_only() -> dict[tuple[str, str, str], Any]:
    """Every pair and mode cross-compiled for sm_100a (no GPU): ``{(a_format, b_format, mode name): CrossCompiled}``."""
    from gluon_overlap.compiler.compile import cross_compile

    out = {}
    for a_format, b_format in PAIRS:
        p, plan = problem(a_format, b_format)
        c = torch.empty(256, 256, dtype=torch.float32, device="meta")
        log = torch.empty(LOG, dtype=torch.int64, device="meta")
        for mode, name in MODES.items():
            args = kernel_args(p, plan, c, log, STEPS[0], mode, True)
            out[(a_format, b_format, name)] = cross_compile(scale_copy_kernel, args, num_ctas=2, num_warps=4)
    return out


def slope(short: float, long: float) -> float:
    """Cycles per step between the two step counts."""
    return (long - short) / (STEPS[1] - STEPS[0])


def summarize(cycles: dict[str, dict[int, float]], copies: int) -> dict[str, float]:
    """The derived figures of one pair from ``cycles[mode name][steps]`` (median lead-CTA cycles of a launch):
    per-step slopes, the per-repetition means and what the copies cost."""
    for name in MODES.values():
        if name not in cycles:
            raise ValueError(f"cycles has no {name!r} row")
    step = {name: slope(cycles[name][STEPS[0]], cycles[name][STEPS[1]]) for name in (MODES[m] for m in STEADY_MODES)}
    cold = {name: cycles[name][REPS] / REPS for name in (MODES[3], MODES[4])}
    return {
        "copies_per_step": copies,
        "mma_step_clk": step["steady, no copies"],
        "kernel_step_clk": step["steady"],
        "copies_behind_mmas_clk_per_step": step["steady"] - step["steady, no copies"],
        "second_copies_clk_per_step": step["steady, copies twice"] - step["steady"],
        "cold_step_clk": cold["cold"],
        "cold_copies_exposed_clk": cold["cold"] - cold["cold, no copies"],
        "copy_interval_idle_clk": step["copies only"] / copies,
    }


Launcher = Callable[[tuple, int], list[list[int]]]
C_TOLERANCE = 1e-4  # float32 accumulation of exact products, relative to each element (at least 1)


def _launch(args: tuple, clusters: int) -> list[list[int]]:
    """One launch of ``clusters`` clusters on the GPU: the log's rows, one per cluster."""
    log = args[5]
    scale_copy_kernel[(clusters,)](*args, num_ctas=2, num_warps=4)
    torch.cuda.synchronize()
    return log.view(-1, LOG).tolist()


def lead_cycles(rows: list[list[int]]) -> float:
    """The median over clusters of the lead CTA's cycles from its first issue to its last wait (rows of ``[SM,
    start, end]``; a row the kernel did not write still holds the -1s it was filled with)."""
    if not rows:
        raise ValueError("the log holds no row")
    for cluster, (sm, start, end) in enumerate(rows):
        if sm < 0 or end < start:
            raise ValueError(f"cluster {cluster} wrote no log row (or a clock went backwards): {[sm, start, end]}")
    return float(statistics.median(end - start for _, start, end in rows))


def _on(p: Problem, device: str) -> Problem:
    def move(q: Any) -> Any:
        return type(q)(q.format, q.data.to(device), q.scales.to(device))

    tensors = (p.a_scale_swizzled, p.b_scale_swizzled, p.a_ref, p.b_ref, p.reference)
    return Problem(move(p.a), move(p.b), *(t.to(device) for t in tensors))


def measure(
    pairs: tuple[tuple[str, str], ...] = PAIRS,
    *,
    device: str = "cuda",
    name: str | None = None,
    sms: int | None = None,
    launch: Launcher = _launch,
) -> dict:
    """Every pair, mode and step count, on one cluster and on every SM pair (``sms // 2`` clusters; the device's
    name and SM count by default), each row the median of ``REPEATS`` launches; a C off its MMAs' sum stops it."""
    if name is None or sms is None:
        props = torch.cuda.get_device_properties(device)
        name, sms = props.name, props.multi_processor_count
    result: dict[str, Any] = {"device": name, "sms": sms, "pairs": {}}
    for a_format, b_format in pairs:
        p, plan = problem(a_format, b_format)
        p = _on(p, device)
        copies = scale_copy_chunks(plan)
        row: dict[str, Any] = {"copies_per_step": copies}
        for where, clusters in (("one cluster", 1), ("every SM", sms // 2)):
            cycles: dict[str, dict[int, float]] = {}
            lead_sms: set[int] = set()
            worst_c = 0.0
            for mode, mode_name in MODES.items():
                cycles[mode_name] = {}
                for steps in STEPS if mode in STEADY_MODES else (REPS,):
                    c = torch.zeros(256, 256, dtype=torch.float32, device=device)
                    log = torch.full((clusters * LOG,), -1, dtype=torch.int64, device=device)
                    args = kernel_args(p, plan, c, log, steps, mode, True)
                    launch(args, clusters)  # untimed: compiles
                    runs = []
                    for _ in range(REPEATS):
                        log.fill_(-1)
                        rows = launch(args, clusters)
                        runs.append(lead_cycles(rows))
                        lead_sms |= {r[0] for r in rows}
                    cycles[mode_name][steps] = statistics.median(runs)
                    want = expected(p, plan, mode, steps).to(device)
                    error = float(((c.double() - want).abs() / want.abs().clamp_min(1.0)).max())
                    if not error <= C_TOLERANCE:
                        raise RuntimeError(
                            f"{a_format} x {b_format}, {mode_name}, {steps} steps: C is {error:.3g} off the sum of its "
                            "MMAs (relative): the kernel did not compute what it timed"
                        )
                    worst_c = max(worst_c, error)
            row[where] = {
                "cycles": {n: {str(k): v for k, v in by_steps.items()} for n, by_steps in cycles.items()},
                **summarize(cycles, copies),
                "worst_c_error": worst_c,
                "lead_sms": len(lead_sms),  # distinct SMs the clusters' leads ran on (every SM: one each)
            }
        result["pairs"][f"{a_format} x {b_format}"] = row
    return result


def refusal() -> str | None:
    """Why this machine cannot run the measurement (None on a Blackwell data-center GPU)."""
    from gluon_overlap.device import capability
    from gluon_overlap.device import refusal as kernel_refusal

    reason = kernel_refusal(capability())
    return None if reason is None else f"blackwell_scale_copy: {reason}; --compile-only builds it without a GPU"


def main(argv: list[str] | None = None) -> None:
    from _h200 import write_record

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON here (default: stdout)")
    parser.add_argument("--compile-only", action="store_true", help="cross-compile every mode for sm_100a, no GPU")
    args = parser.parse_args(argv)
    if args.compile_only:
        for (a_format, b_format, name), compiled in compile_only().items():
            cps = compiled.ptx.count("tcgen05.cp.")
            print(f"{a_format} x {b_format:6s} {name:22s} tcgen05.cp in the PTX: {cps}")
        return
    reason = refusal()
    if reason is not None:
        sys.exit(reason)
    write_record(measure(), args.out)


if __name__ == "__main__":
    main()
