"""What the kernel and every command accept: one table, read by all of them.

==================  =====================================================================
rule                value (and why)
==================  =====================================================================
format pairs        :data:`SUPPORTED_PAIRS`, the kernel's four (from :mod:`gluon_overlap.registry`):
                    mxfp8 x mxfp8, mxfp8 x mxfp4, mxfp4 x mxfp4, nvfp4 x nvfp4.  mxfp4 x mxfp8
                    (fp4 A next to fp8 B) is refused everywhere: the kernel has no padded-fp4
                    A path, and the seed never builds it.
M                   any size >= 1 (partial tiles are clipped by TMA)
N                   a multiple of 8: each float16 row of C must be 16-byte aligned for TMA
K                   a multiple of 128: every row of A and B (K bytes of fp8, K/2 of fp4) is
                    then 64-byte aligned and the scales need no K padding (the wrapper's rule)
sizes               below 2**31 (32-bit TMA coordinates)
seeds               0 <= seed < 2**63 (torch.Generator.manual_seed takes a signed 64-bit int)
shared memory       at most :data:`SMEM_PER_CTA_LIMIT` bytes per CTA (sm_100's opt-in maximum);
                    :func:`smem_bytes_per_cta` gives a plan's need, exactly as compiled
clusters            at most one per tile, as :func:`gluon_overlap.kernel.launch_grid` launches
==================  =====================================================================

Where the CPU twin and the timing model differ from the kernel, and why (the only place
this is said):

* ``emulate`` runs the protocol on real data in this process, so besides the kernel's rules it
  takes only what this machine holds and does in about a minute: :func:`emulate_estimate`
  prices a run (memory of the operands, reference, C and per-cluster TMEM; operations of the
  protocol) and :func:`check_emulate` refuses beyond half of the machine's memory
  (``os.sysconf``) or :data:`EMULATE_SECONDS_LIMIT` seconds, printing the estimate.
* ``emulate`` also takes more clusters than the real grid would launch (up to one per tile) --
  the point is to explore interleavings -- but never more clusters than tiles.
* ``model`` prices the launch without data, so it takes every size the kernel takes.
* ``plan`` describes one CTA's TMEM and accepts any BLOCK_K / EPILOGUE_BLOCK_N the plan itself
  accepts, as long as the kernel's shared memory would fit (:func:`check_smem`).
* K tails: for fp4 pairs BLOCK_K is 256, so a K that is a multiple of 128 but not of 256
  leaves a half block that TMA zero-fills; the kernel runs it, and so must the twin.

Everything here is torch-free, so that the command line checks its arguments before importing
torch or Triton.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence

from gluon_overlap.registry import (
    FORMAT_ELEMENT_KIND,
    FORMAT_NAMES,
    FORMAT_VEC_SIZE,
    MAX_SEED,
    SUPPORTED_PAIRS,
    check_bool,
    check_format,
    check_int,
    check_number,
    check_positive_int,
    check_seed,
)
from gluon_overlap.tmem import (
    BLOCK_M,
    BLOCK_N,
    DEFAULT_EPILOGUE_BLOCK_N,
    NUM_CTAS,
    ROWS_PER_CTA,
    TmemPlan,
    make_plan,
)

# --- the kernel's rules ----------------------------------------------------------------------
#: the seed's test tolerance of C against the float reference (``torch.isclose(atol=ATOL, rtol=RTOL)``)
ATOL, RTOL = 2e-3, 1e-3
#: streaming multiprocessors of a B200 (the persistent grid launches min(tiles, SMS / 2) clusters)
NUM_SMS = 148
M_MULTIPLE = 1
N_MULTIPLE = 8
K_MULTIPLE = 128
MAX_DIM = 2**31  #: every size must be below this (exclusive)

#: shared-memory stages of the load ring and float16 C staging buffers of the epilogue (one when a
#: single subtile covers the tile)
SMEM_STAGES = 5
C_STAGING_BUFFERS = 2
#: bytes the compiled kernel adds to its buffers: the mbarriers and their alignment, read from the
#: metadata of the eight seed variants (overlap on has the extra overlap barrier: 16 bytes more)
SMEM_BARRIER_BYTES = {True: 140, False: 124}
#: the most dynamic shared memory one CTA may use on sm_100 / sm_103 (227 KB; the SM has 228 KB,
#: 1 KB of which the system reserves per CTA)
SMEM_PER_CTA_LIMIT = 232_448

# --- what emulate may take on this machine (its budget: gluon_overlap.emulate.budget) -------------
EMULATE_SECONDS_LIMIT = 60.0
EMULATE_MEMORY_FRACTION = 0.5  #: emulate takes at most this share of the machine's memory
OPS_PER_TILE = 75  #: protocol operations of one tile besides its K steps (epilogue, barriers)
OPS_PER_K_STEP = 16  #: protocol operations of one K step of one tile (4 loads, copies, MMA, ...)
BYTES_PER_INPUT = 24  #: per element of A and B: float32 references, float64 copies, decoding temporaries
BYTES_PER_OUTPUT = 32  #: per element of C: float64 and float32 reference, float16 C, error temporaries


def check_pair(a_format: object, b_format: object) -> tuple[str, str]:
    """``(a_format, b_format)`` if the kernel supports the pair, else ``ValueError`` naming the pairs."""
    a_format, b_format = check_format(a_format, "a_format"), check_format(b_format, "b_format")
    if (a_format, b_format) not in SUPPORTED_PAIRS:
        va, vb = FORMAT_VEC_SIZE[a_format], FORMAT_VEC_SIZE[b_format]
        why = (
            f" ({a_format} has VEC_SIZE={va} and {b_format} VEC_SIZE={vb}: one MMA needs one scale-block size)"
            if va != vb
            else " (an fp4 A next to an fp8 B has no kernel path)"
            if a_format != b_format
            else ""
        )
        raise ValueError(
            f"format pair {a_format} x {b_format} is not one the kernel supports{why}; supported: "
            + ", ".join(f"{a} x {b}" for a, b in SUPPORTED_PAIRS)
        )
    return a_format, b_format


def check_size(parameter: str, value: object, multiple: int = 1) -> int:
    """A problem size: an int, ``1 <= value < 2**31`` and a multiple of ``multiple``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{parameter}={value!r} must be an integer")
    if value <= 0:
        raise ValueError(f"{parameter}={value} must be positive")
    if value >= MAX_DIM:
        raise ValueError(f"{parameter}={value} must be below 2**31 = {MAX_DIM} (32-bit TMA coordinates)")
    if value % multiple:
        raise ValueError(f"{parameter}={value} must be a multiple of {multiple}: {_WHY_MULTIPLE[multiple]}")
    return value


