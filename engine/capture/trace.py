"""Capture: torch program -> Trace (the entry point).

The function is traced on fake tensors (never real ones: a traced in-place op must not
touch the caller's data) under a ShapeEnv we own (a static capture without one, unless the
program needs a symbol), functionalized (``functional.py``: views
and in-place ops become functional ops plus one write-back per mutated input, with eager's
aliasing metadata), with a small decomposition table of our own choosing; the graph is then
converted op by op (``convert.py``), and the ShapeEnv's assumptions become guards
(``symbols.py``).
"""

from __future__ import annotations

import functools
import inspect
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import sympy
import torch
import torch.utils._pytree as pytree
from torch._decomp import get_decompositions
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

from .. import log
from ..ir import IRError, Namespace, Trace
from ..log import quiet_torch_tracing
from .compat import compiling
from .convert import ITEM_REFUSAL, CaptureError, Converter
from .eager_checks import EagerRefusal, with_eager_checks
from .fake_inputs import static_fakes
from .foreach import foreach_decompositions
from .functional import (
    TRACING,
    EagerError,
    FunctionalGraph,
    MetadataMutationError,
    OrderDependentWriteError,
    OverlappingInputWriteError,
    UntracedEffectError,
    op_leaves,
    trace_functional,
)
from .generators import GeneratorWatch
from .record import NotRecordable, recordable_inputs, trace_recorded
from .symbols import range_guards, track_evaluations

aten = torch.ops.aten


class TracingError(CaptureError):
    """torch itself raised while tracing the program on fake copies of the inputs (with static
    shapes, eager would raise on the same inputs)."""

#: torch decompositions we accept; everything else is converted by aten_map or kept opaque
DECOMPOSE = [
    aten._log_softmax, aten._softmax, aten._log_softmax_backward_data, aten._softmax_backward_data,
    aten.nll_loss_forward, aten.nll_loss_backward, aten.nll_loss2d_forward, aten.nll_loss2d_backward,
    aten.native_layer_norm, aten.native_layer_norm_backward, aten.addcdiv,
    aten.addcdiv_, aten.mse_loss, aten.mse_loss_backward, aten.silu, aten.silu_backward,
    aten.hardtanh, aten.leaky_relu, aten.threshold_backward, aten.logsumexp,
    aten.sigmoid_backward, aten.tanh_backward, aten.take_along_dim, aten.std, aten.var, aten.norm,
    aten.linalg_vector_norm, aten.softplus, aten.elu, aten.binary_cross_entropy_with_logits,
    aten.embedding_dense_backward, aten.masked_fill, aten.dot, aten.xlogy, aten.logit,
    aten.native_dropout_backward,
]


def decomposition_table() -> dict:
    """capture's decompositions (a fresh dict: callers may add to it)."""
    return dict(_decompositions())


@functools.cache
def _decompositions() -> dict:
    # built once: listing the foreach overloads reads every aten schema (~20 ms a capture)
    real_only = {op: _not_on_complex(fn) for op, fn in get_decompositions(DECOMPOSE).items()}
    real_only[aten.native_layer_norm.default] = _not_on_complex(_layer_norm)
    for op, fn in get_decompositions([aten.gelu.default, aten.gelu_backward.default]).items():
        real_only[op] = _not_on_complex(_off_the_cpu(fn))  # eager's erf form differs from the kernel's
    for op in get_decompositions(HALF_KERNELS):
        real_only[op] = _off_the_cpu(real_only[op], half_only=True)
    for op in (aten.logical_and.default, aten.logical_or.default, aten.logical_xor.default):
        real_only[op] = _logical_of_truth(op)
    return with_eager_checks({**real_only, **foreach_decompositions()})


