"""aten op -> IR ops. One small converter per aten op (or overload packet).

A converter receives a ``Builder`` and the node's arguments already converted
(Vars for tensors, ints / sympy exprs for sizes) and returns the Var(s) of the
result. Unknown ops never reach here: capture keeps them as opaque fallbacks.
"""

from __future__ import annotations

from typing import Any, Callable

import sympy
import torch

from ..ir import DTYPE_NAMES, DTYPES, FLOAT_DTYPES, INT_DTYPES, ScalarType, TensorType, Var, as_extent, dtype_name
from ..vocab import BINARY, EAGER_COPIES, EAGER_MADE, EAGER_STRIDES, UNARY, prod_extents
from . import compat
from .eager_checks import eager_result_dtypes
from .eager_paths import eager_copies, eager_strides
from .inplace import INPLACE_OF, functional_variant

aten = torch.ops.aten
ATEN_MAP: dict[Any, Callable] = {}


class NotInVocab(Exception):
    """A converter met a form the vocabulary cannot express (e.g. a complex scalar
    operand): capture drops what the converter emitted and runs the aten op as a fallback."""


def computes_complex(n: torch.fx.Node) -> bool:
    """Does node ``n`` read or make a complex tensor? The vocabulary has no complex arithmetic
    (a cast to a real dtype would drop the imaginary part): such ops run as torch calls."""
    args = [a.meta.get("val") for a in n.all_input_nodes]
    return _has_complex(n.meta.get("val")) or _has_complex(args)


def _has_complex(v: Any) -> bool:
    """A complex tensor in ``v`` or its lists (a module function: a recursive closure is a reference
    cycle per call, left to the collector: 9.5k of them for a 10k-op capture)."""
    if isinstance(v, (list, tuple)):
        return any(_has_complex(x) for x in v)
    return isinstance(v, torch.Tensor) and v.dtype.is_complex


class Builder:
    """What a converter may do: emit IR ops, alias or view."""

    def __init__(self, conv: Any, node: torch.fx.Node):
        self.c = conv
        self.n = node
        val = node.meta.get("val")
        self.val = val
        self.out_type = conv.type_of(val) if isinstance(val, torch.Tensor) else None

    def __call__(self, op: str, *args: Any, hint: str | None = None) -> Var:
        return self.c.emit(op, tuple(args), self.n, hint=hint or self.n.name.rstrip("_0123456789") or op)

    def reads_index(self, idx: Any) -> Any:
        """Record which eager op bounds-checks ``idx``: the op this node was decomposed from
        (``meta['original_aten']``, e.g. nll_loss for cross-entropy's gather), else its own.
        A plan whose rewrites drop that check raises what this op raises (lowering/obligations.py)."""
        if isinstance(idx, Var):
            src = self.n.meta.get("original_aten") or self.n.target
            src = getattr(src, "_overloadpacket", src)
            self.c.trace.index_ops.setdefault(idx.name, f"aten.{getattr(src, '__name__', src)}")
            self.c.trace.index_ranks.setdefault(idx.name, len(self.c.trace.nodes))
        return idx

    def result(self, v: Var) -> Var:
        """Cast ``v`` to the dtype torch says the node produces (type promotion safety net)."""
        if self.out_type is not None and isinstance(v.type, TensorType) and v.type.dtype != self.out_type.dtype:
            return self("cast", v, self.out_type.dtype)
        return v

    def opaque(self, tgt: Any) -> Any:
        args = tuple(self.c.value(a) for a in self.n.args)
        kwargs = {k: self.c.value(v) for k, v in self.n.kwargs.items()}
        probe = False  # the plan runs this very op: its results' dtypes are eager's kernel's
        if hasattr(tgt, "_opname"):
            name = f"{tgt.namespace}.{tgt._opname}.{tgt._overloadname}"
            inplace = _inplace_of(self.n, tgt)
            probe = inplace is None
            if inplace is not None:  # eager's in-place kernel made this value: the plan runs it (on a copy)
                name = f"{inplace.namespace}.{inplace._opname}.{inplace._overloadname}"
        elif isinstance(tgt, torch._ops.HigherOrderOperator):  # auto_functionalized_v2: a custom op that writes
            name = f"higher_order.{tgt.name()}"
        else:
            raise ValueError(f"node {self.n.name}: {tgt!r} is not a torch op satfuse can call")
        val = self.val
        made = tuple(i for i, a in enumerate(args) if isinstance(a, Var) and isinstance(a.type, TensorType)
                     and id(a) not in self.c.eager_own)
        if made:  # vocab.EAGER_MADE: never the caller's tensor as it is, whatever a rewrite puts there
            kwargs[EAGER_MADE] = made
        layouts = eager_strides(self.n, self.c.sym)  # every result form: multi-output kernels read layouts too
        if layouts:
            kwargs[EAGER_STRIDES] = layouts
            copies = tuple(i for i in eager_copies(self.n) if i < len(layouts) and layouts[i] is not None)
            if copies:
                kwargs[EAGER_COPIES] = copies
        if isinstance(val, (list, tuple)):
            # a backward op leaves out the gradients its ``output_mask`` does not ask for (None)
            types = [ScalarType("none") if v is None else self.c.type_of(v) for v in val]
            eager = self._eager_types(tgt, types, probe)
            outs = self.c.emit_multi(name, args, kwargs, eager, self.n.name)
            return [self._as_traced(o, t) for o, t in zip(outs, types)]
        if not isinstance(val, torch.Tensor):
            raise ValueError(f"opaque op {name} returns {type(val).__name__}, which satfuse cannot carry")
        typ = self.c.type_of(val)
        [eager] = self._eager_types(tgt, [typ], probe)
        return self._as_traced(self.c.emit(name, args, self.n, kwargs=kwargs, hint=self.n.name, out_type=eager), typ)

    def _eager_types(self, tgt: Any, types: list, probe: bool) -> list:
        """``types`` (the fake kernel's, which the traced program computed with) with each dtype
        eager's kernel returns otherwise (``eager_checks.eager_result_dtypes``): the plan runs
        eager's kernel, so its results must be typed as eager's kernel makes them."""
        if not probe:
            return types
        # fx's own walk of a node's arguments: pytree's took 45 us a call (3,100 opaque ops in a 10k-op model)
        vals = torch.fx.node.map_arg((self.n.args, self.n.kwargs), lambda a: a.meta.get("val"))
        got = eager_result_dtypes(tgt, *vals)
        if got is None or len(got) != len(types):
            return types
        return [t.with_(dtype=dtype_name(d)) if isinstance(t, TensorType) and d is not None and d in DTYPE_NAMES
                and dtype_name(d) != t.dtype else t for t, d in zip(types, got)]

    def _as_traced(self, v: Any, typ: Any) -> Any:
        """``v`` (eager's result) cast to ``typ``'s dtype where the traced program had another."""
        if isinstance(typ, TensorType) and isinstance(v, Var) and isinstance(v.type, TensorType) and v.type.dtype != typ.dtype:
            return self.c.emit("cast", (v, typ.dtype), self.n, hint=self.n.name, out_type=typ)
        return v

    # The graph is functional (capture/functional.py), so a view, an alias and a clone are all
    # just values here; converters still say which one eager returns, for the reader.
    def alias(self, argpos: int = 0) -> Any:
        """The result is an argument itself (detach, alias)."""
        return self.c.value(self.n.args[argpos])

    def view(self, v: Var) -> Any:
        """The result is a view of an argument: in a functional graph, its value ``v``."""
        return v

    def fresh(self, v: Var) -> Any:
        """The result is a new tensor holding ``v`` (clone)."""
        return v


