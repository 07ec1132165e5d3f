# ruff: noqa: E501  (data: the wrong answers, their edits and their expected words, one per line)
"""Plausible wrong answers to every exercise: what a sloppy or a cheating learner might hand in.

Each is (name, what it gets wrong, the answer, words the FAIL line must contain).  A writing exercise's answer
is a list of ``(old, new)`` edits of the solution file (or a whole text); a function exercise's answer is a
function, written here the way a learner would write it in a notebook cell.  ``tests/test_wrong_answers.py``
hands each to its checker: every one must FAIL in one line that names the learner's line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Wrong:
    name: str
    what: str  # what it gets wrong, in words
    answer: Any  # edits [(old, new), ...] of the solution, a whole file text, or a function / value
    words: tuple[str, ...] = ()  # the FAIL line must contain one of these
    names_line: bool = True  # the FAIL line names a line of the answer


def edits(*pairs: tuple[str, str]) -> list[tuple[str, str]]:
    return list(pairs)


# =====================================================================================
# 05b capstone
# =====================================================================================
CAPSTONE = [
    Wrong(
        "no acc_empty wait",
        "trusts the overlap barrier to imply the window is free: true with the overlap on, a race with it off",
        edits(("        mbarrier.wait(p.acc_empty_bars.index(acc_state.index), acc_state.phase)\n", "")),
        ("hazard",),
    ),
    Wrong(
        "release step keyed to BLOCK_K",
        "releases one subtile later for the fp4 pairs (BLOCK_K = 256): right for nvfp4 (48 shared columns), one "
        "subtile late for mxfp4, whose 24 fit in one subtile -- safe, so only a timed run of that pair shows it",
        edits(
            (
                "    RELEASE: gl.constexpr = TMEM_PLAN.early_release_subtile\n",
                "    RELEASE: gl.constexpr = 1 if p.a_desc.dtype == gl.uint8 else 0\n",
            )
        ),
        ("later than needed",),
    ),
    Wrong(
        "drains everything first",
        "releases the shared columns only after the whole drain: correct, no overlap",
        edits(
            (
                "            if USE_OVERLAP and step == RELEASE:\n"
                "                # Every shared column is in registers: the next tile's MMA may overwrite them.\n"
                "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n",
                "",
            ),
            (
                "        # The whole window is read: the MMA of tile i + 2 may reuse it.\n",
                "        if USE_OVERLAP:\n            mbarrier.arrive(p.overlap_bar.index(0), count=1)\n",
            ),
        ),
        ("no overlap",),
    ),
    Wrong(
        "acc_empty released with the overlap",
        "arrives on acc_empty at the early release instead of after the "
        "whole window: hidden by the overlap wait with the overlap on, a race with it off",
        edits(
            (
                "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n",
                "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n"
                "            if step == RELEASE:\n"
                "                mbarrier.arrive(p.acc_empty_bars.index(acc_state.index), count=1)\n",
            ),
            (
                "        mbarrier.arrive(p.acc_empty_bars.index(acc_state.index), count=1)\n        acc_state",
                "        acc_state",
            ),
        ),
        ("hazard",),
    ),
    Wrong(
        "acc ring of two hard-coded",
        "walks a ring of two acc barriers: with the overlap off there is one",
        edits(
            ("acc_state = Counter.create(1, p.acc_empty_bars.shape[0])", "acc_state = Counter.create(1, 2)"),
            ("acc_state = Counter.create(0, p.acc_ready_bars.shape[0])", "acc_state = Counter.create(0, 2)"),
        ),
        ("refuses", "stopped", "hazard", "deadlock", "index"),
    ),
    Wrong(
        "overlap wait with the overlap off",
        "waits on the overlap barrier though nobody arrives on it with the overlap off",
        edits(
            (
                "        if USE_OVERLAP:\n            # ... and tile i - 1",
                "        if True:\n            # ... and tile i - 1",
            )
        ),
        ("deadlock",),
    ),
    Wrong(
        "no overlap wait",
        "the MMA never waits for the previous tile's release: overwrites columns being read",
        edits(
            (
                "        if USE_OVERLAP:\n"
                "            # ... and tile i - 1 has read the columns the two windows share: completion i of the pair barrier.\n"
                "            mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)\n",
                "",
            )
        ),
        ("hazard",),
    ),
    Wrong(
        "overlap parity off by one",
        "waits for completion i + 1 instead of i",
        edits(("mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)", "mbarrier.wait(p.overlap_bar.index(0), i % 2)")),
        ("deadlock",),
    ),
    Wrong(
        "even tiles low to high",
        "the left window drained low to high: its shared (high) columns come last",
        edits(
            (
                "                acc_sub = p.tmem_pool.slice(LEFT + (NUM_SUBTILES - 1 - step) * SUBTILE, SUBTILE)\n"
                "                store_n = off_n + (NUM_SUBTILES - 1 - step) * SUBTILE\n",
                "                acc_sub = p.tmem_pool.slice(LEFT + step * SUBTILE, SUBTILE)\n"
                "                store_n = off_n + step * SUBTILE\n",
            )
        ),
        ("hazard",),
    ),
    Wrong(
        "release one subtile early",
        "arrives on overlap before the last shared subtile is read",
        edits(
            (
                "            if USE_OVERLAP and step == RELEASE:",
                "            if USE_OVERLAP and (step == RELEASE - 1 or (RELEASE == 0 and step == 0)):",
            ),
            (
                "            acc = acc_sub.load().to(p.c_desc.dtype)\n            if USE_OVERLAP",
                "            if USE_OVERLAP",
            ),
            (
                "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n",
                "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n"
                "            acc = acc_sub.load().to(p.c_desc.dtype)\n",
            ),
        ),
        ("hazard",),
    ),
    Wrong(
        "release one subtile late",
        "arrives one drain step after the last shared subtile: correct but late",
        edits(
            ("            if USE_OVERLAP and step == RELEASE:", "            if USE_OVERLAP and step == RELEASE + 1:")
        ),
        ("later than needed",),
    ),
    Wrong(
        "per-CTA overlap barrier",
        "allocates the overlap barrier per CTA: the lead waits only for itself",
        edits(("mbarrier.allocate_mbarrier(batch=1, two_ctas=TWO_CTAS)", "mbarrier.allocate_mbarrier(batch=1)")),
        ("hazard", "deadlock"),
    ),
    Wrong(
        "overlap count 2",
        "inits the pair barrier with count=2: it needs four arrivals, gets two",
        edits(("    mbarrier.init(overlap_bar.index(0), count=1)", "    mbarrier.init(overlap_bar.index(0), count=2)")),
        ("deadlock",),
    ),
    Wrong(
        "one window",
        "every tile writes the left window: the next tile overwrites what is being drained",
        edits(
            (
                "            acc_tmem = p.tmem_pool.slice(TMEM_PLAN.right.offset, TMEM_PLAN.right.cols)",
                "            acc_tmem = p.tmem_pool.slice(TMEM_PLAN.left.offset, TMEM_PLAN.left.cols)",
            )
        ),
        ("hazard", "C is wrong", "no overlap"),
    ),
    Wrong(
        "acc_empty never released",
        "the epilogue never arrives on acc_empty: tile 2 waits forever",
        edits(("        mbarrier.arrive(p.acc_empty_bars.index(acc_state.index), count=1)\n", "")),
        ("deadlock",),
    ),
    Wrong(
        "acc_empty as a consumer",
        "the MMA's acc_empty Counter starts at phase 0: tile 0 waits for a drain that never comes",
        edits(
            (
                "acc_state = Counter.create(1, p.acc_empty_bars.shape[0])",
                "acc_state = Counter.create(0, p.acc_empty_bars.shape[0])",
            )
        ),
        ("deadlock",),
    ),
    Wrong(
        "no acc_ready wait",
        "the epilogue drains before the tile's MMAs have completed",
        edits(("        mbarrier.wait(p.acc_ready_bars.index(acc_state.index), acc_state.phase)\n", "")),
        ("hazard",),
    ),
    Wrong(
        "store column not reversed",
        "drains the left window high to low but stores each subtile at the low-to-high "
        "column: the same loads and stores, paired wrongly",
        edits(
            (
                "                store_n = off_n + (NUM_SUBTILES - 1 - step) * SUBTILE\n",
                "                store_n = off_n + step * SUBTILE\n",
            )
        ),
        ("stored the subtile",),
    ),
    Wrong(
        "window by the global tile id",
        "picks the window by the tile id's parity: cluster 1's tiles are all odd",
        edits(("        if i % 2 == 0:  # (with", "        if scheduler.tile_id % 2 == 0:  # (with")),
        ("hazard", "C is wrong"),
    ),
    Wrong(
        "runtime column",
        "computes the subtile's column at run time: .slice needs a constant",
        edits(
            (
                "                acc_sub = p.tmem_pool.slice(RIGHT + step * SUBTILE, SUBTILE)",
                "                acc_sub = p.tmem_pool.slice(RIGHT + (i % 2) * step * SUBTILE, SUBTILE)",
            )
        ),
        ("constant",),
    ),
    Wrong(
        "parity into a constexpr function",
        "passes the runtime tile parity where the compiler needs a constant",
        edits(
            (
                "            if i % 2 == 0:\n                acc_sub = p.tmem_pool.slice(LEFT +",
                "            col: gl.constexpr = (NUM_SUBTILES - 1 - step) * SUBTILE\n            if i % 2 == 0:\n"
                "                acc_sub = p.tmem_pool.slice(LEFT +",
            )
        ),
        ("constexpr", "reassigned"),
    ),
    Wrong(
        "right window shifted",
        "puts the right window one subtile further: overlaps the scale columns",
        edits(
            (
                "            acc_tmem = p.tmem_pool.slice(TMEM_PLAN.right.offset, TMEM_PLAN.right.cols)",
                "            acc_tmem = p.tmem_pool.slice(TMEM_PLAN.right.offset + 32, TMEM_PLAN.right.cols)",
            )
        ),
        ("refuses", "hazard", "C is wrong"),
    ),
    Wrong(
        "the library's partitions",
        "imports the library's own partitions",
        "from gluon_overlap.kernel import epilogue_partition, mma_partition\n"
        "from gluon_overlap.kernel import mma_scaled_warp_specialized_kernel as allocate_overlap_barrier\n",
        ("library",),
    ),
    Wrong(
        "importlib",
        "loads the library's kernel module at run time",
        "import importlib\nk = importlib.import_module('gluon_overlap.kernel')\nmma_partition = k.mma_partition\n"
        "epilogue_partition = k.epilogue_partition\nallocate_overlap_barrier = k.mma_partition\n",
        ("imports",),
    ),
    Wrong(
        "exec of the library's source",
        "runs the library's text under the answer's name",
        "text = open('gluon_overlap/kernel.py').read()\nexec(compile(text, __file__, 'exec'))\n",
        ("uses",),
    ),
    Wrong(
        "getattr on a module",
        "fetches the partitions by name from an allowed module",
        "import triton.experimental.gluon.language as gl\nmma_partition = getattr(gl, 'mma_partition')\n",
        ("uses",),
    ),
]


# =====================================================================================
# 03a K loop
# =====================================================================================
K_LOOP = [
    Wrong(
        "MMA wait one phase behind",
        "waits for the parity the MMA's commit has not completed yet",
        edits(("mbarrier.wait(mma_bar, phase)", "mbarrier.wait(mma_bar, phase ^ 1)")),
        ("deadlock",),
    ),
    Wrong(
        "no load wait",
        "issues the MMA before the TMA bytes have landed",
        edits(("        mbarrier.wait(load_bar, phase)\n", "")),
        ("hazard",),
    ),
    Wrong(
        "no MMA wait",
        "the next K step's TMA overwrites shared memory the MMA still reads",
        edits(("        mbarrier.wait(mma_bar, phase)\n", "")),
        ("hazard", "deadlock"),
    ),
    Wrong(
        "ignores off_m",
        "loads A's rows of tile row 0 for every tile",
        edits(
            ("tma.async_load(a_desc, [off_m, k // A_ELEM_PER_BYTE]", "tma.async_load(a_desc, [0, k // A_ELEM_PER_BYTE]")
        ),
        ("C is wrong",),
    ),
    Wrong(
        "scale K wraps every 2 steps",
        "the scale tile's K coordinate wraps after two K steps",
        edits(
            ("(k // BLOCK_K) * A_REP_K, 0, 0]", "((k // BLOCK_K) % 2) * A_REP_K, 0, 0]"),
            ("(k // BLOCK_K) * B_REP_K, 0, 0]", "((k // BLOCK_K) % 2) * B_REP_K, 0, 0]"),
        ),
        ("C is wrong",),
    ),
    Wrong(
        "fp4 K in elements",
        "uses the element index as A's byte coordinate (fp4 is two elements a byte)",
        edits(("[off_m, k // A_ELEM_PER_BYTE]", "[off_m, k]")),
        ("C is wrong", "hazard", "stopped"),
    ),
    Wrong(
        "use_acc always True",
        "accumulates onto what the window held before the first K step",
        edits(("    use_acc = False\n", "    use_acc = True\n")),
        ("hazard", "C is wrong"),
    ),
    Wrong(
        "use_acc never True",
        "overwrites the accumulator at every K step",
        edits(("        use_acc = True\n", "")),
        ("C is wrong",),
    ),
    Wrong(
        "expects twice the bytes",
        "announces the pair's bytes: the barrier waits for bytes that never come",
        edits(("mbarrier.expect(load_bar, stage_bytes)", "mbarrier.expect(load_bar, 2 * stage_bytes)")),
        ("deadlock",),
    ),
    Wrong(
        "no expect",
        "nobody arrives on load_bar: the phase never completes",
        edits(("        mbarrier.expect(load_bar, stage_bytes)\n", "")),
        ("deadlock", "hazard", "stopped"),
    ),
    Wrong(
        "B scales at off_m",
        "loads the B-scale rows of the tile's M offset",
        edits(("[0, (off_n // BLOCK_N) * REP_N,", "[0, (off_m // BLOCK_M) * REP_N,")),
        ("C is wrong",),
    ),
    Wrong(
        "phase never flips",
        "waits for parity 0 at every step: the second wait returns at once",
        edits(("        phase ^= 1\n", "")),
        ("hazard", "deadlock", "C is wrong"),
    ),
    Wrong(
        "the library's MMA helper",
        "imports the production kernel's async_mma_scaled",
        "from gluon_overlap.kernel import async_mma_scaled\n",
        ("library",),
    ),
    Wrong(
        "__import__",
        "reaches the library through __import__",
        "k_loop = __import__('gluon_overlap.steps.single_buffered')\n",
        ("uses",),
    ),
]

# =====================================================================================
# 03a epilogue
# =====================================================================================
EPILOGUE = [
    Wrong(
        "no store_wait before reuse",
        "overwrites c_smem while the previous TMA store still reads it",
        edits(("        tma.store_wait(0)  # the previous subtile's store has read c_smem\n", "")),
        ("hazard",),
    ),
    Wrong(
        "every subtile at column 0",
        "stores every subtile at off_n",
        edits(("[off_m, off_n + drain_column(TMEM_PLAN, 0, step)]", "[off_m, off_n]")),
        ("C is wrong",),
    ),
    Wrong(
        "no final store_wait",
        "the kernel ends with a store in flight",
        edits(("    tma.store_wait(0)\n", "")),
        ("hazard", "stopped", "flight"),
    ),
    Wrong(
        "constexpr reassigned",
        "a gl.constexpr assigned in every iteration of static_range",
        edits(
            (
                "        acc = acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), SUBTILE).load()",
                "        col: gl.constexpr = drain_column(TMEM_PLAN, 0, step)\n"
                "        acc = acc_tmem.slice(col, SUBTILE).load()",
            )
        ),
        ("constexpr",),
    ),
    Wrong(
        "runtime column",
        "a plain variable where .slice needs a constant",
        edits(
            (
                "        acc = acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), SUBTILE).load()",
                "        col = step * SUBTILE\n        acc = acc_tmem.slice(col, SUBTILE).load()",
            )
        ),
        ("constant",),
    ),
    Wrong(
        "one subtile short",
        "drains NUM_SUBTILES - 1 subtiles",
        edits(("for step in gl.static_range(NUM_SUBTILES):", "for step in gl.static_range(NUM_SUBTILES - 1):")),
        ("C is wrong",),
    ),
    Wrong(
        "no float16 conversion",
        "stores float32 registers into the float16 buffer",
        edits(("c_smem.store(acc.to(c_desc.dtype))", "c_smem.store(acc)")),
        ("refuses", "stopped", "dtype"),
    ),
    Wrong(
        "double-width slice",
        "slices twice the subtile's columns",
        edits(
            (
                "acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), SUBTILE)",
                "acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), 2 * SUBTILE)",
            )
        ),
        ("refuses", "stopped"),
    ),
    Wrong(
        "store at off_m twice",
        "uses off_m as the column coordinate",
        edits(
            ("[off_m, off_n + drain_column(TMEM_PLAN, 0, step)]", "[off_m, off_m + drain_column(TMEM_PLAN, 0, step)]")
        ),
        ("C is wrong", "hazard"),
    ),
    Wrong(
        "loose store_wait",
        "waits for all but one store: the one still in flight reads the only buffer",
        edits(
            (
                "        tma.store_wait(0)  # the previous subtile's store has read c_smem\n",
                "        tma.store_wait(1)\n",
            )
        ),
        ("hazard",),
    ),
    Wrong(
        "the library's drain",
        "imports step 2's drain_steps",
        "from gluon_overlap.steps.overlap import drain_steps\n",
        ("library",),
    ),
    Wrong(
        "globals()", "looks the library up in the module's globals", "epilogue = globals()['drain_steps']\n", ("uses",)
    ),
]

# =====================================================================================
# 03b descriptors
# =====================================================================================
DESCRIPTORS = [
    Wrong(
        "fp4 always padded",
        "pads fp4 even next to fp4",
        edits(("fp4_padded=mixed and a_fp4", "fp4_padded=a_fp4")),
        ("fp4_padded",),
    ),
    Wrong(
        "A scales duplicated",
        "A's scale layout duplicates instead of splitting",
        edits(
            (
                "a_scale_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5,\n"
                "                                          cga_layout=[[0, 1, 0, 0, 0]])",
                "a_scale_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5,\n"
                "                                          cga_layout=[[0, 0, 0, 0, 0]])",
            )
        ),
        ("cga_layout",),
    ),
    Wrong(
        "A box per CTA",
        "writes A's box for one CTA (128 rows)",
        edits(("a_block = [256,", "a_block = [128,")),
        ("block_shape",),
    ),
    Wrong(
        "C box too wide",
        "C's box twice the subtile",
        edits(("c_block = [256, plan.epilogue_block_n]", "c_block = [256, 2 * plan.epilogue_block_n]")),
        ("block_shape",),
    ),
    Wrong(
        "B box half the tile",
        "B's box of block_n // 2 rows",
        edits(("b_block = [plan.block_n,", "b_block = [plan.block_n // 2,")),
        ("block_shape",),
    ),
    Wrong(
        "swizzled scales",
        "lets get_default_for swizzle the scale chunks",
        edits(
            (
                "    a_scale_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5,\n"
                "                                          cga_layout=[[0, 1, 0, 0, 0]])",
                "    a_scale_layout = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=5,\n"
                "                                          cga_layout=[[0, 1, 0, 0, 0]])",
            )
        ),
        ("swizzle",),
    ),
    Wrong(
        "rep_k off by two",
        "counts 2 k-scales a chunk",
        edits(("rep_k = plan.block_k // (plan.vec_size * 4)", "rep_k = plan.block_k // (plan.vec_size * 2)")),
        ("block_shape", "raised"),
    ),
    Wrong(
        "B scales one row block",
        "B's scale box holds one 128-row block",
        edits(("[1, plan.block_n // 128, rep_k, 2, 256], b_scale_layout)", "[1, 1, rep_k, 2, 256], b_scale_layout)")),
        ("block_shape",),
    ),
    Wrong(
        "fp4 B in elements",
        "forgets that fp4 is two elements a byte for B",
        edits(
            (
                "b_block = [plan.block_n, plan.block_k // 2 if b_fp4 else plan.block_k]",
                "b_block = [plan.block_n, plan.block_k]",
            )
        ),
        ("block_shape", "raised"),
    ),
    Wrong(
        "four descriptors",
        "forgets C",
        edits(("            TensorDescriptor.from_tensor(c, c_block, c_layout),\n", "")),
        ("five",),
    ),
    Wrong(
        "only nvfp4 is fp4",
        "treats mxfp4 as fp8",
        edits(
            ('a_fp4 = plan.a_format != "mxfp8"', 'a_fp4 = plan.a_format == "nvfp4"'),
            ('b_fp4 = plan.b_format != "mxfp8"', 'b_fp4 = plan.b_format == "nvfp4"'),
        ),
        ("block_shape", "raised", "dtype", "layout"),
    ),
    Wrong(
        "the library's host side",
        "imports make_descriptors",
        "from gluon_overlap.kernel import make_descriptors\n",
        ("library",),
    ),
    Wrong(
        "a whole library module",
        "imports the kernel module",
        "from gluon_overlap import kernel\nmake_descriptors = kernel.make_descriptors\n",
        ("library",),
    ),
]

# =====================================================================================
# 04 release
# =====================================================================================
RELEASE = [
    Wrong(
        "arrive before the drain",
        "releases the shared columns before reading them",
        edits(
            (
                "        drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN, 0, HEAD)\n"
                "        # ... is in registers now: this CTA releases them.\n"
                "        mbarrier.arrive(overlap_bar, count=1)\n",
                "        mbarrier.arrive(overlap_bar, count=1)\n"
                "        drain_steps(tmem_pool, c_desc, c_smem, prev_off_m, prev_off_n, (i - 1) % 2, TMEM_PLAN, 0, HEAD)\n",
            )
        ),
        ("hazard",),
    ),
    Wrong(
        "parity i % 2",
        "waits for completion i + 1",
        edits(("mbarrier.wait(overlap_bar, (i + 1) % 2)", "mbarrier.wait(overlap_bar, i % 2)")),
        ("deadlock",),
    ),
    Wrong(
        "whole drain first",
        "drains the whole previous tile before the release: correct, no overlap",
        edits(("TMEM_PLAN, 0, HEAD)", "TMEM_PLAN, 0, TMEM_PLAN.num_subtiles)")),
        ("no overlap", "arrived"),
    ),
    Wrong(
        "no wait",
        "the lead issues the MMA without waiting for the other CTA's release",
        edits(("    mbarrier.wait(overlap_bar, (i + 1) % 2)\n", "")),
        ("hazard",),
    ),
    Wrong(
        "no arrive",
        "never releases: the lead waits forever",
        edits(("        mbarrier.arrive(overlap_bar, count=1)\n", "")),
        ("deadlock",),
    ),
    Wrong(
        "arrive count 2",
        "arrives twice per CTA: the phase completes before the other CTA has read",
        edits(("mbarrier.arrive(overlap_bar, count=1)", "mbarrier.arrive(overlap_bar, count=2)")),
        ("hazard", "deadlock", "arrived", "stopped"),
    ),
    Wrong(
        "this tile's parity",
        "drains the head of the window tile i writes, not tile i - 1's",
        edits(("(i - 1) % 2, TMEM_PLAN, 0, HEAD)", "i % 2, TMEM_PLAN, 0, HEAD)")),
        ("hazard", "C is wrong"),
    ),
    Wrong(
        "tile 0 drains too",
        "drains a head before tile 0, of a tile that never was",
        edits(("    if i > 0:\n", "    if i >= 0:\n")),
        ("hazard", "C is wrong", "stopped", "arrived", "deadlock"),
    ),
    Wrong(
        "head one short",
        "releases one subtile too soon",
        edits(("TMEM_PLAN, 0, HEAD)", "TMEM_PLAN, 0, HEAD - 1)")),
        ("hazard",),
    ),
    Wrong(
        "wait before arrive",
        "each CTA waits for the pair before it releases its own half",
        edits(
            ("    if i > 0:\n", "    mbarrier.wait(overlap_bar, (i + 1) % 2)\n    if i > 0:\n"),
            (
                "    # Completion i of the pair barrier = both CTAs released tile i - 1; tile 0 waits for parity 1 "
                "(passes).\n    mbarrier.wait(overlap_bar, (i + 1) % 2)\n",
                "",
            ),
        ),
        ("deadlock",),
    ),
    Wrong(
        "the library's kernel",
        "imports step 2's whole kernel",
        "from gluon_overlap.steps.overlap import overlap_kernel\n",
        ("library",),
    ),
]

# =====================================================================================
# 05 Counter
# =====================================================================================
COUNTER = [
    Wrong(
        "never flips",
        "the parity never changes",
        edits(("phase = gl.where(rollover, self.phase ^ 1, self.phase)", "phase = self.phase")),
        ("is wrong at",),
    ),
    Wrong(
        "always flips",
        "flips at every use",
        edits(("phase = gl.where(rollover, self.phase ^ 1, self.phase)", "phase = self.phase ^ 1")),
        ("is wrong at",),
    ),
    Wrong(
        "ignores pred",
        "advances even when pred is false",
        edits(("incr = self.index + gl.where(pred, 1, 0)", "incr = self.index + 1")),
        ("is wrong at",),
    ),
    Wrong(
        "wraps one early",
        "wraps at num_barriers - 1",
        edits(("rollover = incr == self.num_barriers", "rollover = incr == self.num_barriers - 1")),
        ("is wrong at",),
    ),
    Wrong(
        "wraps one late",
        "wraps at num_barriers + 1",
        edits(("rollover = incr == self.num_barriers", "rollover = incr == self.num_barriers + 1")),
        ("is wrong at",),
    ),
    Wrong(
        "pred flips",
        "flips the parity when pred is false",
        edits(
            (
                "phase = gl.where(rollover, self.phase ^ 1, self.phase)",
                "phase = gl.where(rollover | (incr == self.index), self.phase ^ 1, self.phase)",
            )
        ),
        ("is wrong at",),
    ),
    Wrong(
        "create ignores the phase",
        "every ring starts at parity 0",
        edits(
            (
                "return Counter(gl.to_tensor(0), gl.to_tensor(phase), num_barriers)",
                "return Counter(gl.to_tensor(0), gl.to_tensor(0), num_barriers)",
            )
        ),
        ("is wrong at",),
    ),
    Wrong(
        "parity from the wrap",
        "sets the parity to 1 on a wrap instead of flipping it",
        edits(("phase = gl.where(rollover, self.phase ^ 1, self.phase)", "phase = gl.where(rollover, 1, self.phase)")),
        ("is wrong at",),
    ),
    Wrong(
        "index and phase swapped",
        "returns the fields in the wrong order",
        edits(("return Counter(index, phase, self.num_barriers)", "return Counter(phase, index, self.num_barriers)")),
        ("is wrong at",),
    ),
    Wrong(
        "index never wraps",
        "counts uses without wrapping",
        edits(("index = gl.where(rollover, 0, incr)", "index = incr")),
        ("is wrong at",),
    ),
    Wrong(
        "the library's Counter",
        "imports the kernel's Counter",
        "from gluon_overlap.kernel import Counter\n",
        ("library",),
    ),
]

# =====================================================================================
# 05 load partition
# =====================================================================================
LOAD_PARTITION = [
    Wrong(
        "consumer start",
        "the producer's Counter starts at phase 0: waits for a completion that never comes",
        edits(("Counter.create(1, p.load_empty_bars", "Counter.create(0, p.load_empty_bars")),
        ("deadlock",),
    ),
    Wrong(
        "no empty wait",
        "refills a stage the MMA still reads",
        edits(("            mbarrier.wait(p.load_empty_bars.index(state.index), state.phase)\n", "")),
        ("hazard", "deadlock"),
    ),
    Wrong(
        "ignores pid_m",
        "loads A's first row block for every tile",
        edits(("[scheduler.pid_m * BLOCK_M, k // A_ELEM_PER_BYTE]", "[0, k // A_ELEM_PER_BYTE]")),
        ("C is wrong",),
    ),
    Wrong(
        "scale K wraps",
        "the scales' K coordinate wraps every two steps",
        edits(
            ("(k // BLOCK_K) * A_REP_K, 0, 0]", "((k // BLOCK_K) % 2) * A_REP_K, 0, 0]"),
            ("(k // BLOCK_K) * B_REP_K, 0, 0]", "((k // BLOCK_K) % 2) * B_REP_K, 0, 0]"),
        ),
        ("C is wrong",),
    ),
    Wrong(
        "B at pid_m",
        "uses the tile's row index for B's rows",
        edits(
            ("[scheduler.pid_n * BLOCK_N, k // B_ELEM_PER_BYTE]", "[scheduler.pid_m * BLOCK_N, k // B_ELEM_PER_BYTE]")
        ),
        ("C is wrong",),
    ),
    Wrong(
        "advances per tile",
        "advances the ring once per tile, not per K step",
        edits(
            (
                "            state = state.next()\n        scheduler = scheduler.step()",
                "        state = state.next()\n        scheduler = scheduler.step()",
            )
        ),
        ("hazard", "deadlock", "C is wrong"),
    ),
    Wrong(
        "expect on load_empty",
        "announces the bytes on the wrong ring",
        edits(
            (
                "            bar = p.load_ready_bars.index(state.index)\n            mbarrier.expect(bar, stage_bytes)",
                "            bar = p.load_ready_bars.index(state.index)\n"
                "            mbarrier.expect(p.load_empty_bars.index(state.index), stage_bytes)",
            )
        ),
        ("deadlock", "hazard", "stopped"),
    ),
    Wrong(
        "waits on load_ready",
        "waits for its own loads instead of the MMA's release",
        edits(
            (
                "mbarrier.wait(p.load_empty_bars.index(state.index), state.phase)",
                "mbarrier.wait(p.load_ready_bars.index(state.index), state.phase)",
            )
        ),
        ("deadlock", "hazard"),
    ),
    Wrong(
        "never advances",
        "always uses stage 0",
        edits(("            state = state.next()\n", "")),
        ("deadlock", "hazard"),
    ),
    Wrong(
        "expects twice",
        "announces the stage's bytes twice",
        edits(
            (
                "            mbarrier.expect(bar, stage_bytes)\n",
                "            mbarrier.expect(bar, stage_bytes)\n            mbarrier.expect(bar, stage_bytes)\n",
            )
        ),
        ("deadlock", "hazard"),
    ),
    Wrong(
        "never steps the schedule",
        "computes its first tile forever",
        edits(("        scheduler = scheduler.step()\n", "")),
        ("never ends", "deadlock", "hazard"),
    ),
    Wrong(
        "the library's loader",
        "imports the kernel's load_partition",
        "from gluon_overlap.kernel import load_partition\n",
        ("library",),
    ),
]

# =====================================================================================
# 05b adaptation
# =====================================================================================
ADAPTATION = [
    Wrong(
        "the package's layout",
        "takes make_plan('mxfp8', 'mxfp8', 256, 16)'s layout and release step: its left "
        "window covers the reserved columns",
        edits(
            ("LEFT = gl.constexpr((32, 256))", "LEFT = gl.constexpr((0, 256))"),
            ("EARLY_RELEASE = gl.constexpr(3)", "EARLY_RELEASE = gl.constexpr(1)"),
        ),
        ("reserved",),
    ),
    Wrong(
        "five stages",
        "keeps the package's five stages: 256-byte rows do not fit in shared memory",
        edits(("NUM_BUFFERS = 3\n", "NUM_BUFFERS = 5\n")),
        ("shared memory",),
    ),
    Wrong(
        "the package's layout moved past the reserved block",
        "shifts make_plan's layout up by 32: the right window runs past column 512",
        edits(("RIGHT = gl.constexpr((232, 256))", "RIGHT = gl.constexpr((264, 256))")),
        ("refuses", "exceed", "stopped", "past the 512 columns"),
    ),
    Wrong(
        "scales on the reserved block",
        "puts the scale slots on columns [0, 24) and the windows after them, overlapping by the scales only",
        edits(
            ("LEFT = gl.constexpr((32, 256))", "LEFT = gl.constexpr((24, 256))"),
            ("RIGHT = gl.constexpr((232, 256))", "RIGHT = gl.constexpr((256, 256))"),
            ("A_SCALES = gl.constexpr((488, 8))", "A_SCALES = gl.constexpr((0, 8))"),
            ("B_SCALES = gl.constexpr((496, 16))", "B_SCALES = gl.constexpr((8, 16))"),
            ("EARLY_RELEASE = gl.constexpr(3)", "EARLY_RELEASE = gl.constexpr(1)"),
        ),
        ("reserved",),
    ),
    Wrong(
        "the left window on the reserved block",
        "overlaps the windows by 56 but keeps the left one at column 0: "
        "it covers the reserved columns (and the last 32 are unused)",
        edits(
            ("LEFT = gl.constexpr((32, 256))", "LEFT = gl.constexpr((0, 256))"),
            ("RIGHT = gl.constexpr((232, 256))", "RIGHT = gl.constexpr((200, 256))"),
            ("A_SCALES = gl.constexpr((488, 8))", "A_SCALES = gl.constexpr((456, 8))"),
            ("B_SCALES = gl.constexpr((496, 16))", "B_SCALES = gl.constexpr((464, 16))"),
        ),
        ("reserved",),
    ),
    Wrong(
        "release for 24 shared columns",
        "keeps the package's release step (after drain step 1): two of the four shared subtiles are still unread",
        edits(("EARLY_RELEASE = gl.constexpr(3)", "EARLY_RELEASE = gl.constexpr(1)")),
        ("hazard",),
    ),
    Wrong(
        "release one step early",
        "counts 56 / 16 = 3 subtiles, forgetting the one that holds only part of them",
        edits(("EARLY_RELEASE = gl.constexpr(3)", "EARLY_RELEASE = gl.constexpr(2)")),
        ("hazard",),
    ),
    Wrong(
        "release one step late",
        "releases after drain step 4",
        edits(("EARLY_RELEASE = gl.constexpr(3)", "EARLY_RELEASE = gl.constexpr(4)")),
        ("later than needed",),
    ),
    Wrong(
        "overlap by the reserved block only",
        "overlaps the windows by 32 and leaves the scales where the right window now ends",
        edits(("RIGHT = gl.constexpr((232, 256))", "RIGHT = gl.constexpr((256, 256))")),
        ("hazard", "C is wrong", "only the two windows may share columns"),
    ),
    Wrong(
        "a scale slot inside a window",
        "puts A's scales on columns [40, 48), inside the left window",
        edits(("A_SCALES = gl.constexpr((488, 8))", "A_SCALES = gl.constexpr((40, 8))")),
        ("only the two windows may share columns",),
    ),
    Wrong(
        "a wider overlap",
        "overlaps the windows by 64 columns: 8 columns unused",
        edits(
            ("RIGHT = gl.constexpr((232, 256))", "RIGHT = gl.constexpr((224, 256))"),
            ("A_SCALES = gl.constexpr((488, 8))", "A_SCALES = gl.constexpr((480, 8))"),
            ("B_SCALES = gl.constexpr((496, 16))", "B_SCALES = gl.constexpr((488, 16))"),
        ),
        ("never used",),
    ),
    Wrong(
        "the plan's subtile count",
        "reads the number of subtiles from TMEM_PLAN, which has no layout now",
        edits(
            (
                "    NUM_SUBTILES: gl.constexpr = LEFT[1] // SUBTILE\n",
                "    NUM_SUBTILES: gl.constexpr = p.TMEM_PLAN.num_subtiles\n",
            )
        ),
        ("refuses", "stopped"),
    ),
    Wrong(
        "plain tuple",
        "a global the kernel reads that is not a constexpr",
        edits(("LEFT = gl.constexpr((32, 256))", "LEFT = (32, 256)")),
        ("LEFT", "refuses"),
    ),
    Wrong(
        "one stage",
        "counts the pair's bytes for the whole tile: one stage, so the loads never run ahead",
        edits(("NUM_BUFFERS = 3\n", "NUM_BUFFERS = 1\n")),
        ("room for another",),
    ),
    Wrong(
        "two stages",
        "forgets that the epilogue's staging buffers are small: two stages where three fit",
        edits(("NUM_BUFFERS = 3\n", "NUM_BUFFERS = 2\n")),
        ("room for another",),
    ),
    Wrong(
        "six stages",
        "counts the mxfp4 pair's stage (fp4 packed two a byte) for all three pairs",
        edits(("NUM_BUFFERS = 3\n", "NUM_BUFFERS = 6\n")),
        ("shared memory",),
    ),
    Wrong(
        "NUM_BUFFERS as text",
        "the stage count as a string",
        edits(("NUM_BUFFERS = 3\n", "NUM_BUFFERS = '3'\n")),
        ("NUM_BUFFERS",),
    ),
    Wrong(
        "B scales one row block wide",
        "gives B's scales 8 columns: it needs both 128-row blocks",
        edits(("B_SCALES = gl.constexpr((496, 16))", "B_SCALES = gl.constexpr((496, 8))")),
        ("refuses", "stopped", "hazard"),
    ),
    Wrong(
        "the package's plan",
        "asks make_plan for the layout",
        edits(("NUM_BUFFERS = 3\n", "NUM_BUFFERS = 3\nLAYOUT = make_plan('mxfp8', 'mxfp8', 256, 16)\n")),
        ("make_plan",),
    ),
    Wrong(
        "windows swapped, drains not",
        "even tiles write the right window but still drain high to low",
        edits(
            (
                "        if i % 2 == 0:\n            acc_tmem = p.tmem_pool.slice(LEFT[0], LEFT[1])",
                "        if i % 2 == 1:\n            acc_tmem = p.tmem_pool.slice(LEFT[0], LEFT[1])",
            )
        ),
        ("hazard", "C is wrong"),
    ),
]


# =====================================================================================
# function exercises: written as a learner writes them in a cell
# =====================================================================================
def _ceil4(n):
    return -(-n // 4)


BYTE_OFFSET = [
    Wrong("rows of 16 bytes", "one row after the other", lambda row, k, scale_k: row * 16 + k, ("byte",)),
    Wrong(
        "forgets the 32-row groups",
        "the notebook's first attempt",
        lambda row, k, scale_k: (row // 128) * 512 * _ceil4(scale_k) + (row % 128) * 4 + k % 4,
        ("byte",),
    ),
    Wrong(
        "lanes and groups swapped",
        "4 bytes per lane, 16 per group",
        lambda row, k, scale_k: (
            ((row // 128) * _ceil4(scale_k) + k // 4) * 512 + 4 * (row % 32) + 16 * ((row % 128) // 32) + k % 4
        ),
        ("byte",),
    ),
    Wrong(
        "chunks per row block floored",
        "scale_k // 4 chunks a row block: wrong for a ragged K",
        lambda row, k, scale_k: (
            ((row // 128) * (scale_k // 4) + k // 4) * 512 + 16 * (row % 32) + 4 * ((row % 128) // 32) + k % 4
        ),
        ("byte",),
    ),
    Wrong(
        "chunks column-major",
        "walks the chunks down the rows first",
        lambda row, k, scale_k: ((k // 4) * 2 + row // 128) * 512 + 16 * (row % 32) + 4 * ((row % 128) // 32) + k % 4,
        ("byte",),
    ),
    Wrong(
        "forgets k % 4",
        "the four k-scales of a row share one byte",
        lambda row, k, scale_k: (
            ((row // 128) * _ceil4(scale_k) + k // 4) * 512 + 16 * (row % 32) + 4 * ((row % 128) // 32)
        ),
        ("byte",),
    ),
    Wrong(
        "forgets the row block",
        "every row block in the first chunk row",
        lambda row, k, scale_k: (k // 4) * 512 + 16 * (row % 32) + 4 * ((row % 128) // 32) + k % 4,
        ("byte",),
    ),
    Wrong(
        "256-byte chunks",
        "a chunk of half the size",
        lambda row, k, scale_k: (
            ((row // 128) * _ceil4(scale_k) + k // 4) * 256 + 16 * (row % 32) + 4 * ((row % 128) // 32) + k % 4
        ),
        ("byte",),
    ),
    Wrong(
        "the library's function",
        "calls swizzle.scale_byte_offset",
        lambda row, k, scale_k: __import__("gluon_overlap.swizzle").swizzle.scale_byte_offset(row, k, scale_k),
        ("library",),
    ),
    Wrong(
        "a float",
        "returns the offset as a float",
        lambda row, k, scale_k: (
            float(((row // 128) * _ceil4(scale_k) + k // 4) * 512 + 16 * (row % 32) + 4 * ((row % 128) // 32) + k % 4)
            + 0.5
        ),
        ("byte",),
    ),
    Wrong(
        "a copied code object",
        "the library's function rebuilt from its code object",
        "copied:gluon_overlap.exercises.solutions.scale_byte_offset",
        ("library",),
        False,
    ),
]


def _tmem_first_attempt(plan, operand, row, k):
    chunk = plan.a_scale_column(k // 4) if operand == "A" else plan.b_scale_column(row // 128, k // 4)
    return chunk + k % 4, [row % 128]


def _tmem(plan, operand, row, k, *, group=None, lanes=None, chunk=None):
    if chunk is None:
        chunk = plan.a_scale_column(k // 4) if operand == "A" else plan.b_scale_column(row // 128, k // 4)
    g = (row % 128) // 32 if group is None else group
    return chunk + g, ([row % 32 + 32 * w for w in range(4)] if lanes is None else lanes)


TMEM_COLUMN = [
    Wrong("one row per lane", "the notebook's first attempt", _tmem_first_attempt, ("column",)),
    Wrong(
        "k picks the column",
        "k % 4 as the column inside the chunk",
        lambda p, o, r, k: _tmem(p, o, r, k, group=k % 4),
        ("column",),
    ),
    Wrong("one lane", "forgets warpx4's four copies", lambda p, o, r, k: _tmem(p, o, r, k, lanes=[r % 32]), ("lanes",)),
    Wrong(
        "B without its row block",
        "B's second 128 rows in the first chunk",
        lambda p, o, r, k: _tmem(
            p, o, r, k, chunk=(p.a_scale_column(k // 4) if o == "A" else p.b_scale_column(0, k // 4))
        ),
        ("column",),
    ),
    Wrong(
        "group from the whole row",
        "row // 32 instead of (row % 128) // 32",
        lambda p, o, r, k: _tmem(p, o, r, k, group=r // 32),
        ("column",),
    ),
    Wrong(
        "A in B's slot",
        "A's scales at B's columns",
        lambda p, o, r, k: _tmem(p, o, r, k, chunk=p.b_scale_column(r // 128, k // 4)),
        ("column",),
    ),
    Wrong(
        "two sub-partitions",
        "warpx4 read as two copies",
        lambda p, o, r, k: _tmem(p, o, r, k, lanes=[r % 32 + 32 * w for w in range(2)]),
        ("lanes", "column"),
    ),
    Wrong(
        "8 k-scales a chunk",
        "k // 8 picks the chunk",
        lambda p, o, r, k: _tmem(
            p, o, r, k, chunk=(p.a_scale_column(k // 8) if o == "A" else p.b_scale_column(r // 128, k // 8))
        ),
        ("column", "raised"),
    ),
    Wrong(
        "one lane as an int",
        "returns the lane, not the lanes",
        lambda p, o, r, k: (_tmem(p, o, r, k)[0], r % 32),
        ("return", "lanes"),
    ),
    Wrong(
        "the explorer's locator",
        "calls plots.tmem.scale_cell",
        lambda p, o, r, k: (lambda c: (c.column, c.lanes))(
            __import__("gluon_overlap.plots.tmem").plots.tmem.scale_cell(p, o, r, k)
        ),
        ("library",),
    ),
    Wrong(
        "the real plan",
        "rebuilds the package's plan from the view's fields",
        lambda p, o, r, k: (
            __import__("gluon_overlap.tmem")
            .tmem.make_plan(p.a_format, p.b_format, p.block_k, overlap=p.overlap)
            .a_scale.offset
        ),
        ("library",),
    ),
]

DRAIN_ORDER = [
    Wrong(
        "always low to high",
        "the notebook's first attempt",
        lambda plan, tile: list(range(plan.num_subtiles)),
        ("shared columns",),
    ),
    Wrong(
        "always high to low",
        "the right window shares its low end",
        lambda plan, tile: list(range(plan.num_subtiles - 1, -1, -1)),
        ("shared columns",),
    ),
    Wrong(
        "parity swapped",
        "even tiles low to high, odd high to low",
        lambda plan, tile: (
            list(range(plan.num_subtiles)) if tile % 2 == 0 else list(range(plan.num_subtiles - 1, -1, -1))
        ),
        ("shared columns",),
    ),
    Wrong(
        "only the shared subtiles",
        "returns the head only",
        lambda plan, tile: [plan.num_subtiles - 1] if tile % 2 == 0 else [0],
        ("not an order",),
    ),
    Wrong(
        "off by one",
        "range(n, 0, -1) for even tiles",
        lambda plan, tile: list(range(plan.num_subtiles, 0, -1)) if tile % 2 == 0 else list(range(plan.num_subtiles)),
        ("not an order",),
    ),
    Wrong(
        "first tile only",
        "tile 0 high to low, every later tile low to high",
        lambda plan, tile: list(range(plan.num_subtiles - 1, -1, -1)) if tile == 0 else list(range(plan.num_subtiles)),
        ("shared columns",),
    ),
    Wrong(
        "eight subtiles",
        "assumes EPILOGUE_BLOCK_N = 32",
        lambda plan, tile: list(range(7, -1, -1)) if tile % 2 == 0 else list(range(8)),
        ("not an order",),
    ),
    Wrong(
        "absolute subtile numbers",
        "numbers the right window's subtiles from column 0 of TMEM",
        lambda plan, tile: (
            list(range(plan.num_subtiles - 1, -1, -1))
            if tile % 2 == 0
            else [plan.right.offset // plan.epilogue_block_n + s for s in range(plan.num_subtiles)]
        ),
        ("not an order",),
    ),
    Wrong("the plan's own order", "asks the plan", lambda plan, tile: plan.drain_order(tile), ("raised", "library")),
    Wrong(
        "the package's plan",
        "rebuilds the package's plan and asks it",
        lambda plan, tile: (
            __import__("gluon_overlap.tmem")
            .tmem.make_plan(plan.a_format, plan.b_format, plan.block_k, plan.epilogue_block_n)
            .drain_order(tile)
        ),
        ("library",),
    ),
    Wrong(
        "a quarter",
        "shared subtiles first only for the first quarter of the tiles",
        lambda plan, tile: (
            list(range(plan.num_subtiles - 1, -1, -1)) if tile in (0, 2) else list(range(plan.num_subtiles))
        ),
        ("shared columns",),
    ),
]

EARLY_RELEASE = [
    Wrong(
        "overlap over the width",
        "the notebook's first attempt",
        lambda plan: plan.overlap_cols // plan.epilogue_block_n,
        ("release",),
    ),
    Wrong(
        "one late",
        "(overlap - 1) // width + 1",
        lambda plan: (plan.overlap_cols - 1) // plan.epilogue_block_n + 1,
        ("release",),
    ),
    Wrong("always 0", "the first step", lambda plan: 0, ("release",)),
    Wrong(
        "32-column subtiles", "assumes EPILOGUE_BLOCK_N = 32", lambda plan: (plan.overlap_cols - 1) // 32, ("release",)
    ),
    Wrong(
        "a count, not a step",
        "ceil(overlap / width)",
        lambda plan: -(-plan.overlap_cols // plan.epilogue_block_n),
        ("release",),
    ),
    Wrong("the last step", "releases with the whole window", lambda plan: plan.num_subtiles - 1, ("release",)),
    Wrong(
        "overlap // width - 1",
        "one early when the overlap is not a multiple of the width",
        lambda plan: plan.overlap_cols // plan.epilogue_block_n - 1,
        ("release",),
    ),
    Wrong(
        "rounded", "round(overlap / width)", lambda plan: round(plan.overlap_cols / plan.epilogue_block_n), ("release",)
    ),
    Wrong(
        "the plan's field",
        "reads the plan's early_release_subtile",
        lambda plan: plan.early_release_subtile,
        ("raised", "library"),
    ),
    Wrong(
        "the package's plan",
        "asks make_plan",
        lambda plan: (
            __import__("gluon_overlap.tmem")
            .tmem.make_plan(plan.a_format, plan.b_format, plan.block_k, plan.epilogue_block_n)
            .early_release_subtile
        ),
        ("library",),
    ),
    Wrong(
        "a float",
        "the division without flooring",
        lambda plan: (plan.overlap_cols - 1) / plan.epilogue_block_n,
        ("release",),
    ),
]

COUNTER_WALK = [
    Wrong(
        "ignores the start phase", "every ring as a consumer", lambda j, n, start: (j % n, (j // n) & 1), ("parity",)
    ),
    Wrong("never flips", "the start phase forever", lambda j, n, start: (j % n, start), ("parity",)),
    Wrong("flips every use", "flips per use, not per lap", lambda j, n, start: (j % n, start ^ (j & 1)), ("parity",)),
    Wrong(
        "one ahead",
        "the barrier after the right one",
        lambda j, n, start: ((j + 1) % n, start ^ ((j // n) & 1)),
        ("barrier",),
    ),
    Wrong(
        "laps of n + 1", "wraps one use late", lambda j, n, start: (j % n, start ^ ((j // (n + 1)) & 1)), ("parity",)
    ),
    Wrong(
        "index and lap swapped",
        "returns the lap as the barrier",
        lambda j, n, start: (j // n, start ^ (j % n & 1)),
        ("barrier",),
    ),
    Wrong(
        "flips once",
        "flips after the first lap only",
        lambda j, n, start: (j % n, 1 - start if j >= n else start),
        ("parity",),
    ),
    Wrong(
        "no & 1",
        "start ^ (j // n): not a parity after two laps",
        lambda j, n, start: (j % n, start ^ (j // n)),
        ("parity",),
    ),
    Wrong(
        "the kernel's Counter",
        "walks the library's Counter",
        lambda j, n, start: __import__("gluon_overlap.exercises.nb05").exercises.nb05.counter_walk(n, start)[j],
        ("library",),
    ),
    Wrong(
        "a list",
        "returns a list of three",
        lambda j, n, start: [j % n, start ^ ((j // n) & 1), 0],
        ("parity", "return"),
    ),
    Wrong(
        "producer flipped",
        "a producer starts at the other parity",
        lambda j, n, start: (j % n, (1 - start) ^ ((j // n) & 1)),
        ("parity",),
    ),
]

#: the right scopes and arrival counts of 05's barrier exercise, restated here (not read from the library)
_RIGHT_SCOPES = {
    "load_empty": ("cta", 1),
    "load_ready": ("pair", 2),
    "acc_empty": ("pair", 2),
    "acc_ready": ("cta", 1),
    "overlap": ("pair", 2),
}


def _scopes(**changed):
    """The right table with the given barriers changed: one wrong answer's whole difference, at a glance."""
    return {**_RIGHT_SCOPES, **changed}


