"""The kernel cross-compiled for sm_100a on a CPU: its artifacts must show the TMEM plan.

Each variant compiles once per test session (module fixture + the in-process cache);
the expectations come from the TmemPlan's fields and from the seed's own numbers.
"""

from __future__ import annotations

import json

import pytest

from gluon_overlap import cli, evidence
from gluon_overlap.compiler import compile as gc
from gluon_overlap.tmem import SEED_FORMAT_PAIRS, make_plan

# The seed's evaluated plan (SEMANTICS.md section 4 and the seed's test_tmem_overlap_accum):
# right accumulator offset, A-scale offset, B-scale offset, early-release step, with overlap on.
SEED_OVERLAP_ON = {
    ("mxfp8", "mxfp8"): (244, 500, 504, 0),
    ("mxfp8", "mxfp4"): (244, 500, 504, 0),
    ("mxfp4", "mxfp4"): (232, 488, 496, 0),
    ("nvfp4", "nvfp4"): (208, 464, 480, 1),
}
# Overlap off: one accumulator at 0, the scales right after it (A at 256, B after A's columns).
SEED_OVERLAP_OFF_B = {
    ("mxfp8", "mxfp8"): 260,
    ("mxfp8", "mxfp4"): 260,
    ("mxfp4", "mxfp4"): 264,
    ("nvfp4", "nvfp4"): 272,
}
# The PTX MMA kind each pair needs (NOTES.md, measured on the seed).
SEED_MMA_KIND = {
    ("mxfp8", "mxfp8"): "mxf8f6f4.block_scale.block32",
    ("mxfp8", "mxfp4"): "mxf8f6f4.block_scale.block32",
    ("mxfp4", "mxfp4"): "mxf4.block_scale.block32",
    ("nvfp4", "nvfp4"): "mxf4nvf4.block_scale.block16",
}

IDS = [v.slug for v in gc.VARIANTS]


@pytest.fixture(scope="module")
def compiled() -> dict:
    """All eight variants, compiled once (cold ~30-45 s, warm from TRITON_CACHE_DIR ~2 s)."""
    return {v: r for v, r in zip(gc.VARIANTS, gc.compile_all(progress=None), strict=True)}


def test_the_eight_seed_variants():
    assert len(gc.VARIANTS) == 8
    assert {(v.a_format, v.b_format) for v in gc.VARIANTS} == set(SEED_FORMAT_PAIRS)
    assert sorted(v.overlap for v in gc.VARIANTS) == [False] * 4 + [True] * 4


@pytest.mark.parametrize("variant", gc.VARIANTS, ids=IDS)
def test_compiles_to_an_sm100a_cubin(compiled, variant):
    result = compiled[variant]
    assert result.cubin[:4] == b"\x7fELF"
    assert ".target sm_100a" in result.ptx
    assert result.stats.num_ctas == 2
    assert result.stats.num_warps == 8  # 4 epilogue warps + 1 MMA + 1 load, in groups of 4
    assert 0 < result.stats.registers <= 255


@pytest.mark.parametrize("variant", gc.VARIANTS, ids=IDS)
def test_all_512_tmem_columns_are_allocated(compiled, variant):
    result = compiled[variant]
    assert result.stats.tmem_cols == 512
    assert gc.tmem_alloc_columns(result.ptx) == [512]
    assert "tcgen05.alloc.cta_group::2" in result.ptx


@pytest.mark.parametrize("variant", gc.VARIANTS, ids=IDS)
def test_ttgir_tmem_offsets_equal_the_plan(compiled, variant):
    result = compiled[variant]
    plan = make_plan(variant.a_format, variant.b_format, overlap=variant.overlap)
    found = result.evidence
    assert found.accumulators == tuple(sorted({plan.left.offset, plan.right.offset}))
    assert found.a_scale == (plan.a_scale.offset,)
    assert found.b_scale == (plan.b_scale.offset,)
    # ... and the plan's numbers are the seed's.
    pair = (variant.a_format, variant.b_format)
    if variant.overlap:
        right, a_at, b_at, _ = SEED_OVERLAP_ON[pair]
        assert (found.accumulators, found.a_scale, found.b_scale) == ((0, right), (a_at,), (b_at,))
    else:
        assert (found.accumulators, found.a_scale, found.b_scale) == ((0,), (256,), (SEED_OVERLAP_OFF_B[pair],))
    assert result.stats.tmem_offsets == result.stats.plan_offsets


