"""What the compiled artifacts say: readers of a kernel's PTX, TTGIR and SASS text.

Pure text readers (no compiler, no GPU): :mod:`gluon_overlap.compiler.compile` produces the artifacts and reads its
statistics with these; :mod:`gluon_overlap.evidence` compares what they find with the TMEM plan and the CPU
interpreter's recording; the timing model's epilogue mix (:mod:`gluon_overlap.timing.kernel_costs`) reads the
SASS and PTX the same way.

* PTX: :func:`strip_ptx_comments`, :func:`ptx_counts` (:data:`PTX_PATTERNS`), :func:`ptx_lines`,
  :func:`tmem_alloc_columns`, :func:`mma_kind`;
* TTGIR: :func:`ttgir_barriers` (which barrier array each wait / arrive uses, per partition region),
  :func:`ttgir_barrier_names`, :func:`ttgir_tmem_evidence` (TMEM subslice offsets, drain orders, releases);
* SASS: :func:`sass_counts` (:data:`SASS_PATTERN`), :func:`sass_lines`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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


_SUBSLICE = re.compile(
    r"(%[\w.]+) = ttng\.tmem_subslice (%[\w.#]+) \{offset = (\d+) : i32\} : "
    r"!ttg\.memdesc<(\d+)x(\d+)xf32"
)


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
        return {"accumulators": list(self.accumulators), "a_scale": list(self.a_scale), "b_scale": list(self.b_scale)}


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
            allocs[m.group(1)] = (
                names.get(callsites.get(loc, loc)) or names.get(loc) or m.group(1),
                int(batch.group(1)) if batch else 1,
            )
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
    return TmemEvidence(
        tuple(sorted(pool["acc"])),
        tuple(sorted(pool["a_scale"])),
        tuple(sorted(pool["b_scale"])),
        tuple(s[0] // epilogue_block_n for s in steps),
        tuple(s[-1] // epilogue_block_n for s in steps),
        tuple(arrives),
        tuple(arrive_bars),
        tuple(dict.fromkeys(pool_lines)),
    )


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
