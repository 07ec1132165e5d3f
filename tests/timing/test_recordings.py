"""The shipped recordings of the unedited kernel (twin.recordings): current, equal to live recordings field by
field, and a table timed from them equals one timed from live recordings digit for digit."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest

from gluon_overlap import regenerate
from gluon_overlap.hardware import load_hardware
from gluon_overlap.interp import ops
from gluon_overlap.interp.memory import Columns
from gluon_overlap.timing import model as timing
from gluon_overlap.timing import recordings, streams
from gluon_overlap.timing.table import model_table

REGENERATE = "python -m gluon_overlap.regenerate recordings"


def test_the_shipped_recordings_come_from_the_installed_sources():
    with zipfile.ZipFile(recordings.SHIPPED) as archive:
        stamp = archive.read("sources").decode()
    assert stamp == recordings.sources_hash(), (
        f"the kernel or the executor changed since data/recordings.zip was written: run `{REGENERATE}`"
    )


def _sample_configs():
    out = []
    for gpu in ("b200", "b300"):
        hw = load_hardware(gpu)
        for (a, b), k, overlap in ((("nvfp4", "nvfp4"), 512, True), (("mxfp8", "mxfp4"), 1024, False)):
            out.append((timing.kernel_config(hw, a, b, 8192, 8192, k, overlap), (0,)))
    hw = load_hardware("b200")
    config = timing.kernel_config(hw, "mxfp8", "mxfp8", 8192, 8192, 4096, True)
    from gluon_overlap.emulate.config import KernelConfig
    from gluon_overlap.tmem import BLOCK_M, BLOCK_N

    sim = KernelConfig(
        config.plan,
        m=BLOCK_M,
        n=BLOCK_N * config.grid * 5,
        k=12 * config.plan.block_k,
        clusters=config.grid,
        num_sms=config.num_sms,
    )
    out.append((sim, (0,)))  # a truncated run's launch
    return out


def _barrier(b: ops.Barrier) -> tuple:
    return (b.name, b.index, b.cta, b.cluster, b.count)


def _field(value):
    if isinstance(value, ops.Barrier):
        return _barrier(value)
    if isinstance(value, tuple) and value and isinstance(value[0], ops.Barrier):
        return tuple(_barrier(b) for b in value)
    if isinstance(value, Columns):
        return ("columns", value.offset, value.cols)
    return value


@pytest.mark.parametrize("index", range(5))
def test_a_shipped_recording_equals_a_live_one_field_by_field(index):
    config, clusters = _sample_configs()[index]
    key = recordings.config_key(config.plan, config.m, config.n, config.k, config.grid, clusters)
    shipped = recordings.shipped(key)
    assert shipped is not None, f"no shipped recording of {key}: run `{REGENERATE}`"
    streams._CACHE.clear()
    live = streams.record(config, clusters)
    assert [_barrier(b) for b in shipped.barriers] == [_barrier(b) for b in live.barriers]
    assert shipped.roots == live.roots and len(shipped.streams) == len(live.streams)
    for s, t in zip(shipped.streams, live.streams, strict=True):
        assert (s.partition, s.cta, s.cluster, s.forks) == (t.partition, t.cta, t.cluster, t.forks)
        assert len(s.ops) == len(t.ops)
        for a, b in zip(s.ops, t.ops, strict=True):
            assert type(a) is type(b)
            for name in recordings._slots(type(b)):
                assert _field(getattr(a, name)) == _field(getattr(b, name)), (type(b).__name__, name)
            if b.kind == "tma_load":
                assert [(_barrier(x), n) for x, n in a.x.tx_targets] == [(_barrier(x), n) for x, n in b.x.tx_targets]


def test_a_table_timed_from_shipped_recordings_equals_one_from_live_ones(monkeypatch):
    pairs, ks = [("nvfp4", "nvfp4")], [512, 4096]

    def table():
        timing.forget()
        streams._CACHE.clear()
        recordings._SHIPPED.clear()
        return json.dumps(model_table("b300", pairs, ks, workers=1), sort_keys=True)

    shipped = table()
    assert recordings._SHIPPED  # the table was timed from shipped recordings
    monkeypatch.setattr(recordings, "shipped", lambda key: None)
    live = table()
    assert not recordings._SHIPPED
    assert shipped == live


def test_changed_sources_mean_live_recordings(monkeypatch):
    config, clusters = _sample_configs()[0]
    key = recordings.config_key(config.plan, config.m, config.n, config.k, config.grid, clusters)
    monkeypatch.setattr(recordings, "sources_hash", lambda: "0" * 64)
    monkeypatch.setattr(recordings, "_archives", {})
    assert recordings.shipped(key) is None


def test_a_recording_reads_no_module_outside_the_stamped_sources():
    """The stamp covers every module of the package that recording the kernel imports."""
    code = (
        "import sys; from gluon_overlap.hardware import load_hardware; from gluon_overlap.timing import streams, "
        "model as timing\n"
        "c = timing.kernel_config(load_hardware('b200'), 'nvfp4', 'nvfp4', 8192, 8192, 512, True)\n"
        "before = set(sys.modules); streams.record(c, [0])\n"
        "print('\\n'.join(sorted(m.__file__ for n, m in sys.modules.items() if n.startswith('gluon_overlap') "
        "and getattr(m, '__file__', None))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    loaded = {p.split("gluon_overlap/", 1)[1] for p in out.stdout.split()}
    # the timing model and the descriptions are imported by this script, not by recording
    outside = {
        "hardware.py",
        "compiler/artifacts.py",
        "timing/model.py",
        "timing/backend.py",
        "timing/costs.py",
        "timing/kernel_costs.py",
        "timing/recordings.py",
        "timing/run_cache.py",
    }
    assert loaded - outside <= set(recordings.RECORDING_MODULES), sorted(
        loaded - outside - set(recordings.RECORDING_MODULES)
    )


@pytest.mark.slow
def test_the_archive_holds_exactly_what_the_default_tables_record():
    with zipfile.ZipFile(recordings.SHIPPED) as archive:
        members = set(archive.namelist()) - {"sources"}
    wanted = {
        recordings._member(recordings.config_key(c.plan, c.m, c.n, c.k, c.grid, cl))
        for c, cl in regenerate.recording_configs()
    }
    assert members == wanted, f"run `{REGENERATE}`"
