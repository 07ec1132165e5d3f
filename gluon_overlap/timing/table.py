"""The series' prediction tables: one row per format pair and K (:func:`compare`), the seed's sweep (:func:`sweep`,
in worker processes with a progress bar) and :func:`model_table`, **the** prediction function of the series (the
``model`` command and notebook 07 use it).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from gluon_overlap.hardware import Hardware, load_hardware
from gluon_overlap.timing import run_cache
from gluon_overlap.timing.band import BAND_GROUPS, BAND_METHOD, band
from gluon_overlap.timing.model import SEED_KS, SEED_M, SEED_N, headline, predict
from gluon_overlap.tmem import SEED_FORMAT_PAIRS

if TYPE_CHECKING:
    from multiprocessing.queues import SimpleQueue


def compare(hw: Hardware, a_format: str, b_format: str, m: int, n: int, k: int, with_band: bool = True) -> dict:
    """One row of the seed's table: off, on, speedup, the time split of both and (``with_band``) the bands."""
    off = predict(hw, a_format, b_format, m, n, k, overlap=False)
    on = predict(hw, a_format, b_format, m, n, k, overlap=True)
    head = headline(off, on)
    row = {"gpu": hw.name, "a_format": a_format, "b_format": b_format, "m": m, "n": n, "k": k, **head}
    if with_band:
        b = band(hw, a_format, b_format, m, n, k, nominal=head)
        row["speedup_band_pct"] = b["speedup_pct"]
        row["tflops_off_band"] = b["tflops_off"]
        row["tflops_on_band"] = b["tflops_on"]
        row["band_by_group"] = b["by_group"]
        row["band_scatter"] = b["scatter"]
    for tag, p in (("off", off), ("on", on)):
        row[f"time_us_{tag}"] = p.time_s * 1e6
        row[f"mainloop_us_{tag}"] = p.mainloop_s * 1e6
        row[f"exposed_epilogue_us_{tag}"] = p.exposed_epilogue_s * 1e6
        row[f"idle_us_{tag}"] = p.idle_s * 1e6
    row["tiles_per_cluster"] = on.tiles_per_cluster
    row["clusters"] = on.clusters
    row["tiles"] = on.tiles
    # HBM traffic of the whole problem (the critical cluster's per-tile bytes x all tiles), overlap on
    row["hbm_bytes"] = on.hbm_bytes_per_tile * on.tiles
    row["flops"] = 2.0 * m * n * k
    row["extrapolated"] = off.extrapolated or on.extrapolated
    row["extrapolation_error"] = max(off.extrapolation_error, on.extrapolation_error)
    return row


def sweep(
    hw: Hardware,
    pairs: Sequence[tuple[str, str]] = SEED_FORMAT_PAIRS,
    ks: Sequence[int] = SEED_KS,
    m: int = SEED_M,
    n: int = SEED_N,
    with_band: bool = True,
    progress: bool | str = False,
    workers: int | None = None,
) -> list[dict]:
    """The seed's benchmark table, predicted: one :func:`compare` row per (pair, K), in that order.

    ``progress``: ``True``, a progress bar on stderr (tqdm), shown only when stderr is a terminal; ``"text"``, a line
    on stdout each time another pair's worth of rows is done (for a notebook: the same lines in every run).
    ``workers``: processes
    that share the pairs (each pair's rows in one process, so its recordings and cached runs are shared across its
    K); default one per CPU this process may use, at most 2 and at most one per pair (1: all in this process)."""
    jobs = [(a, b, k) for a, b in pairs for k in ks]
    if workers is None:
        workers = min(2, len(pairs), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    bar: _Progress | None = None
    if progress == "text":
        bar = _TextProgress(hw.name, len(jobs), len(ks))
    elif progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(jobs), desc=f"model {hw.name}", unit="row", file=sys.stderr, leave=False)
    try:
        if workers > 1 and len(pairs) > 1 and "fork" in multiprocessing.get_all_start_methods():
            done = _sweep_in_processes(hw, pairs, ks, m, n, with_band, workers, bar)
        else:
            done = {}
            for a, b, k in jobs:
                done[(a, b, k)] = compare(hw, a, b, m, n, k, with_band=with_band)
                if bar is not None:
                    bar.update()
    finally:
        if bar is not None:
            bar.close()
    run_cache.save()  # the runs simulated here and in the workers, for the next process (twin.run_cache)
    return [done[job] for job in jobs]


class _Progress(Protocol):
    """What :func:`sweep` calls on a progress bar (a tqdm bar or :class:`_TextProgress`)."""

    def update(self) -> object: ...

    def close(self) -> object: ...