def _logical_of_truth(op: Any) -> Callable:
    """``logical_and/or/xor`` of a non-bool operand as the op of ``x != 0`` in the operands' common
    dtype (eager's: a 0-d int64 -2**63 beside an int32 tensor is 0; nan is true): torch's meta
    kernel lays the result of a non-bool operand out row-major where eager's follows a transposed
    operand, so a later ``flatten`` would view where eager copies (jit fuzz 9962 #2553; of the
    vocabulary's binary ops over every dtype pair, only these differ). Bool operands keep the op."""

    def truth(a: Any, b: Any) -> Any:
        if not any(isinstance(x, torch.Tensor) and x.dtype != torch.bool for x in (a, b)):
            return NotImplemented
        common = torch.result_type(a, b)
        return op(*(torch.ne(x.to(common), 0) if isinstance(x, torch.Tensor) else x for x in (a, b)))

    return truth


#: decompositions whose f16/bf16 answer on the CPU is not eager's kernel's: the kernel computes
#: in float32 and rounds once, the decomposition rounds after each op (softmax along a short dim
#: and logit were off by up to a third of the value, log_softmax and xlogy by ulps)
HALF_KERNELS = [
    aten._softmax, aten._log_softmax, aten._softmax_backward_data, aten._log_softmax_backward_data,
    aten.logsumexp, aten.xlogy, aten.logit, aten.silu, aten.silu_backward, aten.softplus,
    aten.nll_loss_forward, aten.nll_loss2d_forward,
]


def _off_the_cpu(decomp: Callable, half_only: bool = False) -> Callable:
    """``decomp`` for the nvFuser target only (CUDA and meta captures): a CPU capture keeps eager's
    own kernel, whose answer the decomposition does not reproduce everywhere (gelu's erf form
    cancels to 0 where eager gives -1e-6: optimize fuzz 9911 #3002); with ``half_only``, only
    where a tensor operand is f16/bf16 (``HALF_KERNELS``)."""

    @functools.wraps(decomp)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if tensors and tensors[0].device.type == "cpu" and (
                not half_only or any(a.dtype in (torch.float16, torch.bfloat16) for a in tensors)):
            return NotImplemented
        return decomp(*args, **kwargs)

    return wrapped


