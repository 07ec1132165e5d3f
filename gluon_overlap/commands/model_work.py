"""How long ``gluon-overlap model`` will take, estimated before any work, and refused past a limit.

The timing model predicts each (format pair, K) point of the table separately -- a short recorded
run of the kernel per mode, timed, plus its uncertainty band -- so the work grows with the number of
points and hardly with the problem's size (large problems are extrapolated from a truncated run).
:data:`SECONDS_PER_POINT` is that cost per point measured on a 2-core CPU (``benchmarks/model_sweep.py``
measures it), :data:`START_SECONDS` the start-up.
"""

from __future__ import annotations

from collections.abc import Sequence

START_SECONDS = 3.0  #: importing torch and the executor, loading the hardware description
SECONDS_PER_POINT = 1.5  #: one (pair, K) row: overlap off and on, with the band
MODEL_SECONDS_LIMIT = 180.0  #: ``model`` may take about this long; more points are refused


def model_seconds(ks: Sequence[int], pairs: Sequence[tuple[str, str]]) -> float:
    """Estimated seconds of ``model`` for these K values and pairs."""
    return START_SECONDS + SECONDS_PER_POINT * len(ks) * len(pairs)


def check_model_work(ks: Sequence[int], pairs: Sequence[tuple[str, str]]) -> float:
    """The estimate; ``ValueError`` with it (and how many K values fit) past :data:`MODEL_SECONDS_LIMIT`."""
    seconds = model_seconds(ks, pairs)
    if seconds > MODEL_SECONDS_LIMIT:
        most = max(1, int((MODEL_SECONDS_LIMIT - START_SECONDS) / (SECONDS_PER_POINT * len(pairs))))
        raise ValueError(
            f"{len(ks)} K value(s) x {len(pairs)} format pair(s) = {len(ks) * len(pairs)} rows would "
            f"take ~{seconds / 60:.0f} min (~{SECONDS_PER_POINT:g} s a row); the limit is "
            f"{MODEL_SECONDS_LIMIT / 60:.0f} min, so at most {most} K value(s) with "
            f"{len(pairs)} pair(s)"
        )
    return seconds
