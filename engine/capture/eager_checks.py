"""Argument checks eager kernels make that tracing on fake tensors leaves out.

Capture traces decompositions (``torch._decomp``) on fake tensors; where one skips a check
of the eager kernel, the traced program quietly computes what eager refuses: nll_loss's
decomposition gathers with an int32 target where eager raises ``RuntimeError: expected
target dtype to be Long or Byte``. Each wrapper here makes eager's check first and raises
eager's exception type, so capture refuses exactly what eager refuses. (Checks on tensor
*values*, such as a target in range, are the rules' obligations: lowering/obligations.py.)

Fake and meta kernels also skip the checks a real kernel makes before it reads any data:
the dtypes it is compiled for (``bitwise_not`` of a float tensor raises
``NotImplementedError: "bitwise_not_cpu" not implemented for 'Float'``), the conversion of
a Scalar argument to the op's dtype (``clamp(int32, min=2**31)``, ``add(f16, f16, alpha=1e5)``
raise "value cannot be converted to type ... without overflow") and the cast of an in-place or
``out=`` result to the written dtype (``int_t.mul_(0.5)`` raises, ``bool_t.logical_or_(int_t)``
does not). :func:`probe_kernel` runs
the real kernel once on tiny tensors of the same dtypes, device and empty dims, and raises
what it raises for those two reasons only: an op the program computes but never uses is
refused as eager refuses it, and a plan never computes what eager rejects.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

from .compat import hint

aten = torch.ops.aten


class EagerRefusal(RuntimeError):
    """Eager refuses these arguments (its own message); capture raises it unchanged."""


class EagerDtypeRefusal(EagerRefusal, NotImplementedError):
    """Eager's kernel is not compiled for these dtypes (eager raises NotImplementedError)."""


class EagerIndexRefusal(EagerRefusal, IndexError):
    """Eager's index check refuses these arguments whatever their values (eager raises IndexError)."""


#: c10's ScalarType names, as eager's messages spell dtypes
_SCALAR_NAMES = {torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
                 torch.uint8: "Byte", torch.bool: "Bool", torch.float32: "Float", torch.float64: "Double",
                 torch.float16: "Half", torch.bfloat16: "BFloat16"}


def _scalar_name(dt: torch.dtype) -> str:
    return _SCALAR_NAMES.get(dt, str(dt).removeprefix("torch."))


def _nll_target(two_d: bool, target_pos: int) -> Callable[[Callable], Callable]:
    """nll_loss(_2d)_forward/backward: the target must be int64 (or uint8, 1-d only)."""

    def wrap(decomp: Callable) -> Callable:
        def checked(*args: Any, **kwargs: Any) -> Any:
            target = args[target_pos] if len(args) > target_pos else kwargs["target"]
            dt = target.dtype
            if dt not in (torch.int64, torch.uint8):
                raise EagerRefusal(f"expected target dtype to be Long or Byte, but got {_scalar_name(dt)}")
            if two_d and dt != torch.int64:
                raise EagerRefusal(f"expected scalar type Long but found {_scalar_name(dt)}")
            return decomp(*args, **kwargs)

        return checked

    return wrap


def _empty_softmax(decomp: Callable) -> Callable:
    """(log_)softmax of an empty tensor: eager's kernel returns an empty result in any dtype
    (int and bool included); the decomposition pads the empty dim with a ``-inf`` that an
    integer tensor cannot hold."""

    def checked(x: Any, dim: int, half_to_float: bool, *args: Any, **kwargs: Any) -> Any:
        from torch.fx.experimental.symbolic_shapes import guard_or_false

        if guard_or_false(x.numel() == 0):
            dt = torch.float32 if half_to_float else x.dtype
            return torch.empty(x.shape, dtype=dt, device=x.device)
        return decomp(x, dim, half_to_float, *args, **kwargs)

    return checked


