"""The op vocabulary: one table that says, for every IR op, its e-graph constructor,
its argument kinds, its result type and its meaning as torch code.

Keeping all of it in one place is what lets encode/decode, the interpreter, the
verifier and the lowering agree; ``rules/lang.egg`` declares the same constructors
(a test checks the two stay in step).

Argument kinds: ``T`` a tensor operand (a Var, or a number / symbolic int that
broadcasts like a Python scalar), ``i`` an int, ``ints`` a tuple of ints, ``shape``
a tuple of extents, ``x`` an extent, ``f`` a number, ``dtype`` a dtype name,
``Ts`` a tuple of tensor operands.

Elementwise ops follow torch's broadcasting and type promotion; the lowering makes
broadcasts explicit for nvFuser.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from functools import reduce
from typing import Any, Callable, Sequence

import sympy
import torch
import torch.nn.functional as F

from .ir import DTYPES, Extent, IRError, ScalarType, TensorType, Var, as_extent, dtype_name

UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": torch.log, "log1p": torch.log1p,
    "expm1": torch.expm1, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal,
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "sin": torch.sin, "cos": torch.cos, "erf": torch.erf,
    "logical_not": torch.logical_not, "isnan": torch.isnan, "isinf": torch.isinf, "floor": torch.floor,
    "ceil": torch.ceil, "sign": torch.sign, "bitwise_not": torch.bitwise_not, "relu": torch.relu,
    "exp2": torch.exp2, "log2": torch.log2, "tan": torch.tan, "atan": torch.atan,
}
BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "pow": torch.pow,
    "maximum": torch.maximum, "minimum": torch.minimum, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt,
    "le": torch.le, "gt": torch.gt, "ge": torch.ge, "logical_and": torch.logical_and,
    "logical_or": torch.logical_or, "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor, "remainder": torch.remainder, "fmod": torch.fmod,
    "atan2": torch.atan2,
}
REDUCTIONS = ("sum", "amax", "amin", "prod")


@dataclass(frozen=True)
class OpSpec:
    name: str
    kind: str  # elementwise | reduction | shape | index | creation | inplace
    egg: str  # constructor name in lang.egg
    sig: tuple[str, ...]
    kw: tuple[str, ...] = ()  # names of trailing args, for printing as keywords


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


OPS: dict[str, OpSpec] = {}


def _reg(name: str, kind: str, sig: tuple[str, ...], kw: tuple[str, ...] = (), egg: str | None = None) -> None:
    OPS[name] = OpSpec(name, kind, egg or _camel(name), sig, kw)


for _n in UNARY:
    _reg(_n, "elementwise", ("T",))
for _n in BINARY:
    _reg(_n, "elementwise", ("T", "T"))
_reg("where", "elementwise", ("T", "T", "T"))
_reg("cast", "elementwise", ("T", "dtype"))
for _n in REDUCTIONS:
    _reg(_n, "reduction", ("T", "ints", "i"), kw=("dims", "keepdim"))
_reg("broadcast_in_dim", "shape", ("T", "shape", "ints"), kw=("shape", "broadcast_dims"))
_reg("reshape", "shape", ("T", "shape"), kw=("new_shape",))
_reg("permute", "shape", ("T", "ints"), kw=("dims",))
_reg("squeeze", "shape", ("T", "ints"), kw=("dims",))
_reg("slice", "shape", ("T", "shape", "shape", "shape"), kw=("start_indices", "end_indices", "strides"))
_reg("cat", "shape", ("Ts", "i"), kw=("dim",))
_reg("pad", "shape", ("T", "shape", "f"), kw=("pad_widths", "value"))
_reg("iota", "creation", ("x", "dtype", "i", "i"), kw=("dtype", "dim", "rank"))
_reg("full", "creation", ("shape", "f", "dtype"), kw=("shape", "fill_value", "dtype"))
_reg("take_along_axis", "index", ("T", "T", "i"), kw=("dim",))
_reg("gather", "index", ("T", "i", "T"), kw=())
_reg("index_select", "index", ("T", "i", "T"), kw=())
_reg("index_copy", "index", ("T", "i", "T", "T"), kw=())
_reg("scatter", "index", ("T", "i", "T", "T"), kw=())
# functionalized writes through views: the base with the view's elements replaced by src (kind
# "update": the extents are fixed by the guards, so unlike an index op they never raise on data)
_reg("slice_scatter", "update", ("T", "T", "shape", "shape", "shape"), kw=("start_indices", "end_indices", "strides"))
_reg("select_scatter", "update", ("T", "T", "i", "x"), kw=("dim", "index"))
_reg("diagonal_scatter", "update", ("T", "T", "i", "i", "i"), kw=("offset", "dim1", "dim2"))
# the same values, as an in-place write into the base's buffer (INPLACE): a rule offers them where
# the base is an input written back with the result, the cost model prefers them (only the written
# elements move), and the lowering writes in place where no later step reads the old value
_reg("slice_scatter_", "update", ("T", "T", "shape", "shape", "shape"), kw=("start_indices", "end_indices", "strides"),
     egg="SliceScatterInPlace")
_reg("index_copy_", "index", ("T", "i", "T", "T"), kw=(), egg="IndexCopyInPlace")
_reg("index_put", "index", ("T", "Ts", "T", "i"), kw=("accumulate",))
# dst's value after ``dst.copy_(src)``: src cast to dst's dtype and broadcast to its shape
_reg("copy_", "inplace", ("T", "T"), egg="Copy")

def is_opaque(op: str) -> bool:
    """A torch op outside the vocabulary, named ``namespace.name.overload`` (aten, prims, and any
    library's: ``torch_nn``'s chunked cross-entropy, a user's ``torch.library.custom_op``); the
    vocabulary's names have no dot."""
    return "." in op


#: an opaque node's keyword that is not torch's: per positional argument, the strides of the
#: tensor eager's kernel read there, where capture saw them other than contiguous (None elsewhere).
#: A kernel can answer differently on a strided operand (a CPU kernel's scalar path) than on a
#: contiguous one (its vector path), or refuse a layout (a CUDA kernel's alignment): the call gets
#: its operand laid out as eager's was.
EAGER_STRIDES = "_eager_strides"
#: an opaque op's kwarg: the positions whose ``EAGER_STRIDES`` record is the layout of a copy eager's
#: kernel read and capture erased (the plan holds the copy's source): laid out so at every call.
#: Elsewhere a record only says how the caller's tensors (or eager's views of them) were laid out
#: at capture, and the plan passes them as they are at each call, as eager does
EAGER_COPIES = "_eager_copies"
#: an opaque op's kwarg: the positions of tensor operands eager's kernel read as a tensor the program
#: computed (not a caller's tensor, not what an eager kernel returned, not a view of those). A rewrite
#: can hand such a position an equal value that is the caller's tensor (``where(c, x, x) -> x``),
#: laid out as the caller's, not as eager's operand was: it is laid out as recorded, or made dense
EAGER_MADE = "_eager_made"
#: the opaque kwargs that are satfuse's records, not the op's arguments
EAGER_RECORDS = frozenset({EAGER_STRIDES, EAGER_COPIES, EAGER_MADE})
#: ops whose result may share storage with their first operand (in torch, and in nvFuser's alias analysis)
VIEW_OPS = frozenset({"reshape", "permute", "squeeze", "broadcast_in_dim", "slice", "cast"})


def non_overlapping(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """No two positions of this layout are one memory element, shown by its strides: each dim
    (by increasing stride) steps past everything the smaller ones reach. False where unsure."""
    reach = 0
    for stride, size in sorted((st, n) for n, st in zip(shape, strides) if n > 1):
        if stride <= reach:
            return False
        reach += (size - 1) * stride
    return True


def expanded_apart(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """``non_overlapping`` but for expanded dims (stride 0): an ``expand`` of a tensor that holds
    each element once."""
    return non_overlapping([1 if st == 0 else n for n, st in zip(shape, strides)], strides)


def laid_out(x: Any, strides: tuple[int, ...] | None) -> Any:
    """``x``'s values with ``strides`` (a copy when its own differ): an opaque kernel's operand
    in the layout eager's kernel read it in (``EAGER_STRIDES``). A stride-0 dim was an ``expand``
    in eager (its values are one value, which ``x`` holds at index 0 of that dim), and the copy is
    expanded there too. Sizes that make those strides overlap were not eager's tensor: ``x`` as
    it is."""
    if strides is None or not isinstance(x, torch.Tensor) or tuple(x.stride()) == tuple(strides) \
            or not expanded_apart(x.shape, strides):
        return x
    base = x
    for d, (n, st) in enumerate(zip(x.shape, strides)):
        if st == 0 and n > 1:
            base = base.narrow(d, 0, 1)
    out = torch.empty_strided(base.shape, strides, dtype=x.dtype, device=x.device)
    out.copy_(base)
    return out.expand(x.shape)


def written(x: Any) -> Any:
    """A fresh copy of ``x`` in ``x``'s own layout, for an in-place kernel to write: an opaque op
    that is an in-place overload (:func:`writes_first_operand`) is the value an in-place op of the
    program wrote into its first operand, and eager's kernel for it loops by the written tensor's
    layout (on a strided target, a complex multiply that overflows is nan+infj, where the
    out-of-place kernel gives -inf+infj). The plan's tensors stay as they were."""
    if not isinstance(x, torch.Tensor):
        return x
    if non_overlapping(x.shape, x.stride()):
        out = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
    else:  # eager refuses to write such a tensor; the program's op was not on it
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return out.copy_(x)


@functools.cache
def writes_first_operand(op: str) -> bool:
    """The opaque op ``op`` is an in-place overload (``aten.mul_.Tensor``): capture names so the
    value a program's in-place op wrote (``capture/aten_map.py``), and the plan runs it on a
    :func:`written` copy of its first operand."""
    try:
        args = resolve_opaque(op)._schema.arguments
    except (IRError, AttributeError):
        return False
    return bool(args) and args[0].alias_info is not None and args[0].alias_info.is_write


def dense(x: Any) -> Any:
    """``x`` contiguous (a copy only where it is not): an opaque kernel's operand that eager had
    contiguous (no ``EAGER_STRIDES`` record) but the plan made otherwise (a segment returns an
    ``expand`` of a value it computed). Kernels read it as eager's did: ``gelu`` of an expanded
    ``inf`` takes the scalar path (inf) where eager's contiguous operand took the vector one (nan),
    and ``view(dtype)`` to another item size refuses a last dim of stride 0. Contiguous means the
    strides a fresh tensor of eager's has, those of one-element and empty dims too, which torch's
    ``is_contiguous`` ignores and ``view(dtype)`` reads (an empty tensor of stride 2 the plan did not
    copy, where eager's ``torch.where`` had made a fresh one: a ``flip`` of it kept stride 2, and
    the bitcast of that raised; optimize fuzz 9932 #2292)."""
    if isinstance(x, torch.Tensor):
        if not x.is_contiguous():
            return x.contiguous()
        if x.stride() != _standard_strides(x.shape):
            return x.clone(memory_format=torch.contiguous_format)
    return x


def _standard_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, expect = [], 1
    for n in reversed(shape):
        out.append(expect)
        expect *= max(n, 1)
    return tuple(reversed(out))


def dtype_view(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x``'s memory read as ``dtype``, to take eager's view of it with ``as_strided`` (offsets and
    strides in ``dtype``'s elements): a returned ``view_as_real``/``view_as_complex``/
    ``view(dtype)`` of an input is a view in another dtype than the input's."""
    if x.dtype == dtype:
        return x
    if x.is_complex() and dtype == x.real.dtype:
        return torch.view_as_real(x)
    if x.element_size() == dtype.itemsize:
        return x.view(dtype)
    return torch.empty((0,), dtype=dtype, device=x.device).set_(x.untyped_storage())


def resolve_opaque(op: str) -> Callable:
    """``aten.mm.default`` -> torch.ops.aten.mm.default, with a clear error."""
    ns, name, overload = (op.split(".") + ["default"])[:3]
    try:
        if ns == "higher_order":  # no overloads
            return getattr(torch.ops.higher_order, name)
        return getattr(getattr(getattr(torch.ops, ns), name), overload)
    except AttributeError:
        raise IRError(f"unknown torch op {op!r}") from None


# ---------------------------------------------------------------- type inference


def _sym(e: Extent) -> sympy.Expr:
    return sympy.Integer(e) if isinstance(e, int) else e


def _eq(a: Extent, b: Extent) -> bool:
    return a == b or sympy.simplify(_sym(a) - _sym(b)) == 0


def broadcast_shapes(*shapes: tuple[Extent, ...]) -> tuple[Extent, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out: list[Extent] = []
    for i in range(rank):
        dim: Extent = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            e = s[j]
            if dim == 1:
                dim = e
            elif e != 1 and not _eq(dim, e):
                raise IRError(f"shapes {shapes} do not broadcast (dim {i}: {dim} vs {e})")
        out.append(dim)
    return tuple(out)


def meta_stand_in(a: Any) -> Any:
    """A stand-in for dtype inference: a meta tensor of the same rank and dtype."""
    return stand_in(a, "meta")


def is_symbolic_float(a: Any) -> bool:
    """A symbolic number that is not an int: ``2 / (N - 1)`` of var's backward under dynamic
    shapes (torch's FloatTrueDiv, IntTrueDiv, ToFloat). The e-graph holds it as a leaf it never
    rewrites (``CSymFloat``); the plan computes it from the input sizes."""
    return isinstance(a, sympy.Expr) and not isinstance(a, sympy.Integer) and a.is_integer is not True


def stand_in(a: Any, device: str) -> Any:
    """A stand-in for dtype inference: a one-element tensor of the same rank and dtype (ones:
    no division by zero), or a Python number for a scalar."""
    if isinstance(a, Var):
        if isinstance(a.type, TensorType):
            shape = (1,) * a.type.rank
            dt = DTYPES[a.type.dtype]
            return torch.empty(shape, dtype=dt, device="meta") if device == "meta" else torch.ones(shape, dtype=dt)
        return {"int": 1, "float": 1.0, "bool": True}[a.type.kind]
    if isinstance(a, sympy.Expr):
        return 1.0 if is_symbolic_float(a) else 1
    return a


def _run_stand_ins(op: str, xs: list, device: str) -> torch.Tensor:
    if op in ("sum", "prod"):
        return (torch.sum if op == "sum" else torch.prod)(xs[0])
    fn = torch.where if op == "where" else (UNARY.get(op) or BINARY[op])
    if all(not isinstance(x, torch.Tensor) for x in xs):
        xs[0] = torch.tensor(xs[0], device=device)
    return fn(*xs)


def operand_shape(a: Any) -> tuple[Extent, ...]:
    return a.type.shape if isinstance(a, Var) and isinstance(a.type, TensorType) else ()


def first_tensor(args: tuple) -> TensorType:
    for a in args:
        if isinstance(a, Var) and isinstance(a.type, TensorType):
            return a.type
    raise IRError("op has no tensor operand")


def infer(op: str, args: tuple, device: str | None = None) -> TensorType:
    """Result type of a vocabulary op, with symbolic extents kept symbolic."""
    spec = OPS.get(op)
    if spec is None:
        raise IRError(f"infer: {op!r} is not a vocabulary op")
    if spec.kind == "elementwise":
        dev = device or _device(args)
        if op == "cast":
            return TensorType(args[1], operand_shape(args[0]), dev)
        shape = broadcast_shapes(*(operand_shape(a) for a in args))
        return TensorType(_result_dtype(op, args), shape, dev)
    if spec.kind == "reduction":
        x, dims, keepdim = args
        t = x.type
        dims = tuple(d % max(t.rank, 1) for d in dims)
        shape = tuple(1 if i in dims else e for i, e in enumerate(t.shape) if keepdim or i not in dims)
        dtype = _result_dtype(op, (x,)) if op in ("sum", "prod") else t.dtype
        return TensorType(dtype, shape, t.device)
    if op == "broadcast_in_dim":
        return args[0].type.with_(shape=args[1])
    if op == "reshape":
        return args[0].type.with_(shape=args[1])
    if op == "permute":
        t = args[0].type
        return t.with_(shape=tuple(t.shape[d] for d in args[1]))
    if op == "squeeze":
        t = args[0].type
        dims = {d % t.rank for d in args[1]}
        return t.with_(shape=tuple(e for i, e in enumerate(t.shape) if i not in dims))
    if op == "slice":
        t = args[0].type
        shape = []
        for s, e, st in zip(args[1], args[2], args[3]):
            n = _sym(e) - _sym(s)
            shape.append(as_extent(n if st == 1 else sympy.floor((n + _sym(st) - 1) / _sym(st))))
        return t.with_(shape=tuple(shape))
    if op == "cat":
        ts, dim = args
        t0 = ts[0].type
        dim %= t0.rank
        total = sum((_sym(t.type.shape[dim]) for t in ts), sympy.Integer(0))
        return t0.with_(shape=t0.shape[:dim] + (as_extent(total),) + t0.shape[dim + 1:])
    if op == "pad":
        t = args[0].type
        shape = list(t.shape)
        widths = args[1]
        for k in range(len(widths) // 2):
            d = t.rank - 1 - k
            shape[d] = as_extent(_sym(shape[d]) + _sym(widths[2 * k]) + _sym(widths[2 * k + 1]))
        return t.with_(shape=tuple(shape))
    if op == "iota":
        length, dt, dim, rank = args
        return TensorType(dt, tuple(length if i == dim else 1 for i in range(rank)), device or "cpu")
    if op == "full":
        return TensorType(args[2], tuple(as_extent(e) for e in args[0]), device or "cpu")
    if op == "take_along_axis":
        x, idx, dim = args
        if x.type.rank == 0:  # 0-d source (torch.gather on 0-d): shaped like the index
            return x.type.with_(shape=idx.type.shape)
        d = dim % x.type.rank
        b = broadcast_shapes(
            tuple(1 if i == d else e for i, e in enumerate(x.type.shape)),
            tuple(1 if i == d else e for i, e in enumerate(idx.type.shape)),
        )
        return x.type.with_(shape=b[:d] + (idx.type.shape[d],) + b[d + 1:])
    if op == "gather":
        x, dim, idx = args
        return x.type.with_(shape=idx.type.shape)
    if op == "index_select":
        x, dim, idx = args
        if x.type.rank == 0:  # torch: a 0-d source gives a 0-d result
            return x.type
        dim %= x.type.rank
        return x.type.with_(shape=x.type.shape[:dim] + (idx.type.shape[0] if idx.type.rank else 1,) + x.type.shape[dim + 1:])
    if op in ("index_copy", "scatter", "copy_", "slice_scatter", "select_scatter", "diagonal_scatter", "index_put",
              "slice_scatter_", "index_copy_"):
        return args[0].type
    raise IRError(f"infer: no rule for {op}")


_DTYPE_CACHE: dict[tuple, str] = {}


def _promotion_key(a: Any) -> Any:
    """What torch's type promotion sees of an operand: dtype and 0-d-ness of a tensor, the
    kind of a scalar (a literal's value is kept: cheap, and never wrong)."""
    if isinstance(a, Var):
        return (a.type.dtype, a.type.rank == 0) if isinstance(a.type, TensorType) else a.type.kind
    if isinstance(a, sympy.Expr):
        return "symfloat" if is_symbolic_float(a) else "symint"
    return (type(a).__name__, a)


def _result_dtype(op: str, args: tuple) -> str:
    """Result dtype of an elementwise op or sum/prod, by running torch's meta kernel on
    stand-ins (torch's own promotion rules), memoized on what promotion depends on."""
    key = (op, *(_promotion_key(a) for a in args))
    try:
        return _DTYPE_CACHE[key]
    except (KeyError, TypeError):  # TypeError: an unhashable literal; compute without caching
        pass
    # one-element CPU stand-ins run torch's native kernels (~10 µs); meta tensors go through
    # Python reference implementations (~150-500 µs). Promotion does not depend on the device;
    # where a CPU kernel refuses the values (integer to a negative power, ...) meta decides.
    try:
        out = _run_stand_ins(op, [stand_in(a, "cpu") for a in args], "cpu")
    except Exception:  # noqa: BLE001 - a value-dependent refusal: ask meta, which never computes
        out = _run_stand_ins(op, [meta_stand_in(a) for a in args], "meta")
    name = dtype_name(out.dtype)
    try:
        if len(_DTYPE_CACHE) < 4096:
            _DTYPE_CACHE[key] = name
    except TypeError:
        pass
    return name


def _device(args: tuple) -> str:
    """The device of an elementwise result: its operands', where a CPU 0-d tensor counts as a
    scalar (eager: ``cpu_scalar * cuda_tensor`` is on CUDA)."""
    devs = [(v.type.device, v.type.rank) for a in args for v in (a if isinstance(a, (tuple, list)) else (a,))
            if isinstance(v, Var) and isinstance(v.type, TensorType)]
    return next((d for d, r in devs if d != "cpu" or r > 0), devs[0][0] if devs else "cpu")


# ---------------------------------------------------------------- meaning as torch code


def _bid(x: torch.Tensor, shape: tuple[int, ...], bdims: tuple[int, ...]) -> torch.Tensor:
    view = [1] * len(shape)
    for src, dst in enumerate(bdims):
        view[dst] = x.shape[src]
    return x.reshape(view).expand(shape)


def _prod(x: torch.Tensor, dims: tuple[int, ...], keepdim: bool) -> torch.Tensor:
    for d in sorted((d % x.dim() for d in dims), reverse=True):
        x = torch.prod(x, d, keepdim=bool(keepdim))
    return x


def _reduce(fn: Callable) -> Callable:
    def run(x: torch.Tensor, dims: tuple[int, ...], keepdim: int) -> torch.Tensor:
        if x.dim() == 0:
            return fn(x)
        return fn(x, dims, keepdim=bool(keepdim))

    return run


def _slice(x: torch.Tensor, starts, ends, strides) -> torch.Tensor:
    return x[tuple(slice(s, e, st) for s, e, st in zip(starts, ends, strides))]


def _iota(length: int, dtype: str, dim: int, rank: int, device: str = "cpu") -> torch.Tensor:
    t = torch.arange(length, dtype=DTYPES[dtype], device=device)
    return t.reshape(tuple(length if i == dim else 1 for i in range(rank)))


def _scatter(x, dim, idx, src):
    return torch.scatter(x, dim, idx, src)


def _slice_scatter(x: torch.Tensor, src: torch.Tensor, starts, ends, strides) -> torch.Tensor:
    out = x.clone()
    out[tuple(slice(s, e, st) for s, e, st in zip(starts, ends, strides))] = src
    return out


def _select_scatter(x: torch.Tensor, src: torch.Tensor, dim: int, index: int) -> torch.Tensor:
    # not torch.select_scatter: its result keeps a self-overlapping base's strides, so the write
    # lands on every row sharing memory (as_strided((2, 2), (1, 1))); clone() makes it dense
    out = x.clone()
    out.select(dim, index).copy_(src)
    return out


def _diagonal_scatter(x: torch.Tensor, src: torch.Tensor, offset: int, dim1: int, dim2: int) -> torch.Tensor:
    out = x.clone()  # as in _select_scatter
    out.diagonal(offset, dim1, dim2).copy_(src)
    return out


def _copy(dst: torch.Tensor, src: Any) -> torch.Tensor:
    if not isinstance(src, torch.Tensor):
        return torch.full_like(dst, src)
    return src.to(dst.dtype).expand(dst.shape).clone()


IMPLS: dict[str, Callable] = {
    **UNARY,
    **BINARY,
    "where": torch.where,
    "cast": lambda x, dt: x.to(DTYPES[dt]),
    "sum": _reduce(torch.sum),
    "amax": _reduce(torch.amax),
    "amin": _reduce(torch.amin),
    "prod": lambda x, dims, keepdim: _prod(x, dims, keepdim) if x.dim() else torch.prod(x),
    "broadcast_in_dim": _bid,
    "reshape": lambda x, shape: x.reshape(shape),
    "permute": lambda x, dims: x.permute(dims),
    "squeeze": lambda x, dims: x.squeeze(tuple(dims)) if dims else x,
    "slice": _slice,
    "cat": lambda ts, dim: torch.cat(list(ts), dim),
    "pad": lambda x, widths, value: F.pad(x, tuple(widths), value=value),
    "iota": _iota,
    "full": lambda shape, value, dtype, device="cpu": torch.full(tuple(shape), value, dtype=DTYPES[dtype], device=device),
    # like nvFuser (and torch.gather), any integer index dtype; torch.take_along_dim wants int64
    "take_along_axis": lambda x, idx, dim: torch.take_along_dim(x, idx.long(), dim),
    "gather": torch.gather,
    "index_select": torch.index_select,
    "index_copy": torch.index_copy,
    "scatter": _scatter,
    "slice_scatter": _slice_scatter,
    "slice_scatter_": _slice_scatter,
    "index_copy_": torch.index_copy,
    "select_scatter": _select_scatter,
    "diagonal_scatter": _diagonal_scatter,
    "index_put": lambda x, idx, v, acc: torch.index_put(x, tuple(idx), v, bool(acc)),
    "copy_": _copy,
}


def _slice_write(x: torch.Tensor, src: torch.Tensor, starts, ends, strides) -> torch.Tensor:
    x[tuple(slice(s, e, st) for s, e, st in zip(starts, ends, strides))] = src
    return x


#: in-place execution of the INPLACE ops: writes into the first operand's buffer and returns it
INPLACE = {"slice_scatter_": _slice_write, "index_copy_": lambda x, dim, idx, src: x.index_copy_(dim, idx, src)}

CREATION = ("iota", "full")


def scalar_type_of(value: Any) -> ScalarType:
    if isinstance(value, bool):
        return ScalarType("bool")
    if isinstance(value, int):
        return ScalarType("int")
    return ScalarType("float")


def prod_extents(shape: tuple[Extent, ...]) -> Extent:
    return as_extent(reduce(operator.mul, (_sym(e) for e in shape), sympy.Integer(1)))


def numel(shape: tuple[Extent, ...], env: dict | None = None, default: int = 1024) -> int:
    """Element count at concrete sizes: symbols take ``env`` values, else ``default``."""
    n = 1
    for e in shape:
        if isinstance(e, int):
            n *= e
        else:
            subs = {s: (env or {}).get(s.name, default) for s in e.free_symbols}
            n *= int(e.subs(subs))
    return max(n, 0)


assert not (set(IMPLS) ^ set(OPS)), set(IMPLS) ^ set(OPS)
