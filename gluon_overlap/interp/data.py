"""The executor's data backend: what each operation of a running Gluon kernel does to real bytes.

* **TMA load** -- at completion the box at the (CTA-adjusted) coordinate is copied from the
  descriptor's CPU tensor into each destination CTA's shared memory, zero where the box leaves the
  tensor (TMA's out-of-bounds fill); the bytes are subtracted from each destination's barrier copy.
* **tcgen05_copy** -- each packed 512-byte scale chunk (32 rows x 4 row groups x 4 k-scales) becomes
  4 TMEM columns: lane ``l`` (replicated in lanes ``32+l``, ``64+l``, ``96+l``) receives 16 bytes,
  column ``g`` holding the 4 k-scales of row ``32 g + l``; chunk ``(row block nb, k block kc)`` of an
  ``R``-row scale tile goes to column ``offset + 4 (kc R/128 + nb)`` (SEMANTICS.md section 4).  The
  bytes really live in the float32 TMEM array, so an accumulator that overlaps them destroys them.
* **tcgen05_mma_scaled** -- decodes A and B (e2m1 / e4m3) and the scales *read back from TMEM*
  (e8m0 or e4m3), and accumulates ``A_r @ B.T`` into each CTA's rows (CTA ``r`` holds rows
  ``128 r ...``), over whatever the columns held unless ``use_acc`` is false.
* **TMEM load / SMEM load / store** -- synchronous; **TMA store** -- at completion the staging
  buffer goes to the descriptor's tensor, clipped at its edges.

Hazards (each with the kernel line): unordered accesses (:mod:`gluon_overlap.interp.races`), reads of
never-written TMEM or shared memory, accesses past the allocation, commits to pair barriers, and a
CTA that ends with TMA loads or stores in flight.
"""

from __future__ import annotations

import functools
from typing import Any, cast

import numpy as np
import torch

from gluon_overlap.gpu import numerics as N
from gluon_overlap.interp import engine as E
from gluon_overlap.interp import ops
from gluon_overlap.interp.global_mem import GlobalMemory, rmw
from gluon_overlap.interp.memory import ExecutorError, Payload, RegTensor, SmemView, TmemView, garbage, torch_dtype
from gluon_overlap.interp.races import NEVER, Epoch, Race, SyncState, tick

CHUNK_ROWS, CHUNK_K = 128, 4  # one packed scale chunk
_TMEM_KINDS = {"acc": 1, "scales": 2}  # what a TMEM column holds (0: nothing written yet)


def _e2m1_pairs() -> torch.Tensor:
    mags = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    table = torch.tensor(mags + [-m for m in mags], dtype=torch.float32)
    codes = torch.arange(256)
    return torch.stack([table[codes & 0xF], table[codes >> 4]], dim=1)


_FP4_PAIRS = _e2m1_pairs()
#: each byte's two e2m1 values (low nibble first) as one 8-byte word: a byte decodes with one row of
#: ``index_select``, a tenth of the time of indexing ``_FP4_PAIRS`` (the bits are moved, never converted)
_FP4_WORDS = _FP4_PAIRS.contiguous().view(torch.int64).reshape(256)
_E4M3 = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).to(torch.float32)
_E8M0 = torch.pow(2.0, torch.arange(256, dtype=torch.float64) - 127).to(torch.float32)
_E8M0[255] = float("nan")


