"""The data backend of the twin: real shared memory, real TMEM, real MMAs, real C.

What each operation does here:

* **TMA load**: copies the quantized block of A / B (raw bytes, rows beyond M or
  N zero-filled as the hardware does) or the block of the swizzled scales (the
  5-D ``[1, rep, rep_k, 2, 256]`` view) into the shared-memory stage of each
  destination CTA.
* **Scale copy** (``tcgen05.cp ... 32x128b.warpx4``): each packed 512-byte chunk
  (32 lanes x 4 row groups x 4 k) goes to 4 TMEM columns at the plan's
  ``a_scale_column`` / ``b_scale_column``: lane ``l`` (and its replicas
  ``32 + l``, ``64 + l``, ``96 + l``) receives 16 bytes, column ``g`` holding the
  4 k-scales of row ``32 g + l``.  The bytes really live in the float32 TMEM array
  (viewed as bytes), so an accumulator write into scale columns would destroy
  them and vice versa.
* **MMA**: decodes the element bytes of the stage and the scale bytes *read back
  from TMEM*, and accumulates ``A_r @ B.T`` (CTA ``r`` holds rows ``128 r ...``) into
  the accumulator window of each CTA's TMEM (overwriting with ``use_acc=False``).
* **TMEM load** returns the subtile's registers (as float16, like the kernel's
  ``.to(c_desc.dtype)``); the shared store and TMA store move them into C
  (clipped at the edges).  C starts as NaN, so a missing store shows.

Hazard bookkeeping (reported through :meth:`Engine.report_hazard`).  The hardware
may read its sources and write its destinations at any moment between an
asynchronous operation's issue and its completion, so the checks use both ends:

* ``mma-overwrites-undrained``: an MMA (its first K step, at issue) targets columns
  whose last *issued* writer -- completed or still in flight -- is another tile
  that the epilogue of that CTA has not drained there yet;
* ``epilogue-reads-overwritten`` / ``epilogue-reads-incomplete`` /
  ``epilogue-reads-unwritten``: a TMEM load of tile ``t`` finds columns written
  since by a later tile, by tile ``t`` before its last K step, or not yet written
  by tile ``t`` at all (never written, or still holding an earlier tile);
* ``tma-overwrites-unconsumed-stage``: a TMA load targets a stage whose previous
  load (landed or still in flight) has not been consumed by its MMA yet;
* ``mma-reads-stale-stage`` / ``scale-copy-reads-stale-stage``: at its issue or at
  its completion, an MMA (or scale copy) finds a stage it reads not holding its own
  tile and K step in both CTAs (e.g. bytes not landed yet);
* ``mma-reads-stale-scales``: the scale columns do not hold the scales copied from
  the MMA's own stage;
* ``scale-copy-overwrites-accumulator``, ``smem-store-overwrites-pending-store``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from gluon_overlap.tmem import (
    BLOCK_N,
    FORMAT_VEC_SIZE,
    NUM_CTAS,
    ROWS_PER_CTA,
    SCALE_K_PER_CHUNK,
    SCALE_ROWS_PER_CHUNK,
    TMEM_COLS,
    TMEM_LANES,
)
from gluon_overlap.twin.engine import Backend, Op
from gluon_overlap.twin.protocol import KernelConfig

CHUNK_BYTES = 512  # one packed [32, 4, 4] scale chunk
STAGE_OPERANDS = ("a", "b", "a_scale", "b_scale")  # what one shared-memory stage holds per CTA


def _e2m1_pair_table() -> torch.Tensor:
    """float32 [256, 2]: the two e2m1 values of each packed byte (low nibble first)."""
    mags = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    table = torch.tensor(mags + [-m for m in mags], dtype=torch.float32)
    codes = torch.arange(256)
    return torch.stack([table[codes & 0xF], table[codes >> 4]], dim=1)


def _e4m3_table() -> torch.Tensor:
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).to(torch.float32)


def _e8m0_table() -> torch.Tensor:
    t = torch.pow(2.0, torch.arange(256, dtype=torch.float64) - 127).to(torch.float32)
    t[255] = float("nan")
    return t


_FP4_PAIRS = _e2m1_pair_table()
_E4M3 = _e4m3_table()
_E8M0 = _e8m0_table()


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype == torch.uint8 else t.view(torch.uint8)


def _ranges(mask: np.ndarray, offset: int = 0) -> list[tuple[int, int]]:
    """Half-open ranges of True entries of a 1-D mask (shifted by ``offset``)."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > 1)
    starts = np.concatenate(([idx[0]], idx[breaks + 1]))
    ends = np.concatenate((idx[breaks], [idx[-1]])) + 1
    return [(int(s) + offset, int(e) + offset) for s, e in zip(starts, ends, strict=True)]


