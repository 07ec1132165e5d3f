"""The epilogue's instruction mix and the semantics of its waits, read from the compiled kernel.

The timing model prices one epilogue subtile (128 rows x ``EPILOGUE_BLOCK_N`` columns per CTA, drained by the
4-warp default partition) from the instructions ``ptxas`` actually emitted for it, not from guessed cycle counts.
:func:`count_mix` walks the SASS of a compiled variant (:func:`gluon_overlap.compiler.compile.compile_variant`)
between the tile loop's first ``LDTM`` and the ``acc_empty`` arrive that ends it, and counts, per subtile:

* ``LDTM.x32`` -- ``tcgen05.ld.32x32b.x32``: each warp reads 32 lanes x 32 columns x 4 B of TMEM;
* ``F2FP.F16.F32.PACK_AB`` -- ``cvt.rn.f16x2.f32``: two fp32 -> one packed fp16x2 register per thread;
* ``STS.128`` -- ``st.shared.v4.b32``: 16 B per thread into the staging buffer;
* ``BAR.SYNC 0x0, 0x80`` -- the 128-thread barrier of the 4 epilogue warps (after the store wait, after the
  fence, and one more before each ``mbarrier.arrive``);
* ``MEMBAR.ALL.CTA`` + ``FENCE.VIEW.ASYNC.S`` -- ``fence.proxy.async.shared::cta``;
* ``DEPBAR.LE SB0, 0x1`` -- ``tma.store_wait(pendings=1)``;
* ``UTMASTG`` -- the TMA store (one elected thread);
* ``SYNCS.ARRIVE.TRANS64.RED`` -- the remote ``mbarrier.arrive`` on the overlap / ``acc_empty`` pair barriers.

:func:`read_wait_semantics` reads from the PTX what each wait waits for.  ``tma.store_wait(pendings=n)`` lowers
to ``cp.async.bulk.wait_group.read n``: it waits until the *shared-memory reads* of all but the newest ``n``
bulk groups are done -- not for the global writes (those would be ``cp.async.bulk.wait_group`` without
``.read``).  So the epilogue is paced by how fast the TMA engine can pull a subtile out of shared memory, which is
how fast L2 accepts it, never by the HBM write-back.

The MMA partition's K loop is read the same way (:func:`count_mma_mix`): per K step, how many ``UTC*MMA`` (the
``tcgen05.mma`` of the PTX's kind) and ``UTCCP`` (``tcgen05.cp`` of a 512-byte scale chunk) the issuer sends before
its ``UTCBAR`` commit to the stage's ``load_empty``; BLOCK_K over the MMAs per K step is the K of one instruction
(32 for ``kind::mxf8f6f4``, 64 for the ``kind::mxf4`` / ``mxf4nvf4`` form sm_100 defines), which decides the MMA's
rate on a part whose FP4 peak is quoted for a wider form (:meth:`gluon_overlap.hardware.Hardware.mma_flops_per_sm`).

:data:`SHIPPED` holds the mix as read from the current kernel for the four seed pairs, overlap off and on
(package data ``gluon_overlap/data/kernel_mix.json``, written by ``python -m gluon_overlap.regenerate``); the model
reads that so it needs no compiler.  ``tests/timing/test_kernel_costs.py`` compiles the kernel and checks the
shipped file equals what the artifacts say now, so a kernel change that changes the mix fails until the file is
regenerated -- and then moves the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from gluon_overlap.compiler.artifacts import mma_kind, strip_ptx_comments

MIX_FILE = Path(__file__).resolve().parent.parent / "data" / "kernel_mix.json"
_SASS_LINE = re.compile(r"\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;")


@dataclass(frozen=True)
class EpilogueMix:
    """Per-subtile instruction counts of the epilogue partition (per warp, except where noted).

    ``subtiles`` is the number of ``LDTM`` in the tile loop (one per subtile); the ``*_per_subtile`` counts are
    the steady-state subtile's; ``extra_bars_per_tile`` / ``remote_arrives_per_tile`` are what the tile adds
    besides (a barrier and an arrive for ``acc_empty``, and with overlap on one more of each for the early
    release).  ``store_wait`` is the PTX of the in-loop ``tma.store_wait``.
    """

    a_format: str
    b_format: str
    overlap: bool
    subtiles: int
    tmem_ld_columns: int  # columns per LDTM (.x32 -> 32): each warp moves 32 lanes x columns x 4 B
    cvt_per_subtile: int  # F2FP.F16.F32.PACK_AB per thread
    sts_per_subtile: int  # STS.128 per thread
    sts_bytes_per_thread: int  # bytes of one STS (16 for STS.128)
    bars_per_subtile: int  # BAR.SYNC 0x0, 0x80
    fences_per_subtile: int  # MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S pairs
    store_waits_per_subtile: int  # DEPBAR.LE SB0, 0x1
    tma_stores_per_subtile: int  # UTMASTG
    extra_bars_per_tile: int
    remote_arrives_per_tile: int
    store_wait: str  # e.g. "cp.async.bulk.wait_group.read 1"
    store_wait_reads_only: bool  # True: waits for the shared-memory read, not the global write

    def to_dict(self) -> dict:
        return asdict(self)


def _sass_instructions(sass: str) -> list[str]:
    return [" ".join(m.group(1).split()) for m in map(_SASS_LINE.match, sass.splitlines()) if m]


def epilogue_region(sass: str) -> list[str]:
    """The epilogue's tile-loop body: from the first ``LDTM`` to the first remote arrive after the last one."""
    ins = _sass_instructions(sass)
    ld = [i for i, t in enumerate(ins) if t.startswith("LDTM")]
    if not ld:
        raise ValueError("no LDTM in the SASS: is this the epilogue kernel?")
    end = next((i for i in range(ld[-1], len(ins)) if "SYNCS.ARRIVE" in ins[i]), None)
    if end is None:
        raise ValueError("no SYNCS.ARRIVE after the last LDTM: the acc_empty arrive is missing")
    return ins[ld[0] : end + 1]


