"""CPU implementations of the Gluon builtins a Blackwell kernel calls, and the rebinding that makes a
``@gluon.jit`` function call them.

How a kernel runs here (the way Triton's interpreter runs ``tl`` kernels): each ``@gluon.jit``
function's Python function (``JITFunction.fn``) is copied with its globals replaced -- ``gl``,
``mbarrier``, ``tma``, ``cluster`` and the ``tcgen05_*`` functions become namespaces served from the
builtin registry (:mod:`gluon_overlap.twin.builtins`), other jit functions become their own rebound
copies, ``@gluon.constexpr_function``\\ s become their plain Python functions and ``@gluon.aggregate``
classes become plain classes with the same fields and methods.  Nothing of the kernel's text changes:
what the kernel does is what runs.

Every builtin that touches memory or a barrier builds an engine operation
(:mod:`gluon_overlap.twin.engine`) and hands it to the scheduler through
:func:`~gluon_overlap.twin.context.emit`, which suspends the calling partition (a greenlet) until the
engine has executed it; the data backend (:mod:`gluon_overlap.twin.execdata`) gives it its effect.  A
builtin without a registry row raises :class:`ExecutorError` naming the builtin and the kernel line --
never a silent no-op.
"""

from __future__ import annotations

import math
import re
import types
from typing import Any

import torch
import triton.experimental.gluon.language as gl
from triton.runtime.jit import ConstexprFunction, JITFunction

from gluon_overlap.twin import engine as E
from gluon_overlap.twin.builtins import REGISTRY, builtin, namespace
from gluon_overlap.twin.context import (
    DISPLAY_NAMES,
    ExecutorError,
    SourceLine,
    caller_line,
    current,
    current_or_none,
    emit,
    hazard,
    runtime,
    where,
)
from gluon_overlap.twin.memory import (
    BarrierAlloc,
    BarrierBatch,
    BarrierRef,
    DeviceDescriptor,
    Payload,
    SmemAlloc,
    SmemView,
    TmemAlloc,
    TmemView,
)
from gluon_overlap.twin.tensors import (
    Pointer,
    PointerTensor,
    RegTensor,
    RuntimeInt,
    reduce_,
    runtime_range,
    torch_dtype,
)

__all__ = ["DISPLAY_NAMES", "CpuAggregate", "CpuModule", "Rebinder", "SourceLine", "unsupported"]


def unsupported(name: str):
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise ExecutorError(f"{name} is not implemented by the CPU executor{where()}")

    stub.__name__ = name
    return stub


def _lead(ctx) -> bool:
    return ctx.cta == 0


def _two_cta_issue_skipped(ctx, two_ctas: bool) -> bool:
    """In 2-CTA mode only the lead CTA issues tcgen05 copies, MMAs and commits (SEMANTICS.md 3)."""
    return two_ctas and ctx.runtime.num_ctas > 1 and not _lead(ctx)


def _stage(view: SmemView) -> int:
    return view.transforms[0][1] if view.transforms and view.transforms[0][0] == "index" else 0


def _regs(x: Any, like: RegTensor | None = None) -> RegTensor:
    """``x`` as a register tensor (a scalar becomes a 0-d one)."""
    if isinstance(x, RegTensor):
        return x
    if isinstance(x, bool):
        return RegTensor(torch.tensor(x), [], gl.int1)
    if isinstance(x, int):
        return RegTensor(torch.tensor(int(x), dtype=torch.int32), [], gl.int32)
    if isinstance(x, float):
        return RegTensor(torch.tensor(x, dtype=torch.float32), [], gl.float32)
    raise ExecutorError(f"expected a tensor or a scalar, got {type(x).__name__}{where()}")


# =====================================================================================
# gl: program and launch
# =====================================================================================
@builtin("gl.program_id", effect="this CTA's program index (a runtime i32)")
def program_id(axis: Any = 0) -> RuntimeInt:
    return RuntimeInt(current().program[int(axis)])


@builtin("gl.num_programs", effect="the grid size along an axis (a runtime i32)")
def num_programs(axis: Any = 0) -> RuntimeInt:
    return RuntimeInt(runtime().grid[int(axis)])


@builtin("gl.num_ctas", effect="CTAs per cluster (constexpr)")
def num_ctas() -> int:
    return runtime().num_ctas


@builtin("gl.num_warps", effect="warps of the calling partition (constexpr)")
def num_warps() -> int:
    return current().num_warps


@builtin("gl.static_assert", effect="raises at the kernel line when false")
def static_assert(cond: Any, msg: str = "") -> None:
    if not cond:
        raise ExecutorError(f"static_assert failed{': ' + str(msg) if msg else ''}{where()}")


@builtin("gl.static_print", effect="prints")
def static_print(*args: Any, **kwargs: Any) -> None:
    print(*args, **kwargs)


@builtin("gl.to_tensor", effect="a scalar becomes a runtime value")
def to_tensor(x: Any) -> Any:
    if isinstance(x, int) and not isinstance(x, bool):
        return RuntimeInt(x)
    return x


@builtin("gl.cdiv", effect="(a + b - 1) // b")
def cdiv(a: Any, b: Any) -> Any:
    return (a + b - 1) // b


@builtin("gl.static_range", effect="a Python range (unrolled)")
def static_range(*args: Any) -> range:
    return range(*(int(a) for a in args))


def _identity_hint(x: Any, *args: Any, **kwargs: Any) -> Any:
    return x


for _hint in ("multiple_of", "max_contiguous", "max_constancy"):
    builtin(f"gl.{_hint}", effect="a compiler hint: the value unchanged")(_identity_hint)


@builtin("gl.assume", effect="a compiler hint: nothing")
def assume(cond: Any) -> None:
    return None


# =====================================================================================
# gl: register tensors
# =====================================================================================
@builtin("gl.arange", effect="int32 [start, end) in a layout")
def arange(start: Any, end: Any, layout: Any = None) -> RegTensor:
    start, end = int(start), int(end)
    n = end - start
    if n <= 0 or n & (n - 1):
        raise ExecutorError(f"gl.arange({start}, {end}): the range's length must be a power of 2{where()}")
    return RegTensor(torch.arange(start, end, dtype=torch.int32), [n], gl.int32, layout)


@builtin("gl.full", effect="a tensor of one value")
def full(shape: Any, value: Any, dtype: Any, layout: Any = None) -> RegTensor:
    shape = [int(s) for s in shape]
    return RegTensor(torch.full(shape, value, dtype=torch_dtype(dtype)), shape, dtype, layout)


