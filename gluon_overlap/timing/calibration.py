"""One MMA kind's tensor efficiency solved from the *single-buffered* published results (NOTES.md):
:func:`calibrate_tensor_efficiency` and its range, :func:`efficiency_range`.  The fit of the overlap kernel's
unpinned parameters is :mod:`gluon_overlap.timing.fit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gluon_overlap.hardware import Hardware
from gluon_overlap.timing import costs
from gluon_overlap.timing.model import predict

#: the published single-buffered 2-CTA results (NOTES.md): (format, M=N=K) -> TFLOP/s
PUBLISHED_SINGLE_BUFFERED = {
    ("mxfp8", 8192): 2895.0,
    ("mxfp8", 16384): 2755.0,
    ("nvfp4", 8192): 5730.0,
    ("nvfp4", 16384): 5562.0,
}


def _with_efficiency(hw: Hardware, rate_class: str, eta: float) -> Hardware:
    return hw.scaled(**{f"tensor_efficiency_{rate_class}": eta})


def calibration_error(hw: Hardware, fmt: str) -> dict[int, float]:
    """Relative error (model / published - 1) of the single-buffered model at each published size."""
    out = {}
    for (f, size), published in PUBLISHED_SINGLE_BUFFERED.items():
        if f == fmt:
            out[size] = predict(hw, fmt, fmt, size, size, size, overlap=False).tflops / published - 1.0
    return out


def calibrate_tensor_efficiency(hw: Hardware, fmt: str, tol: float = 1e-4) -> float:
    """Solve ``tensor_efficiency`` of ``fmt``'s MMA kind from the single-buffered published results.

    Minimises the worst |log model - log published| over the published sizes (judged on every size, not on
    their sum: a least-squares optimum may leave one size far off to fit the other closely) by golden-section
    search in ``(0.3, 1]``; only overlap-*off* runs are used, so the overlap gain is never fitted.
    """
    cls = costs.rate_class(fmt, fmt)

    def loss(eta: float) -> float:
        errs = calibration_error(_with_efficiency(hw, cls, eta), fmt).values()
        return max(abs(math.log1p(e)) for e in errs)

    return _golden(loss, 0.3, 1.0, tol)


def efficiency_range(hw: Hardware, fmt: str, tol: float = 1e-4) -> tuple[float, float]:
    """The tensor efficiency solved from each published single-buffered size *alone*: the spread between the
    sizes is what the one-number calibration cannot explain, so it is the calibrated value's plausible range."""
    cls = costs.rate_class(fmt, fmt)
    sizes = sorted(size for f, size in PUBLISHED_SINGLE_BUFFERED if f == fmt)
    solved = []
    for size in sizes:

        def loss(eta: float, size: int = size) -> float:
            variant = _with_efficiency(hw, cls, eta)
            model = predict(variant, fmt, fmt, size, size, size, overlap=False).tflops
            return math.log(model / PUBLISHED_SINGLE_BUFFERED[(fmt, size)]) ** 2

        solved.append(_golden(loss, 0.3, 1.0, tol))
    return min(solved), max(solved)


def _golden(loss: Callable[[float], float], lo: float, hi: float, tol: float) -> float:
    """The minimum of a unimodal ``loss`` on ``[lo, hi]`` by golden-section search, to within ``tol``."""
    g = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = loss(x1), loss(x2)
    while hi - lo > tol:
        if f1 < f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = loss(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = loss(x2)
    return (lo + hi) / 2
