"""Benchmarking the kernel on a Blackwell GPU: overlap off vs on, plus a cuBLAS baseline.

The seed's measurement: for each format pair and K, TFLOP/s of the kernel with the
single-buffered accumulator (overlap off) and with the overlapping double-buffered one
(on), timed by CUDA-graph replay (``triton.testing.do_bench_cudagraph``), and the speedup
``(on / off - 1) x 100 %``.  Where torch's ``torch._scaled_mm`` supports the format pair
(cuBLAS block-scaled GEMM: mxfp8 x mxfp8, mxfp4 x mxfp4, nvfp4 x nvfp4) it is timed the
same way as a reference point.

Results can be saved as CSV (one row per format pair and K) for notebook 07.  The columns
are :data:`CSV_COLUMNS`:

``a_format, b_format``  operand formats;  ``m, n, k``  problem size;
``tflops_off, tflops_on``  kernel TFLOP/s (2 m n k / time) with overlap off / on;
``speedup_pct``  ``(tflops_on / tflops_off - 1) x 100``;
``tflops_cublas``  ``torch._scaled_mm`` TFLOP/s, empty where unsupported;
``gpu``  ``torch.cuda.get_device_name()``.

Everything except the measurement itself (argument checks, rows, CSV, table) runs
without a GPU; on anything but an sm_100/sm_103 GPU the measurement refuses with the
reason (:func:`gluon_overlap.kernel.check_device`).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gluon_overlap import limits
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, check_format

if TYPE_CHECKING:
    import torch

    from gluon_overlap.formats import Problem, QuantizedTensor

CSV_COLUMNS = ("a_format", "b_format", "m", "n", "k", "tflops_off", "tflops_on", "speedup_pct", "tflops_cublas", "gpu")
DEFAULT_M = 8192
DEFAULT_N = 8192
DEFAULT_KS = (512, 1024, 2048, 4096, 8192)
#: format pairs ``torch._scaled_mm`` (cuBLAS) can multiply with block scales
CUBLAS_PAIRS = (("mxfp8", "mxfp8"), ("mxfp4", "mxfp4"), ("nvfp4", "nvfp4"))


def tflops(m: int, n: int, k: int, ms: float) -> float:
    """TFLOP/s of an ``m x n x k`` matmul (2 m n k flops) that took ``ms`` milliseconds."""
    if ms <= 0:
        raise ValueError(f"ms={ms} must be positive")
    return 2.0 * m * n * k * 1e-9 / ms


def speedup_pct(off: float, on: float) -> float:
    """The seed's speedup: ``(on / off - 1) x 100`` percent."""
    if off <= 0:
        raise ValueError(f"off={off} must be positive")
    return (on / off - 1.0) * 100.0


@dataclass(frozen=True)
class BenchRow:
    """One line of the benchmark table / CSV."""

    a_format: str
    b_format: str
    m: int
    n: int
    k: int
    tflops_off: float
    tflops_on: float
    tflops_cublas: float | None
    gpu: str

    @property
    def speedup_pct(self) -> float:
        return speedup_pct(self.tflops_off, self.tflops_on)

    @property
    def label(self) -> str:
        return f"{self.a_format}-{self.b_format}"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["speedup_pct"] = self.speedup_pct
        return {key: d[key] for key in CSV_COLUMNS}


def parse_pair(text: str) -> tuple[str, str]:
    """``"mxfp8-mxfp4"`` (or ``mxfp8xmxfp4``, ``mxfp8,mxfp4``) -> ``("mxfp8", "mxfp4")``; seed pairs only."""
    m = re.fullmatch(r"\s*([a-z0-9]+?fp\d+)\s*[-x,:/ ]\s*([a-z0-9]+)\s*", text.lower())
    if not m:
        raise ValueError(f"format pair {text!r} must look like 'mxfp8-mxfp4'")
    pair = (check_format(m.group(1), "a_format"), check_format(m.group(2), "b_format"))
    if pair not in SEED_FORMAT_PAIRS:
        raise ValueError(
            f"format pair {text!r} is not one the kernel supports; "
            f"choose from {[f'{a}-{b}' for a, b in SEED_FORMAT_PAIRS]}"
        )
    return pair