@pytest.mark.parametrize("variant", gc.VARIANTS, ids=IDS)
def test_ttgir_drain_order_and_early_release_follow_the_plan(compiled, variant):
    found = compiled[variant].evidence
    plan = make_plan(variant.a_format, variant.b_format, overlap=variant.overlap)
    assert list(found.drain_order_even) == plan.drain_order(0)
    assert list(found.drain_order_odd) == plan.drain_order(1)
    if variant.overlap:
        assert found.drain_order_even == tuple(range(7, -1, -1))  # even tiles: high to low
        assert found.drain_order_odd == tuple(range(8))  # odd tiles: low to high
        early = SEED_OVERLAP_ON[(variant.a_format, variant.b_format)][3]
        assert plan.early_release_subtile == early
        # overlap released after step `early`, acc_empty after the last of the 8 steps
        assert found.arrive_steps == (early, 7)
        assert found.early_release_subtile == early
    else:
        assert found.drain_order_even == found.drain_order_odd == tuple(range(8))
        assert found.arrive_steps == (7,)
        assert found.early_release_subtile is None


@pytest.mark.parametrize("variant", gc.VARIANTS, ids=IDS)
def test_mma_kind_matches_the_formats(compiled, variant):
    pair = (variant.a_format, variant.b_format)
    assert compiled[variant].stats.mma_kind == SEED_MMA_KIND[pair]
    assert gc.expected_mma_kind(*pair) == SEED_MMA_KIND[pair]
    assert all(".cta_group::2." in line for line in gc.ptx_lines(compiled[variant].ptx, "tcgen05.mma"))


@pytest.mark.parametrize("pair", SEED_FORMAT_PAIRS, ids=[f"{a}-{b}" for a, b in SEED_FORMAT_PAIRS])
def test_overlap_adds_exactly_the_overlap_barrier(compiled, pair):
    """On vs off: one more mbarrier wait (the MMA's overlap wait) and one more arrive (the
    epilogue's early release); the second accumulator adds its acc_empty/acc_ready inits
    (2 x 8 bytes of shared memory).  No other instruction count changes."""
    off, on = compiled[gc.Variant(*pair, False)].stats, compiled[gc.Variant(*pair, True)].stats
    count_diff = {
        k: on.ptx_counts[k] - off.ptx_counts[k] for k in on.ptx_counts if on.ptx_counts[k] != off.ptx_counts[k]
    }
    assert count_diff == {"mbarrier.wait": 1, "mbarrier.arrive": 1, "mbarrier.init": 2}
    assert on.shared_bytes - off.shared_bytes == 16
    assert on.tmem_cols == off.tmem_cols == 512
    assert on.mma_kind == off.mma_kind
    assert set(gc.compare_stats(off, on)) == {
        "overlap",
        "shared_bytes",
        "mbarrier.wait",
        "mbarrier.arrive",
        "mbarrier.init",
        "tmem_offsets",
        "plan_offsets",
        "drain_order_even",
        "early_release_subtile",
        "release_barriers",
        "plan",
    }


def test_ptx_scale_copies_per_k_step(compiled):
    """tcgen05.cp moves one 512-byte [32,4,4] chunk (4 columns): A needs BLOCK_K/VEC/4 chunks per
    K step, B twice that; the compiler may emit the K-step body more than once."""
    for variant, result in compiled.items():
        plan = make_plan(variant.a_format, variant.b_format, overlap=variant.overlap)
        per_step = (plan.a_scale_cols + plan.b_scale_cols) // 4
        counts = result.stats.ptx_counts
        assert counts["tcgen05.cp"] % per_step == 0
        assert counts["tcgen05.ld"] == plan.num_subtiles  # one 32-column TMEM load per drain step


@pytest.mark.parametrize(
    "variant", [gc.Variant("mxfp8", "mxfp8", True), gc.Variant("nvfp4", "nvfp4", True)], ids=["mxfp8", "nvfp4"]
)
def test_sass_has_two_cta_block_scaled_mmas(compiled, variant):
    sass = compiled[variant].sass
    counts = gc.sass_counts(sass)
    mma = [k for k in counts if k.startswith("UTC") and "MMA" in k]
    assert mma and all(".2CTA" in k for k in mma)
    assert any(k.startswith("UTCQMMA") for k in mma) == (variant.a_format == "mxfp8")
    assert any(k.startswith("UTCOMMA") for k in mma) == (variant.a_format == "nvfp4")
    assert any(k.startswith("UTCCP") for k in counts)
    assert any("MULTICAST" in k and k.startswith("UTMALDG") for k in counts)
    assert gc.sass_lines(sass, r"UTC\w*MMA")