def _inplace_of(n: torch.fx.Node, tgt: Any) -> Any:
    """The program's in-place op whose value ``n`` (a call of ``tgt``) computes (``inplace.INPLACE_OF``),
    where its result is laid out as the written operand: eager's in-place kernel writes it there,
    and its loop takes another path than the out-of-place kernel's on a strided target (a complex
    multiply that overflows: nan+infj against -inf+infj). None elsewhere."""
    op = (n.meta.get("custom") or {}).get(INPLACE_OF)
    if op is None or functional_variant(op) is not tgt or not n.args or not isinstance(n.args[0], torch.fx.Node):
        return None
    val, target = n.meta.get("val"), n.args[0].meta.get("val")
    if not (isinstance(val, torch.Tensor) and isinstance(target, torch.Tensor) and val.dtype == target.dtype
            and val.shape == target.shape and val.device == target.device):
        return None
    return op


def reg(*targets: Any) -> Callable:
    def deco(fn: Callable) -> Callable:
        for t in targets:
            ATEN_MAP[t] = fn
        return fn

    return deco


def _rank(x: Any) -> int:
    return x.type.rank if isinstance(x, Var) and isinstance(x.type, TensorType) else 0


def _norm_dims(dims: Any, rank: int) -> tuple[int, ...]:
    if rank == 0:  # a 0-d tensor accepts dim 0 / -1 and has nothing to reduce
        return ()
    if dims is None or dims == () or dims == []:
        return tuple(range(rank))
    if isinstance(dims, int):
        dims = (dims,)
    return tuple(sorted(d % max(rank, 1) for d in dims))


# ---------------------------------------------------------------- elementwise

def _unary(name: str) -> Callable:
    def conv(b: Builder, x: Any, *rest: Any, **kw: Any) -> Var:
        return b.result(b(name, x))

    return conv


for _n in UNARY:
    pk = getattr(aten, _n, None)
    if pk is not None:
        reg(pk)(_unary(_n))


_HALVES = ("f16", "bf16")
_FLOATS = ("f16", "bf16", "f32", "f64")


def _cpu_result_in(b: Builder, dtypes: tuple[str, ...]) -> bool:
    return b.out_type is not None and b.out_type.device == "cpu" and b.out_type.dtype in dtypes


def _eager_kernel_on_cpu(conv: Callable, dtypes: tuple[str, ...], why: str) -> Callable:
    """``conv``, except where the node's result is one of ``dtypes`` on the CPU: there the op runs as
    eager's own kernel (``why`` says what no vocabulary form reproduces); elsewhere (CUDA's f32
    opmath, other dtypes) the vocabulary's op is eager's."""

    def guarded(b: Builder, *args: Any, **kw: Any) -> Var:
        if _cpu_result_in(b, dtypes):
            raise NotInVocab(why)
        return conv(b, *args, **kw)

    return guarded


def _half_kernel(name: str, why: str) -> Callable:
    """``name`` of f16/bf16 on the CPU: eager's kernel, whose answer is not f32's rounded."""
    return _eager_kernel_on_cpu(_unary(name), _HALVES,
                                f"f16/bf16 {name} on the CPU: eager's kernel is not f32's rounded ({why})")


# found by bench/eager_exactness.py (every f16/bf16 value, four layouts):
# erf flushes tiny values to zero and is an ulp off f32's on 10-44 % of values, on either path;
# sin(+-300) in f16 is 0.99951..., where f32's sin rounds to the midpoint and then to 1.0
reg(aten.erf, *([aten.special_erf] if hasattr(aten, "special_erf") else []))(
    _half_kernel("erf", "tiny values flushed to zero, an ulp off elsewhere"))
reg(aten.sin)(_half_kernel("sin", "an ulp off f32's where f32's value is a midpoint"))
# rsqrt rounds once on eager's vector path and twice (sqrt, then its reciprocal) on its scalar path:
# which element takes which depends on the layout of the caller's tensors, the sizes and the threads
reg(aten.rsqrt)(_half_kernel("rsqrt", "rounded once or twice by position"))
# f16 sqrt is rounded once (15 of the 65,536 values are an ulp below f32's sqrt rounded: 2**-6 - 2**-17
# for 2**-12 - 2**-23); bf16's equals f32's rounded on every value
reg(aten.sqrt)(_eager_kernel_on_cpu(_unary("sqrt"), ("f16",), "f16 sqrt on the CPU: eager's kernel rounds once"))


def _times_alpha(b: Builder, x: Any, y: Any, alpha: Any) -> Any:
    """``alpha * y`` as torch's ``add``/``sub`` compute it: alpha is first cast to the result
    dtype (on bools ``alpha=-1`` is True, so ``add(a, b, alpha=-1)`` is ``a or b``), and the
    product is taken in the dtype both operands promote to, not in ``y``'s (``i64 - 2 * i32``
    does not wrap at 2**31)."""
    if b.out_type is not None and b.out_type.dtype == "b8":
        alpha = bool(alpha)
    if alpha is True or (not isinstance(alpha, bool) and alpha == 1):
        return y
    if all(isinstance(v, Var) and isinstance(v.type, TensorType) for v in (x, y)):
        metas = [torch.empty((1,) * min(_rank(v), 1), dtype=DTYPES[v.type.dtype], device="meta") for v in (x, y)]
        calc = dtype_name(torch.result_type(*metas))
        if calc != y.type.dtype:
            y = b("cast", y, calc)
    elif isinstance(y, Var) and isinstance(y.type, TensorType) and b.out_type is not None and \
            b.out_type.dtype != y.type.dtype:
        y = b("cast", y, b.out_type.dtype)  # a number x promotes too: add(0.5, i32, alpha=2**31) is float
    if not isinstance(y, Var) and type(y) in (int, bool) and type(alpha) in (int, bool) and b.out_type is not None:
        return wrap_int(int(y) * int(alpha), b.out_type.dtype)  # an integer product, wrapping as eager's
    return b("mul", y, alpha)