#: K must be a multiple of this (the kernel's rule: ``gluon_overlap.kernel.K_MULTIPLE``)
K_MULTIPLE = limits.K_MULTIPLE


def check_sizes(m: int, n: int, ks: Sequence[int]) -> None:
    """Refuse sizes the kernel refuses (same rules as :func:`gluon_overlap.kernel.validate`)."""
    for name, v in (("m", m), ("n", n)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name}={v!r} must be a positive integer")
    if n % 8:
        raise ValueError(f"n={n} must be a multiple of 8 (16-byte aligned float16 rows of C)")
    if not ks:
        raise ValueError("give at least one K")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0 or k % K_MULTIPLE:
            raise ValueError(f"k={k!r} must be a positive multiple of {K_MULTIPLE}")


# --- table and CSV (no GPU needed) -----------------------------------------------------
def _num(v: float | None, width: int, digits: int = 1, suffix: str = "") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a".rjust(width + len(suffix))
    return f"{v:{width}.{digits}f}{suffix}"


def format_table(rows: Iterable[BenchRow]) -> str:
    """The seed's table (``format K off on speedup``) plus a cuBLAS column, one block per pair."""
    lines = [f"{'format':14s} {'K':>7s} {'off':>9s} {'on':>9s} {'speedup':>9s} {'cuBLAS':>9s}"]
    last = None
    for row in rows:
        if last is not None and row.label != last:
            lines.append("")
        last = row.label
        lines.append(
            f"{row.label:14s} {row.k:7d} {_num(row.tflops_off, 9)} {_num(row.tflops_on, 9)} "
            f"{_num(row.speedup_pct, 8, 2, '%')} {_num(row.tflops_cublas, 9)}"
        )
    return "\n".join(lines)


def gpu_slug(name: str) -> str:
    """File-name friendly GPU name: ``"NVIDIA B200"`` -> ``"nvidia-b200"``."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return slug or "gpu"


def default_csv_path(gpu: str, root: str | Path = ".") -> Path:
    """Where notebook 07 looks for measurements: ``data/bench/<gpu-slug>.csv``."""
    return Path(root) / "data" / "bench" / f"{gpu_slug(gpu)}.csv"


def csv_text(rows: Iterable[BenchRow]) -> str:
    """The CSV of ``rows``: the header :data:`CSV_COLUMNS`, floats with 3 decimals, empty for n/a."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        d = row.to_dict()
        writer.writerow({k: ("" if v is None else f"{v:.3f}" if isinstance(v, float) else v) for k, v in d.items()})
    return out.getvalue()


def write_csv(rows: Iterable[BenchRow], path: str | Path) -> Path:
    """Write :func:`csv_text` of ``rows`` to ``path`` (missing folders are made) whole or not at all: through a
    temporary file in its folder, renamed when complete and removed on an error or an interrupt."""
    from gluon_overlap.store import write_atomically

    text = csv_text(rows)  # the whole text first: a bad row must not leave a file behind
    write_atomically(path, text, create_parents=True)
    return Path(path)


def read_csv(path: str | Path) -> list[BenchRow]:
    """Read a CSV written by :func:`write_csv` (``speedup_pct`` is recomputed, not trusted)."""
    with Path(path).open(newline="") as f:
        reader = csv.DictReader(f)
        missing = set(CSV_COLUMNS) - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path} lacks the columns {sorted(missing)}")
        rows = []
        for r in reader:
            kwargs: dict[str, Any] = {}
            for fld in fields(BenchRow):
                v = r[fld.name]
                if fld.name in ("m", "n", "k"):
                    kwargs[fld.name] = int(v)
                elif fld.name.startswith("tflops"):
                    if v == "" and fld.name != "tflops_cublas":  # only cuBLAS may be n/a
                        raise ValueError(f"{path}: line {reader.line_num} has no {fld.name}")
                    kwargs[fld.name] = float(v) if v != "" else None
                else:
                    kwargs[fld.name] = v
            rows.append(BenchRow(**kwargs))
    return rows


