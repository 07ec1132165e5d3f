"""The silicon suite's Gluon kernels: small programs in the upstream Gluon tutorials' idioms (written for this
suite), each exercising one corner of the semantics that Hopper (sm_90a) and Blackwell (sm_100a) share.

Every kernel here runs unchanged on a GPU (``kernel[grid](...)``, recorded by ``record.py``), on the CPU
executor (``gluon_overlap.interp.launch.launch``) and through Triton's compiler for sm_90a and sm_100a
(``cases.py`` names the launches). Where one kernel covers several operations, a ``gl.constexpr`` string picks
the operation at compile time (each choice is its own compiled kernel).

Nothing here is Hopper-only: TMA, mbarriers, cp.async and ``gl.warp_specialize`` are common to sm_90a and
sm_100a; wgmma (Hopper) and tcgen05 / TMEM (Blackwell) are left out because the other chip lacks them."""

from __future__ import annotations

import triton.experimental.gluon as gluon
import triton.experimental.gluon.language as gl
import triton.language as tl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma


# =====================================================================================================
# memory: masked loads and stores, broadcasting
# =====================================================================================================
@gluon.jit
def masked_copy_kernel(x_ptr, y_ptr, n, OTHER: gl.constexpr, SKIP_EVERY: gl.constexpr, BLOCK: gl.constexpr):
    """y[i] = x[i] for i < n and OTHER past the end (a masked load with ``other``); lanes with
    i % SKIP_EVERY == 0 are not stored (a masked store: y keeps what it held there)."""
    layout: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0])
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    x = gl.load(x_ptr + offsets, mask=offsets < n, other=OTHER)
    gl.store(y_ptr + offsets, x, mask=offsets % SKIP_EVERY != 0)


@gluon.jit
def masked_tile_kernel(x_ptr, y_ptr, M, N, stride_x, stride_y, OTHER: gl.constexpr, BLOCK_M: gl.constexpr,
                       BLOCK_N: gl.constexpr):
    """A 2-D grid of [BLOCK_M, BLOCK_N] tiles over an M x N strided tensor: rows and columns past the edge load
    OTHER; every tile is stored whole into y (a buffer padded to whole tiles)."""
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [gl.num_warps(), 1], [1, 0])
    rows = gl.program_id(0) * BLOCK_M + gl.arange(0, BLOCK_M, gl.SliceLayout(1, layout))
    cols = gl.program_id(1) * BLOCK_N + gl.arange(0, BLOCK_N, gl.SliceLayout(0, layout))
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    x = gl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=OTHER)
    gl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], x)


@gluon.jit
def broadcast_kernel(col_ptr, row_ptr, scalar_ptr, out_ptr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    """A column vector against a row vector and a scalar loaded from memory: (col + row) * scalar, and the
    larger of col and row by ``gl.where``, both [BLOCK_M, BLOCK_N] (mixed dtypes promote as Triton does), stored
    as float32."""
    layout: gl.constexpr = gl.BlockedLayout([1, 2], [8, 4], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, BLOCK_M, gl.SliceLayout(1, layout))
    cols = gl.arange(0, BLOCK_N, gl.SliceLayout(0, layout))
    col = gl.load(col_ptr + rows)
    row = gl.load(row_ptr + cols)
    scalar = gl.load(scalar_ptr)
    mixed = (gl.expand_dims(col, 1) + gl.expand_dims(row, 0)) * scalar
    larger = gl.where(col[:, None] > row[None, :], col[:, None], row[None, :])
    out = out_ptr + rows[:, None] * BLOCK_N + cols[None, :]
    gl.store(out, mixed.to(gl.float32))
    gl.store(out + BLOCK_M * BLOCK_N, larger.to(gl.float32))


# =====================================================================================================
# elementwise arithmetic (integer and float), one program per BLOCK
# =====================================================================================================
@gluon.jit
def binary_kernel(a_ptr, b_ptr, out_ptr, n, OP: gl.constexpr, BLOCK: gl.constexpr):
    """out = a OP b, elementwise over n values (integer ops truncate as the compiled code does)."""
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0])
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    mask = offsets < n
    a = gl.load(a_ptr + offsets, mask=mask)
    b = gl.load(b_ptr + offsets, mask=mask)
    if OP == "add":
        r = a + b
    elif OP == "sub":
        r = a - b
    elif OP == "mul":
        r = a * b
    elif OP == "floordiv":
        r = a // b
    elif OP == "mod":
        r = a % b
    elif OP == "shl":
        r = a << b
    elif OP == "shr":
        r = a >> b
    elif OP == "and":
        r = a & b
    elif OP == "or":
        r = a | b
    elif OP == "xor":
        r = a ^ b
    elif OP == "lt":
        r = a < b
    elif OP == "umulhi":
        r = gl.umulhi(a, b)
    elif OP == "maximum":
        r = gl.maximum(a, b)
    elif OP == "minimum":
        r = gl.minimum(a, b)
    elif OP == "maximum_nan":
        r = gl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "minimum_nan":
        r = gl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "div_rn":
        r = gl.div_rn(a, b)
    elif OP == "truediv":
        r = a / b
    else:
        gl.static_assert(False, "unknown OP")
    gl.store(out_ptr + offsets, r, mask=mask)


