"""A mutation suite over ``gluon_overlap/kernel.py``: planted bugs the executor must catch, harmless edits
it must not flag.

Each :class:`Mutation` is a list of exact text edits (:class:`gluon_overlap.emulate.kernels.Edit`) of the
kernel's source; :func:`write_mutant` applies them (checking that each applies) to a copy in a folder, and
:func:`first_catch` runs the copy on the executor (:func:`gluon_overlap.emulate.runs.emulate` with
``kernel=path``) over seeds ``0, 1, ...`` (each with its sweep completion bias) until one run shows the
bug: a hazard, a deadlock, a wrong C or an error the kernel raised.  ``tests/emulate/test_mutations.py`` checks
every bug class is caught and every harmless edit stays clean; ``benchmarks/mutations.py`` prints the
table of how and when each is caught.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.language.nvidia.blackwell import mbarrier

from gluon_overlap.emulate.kernels import DEFAULT_KERNEL, Edit, apply_edits
from gluon_overlap.emulate.runs import EmulationResult, emulate, sweep_bias, sweep_schedule
from gluon_overlap.interp.launch import call, launch
from gluon_overlap.store import matches, write_atomically


@dataclass(frozen=True)
class Mutation:
    """A named edit of the kernel: its bug class (``harmless`` for an edit that must stay clean), what it
    does, the edits, whether it needs overlap on (it edits code only overlap runs) and, rarely, the
    problem it needs (a latent deadlock that needs more tiles per cluster)."""

    name: str
    bug_class: str
    description: str
    edits: tuple[Edit, ...]
    overlap: bool = True
    problem: tuple | None = None  #: a problem spec of its own (default BUG_PROBLEM / HARMLESS_PROBLEM)


def _e(old: str, new: str, count: int = 1) -> Edit:
    return Edit(old, new, count)


_MMA_WINDOW = ("        # Even tiles write the left window, odd tiles the right one (the same with overlap off).\n"
               "        if USE_OVERLAP and i % 2 != 0:\n"
               "            acc_tmem = p.tmem_pool.slice(RIGHT[0], RIGHT[1])\n")
_EPI_WINDOW = ("        mbarrier.wait(p.acc_ready_bars.index(acc_state.index), acc_state.phase)\n"
               "        if USE_OVERLAP and i % 2 != 0:\n"
               "            acc_tmem = p.tmem_pool.slice(RIGHT[0], RIGHT[1])\n")
_ODD_DRAIN = ("                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 1, step), SUBTILE_COLS)\n"
              "                store_n = off_n + drain_column(TMEM_PLAN, 1, step)\n")

MUTATIONS: tuple[Mutation, ...] = (
    # --- barrier: the wrong barrier arrived on or waited on -------------------------------------------
    Mutation("release-on-acc-empty", "barrier",
             "the early release arrives on acc_empty instead of overlap",
             (_e("                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n",
                 "                mbarrier.arrive(p.acc_empty_bars.index(acc_state.index), count=1)\n"),)),
    Mutation("mma-waits-load-empty", "barrier",
             "the MMA waits on load_empty[s] instead of load_ready[s]",
             (_e("            mbarrier.wait(p.load_ready_bars.index(s), load_state.phase)\n",
                 "            mbarrier.wait(p.load_empty_bars.index(s), load_state.phase)\n"),), overlap=False),
    Mutation("epilogue-waits-acc-empty", "barrier",
             "the epilogue waits on acc_empty instead of acc_ready (the other CTA's wait on a pair barrier is "
             "not real: it reads TMEM at once)",
             (_e("        mbarrier.wait(p.acc_ready_bars.index(acc_state.index), acc_state.phase)\n",
                 "        mbarrier.wait(p.acc_empty_bars.index(acc_state.index), acc_state.phase)\n"),), overlap=False),
    Mutation("tile-commit-to-load-empty", "barrier",
             "the MMA's end-of-tile commit goes to load_empty[0] instead of acc_ready",
             (_e("        tcgen05_commit(p.acc_ready_bars.index(acc_state.index))\n",
                 "        tcgen05_commit(p.load_empty_bars.index(0))\n"),), overlap=False),
    # --- parity ------------------------------------------------------------------------------------------
    Mutation("overlap-parity", "parity",
             "the MMA waits on overlap with parity i % 2 instead of (i + 1) % 2",
             (_e("mbarrier.wait(p.overlap_bar.index(0), (i + 1) % 2)",
                 "mbarrier.wait(p.overlap_bar.index(0), i % 2)"),)),
    Mutation("acc-ready-producer-phase", "parity",
             "the epilogue's acc_ready counter starts at phase 1 (passes before the MMA finished)",
             (_e("    acc_state = Counter.create(0, p.acc_ready_bars.shape[0])\n",
                 "    acc_state = Counter.create(1, p.acc_ready_bars.shape[0])\n"),), overlap=False),
    Mutation("load-ready-producer-phase", "parity",
             "the MMA's load_ready counter starts at phase 1 (reads stages before they land)",
             (_e("    load_state = Counter.create(0, p.load_ready_bars.shape[0])\n",
                 "    load_state = Counter.create(1, p.load_ready_bars.shape[0])\n"),)),
    Mutation("load-empty-consumer-phase", "parity",
             "the loader's load_empty counter starts at phase 0 (waits for a commit that never comes)",
             (_e("    state = Counter.create(1, p.load_empty_bars.shape[0])\n",
                 "    state = Counter.create(0, p.load_empty_bars.shape[0])\n"),), overlap=False),
    # --- window ------------------------------------------------------------------------------------------
    Mutation("epilogue-reads-other-window", "window",
             "odd tiles' epilogue reads the left window (the other tile's accumulator)",
             (_e(_EPI_WINDOW, _EPI_WINDOW.replace("RIGHT[0], RIGHT[1]", "LEFT[0], LEFT[1]")),)),
    Mutation("mma-into-wrong-window", "window",
             "odd tiles' MMA writes the left window while its epilogue reads the right one",
             (_e(_MMA_WINDOW, _MMA_WINDOW.replace("RIGHT[0], RIGHT[1]", "LEFT[0], LEFT[1]")),)),
    # --- drain order -------------------------------------------------------------------------------------
    Mutation("even-low-to-high", "drain",
             "even tiles drain low to high: the shared columns are released before they are read",
             (_e("                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 0, step), SUBTILE_COLS)\n"
                 "                store_n = off_n + drain_column(TMEM_PLAN, 0, step)\n",
                 "                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 1, step), SUBTILE_COLS)\n"
                 "                store_n = off_n + drain_column(TMEM_PLAN, 1, step)\n"),)),
    Mutation("odd-high-to-low", "drain",
             "odd tiles drain high to low: their shared (low) columns are drained last, after the release",
             (_e(_ODD_DRAIN, _ODD_DRAIN.replace("TMEM_PLAN, 1, step", "TMEM_PLAN, 0, step")),)),
    Mutation("release-before-load", "drain",
             "the overlap release happens before the subtile's TMEM load instead of after it",
             (_e("            acc = acc_sub.load().to(p.c_desc.dtype)  # tcgen05.ld + wait::ld: the columns are now in "
                 "registers\n            if USE_OVERLAP and step == EARLY_RELEASE:\n"
                 "                # The last shared column has been read: release the overlap to the next tile's MMA.\n"
                 "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n",
                 "            if USE_OVERLAP and step == EARLY_RELEASE:\n"
                 "                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n"
                 "            acc = acc_sub.load().to(p.c_desc.dtype)\n"),)),
    # --- stage -------------------------------------------------------------------------------------------
    Mutation("commit-before-mma", "stage",
             "the stage is freed (commit to load_empty) before the MMA that reads it is issued",
             (_e("    tcgen05_copy(b_scale, b_scale_tmem)\n",
                 "    tcgen05_copy(b_scale, b_scale_tmem)\n    tcgen05_commit(mma_bar)\n"),
              _e("use_acc=use_acc, multicast=True, mbarriers=[mma_bar])", "use_acc=use_acc, multicast=True)")),
             overlap=False),
    Mutation("load-into-wrong-stage", "stage",
             "the B tile is loaded into the next stage instead of the one the barrier guards",
             (_e("p.b_bufs.index(state.index), multicast=True)",
                 "p.b_bufs.index((state.index + 1) % p.load_empty_bars.shape[0]), multicast=True)"),),
             overlap=False),
    Mutation("expect-too-few-bytes", "stage",
             "expect counts one B-scale tile too few: load_ready completes before the B scales land",
             (_e("            mbarrier.expect(bar, stage_bytes)\n",
                 "            mbarrier.expect(bar, stage_bytes - p.b_scale_desc.nbytes_per_cta)\n"),), overlap=False),
    Mutation("expect-too-many-bytes", "stage",
             "expect counts 16 bytes too many: load_ready never completes",
             (_e("            mbarrier.expect(bar, stage_bytes)\n",
                 "            mbarrier.expect(bar, stage_bytes + 16)\n"),), overlap=False),
    Mutation("commit-frees-wrong-stage", "stage",
             "the MMA commit frees load_empty[(s + 2) % NUM_BUFFERS] instead of load_empty[s]",
             (_e("acc_tmem, p.tmem_pool, TMEM_PLAN, p.load_empty_bars.index(s), use_acc)",
                 "acc_tmem, p.tmem_pool, TMEM_PLAN, p.load_empty_bars.index((s + 2) % p.load_empty_bars.shape[0]), "
                 "use_acc)"),), overlap=False),
    # Committing stage s's MMA to load_empty[(s + 1) % N] looks harmless: the tensor pipe completes MMAs
    # in issue order, and the in-order loader reaches stages 1..N-1 of a lap only after its wait on
    # load_empty[0], which now follows the MMA of stage N-1 of the previous lap and so covers every MMA
    # that read the lap's stages.  The overwrite is indeed ordered -- but the phases are not:
    # load_empty[s] (s >= 1) now completes after the MMAs of stage s - 1, and the MMA of stage s - 1 of
    # lap L + 1 can finish before the loader waits on load_empty[s] for lap L + 1 (the loader's own load of
    # that stage s - 1 came first).  The waiter then sees two completed phases where it expects one,
    # the parity aliases, and it blocks for a phase that needs its own load: a deadlock, found by the
    # executor under early completions (bias 20) within a few seeds.
    Mutation("commit-to-next-stage", "stage",
             "the MMA commit goes to load_empty[(s + 1) % NUM_BUFFERS]: safe for the data, a parity alias "
             "(deadlock) when an MMA finishes before the loader's wait",
             (_e("acc_tmem, p.tmem_pool, TMEM_PLAN, p.load_empty_bars.index(s), use_acc)",
                 "acc_tmem, p.tmem_pool, TMEM_PLAN, p.load_empty_bars.index((s + 1) % p.load_empty_bars.shape[0]), "
                 "use_acc)"),), overlap=False),
    # --- store -------------------------------------------------------------------------------------------
    Mutation("no-final-store-wait", "store",
             "the epilogue ends without tma.store_wait(0)",
             (_e("    tma.store_wait(0)\n", "    pass\n"),), overlap=False),
    Mutation("store-wait-too-large", "store",
             "store_wait(pendings=STORE_STAGES): the staging buffer is rewritten while its store reads it",
             (_e("tma.store_wait(pendings=STORE_STAGES - 1)", "tma.store_wait(pendings=STORE_STAGES)"),),
             overlap=False),
    # --- accumulate flag ---------------------------------------------------------------------------------
    Mutation("use-acc-first-step", "use_acc",
             "use_acc=True on the first K step: the MMA adds to whatever the window held",
             (_e("        use_acc = False  # the first K step overwrites whatever the window held\n",
                 "        use_acc = True\n"),), overlap=False),
    # --- loop bounds -------------------------------------------------------------------------------------
    Mutation("load-one-k-step-short", "loop bound",
             "the loader stops one K step early",
             (_e("        for k in range(0, K, BLOCK_K):\n", "        for k in range(0, K - BLOCK_K, BLOCK_K):\n"),),
             overlap=False),
    Mutation("mma-one-k-step-long", "loop bound",
             "the MMA runs one K step too many (consumes the next tile's first stage)",
             (_e("        for _k in range(0, K, BLOCK_K):\n", "        for _k in range(0, K + BLOCK_K, BLOCK_K):\n"),),
             overlap=False),
    Mutation("epilogue-one-subtile-short", "loop bound",
             "the epilogue drains one subtile too few",
             (_e("        for step in gl.static_range(NUM_SUBTILES):\n",
                 "        for step in gl.static_range(NUM_SUBTILES - 1):\n"),), overlap=False),
    # --- found by planting bugs the data cannot show (reviewer probes) ---------------------------------------
    Mutation("scheduler-steps-by-one", "schedule",
             "the tile scheduler steps by 1 instead of num_programs: both clusters compute and store tiles "
             "1..5 (C right, two unordered stores of each element)",
             (_e("        return TileScheduler._at(self.tile_id + gl.num_programs(axis=0),",
                 "        return TileScheduler._at(self.tile_id + 1,"),), overlap=False),
    Mutation("scales-inside-window", "tmem plan",
             "the A scales sit 256 columns lower, inside the left window (scale copy and MMA never race: the "
             "in-order tensor pipe orders them; they clobber each other's columns)",
             (_e("a_scale_tmem = tmem_pool.slice(TMEM_PLAN.a_scale.offset, TMEM_PLAN.a_scale.cols)",
                 "a_scale_tmem = tmem_pool.slice(TMEM_PLAN.a_scale.offset - 256, TMEM_PLAN.a_scale.cols)"),)),
    Mutation("overlap-arrive-count-2", "barrier",
             "each epilogue arrives on overlap with count=2: one CTA alone completes the pair barrier",
             (_e("                mbarrier.arrive(p.overlap_bar.index(0), count=1)\n",
                 "                mbarrier.arrive(p.overlap_bar.index(0), count=2)\n"),)),
    # --- latent (delay-only) deadlocks ----------------------------------------------------------------------
    # Freeing the *other* window's acc_empty looked harmless (the data stays ordered: the overlap wait
    # covers it) and stayed clean over 30 uniform seeds of the harmless problem (its own, below).  But
    # acc_empty[1] now completes when tile 0 is drained, and the MMA's first wait on it (tile 1, phase 1:
    # "the phase before init") aliases if
    # both epilogues finish tile 0 before the MMA partition, just past tile 0's commit, gets to that
    # wait: it then waits for completion 2, which needs tile 2's MMA -- a deadlock that needs the MMA
    # held back across a whole epilogue tile.  The holdback schedule finds it; uniform picks do not.
    Mutation("acc-empty-other-window", "latent deadlock",
             "the epilogue frees the other window's acc_empty: a parity alias (deadlock) when the MMA partition "
             "is late by a whole epilogue tile",
             (_e("        mbarrier.arrive(p.acc_empty_bars.index(acc_state.index), count=1)\n",
                 "        mbarrier.arrive(p.acc_empty_bars.index(1 - acc_state.index), count=1)\n"),),
             problem=("nvfp4", "nvfp4", 256, 768, 512, 1)),
    # --- refused by Triton's compiler (never "OK") --------------------------------------------------------
    Mutation("epilogue-one-warp", "compiler-rejected",
             "the epilogue becomes a 1-warp worker (the MMA the default partition): its TMEM loads need 4 warps",
             (_e("        (epilogue_partition, (p, )),  # default partition: the kernel's num_warps (4)\n"
                 "        (mma_partition, (p, )),  # worker: 1 warp, 24 registers\n",
                 "        (mma_partition, (p, )),\n        (epilogue_partition, (p, )),\n"),)),
    Mutation("scale-copy-cga-mismatch", "compiler-rejected",
             "the B scales' TMEM layout splits them across the CTAs like A's: tcgen05_copy between mismatched "
             "CGA layouts",
             (_e("b_scale_layout: gl.constexpr = TensorMemoryScalesLayout(cga_layout=[[0, 0]] if two_ctas else [])",
                 "b_scale_layout: gl.constexpr = TensorMemoryScalesLayout(cga_layout=[[1, 0]] if two_ctas else [])"),)),
    Mutation("worker-three-warps", "compiler-rejected", "the load worker gets 3 warps (worker warp counts must be "
             "powers of 2)", (_e("    ], [1, 1], [24, 24])", "    ], [1, 3], [24, 24])"),)),
    Mutation("seven-stages", "compiler-rejected", "NUM_BUFFERS = 7: 288,940 B of shared memory (limit 232,448)",
             (_e("NUM_BUFFERS = 5  #:", "NUM_BUFFERS = 7  #:"),)),
    Mutation("tmem-1024-columns", "compiler-rejected", "the TMEM pool allocates 1024 columns (the SM has 512)",
             (_e("[BLOCK_M, TMEM_PLAN.tmem_cols], tmem_layout)", "[BLOCK_M, TMEM_PLAN.tmem_cols * 2], tmem_layout)"),)),
    # --- integer semantics: visible only where runtime % truncates toward zero, as compiled (remsi) ------
    Mutation("staging-index-minus-one", "integer semantics",
             "the epilogue's staging buffer is (index - 1) % STORE_STAGES: a permutation under Python's floor, "
             "buffer -1 (out of bounds) under the GPU's truncation",
             (_e("            c_smem = c_smems.index(store_state.index)\n",
                 "            c_smem = c_smems.index((store_state.index - 1) % STORE_STAGES)\n"),), overlap=False),
    # --- barrier lifecycle -----------------------------------------------------------------------------------
    Mutation("invalidate-overlap-early", "barrier lifecycle",
             "the overlap barrier is invalidated right after its init, then used by both partitions",
             (_e("    mbarrier.init(overlap_bar.index(0), count=1)\n",
                 "    mbarrier.init(overlap_bar.index(0), count=1)\n"
                 "    mbarrier.invalidate(overlap_bar.index(0))\n"),)),
    # --- cluster barriers ----------------------------------------------------------------------------------
    Mutation("cluster-barrier-in-mma-loop", "cluster barrier",
             "a cluster barrier at the top of the MMA's tile loop: the epilogue and load warps never reach it",
             (_e("        mbarrier.wait(p.acc_empty_bars.index(acc_state.index), acc_state.phase)\n",
                 "        gl.nvidia.blackwell.cluster.barrier()\n"
                 "        mbarrier.wait(p.acc_empty_bars.index(acc_state.index), acc_state.phase)\n"),), overlap=False),
    # --- harmless edits: must stay clean -------------------------------------------------------------------
    Mutation("three-stages", "harmless", "NUM_BUFFERS = 3 load stages",
             (_e("NUM_BUFFERS = 5  #:", "NUM_BUFFERS = 3  #:"),)),
    Mutation("four-stages", "harmless", "NUM_BUFFERS = 4 load stages",
             (_e("NUM_BUFFERS = 5  #:", "NUM_BUFFERS = 4  #:"),)),
    Mutation("later-release", "harmless", "the overlap is released one subtile later than the plan says",
             (_e("if USE_OVERLAP and step == EARLY_RELEASE:", "if USE_OVERLAP and step == EARLY_RELEASE + 1:"),)),
    Mutation("one-store-stage", "harmless", "one epilogue staging buffer (store_wait(0) before each reuse)",
             (_e("STORE_STAGES: gl.constexpr = 1 if NUM_SUBTILES == 1 else 2",
                 "STORE_STAGES: gl.constexpr = 1"),)),
    Mutation("worker-registers-32-40", "harmless",
             "worker register budgets 32 and 40 instead of 24 (the compiler accepts them)",
             (_e("    ], [1, 1], [24, 24])", "    ], [1, 1], [32, 40])"),)),
    Mutation("invalidate-after-join", "harmless", "the load ring's barriers are invalidated after the join",
             (_e("    ], [1, 1], [24, 24])\n",
                 "    ], [1, 1], [24, 24])\n    for s in gl.static_range(num_buffers):\n"
                 "        mbarrier.invalidate(load_empty_bars.index(s))\n"
                 "        mbarrier.invalidate(load_ready_bars.index(s))\n"),)),
    Mutation("cluster-barrier-after-init", "harmless",
             "a cluster barrier after the barrier inits (the inits made visible to the peer CTA)",
             (_e("    mbarrier.init(overlap_bar.index(0), count=1)\n",
                 "    mbarrier.init(overlap_bar.index(0), count=1)\n    gl.nvidia.blackwell.cluster.barrier()\n"),)),
)
BY_NAME = {m.name: m for m in MUTATIONS}
#: (a_format, b_format, M, N, K, clusters) the planted bugs run on: 3 tiles per cluster, 4 K steps per tile
BUG_PROBLEM = ("nvfp4", "nvfp4", 512, 768, 1024, 2)
#: what the harmless edits run on (smaller: they must stay clean over every seed): 3 tiles, 2 K steps each
HARMLESS_PROBLEM = ("nvfp4", "nvfp4", 256, 768, 512, 1)
BUG_CLASSES = ("barrier", "parity", "window", "drain", "stage", "store", "use_acc", "loop bound", "schedule",
               "tmem plan", "latent deadlock", "compiler-rejected", "integer semantics", "barrier lifecycle",
               "cluster barrier")


# --- what the executor models (the semantics some mutants need to show) ---------------------------------------
@gluon.jit
def _runtime_remainder(x):
    return gl.to_tensor(x) % 2


@gluon.jit
def _arrive_after_invalidate():
    bar = mbarrier.allocate_mbarrier(batch=1)
    mbarrier.init(bar.index(0), count=1)
    mbarrier.invalidate(bar.index(0))
    mbarrier.arrive(bar.index(0), count=1)


@gluon.jit
def _cluster_barrier():
    gl.nvidia.blackwell.cluster.barrier()


@functools.cache
def executor_truncates() -> bool:
    """True when the executor's runtime ``%`` truncates toward zero, as the compiled ``arith.remsi`` does."""
    return int(call(_runtime_remainder, -1)) == -1


