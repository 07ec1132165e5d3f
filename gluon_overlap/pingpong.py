"""The kernel's ping-pong as the CPU executor recorded it (torch-free; read by the explorer and the plots).

``gluon_overlap/data/ping_pong.json`` holds, for every configuration the explorer can draw, the lead
CTA's protocol operations of one timed run of ``gluon_overlap/kernel.py`` on the executor (written by
:mod:`gluon_overlap.emulate.pingpong_record`, re-recorded and compared by ``tests/emulate/test_pingpong.py``).
Nothing here restates the protocol: which barrier each tile waits on, with which parity, when it
returns, which columns each MMA writes and each TMEM load reads, when the overlap and ``acc_empty``
are released -- all of it is the kernel's own, with the kernel line that did it.

Times are in the illustrative units of :data:`gluon_overlap.emulate.runs.UNIT_COSTS` (an MMA K step
takes 4, a subtile's TMEM load 1): a teaching clock, not a performance model.

* :func:`recording` -- the recorded :class:`Event` list of a plan;
* :func:`schedule` -- per tile: when its waits returned, its MMA ran, its subtiles were read and it
  released the overlap (:class:`Schedule`, :class:`TileTimes`);
* :func:`steps` -- the walk, one :class:`PingPongStep` per distinct event time;
* :func:`tile_schedule` -- per tile the barriers and parities the MMA and the epilogue waited on.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from gluon_overlap.limits import config_refusal
from gluon_overlap.registry import check_int
from gluon_overlap.tmem import TmemPlan

DATA_FILE = Path(__file__).resolve().parent / "data" / "ping_pong.json"
KERNEL_FILE = Path(__file__).resolve().parent / "kernel.py"
NUM_TILES = 8  #: tiles per recording (one cluster)
#: the fields of one recorded event, in the data file's order
EVENT_FIELDS = ("partition", "kind", "tile", "start", "end", "barrier", "index", "phase", "columns", "kstep", "line")
TIME_UNIT = "units of emulate.runs.UNIT_COSTS (an MMA K step takes 4, a subtile's TMEM load 1)"


def config_key(plan: TmemPlan) -> str:
    """The recording's name for a plan, e.g. ``"nvfp4-nvfp4-k256-e32-on"``."""
    return f"{plan.a_format}-{plan.b_format}-k{plan.block_k}-e{plan.epilogue_block_n}-{'on' if plan.overlap else 'off'}"


@dataclass(frozen=True)
class KernelLine:
    """The kernel line an operation came from: function and text; ``lineno`` as found in ``kernel.py`` now."""

    function: str
    text: str

    @property
    def lineno(self) -> int:
        return _line_numbers().get((self.function, self.text), 0)

    def __str__(self) -> str:
        where = f"kernel.py:{self.lineno}" if self.lineno else "kernel.py"
        return f"{where} ({self.function}) `{self.text}`"


def normalized_line(text: str) -> str:
    """A source line without indentation, trailing comment or repeated spaces: what anchors compare, so
    that rewording a comment or re-indenting ``kernel.py`` changes no match."""
    code = text.split("#", 1)[0] if "#" in text and not text.lstrip().startswith(("'", '"')) else text
    return " ".join(code.split())


@functools.lru_cache(maxsize=1)
def _line_numbers() -> dict[tuple[str, str], int]:
    """(function, stripped text) -> first line number in ``kernel.py`` (the function a line is in: the
    last ``def`` above it)."""
    numbers: dict[tuple[str, str], int] = {}
    function = ""
    for lineno, raw in enumerate(KERNEL_FILE.read_text().splitlines(), 1):
        text = normalized_line(raw)
        if text.startswith("def "):
            function = text[4:].split("(", 1)[0]
        numbers.setdefault((function, text), lineno)
    return numbers


@dataclass(frozen=True)
class Event:
    """One recorded protocol operation of the lead CTA."""

    partition: str  #: "mma" | "epilogue"
    kind: str  #: "wait" | "mma" | "commit" | "tmem_load" | "arrive"
    tile: int  #: the cluster's local tile index
    start: float
    end: float
    barrier: str | None = None  #: "acc_empty" | "acc_ready" | "overlap"
    index: int | None = None  #: the barrier's index in its array
    phase: int | None = None  #: the parity a wait passed
    columns: tuple[int, int] | None = None  #: [start, end) TMEM columns of an MMA or a TMEM load
    kstep: int | None = None
    line: KernelLine | None = None