@gluon.jit
def unary_kernel(x_ptr, out_ptr, n, OP: gl.constexpr, BLOCK: gl.constexpr):
    """out = OP(x), elementwise over n values."""
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0])
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    mask = offsets < n
    x = gl.load(x_ptr + offsets, mask=mask)
    if OP == "neg":
        r = -x
    elif OP == "invert":
        r = ~x
    elif OP == "abs":
        r = gl.abs(x)
    elif OP == "floor":
        r = gl.floor(x)
    elif OP == "ceil":
        r = gl.ceil(x)
    elif OP == "sqrt":
        r = gl.sqrt(x)
    elif OP == "sqrt_rn":
        r = gl.sqrt_rn(x)
    elif OP == "rsqrt":
        r = gl.rsqrt(x)
    elif OP == "exp":
        r = gl.exp(x)
    elif OP == "exp2":
        r = gl.exp2(x)
    elif OP == "log":
        r = gl.log(x)
    elif OP == "log2":
        r = gl.log2(x)
    elif OP == "sin":
        r = gl.sin(x)
    elif OP == "cos":
        r = gl.cos(x)
    else:
        gl.static_assert(False, "unknown OP")
    gl.store(out_ptr + offsets, r, mask=mask)


@gluon.jit
def ternary_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, OP: gl.constexpr, BLOCK: gl.constexpr):
    """Three operands: ``gl.fma``, the contractible ``a * b + c`` / ``c + a * b`` / ``a * b - c``, and
    ``gl.clamp(a, b, c)``."""
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0])
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    mask = offsets < n
    a = gl.load(a_ptr + offsets, mask=mask)
    b = gl.load(b_ptr + offsets, mask=mask)
    c = gl.load(c_ptr + offsets, mask=mask)
    if OP == "fma":
        r = gl.fma(a, b, c)
    elif OP == "mul_add":
        r = a * b + c
    elif OP == "add_mul":
        r = c + a * b
    elif OP == "mul_sub":
        r = a * b - c
    elif OP == "clamp":
        r = gl.clamp(a, b, c)
    else:
        gl.static_assert(False, "unknown OP")
    gl.store(out_ptr + offsets, r, mask=mask)


@gluon.jit
def cast_kernel(x_ptr, y_ptr, n, ROUNDING: gl.constexpr, BITCAST: gl.constexpr, BLOCK: gl.constexpr):
    """y = x converted to y's element type (``fp_downcast_rounding=ROUNDING`` for a narrowing float cast,
    or the same bits with ``BITCAST``)."""
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0])
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    mask = offsets < n
    x = gl.load(x_ptr + offsets, mask=mask)
    if BITCAST:
        y = x.to(y_ptr.dtype.element_ty, bitcast=True)
    elif ROUNDING is None:
        y = x.to(y_ptr.dtype.element_ty)
    else:
        y = x.to(y_ptr.dtype.element_ty, fp_downcast_rounding=ROUNDING)
    gl.store(y_ptr + offsets, y, mask=mask)