def _layer_norm(x: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """native_layer_norm for the nvFuser target (CUDA and meta captures), following eager's kernel
    where a decomposition can:

    - the mean is corrected once (``m0 + mean(x - m0)``): eager's Welford mean of a constant row
      is that value exactly, while ``sum / n`` can be an ulp off, which ``rstd`` (up to
      ``1/sqrt(eps)``) turns into a visible nonzero where eager has 0;
    - without a bias eager still adds its zero bias (``(x - mean) * rstd * 1 + 0``), which makes
      a -0.0 result +0.0 (``atan2`` of it shows the sign);
    - f16/bf16 without weight and bias: eager's reduced-precision kernel writes each element as
      one fused multiply-add in float, ``fma(x, rstd, -mean * rstd)``; the product of two floats is
      exact in float64, so the sum there, rounded to float, is the fma's result (a size-1 row then
      gives the rounding error of ``mean * rstd``, as eager does, not 0).

    f16/bf16 compute in f32. On the CPU the plan runs eager's own kernel instead (this decomposition
    returns NotImplemented there): a float32 row holding 1e30 overflows eager's float statistics,
    which give nan for short rows and 0 for long ones by a rule of its scalar and vectorized paths
    that no decomposition follows, and a program that casts to float32 itself has no float64 run to
    excuse a finite plan (optimize fuzz 9981 #72, jit 9991 #5191). CPU plans are the reference
    executor's, never the fast path; CUDA and meta captures (the nvFuser target, bench/) decompose,
    and ``tests/test_semantics.py`` checks this decomposition against eager on the CPU directly."""
    if not x.is_floating_point():  # eager's kernel refuses the dtype: its own error, from a tiny run
        from torch.utils._python_dispatch import _disable_current_modes

        with _disable_current_modes():
            torch.native_layer_norm(torch.zeros(1, dtype=x.dtype), [1], None, None, eps)
    if x.device.type == "cpu":
        return NotImplemented  # eager's own kernel (see above)
    return layer_norm_math(x, normalized_shape, weight, bias, eps)


def layer_norm_math(x: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
    """The arithmetic of :func:`_layer_norm`, on any device (the CPU tests check it against eager)."""
    k = len(normalized_shape)
    torch._check(k >= 1 and x.dim() >= k and tuple(x.shape[x.dim() - k:]) == tuple(normalized_shape),
                 lambda: f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                         f"[*, {', '.join(map(str, normalized_shape))}], but got input of size {list(x.shape)}")
    dims = list(range(x.dim() - k, x.dim()))
    x = x.contiguous()  # eager's kernel writes a contiguous result (an overlap check after reads its layout)
    acc = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    a = x.to(acc)
    n = math.prod(normalized_shape)
    m0 = a.sum(dims, keepdim=True) / n
    mean = m0 + (a - m0).sum(dims, keepdim=True) / n
    d = a - mean
    rstd = torch.rsqrt((d * d).sum(dims, keepdim=True) / n + eps)
    if x.dtype in (torch.float16, torch.bfloat16) and weight is None and bias is None:
        out = (a.double() * rstd.double() + (0.0 - mean * rstd).double()).float()  # 0 - m*r: +0.0 as eager's
    else:
        out = d * rstd
        if weight is not None:
            out = out * weight
        out = out + bias if bias is not None else out + 0.0
    return out.to(x.dtype), mean, rstd


def _not_on_complex(decomp: Callable) -> Callable:
    """``decomp`` for real operands only: on complex ones (tensors, or a number such as
    ``masked_fill(bool_t, 1j)``, which eager converts and torch's reference refuses) the op is traced as it is (make_fx keeps
    an op whose decomposition returns NotImplemented) and runs as eager's own kernel. A
    decomposition changes complex inf arithmetic: ``addcmul`` becomes ``add(self, v * t1 * t2)``,
    and eager's complex ``add`` multiplies by its alpha ``1+0j`` (``inf * 0``: nan) where eager's
    ``addcmul`` kernel adds directly. Complex ops are torch fallbacks anyway, so nothing fuses less."""

    def on_real(*args: Any, **kwargs: Any) -> Any:
        if any(isinstance(t, complex) or isinstance(t, torch.Tensor) and t.is_complex()
               for t in op_leaves((args, kwargs))):
            return NotImplemented
        return decomp(*args, **kwargs)

    return on_real


@dataclass
class Captured:
    """A Trace plus what the API layer needs to call it like the original function."""

    trace: Trace
    in_spec: Any
    out_spec: Any
    leaves: list[Any]  # example leaves (tensors and numbers); non-input leaves are kept as constants
    input_leaf_positions: list[int]
    seconds: float = 0.0
    #: "recorder" (``record.py``: a static program that writes only tensors alone in their memory) or
    #: "functionalization" (``functional.py``: every other program)
    tracer: str = "functionalization"
    symbol_hints: dict[str, int] = field(default_factory=dict)
    #: indices into the trace's inputs of Python float arguments traced as 0-d float64 tensors
    #: (``capture(..., symbolic_floats=True)``): a call passes ``torch.tensor(x, dtype=float64)`` there
    float_inputs: tuple[int, ...] = ()

    def drop_examples(self) -> None:
        """Forget the example arguments once the plan is built: a call reads only the constant
        leaves, and a plan must not keep its caller's (maybe large) example tensors alive."""
        inputs = set(self.input_leaf_positions)
        self.leaves = [None if i in inputs else x for i, x in enumerate(self.leaves)]


def capture(fn: Callable, *example_inputs: Any, dynamic: bool | Sequence[Any] = False, name: str | None = None,
            call_kwargs: dict[str, Any] | None = None, symbolic_floats: bool = False,
            **example_kwargs: Any) -> Captured:
    """Trace ``fn(*example_inputs, **call_kwargs, **example_kwargs)`` on fake copies of the inputs under a
    ShapeEnv of our own (``call_kwargs`` carries keywords named like this function's own parameters).

    ``dynamic``: False bakes every extent and scalar as a guarded constant; True makes
    every tensor dim and int scalar symbolic; a list of argument positions (and keyword
    names) makes only those arguments dynamic. Bools are always guarded constants; floats too
    unless ``symbolic_floats``: then a dynamic finite float is a plan input, as Dynamo's
    unspecialized floats are (a 0-d float64 tensor whose ``.item()`` the program sees as a
    SymFloat; torch's ``tensorify_python_scalars`` turns the float math into tensor math), and
    one plan serves every value. A float the program branches on, or that torch cannot
    tensorify (an extent, an op without a tensor form), is captured again as a guarded constant.
    Int scalars are *unspecified* symbols (as Dynamo makes them: no 0/1
    specialization, no assumed sign); tensor dims follow torch's rules (size 0/1 is a
    constant, other dynamic dims are symbols assumed ``>= 2``). Every assumption the
    ShapeEnv made about a symbol's range becomes an explicit guard of the trace:
    ``x.squeeze(0)`` on ``[s0, 4]`` is decided with no guard because ``s0 >= 2`` is
    assumed, so a plan without the range guard would be silently wrong at size 1.
    """
    kwargs = {**(call_kwargs or {}), **example_kwargs}
    _strided_only(fn, example_inputs, kwargs)
    with TRACING, _generators_untouched(fn):
        if not symbolic_floats:
            return _capture(fn, example_inputs, kwargs, dynamic, name, None)
        try:
            return _capture(fn, example_inputs, kwargs, dynamic, name, set())
        except _SpecializeFloats as again:
            log.capture.info("floats %s are guarded constants: %s", sorted(again.positions), again.why)
            return _capture(fn, example_inputs, kwargs, dynamic, name, again.positions)


def _strided_only(fn: Callable, example_inputs: tuple, kwargs: dict) -> None:
    """Plans take strided tensors: a sparse (COO, CSR, CSC, BSR, BSC), mkldnn or nested argument is
    refused up front, by name (``engine/unsupported.py``), where tracing it failed on the first
    stride or storage it asked for."""
    leaves = pytree.tree_leaves((example_inputs, kwargs))
    odd = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and (x.layout != torch.strided or x.is_nested)]
    if not odd:
        return
    x = leaves[odd[0]]
    name = _leaf_names(fn, example_inputs, leaves, odd)[0]
    kind = "a nested tensor" if x.is_nested else f"a {str(x.layout).replace('torch.', '')} tensor"
    raise CaptureError(f"capture of {getattr(fn, '__name__', fn)!r}: argument {name} is {kind}: satfuse plans take "
                       "strided (dense) tensors only")


#: the refusal of a program that sets the random number generators' state (engine/unsupported.py)
RNG_REFUSAL = ("the program sets torch's random number generator state itself (torch.manual_seed, "
               "torch.set_rng_state, ...): a plan replays tensor ops, not that, so its random ops would draw from "
               "wherever the caller's generator stands; torch.compile(backend=\"satfuse\") takes such programs "
               "(Dynamo runs the seeding itself)")


@contextmanager
def _generators_untouched(fn: Callable) -> Iterator[None]:
    """Capture leaves torch's default generators as it found them, and refuses a program that sets
    their state (``generators.py``): its random ops drew from the caller's generator in the plan
    where eager draws from the program's seed, and capture reseeded the caller's generator."""
    watch = GeneratorWatch()
    with watch:
        yield
    if watch.set_by_program:
        raise CaptureError(f"capture of {getattr(fn, '__name__', fn)!r}: {RNG_REFUSAL}")


class _SpecializeFloats(Exception):
    """Some float arguments traced symbolically cannot stay symbolic: capture again with them fixed."""

    def __init__(self, positions: set[int], why: str) -> None:
        super().__init__(why)
        self.positions, self.why = positions, why


def _capture(fn: Callable, example_inputs: tuple, example_kwargs: dict, dynamic: bool | Sequence[Any],
             name: str | None, fixed_floats: set[int] | None) -> Captured:
    """``fixed_floats``: leaf positions of dynamic floats that are guarded constants all the same
    (None: every float is).

    A static capture (no dynamic argument) first traces without a ShapeEnv: every extent is an
    int, and symbolic-shape bookkeeping costs every op of the trace. Only a program that needs a
    symbol fails there (``.item()``, ``nonzero``: data-dependent extents); every failure is traced
    again with a ShapeEnv, which decides it as before (the same verdicts and messages). A symbolic
    capture tries the recorder first; where it stops (or the program raised under it), the
    program is traced functionalized on a fresh ShapeEnv, without the guards the stopped run made."""
    t0 = time.perf_counter()
    if not _dynamic_leaves(example_inputs, example_kwargs, dynamic):
        try:
            return _traced(fn, example_inputs, example_kwargs, dynamic, name, fixed_floats, None, t0)
        except Exception as e:  # noqa: BLE001 - decided by the capture with a ShapeEnv below
            log.capture.debug("capture without a ShapeEnv failed (%s: %s): tracing again with one", type(e).__name__,
                              e)
    else:
        try:  # the recorder on symbolic extents: where it stops, it left guards on its ShapeEnv
            return _traced(fn, example_inputs, example_kwargs, dynamic, name, fixed_floats, ShapeEnv(duck_shape=False),
                           t0, recorder_only=True)
        except _NotRecorded as e:
            log.capture.debug("symbolic capture by the recorder stopped (%s): tracing functionalized", e)
    return _traced(fn, example_inputs, example_kwargs, dynamic, name, fixed_floats, ShapeEnv(duck_shape=False), t0,
                   recorder=False)


class _NotRecorded(Exception):
    """A symbolic capture the recorder did not take: traced again, functionalized, on a fresh ShapeEnv."""


def _traced(fn: Callable, example_inputs: tuple, example_kwargs: dict, dynamic: bool | Sequence[Any],
            name: str | None, fixed_floats: set[int] | None, shape_env: ShapeEnv | None, t0: float,
            recorder: bool = True, recorder_only: bool = False) -> Captured:
    """One capture, under ``shape_env`` (None: static fake tensors only, no symbols). ``recorder``:
    try the recorder first; ``recorder_only``: raise :class:`_NotRecorded` where it does not take
    the program (or the program raised under it) instead of tracing functionalized."""
    from torch._dynamo.source import FloatTensorSource, LocalSource

    leaves, in_spec = pytree.tree_flatten((example_inputs, example_kwargs))
    positions = [i for i, x in enumerate(leaves) if isinstance(x, (torch.Tensor, int, float, bool))]
    dyn_leaves = _dynamic_leaves(example_inputs, example_kwargs, dynamic)
    arg_names = _leaf_names(fn, example_inputs, leaves, positions)
    mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=False)
    fakes: list[Any] = []
    float_syms: dict[int, Any] = {}  # leaf position -> the float's symbol, for floats traced as 0-d tensors
    static = iter(static_fakes(mode, [x for x in leaves if isinstance(x, torch.Tensor)]) if shape_env is None else ())
    for k, pos in enumerate(positions):
        x = leaves[pos]
        dyn = pos in dyn_leaves
        src = LocalSource(arg_names[k])
        if isinstance(x, torch.Tensor) and shape_env is None:
            fakes.append(next(static))
        elif isinstance(x, torch.Tensor):
            ctx = StatelessSymbolicContext(
                dynamic_sizes=[DimDynamic.DYNAMIC if dyn else DimDynamic.STATIC] * x.dim(),
                constraint_sizes=[None] * x.dim(),
            )
            fake = mode.from_tensor(x, symbolic_context=ctx, source=src)
            if fake.item_memo is not None:
                # from_tensor backs a 0-d CPU int64/float64 tensor's .item() by a symbol of its value
                # (Dynamo's unspecialized numbers): a tensor's data is no traced value, or a plan
                # would return the example's (jit of ``x.item()`` answered -4.8 on every call)
                fake.item_memo = None
            fakes.append(fake)
        elif type(x) is int and dyn:
            fakes.append(shape_env.create_unspecified_symint_and_symbol(x, src, DimDynamic.DYNAMIC))
        elif type(x) is float and dyn and fixed_floats is not None and pos not in fixed_floats and math.isfinite(x):
            # Dynamo's unspecialized float: fake-ifying a 0-d float64 tensor with a source gives it a
            # backed SymFloat item_memo (unspecified: no assumed sign), what ``.item()`` returns
            fake = mode.from_tensor(torch.tensor(x, dtype=torch.float64), source=FloatTensorSource(src))
            float_syms[pos] = fake.item_memo.node.expr
            fakes.append(fake)
        else:
            fakes.append(x)

    out_spec_box: list[Any] = []

    def flat_fn(*flat: Any) -> list[Any]:
        full = list(leaves)
        for pos, v in zip(positions, flat):
            full[pos] = v.item() if pos in float_syms else v
        args, kwargs = pytree.tree_unflatten(full, in_spec)
        out = fn(*args, **kwargs)
        flat_out, spec = pytree.tree_flatten(out)
        out_spec_box.append(spec)
        return flat_out

    try:
        # ``torch.compiler.is_compiling()`` is True while we trace, as in torch.compile and
        # non-strict export: libraries take their traceable path (HF's attention masks skip the
        # data-dependent ``(mask == 1).all()`` shortcut)
        with mode, quiet_torch_tracing(), compiling(), track_evaluations(shape_env):
            # symbolic: SymFloats are recorded where no float is a plan input (``_tensorify`` rewrites float math)
            kinds = () if shape_env is None else (torch.SymInt, torch.SymBool) if fixed_floats is not None else (
                torch.SymInt, torch.SymBool, torch.SymFloat)
            fg = recorded(flat_fn, fakes, kinds) if recorder else None
            if fg is None and recorder_only:
                raise _NotRecorded("the recorder stopped")
            tracer = "recorder" if fg is not None else "functionalization"
            fg = fg or trace_functional(flat_fn, fakes, decomposition_table())
            if fixed_floats is not None and any(isinstance(n.meta.get("val"), torch.SymFloat)
                                                for n in fg.gm.graph.nodes):  # float args, or int math: k / 3
                _tensorify(fg.gm, shape_env, mode, float_syms)
    except (IRError, EagerError, EagerRefusal, _SpecializeFloats, _NotRecorded):
        raise
    except (MetadataMutationError, OrderDependentWriteError, OverlappingInputWriteError, UntracedEffectError) as e:
        raise CaptureError(f"capture of {getattr(fn, '__name__', fn)!r}: {e}") from e
    except ValueError as e:
        if "Cannot view a tensor with shape" not in str(e):
            raise TracingError(f"capture of {getattr(fn, '__name__', fn)!r} failed while tracing: "
                               f"{type(e).__name__}: {e}") from e
        refused = _view_refused_by_eager(flat_fn, fakes, mode)
        if refused is not None:  # the program's own view, as eager runs it: eager raises
            raise EagerError(f"{_user_line(fn, refused)}view size is not compatible with input tensor's size and "
                             f"stride: {refused} (eager raises this RuntimeError: use .reshape(...) instead)") from e
        raise TracingError(
            f"capture of {getattr(fn, '__name__', fn)!r}: a view of a tensor written through another view or by "
            f"out= ({e}): torch's functionalization holds the written value in another memory layout than eager's "
            "tensor, and the view cannot take it (eager may accept it): clone() the tensor before viewing it") from e
    except Exception as e:  # torch raises many kinds; say where it came from
        if "local_scalar_dense" in str(e):  # the fake kernel has no .item() for this dtype (complex)
            raise CaptureError(f"capture of {getattr(fn, '__name__', fn)!r}: {ITEM_REFUSAL}") from e
        data = _data_dependence(e)
        if data:
            raise CaptureError(f"capture of {getattr(fn, '__name__', fn)!r}: {data}") from e
        raise TracingError(f"capture of {getattr(fn, '__name__', fn)!r} failed while tracing: "
                           f"{type(e).__name__}: {e}{_REAL_TENSOR_HINT if 'FakeTensor' in str(e) else ''}") from e
    shape_env = shape_env or ShapeEnv(duck_shape=False)  # static: no symbol, no guard
    conv = Converter(fg.gm, arg_names, leaves, positions, shape_env, fg.output_aliases)
    trace = conv.run()
    trace.restrides = list(fg.restrides)
    trace.guards = list(trace.guards) + range_guards(shape_env, conv.symbols, trace)
    trace.name = name if name and name.isidentifier() else "computation"
    secs = time.perf_counter() - t0
    trace.provenance = f"capture ({secs * 1e3:.1f} ms, {tracer})"
    log.capture.info("captured %s: %d ops, %d inputs, %d write-backs, %d guards (%.1f ms, traced by %s)", trace.name,
                     len(trace.nodes), len(trace.inputs), len(trace.writebacks), len(trace.guards), secs * 1e3, tracer)
    log.capture.debug("captured trace:\n%s", trace)
    return Captured(trace, in_spec, out_spec_box[-1] if out_spec_box else None, leaves, positions, secs, tracer,
                    conv.hints, tuple(k for k, pos in enumerate(positions) if pos in float_syms))