# --- the measurement (Blackwell only) ----------------------------------------------------
def require_blackwell() -> str:
    """Return the GPU's name, or raise ValueError saying why the benchmark cannot run here."""
    from gluon_overlap.device import check_device

    try:
        check_device()
    except ValueError as exc:
        raise ValueError(f"cannot benchmark here: {exc}") from None
    import torch

    return torch.cuda.get_device_name()


def _time_ms(fn: Callable[[], object]) -> float:
    import triton.testing

    return float(triton.testing.do_bench_cudagraph(fn))


def cublas_scaled_mm(problem: Problem) -> Callable[[], object] | None:
    """A closure running ``torch._scaled_mm`` on the problem's operands, or None if unsupported.

    cuBLAS wants the same 128 x 4 packed-block scale layout the kernel reads; fp4 data is
    viewed as ``float4_e2m1fn_x2`` and e8m0 scale codes as ``float8_e8m0fnu``.  The output
    is bfloat16 (what cuBLAS block-scaled GEMMs support); this is a timing baseline only.
    """
    import torch

    pair = (problem.a.format, problem.b.format)
    if pair not in CUBLAS_PAIRS or not hasattr(torch, "_scaled_mm"):
        return None

    def view_data(q: QuantizedTensor) -> torch.Tensor:
        return q.data if q.format == "mxfp8" else q.data.view(torch.float4_e2m1fn_x2)

    def view_scales(s: torch.Tensor, fmt: str) -> torch.Tensor:
        return s.reshape(-1).view(torch.float8_e4m3fn if fmt == "nvfp4" else torch.float8_e8m0fnu)

    try:
        a, b = view_data(problem.a), view_data(problem.b)
        sa = view_scales(problem.a_scale_swizzled, problem.a.format)
        sb = view_scales(problem.b_scale_swizzled, problem.b.format)

        def run() -> torch.Tensor:
            return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

        run()  # unsupported combinations raise here
        torch.cuda.synchronize()
    except (RuntimeError, TypeError, AttributeError, ValueError):
        return None
    return run


ProgressCallback = Callable[[str], None]


def run_benchmark(
    m: int = DEFAULT_M,
    n: int = DEFAULT_N,
    ks: Sequence[int] = DEFAULT_KS,
    pairs: Sequence[tuple[str, str]] = SEED_FORMAT_PAIRS,
    cublas: bool = True,
    seed: int = 0,
    progress: ProgressCallback | None = None,
) -> list[BenchRow]:
    """Measure every pair and K (the seed's ``main``); refuses without an sm_100/sm_103 GPU."""
    check_sizes(m, n, list(ks))
    pairs = [parse_pair(f"{a}-{b}") for a, b in pairs]
    gpu = require_blackwell()
    import torch

    from gluon_overlap.formats import random_problem
    from gluon_overlap.kernel import matmul

    rows = []
    for a_format, b_format in pairs:
        for k in ks:
            problem = random_problem(m, n, k, a_format, b_format, seed=seed, device="cuda")
            result: dict[bool, float] = {}
            for overlap in (False, True):

                def run(overlap: bool = overlap, p: Problem = problem) -> torch.Tensor:
                    return matmul(
                        p.a,
                        p.b,
                        overlap=overlap,
                        a_scale_swizzled=p.a_scale_swizzled,
                        b_scale_swizzled=p.b_scale_swizzled,
                    )

                result[overlap] = tflops(m, n, k, _time_ms(run))
            base = cublas_scaled_mm(problem) if cublas else None
            tf_cublas = tflops(m, n, k, _time_ms(base)) if base is not None else None
            row = BenchRow(a_format, b_format, m, n, k, result[False], result[True], tf_cublas, gpu)
            rows.append(row)
            if progress is not None:
                progress(format_table([row]).splitlines()[-1])
            torch.cuda.empty_cache()
    return rows