# =====================================================================================================
# reductions and scans, in the register layout the caller chooses
# =====================================================================================================
@gluon.jit
def reduce_1d_kernel(x_ptr, out_ptr, OP: gl.constexpr, BLOCK: gl.constexpr, LAYOUT: gl.constexpr):
    """One reduction of BLOCK values per program (the per-thread / lane / warp split is LAYOUT's)."""
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, LAYOUT)
    x = gl.load(x_ptr + offsets)
    if OP == "sum":
        r = gl.sum(x, axis=0)
    elif OP == "sum_f32":
        r = gl.sum(x, axis=0, dtype=gl.float32)
    elif OP == "max":
        r = gl.max(x, axis=0)
    elif OP == "min":
        r = gl.min(x, axis=0)
    elif OP == "xor_sum":
        r = gl.xor_sum(x, axis=0)
    else:
        gl.static_assert(False, "unknown OP")
    gl.store(out_ptr + gl.program_id(0), r)


@gluon.jit
def reduce_2d_kernel(x_ptr, out_ptr, OP: gl.constexpr, AXIS: gl.constexpr, M: gl.constexpr, N: gl.constexpr,
                     LAYOUT: gl.constexpr):
    """A row-major M x N tile in LAYOUT reduced along AXIS; the result is stored in its sliced layout."""
    rows = gl.arange(0, M, gl.SliceLayout(1, LAYOUT))
    cols = gl.arange(0, N, gl.SliceLayout(0, LAYOUT))
    x = gl.load(x_ptr + rows[:, None] * N + cols[None, :])
    if OP == "sum":
        r = gl.sum(x, axis=AXIS)
    elif OP == "max":
        r = gl.max(x, axis=AXIS)
    elif OP == "min":
        r = gl.min(x, axis=AXIS)
    else:
        gl.static_assert(False, "unknown OP")
    if AXIS == 0:
        gl.store(out_ptr + cols, r)
    else:
        gl.store(out_ptr + rows, r)


@gluon.jit
def cumsum_kernel(x_ptr, out_ptr, BLOCK: gl.constexpr, LAYOUT: gl.constexpr):
    """An inclusive prefix sum of BLOCK values in LAYOUT (the order of the additions is the compiled scan's)."""
    offsets = gl.arange(0, BLOCK, LAYOUT)
    gl.store(out_ptr + offsets, gl.cumsum(gl.load(x_ptr + offsets), 0))


# =====================================================================================================
# layouts and shapes
# =====================================================================================================
@gluon.jit
def convert_layout_kernel(x_ptr, y_ptr, M: gl.constexpr, N: gl.constexpr, SRC: gl.constexpr, DST: gl.constexpr):
    """An M x N tile loaded in SRC, moved to DST by ``gl.convert_layout`` and stored from there."""
    x = gl.load(x_ptr + gl.arange(0, M, gl.SliceLayout(1, SRC))[:, None] * N
                + gl.arange(0, N, gl.SliceLayout(0, SRC))[None, :])
    y = gl.convert_layout(x, DST)
    gl.store(y_ptr + gl.arange(0, M, gl.SliceLayout(1, DST))[:, None] * N
             + gl.arange(0, N, gl.SliceLayout(0, DST))[None, :], y)


