"""A reference implementation, on torch (any device), of the subset of the
``nvfuser_direct`` frontend that ``emit.py`` uses, so that the exact emitted text runs
everywhere (CPU tests exercise what a GPU would build).

    with FusionDefinition() as fd:
        seg0(fd)                      # define_tensor / define_scalar / fd.ops.* / add_output
    outs = fd.execute([x, y, 3])      # list of plain outputs; aliased outputs are written
                                      # into their input's storage and not returned

Semantics follow nvFuser 0.2.36 where they differ from torch and the emitter relies on
them: Python ``float`` constants are Double (so an int tensor with a float constant
computes in float64), Half/BFloat16 arithmetic computes and returns Float, integer
``div`` truncates, elementwise ops are positional-only, ``squeeze`` only drops extent-1
dims, ``slice`` strides must be 1, ``take_along_axis`` needs equal non-indexed extents,
``add_output(o, alias_input=i)`` needs ``i`` to be a fusion input, and inputs are checked
against their definitions (rank, static extents, dtype). Outputs may be views of inputs,
as nvFuser's alias analysis may also return them.
"""

from __future__ import annotations

import enum
import math
import sys
from typing import Any, Callable

import torch
import torch.nn.functional as F
from satfuse.engine.vocab import BINARY, UNARY

__version__ = "0.2.36+reference"


class DataType(enum.Enum):
    Double = "Double"
    Float = "Float"
    Half = "Half"
    BFloat16 = "BFloat16"
    Int = "Int"
    Int32 = "Int32"
    Bool = "Bool"
    ComplexFloat = "ComplexFloat"
    ComplexDouble = "ComplexDouble"
    Null = "Null"


TORCH_DTYPE: dict[DataType, torch.dtype] = {
    DataType.Double: torch.float64, DataType.Float: torch.float32, DataType.Half: torch.float16,
    DataType.BFloat16: torch.bfloat16, DataType.Int: torch.int64, DataType.Int32: torch.int32,
    DataType.Bool: torch.bool, DataType.ComplexFloat: torch.complex64, DataType.ComplexDouble: torch.complex128,
}


class FrontendError(RuntimeError):
    """What the real frontend would reject (or what the reference cannot do)."""


class Val:
    """A value of the definition: a tensor or a scalar, resolved at execute time."""

    __slots__ = ("fd", "idx", "kind")

    def __init__(self, fd: "FusionDefinition", idx: int, kind: str):
        self.fd, self.idx, self.kind = fd, idx, kind

    def size(self, dim: int) -> "Val":
        return self.fd.ops.size(self, dim)

    def shape(self) -> list["Val"]:
        raise FrontendError("Val.shape() needs the static rank; use fd.ops.size(t, i)")

    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    def __repr__(self) -> str:
        return f"<{self.kind} v{self.idx}>"


def _resolve(x: Any, slots: list) -> Any:
    if isinstance(x, Val):
        return slots[x.idx]
    if isinstance(x, (list, tuple)):
        return [_resolve(y, slots) for y in x]
    return x


def _val_ids(x: Any, into: set[int]) -> set[int]:
    if isinstance(x, Val):
        into.add(x.idx)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _val_ids(y, into)
    return into


def _has_val(x: Any) -> bool:
    if isinstance(x, Val):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_val(y) for y in x)
    return False


