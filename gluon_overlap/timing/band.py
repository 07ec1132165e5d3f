"""The band around a prediction: each uncertainty group of the hardware description at its fast and slow corner.

:func:`band` moves every group of :data:`BAND_GROUPS` to the fast and the slow end of its (post-fit) ranges, off and
on together, takes the larger deviation below and above the nominal per group, combines the groups in quadrature and
adds the calibration's own scatter (:func:`post_fit_scatter`).  :data:`BAND_METHOD` says it in one sentence.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

from gluon_overlap.hardware import DATA_DIR, GROUPS, LOWER_IS_FASTER, Hardware
from gluon_overlap.timing import costs
from gluon_overlap.timing.model import headline, predict

#: the values the fit solves (:mod:`gluon_overlap.timing.fit`): one band group, over their post-fit ranges
FITTED_GROUP = (
    "epilogue_cost_factor",
    "tensor_efficiency_fp8",
    "tensor_efficiency_fp4",
    "hbm_write_efficiency",
    "mbarrier_remote_clk",
)
#: the band's uncertainty groups, after the fit; each moves to the fast and the slow end of its parameters' ranges.
#: ``fitted``: the values the published B300 tables pin, over their post-fit ranges; ``memory`` (with
#: ``l2_store_load_sharing``, which the tables cannot pin) and ``sync``: estimates over
#: their prior ranges, with the fitted values *refitted* at each corner where the description holds such a refit
#: (``post_fit_corners``), and the corner pulled in as far as the measurements require.  The FP4 rate per FP8 rate is
#: no group: the B300 mxfp4 rows pin its product with ``tensor_efficiency_fp4`` (and on sm_100 it is the vendor FP4
#: peak).  The epilogue's per-instruction estimates are not a group either: the fitted ``epilogue_cost_factor``
#: scales their sum, which is what the data pin.
BAND_GROUPS: dict[str, tuple[str, ...]] = {
    "fitted": FITTED_GROUP,
    "memory": tuple(n for n in GROUPS["memory"] if n not in FITTED_GROUP),
    "sync": tuple(n for n in GROUPS["sync"] if n not in FITTED_GROUP),
}
BAND_METHOD = (
    "each uncertainty group moved to the fast and the slow end of its parameters' ranges (off and on "
    "share the corner); 'fitted' over the post-fit ranges, 'memory' and 'sync' with the fitted values "
    "refitted at each corner; the larger deviation of a group's two corners below and above the "
    "nominal; groups combine in quadrature; then the calibration's own scatter (the fit's residual "
    "per throughput and per gain, post_fit_scatter) is added in quadrature"
)


def _rate_specific(name: str) -> str | None:
    """``"fp8"`` / ``"fp4"`` for a parameter only that MMA rate class reads, else None."""
    for cls in ("fp4", "fp8"):  # fp4 first: ``fp4_k64_rate_per_fp8`` is an FP4-only parameter
        if name.startswith((f"{cls}_", f"peak_{cls}_")) or name.endswith(f"_{cls}") and not name.startswith("fp"):
            return cls
    return None


def band_corner(hw: Hardware, group: str, fast: bool) -> Hardware:
    """``hw`` with every parameter of band group ``group`` at the end of its range that makes the kernel faster
    (``fast``) or slower, and the fitted values the description refitted for that corner."""
    if group not in BAND_GROUPS:
        raise ValueError(f"group={group!r} is not one of {sorted(BAND_GROUPS)}")
    side = f"{group}-{'fast' if fast else 'slow'}"
    changes: dict[str, Any] = {}  # keyword arguments of replace(): parameters of the group
    for name in BAND_GROUPS[group]:
        lo, hi = hw.value_range(name)
        changes[name] = lo if (name in LOWER_IS_FASTER) == fast else hi
    # where the description holds a refit of this corner, the data-consistent corner replaces the prior's ends
    changes.update(post_fit_corners(hw.name).get(side, {}))
    return replace(hw, name=f"{hw.name}-{side}", **changes)


def post_fit_corners(gpu: str) -> dict[str, dict[str, float]]:
    """The refitted values of a description's band corners (its ``post_fit_corners``; empty if none)."""
    if gpu not in _POST_FIT:
        path = DATA_DIR / f"{gpu}.json"
        raw = json.loads(path.read_text()) if path.is_file() else {}
        _POST_FIT[gpu] = {side: dict(v["values"]) for side, v in raw.get("post_fit_corners", {}).items()}
    return _POST_FIT[gpu]