@functools.lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(DATA_FILE.read_text())


def recorded_keys() -> list[str]:
    return list(_data()["configs"])


@functools.lru_cache(maxsize=128)
def _events(key: str) -> tuple[Event, ...]:
    raw = _data()["configs"][key]
    lines = [KernelLine(*pair) for pair in raw["lines"]]
    out = []
    for row in raw["events"]:
        e = dict(zip(EVENT_FIELDS, row, strict=True))
        cols, line = e["columns"], e["line"]
        out.append(
            Event(
                e["partition"],
                e["kind"],
                e["tile"],
                e["start"],
                e["end"],
                e["barrier"],
                e["index"],
                e["phase"],
                tuple(cols) if cols else None,
                e["kstep"],
                None if line is None else lines[line],
            )
        )
    return tuple(out)


def recording(plan: TmemPlan) -> tuple[Event, ...]:
    """The recorded events of ``plan``; ``ValueError`` (with ``plan``'s reason) when it has none."""
    if not isinstance(plan, TmemPlan):
        raise ValueError(f"plan={plan!r} must be a gluon_overlap.tmem.TmemPlan")
    key = config_key(plan)
    if key not in _data()["configs"] or plan.block_n != 256 or plan.tmem_cols != 512:
        why = config_refusal(plan.a_format, plan.b_format, plan.block_k, plan.epilogue_block_n, plan.overlap)
        raise ValueError(
            f"no recorded ping-pong for {key}: "
            + (f"plan refuses it ({why})" if why else "the explorer's menus do not offer it")
        )
    return _events(key)


def _tiles(num_tiles: object) -> int:
    try:
        return check_int("num_tiles", num_tiles, 1, NUM_TILES + 1)
    except ValueError as exc:
        raise ValueError(f"{exc} (the recording holds tiles 0 .. {NUM_TILES - 1} of one cluster)") from None


# --- per tile ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TileTimes:
    """When tile ``tile`` was written and drained in the recorded run."""

    tile: int
    window: str  #: "left" | "right" (with overlap off, always "left": the one accumulator)
    acc_empty_at: float  #: when the MMA's acc_empty wait returned
    overlap_at: float | None  #: when the MMA's overlap wait returned (None: overlap off)
    mma_start: float
    mma_end: float  #: the commit to acc_ready
    mma_columns: tuple[int, int]
    drain_start: float  #: the first TMEM load
    subtile_ends: tuple[float, ...]  #: by drain step
    subtile_columns: tuple[tuple[int, int], ...]  #: [start, end) read by each drain step
    release: float | None  #: the arrive on the overlap barrier (None: overlap off)
    empty_at: float  #: the arrive on acc_empty (the window is free)

    @property
    def drain_end(self) -> float:
        return self.subtile_ends[-1]


@dataclass(frozen=True)
class Schedule:
    plan: TmemPlan
    tiles: tuple[TileTimes, ...]
    events: tuple[Event, ...]

    @property
    def end(self) -> float:
        return max(t.empty_at for t in self.tiles)

    def mma_idle(self) -> float:
        """Time the MMA is idle between its first start and its last end."""
        busy = sum(t.mma_end - t.mma_start for t in self.tiles)
        return self.tiles[-1].mma_end - self.tiles[0].mma_start - busy

    def mma_utilization(self) -> float:
        return sum(t.mma_end - t.mma_start for t in self.tiles) / (self.tiles[-1].mma_end - self.tiles[0].mma_start)


def _one(events: list[Event], what: str, tile: int) -> Event:
    if not events:
        raise ValueError(f"the recording has no {what} of tile {tile}")
    return events[0]


