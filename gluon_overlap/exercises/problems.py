"""The problems a checker runs a learner's kernel on: drawn from a seeded generator, never the learner's choice.

Every argument a kernel answer receives varies across the set: the four format pairs (fp4 packing, the padded fp4
of the mixed pair, both scale types), several tiles per cluster (both accumulator windows, the left one twice),
an odd number of K steps (a ring or a parity that only works for two steps fails), M >= 512 and a ragged N (tile
offsets other than 0, TMA clipping at the edges), two clusters (the persistent schedule's stride), and the
interleaving: the executor's default order, asynchronous completions made late and early, and the hold-back
schedule that stalls one partition for long stretches (:class:`gluon_overlap.interp.engine.Engine`).

The set is deterministic for a given ``seed`` (a notebook's output does not change from run to run); a learner
can ask for another draw with ``seed=``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from gluon_overlap.exercises.runs import Case
from gluon_overlap.tmem import SUPPORTED_PAIRS, default_block_k

#: the seed every checker uses unless told otherwise
DEFAULT_SEED = 2027

#: (executor seed, completion bias, schedule) of the interleavings: default, late, early, hold-back
INTERLEAVINGS = ((0, None, "uniform"), (1, 0.05, "uniform"), (2, 20.0, "uniform"), (3, None, "holdback"))


@dataclass(frozen=True)
class Run:
    """One executor run: a problem, its data seed and an interleaving."""

    case: Case
    data_seed: int
    seed: int
    bias: float | None
    schedule: str

    @property
    def label(self) -> str:
        order = {"uniform": {None: "default order", 0.05: "late completions", 20.0: "early completions"}}
        how = "hold-back order" if self.schedule == "holdback" else order["uniform"].get(self.bias, "an order")
        return f"{self.case.label}, interleaving {self.seed} ({how})"


def _pairs(rng: random.Random, first: tuple[str, str] | None) -> list[tuple[str, str]]:
    pairs = list(SUPPORTED_PAIRS)
    rng.shuffle(pairs)
    if first is not None:
        pairs.remove(first)
        pairs.insert(0, first)
    return pairs


def kernel_runs(
    kind: str,
    seed: int = DEFAULT_SEED,
    *,
    persistent: bool,
    overlap: bool = False,
    pairs: tuple[tuple[str, str], ...] | None = None,
    first: tuple[str, str] | None = ("nvfp4", "nvfp4"),
    full_interleavings_for: int = 1,
    holdback: bool = True,
) -> tuple[Run, ...]:
    """The runs of one check: one problem per format pair (``pairs``, default all four, ``first`` first), each
    with M >= 512, a ragged N, an odd number of K steps, and -- ``persistent`` kernels -- two clusters of three
    tiles or more.  The first ``full_interleavings_for`` problems run under every interleaving, the others
    under one each (varied)."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed={seed!r} must be an int")
    rng = random.Random(f"{kind}:{seed}")
    chosen = list(pairs) if pairs is not None else _pairs(rng, first)
    interleavings = INTERLEAVINGS if holdback else INTERLEAVINGS[:3]
    runs = []
    for n, (a, b) in enumerate(chosen):
        block_k = default_block_k(a, b)
        k = rng.choice((3, 5)) * block_k if n else 3 * block_k  # odd K steps; the first problem is the quick one
        m = 512 if persistent else rng.choice((512, 640))
        n_cols = rng.choice((744, 776)) if persistent else rng.choice((264, 392, 520))
        case = Case(m, n_cols, k, a, b, overlap=overlap, num_clusters=2 if persistent else None)
        data_seed = rng.randrange(1 << 16)
        picked = interleavings if n < full_interleavings_for else (interleavings[rng.randrange(len(interleavings))],)
        runs += [Run(case, data_seed, s, bias, schedule) for s, bias, schedule in picked]
    return tuple(runs)


def cases_of(runs: tuple[Run, ...]) -> list[Case]:
    """The distinct problems of a set of runs, in order."""
    seen: list[Case] = []
    for r in runs:
        if r.case not in seen:
            seen.append(r.case)
    return seen
