"""One prediction function for the per-step figures of notebooks 03-07: :func:`predict_step`.

The three step kernels are named once, here (:data:`STEPS`), and every notebook uses these names:

* **step 1, the single-buffered kernel** (``steps.single_buffered.single_buffered_kernel``, notebook 03): one
  output tile per cluster, one shared-memory stage, one instruction stream, one accumulator;
* **step 2, the overlap kernel** (``steps.overlap.overlap_kernel``, notebook 04): persistent, one stream, one
  stage, two accumulator windows that overlap by the scale columns (``overlap=False``: one window, the
  persistent single-buffered baseline);
* **step 3, the warp-specialized kernel** (``gluon_overlap.kernel``, notebook 05): load, MMA and epilogue
  partitions, a five-stage ring, overlap on or off.

*Single-buffered* means one thing throughout the series: **one accumulator in TMEM** (overlap off).

A figure is the executor's timed run (:func:`gluon_overlap.steps.measure.run_step`) of one cluster computing four
256 x 256 tiles of a ``256 x 1024 x K`` problem (step 1: one tile, since it computes one tile per cluster),
every operation priced by the timing model's cost backend (:class:`gluon_overlap.timing.backend.CostBackend`) for
the GPU's hardware description.  Its **band** is the range the same run gives when each uncertainty group of
the description is moved to its fast and its slow corner (the groups combined in quadrature, as the timing
model's :func:`~gluon_overlap.timing.band.band` does for a whole launch).  A figure is a model of *one
cluster*; the whole-GPU prediction of a launch is :func:`gluon_overlap.timing.model.predict` (notebook 07).

Results are cached in memory and on disk (the private store ``step-figures``, :mod:`gluon_overlap.store`),
keyed on the kernel's source, the code that runs and prices it (:data:`_PRICED_BY`), the hardware description
and the problem, so notebooks share them and a code change never serves a stale figure.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gluon_overlap import store
from gluon_overlap.timing.band import band_corner, band_groups_for

if TYPE_CHECKING:
    from gluon_overlap.compiler.compile import GluonFunction
    from gluon_overlap.hardware import Hardware

#: step -> (name used everywhere, module attribute path of its kernel)
STEPS = {
    1: ("step 1, the single-buffered kernel", "gluon_overlap.steps.single_buffered:single_buffered_kernel"),
    2: ("step 2, the overlap kernel", "gluon_overlap.steps.overlap:overlap_kernel"),
    3: ("step 3, the warp-specialized kernel", "gluon_overlap.kernel:mma_scaled_warp_specialized_kernel"),
}
#: the GPU of every per-step figure: the one the timing model is fitted to (``model_table``'s default)
DEFAULT_GPU = "b300"
#: the problem of a figure: one cluster, four tiles of 256 x 256 (step 1: one tile, one cluster)
M, N, TILES = 256, 1024, 4


def step_name(step: int) -> str:
    """``"step 2, the overlap kernel"``."""
    _check_step(step)
    return STEPS[step][0]


def _check_step(step: object) -> None:
    if isinstance(step, bool) or step not in STEPS:
        raise ValueError(f"step={step!r} must be 1, 2 or 3 (the three step kernels)")


def step_kernel(step: int) -> GluonFunction:
    """The ``@gluon.jit`` kernel of a step."""
    import importlib

    _check_step(step)
    module, name = STEPS[step][1].split(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Timing:
    """Per-tile times (seconds) of one timed run."""

    per_tile: float
    busy: float  # the tensor core computing MMAs
    idle: float  # per_tile - busy
    idle_in_epilogue: float  # idle while this cluster's epilogue drains TMEM or stores C

    @property
    def idle_share(self) -> float:
        return self.idle / self.per_tile if self.per_tile else 0.0


@dataclass(frozen=True)
class StepPrediction:
    """One per-step figure with its band (times in seconds, per output tile)."""

    step: int
    overlap: bool
    a_format: str
    b_format: str
    k: int
    gpu: str
    gpu_description: str
    nominal: Timing
    corners: dict[str, Timing]  # "group-fast" / "group-slow" -> the run at that corner

    @property
    def name(self) -> str:
        return step_name(self.step) + (f", overlap {'on' if self.overlap else 'off'}" if self.step > 1 else "")

    def band(self, quantity: str = "per_tile") -> tuple[float, float]:
        """``(lo, hi)`` of a :class:`Timing` field (or ``idle_share``) over the corners, groups in quadrature."""
        return combine(getattr(self.nominal, quantity), {key: getattr(t, quantity) for key, t in self.corners.items()})

    def us(self, quantity: str = "per_tile") -> str:
        """``"2.91 µs [2.71, 3.20]"``: the nominal figure and its band, in microseconds."""
        lo, hi = self.band(quantity)
        return f"{getattr(self.nominal, quantity) * 1e6:.2f} µs [{lo * 1e6:.2f}, {hi * 1e6:.2f}]"

    def share(self) -> str:
        """``"73% [70, 76]"``: the tensor core's idle share and its band."""
        return percent_band(self.nominal.idle_share, self.band("idle_share"))


