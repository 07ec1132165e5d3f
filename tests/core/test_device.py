"""Only sm_100 / sm_103 may run the kernel; every other machine gets the reason."""

from __future__ import annotations

import pytest

from gluon_overlap import device


@pytest.mark.parametrize("cap", [(10, 0), (10, 3)])
def test_datacenter_blackwell_is_accepted(cap):
    assert device.refusal(cap) is None


@pytest.mark.parametrize(
    "cap, words",
    [
        (None, ["no CUDA GPU", "B200", "gluon_overlap.compiler.compile"]),
        ((9, 0), ["sm_90", "Hopper", "no TMEM"]),
        ((12, 0), ["sm_120", "consumer Blackwell", "aborts the whole process"]),
        ((8, 9), ["sm_89", "no TMEM"]),
        ((10, 1), ["sm_101"]),
    ],
)
def test_other_machines_are_refused_with_the_reason(cap, words):
    message = device.refusal(cap)
    assert message is not None
    for word in words:
        assert word in message


def test_check_device_raises_value_error(monkeypatch):
    monkeypatch.setattr(device, "capability", lambda dev=None: (12, 0))
    with pytest.raises(ValueError, match="sm_120"):
        device.check_device()
    assert not device.is_blackwell()
    monkeypatch.setattr(device, "capability", lambda dev=None: (10, 0))
    device.check_device()
    assert device.is_blackwell()


def test_capability_without_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device.capability() is None
