"""A Gluon script in the shape of the upstream tutorials (written for this suite): a kernel, a host wrapper, a
check against torch and a ``__main__`` block; runs unchanged on a GPU and under ``gluon-overlap run``."""

import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    mask = offs < n
    x = gl.load(x_ptr + offs, mask=mask)
    y = gl.load(y_ptr + offs, mask=mask)
    gl.store(out_ptr + offs, x * alpha + y, mask=mask)


def scaled_add(x, y, alpha, BLOCK=256):
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]), )  # noqa: E731
    scaled_add_kernel[grid](x, y, out, x.numel(), alpha, BLOCK=BLOCK, num_warps=4)
    return out


def is_blackwell():
    target = triton.runtime.driver.active.get_current_target()
    return target.backend == "cuda" and torch.cuda.get_device_capability()[0] == 10


if __name__ == "__main__":
    if not is_blackwell():
        raise RuntimeError("This script needs a Blackwell GPU")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = scaled_add(x, y, 0.5)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * 0.5 + y, atol=0, rtol=0)
    ms = triton.testing.do_bench(lambda: scaled_add(x, y, 0.5))
    print(f"scaled_add on {torch.cuda.get_device_name()}: n={n} ok ({ms:.3f} ms)")