def _negative_pad(decomp: Callable) -> Callable:
    """constant_pad_nd: eager's kernel narrows the input by each negative pad, left then right,
    and refuses a negative length ("narrow(): length must be non-negative"); the meta kernel
    only checks the final size, so ``F.pad(x, (1, -1))`` of an empty dim would pass. Where some
    pad is positive, the fill value is converted to x's dtype with eager's overflow check
    (``value=2**31`` on int32); a pad that only narrows never converts it."""

    def checked(x: Any, pad: Any, *args: Any, **kwargs: Any) -> Any:
        for k in range(len(pad) // 2):
            dim = x.dim() - 1 - k
            if dim < 0:
                break
            size = x.shape[dim]
            for p in (pad[2 * k], pad[2 * k + 1]):
                if p < 0:
                    size = size + p
                    if size < 0:
                        raise EagerRefusal("narrow(): length must be non-negative.")
        value = args[0] if args else kwargs.get("value", 0)
        if type(value) in (int, float) and value != 0 and any(p > 0 for p in pad):  # converted, checked
            from torch.utils._python_dispatch import _disable_current_modes

            with _disable_current_modes():
                try:
                    torch.constant_pad_nd(torch.zeros(1, dtype=x.dtype), [1, 0], value)
                except RuntimeError as e:
                    raise EagerRefusal(str(e).strip().splitlines()[0]) from None
        return decomp(x, pad, *args, **kwargs)

    return checked


def _strided_bounds(op: Callable) -> Callable:
    """as_strided: eager's ``setStorage`` refuses a view that reaches past its storage; fake
    tensors leave storage sizes out, so an unused ``x.as_strided((2,), (1,))`` of an empty
    tensor would pass."""

    def checked(x: Any, size: Any, stride: Any, storage_offset: Any = None, *args: Any, **kwargs: Any) -> Any:
        offset = x.storage_offset() if storage_offset is None else storage_offset
        if all(n != 0 for n in size):
            need = (offset + sum((n - 1) * st for n, st in zip(size, stride)) + 1) * x.element_size()
            have = _storage_bytes(x)
            if need > have:
                raise EagerRefusal(
                    f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and itemsize "
                    f"{x.element_size()} requiring a storage size of {need} are out of bounds for storage of size {have}")
        return op(x, size, stride, storage_offset, *args, **kwargs)

    return checked


def _storage_bytes(x: Any) -> int:
    """The bytes of ``x``'s storage as eager has them. Functionalization gives a view of a strided
    input (``a[::2]``) a storage of its own elements only; the fake tensor it wraps keeps the real
    input's storage size (read on its hint: no guard)."""
    from torch._subclasses.functional_tensor import FunctionalTensor
    have = x.untyped_storage().nbytes()
    if isinstance(x, FunctionalTensor):
        inner = torch._from_functional_tensor(x.elem)
        # an input's own storage, as functionalization recorded it (a view of an input may hold 0 bytes)
        first = torch._functionalize_get_storage_size(x.elem, True)
        have = max(hint(n) for n in (have, inner.untyped_storage().nbytes(), first))
    return have


def _index_into_empty(op: Callable) -> Callable:
    """``x.index_fill_(dim, idx, v)`` / ``x.index_copy_(dim, idx, src)`` with ``x.size(dim) == 0``
    and a non-empty ``idx``: eager raises whatever the index values, and which error depends on
    x's storage, which a plan's own value does not have. Eager's kernel views ``x`` with ``dim``
    restrided to ``idx.numel()`` elements of stride 0 (``setStorage`` refuses where x's storage
    ends before its offset plus one row: a fresh empty tensor), then checks each index (IndexError:
    an empty view of a larger storage). Raised here, as eager would for these inputs (the op's own
    checks first); where another dim is empty eager checks nothing."""

    def checked(x: Any, dim: int, index: Any, *args: Any, **kwargs: Any) -> Any:
        from torch.fx.experimental.symbolic_shapes import statically_known_true

        out = op(x, dim, index, *args, **kwargs)
        if x.dim() == 0 or index.dtype != torch.int64 or type(dim) is not int:
            return out
        d = dim % x.dim()
        # a symbolic extent is never 0 (the ShapeEnv specializes 0 and 1): only a static 0 counts
        if not statically_known_true(x.size(d) == 0) or statically_known_true(index.numel() == 0) or any(
                statically_known_true(s == 0) for k, s in enumerate(x.size()) if k != d):
            return out
        size = [hint(s) for s in x.size()]  # the error's kind only: no guard
        stride = [hint(t) for t in x.stride()]
        offset, n = hint(x.storage_offset()), hint(index.numel())
        need = (offset + sum((s - 1) * t for k, (s, t) in enumerate(zip(size, stride)) if k != d) + 1) * x.element_size()
        have = _storage_bytes(x)
        name = op._overloadpacket.__name__ if hasattr(op, "_overloadpacket") else "index_fill_"
        if need > have:
            rows = [n if k == d else s for k, s in enumerate(size)]
            strides = [0 if k == d else t for k, t in enumerate(stride)]
            raise EagerRefusal(
                f"setStorage: sizes {rows}, strides {strides}, storage offset {offset}, and itemsize "
                f"{x.element_size()} requiring a storage size of {need} are out of bounds for storage of size {have}")
        prefix = "index_copy_(): " if name == "index_copy_" else ""
        raise EagerIndexRefusal(f"{prefix}index out of bounds for dimension {d} with size 0 ({name} of an empty dim)")

    return checked


#: aten op packet -> wrapper of its decomposition
CHECKS: dict[Any, Callable[[Callable], Callable]] = {
    aten._softmax: _empty_softmax,
    aten._log_softmax: _empty_softmax,
    aten.constant_pad_nd: _negative_pad,
    aten.as_strided: _strided_bounds,
    aten.as_strided_: _strided_bounds,
    aten.index_fill_: _index_into_empty,
    aten.index_copy_: _index_into_empty,
    aten.nll_loss_forward: _nll_target(False, 1),
    aten.nll_loss2d_forward: _nll_target(True, 1),
    aten.nll_loss_backward: _nll_target(False, 2),
    aten.nll_loss2d_backward: _nll_target(True, 2),
}


def with_eager_check(op: Any) -> Callable:
    """``op`` itself with eager's argument checks in front (the program's own call, before
    anything is decomposed)."""
    wrap = CHECKS.get(getattr(op, "_overloadpacket", None))
    return op if wrap is None else wrap(op)


def with_eager_checks(table: dict) -> dict:
    """``table`` (OpOverload -> decomposition) with eager's argument checks in front, and the
    real kernel's dtype and Scalar refusals (``probe_kernel``): AOTAutograd's trace decomposes
    without capture's modes, where an int softmax would become ops that accept ints."""
    out = dict(table)
    for op, fn in table.items():
        wrap = CHECKS.get(getattr(op, "_overloadpacket", None))
        out[op] = _probed(op, wrap(fn) if wrap is not None else fn)
    return out


def _probed(op: Any, decomp: Callable) -> Callable:
    @functools.wraps(decomp)
    def run(*args: Any, **kwargs: Any) -> Any:
        probe_kernel(op, args, kwargs)
        return decomp(*args, **kwargs)

    return run


class MetaDtypeError(RuntimeError):
    """A traced graph's node has the dtype of torch's meta kernel where eager's kernel gives
    another (``pow(bool_t, True)``: int64 on meta, bool in eager)."""


def probe_graph(gm: torch.fx.GraphModule) -> None:
    """``probe_kernel`` for every aten call of a traced graph, on its nodes' fake values: the
    refusals of the ops a trace kept (AOTAutograd's meta kernels accept dtypes eager's reject),
    and a :class:`MetaDtypeError` where a node's dtype is not eager's result dtype: the graph
    carries the meta kernel's dtype into every later op, so it cannot be converted as it is
    (capture's own trace casts the result to eager's dtype where the op runs)."""
    def val(a: Any) -> Any:
        return a.meta.get("val") if isinstance(a, torch.fx.Node) else a

    for n in gm.graph.nodes:
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload):
            dtype = probe_kernel(n.target, pytree.tree_map(val, tuple(n.args)), pytree.tree_map(val, dict(n.kwargs)))
            meta = n.meta.get("val")
            if dtype is not None and isinstance(meta, torch.Tensor) and meta.dtype != dtype:
                raise MetaDtypeError(f"{n.target} ({n.name}): the traced graph has {meta.dtype}, the dtype of "
                                     f"torch's meta kernel, where eager's kernel gives {dtype}")