BARRIER_SCOPES = [
    Wrong(
        "the source's counts",
        "one arrival for every barrier",
        _scopes(load_ready=("pair", 1), acc_empty=("pair", 1), overlap=("pair", 1)),
        ("arrival counts",),
        False,
    ),
    Wrong(
        "all pair",
        "every barrier pair-scoped",
        _scopes(load_empty=("pair", 2), acc_ready=("pair", 2)),
        ("scopes are wrong",),
        False,
    ),
    Wrong(
        "load_empty pair",
        "the MMA's commit arrives per CTA",
        _scopes(load_empty=("pair", 2)),
        ("scopes are wrong",),
        False,
    ),
    Wrong(
        "acc_ready pair",
        "the tile's commit arrives per CTA",
        _scopes(acc_ready=("pair", 2)),
        ("scopes are wrong",),
        False,
    ),
    Wrong("overlap per CTA", "the overlap barrier per CTA", _scopes(overlap=("cta", 1)), ("scopes are wrong",), False),
    Wrong(
        "commit twice",
        "a multicast commit counted twice",
        _scopes(load_empty=("cta", 2), acc_ready=("cta", 2)),
        ("arrival",),
        False,
    ),
    Wrong(
        "a key missing", "forgets overlap", {k: v for k, v in _RIGHT_SCOPES.items() if k != "overlap"}, ("keys",), False
    ),
    Wrong(
        "misspelled",
        "acc_empty spelled acc_free",
        {("acc_free" if k == "acc_empty" else k): v for k, v in _RIGHT_SCOPES.items()},
        ("keys",),
        False,
    ),
    Wrong(
        "counts as text",
        "'2' instead of 2",
        {k: (scope, str(n)) for k, (scope, n) in _RIGHT_SCOPES.items()},
        ("arrival",),
        False,
    ),
    Wrong(
        "True for one",
        "True instead of 1",
        _scopes(load_empty=("cta", True), acc_ready=("cta", True)),
        ("arrival",),
        False,
    ),
    Wrong("the library's table", "hands in solutions.BARRIERS", "library:BARRIERS", ("library",), False),
    Wrong("a copy of the library's table", "dict(solutions.BARRIERS)", "library:dict(BARRIERS)", ("library",), False),
    Wrong(
        "the checker's reference",
        "hands in the checker's own reference table",
        "library:reference",
        ("library",),
        False,
    ),
]


