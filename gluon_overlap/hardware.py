"""Hardware descriptions for the timing model (``gluon_overlap/data/hardware/<gpu>.json``, shipped as package data).

Every number in a description carries its provenance and how sure we are of it::

    "hbm_tb_s": {"value": 8.0, "unit": "TB/s", "kind": "vendor lead",
                 "source": "NOTES.md hardware table (HGX B200: ~7.7-8 TB/s)",
                 "range": [7.7, 8.0], "range_source": "the NOTES.md table's own spread"}

``kind`` is one of

* ``"vendor lead"`` -- a vendor (or secondary-source) figure, not a measurement;
* ``"calibrated"``  -- solved so that the model reproduces published measurements (the single-buffered
  results in NOTES.md, the B300 overlap-off / overlap-on table in ``data/published``; the gain is never set
  directly, only the mechanism's parameters: :mod:`gluon_overlap.timing.fit`); ``source`` says how;
* ``"estimate"``    -- a first-principles estimate (cycle counts, widths); ``source`` gives
  the reasoning.

``range`` is the plausible interval ``[lo, hi]`` (``lo <= value <= hi``) and ``range_source`` why.  The
parameters fall into :data:`GROUPS` (the epilogue's instruction rates, the memory system, the synchronisation
latencies, the tensor pipe); :meth:`Hardware.corner` moves one group to the fast or the slow end of its ranges,
which is how :mod:`gluon_overlap.timing.band` turns the ranges into a band around every prediction.

:func:`load_hardware` validates a description against the schema (:func:`validate_description`: a
``ValueError`` naming the file and the field for a missing or unknown parameter, a non-number, NaN, infinity,
a zero or negative rate, a range that does not contain the value) and returns a frozen :class:`Hardware`
whose attributes are the plain values; ``hw.provenance(name)`` gives the full record.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast


def _import_jsonschema() -> ModuleType:
    """``import jsonschema``, without the IRI-syntax checker of its optional format checks: importing
    ``rfc3987_syntax`` (which Jupyter's extras install) builds an Earley parser of RFC 3987 -- 3 s of CPU in every
    process that loads a hardware description (each ``gluon-overlap model``, each notebook kernel of the timing
    model). The schema here checks no ``format``, so nothing it validates changes. Only when this process has not
    imported either already, and ``rfc3987_syntax`` stays importable by its name afterwards."""
    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        import jsonschema

        return jsonschema
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # jsonschema skips that checker
    try:
        import jsonschema
    finally:
        if sys.modules.get("rfc3987_syntax", False) is None:
            del sys.modules["rfc3987_syntax"]
    return jsonschema


if TYPE_CHECKING:
    import jsonschema
else:
    jsonschema = _import_jsonschema()

DATA_DIR = Path(__file__).resolve().parent / "data" / "hardware"
KINDS = ("vendor lead", "calibrated", "estimate")

#: parameters by uncertainty group (the band is built from each group's fast and slow corner)
GROUPS: dict[str, tuple[str, ...]] = {
    "epilogue": (
        "tmem_ld_bytes_per_clk",
        "tmem_ld_latency_clk",
        "cvt_per_clk_per_smsp",
        "bar_sync_clk",
        "fence_clk",
        "tma_issue_clk",
        "epilogue_cost_factor",
    ),
    "memory": (
        "hbm_tb_s",
        "hbm_efficiency",
        "hbm_write_efficiency",
        "l2_mb",
        "l2_resident_fraction",
        "l2_read_bytes_per_clk_per_sm",
        "l2_write_bytes_per_clk_per_sm",
        "l2_write_tb_s",
        "l2_read_tb_s",
        "l2_store_load_sharing",
        "smem_bytes_per_clk",
        "smem_b_operand_reads",
        "smem_drain_share",
        "tma_latency_clk",
        "dram_extra_latency_clk",
    ),
    "sync": (
        "mbarrier_local_clk",
        "mbarrier_remote_clk",
        "mma_issue_clk",
        "mma_pipeline_latency_clk",
        "launch_overhead_us",
    ),
    "tensor": (
        "peak_fp8_pflops",
        "peak_fp4_pflops",
        "fp4_k64_rate_per_fp8",
        "tensor_efficiency_fp8",
        "tensor_efficiency_fp4",
    ),
}
#: parameters whose *lower* value makes the kernel faster (latencies, overheads); for all others higher is faster
LOWER_IS_FASTER = frozenset(
    [
        n for names in GROUPS.values() for n in names if n.endswith(("_clk", "_us")) and "_per_" not in n
    ]  # rates per clock are not latencies
    + ["l2_store_load_sharing", "epilogue_cost_factor", "smem_b_operand_reads"]
)
#: parameters that may be 0 (a latency can vanish, stores may not share the loads' path); others must be > 0
MAY_BE_ZERO = LOWER_IS_FASTER - {"smem_b_operand_reads"}
#: fractions: in (0, 1]
FRACTIONS = (
    "hbm_efficiency",
    "hbm_write_efficiency",
    "tensor_efficiency_fp8",
    "tensor_efficiency_fp4",
    "l2_resident_fraction",
    "l2_store_load_sharing",
    "smem_drain_share",
)
INTEGERS = ("sms", "fp8_flops_per_clk_per_sm")
#: the what-if epilogue scale factors :meth:`Hardware.with_epilogue_scaled` accepts
EPILOGUE_SCALE_LIMITS = (1e-3, 1e3)


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
    l2_write_tb_s: float
    l2_read_tb_s: float
    l2_store_load_sharing: float
    smem_bytes_per_clk: float
    tmem_ld_bytes_per_clk: float
    tmem_ld_latency_clk: float
    cvt_per_clk_per_smsp: float
    bar_sync_clk: float
    fence_clk: float
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
    #: the FP4 MMA rate per SM per clock of the K = 64 instruction form (the one Triton emits) over the FP8 rate
    fp4_k64_rate_per_fp8: float = 2.0
    epilogue_cost_factor: float = 1.0  # calibrated: the epilogue drain's cost / its first-principles estimate
    #: achievable fraction of the HBM peak for the C write-back (writes stream less efficiently than reads)
    hbm_write_efficiency: float = 0.7
    #: shared-memory reads of each CTA's half of B per 2-CTA MMA (1: read once for both tensor cores, measured)
    smem_b_operand_reads: float = 1.0
    #: the share of what the MMAs' operand reads leave of shared memory that a drain beside them gets (measured)
    smem_drain_share: float = 0.5
    records: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name in ("name", "description", "records"):
                continue
            check_value(self.name, f.name, getattr(self, f.name))

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

    def mma_flops_per_sm(self, rate_class: str, k_per_instruction: int) -> float:
        """Dense FLOP/s of one SM for the MMA instruction the kernel issues: its rate class (``"fp8"`` for
        ``kind::mxf8f6f4``, ``"fp4"`` for ``kind::mxf4`` / ``mxf4nvf4``) and its K per instruction.

        The vendor FP4 peak is the rate of the part's widest FP4 form: K = 64 on sm_100 (B200, GB200), K = 96 on
        sm_103 (Blackwell Ultra: instruction-descriptor bit 31, CUTLASS's ``SM103_MXF4_ULTRA`` atoms).  A K = 64
        FP4 instruction runs at ``fp4_k64_rate_per_fp8`` times the FP8 rate (2 on every Blackwell part unless
        a description says otherwise: on sm_100 that *is* the vendor FP4 peak)."""
        if rate_class == "fp8":
            if k_per_instruction != 32:
                raise ValueError(
                    f"k_per_instruction={k_per_instruction!r}: an FP8-rate (kind::mxf8f6f4) MMA has K = 32"
                )
            return self.peak_flops_per_sm("fp8")
        if rate_class != "fp4":
            raise ValueError(f"rate_class={rate_class!r} must be 'fp8' or 'fp4'")
        if k_per_instruction == 64:
            return self.peak_flops_per_sm("fp8") * self.fp4_k64_rate_per_fp8
        if k_per_instruction == 96:
            if self.peak_fp4_pflops <= self.peak_fp8_pflops * self.fp4_k64_rate_per_fp8:
                raise ValueError(f"{self.name}: no K = 96 FP4 MMA (its FP4 peak is the K = 64 form's rate)")
            return self.peak_flops_per_sm("fp4")
        raise ValueError(f"k_per_instruction={k_per_instruction!r}: an FP4 MMA has K = 64 (or 96 on sm_103)")

    def tensor_efficiency(self, rate_class: str) -> float:
        return {"fp8": self.tensor_efficiency_fp8, "fp4": self.tensor_efficiency_fp4}[rate_class]

    @property
    def hbm_bytes_per_s(self) -> float:
        """Achievable HBM read bandwidth of the whole GPU (peak x efficiency)."""
        return self.hbm_tb_s * 1e12 * self.hbm_efficiency

    @property
    def hbm_write_bytes_per_s(self) -> float:
        """Achievable HBM write bandwidth of the whole GPU (peak x write efficiency)."""
        return self.hbm_tb_s * 1e12 * self.hbm_write_efficiency

    def provenance(self, name: str) -> dict:
        """The JSON record (value, unit, kind, source, range, range_source) of parameter ``name``."""
        return dict(self.records[name])

    def value_range(self, name: str) -> tuple[float, float]:
        """The plausible ``(lo, hi)`` of parameter ``name`` (the value itself for a what-if variant)."""
        rng = self.records.get(name, {}).get("range")
        value = getattr(self, name)
        return (float(rng[0]), float(rng[1])) if rng else (value, value)

    def scaled(self, **changes: float) -> Hardware:
        """A hypothetical variant with some values replaced (provenance marked 'what if', range = the value)."""
        records = dict(self.records)
        values: dict[str, Any] = dict(changes)  # keyword arguments of replace(), each checked to be a parameter
        for key, value in changes.items():
            if key not in {f.name for f in fields(self)} or key in ("name", "description", "records"):
                raise ValueError(f"{key!r} is not a hardware parameter")
            records[key] = {
                "value": value,
                "kind": "estimate",
                "source": "what-if variant of " + self.name,
                "range": [value, value],
                "range_source": "what-if: a single value",
            }
        return replace(self, name=self.name + "-variant", records=records, **values)

    def corner(self, group: str, fast: bool) -> Hardware:
        """This GPU with every parameter of ``group`` at the end of its range that makes the kernel
        faster (``fast=True``) or slower; provenance records are kept (they still describe the ranges)."""
        if group not in GROUPS:
            raise ValueError(f"group={group!r} is not one of {sorted(GROUPS)}")
        changes: dict[str, Any] = {}  # keyword arguments of replace(): parameters of the group
        for name in GROUPS[group]:
            lo, hi = self.value_range(name)
            changes[name] = lo if (name in LOWER_IS_FASTER) == fast else hi
        for name in INTEGERS:
            if name in changes:
                changes[name] = int(changes[name])
        return replace(self, name=f"{self.name}-{group}-{'fast' if fast else 'slow'}", **changes)

    #: the per-subtile epilogue latencies (clocks) that :meth:`with_epilogue_scaled` multiplies
    EPILOGUE_LATENCIES = ("tmem_ld_latency_clk", "bar_sync_clk", "fence_clk", "tma_issue_clk")
    #: the epilogue's instruction rates that :meth:`with_epilogue_scaled` divides
    EPILOGUE_RATES = ("tmem_ld_bytes_per_clk", "cvt_per_clk_per_smsp")

    def with_epilogue_scaled(self, factor: float) -> Hardware:
        """A what-if variant whose epilogue subtile takes ``factor`` times as long: every epilogue
        latency times ``factor``, the TMEM load and conversion rates divided by it."""
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 0:
            raise ValueError(f"factor={factor!r} must be a finite number > 0")
        if not EPILOGUE_SCALE_LIMITS[0] <= factor <= EPILOGUE_SCALE_LIMITS[1]:
            raise ValueError(
                f"factor={factor!r} must be between {EPILOGUE_SCALE_LIMITS[0]:g} and "
                f"{EPILOGUE_SCALE_LIMITS[1]:g} (a what-if beyond that describes no GPU)"
            )
        changes = {name: getattr(self, name) * factor for name in self.EPILOGUE_LATENCIES}
        changes.update({name: getattr(self, name) / factor for name in self.EPILOGUE_RATES})
        for name, value in changes.items():
            if not math.isfinite(value) or (value <= 0 and name in self.EPILOGUE_RATES):
                raise ValueError(f"factor={factor!r} is too extreme: {name} would be {value!r}")
        return self.scaled(**changes)


def check_value(where: str, name: str, value: object, label: str | None = None) -> None:
    """ValueError unless ``value`` is a finite number allowed for parameter ``name`` (shown as ``label``)."""
    label = label or name
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: {label}={value!r} must be a number")
    if not math.isfinite(value):
        raise ValueError(f"{where}: {label}={value!r} must be finite")
    if name in INTEGERS and value != int(value):
        raise ValueError(f"{where}: {label}={value!r} must be a whole number")
    if value < 0 or (value == 0 and name not in MAY_BE_ZERO):
        raise ValueError(f"{where}: {label}={value!r} must be {'>= 0' if name in MAY_BE_ZERO else '> 0'}")
    if name in FRACTIONS and not value <= 1:
        raise ValueError(f"{where}: {label}={value!r} must be in {'[0, 1]' if name in MAY_BE_ZERO else '(0, 1]'}")


def parameter_names() -> list[str]:
    return [f.name for f in fields(Hardware) if f.name not in ("name", "description", "records")]


def description_schema() -> dict:
    """The JSON Schema of a description: ``name``, ``description`` and one record per parameter of
    :class:`Hardware` (value, unit, kind, source, range, range_source), nothing missing, nothing unknown."""
    text = {"type": "string", "minLength": 1}
    record = {
        "type": "object",
        "required": ["value", "unit", "kind", "source", "range", "range_source"],
        "properties": {
            "value": {},
            "unit": {"type": "string"},
            "kind": {"enum": list(KINDS)},
            "source": text,
            "range": {"type": "array", "minItems": 2, "maxItems": 2},
            "range_source": text,
        },
    }
    names = parameter_names()
    return {
        "type": "object",
        "required": ["name", "description", "params"],
        "properties": {
            "name": text,
            "description": text,
            "params": {
                "type": "object",
                "required": names,
                "additionalProperties": False,
                "properties": dict.fromkeys(names, record),
            },
        },
    }


#: what each failed schema rule means, said in the words of the description's fields
_RULES = {
    "enum": "needs a 'kind' in " + str(KINDS),
    "minLength": "must be a non-empty string",
    "minItems": "must be [lo, hi]",
    "maxItems": "must be [lo, hi]",
}


def _schema_message(error: jsonschema.ValidationError, where: str) -> str:
    path = [str(p) for p in error.absolute_path]
    # an error a validator yields has these set (jsonschema leaves them Unset only on an error made by hand)
    validator, expected = cast(str, error.validator), cast(Any, error.validator_value)
    instance = cast(Any, error.instance)
    if validator == "required":
        missing = sorted(set(expected) - set(instance))
        if path == ["params"]:
            return f"{where}: missing parameters {missing}, unknown []"
        field = ".".join(path + [missing[0]])
        return f"{where}: {field} is missing" + (" (it must be [lo, hi])" if missing[0] == "range" else "")
    if validator == "additionalProperties" and path == ["params"]:
        unknown = sorted(set(instance) - set(parameter_names()))
        return f"{where}: missing parameters [], unknown {unknown}"
    at = ".".join(path) if len(path) > 1 else f"'{path[0]}'" if path else "the description"
    if validator == "type":
        kind = {"object": "an object", "string": "a string", "array": "a list [lo, hi]"}[expected]
        if len(path) == 2 and path[0] == "params":
            kind += " with value, unit, kind, source, range, range_source"
        return f"{where}: {at} must be {kind}, got {type(instance).__name__}"
    if validator == "enum":
        return f"{where}: {path[-2] if len(path) > 1 else at} {_RULES['enum']} and a 'source'"
    return f"{where}: {at} {_RULES.get(validator, error.message)}"


def validate_description(raw: object, where: str) -> dict:
    """Check a parsed description against :func:`description_schema` (``jsonschema``), then each number against
    what its parameter allows (:func:`check_value`); return its ``params``.  ``where`` names the file."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: the description must be a JSON object, got {type(raw).__name__}")
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(raw))  # the shallowest: the most general
    if error is not None:
        raise ValueError(_schema_message(error, where))
    params = raw["params"]
    for pname in parameter_names():
        rec = params[pname]
        check_value(where, pname, rec["value"], f"params.{pname}.value")
        rng = rec["range"]
        for end in rng:
            check_value(where, pname, end, f"params.{pname}.range")
        if not rng[0] <= rec["value"] <= rng[1]:
            raise ValueError(f"{where}: params.{pname}.range={rng} must contain the value {rec['value']}")
    return params