class FusionDefinition:
    def __init__(self) -> None:
        self._prog: list[tuple[Callable, tuple, dict, int, tuple[Any, int] | None]] = []
        self._inputs: list[tuple[Val, tuple]] = []
        self._input_ids: set[int] = set()  # id of each input Val: an alias source is looked up (once per output)
        self._outputs: list[Val] = []
        self._aliases: list[tuple[Val, Val]] = []
        self._n = 0
        self._device = torch.device("cpu")
        self._frees: list[tuple[int, ...]] | None = None
        self._into: list[int | None] = []
        #: slots whose op makes a new tensor (never a view of an operand)
        self._fresh: set[int] = set()
        #: slots whose elementwise op may write its result into a dying operand's buffer (``out=``)
        self._may_reuse: set[int] = set()
        self.ops = _Ops(self)

    def __enter__(self) -> "FusionDefinition":
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def _new(self, kind: str) -> Val:
        v = Val(self, self._n, kind)
        self._n += 1
        return v

    def _record(self, kind: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        if kind == "scalar" and not _has_val(args) and not _has_val(list(kwargs.values())):
            return fn(*args, **kwargs)  # constant folding, as nvFuser does for Python numbers
        out = self._new(kind)
        self._prog.append((fn, args, kwargs, out.idx, _call_site()))
        return out

    # ------------------------------------------------------------------ inputs
    def define_tensor(self, shape: list[int], contiguity: Any = None, dtype: DataType = DataType.Float,
                      is_cpu: bool = False, stride_order: list[int] | None = None) -> Val:
        if not all(isinstance(e, int) for e in shape):
            raise FrontendError(f"define_tensor: shape must be Python ints, got {shape}")
        if isinstance(contiguity, list) and len(contiguity) != len(shape):
            raise FrontendError(f"define_tensor: contiguity {contiguity} does not match rank {len(shape)}")
        if isinstance(contiguity, list):
            for e, c in zip(shape, contiguity):
                if (e == 1) != (c is None):
                    raise FrontendError(f"define_tensor: contiguity must be None exactly for broadcast (extent 1) dims: "
                                        f"shape={shape}, contiguity={contiguity}")
        if is_cpu and shape:
            raise FrontendError("CPU non-scalar tensor is not supported!")
        v = self._new("tensor")
        self._inputs.append((v, ("tensor", list(shape), dtype)))
        self._input_ids.add(id(v))
        return v

    def define_scalar(self, value: Any = None, dtype: DataType | None = None) -> Any:
        if value is None:
            v = self._new("scalar")
            self._inputs.append((v, ("scalar", dtype or DataType.Double)))
            self._input_ids.add(id(v))
            return v
        return _scalar_cast(value, dtype) if dtype is not None else value

    # ------------------------------------------------------------------ outputs
    def add_output(self, output: Any, alias_input: Any = None) -> None:
        if not isinstance(output, Val) or output.kind != "tensor":
            raise FrontendError("Non-TensorView outputs are not supported")
        if alias_input is None:
            self._outputs.append(output)
            return
        if id(alias_input) not in self._input_ids or alias_input.kind != "tensor":
            raise FrontendError("alias source can only be a fusion input")
        self._aliases.append((output, alias_input))

    # ------------------------------------------------------------------ execution
    def _last_uses(self) -> tuple[list[tuple[int, ...]], list[int | None]]:
        """Per recorded op, the slots no later op reads (and that are not results): ``execute``
        drops them right after, so a segment holds what eager would hold, not every
        intermediate until it returns (nvFuser keeps intermediates in registers). And per op,
        an operand it may write its result into: one read last there, made by an op of this
        segment as a new tensor, and never viewed (every reader makes a new tensor too), so no
        other value shares its memory; ``execute`` checks dtype and shape."""
        keep = {o.idx for o in self._outputs} | {i for pair in self._aliases for i in (pair[0].idx, pair[1].idx)}
        last: dict[int, int] = {}
        reads: list[set[int]] = []
        owned = set(self._fresh)
        for k, (_, args, kwargs, out, _) in enumerate(self._prog):
            ids = _val_ids(list(kwargs.values()), _val_ids(args, set()))
            reads.append(ids)
            for i in ids:
                last[i] = k
                if out not in self._fresh:
                    owned.discard(i)  # its result may view i
            last.setdefault(out, k)  # a result nothing reads is dropped at once
        frees: list[list[int]] = [[] for _ in self._prog]
        for i, k in last.items():
            if i not in keep:
                frees[k].append(i)
        into: list[int | None] = [None] * len(self._prog)
        for k, (_, _, _, out, _) in enumerate(self._prog):
            if out in self._may_reuse:
                into[k] = next((i for i in sorted(reads[k]) if i in owned and last[i] == k and i not in keep), None)
        return [tuple(f) for f in frees], into

    def execute(self, inputs: list, *, device: Any = None, **_: Any) -> list[torch.Tensor]:
        if not self._outputs and not self._aliases:
            raise NotImplementedError("Fusion is empty!")
        if len(inputs) != len(self._inputs):
            raise FrontendError(f"execute: {len(self._inputs)} inputs defined, {len(inputs)} given")
        slots: list[Any] = [None] * self._n
        dev = None
        for (v, spec), x in zip(self._inputs, inputs):
            if spec[0] == "tensor":
                _check_tensor(v, spec, x)
                if dev is None and (x.dim() > 0 or x.device.type != "cpu"):
                    dev = x.device
            elif isinstance(x, torch.Tensor):
                raise FrontendError(f"scalar input v{v.idx} given a tensor")
            slots[v.idx] = x
        self._device = dev or (torch.device(device) if device is not None else torch.device("cpu"))
        if self._device.type != "cpu":  # a CPU 0-d operand is a scalar to nvFuser: it meets the others there
            written = {id(inp) for _, inp in self._aliases}
            for (v, spec), x in zip(self._inputs, inputs):
                if spec[0] == "tensor" and x.dim() == 0 and x.device.type == "cpu" and id(v) not in written:
                    slots[v.idx] = x.to(self._device)
        frees = self._frees
        if frees is None:
            frees, self._into = self._last_uses()
            self._frees = frees
        for (fn, args, kwargs, out, site), dead, into in zip(self._prog, frees, self._into):
            try:
                if into is not None and isinstance(slots[into], torch.Tensor):
                    slots[out] = fn(*_resolve(args, slots), into=slots[into])
                else:
                    slots[out] = fn(*_resolve(args, slots), **{k: _resolve(a, slots) for k, a in kwargs.items()})
            except Exception as e:
                e.satfuse_line = _line_of(site)  # type: ignore[attr-defined]  # the generated line that recorded the op
                raise
            for i in dead:
                slots[i] = None
        outs = fresh_outputs([slots[o.idx] for o in self._outputs],
                             [x for (v, spec), x in zip(self._inputs, inputs) if spec[0] == "tensor"])
        vals = [(inp, slots[o.idx]) for o, inp in self._aliases]
        for inp, val in vals:
            buf = slots[inp.idx]
            if tuple(val.shape) != tuple(buf.shape) or val.dtype != buf.dtype:
                raise FrontendError(f"aliased output {tuple(val.shape)} {val.dtype} does not match its input "
                                    f"{tuple(buf.shape)} {buf.dtype}")
            buf.copy_(val)
        if self._aliases and self._outputs:  # a visible alias output is the input buffer itself
            buffer_of = {id(o): inp for o, inp in self._aliases}
            for i, p in enumerate(self._outputs):
                inp = buffer_of.get(id(p))
                if inp is not None:
                    outs[i] = slots[inp.idx]
        return outs


def fresh_outputs(outs: list[torch.Tensor], inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """A segment's outputs as new tensors, which is what the plan assumes of every segment output.
    Torch ops may return views (an ``expand`` of an input, one output broadcast from another), and
    so does nvFuser 0.2.36's own alias analysis (on an H200: a reduction over size-1 dimensions is
    a squeeze of its input, a zero pad or a ``where`` of one tensor the input itself), after which
    a write-back to that input changed the output. Each output whose memory an input or an earlier
    output already holds is copied (an empty output included: its storage is still the viewed
    buffer's)."""
    taken = {x.untyped_storage().data_ptr() for x in inputs if x.numel()}
    out = []
    for t in outs:
        if t.numel():
            ptr = t.untyped_storage().data_ptr()
            if ptr in taken:
                t = t.clone(memory_format=torch.contiguous_format)
                ptr = t.untyped_storage().data_ptr()
            taken.add(ptr)
        elif t.untyped_storage().nbytes():  # an empty view of some buffer still holds that buffer
            t = torch.empty(t.shape, dtype=t.dtype, device=t.device)
        out.append(t)
    return out


def _call_site() -> tuple[Any, int] | None:
    """Where the generated definition (compiled as ``<satfuse ...>``) called an op: its code and
    instruction offset. The line is looked up only when the op fails (:func:`_line_of`): reading
    ``f_lineno`` scans the code's line table from its start, and a 10k-op definition's table is long."""
    f = sys._getframe(2)
    for _ in range(6):
        if f is None:
            return None
        if f.f_code.co_filename.startswith("<satfuse"):
            return f.f_code, f.f_lasti
        f = f.f_back
    return None


def _line_of(site: tuple[Any, int] | None) -> int | None:
    """The source line of a :func:`_call_site`."""
    if site is None:
        return None
    code, lasti = site
    return next((line for start, end, line in code.co_lines() if start <= lasti < end), None)


def _check_tensor(v: Val, spec: tuple, x: Any) -> None:
    _, shape, dtype = spec
    if not isinstance(x, torch.Tensor):
        raise FrontendError(f"input v{v.idx}: expected a tensor, got {type(x).__name__}")
    if x.dim() != len(shape):
        raise FrontendError(f"input v{v.idx}: defined with rank {len(shape)}, got shape {tuple(x.shape)}")
    for d, (e, a) in enumerate(zip(shape, x.shape)):
        if e >= 0 and e != a:
            raise FrontendError(f"input v{v.idx}: dim {d} defined as {e}, got {a}")
    if x.dtype != TORCH_DTYPE[dtype]:
        raise FrontendError(f"input v{v.idx}: defined as {dtype.name}, got {x.dtype}")


class TypedFloat(float):
    """A float constant with an explicit DataType (``define_scalar(2.5, dtype=DataType.Float)``):
    it promotes integer tensors to that dtype, where a bare Python float promotes them to Double."""

    dtype: torch.dtype = torch.float64

    def __new__(cls, value: float, dtype: torch.dtype) -> "TypedFloat":
        obj = super().__new__(cls, value)
        obj.dtype = dtype
        return obj


def _scalar_cast(value: Any, dtype: DataType | None) -> Any:
    if dtype is None or dtype == DataType.Null:
        return value
    if dtype == DataType.Bool:
        return bool(value)
    if dtype in (DataType.Int, DataType.Int32):
        return int(value)
    if dtype in (DataType.ComplexFloat, DataType.ComplexDouble):
        return complex(value)
    return TypedFloat(float(value), TORCH_DTYPE[dtype])


# ---------------------------------------------------------------------- nvFuser-like promotion

_KEEPS_LOW = {"abs", "where", "set", "segment_set", "cast", "relu"}
_LOW = (torch.float16, torch.bfloat16)


def _nvf_args(name: str, args: list) -> list:
    ts = [a for a in args if isinstance(a, torch.Tensor)]
    if name not in _KEEPS_LOW:
        args = [a.float() if isinstance(a, torch.Tensor) and a.dtype in _LOW else a for a in args]
    floats = [a for a in args if isinstance(a, float)]
    if floats and ts and not any(t.is_floating_point() or t.is_complex() for t in ts):
        to = getattr(floats[0], "dtype", torch.float64)  # a bare Python float is a Double
        args = [a.to(to) if isinstance(a, torch.Tensor) else a for a in args]
    return args


def _scalar_fn(name: str) -> Callable:
    import operator

    table: dict[str, Callable] = {
        "add": operator.add, "sub": operator.sub, "mul": operator.mul, "neg": operator.neg,
        "div": lambda a, b: (int(a / b) if isinstance(a, int) and isinstance(b, int) else a / b),
        "truediv": lambda a, b: a / b, "maximum": max, "minimum": min, "remainder": operator.mod,
        "fmod": math.fmod, "abs": abs, "eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
        "le": operator.le, "gt": operator.gt, "ge": operator.ge, "pow": operator.pow,
    }
    fn = table.get(name)
    if fn is None:
        t = UNARY.get(name) or BINARY.get(name)

        def fn(*a: Any) -> Any:
            return t(*(torch.tensor(x) for x in a)).item()
    return fn


#: elementwise ops whose result, on floating tensors of one dtype and real Python numbers, has
#: that dtype, and whose torch function takes ``out=`` (``torch.relu`` does not): they may write
#: the result into a dying operand of the result's shape
_SAME_DTYPE = frozenset({
    "neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "sin", "cos",
    "erf", "floor", "ceil", "sign", "exp2", "log2", "tan", "atan", "add", "sub", "mul", "div", "truediv",
    "pow", "maximum", "minimum", "remainder", "fmod", "atan2",
})


def _fits(buf: torch.Tensor, args: list) -> bool:
    """``buf`` (an operand of the op) can take the op's result: every tensor operand has its
    floating dtype, the numbers are real, the result has its shape, and autograd is not involved.
    The first operand is a tensor (torch's ``out=`` overloads take one there)."""
    if not buf.is_floating_point() or buf.requires_grad or not any(a is buf for a in args) \
            or not isinstance(args[0], torch.Tensor):
        return False
    shapes = []
    for a in args:
        if isinstance(a, torch.Tensor):
            if a.dtype != buf.dtype or a.requires_grad or a.device != buf.device:
                return False
            shapes.append(a.shape)
        elif isinstance(a, complex):
            return False
    # buf's shape is among them: the result has it exactly when every operand broadcasts to it
    # (``torch.broadcast_shapes``, with its symbolic-shape checks, was half of an Adam step's run)
    target = buf.shape
    return all(s == target or _broadcasts_to(s, target) for s in shapes)


def _broadcasts_to(shape: torch.Size, target: torch.Size) -> bool:
    if len(shape) > len(target):
        return False
    return all(a == 1 or a == b for a, b in zip(reversed(shape), reversed(target)))


def _elementwise(name: str, torch_fn: Callable) -> Callable:
    scalar = _scalar_fn(name)

    def run(*args: Any, into: torch.Tensor | None = None) -> Any:
        if not any(isinstance(a, torch.Tensor) for a in args):
            return scalar(*args)
        args = _nvf_args(name, list(args))
        if name == "relu" and not (args[0].is_floating_point() or args[0].is_complex()):
            # as nvFuser's runtime computes it (``float relu(int64_t x)``), so a plan that emits it is
            # as wrong here as on a GPU
            return torch.relu(args[0].float()).to(args[0].dtype)
        if name == "div" and all(not (isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex()))
                                 and not isinstance(a, float) for a in args):
            return torch.div(args[0], args[1], rounding_mode="trunc")
        if name in ("maximum", "minimum", "atan2", "fmod", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor",
                    "logical_and", "logical_or", "pow") and not all(isinstance(a, torch.Tensor) for a in args):
            like = next(a for a in args if isinstance(a, torch.Tensor))
            if name in ("maximum", "minimum", "atan2"):
                args = [a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=like.dtype, device=like.device)
                        for a in args]
        if into is not None and _fits(into, args):
            return torch_fn(*args, out=into)  # the operand dies here: its buffer takes the result
        return torch_fn(*args)

    return run