class DataBackend(Backend):
    """Moves the problem's real bytes through SMEM stages and TMEM; writes C; reports hazards."""

    def __init__(self, problem: Any, config: KernelConfig):
        plan = config.plan
        if (problem.m, problem.n, problem.k) != (config.m, config.n, config.k):
            raise ValueError(f"problem shape {(problem.m, problem.n, problem.k)} differs from the config's "
                             f"{(config.m, config.n, config.k)}")
        if (problem.a.format, problem.b.format) != (plan.a_format, plan.b_format):
            raise ValueError(f"problem formats {(problem.a.format, problem.b.format)} differ from the plan's "
                             f"{(plan.a_format, plan.b_format)}")
        self.config, self.plan = config, plan
        self.a_bytes = _as_bytes(problem.a.data)
        self.b_bytes = _as_bytes(problem.b.data)
        self.a_scale_bytes = _as_bytes(problem.a_scale_swizzled).reshape(
            problem.a_scale_swizzled.shape[0], problem.a_scale_swizzled.shape[1], CHUNK_BYTES)
        self.b_scale_bytes = _as_bytes(problem.b_scale_swizzled).reshape(
            problem.b_scale_swizzled.shape[0], problem.b_scale_swizzled.shape[1], CHUNK_BYTES)
        self.vec = FORMAT_VEC_SIZE[plan.a_format]
        self.scale_k = config.scale_k
        self.rep_k = self.scale_k // SCALE_K_PER_CHUNK
        self.a_epb = 1 if plan.a_format == "mxfp8" else 2
        self.b_epb = 1 if plan.b_format == "mxfp8" else 2
        self.scale_table = _E4M3 if plan.a_format == "nvfp4" else _E8M0
        self.c = torch.full((config.m, config.n), float("nan"), dtype=torch.float16)
        grid = config.grid
        # TMEM: [cluster][cta] float32 [128, 512]; the byte view aliases the same storage
        self.tmem = [[torch.zeros(TMEM_LANES, TMEM_COLS, dtype=torch.float32) for _ in range(NUM_CTAS)]
                     for _ in range(grid)]
        self.tmem_bytes = [[t.view(torch.uint8) for t in row] for row in self.tmem]
        # column bookkeeping per [cluster][cta]
        self.col_tile = [[np.full(TMEM_COLS, -1, dtype=np.int64) for _ in range(NUM_CTAS)] for _ in range(grid)]
        self.col_ksteps = [[np.zeros(TMEM_COLS, dtype=np.int64) for _ in range(NUM_CTAS)] for _ in range(grid)]
        # issue-time ownership: tile of the last MMA issued into each column, and whether that tile's
        # epilogue has read the column since (an in-flight MMA may write at any moment)
        self.col_claim = [[np.full(TMEM_COLS, -1, dtype=np.int64) for _ in range(NUM_CTAS)] for _ in range(grid)]
        self.col_drained = [[np.ones(TMEM_COLS, dtype=bool) for _ in range(NUM_CTAS)] for _ in range(grid)]
        self.col_scale_tag = [[np.full(TMEM_COLS, -1, dtype=np.int64) for _ in range(NUM_CTAS)]
                              for _ in range(grid)]
        # shared memory: stage contents and tags keyed (cluster, cta, stage, operand)
        self.smem: dict[tuple[int, int, int, str], torch.Tensor] = {}
        self.smem_tag: dict[tuple[int, int, int, str], tuple[int, int]] = {}
        self.smem_issued: dict[tuple[int, int, int, str], tuple[int, int]] = {}  # tag of the last load issued
        self.consumed: set[tuple[int, int, int]] = set()  # (cluster, tile, kstep) of every completed MMA
        # ops already reported as reading a stale stage (kept alive, so their ids stay unique)
        self._reported: dict[int, Op] = {}
        self.cbuf: dict[tuple[int, int, int], torch.Tensor] = {}
        self.cbuf_pending: dict[tuple[int, int, int], int] = {}
        self._scale_index = self._scale_gather_indices()
        self._dispatch_issue = {"tma_load": self._issue_tma, "scale_copy": self._issue_scale_copy,
                                "mma": self._issue_mma, "tmem_load": self._tmem_load,
                                "smem_store": self._smem_store, "tma_store": self._issue_store}
        self._dispatch_complete = {"tma_load": self._complete_tma, "scale_copy": self._complete_scale_copy,
                                   "mma": self._complete_mma, "tma_store": self._complete_store}

    # --- helpers -------------------------------------------------------------------
    def _scale_gather_indices(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Flat byte indices into a CTA's TMEM byte view of every (row, k-scale) of A and of B.

        Row ``r`` of a chunk sits in lane ``r`` (a replica of lane ``r % 32``), column
        ``chunk column + r // 32``, byte ``k % 4`` -- the ``32x128b.warpx4`` placement.
        """
        plan = self.plan
        row_bytes = TMEM_COLS * 4
        kk = torch.arange(self.scale_k)
        rows = torch.arange(ROWS_PER_CTA)
        a_cols = torch.tensor([plan.a_scale_column(int(k) // SCALE_K_PER_CHUNK) for k in kk])
        a_idx = rows[:, None] * row_bytes + 4 * (a_cols[None, :] + rows[:, None] // 32) + kk[None, :] % 4
        n = torch.arange(BLOCK_N)
        b_cols = torch.tensor([[plan.b_scale_column(int(nb), int(k) // SCALE_K_PER_CHUNK) for k in kk]
                               for nb in range(BLOCK_N // SCALE_ROWS_PER_CHUNK)])
        rho = n % SCALE_ROWS_PER_CHUNK
        b_idx = rho[:, None] * row_bytes + 4 * (b_cols[n // SCALE_ROWS_PER_CHUNK] + rho[:, None] // 32) \
            + kk[None, :] % 4
        return a_idx, b_idx

    def _decode(self, raw: torch.Tensor, epb: int) -> torch.Tensor:
        if epb == 2:
            return _FP4_PAIRS[raw.long()].reshape(raw.shape[0], raw.shape[1] * 2)
        return _E4M3[raw.long()]

    def _hazard(self, kind: str, op: Op, detail: str = "", **kw: Any) -> None:
        self.engine.report_hazard(kind, op, detail, **kw)

    # --- backend interface ----------------------------------------------------------
    def on_issue(self, op: Op) -> Any:
        fn = self._dispatch_issue.get(op.kind)
        return fn(op) if fn else None

    def on_complete(self, op: Op) -> None:
        fn = self._dispatch_complete.get(op.kind)
        if fn:
            fn(op)

    # --- TMA loads ------------------------------------------------------------------
    def _issue_tma(self, op: Op) -> None:
        tag = (op.tile, op.kstep)
        for dest in op.dests:
            key = (op.cluster, dest, op.stage, op.operand)
            old = self.smem_issued.get(key)
            if old is not None and old != tag and (op.cluster, *old) not in self.consumed:
                where = "landed" if self.smem_tag.get(key) == old else "still in flight"
                self._hazard("tma-overwrites-unconsumed-stage", op,
                             f"{op.operand} of tile {old[0]} k-step {old[1]} ({where}) not consumed by its MMA yet",
                             stage=op.stage, cta=dest)
            self.smem_issued[key] = tag

    def _block(self, op: Op, cta: int) -> torch.Tensor:
        """The bytes TMA ``op`` delivers to CTA ``cta`` (zero-filled out of bounds)."""
        plan = self.plan
        bk = plan.block_k
        if op.operand in ("a", "b"):
            src, epb = (self.a_bytes, self.a_epb) if op.operand == "a" else (self.b_bytes, self.b_epb)
            pid = op.pid_m if op.operand == "a" else op.pid_n
            row0 = pid * 256 + ROWS_PER_CTA * cta
            width = bk // epb
            col0 = op.kstep * width
            out = torch.zeros(ROWS_PER_CTA, width, dtype=torch.uint8)
            rows = src[row0:row0 + ROWS_PER_CTA, col0:col0 + width]
            out[:rows.shape[0], :rows.shape[1]] = rows
            return out
        k0 = op.kstep * self.rep_k
        if op.operand == "a_scale":
            out = torch.zeros(1, self.rep_k, CHUNK_BYTES, dtype=torch.uint8)
            reps = [op.pid_m * 2 + cta]
            src = self.a_scale_bytes
        else:  # the full B-scale block: both 128-row chunks of the tile's 256 N rows
            out = torch.zeros(2, self.rep_k, CHUNK_BYTES, dtype=torch.uint8)
            reps = [op.pid_n * 2, op.pid_n * 2 + 1]
            src = self.b_scale_bytes
        for j, rep in enumerate(reps):
            if rep < src.shape[0]:
                blk = src[rep, k0:k0 + self.rep_k]
                out[j, :blk.shape[0]] = blk
        return out

    def _complete_tma(self, op: Op) -> None:
        tag = (op.tile, op.kstep)
        data = self._block(op, op.dests[0]) if op.operand == "b_scale" else None
        for dest in op.dests:
            key = (op.cluster, dest, op.stage, op.operand)
            self.smem[key] = data if data is not None else self._block(op, dest)
            self.smem_tag[key] = tag

    # --- tensor pipe ------------------------------------------------------------------
    @staticmethod
    def _scale_tag(tag: tuple[int, int] | None) -> int:
        return -1 if tag is None else tag[0] * 1_000_000 + tag[1]

    def _check_stage(self, op: Op, operands: tuple[str, ...], kind: str, when: str) -> None:
        """Report (once per op) a stage operand of either CTA not holding ``op``'s tile and K step."""
        if id(op) in self._reported:
            return
        tag = (op.tile, op.kstep)
        stale = [f"cta{cta}.{operand}={self.smem_tag.get((op.cluster, cta, op.stage, operand))}"
                 for cta in range(NUM_CTAS) for operand in operands
                 if self.smem_tag.get((op.cluster, cta, op.stage, operand)) != tag]
        if stale:
            self._reported[id(op)] = op
            self._hazard(kind, op, f"at {when}, stage {op.stage} holds " + ", ".join(stale), stage=op.stage)

    def _issue_scale_copy(self, op: Op) -> None:
        self._check_stage(op, (op.operand,), "scale-copy-reads-stale-stage", "issue")

    def _complete_scale_copy(self, op: Op) -> None:
        plan = self.plan
        self._check_stage(op, (op.operand,), "scale-copy-reads-stale-stage", "completion")
        for cta in range(NUM_CTAS):
            key = (op.cluster, cta, op.stage, op.operand)
            stage = self.smem.get(key)
            tb = self.tmem_bytes[op.cluster][cta]
            tag = self._scale_tag(self.smem_tag.get(key))  # what the copy really read
            if stage is None:
                stage = torch.zeros(2 if op.operand == "b_scale" else 1, self.rep_k, CHUNK_BYTES,
                                    dtype=torch.uint8)
            if op.operand == "a_scale":
                places = [(plan.a_scale_column(kc), stage[0, kc]) for kc in range(self.rep_k)]
            else:
                places = [(plan.b_scale_column(nb, kc), stage[nb, kc])
                          for nb in range(stage.shape[0]) for kc in range(self.rep_k)]
            for col, chunk in places:
                tb[:, 4 * col:4 * col + 16] = chunk.reshape(32, 16).repeat(4, 1)
            cols = op.columns
            sl = slice(cols.offset, cols.end)
            claim = self.col_claim[op.cluster][cta][sl]
            bad = (claim >= 0) & ~self.col_drained[op.cluster][cta][sl]
            for lo, hi in _ranges(bad, cols.offset):
                self._hazard("scale-copy-overwrites-accumulator", op, "scale bytes over an undrained accumulator",
                             columns=(lo, hi), cta=cta)
            self.col_tile[op.cluster][cta][sl] = -2
            self.col_claim[op.cluster][cta][sl] = -2
            self.col_scale_tag[op.cluster][cta][sl] = tag
            self.col_drained[op.cluster][cta][sl] = True

    def _issue_mma(self, op: Op) -> None:
        self._check_stage(op, STAGE_OPERANDS, "mma-reads-stale-stage", "issue")
        if op.kstep != 0:
            return
        w = op.window
        sl = slice(w.offset, w.end)
        for cta in range(NUM_CTAS):
            claim = self.col_claim[op.cluster][cta][sl]
            drained = self.col_drained[op.cluster][cta][sl]
            bad = (claim >= 0) & (claim != op.tile) & ~drained
            for lo, hi in _ranges(bad, w.offset):
                tiles = sorted(set(int(t) for t in claim[lo - w.offset:hi - w.offset]))
                self._hazard("mma-overwrites-undrained", op,
                             f"tile {op.tile} MMA issued into columns of tile(s) {tiles} not drained yet",
                             columns=(lo, hi), cta=cta)
            claim[:] = op.tile
            drained[:] = False

    def _complete_mma(self, op: Op) -> None:
        plan = self.plan
        cl = op.cluster
        self._check_stage(op, STAGE_OPERANDS, "mma-reads-stale-stage", "completion")
        self.consumed.add((cl, op.tile, op.kstep))
        want = self._scale_tag((op.tile, op.kstep))
        for cta in range(NUM_CTAS):
            for win in (plan.a_scale, plan.b_scale):
                tags = self.col_scale_tag[cl][cta][win.offset:win.end]
                if (tags != want).any():
                    self._hazard("mma-reads-stale-scales", op, "scale columns hold another K step",
                                 columns=(win.offset, win.end), cta=cta)
        b_raw = torch.cat([self.smem.get((cl, cta, op.stage, "b"), torch.zeros(
            ROWS_PER_CTA, plan.block_k // self.b_epb, dtype=torch.uint8)) for cta in range(NUM_CTAS)])
        b_el = self._decode(b_raw, self.b_epb)
        a_idx, b_idx = self._scale_index
        w = op.window
        for cta in range(NUM_CTAS):
            a_raw = self.smem.get((cl, cta, op.stage, "a"))
            if a_raw is None:
                a_raw = torch.zeros(ROWS_PER_CTA, plan.block_k // self.a_epb, dtype=torch.uint8)
            flat = self.tmem_bytes[cl][cta].reshape(-1)
            a_s = self.scale_table[flat[a_idx].long()].repeat_interleave(self.vec, dim=1)
            b_s = self.scale_table[flat[b_idx].long()].repeat_interleave(self.vec, dim=1)
            prod = (self._decode(a_raw, self.a_epb) * a_s) @ (b_el * b_s).T
            acc = self.tmem[cl][cta]
            if op.use_acc:
                acc[:, w.offset:w.end] += prod
            else:
                acc[:, w.offset:w.end] = prod
            sl = slice(w.offset, w.end)
            ks = self.col_ksteps[cl][cta]
            same = self.col_tile[cl][cta][sl] == op.tile
            ks[sl] = np.where(same & op.use_acc, ks[sl] + 1, 1)
            self.col_tile[cl][cta][sl] = op.tile
            self.col_scale_tag[cl][cta][sl] = -1

    # --- epilogue ------------------------------------------------------------------------
    def _tmem_load(self, op: Op) -> torch.Tensor:
        cl, cta = op.cluster, op.cta
        cols = op.columns
        sl = slice(cols.offset, cols.end)
        owner = self.col_tile[cl][cta][sl]
        ks = self.col_ksteps[cl][cta][sl]
        k_steps = self.config.k_steps
        # tile ids grow along a cluster's schedule: a larger owner is a later tile
        checks = (
            ("epilogue-reads-overwritten", owner > op.tile, "written by tile(s) {t} since"),
            ("epilogue-reads-unwritten", owner < op.tile, "not written by tile {me} yet (holding tile(s) {t})"),
            ("epilogue-reads-incomplete", (owner == op.tile) & (ks < k_steps), "tile {me} MMA not finished"),
        )
        for kind, mask, text in checks:
            for lo, hi in _ranges(mask, cols.offset):
                tiles = sorted(set(int(x) for x in owner[lo - cols.offset:hi - cols.offset]))
                self._hazard(kind, op, text.format(t=tiles, me=op.tile), columns=(lo, hi))
        self.col_drained[cl][cta][sl] |= self.col_claim[cl][cta][sl] == op.tile
        return self.tmem[cl][cta][:, sl].to(torch.float16)

    def _smem_store(self, op: Op) -> None:
        key = (op.cluster, op.cta, op.buffer)
        if self.cbuf_pending.get(key, 0):
            self._hazard("smem-store-overwrites-pending-store", op,
                         f"staging buffer {op.buffer} still being stored to C")
        self.cbuf[key] = op.value

    def _issue_store(self, op: Op) -> None:
        key = (op.cluster, op.cta, op.buffer)
        self.cbuf_pending[key] = self.cbuf_pending.get(key, 0) + 1

    def _complete_store(self, op: Op) -> None:
        key = (op.cluster, op.cta, op.buffer)
        self.cbuf_pending[key] -= 1
        value = self.cbuf[key]
        rows = max(0, min(op.rows, self.config.m - op.row))
        cols = max(0, min(op.cols, self.config.n - op.col))
        if rows and cols:
            self.c[op.row:op.row + rows, op.col:op.col + cols] = value[:rows, :cols]
