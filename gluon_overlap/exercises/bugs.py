"""The planted bugs of the find-the-bug exercises (03b, 04): the kernel text, its broken replacement, the sources.

Its own module so that the solutions (which undo a bug) and the checkers (which plant it) both read it without
reaching each other.
"""

from __future__ import annotations

from gluon_overlap.exercises.kernels import module_source, patch_source

#: 03b: the MMA wait one phase behind (text in the kernel, and its replacement)
SINGLE_BUFFERED_BUG = ("        mbarrier.wait(mma_bar, phase)  #", "        mbarrier.wait(mma_bar, phase ^ 1)  #")
#: 04: the head of the drain one subtile short
OVERLAP_BUG = (
    "HEAD: gl.constexpr = TMEM_PLAN.early_release_subtile + 1 if",
    "HEAD: gl.constexpr = TMEM_PLAN.early_release_subtile if",
)


def single_buffered_buggy_source() -> str:
    """The single-buffered kernel's module with its planted bug."""
    from gluon_overlap.steps import single_buffered

    return patch_source(module_source(single_buffered), *SINGLE_BUFFERED_BUG)


def overlap_buggy_source() -> str:
    """The overlap kernel's module with its planted bug."""
    from gluon_overlap.steps import overlap

    return patch_source(module_source(overlap), *OVERLAP_BUG)