# ---------------------------------------------------------------- the real kernel's value-independent refusals

#: what a real kernel raises for the dtypes or Scalar arguments alone, never for tensor values (a dtype
#: may print as a TypeMeta: ``c10::BFloat16``, ``c10::Half``)
_KERNEL_REFUSAL = re.compile(r"not implemented for|only support floating point|Boolean inputs not supported|not supported for complex|support complex|bool tensors? is not supported|"
                             r"cannot be converted to type .* without overflow|can't be cast to the desired output type|Found dtype [\w:]+ but expected [\w:]+|"
                             r"alpha must not be a floating point number|Boolean alpha only supported|"
                             r"expected dtype [^`]+ for `\w+` but got dtype|Integers to negative integer powers are not allowed|"
                             r"Integer division with addcdiv is no longer supported")
#: per probe key: the real kernel's refusal, its single tensor result's dtype, and every result's dtype
_PROBED: dict[tuple, tuple[BaseException | None, torch.dtype | None, tuple[torch.dtype | None, ...] | None]] = {}


def _probe_key(func: Any, leaves: list[Any]) -> tuple | None:
    """The probe's inputs, as a key: per tensor its dtype, device and each dim as 0, 1 or 2 (more
    than one; a symbolic extent, which the ShapeEnv keeps off 0 and 1): an empty tensor skips the
    kernel and a one-element one takes other paths (``fill_`` of one f16 element stores inf where
    a larger tensor refuses 2**31), as in eager; None where a leaf is symbolic (no probe)."""
    key: list[Any] = [func]
    for x in leaves:
        if isinstance(x, torch.Tensor):
            dims = []
            for s in x.shape:
                if not isinstance(s, int):
                    s = s.node.maybe_as_int()
                dims.append(2 if s is None or s > 1 else s)
            key.append(("T", x.dtype, str(x.device), tuple(dims)))
        elif isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return None
        else:
            key.append((type(x), x if isinstance(x, (int, float, bool, complex, str, type(None))) else repr(x)))
    return tuple(key)


