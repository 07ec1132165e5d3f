"""What the executor reports about the real kernel, checked against independent facts: kernel lines,
clear errors for missing builtins, out-of-bounds TMEM / shared-memory accesses as hazards, TMA
out-of-bounds fill and clipping, scales read back from TMEM (SEMANTICS.md section 4), 2-CTA issue rules
(section 3) and the accumulate flag."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from gluon_overlap.emulate.config import KernelConfig, launch
from gluon_overlap.emulate.kernels import DEFAULT_KERNEL, Edit, apply_edits
from gluon_overlap.emulate.runs import ATOL, RTOL, emulate
from gluon_overlap.formats import random_problem
from gluon_overlap.interp.data import ExecBackend
from gluon_overlap.interp.engine import Engine
from gluon_overlap.interp.memory import DeviceDescriptor
from gluon_overlap.tmem import SCALE_K_PER_CHUNK, make_plan

M, N, K, CLUSTERS = 512, 768, 512, 2


@pytest.fixture(scope="module")
def nvfp4():
    return random_problem(M, N, K, "nvfp4", "nvfp4", seed=11)


def _mutant(tmp_path, *edits: tuple[str, str], name: str = "kernel_edit.py"):
    source = apply_edits(DEFAULT_KERNEL.read_text(), [Edit(old, new) for old, new in edits])
    path = tmp_path / name
    path.write_text(source)
    return path


def _line_of(path, needle: str) -> int:
    (n,) = [i + 1 for i, line in enumerate(path.read_text().splitlines()) if needle in line]
    return n


# --- kernel lines -------------------------------------------------------------------------------------------


def test_hazards_carry_the_kernel_line(nvfp4):
    """A race is reported at the op that found it, with the line of kernel.py (the edited copy's lines, shown
    under the original's name) and the line of the other access."""
    r = emulate(nvfp4, clusters=CLUSTERS, breaks=["skip-overlap-wait"], seed=1)
    assert r.hazards
    for h in r.hazards:
        assert h.line is not None
        assert h.line.name == "kernel.py (+skip-overlap-wait)"
        with open(h.line.file) as f:  # the copy that ran
            assert f.read().splitlines()[h.line.lineno - 1].strip() == h.line.text
        assert h.line.function in ("async_mma_scaled", "epilogue_partition")
        assert "kernel.py" in h.detail and str(h.line) in str(h)
    assert {h.partition for h in r.hazards} <= {"mma", "epilogue"}
    d = r.hazards[0].to_dict()
    assert d["line"].startswith("kernel.py (+skip-overlap-wait):")


def test_trace_and_exit_hazards_name_the_default_partition_epilogue(nvfp4, tmp_path):
    """Regression: the epilogue's ops and its exit hazard must say "epilogue", not "main".  Every partition,
    the default one included, is its own process; a CTA's "main" process only meets the other CTA at the
    cluster barrier before warp_specialize and waits for its partitions to end."""
    r = emulate(nvfp4, clusters=CLUSTERS, seed=0)
    kinds = {op.kind for op in r.trace if op.partition == "epilogue"}
    assert {"tmem_load", "tma_store", "store_wait", "arrive"} <= kinds
    main = {(op.kind, op.bar.name) for op in r.trace if op.partition == "main"}
    assert main <= {("arrive", "cluster_barrier"), ("wait", "cluster_barrier"), ("wait", "warp_specialize")}
    path = _mutant(tmp_path, ("    tma.store_wait(0)\n", "    pass\n"))
    r = emulate(nvfp4, clusters=CLUSTERS, seed=0, kernel=str(path))
    assert {h.kind for h in r.hazards} == {"stores-in-flight-at-exit"}
    assert all(h.partition == "epilogue" and "epilogue/cta" in h.detail for h in r.hazards)


def test_a_builtin_the_executor_lacks_is_a_clear_error_naming_it(nvfp4, tmp_path):
    path = _mutant(
        tmp_path,
        (
            "        acc_state = acc_state.next()\n        scheduler = scheduler.step()\n"
            "        i += 1\n    tma.store_wait(0)\n",
            "        acc_state = acc_state.next()\n        scheduler = scheduler.step()\n"
            '        i += 1\n        i = gl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", '
            "[i], dtype=gl.int32, is_pure=True, pack=1)\n    tma.store_wait(0)\n",
        ),
    )
    r = emulate(nvfp4, clusters=CLUSTERS, seed=0, kernel=str(path))
    assert r.failure is not None and not r.ok
    assert "inline_asm_elementwise" in r.failure and "not implemented" in r.failure
    assert f"kernel_edit.py:{_line_of(path, 'gl.inline_asm_elementwise')}" in r.failure
    assert r.deadlock is None  # the run stopped at the error, it is not reported as a hang


# --- out of bounds: hazards, never a torch crash ------------------------------------------------------------


def test_tmem_columns_past_512_are_a_hazard_with_the_line(nvfp4, tmp_path):
    # odd tiles' MMA window shifted by 64 columns: [272, 528) leaves the 512 columns
    path = _mutant(
        tmp_path,
        (
            "        # Even tiles write the left window, odd tiles the right one (the same with overlap off).\n"
            "        if USE_OVERLAP and i % 2 != 0:\n            acc_tmem = p.tmem_pool.slice(RIGHT[0], RIGHT[1])\n",
            "        # Even tiles write the left window, odd tiles the right one (the same with overlap off).\n"
            "        if USE_OVERLAP and i % 2 != 0:\n"
            "            acc_tmem = p.tmem_pool.slice(RIGHT[0] + 64, RIGHT[1])\n",
        ),
    )
    r = emulate(nvfp4, clusters=CLUSTERS, seed=0, kernel=str(path))
    # Triton's compiler refuses the slice before anything runs (the precheck asks it), naming the line
    assert r.refused is not None and "split offset may not exceed the source shape" in r.refused
    assert f"kernel_edit.py:{_line_of(path, 'p.tmem_pool.slice(RIGHT[0] + 64')}" in r.refused
    assert not r.hazards and r.steps == 0


def test_a_tmem_allocation_past_512_columns_is_a_hazard(nvfp4, tmp_path):
    path = _mutant(
        tmp_path, ("[BLOCK_M, TMEM_PLAN.tmem_cols], tmem_layout)", "[BLOCK_M, TMEM_PLAN.tmem_cols + 32], tmem_layout)")
    )
    r = emulate(nvfp4, clusters=CLUSTERS, seed=0, kernel=str(path))
    # Triton's frontend refuses a 544-column TMEM tensor (the precheck asks it), naming the line
    assert r.refused is not None and "power-of-2" in r.refused
    assert f"kernel_edit.py:{_line_of(path, 'tmem_pool = allocate_tensor')}" in r.refused


@pytest.mark.parametrize(
    "old,new,needle",
    [
        (
            "            c_smem = c_smems.index(store_state.index)\n",
            "            c_smem = c_smems.index(store_state.index + 1)\n",
            "c_smems.index(store_state.index + 1)",
        ),
        (
            "p.a_bufs.index(state.index), multicast=True)",
            "p.a_bufs.index(state.index + 3), multicast=True)",
            "p.a_bufs.index(state.index + 3)",
        ),
    ],
    ids=["staging-buffer", "load-stage"],
)
def test_an_index_past_a_shared_buffer_is_a_hazard_with_the_line(nvfp4, tmp_path, old, new, needle):
    path = _mutant(tmp_path, (old, new))
    r = emulate(nvfp4, overlap=False, clusters=CLUSTERS, seed=0, kernel=str(path))
    assert r.failure is None, r.failure
    oob = [h for h in r.hazards if h.kind == "smem-out-of-bounds"]
    assert oob
    assert {h.line.lineno for h in oob} == {_line_of(path, needle)}
    assert "only" in oob[0].detail


def test_tma_out_of_bounds_loads_fill_zeros_and_stores_clip():
    base = torch.arange(30, dtype=torch.float32).reshape(5, 6)
    host = SimpleNamespace(base=base, shape=[5, 6], strides=[6, 1], block_shape=[4, 4], layout=None)
    d = DeviceDescriptor(host, "x", 2)
    box = d.read_block([3, 4], [4, 4])
    want = torch.zeros(4, 4)
    want[:2, :2] = base[3:5, 4:6]
    assert torch.equal(box, want)
    assert torch.equal(d.read_block([-2, -2], [4, 4])[2:, 2:], base[:2, :2])
    assert torch.equal(d.read_block([8, 0], [4, 4]), torch.zeros(4, 4))
    d.write_block([3, 4], torch.full((4, 4), -1.0))
    assert (base[3:, 4:] == -1).all() and base[:3].ge(0).all() and base[:, :4].ge(0).all()
    assert base.shape == (5, 6)


def test_ragged_c_stores_are_clipped_to_the_descriptor():
    """Through the kernel: M = 300, N = 264 -- the last tiles' stores run past C.  C is a view into a larger
    buffer whose extra rows / columns hold a sentinel: the clipped stores leave the sentinel alone and C
    itself matches the reference."""
    m, n, k = 300, 264, 256
    p = random_problem(m, n, k, "mxfp8", "mxfp8", seed=5)
    big = torch.full((m + 40, n + 40), 7.0, dtype=torch.float16)
    c = big[:m, :n]
    c.fill_(float("nan"))
    cfg = KernelConfig(make_plan("mxfp8", "mxfp8"), m, n, k, clusters=1)
    res = launch(Engine(ExecBackend(), seed=3), cfg, problem=p, c=c)
    assert res.ok, [str(h) for h in res.hazards[:3]]
    torch.testing.assert_close(c.float(), p.reference, atol=ATOL, rtol=RTOL)
    assert (big[m:] == 7).all() and (big[:, n:] == 7).all()


# --- the scales are really read back from TMEM (SEMANTICS.md section 4) -------------------------------------


class _CorruptScale(ExecBackend):
    """After cluster 0's first scale copy of ``operand``, overwrite one k-scale in one CTA's TMEM (in all
    four warpx4 replicas of its lane)."""

    def __init__(self, operand, cta, lane, column, byte):
        super().__init__()
        self.operand, self.where, self.done = operand, (cta, lane, column, byte), False

    def on_complete(self, op):
        super().on_complete(op)
        if not self.done and op.kind == "scale_copy" and op.cluster == 0 and op.x.src.alloc.name == self.operand:
            cta, lane, col, byte = self.where
            tb = op.x.dst.alloc.bytes[cta]
            for rep in range(4):
                tb[lane + 32 * rep, 4 * col + byte] = 0x7F  # a huge e4m3 scale (448)
            self.done = True


@pytest.mark.parametrize("operand", ["a", "b"])
def test_a_corrupted_scale_column_corrupts_exactly_its_row_of_c(nvfp4, operand):
    """Column c of a chunk holds, in lane l, the 4 k-scales of row 32 c + l.  Corrupting k-scale 1 of A row 37
    (CTA 1, i.e. C row 128 + 37) or of B row 160 (in CTA 0) must change C exactly in that row / column of
    tile 0, and nowhere else."""
    plan = make_plan("nvfp4", "nvfp4")
    cfg = KernelConfig(plan, M, N, K, clusters=CLUSTERS)
    k = 1
    if operand == "a":
        cta, row = 1, 37
        where = (cta, row % 32, plan.a_scale_column(k // SCALE_K_PER_CHUNK) + row // 32, k % 4)
    else:
        cta, row = 0, 160  # N row 160: chunk nb = 1, row 32 within it -> lane 0, column + 1
        rho = row % 128
        where = (cta, rho % 32, plan.b_scale_column(row // 128, k // SCALE_K_PER_CHUNK) + rho // 32, k % 4)
    backend = _CorruptScale(f"{operand}_scale", *where)
    eng = Engine(backend, seed=3)
    c = torch.full((M, N), float("nan"), dtype=torch.float16)
    res = launch(eng, cfg, problem=nvfp4, c=c)
    assert res.deadlock is None and res.error is None
    bad = ~torch.isclose(c.float(), nvfp4.reference, atol=ATOL, rtol=RTOL)
    rows, cols = torch.nonzero(bad, as_tuple=True)
    assert rows.numel() > 100  # most of the row or column is now wrong
    if operand == "a":
        assert set(rows.tolist()) == {128 * cta + row} and int(cols.max()) < 256
    else:
        assert set(cols.tolist()) == {row} and int(rows.max()) < 256


# --- 2-CTA issue rules and the accumulate flag ----------------------------------------------------------------


def test_non_lead_mma_partition_issues_nothing_and_pair_barriers_get_both_ctas(nvfp4):
    r = emulate(nvfp4, clusters=CLUSTERS, seed=4)
    assert r.ok
    mine = [op for op in r.trace if op.partition == "mma" and op.cta == 1]
    # only each worker's own "done" arrival
    assert sorted((op.cluster, op.bar.name) for op in mine) == [(0, "warp_specialize"), (1, "warp_specialize")]
    assert any(op.partition == "mma" and op.cta == 0 and op.kind == "mma" for op in r.trace)
    for op in r.trace:
        if op.kind in ("expect", "tma_load"):
            assert op.bar.name == "load_ready" and op.bar.cta == 0
        internal = ("cluster_barrier", "warp_specialize")  # the executor's fork / join, not the kernel's
        if op.kind == "arrive" and op.partition == "epilogue" and op.bar.name not in internal:
            assert op.bar.cta == 0 and op.bar.name in ("overlap", "acc_empty")
        if op.kind == "commit":
            assert sorted(b.cta for b in op.bars) == [0, 1] and len({b.name for b in op.bars}) == 1
            assert op.bars[0].name in ("load_empty", "acc_ready")
        if op.kind == "tma_load" and op.operand == "b_scale":
            assert op.cta == 0 and op.dests == (0, 1)
        if op.kind == "tma_load" and op.operand in ("a", "b", "a_scale"):
            assert op.dests == (op.cta,)  # split tensors: each CTA loads its own half


def test_use_acc_is_false_exactly_on_each_tiles_first_k_step(nvfp4):
    r = emulate(nvfp4, clusters=CLUSTERS, seed=0)
    steps = K // make_plan("nvfp4", "nvfp4").block_k
    for cluster in range(CLUSTERS):
        mmas = [op for op in r.trace if op.kind == "mma" and op.cluster == cluster]
        assert len(mmas) == 3 * steps
        assert [op.use_acc for op in mmas] == ([False] + [True] * (steps - 1)) * 3
        assert [op.local for op in mmas] == [t for t in range(3) for _ in range(steps)]


def test_tmem_and_shared_memory_start_as_garbage():
    """Nothing clears TMEM or shared memory on the GPU: the executor's start as NaN (floats) / 0x7f (bytes)."""
    from gluon_overlap.interp.memory import SmemAlloc, TmemAlloc

    t = TmemAlloc("t", SimpleNamespace(name="fp32"), [128, 512], None, 2)
    assert all(torch.isnan(x).all() for x in t.storage)
    s = SmemAlloc("s", SimpleNamespace(name="fp16"), [2, 8, 8], None, 2)
    assert all(torch.isnan(x).all() for x in s.storage)
    b = SmemAlloc("b", SimpleNamespace(name="uint8"), [2, 8, 8], None, 2)
    assert all((x == 0x7F).all() for x in b.storage)


def test_scales_placed_inside_an_accumulator_window_are_a_hazard(nvfp4, tmp_path):
    """Regression (found by planting it): the A scales moved 256 columns down land inside the left window.
    Scale copy and MMA run on the in-order tensor pipe, so no two accesses race and the run used to report
    nothing but a wrong C; now the MMA reading scale bytes as its accumulator is a tmem-kind-mismatch."""
    path = _mutant(
        tmp_path,
        (
            "a_scale_tmem = tmem_pool.slice(TMEM_PLAN.a_scale.offset, TMEM_PLAN.a_scale.cols)",
            "a_scale_tmem = tmem_pool.slice(TMEM_PLAN.a_scale.offset - 256, TMEM_PLAN.a_scale.cols)",
        ),
    )
    r = emulate(nvfp4, clusters=CLUSTERS, seed=0, kernel=str(path))
    assert not r.matches_reference
    hz = [h for h in r.hazards if h.kind == "tmem-kind-mismatch"]
    a = make_plan("nvfp4", "nvfp4").a_scale
    assert hz and all(a.offset - 256 <= h.columns[0] < h.columns[1] <= a.end - 256 for h in hz)
    assert {h.line.function for h in hz} <= {"async_mma_scaled", "epilogue_partition"}
    assert "hold scales" in hz[0].detail


def test_two_clusters_storing_the_same_tile_is_a_hazard(nvfp4, tmp_path):
    """Regression (found by planting it): a scheduler that steps by 1 instead of num_programs makes both
    clusters compute -- and store -- tiles 1..5.  C is right (both store the same values), so the run used
    to be clean; two unordered stores of one element are a race, now reported with both lines."""
    path = _mutant(
        tmp_path,
        (
            "        return TileScheduler._at(self.tile_id + gl.num_programs(axis=0),",
            "        return TileScheduler._at(self.tile_id + 1,",
        ),
    )
    r = emulate(nvfp4, clusters=CLUSTERS, seed=0, kernel=str(path))
    assert r.matches_reference and r.deadlock is None
    hz = [h for h in r.hazards if h.kind == "global-write-after-write"]
    assert hz and {h.kind for h in r.hazards} == {"global-write-after-write"}
    assert all(h.partition == "epilogue" and "tma.async_store" in h.line.text for h in hz)
    assert all("cluster" in h.detail and "kernel_edit.py:" in h.detail for h in hz)
    assert {h.tile for h in hz} <= {1, 2, 3, 4, 5}


def test_a_python_error_in_the_kernel_names_the_kernel_line(nvfp4, tmp_path):
    """Regression: a learner's typo (here ``acc_sub.lod()``) raised inside the kernel was reported as
    ``AttributeError: ... has no attribute 'lod'`` with no hint where; the failure now ends with the line."""
    path = _mutant(
        tmp_path,
        ("            acc = acc_sub.load().to(p.c_desc.dtype)", "            acc = acc_sub.lod().to(p.c_desc.dtype)"),
    )
    r = emulate(nvfp4, clusters=CLUSTERS, seed=0, kernel=str(path))
    # Triton's frontend refuses it first (the precheck asks it), with its AttributeError's words
    assert r.refused is not None and "has no attribute 'lod'" in r.failure
    assert r.failure.endswith(
        f"(at kernel_edit.py:{_line_of(path, 'acc_sub.lod()')} "
        "`acc = acc_sub.lod().to(p.c_desc.dtype)  # tcgen05.ld + wait::ld: the columns are "
        "now in registers`)"
    )
    assert r.failure.count("(at ") == 1


@pytest.mark.parametrize(
    "old,new,needle,words",
    [
        # registers wider than the staging buffer: the data backend found it, and its error escaped emulate
        (
            "                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 1, step), SUBTILE_COLS)\n",
            "                acc_sub = acc_tmem.slice(drain_column(TMEM_PLAN, 1, step), 2 * SUBTILE_COLS)\n",
            "c_smem.store(acc)",
            ("source shape", "[256, 32] must match"),
        ),
        # B not permuted to [K, N]: a torch shape error from inside the MMA's effect escaped emulate
        (
            "tcgen05_mma_scaled(a_smem, b_smem.permute((1, 0)), acc_tmem,",
            "tcgen05_mma_scaled(a_smem, b_smem, acc_tmem,",
            "tcgen05_mma_scaled(a_smem, b_smem, acc_tmem,",
            ("does not support transposed operands",),
        ),
        # float32 registers stored into the float16 buffer: silently converted, a clean run of a kernel Gluon refuses
        (
            "            acc = acc_sub.load().to(p.c_desc.dtype)",
            "            acc = acc_sub.load()",
            "c_smem.store(acc)",
            ("source dtype fp32 and destination dtype fp16 must match",),
        ),
    ],
    ids=["registers-too-wide", "b-not-permuted", "store-without-conversion"],
)
def test_a_kernel_the_executor_cannot_run_is_a_failure_not_a_traceback(nvfp4, tmp_path, old, new, needle, words):
    """Regression: each of these edits used to raise out of emulate (a torch RuntimeError or an ExecutorError
    from the data backend) or, for the last, run clean; now each is the run's failure, naming the line --
    Triton's compiler refuses all three (the precheck asks it), so the words are the compiler's."""
    path = _mutant(tmp_path, (old, new))
    r = emulate(nvfp4, overlap=False, clusters=CLUSTERS, seed=0, kernel=str(path))
    assert r.failure is not None and not r.ok
    assert f"kernel_edit.py:{_line_of(path, needle)}" in r.failure
    assert all(w in r.failure for w in words), r.failure
