"""A pytest plugin for benchmarks/suite_times.py: wall and CPU seconds per test file, written as JSON.

Load it with ``-p _pytest_cpu`` (benchmarks/ on the path) and name the output with ``PYTEST_CPU_JSON``. Per file:
wall seconds (first test's start to last test's end, set-up and tear-down included), this process's CPU seconds
over that span, and the CPU seconds of the child processes reaped meanwhile (servers, kernels, compiler runs,
CLI runs), and per test the wall seconds of set-up + call + tear-down. The CPU time is what a shared, loaded
machine does not distort much; wall time it does.
"""

from __future__ import annotations

import json
import os
import resource
import time

import pytest

_files: dict[str, dict[str, float]] = {}
_tests: dict[str, float] = {}
_current: list = [None, 0.0, 0.0, 0.0]  # file, wall start, self CPU start, children CPU start


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _close_file() -> None:
    name, wall, own, children = _current
    if name is None:
        return
    entry = _files.setdefault(name, {"wall_s": 0.0, "cpu_s": 0.0, "children_cpu_s": 0.0, "tests": 0})
    entry["wall_s"] += time.monotonic() - wall
    entry["cpu_s"] += _cpu(resource.RUSAGE_SELF) - own
    entry["children_cpu_s"] += _cpu(resource.RUSAGE_CHILDREN) - children
    _current[0] = None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    name = item.nodeid.split("::", 1)[0]
    if _current[0] != name:
        _close_file()
        _current[:] = [name, time.monotonic(), _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)]
    _files.setdefault(name, {"wall_s": 0.0, "cpu_s": 0.0, "children_cpu_s": 0.0, "tests": 0})["tests"] += 1


def pytest_runtest_logreport(report):
    _tests[report.nodeid] = _tests.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    _close_file()
    out = os.environ.get("PYTEST_CPU_JSON")
    if not out:
        return
    if hasattr(session.config, "workerinput"):
        out = f"{out}.{session.config.workerinput['workerid']}"
    with open(out, "w") as f:
        json.dump({"files": _files, "tests": _tests}, f, indent=1)
