"""Notebook 04, exercise "release": drain the head of the previous tile, release it, wait for the pair."""
import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier

from gluon_overlap.steps.overlap import drain_steps


@gluon.jit
def release_head(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, i, overlap_bar, TMEM_PLAN: gl.constexpr,
                 HEAD: gl.constexpr):
    if i > 0:
        # The head of tile i - 1: every column this tile's window shares with it ...
        drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN, 0, HEAD)
        # ... is in registers now: this CTA releases them.
        mbarrier.arrive(overlap_bar, count=1)
    # Completion i of the pair barrier = both CTAs released tile i - 1; tile 0 waits for parity 1 (passes).
    mbarrier.wait(overlap_bar, (i + 1) % 2)