def _fused_alpha(b: Builder, x: Any, y: Any, alpha: Any) -> bool:
    """``add``/``sub`` of a floating tensor result with a number ``alpha``: eager's kernels
    compute ``x + alpha * y`` as one fused multiply-add (``_fma_form``), ``y`` a tensor or a
    number; multiply then add is an ulp off on about 30 % of elements, which an ill-conditioned
    op after it (``sin`` of 1e29) turns into a different value, and a number's product with alpha
    is not a float32 constant (``add(f64, 2.0, alpha=0.1)``)."""
    tensor = any(isinstance(v, Var) and isinstance(v.type, TensorType) for v in (x, y))
    return (type(alpha) in (int, float) and alpha != 1 and tensor and not isinstance(x, complex)
            and not isinstance(y, complex) and b.out_type is not None and b.out_type.dtype in FLOAT_DTYPES)


def _fma_form(b: Builder) -> bool:
    """Does the result have a once-rounded float32 form (``_fused``) of eager's fused kernels
    (``addcmul``, ``lerp``, ``add`` with alpha)? Float32 results do, and f16/bf16 ones on CUDA
    (float32 op math). On the CPU eager's f16/bf16 kernels round otherwise (neither once nor
    per op: 10-40 % of ``lerp``/``addcmul`` values differ from both), and a float64 result has
    no wider type to round once in: those run as eager's own kernel."""
    out = b.out_type
    return out is not None and (out.dtype == "f32" or out.dtype in ("f16", "bf16") and out.device != "cpu")


def _opmath(b: Builder, v: Any) -> Any:
    """``v`` as eager's kernel reads it for a floating result: a tensor cast to the result dtype
    (TensorIterator's common dtype), then to its op-math type (float32 for f16, bf16 and f32);
    a number cast to the op-math type directly."""
    out = b.out_type.dtype
    math = "f64" if out == "f64" else "f32"
    if not isinstance(v, Var):
        return torch.tensor(v, dtype=DTYPES[math]).item()
    if v.type.dtype != out:
        v = b("cast", v, out)
    return v if out == math else b("cast", v, math)


def _fused(b: Builder, x: Any, y: Any, z: Any) -> Var:
    """``x * y + z`` of op-math (float32) operands (``_opmath``), rounded once as eager's CPU
    kernels' ``fmadd`` does, then to the result dtype: multiplied and added in float64, where
    the product of two float32 values is exact (a second rounding differs from the fma only
    where the float64 sum lands on a float32 tie)."""
    def wide(v: Any) -> Any:
        return b("cast", v, "f64") if isinstance(v, Var) else v

    r = b("cast", b("add", b("mul", wide(x), wide(y)), wide(z)), "f32")
    return r if b.out_type.dtype == "f32" else b("cast", r, b.out_type.dtype)


def _int_division_by(b: Builder, y: Any) -> None:
    """Integer division, remainder and fmod run as torch calls where the divisor may be 0:
    eager raises ZeroDivisionError there (a kernel would return garbage), and the vocabulary
    has no integer quotient (a float quotient loses digits above 2**24)."""
    out = b.out_type
    if out is not None and out.dtype in INT_DTYPES and (isinstance(y, Var) or y == 0):
        raise NotInVocab("integer division by a tensor (or by 0)")


def wrap_int(value: Any, dtype: str) -> Any:
    """A Python int as eager converts a number operand to an integer ``dtype``: the number
    becomes a 64-bit tensor and is cast, so it wraps around (``int32 + 2**31`` adds
    ``-2**31``; ``int64 + 2**63`` adds ``-2**63``). Anything else is returned as it is."""
    if type(value) is not int or dtype not in INT_DTYPES:
        return value
    info = torch.iinfo(DTYPES[dtype])
    span = info.max - info.min + 1
    return (value - info.min) % span + info.min


#: binary ops whose CPU kernels take a Python number operand in the tensor's dtype (TensorIterator's
#: common dtype: ``f16 + 0.1`` adds 0.0999755859375, ``f16 == 2**31`` compares with inf); ``mul`` and
#: ``div`` keep the number exact (their kernels read the original scalar in float32)
_SCALAR_IN_DTYPE = frozenset({"add", "sub", "pow", "remainder", "fmod", "eq", "ne", "lt", "le", "gt", "ge"})


def round_float(value: Any, dtype: str | None) -> Any:
    """A Python number as a reduced-precision kernel sees it: rounded to ``dtype`` (f16, bf16;
    ``2**31`` becomes inf in f16)."""
    if type(value) not in (int, float) or dtype not in ("f16", "bf16"):
        return value
    return torch.tensor(float(value), dtype=DTYPES[dtype]).item()


def _compute_dtype(x: Any, y: Any) -> str | None:
    """The dtype torch computes ``op(x, y)`` in when one operand is a Python number (a number
    promotes weakly), or None where both or neither are tensors."""
    t = x if isinstance(x, Var) and isinstance(x.type, TensorType) else y
    if not (isinstance(t, Var) and isinstance(t.type, TensorType)) or all(isinstance(v, Var) for v in (x, y)):
        return None
    return dtype_name(torch.result_type(torch.empty((), dtype=DTYPES[t.type.dtype], device="meta"), 1))


def _scalar_operand_in_op_math(b: Builder, y: Any) -> bool:
    """Eager's CPU ``mul``/``div`` of an f16/bf16 result by a single-element tensor of another
    dtype (a 0-d f64 or int64, a Dynamo float) reads that operand's own value as f32, not
    rounded to the result dtype (TensorIterator's ``original_scalar_value``)."""
    return (isinstance(y, Var) and isinstance(y.type, TensorType) and _one_element(y)
            and b.out_type.dtype in ("f16", "bf16") and y.type.dtype != b.out_type.dtype
            and b.out_type.device == "cpu")