def lookup(table: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """``table[codes]`` for a 1-D table and integer codes (bytes), shaped like ``codes``: one
    ``index_select``, three times faster than advanced indexing with ``codes.long()``."""
    return table.index_select(0, codes.reshape(-1).int()).reshape(codes.shape)


def decode_operand(raw: torch.Tensor, elem: str) -> torch.Tensor:
    """float32 ``[rows, K]`` of an operand stored ``[rows, K / elements-per-byte]``."""
    if elem == "e2m1":
        if raw.dtype != torch.uint8:
            raise ExecutorError(f"e2m1 operands are packed bytes (uint8), got {raw.dtype}")
        return lookup(_FP4_WORDS, raw).view(torch.float32).reshape(raw.shape[0], raw.shape[1] * 2)
    if elem in ("e4m3", "e5m2"):
        return raw.to(torch.float32) if raw.dtype != torch.uint8 else lookup(_E4M3, raw)
    raise ExecutorError(f"unknown MMA element kind {elem!r}")


def _mma_operand(t: torch.Tensor) -> torch.Tensor:
    """float32 values of an unscaled MMA operand; float32 operands (kind::tf32) keep 10 mantissa bits."""
    if t.dtype == torch.float32:
        return (t.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)
    return t.to(torch.float32)


def scale_placement(rows: int, kscales: int, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat byte index into a CTA's ``[128, cols]`` float32 TMEM of each (row, k-scale) of a scale tile."""
    blocks = rows // CHUNK_ROWS
    r = torch.arange(rows)[:, None]
    k = torch.arange(kscales)[None, :]
    col = offset + 4 * ((k // CHUNK_K) * blocks + r // CHUNK_ROWS) + (r % CHUNK_ROWS) // 32
    return col * 4 + k % CHUNK_K, r % 32  # byte within the lane's row, and the lane


@functools.lru_cache(maxsize=256)
def placement_index(rows: int, kscales: int, offset: int, row_bytes: int, copies: int = 1) -> torch.Tensor:
    """Flat byte index into a CTA's TMEM bytes (``row_bytes`` per lane) of each (row, k-scale) of a scale
    tile at column ``offset`` (:func:`scale_placement`), ``[rows, kscales]``; with ``copies=4``,
    ``[4 * rows * kscales]``: the same for each of the four sub-partitions' copies (warpx4).
    Cached (read only): every scale copy and scaled MMA of a run asks for the same few."""
    byte_idx, lane = scale_placement(rows, kscales, offset)
    if copies == 1:
        return lane * row_bytes + byte_idx
    return torch.cat([((lane + 32 * rep) * row_bytes + byte_idx).reshape(-1) for rep in range(copies)])


def _smem_span(alloc: Any, lo: int, hi: int) -> str:
    """Local elements ``[lo, hi)`` of a shared-memory allocation in its own terms: entries (stages) of a buffer with a
    leading stage dimension when whole ones, else elements."""
    if alloc is None:
        return f"entries [{lo},{hi})"
    n = alloc.stage_elems
    if len(alloc.shape) > 1 and n and lo % n == 0 and hi % n == 0 and n != alloc.shadows[0].size:
        return f"entries [{lo // n},{hi // n})"
    return f"elements [{lo},{hi})"


class ExecBackend(E.Backend):
    """Real data, race detection and (optionally) durations for the executor."""

    def __init__(self, costs: Any = None, data: bool = True):
        """``costs``: durations for timed runs (None, a dict kind -> duration, or a cost backend with
        ``duration`` / ``issue_cost`` / ``resource`` / ``wake_latency``); ``data=False`` moves no bytes
        and checks no races (descriptors over ``meta`` tensors: the timing model)."""
        self.data = data
        self.sync_state = SyncState()
        self.sync_state.on_process_exit = self._process_exit
        #: what the engine calls for happens-before edges (None: no race detection without data)
        self.sync = self.sync_state if data else None
        self.costs = costs  # None, a dict of kind -> duration, or an object with duration / resource
        self.runtime: Any = None
        self._last_store: dict[int, ops.Op] = {}
        self._tmem_kinds: dict[tuple[int, int], np.ndarray] = {}  # (allocation, cta) -> kind per column
        self._global_owner: dict[int, torch.Tensor] = {}  # global tensor -> index of its last store per element
        self._global_epochs: dict[int, list[Epoch]] = {}
        #: pointer accesses between programs: races, and the atomics that order them
        self.global_mem = GlobalMemory(self.sync_state, self._hazard)

    def attach(self, engine: E.Engine) -> None:
        super().attach(engine)
        if self.sync is not None:  # the race detector learns the run's happens-before edges from the engine
            engine.subscribe(self.sync)
        if self.costs is not None and hasattr(self.costs, "attach"):
            self.costs.attach(engine)

    # --- durations (timed mode) ---------------------------------------------------------
    def duration(self, op: ops.Op) -> float:
        c = self.costs
        if c is None:
            return 0.0
        if op.kind not in ops.OP_KINDS:
            raise ExecutorError(f"no duration for op kind {op.kind!r}: the engine knows {sorted(ops.OP_KINDS)}")
        if isinstance(c, dict):
            return float(c.get(op.kind, 0.0))  # a unit-cost table: kinds it leaves out take no time
        return c.duration(op)

    def issue_cost(self, op: ops.Op) -> float:
        c = self.costs
        return c.issue_cost(op) if c is not None and not isinstance(c, dict) else 0.0

    def resource(self, op: ops.Op) -> Any:
        c = self.costs
        if c is None:
            return None
        if isinstance(c, dict):
            return ("tensor", op.cluster) if op.kind in ("mma", "scale_copy") else None
        return c.resource(op)

    def wake_latency(self, op: ops.Op) -> float:
        c = self.costs
        return c.wake_latency(op) if c is not None and not isinstance(c, dict) else 0.0

    # --- hazards ---------------------------------------------------------------------------
    def _report(self, kind: str, op: ops.Op, detail: str, **kw: Any) -> E.Hazard:
        assert self.engine is not None, "a backend reports hazards once attached to its engine"
        return self.engine.report_hazard(kind, op, detail, **kw)

    def _hazard(self, kind: str, op: ops.Op, detail: str, **kw: Any) -> None:
        self._report(kind, op, detail, **kw)

    def _races(self, races: list[Race], op: ops.Op, space: str, cta: int, alloc: Any = None) -> None:
        """Report each race once per (kind, earlier access): a view of many runs of elements (a column slice)
        racing with one earlier access is one hazard, over the span of the cells involved."""
        merged: dict[tuple[str, int], tuple[Race, int, int]] = {}
        for race in races:
            key = (race.kind, id(race.earlier))
            lo, hi = race.cells
            if key in merged:
                first, a, b = merged[key]
                merged[key] = (first, min(a, lo), max(b, hi))
            else:
                merged[key] = (race, lo, hi)
        for race, lo, hi in merged.values():
            other = race.earlier.op
            where = f" (at {other.line})" if other is not None and other.line is not None else ""
            what = {
                "write-after-write": ("overwrites", "wrote", "write before this write"),
                "write-after-read": ("overwrites", "reads", "read before this write"),
                "read-after-write": ("reads", "writes", "write before this read"),
            }[race.kind]
            kw: dict[str, Any]
            if space == "tmem":
                span, kw = f"columns [{lo},{hi})", {"columns": (lo, hi)}
            else:
                span, kw = _smem_span(alloc, lo, hi), {"stage": alloc.stage_of(lo) if alloc is not None else lo}
            detail = (
                f"{race.later_what} {what[0]} {span} of {race.space} that "
                f"{race.earlier.what}{where} {what[1]}, and no barrier orders that {what[2]}"
            )
            self._hazard(f"{space}-{race.kind}", op, detail, cta=cta, **kw)

    def _out_of_range(self, op: ops.Op, bad: Any, what: str) -> None:
        """A view computed out of range is used: the hazard, once per view, at the line that computed it."""
        if bad.reported:
            return
        bad.reported = True
        used = f" (at {op.line})" if op.line is not None else ""
        hz = self._report(bad.kind, op, f"{bad.detail}; used by {what}{used}")
        if bad.line is not None:
            hz.line = bad.line

    # --- dispatch (one key: the op's kind) -------------------------------------------------
    def on_issue(self, op: ops.Op) -> Any:
        x = op.x
        if x is None:
            return None
        issue = _ISSUE.get(op.kind)
        if issue is None:
            raise ExecutorError(f"the data backend has no effect for op kind {op.kind!r}")
        if not self.data:
            if op.kind in ("mma", "scale_copy", "commit"):
                x.vc = None
            return self._no_data(op, x)
        return issue(self, op, x)

    def _no_data(self, op: ops.Op, x: Any) -> Any:
        if op.kind in ("tmem_load", "smem_load"):
            view = x.view
            return RegTensor(torch.empty(0), view.shape, view.dtype, x.layout)
        if op.kind in ("global_load", "global_atomic"):
            return RegTensor(torch.empty(0), x.ptrs.shape, x.dtype, x.ptrs.layout)
        return None

    def on_complete(self, op: ops.Op) -> None:
        x = op.x
        if x is None or not self.data:
            return
        fn = _COMPLETE.get(op.kind)
        if fn is not None:
            fn(self, op, x)

    # --- shared memory ------------------------------------------------------------------------
    def _smem_access(self, op: ops.Op, view: SmemView, cta: int, vc: Any, epoch: Epoch, write: bool) -> bool:
        if view.bad is not None:
            self._out_of_range(op, view.bad, epoch.what)
            return False
        shadow = view.alloc.shadows[cta]
        races: list[Race] = []
        for lo, hi in view.regions():
            races.extend(shadow.access(lo, hi, vc, epoch, write))
        if races:
            self._races(races, op, "smem", cta, view.alloc)
        return True

    def _own_access(self, op: ops.Op, what: str) -> tuple[Any, Epoch]:
        """The clock and date of a synchronous access by ``op``'s process (one more step of its program)."""
        vc = self.sync_state.step(op.proc)
        comp = self.sync_state.proc_comp[op.proc.pid]
        return vc, Epoch(comp, int(vc[comp]), what, op)

    def _smem_read(self, op: ops.Op, view: SmemView, cta: int, vc: Any, epoch: Epoch) -> None:
        """An asynchronous read of shared memory: checked for races and for bytes never written."""
        self._smem_access(op, view, cta, vc, epoch, False)
        self._check_written_smem(op, view, cta)

    def _issue_smem_store(self, op: ops.Op, x: Any) -> None:
        view, value = x.view, x.value
        cta = op.cta
        vc, epoch = self._own_access(op, f"the store into {view}")
        if not self._smem_access(op, view, cta, vc, epoch, True):
            return
        target = view.local(cta)
        if list(target.shape) != list(value.local.shape):
            raise ExecutorError(
                f"store of {value} into {view}: CTA {cta} holds {list(target.shape)}, the registers "
                f"{list(value.local.shape)}" + (f" (at {op.line})" if op.line else "")
            )
        N.to_reg(target).copy_(value.local)  # the same Gluon dtype (smem.store checks), register form

    def _issue_smem_load(self, op: ops.Op, x: Any) -> RegTensor:
        view = x.view
        cta = op.cta
        vc, epoch = self._own_access(op, f"the load of {view}")
        self._smem_access(op, view, cta, vc, epoch, False)
        return RegTensor(view.local(cta).clone(), view.shape, view.dtype, x.layout)

    # --- TMA ----------------------------------------------------------------------------------
    def _issue_tma_load(self, op: ops.Op, x: Any) -> None:
        x.vc = self.sync_state.step(op.proc)
        for cta, (bar, _) in zip(x.dests, x.tx_targets, strict=True):
            epoch = Epoch(0, NEVER, f"the TMA load of {x.desc.name} into {x.view}", op)
            x.epochs.setdefault(id(bar), []).append(epoch)
            self._smem_access(op, x.view, cta, x.vc, epoch, True)

    def _complete_tma_load(self, op: ops.Op, x: Any) -> None:
        if not x.view.valid:
            return
        rows = getattr(x, "rows", None)
        block = x.desc.read_block(x.coord, x.box) if rows is None else x.desc.read_rows(rows, x.coord[1], x.box[1])
        for cta in x.dests:
            target = x.view.local(cta)
            if list(target.shape) != list(block.shape):
                raise ExecutorError(
                    f"TMA box {list(block.shape)} does not fit CTA {cta}'s part {list(target.shape)} of {x.view}"
                )
            target.copy_(block.to(target.dtype) if block.dtype != target.dtype else block)

    def _issue_tma_store(self, op: ops.Op, x: Any) -> None:
        vc, comp, seq = self.sync_state.store_step(op.proc)
        self._last_store[op.proc.pid] = op
        epoch = Epoch(comp, seq, f"the TMA store of {x.view}", op)
        self._smem_read(op, x.view, op.cta, vc, epoch)
        rows = getattr(x, "rows", None)
        if rows is None:
            self._global_store(op, x, vc, epoch)
        else:  # a scatter: each row is a [1, width] box of its own
            for r in rows:
                self._global_store(op, Payload(desc=x.desc, coord=[r, x.coord[1]]), vc, epoch)

    def _global_store(self, op: ops.Op, x: Any, vc: Any, epoch: Epoch) -> None:
        """Two TMA stores of one global element by different processes must be ordered (a store_wait and a
        barrier chain from the first to the second); from two clusters they never are.  The data would hide
        it -- both may store the same value -- so it is checked on who wrote what."""
        region = x.desc.clip(x.coord, x.desc.local_block)
        if region is None:
            return
        key = id(x.desc.base)
        owner = self._global_owner.get(key)
        if owner is None:
            owner = self._global_owner[key] = torch.full(tuple(x.desc.shape), -1, dtype=torch.int32)
            self._global_epochs[key] = []
        epochs = self._global_epochs[key]
        low, high = (int(v) for v in torch.aminmax(owner[region]))
        # the earlier stores that still own an element here (one, most often: no sort-based unique then)
        owners = () if high < 0 else (high,) if low == high else torch.unique(owner[region]).tolist()
        for prev in owners:
            if prev < 0:
                continue
            earlier = epochs[prev]
            if earlier.op.proc is op.proc or earlier.before(vc):
                continue
            rows = region[0]
            where = f" (at {earlier.op.line})" if earlier.op.line is not None else ""
            self._hazard(
                "global-write-after-write",
                op,
                f"{epoch.what} writes elements of {x.desc.name} (rows [{rows.start},{rows.stop})) that "
                f"{earlier.what} of {earlier.op.proc.name}{where} also writes, and nothing orders them",
            )
            break
        owner[region] = len(epochs)
        epochs.append(epoch)

    def _complete_tma_store(self, op: ops.Op, x: Any) -> None:
        if x.view.valid:
            rows = getattr(x, "rows", None)
            if rows is None:
                x.desc.write_block(x.coord, x.view.local(op.cta))
            else:
                x.desc.write_rows(rows, x.coord[1], x.view.local(op.cta))

    def _check_written_smem(self, op: ops.Op, view: SmemView, cta: int) -> None:
        if view.bad is not None:
            return
        shadow = view.alloc.shadows[cta]
        runs = [r for lo, hi in view.regions() for r in shadow.unwritten(lo, hi)]
        if runs:
            a, b = runs[0][0], runs[-1][1]
            self._hazard(
                "smem-read-uninitialized",
                op,
                f"{_smem_span(view.alloc, a, b)} of {view} were never written",
                cta=cta,
                stage=view.alloc.stage_of(a),
            )

    # --- tensor memory ------------------------------------------------------------------------
    def _tmem_range(self, op: ops.Op, view: TmemView) -> tuple[int, int] | None:
        if view.bad is not None:
            self._out_of_range(op, view.bad, f"the {op.kind} of {view}")
            return None
        cols = view.columns
        if cols.offset < 0 or cols.end > view.alloc.cols or cols.end > 512:
            limit = min(view.alloc.cols, 512)
            self._hazard(
                "tmem-out-of-bounds",
                op,
                f"columns [{cols.offset},{cols.end}) leave the {limit} allocated",
                columns=(cols.offset, cols.end),
            )
            return None
        return cols.offset, cols.end

    def _tmem_access(self, op: ops.Op, view: TmemView, ctas: list[int], vc: Any, epoch: Epoch, write: bool) -> bool:
        rng = self._tmem_range(op, view)
        if rng is None:
            return False
        for cta in ctas:
            shadow = view.alloc.shadows[cta]
            if not write:
                for a, b in shadow.unwritten(*rng):
                    self._hazard(
                        "tmem-read-uninitialized",
                        op,
                        f"{epoch.what} reads TMEM columns [{a},{b}) that nothing wrote: they hold garbage",
                        columns=(a, b),
                        cta=cta,
                    )
            self._races(shadow.access(*rng, vc, epoch, write), op, "tmem", cta)
            self._tmem_kind(op, view, cta, rng, epoch, write)
        return True

    def _tmem_kind(self, op: ops.Op, view: TmemView, cta: int, rng: tuple[int, int], epoch: Epoch, write: bool) -> None:
        """What the columns hold -- accumulator values or block scales -- must be what a reader reads them as.

        The race check cannot see a scale copy and an MMA clobbering each other's columns: both run on the
        in-order tensor pipe, so they are always ordered.  But a window that overlaps a scale slot then
        reads scale bytes as float32 partial sums (or the MMA reads sums as scales): C is wrong although
        no two accesses race."""
        key = (id(view.alloc), cta)
        kinds = self._tmem_kinds.get(key)
        if kinds is None:
            kinds = self._tmem_kinds[key] = np.zeros(view.alloc.cols, dtype=np.int8)
        mine = _TMEM_KINDS[view.kind]
        lo, hi = rng
        if write:
            kinds[lo:hi] = mine
            return
        other = np.flatnonzero((kinds[lo:hi] != 0) & (kinds[lo:hi] != mine))
        if other.size:
            a, b = lo + int(other[0]), lo + int(other[-1]) + 1
            held = {v: k for k, v in _TMEM_KINDS.items()}[int(kinds[a])]
            self._hazard(
                "tmem-kind-mismatch",
                op,
                f"{epoch.what} reads TMEM columns [{a},{b}) as {view.kind}, "
                f"but they hold {held} (the last write there was of the other kind)",
                columns=(a, b),
                cta=cta,
            )

    def _issue_tmem_load(self, op: ops.Op, x: Any) -> RegTensor:
        view = x.view
        cta = op.cta
        vc, epoch = self._own_access(op, f"the TMEM load of {view}")
        rows = view.local_rows()
        if not self._tmem_access(op, view, [cta], vc, epoch, False):
            return RegTensor(torch.full((rows, view.shape[-1]), float("nan")), view.shape, view.dtype, x.layout)
        if view.kind == "scales":
            tb = view.alloc.bytes[cta]
            raw = lookup(tb.view(-1), placement_index(rows, view.shape[-1], view.offset, tb.shape[1]))
            return RegTensor(raw.view(torch_dtype(view.dtype)), view.shape, view.dtype, x.layout)
        return RegTensor(view.read(cta), view.shape, view.dtype, x.layout)

    def _issue_tmem_store(self, op: ops.Op, x: Any) -> None:
        view, value = x.view, x.value
        cta = op.cta
        vc, epoch = self._own_access(op, f"the TMEM store into {view}")
        if self._tmem_access(op, view, [cta], vc, epoch, True):
            if view.kind == "scales":
                v = value.local.to(torch_dtype(view.dtype)).contiguous()
                self._place_scales(view, cta, v.view(torch.uint8).reshape(view.local_rows(), -1))
            else:
                view.write(cta, value.local)

    # --- global memory through pointers -----------------------------------------------------
    def _lanes(self, op: ops.Op, x: Any, what: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The flat element offsets of the active lanes, and which lanes are active; a lane outside its
        tensor's storage is reported (and dropped)."""
        ptrs = x.ptrs
        offsets = ptrs.offsets.expand(ptrs.shape) if list(ptrs.offsets.shape) != ptrs.shape else ptrs.offsets
        active = torch.ones(ptrs.shape, dtype=torch.bool) if x.mask is None else x.mask
        size = ptrs.base.flat.numel()
        outside = active & ((offsets < 0) | (offsets >= size))
        if bool(outside.any()):
            bad = offsets[outside]
            self._hazard(
                "global-out-of-bounds",
                op,
                f"{what} through {ptrs} reaches element {int(bad[0])} of "
                f"{ptrs.base.name}, whose storage holds {size} (mask it off)",
            )
            active = active & ~outside
        return offsets, active

    def _issue_global_load(self, op: ops.Op, x: Any) -> RegTensor:
        offsets, active = self._lanes(op, x, "gl.load")
        flat = N.to_reg(x.ptrs.base.flat)  # register form (unsigned 16/32/64: the signed twin's bits)
        self.global_mem.access(op, flat, offsets[active], "read", f"the gl.load through {x.ptrs}", x.ptrs.base.name)
        out = garbage(list(x.ptrs.shape), flat.dtype)
        if x.other is not None:  # already of the pointee type (language.load)
            out = x.other.local.expand(x.ptrs.shape).clone()
        out[active] = flat[offsets[active]]
        return RegTensor(out, x.ptrs.shape, x.dtype, x.ptrs.layout)

    def _issue_global_store(self, op: ops.Op, x: Any) -> None:
        offsets, active = self._lanes(op, x, "gl.store")
        flat = N.to_reg(x.ptrs.base.flat)  # a view: writing it writes the tensor
        self.global_mem.access(op, flat, offsets[active], "write", f"the gl.store through {x.ptrs}", x.ptrs.base.name)
        flat[offsets[active]] = x.values[active]  # of the pointee type already (language.store)

    def _issue_global_atomic(self, op: ops.Op, x: Any) -> RegTensor:
        """An atomic read-modify-write: acquire (the clocks released at the elements), the race check (atomics
        never race with atomics), the update lane by lane, release; the old values come back."""
        offsets, active = self._lanes(op, x, f"gl.atomic_{x.rmw}")
        flat = N.to_reg(x.ptrs.base.flat)
        idx = offsets[active]
        if x.sem in ("acquire", "acq_rel"):
            self.global_mem.acquire(op, flat, idx)
        self.global_mem.access(
            op,
            flat,
            idx,
            "atomic_read" if x.rmw == "load" else "atomic",
            f"the gl.atomic_{x.rmw} through {x.ptrs}",
            x.ptrs.base.name,
        )
        values = x.values.expand(x.ptrs.shape) if x.values is not None else flat.new_zeros(x.ptrs.shape)
        cmp = None if x.cmp is None else x.cmp.expand(x.ptrs.shape)[active]
        old = torch.zeros(x.ptrs.shape, dtype=flat.dtype)
        old[active] = rmw(flat, idx, values[active], cmp, x.rmw, x.dtype)
        if x.sem in ("release", "acq_rel"):
            self.global_mem.release(op, flat, idx)
        return RegTensor(old, x.ptrs.shape, x.dtype, x.ptrs.layout)

    # --- cluster launch control -------------------------------------------------------------------
    def _issue_clc(self, op: ops.Op, x: Any) -> None:
        """The response's write is dated like a TMA load's: by the phase of the barrier its bytes complete."""
        x.vc = self.sync_state.step(op.proc)
        epoch = Epoch(0, NEVER, f"the CLC response into {x.view}", op)
        x.epochs.setdefault(id(x.tx_targets[0][0]), []).append(epoch)
        self._smem_access(op, x.view, op.cta, x.vc, epoch, True)

    def _complete_clc(self, op: ops.Op, x: Any) -> None:
        """The cancellation happens now: the next cluster of the grid that has not started is taken over."""
        cancelled = self.runtime.cancel_cluster()
        if not x.view.valid:
            return
        word = torch.tensor([-1 if cancelled is None else cancelled, 0], dtype=torch.int64)
        target = x.view.local(op.cta)
        target.copy_(word.view(target.dtype).reshape(target.shape))

    # --- cp.async -----------------------------------------------------------------------------
    def _issue_cp_async(self, op: ops.Op, x: Any) -> None:
        """The copy's write is dated by its number in the partition's copy order: only a ``wait_group`` that
        covers it, or the mbarrier phase its ``mbarrier_arrive`` completes, orders a read after it."""
        vc = self.sync_state.step(op.proc)
        epoch = Epoch(x.comp, cast(ops.CpAsync, op).seq, f"the cp.async into {x.view}", op)
        self._smem_access(op, x.view, op.cta, vc, epoch, True)
        x.offsets, x.active = self._lanes(op, x, "async_copy.async_load")

    def _complete_cp_async(self, op: ops.Op, x: Any) -> None:
        if not x.view.valid:
            return
        flat = x.ptrs.base.flat
        values = torch.zeros(list(x.ptrs.shape), dtype=flat.dtype)  # masked-off lanes: zero-filled
        values[x.active] = flat[x.offsets[x.active]]
        target = x.view.local(op.cta)
        target.copy_(values.reshape(target.shape).to(target.dtype))

    def _issue_cp_arrive(self, op: ops.Op, x: Any) -> None:
        x.vc = tick(self.sync_state.step(op.proc).copy(), x.comp, cast(ops.CpArrive, op).upto)

    def _issue_scale_copy(self, op: ops.Op, x: Any) -> None:
        vc, comp, seq = self.sync_state.tensor_step(op.proc)
        x.vc = vc
        epoch = Epoch(comp, seq, f"the tcgen05_copy of {x.src} into {x.dst}", op)
        for cta in x.ctas:
            self._smem_read(op, x.src, cta, vc, epoch)
        self._tmem_access(op, x.dst, x.ctas, vc, epoch, True)

    def _complete_scale_copy(self, op: ops.Op, x: Any) -> None:
        dst = x.dst
        if self._tmem_range(op, dst) is None or not x.src.valid:
            return
        for cta in x.ctas:
            logical = x.src.logical(cta)  # [R, k-scales] as the unswizzled view
            rows = dst.local_rows()
            if dst.kind != "scales":  # a plain copy: the CTA's rows, element for element
                part = logical[cta * rows : (cta + 1) * rows] if dst.split else logical
                dst.write(cta, part.reshape(rows, -1))
                continue
            raw = logical.contiguous().view(torch.uint8) if logical.dtype != torch.uint8 else logical
            self._place_scales(dst, cta, raw[cta * rows : (cta + 1) * rows] if dst.split else raw)

    def _place_scales(self, dst: TmemView, cta: int, part: torch.Tensor) -> None:
        """Scale bytes ``[rows, k-scales]`` into CTA ``cta``'s TMEM at ``dst`` (the 32x128b.warpx4 placement)."""
        tb = dst.alloc.bytes[cta]
        # warpx4: the 32 lanes are repeated in each of the four sub-partitions
        index = placement_index(part.shape[0], part.shape[1], dst.offset, tb.shape[1], copies=4)
        tb.view(-1).scatter_(0, index, part.reshape(-1).repeat(4))

    def _scales(self, view: Any, cta: int, rows: int, split: bool) -> torch.Tensor:
        """float32 [rows, k-scales] of the scales a CTA's MMA reads: decoded from the bytes its TMEM holds
        at ``view``, or from shared memory (the CTA's rows of the logical scale tile)."""
        table = _E4M3 if torch_dtype(view.dtype) == torch.float8_e4m3fn else _E8M0
        if isinstance(view, SmemView):
            raw = view.logical(cta)
            raw = raw.contiguous().view(torch.uint8) if raw.dtype != torch.uint8 else raw
            raw = raw.reshape(raw.shape[0], -1)
            return lookup(table, raw[cta * rows : (cta + 1) * rows] if split else raw)
        rows = view.local_rows()
        tb = view.alloc.bytes[cta]
        return lookup(table, lookup(tb.view(-1), placement_index(rows, view.shape[-1], view.offset, tb.shape[1])))

    def _issue_mma(self, op: ops.Op, x: Any) -> None:
        vc, comp, seq = self.sync_state.tensor_step(op.proc)
        x.vc = vc
        epoch = Epoch(comp, seq, f"the MMA into {x.acc}", op)
        smem_operands = [v for v in (x.a, x.b) if isinstance(v, SmemView)]
        tmem_reads = [v for v in (x.a,) if isinstance(v, TmemView)]
        if x.scaled:
            smem_operands += [v for v in (x.a_scale, x.b_scale) if isinstance(v, SmemView)]
            tmem_reads += [v for v in (x.a_scale, x.b_scale) if isinstance(v, TmemView)]
        for cta in x.ctas:
            for v in smem_operands:
                self._smem_read(op, v, cta, vc, epoch)
        for view in tmem_reads:
            self._tmem_access(op, view, x.ctas, vc, Epoch(comp, seq, f"the MMA's read of {view}", op), False)
        if x.use_acc:
            self._tmem_access(
                op, x.acc, x.ctas, vc, Epoch(comp, seq, f"the accumulating MMA (use_acc) {x.acc}", op), False
            )
        self._tmem_access(op, x.acc, x.ctas, vc, epoch, True)

    def _complete_mma(self, op: ops.Op, x: Any) -> None:
        acc = x.acc
        tmem_views = [acc] + [
            v for v in (x.a, getattr(x, "a_scale", None), getattr(x, "b_scale", None)) if isinstance(v, TmemView)
        ]
        if any(self._tmem_range(op, v) is None for v in tmem_views):
            return
        if not all(v.valid for v in (x.a, x.b) if isinstance(v, SmemView)):
            return
        rows = acc.local_rows()
        cols = acc.columns
        if x.scaled:
            a_all = decode_operand(x.a.logical(0), x.a_type)  # [M, K]
            b_all = decode_operand(x.b.logical(0).transpose(0, 1).contiguous(), x.b_type)  # [N, K]
        else:
            b_all = _mma_operand(x.b.logical(0)).transpose(0, 1)  # [N, K]
        k = b_all.shape[1]
        for cta in x.ctas:
            if x.scaled:
                a_rows = a_all[cta * rows : (cta + 1) * rows] if acc.split else a_all
                a_s = self._scales(x.a_scale, cta, rows, acc.split)
                b_s = self._scales(x.b_scale, cta, b_all.shape[0], False)
                a_val = a_rows * a_s.repeat_interleave(k // a_s.shape[1], dim=1)
                b_val = b_all * b_s.repeat_interleave(k // b_s.shape[1], dim=1)
            else:
                if isinstance(x.a, TmemView):
                    a_rows = _mma_operand(x.a.read(cta))
                else:
                    a_all = _mma_operand(x.a.logical(0))
                    a_rows = a_all[cta * rows : (cta + 1) * rows] if acc.split else a_all
                a_val, b_val = a_rows, b_all
            prod = a_val @ b_val.T
            tm = acc.alloc.storage[cta]
            if acc.col_stride != 1 or torch_dtype(acc.dtype) != torch.float32 or acc.emap is not None:
                acc.write(cta, acc.read(cta).float() + prod if x.use_acc else prod)
            elif x.use_acc:
                tm[:rows, cols.offset : cols.end] += prod
            else:
                tm[:rows, cols.offset : cols.end] = prod

    def _issue_commit(self, op: ops.Op, x: Any) -> None:
        vc, _, _ = self.sync_state.tensor_step(op.proc)
        x.vc = vc

    # --- the end of a process -----------------------------------------------------------------
    def _process_exit(self, proc: E.Process) -> None:
        """A partition ended: every TMA store it issued must be covered by a ``store_wait`` -- whether or
        not this interleaving happened to finish them (on the GPU the CTA may exit first)."""
        issued = self.sync_state.stores_issued.get(proc.pid, 0)
        waited = self.sync_state.stores_waited.get(proc.pid, 0)
        if issued > waited:
            self._hazard(
                "stores-in-flight-at-exit",
                self._last_store[proc.pid],
                f"{proc.name} ended with {issued - waited} TMA store(s) no store_wait covers: without a "
                "final tma.store_wait(0) the CTA may exit, freeing its shared memory, before they are done",
            )


#: op kind -> what the data backend does when the op is issued / completes (one row per kind)
_ISSUE = {
    "tma_load": ExecBackend._issue_tma_load,
    "tma_store": ExecBackend._issue_tma_store,
    "scale_copy": ExecBackend._issue_scale_copy,
    "mma": ExecBackend._issue_mma,
    "commit": ExecBackend._issue_commit,
    "tmem_load": ExecBackend._issue_tmem_load,
    "tmem_store": ExecBackend._issue_tmem_store,
    "smem_load": ExecBackend._issue_smem_load,
    "smem_store": ExecBackend._issue_smem_store,
    "global_load": ExecBackend._issue_global_load,
    "global_store": ExecBackend._issue_global_store,
    "global_atomic": ExecBackend._issue_global_atomic,
    "cp_async": ExecBackend._issue_cp_async,
    "cp_arrive": ExecBackend._issue_cp_arrive,
    "clc_cancel": ExecBackend._issue_clc,
}
_COMPLETE = {
    "tma_load": ExecBackend._complete_tma_load,
    "tma_store": ExecBackend._complete_tma_store,
    "scale_copy": ExecBackend._complete_scale_copy,
    "mma": ExecBackend._complete_mma,
    "cp_async": ExecBackend._complete_cp_async,
    "clc_cancel": ExecBackend._complete_clc,
}
#: kinds the engine handles itself (barrier semantics; no payload)
ENGINE_KINDS = frozenset({"wait", "arrive", "expect", "store_wait", "cp_wait"})
_missing = ops.OP_KINDS - set(_ISSUE) - ENGINE_KINDS
if _missing:  # pragma: no cover - a new Op class without a data effect
    raise ImportError(f"execdata has no data effect for op kinds {sorted(_missing)}")