def _data_dependence(e: BaseException) -> str:
    """What a fake tensor's refusal to compute without data says, in the user's terms ('' for
    another error): a Python value or an output shape that depends on tensor values."""
    from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException

    if isinstance(e, DataDependentOutputException):
        return (f"{e.func} returns a Python value computed from tensor data (data-dependent, as .item() is): a "
                "plan is built before the data is seen")
    if isinstance(e, DynamicOutputShapeException):
        return (f"{e.func}: the shape of its result depends on tensor data (an output shape depends on tensor "
                "data): a plan's extents come from input shapes alone")
    return ""


def _view_refused_by_eager(flat_fn: Callable, fakes: list, mode: FakeTensorMode) -> ValueError | None:
    """The fake kernel's refusal of a view when the program runs as eager runs it (on the fakes,
    no functionalization, no tracing): then the view is the program's own and eager refuses it too
    (``x.t().view(-1)``); None where only the functional trace refused it (a written tensor's
    functional value has another layout than eager's tensor)."""
    try:
        with mode, enable_python_dispatcher(), quiet_torch_tracing():
            flat_fn(*fakes)
    except ValueError as e:
        return e if "Cannot view a tensor with shape" in str(e) else None
    except Exception:  # noqa: BLE001 - another failure: not this verdict
        return None
    return None