def combine(nominal: float, corners: dict[str, float]) -> tuple[float, float]:
    """Band of ``nominal`` from ``{"group-fast": v, "group-slow": v}``: per group the larger deviation below and
    above, groups combined in quadrature."""
    below = above = 0.0
    for group in {key.rsplit("-", 1)[0] for key in corners}:
        values = [v for key, v in corners.items() if key.rsplit("-", 1)[0] == group]
        below += max(0.0, nominal - min(values)) ** 2
        above += max(0.0, max(values) - nominal) ** 2
    return nominal - math.sqrt(below), nominal + math.sqrt(above)


def _corners(hw: Hardware, a_format: str, b_format: str) -> dict:
    """``{"group-fast"/"group-slow": Hardware}`` of the timing model's band groups for this pair."""
    return {
        f"{g}-{'fast' if fast else 'slow'}": band_corner(hw, g, fast)
        for g in band_groups_for(a_format, b_format)
        for fast in (True, False)
    }


#: the figures computed on this machine, by key (:func:`_key`)
FIGURES = store.Store("step-figures", max_entries=2000, max_bytes=2**22, max_file_bytes=2**12)


#: the code a figure depends on besides its kernel (a folder: every module in it): an edit to any is a new figure
_PRICED_BY = (
    "interp/",
    "timing/",
    "steps/measure.py",
    "steps/host.py",
    "kernel.py",
    "tmem.py",
    "hardware.py",
    "data/kernel_mix.json",
)
_code_digest: list[str] = []


def _code_key() -> str:
    if not _code_digest:
        root = Path(__file__).resolve().parents[1]
        files = []
        for rel in _PRICED_BY:
            files += sorted((root / rel).rglob("*.py")) if rel.endswith("/") else [root / rel]
        h = hashlib.sha256()
        for path in files:
            h.update(str(path.relative_to(root)).encode() + b"\0" + (path.read_bytes() if path.is_file() else b""))
        _code_digest.append(h.hexdigest())
    return _code_digest[0]


def _key(step: int, hw: Hardware, a_format: str, b_format: str, k: int, overlap: bool) -> str:
    import importlib

    module = importlib.import_module(STEPS[step][1].split(":")[0])
    text = json.dumps([step, a_format, b_format, k, overlap, M, N, repr(sorted(asdict(hw).items()))], default=str)
    return hashlib.sha256((inspect.getsource(module) + _code_key() + text).encode()).hexdigest()[:24]


_memory: dict[str, Timing] = {}

#: the figures the notebooks show (03, 04, 05 and 07: nvfp4 x nvfp4 on :data:`DEFAULT_GPU`), as (step, k, overlap)
NOTEBOOK_FIGURES = tuple(
    (step, k, overlap)
    for k in (256, 512, 2048)
    for step, overlap in ((1, False), (2, False), (2, True), (3, False), (3, True))
)
#: the notebook figures, computed ahead (with their band corners): ``python -m gluon_overlap.regenerate step-figures``
SHIPPED_PATH = Path(__file__).resolve().parents[1] / "data" / "step_figures.json"
_shipped_figures: list[dict[str, Timing]] = []