def test_compiles_are_cached_in_process(compiled):
    variant = gc.VARIANTS[-1]
    assert gc.compile_variant(variant.a_format, variant.b_format, variant.overlap) is compiled[variant]


def test_statistics_do_not_depend_on_the_cache(compiled, tmp_path, monkeypatch):
    """A cold compile into an empty TRITON_CACHE_DIR gives the same statistics as the cached one."""
    variant = gc.Variant("mxfp8", "mxfp4", False)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    cold = gc._compile_uncached(variant)
    assert any(tmp_path.iterdir())  # it really compiled into the empty cache
    assert cold.stats == compiled[variant].stats


def test_variant_refuses_pairs_the_plan_refuses():
    with pytest.raises(ValueError, match="VEC_SIZE"):
        gc.Variant("nvfp4", "mxfp4", True)
    with pytest.raises(ValueError, match="format"):
        gc.Variant("fp16", "mxfp4", True)
    with pytest.raises(ValueError, match="overlap"):
        gc.Variant("mxfp8", "mxfp8", "yes")


def test_a_plan_for_other_descriptors_fails_to_compile():
    """The kernel checks (at trace time) that TMEM_PLAN matches its descriptors."""
    import triton
    from triton.backends.compiler import GPUTarget

    variant = gc.Variant("nvfp4", "nvfp4", True)
    src = gc.gluon_source(variant)
    plan_index = next(i for i, p in enumerate(src.fn.params) if p.name == "TMEM_PLAN")
    src.constants[(plan_index,)] = make_plan("mxfp4", "mxfp4")
    with pytest.raises(Exception, match="TMEM_PLAN was made for"):
        triton.compile(src, target=GPUTarget("cuda", 100, 32), options={"num_ctas": 2})


def test_write_artifacts(compiled, tmp_path):
    result = compiled[gc.Variant("nvfp4", "nvfp4", True)]
    paths = gc.write_artifacts(result, tmp_path / "out")
    assert sorted(p.name for p in paths) == sorted(
        f"nvfp4-nvfp4-on.{ext}" for ext in ("cubin", "json", "ptx", "sass", "ttgir")
    )
    assert json.loads((tmp_path / "out" / "nvfp4-nvfp4-on.json").read_text())["tmem_cols"] == 512
    assert (tmp_path / "out" / "nvfp4-nvfp4-on.cubin").read_bytes() == result.cubin


def test_cli_compile_json(compiled, capsys, tmp_path):

    rc = cli.main(
        ["compile", "--a-format", "nvfp4", "--b-format", "nvfp4", "--overlap", "on", "--json", "--emit", str(tmp_path)]
    )
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data)[:8] == [
        "shared_bytes",
        "tmem_cols",
        "num_warps",
        "num_ctas",
        "registers",
        "ptx_counts",
        "mma_kind",
        "tmem_offsets",
    ]
    assert data["tmem_offsets"] == {"accumulators": [0, 208], "a_scale": [464], "b_scale": [480]}
    assert data["mma_kind"] == "mxf4nvf4.block_scale.block16"
    assert len(data["artifacts"]) == 5


def test_cli_compile_table(compiled, capsys):

    assert cli.main(["compile", "--a-format", "mxfp8", "--b-format", "mxfp4", "--overlap", "off"]) == 0
    out = capsys.readouterr().out
    assert "mxf8f6f4.block_scale.block32" in out
    assert "overlap barrier        not used" in out
    assert "NO" not in out.split()


def test_cli_compile_refuses_bad_pairs(capsys):
    assert cli.main(["compile", "--a-format", "nvfp4", "--b-format", "mxfp8", "--overlap", "on"]) == 2
    assert "VEC_SIZE" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["compile", "--a-format", "nvfp4", "--b-format", "nvfp4", "--overlap", "maybe"])
    assert exc.value.code == 2


def test_evidence_matches_its_own_plan_and_no_other(compiled):
    from gluon_overlap.tmem import make_plan

    for result in compiled.values():
        assert evidence.evidence_matches(result.evidence, result.plan)
        other = make_plan(result.plan.a_format, result.plan.b_format, overlap=not result.plan.overlap)
        assert not evidence.evidence_matches(result.evidence, other)