class _TextProgress:
    """A progress bar's ``update`` / ``close`` as plain lines: one each time ``every`` more rows are done."""

    def __init__(self, name: str, total: int, every: int):
        self.name, self.total, self.every, self.done = name, total, max(1, every), 0

    def update(self) -> None:
        self.done += 1
        if self.done % self.every == 0 or self.done == self.total:
            print(f"{self.name}: {self.done} of {self.total} rows", flush=True)

    def close(self) -> None:
        pass


_PROGRESS: SimpleQueue[int] | None = None  # a worker's queue to the parent's progress bar


def _worker_init(queue: SimpleQueue[int]) -> None:
    global _PROGRESS
    _PROGRESS = queue
    # the parent alone answers Ctrl-C and SIGTERM (the CLI turns SIGTERM into an exception); it ends the pool, whose
    # workers must then just stop, without a traceback of their own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        import torch

        torch.set_num_threads(1)  # the recordings build small CPU tensors; one thread per process
    except ImportError:  # pragma: no cover
        pass


def _pair_rows(args: tuple) -> tuple[dict[tuple[str, str, int], dict], dict[str, list[float]]]:
    hw, (a, b), ks, m, n, with_band = args
    out = {}
    for k in ks:
        out[(a, b, k)] = compare(hw, a, b, m, n, k, with_band=with_band)
        if _PROGRESS is not None:
            _PROGRESS.put(1)
    return out, run_cache.take_new()


def _sweep_in_processes(
    hw: Hardware,
    pairs: Sequence[tuple[str, str]],
    ks: Sequence[int],
    m: int,
    n: int,
    with_band: bool,
    workers: int,
    bar: _Progress | None,
) -> dict:
    """:func:`sweep`'s rows computed by ``workers`` forked processes, one pair at a time each."""
    ctx = multiprocessing.get_context("fork")
    queue: SimpleQueue[int] = ctx.SimpleQueue()
    done: dict = {}
    with ctx.Pool(workers, initializer=_worker_init, initargs=(queue,)) as pool:
        pending = pool.map_async(_pair_rows, [(hw, pair, tuple(ks), m, n, with_band) for pair in pairs], chunksize=1)
        while not pending.ready() or not queue.empty():
            while not queue.empty():
                queue.get()
                if bar is not None:
                    bar.update()
            pending.wait(0.05)
        for rows, runs in pending.get():
            done.update(rows)
            run_cache.add(runs)
    return done


def model_table(
    gpu: str | Hardware = "b300",
    pairs: Sequence[tuple[str, str]] = SEED_FORMAT_PAIRS,
    ks: Sequence[int] = SEED_KS,
    m: int = SEED_M,
    n: int = SEED_N,
    *,
    band: bool = True,
    epilogue_scale: float = 1.0,
    progress: bool | str = False,
    workers: int | None = None,
) -> dict:
    """**The** prediction function of the series: the timing model's table for one GPU.

    Returns ``{"gpu", "description", "m", "n", "epilogue_scale", "clusters", "tiles_per_cluster", "band_method",
    "band_groups", "parameters", "rows"}``; each row (one per format pair and K, :func:`compare`) holds
    ``tflops_off``, ``tflops_on``, ``speedup_pct`` and, with ``band``, ``tflops_off_band``, ``tflops_on_band``,
    ``speedup_band_pct`` (``[lo, hi]``), plus the time split of both runs (microseconds).  ``gpu`` is a name of
    ``gluon_overlap/data/hardware`` or a :class:`Hardware`; ``epilogue_scale`` a what-if factor on every epilogue
    subtile cost; ``progress`` as in :func:`sweep`; ``workers`` as in :func:`sweep`."""
    hw = load_hardware(gpu) if isinstance(gpu, str) else gpu
    if epilogue_scale != 1.0:
        hw = hw.with_epilogue_scaled(epilogue_scale)
    rows = sweep(hw, pairs, ks, m, n, with_band=band, progress=progress, workers=workers)
    return {
        "gpu": hw.name,
        "description": hw.description,
        "epilogue_scale": epilogue_scale,
        "m": m,
        "n": n,
        "clusters": rows[0]["clusters"],
        "tiles_per_cluster": rows[0]["tiles_per_cluster"],
        "band_method": BAND_METHOD,
        "band_groups": {g: list(names) for g, names in BAND_GROUPS.items()},
        "parameters": {name: hw.provenance(name) for name in sorted(hw.records)},
        "rows": rows,
    }


# --- calibration -------------------------------------------------------------------------------