def _root_exponent(b: Builder, x: Any, y: Any) -> bool:
    """``pow(x, 0.5)`` or ``pow(x, -0.5)`` of a float tensor of the result's dtype."""
    return (not isinstance(y, (Var, bool)) and isinstance(y, (int, float)) and y in (0.5, -0.5)
            and isinstance(x, Var) and isinstance(x.type, TensorType) and b.out_type is not None
            and x.type.dtype == b.out_type.dtype and b.out_type.dtype in FLOAT_DTYPES)


def _binary(name: str) -> Callable:
    def conv(b: Builder, x: Any, y: Any, *rest: Any, alpha: Any = 1, **kw: Any) -> Var:
        if rest:
            alpha = rest[0]
        calc = _compute_dtype(x, y)
        if name == "div" and calc is not None and b.out_type is not None and b.out_type.dtype in FLOAT_DTYPES:
            calc = b.out_type.dtype  # true division of integers is in floats: u8 / -5 is -51, not u8 / 251
        if calc is not None:
            x, y = wrap_int(x, calc), wrap_int(y, calc)
            if name in _SCALAR_IN_DTYPE:
                x, y = round_float(x, calc), round_float(y, calc)
        if name in ("remainder", "fmod"):
            _int_division_by(b, y)
        if name == "pow" and _root_exponent(b, x, y):
            # eager's pow by 0.5 and -0.5 is its sqrt and rsqrt kernel (CPU f32/f64, CUDA): sqrt(-inf) is
            # nan and sqrt(-0.0) is -0.0 where C's pow gives inf and +0.0 (nvFuser's pow is C's); on the
            # CPU, f16 takes C's pow in float and bf16's rsqrt rounds otherwise: eager's own kernel
            if b.out_type.device == "cpu" and b.out_type.dtype in _HALVES:
                raise NotInVocab(f"{b.out_type.dtype} pow by {y} on the CPU (eager's kernel: C's pow in float)")
            return b.result(b("sqrt" if y == 0.5 else "rsqrt", x))
        if name == "pow" and not isinstance(y, Var) and y in (3, -2) and isinstance(x, Var) \
                and b.out_type is not None and b.out_type.dtype == "bf16" and b.out_type.device == "cpu":
            # eager's CPU bf16 pow by 3 and -2 rounds the square first: (x*x)*x and 1/(x*x), each
            # op rounded to bf16 (f32 pow rounded once differs on 7-13 % of values); f16 rounds once
            sq = b("mul", x, x)
            return b.result(b("mul", sq, x) if y == 3 else b("div", 1.0, sq))
        if name in ("mul", "div") and _scalar_operand_in_op_math(b, y):
            return b.result(b("cast", b(name, b("cast", x, "f32"), b("cast", y, "f32")), b.out_type.dtype))
        if name in ("add", "sub") and _fused_alpha(b, x, y, alpha):
            if not _fma_form(b):
                raise NotInVocab(f"a {b.out_type.dtype} add with alpha")
            return b.result(_fused(b, _opmath(b, y), _opmath(b, -alpha if name == "sub" else alpha), _opmath(b, x)))
        if name == "sub" and type(alpha) in (int, float) and alpha != 1 and isinstance(y, Var):
            # eager's sub is add with alpha negated: -0.0 - 0 * y is -0.0 + (-0.0), not +0.0
            return b.result(b("add", x, _times_alpha(b, x, y, -alpha)))
        return b.result(b(name, x, _times_alpha(b, x, y, alpha)))

    return conv


for _n in BINARY:
    pk = getattr(aten, _n, None)
    if pk is not None:
        reg(pk)(_binary(_n))
reg(aten.true_divide)(_binary("div"))


# Eager's CPU maximum/minimum (and clamp with tensor bounds) of floats answer a tie of +0 and -0 by
# path: the vector path returns the second operand, the scalar path (a row's tail, a short or
# strided row) the first, so the sign of a zero depends on the element's position and the operands'
# layouts (atan2 and 1 / x show it: optimize fuzz 9995 #2994). There they run as eager's own kernel,
# reading operands laid out as eager's.
_TIES = "of floats on the CPU (a tie of +0 and -0 is answered by eager's path)"


reg(aten.maximum, aten.max.other)(_eager_kernel_on_cpu(_binary("maximum"), _FLOATS, f"maximum {_TIES}"))
reg(aten.minimum, aten.min.other)(_eager_kernel_on_cpu(_binary("minimum"), _FLOATS, f"minimum {_TIES}"))


def _one_element(v: Any) -> bool:
    """A number (a scalar input too), or a tensor whose every extent is 1 (0-d included)."""
    if not (isinstance(v, Var) and isinstance(v.type, TensorType)):
        return True
    return all(isinstance(e, int) and e == 1 for e in v.type.shape)


