"""The mutation table: each planted bug of tests/emulate/mutants.py, how the executor catches it and the first
catching seed; each harmless edit and how many seeds it stayed clean.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/mutations.py [--seeds N]``.  Bugs run on nvfp4
512 x 768 x 1024 over 2 clusters (3 tiles each), harmless edits on nvfp4 256 x 768 x 512 on one cluster
(the sizes tests/emulate/test_mutations.py uses; a mutation may name its own, e.g. the latent deadlock's 5 tiles);
seed ``s`` runs with the sweep's completion bias and schedule of ``s``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from mutants import BUG_PROBLEM, HARMLESS_PROBLEM, MUTATIONS, first_catch, how_caught, problem, write_mutant  # noqa: E402, I001

from gluon_overlap.text import format_table  # noqa: E402
from gluon_overlap.emulate.runs import sweep_schedule  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30, help="seeds to try per mutation (30)")
    args = ap.parse_args()
    bug, harmless = problem(BUG_PROBLEM), problem(HARMLESS_PROBLEM)
    rows = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for m in MUTATIONS:
            path = write_mutant(m, folder)
            is_bug = m.bug_class != "harmless"
            spec = m.problem or (BUG_PROBLEM if is_bug else HARMLESS_PROBLEM)
            p = problem(spec) if m.problem else (bug if is_bug else harmless)
            seed, r = first_catch(p, path, args.seeds, overlap=m.overlap, clusters=spec[-1])
            kinds = sorted({h.kind for h in r.hazards}) if seed is not None else []
            caught = (
                f"{how_caught(r)} (seed {seed}, {sweep_schedule(seed)})"
                if seed is not None
                else f"clean ({args.seeds} seeds)"
            )
            rows.append((m.bug_class, m.name, "on" if m.overlap else "off", caught, ", ".join(kinds[:3])))
    print(format_table(["class", "mutation", "overlap", "caught by (first seed, schedule)", "hazard kinds"], rows))
    print(f"\n{len(MUTATIONS)} mutations in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
