"""Small kernels for tests/interp/test_semantics.py: atomics ordering programs, a histogram whose lanes collide,
a contractible multiply-add, integer division by anything."""

from __future__ import annotations

import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl


@gluon.jit
def last_block_sum(x_ptr, partial_ptr, counter_ptr, out_ptr, SEM: gl.constexpr, BLOCK: gl.constexpr):
    """Each program stores the sum of its block in partial[pid] and takes a ticket from an atomic counter; the
    program that draws the last ticket sums the partials. With SEM acq_rel the ticket orders the partials'
    stores before the last program's loads; with relaxed nothing does."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    pid = gl.program_id(0)
    offs = gl.arange(0, BLOCK, layout)
    gl.store(partial_ptr + pid, gl.sum(gl.load(x_ptr + pid * BLOCK + offs), axis=0))
    ticket = gl.atomic_add(counter_ptr, 1, sem=SEM)
    if ticket == gl.num_programs(0) - 1:
        partials = gl.load(partial_ptr + offs, mask=offs < gl.num_programs(0), other=0.0)
        gl.store(out_ptr, gl.sum(partials, axis=0))


@gluon.jit
def histogram(values_ptr, bins_ptr, BLOCK: gl.constexpr):
    """bins[v] += 1 for each value: lanes of one atomic that hit the same bin take turns."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    gl.atomic_add(bins_ptr + gl.load(values_ptr + offs), 1)


@gluon.jit
def mul_add(a_ptr, b_ptr, c_ptr, out_ptr, BLOCK: gl.constexpr):
    """out = a * b + c (contracted into an FMA when fp fusion is on)."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, BLOCK, layout)
    gl.store(out_ptr + offs, gl.load(a_ptr + offs) * gl.load(b_ptr + offs) + gl.load(c_ptr + offs))


@gluon.jit
def divide(a_ptr, b_ptr, q_ptr, r_ptr, BLOCK: gl.constexpr):
    """q = a // b and r = a % b, for any b (zero and -1 too)."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, BLOCK, layout)
    a = gl.load(a_ptr + offs)
    b = gl.load(b_ptr + offs)
    gl.store(q_ptr + offs, a // b)
    gl.store(r_ptr + offs, a % b)


@gluon.jit
def racy_store(out_ptr, BLOCK: gl.constexpr):
    """Every program stores its id over the same elements, unordered."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, BLOCK, layout)
    gl.store(out_ptr + offs, offs * 0 + gl.program_id(0))


@gluon.jit
def split_store(out_ptr, BLOCK: gl.constexpr):
    """A 2-CTA cluster whose layout splits the block over the CTAs: each stores its half (no race)."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0], cga_layout=[[1]])
    offs = gl.arange(0, BLOCK, layout)
    gl.store(out_ptr + gl.program_id(0) * BLOCK + offs, offs + 1000 * gl.program_id(0))


@gluon.jit
def flag_handoff(data_ptr, flag_ptr, out_ptr, STORE_SEM: gl.constexpr, LOAD_SEM: gl.constexpr, BLOCK: gl.constexpr):
    """Program 0 writes a block and raises a flag (atomic_store); program 1 spins on the flag (atomic_load) and
    copies the block: release / acquire order the copy after the writes, relaxed does not."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, BLOCK, layout)
    if gl.program_id(0) == 0:
        gl.store(data_ptr + offs, offs * 3)
        gl.atomic_store(flag_ptr, 1, sem=STORE_SEM)
    else:
        while gl.atomic_load(flag_ptr, sem=LOAD_SEM) == 0:
            pass
        gl.store(out_ptr + offs, gl.load(data_ptr + offs))