def _probe_skips(func: Any, args: tuple, kwargs: dict) -> bool:
    """Ops the probe leaves alone: not aten, random (a probe would draw from the generator),
    views, and factories and ops that take sizes (a probe could allocate what the program asks
    for) except factories whose numbers are tiny (``arange(3, dtype=complex64)``). A Scalar
    argument is a value, never a size (``scalar_tensor(2**31, dtype=int32)``, how ``torch.where``
    takes a number; ``fill_(2**31)``), except for the ops whose Scalars bound their result's size
    (``arange``); ops whose only sizes are a ``size`` list are probed at that list's emptiness
    (``_shrunk``)."""
    kind = _PROBE_KIND.get(func)
    if kind is None:
        kind = _PROBE_KIND[func] = _probe_kind(func)
    if kind in ("skip", "pointwise", "sized"):
        return kind == "skip"
    if kind == "factory" and func._overloadpacket.__name__ in _SIZE_SCALARS:
        return math.isnan(_elements(func, args, kwargs))  # probed with fewer elements (``_fewer``)
    limit = 64 if kind == "factory" else 4096
    types = (int, float) if kind == "factory" else (int,)
    values = _value_args(func)
    numbers = [v for i, v in enumerate(args) if i not in values] + [v for k, v in kwargs.items() if k not in values]
    return any(type(x) in types and not abs(x) <= limit for x in pytree.tree_leaves(numbers))


#: per op, what ``_probe_skips`` reads off its schema and tags (computed once: capture asks per op)
_PROBE_KIND: dict[Any, str] = {}
#: per op, the positions and names of its Scalar arguments that are values, not sizes (computed once)
_VALUE_ARGS: dict[Any, frozenset[int | str]] = {}
#: ops whose Scalar arguments bound the size of their result (``arange(2**40)``)
_SIZE_SCALARS = frozenset({"arange", "range", "linspace", "logspace"})


