"""Hardware descriptions for the timing model (``gluon_overlap/data/hardware/<gpu>.json``, shipped as package data).

Every number in a description carries its provenance::

    "hbm_tb_s": {"value": 8.0, "unit": "TB/s", "kind": "vendor lead",
                 "source": "NOTES.md hardware table (HGX B200: ~7.7-8 TB/s)"}

``kind`` is one of

* ``"vendor lead"`` -- a vendor (or secondary-source) figure, not a measurement;
* ``"calibrated"``  -- solved so that the model reproduces the *single-buffered* published
  results in NOTES.md (never the overlap gain); ``source`` says how;
* ``"estimate"``    -- a first-principles estimate (cycle counts, widths); ``source`` gives
  the reasoning.

:func:`load_hardware` returns a frozen :class:`Hardware` whose attributes are the plain values;
``hw.provenance(name)`` gives the full record.  :meth:`Hardware.scaled` makes a hypothetical
variant (used by the monotonicity tests and the notebook's "what if" cells).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data" / "hardware"
KINDS = ("vendor lead", "calibrated", "estimate")


@dataclass(frozen=True)
class Hardware:
    """One GPU, as the timing model sees it (values only; provenance in ``records``)."""

    name: str
    description: str
    sms: int
    peak_fp8_pflops: float
    peak_fp4_pflops: float
    fp8_flops_per_clk_per_sm: int
    hbm_tb_s: float
    hbm_efficiency: float
    l2_mb: float
    l2_resident_fraction: float
    l2_read_bytes_per_clk_per_sm: float
    l2_write_bytes_per_clk_per_sm: float
    smem_bytes_per_clk: float
    tmem_ld_bytes_per_clk: float
    tmem_ld_latency_clk: float
    cvt_clk_per_subtile: float
    epilogue_sync_clk: float
    tma_issue_clk: float
    tma_latency_clk: float
    dram_extra_latency_clk: float
    mbarrier_local_clk: float
    mbarrier_remote_clk: float
    mma_issue_clk: float
    mma_pipeline_latency_clk: float
    launch_overhead_us: float
    tensor_efficiency_fp8: float
    tensor_efficiency_fp4: float
    records: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name in ("name", "description", "records"):
                continue
            value = getattr(self, f.name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{self.name}: {f.name}={value!r} must be a non-negative number")
        for name in ("sms", "peak_fp8_pflops", "peak_fp4_pflops", "fp8_flops_per_clk_per_sm", "hbm_tb_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{self.name}: {name}={getattr(self, name)!r} must be positive")
        for name in ("hbm_efficiency", "tensor_efficiency_fp8", "tensor_efficiency_fp4", "l2_resident_fraction"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"{self.name}: {name}={value!r} must be in (0, 1]")

    # --- derived quantities ---------------------------------------------------
    @property
    def clock_ghz(self) -> float:
        """SM clock implied by the dense FP8 peak: peak / (SMs x FP8 FLOP per clock per SM)."""
        return self.peak_fp8_pflops * 1e6 / (self.sms * self.fp8_flops_per_clk_per_sm)

    def clk(self, cycles: float) -> float:
        """``cycles`` SM clocks in seconds."""
        return cycles / (self.clock_ghz * 1e9)

    def peak_flops_per_sm(self, rate_class: str) -> float:
        """Dense peak FLOP/s of one SM for ``rate_class`` ``"fp8"`` or ``"fp4"``."""
        peak = {"fp8": self.peak_fp8_pflops, "fp4": self.peak_fp4_pflops}[rate_class]
        return peak * 1e15 / self.sms

    def tensor_efficiency(self, rate_class: str) -> float:
        return {"fp8": self.tensor_efficiency_fp8, "fp4": self.tensor_efficiency_fp4}[rate_class]

    @property
    def hbm_bytes_per_s(self) -> float:
        """Achievable HBM bandwidth of the whole GPU (peak x efficiency)."""
        return self.hbm_tb_s * 1e12 * self.hbm_efficiency

    def provenance(self, name: str) -> dict:
        """The JSON record (value, unit, kind, source) of parameter ``name``."""
        return dict(self.records[name])

    def scaled(self, **changes: float) -> Hardware:
        """A hypothetical variant with some values replaced (provenance marked 'what if')."""
        records = dict(self.records)
        for key, value in changes.items():
            records[key] = {"value": value, "kind": "estimate", "source": "what-if variant of " + self.name}
        return replace(self, name=self.name + "-variant", records=records, **changes)


    #: the per-subtile epilogue latencies (clocks) that :meth:`with_epilogue_scaled` scales
    EPILOGUE_LATENCIES = ("tmem_ld_latency_clk", "cvt_clk_per_subtile", "epilogue_sync_clk", "tma_issue_clk")

    def with_epilogue_scaled(self, factor: float) -> Hardware:
        """A what-if variant whose epilogue subtile takes ``factor`` times as long: every epilogue
        latency times ``factor``, the TMEM load bandwidth divided by it."""
        if not factor > 0:
            raise ValueError(f"factor={factor!r} must be > 0")
        changes = {name: getattr(self, name) * factor for name in self.EPILOGUE_LATENCIES}
        changes["tmem_ld_bytes_per_clk"] = self.tmem_ld_bytes_per_clk / factor
        return self.scaled(**changes)


def known_gpus() -> list[str]:
    """Names of the GPU descriptions in ``gluon_overlap/data/hardware``."""
    return sorted(p.stem for p in DATA_DIR.glob("*.json"))


def load_hardware(name: str) -> Hardware:
    """Load ``gluon_overlap/data/hardware/<name>.json``; ValueError listing the known GPUs otherwise."""
    known = known_gpus()
    key = name.lower()
    if key not in known:
        raise ValueError(f"gpu={name!r} is not described; known GPUs: {', '.join(known)}")
    raw = json.loads((DATA_DIR / f"{key}.json").read_text())
    params = raw["params"]
    expected = {f.name for f in fields(Hardware)} - {"name", "description", "records"}
    missing, extra = expected - set(params), set(params) - expected
    if missing or extra:
        raise ValueError(f"{key}.json: missing parameters {sorted(missing)}, unknown {sorted(extra)}")
    for pname, rec in params.items():
        if rec.get("kind") not in KINDS or not rec.get("source"):
            raise ValueError(f"{key}.json: {pname} needs a 'kind' in {KINDS} and a 'source'")
    values = {pname: rec["value"] for pname, rec in params.items()}
    return Hardware(name=raw["name"], description=raw["description"], records=params, **values)