@gluon.jit
def join_split_kernel(a_ptr, b_ptr, out_ptr, BLOCK: gl.constexpr, MEMBER: gl.constexpr):
    """``gl.join`` two vectors into [BLOCK, 2] pairs (stored interleaved), then split the pairs again (``gl.split``
    or, with MEMBER, the tensor method) and store hi - lo."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    pair_layout: gl.constexpr = gl.BlockedLayout([1, 2], [32, 1], [gl.num_warps(), 1], [1, 0])
    offsets = gl.arange(0, BLOCK, layout)
    a = gl.load(a_ptr + offsets)
    b = gl.load(b_ptr + offsets)
    pairs = gl.convert_layout(gl.join(a, b), pair_layout)
    rows = gl.arange(0, BLOCK, gl.SliceLayout(1, pair_layout))
    cols = gl.arange(0, 2, gl.SliceLayout(0, pair_layout))
    gl.store(out_ptr + rows[:, None] * 2 + cols[None, :], pairs)
    if MEMBER:
        lo, hi = pairs.split()
    else:
        lo, hi = gl.split(pairs)
    gl.store(out_ptr + 2 * BLOCK + offsets, gl.convert_layout(hi - lo, layout))


@gluon.jit
def permute_reshape_kernel(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr, MEMBER: gl.constexpr):
    """An M x N tile transposed (``gl.permute`` / ``tensor.permute``) and reshaped to [M * N // 2, 2]
    (``gl.reshape`` / ``tensor.reshape``), each stored in a layout of its own after ``gl.convert_layout``."""
    src: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    x = gl.load(x_ptr + gl.arange(0, M, gl.SliceLayout(1, src))[:, None] * N
                + gl.arange(0, N, gl.SliceLayout(0, src))[None, :])
    if MEMBER:
        t = x.permute(1, 0)
        r = x.reshape(M * N // 2, 2)
    else:
        t = gl.permute(x, (1, 0))
        r = gl.reshape(x, [M * N // 2, 2])
    t_layout: gl.constexpr = gl.BlockedLayout([1, 1], [4, 8], [gl.num_warps(), 1], [1, 0])
    t = gl.convert_layout(t, t_layout)
    gl.store(out_ptr + gl.arange(0, N, gl.SliceLayout(1, t_layout))[:, None] * M
             + gl.arange(0, M, gl.SliceLayout(0, t_layout))[None, :], t)
    r_layout: gl.constexpr = gl.BlockedLayout([1, 2], [32, 1], [gl.num_warps(), 1], [1, 0])
    r = gl.convert_layout(r, r_layout)
    gl.store(out_ptr + M * N + gl.arange(0, M * N // 2, gl.SliceLayout(1, r_layout))[:, None] * 2
             + gl.arange(0, 2, gl.SliceLayout(0, r_layout))[None, :], r)


# =====================================================================================================
# atomics and a race between programs
# =====================================================================================================
@gluon.jit
def atomic_rmw_kernel(target_ptr, val_ptr, old_ptr, OP: gl.constexpr, MASKED: gl.constexpr, BLOCK: gl.constexpr):
    """Every program applies OP with its own BLOCK values to the same BLOCK addresses of target and stores the
    old values it got back (with MASKED, lanes i % 3 == 0 do not take part)."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offsets = gl.arange(0, BLOCK, layout)
    pid = gl.program_id(0)
    values = gl.load(val_ptr + pid * BLOCK + offsets)
    if MASKED:
        mask = offsets % 3 != 0
    else:
        mask = offsets >= 0
    if OP == "add":
        old = gl.atomic_add(target_ptr + offsets, values, mask=mask)
    elif OP == "max":
        old = gl.atomic_max(target_ptr + offsets, values, mask=mask)
    elif OP == "min":
        old = gl.atomic_min(target_ptr + offsets, values, mask=mask)
    elif OP == "and":
        old = gl.atomic_and(target_ptr + offsets, values, mask=mask)
    elif OP == "or":
        old = gl.atomic_or(target_ptr + offsets, values, mask=mask)
    elif OP == "xor":
        old = gl.atomic_xor(target_ptr + offsets, values, mask=mask)
    elif OP == "xchg":
        old = gl.atomic_xchg(target_ptr + offsets, values, mask=mask)
    else:
        gl.static_assert(False, "unknown OP")
    gl.store(old_ptr + pid * BLOCK + offsets, old, mask=mask)


@gluon.jit
def atomic_cas_kernel(target_ptr, cmp_ptr, val_ptr, old_ptr, BLOCK: gl.constexpr):
    """Every program tries to swap its value into each of the BLOCK addresses where target still equals cmp;
    the old values it saw are stored per program."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offsets = gl.arange(0, BLOCK, layout)
    pid = gl.program_id(0)
    expected = gl.load(cmp_ptr + offsets)
    values = gl.load(val_ptr + pid * BLOCK + offsets)
    old = gl.atomic_cas(target_ptr + offsets, expected, values)
    gl.store(old_ptr + pid * BLOCK + offsets, old)


@gluon.jit
def atomic_ticket_kernel(counter_ptr, ticket_ptr, STEP: gl.constexpr):
    """A scalar atomic: each program takes a ticket from one counter (the tickets are a permutation)."""
    ticket = gl.atomic_add(counter_ptr, STEP)
    gl.store(ticket_ptr + gl.program_id(0), ticket)


@gluon.jit
def racy_store_kernel(out_ptr, BLOCK: gl.constexpr):
    """A planted race: every program stores its id over the same BLOCK addresses, with nothing ordering the
    programs, so each address holds whichever store landed last."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offsets = gl.arange(0, BLOCK, layout)
    gl.store(out_ptr + offsets, gl.full([BLOCK], 0, gl.int32, layout) + gl.program_id(0))


@gluon.jit
def racy_increment_kernel(count_ptr, BLOCK: gl.constexpr):
    """A planted race: every program reads the same BLOCK counters, adds one and writes them back without an
    atomic, so increments are lost depending on how the programs interleave."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offsets = gl.arange(0, BLOCK, layout)
    gl.store(count_ptr + offsets, gl.load(count_ptr + offsets) + 1)


# =====================================================================================================
# TMA (Hopper and newer), mbarrier phases, store_wait, a warp-specialized ring
# =====================================================================================================
@gluon.jit
def tma_tile_kernel(in_desc, out_desc, tile_ptr, OFF_M: gl.constexpr, OFF_N: gl.constexpr,
                    CHECK_TYPES: gl.constexpr):
    """Each program TMA-loads the block at (pid_m * BM + OFF_M, pid_n * BN + OFF_N) (out of bounds: filled by
    the descriptor's padding), copies the raw block to tile_ptr, and TMA-stores block + 1 at the same
    coordinates (clipped at the tensor's edges). CHECK_TYPES: first ``gl.static_assert`` that both
    descriptors' block types are equal (tutorial 04's idiom)."""
    if CHECK_TYPES:
        gl.static_assert(in_desc.block_type == out_desc.block_type)
    BM: gl.constexpr = in_desc.block_type.shape[0]
    BN: gl.constexpr = in_desc.block_type.shape[1]
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    off_m = pid_m * BM + OFF_M
    off_n = pid_n * BN + OFF_N
    smem = gl.allocate_shared_memory(in_desc.dtype, [BM, BN], in_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma.async_load(in_desc, [off_m, off_n], bar, smem)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    tile = smem.load(layout)
    rows = gl.arange(0, BM, gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, gl.SliceLayout(0, layout))
    block = pid_m * gl.num_programs(1) + pid_n
    gl.store(tile_ptr + block * (BM * BN) + rows[:, None] * BN + cols[None, :], tile)
    gl.barrier()  # every warp has read the block before it is overwritten
    smem.store(tile + 1)
    fence_async_shared()
    tma.async_store(out_desc, [off_m, off_n], smem)
    tma.store_wait(pendings=0)


@gluon.jit
def tma_load_tile_kernel(in_desc, tile_ptr, OFF_M: gl.constexpr, OFF_N: gl.constexpr):
    """TMA-load only: the block at (pid_m * BM + OFF_M, pid_n * BN + OFF_N) copied to tile_ptr."""
    BM: gl.constexpr = in_desc.block_type.shape[0]
    BN: gl.constexpr = in_desc.block_type.shape[1]
    smem = gl.allocate_shared_memory(in_desc.dtype, [BM, BN], in_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma.async_load(in_desc, [gl.program_id(0) * BM + OFF_M, gl.program_id(1) * BN + OFF_N], bar, smem)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, BM, gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, gl.SliceLayout(0, layout))
    block = gl.program_id(0) * gl.num_programs(1) + gl.program_id(1)
    gl.store(tile_ptr + block * (BM * BN) + rows[:, None] * BN + cols[None, :], smem.load(layout))


@gluon.jit
def tma_store_tile_kernel(out_desc, OFF_M: gl.constexpr, OFF_N: gl.constexpr):
    """TMA-store only: a block of its element indices (row * BN + col + 1000 * program) stored at
    (pid_m * BM + OFF_M, pid_n * BN + OFF_N), clipped at the tensor's edges."""
    BM: gl.constexpr = out_desc.block_type.shape[0]
    BN: gl.constexpr = out_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, BM, gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, gl.SliceLayout(0, layout))
    block = gl.program_id(0) * gl.num_programs(1) + gl.program_id(1)
    values = (rows[:, None] * BN + cols[None, :] + block * 1000).to(out_desc.dtype)
    smem = gl.allocate_shared_memory(out_desc.dtype, [BM, BN], out_desc.layout, values)
    fence_async_shared()
    tma.async_store(out_desc, [gl.program_id(0) * BM + OFF_M, gl.program_id(1) * BN + OFF_N], smem)
    tma.store_wait(pendings=0)


@gluon.jit
def tma_band_sum_kernel(in_desc, out_ptr, n_blocks):
    """Program p sums the n_blocks column blocks of row band p through one buffer and one mbarrier whose phase
    flips with every block; the float32 sum is stored whole."""
    BM: gl.constexpr = in_desc.block_type.shape[0]
    BN: gl.constexpr = in_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    smem = gl.allocate_shared_memory(in_desc.dtype, [BM, BN], in_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    acc = gl.zeros([BM, BN], gl.float32, layout)
    phase = 0
    for k in range(n_blocks):
        mbarrier.expect(bar, in_desc.block_type.nbytes)
        tma.async_load(in_desc, [gl.program_id(0) * BM, k * BN], bar, smem)
        mbarrier.wait(bar, phase)
        phase ^= 1
        acc = acc + smem.load(layout).to(gl.float32)
        gl.barrier()  # the buffer is read by every warp before the next load overwrites it
    mbarrier.invalidate(bar)
    rows = gl.arange(0, BM, gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, gl.SliceLayout(0, layout))
    gl.store(out_ptr + (gl.program_id(0) * BM + rows[:, None]) * BN + cols[None, :], acc)


@gluon.jit
def tma_store_ring_kernel(in_desc, out_desc, n_blocks, STAGES: gl.constexpr):
    """Copies row band p block by block, doubled, through STAGES staging buffers for the TMA stores:
    ``store_wait(STAGES - 1)`` before a buffer is reused leaves at most STAGES - 1 stores in flight."""
    BM: gl.constexpr = in_desc.block_type.shape[0]
    BN: gl.constexpr = in_desc.block_type.shape[1]
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    src = gl.allocate_shared_memory(in_desc.dtype, [BM, BN], in_desc.layout)
    stages = gl.allocate_shared_memory(out_desc.dtype, [STAGES, BM, BN], out_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    off_m = gl.program_id(0) * BM
    for k in range(n_blocks):
        mbarrier.expect(bar, in_desc.block_type.nbytes)
        tma.async_load(in_desc, [off_m, k * BN], bar, src)
        mbarrier.wait(bar, k & 1)
        x = src.load(layout)
        gl.barrier()
        tma.store_wait(pendings=STAGES - 1)
        stage = stages.index(k % STAGES)
        stage.store(x * 2)
        fence_async_shared()
        tma.async_store(out_desc, [off_m, k * BN], stage)
    tma.store_wait(pendings=0)
    mbarrier.invalidate(bar)


@gluon.jit
def _ring_loader(in_desc, bufs, ready, empty, n_blocks, STAGES: gl.constexpr):
    BM: gl.constexpr = in_desc.block_type.shape[0]
    BN: gl.constexpr = in_desc.block_type.shape[1]
    for k in range(n_blocks):
        s = k % STAGES
        mbarrier.wait(empty.index(s), ((k // STAGES) & 1) ^ 1)  # the first pass finds every slot free
        mbarrier.expect(ready.index(s), in_desc.block_type.nbytes)
        tma.async_load(in_desc, [gl.program_id(0) * BM, k * BN], ready.index(s), bufs.index(s))


@gluon.jit
def _ring_consumer(out_ptr, bufs, ready, empty, n_blocks, STAGES: gl.constexpr, BM: gl.constexpr,
                   BN: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [gl.num_warps(), 1], [1, 0])
    acc = gl.zeros([BM, BN], gl.float32, layout)
    for k in range(n_blocks):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        x = bufs.index(s).load(layout)
        gl.barrier()  # every warp of the partition has read the slot
        mbarrier.arrive(empty.index(s), count=1)
        acc = acc * 0.5
        acc = acc + x
    rows = gl.arange(0, BM, gl.SliceLayout(1, layout))
    cols = gl.arange(0, BN, gl.SliceLayout(0, layout))
    gl.store(out_ptr + (gl.program_id(0) * BM + rows[:, None]) * BN + cols[None, :], acc)


@gluon.jit
def ws_ring_kernel(in_desc, out_ptr, n_blocks, STAGES: gl.constexpr):
    """A warp-specialized ring: a one-warp TMA loader fills STAGES slots (ready / empty mbarriers), the default
    partition folds the blocks in order (acc = acc / 2 + block: the result shows the order)."""
    BM: gl.constexpr = in_desc.block_type.shape[0]
    BN: gl.constexpr = in_desc.block_type.shape[1]
    bufs = gl.allocate_shared_memory(in_desc.dtype, [STAGES, BM, BN], in_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([(_ring_consumer, (out_ptr, bufs, ready, empty, n_blocks, STAGES, BM, BN)),
                        (_ring_loader, (in_desc, bufs, ready, empty, n_blocks, STAGES))], [1])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


@gluon.jit
def _half_writer(buf, done, HALF: gl.constexpr, VALUE: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    buf.slice(HALF * 32, 32).store(gl.arange(0, 32, layout) * 2 + VALUE)
    gl.barrier()
    mbarrier.arrive(done, count=1)


@gluon.jit
def _wait_and_store(out_ptr, buf, done):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    mbarrier.wait(done, 0)
    gl.store(out_ptr + gl.arange(0, 64, layout), buf.load(layout))


@gluon.jit
def ws_arrive_count_kernel(out_ptr):
    """Two one-warp workers each fill half of a shared buffer and arrive once on a barrier of count 2; the
    default partition waits for the phase to complete and stores the buffer."""
    buf = gl.allocate_shared_memory(gl.int32, [64], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    done = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(done, count=2)
    gl.warp_specialize([(_wait_and_store, (out_ptr, buf, done)), (_half_writer, (buf, done, 0, 1000)),
                        (_half_writer, (buf, done, 1, 2000))], [1, 1])
    mbarrier.invalidate(done)


# =====================================================================================================
# cp.async (ampere.async_copy): loads into shared memory, commit / wait groups, mbarrier arrival
# =====================================================================================================
@gluon.jit
def cp_async_copy_kernel(x_ptr, y_ptr, n, BLOCK: gl.constexpr):
    """One masked cp.async of a block into shared memory (lanes at or past n are masked off), committed and
    waited for, then every lane of the buffer is stored."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    smem = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [BLOCK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    cp.async_load(smem, x_ptr + offsets, mask=offsets < n)
    cp.commit_group()
    cp.wait_group(0)
    gl.store(y_ptr + offsets, smem.load(layout))


@gluon.jit
def cp_async_ring_kernel(x_ptr, y_ptr, n_blocks, STAGES: gl.constexpr, BLOCK: gl.constexpr):
    """A software-pipelined running sum over n_blocks blocks: STAGES - 1 copies in flight ahead of the block
    being read (one commit group per block, ``wait_group(STAGES - 1)`` before each read, a drain at the end);
    after each block the running sum is stored."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    lanes = gl.arange(0, BLOCK, layout)
    bufs = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [STAGES, BLOCK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    for k in gl.static_range(STAGES - 1):
        cp.async_load(bufs.index(k), x_ptr + k * BLOCK + lanes, mask=lanes < BLOCK * (n_blocks - k))
        cp.commit_group()
    total = gl.zeros([BLOCK], gl.float32, layout)
    for k in range(n_blocks):
        ahead = k + STAGES - 1
        cp.async_load(bufs.index(ahead % STAGES), x_ptr + ahead * BLOCK + lanes,
                      mask=lanes < BLOCK * (n_blocks - ahead))
        cp.commit_group()
        cp.wait_group(STAGES - 1)
        total = total + bufs.index(k % STAGES).load(layout)
        gl.store(y_ptr + k * BLOCK + lanes, total)
    cp.wait_group(0)


@gluon.jit
def cp_async_mbarrier_kernel(x_ptr, y_ptr, PER_THREAD: gl.constexpr, BLOCK: gl.constexpr):
    """cp.async completion tracked by an mbarrier: with PER_THREAD every thread arrives (``increment_count=False``
    on a barrier counting all threads), else ``mbarrier_arrive`` plus one ordinary arrival on a count-1 barrier."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    smem = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [BLOCK], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    if PER_THREAD:
        mbarrier.init(bar, count=gl.num_warps() * 32)
        cp.async_load(smem, x_ptr + offsets)
        cp.mbarrier_arrive(bar, increment_count=False)
    else:
        mbarrier.init(bar, count=1)
        cp.async_load(smem, x_ptr + offsets)
        cp.mbarrier_arrive(bar)
        mbarrier.arrive(bar)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)
    gl.store(y_ptr + offsets, smem.load(layout) * 3)


# =====================================================================================================
# clusters: what the CTAs of a 2-CTA cluster write through one store or atomic
# =====================================================================================================
@gluon.jit
def cluster_write_kernel(out_ptr, count_ptr, SCALAR: gl.constexpr, BLOCK: gl.constexpr):
    """Launched with ``num_ctas=2``: both CTAs of cluster ``pid`` run it. A value every CTA holds whole (a scalar,
    or a tensor whose layout does not split it over the cluster) is stored, the same from both, and 1 is added to a
    counter with an atomic: the counter shows how many of the two CTAs performed the atomic."""
    pid = gl.program_id(0)
    if SCALAR:
        gl.store(out_ptr + pid, pid * 7 + 3)
        gl.atomic_add(count_ptr + pid, 1)
    else:
        # the cluster's CTA bit picks no element (a zero basis): each CTA holds the whole block
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0], cga_layout=[[0]])
        offsets = gl.arange(0, BLOCK, layout)
        gl.store(out_ptr + pid * BLOCK + offsets, offsets * 7 + pid)
        gl.atomic_add(count_ptr + pid * BLOCK + offsets, offsets * 0 + 1)


@gluon.jit
def cluster_ticket_kernel(count_ptr, ticket_ptr, BLOCK: gl.constexpr):
    """Launched with ``num_ctas=2``: both CTAs of cluster ``pid`` take a ticket from one scalar counter with an atomic
    add and store the value it returned over their own half of a block (a layout the cluster's CTA bit splits): the
    block shows what each CTA got back, the counter how many adds were performed."""
    pid = gl.program_id(0)
    ticket = gl.atomic_add(count_ptr + pid, 1)
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0], cga_layout=[[1]])
    offsets = gl.arange(0, BLOCK, layout)
    gl.store(ticket_ptr + pid * BLOCK + offsets, offsets * 0 + ticket)
