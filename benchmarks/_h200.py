"""What the Gluon measurement scripts for the lent H200 share: building a kernel for sm_90a on a machine without a GPU
(``--compile-only``), and writing the record (``--out``, else standard output)."""

from __future__ import annotations

import json
from typing import Any


def compile_for_sm90(kernel: Any, args: tuple, num_warps: int) -> Any:
    """``kernel`` launched with ``args``, compiled by Triton for sm_90a: its ``asm`` (PTX, ...) and ``metadata``."""
    import triton
    from triton.backends.compiler import GPUTarget

    from gluon_overlap.compiler.compile import source_for

    return triton.compile(source_for(kernel, args), target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})


def write_record(result: dict, out: str | None) -> None:
    """The record as indented JSON, into ``out`` or onto standard output."""
    text = json.dumps(result, indent=1)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