def _expect(
    p,
    *,
    scale=True,
    b_scale_rows=2,
    fp4_bytes=0.5,
    padded_full=False,
    block_k=None,
    vec=None,
    a_scale_blocks=1,
    factor=1,
):
    """A near-miss of the expect byte count for the plan view ``p`` (each keyword one mistake)."""
    a, b = p.a_format, p.b_format
    bk = p.block_k if block_k is None else block_k
    v = p.vec_size if vec is None else vec
    mixed = (a == "mxfp8") != (b == "mxfp8")

    def row(fmt):
        if fmt == "mxfp8" or (padded_full and mixed):
            return bk
        return int(bk * fp4_bytes)

    chunks = bk // (v * 4)
    total = 128 * row(a) + 128 * row(b)
    if scale:
        total += a_scale_blocks * chunks * 512 + b_scale_rows * chunks * 512
    return factor * total


#: the four shipped pairs' counts (what 08's table would show): a lookup that ignores BLOCK_K
_SHIPPED_EXPECT = {
    ("mxfp8", "mxfp8"): 34304,
    ("mxfp8", "mxfp4"): 26112,
    ("mxfp4", "mxfp4"): 35840,
    ("nvfp4", "nvfp4"): 38912,
}
_SHIPPED_BLOCK_K = {"mxfp8": 128, "mxfp4": 256, "nvfp4": 256}

