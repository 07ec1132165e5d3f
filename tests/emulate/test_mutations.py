"""Mutation suite over ``gluon_overlap/kernel.py``: planted bugs are caught, harmless edits stay clean.

Each mutation (``tests/emulate/mutants.py``) is an exact text edit of the kernel written to a temporary copy and
run by the executor with ``emulate(..., kernel=path)`` over seeds 0, 1, ... (the sweep's settings in
turn: completion biases 1, 0.05, 20 under uniform picks, then the same under the holdback schedule).
Bugs run on nvfp4 512 x 768 x 1024 on 2 clusters (3 tiles each, 4 K steps),
harmless edits on nvfp4 256 x 768 x 512 on one cluster (3 tiles, 2 K steps) over 30 seeds.
``benchmarks/mutations.py`` prints this table; measured on the executor:

==========  ===========================  =======  ========================  ==========================================
class       mutation                     overlap  caught by (first seed)    hazard kinds
==========  ===========================  =======  ========================  ==========================================
barrier     release-on-acc-empty         on       deadlock (seed 0)
barrier     mma-waits-load-empty         off      deadlock (seed 0)
barrier     epilogue-waits-acc-empty     off      deadlock+hazard (seed 0)  tmem-read-after-write, tmem-read-uninit.
barrier     tile-commit-to-load-empty    off      deadlock (seed 0)
parity      overlap-parity               on       deadlock (seed 0)
parity      acc-ready-producer-phase     off      hazard+wrong C (seed 0)   tmem-read-after-write, tmem-read-uninit.
parity      load-ready-producer-phase    on       deadlock+hazard (seed 0)  smem-read-after-write, smem-read-uninit.
parity      load-empty-consumer-phase    off      deadlock (seed 0)
window      epilogue-reads-other-window  on       hazard+wrong C (seed 0)   tmem-read-after-write, tmem-write-after-read
window      mma-into-wrong-window        on       hazard+wrong C (seed 0)   tmem-read-after-write, tmem-write-after-read
drain       even-low-to-high             on       hazard+wrong C (seed 0)   tmem-read-after-write, tmem-write-after-read
drain       odd-high-to-low              on       hazard+wrong C (seed 0)   tmem-read-after-write, tmem-write-after-read
drain       release-before-load          on       hazard (seed 0)           tmem-read-after-write, tmem-write-after-read
stage       commit-before-mma            off      hazard+wrong C (seed 0)   smem-write-after-read
stage       load-into-wrong-stage        off      hazard+wrong C (seed 0)   smem-read-after-write, smem-read-uninit.
stage       expect-too-few-bytes         off      deadlock+hazard (seed 0)  smem-read-after-write, smem-write-after-wr.
stage       expect-too-many-bytes        off      deadlock (seed 0)
stage       commit-frees-wrong-stage     off      deadlock (seed 0)
stage       commit-to-next-stage         off      deadlock (seed 2)         (parity alias: tests/emulate/mutants.py)
store       no-final-store-wait          off      hazard (seed 0)           stores-in-flight-at-exit
store       store-wait-too-large         off      hazard+wrong C (seed 0)   smem-write-after-read
use_acc     use-acc-first-step           off      hazard+wrong C (seed 0)   tmem-read-uninitialized
loop bound  load-one-k-step-short        off      deadlock (seed 0)
loop bound  mma-one-k-step-long          off      deadlock (seed 0)
loop bound  epilogue-one-subtile-short   off      wrong C (seed 0)          (C keeps NaN where nothing was stored)
schedule    scheduler-steps-by-one       off      hazard (seed 0)           global-write-after-write
tmem plan   scales-inside-window         on       hazard+wrong C (seed 0)   tmem-kind-mismatch
barrier     overlap-arrive-count-2       on       hazard (seed 0)           tmem-write-after-read
harmless    three-stages                 on       clean (30 seeds)
harmless    four-stages                  on       clean (30 seeds)
harmless    later-release                on       clean (30 seeds)
harmless    one-store-stage              on       clean (30 seeds)
==========  ===========================  =======  ========================  ==========================================

Issue 16 added classes (first seed on this branch; ``main`` = before it):

=================  ===========================  ===============================  ==================================
class              mutation                     this branch                      main
=================  ===========================  ===============================  ==================================
latent deadlock    acc-empty-other-window       deadlock, parity alias (seed 4,  clean (40 seeds; it was listed
                                                holdback; 3 tiles, 1 cluster)    as harmless)
compiler-rejected  epilogue-one-warp            refused (frontend, seed 0)       clean (12 seeds)
compiler-rejected  scale-copy-cga-mismatch      refused (verifier, seed 0)       a torch RuntimeError out of
                                                                                 emulate, no kernel line
compiler-rejected  worker-three-warps           refused (verifier, seed 0)       not measured
compiler-rejected  seven-stages                 refused (shared memory, seed 0)  clean (6 seeds)
compiler-rejected  tmem-1024-columns            refused (tensor memory, seed 0)  hazard + wrong C (seed 0)
integer semantics  staging-index-minus-one      clean until runtime % truncates  clean (12 seeds, floor %)
barrier lifecycle  invalidate-overlap-early     clean until invalidate is        clean (12 seeds; invalidate is
                                                modelled                         a no-op)
cluster barrier    cluster-barrier-in-mma-loop  raised: cluster.barrier is not   the same
                                                implemented (until it is)
harmless           worker-registers-32-40       clean (30 seeds)                 clean (30 seeds)
harmless           invalidate-after-join        clean (30 seeds)                 clean (30 seeds)
harmless           cluster-barrier-after-init   raised until cluster.barrier is  the same
                                                implemented, then clean
=================  ===========================  ===============================  ==================================

The gated rows (``GATED``) turn into catches when the executor models the semantics their probe checks
(tests/emulate/mutants.py: ``executor_truncates``, ``executor_models_invalidate``,
``executor_models_cluster_barrier``); until then the test checks they are not mistaken for another bug.

The last three were found as a reviewer: the first two used to pass with no hazard (C is right for the
first; for the second only C was wrong, with nothing to say why) until the executor learned to check
unordered global stores (``global-write-after-write``) and what TMEM columns hold
(``tmem-kind-mismatch``).

A finding of issue 16's holdback schedule: freeing the other window's acc_empty (once listed as harmless)
deadlocks when the MMA partition is late by a whole epilogue tile -- its first acc_empty wait aliases.

A finding of this suite: committing stage ``s``'s MMA to ``load_empty[(s + 1) % NUM_BUFFERS]`` is *not*
harmless.  The data is safe (the in-order tensor pipe and loader cover every overwrite), but the
barrier of stage ``s`` then completes one use ahead of its waiter, the parity aliases and the loader
deadlocks when an MMA finishes before the loader's wait -- under early completions, seed 2.
"""

