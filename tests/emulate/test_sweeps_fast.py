"""The fast counterparts of the long sweeps that ``make test`` leaves to ``make test-slow`` (tests/conftest.py's
``SLOW_TESTS``): the same property over fewer interleavings, so the default run still checks it."""

from __future__ import annotations

from gluon_overlap.emulate.runs import SWEEP_BIASES, sweep
from gluon_overlap.formats import random_problem

M, N, K = 512, 768, 512  #: tests/emulate/test_runs.py's problem: 2 x 3 tiles, 4 K steps
CLUSTERS = 2


def test_nvfp4_is_clean_under_twelve_interleavings():
    """tests/emulate/test_runs.py::test_200_seed_sweep_is_clean over 12 seeds: each completion bias four times."""
    res = sweep(random_problem(M, N, K, "nvfp4", "nvfp4", seed=11), 12, overlap=True, clusters=CLUSTERS)
    assert res.seeds == 12 and res.ok, res.summary()
    assert (res.hazard_runs, res.deadlock_runs, res.wrong_c_runs, res.first_failure) == (0, 0, 0, None)
    assert res.summary()["biases"] == list(SWEEP_BIASES)