@functools.cache
def executor_models_invalidate() -> bool:
    """True when the executor reports the use of an invalidated mbarrier."""
    return not launch(_arrive_after_invalidate, (1,), (), num_ctas=1, num_warps=4).ok


@functools.cache
def executor_models_cluster_barrier() -> bool:
    """True when ``cluster.barrier()`` runs on the executor (not 'not implemented')."""
    return launch(_cluster_barrier, (1,), (), num_ctas=2, num_warps=4).error is None


def problem(spec: tuple) -> Any:
    """The random problem of a ``(a_format, b_format, M, N, K, clusters)`` spec (problem seed 11)."""
    from gluon_overlap.formats import random_problem

    a, b, m, n, k, _ = spec
    return random_problem(m, n, k, a, b, seed=11)


def write_mutant(mutation: Mutation, folder: str | Path) -> Path:
    """The kernel with ``mutation`` applied, written to ``folder / <name>.py`` (atomically, and only when its
    text differs: two workers may write one mutant at once); ValueError if it does not apply."""
    source = apply_edits(DEFAULT_KERNEL.read_text(), mutation.edits, f"mutation {mutation.name!r}")
    path = Path(folder) / f"kernel_{mutation.name.replace('-', '_')}.py"
    if not matches(path, source.encode()):
        write_atomically(path, source.encode())
    return path