def _elements(func: Any, args: tuple, kwargs: dict) -> float:
    """How many elements ``arange``/``range``/``linspace``/``logspace`` make (nan where unknown)."""
    if func._overloadpacket.__name__ in ("linspace", "logspace"):
        steps = args[2] if len(args) > 2 else kwargs.get("steps")
        return float(steps) if type(steps) is int else math.nan
    nums = [a for a in args if type(a) in (int, float, bool)]
    if len(nums) != len(args) or not 1 <= len(nums) <= 3:
        return math.nan
    start, end, step = (0, nums[0], 1) if len(nums) == 1 else (nums[0], nums[1], nums[2] if len(nums) > 2 else 1)
    try:
        return abs((end - start) / step) + 1
    except (ZeroDivisionError, OverflowError):
        return math.nan


def _sizes_at_hints(args: tuple) -> tuple:
    """``arange``/``range``/``linspace``/``logspace`` arguments with each symbolic number at its hint
    (``arange(x.shape[0], dtype=complex64)`` under ``satfuse.jit``): what these kernels refuse is a
    dtype, for every size (``arange_cpu`` has no complex or bool kernel; int8 wraps, never raises), so
    a probe at the hint answers for them all. A number without a hint stays (no probe)."""
    return tuple(hint(a) if isinstance(a, (torch.SymInt, torch.SymFloat)) and a.node.has_hint() else a
                 for a in args)