_VALIDATOR = jsonschema.Draft202012Validator(description_schema())


def known_gpus() -> list[str]:
    """Names of the GPU descriptions in ``gluon_overlap/data/hardware``."""
    return sorted(p.stem for p in DATA_DIR.glob("*.json"))


def load_hardware(name: str) -> Hardware:
    """Load ``gluon_overlap/data/hardware/<name>.json``; ValueError listing the known GPUs otherwise."""
    known = known_gpus()
    key = str(name).lower()
    if key not in known:
        raise ValueError(f"gpu={name!r} is not described; known GPUs: {', '.join(known)}")
    where = f"{key}.json"
    params, raw = parse_description((DATA_DIR / where).read_bytes(), where)
    values = {pname: rec["value"] for pname, rec in params.items()}
    for pname in INTEGERS:
        values[pname] = int(values[pname])
    return Hardware(name=raw["name"], description=raw["description"], records=params, **values)


#: a hardware description is a small JSON file: refused before parsing beyond these
MAX_DESCRIPTION_BYTES = 1_000_000
MAX_DESCRIPTION_DEPTH = 8  #: nesting of objects and arrays (the schema needs 4)
MAX_NUMBER_DIGITS = 40


def _nesting_depth(text: str) -> int:
    """The deepest nesting of ``{`` / ``[`` outside strings (a linear scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "}]":
            depth -= 1
    return deepest


def _number(token: str) -> float:
    if len(token) > MAX_NUMBER_DIGITS:
        raise ValueError(f"the number {token[:20]}... has {len(token)} characters, more than {MAX_NUMBER_DIGITS}")
    return float(token) if any(c in token for c in ".eE") else int(token)


def parse_description(data: bytes | str, where: str) -> tuple[dict, dict]:
    """Parse and validate one hardware description (``params``, the whole object): ``ValueError`` naming
    ``where`` for text that is too large, not UTF-8, nested deeper than :data:`MAX_DESCRIPTION_DEPTH`,
    with absurdly long numbers, not JSON or not the schema -- all checked before or while parsing."""
    if not isinstance(data, (bytes, str)):
        raise ValueError(f"{where}: a description is text or bytes, got {type(data).__name__}")
    if len(data) > MAX_DESCRIPTION_BYTES:
        raise ValueError(
            f"{where}: {len(data):,} bytes, more than the {MAX_DESCRIPTION_BYTES:,} a description may have"
        )
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{where}: not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x}); a hardware "
                "description is a JSON file"
            ) from None
    if "\x00" in data:
        raise ValueError(f"{where}: contains a NUL character: a binary file, not a JSON description")
    depth = _nesting_depth(data)
    if depth > MAX_DESCRIPTION_DEPTH:
        raise ValueError(
            f"{where}: nested {depth} levels deep, more than the {MAX_DESCRIPTION_DEPTH} a description may have"
        )
    try:
        raw = json.loads(data, parse_constant=_refuse_constant, parse_int=_number, parse_float=_number)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    return validate_description(raw, where), raw


def _refuse_constant(token: str) -> float:
    return float(token)  # NaN / Infinity parse, and check_value then names the field that holds them