_WHY_MULTIPLE = {
    1: "",
    N_MULTIPLE: "each float16 row of C must be 16-byte aligned for TMA",
    K_MULTIPLE: "the rows of A and B must be TMA-aligned and the scales whole 4-scale groups",
}


def check_problem(m: object, n: object, k: object, prefix: str = "") -> tuple[int, int, int]:
    """The kernel's size rules for one problem (``prefix`` e.g. ``"--"`` names CLI options)."""
    return (
        check_size(f"{prefix}m", m, M_MULTIPLE),
        check_size(f"{prefix}n", n, N_MULTIPLE),
        check_size(f"{prefix}k", k, K_MULTIPLE),
    )


def num_tiles(m: int, n: int) -> int:
    """256 x 256 output tiles of an ``m x n`` problem."""
    return -(-m // BLOCK_M) * -(-n // BLOCK_N)


def clusters_for(m: int, n: int, clusters: int | None, sm_count: int = NUM_SMS) -> int:
    """Clusters of a launch: the real grid's ``min(tiles, SMs / 2)`` by default; a requested number is
    capped at the number of tiles, as :func:`gluon_overlap.kernel.launch_grid` never launches more."""
    return grid_for(num_tiles(m, n), clusters, sm_count)


def grid_for(tiles: int, clusters: int | None = None, sm_count: int = NUM_SMS) -> int:
    """:func:`clusters_for` of a launch of ``tiles`` output tiles."""
    if clusters is None:
        return max(1, min(tiles, sm_count // NUM_CTAS))
    return max(1, min(tiles, clusters))


# --- shared memory ------------------------------------------------------------------------------
def smem_bytes_per_cta(plan: TmemPlan, stages: int = SMEM_STAGES) -> int:
    """Dynamic shared memory one CTA of the compiled kernel uses for ``plan`` with ``stages`` load stages, in bytes.

    Per load stage: the CTA's 128 rows of A and B (one byte per element for fp8, and for the fp4
    operand of a mixed pair, which is loaded padded; half a byte for fp4 otherwise), its own A
    scales and the full 256 rows of B scales; times the stages; plus two float16 staging buffers of
    ``128 x EPILOGUE_BLOCK_N`` (one if a single subtile covers the tile) and the barriers.  Equals
    ``metadata.shared`` of the compiled kernels (tests/core/test_compile.py checks all eight seed variants, at the
    kernel's ``SMEM_STAGES``); another stage count moves the barriers by its two 8-byte mbarriers a stage.
    """
    buffers = 1 if plan.num_subtiles == 1 else C_STAGING_BUFFERS  # the kernel's STORE_STAGES
    staging = buffers * ROWS_PER_CTA * plan.epilogue_block_n * 2
    barriers = SMEM_BARRIER_BYTES[plan.overlap] + 16 * (stages - SMEM_STAGES)
    return stages * stage_bytes_per_cta(plan) + staging + barriers


def stage_bytes_per_cta(plan: TmemPlan) -> int:
    """One load stage of one CTA: its 128 rows of A and B (a byte per element for fp8 and for the fp4 operand of a
    mixed pair, which is loaded padded; half a byte for fp4 otherwise), its A scales and all 256 rows of B scales."""
    kinds = {FORMAT_ELEMENT_KIND[plan.a_format], FORMAT_ELEMENT_KIND[plan.b_format]}
    mixed = len(kinds) == 2

    def operand(fmt: str) -> int:
        fp4 = FORMAT_ELEMENT_KIND[fmt] == "e2m1"
        return ROWS_PER_CTA * plan.block_k // (2 if fp4 and not mixed else 1)

    scale_k = plan.block_k // plan.vec_size
    return operand(plan.a_format) + operand(plan.b_format) + ROWS_PER_CTA * scale_k + plan.block_n * scale_k


def check_smem(plan: TmemPlan) -> int:
    """``smem_bytes_per_cta(plan)`` if it fits one CTA, else ``ValueError`` with the need and the limit."""
    need = smem_bytes_per_cta(plan)
    if need > SMEM_PER_CTA_LIMIT:
        raise ValueError(
            f"{plan.a_format} x {plan.b_format} at BLOCK_K={plan.block_k} needs {need:,} bytes of shared memory "
            f"per CTA ({SMEM_STAGES} stages), more than the {SMEM_PER_CTA_LIMIT:,} an sm_100 CTA may use; "
            f"choose a smaller --block-k (the default is {make_plan(plan.a_format, plan.b_format).block_k})"
        )
    return need


# --- one configuration, as `plan` accepts it -------------------------------------------------------
def check_config(
    a_format: object,
    b_format: object,
    block_k: object = None,
    epilogue_block_n: object = DEFAULT_EPILOGUE_BLOCK_N,
    overlap: object = True,
    prefix: str = "",
) -> TmemPlan:
    """The plan of one configuration if ``gluon-overlap plan`` accepts it, else ``plan``'s ``ValueError``.

    The rules, in order: the format pair (:func:`check_pair`), the TMEM plan
    (:class:`~gluon_overlap.tmem.TmemPlan`), the shared memory of one CTA (:func:`check_smem`).
    The explorer draws exactly what this accepts.  ``prefix`` (``"--"``) names CLI options.
    """
    a, b = check_pair(a_format, b_format)
    k = None
    if block_k is not None:
        k = check_positive_int(f"{prefix}block_k", block_k)
        if k & (k - 1):
            raise ValueError(
                f"{prefix}block_k={block_k} must be a power of two: the kernel's TMA boxes and register "
                "tensors are Triton block shapes, which are powers of two"
            )
    n = check_positive_int(f"{prefix}epilogue_block_n", epilogue_block_n)
    plan = make_plan(a, b, k, n, check_bool(f"{prefix}overlap", overlap))
    check_smem(plan)
    return plan


def config_refusal(
    a_format: object,
    b_format: object,
    block_k: object = None,
    epilogue_block_n: object = DEFAULT_EPILOGUE_BLOCK_N,
    overlap: object = True,
) -> str | None:
    """``plan``'s reason for refusing this configuration, or ``None`` when it is accepted."""
    config = (a_format, b_format, block_k, epilogue_block_n, overlap)
    try:
        return _cached_refusal(*config, tuple(type(v) for v in config))
    except TypeError:  # an unhashable argument: not cached
        return _refusal(*config)


def _refusal(
    a_format: object, b_format: object, block_k: object, epilogue_block_n: object, overlap: object
) -> str | None:
    try:
        check_config(a_format, b_format, block_k, epilogue_block_n, overlap)
    except ValueError as exc:
        return str(exc)
    return None


@functools.lru_cache(maxsize=4096)
def _cached_refusal(
    a_format: object,
    b_format: object,
    block_k: object,
    epilogue_block_n: object,
    overlap: object,
    _types: tuple[type, ...],
) -> str | None:
    return _refusal(a_format, b_format, block_k, epilogue_block_n, overlap)


#: the values the explorer's menus offer (each marked refused, with plan's reason, where plan refuses it)
BLOCK_K_MENU: tuple[int, ...] = tuple(range(64, 512 + 1, 64))
EPILOGUE_BLOCK_N_MENU: tuple[int, ...] = (8, 16, 32, 48, 64, 128, 256)
FORMAT_MENU: tuple[str, ...] = FORMAT_NAMES


def accepted(parameter: str, values: Iterable[object], **config: object) -> list[object]:
    """The ``values`` of ``parameter`` (one of :func:`check_config`'s arguments) that ``plan`` accepts
    with the rest of ``config``."""
    return [v for v in values if config_refusal(**{**config, parameter: v}) is None]


# --- machine --------------------------------------------------------------------------------------
def machine_memory_bytes() -> int:
    """Physical memory of this machine (``os.sysconf``), or 0 where the platform does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def describe_bytes(nbytes: float) -> str:
    """``12.6 GB``, ``300 MB``, ``1.2 TB``: a number of bytes as a person reads it."""
    if nbytes >= 1e12:
        return f"{nbytes / 1e12:.3g} TB"
    return f"{nbytes / 1e9:.1f} GB" if nbytes >= 1e8 else f"{nbytes / 1e6:.0f} MB"


def describe_seconds(seconds: float) -> str:
    """``800 ms``, ``42 s``, ``3 min``, ``1.5 h``, ``2 days``: a duration as a person reads it."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.3g} days"


def bench_bytes(m: int, n: int, k: int) -> tuple[float, float]:
    """(GPU bytes, host bytes) one ``gluon-overlap bench`` problem needs: on the GPU the operands, their
    float references and float64 reference product (the :func:`emulate_estimate` rates) plus C in float16
    and cuBLAS's bfloat16 C; on the host the random codes, drawn by a CPU generator (one byte per element)."""
    inputs, outputs = float(m + n) * k, float(m) * n
    return BYTES_PER_INPUT * inputs + BYTES_PER_OUTPUT * outputs + 4 * outputs, 2 * inputs


def check_bench(m: int, n: int, ks: Sequence[int], gpu_free: int, host: int | None = None) -> None:
    """``ValueError`` when the largest of the problems does not fit the GPU's free memory (``gpu_free``) or
    half of this machine's memory."""
    host = machine_memory_bytes() if host is None else host
    gpu, cpu = bench_bytes(m, n, max(ks))
    if gpu > gpu_free:
        raise ValueError(
            f"{m} x {n} x {max(ks)} needs ~{describe_bytes(gpu)} of GPU memory for the benchmark's "
            f"operands and reference, but the GPU has {describe_bytes(gpu_free)} free"
        )
    if host and cpu > EMULATE_MEMORY_FRACTION * host:
        raise ValueError(
            f"{m} x {n} x {max(ks)} needs ~{describe_bytes(cpu)} of host memory for the random operands, "
            f"more than half of this machine's {describe_bytes(host)}"
        )


def model_operations(
    m: int, n: int, ks: Iterable[int], pairs: Sequence[tuple[str, str]], sm_count: int = NUM_SMS
) -> float:
    """Operations a step-by-step timing model would simulate: the critical cluster's tiles times their
    K steps, for each pair, K and mode.  (The model answers large problems in closed form; this is
    the size of the simulation it avoids.)"""
    tiles = num_tiles(m, n)
    per_cluster = -(-tiles // clusters_for(m, n, None, sm_count))
    total = 0.0
    for a, b in pairs:
        block_k = make_plan(a, b).block_k
        for k in ks:
            total += 2 * per_cluster * (OPS_PER_TILE + OPS_PER_K_STEP * -(-k // block_k))
    return total


def check_model(m: int, n: int, ks: Sequence[int], pairs: Sequence[tuple[str, str]]) -> None:
    """The kernel's rules for every (pair, K) the model is asked about."""
    for a, b in pairs:
        check_pair(a, b)
    check_size("--m", m, M_MULTIPLE)
    check_size("--n", n, N_MULTIPLE)
    if not ks:
        raise ValueError("--k needs at least one value")
    for k in ks:
        check_size("--k", k, K_MULTIPLE)


# --- the table ------------------------------------------------------------------------------------
def table_rows() -> list[tuple[str, str, str, str, str, str]]:
    """The README's limits table: (command, format pairs, M, N, K, largest problem)."""
    pairs = "the kernel's four"
    dims = ("any >= 1", f"multiple of {N_MULTIPLE}", f"multiple of {K_MULTIPLE}")
    kernel = "below 2**31 each"
    return [
        ("kernel wrapper (`matmul`)", pairs, *dims, kernel + " (and GPU memory)"),
        (
            "`plan` (and the explorer)",
            pairs,
            "-",
            "-",
            "-",
            f"BLOCK_K a power of two with <= {SMEM_PER_CTA_LIMIT:,} B shared memory per CTA",
        ),
        ("`compile`", pairs, "-", "-", "-", f"<= {SMEM_PER_CTA_LIMIT:,} B shared memory per CTA"),
        ("`bench`", pairs, *dims, kernel + " and the GPU's free memory (estimate printed when refused)"),
        ("`model`", pairs, *dims, kernel),
        (
            "`emulate`",
            pairs,
            *dims,
            f"<= half of this machine's memory and ~{EMULATE_SECONDS_LIMIT:.0f} s (estimate printed when refused); "
            "clusters <= tiles",
        ),
        (
            "`run` (any Gluon script)",
            "any",
            "-",
            "-",
            "-",
            "the script's own; --time-limit seconds of wall clock (600 by default)",
        ),
    ]


__all__ = [
    "ATOL",
    "RTOL",
    "BLOCK_K_MENU",
    "BYTES_PER_INPUT",
    "BYTES_PER_OUTPUT",
    "EMULATE_MEMORY_FRACTION",
    "EPILOGUE_BLOCK_N_MENU",
    "FORMAT_MENU",
    "NUM_SMS",
    "accepted",
    "check_config",
    "config_refusal",
    "check_format",
    "check_int",
    "check_number",
    "check_positive_int",
    "FORMAT_ELEMENT_KIND",
    "FORMAT_VEC_SIZE",
    "C_STAGING_BUFFERS",
    "DEFAULT_EPILOGUE_BLOCK_N",
    "EMULATE_SECONDS_LIMIT",
    "K_MULTIPLE",
    "MAX_DIM",
    "MAX_SEED",
    "M_MULTIPLE",
    "N_MULTIPLE",
    "SMEM_PER_CTA_LIMIT",
    "SMEM_STAGES",
    "SUPPORTED_PAIRS",
    "bench_bytes",
    "OPS_PER_K_STEP",
    "OPS_PER_TILE",
    "check_bench",
    "describe_bytes",
    "describe_seconds",
    "check_model",
    "check_pair",
    "check_problem",
    "check_seed",
    "check_size",
    "check_smem",
    "clusters_for",
    "grid_for",
    "machine_memory_bytes",
    "model_operations",
    "num_tiles",
    "smem_bytes_per_cta",
    "stage_bytes_per_cta",
    "table_rows",
]