from __future__ import annotations

import pytest
import torch
from mutants import (
    BUG_CLASSES,
    BUG_PROBLEM,
    HARMLESS_PROBLEM,
    MUTATIONS,
    executor_models_cluster_barrier,
    executor_models_invalidate,
    executor_truncates,
    first_catch,
    how_caught,
    problem,
    stable_mutant,
)

from gluon_overlap.emulate.kernels import DEFAULT_KERNEL, changed_lines
from gluon_overlap.emulate.runs import sweep_schedule

BUGS = [m for m in MUTATIONS if m.bug_class != "harmless"]
HARMLESS = [m for m in MUTATIONS if m.bug_class == "harmless"]
BUG_SEEDS = 12  #: a bug must be caught within this many seeds
HARMLESS_SEEDS = 30  #: a harmless edit must stay clean over this many

#: how each bug must show itself (at least these parts of :func:`mutants.how_caught`)
EXPECTED = {
    "release-on-acc-empty": {"deadlock"},
    "mma-waits-load-empty": {"deadlock"},
    "epilogue-waits-acc-empty": {"hazard"},
    "tile-commit-to-load-empty": {"deadlock"},
    "overlap-parity": {"deadlock"},
    "acc-ready-producer-phase": {"hazard", "wrong C"},
    "load-ready-producer-phase": {"hazard"},
    "load-empty-consumer-phase": {"deadlock"},
    "epilogue-reads-other-window": {"hazard", "wrong C"},
    "mma-into-wrong-window": {"hazard", "wrong C"},
    "even-low-to-high": {"hazard", "wrong C"},
    "odd-high-to-low": {"hazard", "wrong C"},
    "release-before-load": {"hazard"},
    "commit-before-mma": {"hazard"},
    "load-into-wrong-stage": {"hazard"},
    "expect-too-few-bytes": {"hazard"},
    "expect-too-many-bytes": {"deadlock"},
    "commit-frees-wrong-stage": {"deadlock"},
    "commit-to-next-stage": {"deadlock"},
    "no-final-store-wait": {"hazard"},
    "store-wait-too-large": {"hazard"},
    "use-acc-first-step": {"hazard", "wrong C"},
    "load-one-k-step-short": {"deadlock"},
    "mma-one-k-step-long": {"deadlock"},
    "epilogue-one-subtile-short": {"wrong C"},
    "scheduler-steps-by-one": {"hazard"},
    "scales-inside-window": {"hazard", "wrong C"},
    "overlap-arrive-count-2": {"hazard"},
    "acc-empty-other-window": {"deadlock"},
    "epilogue-one-warp": {"refused"},
    "scale-copy-cga-mismatch": {"refused"},
    "seven-stages": {"refused"},
    "tmem-1024-columns": {"refused"},
    "worker-three-warps": {"refused"},
    # shown however the executor chooses (a hazard, a deadlock or an error naming the line), once it models them:
    "staging-index-minus-one": set(),
    "invalidate-overlap-early": set(),
    "cluster-barrier-in-mma-loop": set(),
}
#: mutations whose bug only shows where the executor models a semantics (the probe says whether it does);
#: until then the run must not look like a different bug: clean, or the builtin named as missing
GATED = {
    "staging-index-minus-one": executor_truncates,
    "invalidate-overlap-early": executor_models_invalidate,
    "cluster-barrier-in-mma-loop": executor_models_cluster_barrier,
    "cluster-barrier-after-init": executor_models_cluster_barrier,
}


