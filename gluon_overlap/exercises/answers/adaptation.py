"""Notebook 05b, the adaptation: the mx formats at BLOCK_K = 256, EPILOGUE_BLOCK_N = 16, TMEM columns [0, 32)
left to a fused part, no plan."""
# ruff: noqa: F821  (Counter, async_mma_scaled: names of the kernel this file is spliced into)
# mypy: disable-error-code="name-defined"
import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier, tcgen05_commit, tma

# Per CTA, VEC = 32: A scales BLOCK_K / VEC = 8 columns, B scales (256 / 128) x 8 = 16.  Columns [0, 32) are the
# fused part's, so the two windows get 512 - 32 - 24 = 456 columns: they overlap by 2 x 256 - 456 = 56 = 24 + 32.
# A stage is 128 x 256 bytes of A and of B per CTA plus 1 + 2 KB of scales: 3 stages fit in 232,448 bytes, 5 do not.
NUM_BUFFERS = 3
LEFT = gl.constexpr((32, 256))
RIGHT = gl.constexpr((232, 256))
A_SCALES = gl.constexpr((488, 8))
B_SCALES = gl.constexpr((496, 16))
# 16 subtiles of 16 columns; the 56 shared columns [232, 288) lie in 4 subtiles of either window (the left one's
# 12..15: its subtile 12 is [224, 240); the right one's 0..3): drained at steps 0..3, released after step 3.
EARLY_RELEASE = gl.constexpr(3)


@gluon.jit
def allocate_overlap_barrier(TWO_CTAS: gl.constexpr):
    # One copy for the pair, in the lead CTA; each CTA's epilogue arrives once per phase (count is per CTA).
    overlap_bar = mbarrier.allocate_mbarrier(batch=1, two_ctas=TWO_CTAS)
    mbarrier.init(overlap_bar.index(0), count=1)
    return overlap_bar


@gluon.jit
def mma_partition(p):
    A_ELEM_PER_BYTE: gl.constexpr = 2 if p.a_desc.dtype == gl.uint8 else 1
    BLOCK_K: gl.constexpr = p.a_desc.block_shape[1] * A_ELEM_PER_BYTE
    K = p.a_desc.shape[1] * A_ELEM_PER_BYTE
    TMEM_PLAN: gl.constexpr = p.TMEM_PLAN

    load_state = Counter.create(0, p.load_ready_bars.shape[0])
    # A producer of windows (a ring of two, of one with the overlap off): they start out free.
    acc_state = Counter.create(1, p.acc_empty_bars.shape[0])
    scheduler = p.scheduler()
    i = 0
    while scheduler.has_work:
        # Tile i - 2 (the same window) has been drained completely, in both CTAs ...
        mbarrier.wait(p.acc_empty_bars.index(acc_state.index), acc_state.phase)
        # ... and tile i - 1 has read the columns the two windows share: completion i of the pair barrier.
        mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)
        if i % 2 == 0:
            acc_tmem = p.tmem_pool.slice(LEFT[0], LEFT[1])
        else:
            acc_tmem = p.tmem_pool.slice(RIGHT[0], RIGHT[1])

        use_acc = False
        for _k in range(0, K, BLOCK_K):
            s = load_state.index
            mbarrier.wait(p.load_ready_bars.index(s), load_state.phase)
            async_mma_scaled(p.a_bufs.index(s), p.b_bufs.index(s), p.a_scale_bufs.index(s), p.b_scale_bufs.index(s),
                             acc_tmem, p.tmem_pool, TMEM_PLAN, p.load_empty_bars.index(s), use_acc)
            load_state = load_state.next()
            use_acc = True
        tcgen05_commit(p.acc_ready_bars.index(acc_state.index))
        acc_state = acc_state.next()
        scheduler = scheduler.step()
        i += 1


@gluon.jit
def epilogue_partition(p):
    TILE_M: gl.constexpr = p.c_desc.block_shape[0]
    SUBTILE: gl.constexpr = p.c_desc.block_shape[1]
    NUM_SUBTILES: gl.constexpr = LEFT[1] // SUBTILE
    STORE_STAGES: gl.constexpr = 1 if NUM_SUBTILES == 1 else 2

    acc_state = Counter.create(0, p.acc_ready_bars.shape[0])
    c_smems = gl.allocate_shared_memory(p.c_desc.dtype, [STORE_STAGES, TILE_M, SUBTILE], p.c_desc.layout)
    store_state = Counter.create(0, STORE_STAGES)
    scheduler = p.scheduler()
    i = 0
    while scheduler.has_work:
        off_m, off_n = scheduler.get_offsets()
        mbarrier.wait(p.acc_ready_bars.index(acc_state.index), acc_state.phase)
        for step in gl.static_range(NUM_SUBTILES):
            # The shared columns first: the left window's high end, the right window's low end.
            if i % 2 == 0:
                acc_sub = p.tmem_pool.slice(LEFT[0] + (NUM_SUBTILES - 1 - step) * SUBTILE, SUBTILE)
                store_n = off_n + (NUM_SUBTILES - 1 - step) * SUBTILE
            else:
                acc_sub = p.tmem_pool.slice(RIGHT[0] + step * SUBTILE, SUBTILE)
                store_n = off_n + step * SUBTILE
            acc = acc_sub.load().to(p.c_desc.dtype)
            if step == EARLY_RELEASE:
                # Every shared column is in registers: the next tile's MMA may overwrite them.
                mbarrier.arrive(p.overlap_bar.index(0), count=1)
            c_smem = c_smems.index(store_state.index)
            tma.store_wait(pendings=STORE_STAGES - 1)
            c_smem.store(acc)
            tma.async_store(p.c_desc, [off_m, store_n], c_smem)
            store_state = store_state.next()
        # The whole window is read: the MMA of tile i + 2 may reuse it.
        mbarrier.arrive(p.acc_empty_bars.index(acc_state.index), count=1)
        acc_state = acc_state.next()
        scheduler = scheduler.step()
        i += 1
    tma.store_wait(0)