_POST_FIT: dict[str, dict[str, dict[str, float]]] = {}


def post_fit_scatter(gpu: str) -> dict[str, float]:
    """The calibration's residual scatter a description carries (``post_fit_scatter``: ``speedup_pp``, the rms
    in-sample gain error over ``n - p`` degrees of freedom, and ``tflops_rel``, the residual of one log throughput);
    empty if it has none (a what-if variant)."""
    if gpu not in _SCATTER:
        path = DATA_DIR / f"{gpu}.json"
        raw = json.loads(path.read_text()) if path.is_file() else {}
        _SCATTER[gpu] = {
            k: float(v) for k, v in raw.get("post_fit_scatter", {}).items() if k in ("speedup_pp", "tflops_rel")
        }
    return _SCATTER[gpu]


_SCATTER: dict[str, dict[str, float]] = {}


def band_groups_for(a_format: str, b_format: str) -> list[str]:
    """The band groups that matter for a pair: those with a parameter its MMA rate class reads."""
    cls = costs.rate_class(a_format, b_format)
    return [g for g, names in BAND_GROUPS.items() if any(_rate_specific(n) in (None, cls) for n in names)]


def band(
    hw: Hardware, a_format: str, b_format: str, m: int, n: int, k: int, nominal: dict[str, float] | None = None
) -> dict:
    """How far the headline numbers move when the uncertain parameters move within their post-fit ranges.

    Every band group (:data:`BAND_GROUPS`) that matters for the pair is moved to its fast and its slow corner
    (:func:`band_corner`; the off and on runs share the corner, so the speedup sees correlated costs).  A group's
    deviation below and above the nominal is the larger of its two corners'; independent groups combine in
    quadrature, and so is the calibration's residual scatter (:func:`post_fit_scatter`).  Returns ``{quantity:
    [lo, hi]}`` for ``tflops_off``, ``tflops_on`` and ``speedup_pct``, under ``"by_group"`` every corner's numbers
    and under ``"scatter"`` the scatter used."""
    if nominal is None:
        nominal = headline(
            predict(hw, a_format, b_format, m, n, k, False), predict(hw, a_format, b_format, m, n, k, True)
        )

    by_group: dict[str, dict[str, dict[str, float]]] = {}
    below = {q: 0.0 for q in nominal}
    above = {q: 0.0 for q in nominal}
    for group in band_groups_for(a_format, b_format):
        corners = {}
        for fast in (True, False):
            c = band_corner(hw, group, fast)
            corners["fast" if fast else "slow"] = headline(
                predict(c, a_format, b_format, m, n, k, False, check=False),
                predict(c, a_format, b_format, m, n, k, True, check=False),
            )
        by_group[group] = corners
        for q, v in nominal.items():
            lo = min(cv[q] for cv in corners.values())
            hi = max(cv[q] for cv in corners.values())
            below[q] += max(0.0, v - lo) ** 2
            above[q] += max(0.0, hi - v) ** 2
    # the calibration's residual scatter: what the fitted model misses of the published rows it was fitted to
    scatter = post_fit_scatter(hw.name)
    for q, v in nominal.items():
        s = scatter.get("speedup_pp", 0.0) if q == "speedup_pct" else scatter.get("tflops_rel", 0.0) * v
        below[q] += s**2
        above[q] += s**2
    out: dict = {q: [v - math.sqrt(below[q]), v + math.sqrt(above[q])] for q, v in nominal.items()}
    out["by_group"] = by_group
    out["scatter"] = dict(scatter)
    return out