EXPECT_BYTES = [
    Wrong("the pair's bytes", "counts both CTAs", lambda p: _expect(p, factor=2), ("too many",)),
    Wrong("B scales split", "counts half the B-scale tile", lambda p: _expect(p, b_scale_rows=1), ("too few",)),
    Wrong("no scales", "forgets the scale tiles", lambda p: _expect(p, scale=False), ("too few",)),
    Wrong("fp4 a byte", "counts fp4 as a byte per element", lambda p: _expect(p, fp4_bytes=1), ("too many",)),
    Wrong(
        "padded fp4 counted padded",
        "counts the padded fp4 operand's shared-memory size",
        lambda p: _expect(p, padded_full=True),
        ("too many",),
    ),
    Wrong("BLOCK_K 256", "one BLOCK_K for every pair", lambda p: _expect(p, block_k=256), ("too",)),
    Wrong("both A-scale chunks", "counts the pair's A scales", lambda p: _expect(p, a_scale_blocks=2), ("too many",)),
    Wrong("VEC 32", "the mx scale block for nvfp4 too", lambda p: _expect(p, vec=32), ("too few",)),
    Wrong(
        "a lookup table",
        "the four shipped pairs' counts, keyed by the formats",
        lambda p: _SHIPPED_EXPECT[(p.a_format, p.b_format)],
        ("too",),
    ),
    Wrong(
        "the shipped BLOCK_K",
        "right formula, but at the BLOCK_K the package ships for the format",
        lambda p: _expect(p, block_k=_SHIPPED_BLOCK_K[p.a_format]),
        ("too",),
    ),
    Wrong(
        "C staging counted",
        "adds the epilogue's C buffer (128 x 32 float16), which no TMA load fills",
        lambda p: _expect(p) + 128 * 32 * 2,
        ("too many",),
    ),
    Wrong(
        "the compiled PTX",
        "reads the answer from the compiled kernel",
        lambda p: __import__("gluon_overlap.exercises.nb03").exercises.nb03.compiled_expect_bytes(
            p.a_format, p.b_format
        ),
        ("library",),
    ),
    Wrong(
        "the descriptors",
        "sums the library's descriptors' nbytes_per_cta",
        lambda p: __import__("gluon_overlap.exercises.nb03").exercises.nb03.descriptor_expect_bytes(
            __import__("gluon_overlap.tmem").tmem.make_plan(p.a_format, p.b_format, block_k=p.block_k)
        ),
        ("library",),
    ),
    Wrong(
        "make_plan",
        "builds the package's plan inside the answer",
        lambda p: _expect(__import__("gluon_overlap.tmem").tmem.make_plan(p.a_format, p.b_format)),
        ("library",),
    ),
    Wrong("a string", "the number as text", lambda p: str(_expect(p)), ("byte count",)),
]


