"""Exercises of notebooks 03b and 08 (the single-buffered kernel): a bug hunt, and the expect byte count."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gluon_overlap.exercises.bugs as bugs
from gluon_overlap.exercises.check import Verdict, answered_at, call_answer, more, verdict
from gluon_overlap.exercises.kernels import load_kernel
from gluon_overlap.exercises.views import StagePlanView
from gluon_overlap.tmem import SEED_FORMAT_PAIRS

if TYPE_CHECKING:
    from gluon_overlap.compiler.compile import GluonFunction
    from gluon_overlap.tmem import TmemPlan

#: the planted bug: the MMA wait one phase behind (text in the kernel, and its replacement)
BUG = bugs.SINGLE_BUFFERED_BUG
EXPECT_TITLE = "08 expect bytes"
BUG_TITLE = "03b find the bug"


def compiled_expect_bytes(a_format: str, b_format: str) -> int:
    """The byte count of the ``mbarrier.arrive.expect_tx`` in the PTX of the compiled step kernel (the package's
    BLOCK_K for the pair)."""
    from gluon_overlap.steps import host, single_buffered

    counts = host.expect_tx_bytes(host.compile_step(single_buffered.single_buffered_kernel, a_format, b_format).ptx)
    if len(counts) != 1:
        raise ValueError(f"expected one expect_tx byte count in the PTX, found {counts}")
    return counts[0]


#: TMA's largest box edge (``boxDim`` <= 256 elements): a BLOCK_K whose box is wider is not a kernel that can run
TMA_BOX_MAX = 256


def expect_plans() -> list[TmemPlan]:
    """The plans the checker asks about: every pair at every power-of-two BLOCK_K from 64 to 512 that makes a plan
    and whose TMA boxes fit (the package ships one BLOCK_K per pair; the others are not in it)."""
    from gluon_overlap.tmem import make_plan

    plans = []
    for a, b in SEED_FORMAT_PAIRS:
        for block_k in (64, 128, 256, 512):
            try:
                plan = make_plan(a, b, block_k=block_k, overlap=False)
            except ValueError:  # not a whole number of scale chunks
                continue
            if all(max(d.block_shape) <= TMA_BOX_MAX for d in _descriptors(plan)):
                plans.append(plan)
    return plans


def _descriptors(plan: TmemPlan) -> tuple:
    """The kernel's TMA descriptors for ``plan``, built fresh (over ``device="meta"`` tensors) by the launch code."""
    from gluon_overlap import kernel
    from gluon_overlap.compiler.compile import meta_operands

    a, b, a_scale, b_scale, c = meta_operands(plan.a_format, plan.b_format, 1024)
    return kernel.make_descriptors(a, b, a_scale, b_scale, c, plan)


def descriptor_expect_bytes(plan: TmemPlan) -> int:
    """What the kernel passes to ``mbarrier.expect``: the sum of the four load descriptors' ``nbytes_per_cta``,
    computed by Gluon's own device-side descriptor type from freshly built descriptors (at the package's BLOCK_K
    this equals the PTX's expect_tx count: tests/notebooks/test_exercises.py)."""
    import torch
    import triton.experimental.gluon.language as gl
    from triton.experimental.gluon.language.nvidia.hopper.tma import tensor_descriptor_type

    element = {torch.uint8: gl.uint8, torch.float8_e4m3fn: gl.float8e4nv}
    a_desc, b_desc, _c_desc, a_scale_desc, b_scale_desc = _descriptors(plan)
    total = 0
    for desc in (a_desc, b_desc, a_scale_desc, b_scale_desc):
        block = gl.block_type(element[desc.base.dtype], list(desc.block_shape))
        total += tensor_descriptor_type(block, None, None, desc.layout).nbytes_per_cta
    return total


def check_expect_bytes(fn: Callable[[StagePlanView], int], *, quiet: bool = False) -> Verdict:
    """``fn(plan)``: the bytes one CTA announces with ``mbarrier.expect`` per K step (its A rows, its B rows, its
    A-scale chunk and the multicast B-scale tile).  ``plan``: a :class:`~gluon_overlap.exercises.views.StagePlanView`
    (formats, BLOCK_K, BLOCK_N, VEC).  Checked against freshly built descriptors for every pair at every BLOCK_K
    that makes a kernel, most of them not the package's."""
    import gluon_overlap.exercises.views as views
    from gluon_overlap.exercises.guard import library_files

    name = EXPECT_TITLE
    allowed = library_files(views)
    plans = expect_plans()
    for plan in plans:
        want = descriptor_expect_bytes(plan)
        got, failed = call_answer(name, fn, StagePlanView.of(plan), quiet=quiet, allowed_files=allowed)
        if failed is not None:
            return failed
        if got != want or isinstance(got, bool):
            how = (
                "not a byte count"
                if not isinstance(got, int) or isinstance(got, bool)
                else "too many"
                if got > want
                else "too few"
            )
            return verdict(
                name,
                False,
                f"{plan.a_format} x {plan.b_format}, BLOCK_K={plan.block_k}: your function"
                f"{answered_at(name)} said {got!r}: {how} for the bytes one CTA's TMA loads bring per K "
                f"step. {more(name)}",
                quiet=quiet,
            )
    return verdict(
        name,
        True,
        f"all {len(plans)} plans (four pairs, {len({p.block_k for p in plans})} BLOCK_K "
        "values) match what their descriptors make the kernel expect.",
        quiet=quiet,
    )


def buggy_source() -> str:
    """The single-buffered kernel's module with one planted bug."""
    return bugs.single_buffered_buggy_source()


def buggy_kernel() -> GluonFunction:
    """The single-buffered kernel with the planted bug, loaded (for the learner to run)."""
    return load_kernel(buggy_source(), "single_buffered_kernel", "buggy_single_buffered")


def check_single_buffered(kernel: Any, *, quiet: bool = False, seed: int | None = None) -> Verdict:
    """Run the learner's fixed kernel (``load_kernel(fixed_text, "single_buffered_kernel")``) on the executor over
    the single-buffered problem set (every pair, M >= 512, odd K steps, three interleavings)."""
    import gluon_overlap.exercises.kernel_checks as K
    from gluon_overlap.exercises.problems import DEFAULT_SEED
    from gluon_overlap.exercises.writing import _step_args, harness_library_codes, single_buffered_runs

    try:
        outcome = K.check_edited_kernel(
            BUG_TITLE,
            kernel,
            buggy_source(),
            single_buffered_runs(seed or DEFAULT_SEED),
            _step_args()(None),
            allowed=harness_library_codes(buggy_source()),
        )
    except K.AnswerRefused as exc:
        return verdict(BUG_TITLE, False, str(exc), quiet=quiet)
    message = outcome.message if not outcome.passed else f"{outcome.message}: no hazard, no deadlock, C right."
    return verdict(BUG_TITLE, outcome.passed, message, quiet=quiet)
