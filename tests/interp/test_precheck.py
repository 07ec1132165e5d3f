"""The executor refuses what Triton's compiler refuses for sm_100a (gluon_overlap.compiler.precheck).

Each refused edit (tests/emulate/mutants.py, class ``compiler-rejected``) goes through ``gluon-overlap emulate
--kernel FILE`` and through ``executor.launch``: the run is never "OK", nothing runs, and the report
carries the compiler's reason with a line of the edited file.  The sizes the precheck reads back are
checked against the full ``sm_100a`` compile of the real kernel (gluon_overlap.compiler.compile), and harmless
edits stay accepted. The disk cache of verdicts is off here: every verdict is the compiler's.
"""

from __future__ import annotations

import json

import pytest
import torch
from mutants import BY_NAME, write_mutant

from gluon_overlap.cli import main
from gluon_overlap.compiler.precheck import REFUSAL_PREFIX, precheck
from gluon_overlap.emulate.kernels import load_kernel
from gluon_overlap.formats import random_problem
from gluon_overlap.interp import launch as executor
from gluon_overlap.limits import SMEM_PER_CTA_LIMIT
from gluon_overlap.tmem import TMEM_COLS, make_plan

#: refused edit -> (check, words of the compiler's reason, text of the line the refusal names)
REFUSED = {
    "epilogue-one-warp": ("frontend", "num_warps must be a power of two and >= 4", "acc = acc_sub.load()"),
    "scale-copy-cga-mismatch": ("verifier", "must have the same cga layout", "tcgen05_copy(b_scale, b_scale_tmem)"),
    "seven-stages": ("shared memory", f"Hardware limit: {SMEM_PER_CTA_LIMIT}", "a_bufs = gl.allocate_shared_memory"),
    "tmem-1024-columns": (
        "tensor memory",
        f"1024 TMEM columns allocated, the SM has {TMEM_COLS}",
        "tmem_pool = allocate_tensor_memory",
    ),
    # MLIR locates the warp_specialize op at the kernel's def line
    "worker-three-warps": (
        "verifier",
        "number of warps (3) must be a power of 2",
        "def mma_scaled_warp_specialized_kernel(",
    ),
}
CLI = [
    "emulate",
    "--a-format",
    "nvfp4",
    "--b-format",
    "nvfp4",
    "--m",
    "256",
    "--n",
    "512",
    "--k",
    "512",
    "--clusters",
    "1",
]


@pytest.fixture(autouse=True)
def _ask_the_compiler(monkeypatch):
    """Every test here asks the compiler: no verdict comes from the disk cache (tests/interp/test_verdict_cache.py)."""
    monkeypatch.setenv("GLUON_OVERLAP_VERDICT_CACHE", "off")


def _args(module, m=256, n=512, k=512):
    """The kernel's launch arguments over CPU tensors (what emulate builds)."""
    p = random_problem(m, n, k, "nvfp4", "nvfp4", seed=3)
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    return module.kernel_args(
        p.a.data, p.b.data, p.a_scale_swizzled, p.b_scale_swizzled, c, make_plan("nvfp4", "nvfp4"), m, n, k
    )


def _named_line(path, refusal: str) -> str:
    """The text of the line of ``path`` a refusal names (``... (at FILE:LINE `text`)``)."""
    where = refusal.rsplit(" (at ", 1)[1]
    name, rest = where.split(":", 1)
    assert name == path.name
    return path.read_text().splitlines()[int(rest.split(" ", 1)[0]) - 1]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_edit_through_emulate_cli(name, tmp_path, capsys):
    path = write_mutant(BY_NAME[name], tmp_path)
    rc = main([*CLI, "--kernel", str(path), "--json"])
    d = json.loads(capsys.readouterr().out)
    check, words, text = REFUSED[name]
    assert rc == 1  # never "OK"
    assert d["refused"] and f"({check})" in d["refused"] and words in d["refused"]
    assert text in _named_line(path, d["refused"])
    assert d["failure"].startswith(REFUSAL_PREFIX) and d["events"] == 0 and d["steps"] == 0
    assert main([*CLI, "--kernel", str(path)]) == 1
    table = capsys.readouterr().out
    assert "compiler refuses" in table and "BROKEN" in table


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_edit_through_launch(name, tmp_path):
    path = write_mutant(BY_NAME[name], tmp_path)
    module = load_kernel(path)
    r = executor.launch(module.mma_scaled_warp_specialized_kernel, (1,), _args(module), num_ctas=2)
    assert not r.ok and r.error.startswith(REFUSAL_PREFIX) and r.steps == 0
    assert REFUSED[name][1] in r.error and REFUSED[name][2] in _named_line(path, r.error)


def test_the_sizes_it_reads_are_the_full_compiles(tmp_path):
    """Shared memory and TMEM columns of the real kernel agree with the full sm_100a compile's metadata."""
    from gluon_overlap.compiler.compile import compile_variant

    module = load_kernel(None)
    verdict = precheck(module.mma_scaled_warp_specialized_kernel, _args(module), num_ctas=2, num_warps=4)
    assert verdict.ok and verdict.skipped is None
    full = compile_variant("nvfp4", "nvfp4", overlap=True).stats
    assert (verdict.shared_bytes, verdict.tmem_cols) == (full.shared_bytes, full.tmem_cols)
    again = precheck(module.mma_scaled_warp_specialized_kernel, _args(module), num_ctas=2, num_warps=4)
    assert again.cached and again.shared_bytes == verdict.shared_bytes


@pytest.mark.parametrize("name", ["three-stages", "worker-registers-32-40", "invalidate-after-join"])
def test_harmless_edits_are_accepted(name, tmp_path):
    path = write_mutant(BY_NAME[name], tmp_path)
    module = load_kernel(path)
    verdict = precheck(module.mma_scaled_warp_specialized_kernel, _args(module), num_ctas=2, num_warps=4)
    assert verdict.ok, verdict.message()
    assert verdict.shared_bytes <= SMEM_PER_CTA_LIMIT and verdict.tmem_cols <= TMEM_COLS


def test_precheck_off_runs_the_refused_kernel(tmp_path):
    """``launch(..., precheck=False)`` interprets it anyway (the executor's own checks then apply)."""
    path = write_mutant(BY_NAME["tmem-1024-columns"], tmp_path)
    module = load_kernel(path)
    r = executor.launch(module.mma_scaled_warp_specialized_kernel, (1,), _args(module), num_ctas=2, precheck=False)
    assert r.error is None or not r.error.startswith(REFUSAL_PREFIX)
    assert r.steps > 0


def test_an_argument_without_a_triton_type_skips_the_precheck():
    module = load_kernel(None)
    args = list(_args(module))
    args[5] = "256"  # M as a string: the launcher has no type for it, the executor decides
    verdict = precheck(module.mma_scaled_warp_specialized_kernel, args, num_ctas=2, num_warps=4)
    assert verdict.ok and verdict.skipped and "str" in verdict.skipped
    assert precheck(len, (), num_ctas=1, num_warps=4).skipped  # not a jit function


def test_bad_launch_options_are_refused():
    module = load_kernel(None)
    verdict = precheck(module.mma_scaled_warp_specialized_kernel, _args(module), num_ctas=2, num_warps=3)
    assert not verdict.ok and "num_warps" in verdict.message()