# =====================================================================================
# find the bug (03b, 04): kernels, built lazily ("load:" + edits of the buggy source, or a marker)
# =====================================================================================
FIND_BUG_03B = [
    Wrong("unchanged", "hands the buggy kernel back", ("buggy",), ("deadlock",)),
    Wrong("the library's kernel", "hands in the step module's own kernel", ("library",), ("library",), False),
    Wrong(
        "the other wait too",
        "flips the load wait as well",
        ("edit", ("mbarrier.wait(load_bar, phase)", "mbarrier.wait(load_bar, phase ^ 1)")),
        ("deadlock",),
    ),
    Wrong(
        "drops the MMA wait",
        "removes the wrong wait instead of fixing it",
        ("edit", ("        mbarrier.wait(mma_bar, phase ^ 1)  #", "        pass  #")),
        ("hazard", "deadlock"),
    ),
    Wrong("another kernel", "loads step 2's module instead", ("other",), ("differs",), False),
    Wrong(
        "both flipped",
        "flips the phase variable's start instead",
        ("edit", ("    phase = 0  #", "    phase = 1  #")),
        ("deadlock", "hazard"),
    ),
    Wrong("text, not a kernel", "hands in the fixed text", ("text",), ("kernel",), False),
    Wrong(
        "wait for parity 0",
        "always waits for parity 0",
        ("edit", ("        mbarrier.wait(mma_bar, phase ^ 1)  #", "        mbarrier.wait(mma_bar, 0)  #")),
        ("hazard", "deadlock"),
    ),
    Wrong(
        "phase never flips",
        "fixes the wait but drops the flip",
        (
            "edit",
            ("        mbarrier.wait(mma_bar, phase ^ 1)  #", "        mbarrier.wait(mma_bar, phase)  #"),
            ("        phase ^= 1", "        phase ^= 0"),
        ),
        ("hazard", "deadlock"),
    ),
    Wrong(
        "flip before the wait",
        "flips the phase before the MMA wait instead of fixing the wait's parity",
        (
            "edit",
            (
                "        mbarrier.wait(mma_bar, phase ^ 1)  #",
                "        phase ^= 1\n        mbarrier.wait(mma_bar, phase)  #",
            ),
        ),
        ("hazard", "deadlock"),
    ),
]

