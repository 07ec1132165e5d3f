"""Launching ``gluon_overlap/kernel.py`` (or an edited copy) on the executor: the problem, the grid,
the descriptors -- exactly what :func:`gluon_overlap.kernel.matmul_raw` does on a GPU.

:class:`KernelConfig` is one launch's shape (plan, M, N, K, clusters, breaks); :func:`launch` builds
the kernel's arguments with the kernel module's own ``kernel_args`` -- over the problem's CPU tensors
(data mode) or over ``meta`` tensors (timed mode without data, for the timing model) -- and starts
every CTA of the chosen clusters on an engine.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from gluon_overlap.compiler.precheck import precheck_error
from gluon_overlap.emulate.kernels import check_breaks, load_kernel
from gluon_overlap.formats import meta_operands
from gluon_overlap.interp import engine as E
from gluon_overlap.interp.launch import ExecutionResult
from gluon_overlap.interp.launch import launch as execute
from gluon_overlap.limits import (  # B200: the grid is min(tiles, SMs / 2)
    NUM_SMS,
    check_problem,
    clusters_for,
    num_tiles,
)
from gluon_overlap.registry import check_int
from gluon_overlap.tmem import BLOCK_M, BLOCK_N, NUM_CTAS, TmemPlan

#: warps of the launch (Triton's default; ``matmul_raw`` launches with it): the default partition's
NUM_WARPS = 4


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class KernelConfig:
    """One launch of the kernel: the TMEM plan, the problem shape, the grid and the breaks."""

    plan: TmemPlan
    m: int
    n: int
    k: int
    clusters: int | None = None  # CTA pairs of the persistent grid; None: the seed's min(tiles, SMs / 2)
    breaks: frozenset[str] = field(default_factory=frozenset)
    num_sms: int = NUM_SMS
    kernel_path: str | None = None  # None: gluon_overlap/kernel.py

    def __post_init__(self) -> None:

        check_problem(self.m, self.n, self.k)  # the kernel's own rules (N % 8, K % 128, below 2**31)
        if isinstance(self.num_sms, bool) or not isinstance(self.num_sms, int) or self.num_sms <= 0:
            raise ValueError(f"num_sms={self.num_sms!r} must be a positive integer")
        if self.plan.block_n != BLOCK_N:
            raise ValueError(f"plan.block_n={self.plan.block_n} must be {BLOCK_N} (the seed's tile)")
        if self.clusters is not None and (
            isinstance(self.clusters, bool) or not isinstance(self.clusters, int) or self.clusters <= 0
        ):
            raise ValueError(f"clusters={self.clusters!r} must be a positive integer")
        # as given: check_breaks refuses one string (tuple() would have split it into letters) and non-lists
        object.__setattr__(self, "breaks", frozenset(check_breaks(self.breaks, self.plan.overlap)))

    @property
    def num_pid_m(self) -> int:
        return cdiv(self.m, BLOCK_M)

    @property
    def num_pid_n(self) -> int:
        return cdiv(self.n, BLOCK_N)

    @property
    def num_tiles(self) -> int:
        return num_tiles(self.m, self.n)

    @property
    def grid(self) -> int:
        """Number of clusters (programs) of the persistent launch: ``clusters`` (at most one per tile), or the
        seed's ``min(tiles, SMs / 2)`` (:func:`gluon_overlap.limits.clusters_for`)."""
        return clusters_for(self.m, self.n, self.clusters, self.num_sms)

    @property
    def k_steps(self) -> int:
        """K steps per tile (the last one runs past K when K is not a multiple of BLOCK_K: TMA fills zeros)."""
        return cdiv(self.k, self.plan.block_k)

    def tiles_of(self, cluster: int) -> list[int]:
        return list(range(cluster, self.num_tiles, self.grid))

    def module(self) -> types.ModuleType:
        return load_kernel(self.kernel_path, tuple(sorted(self.breaks)))


def with_kernel_grid(config: KernelConfig, module: types.ModuleType) -> KernelConfig:
    """``config`` with the grid that the kernel file's own ``launch_grid(tiles, SMs)`` asks for, when the config
    leaves the grid to it (``clusters`` None) and the kernel is an edited file (the seed's ``launch_grid`` is
    the default rule itself).  ValueError when it returns anything but a tuple of one positive int; more
    clusters than tiles run as many as there are tiles (the rest would find no work), as ``--clusters`` does."""
    if config.clusters is not None or config.kernel_path is None:
        return config
    asked = (config.num_tiles, config.num_sms)
    grid = module.launch_grid(*asked)
    where = f"the kernel file's launch_grid{asked} returned {grid!r}"
    if not isinstance(grid, (tuple, list)) or len(grid) != 1:
        raise ValueError(f"{where}: the kernel's grid must be a tuple of one int, its number of clusters")
    try:  # CUDA's limit of a grid's x dimension
        clusters = check_int("grid[0]", grid[0], 1, 2**31)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return dataclasses.replace(config, clusters=clusters_for(config.m, config.n, clusters, config.num_sms))


def kernel_arguments(
    config: KernelConfig, problem: Any = None, c: torch.Tensor | None = None, module: types.ModuleType | None = None
) -> tuple:
    """The kernel's positional arguments, built by the kernel module's own ``kernel_args``."""
    mod = config.module() if module is None else module
    if problem is None:
        a, b, a_s, b_s, c = meta_operands(config.plan.a_format, config.plan.b_format, config.m, config.n, config.k)
    else:
        a, b, a_s, b_s = problem.a.data, problem.b.data, problem.a_scale_swizzled, problem.b_scale_swizzled
    return mod.kernel_args(a, b, a_s, b_s, c, config.plan, config.m, config.n, config.k)


def launch(
    engine: E.Engine,
    config: KernelConfig,
    clusters: Iterable[int] | None = None,
    problem: Any = None,
    c: torch.Tensor | None = None,
    *,
    precheck: bool = True,
) -> ExecutionResult:
    """Start (and run) the kernel of ``config`` on ``engine``: all clusters, or only ``clusters``.

    With ``problem`` (and the output tensor ``c``) real data moves; without, the descriptors are
    built over ``meta`` tensors and the engine's backend must not move data (the timing model).
    ``precheck=False`` skips the compiler's check (:mod:`gluon_overlap.compiler.precheck`)."""
    mod = config.module()
    args = kernel_arguments(config, problem, c, mod)
    return execute(
        mod.mma_scaled_warp_specialized_kernel,
        (config.grid,),
        args,
        num_ctas=NUM_CTAS,
        num_warps=NUM_WARPS,
        engine=engine,
        clusters=None if clusters is None else list(clusters),
        precheck=precheck,
    )


def compile_error(config: KernelConfig, problem: Any = None) -> str | None:
    """What Triton's compiler says about the launch of ``config`` before it runs
    (:func:`gluon_overlap.compiler.precheck.precheck_error`): None, a ``CompilerRefusal: ...`` or the kernel's
    own exit while compiling.  The verdict is cached, so the runs of :func:`launch` that follow do not
    compile again (a caller can give the compiler's work its own time budget)."""

    mod = config.module()
    c = None if problem is None else torch.empty(config.m, config.n, dtype=torch.float16)
    args = kernel_arguments(config, problem, c, mod)
    return precheck_error(mod.mma_scaled_warp_specialized_kernel, args, num_ctas=NUM_CTAS, num_warps=NUM_WARPS)