# --- honest evidence: every check, the barriers, what is not seen, the exit status ------------------------
@pytest.mark.parametrize("variant", gc.VARIANTS, ids=IDS)
def test_shared_memory_is_what_limits_estimates_and_fits_a_cta(compiled, variant):
    from gluon_overlap import limits

    shared = compiled[variant].stats.shared_bytes
    assert shared == limits.smem_bytes_per_cta(variant.plan())
    assert shared <= limits.SMEM_PER_CTA_LIMIT


@pytest.mark.parametrize("variant", gc.VARIANTS, ids=IDS)
def test_each_release_says_what_the_kernel_does_with_its_barrier(compiled, variant):
    """Roles, not names: the early release arrives on a single barrier the MMA waits on, the last one on the
    accumulators' ring (2 with overlap on, 1 off) that the MMA waits on too."""
    found = compiled[variant].evidence
    if variant.overlap:  # the early release frees the shared columns, the last one the whole window
        assert found.arrive_barriers == ("the MMA waits on it, array of 1", "the MMA waits on it, array of 2")
    else:
        assert found.arrive_barriers == ("the MMA waits on it, array of 1",)
    # what the CPU interpreter's recording says
    assert found.arrive_barriers == evidence.drain_arrive_roles(variant.plan())
    names = set(gc.ttgir_barrier_names(compiled[variant].ttgir).values())
    assert names == {"load_empty_bars", "load_ready_bars", "acc_empty_bars", "acc_ready_bars", "overlap_bar"}


@pytest.mark.parametrize("variant", gc.VARIANTS, ids=IDS)
def test_every_check_passes_for_the_seed_variants(compiled, variant):
    checks = evidence.evidence_checks(compiled[variant])
    assert [c["name"] for c in checks if not c["ok"]] == []
    assert evidence.matches_plan(checks)


def test_checks_fail_against_another_plan(compiled):
    """The same artifacts held against the other overlap setting's plan: the TMEM checks say NO."""
    from dataclasses import replace

    result = compiled[gc.Variant("nvfp4", "nvfp4", True)]
    wrong = replace(result, plan=make_plan("nvfp4", "nvfp4", overlap=False))
    checks = {c["name"]: c for c in evidence.evidence_checks(wrong)}
    assert not evidence.matches_plan(list(checks.values()))
    assert not checks["tmem_accumulator_offsets"]["ok"] and checks["tmem_accumulator_offsets"]["found"] == [0, 208]
    assert not checks["release_barriers"]["ok"]
    assert checks["release_barriers"]["expected"] == ["the MMA waits on it, array of 1"]


def test_cli_compile_exits_1_and_says_no_when_a_check_fails(compiled, capsys, monkeypatch):
    from dataclasses import replace

    result = compiled[gc.Variant("nvfp4", "nvfp4", True)]
    wrong = replace(result, plan=make_plan("nvfp4", "nvfp4", overlap=False))
    monkeypatch.setattr(gc, "compile_variant", lambda *a, **k: wrong)
    assert cli.main(["compile", "--a-format", "nvfp4", "--b-format", "nvfp4", "--json"]) == 1
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert data["matches_plan"] is False and "check failed" in out.err
    assert cli.main(["compile", "--a-format", "nvfp4", "--b-format", "nvfp4"]) == 1
    assert "NO" in capsys.readouterr().out.split()


def test_cli_compile_json_carries_the_checks_and_what_it_cannot_see(compiled, capsys):
    assert cli.main(["compile", "--a-format", "mxfp8", "--b-format", "mxfp8", "--overlap", "on", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["matches_plan"] is True
    assert {c["name"] for c in data["checks"]} >= {
        "tmem_accumulator_offsets",
        "release_barriers",
        "mma_kind",
        "shared_memory_fits_a_cta",
    }
    assert all(c["ok"] for c in data["checks"])
    assert data["release_barriers"] == ["the MMA waits on it, array of 1", "the MMA waits on it, array of 2"]
    text = " ".join(data["not_checked"])
    assert "parities" in text and "commit" in text


def test_cli_compile_refuses_an_unwritable_emit_dir_before_compiling(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SystemExit) as exc:
        cli.main(["compile", "--a-format", "nvfp4", "--b-format", "nvfp4", "--emit", str(blocker / "out")])
    assert exc.value.code == 2
    assert "is a file, not a directory" in capsys.readouterr().err


def test_variant_refuses_mxfp4_x_mxfp8():
    with pytest.raises(ValueError, match="not one the kernel supports"):
        gc.Variant("mxfp4", "mxfp8", True)
