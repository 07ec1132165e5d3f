"""Record the kernel's own ping-pong for the explorer: the executor runs ``gluon_overlap/kernel.py``.

For every configuration the explorer can draw (every one ``plan`` accepts from the explorer's menus,
:func:`recorded_configs`), one timed run of the real kernel on the CPU executor (one cluster, eight
tiles, :data:`~gluon_overlap.emulate.runs.UNIT_COSTS` as durations) is reduced to the operations that
make the ping-pong -- the MMA partition's waits on ``acc_empty`` and ``overlap``, its MMAs and its
commit to ``acc_ready``; the epilogue's wait on ``acc_ready``, its TMEM loads and its arrivals on
``overlap`` and ``acc_empty`` -- of the lead CTA, each with the kernel line that issued it (function
and text, so that a comment or a blank line added to ``kernel.py`` does not change the data).

:func:`write_shipped` writes them to ``gluon_overlap/data/ping_pong.json``, which the torch-free
:mod:`gluon_overlap.pingpong` reads; ``tests/emulate/test_pingpong.py`` re-records and compares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gluon_overlap import limits
from gluon_overlap.emulate.config import KernelConfig
from gluon_overlap.emulate.runs import UNIT_COSTS, run_config
from gluon_overlap.formats import random_problem
from gluon_overlap.pingpong import DATA_FILE, EVENT_FIELDS, NUM_TILES, config_key, normalized_line
from gluon_overlap.tmem import TmemPlan

#: the ops kept, by (partition, kind)
_KEPT = {
    ("mma", "wait"),
    ("mma", "mma"),
    ("mma", "commit"),
    ("epilogue", "wait"),
    ("epilogue", "tmem_load"),
    ("epilogue", "arrive"),
}
_PROTOCOL_BARRIERS = ("acc_empty", "acc_ready", "overlap")


def recorded_configs() -> list[TmemPlan]:
    """Every configuration the explorer's menus offer that ``plan`` accepts (one plan each)."""
    plans = []
    for a, b in limits.SUPPORTED_PAIRS:
        for block_k in limits.BLOCK_K_MENU:
            for epi in limits.EPILOGUE_BLOCK_N_MENU:
                for overlap in (True, False):
                    if limits.config_refusal(a, b, block_k, epi, overlap) is None:
                        plans.append(limits.check_config(a, b, block_k, epi, overlap))
    return plans


def _barrier(name: str) -> tuple[str, int] | None:
    """``("acc_empty", 1)`` from ``"acc_empty[1]@cta0/cluster0"``; None for other barriers."""
    base, _, rest = name.partition("[")
    if base not in _PROTOCOL_BARRIERS:
        return None
    return base, int(rest.split("]", 1)[0])


def record(plan: TmemPlan) -> dict[str, Any]:
    """The lead CTA's ping-pong operations of one timed executor run of ``kernel.py`` for ``plan``."""

    m, n = 2 * 256, (NUM_TILES // 2) * 256  # 8 tiles, all on one cluster
    k = max(plan.block_k, limits.K_MULTIPLE)
    k += -k % limits.K_MULTIPLE
    problem = random_problem(m, n, k, plan.a_format, plan.b_format, seed=0)
    result = run_config(problem, KernelConfig(plan, m, n, k, clusters=1), timed=True, costs=dict(UNIT_COSTS))
    if not result.ok or not result.matches_reference:
        raise RuntimeError(f"the kernel's recording run of {config_key(plan)} was not clean: {result.failure}")
    lines: list[list[str]] = []
    line_ids: dict[tuple[str, str], int] = {}
    events = []
    for op in result.trace:
        if op.cta != 0 or op.cluster != 0 or (op.partition, op.kind) not in _KEPT:
            continue
        d = op.details()
        ev: dict[str, Any] = {
            "partition": op.partition,
            "kind": op.kind,
            "tile": op.local,
            "start": op.t_start,
            "end": op.t_end,
        }
        if op.kind in ("wait", "arrive"):
            bar = _barrier(d["barrier"])
            if bar is None:
                continue
            ev["barrier"], ev["index"] = bar
            if op.kind == "wait":
                ev["phase"] = d["phase"]
        elif op.kind == "commit":
            bars = [_barrier(b) for b in d["barriers"]]
            if not bars or bars[0] is None or bars[0][0] != "acc_ready":
                continue
            ev["barrier"], ev["index"] = bars[0]
        else:
            ev["columns"] = list(d["columns"])
            if op.kind == "mma":
                ev["kstep"] = d["kstep"]
        if op.line is not None:
            key = (op.line.function, normalized_line(op.line.text))
            if key not in line_ids:
                line_ids[key] = len(lines)
                lines.append(list(key))
            ev["line"] = line_ids[key]
        events.append([ev.get(f) for f in EVENT_FIELDS])
    return {"m": m, "n": n, "k": k, "lines": lines, "events": events}


def record_all(plans: list[TmemPlan] | None = None) -> dict[str, Any]:
    plans = recorded_configs() if plans is None else plans
    return {
        "note": "the lead CTA's ping-pong operations of gluon_overlap/kernel.py, recorded by the CPU interpreter "
        "(one cluster, 8 tiles, emulate.runs.UNIT_COSTS) by gluon_overlap.emulate.pingpong_record."
        "write_shipped() (python -m gluon_overlap.regenerate ping-pong); checked against a fresh recording "
        "by tests/emulate/test_pingpong.py",
        "event_fields": list(EVENT_FIELDS),
        "time_unit": "UNIT_COSTS (an MMA K step takes 4, a TMEM load of one subtile 1)",
        "configs": {config_key(p): record(p) for p in plans},
    }


def write_shipped(path: Path = DATA_FILE) -> Path:
    """Record every explorer configuration and write the package data file."""
    data = record_all()
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    return path