def _user_line(fn: Callable, e: BaseException) -> str:
    """``file:line: `` of the deepest frame of ``e`` in ``fn``'s own file ('' where none is)."""
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "forward", None), "__code__", None)
    where = ""
    tb = e.__traceback__
    while tb is not None:
        if code is not None and tb.tb_frame.f_code.co_filename == code.co_filename:
            where = f"{code.co_filename}:{tb.tb_lineno}: "
        tb = tb.tb_next
    return where


def recorded(flat_fn: Callable, fakes: list, symbolic: tuple[type, ...] = ()) -> FunctionalGraph | None:
    """The program traced by the recorder (``record.py``: no functionalization) when its inputs
    allow it and everything it writes is a tensor alone in its memory; None where the recorder
    stopped, for any reason: the functional trace then decides it, with every verdict and message
    as before (the program then runs twice, as it does when a static capture needs a ShapeEnv).
    Call under :data:`TRACING` and the fake mode of ``fakes``. ``symbolic``: the fakes' extents
    may be symbols, and the symbolic arguments of these kinds are recorded (``trace_recorded``)."""
    if not recordable_inputs(fakes, bool(symbolic)):
        return None
    try:
        return trace_recorded(flat_fn, fakes, decomposition_table(), symbolic)
    except NotRecordable as e:
        log.capture.debug("traced functionalized: %s", e)
    except Exception as e:  # noqa: BLE001 - decided by the functional trace
        log.capture.debug("traced functionalized after the recorder stopped (%s: %s)", type(e).__name__, e)
    return None