def spec_of(m):
    return m.problem or (HARMLESS_PROBLEM if m.bug_class == "harmless" else BUG_PROBLEM)


def check_not_modelled(m, path, tmp_problem):
    """The executor lacks the semantics ``m`` needs: a missing builtin is named with the kernel line, or
    (floor ``%``, invalidate as a no-op) the run is clean -- the gap, not a false catch."""
    seed, r = first_catch(tmp_problem, path, 1, overlap=m.overlap, clusters=spec_of(m)[-1])
    if "cluster.barrier" in "".join(e.new for e in m.edits):
        assert r.failure is not None and "cluster.barrier" in r.failure and path.name in r.failure
    else:
        assert seed is None, (m.name, how_caught(r))


@pytest.fixture(scope="module")
def bug_problem():
    return problem(BUG_PROBLEM)


@pytest.fixture(scope="module")
def harmless_problem():
    return problem(HARMLESS_PROBLEM)


def test_every_bug_class_has_mutations_and_every_bug_an_expectation():
    assert {m.bug_class for m in BUGS} == set(BUG_CLASSES)
    assert set(EXPECTED) == {m.name for m in BUGS}
    assert len({m.name for m in MUTATIONS}) == len(MUTATIONS)


@pytest.mark.parametrize("m", MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_applies_exactly_and_changes_code(m):
    path = stable_mutant(m)
    before, after = DEFAULT_KERNEL.read_text(), path.read_text()
    changed = changed_lines(before, after)
    assert changed and all(old.strip() != new.strip() for _, old, new in changed)


@pytest.mark.parametrize("m", BUGS, ids=lambda m: m.name)
def test_planted_bug_is_caught(m, bug_problem):
    path = stable_mutant(m)
    p = bug_problem if m.problem is None else problem(m.problem)
    if m.name in GATED and not GATED[m.name]():
        check_not_modelled(m, path, p)
        return
    seed, r = first_catch(p, path, BUG_SEEDS, overlap=m.overlap, clusters=spec_of(m)[-1])
    assert seed is not None, f"{m.name} ({m.description}) not caught in {BUG_SEEDS} seeds"
    how = set(how_caught(r).split("+"))
    assert EXPECTED[m.name] <= how, (m.name, how)
    if m.bug_class == "compiler-rejected":  # refused before it ran, with a line of the edited copy
        line = r.refused.rsplit(" (at ", 1)[1]
        name, rest = line.split(":", 1)
        lineno, text = rest.split(" ", 1)
        assert name == path.name
        assert path.read_text().splitlines()[int(lineno) - 1].strip() == text.rstrip(")").strip("`")
        assert not r.hazards and r.deadlock is None and r.steps == 0
        return
    if m.name not in GATED:
        assert r.failure is None  # a protocol bug is reported, never an executor crash
    for h in r.hazards:  # every hazard names a line of the mutated copy, with that line's text
        assert h.line is not None, str(h)
        assert h.line.name == path.name  # the executed copy is shown under the mutant's name
        assert path.read_text().splitlines()[h.line.lineno - 1].strip() == h.line.text
    if "deadlock" in how:
        assert r.deadlock.blocked and all(b["barrier_name"] for b in r.deadlock.blocked)
    if m.bug_class == "latent deadlock":  # found by holding a partition back; told as a parity alias
        assert sweep_schedule(seed) == "holdback"
        alias = [b for b in r.deadlock.blocked if b.get("parity_alias")]
        assert alias and "parity alias" in str(r.deadlock), str(r.deadlock)
    if "wrong C" in how:
        assert int(r.bad.sum()) > 0


def test_missing_store_wait_names_the_epilogue_and_the_last_store(bug_problem):
    m = next(m for m in BUGS if m.name == "no-final-store-wait")
    path = stable_mutant(m)
    _, r = first_catch(bug_problem, path, 1, overlap=False, clusters=2)
    hz = [h for h in r.hazards if h.kind == "stores-in-flight-at-exit"]
    assert len(hz) == 4  # every CTA of both clusters
    assert {h.partition for h in hz} == {"epilogue"}
    assert all("tma.async_store" in h.line.text for h in hz)
    assert r.matches_reference  # this interleaving happened to finish them: only the hazard shows it


def test_use_acc_on_the_first_step_makes_c_nan_everywhere_even_for_windows_used_once():
    """TMEM starts as NaN: accumulating onto it poisons every element, although every window is used once."""
    m = next(m for m in BUGS if m.name == "use-acc-first-step")
    path = stable_mutant(m)
    p = problem(("nvfp4", "nvfp4", 512, 256, 256, 2))  # 2 tiles on 2 clusters: one tile each
    _, r = first_catch(p, path, 1, overlap=False, clusters=2)
    assert torch.isnan(r.c.float()).all()
    assert {h.kind for h in r.hazards} == {"tmem-read-uninitialized"}


@pytest.mark.parametrize("m", HARMLESS, ids=lambda m: m.name)
def test_harmless_edit_stays_clean(m, harmless_problem):
    path = stable_mutant(m)
    if m.name in GATED and not GATED[m.name]():
        check_not_modelled(m, path, harmless_problem)
        return
    seed, r = first_catch(harmless_problem, path, HARMLESS_SEEDS, overlap=m.overlap, clusters=HARMLESS_PROBLEM[-1])
    assert seed is None, (m.name, seed, how_caught(r), [str(h) for h in r.hazards[:2]], r.deadlock)
    assert r.matches_reference
