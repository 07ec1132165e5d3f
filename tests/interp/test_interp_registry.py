"""The executor's shape: one registry of builtins, the docs table generated from it, every op kind with a data
effect, Ops without constant fields, no state shared between launches."""

from __future__ import annotations

import threading
from pathlib import Path

import interp_kernels as K  # tests/support is on sys.path (tests/conftest.py)
import pytest
import torch

from gluon_overlap.interp import apidoc, ops
from gluon_overlap.interp import data as execdata
from gluon_overlap.interp import language as gluon_cpu
from gluon_overlap.interp import registry as B
from gluon_overlap.interp.launch import ExecutorError, launch

DOC = Path(__file__).resolve().parents[2] / "docs" / "GLUON_API.md"


def test_docs_table_is_the_generated_one():
    assert DOC.read_text() == apidoc.api_table(), "regenerate: python -m gluon_overlap.regenerate"


def test_every_row_is_callable_and_every_emitted_op_has_a_data_effect_and_a_cost_kind():
    assert len(B.REGISTRY) > 60
    for row in B.REGISTRY.values():
        assert callable(row.impl), row.name
        if row.op is not None:
            assert row.op in ops.OP_CLASSES, row.name
            assert row.cost == row.op.kind, row.name
            assert row.op.kind in execdata._ISSUE or row.op.kind in execdata.ENGINE_KINDS, row.name
    assert ops.OP_KINDS <= set(execdata._ISSUE) | execdata.ENGINE_KINDS


def test_an_unknown_op_kind_is_an_error_in_the_data_backend():
    class Mystery(ops.Op):
        __slots__ = ()
        kind = "mystery"

    op = Mystery()
    op.x = object()
    with pytest.raises(ExecutorError, match="no effect for op kind 'mystery'"):
        execdata.ExecBackend().on_issue(op)


def test_ops_carry_only_filled_fields():
    assert "kstep" not in ops.TmaLoad.__slots__ and "pid_m" not in ops.TmaLoad.__slots__
    assert "subtile" not in ops.TmemLoad.__slots__ and "step" not in ops.TmemLoad.__slots__
    assert ops.SmemStore.__slots__ == () and "subtile" not in ops.TmaStore.__slots__


def test_no_process_global_runtime():
    assert not hasattr(gluon_cpu, "STATE")
    import gluon_overlap.interp.launch as X

    assert "SyncState" not in vars(X) or X.SyncState.__module__ == "gluon_overlap.interp.races"


def test_two_launches_in_threads_do_not_share_a_runtime():
    results = {}

    def run(name: str, m: int) -> None:
        torch.manual_seed(m)
        x = torch.randn(m, 20)
        y = torch.zeros(m, 20, dtype=torch.float16)
        stats = torch.zeros(m, 3)
        res = launch(K.row_stats_kernel, (2,), (x, y, stats, m, 20, 20, 32, 32), num_ctas=1, num_warps=4)
        results[name] = (res.ok, torch.equal(stats[:, 1], x.max(1).values))

    threads = [threading.Thread(target=run, args=(f"t{i}", 40 + 9 * i)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {f"t{i}": (True, True) for i in range(3)}


def test_a_builtin_outside_a_launch_says_so():
    with pytest.raises(ExecutorError, match="outside"):
        gluon_cpu.program_id(0)