def _fewer(func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``arange``/``range``/``linspace``/``logspace`` arguments making more than 64 elements, cut
    to make one or two from the same start (its conversion to the dtype, and the dtype's own
    refusal, ``arange(1000, dtype=torch.bool)``, are checked; the end's conversion is not)."""
    if not _elements(func, args, kwargs) > 64:
        return args, kwargs
    if func._overloadpacket.__name__ in ("linspace", "logspace"):
        return _with(args, kwargs, 2 if len(args) > 2 else "steps", 2)
    if len(args) == 1:
        return (1,), kwargs
    step = args[2] if len(args) > 2 else 1
    return (args[0], args[0] + step, *args[2:]), kwargs


def _value_args(func: Any) -> frozenset[int | str]:
    hit = _VALUE_ARGS.get(func)
    if hit is None:
        args = func._schema.arguments
        hit = frozenset() if func._overloadpacket.__name__ in _SIZE_SCALARS else frozenset(
            k for i, a in enumerate(args) if str(a.type) in ("number", "Optional[number]") for k in (i, a.name))
        _VALUE_ARGS[func] = hit
    return hit


def _probe_kind(func: Any) -> str:
    """"skip" (never probed), "factory" (no tensor argument: probed when its numbers are tiny),
    "pointwise" (always probed), "sized" (its sizes are one ``size`` list, and it takes a Scalar:
    probed at that list's emptiness, ``full``, ``new_full``) or "op" (probed unless an int
    argument that is no Scalar value is large)."""
    if getattr(func, "namespace", None) != "aten" or func.is_view:
        return "skip"
    if {torch.Tag.nondeterministic_seeded, torch.Tag.dynamic_output_shape, torch.Tag.inplace_view} & set(func.tags):
        return "skip"
    schema = func._schema
    lists = [a for a in schema.arguments if "List[int]" in str(a.type) or "SymInt[]" in str(a.type)]
    if lists and [a.name for a in lists] == ["size"] and any(str(a.type) == "number" for a in schema.arguments):
        return "sized"
    if not any("Tensor" in str(a.type) for a in schema.arguments):
        return "skip" if lists else "factory"
    if any(a.name not in ("dim", "dims") for a in lists):
        return "skip"
    return "pointwise" if torch.Tag.pointwise in func.tags else "op"


def _shrunk(func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A "sized" op's arguments with each extent of its ``size`` list cut to at most 2 (a symbolic
    one: 2, see ``_probe_key``): the probe allocates almost nothing, and sees an empty or
    one-element result as eager does."""
    pos = next(i for i, a in enumerate(func._schema.arguments) if a.name == "size")

    def small(size: Any) -> list[int]:
        out = []
        for n in size:
            v = n if isinstance(n, int) else n.node.maybe_as_int()
            out.append(2 if v is None or v > 1 else v)
        return out

    if len(args) > pos:
        return (*args[:pos], small(args[pos]), *args[pos + 1:]), kwargs
    if "size" in kwargs:
        return args, {**kwargs, "size": small(kwargs["size"])}
    return args, kwargs


#: :func:`probe_kernel`'s answer to a call of positional, non-list arguments, by its probe key (which
#: decides it there): the refusal's type and message, or (None, the dtype). Capture asks per op; the
#: answer is one dict lookup where the skip test, the Scalar hints and the probe cost a dozen calls.
_VERDICTS: dict[tuple, tuple[type | None, Any]] = {}


def probe_kernel(func: Any, args: tuple, kwargs: dict) -> torch.dtype | None:
    """Raise what eager's kernel raises for ``func``'s dtypes and Scalar arguments alone (see the
    module doc); call it where the program's own ops are seen, under capture's modes. Returns the
    dtype of the real kernel's (single tensor) result, when the probe ran: where a meta kernel
    promotes otherwise (``pow(bool, False)`` is bool in eager, int64 on meta), eager's dtype wins.
    A symbolic int Scalar (``satfuse.jit``'s int arguments) is probed at its hint, and the plan
    guards it to the range of values the kernel accepts (``fill_(k)`` of int32: ``k < 2**31``)."""
    if kwargs or any(isinstance(a, (list, tuple, dict)) for a in args):
        return _probe_kernel(func, args, kwargs)
    key = _probe_key(func, list(args))  # None where a Scalar is symbolic (a guard to add)
    if key is None:
        return _probe_kernel(func, args, kwargs)
    hit = _VERDICTS.get(key)
    if hit is None:
        try:
            hit = (None, _probe_kernel(func, args, kwargs))
        except EagerRefusal as e:
            hit = (type(e), str(e))
        _VERDICTS[key] = hit
    if hit[0] is not None:
        raise hit[0](hit[1])
    return hit[1]


def _probe_kernel(func: Any, args: tuple, kwargs: dict) -> torch.dtype | None:
    if getattr(func, "namespace", None) == "aten" and func._overloadpacket.__name__ in _SIZE_SCALARS:
        args = _sizes_at_hints(args)
    if _probe_skips(func, args, kwargs):
        return None
    if _PROBE_KIND[func] == "sized":
        args, kwargs = _shrunk(func, args, kwargs)
    elif _PROBE_KIND[func] == "factory" and func._overloadpacket.__name__ in _SIZE_SCALARS:
        args, kwargs = _fewer(func, args, kwargs)
    args, kwargs, symbolic = _hinted(func, args, kwargs)
    err, dtype = _probe(func, args, kwargs)
    if err is not None:
        cls = EagerDtypeRefusal if isinstance(err, NotImplementedError) else EagerRefusal
        raise cls(str(err).strip().splitlines()[0])
    for where, sym in symbolic:
        _guard_accepted(func, args, kwargs, where, sym)
    return dtype


def _hinted(func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict, list[tuple[int | str, Any]]]:
    """``args``/``kwargs`` with each symbolic int at a Scalar value position replaced by its hint,
    and those (position or name, symbol)."""
    values = _value_args(func)
    if not values:
        return args, kwargs, []
    symbolic = [(i, a) for i, a in enumerate(args) if i in values and isinstance(a, torch.SymInt)]
    symbolic += [(k, a) for k, a in kwargs.items() if k in values and isinstance(a, torch.SymInt)]
    symbolic = [(w, a) for w, a in symbolic if a.node.has_hint()]
    for w, a in symbolic:
        args, kwargs = _with(args, kwargs, w, hint(a))
    return args, kwargs, symbolic


def _with(args: tuple, kwargs: dict, where: int | str, value: Any) -> tuple[tuple, dict]:
    if isinstance(where, int):
        return (*args[:where], value, *args[where + 1:]), kwargs
    return args, {**kwargs, where: value}


def _guard_accepted(func: Any, args: tuple, kwargs: dict, where: int | str, sym: torch.SymInt) -> None:
    """Guard ``sym`` (whose hint the kernel accepted at ``where``) to the values the kernel accepts:
    eager's conversion of a Scalar refuses the values past the target dtype's range, so each side
    is one bound, found by bisection between the hint and int64's end (probes on tiny tensors)."""
    import sympy

    start = args[where] if isinstance(where, int) else kwargs[where]
    env, expr = sym.node.shape_env, sym.node.expr

    def refuses(v: int) -> bool:
        return _probe(func, *_with(args, kwargs, where, v), keep=False)[0] is not None

    for far, rel in ((2**63 - 1, sympy.Le), (-2**63, sympy.Ge)):
        if not refuses(far):
            continue
        ok, bad = start, far
        while abs(bad - ok) > 1:
            mid = (ok + bad) // 2
            if refuses(mid):
                bad = mid
            else:
                ok = mid
        env.evaluate_expr(rel(expr, ok))


def _probe(func: Any, args: tuple, kwargs: dict, keep: bool = True) -> tuple[BaseException | None, torch.dtype | None]:
    """The real kernel's refusal and result dtype on tiny tensors like the arguments (cached per
    probe key unless ``keep`` is False: a bisection's values); (None, None) where an argument is
    symbolic."""
    return _probe_run(func, args, kwargs, keep)[:2]


def eager_result_dtypes(func: Any, args: tuple, kwargs: dict) -> tuple[torch.dtype | None, ...] | None:
    """The dtype of each result eager's kernel returns for ``func`` on arguments like these (a
    non-tensor result: None), from the probe; None where it does not run (``_probe_skips``, a
    factory or sized op, a symbolic argument) or the kernel raised on the probe's tiny tensors.

    Where a meta kernel types a result otherwise, a plan running eager's kernel gets eager's
    dtype: ``_native_batch_norm_legit_functional`` of bf16 running statistics returns them bf16
    in eager, f32 on meta (torch 2.13's decomposition promotes them with its f32 statistics)."""
    if getattr(func, "namespace", None) != "aten" or _probe_skips(func, args, kwargs) or \
            _PROBE_KIND[func] not in ("op", "pointwise"):
        return None
    err, _, dtypes = _probe_run(func, args, kwargs, True)
    return dtypes if err is None and dtypes else None


def _probe_run(func: Any, args: tuple, kwargs: dict, keep: bool) -> tuple[BaseException | None, torch.dtype | None,
                                                                         tuple[torch.dtype | None, ...] | None]:
    from torch.utils._python_dispatch import _disable_current_modes

    if not kwargs and not any(isinstance(a, (list, tuple, dict)) for a in args):
        leaves, spec = list(args), None  # the common case, without pytree's cost (capture calls this per op)
    else:
        leaves, spec = pytree.tree_flatten((args, kwargs))
    key = _probe_key(func, leaves)
    if key is None:
        return None, None, ()
    hit = _PROBED.get(key)
    if hit is None:
        if spec is None:
            leaves, spec = pytree.tree_flatten((args, kwargs))
        err: BaseException | None = None
        dtype: torch.dtype | None = None
        dtypes: tuple[torch.dtype | None, ...] | None = ()
        with _disable_current_modes(), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the program's own warnings come from its trace, once
            real = [torch.zeros(k[3], dtype=k[1], device=k[2]) if isinstance(k, tuple) and k and k[0] == "T" else x
                    for x, k in zip(leaves, key[1:])]
            p_args, p_kwargs = pytree.tree_unflatten(real, spec)
            try:
                out = func(*p_args, **p_kwargs)
                dtype = out.dtype if isinstance(out, torch.Tensor) else None
                dtypes = tuple(o.dtype if isinstance(o, torch.Tensor) else None
                               for o in (out if isinstance(out, (list, tuple)) else (out,)))
            except Exception as e:  # noqa: BLE001 - only the value-independent refusals count
                err = e if _KERNEL_REFUSAL.search(str(e)) else None
                dtypes = None  # no answer: the kernel failed on the probe's tiny tensors
        hit = (err, dtype, dtypes)
        if keep:
            _PROBED[key] = hit
    return hit