@builtin("gl.zeros", effect="a tensor of zeros")
def zeros(shape: Any, dtype: Any, layout: Any = None) -> RegTensor:
    return full(shape, 0, dtype, layout)


@builtin("gl.full_like", effect="a tensor of one value, shaped like another")
def full_like(input: RegTensor, value: Any, shape: Any = None, dtype: Any = None, layout: Any = None) -> RegTensor:
    return full(input.shape if shape is None else shape, value, input.dtype if dtype is None else dtype,
                input.layout if layout is None else layout)


@builtin("gl.zeros_like", effect="zeros shaped like another tensor")
def zeros_like(input: RegTensor, shape: Any = None, dtype: Any = None, layout: Any = None) -> RegTensor:
    return full_like(input, 0, shape, dtype, layout)


@builtin("gl.where", effect="elementwise select (scalars: Python's conditional)")
def where_(cond: Any, x: Any, y: Any) -> Any:
    if not any(isinstance(t, RegTensor) for t in (cond, x, y)):
        return x if cond else y
    tensors = [t for t in (cond, x, y) if isinstance(t, RegTensor)]
    shape = list(torch.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    xv = x.local if isinstance(x, RegTensor) else x
    yv = y.local if isinstance(y, RegTensor) else y
    cv = cond.local if isinstance(cond, RegTensor) else torch.tensor(bool(cond))
    if not isinstance(xv, torch.Tensor):
        xv = torch.tensor(xv, dtype=yv.dtype if isinstance(yv, torch.Tensor) else None)
    if not isinstance(yv, torch.Tensor):
        yv = torch.tensor(yv, dtype=xv.dtype)
    out = torch.where(cv.to(torch.bool), xv, yv)
    layout = next((t.layout for t in tensors if t.layout is not None), None)
    return RegTensor(out, shape, None, layout)


@builtin("gl.convert_layout", effect="the same values in another layout")
def convert_layout(value: Any, layout: Any, assert_trivial: bool = False) -> Any:
    if isinstance(value, RegTensor):
        return RegTensor(value.local, value.shape, value.dtype, layout)
    return value


@builtin("gl.set_auto_layout", effect="the same values with a concrete layout")
def set_auto_layout(value: Any, layout: Any) -> Any:
    return convert_layout(value, layout)


@builtin("gl.expand_dims", effect="a new size-1 dimension")
def expand_dims(input: RegTensor, axis: Any) -> RegTensor:
    axes = [int(a) for a in axis] if isinstance(axis, list | tuple) else [int(axis)]
    out = _regs(input)
    for a in sorted(axes):
        index = [slice(None)] * out.rank
        index.insert(a if a >= 0 else out.rank + 1 + a, None)
        out = out[tuple(index)]
    return out


@builtin("gl.broadcast", effect="two tensors broadcast to one shape")
def broadcast(a: Any, b: Any) -> tuple[RegTensor, RegTensor]:
    a, b = _regs(a), _regs(b)
    shape = list(torch.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    return (RegTensor(a.local.expand(shape), shape, a.dtype, a.layout),
            RegTensor(b.local.expand(shape), shape, b.dtype, b.layout))


@builtin("gl.reshape", effect="the values in another shape")
def reshape(input: RegTensor, shape: Any, can_reorder: bool = False, layout: Any = None) -> RegTensor:
    return input.reshape(*shape)


@builtin("gl.permute", effect="the dimensions reordered")
def permute(input: RegTensor, dims: Any) -> RegTensor:
    return input.permute(*dims)


@builtin("gl.sum", effect="a sum along an axis (fp16/bf16 summed in fp32)")
def sum_(input: RegTensor, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
    return reduce_(input, axis, "sum", keep_dims)


@builtin("gl.max", effect="a maximum along an axis")
def max_(input: RegTensor, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
    return reduce_(input, axis, "max", keep_dims)


@builtin("gl.min", effect="a minimum along an axis")
def min_(input: RegTensor, axis: Any = None, keep_dims: bool = False, **kw: Any) -> RegTensor:
    return reduce_(input, axis, "min", keep_dims)


@builtin("gl.minimum", effect="elementwise minimum")
def minimum(a: Any, b: Any, propagate_nan: Any = None) -> Any:
    if isinstance(a, RegTensor) or isinstance(b, RegTensor):
        a, b = _regs(a), _regs(b)
        return a._new(torch.minimum(a.local, b.local.to(a.local.dtype)), b)
    return min(a, b)


@builtin("gl.maximum", effect="elementwise maximum")
def maximum(a: Any, b: Any, propagate_nan: Any = None) -> Any:
    if isinstance(a, RegTensor) or isinstance(b, RegTensor):
        a, b = _regs(a), _regs(b)
        return a._new(torch.maximum(a.local, b.local.to(a.local.dtype)), b)
    return max(a, b)


def _unary(name: str, fn: Any) -> None:
    def impl(x: Any, *args: Any, **kwargs: Any) -> RegTensor:
        x = _regs(x)
        t = x.local if x.local.dtype.is_floating_point or name == "abs" else x.local.float()
        return x._new(fn(t))

    impl.__name__ = name
    builtin(f"gl.{name}", effect=f"elementwise {name}")(impl)


for _name, _fn in (("exp", torch.exp), ("exp2", torch.exp2), ("log", torch.log), ("log2", torch.log2),
                   ("sqrt", torch.sqrt), ("rsqrt", torch.rsqrt), ("abs", torch.abs), ("floor", torch.floor),
                   ("ceil", torch.ceil), ("sin", torch.sin), ("cos", torch.cos), ("erf", torch.erf)):
    _unary(_name, _fn)


@builtin("gl.fma", effect="a * b + c")
def fma(a: Any, b: Any, c: Any) -> RegTensor:
    return _regs(a) * b + c


@builtin("gl.cast", effect="a dtype conversion (bitcast=True: the same bits)")
def cast(input: Any, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> RegTensor:
    return _regs(input).to(dtype, bitcast=bitcast)


@builtin("gl.add", effect="a + b")
def add(x: Any, y: Any, sanitize_overflow: bool = True) -> Any:
    return x + y


@builtin("gl.sub", effect="a - b")
def sub(x: Any, y: Any, sanitize_overflow: bool = True) -> Any:
    return x - y


@builtin("gl.mul", effect="a * b")
def mul(x: Any, y: Any, sanitize_overflow: bool = True) -> Any:
    return x * y


@builtin("gl.fdiv", effect="a / b (float)")
def fdiv(x: Any, y: Any, ieee_rounding: bool = False) -> Any:
    return _regs(x) / y


@builtin("gl.div_rn", effect="a / b rounded to nearest")
def div_rn(x: Any, y: Any) -> Any:
    return _regs(x) / y


@builtin("gl.sqrt_rn", effect="sqrt rounded to nearest")
def sqrt_rn(x: Any) -> Any:
    return _regs(x)._math(torch.sqrt)


@builtin("gl.clamp", effect="min(max(x, lo), hi)")
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = None) -> Any:
    return minimum(maximum(x, min), max)


@builtin("gl.umulhi", effect="the high 32 bits of the unsigned 64-bit product")
def umulhi(x: Any, y: Any) -> RegTensor:
    a, b = _regs(x), _regs(y)
    prod = (a.local.to(torch.int64) & 0xFFFFFFFF) * (b.local.to(torch.int64) & 0xFFFFFFFF)
    return a._new((prod >> 32).to(a.local.dtype), b)


@builtin("gl.device_assert", effect="raises at the kernel line when any lane is false")
def device_assert(cond: Any, msg: str = "", mask: Any = None) -> None:
    c = _regs(cond).local.to(torch.bool)
    if mask is not None:
        c = c | ~_regs(mask).local.to(torch.bool)
    if not bool(c.all()):
        raise ExecutorError(f"device_assert failed{': ' + msg if msg else ''}{where()}")


def _scan(name: str, fn: Any) -> None:
    def impl(input: RegTensor, axis: Any = 0, reverse: bool = False, dtype: Any = None) -> RegTensor:
        t = input.local
        a = int(axis) % max(1, input.rank)
        if reverse:
            t = t.flip(a)
        out = fn(t, dim=a)
        if reverse:
            out = out.flip(a)
        return RegTensor(out.to(t.dtype) if t.dtype.is_floating_point else out, input.shape, None, input.layout)

    impl.__name__ = name
    builtin(f"gl.{name}", effect=f"an inclusive {name} along an axis")(impl)


_scan("cumsum", torch.cumsum)
_scan("cumprod", torch.cumprod)


@builtin("gl.xor_sum", effect="xor of the values along an axis (integers)")
def xor_sum(input: RegTensor, axis: Any = None, keep_dims: bool = False) -> RegTensor:
    return reduce(input, axis, lambda a, b: a ^ b, keep_dims=keep_dims)


@builtin("gl.reduce_or", effect="or of the values along an axis (integers)")
def reduce_or(input: RegTensor, axis: Any, keep_dims: bool = False) -> RegTensor:
    return reduce(input, axis, lambda a, b: a | b, keep_dims=keep_dims)


@builtin("gl.reduce", effect="a tree reduction with the kernel's combine function (one tensor)",
         note="several tensors at once are not implemented")
def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: bool = False) -> RegTensor:
    if isinstance(input, tuple | list):
        raise ExecutorError(f"gl.reduce of {len(input)} tensors at once is not implemented by the CPU executor"
                            f"{where()}")
    fn = runtime().cpu(combine_fn) if hasattr(combine_fn, "fn") else combine_fn
    x = _regs(input)
    t = x.local.reshape(-1) if axis is None else x.local
    a = 0 if axis is None else int(axis) % x.rank
    parts = list(t.unbind(a))
    while len(parts) > 1:  # pairwise, as a butterfly does (associativity assumed, like the compiler)
        nxt = [_regs(fn(RegTensor(parts[i]), RegTensor(parts[i + 1]))).local for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    out = parts[0]
    shape = [] if axis is None else [d for i, d in enumerate(x.shape) if i != a]
    if keep_dims and axis is not None:
        out = out.unsqueeze(a)
        shape.insert(a, 1)
    return RegTensor(out, shape, None, None)


@builtin("gl.ravel", effect="the values flattened")
def ravel(x: RegTensor, can_reorder: bool = False) -> RegTensor:
    return x.reshape(x.numel)


@builtin("gl.join", effect="two tensors stacked along a new minor dimension")
def join(a: RegTensor, b: RegTensor) -> RegTensor:
    a, b = _regs(a), _regs(b)
    return RegTensor(torch.stack([a.local, b.local], dim=-1), a.shape + [2], a.dtype, None)


@builtin("gl.split", effect="a tensor's size-2 minor dimension split into two tensors")
def split(a: RegTensor) -> tuple[RegTensor, RegTensor]:
    if a.shape[-1] != 2:
        raise ExecutorError(f"gl.split needs a minor dimension of 2, got shape {a.shape}{where()}")
    lo, hi = a.local.unbind(-1)
    return RegTensor(lo, a.shape[:-1], a.dtype, None), RegTensor(hi, a.shape[:-1], a.dtype, None)


# register-tensor methods that are builtins too (rows of the table; the methods live on RegTensor)
for _name, _effect in (("to", "a dtype conversion (bitcast=True: the same bits)"), ("sum", "a sum along an axis"),
                       ("max", "a maximum along an axis"), ("min", "a minimum along an axis"),
                       ("reshape", "the values in another shape"), ("permute", "the dimensions reordered"),
                       ("trans", "the dimensions reversed"), ("__getitem__", "x[:, None]: a new dimension"),
                       ("expand_dims", "a new size-1 dimension"), ("broadcast_to", "the values broadcast"),
                       ("cast", "a dtype conversion"), ("item", "the value of a one-element tensor"),
                       *((m, f"elementwise {m}") for m in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos",
                                                           "erf", "floor", "ceil", "abs"))):
    builtin(f"tensor.{_name}", effect=_effect)(getattr(RegTensor, _name))


# =====================================================================================
# gl: global memory through pointers
# =====================================================================================
def _pointers(ptr: Any, what: str) -> PointerTensor:
    if isinstance(ptr, Pointer):
        return PointerTensor(ptr, torch.tensor(ptr.offset, dtype=torch.int64), [], None)
    if not isinstance(ptr, PointerTensor):
        raise ExecutorError(f"gl.{what} needs pointers (a tensor argument plus offsets), got "
                            f"{type(ptr).__name__}{where()}")
    return ptr


def _mask(mask: Any, shape: list[int], what: str) -> torch.Tensor | None:
    if mask is None:
        return None
    m = mask.local if isinstance(mask, RegTensor) else torch.tensor(bool(mask))
    try:
        return m.to(torch.bool).expand(shape)
    except RuntimeError:
        raise ExecutorError(f"gl.{what}: the mask {list(m.shape)} does not broadcast to the pointers {shape}"
                            f"{where()}") from None


@builtin("gl.load", op=E.GlobalLoad, effect="global memory into registers; masked-off lanes get `other` "
         "(none: garbage); a lane outside its tensor's storage is a hazard", note="cache / eviction hints ignored")
def load(pointer: Any, mask: Any = None, other: Any = None, boundary_check: Any = (), padding_option: str = "",
         cache_modifier: str = "", eviction_policy: str = "", volatile: bool = False, layout: Any = None) -> RegTensor:
    ptrs = _pointers(pointer, "load")
    m = _mask(mask, ptrs.shape, "load")
    dtype = ptrs.base.element_ty
    op = E.GlobalLoad(math.prod(ptrs.shape) * torch_dtype(dtype).itemsize)
    op.x = Payload(ptrs=ptrs, mask=m, other=other, dtype=dtype)
    return emit(op)


@builtin("gl.store", op=E.GlobalStore, effect="registers into global memory (cast to the pointee type); masked-off "
         "lanes untouched; a lane outside its tensor's storage is a hazard", note="cache / eviction hints ignored")
def store(pointer: Any, value: Any, mask: Any = None, boundary_check: Any = (), cache_modifier: str = "",
          eviction_policy: str = "") -> None:
    ptrs = _pointers(pointer, "store")
    m = _mask(mask, ptrs.shape, "store")
    v = _regs(value)
    try:
        values = v.local.expand(ptrs.shape) if v.shape != ptrs.shape else v.local
    except RuntimeError:
        raise ExecutorError(f"gl.store of a {v.shape} value through {ptrs.shape} pointers{where()}") from None
    op = E.GlobalStore(math.prod(ptrs.shape) * torch_dtype(ptrs.base.element_ty).itemsize)
    op.x = Payload(ptrs=ptrs, mask=m, values=values)
    emit(op)


# =====================================================================================
# gl: allocations, barriers, warp specialization
# =====================================================================================
def _next_alloc(kind: type, name: str, make) -> Any:
    """The cluster-wide object behind this CTA's next allocation (both CTAs run the same code, so
    their ``n``-th allocations are the same buffer)."""
    ctx = current()
    cluster = ctx.runtime.clusters[ctx.cluster]
    n = cluster.next_alloc[ctx.cta]
    cluster.next_alloc[ctx.cta] += 1
    if n == len(cluster.objects):
        cluster.objects.append(make())
    obj = cluster.objects[n]
    if not isinstance(obj, kind):
        raise ExecutorError(f"CTA {ctx.cta} allocated {kind.__name__} {name} where CTA 0 allocated "
                            f"{type(obj).__name__} {obj.name}: the CTAs of a cluster must allocate alike{where()}")
    return obj


def _assigned_name(default: str) -> str:
    """The variable an allocation is assigned to (``load_empty_bars = ...`` -> ``load_empty``)."""
    line = caller_line()
    if line is not None:
        m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]+)?=", line.text)
        if m:
            name = m.group(1)
            for suffix in ("_bars", "_bar", "_smems", "_smem", "_bufs", "_buf"):
                if name.endswith(suffix) and len(name) > len(suffix):
                    return name[: -len(suffix)]
            return name
    return default


try:  # the class used to mark barrier allocations
    from triton.experimental.gluon.language.nvidia.hopper.mbarrier import MBarrierLayout as MBarrierLayoutType
except ImportError:  # pragma: no cover
    MBarrierLayoutType = type("MBarrierLayoutType", (), {})


@builtin("gl.allocate_shared_memory", effect="a shared-memory buffer per CTA (garbage until written); "
         "an MBarrierLayout allocation is a batch of mbarriers")
def allocate_shared_memory(element_ty: Any, shape: Any, layout: Any, value: Any = None) -> Any:
    rt = runtime()
    shape = [int(s) for s in shape]
    if isinstance(layout, MBarrierLayoutType) or type(layout).__name__ == "MBarrierLayout":
        bases = [list(b) for b in (layout.cga_layout or [])]
        pair = bool(bases) and all(v == 0 for v in bases[0])
        batch = shape[0] if len(shape) > 1 else 1
        name = _assigned_name("barrier")
        alloc = _next_alloc(BarrierAlloc, name, lambda: BarrierAlloc(name, batch, pair, rt.num_ctas))
        return BarrierBatch(alloc) if len(shape) > 1 else BarrierRef(alloc, 0)
    name = _assigned_name("smem")
    alloc = _next_alloc(SmemAlloc, name, lambda: SmemAlloc(name, element_ty, shape, layout, rt.num_ctas))
    view = SmemView(alloc)
    if value is not None:
        view.store(value)
    return view


@builtin("gl.barrier", effect="a CTA's threads meet (nothing: a partition is one process); cluster=True: every "
         "CTA of the cluster meets")
def barrier(*, cluster: bool = False) -> None:
    ctx = current()
    if cluster and ctx.runtime.num_ctas > 1:
        ctx.inits_unfenced = False
        ctx.runtime.cluster_sync(ctx)


@builtin("cluster.barrier", effect="every CTA of the cluster arrives, then waits for all of them")
def cluster_barrier(relaxed: bool = False) -> None:
    ctx = current()
    if ctx.runtime.num_ctas == 1:  # what the compiler's verifier says
        raise ExecutorError(f"cluster.barrier: 'ttng.cluster_barrier' op requires ttg.num-ctas > 1 (this launch has "
                            f"num_ctas=1){where()}")
    if ctx.runtime.num_ctas > 1:
        ctx.inits_unfenced = False
        ctx.runtime.cluster_sync(ctx)


@builtin("gl.warp_specialize", effect="forks the CTA into its partitions (processes); returns the default "
         "partition's result when all have finished")
def warp_specialize(functions_and_args: Any, worker_num_warps: Any, worker_num_regs: Any = None) -> Any:
    """Fork: every partition (the default one first) becomes a new process of this CTA; returns the
    default partition's result when all of them have finished.  Starts with a cluster barrier (the inits before it must
    be visible to the other CTA, SEMANTICS.md section 3)."""
    ctx = current()
    rt = ctx.runtime
    if ctx.partition != "main":
        raise ExecutorError(f"warp_specialize cannot be nested{where()}")
    pairs = [tuple(p) for p in functions_and_args]
    warps = [int(w) for w in worker_num_warps]
    if len(pairs) - 1 != len(warps):
        raise ExecutorError(f"warp_specialize got {len(pairs) - 1} workers but {len(warps)} worker_num_warps{where()}")
    for fn, args in pairs:
        if not isinstance(args, tuple | list):
            raise ExecutorError(f"warp_specialize: the arguments of {getattr(fn, '__name__', fn)} must be a tuple, got "
                                f"{type(args).__name__}{where()}")
    if rt.num_ctas > 1:
        ctx.inits_unfenced = False
        rt.cluster_sync(ctx)
    result: list = []
    join_bar = rt.spawn_partitions(ctx, [(fn, tuple(args)) for fn, args in pairs], [ctx.num_warps] + warps, result)
    rt.join_partitions(ctx, join_bar)
    return result[0] if result else None


# =====================================================================================
# mbarrier
# =====================================================================================
@builtin("mbarrier.allocate_mbarrier", effect="a batch of mbarriers (uninitialized)")
def allocate_mbarrier(batch: Any = None, two_ctas: bool = False) -> Any:
    rt = runtime()
    name = _assigned_name("barrier")
    n = 1 if batch is None else int(batch)
    alloc = _next_alloc(BarrierAlloc, name, lambda: BarrierAlloc(name, n, bool(two_ctas), rt.num_ctas))
    return BarrierRef(alloc, 0) if batch is None else BarrierBatch(alloc)


def _check_barrier(bar: Any, what: str) -> None:
    if not isinstance(bar, BarrierRef):
        raise ExecutorError(f"mbarrier.{what} needs one barrier (e.g. bars.index(i)), got "
                            f"{type(bar).__name__}{where()}")


@builtin("mbarrier.init", effect="a fresh barrier in phase 0 (twice without invalidate: a hazard; "
         "after invalidate: legal)")
def init(bar: BarrierRef, count: Any) -> None:
    ctx = current()
    rt = ctx.runtime
    _check_barrier(bar, "init")
    ctx.inits_unfenced = True  # every CTA runs the init code, lead or not, and then the cluster barrier
    alloc = bar.alloc
    if alloc.pair and not _lead(ctx):
        return  # only the lead initializes a pair barrier (SEMANTICS.md 3)
    copy_cta = 0 if alloc.pair else ctx.cta
    if alloc.copies[copy_cta][bar.index_] is not None and alloc.invalidated[copy_cta][bar.index_] is None:
        hazard("barrier-reinitialized", f"{bar} initialized twice (without mbarrier.invalidate between)")
    alloc.invalidated[copy_cta][bar.index_] = None
    total = int(count) * (rt.num_ctas if alloc.pair else 1)
    engine_bar = rt.engine.barrier(alloc.name, bar.index_, cta=copy_cta, cluster=ctx.cluster, count=total)
    rt.sync.new_barrier(engine_bar)
    alloc.copies[copy_cta][bar.index_] = engine_bar


@builtin("mbarrier.invalidate", effect="ends the barrier's life: a later use is a hazard until it is initialized "
         "again")
def invalidate(bar: BarrierRef) -> None:
    ctx = current()
    _check_barrier(bar, "invalidate")
    alloc = bar.alloc
    if alloc.pair and not _lead(ctx):
        return
    copy_cta = 0 if alloc.pair else ctx.cta
    if alloc.copies[copy_cta][bar.index_] is None:
        hazard("barrier-not-initialized", f"mbarrier.invalidate of {bar} before mbarrier.init")
        return
    if alloc.invalidated[copy_cta][bar.index_] is not None:
        hazard("barrier-used-after-invalidate", f"{bar} invalidated twice")
        return
    alloc.invalidated[copy_cta][bar.index_] = caller_line() or "?"


def _usable(bar: BarrierRef, cta: int, what: str) -> Any:
    """The engine barrier a use of ``bar`` by CTA ``cta`` reaches, or None (reported)."""
    target = bar.copy_for(cta)
    if target is None:
        hazard("barrier-not-initialized", f"{what} on {bar} before mbarrier.init")
        return None
    dead = bar.alloc.invalidated[0 if bar.alloc.pair else cta][bar.index_]
    if dead is not None:
        hazard("barrier-used-after-invalidate", f"{what} on {bar} after mbarrier.invalidate (at {dead}) ended its "
               "life")
        return None
    return target


def fence_inits() -> None:
    """The compiler follows a CTA's mbarrier inits with ``fence.mbarrier_init.release.cluster`` and a cluster
    barrier before their first use (SEMANTICS.md 3): model it at the first use after an init."""
    ctx = current()
    if ctx.inits_unfenced and ctx.runtime.num_ctas > 1:
        ctx.inits_unfenced = False
        ctx.runtime.cluster_sync(ctx)


def _barrier_copy(bar: BarrierRef, what: str) -> Any:
    _check_barrier(bar, what)
    fence_inits()
    return _usable(bar, current().cta, f"mbarrier.{what}")


@builtin("mbarrier.expect", op=E.Expect, effect="adds the bytes to the tx-count, then arrives once")
def expect(bar: BarrierRef, bytes_per_cta: Any = None, pred: Any = True, *, from_cta: Any = None) -> None:
    if not pred:
        return
    if bytes_per_cta is None:
        raise ExecutorError(f"mbarrier.expect needs bytes_per_cta{where()}")
    target = _barrier_copy(bar, "expect")
    if target is not None:
        emit(E.Expect(target, int(bytes_per_cta)))


@builtin("mbarrier.arrive", op=E.Arrive, effect="lowers the pending count")
def arrive(bar: BarrierRef, *, count: Any = 1, pred: Any = True, from_cta: Any = None) -> None:
    if not pred:
        return
    target = _barrier_copy(bar, "arrive")
    if target is not None:
        emit(E.Arrive(target, int(count)))


@builtin("mbarrier.wait", op=E.Wait, effect="blocks until the phase with the given parity has completed")
def wait(bar: BarrierRef, phase: Any, pred: Any = True, deps: Any = ()) -> None:
    ctx = current()
    if not pred:
        return
    if bar.alloc.pair and not _lead(ctx):
        return  # a pair barrier lives in the lead: the other CTA's wait is not real (SEMANTICS.md 3, 6)
    target = _barrier_copy(bar, "wait")
    if target is not None:
        phase = int(phase)
        if phase not in (0, 1):
            raise ExecutorError(f"mbarrier.wait phase must be 0 or 1, got {phase}{where()}")
        emit(E.Wait(target, phase))


# =====================================================================================
# TMA
# =====================================================================================
def _check_desc(desc: Any, what: str) -> None:
    if not isinstance(desc, DeviceDescriptor):
        raise ExecutorError(f"tma.{what} needs a tensor descriptor, got {type(desc).__name__}{where()}")


@builtin("tma.async_load", op=E.TmaLoad, effect="the box into shared memory at completion (zero outside the "
         "tensor), bytes to the barrier; multicast / CTA-split per the layout")
def async_load(desc: DeviceDescriptor, coord: Any, barrier: BarrierRef, result: SmemView, pred: Any = True,
               multicast: bool = False, cache_policy: Any = None) -> None:
    ctx = current()
    rt = ctx.runtime
    if not pred:
        return
    _check_desc(desc, "async_load")
    coord = [int(c) for c in coord]
    if len(coord) != len(desc.block_shape):
        raise ExecutorError(f"tma.async_load of {desc} got {len(coord)} coordinates{where()}")
    if list(result.shape) != desc.block_shape:
        raise ExecutorError(f"tma.async_load of {desc} into {result} of shape {result.shape}: the "
                            f"destination must have the block shape{where()}")
    _check_barrier(barrier, "async_load")
    fence_inits()
    if desc.split:
        # each CTA loads its own block of the split dimension(s) into its own shared memory
        offset = list(coord)
        for d in desc.split:
            offset[d] += ctx.cta * desc.local_block[d]
        dests = [ctx.cta]
        box = desc.local_block
    elif rt.num_ctas > 1 and multicast:
        if not _lead(ctx):
            return  # the lead multicasts a duplicated block into every CTA of the cluster
        offset, dests, box = coord, list(range(rt.num_ctas)), desc.block_shape
    else:
        offset, dests, box = coord, [ctx.cta], desc.block_shape
    nbytes = math.prod(box) * desc.base.element_size()
    targets = []
    for d in dests:
        copy = _usable(barrier, d, "a TMA load's signal")
        if copy is None:
            return
        targets.append((copy, nbytes))
    op = E.TmaLoad(targets[0][0], desc.name, _stage(result), nbytes, tuple(dests))
    op.x = Payload(desc=desc, coord=offset, box=list(box), view=result, dests=dests, tx_targets=targets, epochs={})
    emit(op)


@builtin("tma.async_store", op=E.TmaStore, effect="shared memory into the tensor at completion, clipped at its "
         "edges")
def async_store(desc: DeviceDescriptor, coord: Any, src: SmemView, cache_policy: Any = None) -> None:
    ctx = current()
    _check_desc(desc, "async_store")
    coord = [int(c) for c in coord]
    if list(src.shape) != desc.block_shape:
        raise ExecutorError(f"tma.async_store of {src} (shape {src.shape}) through {desc}: the source must "
                            f"have the block shape{where()}")
    offset = list(coord)
    for d in desc.split:
        offset[d] += ctx.cta * desc.local_block[d]
    rows = desc.local_block[0] if len(desc.local_block) > 1 else 1
    cols = desc.local_block[-1] if desc.local_block else 1
    op = E.TmaStore(_stage(src), offset[0], offset[-1], rows, cols)
    op.x = Payload(desc=desc, coord=offset, view=src)
    emit(op)


def _removed(name: str, instead: str) -> None:
    def impl(*args: Any, **kwargs: Any) -> None:
        raise ExecutorError(f"tma.{name} has been removed; call {instead} instead (Triton 3.9){where()}")

    impl.__name__ = name
    builtin(f"tma.{name}", effect=f"an error, as in Triton 3.9: removed, call {instead}")(impl)


_removed("async_copy_global_to_shared", "async_load")
_removed("async_copy_shared_to_global", "async_store")


@builtin("tma.store_wait", op=E.StoreWait, effect="blocks until at most `pendings` stores are in flight")
def store_wait(pendings: Any, read_only: bool = True) -> None:
    pendings = int(pendings)
    if pendings < 0:
        raise ExecutorError(f"tma.store_wait(pendings={pendings}) must be >= 0{where()}")
    emit(E.StoreWait(pendings))


# =====================================================================================
# tensor memory and tcgen05
# =====================================================================================
@builtin("blackwell.allocate_tensor_memory", effect="TMEM columns per CTA (NaN until written): float32 / "
         "packed or unpacked 16-bit / 8-bit, and scales with TensorMemoryScalesLayout")
def allocate_tensor_memory(element_ty: Any, shape: Any, layout: Any, value: Any = None) -> TmemView:
    rt = runtime()
    shape = [int(s) for s in shape]
    torch_dtype(element_ty)  # a dtype with no storage is refused here, with the kernel line
    name = _assigned_name("tmem")
    alloc = _next_alloc(TmemAlloc, name, lambda: TmemAlloc(name, element_ty, shape, layout, rt.num_ctas))
    if alloc.cols > 512:
        hazard("tmem-out-of-bounds", f"allocation of {alloc.cols} columns: a CTA has 512")
    kind = "scales" if type(layout).__name__ == "TensorMemoryScalesLayout" else "acc"
    view = TmemView(alloc, 0, shape, element_ty, layout, kind)
    if value is not None:
        view.store(value)
    return view


def _issue_ctas(two_ctas: bool) -> list[int]:
    ctx = current()
    return list(range(ctx.runtime.num_ctas)) if two_ctas and ctx.runtime.num_ctas > 1 else [ctx.cta]


@builtin("blackwell.tcgen05_copy", op=E.ScaleCopy, effect="shared memory into TMEM on the tensor pipe (scales: "
         "the 32x128b.warpx4 placement)")
def tcgen05_copy(src: SmemView, dst: TmemView) -> None:
    ctx = current()
    if not isinstance(src, SmemView) or not isinstance(dst, TmemView):
        raise ExecutorError(f"tcgen05_copy needs a shared-memory source and a TMEM destination{where()}")
    if _two_cta_issue_skipped(ctx, dst.alloc.two_ctas):
        return
    op = E.ScaleCopy(src.alloc.name, _stage(src), dst.columns)
    op.x = Payload(src=src, dst=dst, ctas=_issue_ctas(dst.alloc.two_ctas))
    emit(op)


def _mma_barriers(mbarriers: Any, mbarrier_preds: Any, two_ctas: bool) -> None:
    """``mbarriers=``: one commit per barrier; none: the MMA is synchronous (the compiler commits it to a
    barrier of its own and waits)."""
    if mbarriers is None:
        ctx = current()
        rt = ctx.runtime
        bar = ctx.sync_barrier
        if bar is None:
            bar = ctx.sync_barrier = rt.engine.barrier(f"mma_sync.{ctx.partition}", 0, cta=ctx.cta,
                                                       cluster=ctx.cluster, count=1)
            rt.sync.new_barrier(bar)
        phase = bar.completed % 2
        op = E.Commit((bar,))
        op.x = Payload()
        emit(op)
        emit(E.Wait(bar, phase))
        return
    preds = list(mbarrier_preds) if mbarrier_preds is not None else [True] * len(mbarriers)
    for bar, p in zip(mbarriers, preds, strict=True):
        if p:
            _commit(bar, two_ctas)


_MMA_DTYPES = ("fp16", "bf16", "fp32", "fp8e4nv", "fp8e5")


@builtin("blackwell.tcgen05_mma", op=E.Mma, effect="acc (+)= A @ B at completion: fp16 / bf16 / tf32 (fp32 "
         "operands, low 13 mantissa bits dropped) / fp8, A from shared memory or TMEM; fp32 accumulate")
def tcgen05_mma(a: Any, b: SmemView, acc: TmemView, *, use_acc: Any = True, pred: Any = True, multicast: bool = False,
                mbarriers: Any = None, mbarrier_preds: Any = None) -> None:
    ctx = current()
    if not isinstance(a, SmemView | TmemView) or not isinstance(b, SmemView) or not isinstance(acc, TmemView):
        raise ExecutorError(f"tcgen05_mma: A must be shared or tensor memory, B shared memory and the accumulator "
                            f"tensor memory; got {type(a).__name__}, {type(b).__name__}, {type(acc).__name__}"
                            f"{where()}")
    for name, v in (("A", a), ("B", b)):
        if getattr(v.dtype, "name", "") not in _MMA_DTYPES:
            raise ExecutorError(f"tcgen05_mma: {name} of dtype {v.dtype} (the executor multiplies "
                                f"{', '.join(_MMA_DTYPES)}){where()}")
    m, n = acc.shape[-2], acc.shape[-1]
    if a.rank != 2 or b.rank != 2 or a.shape[0] != m or b.shape[1] != n or a.shape[1] != b.shape[0]:
        raise ExecutorError(f"tcgen05_mma: A {list(a.shape)}, B {list(b.shape)} and the accumulator {list(acc.shape)} "
                            f"do not make an [M, K] x [K, N] -> [M, N] product{where()}")
    two_ctas = bool(getattr(acc.layout, "two_ctas", False))
    if _two_cta_issue_skipped(ctx, two_ctas) or not pred:
        return
    ctx.kstep = ctx.kstep + 1 if use_acc else 0
    stage = _stage(a) if isinstance(a, SmemView) else 0
    op = E.Mma(stage, ctx.kstep, acc.columns, bool(use_acc), 2 * m * n * a.shape[1])
    op.x = Payload(a=a, b=b, acc=acc, scaled=False, use_acc=bool(use_acc), ctas=_issue_ctas(two_ctas))
    emit(op)
    _mma_barriers(mbarriers, mbarrier_preds, two_ctas)


@builtin("blackwell.tcgen05_mma_scaled", op=E.Mma, effect="acc (+)= (A * scales) @ (B * scales) at completion: "
         "e2m1 / e4m3 / e5m2 operands, e8m0 / e4m3 scales from TMEM or shared memory",
         note="shared-memory scales: Triton 3.9's LLVM lowering asserted for the layout tried (SwizzledSharedLayout)")
def tcgen05_mma_scaled(a: SmemView, b: SmemView, acc: TmemView, a_scale: Any, b_scale: Any, a_type: Any,
                       b_type: Any, *, use_acc: Any = True, pred: Any = True, multicast: bool = False,
                       mbarriers: Any = None, mbarrier_preds: Any = None) -> None:
    ctx = current()
    operands = (("a", a, SmemView), ("b", b, SmemView), ("acc", acc, TmemView),
                ("a_scale", a_scale, TmemView | SmemView), ("b_scale", b_scale, TmemView | SmemView))
    for name, v, kind in operands:
        if not isinstance(v, kind):
            raise ExecutorError(f"tcgen05_mma_scaled: {name} must be a {getattr(kind, '__name__', 'memory view')}, "
                                f"got {type(v).__name__}{where()}")
    two_ctas = bool(getattr(acc.layout, "two_ctas", False))
    m, n = acc.shape[-2], acc.shape[-1]
    k = a.shape[-1] * (2 if str(a_type) == "e2m1" and a.dtype == gl.uint8 else 1)
    k_b = b.shape[0] * (2 if str(b_type) == "e2m1" and b.dtype == gl.uint8 else 1)
    if a.rank != 2 or b.rank != 2 or a.shape[0] != m or b.shape[1] != n or k_b != k:
        # what Gluon's verifier refuses: A is [M, K], B is [K, N] (a permuted K-major buffer), acc [M, N]
        raise ExecutorError(f"tcgen05_mma_scaled: A {list(a.shape)} ({a_type}), B {list(b.shape)} ({b_type}) and the "
                            f"accumulator {list(acc.shape)} do not make an [M, K] x [K, N] -> [M, N] product{where()}")
    if _two_cta_issue_skipped(ctx, two_ctas) or not pred:
        return
    ctx.kstep = ctx.kstep + 1 if use_acc else 0  # K steps since the last MMA that did not accumulate
    op = E.Mma(_stage(a), ctx.kstep, acc.columns, bool(use_acc), 2 * m * n * k)
    op.x = Payload(a=a, b=b, acc=acc, a_scale=a_scale, b_scale=b_scale, a_type=str(a_type), b_type=str(b_type),
                   scaled=True, use_acc=bool(use_acc), ctas=_issue_ctas(two_ctas))
    emit(op)
    _mma_barriers(mbarriers, mbarrier_preds, two_ctas)


@builtin("blackwell.tcgen05_commit", op=E.Commit, effect="one arrival once every earlier tcgen05 op of the "
         "partition is done (2-CTA: multicast to both CTAs)")
def tcgen05_commit(barrier: BarrierRef, pred: Any = True, descs: Any = ()) -> None:
    ctx = current()
    two_ctas = ctx.runtime.two_cta_tmem(ctx.cluster)
    if _two_cta_issue_skipped(ctx, two_ctas) or not pred:
        return
    _commit(barrier, two_ctas)


def _commit(bar: BarrierRef, two_ctas: bool) -> None:
    """One arrival on ``bar`` once every earlier tcgen05 op of this partition is done; in 2-CTA mode
    the lead's commit multicasts: one arrival at the same barrier of every CTA (SEMANTICS.md 2)."""
    _check_barrier(bar, "tcgen05_commit")
    fence_inits()
    ctas = _issue_ctas(two_ctas)
    if bar.alloc.pair:
        if len(ctas) > 1:
            hazard("commit-to-pair-barrier", f"the multicast commit to {bar} reaches the other CTA's copy, but "
                   "a pair barrier exists only in the lead")
        ctas = [0]
    targets = []
    for c in ctas:
        copy = _usable(bar, c, "tcgen05_commit")
        if copy is None:
            return
        targets.append(copy)
    op = E.Commit(tuple(targets))
    op.x = Payload()
    emit(op)


@builtin("blackwell.fence_async_shared", effect="a proxy fence: nothing here (the compiler also fences before "
         "every TMA store)", note="generic-proxy writes read by the async proxy without a fence are not flagged")
def fence_async_shared(cluster: bool = False) -> None:
    return None


# =====================================================================================
# namespaces and rebinding
# =====================================================================================
#: the Gluon module whose names each registry namespace serves (the longest matching suffix wins)
_MODULE_NAMESPACES = (
    (".mbarrier", "mbarrier"), (".tma", "tma"), (".cluster", "cluster"), (".nvidia.blackwell", "blackwell"),
    (".nvidia.hopper", "blackwell"), (".nvidia", None), ("triton.experimental.gluon.language", "gl"),
)
_PASSTHROUGH = {"constexpr": lambda x: x, "range": runtime_range}


def namespace_of(module_name: str) -> str | None:
    """The registry namespace of a Triton language module (``gl`` for the language itself, its private
    submodules and ``triton.language``, whose library functions Gluon re-exports); None for other modules."""
    for suffix, ns in _MODULE_NAMESPACES:
        if module_name.endswith(suffix):
            return ns
    if module_name.startswith(("triton.experimental.gluon.language", "triton.language")) and \
            ".nvidia" not in module_name and ".amd" not in module_name:
        return "gl"
    return None


class CpuModule:
    """A Gluon language module with its builtins served from the registry (unknown builtins raise)."""

    def __init__(self, real: types.ModuleType, overrides: dict[str, Any], rebinder: Rebinder):
        self._real, self._overrides, self._rebinder = real, overrides, rebinder

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        value = getattr(self._real, name)
        return self._rebinder.convert(value, f"{self._real.__name__.rsplit('.', 1)[-1]}.{name}")


def _is_builtin(value: Any) -> bool:
    return callable(value) and getattr(value, "__triton_builtin__", False) and not isinstance(value, type)


class Rebinder:
    """Turns jit functions, constexpr functions, aggregates and Gluon modules into CPU equivalents."""

    def __init__(self) -> None:
        self._cache: dict[int, Any] = {}
        self._globals: dict[int, dict] = {}
        self.codes: set[types.CodeType] = set()
        self.aggregates: dict[int, type] = {}

    # --- modules ---------------------------------------------------------------------
    def module(self, mod: types.ModuleType) -> Any:
        name = mod.__name__
        if not name.startswith("triton.experimental.gluon.language"):
            return mod
        ns = namespace_of(name)
        overrides = dict(namespace(ns)) if ns is not None else {}
        if ns == "gl":
            overrides.update(_PASSTHROUGH)
        return CpuModule(mod, overrides, self)

    # --- values ----------------------------------------------------------------------
    def convert(self, value: Any, name: str = "?") -> Any:
        if isinstance(value, types.ModuleType):
            return self.module(value)
        if isinstance(value, JITFunction):
            if namespace_of(getattr(value.fn, "__module__", "") or "") is not None:
                return self.builtin(value.fn, name)  # a library function of Triton's: the registry's or an error
            return self.jit(value)
        if isinstance(value, ConstexprFunction):
            return value.fn
        if isinstance(value, type) and getattr(value, "__triton_aggregate__", False):
            return self.aggregate(value)
        if _is_builtin(value):
            return self.builtin(value, name)
        return value

    @staticmethod
    def builtin(value: Any, name: str) -> Any:
        """The registry's implementation of a Gluon builtin, or a stub that raises naming it."""
        ns = namespace_of(getattr(value, "__module__", "") or "")
        short = getattr(value, "__name__", name.rsplit(".", 1)[-1])
        row = REGISTRY.get(f"{ns}.{short}") if ns is not None else None
        if row is None and ns == "blackwell":  # hopper / blackwell share names (fence_async_shared, ...)
            row = REGISTRY.get(f"gl.{short}")
        return row.impl if row is not None else unsupported(f"{ns or 'gl'}.{short}")

    def jit(self, fn: JITFunction) -> Any:
        key = id(fn)
        if key not in self._cache:
            py = fn.fn
            g = fn.fn.__globals__
            if id(g) not in self._globals:
                self._globals[id(g)] = {}
                fill = True
            else:
                fill = False
            new = self._globals[id(g)]
            cpu = types.FunctionType(py.__code__, new, py.__name__, py.__defaults__, py.__closure__)
            cpu.__kwdefaults__ = py.__kwdefaults__
            cpu.__qualname__ = py.__qualname__
            cpu.__wrapped_jit__ = fn
            self._collect_codes(py.__code__)
            self._cache[key] = cpu
            if fill:
                for k, v in g.items():
                    new[k] = self.convert(v, k)
                new["__builtins__"] = g.get("__builtins__", __builtins__)
                new.setdefault("range", runtime_range)  # a loop over runtime bounds has a runtime variable
        return self._cache[key]

    def _collect_codes(self, code: types.CodeType) -> None:
        self.codes.add(code)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                self._collect_codes(c)

    def aggregate(self, agg: type) -> type:
        key = id(agg)
        if key in self.aggregates:
            return self.aggregates[key]
        fields = tuple(getattr(agg, "__annotations__", {}))
        ns: dict[str, Any] = {"__slots__": fields, "_fields": fields}
        cls = type(agg.__name__, (CpuAggregate,), ns)
        self.aggregates[key] = cls
        for name, member in vars(agg).items():
            if name.startswith("__") or name in ("_get_instance", "_set_name", "_flatten_ir", "type"):
                continue
            if isinstance(member, JITFunction):
                setattr(cls, name, self.jit(member))
            elif isinstance(member, ConstexprFunction):
                setattr(cls, name, member.fn)
            elif isinstance(member, (staticmethod, classmethod)) or callable(member):
                setattr(cls, name, member)
        return cls


class CpuAggregate:
    """Base of the plain classes that stand in for ``@gluon.aggregate`` ones."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise ExecutorError(f"{type(self).__name__}() takes {len(fields)} fields, got {len(args)}{where()}")
        for name, value in zip(fields, args, strict=False):
            object.__setattr__(self, name, value)
        for name, value in kwargs.items():
            if name not in fields:
                raise ExecutorError(f"{type(self).__name__} has no field {name!r}{where()}")
            object.__setattr__(self, name, value)
        missing = [f for f in fields if not hasattr(self, f)]
        if missing:
            raise ExecutorError(f"{type(self).__name__}() is missing field(s) {missing}{where()}")
        ctx = current_or_none()
        if "tile_id" in fields and "has_work" in fields and ctx is not None:
            ctx.on_schedule(self.tile_id, self.has_work)  # annotation only (reports, timing)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"