# ---------------------------------------------------------------------- ops


class _Ops:
    """``fd.ops``: records each call; runs it at ``execute``."""

    def __init__(self, fd: FusionDefinition):
        self._fd = fd
        for name, fn in list(UNARY.items()) + list(BINARY.items()):
            setattr(self, name, self._ew(name, fn))
        self.truediv = self._ew("truediv", torch.true_divide)
        self.mod = self._ew("remainder", torch.remainder)

    def _ew(self, name: str, fn: Callable) -> Callable:
        run = _elementwise(name, fn)

        def op(*args: Any) -> Any:
            kind = "tensor" if any(isinstance(a, Val) and a.kind == "tensor" for a in args) else "scalar"
            out = self._fd._record(kind, run, *args)
            if isinstance(out, Val):
                self._fd._fresh.add(out.idx)
                if name in _SAME_DTYPE:
                    self._fd._may_reuse.add(out.idx)
            return out

        op.__name__ = name
        return op

    def _t(self, fn: Callable, *args: Any, **kwargs: Any) -> Val:
        return self._fd._record("tensor", fn, *args, **kwargs)

    def _new(self, fn: Callable, *args: Any) -> Val:
        """An op whose result is always a new tensor (no view of an operand)."""
        out = self._t(fn, *args)
        self._fd._fresh.add(out.idx)
        return out

    def where(self, cond: Any, x: Any, y: Any) -> Any:
        def run(c: Any, a: Any, b: Any) -> Any:
            if not any(isinstance(t, torch.Tensor) for t in (c, a, b)):
                return a if c else b
            a, b = _nvf_args("where", [a, b])
            return torch.where(c if isinstance(c, torch.Tensor) else torch.tensor(bool(c)), a, b)

        kind = "tensor" if any(isinstance(a, Val) and a.kind == "tensor" for a in (cond, x, y)) else "scalar"
        out = self._fd._record(kind, run, cond, x, y)
        if isinstance(out, Val):
            self._fd._fresh.add(out.idx)
        return out

    def cast(self, arg: Any, dtype: DataType) -> Any:
        if isinstance(arg, Val) and arg.kind == "tensor":
            return self._t(lambda a: a.to(TORCH_DTYPE[dtype]), arg)
        return self._fd._record("scalar", lambda a: _scalar_cast(a, dtype), arg)

    def set(self, arg: Val) -> Val:
        return self._new(lambda a: a.clone(), arg)

    segment_set = set

    def size(self, arg: Val, dim: int) -> Any:
        return self._fd._record("scalar", lambda a: int(a.shape[dim]), arg)

    # reductions
    def _reduce(self, kind: str, arg: Val, dims: Any = None, keepdim: bool = False, dtype: DataType = DataType.Null,
                dim: Any = None) -> Val:
        if dims is None:
            dims = dim
        if kind in ("max", "min") and dtype not in (DataType.Null, None):
            raise FrontendError(f"{kind}: dtype must be Null")

        def run(a: torch.Tensor) -> torch.Tensor:
            ds = list(range(a.dim())) if dims is None else ([dims] if isinstance(dims, int) else list(dims))
            if dtype not in (DataType.Null, None):
                a = a.to(TORCH_DTYPE[dtype])
            if kind == "sum":
                return torch.sum(a, ds, keepdim=keepdim) if ds else a.clone()
            if kind == "prod":
                if a.dim() > 1 and sorted(d % a.dim() for d in ds) == list(range(a.dim())):
                    # every dim: eager's one reduction over all elements, in its order (dim by dim,
                    # the rows' products could overflow to inf before a zero in another row is
                    # reached: nan where eager answers 0; jit fuzz 10093 #1775)
                    r = torch.prod(a)
                    a = r.reshape([1] * a.dim()) if keepdim else r
                else:
                    for d in sorted((d % a.dim() for d in ds), reverse=True):
                        a = torch.prod(a, d, keepdim=keepdim)
                return a if a.dtype != torch.bool else a.long()
            fn = torch.amax if kind == "max" else torch.amin
            return fn(a, ds, keepdim=keepdim) if ds else a.clone()

        return self._new(run, arg)

    def sum(self, arg: Val, dims: Any = None, keepdim: bool = False, dtype: DataType = DataType.Null, dim: Any = None) -> Val:
        return self._reduce("sum", arg, dims, keepdim, dtype, dim)

    def prod(self, arg: Val, dims: Any = None, keepdim: bool = False, dtype: DataType = DataType.Null, dim: Any = None) -> Val:
        return self._reduce("prod", arg, dims, keepdim, dtype, dim)

    def max(self, arg: Val, dims: Any = None, keepdim: bool = False, dtype: DataType = DataType.Null, dim: Any = None) -> Val:
        return self._reduce("max", arg, dims, keepdim, dtype, dim)

    def min(self, arg: Val, dims: Any = None, keepdim: bool = False, dtype: DataType = DataType.Null, dim: Any = None) -> Val:
        return self._reduce("min", arg, dims, keepdim, dtype, dim)

    # shapes
    def broadcast_in_dim(self, arg: Val, shape: list, broadcast_dims: list[int]) -> Val:
        def run(a: torch.Tensor, shape: list) -> torch.Tensor:
            if len(broadcast_dims) != a.dim():
                raise FrontendError(f"broadcast_in_dim: {len(broadcast_dims)} broadcast_dims for rank {a.dim()}")
            out = list(shape)
            view = [1] * len(out)
            for i, d in enumerate(broadcast_dims):
                if out[d] == -1:
                    out[d] = a.shape[i]
                if a.shape[i] not in (1, out[d]):
                    raise FrontendError(f"broadcast_in_dim: input dim {i} ({a.shape[i]}) cannot become {out[d]}")
                view[d] = a.shape[i]
            return a.reshape(view).expand(out)

        return self._t(run, arg, list(shape))

    def expand(self, arg: Val, shape: list) -> Val:
        return self._t(lambda a, s: a.expand(s), arg, list(shape))

    def reshape(self, arg: Val, new_shape: list) -> Val:
        return self._t(lambda a, s: a.reshape(s), arg, list(new_shape))

    def permute(self, arg: Val, dims: list[int]) -> Val:
        return self._t(lambda a: a.permute(list(dims)), arg)

    def squeeze(self, arg: Val, dims: list[int], squeeze_expanded: bool = False) -> Val:
        def run(a: torch.Tensor) -> torch.Tensor:
            for d in dims:
                if a.shape[d] != 1:
                    raise FrontendError("Can not squeeze non-broadcasting dimension(s)")
            return a.squeeze(tuple(dims))

        return self._t(run, arg)

    def slice(self, arg: Val, start_indices: list, end_indices: list, strides: list | None = None,
              manual_normalization: bool = False) -> Val:
        def run(a: torch.Tensor, s: list, e: list, st: list | None) -> torch.Tensor:
            st = st or [1] * a.dim()
            if any(x != 1 for x in st):
                raise FrontendError("slice: strides must be 1")
            return a[tuple(slice(x, y) for x, y in zip(s, e))]

        return self._t(run, arg, list(start_indices), list(end_indices), None if strides is None else list(strides))

    def cat(self, tensors: list, dim: int = 0, manual_padding: bool = False) -> Val:
        """A cat of fusion inputs selects each operand's values. Where an operand is computed in the
        definition, nvFuser's MovePad pass may move the cat's zero pads into that operand's
        definition and then add the padded operands (``csrc/preseg_passes/move_pad.cpp``,
        ``replaceCat``): a floating -0.0 becomes +0.0 (an H200: ``atan2`` of such a cat, optimize
        fuzz 9925 #221). This runs it as that sum, so a plan relying on the sign is wrong here too."""
        computed = any(id(t) not in self._fd._input_ids for t in tensors)

        def run(ts: list) -> torch.Tensor:
            if not computed or not (ts[0].is_floating_point() or ts[0].is_complex()):
                return torch.cat(ts, dim)
            d = dim % ts[0].dim()
            total, off, out = sum(t.shape[d] for t in ts), 0, None
            for t in ts:
                p = F.pad(t, [0, 0] * (t.dim() - d - 1) + [off, total - off - t.shape[d]])
                out = p if out is None else out + p
                off += t.shape[d]
            return out

        return self._new(run, list(tensors))

    def pad(self, arg: Val, pad_widths: list, value: Any = None) -> Val:
        def run(a: torch.Tensor, w: list, v: Any) -> torch.Tensor:
            if len(w) > 2 * a.dim():
                raise FrontendError("pad: too many pad widths")
            return F.pad(a, w, value=0 if v is None else v)

        return self._t(run, arg, list(pad_widths), value)

    # factories
    def iota(self, length: Any, start: Any = None, step: Any = None, dtype: DataType = DataType.Int) -> Val:
        fd = self._fd

        def run(n: int, s: Any, st: Any) -> torch.Tensor:
            s = 0 if s is None else s
            st = 1 if st is None else st
            return (torch.arange(n, device=fd._device) * st + s).to(TORCH_DTYPE[dtype])

        return self._new(run, length, start, step)

    def full(self, shape: list, fill_value: Any, dtype: DataType) -> Val:
        fd = self._fd
        return self._new(lambda s, v: torch.full(s, v, dtype=TORCH_DTYPE[dtype], device=fd._device), list(shape),
                         fill_value)

    # indexing
    def take_along_axis(self, arg: Val, index: Val, dim: int) -> Val:
        def run(a: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
            if a.dim() != i.dim():
                raise FrontendError("take_along_axis: tensors must have the same rank")
            d = dim % a.dim()
            for k in range(a.dim()):
                if k != d and a.shape[k] != i.shape[k]:
                    raise FrontendError("take_along_axis: non-indexed extents must be equal")
            return torch.take_along_dim(a, i.long(), d)  # nvFuser takes Int32 indices too

        return self._new(run, arg, index)

    def index_select(self, arg: Val, index: Val, dim: int) -> Val:
        return self._new(lambda a, i: torch.index_select(a, dim, i), arg, index)

    def gather(self, arg: Val, index: Val, dim: int) -> Val:
        return self._new(lambda a, i: torch.gather(a, dim, i.long()), arg, index)

    def scatter(self, arg: Val, index: Val, src: Any, dim: int) -> Val:
        return self._new(lambda a, i, s: torch.scatter(a, dim, i.long(), s), arg, index, src)
