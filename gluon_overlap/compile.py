"""Cross-compiling the Gluon kernel for ``sm_100a`` on any machine -- no GPU needed.

``triton.compile`` accepts a :class:`~triton.experimental.gluon.GluonASTSource` and an
explicit target (``GPUTarget("cuda", 100, 32)``), so the kernel goes all the way to an
``sm_100a`` cubin without a CUDA driver.  The TMA descriptors it is traced with are built
by the *same* :func:`gluon_overlap.kernel.kernel_args` the launch wrapper uses, over
``device="meta"`` tensors (shapes and dtypes only, no memory).

What the artifacts show (:class:`CompileStats`): shared memory, TMEM columns, warps,
CTAs per cluster, registers, counts of ``tcgen05`` / ``mbarrier`` instructions in the PTX,
the MMA kind, and -- read back from the TTGIR -- the TMEM column offsets, the epilogue's
drain orders and the subtile after which the overlap barrier is released.  The tests and
notebook 05 compare those with the :class:`~gluon_overlap.tmem.TmemPlan`.

Compiling is slow cold (2-6 s a variant on a laptop-class CPU, LLVM dominates) and fast
warm: Triton's on-disk cache (``TRITON_CACHE_DIR``) is reused, and results are also
cached in-process, keyed on the variant.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from gluon_overlap.tmem import FORMAT_ELEMENT_KIND, SEED_FORMAT_PAIRS, TmemPlan, check_format, make_plan

#: compute capability and warp size of the target; the kernel needs 2-CTA clusters
TARGET_ARCH = 100
NUM_CTAS = 2
#: problem size the (meta) descriptors are made with; the compiled code does not depend on it
TRACE_SIZE = 8192

#: instruction families counted in the PTX (key -> regex over the comment-free PTX text)
PTX_PATTERNS = {
    "tcgen05.mma": r"\btcgen05\.mma\b",
    "tcgen05.cp": r"\btcgen05\.cp\b",
    "tcgen05.ld": r"\btcgen05\.ld\b",
    "tcgen05.alloc": r"\btcgen05\.alloc\b",
    "tcgen05.commit": r"\btcgen05\.commit\b",
    "mbarrier.init": r"\bmbarrier\.init\b",
    "mbarrier.wait": r"\bmbarrier\.(?:try_wait|test_wait)\b",
    "mbarrier.arrive": r"\bmbarrier\.arrive\.(?!expect_tx)",
    "mbarrier.arrive.expect_tx": r"\bmbarrier\.arrive\.expect_tx\b",
}
#: SASS opcodes worth showing (tensor-core MMAs, TMEM copies/loads, TMA)
SASS_PATTERN = re.compile(r"\b(UTC\w*MMA[\w.]*|UTCCP[\w.]*|UTCBAR[\w.]*|LDTM[\w.]*|UTMALDG[\w.]*|UTMASTG[\w.]*)")


@dataclass(frozen=True, order=True)
class Variant:
    """One compiled configuration: a format pair, overlap on/off and BLOCK_K (``None``: the seed's).

    Refused (``ValueError``) unless the kernel supports the pair (:func:`gluon_overlap.limits.check_pair`)
    and the plan's shared memory fits one CTA (:func:`gluon_overlap.limits.check_smem`).
    """

    a_format: str
    b_format: str
    overlap: bool
    block_k: int | None = None

    def __post_init__(self) -> None:
        from gluon_overlap.limits import check_pair, check_smem

        check_format(self.a_format, "a_format")
        check_format(self.b_format, "b_format")
        if not isinstance(self.overlap, bool):
            raise ValueError(f"overlap={self.overlap!r} must be True or False")
        plan = make_plan(self.a_format, self.b_format, block_k=self.block_k, overlap=self.overlap)
        check_pair(self.a_format, self.b_format)
        check_smem(plan)
        object.__setattr__(self, "block_k", plan.block_k)

    @property
    def default_block_k(self) -> bool:
        return self.block_k == make_plan(self.a_format, self.b_format).block_k

    @property
    def label(self) -> str:
        bk = "" if self.default_block_k else f", BLOCK_K={self.block_k}"
        return f"{self.a_format} x {self.b_format}, overlap {'on' if self.overlap else 'off'}{bk}"

    @property
    def slug(self) -> str:
        """File-name friendly label, e.g. ``nvfp4-nvfp4-on`` (``-bk128`` appended for a non-default BLOCK_K)."""
        bk = "" if self.default_block_k else f"-bk{self.block_k}"
        return f"{self.a_format}-{self.b_format}-{'on' if self.overlap else 'off'}{bk}"

    def plan(self) -> TmemPlan:
        return make_plan(self.a_format, self.b_format, block_k=self.block_k, overlap=self.overlap)


#: the seed's eight variants: four format pairs x overlap off / on
VARIANTS = tuple(Variant(a, b, ov) for a, b in SEED_FORMAT_PAIRS for ov in (False, True))


def expected_mma_kind(a_format: str, b_format: str) -> str:
    """The PTX ``tcgen05.mma`` kind the hardware needs for a format pair.

    Any fp8 operand -> ``mxf8f6f4`` (32-element scale blocks); nvfp4 -> ``mxf4nvf4`` with
    16-element blocks; mxfp4 x mxfp4 -> ``mxf4`` with 32-element blocks.
    """
    kinds = {FORMAT_ELEMENT_KIND[check_format(a_format, "a_format")],
             FORMAT_ELEMENT_KIND[check_format(b_format, "b_format")]}
    if "e4m3" in kinds:
        return "mxf8f6f4.block_scale.block32"
    if "nvfp4" in (a_format, b_format):
        return "mxf4nvf4.block_scale.block16"
    return "mxf4.block_scale.block32"


# =====================================================================================
# Statistics read from the artifacts
# =====================================================================================
def strip_ptx_comments(ptx: str) -> str:
    return re.sub(r"//[^\n]*", "", ptx)


def ptx_counts(ptx: str) -> dict[str, int]:
    """How often each instruction family of :data:`PTX_PATTERNS` occurs in the PTX."""
    text = strip_ptx_comments(ptx)
    return {key: len(re.findall(pattern, text)) for key, pattern in PTX_PATTERNS.items()}


def ptx_lines(ptx: str, needle: str = "tcgen05.") -> list[str]:
    """The distinct PTX instructions (opcode with modifiers) containing ``needle``, in first-seen order."""
    seen: dict[str, None] = {}
    for match in re.finditer(r"\b" + re.escape(needle) + r"[\w.:]*", strip_ptx_comments(ptx)):
        seen.setdefault(match.group(0), None)
    return list(seen)


def tmem_alloc_columns(ptx: str) -> list[int]:
    """Column counts of the ``tcgen05.alloc`` instructions in the PTX (one per allocation)."""
    return [int(c) for c in re.findall(r"\btcgen05\.alloc\.[\w.:]*\s+\[[^\]]+\],\s*(\d+);", strip_ptx_comments(ptx))]


def mma_kind(ptx: str) -> str:
    """The ``kind::...`` of the block-scaled ``tcgen05.mma`` (e.g. ``mxf4nvf4.block_scale.block16``)."""
    kinds = set(re.findall(r"\btcgen05\.mma\.[\w.:]*?kind::([\w.]+)", strip_ptx_comments(ptx)))
    if len(kinds) != 1:
        raise ValueError(f"expected one tcgen05.mma kind in the PTX, found {sorted(kinds)}")
    return kinds.pop()


_SUBSLICE = re.compile(r"(%[\w.]+) = ttng\.tmem_subslice (%[\w.#]+) \{offset = (\d+) : i32\} : "
                       r"!ttg\.memdesc<(\d+)x(\d+)xf32")


@dataclass(frozen=True)
class TmemEvidence:
    """What the TTGIR says about TMEM: slice offsets, drain orders, where the epilogue arrives."""

    accumulators: tuple[int, ...]  # offsets of the accumulator-window slices of the 512-column pool
    a_scale: tuple[int, ...]  # offsets of the A-scale slices
    b_scale: tuple[int, ...]  # offsets of the B-scale slices
    drain_order_even: tuple[int, ...]  # subtile indices drained by even tiles, in order
    drain_order_odd: tuple[int, ...]  # ... by odd tiles
    arrive_steps: tuple[int, ...]  # for each epilogue arrive: the drain step it follows
    arrive_barriers: tuple[str, ...] = ()  # for each epilogue arrive: its barrier's role (TtgirBarriers.role)
    pool_slice_lines: tuple[str, ...] = ()  # the TTGIR pool-slice lines (trimmed), for display

    @property
    def early_release_subtile(self) -> int | None:
        """The drain step after which ``overlap`` is released (None: only ``acc_empty`` is arrived on)."""
        return self.arrive_steps[0] if len(self.arrive_steps) > 1 else None

    def offsets(self) -> dict[str, list[int]]:
        return {"accumulators": list(self.accumulators), "a_scale": list(self.a_scale),
                "b_scale": list(self.b_scale)}

    def matches(self, plan: TmemPlan) -> bool:
        """True when offsets, drain orders and arrive points are exactly what ``plan`` prescribes."""
        return replace(self, pool_slice_lines=()) == plan_evidence(plan)


_LOC_NAME = re.compile(r'^(#loc\d+) = loc\("([^"]+)"')
_LOC_CALLSITE = re.compile(r"^(#loc\d+) = loc\(callsite\((#loc\d+) at (#loc\d+)\)\)")
_ALLOC = re.compile(r"^(%[\w.#]+) = ttg\.local_alloc\b.*loc\((#loc\d+)\)\s*$")
_INDEX = re.compile(r"^(%[\w.#]+) = ttg\.memdesc_index (%[\w.#]+)\[")
_ARRIVE = re.compile(r"ttng\.arrive_barrier (%[\w.#]+)")
_WARP_SPECIALIZE = re.compile(r"ttg\.warp_specialize\(([^)]*)\)")
_PARTITION = re.compile(r"^partition\d+\((.*)\)\s*num_warps")


@dataclass(frozen=True)
class TtgirBarriers:
    """The mbarrier allocations of a TTGIR and what each ``warp_specialize`` region does with them.

    ``allocs``: allocation SSA value -> (the kernel's variable name, number of barriers in the array);
    ``root``: (scope, SSA value) -> the allocation it points into (scope ``""`` is the kernel body and its
    default region, ``"partitionN"`` a worker region: those are isolated, their SSA names restart);
    ``mma_waits``: the allocations a region that issues ``tc_gen5_mma`` waits on."""

    allocs: dict[str, tuple[str, int]]
    root: dict[tuple[str, str], str]
    mma_waits: frozenset[str]

    def role(self, scope: str, value: str) -> str:
        """A barrier by what the kernel does with it: does the MMA wait on it, how many barriers its array has."""
        alloc = self.root.get((scope, value))
        if alloc is None:
            return "?"
        waits = "the MMA waits on it" if alloc in self.mma_waits else "the MMA does not wait on it"
        count = self.allocs[alloc][1]
        return f"{waits}, array of {count}"


_ALLOC_BATCH = re.compile(r"!ttg\.memdesc<(\d+)x")
_WAIT = re.compile(r"ttng\.wait_barrier (%[\w.#]+)")
_REGION = re.compile(r"^(default|partition\d+)\b.*\{\s*$")


def ttgir_barriers(ttgir: str) -> TtgirBarriers:
    """Follow every barrier value of the TTGIR to its allocation, region by region (see :class:`TtgirBarriers`).

    A barrier array is a ``ttg.local_alloc`` of ``i64``; ``ttg.memdesc_index`` picks one barrier of it, and each
    ``partitionN`` region sees the ``warp_specialize`` operands as ``%argNN`` in order.  The allocation's name is
    the call site of the allocating helper *at* the kernel line that names it (``loc("..."(...))``)."""
    names: dict[str, str] = {}
    callsites: dict[str, str] = {}
    for line in ttgir.splitlines():
        m = _LOC_NAME.match(line)
        if m:
            names[m.group(1)] = m.group(2)
        m = _LOC_CALLSITE.match(line)
        if m:
            callsites[m.group(1)] = m.group(3)
    parent: dict[tuple[str, str], tuple[str, str]] = {}
    allocs: dict[str, tuple[str, int]] = {}
    ws_operands: list[str] = []
    waits: dict[str, set[tuple[str, str]]] = {}
    mma_regions: set[str] = set()
    region, region_depth, depth = "", None, 0
    for raw in ttgir.splitlines():
        line = raw.strip()
        opened = line.count("{") - line.count("}")
        m = _REGION.match(line)
        if m:
            region, region_depth = m.group(1), depth
        scope = region if region.startswith("partition") else ""
        depth += opened
        if region_depth is not None and depth <= region_depth:
            region, region_depth = "", None
        m = _ALLOC.match(line)
        if m and "xi64" in line:
            loc = m.group(2)
            batch = _ALLOC_BATCH.search(line)
            allocs[m.group(1)] = (names.get(callsites.get(loc, loc)) or names.get(loc) or m.group(1),
                                  int(batch.group(1)) if batch else 1)
            continue
        m = _INDEX.match(line)
        if m:
            parent[(scope, m.group(1))] = (scope, m.group(2))
            continue
        m = _WARP_SPECIALIZE.search(line)
        if m:
            ws_operands = [x.strip() for x in m.group(1).split(",")]
            continue
        m = _PARTITION.match(line)
        if m and ws_operands:
            args = re.findall(r"(%arg\d+):", m.group(1))
            for arg, operand in zip(args, ws_operands, strict=False):
                parent[(scope, arg)] = ("", operand)
            continue
        m = _WAIT.search(line)
        if m:
            waits.setdefault(region, set()).add((scope, m.group(1)))
        if "ttng.tc_gen5_mma" in line:
            mma_regions.add(region)

    def root(key: tuple[str, str]) -> str | None:
        seen = set()
        while key[1] not in allocs and key in parent and key not in seen:
            seen.add(key)
            key = parent[key]
        return key[1] if key[1] in allocs else None

    roots = {k: r for k in set(parent) | {("", a) for a in allocs} if (r := root(k)) is not None}
    mma_waits = frozenset(roots[k] for reg in mma_regions for k in waits.get(reg, ()) if k in roots)
    return TtgirBarriers(allocs, roots, mma_waits)


def ttgir_barrier_names(ttgir: str) -> dict[str, str]:
    """SSA value (of the kernel body or any region) -> the kernel's variable name of the barrier array it points
    into (for display: the checks use :meth:`TtgirBarriers.role`, never a name)."""
    bars = ttgir_barriers(ttgir)
    return {value: bars.allocs[alloc][0] for (_, value), alloc in bars.root.items()}


def ttgir_tmem_evidence(ttgir: str, epilogue_block_n: int) -> TmemEvidence:
    """Read TMEM offsets, drain orders and the epilogue's arrive points back from the TTGIR.

    * Slices of the pool (the ``Nx512xf32`` allocation) are the accumulator windows and the
      scale slots; the kernel names them ``%acc_tmem``, ``%a_scale_tmem``, ``%b_scale_tmem``.
    * Epilogue subtiles (``%acc_sub``) are 32-column slices of a window; each drain step has
      one, or an ``scf.if`` of two when the order depends on the tile's parity (then: even
      tiles, else: odd tiles), followed by one ``tmem_load``.
    * Each ``arrive_barrier`` of the epilogue comes after some number of ``tmem_load`` ops:
      that number minus one is the drain step it follows; :meth:`TtgirBarriers.role` says what the kernel does
      with the barrier it arrives on (whether the MMA waits on it, how many barriers its array has).
    """
    barriers = ttgir_barriers(ttgir)
    pool: dict[str, set[int]] = {"acc": set(), "a_scale": set(), "b_scale": set()}
    pool_lines: list[str] = []
    steps: list[list[int]] = []  # per drain step: the subtile offsets in textual order
    loads = 0
    step_open = False
    arrives: list[int] = []
    arrive_bars: list[str] = []
    for raw in ttgir.splitlines():
        line = raw.strip()
        m = _SUBSLICE.search(line)
        if m:
            name, offset, cols = m.group(1), int(m.group(3)), int(m.group(5))
            if cols >= 512:  # a slice of the whole pool
                key = "a_scale" if name.startswith("%a_scale") else "b_scale" if name.startswith("%b_scale") else "acc"
                pool[key].add(offset)
                pool_lines.append(line.split(" : !ttg")[0])
            elif name.startswith("%acc_sub"):
                if not step_open:
                    steps.append([])
                    step_open = True
                steps[-1].append(offset)
        elif "ttng.tmem_load" in line:
            loads += 1
            step_open = False
        elif "ttng.arrive_barrier" in line and loads:
            arrives.append(loads - 1)
            m = _ARRIVE.search(line)
            arrive_bars.append(barriers.role("", m.group(1)) if m else "?")
    return TmemEvidence(tuple(sorted(pool["acc"])), tuple(sorted(pool["a_scale"])), tuple(sorted(pool["b_scale"])),
                        tuple(s[0] // epilogue_block_n for s in steps),
                        tuple(s[-1] // epilogue_block_n for s in steps), tuple(arrives), tuple(arrive_bars),
                        tuple(dict.fromkeys(pool_lines)))


def plan_evidence(plan: TmemPlan) -> TmemEvidence:
    """What :func:`ttgir_tmem_evidence` should find for ``plan`` -- the expectation, from the plan."""
    last_step = plan.num_subtiles - 1
    arrives = (plan.early_release_subtile, last_step) if plan.overlap else (last_step,)
    barriers = drain_arrive_roles(plan)
    return TmemEvidence(tuple(sorted({plan.left.offset, plan.right.offset})), (plan.a_scale.offset,),
                        (plan.b_scale.offset,), tuple(plan.drain_order(0)), tuple(plan.drain_order(1)), arrives,
                        barriers)


@functools.lru_cache(maxsize=32)
def drain_arrive_roles(plan: TmemPlan) -> tuple[str, ...]:
    """What the epilogue's arrives of one tile should find, learnt from the CPU executor's recording of the kernel
    (:func:`gluon_overlap.twin.streams.drain_arrive_roles`), in the words of :meth:`TtgirBarriers.role`."""
    from gluon_overlap.twin.streams import drain_arrive_roles as recorded

    return tuple(f"{'the MMA waits on it' if gate else 'the MMA does not wait on it'}, array of {count}"
                 for gate, count in recorded(plan))

#: what the compile evidence cannot see, said wherever the evidence is shown
NOT_CHECKED = (
    "mbarrier wait parities: each wait's phase is computed at run time from loop counters; the TTGIR shows "
    "only the arithmetic (the CPU twin checks the protocol: gluon-overlap emulate)",
    "tcgen05.commit targets: which load_empty / acc_ready barrier each MMA commit arrives on is selected "
    "at run time by counters",
    "which barrier index an arrive uses at run time (the accumulator's ring index i % 2); only the barrier array "
    "is identified",
)


def evidence_checks(compiled: CompiledVariant) -> list[dict]:
    """Every check the compiled artifacts allow, as ``{name, expected, found, ok}``.

    The TMEM checks (``tmem_*``, ``drain_*``, ``release_*``) together are ``matches_plan``.
    """
    from gluon_overlap.limits import SMEM_PER_CTA_LIMIT

    plan, ev, st = compiled.plan, compiled.evidence, compiled.stats
    want = plan_evidence(plan)

    def check(name: str, expected, found, ok: bool | None = None) -> dict:
        return {"name": name, "expected": expected, "found": found,
                "ok": bool(expected == found if ok is None else ok)}

    return [
        check("tmem_accumulator_offsets", list(want.accumulators), list(ev.accumulators)),
        check("tmem_a_scale_offsets", list(want.a_scale), list(ev.a_scale)),
        check("tmem_b_scale_offsets", list(want.b_scale), list(ev.b_scale)),
        check("drain_order_even", list(want.drain_order_even), list(ev.drain_order_even)),
        check("drain_order_odd", list(want.drain_order_odd), list(ev.drain_order_odd)),
        check("release_steps", list(want.arrive_steps), list(ev.arrive_steps)),
        check("release_barriers", list(want.arrive_barriers), list(ev.arrive_barriers)),
        check("tmem_columns_allocated", plan.tmem_cols, st.tmem_cols),
        check("ctas_per_cluster", NUM_CTAS, st.num_ctas),
        check("mma_kind", expected_mma_kind(plan.a_format, plan.b_format), st.mma_kind),
        check("shared_memory_fits_a_cta", f"<= {SMEM_PER_CTA_LIMIT}", st.shared_bytes,
              st.shared_bytes <= SMEM_PER_CTA_LIMIT),
    ]


def matches_plan(checks: list[dict]) -> bool:
    """True when every TMEM check (offsets, drain orders, releases) passed."""
    return all(c["ok"] for c in checks if c["name"].startswith(("tmem_a", "tmem_b", "tmem_acc", "drain_", "release_")))


def cuobjdump_path() -> Path:
    """The ``cuobjdump`` Triton ships (works offline on an ``sm_100a`` cubin)."""
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("triton is not installed")
    return Path(spec.submodule_search_locations[0]) / "backends" / "nvidia" / "bin" / "cuobjdump"


def _cuobjdump(cubin: bytes, flag: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        out = subprocess.run([str(cuobjdump_path()), flag, str(path)], capture_output=True, text=True, check=True)
    return out.stdout


def resource_usage(cubin: bytes) -> dict[str, int]:
    """``cuobjdump -res-usage``: registers per thread (``REG``), static shared memory, stack, ..."""
    text = _cuobjdump(cubin, "-res-usage")
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", text)
    if not m:
        raise ValueError(f"unexpected cuobjdump -res-usage output: {text!r}")
    return {"registers": int(m.group(1)), "stack": int(m.group(2)), "static_shared": int(m.group(3)),
            "local": int(m.group(4))}


def sass_text(cubin: bytes) -> str:
    """The SASS of the cubin (``cuobjdump -sass``)."""
    return _cuobjdump(cubin, "-sass")


def sass_counts(sass: str) -> dict[str, int]:
    """How often each tensor-core / TMEM / TMA opcode of interest occurs in the SASS."""
    counts: dict[str, int] = {}
    for match in SASS_PATTERN.finditer(sass):
        counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return dict(sorted(counts.items()))


def sass_lines(sass: str, pattern: str = r"UTC\w*MMA") -> list[str]:
    """SASS instructions matching ``pattern`` (addresses and encodings stripped)."""
    out = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?);", line)
        if m and re.search(pattern, m.group(1)):
            out.append(" ".join(m.group(1).split()))
    return out


@dataclass(frozen=True)
class CompileStats:
    """The statistics of one compiled variant (``to_dict`` gives the CLI's JSON)."""

    a_format: str
    b_format: str
    overlap: bool
    shared_bytes: int  # dynamic shared memory per CTA (Triton's metadata.shared)
    tmem_cols: int  # TMEM columns allocated per CTA (metadata.tmem_size)
    num_warps: int  # warps per CTA (4 default + the workers, rounded to a warp group)
    num_ctas: int  # CTAs per cluster
    registers: int  # registers per thread at launch (cuobjdump -res-usage)
    ptx_counts: dict = field(default_factory=dict)
    mma_kind: str = ""
    tmem_offsets: dict = field(default_factory=dict)
    plan_offsets: dict = field(default_factory=dict)
    drain_order_even: list = field(default_factory=list)
    drain_order_odd: list = field(default_factory=list)
    early_release_subtile: int | None = None
    release_barriers: list = field(default_factory=list)  # barrier each epilogue release arrives on, in order
    plan: dict = field(default_factory=dict)  # the TmemPlan the kernel was compiled with

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CompiledVariant:
    """The artifacts of one variant plus their statistics."""

    variant: Variant
    plan: TmemPlan
    ttgir: str
    ptx: str
    cubin: bytes
    stats: CompileStats
    evidence: TmemEvidence
    compile_seconds: float  # wall time of triton.compile in this process (a cache hit is fast)

    @property
    def sass(self) -> str:
        return _sass_cached(self.cubin)


@functools.lru_cache(maxsize=16)
def _sass_cached(cubin: bytes) -> str:
    return sass_text(cubin)


# =====================================================================================
# Compiling
# =====================================================================================
def _meta_operands(a_format: str, b_format: str, size: int):
    import torch

    from gluon_overlap.kernel import expected_swizzled_shape

    def data(fmt):
        if fmt == "mxfp8":
            return torch.empty(size, size, dtype=torch.float8_e4m3fn, device="meta")
        return torch.empty(size, size // 2, dtype=torch.uint8, device="meta")

    def scales(fmt):
        dtype = torch.float8_e4m3fn if fmt == "nvfp4" else torch.uint8
        return torch.empty(expected_swizzled_shape(size, size, fmt), dtype=dtype, device="meta")

    c = torch.empty(size, size, dtype=torch.float16, device="meta")
    return data(a_format), data(b_format), scales(a_format), scales(b_format), c


def gluon_source(variant: Variant, size: int = TRACE_SIZE):
    """The ``GluonASTSource`` of a variant: signature and constexprs of the real launch."""
    from triton.experimental.gluon import GluonASTSource

    from gluon_overlap import kernel

    plan = variant.plan()
    a, b, a_s, b_s, c = _meta_operands(variant.a_format, variant.b_format, size)
    args = kernel.kernel_args(a, b, a_s, b_s, c, plan, size, size, size)
    fn = kernel.mma_scaled_warp_specialized_kernel
    signature, constexprs = {}, {}
    for index, (param, value) in enumerate(zip(fn.params, args, strict=True)):
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[(index, )] = value
        elif hasattr(value, "__mangle__"):
            signature[param.name] = value.__mangle__()
        else:
            signature[param.name] = "i32"
    return GluonASTSource(fn, signature, constexprs)


def _compile_uncached(variant: Variant) -> CompiledVariant:
    import triton
    from triton.backends.compiler import GPUTarget

    src = gluon_source(variant)
    start = time.perf_counter()
    ck = triton.compile(src, target=GPUTarget("cuda", TARGET_ARCH, 32), options={"num_ctas": NUM_CTAS})
    seconds = time.perf_counter() - start
    plan = variant.plan()
    ttgir, ptx, cubin = ck.asm["ttgir"], ck.asm["ptx"], ck.asm["cubin"]
    evidence = ttgir_tmem_evidence(ttgir, plan.epilogue_block_n)
    md = ck.metadata
    stats = CompileStats(
        a_format=variant.a_format, b_format=variant.b_format, overlap=variant.overlap,
        shared_bytes=int(md.shared), tmem_cols=int(md.tmem_size), num_warps=int(md.num_warps),
        num_ctas=int(md.num_ctas), registers=resource_usage(cubin)["registers"], ptx_counts=ptx_counts(ptx),
        mma_kind=mma_kind(ptx), tmem_offsets=evidence.offsets(), plan_offsets=plan_evidence(plan).offsets(),
        drain_order_even=list(evidence.drain_order_even), drain_order_odd=list(evidence.drain_order_odd),
        early_release_subtile=evidence.early_release_subtile, release_barriers=list(evidence.arrive_barriers),
        plan=plan.to_dict())
    return CompiledVariant(variant, plan, ttgir, ptx, cubin, stats, evidence, seconds)


_compiled: dict[Variant, CompiledVariant] = {}  # the in-process cache, keyed on the variant


def compile_variant(a_format: str, b_format: str, overlap: bool = True, block_k: int | None = None) -> CompiledVariant:
    """Cross-compile one variant for ``sm_100a`` (cached in-process and in ``TRITON_CACHE_DIR``)."""
    variant = Variant(a_format, b_format, bool(overlap), block_k)
    if variant not in _compiled:
        _compiled[variant] = _compile_uncached(variant)
    return _compiled[variant]


ProgressCallback = Callable[[int, int, Variant, float, bool], None]


def print_progress(done: int, total: int, variant: Variant, seconds: float, reused: bool) -> None:
    """Default progress line: ``[3/8] mxfp4 x mxfp4, overlap off  2.3 s``."""
    how = "already compiled in this process" if reused else f"{seconds:.1f} s"
    print(f"[{done}/{total}] {variant.label:32s} {how}", flush=True)


def compile_all(variants: Iterable[Variant] = VARIANTS,
                progress: ProgressCallback | None = print_progress) -> list[CompiledVariant]:
    """Compile several variants, reporting each one through ``progress`` as it finishes."""
    variants = list(variants)
    results = []
    for done, variant in enumerate(variants, start=1):
        reused = variant in _compiled
        start = time.perf_counter()
        result = compile_variant(variant.a_format, variant.b_format, variant.overlap, variant.block_k)
        if progress is not None:
            progress(done, len(variants), variant, time.perf_counter() - start, reused)
        results.append(result)
    return results


def clear_cache() -> None:
    """Forget the in-process results (Triton's on-disk cache is left alone)."""
    _compiled.clear()
    _sass_cached.cache_clear()


def triton_cache_dir() -> str:
    """Where Triton keeps compiled kernels (``TRITON_CACHE_DIR`` or its default)."""
    from triton import knobs

    return str(knobs.cache.dir or os.path.join(Path.home(), ".triton", "cache"))


def kernel_source(fn, docstring: bool = False) -> str:
    """Source of one of the kernel's Gluon functions, dedented, without its docstring unless asked."""
    import ast
    import inspect
    import textwrap

    src = textwrap.dedent(inspect.getsource(getattr(fn, "fn", fn)))
    node = ast.parse(src).body[0]
    if not docstring and ast.get_docstring(node) is not None:
        doc = node.body[0]
        lines = src.splitlines(keepends=True)
        del lines[doc.lineno - 1:doc.end_lineno]
        src = "".join(lines)
    return src


def write_artifacts(compiled: CompiledVariant, folder: str | os.PathLike) -> list[Path]:
    """Write ``<slug>.ttgir / .ptx / .cubin / .sass / .json`` into ``folder``; return the paths."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    slug = compiled.variant.slug
    files = {
        f"{slug}.ttgir": compiled.ttgir,
        f"{slug}.ptx": compiled.ptx,
        f"{slug}.sass": compiled.sass,
        f"{slug}.json": json.dumps(compiled.stats.to_dict(), indent=2) + "\n",
    }
    paths = []
    for name, text in files.items():
        (out / name).write_text(text)
        paths.append(out / name)
    (out / f"{slug}.cubin").write_bytes(compiled.cubin)
    paths.append(out / f"{slug}.cubin")
    return sorted(paths)


def compare_stats(off: CompileStats, on: CompileStats) -> dict[str, tuple]:
    """Every statistic that differs between two variants: ``{name: (off value, on value)}``."""
    diff: dict[str, tuple] = {}
    a, b = off.to_dict(), on.to_dict()
    for key in a:
        if key == "ptx_counts":
            for name in a[key]:
                if a[key][name] != b[key][name]:
                    diff[name] = (a[key][name], b[key][name])
        elif a[key] != b[key]:
            diff[key] = (a[key], b[key])
    return diff


# =====================================================================================
# Any @gluon.jit kernel (the step kernels of notebooks 03-04, a learner's edit, ...)
# =====================================================================================
def meta_operands(a_format: str, b_format: str, size: int = TRACE_SIZE):
    """``(a_data, b_data, a_scale_swizzled, b_scale_swizzled, c)`` of a ``size``-cubed problem on
    ``device="meta"`` (shapes and dtypes only): what descriptors for cross-compiling are built over."""
    check_format(a_format, "a_format")
    check_format(b_format, "b_format")
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0 or size % 256:
        raise ValueError(f"size={size!r} must be a positive multiple of 256")
    return _meta_operands(a_format, b_format, size)


def source_for(fn, args: tuple):
    """The ``GluonASTSource`` of ``fn`` launched as ``fn[grid](*args)``: descriptors and ints become
    the signature, the ``gl.constexpr`` parameters are bound to their values."""
    from triton.experimental.gluon import GluonASTSource

    params = getattr(fn, "params", None)
    if params is None:
        raise ValueError(f"fn must be a @gluon.jit function, got {type(fn).__name__}")
    if len(args) != len(params):
        raise ValueError(f"{fn.__name__} takes {len(params)} arguments ({', '.join(p.name for p in params)}), "
                         f"got {len(args)}")
    signature, constexprs = {}, {}
    for index, (param, value) in enumerate(zip(params, args, strict=True)):
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[(index, )] = value
        elif hasattr(value, "__mangle__"):
            signature[param.name] = value.__mangle__()
        elif hasattr(value, "data_ptr") and hasattr(value, "dtype"):  # a tensor: a pointer argument
            from triton.runtime.jit import mangle_type

            signature[param.name] = mangle_type(value)
        elif isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"argument {param.name}={value!r}: only tensor descriptors, tensors, ints and "
                             "constexpr parameters can be cross-compiled")
        else:
            signature[param.name] = "i32"
    return GluonASTSource(fn, signature, constexprs)


@dataclass(frozen=True)
class CrossCompiled:
    """The ``sm_100a`` artifacts of one kernel and what they show."""

    name: str
    ttgir: str
    ptx: str
    cubin: bytes
    shared_bytes: int  # dynamic shared memory per CTA
    tmem_cols: int  # TMEM columns allocated per CTA
    num_warps: int
    num_ctas: int
    registers: int  # registers per thread (cuobjdump -res-usage)
    ptx_counts: dict
    mma_kind: str  # kind::... of the block-scaled tcgen05.mma ("" when there is none)
    compile_seconds: float  # wall time of triton.compile here (an on-disk cache hit is fast)

    @property
    def sass(self) -> str:
        return _sass_cached(self.cubin)

    def summary(self) -> dict:
        """The numbers, without the artifacts (JSON-ready)."""
        return {"name": self.name, "shared_bytes": self.shared_bytes, "tmem_cols": self.tmem_cols,
                "num_warps": self.num_warps, "num_ctas": self.num_ctas, "registers": self.registers,
                "ptx_counts": dict(self.ptx_counts), "mma_kind": self.mma_kind}


def cross_compile(fn, args: tuple, *, num_ctas: int = NUM_CTAS, num_warps: int = 4) -> CrossCompiled:
    """Compile any ``@gluon.jit`` kernel for ``sm_100a`` on this machine (no GPU needed).

    ``args`` are the launch's positional arguments: TMA descriptors (e.g. built over
    :func:`meta_operands` by ``kernel.make_descriptors``), ints and constexpr values.
    """
    import triton
    from triton.backends.compiler import GPUTarget

    for name, value, low in (("num_ctas", num_ctas, 1), ("num_warps", num_warps, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low or value & (value - 1):
            raise ValueError(f"{name}={value!r} must be a positive power of two")
    src = source_for(fn, tuple(args))
    start = time.perf_counter()
    ck = triton.compile(src, target=GPUTarget("cuda", TARGET_ARCH, 32),
                        options={"num_ctas": num_ctas, "num_warps": num_warps})
    seconds = time.perf_counter() - start
    ptx, md = ck.asm["ptx"], ck.metadata
    kinds = set(re.findall(r"\btcgen05\.mma\.[\w.:]*?kind::([\w.]+)", strip_ptx_comments(ptx)))
    return CrossCompiled(fn.__name__, ck.asm["ttgir"], ptx, ck.asm["cubin"], int(md.shared), int(md.tmem_size),
                         int(md.num_warps), int(md.num_ctas), resource_usage(ck.asm["cubin"])["registers"],
                         ptx_counts(ptx), ",".join(sorted(kinds)), seconds)