FIND_BUG_04 = [
    Wrong("unchanged", "hands the buggy kernel back", ("buggy",), ("hazard",)),
    Wrong("the library's kernel", "hands in step 2's own kernel", ("library",), ("library",), False),
    Wrong(
        "no overlap",
        "drains the whole tile before the release: correct, no overlap",
        (
            "edit",
            (
                "HEAD: gl.constexpr = TMEM_PLAN.early_release_subtile if",
                "HEAD: gl.constexpr = TMEM_PLAN.num_subtiles if",
            ),
        ),
        ("no overlap", "arrived"),
    ),
    Wrong(
        "one late",
        "a head one subtile longer than needed",
        (
            "edit",
            (
                "HEAD: gl.constexpr = TMEM_PLAN.early_release_subtile if",
                "HEAD: gl.constexpr = TMEM_PLAN.early_release_subtile + 2 if",
            ),
        ),
        ("arrived",),
    ),
    Wrong(
        "no overlap wait",
        "removes the wait instead",
        ("edit", ("                mbarrier.wait(overlap_bar, (i + 1) % 2)\n", "")),
        ("hazard",),
    ),
    Wrong(
        "wait parity",
        "changes the wait's parity instead",
        ("edit", ("mbarrier.wait(overlap_bar, (i + 1) % 2)", "mbarrier.wait(overlap_bar, i % 2)")),
        ("deadlock",),
    ),
    Wrong("another kernel", "loads step 1's module instead", ("other",), ("differs",), False),
    Wrong("text, not a kernel", "hands in the fixed text", ("text",), ("kernel",), False),
    Wrong(
        "two short",
        "a head two subtiles short",
        ("edit", ("HEAD: gl.constexpr = TMEM_PLAN.early_release_subtile if", "HEAD: gl.constexpr = 1 if")),
        ("hazard", "arrived"),
    ),
    Wrong(
        "overlap off",
        "turns the overlap off in the kernel",
        ("edit", ("HEAD: gl.constexpr = TMEM_PLAN.early_release_subtile if", "HEAD: gl.constexpr = 0 if")),
        ("hazard", "deadlock", "C is wrong", "arrived"),
    ),
]