def shipped_figures() -> dict[str, Timing]:
    """The shipped figures, by key.  A key covers the kernel's source, the code that runs and prices it, the
    description and the problem (:func:`_key`), so a shipped figure is served only to the code that computed it:
    after any edit the figure is computed again, as without the file.  An unreadable file ships nothing."""
    if not _shipped_figures:
        try:
            raw = json.loads(SHIPPED_PATH.read_text())
            figures = {key: Timing(**fields) for key, fields in raw["figures"].items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            figures = {}
        _shipped_figures.append(figures)
    return _shipped_figures[0]


def figure_descriptions(
    a_format: str = "nvfp4", b_format: str = "nvfp4", gpu: str = DEFAULT_GPU
) -> dict[str | None, Hardware]:
    """``{None: description, "group-fast": corner, ...}``: the descriptions one figure with its band is timed on."""
    from gluon_overlap.hardware import load_hardware

    hw = load_hardware(gpu)
    return {None: hw, **_corners(hw, a_format, b_format)}


def notebook_figure_keys() -> dict[str, tuple]:
    """``{key: (step, description, k, overlap)}`` of every run behind :data:`NOTEBOOK_FIGURES` under this code."""
    keys = {}
    descriptions = figure_descriptions().values()
    for step, k, overlap in NOTEBOOK_FIGURES:
        for hw in descriptions:
            keys[_key(step, hw, "nvfp4", "nvfp4", k, overlap)] = (step, hw, k, overlap)
    return keys


def write_shipped(path: Path = SHIPPED_PATH) -> int:
    """Compute every notebook figure afresh (no cache read) and write them to ``path``; returns their number."""
    figures = {}
    for key, (step, hw, k, overlap) in notebook_figure_keys().items():
        figures[key] = asdict(_compute(step, hw, "nvfp4", "nvfp4", k, overlap, key, keep=False))
    text = json.dumps(
        {
            "about": "per-step figures of the notebooks, by key (gluon_overlap.steps.predict._key); "
            "rewrite with: python -m gluon_overlap.regenerate step-figures",
            "figures": dict(sorted(figures.items())),
        },
        indent=1,
    )
    store.write_atomically(path, (text + "\n").encode())
    _shipped_figures.clear()
    return len(figures)


def _timed(
    step: int, hw: Hardware, a_format: str, b_format: str, k: int, overlap: bool, wait: bool = True
) -> Timing | None:
    """The figure from memory, the disk cache or a timed run.  Another process computing the same figure (05 and 07
    run one cell, maybe at once) holds its lock: ``wait`` for it and read its answer, or (``wait=False``) return
    None at once, so the caller can compute another figure first."""
    key = _key(step, hw, a_format, b_format, k, overlap)
    if key in _memory:
        return _memory[key]
    if key in shipped_figures():
        _memory[key] = shipped_figures()[key]
        return _memory[key]
    cached = _read(key)
    if cached is None:
        with FIGURES.computing(key, wait) as held:
            if not held:
                return None
            cached = _read(key)
            if cached is None:
                return _compute(step, hw, a_format, b_format, k, overlap, key)
    _memory[key] = cached
    return cached


def _read(key: str) -> Timing | None:
    data = FIGURES.read(key)
    try:
        return None if data is None else Timing(**json.loads(data))
    except (ValueError, TypeError):
        return None


def _compute(
    step: int, hw: Hardware, a_format: str, b_format: str, k: int, overlap: bool, key: str, keep: bool = True
) -> Timing:
    from gluon_overlap.steps import measure

    m, n = (M, N // TILES) if step == 1 else (M, N)
    problem = measure.make_problem(m, n, k, a_format, b_format, seed=0)
    # timing only: no data moves (the same times; the step kernels' results are checked by their own tests)
    run = measure.run_step(
        step_kernel(step),
        problem,
        overlap=overlap,
        num_clusters=None if step == 1 else 1,
        timed=True,
        hardware=hw,
        data=False,
    )
    if not run.run.ok:
        raise RuntimeError(f"the timed run of {step_name(step)} was not clean: {run.run.hazards or run.run.deadlock}")
    t = run.mma_time()
    timing = Timing(t.per_tile, t.busy / t.tiles, t.idle / t.tiles, t.idle_in_epilogue / t.tiles)
    _memory[key] = timing
    if keep:  # a store that cannot be written (a read-only home): the in-memory cache still serves this process
        FIGURES.write(key, json.dumps(asdict(timing)).encode())
    return timing


def predict_step(
    step: int,
    k: int,
    *,
    overlap: bool = False,
    a_format: str = "nvfp4",
    b_format: str = "nvfp4",
    gpu: str = DEFAULT_GPU,
    with_band: bool = True,
) -> StepPrediction:
    """The per-step figure of ``step`` (1, 2 or 3) at reduction length ``k`` on ``gpu``, with its band."""
    from gluon_overlap.hardware import load_hardware
    from gluon_overlap.kernel import K_MULTIPLE

    _check_step(step)
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0 or k % K_MULTIPLE:
        raise ValueError(f"k={k!r} must be a positive multiple of {K_MULTIPLE}")
    if step == 1 and overlap:
        raise ValueError("overlap=True: step 1, the single-buffered kernel, has one accumulator (no overlap)")
    descriptions: dict[str | None, Hardware]
    descriptions = figure_descriptions(a_format, b_format, gpu) if with_band else {None: load_hardware(gpu)}
    # figures another process is computing right now are left for last (then waited for and read)
    found = {name: _timed(step, d, a_format, b_format, k, overlap, wait=False) for name, d in descriptions.items()}
    figures: dict[str | None, Timing] = {}
    for name, timing in found.items():
        if timing is None:
            timing = _timed(step, descriptions[name], a_format, b_format, k, overlap)
            assert timing is not None  # _timed waits for the process computing it
        figures[name] = timing
    corners = {name: timing for name, timing in figures.items() if name is not None}
    hw = descriptions[None]
    return StepPrediction(step, overlap, a_format, b_format, k, hw.name, hw.description, figures[None], corners)


def percent_band(value: float, band: tuple[float, float]) -> str:
    """``"12% [0, 21]"``: a fraction and its band in percent (no "-0")."""
    lo, hi = (round(x * 100) + 0 for x in band)
    return f"{round(value * 100) + 0}% [{lo}, {hi}]"


def overlap_saving(step: int, k: int, **kw: Any) -> tuple[float, tuple[float, float]]:
    """How much of the time per tile the overlap saves in step 2 or 3: ``(nominal, (lo, hi))``; the band moves
    overlap off and on together through each corner (correlated costs)."""
    if step not in (2, 3):
        raise ValueError(f"step={step!r}: only steps 2 and 3 have an overlap to switch")
    off = predict_step(step, k, overlap=False, **kw)
    on = predict_step(step, k, overlap=True, **kw)
    nominal = 1 - on.nominal.per_tile / off.nominal.per_tile
    corners = {key: 1 - on.corners[key].per_tile / off.corners[key].per_tile for key in on.corners}
    return nominal, combine(nominal, corners)