#: A folder of mutants that is the same in every run (the repository's ignored ``.cache``): a mutant's verdict
#: from the compiler (``twin.verdict_cache``) is keyed by its file, so mutants written under a new ``tmp_path``
#: each run would be checked by the compiler again each run.
STABLE_MUTANTS = Path(__file__).resolve().parents[2] / ".cache" / "mutants"


def stable_mutant(mutation: Mutation) -> Path:
    """:func:`write_mutant` into :data:`STABLE_MUTANTS`."""
    STABLE_MUTANTS.mkdir(parents=True, exist_ok=True)
    return write_mutant(mutation, STABLE_MUTANTS)


def how_caught(r: EmulationResult) -> str:
    """What a run showed: ``hazard``, ``deadlock``, ``wrong C``, ``raised`` (joined by ``+``), or ``""``."""
    how = []
    if r.refused is not None:
        how.append("refused")
    elif r.failure is not None:
        how.append("raised")
    if r.deadlock is not None:
        how.append("deadlock")
    if r.hazards:
        how.append("hazard")
    if not r.matches_reference and r.deadlock is None and r.failure is None:
        how.append("wrong C")
    if r.step_limit_hit:
        how.append("step limit")
    return "+".join(how)


def first_catch(problem: Any, path: str | Path, seeds: int, *, overlap: bool = True,
                clusters: int = 2) -> tuple[int | None, EmulationResult]:
    """The first seed (of ``0 .. seeds-1``, sweep biases) under which the kernel in ``path`` fails, and that
    run; ``(None, last run)`` if every run is clean."""
    r = None
    for seed in range(seeds):
        r = emulate(problem, overlap=overlap, clusters=clusters, seed=seed, completion_bias=sweep_bias(seed),
                    schedule=sweep_schedule(seed), trace=False, kernel=str(path))
        if not r.ok:
            return seed, r
    return None, r