def read_store_wait(ptx: str) -> str:
    """The in-loop ``cp.async.bulk.wait_group`` of the PTX (the one with the largest ``pendings``)."""
    waits = re.findall(r"\bcp\.async\.bulk\.wait_group(\.read)?\s+(\d+)\s*;", strip_ptx_comments(ptx))
    if not waits:
        raise ValueError("no cp.async.bulk.wait_group in the PTX")
    suffix, pend = max(waits, key=lambda w: int(w[1]))
    return f"cp.async.bulk.wait_group{suffix} {pend}"


def count_mix(sass: str, ptx: str, a_format: str, b_format: str, overlap: bool) -> EpilogueMix:
    """Count the epilogue's instructions per subtile in ``sass`` (see the module docstring)."""
    region = epilogue_region(sass)

    def count(pred: Callable[[str], object]) -> int:
        return sum(1 for t in region if pred(t))

    subtiles = count(lambda t: t.startswith("LDTM"))
    widths = {int(m.group(1)) for t in region if (m := re.match(r"LDTM\.x(\d+)", t))}
    if len(widths) != 1:
        raise ValueError(f"expected one LDTM width in the epilogue, found {sorted(widths)}")
    sts = [t for t in region if re.match(r"STS(\.\d+)?\s", t)]
    sts_bytes = {int(m.group(1)) // 8 if (m := re.match(r"STS\.(\d+)", t)) else 4 for t in sts}
    bars = count(lambda t: t.startswith("BAR.SYNC") and "0x80" in t)
    membar = count(lambda t: t.startswith("MEMBAR.ALL.CTA"))
    fence = count(lambda t: t.startswith("FENCE.VIEW.ASYNC.S"))
    arrives = count(lambda t: "SYNCS.ARRIVE" in t)
    per = {
        "cvt": count(lambda t: t.startswith("F2FP.F16.F32.PACK_AB")),
        "sts": len(sts),
        "fence": min(membar, fence),
        "wait": count(lambda t: t.startswith("DEPBAR.LE SB0")),
        "tma": count(lambda t: "UTMASTG" in t),
    }
    for key, value in per.items():
        if value % subtiles:
            raise ValueError(f"{key}: {value} instructions over {subtiles} subtiles is not a whole number per subtile")
    store_wait = read_store_wait(ptx)
    return EpilogueMix(
        a_format=a_format,
        b_format=b_format,
        overlap=overlap,
        subtiles=subtiles,
        tmem_ld_columns=widths.pop(),
        cvt_per_subtile=per["cvt"] // subtiles,
        sts_per_subtile=per["sts"] // subtiles,
        sts_bytes_per_thread=max(sts_bytes) if sts_bytes else 0,
        bars_per_subtile=bars // subtiles,
        fences_per_subtile=per["fence"] // subtiles,
        store_waits_per_subtile=per["wait"] // subtiles,
        tma_stores_per_subtile=per["tma"] // subtiles,
        extra_bars_per_tile=bars % subtiles,
        remote_arrives_per_tile=arrives,
        store_wait=store_wait,
        store_wait_reads_only=".read" in store_wait,
    )


@dataclass(frozen=True)
class MmaMix:
    """The MMA partition's K step as compiled: its instructions per K step and the K of one MMA instruction."""

    a_format: str
    b_format: str
    kind: str  # the PTX kind, e.g. "mxf4.block_scale.block32"
    block_k: int
    mma_per_k_step: int  # UTC*MMA between two commits of the K loop
    scale_copies_per_k_step: int  # UTCCP (tcgen05.cp of one 512-byte scale chunk)
    k_per_instruction: int  # block_k / mma_per_k_step

    def to_dict(self) -> dict:
        return asdict(self)


_MMA = re.compile(r"(?:@!?U?P\w+\s+)?UTC\w*MMA")
_CP = re.compile(r"(?:@!?U?P\w+\s+)?UTCCP")
_BAR = re.compile(r"(?:@!?U?P\w+\s+)?UTCBAR")


def count_mma_mix(sass: str, ptx: str, a_format: str, b_format: str, block_k: int) -> MmaMix:
    """Count the MMA issuer's K step in ``sass``: each ``UTCBAR`` that directly follows an MMA (no other tcgen05 op
    between) commits one K step; the MMAs and scale copies before it belong to that step.  The K loop may be
    peeled or unrolled (several copies of its body), so the counts are totals over the bodies found, divided."""
    steps = mmas = copies = 0
    last = None
    for ins in _sass_instructions(sass):
        if _MMA.match(ins):
            mmas, last = mmas + 1, "mma"
        elif _CP.match(ins):
            copies, last = copies + 1, "cp"
        elif _BAR.match(ins):
            steps += last == "mma"
            last = "bar"
    if not steps or not mmas:
        raise ValueError("no K step (MMAs followed by a tcgen05.commit) in the SASS: is this the MMA kernel?")
    if mmas % steps or copies % steps:
        raise ValueError(f"{mmas} MMAs and {copies} scale copies over {steps} K steps is not a whole number per step")
    per = mmas // steps
    if block_k % per:
        raise ValueError(f"BLOCK_K = {block_k} is not a whole number of {per} MMA instructions")
    return MmaMix(
        a_format=a_format,
        b_format=b_format,
        kind=mma_kind(ptx),
        block_k=block_k,
        mma_per_k_step=per,
        scale_copies_per_k_step=copies // steps,
        k_per_instruction=block_k // per,
    )


def read_wait_semantics(ptx: str) -> dict[str, str]:
    """What each wait of the kernel waits for, from the PTX instructions it lowers to."""
    text = strip_ptx_comments(ptx)
    out = {}
    store = read_store_wait(ptx)
    out["tma.store_wait"] = f"{store}: the shared-memory reads of all but the newest bulk groups " + (
        "(not the global writes)" if ".read" in store else "and their global writes"
    )
    if re.search(r"mbarrier::complete_tx::bytes", text):
        out["load_ready"] = (
            "mbarrier.try_wait on a barrier completed by the TMA loads' complete_tx: "
            "every byte of the stage has landed in shared memory"
        )
    if re.search(r"tcgen05\.commit\.[\w.:]*mbarrier::arrive::one", text):
        out["acc_ready / load_empty"] = (
            "tcgen05.commit ... mbarrier::arrive::one: arrives when every earlier "
            "tcgen05 op of the issuer has completed (the MMAs have written TMEM)"
        )
    if re.search(r"tcgen05\.wait::ld", text):
        out["overlap / acc_empty"] = (
            "mbarrier.arrive after tcgen05.wait::ld and a 128-thread bar.sync: the "
            "drained columns are in registers; the arrive travels to the lead CTA"
        )
    return out


def _key(a_format: str, b_format: str, overlap: bool) -> str:
    return f"{a_format}-{b_format}-{'on' if overlap else 'off'}"


def load_shipped() -> dict[str, EpilogueMix]:
    raw = json.loads(MIX_FILE.read_text())
    return {k: EpilogueMix(**v) for k, v in raw["variants"].items()}


def shipped_mma_mix(a_format: str, b_format: str) -> MmaMix:
    """The MMA partition's K step of a format pair as read from the compiled kernel (the same with overlap on or
    off: the tests check both)."""
    raw = json.loads(MIX_FILE.read_text()).get("mma", {})
    key = f"{a_format}-{b_format}"
    if key not in raw:
        raise ValueError(f"no MMA mix for {key}; known: {', '.join(sorted(raw))}")
    return MmaMix(**raw[key])


def shipped_mix(a_format: str, b_format: str, overlap: bool) -> EpilogueMix:
    """The mix of a variant as read from the compiled kernel when the package data was written."""
    mixes = load_shipped()
    key = _key(a_format, b_format, overlap)
    if key not in mixes:
        raise ValueError(f"no epilogue mix for {key}; known: {', '.join(sorted(mixes))}")
    return mixes[key]


def shipped_text(mixes: dict[tuple[str, str, bool], EpilogueMix], mma: dict[tuple[str, str], MmaMix]) -> str:
    """The package data file of the epilogue ``mixes`` (keyed by ``(a_format, b_format, overlap)``) and the MMA
    partition's K steps (keyed by the pair), as ``python -m gluon_overlap.regenerate`` writes it from the compiled
    seed variants."""
    doc = {
        "note": "per-subtile epilogue instruction mix and the MMA partition's K step, read from the sm_100a "
        "SASS/PTX (gluon_overlap.timing.kernel_costs.count_mix / count_mma_mix) by python -m "
        "gluon_overlap.regenerate; checked against a fresh compile by tests/timing/test_kernel_costs.py",
        "variants": {_key(*key): m.to_dict() for key, m in mixes.items()},
        "mma": {f"{a}-{b}": m.to_dict() for (a, b), m in mma.items()},
    }
    return json.dumps(doc, indent=1) + "\n"
