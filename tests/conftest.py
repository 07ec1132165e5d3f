"""Shared test set-up: deterministic environment, no machine paths, a cache for compiled kernels."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
os.environ.setdefault("TRITON_CACHE_DIR", str(ROOT / ".cache" / "triton"))
os.environ.setdefault("MPLBACKEND", "Agg")
# every test simulates the timing model (the disk cache of runs is tested on its own: tests/test_run_cache.py)
os.environ["GLUON_OVERLAP_MODEL_CACHE"] = "off"

# Property tests: no per-example deadline (CI shares 2 cores), and in CI a fixed example sequence so a
# run is reproducible; locally each run explores new examples.
settings.register_profile("gluon-overlap", deadline=None, derandomize=bool(os.environ.get("CI")))
settings.load_profile("gluon-overlap")


#: Long sweeps that `make test` leaves to `make test-slow` (CI runs them after `make test` when time is left).
#: Each still catches something, so none is dropped; each is a longer version of what the fast tests check:
SLOW_TESTS = {
    # five harmless kernel edits x 30 interleavings each: a false-positive guard of the race detector
    "tests/test_mutations.py::test_harmless_edit_stays_clean",
    # nvfp4 over 200 interleavings (170 s on a loaded 2-core machine); tests/test_sweeps_fast.py runs 12 of them
    "tests/test_twin.py::test_200_seed_sweep_is_clean",
}


def pytest_collection_modifyitems(config, items):
    """Mark the tests of :data:`SLOW_TESTS` (by node id, parameters ignored) with ``slow``."""
    import pytest

    for item in items:
        if item.nodeid.split("[", 1)[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


def pytest_configure(config):
    # keep pytest's summary the last thing printed (Triton's bindings report false "leaks" at exit)
    from gluon_overlap._nanobind import quiet_leak_report_at_exit

    quiet_leak_report_at_exit()
