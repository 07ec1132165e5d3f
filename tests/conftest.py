"""Shared test set-up: deterministic environment, no machine paths, a cache for compiled kernels."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
os.environ.setdefault("TRITON_CACHE_DIR", str(ROOT / ".cache" / "triton"))
os.environ.setdefault("MPLBACKEND", "Agg")

# Property tests: no per-example deadline (CI shares 2 cores), and in CI a fixed example sequence so a
# run is reproducible; locally each run explores new examples.
settings.register_profile("gluon-overlap", deadline=None, derandomize=bool(os.environ.get("CI")))
settings.load_profile("gluon-overlap")


def pytest_configure(config):
    # keep pytest's summary the last thing printed (Triton's bindings report false "leaks" at exit)
    from gluon_overlap._nanobind import quiet_leak_report_at_exit

    quiet_leak_report_at_exit()
