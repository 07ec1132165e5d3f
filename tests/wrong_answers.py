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
    Wrong("drains everything first", "releases the shared columns only after the whole drain: correct, no overlap",
          edits(("            if step == RELEASE:\n"
                 "                # Every shared column is in registers: the next tile's MMA may overwrite them.\n"
                 "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n", ""),
                ("        # The whole window is read: the MMA of tile i + 2 may reuse it.\n",
                 "        mbarrier.arrive(p.overlap_bar.index(0), count=1)\n")),
          ("no overlap",)),
    Wrong("no overlap wait", "the MMA never waits for the previous tile's release: overwrites columns being read",
          edits(("        mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)\n", "")), ("hazard",)),
    Wrong("overlap parity off by one", "waits for completion i + 1 instead of i",
          edits(("mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)", "mbarrier.wait(p.overlap_bar.index(0), i % 2)")),
          ("deadlock",)),
    Wrong("even tiles low to high", "the left window drained low to high: its shared (high) columns come last",
          edits(("                acc_sub = p.tmem_pool.slice(LEFT + (NUM_SUBTILES - 1 - step) * SUBTILE, SUBTILE)\n"
                 "                store_n = off_n + (NUM_SUBTILES - 1 - step) * SUBTILE\n",
                 "                acc_sub = p.tmem_pool.slice(LEFT + step * SUBTILE, SUBTILE)\n"
                 "                store_n = off_n + step * SUBTILE\n")), ("hazard",)),
    Wrong("release one subtile early", "arrives on overlap before the last shared subtile is read",
          edits(("            if step == RELEASE:", "            if step == RELEASE - 1 or (RELEASE == 0 and step == 0):"),
                ("            acc = acc_sub.load().to(p.c_desc.dtype)\n            if step",
                 "            if step"),
                ("                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n",
                 "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n"
                 "            acc = acc_sub.load().to(p.c_desc.dtype)\n")), ("hazard",)),
    Wrong("release one subtile late", "arrives one drain step after the last shared subtile: correct but late",
          edits(("            if step == RELEASE:", "            if step == RELEASE + 1:")), ("later than needed",)),
    Wrong("per-CTA overlap barrier", "allocates the overlap barrier per CTA: the lead waits only for itself",
          edits(("mbarrier.allocate_mbarrier(batch=1, two_ctas=TWO_CTAS)", "mbarrier.allocate_mbarrier(batch=1)")),
          ("hazard", "deadlock")),
    Wrong("overlap count 2", "inits the pair barrier with count=2: it needs four arrivals, gets two",
          edits(("    mbarrier.init(overlap_bar.index(0), count=1)", "    mbarrier.init(overlap_bar.index(0), count=2)")),
          ("deadlock",)),
    Wrong("one window", "every tile writes the left window: the next tile overwrites what is being drained",
          edits(("            acc_tmem = p.tmem_pool.slice(TMEM_PLAN.right.offset, TMEM_PLAN.right.cols)",
                 "            acc_tmem = p.tmem_pool.slice(TMEM_PLAN.left.offset, TMEM_PLAN.left.cols)")),
          ("hazard", "C is wrong", "no overlap")),
    Wrong("acc_empty never released", "the epilogue never arrives on acc_empty: tile 2 waits forever",
          edits(("        mbarrier.arrive(p.acc_empty_bars.index(acc_state.index), count=1)\n", "")), ("deadlock",)),
    Wrong("acc_empty as a consumer", "the MMA's acc_empty Counter starts at phase 0: tile 0 waits for a drain that "
          "never comes", edits(("acc_state = Counter.create(1, p.acc_empty_bars.shape[0])",
                                "acc_state = Counter.create(0, p.acc_empty_bars.shape[0])")), ("deadlock",)),
    Wrong("runtime column", "computes the subtile's column at run time: .slice needs a constant",
          edits(("                acc_sub = p.tmem_pool.slice(RIGHT + step * SUBTILE, SUBTILE)",
                 "                acc_sub = p.tmem_pool.slice(RIGHT + (i % 2) * step * SUBTILE, SUBTILE)")),
          ("constant",)),
    Wrong("parity into a constexpr function", "passes the runtime tile parity where the compiler needs a constant",
          edits(("            if i % 2 == 0:\n                acc_sub = p.tmem_pool.slice(LEFT +",
                 "            col: gl.constexpr = (NUM_SUBTILES - 1 - step) * SUBTILE\n            if i % 2 == 0:\n"
                 "                acc_sub = p.tmem_pool.slice(LEFT +")), ("constexpr", "reassigned")),
    Wrong("right window shifted", "puts the right window one subtile further: overlaps the scale columns",
          edits(("            acc_tmem = p.tmem_pool.slice(TMEM_PLAN.right.offset, TMEM_PLAN.right.cols)",
                 "            acc_tmem = p.tmem_pool.slice(TMEM_PLAN.right.offset + 32, TMEM_PLAN.right.cols)")),
          ("refuses", "hazard", "C is wrong")),
    Wrong("the library's partitions", "imports the library's own partitions",
          "from gluon_overlap.kernel import epilogue_partition, mma_partition\n"
          "from gluon_overlap.kernel import mma_scaled_warp_specialized_kernel as allocate_overlap_barrier\n",
          ("library",)),
    Wrong("importlib", "loads the library's kernel module at run time",
          "import importlib\nk = importlib.import_module('gluon_overlap.kernel')\nmma_partition = k.mma_partition\n"
          "epilogue_partition = k.epilogue_partition\nallocate_overlap_barrier = k.mma_partition\n", ("imports",)),
    Wrong("exec of the library's source", "runs the library's text under the answer's name",
          "text = open('gluon_overlap/kernel.py').read()\nexec(compile(text, __file__, 'exec'))\n", ("uses",)),
    Wrong("getattr on a module", "fetches the partitions by name from an allowed module",
          "import triton.experimental.gluon.language as gl\nmma_partition = getattr(gl, 'mma_partition')\n",
          ("uses",)),
]