@reg(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(b: Builder, x: Any, y: Any, rounding_mode: Any = None) -> Var:
    """``div(x, y, rounding_mode=...)`` with eager's semantics. Integer results run as torch
    calls (integer arithmetic, eager's ZeroDivisionError). Float results compute in the dtype
    eager's kernel uses (below); "floor" is eager's ``div_floor_floating``: the quotient of
    ``x - fmod(x, y)`` corrected by one where the remainder's sign differs from y's, rounded to
    the nearest integer, ``copysign(0, x/y)`` for a zero quotient and the IEEE quotient for
    ``y == 0`` (so ``inf // 2`` is nan)."""
    out = b.out_type.dtype
    if rounding_mode is None:
        return _binary("div")(b, x, y)
    if out in INT_DTYPES or out == "b8":
        raise NotInVocab("integer division with a rounding mode")
    if out not in FLOAT_DTYPES:
        raise NotInVocab(f"division with a rounding mode on {out}")
    # eager's CPU kernel: f16/bf16 tensor by tensor rounds each step to the dtype; by a single
    # element (a Python number, a 0-d or all-ones tensor: TensorIterator's ``is_scalar``) it
    # computes in f32 (op math) from the divisor's own value and rounds once
    calc = "f32" if out in ("f16", "bf16") and b.out_type.device == "cpu" and _one_element(y) else out
    x, y = (b("cast", v, calc) if isinstance(v, Var) and v.type.dtype != calc else v for v in (x, y))
    if not isinstance(x, Var):  # a number dividend (div(inf, t)): eager wraps it in a 0-d tensor
        x = b("full", (), x, calc)
    q = b("div", x, y)
    if rounding_mode == "trunc":
        r = b("where", b("lt", q, 0), b("ceil", q), b("floor", q))
    else:
        if not isinstance(y, Var) and y == 0:
            return b.result(q)
        mod = b("fmod", x, y)
        d = b("div", b("sub", x, mod), y)
        if isinstance(y, Var):
            off = b("logical_and", b("ne", mod, 0), b("ne", b("lt", y, 0), b("lt", mod, 0)))
        else:  # the divisor's sign is known
            off = b("gt", mod, 0) if y < 0 else b("lt", mod, 0)
        d = b("where", off, b("sub", d, 1), d)
        f = b("floor", d)
        f = b("where", b("gt", b("sub", d, f), 0.5), b("add", f, 1), f)
        zero = b("where", b("lt", q, 0), -0.0, b("where", b("gt", q, 0), 0.0, q))  # copysign(0, q)
        r = b("where", b("eq", d, 0), zero, f)
        if isinstance(y, Var):
            r = b("where", b("eq", y, 0), q, r)
    return r if r.type.dtype == out else b("cast", r, out)


@reg(aten.floor_divide)
def _floor_divide(b: Builder, x: Any, y: Any) -> Var:
    return _div_mode(b, x, y, "floor")


@reg("prims.fma.default")  # by name: torch._inductor.inductor_prims registers it (Dynamo imports it)
def _fma(b: Builder, x: Any, y: Any, z: Any) -> Var:
    """Dynamo's spellings of three in-place ops (``enable_dynamo_decompositions``), each computed
    as eager's kernel computes the op the program wrote:

    - ``t.addcmul_(t1, t2, value=v)`` is ``fma(mul(t1, t2), v, t)``: eager's ``fma(v * t1, t2, t)``;
    - ``t.addcdiv_(t1, t2, value=v)`` is ``fma(div(t1, t2), v, t)``: eager's ``t + v * t1 / t2``,
      each op rounded in op math (as torch's decomposition of ``addcdiv`` computes it);
    - ``t.add_(o, alpha=a)`` with a tensor ``a`` is ``fma(o, a, t)``: eager's ``fma(a, o, t)``.
    """
    src = b.n.args[0]
    made_by = getattr(src, "target", None) if isinstance(src, torch.fx.Node) else None
    number = not isinstance(y, Var)
    if number and made_by is aten.div.Tensor and all(isinstance(a, torch.fx.Node) for a in src.args[:2]):
        t1, t2 = (b.c.value(a) for a in src.args[:2])
        if b.out_type.dtype not in FLOAT_DTYPES:
            return b.c.emit("aten.addcdiv.default", (z, t1, t2), b.n, kwargs={"value": y}, hint="addcdiv",
                            out_type=b.out_type)
        r = b("add", _opmath(b, z), b("div", b("mul", _opmath(b, t1), _opmath(b, y)), _opmath(b, t2)))
        return b.result(r)
    if number and made_by is aten.mul.Tensor and all(isinstance(a, torch.fx.Node) for a in src.args[:2]):
        t1, t2 = (b.c.value(a) for a in src.args[:2])
        out = _fused_addcmul(b, z, t1, t2, y)
        if out is None:
            out = b.c.emit("aten.addcmul.default", (z, t1, t2), b.n, kwargs={"value": y}, hint="addcmul",
                           out_type=b.out_type)
        return out
    if b.out_type.dtype not in FLOAT_DTYPES or b.out_type.dtype == "f64":  # addcmul's kernel: fma(1 * x, y, z)
        return b.c.emit("aten.addcmul.default", (z, x, y), b.n, hint="fma", out_type=b.out_type)
    # add_ with a tensor alpha. For f16/bf16 on the CPU eager's add reads the alpha's .item(), which
    # no aten op here takes as a tensor: the fused form is its vectorized path's (its strided path
    # rounds alpha * o first)
    return b.result(_fused(b, _opmath(b, x), _opmath(b, y), _opmath(b, z)))


def _fused_addcmul(b: Builder, x: Any, t1: Any, t2: Any, value: Any) -> Var | None:
    """``x + value * t1 * t2`` as eager's kernel computes it: ``fma(value * t1, t2, x)`` in op
    math (``value * t1`` rounded first); None where the result has no such form (``_fma_form``:
    float64, f16/bf16 on the CPU, integers) or ``value`` is not a number."""
    if not _fma_form(b) or type(value) not in (int, float):
        return None
    p = _opmath(b, t1)
    if value != 1:
        p = b("mul", p, _opmath(b, value))
    return b.result(_fused(b, p, _opmath(b, t2), _opmath(b, x)))


@reg(aten.addcmul)
def _addcmul(b: Builder, x: Any, t1: Any, t2: Any, value: Any = 1) -> Var:
    out = _fused_addcmul(b, x, t1, t2, value)
    if out is None:
        raise NotInVocab("addcmul without a float32 op-math form")  # eager's own kernel
    return out


@reg(aten.lerp)
def _lerp(b: Builder, x: Any, end: Any, weight: Any) -> Var:
    """Eager's CPU ``lerp``: ``fma(w, end - x, x)`` where ``|w| < 0.5``, else
    ``fma(w - 1, end - x, end)`` (exact at ``w == 1``), in op math. Results without that form
    (``_fma_form``) run as eager's own kernel."""
    if not _fma_form(b) or type(weight) is bool:
        raise NotInVocab("lerp without a float32 op-math form")
    x, end, w = _opmath(b, x), _opmath(b, end), _opmath(b, weight)
    diff = b("sub", end, x)
    if not isinstance(w, Var):
        if abs(w) < 0.5:
            return b.result(_fused(b, w, diff, x))
        return b.result(_fused(b, torch.tensor(w - 1, dtype=torch.float32).item(), diff, end))
    small = b("lt", b("abs", w), 0.5)
    return b.result(b("where", small, _fused(b, w, diff, x), _fused(b, b("sub", w, 1.0), diff, end)))


@reg(aten.rsub)
def _rsub(b: Builder, x: Any, y: Any, alpha: Any = 1) -> Var:
    """``y - alpha * x``: eager's ``sub`` with the operands swapped (a number ``y`` is taken in
    the tensor's dtype as ``sub`` takes it: ``-1.7 - t`` in f16 subtracts from -1.7002)."""
    return _binary("sub")(b, y, x, alpha=alpha)


@reg(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(b: Builder, c: Any, x: Any, y: Any) -> Var:
    return b.result(b("where", c, x, y))


@reg(aten.clamp, aten.clamp_min, aten.clamp_max)
def _clamp(b: Builder, x: Any, lo: Any = None, hi: Any = None) -> Var:
    if b.n.target._overloadpacket is aten.clamp_max:
        lo, hi = None, lo
    out = b.out_type.dtype if b.out_type is not None else None
    if isinstance(x, Var) and out is not None and x.type.dtype != out:
        # eager clamps in the result dtype: clamp(i32, 2**31, 0.5) is float32, its bounds too
        x = b("cast", x, out)
    for k, (bound, op, cmp) in enumerate(((lo, "maximum", "lt"), (hi, "minimum", "gt"))):
        if bound is None:
            continue
        if isinstance(bound, Var):
            if _cpu_result_in(b, _FLOATS):
                raise NotInVocab(f"clamp by a tensor {_TIES}")
            x = b(op, x, bound)
        elif isinstance(bound, float) and bound != bound:  # eager: a nan bound makes every element nan
            if compat.nan_bound_propagates(b.n.target._overloadpacket.__name__, (lo, hi)[1 - k] is not None):
                x = b("add", x, bound)
        else:
            x = b("where", b(cmp, x, bound), bound, x)
    return b.result(x)


@reg(aten._to_copy, aten.to)
def _to_copy(b: Builder, x: Any, *args: Any, dtype: Any = None, **kw: Any) -> Any:
    if b.out_type is None or b.out_type.device != x.type.device:
        return b.opaque(b.n.target)
    if b.out_type.dtype == x.type.dtype:
        return b.fresh(x)
    return b("cast", x, b.out_type.dtype)


@reg(torch.ops.prims.convert_element_type)
def _convert(b: Builder, x: Any, dtype: Any) -> Var:
    return b("cast", x, dtype_name(dtype))


@reg(aten.detach, aten.alias)
def _alias(b: Builder, x: Any, *a: Any) -> Any:
    return b.alias(0)


@reg(aten.clone, aten.lift_fresh_copy, aten.contiguous)
def _clone(b: Builder, x: Any, *a: Any, **kw: Any) -> Any:
    return b.fresh(x)


# ---------------------------------------------------------------- reductions

def _red(name: str) -> Callable:
    def conv(b: Builder, x: Any, dims: Any = None, keepdim: Any = False, *rest: Any, dtype: Any = None, **kw: Any) -> Var:
        if isinstance(dims, bool):  # sum(x, keepdim) style overloads are not used, but be strict
            dims = None
        if dtype is not None or (rest and rest[0] is not None):
            x = b("cast", x, dtype_name(dtype or rest[0]))
        if _rank(x) == 0:  # sum and prod promote (bool/int -> int64); amax/amin keep the dtype
            return b.result(b(name, x, (), 0)) if name in ("sum", "prod") else b.fresh(x)
        return b.result(b(name, x, _norm_dims(dims, _rank(x)), int(bool(keepdim))))

    return conv


reg(aten.sum.dim_IntList, aten.sum.default)(_red("sum"))
reg(aten.amax)(_red("amax"))
reg(aten.amin)(_red("amin"))


@reg(aten.prod.dim_int, aten.prod.default)
def _prod(b: Builder, x: Any, dim: Any = None, keepdim: Any = False, dtype: Any = None) -> Var:
    """An f16/bf16 product on the CPU runs as eager's kernel: it accumulates in the dtype itself
    (rounding after each multiply, in its own order), where the vocabulary's accumulates in f32."""
    if _cpu_result_in(b, _HALVES):
        raise NotInVocab("an f16/bf16 product on the CPU")
    return _red("prod")(b, x, None if dim is None else (dim,), keepdim, dtype=dtype)


@reg(aten.max.default, aten.min.default)
def _maxall(b: Builder, x: Any) -> Var:
    name = "amax" if b.n.target._overloadpacket is aten.max else "amin"
    return b(name, x, tuple(range(_rank(x))), 0)


@reg(aten.mean.dim, aten.mean.default)
def _mean(b: Builder, x: Any, dims: Any = None, keepdim: Any = False, dtype: Any = None) -> Var:
    """The sum divided by the count. An f16/bf16 mean divides the float32 sum and rounds once, as
    eager's kernel does (a sum rounded to the dtype, then divided, was an ulp off on a quarter of
    rows)."""
    if dtype is not None:
        x = b("cast", x, dtype_name(dtype))
    dims = _norm_dims(dims, _rank(x))
    half = x.type.dtype in ("f16", "bf16")
    s = b("sum", b("cast", x, "f32") if half else x, dims, int(bool(keepdim)))
    n = prod_extents(tuple(x.type.shape[d] for d in dims))
    m = b("div", s, n)
    return b.result(b("cast", m, x.type.dtype) if half else m)


@reg(aten.var_mean.correction, aten.var.correction)
def _var_mean(b: Builder, x: Any, dims: Any = None, correction: Any = None, keepdim: Any = False) -> Any:
    """Two-pass variance (and mean). f16/bf16 compute in float32 and round each result once, as
    eager's kernel does."""
    half = x.type.dtype if x.type.dtype in ("f16", "bf16") else None
    if half:
        x = b("cast", x, "f32")
    dims = _norm_dims(dims, _rank(x))
    n = prod_extents(tuple(x.type.shape[d] for d in dims))
    corr = 1 if correction is None else correction
    mean = b("div", b("sum", x, dims, 1), n)
    d = b("sub", x, mean)
    var = b("div", b("sum", b("mul", d, d), dims, int(bool(keepdim))), as_extent(sympy.Max(0, sympy.sympify(n) - corr)) if not isinstance(n, int) else max(0, n - corr))
    if half:
        var, mean = b("cast", var, half), b("cast", mean, half)
    if b.n.target._overloadpacket is aten.var:
        return var
    if not keepdim:
        mean = b("squeeze", mean, dims)
    return (var, mean)


# ---------------------------------------------------------------- shapes

def _bid_unsqueeze(b: Builder, x: Any, dim: int) -> Var:
    r = _rank(x) + 1
    dim %= r
    shape = tuple(x.type.shape[:dim]) + (1,) + tuple(x.type.shape[dim:])
    bd = tuple(i if i < dim else i + 1 for i in range(_rank(x)))
    return b("broadcast_in_dim", x, shape, bd)


@reg(aten.unsqueeze)
def _unsqueeze(b: Builder, x: Any, dim: int) -> Any:
    return b.view(_bid_unsqueeze(b, x, dim))


@reg(aten.view, aten._unsafe_view, aten.reshape, aten.view.default)
def _view(b: Builder, x: Any, shape: Any) -> Any:
    if isinstance(shape, torch.dtype):  # view.dtype: the same memory read as another dtype (a bitcast)
        if b.out_type is not None and b.out_type.dtype == x.type.dtype:
            return b.view(x)
        raise NotInVocab("view as another dtype")
    out = b.out_type.shape
    if tuple(out) == tuple(x.type.shape):
        return b.view(x) if b.n.target._overloadpacket is not aten._unsafe_view else b.fresh(x)
    v = b("reshape", x, tuple(out))
    return b.fresh(v) if b.n.target._overloadpacket is aten._unsafe_view else b.view(v)


@reg(aten.expand)
def _expand(b: Builder, x: Any, sizes: Any, implicit: bool = False) -> Any:
    out = b.out_type.shape
    if tuple(out) == tuple(x.type.shape):
        return b.view(x)
    off = len(out) - _rank(x)
    return b.view(b("broadcast_in_dim", x, tuple(out), tuple(range(off, len(out)))))


@reg(aten.permute)
def _permute(b: Builder, x: Any, dims: Any) -> Any:
    dims = tuple(d % _rank(x) for d in dims)
    return b.view(x if dims == tuple(range(_rank(x))) else b("permute", x, dims))


@reg(aten.t, aten.transpose.int, aten.numpy_T)
def _transpose(b: Builder, x: Any, d0: int = 0, d1: int = 1) -> Any:
    r = _rank(x)
    if r < 2:
        return b.view(x)
    perm = list(range(r))
    d0, d1 = d0 % r, d1 % r
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return b.view(b("permute", x, tuple(perm)))


@reg(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def _squeeze(b: Builder, x: Any, dims: Any = None) -> Any:
    """A dim of extent 1 is dropped. A symbolic extent is kept, which holds only while it is not 1:
    that is a guard of the plan (the ShapeEnv's own may read as a stride test's and be dropped:
    ``x[:, 2:-1].squeeze(1)``'s ``s1 - 3 != 1`` was made by the slice's contiguity check, and
    squeeze's question answered from the ShapeEnv's cache)."""
    r = _rank(x)
    cand = tuple(range(r)) if dims is None else (dims,) if isinstance(dims, int) else tuple(dims)
    cand = tuple(d % r for d in cand) if r else ()
    for d in cand:
        e = x.type.shape[d]
        if isinstance(e, sympy.Expr) and not e.is_number:
            b.c.syms.assumed.append(sympy.Ne(e, 1))
    dims = tuple(d for d in cand if x.type.shape[d] == 1)
    return b.view(b("squeeze", x, dims) if dims else x)


def _slice_args(x: Any, dim: int, start: Any, length: Any, step: Any) -> tuple:
    r = _rank(x)
    starts = tuple(start if i == dim else 0 for i in range(r))
    # one past the last element taken: start + (length - 1) * step + 1, or start when nothing is
    # (a symbolic length keeps the first form: the extent obligation end >= start rejects 0)
    if type(start) is int and type(length) is int and type(step) is int:  # static: no sympy (capture asks per op)
        end = start + (length - 1) * step + 1 if length != 0 else start
    else:
        end = sympy.sympify(start) + (sympy.sympify(length) - 1) * step + 1 if length != 0 else sympy.sympify(start)
    ends = tuple(as_extent(end) if i == dim else x.type.shape[i] for i in range(r))
    strides = tuple(step if i == dim else 1 for i in range(r))
    return starts, ends, strides


@reg(aten.slice.Tensor)
def _slice(b: Builder, x: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Any:
    r = _rank(x)
    dim %= r
    size = x.type.shape[dim]
    length = b.out_type.shape[dim]
    start = _start(x, dim, start)
    if start == 0 and length == size and step == 1:
        return b.view(x)
    return b.view(b("slice", x, *_slice_args(x, dim, start, length, step)))


@reg(aten.select.int)
def _select(b: Builder, x: Any, dim: int, index: Any) -> Any:
    r = _rank(x)
    dim %= r
    if isinstance(index, int) and index < 0:
        index = as_extent(sympy.sympify(x.type.shape[dim]) + index)
    s = b("slice", x, *_slice_args(x, dim, index, 1, 1))
    return b.view(b("squeeze", s, (dim,)))


@reg(aten.split_with_sizes, aten.split.Tensor)
def _split(b: Builder, x: Any, sizes: Any, dim: int = 0) -> Any:
    dim %= _rank(x)
    outs, start = [], 0
    for t in b.val:
        length = b.c.sym(t.shape[dim])
        s = b("slice", x, *_slice_args(x, dim, start, length, 1), hint="split")
        outs.append(b.view(s))
        start = as_extent(sympy.sympify(start) + sympy.sympify(length))
    return outs


@reg(aten.cat)
def _cat(b: Builder, ts: Any, dim: int = 0) -> Var:
    ts = tuple(t for t in ts if not (_rank(t) == 1 and t.type.shape[0] == 0))
    if not ts:  # every operand is a legacy empty 1-D tensor: the result is one too
        return _full(b, 0)
    # the dropped empty operands still take part in type promotion (cat([f32[0], i64[1]]) is f32)
    ts = tuple(t if t.type.dtype == b.out_type.dtype else b("cast", t, b.out_type.dtype) for t in ts)
    if len(ts) == 1:
        return b.fresh(ts[0])
    return b("cat", ts, dim % _rank(ts[0]))


def representable(value: Any, dtype: str) -> bool:
    """Does torch accept ``value`` as a fill of ``dtype`` (``F.pad(int32, value=inf)`` and
    ``torch.full(..., 300, dtype=uint8)`` raise in eager)? Where it does not, the op runs as
    a torch call so the plan raises eager's error when it runs, not a generated constant."""
    if isinstance(value, (Var, sympy.Basic)):
        return True
    try:
        torch.full((), value, dtype=DTYPES[dtype])
    except (RuntimeError, OverflowError, TypeError):
        return False
    return True


@reg(aten.constant_pad_nd)
def _pad(b: Builder, x: Any, pad: Any, value: Any = 0) -> Var:
    if not representable(value, x.type.dtype):
        raise NotInVocab(f"pad value {value!r} does not fit {x.type.dtype}")
    return b("pad", x, tuple(pad), value)


# ---------------------------------------------------------------- creation

def _device_of(b: Builder) -> str:
    return b.out_type.device


def _full(b: Builder, value: Any) -> Var:
    if not representable(value, b.out_type.dtype):
        raise NotInVocab(f"fill value {value!r} does not fit {b.out_type.dtype}")
    return b.c.emit("full", (tuple(b.out_type.shape), value, b.out_type.dtype), b.n, hint=b.n.name)


@reg(aten.full.default, aten.full_like, aten.new_full)
def _full_c(b: Builder, *args: Any, **kw: Any) -> Var:
    tgt = b.n.target._overloadpacket
    value = args[1] if tgt in (aten.full, aten.full_like, aten.new_full) else 0
    if tgt is aten.new_full:
        value = args[2]
    return _full(b, value)


@reg(aten.zeros, aten.zeros_like, aten.new_zeros, aten.empty, aten.empty_like, aten.new_empty, aten.empty.memory_format,
     aten.empty_strided, aten.new_empty_strided)
def _zeros(b: Builder, *args: Any, **kw: Any) -> Var:
    return _full(b, 0)


@reg(aten.ones, aten.ones_like, aten.new_ones)
def _ones(b: Builder, *args: Any, **kw: Any) -> Var:
    return _full(b, 1)


@reg(aten.scalar_tensor)
def _scalar_tensor(b: Builder, value: Any, **kw: Any) -> Var:
    return _full(b, value)


@reg(aten.fill.Scalar, aten.zero)
def _fill(b: Builder, x: Any, value: Any = 0) -> Any:
    return _full(b, value)


@reg(aten.fill.Tensor)
def _fill_tensor(b: Builder, x: Any, value: Any) -> Any:
    """``x.fill_(t)`` with a 0-d tensor ``t`` (``y[::3] = -100``): t cast and broadcast to x."""
    return b("copy_", x, value)


@reg(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(b: Builder, *args: Any, **kw: Any) -> Var:
    nums = [a for a in args if not isinstance(a, (torch.dtype, torch.device, torch.layout))]
    start, step = 0, 1
    if b.n.target is aten.arange.start_step:
        start, step = nums[0], (nums[2] if len(nums) > 2 else 1)
    elif b.n.target is aten.arange.start:
        start = nums[0]
    n = b.out_type.shape[0]
    dt = b.out_type.dtype
    if dt not in FLOAT_DTYPES:  # torch casts start and step to the integer dtype first (2.1 -> 2)
        start, step = (int(v) if isinstance(v, float) else v for v in (start, step))
    it = b.c.emit("iota", (n, "i64" if dt not in FLOAT_DTYPES else dt, 0, 1), b.n, hint="iota")
    if step != 1:
        it = b("mul", it, step)
    if start != 0:
        it = b("add", it, start)
    return b.result(it)


# ---------------------------------------------------------------- indexing

@reg(aten.gather)
def _gather(b: Builder, x: Any, dim: int, idx: Any, sparse_grad: bool = False) -> Var:
    if _rank(x) == 0:  # 0-d source: gather from its 1-element view, shaped like the index
        g = b("gather", b("reshape", x, (1,)), 0, b("reshape", idx, (prod_extents(idx.type.shape),)))
        return b("reshape", g, tuple(b.out_type.shape))
    return b("gather", x, dim % max(_rank(x), 1), b.reads_index(idx))


@reg(aten.index_select)
def _index_select(b: Builder, x: Any, dim: int, idx: Any) -> Var:
    if _rank(x) == 0:  # a 0-d source (idx holds one 0): select from its 1-element view, back to 0-d
        rows = b("index_select", b("reshape", x, (1,)), 0, b.reads_index(idx))
        return b("reshape", rows, ())
    return b("index_select", x, dim % max(_rank(x), 1), b.reads_index(idx))


@reg(aten.embedding)
def _embedding(b: Builder, w: Any, idx: Any, *rest: Any) -> Var:
    flat = idx if _rank(idx) == 1 else b("reshape", idx, (prod_extents(idx.type.shape),))
    rows = b("index_select", w, 0, flat)
    return rows if _rank(idx) == 1 else b("reshape", rows, tuple(b.out_type.shape))


@reg(aten.index_copy)
def _index_copy(b: Builder, x: Any, dim: int, idx: Any, src: Any) -> Any:
    return b("index_copy", x, dim % max(_rank(x), 1), b.reads_index(idx), src)


@reg(aten.scatter.src, aten.scatter.value)
def _scatter(b: Builder, x: Any, dim: int, idx: Any, src: Any) -> Any:
    return b("scatter", x, dim % max(_rank(x), 1), b.reads_index(idx), src)


# ---------------------------------------------------------------- writes, functionalized
# Functionalization turns a write through a view into a scatter of the new view value into
# its base, an ``out=`` or in-place op into its functional form, and ``dst.copy_(src)`` on an
# intermediate into ``copy(dst, src)``.

@reg(aten.copy)
def _copy(b: Builder, dst: Any, src: Any, non_blocking: bool = False) -> Any:
    if isinstance(src, Var) and isinstance(src.type, TensorType) and src.type.device != dst.type.device:
        raise NotInVocab("copy across devices")
    return b("copy_", dst, wrap_int(src, dst.type.dtype))


def _start(x: Any, dim: int, start: Any) -> Any:
    """A slice start as torch normalizes it: None -> 0, negative -> from the end, clamped."""
    size = x.type.shape[dim]
    start = 0 if start is None else start
    if isinstance(start, int) and start < 0:
        start = as_extent(sympy.Max(0, sympy.sympify(size) + start))
    if isinstance(start, int) and isinstance(size, int):
        start = min(start, size)
    return start


@reg(aten.slice_scatter)
def _slice_scatter(b: Builder, x: Any, src: Any, dim: int = 0, start: Any = None, end: Any = None,
                   step: int = 1) -> Any:
    dim %= _rank(x)
    start = _start(x, dim, start)
    return b("slice_scatter", x, src, *_slice_args(x, dim, start, src.type.shape[dim], step))


@reg(aten.select_scatter)
def _select_scatter(b: Builder, x: Any, src: Any, dim: int, index: Any) -> Any:
    dim %= _rank(x)
    if isinstance(index, int) and index < 0:
        index = as_extent(sympy.sympify(x.type.shape[dim]) + index)
    return b("select_scatter", x, src, dim, index)


@reg(aten.diagonal_scatter)
def _diagonal_scatter(b: Builder, x: Any, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    return b("diagonal_scatter", x, src, offset, dim1 % _rank(x), dim2 % _rank(x))


@reg(aten.index_put)
def _index_put(b: Builder, x: Any, indices: Any, values: Any, accumulate: bool = False) -> Any:
    if any(not isinstance(i, Var) for i in indices):
        raise NotInVocab("index_put with a None (full-slice) index")
    return b("index_put", x, tuple(b.reads_index(i) for i in indices), values, int(bool(accumulate)))