def schedule(plan: TmemPlan, num_tiles: int = 4) -> Schedule:
    """The recorded run's first ``num_tiles`` tiles (1 .. :data:`NUM_TILES`)."""
    n = _tiles(num_tiles)
    events = tuple(e for e in recording(plan) if e.tile < n)
    tiles = []
    for i in range(n):
        mine = [e for e in events if e.tile == i]

        def find(partition: str, kind: str, barrier: str | None = None, mine: list[Event] = mine) -> list[Event]:
            return [
                e
                for e in mine
                if e.partition == partition and e.kind == kind and (barrier is None or e.barrier == barrier)
            ]

        mmas = find("mma", "mma")
        loads = find("epilogue", "tmem_load")
        overlap = find("mma", "wait", "overlap")
        release = find("epilogue", "arrive", "overlap")
        first = _one(mmas, "MMA", i)
        tiles.append(
            TileTimes(
                i,
                plan.window_name(i),
                _one(find("mma", "wait", "acc_empty"), "acc_empty wait", i).end,
                overlap[0].end if overlap else None,
                first.start,
                _one(find("mma", "commit"), "commit", i).end,
                first.columns or (0, 0),
                _one(loads, "TMEM load", i).start,
                tuple(e.end for e in loads),
                tuple(e.columns or (0, 0) for e in loads),
                release[0].end if release else None,
                _one(find("epilogue", "arrive", "acc_empty"), "acc_empty arrive", i).end,
            )
        )
    return Schedule(plan, tuple(tiles), events)


@dataclass(frozen=True)
class TileStep:
    """What happens around tile ``tile`` (local index within one cluster)."""

    tile: int
    window: str
    acc_index: int
    acc_empty_phase: int  # parity the MMA passes to wait(acc_empty[acc_index])
    acc_ready_phase: int  # parity the epilogue passes to wait(acc_ready[acc_index])
    overlap_phase: int | None  # parity the MMA passes to wait(overlap); None with overlap off
    acc_empty_waits_for: str  # human description of what satisfies the acc_empty wait
    overlap_waits_for: str | None


def tile_schedule(plan: TmemPlan, num_tiles: int) -> list[TileStep]:
    """The ping-pong waits of the first ``num_tiles`` tiles (1 .. 8) of one cluster, as the kernel did them:
    the ``acc_empty`` / ``overlap`` parities the MMA passed, the ``acc_ready`` parity the epilogue passed, and
    what let each of the MMA's waits return.  ``ValueError`` for a configuration ``plan`` refuses."""
    sched = schedule(plan, num_tiles)
    events = sched.events
    out = []
    for t in sched.tiles:
        mine = [e for e in events if e.tile == t.tile and e.kind == "wait"]
        empty = next(e for e in mine if e.barrier == "acc_empty")
        ready = next(e for e in mine if e.barrier == "acc_ready")
        ov = next((e for e in mine if e.barrier == "overlap"), None)
        out.append(
            TileStep(
                t.tile,
                t.window,
                empty.index or 0,
                empty.phase or 0,
                ready.phase or 0,
                ov.phase if ov else None,
                _satisfied_by(events, empty),
                _satisfied_by(events, ov) if ov else None,
            )
        )
    return out


def _satisfied_by(events: tuple[Event, ...], wait: Event) -> str:
    """What let ``wait`` return: the last arrival on its barrier before it, or none (a fresh barrier)."""
    arrivals = [
        e
        for e in events
        if e.kind == "arrive" and e.barrier == wait.barrier and e.index == wait.index and e.end <= wait.end
    ]
    if not arrivals:
        return "immediately (fresh barrier)"
    last = arrivals[-1]
    if wait.barrier == "overlap":
        return f"early release of tile {last.tile} (both CTAs)"
    return f"full drain of tile {last.tile} (both CTAs)"


# --- the walk ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PingPongStep:
    """The state of the ping-pong just after ``time`` (one entry per distinct event time)."""

    index: int
    time: float
    events: tuple[str, ...]
    lines: tuple[str, ...]  #: the kernel line of each event (same order)
    mma_tile: int | None  #: the tile the MMA writes now (None: it waits or is done)
    mma_window: str | None
    mma_status: str  #: what the MMA does or waits for, with the barrier index and parity
    epilogue_tile: int | None
    epilogue_position: int | None  #: drain step being read now (None: idle)
    barriers: tuple[str, ...]  #: arrivals so far on overlap / acc_empty / acc_ready


def window_label(plan: TmemPlan, tile: int) -> str:
    """``"left window"`` / ``"right window"`` with overlap on; ``"accumulator"`` with it off."""
    return f"{plan.window_name(tile)} window" if plan.overlap else "accumulator"


def _span(cols: tuple[int, int] | None) -> str:
    return f"[{cols[0]}, {cols[1]})" if cols else ""


