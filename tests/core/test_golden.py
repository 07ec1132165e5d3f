"""Golden vectors (data/golden/formats.json): a change in format semantics must fail here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from gluon_overlap import formats as F

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "golden" / "formats.json"
BLOCKS = json.loads(GOLDEN.read_text())["blocks"]


def test_golden_file_is_small_and_covers_every_format():
    assert GOLDEN.stat().st_size < 8192
    assert {b["format"] for b in BLOCKS} == set(F.FORMAT_NAMES)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b['format']}-{i}" for i, b in enumerate(BLOCKS)])
def test_quantize_reproduces_the_golden_block(block):
    spec = F.get_format(block["format"])
    x = torch.tensor(block["input"], dtype=torch.float32)[None, :]
    assert x.shape[1] == spec.vec_size
    q = F.quantize(x, spec.name)
    assert q.scales.view(torch.uint8).tolist() == [[block["scale_code"]]]
    assert q.data.view(torch.uint8).tolist() == [block["data"]]
    got = q.dequantize()[0].tolist()
    assert got == block["dequantized"]
    # signs of zeros too
    assert [math.copysign(1, v) for v in got] == [math.copysign(1, v) for v in block["dequantized"]]


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b['format']}-{i}" for i, b in enumerate(BLOCKS)])
def test_dequantize_decodes_the_golden_bytes(block):
    spec = F.get_format(block["format"])
    data = torch.tensor([block["data"]], dtype=torch.uint8).view(spec.torch_element_dtype)
    scales = torch.tensor([[block["scale_code"]]], dtype=torch.uint8).view(spec.torch_scale_dtype)
    q = F.QuantizedTensor(spec.name, data, scales)
    assert q.dequantize()[0].tolist() == block["dequantized"]