def _tensorify(gm: torch.fx.GraphModule, shape_env: ShapeEnv, mode: FakeTensorMode,
               float_syms: dict[int, Any]) -> None:
    """Float math on the symbolic floats as tensor math on their 0-d inputs: torch's own pass, as
    AOTAutograd runs it for Dynamo. A float that stays a Python number after it (the program
    branched on it: a guard; an extent; an op with no tensor form) raises :class:`_SpecializeFloats`.
    The pass notes such floats in Dynamo's process-wide ``TensorifyState``: restored after it."""
    from torch._dynamo.exc import TensorifyScalarRestartAnalysis
    from torch._dynamo.symbolic_convert import TensorifyState
    from torch.fx.passes._tensorify_python_scalars import tensorify_python_scalars

    _int_true_div_as_float(gm, shape_env)
    by_name = {str(s): pos for pos, s in float_syms.items()}
    before = set(TensorifyState.force_specializations)
    try:
        tensorify_python_scalars(gm, shape_env, mode)
        failed = set()
    except TensorifyScalarRestartAnalysis:
        failed = {by_name[n] for n in TensorifyState.force_specializations - before if n in by_name}
        failed = failed or set(float_syms)
    finally:
        TensorifyState.force_specializations.clear()
        TensorifyState.force_specializations.update(before)
    guarded = {by_name[str(s)] for g in shape_env.guards for s in g.expr.free_symbols if str(s) in by_name}
    left = {by_name[str(s)] for n in gm.graph.nodes
            if isinstance(v := n.meta.get("val"), (torch.SymFloat, torch.SymInt, torch.SymBool))
            for s in v.node.expr.free_symbols if str(s) in by_name}
    if failed | guarded | left:
        raise _SpecializeFloats(failed | guarded | left, "the program branches on them or uses them "
                                "where torch has no tensor form for float math")