def _describe(plan: TmemPlan, e: Event, drain_step: int) -> tuple[float, int, str] | None:
    """(time, order, text) of what ``e`` shows in the walk; None for what it does not."""
    bar = f"{e.barrier}[{e.index}]" if e.barrier else ""
    if e.kind == "wait":
        who = "MMA" if e.partition == "mma" else "epilogue"
        how = "at once" if e.end == e.start else f"after waiting {e.end - e.start:g}"
        return e.end, 0, f"{who} of tile {e.tile}: wait({bar}, phase {e.phase}) returns {how}"
    if e.kind == "mma":
        if e.kstep:
            return None
        return e.start, 1, (f"MMA starts tile {e.tile} in the {window_label(plan, e.tile)} {_span(e.columns)}")
    if e.kind == "commit":
        return e.end, 0, f"MMA of tile {e.tile} done: commit -> {bar}"
    if e.kind == "tmem_load":
        return e.end, 2, f"epilogue of tile {e.tile} read drain step {drain_step}: columns {_span(e.columns)}"
    if e.barrier == "overlap":
        return e.end, 3, f"epilogue of tile {e.tile} arrives on overlap: tile {e.tile + 1}'s MMA may start"
    nxt = e.tile + (2 if plan.overlap else 1)
    return e.end, 3, f"epilogue of tile {e.tile} arrives on {bar}: tile {nxt} may reuse the {window_label(plan, nxt)}"


def steps(sched: Schedule) -> list[PingPongStep]:
    """Walk the recorded run event by event: one :class:`PingPongStep` per distinct time."""
    plan = sched.plan
    by_time: dict[float, list[tuple[int, str, str]]] = {}
    drain_step: dict[int, int] = {}
    for e in sched.events:
        pos = drain_step.get(e.tile, 0)
        said = _describe(plan, e, pos)
        if e.kind == "tmem_load":
            drain_step[e.tile] = pos + 1
        if said is not None:
            t, order, text = said
            by_time.setdefault(t, []).append((order, text, str(e.line) if e.line else "kernel.py"))
    num_acc = 2 if plan.overlap else 1
    eps = 1e-9
    out = []
    for index, now in enumerate(sorted(set(by_time) | {0.0})):
        writing = [t for t in sched.tiles if t.mma_start <= now + eps < t.mma_end]
        mma_tile = writing[0].tile if writing else None
        if writing:
            w = writing[0]
            status = f"MMA writes tile {w.tile} into the {window_label(plan, w.tile)} {_span(w.mma_columns)}"
        else:
            waiting = [
                e for e in sched.events if e.partition == "mma" and e.kind == "wait" and e.start <= now + eps < e.end
            ]
            if waiting:
                w8 = waiting[0]
                status = f"MMA idle: tile {w8.tile} waits on {w8.barrier}[{w8.index}] phase {w8.phase}"
            elif all(t.mma_end <= now + eps for t in sched.tiles):
                status = "MMA done with its tiles"
            else:
                status = "MMA idle: waiting for its operands"
        draining = [t for t in sched.tiles if t.drain_start <= now + eps < t.drain_end]
        epi_tile = draining[0].tile if draining else None
        epi_pos = sum(1 for e in draining[0].subtile_ends if e <= now + eps) if draining else None

        def arrivals(barrier: str, j: int, now: float = now) -> int:
            kind = "commit" if barrier == "acc_ready" else "arrive"
            return sum(
                1
                for e in sched.events
                if e.kind == kind and e.barrier == barrier and e.index == j and e.end <= now + eps
            )

        barriers = tuple(
            ([f"overlap: {arrivals('overlap', 0)} arrival(s)"] if plan.overlap else [])
            + [f"acc_empty[{j}]: {arrivals('acc_empty', j)} arrival(s)" for j in range(num_acc)]
            + [f"acc_ready[{j}]: {arrivals('acc_ready', j)} commit(s)" for j in range(num_acc)]
        )
        said_now = sorted(by_time.get(now, []), key=lambda s: s[0])
        texts = tuple(s[1] for s in said_now) or ("start: all barriers fresh",)
        lines = tuple(s[2] for s in said_now) or ("",)
        out.append(
            PingPongStep(
                index,
                now,
                texts,
                lines,
                mma_tile,
                plan.window_name(mma_tile) if mma_tile is not None else None,
                status,
                epi_tile,
                epi_pos,
                barriers,
            )
        )
    return out
