"""Checking a learner's kernel: run it on the CPU executor for a few problems and interleavings."""

from __future__ import annotations

from dataclasses import dataclass

from gluon_overlap.exercises.check import Verdict, verdict

#: (seed, completion bias) of the interleavings every kernel is tried with: the executor's
#: default, and async completions made late (0.05) and early (20): a missing wait shows in one
INTERLEAVINGS = ((0, None), (1, 0.05), (2, 20.0))


@dataclass(frozen=True)
class Case:
    """One problem a kernel checker runs."""

    m: int
    n: int
    k: int
    a_format: str = "nvfp4"
    b_format: str = "nvfp4"
    overlap: bool = False
    num_clusters: int | None = None  # None: one cluster per tile

    @property
    def label(self) -> str:
        clusters = "one cluster per tile" if self.num_clusters is None else f"{self.num_clusters} cluster(s)"
        return (f"{self.a_format} x {self.b_format} {self.m}x{self.n}x{self.k}, overlap "
                f"{'on' if self.overlap else 'off'}, {clusters}")


def check_kernel(exercise: str, kernel, cases: tuple[Case, ...], hint: str, *, quiet: bool = False,
                 extra=None) -> Verdict:
    """PASS when ``kernel`` has no hazard, no deadlock and a right C for every case and interleaving (and
    ``extra(result, case)``, when given, finds nothing to say about a run)."""
    from gluon_overlap.steps.measure import make_problem, run_step

    if not hasattr(kernel, "fn"):
        return verdict(exercise, False, f"expected a @gluon.jit kernel, got {type(kernel).__name__}", quiet=quiet)
    runs = 0
    for case in cases:
        problem = make_problem(case.m, case.n, case.k, case.a_format, case.b_format)
        for seed, bias in INTERLEAVINGS:
            try:
                result = run_step(kernel, problem, overlap=case.overlap, num_clusters=case.num_clusters, seed=seed,
                                  completion_bias=bias)
            except Exception as exc:  # a learner's edit may not even trace: report it in one line
                return verdict(exercise, False, f"{case.label}: the executor refused the kernel: "
                               f"{type(exc).__name__}: {exc}", quiet=quiet)
            runs += 1
            where = f"{case.label}, seed {seed}"
            if result.run.error:
                return verdict(exercise, False, f"{where}: the kernel stopped with an error: {result.run.error}",
                               quiet=quiet)
            if result.run.deadlock is not None:
                lines = str(result.run.deadlock).strip().splitlines()
                first = lines[1].strip() if len(lines) > 1 else lines[0]
                return verdict(exercise, False, f"{where}: deadlock ({first}). Hint: {hint}", quiet=quiet)
            if result.run.hazards:
                h = result.run.hazards[0]
                line = f" at kernel line {h.line}" if getattr(h, "line", None) else ""
                return verdict(exercise, False, f"{where}: {len(result.run.hazards)} hazard(s), the first: {h.kind}"
                               f"{line}: {h.detail}. Hint: {hint}", quiet=quiet)
            wrong = result.wrong_tiles()
            if wrong:
                return verdict(exercise, False, f"{where}: C is wrong in tile(s) {wrong} (no hazard was reported). "
                               f"Hint: {hint}", quiet=quiet)
            complaint = extra(result, case) if extra is not None else None
            if complaint:
                return verdict(exercise, False, f"{where}: {complaint}", quiet=quiet)
    return verdict(exercise, True, f"{runs} runs ({len(cases)} problems x {len(INTERLEAVINGS)} interleavings): "
                   "no hazard, no deadlock, C matches the float reference.", quiet=quiet)
