"""Shared test set-up: deterministic environment, no machine paths, a cache for compiled kernels."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
#: the tests' shared helpers (kernels, mutants, servers, cross-compiling) import by name from any test folder
sys.path.insert(0, str(Path(__file__).resolve().parent / "support"))

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
os.environ.setdefault("TRITON_CACHE_DIR", str(ROOT / ".cache" / "triton"))
os.environ.setdefault("MPLBACKEND", "Agg")
# every test simulates the timing model (the disk cache of runs is tested on its own: tests/timing/test_run_cache.py)
os.environ["GLUON_OVERLAP_MODEL_CACHE"] = "off"
# One torch thread per test process (and the processes it starts: CLI runs, notebook kernels, servers): the xdist
# workers already take every core, and torch's intra-op threads then only wait on each other -- measured on 2 busy
# cores, a torch.allclose of one 256 x 256 tile took 70 ms with 2 threads and 4.5 ms with 1, and
# tests/core/test_steps.py 41 s of CPU instead of 25 (benchmarks/suite_times.py). Results do not depend on it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
if "torch" in sys.modules:  # imported before this file (a plugin): the variable came too late for it
    sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

# Property tests: no per-example deadline (CI shares 2 cores), and in CI a fixed example sequence so a
# run is reproducible; locally each run explores new examples.
settings.register_profile("gluon-overlap", deadline=None, derandomize=bool(os.environ.get("CI")))
settings.load_profile("gluon-overlap")


#: Long sweeps that `make test` leaves to `make test-slow` (CI runs them after `make test` when time is left).
#: Each still catches something, so none is dropped; each is a longer version of what the fast tests check:
SLOW_TESTS = {
    # five harmless kernel edits x 30 interleavings each: a false-positive guard of the race detector
    "tests/emulate/test_mutations.py::test_harmless_edit_stays_clean",
    # nvfp4 over 200 interleavings (170 s on a loaded 2-core machine); tests/emulate/test_sweeps_fast.py runs 12 of them
    "tests/emulate/test_runs.py::test_200_seed_sweep_is_clean",
    # the ping-pong figure's drained / next boxes at all 142 steps of a 32-subtile drain (one figure per step,
    # 15 s); make test checks every step of the five other configurations and this one's first and last two
    # drain steps per tile (test_ping_pong_boxes_mark_the_drained_and_the_next_subtile)
    "tests/core/test_plots_tmem.py::test_ping_pong_boxes_at_every_step_of_the_finest_drain",
}


#: The end-to-end layer (marked ``e2e``): files that run the whole kernel on the interpreter, start the CLI as a
#: process, cross-compile kernels, build the wheel or drive a browser.  ``make test-fast`` runs the rest: the unit
#: layer, seconds per file.  Notebooks (nbval) are end to end too.
E2E_DIRS = ("tests/emulate/", "tests/cli/")
E2E_FILES = {
    "tests/core/test_compile.py",
    "tests/core/test_steps.py",
    "tests/core/test_kernel.py",
    "tests/interp/test_interp_idioms.py",
    "tests/interp/test_interp_review.py",
    "tests/interp/test_precheck.py",
    "tests/interp/test_precheck_schedules.py",
    "tests/interp/test_verdict_cache.py",
    "tests/notebooks/test_browser_explorer.py",
    "tests/notebooks/test_exercises.py",
    "tests/notebooks/test_writing_exercises.py",
    "tests/notebooks/test_explorer.py",
    "tests/project/test_packaging.py",
    "tests/project/test_readme_and_make.py",
    "tests/timing/test_roles.py",
    "tests/timing/test_recordings.py",
    "tests/timing/test_step_predictions.py",
    "tests/timing/test_kernel_costs.py",
    "tests/timing/test_fit.py",
    "tests/timing/test_timing.py",
}


def is_end_to_end(nodeid: str) -> bool:
    name = _file_of(nodeid)
    return name.endswith(".ipynb") or name.startswith(E2E_DIRS) or name in E2E_FILES


#: Seconds per test file (setup + call + teardown, summed; one of 2 busy cores), measured on a fresh clone (a cold
#: Triton cache: the compiling files are long): where the last run left no record in pytest's cache (a fresh
#: clone, CI), `make test` starts the longest units of work first by these.
#: Only their order matters; files not named here come after them, in collection order.
FILE_SECONDS_GUESS = {
    "tests/core/test_steps.py": 128,
    "tests/notebooks/test_wrong_answers.py": 120,
    "tests/notebooks/test_browser_explorer.py": 120,
    "tests/emulate/test_runs.py": 62,
    "tests/notebooks/test_writing_exercises.py": 59,
    "notebooks/05-warp-specialized-kernel.ipynb": 57,
    "notebooks/06-emulating-the-protocol.ipynb": 55,
    "tests/core/test_compile.py": 50,
    "notebooks/05b-building-the-overlap.ipynb": 40,
    "tests/emulate/test_reliability.py": 37,
    "tests/project/test_typing.py": 35,  # mypy from an empty cache (a fresh clone); 1 s once .cache/mypy holds it
    "tests/notebooks/test_explorer.py": 33,
    "tests/emulate/test_mutations.py": 31,
    "tests/timing/test_roles.py": 30,
    "notebooks/03b-launching-the-kernel.ipynb": 25,
    "notebooks/04-overlapping-accumulators.ipynb": 23,
    "tests/cli/test_fuzz_cli.py": 18,
    "tests/interp/test_verdict_cache.py": 18,
    "notebooks/03a-single-buffered-kernel.ipynb": 15,
    "tests/project/test_packaging.py": 14,
    "notebooks/07-performance.ipynb": 14,
    "notebooks/07b-testing-the-model.ipynb": 6,
    "notebooks/07c-deciding-the-fp4-cells.ipynb": 3,
    "tests/interp/test_precheck.py": 14,
    "tests/timing/test_kernel_costs.py": 14,
    "tests/timing/test_timing.py": 13,
    "notebooks/01-quantized-tensors.ipynb": 13,
    "tests/emulate/test_pingpong.py": 12,
    "notebooks/02-scale-swizzling.ipynb": 11,
    "tests/test_timing_plots.py": 10,
    "tests/emulate/test_kernel_anchors.py": 10,
    "tests/notebooks/test_exercises.py": 15,
    "tests/core/test_plots_tmem.py": 10,
    "tests/timing/test_recordings.py": 9,
    "tests/interp/test_interp_idioms.py": 8,
    "tests/timing/test_run_cache.py": 8,
    "notebooks/08-appendix-compile-evidence.ipynb": 8,
    "tests/timing/test_fit.py": 7,
}
#: where the measured seconds per file of the last run are kept (pytest's cache, ``.pytest_cache``)
FILE_SECONDS_KEY = "gluon-overlap/file-seconds"

#: Files that compile the same kernels, in the order they run: under xdist each group is one unit of work (one
#: worker, one file after the other), so the later files find those kernels in Triton's cache. Run at the same
#: moment on two workers, both compiled each kernel from cold (measured on a fresh clone: 10 kernels, 91 s of
#: CPU on a 2-core machine that has none to spare). One group: the seed kernel's variants (format pair x
#: overlap) are shared by the first seven, the step kernels by test_steps, 03b and 04, the writing exercises'
#: spliced solutions by test_writing_exercises and the kernels the notebooks' checks compile (03a-05b).
SHARED_COMPILES = (
    (
        "tests/core/test_compile.py",
        "notebooks/08-appendix-compile-evidence.ipynb",
        "notebooks/05-warp-specialized-kernel.ipynb",
        "tests/timing/test_kernel_costs.py",
        "tests/timing/test_roles.py",
        "tests/notebooks/test_exercises.py",
        "tests/cli/test_fuzz_cli.py",
        "tests/core/test_steps.py",
        "notebooks/03b-launching-the-kernel.ipynb",
        "notebooks/04-overlapping-accumulators.ipynb",
        "tests/notebooks/test_writing_exercises.py",
        "notebooks/03a-single-buffered-kernel.ipynb",
        "notebooks/05b-building-the-overlap.ipynb",
    ),
)
_GROUP_OF = {name: group[0] for group in SHARED_COMPILES for name in group}
_PLACE_IN_GROUP = {name: index for group in SHARED_COMPILES for index, name in enumerate(group)}


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the first file of its :data:`SHARED_COMPILES` group."""
    name = _file_of(nodeid)
    return _GROUP_OF.get(name, name)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: no error where it is not installed
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, with the files of a :data:`SHARED_COMPILES` group as one unit of work."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedCompileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit_of(nodeid)

    return SharedCompileScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """Mark the tests of :data:`SLOW_TESTS` (by node id, parameters ignored) with ``slow``, and put the
    longest units of work first (longest-first keeps parallel workers finishing together: with ``--dist
    loadfile`` a long file handed out last is run alone at the end); a unit is a file, or the files of a
    :data:`SHARED_COMPILES` group, in the group's order. Within a file the order is kept (a notebook's
    cells run in order). Every worker computes the same order from the same record."""
    for item in items:
        if item.nodeid.split("[", 1)[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if is_end_to_end(item.nodeid):
            item.add_marker(pytest.mark.e2e)
    seconds = dict(FILE_SECONDS_GUESS)
    seconds.update({name: entry[0] for name, entry in _recorded(config).items()})
    unit_seconds: dict[str, float] = {}
    unit_first_seen: dict[str, int] = {}
    for index, name in enumerate(dict.fromkeys(_file_of(item.nodeid) for item in items)):
        unit = _unit_of(name)
        unit_seconds[unit] = unit_seconds.get(unit, 0.0) + seconds.get(name, 0.0)
        unit_first_seen.setdefault(unit, index)

    def order(item):
        name = _file_of(item.nodeid)
        unit = _unit_of(name)
        return -unit_seconds[unit], unit_first_seen[unit], _PLACE_IN_GROUP.get(name, 0)

    items.sort(key=order)


def _recorded(config) -> dict[str, list[float]]:
    """The last full runs' record: test file -> [seconds, tests], or nothing without pytest's cache."""
    cache = getattr(config, "cache", None)
    record = cache.get(FILE_SECONDS_KEY, {}) if cache is not None else {}
    if not isinstance(record, dict):
        return {}
    return {
        name: entry
        for name, entry in record.items()
        if isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, (int, float)) for x in entry)
    }


_seconds: dict[str, float] = {}
_tests: dict[str, set[str]] = {}


def pytest_runtest_logreport(report):
    """Add up each file's seconds (in the controlling process, reports come from every worker)."""
    name = _file_of(report.nodeid)
    _seconds[name] = _seconds.get(name, 0.0) + report.duration
    _tests.setdefault(name, set()).add(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    """Record this run's seconds per file for the next run's order: only for a file that ran (about) all
    the tests it had when last recorded, so a run of a few tests (``-k``, one node id, ``-m slow``) does
    not make a long file look short. Not from xdist workers: the controller has every report."""
    cache = getattr(session.config, "cache", None)
    if cache is None or hasattr(session.config, "workerinput") or not _seconds:
        return
    record = dict(_recorded(session.config))
    for name, seconds in _seconds.items():
        tests = len(_tests[name])
        before = record.get(name)
        if not before or tests >= 0.9 * before[1]:
            record[name] = [round(seconds, 1), tests]
    cache.set(FILE_SECONDS_KEY, record)
