"""Every file the project ships that is computed from its own code is current (``python -m gluon_overlap.regenerate``).

Each product keeps the SHA-256 of the inputs it was computed from; an edit to any input makes it stale here. The
deeper checks -- that a shipped file equals what its code computes now -- are each product's own tests
(tests/timing/test_recordings.py, test_kernel_costs.py, test_step_predictions.py, test_fit.py,
tests/emulate/test_pingpong.py, tests/interp/test_interp_registry.py, tests/core/test_limits.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gluon_overlap import regenerate


def test_no_shipped_product_is_stale():
    stale = regenerate.stale()
    assert not stale, f"stale: {', '.join(stale)}; run `python -m gluon_overlap.regenerate`"


def test_every_product_has_a_stamp_and_writes_files_that_exist():
    assert set(regenerate.stamps()) == {p.name for p in regenerate.PRODUCTS}
    for product in regenerate.PRODUCTS:
        for rel in product.outputs:
            assert (regenerate.REPO / rel).exists(), (product.name, rel)
        assert product.input_files(), product.name


def test_an_edited_input_makes_its_product_stale(monkeypatch):
    product = regenerate._BY_NAME["gluon-api"]
    real = product.stamp()
    edited = regenerate.Product(product.name, product.outputs, product.inputs + ("README.md",), product.write)
    assert edited.stamp() != real  # a new input changes the stamp
    monkeypatch.setattr(regenerate, "PRODUCTS", (edited,))
    monkeypatch.setattr(regenerate, "_BY_NAME", {edited.name: edited})
    assert regenerate.stale() == ["gluon-api"]


def test_the_readme_limits_table_is_the_generated_one():
    text = (regenerate.REPO / "README.md").read_text()
    block = text.split(regenerate.README_TABLE_START)[1].split(regenerate.README_TABLE_END)[0]
    assert block.strip() == regenerate.readme_limits_table()


def test_check_mode_and_unknown_names():
    out = subprocess.run(
        [sys.executable, "-m", "gluon_overlap.regenerate", "--check"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "gluon_overlap.regenerate", "--check", "nonsense"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "unknown product nonsense" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_stamps_file_is_plain_json():
    raw = json.loads(regenerate.STAMPS.read_text())
    assert all(len(v) == 64 for v in raw["stamps"].values())


@pytest.mark.parametrize("name", [p.name for p in regenerate.PRODUCTS])
def test_products_are_written_in_dependency_order(name):
    """A product that reads another's output comes after it."""
    order = [p.name for p in regenerate.PRODUCTS]
    me = regenerate._BY_NAME[name]
    for other in regenerate.PRODUCTS:
        if (
            any(
                rel in me.inputs or any(rel.startswith(i) for i in me.inputs if i.endswith("/"))
                for rel in other.outputs
            )
            and other.name != name
        ):
            assert order.index(other.name) < order.index(name), (other.name, name)
