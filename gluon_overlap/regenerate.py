"""Rewrite every file the project ships that is computed from its own code: ``python -m gluon_overlap.regenerate``.

Each product below is computed from a list of inputs (package modules and folders, data files).  When it is
written, the SHA-256 of its inputs (and the Triton version) is kept in :data:`STAMPS`; a product whose inputs have
changed since is **stale** (:func:`stale`), and ``tests/project/test_regenerate.py`` fails, naming the command to
run.  The products are written in dependency order (a product may read what an earlier one wrote):

============== ================================================== ===============================================
product        file(s)                                            computed by
============== ================================================== ===============================================
epilogue-mix   ``gluon_overlap/data/kernel_mix.json``             the 8 seed variants compiled for sm_100a, their
                                                                  SASS read (:func:`timing.kernel_costs.count_mix`)
fit            ``data/fit/b300-fit.json``, the hardware           the timing model fitted to the published B300
               descriptions' fitted values                        tables (:mod:`gluon_overlap.timing.fit`)
recordings     ``gluon_overlap/data/recordings.zip``              the interpreter's recordings of ``kernel.py`` that
                                                                  the default model tables ask for
heldout        ``data/fit/heldout-comparison.json``               the pre-registered predictions beside the published
                                                                  held-out rows (:mod:`gluon_overlap.timing.heldout`)
scale-copy-    ``data/fit/scale-copy-decision.json``              the model refitted under seven candidate scale-copy
decision                                                          records (``benchmarks/scale_copy_decision.py``)
step-figures   ``gluon_overlap/data/step_figures.json``           the notebooks' per-step figures (timed runs)
ping-pong      ``gluon_overlap/data/ping_pong.json``              the explorer's recorded ping-pong of ``kernel.py``
silicon        ``data/silicon/executor.json``                     the interpreter against the H200 recording, per
                                                                  category (``tests/interp/silicon/compare.py``)
gluon-api      ``docs/GLUON_API.md``                              the interpreter's registry of builtins and the
                                                                  silicon summary
readme-limits  the limits table in ``README.md``                  :func:`gluon_overlap.limits.table_rows`
============== ================================================== ===============================================

``python -m gluon_overlap.regenerate`` rewrites the stale products (``--all``: every one; names: those);
``--check`` only lists the stale ones (exit status 1 when any is).  The pictures under ``docs/images`` are made
by ``scripts/readme_pictures.py`` (``make pictures``: from the app and notebook 04's drawing code), not here;
``tests/project/test_readme_pictures.py`` fails when one is stale.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gluon_overlap.store import digest, write_atomically

PACKAGE = Path(__file__).resolve().parent
REPO = PACKAGE.parent
#: where the input stamps of the products are kept (package data: the tests of a checkout read it)
STAMPS = PACKAGE / "data" / "stamps.json"


@dataclass(frozen=True)
class Product:
    """One shipped file (or set of files) computed from ``inputs`` by ``write``."""

    name: str
    outputs: tuple[str, ...]  # repository-relative paths it writes
    inputs: tuple[str, ...]  # repository-relative files, or folders ending in "/" (every .py and .json in them)
    write: Callable[[], str]  # writes the outputs; returns a one-line summary

    def input_files(self) -> list[Path]:
        files: list[Path] = []
        for rel in self.inputs:
            path = REPO / rel
            if rel.endswith("/"):
                files += sorted(
                    p
                    for p in path.rglob("*")
                    if p.suffix in (".py", ".json") and p.is_file() and "__pycache__" not in p.parts
                )
            else:
                files.append(path)
        return files

    def stamp(self) -> str:
        import triton

        parts: list[str | bytes] = [f"triton {triton.__version__}"]
        for path in self.input_files():
            parts += [str(path.relative_to(REPO)), path.read_bytes() if path.is_file() else b"(missing)"]
        return digest(*parts)


# --- the writers ---------------------------------------------------------------------------------------------
def _write_epilogue_mix() -> str:
    from gluon_overlap.compiler.compile import compile_variant
    from gluon_overlap.timing import kernel_costs
    from gluon_overlap.tmem import SEED_FORMAT_PAIRS, default_block_k

    mixes, mma = {}, {}
    for a, b in SEED_FORMAT_PAIRS:
        for overlap in (False, True):
            cv = compile_variant(a, b, overlap)
            mixes[(a, b, overlap)] = kernel_costs.count_mix(cv.sass, cv.ptx, a, b, overlap)
            if not overlap:  # the K step is the same with overlap on
                mma[(a, b)] = kernel_costs.count_mma_mix(cv.sass, cv.ptx, a, b, default_block_k(a, b))
    write_atomically(kernel_costs.MIX_FILE, kernel_costs.shipped_text(mixes, mma))
    return f"{len(mixes)} variants' epilogue mixes, {len(mma)} pairs' K steps"


def _write_fit() -> str:
    from gluon_overlap.timing import fit

    doc = fit.write_fit()
    return "fitted " + ", ".join(f"{name} = {entry['value']}" for name, entry in doc["fitted"].items())


def _write_heldout() -> str:
    from gluon_overlap.timing import heldout

    held = heldout.write_comparison()["summary"]["held_out"]
    return (
        f"{held['cells']} held-out cells: worst gain error {held['gain_error_pp']['worst']} pp, "
        f"worst off error {held['off_error_pct']['worst']} %"
    )


@contextmanager
def _model_cache_off() -> Iterator[None]:
    from gluon_overlap.timing import run_cache

    saved = os.environ.get(run_cache.ENV)
    os.environ[run_cache.ENV] = "off"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(run_cache.ENV, None)
        else:
            os.environ[run_cache.ENV] = saved


def recording_configs() -> list[tuple[Any, tuple[int, ...] | None]]:
    """The ``(config, clusters)`` the timing model records for the default table of every shipped description
    (learnt by running those tables with every run simulated, noting each recording they ask for)."""
    from gluon_overlap.hardware import DATA_DIR, load_hardware
    from gluon_overlap.timing import model, recordings
    from gluon_overlap.timing.table import model_table

    model.forget()
    try:
        with _model_cache_off(), recordings.noting() as asked:
            for path in sorted(DATA_DIR.glob("*.json")):
                model_table(load_hardware(path.stem), workers=1)
    finally:
        model.forget()
    return list(asked.values())


def _write_recordings() -> str:
    from gluon_overlap.timing import recordings

    return f"{recordings.write(recording_configs())} recordings"


def _write_step_figures() -> str:
    from gluon_overlap.steps import predict

    return f"{predict.write_shipped()} per-step figures"


def _write_ping_pong() -> str:
    from gluon_overlap.emulate import pingpong_record

    pingpong_record.write_shipped()
    return f"{len(pingpong_record.recorded_configs())} explorer configurations"


def _run_repo_script(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python <script> <args>`` in a child, in the repository root with it first on ``PYTHONPATH`` (a script of
    the tests or the benchmarks imports the package from the checkout); its output captured."""
    path = os.pathsep.join([str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run(
        [sys.executable, str(REPO / script), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=path),
    )


SILICON_SUMMARY = "data/silicon/executor.json"


def _write_silicon() -> str:
    """The silicon comparison's summary: ``compare.py --summary`` in a child (the suite lives in the tests; a case
    that fails is a row of the summary, not an error of this writer)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="silicon-") as tmp:
        out = Path(tmp) / "executor.json"
        run = _run_repo_script("tests/interp/silicon/compare.py", "--jobs", "2", "--summary", str(out))
        if run.returncode not in (0, 1) or not out.exists():
            raise RuntimeError(f"compare.py failed (exit {run.returncode}): {(run.stderr or run.stdout)[-2000:]}")
        text = out.read_text()
    write_atomically(REPO / SILICON_SUMMARY, text)
    doc = json.loads(text)
    return f"{doc['passed']}/{doc['cases']} cases agree with the H200"


SCALE_COPY_DECISION = "data/fit/scale-copy-decision.json"


def _write_scale_copy_decision() -> str:
    """The candidate scale-copy records refitted (``benchmarks/scale_copy_decision.py``, in a child: a benchmark
    script swaps laws of the timing backend for its own process)."""
    run = _run_repo_script("benchmarks/scale_copy_decision.py", "--jobs", "2")
    if run.returncode != 0:
        raise RuntimeError(
            f"scale_copy_decision.py failed (exit {run.returncode}): {(run.stderr or run.stdout)[-2000:]}"
        )
    runs = json.loads((REPO / SCALE_COPY_DECISION).read_text())["runs"]
    best = max(runs, key=lambda r: (r["gain_within_goal"], -r["loss"]))
    return (
        f"{len(runs)} refits; most gains within the goal: {best['law']} (hop {best['hop']}), "
        f"{best['gain_within_goal']} of 12"
    )


def _write_gluon_api() -> str:
    from gluon_overlap.interp import apidoc

    write_atomically(REPO / "docs" / "GLUON_API.md", apidoc.api_table())
    return "docs/GLUON_API.md"


README_TABLE_START = "<!-- limits-table: generated from gluon_overlap.limits.table_rows() -->"
README_TABLE_END = "<!-- /limits-table -->"


def readme_limits_table() -> str:
    """The README's limits table, as markdown lines."""
    from gluon_overlap.limits import table_rows

    lines = ["| who | format pairs | M | N | K | largest problem |", "|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows()]
    return "\n".join(lines)


def _write_readme_limits() -> str:
    path = REPO / "README.md"
    text = path.read_text()
    head, rest = text.split(README_TABLE_START, 1)
    _, tail = rest.split(README_TABLE_END, 1)
    write_atomically(path, f"{head}{README_TABLE_START}\n{readme_limits_table()}\n{README_TABLE_END}{tail}")
    return "README.md's limits table"


#: the kernel and everything it imports (what a recording of it depends on)
_KERNEL = (
    "gluon_overlap/kernel.py",
    "gluon_overlap/tmem.py",
    "gluon_overlap/formats.py",
    "gluon_overlap/swizzle.py",
    "gluon_overlap/registry.py",
    "gluon_overlap/limits.py",
    "gluon_overlap/device.py",
)
_HARDWARE = ("gluon_overlap/hardware.py", "gluon_overlap/data/hardware/")
_INTERP = ("gluon_overlap/interp/", "gluon_overlap/gpu/")

PRODUCTS: tuple[Product, ...] = (
    Product(
        "epilogue-mix",
        ("gluon_overlap/data/kernel_mix.json",),
        _KERNEL
        + (
            "gluon_overlap/compiler/compile.py",
            "gluon_overlap/compiler/artifacts.py",
            "gluon_overlap/timing/kernel_costs.py",
        ),
        _write_epilogue_mix,
    ),
    Product(
        "fit",
        ("data/fit/b300-fit.json", "gluon_overlap/data/hardware/"),
        _KERNEL
        + (
            *_INTERP,
            "gluon_overlap/emulate/",
            "gluon_overlap/timing/",
            "gluon_overlap/hardware.py",
            "gluon_overlap/data/kernel_mix.json",
            # the tables the fit reads (timing.fit.CALIBRATION_TABLES); the GB300 rows never reach it
            "data/published/b300-overlap-mxfp8.json",
            "data/published/b300-overlap-mxfp8-mxfp4.json",
            "data/published/b300-overlap-mxfp4-mxfp4.json",
        ),
        _write_fit,
    ),
    Product(
        "recordings",
        ("gluon_overlap/data/recordings.zip",),
        _KERNEL + _INTERP + ("gluon_overlap/emulate/", "gluon_overlap/timing/") + _HARDWARE,
        _write_recordings,
    ),
    Product(
        "heldout",
        ("data/fit/heldout-comparison.json",),
        _KERNEL
        + (*_INTERP, "gluon_overlap/emulate/", "gluon_overlap/timing/")
        + _HARDWARE
        + (
            "data/fit/preregistered-heldout-pairs.json",
            "data/fit/preregistered-unseen-cells.json",
            "data/fit/preregistered-unseen-cells-third.json",
            "data/published/",
        ),
        _write_heldout,
    ),
    Product(
        "scale-copy-decision",
        (SCALE_COPY_DECISION,),
        _KERNEL
        + (*_INTERP, "gluon_overlap/emulate/", "gluon_overlap/timing/", "gluon_overlap/tmem.py")
        + _HARDWARE
        + (
            "gluon_overlap/data/kernel_mix.json",
            "benchmarks/model_trials.py",
            "benchmarks/scale_copy_decision.py",
            "data/published/b300-overlap-mxfp8.json",
            "data/published/b300-overlap-mxfp8-mxfp4.json",
            "data/published/b300-overlap-mxfp4-mxfp4.json",
        ),
        _write_scale_copy_decision,
    ),
    Product(
        "step-figures",
        ("gluon_overlap/data/step_figures.json",),
        _KERNEL
        + (
            *_INTERP,
            "gluon_overlap/emulate/",
            "gluon_overlap/timing/",
            "gluon_overlap/steps/",
            "gluon_overlap/data/kernel_mix.json",
        )
        + _HARDWARE,
        _write_step_figures,
    ),
    Product(
        "ping-pong",
        ("gluon_overlap/data/ping_pong.json",),
        _KERNEL + _INTERP + ("gluon_overlap/emulate/", "gluon_overlap/pingpong.py"),
        _write_ping_pong,
    ),
    Product(
        "silicon", (SILICON_SUMMARY,), _INTERP + ("tests/interp/silicon/", "data/silicon/h200.json"), _write_silicon
    ),
    Product("gluon-api", ("docs/GLUON_API.md",), _INTERP + (SILICON_SUMMARY,), _write_gluon_api),
    Product(
        "readme-limits",
        ("README.md",),
        ("gluon_overlap/limits.py", "gluon_overlap/registry.py", "gluon_overlap/tmem.py"),
        _write_readme_limits,
    ),
)
_BY_NAME = {p.name: p for p in PRODUCTS}


def stamps() -> dict[str, str]:
    """The input stamps the products were last written with (empty when none were kept)."""
    try:
        raw = json.loads(STAMPS.read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in raw.get("stamps", {}).items() if isinstance(k, str) and isinstance(v, str)}


def stale(names: Sequence[str] | None = None) -> list[str]:
    """The products (of ``names``, default all) whose inputs changed since they were written."""
    kept = stamps()
    return [p.name for p in _products(names) if kept.get(p.name) != p.stamp()]


def _products(names: Sequence[str] | None) -> list[Product]:
    if not names:
        return list(PRODUCTS)
    unknown = [n for n in names if n not in _BY_NAME]
    if unknown:
        raise ValueError(f"unknown product {', '.join(unknown)}; the products are {', '.join(_BY_NAME)}")
    return [p for p in PRODUCTS if p.name in names]  # always in dependency order


def regenerate(
    names: Sequence[str] | None = None, *, only_stale: bool = True, say: Callable[[str], None] = print
) -> list[str]:
    """Write the products (``names``, default all; ``only_stale``: those whose inputs changed), in dependency
    order, keeping each one's input stamp; returns the names written."""
    written = []
    for product in _products(names):
        if only_stale and product.name not in stale([product.name]):
            continue
        say(f"[regenerate] {product.name} ...")
        summary = product.write()
        kept = stamps()
        kept[product.name] = product.stamp()
        write_atomically(
            STAMPS,
            json.dumps(
                {
                    "about": "input stamps of the shipped products: python -m gluon_overlap.regenerate",
                    "stamps": dict(sorted(kept.items())),
                },
                indent=1,
            )
            + "\n",
        )
        say(f"[regenerate] {product.name}: {summary}")
        written.append(product.name)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gluon_overlap.regenerate", description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", metavar="PRODUCT", help=f"products to write ({', '.join(_BY_NAME)})")
    parser.add_argument("--all", action="store_true", help="write every named product, stale or not")
    parser.add_argument("--check", action="store_true", help="only list the stale products (exit 1 if any)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            found = stale(args.names)
            for name in found:
                print(f"stale: {name}")
            return 1 if found else 0
        regenerate(args.names, only_stale=not args.all)
    except ValueError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