def _int_true_div_as_float(gm: torch.fx.GraphModule, shape_env: ShapeEnv) -> None:
    """``k / 3`` on an int argument as float64 division of the converted ints, which torch's pass can
    tensorify (it has no tensor form for int / int). Python's int / int is correctly rounded, and so
    is float64 division of exactly converted ints: the same number while both operands convert
    exactly, which becomes a guard of the plan. The pass converts an int through ``scalar_tensor``,
    in the default dtype: at most 2**24 in magnitude for float32."""
    from torch.utils._sympy.functions import FloatTrueDiv, IntTrueDiv, ToFloat

    exact = min(round(2 / torch.finfo(torch.get_default_dtype()).eps), 2**53)

    for n in gm.graph.nodes:
        v = n.meta.get("val")
        if not (isinstance(v, torch.SymFloat) and v.node.expr.has(IntTrueDiv)):
            continue
        for div in v.node.expr.atoms(IntTrueDiv):
            for e in div.args:
                if not e.is_number:
                    shape_env.evaluate_expr(sympy.Le(e, exact))
                    shape_env.evaluate_expr(sympy.Ge(e, -exact))
        expr = v.node.expr.replace(IntTrueDiv, lambda a, b: FloatTrueDiv(ToFloat(a), ToFloat(b)))
        n.meta["val"] = shape_env.create_symfloatnode(expr, hint=v.node.hint)  # float(v) would guard


