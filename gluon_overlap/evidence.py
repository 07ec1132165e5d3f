"""The compiled kernel checked against the TMEM plan and the CPU interpreter's recording of the same kernel.

The compiled artifacts (:mod:`gluon_overlap.compiler.compile`, read by :mod:`gluon_overlap.compiler.artifacts`) show
the TMEM column offsets, the epilogue's drain orders and which barrier each release arrives on; :func:`evidence_checks`
compares them with what the plan (:class:`gluon_overlap.tmem.TmemPlan`) says and with the roles the interpreter's
recording of ``kernel.py`` gives its barriers (:func:`gluon_overlap.timing.streams.drain_arrive_roles`).  This
module sits above both: neither the compiler nor the recording imports the other.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from gluon_overlap.compiler.artifacts import TmemEvidence
from gluon_overlap.compiler.compile import NUM_CTAS, CompiledVariant, expected_mma_kind, plan_offsets
from gluon_overlap.limits import SMEM_PER_CTA_LIMIT
from gluon_overlap.timing.streams import drain_arrive_roles as recorded_drain_arrive_roles
from gluon_overlap.tmem import TmemPlan


def plan_evidence(plan: TmemPlan) -> TmemEvidence:
    """What :func:`ttgir_tmem_evidence` should find for ``plan`` -- the expectation, from the plan."""
    last_step = plan.num_subtiles - 1
    arrives = (plan.early_release_subtile, last_step) if plan.overlap else (last_step,)
    barriers = drain_arrive_roles(plan)
    offsets = plan_offsets(plan)
    return TmemEvidence(
        tuple(offsets["accumulators"]),
        tuple(offsets["a_scale"]),
        tuple(offsets["b_scale"]),
        tuple(plan.drain_order(0)),
        tuple(plan.drain_order(1)),
        arrives,
        barriers,
    )


@functools.lru_cache(maxsize=32)
def drain_arrive_roles(plan: TmemPlan) -> tuple[str, ...]:
    """What the epilogue's arrives of one tile should find, learnt from the CPU executor's recording of the kernel
    (:func:`gluon_overlap.timing.streams.drain_arrive_roles`), in the words of :meth:`TtgirBarriers.role`."""
    return tuple(
        f"{'the MMA waits on it' if gate else 'the MMA does not wait on it'}, array of {count}"
        for gate, count in recorded_drain_arrive_roles(plan)
    )


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
    plan, ev, st = compiled.plan, compiled.evidence, compiled.stats
    want = plan_evidence(plan)

    def check(name: str, expected: object, found: object, ok: bool | None = None) -> dict:
        return {"name": name, "expected": expected, "found": found, "ok": bool(expected == found if ok is None else ok)}

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
        check(
            "shared_memory_fits_a_cta",
            f"<= {SMEM_PER_CTA_LIMIT}",
            st.shared_bytes,
            st.shared_bytes <= SMEM_PER_CTA_LIMIT,
        ),
    ]


def matches_plan(checks: list[dict]) -> bool:
    """True when every TMEM check (offsets, drain orders, releases) passed."""
    return all(c["ok"] for c in checks if c["name"].startswith(("tmem_a", "tmem_b", "tmem_acc", "drain_", "release_")))


def evidence_matches(evidence: TmemEvidence, plan: TmemPlan) -> bool:
    """True when offsets, drain orders and arrive points are exactly what ``plan`` prescribes."""
    return replace(evidence, pool_slice_lines=()) == plan_evidence(plan)
