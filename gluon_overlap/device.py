"""Which GPUs can run the kernel, and a clear refusal for all others.

The kernel uses TMEM and ``tcgen05`` instructions, which exist only on Blackwell
*data-center* GPUs: compute capability 10.0 (B200, GB200) and 10.3 (B300, GB300).
Hopper (9.0) has neither, and consumer Blackwell (12.x, RTX 50xx) has no TMEM: a
``tcgen05`` kernel launched there aborts the whole process, so we refuse before launching.

This module imports torch only inside its functions and never imports triton, so a
refusal is quick and quiet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import torch

#: a CUDA device as torch names it (None: the current one)
Device: TypeAlias = "torch.device | int | str | None"

#: compute capabilities with TMEM and tcgen05 (B200/GB200 = 10.0, B300/GB300 = 10.3)
SUPPORTED_CAPABILITIES = ((10, 0), (10, 3))
SUPPORTED_GPUS = "sm_100/sm_103: B200, GB200, B300, GB300"


def capability(device: Device = None) -> tuple[int, int] | None:
    """Compute capability of a CUDA ``device``; None without a usable CUDA GPU (or on ROCm)."""
    import torch

    if getattr(torch.version, "hip", None) or not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability(device)
    return int(major), int(minor)


def refusal(cap: tuple[int, int] | None) -> str | None:
    """Why a GPU of capability ``cap`` cannot run the kernel (None if it can)."""
    if cap is None:
        return (
            f"no CUDA GPU: the kernel needs a Blackwell data-center GPU ({SUPPORTED_GPUS}); "
            "gluon_overlap.compiler.compile cross-compiles it without one"
        )
    if tuple(cap) in SUPPORTED_CAPABILITIES:
        return None
    major = cap[0]
    if major == 12:
        why = (
            "consumer Blackwell has no TMEM and no tcgen05, and launching a tcgen05 kernel there aborts the "
            "whole process"
        )
    elif major == 9:
        why = "Hopper has no TMEM, no tcgen05 and no block-scaled tensor cores"
    elif major in (10, 11):
        why = "this Blackwell variant is not one the kernel is built for"
    else:
        why = "it has no TMEM and no tcgen05"
    return f"the GPU is sm_{cap[0]}{cap[1]}, but the kernel runs only on {SUPPORTED_GPUS}: {why}"


def check_device(device: Device = None) -> None:
    """Raise ValueError with the reason unless ``device`` is an sm_100 / sm_103 GPU."""
    reason = refusal(capability(device))
    if reason is not None:
        raise ValueError(reason)


def is_blackwell(device: Device = None) -> bool:
    """True on a GPU that can run the kernel (used to skip GPU-only tests and notebook cells)."""
    return refusal(capability(device)) is None