def _dynamic_leaves(args: tuple, kwargs: dict, dynamic: bool | Sequence[Any]) -> set[int]:
    """Leaf indices (in the flattening of ``(args, kwargs)``) that are dynamic."""
    n_all = len(pytree.tree_leaves((args, kwargs)))
    if dynamic is True:
        return set(range(n_all))
    if dynamic is False or dynamic is None:
        return set()
    want = set(dynamic)
    out: set[int] = set()
    i = 0
    for k, a in enumerate(args):
        n = len(pytree.tree_leaves(a))
        if k in want:
            out |= set(range(i, i + n))
        i += n
    for key in sorted(kwargs):  # dicts flatten in sorted-key order
        n = len(pytree.tree_leaves(kwargs[key]))
        if key in want:
            out |= set(range(i, i + n))
        i += n
    return out


_REAL_TENSOR_HINT = ("\n(satfuse: the function uses a real tensor that is neither an argument nor a parameter/buffer "
                     "of a module it closes over directly; it would be baked into the plan as a constant: pass it "
                     "as an argument)")


def _leaf_names(fn: Callable, args: tuple, leaves: list, positions: list[int]) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    # map each leaf position back to its top-level argument
    owner: list[str] = []
    for i, a in enumerate(args):
        n = len(pytree.tree_leaves(a))
        base = params[i] if i < len(params) and not params[i].startswith("*") else f"arg{i}"
        owner += [base if n == 1 else f"{base}_{j}" for j in range(n)]
    for pos in positions:
        names.append(owner[pos] if pos < len(owner) else f"in{pos}")
    ns = Namespace()
    return [ns.name(n) for n in names]


