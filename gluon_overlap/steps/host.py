"""Host side of the step kernels: their arguments, grids and cross-compilation.

The descriptors are the production kernel's own (:func:`gluon_overlap.kernel.make_descriptors`),
built over CPU, CUDA or ``device="meta"`` tensors; the TMEM plan is
:func:`gluon_overlap.tmem.make_plan`.  A step kernel takes
``(a_desc, b_desc, c_desc, a_scale_desc, b_scale_desc, M, N, K, TMEM_PLAN)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from gluon_overlap.kernel import BLOCK_M, K_MULTIPLE, make_descriptors
from gluon_overlap.tmem import NUM_CTAS, TmemPlan, make_plan

if TYPE_CHECKING:
    from gluon_overlap.compiler.compile import CrossCompiled, GluonFunction
    from gluon_overlap.formats import Problem

#: builds a step kernel's five TMA descriptors, with the signature of ``kernel.make_descriptors``
Descriptors = Callable[..., tuple]


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name}={value!r} must be a positive integer")
    return value


def step_args(
    a_data: torch.Tensor,
    b_data: torch.Tensor,
    a_scale_swizzled: torch.Tensor,
    b_scale_swizzled: torch.Tensor,
    c: torch.Tensor,
    plan: TmemPlan,
    m: int,
    n: int,
    k: int,
    descriptors: Descriptors | None = None,
) -> tuple:
    """Positional arguments of a step kernel: the descriptors of ``descriptors`` (a function with the
    signature of ``kernel.make_descriptors``, which is the default), the sizes and the plan."""
    for name, value in (("m", m), ("n", n), ("k", k)):
        _positive_int(name, value)
    if k % K_MULTIPLE:
        raise ValueError(f"k={k} must be a multiple of {K_MULTIPLE} (TMA row alignment, whole scale chunks)")
    make = make_descriptors if descriptors is None else descriptors
    return (*make(a_data, b_data, a_scale_swizzled, b_scale_swizzled, c, plan), m, n, k, plan)


def num_tiles(m: int, n: int, plan: TmemPlan) -> int:
    """Output tiles (``BLOCK_M x block_n``) of an ``m x n`` C."""
    return math.ceil(_positive_int("m", m) / BLOCK_M) * math.ceil(_positive_int("n", n) / plan.block_n)


def problem_args(
    problem: Problem,
    overlap: bool = False,
    epilogue_block_n: int | None = None,
    production: bool = False,
    descriptors: Descriptors | None = None,
) -> tuple[tuple, torch.Tensor]:
    """``(args, c)`` for a :class:`gluon_overlap.formats.Problem`: C is a NaN-filled float16 tensor on
    the problem's device (every element a kernel leaves unwritten stays NaN).  ``production``: the
    arguments of ``gluon_overlap.kernel``'s kernel instead of a step kernel's."""
    kwargs = {} if epilogue_block_n is None else {"epilogue_block_n": epilogue_block_n}
    plan = make_plan(problem.a.format, problem.b.format, overlap=overlap, **kwargs)
    c = torch.full((problem.m, problem.n), float("nan"), dtype=torch.float16, device=problem.a.data.device)
    operands = (
        problem.a.data,
        problem.b.data,
        problem.a_scale_swizzled,
        problem.b_scale_swizzled,
        c,
        plan,
        problem.m,
        problem.n,
        problem.k,
    )
    args = production_args(*operands) if production else step_args(*operands, descriptors=descriptors)
    return args, c


def production_args(
    a_data: torch.Tensor,
    b_data: torch.Tensor,
    a_scale_swizzled: torch.Tensor,
    b_scale_swizzled: torch.Tensor,
    c: torch.Tensor,
    plan: TmemPlan,
    m: int,
    n: int,
    k: int,
) -> tuple:
    """Positional arguments of ``gluon_overlap.kernel``'s warp-specialized kernel (its own ``kernel_args``)."""
    from gluon_overlap.kernel import kernel_args

    return kernel_args(a_data, b_data, a_scale_swizzled, b_scale_swizzled, c, plan, m, n, k)


def meta_args(a_format: str, b_format: str, overlap: bool = False, size: int = 8192) -> tuple:
    """Arguments over ``device="meta"`` tensors, for :func:`gluon_overlap.compiler.compile.cross_compile`."""
    from gluon_overlap.compiler.compile import meta_operands

    plan = make_plan(a_format, b_format, overlap=overlap)
    a, b, a_s, b_s, c = meta_operands(a_format, b_format, size)
    return step_args(a, b, a_s, b_s, c, plan, size, size, size)


def compile_step(
    fn: GluonFunction, a_format: str = "nvfp4", b_format: str = "nvfp4", overlap: bool = False
) -> CrossCompiled:
    """Cross-compile a step kernel for ``sm_100a`` (see :func:`gluon_overlap.compiler.compile.cross_compile`)."""
    from gluon_overlap.compiler.compile import cross_compile

    return cross_compile(fn, meta_args(a_format, b_format, overlap), num_ctas=NUM_CTAS)


def tmem_pool_offsets(ttgir: str, tmem_cols: int = 512) -> list[int]:
    """Column offsets of every slice of the ``[*, tmem_cols]`` TMEM allocation in a kernel's TTGIR
    (accumulator windows and scale slots), sorted and distinct."""
    import re

    pattern = re.compile(
        r"ttng\.tmem_subslice %[\w.#]+ \{offset = (\d+) : i32\} : !ttg\.memdesc<\d+x" + str(tmem_cols) + r"xf32"
    )
    return sorted({int(m.group(1)) for m in pattern.finditer(ttgir)})


def expect_tx_bytes(ptx: str) -> list[int]:
    """The byte counts of the ``mbarrier.arrive.expect_tx`` instructions in a PTX text (distinct, sorted)."""
    import re

    return sorted({int(x) for x in re.findall(r"mbarrier\.arrive\.expect_tx[\w.:]*\s+_,\s*\[[^\]]+\],\s*(\d+);", ptx)})


def production_param_names() -> list[str]:
    """Parameter names of ``gluon_overlap.kernel.mma_scaled_warp_specialized_kernel``."""
    from gluon_overlap.kernel import mma_scaled_warp_specialized_kernel

    return [p.name for p in mma_scaled_warp_specialized_kernel.params]