FIND_BUG_06 = [
    Wrong("deletes the final wait", "not the bug", ("tma.store_wait(0)\n", "pass\n"), ("still",), False),
    Wrong("a looser wait after the store", "waits for all but two", ("MYSTERY", "MYSTERY_LOOSE"), ("still",), False),
    Wrong("not a pair", "a string", "not a pair", ("pair",), False),
    Wrong("text not in the kernel", "mistyped text", ("c_smem.store(acc ) \n", "x\n"), ("exactly once",), False),
    Wrong("same text", "changes nothing", ("SAME",), ("changes nothing",), False),
    Wrong("no wait at all", "deletes the staging wait", ("MYSTERY", "STORE_ONLY"), ("still",), False),
    Wrong("wait for 1", "pendings=1 after the store", ("MYSTERY", "MYSTERY_ONE"), ("still",), False),
    Wrong("skips the store", "never writes the staging buffer", ("MYSTERY", "NO_STORE"), ("still",), False),
    Wrong("numbers", "two ints", (1, 2), ("strings",), False),
    Wrong("empty old", "an empty text to replace", ("", "x"), ("strings",), False),
]


def _peek_want(row, k, scale_k):
    import sys

    frame = sys._getframe(1)
    while frame is not None and "want" not in frame.f_locals:
        frame = frame.f_back
    return frame.f_locals["want"] if frame is not None else 0


BYTE_OFFSET.append(
    Wrong(
        "reads the checker's frame",
        "takes the expected value from the checker's locals",
        _peek_want,
        ("frames",),
        False,
    )
)
