"""Capture: torch program -> Trace.

``make_fx`` traces the function on fake tensors (never real ones: a traced in-place
op must not touch the caller's data) under a ShapeEnv we own, with a small
decomposition table of our own choosing; the resulting aten graph is then converted
op by op into the vocabulary of ``vocab.py`` (see ``aten_map.py``). In-place aten ops
become their functional op followed by ``copy_`` into the buffer's current value;
a mutated input gets a write-back of its final value. Anything the map does not know
becomes an opaque fallback node calling the aten op itself.
"""

from __future__ import annotations

import inspect
import operator
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import sympy
import torch
import torch.utils._pytree as pytree
from torch._decomp import get_decompositions
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

from .. import log
from ..ir import IRError, Namespace, Node, ScalarType, TensorType, Trace, Var, as_extent, dtype_name, flat_args
from ..log import quiet_torch_tracing
from ..vocab import infer, is_opaque
from .aten_map import ATEN_MAP, Builder, NotInVocab

aten = torch.ops.aten


class CaptureError(IRError):
    """Capture failed: names the aten op and graph node."""


#: torch decompositions we accept; everything else is converted by aten_map or kept opaque
DECOMPOSE = [
    aten._log_softmax, aten._softmax, aten._log_softmax_backward_data, aten._softmax_backward_data,
    aten.nll_loss_forward, aten.nll_loss_backward, aten.nll_loss2d_forward, aten.nll_loss2d_backward,
    aten.native_layer_norm, aten.native_layer_norm_backward, aten.addcmul, aten.addcmul_, aten.addcdiv,
    aten.addcdiv_, aten.lerp, aten.lerp_, aten.mse_loss, aten.mse_loss_backward, aten.silu, aten.silu_backward,
    aten.gelu, aten.gelu_backward, aten.hardtanh, aten.leaky_relu, aten.threshold_backward, aten.logsumexp,
    aten.sigmoid_backward, aten.tanh_backward, aten.take_along_dim, aten.std, aten.var, aten.norm,
    aten.linalg_vector_norm, aten.softplus, aten.elu, aten.binary_cross_entropy_with_logits,
    aten.embedding_dense_backward, aten.masked_fill, aten.dot, aten.xlogy, aten.logit,
    aten.native_dropout_backward,
]


def decomposition_table() -> dict:
    return get_decompositions(DECOMPOSE)


# guards that only decide the strides of fake tensors: our plan never relies on strides
_STRIDE_ONLY = {"check_contiguous_sizes_strides", "is_contiguous", "_compute_contiguous_strides",
                "compute_required_storage_length", "is_non_overlapping_and_dense", "_is_contiguous",
                "is_channels_last_contiguous", "compute_elementwise_output_strides",
                "_maybe_guard_rel", "is_contiguous_for_memory_format"}


@dataclass
class Captured:
    """A Trace plus what the API layer needs to call it like the original function."""

    trace: Trace
    in_spec: Any
    out_spec: Any
    leaves: list[Any]  # example leaves (tensors and numbers); non-input leaves are kept as constants
    input_leaf_positions: list[int]
    seconds: float = 0.0
    symbol_hints: dict[str, int] = field(default_factory=dict)


def capture(fn: Callable, *example_inputs: Any, dynamic: bool | Sequence[Any] = False, name: str | None = None,
            call_kwargs: dict[str, Any] | None = None, **example_kwargs: Any) -> Captured:
    """Trace ``fn(*example_inputs, **call_kwargs, **example_kwargs)`` on fake copies of the inputs under a
    ShapeEnv of our own (``call_kwargs`` carries keywords named like this function's own parameters).

    ``dynamic``: False bakes every extent and scalar as a guarded constant; True makes
    every tensor dim and int scalar symbolic; a list of argument positions (and keyword
    names) makes only those arguments dynamic. Floats and bools are always guarded
    constants. Int scalars are *unspecified* symbols (as Dynamo makes them: no 0/1
    specialization, no assumed sign); tensor dims follow torch's rules (size 0/1 is a
    constant, other dynamic dims are symbols assumed ``>= 2``). Every assumption the
    ShapeEnv made about a symbol's range becomes an explicit guard of the trace:
    ``x.squeeze(0)`` on ``[s0, 4]`` is decided with no guard because ``s0 >= 2`` is
    assumed, so a plan without the range guard would be silently wrong at size 1.
    """
    from torch._dynamo.source import LocalSource

    t0 = time.perf_counter()
    example_kwargs = {**(call_kwargs or {}), **example_kwargs}
    leaves, in_spec = pytree.tree_flatten((example_inputs, example_kwargs))
    positions = [i for i, x in enumerate(leaves) if isinstance(x, (torch.Tensor, int, float, bool))]
    dyn_leaves = _dynamic_leaves(example_inputs, example_kwargs, dynamic)
    arg_names = _leaf_names(fn, example_inputs, leaves, positions)
    shape_env = ShapeEnv(duck_shape=False)
    mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=False)
    fakes: list[Any] = []
    for k, pos in enumerate(positions):
        x = leaves[pos]
        dyn = pos in dyn_leaves
        src = LocalSource(arg_names[k])
        if isinstance(x, torch.Tensor):
            ctx = StatelessSymbolicContext(
                dynamic_sizes=[DimDynamic.DYNAMIC if dyn else DimDynamic.STATIC] * x.dim(),
                constraint_sizes=[None] * x.dim(),
            )
            fakes.append(mode.from_tensor(x, symbolic_context=ctx, source=src))
        elif type(x) is int and dyn:
            fakes.append(shape_env.create_unspecified_symint_and_symbol(x, src, DimDynamic.DYNAMIC))
        else:
            fakes.append(x)

    out_spec_box: list[Any] = []

    def flat_fn(*flat: Any) -> list[Any]:
        full = list(leaves)
        for pos, v in zip(positions, flat):
            full[pos] = v
        args, kwargs = pytree.tree_unflatten(full, in_spec)
        out = fn(*args, **kwargs)
        flat_out, spec = pytree.tree_flatten(out)
        out_spec_box.append(spec)
        return flat_out

    try:
        with mode:
            with quiet_torch_tracing():
                gm = make_fx(flat_fn, tracing_mode="real", decomposition_table=decomposition_table())(*fakes)
    except IRError:
        raise
    except Exception as e:  # torch raises many kinds; say where it came from
        raise CaptureError(f"capture of {getattr(fn, '__name__', fn)!r} failed while tracing: "
                           f"{type(e).__name__}: {e}{_REAL_TENSOR_HINT if 'FakeTensor' in str(e) else ''}") from e
    conv = _Converter(gm, arg_names, leaves, positions, shape_env)
    trace = conv.run()
    trace.guards = list(trace.guards) + range_guards(shape_env, conv.symbols, trace)
    trace.name = name if name and name.isidentifier() else "computation"
    secs = time.perf_counter() - t0
    trace.provenance = f"capture ({secs * 1e3:.1f} ms)"
    log.capture.info("captured %s: %d ops, %d inputs, %d write-backs, %d guards (%.1f ms)", trace.name,
                     len(trace.nodes), len(trace.inputs), len(trace.writebacks), len(trace.guards), secs * 1e3)
    log.capture.debug("captured trace:\n%s", trace)
    return Captured(trace, in_spec, out_spec_box[-1] if out_spec_box else None, leaves, positions, secs,
                    conv.hints)


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


def range_guards(shape_env: ShapeEnv, symbols: dict[sympy.Symbol, sympy.Symbol], trace: Trace) -> list[Any]:
    """The ShapeEnv's value ranges of the input symbols, as guards in our symbols.

    Only bounds that no guard already states are added; ``[-oo, oo]`` adds nothing.
    """
    have = set(trace.guards)
    bound = trace.symbols()
    out: list[Any] = []
    for theirs, ours in symbols.items():
        if ours not in bound:
            continue
        vr = shape_env.var_to_range.get(theirs)
        if vr is None:
            continue
        for bound_val, rel in ((vr.lower, sympy.Ge), (vr.upper, sympy.Le)):
            if not getattr(bound_val, "is_Integer", False) and not isinstance(bound_val, int):
                continue  # infinite
            g = rel(ours, int(bound_val))
            if g is sympy.true or g in have or _implied(g, have):
                continue
            out.append(g)
            have.add(g)
    return out


def _implied(g: Any, have: set) -> bool:
    """Cheap syntactic test: ``s >= b`` is implied by ``s > b2`` or ``s >= b2`` with b2 >= b-1 etc."""
    s, b = g.lhs, int(g.rhs)
    for h in have:
        if not isinstance(h, sympy.core.relational.Relational) or h.lhs != s or not h.rhs.is_Integer:
            continue
        c = int(h.rhs)
        if isinstance(g, sympy.GreaterThan):
            if (isinstance(h, sympy.GreaterThan) and c >= b) or (isinstance(h, sympy.StrictGreaterThan) and c >= b - 1):
                return True
        elif (isinstance(h, sympy.LessThan) and c <= b) or (isinstance(h, sympy.StrictLessThan) and c <= b + 1):
            return True
    return False


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


@dataclass(eq=False)
class Ref:
    """A tensor as the program sees it: a buffer (whose value changes under in-place
    ops) or a view of another buffer (which we refuse to mutate through).

    A view remembers the fx node that made it from ``src`` and the version of its base
    buffer at that time: read after the base was mutated, it is recomputed from the
    base's new value (eager views see later in-place updates of their base)."""

    buf: int
    view: bool = False
    src: "Ref | None" = None
    node: Any = None
    item: int | None = None  # which output of a multi-output view op (split)
    version: int = 0


class _Converter:
    def __init__(self, gm: torch.fx.GraphModule, names: list[str], leaves: list, positions: list[int], shape_env: ShapeEnv):
        self.gm = gm
        self.names = names
        self.leaves = leaves
        self.positions = positions
        self.shape_env = shape_env
        self.ns = Namespace(names)
        self.symbols: dict[sympy.Symbol, sympy.Symbol] = {}
        self.hints: dict[str, int] = {}
        self.canon: dict[sympy.Expr, sympy.Expr] = {}  # compound extent -> its canonical spelling
        self.canon_by_hint: dict[int, list[sympy.Expr]] = {}
        self.trace = Trace([], [], [])
        self.env: dict[torch.fx.Node, Any] = {}
        self.cur: dict[int, Var] = {}  # buffer -> Var holding its current value
        self.buf_input: dict[int, Var] = {}  # buffer -> the input it is
        self.versions: dict[int, int] = {}  # buffer -> number of in-place updates so far
        self.nbufs = 0

    def new_ref(self, v: Var, view: bool = False) -> Ref:
        self.nbufs += 1
        self.cur[self.nbufs] = v
        return Ref(self.nbufs, view)

    def new_view(self, v: Var, n: torch.fx.Node) -> Ref:
        """``v`` is a view made by node ``n`` of its first argument."""
        ref = self.new_ref(v, view=True)
        src = self.env.get(n.args[0]) if n.args and isinstance(n.args[0], torch.fx.Node) else None
        if isinstance(src, Ref):
            ref.src, ref.node = src, n
            ref.version = self.versions.get(_root(src).buf, 0)
        return ref

    def refresh(self, ref: Ref) -> None:
        """Recompute a view whose base buffer was mutated after the view was taken."""
        if ref.src is None:
            return
        version = self.versions.get(_root(ref).buf, 0)
        if ref.version == version:
            return
        n = ref.node
        conv = ATEN_MAP.get(n.target) or ATEN_MAP.get(getattr(n.target, "_overloadpacket", None))
        out = conv(Builder(self, n), *[self.value(a) for a in n.args], **{k: self.value(v) for k, v in n.kwargs.items()})
        if ref.item is not None:
            out = out[ref.item]
        self.cur[ref.buf] = self.cur[out.buf] if isinstance(out, Ref) else out
        ref.version = version

    # -------------------------------------------------------------- symbols
    def sym(self, e: Any) -> Any:
        """A SymInt/SymBool/sympy expr in our symbol names (s0, s1, ... by first appearance)."""
        if isinstance(e, (torch.SymInt, torch.SymBool, torch.SymFloat)):
            e = e.node.expr
        if not isinstance(e, sympy.Basic):
            return e
        e = self.shape_env.replace(e)
        if isinstance(e, sympy.Expr) and not (e.is_Symbol or e.is_number):
            e = self.canonical(e)
        subs = {}
        for s in sorted(e.free_symbols, key=lambda s: s.name):
            if s not in self.symbols:
                new = sympy.Symbol(f"s{len(self.symbols)}", integer=True)
                self.symbols[s] = new
                hint = self.shape_env.backed_var_to_val.get(s) if hasattr(self.shape_env, "backed_var_to_val") else None
                if hint is not None:
                    self.hints[new.name] = int(hint)
            subs[s] = self.symbols[s]
        out = e.xreplace(subs)
        if isinstance(out, sympy.Expr) and not isinstance(out, sympy.logic.boolalg.Boolean):
            return as_extent(out)
        return out

    def canonical(self, e: sympy.Expr) -> sympy.Expr:
        """One spelling per extent the ShapeEnv knows to be equal: ``s3*s88`` and ``s38*s97`` (HF's
        logits ``view(-1, V)`` vs its labels ``view(-1)``) are equal by a guard, not by a
        replacement (the ShapeEnv substitutes single symbols only), and the IR compares extents
        syntactically: a backward graph's ``mul`` of the two did not broadcast. The first
        spelling seen wins; a later one that the guards prove equal (same hint) maps to it."""
        known = self.canon.get(e)
        if known is not None:
            return known
        self.canon[e] = e
        try:
            hint_of = getattr(self.shape_env, "guarding_hint_or_throw", None) or self.shape_env.size_hint
            hint = int(hint_of(e))
        except Exception:  # noqa: BLE001 - unbacked or not an int: keep it as it is
            return e
        for c in self.canon_by_hint.setdefault(hint, []):
            try:
                same = self.shape_env._maybe_evaluate_static(sympy.Eq(e, c))
            except Exception:  # noqa: BLE001
                same = None
            if same is sympy.true:
                self.canon[e] = c
                return c
        self.canon_by_hint[hint].append(e)
        return e

    def type_of(self, val: Any) -> Any:
        if isinstance(val, torch.Tensor):
            return TensorType(dtype_name(val.dtype), tuple(self.sym(d) for d in val.shape), _dev(val.device))
        if isinstance(val, torch.SymInt):
            return ScalarType("int", self.sym(val))
        if isinstance(val, bool):
            return ScalarType("bool", val)
        if isinstance(val, int):
            return ScalarType("int", val)
        if isinstance(val, float):
            return ScalarType("float", val)
        if isinstance(val, torch.SymFloat):
            return ScalarType("float")
        raise CaptureError(f"unsupported input value {val!r}")

    # -------------------------------------------------------------- main loop
    def run(self) -> Trace:
        ph = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for n, name, pos in zip(ph, self.names, self.positions):
            val = n.meta.get("val", self.leaves[pos])
            v = Var(name, self.type_of(val))
            self.trace.inputs.append(v)
            if isinstance(v.type, TensorType):
                ref = self.new_ref(v)
                self.buf_input[ref.buf] = v
                self.env[n] = ref
            else:
                self.env[n] = v.type.value if isinstance(v.type.value, sympy.Expr) else v
        for n in self.gm.graph.nodes:
            if n.op == "call_function":
                try:
                    self.env[n] = self.call(n)
                except IRError:
                    raise
                except Exception as e:
                    raise CaptureError(f"node {n.name} ({n.target}): {type(e).__name__}: {e}") from e
            elif n.op == "output":
                outs = n.args[0]
                self.trace.outputs = [self.value(a) for a in (outs if isinstance(outs, (list, tuple)) else [outs])]
            elif n.op == "get_attr":
                self.env[n] = self.literal(n)
        for buf, inp in self.buf_input.items():
            if self.cur[buf] is not inp:
                self.trace.writebacks.append((inp, self.cur[buf]))
        self.trace.guards = self.guards()
        self.trace.lint()
        return self.trace

    def literal(self, n: torch.fx.Node) -> Ref:
        """A ``get_attr`` tensor of the traced graph. Capture traces on fake tensors and refuses
        real ones, so such a tensor was made from a literal while tracing (``torch.tensor([])``
        in HF's KV cache, ``torch.tensor(-inf)``): one whose elements are all equal (or that is
        empty) is a ``full``; any other is refused (pass it as an input)."""
        obj: Any = self.gm
        for part in str(n.target).split("."):
            obj = getattr(obj, part, None)
        if isinstance(obj, torch.Tensor) and not isinstance(obj, torch._subclasses.FakeTensor):
            flat = obj.detach().reshape(-1)
            if flat.numel() == 0 or bool((flat == flat[0]).all()):
                value = flat[0].item() if flat.numel() else 0
                typ = TensorType(dtype_name(obj.dtype), tuple(obj.shape), _dev(obj.device))
                v = self.emit("full", (tuple(obj.shape), value, typ.dtype), None, hint="literal", out_type=typ)
                return self.new_ref(v)
        raise CaptureError(f"node {n.name}: get_attr {n.target!r}: a tensor constant in the traced program "
                           "(a literal tensor with distinct values?): tensors must be inputs, not constants")

    def guards(self) -> list:
        out = []
        for g in self.shape_env.guards:
            loc = g.sloc.framework_loc
            if loc is not None and getattr(loc, "name", "") in _STRIDE_ONLY:
                continue
            e = self.sym(g.expr)
            if e is sympy.true:
                continue
            out.append(e)
        return out

    def value(self, a: Any) -> Any:
        """fx argument -> IR argument: Vars (current buffer values), numbers, exprs, tuples."""
        if isinstance(a, torch.fx.Node):
            a = self.env[a]
        if isinstance(a, Ref):
            if a.view:
                self.refresh(a)
            return self.cur[a.buf]
        if isinstance(a, (list, tuple)):
            return tuple(self.value(x) for x in a)
        if isinstance(a, (torch.SymInt, torch.SymBool)):
            return self.sym(a)
        return a

    def call(self, n: torch.fx.Node) -> Any:
        tgt = n.target
        if tgt is operator.getitem:
            return self.env[n.args[0]][n.args[1]]
        if tgt is aten._local_scalar_dense.default:
            raise CaptureError(
                f"node {n.name} ({tgt}): .item() turns a tensor's value into a Python number while tracing, so "
                "the program's shape would depend on data; satfuse plans cannot carry that. Keep the value a "
                "tensor (for torch.optim: capturable=True), or pass it as a Python number argument.")
        val = n.meta.get("val")
        if isinstance(val, (torch.SymInt, torch.SymBool, torch.SymFloat)) or (
                not isinstance(tgt, torch._ops.OpOverload) and not isinstance(val, (torch.Tensor, list, tuple))):
            return self.sym(val)
        b = Builder(self, n)
        conv = ATEN_MAP.get(tgt) or ATEN_MAP.get(getattr(tgt, "_overloadpacket", None)) or ATEN_MAP.get(str(tgt))
        if conv is not None:
            args, kwargs = [self.value(a) for a in n.args], {k: self.value(v) for k, v in n.kwargs.items()}
            mark = len(self.trace.nodes)
            try:
                out = conv(b, *args, **kwargs)
            except NotInVocab:  # run the aten op itself instead
                del self.trace.nodes[mark:]
                conv = None
            else:
                if isinstance(out, (list, tuple)):
                    for i, r in enumerate(out):
                        if isinstance(r, Ref) and r.node is n:
                            r.item = i
        if conv is None:
            mutated = _mutated_arg(tgt)
            out = b.inplace_opaque(tgt, mutated) if mutated is not None else b.opaque(tgt)
        return self.wrap(out)

    def wrap(self, out: Any) -> Any:
        if isinstance(out, Var):
            return self.new_ref(out) if isinstance(out.type, TensorType) else out
        if isinstance(out, (list, tuple)):
            return type(out)(self.wrap(o) for o in out)
        return out

    # -------------------------------------------------------------- emission helpers used by Builder
    def emit(self, op: str, args: tuple, n: torch.fx.Node | None, kwargs: dict | None = None, hint: str | None = None,
             out_type: Any = None) -> Var:
        if not is_opaque(op) and any(isinstance(a, complex) for a in flat_args(args)):
            raise NotInVocab(f"{op}: complex scalar operand")
        if out_type is None:
            dev = None
            if n is not None and isinstance(n.meta.get("val"), torch.Tensor):
                dev = _dev(n.meta["val"].device)
            out_type = infer(op, args, dev)
        v = Var(self.ns.name(hint or op.split(".")[1] if "." in op else hint or op), out_type)
        self.trace.nodes.append(Node(op, args, kwargs or {}, (v,)))
        return v

    def emit_multi(self, op: str, args: tuple, kwargs: dict, types: list, hint: str) -> tuple[Var, ...]:
        outs = tuple(Var(self.ns.name(hint), t) for t in types)
        self.trace.nodes.append(Node(op, args, kwargs, outs))
        return outs

    def mutate(self, n: torch.fx.Node, argpos: int, new_value: Var) -> Ref:
        """The buffer passed as arg ``argpos`` of ``n`` now holds ``new_value``."""
        ref = self.env.get(n.args[argpos]) if argpos < len(n.args) else None
        if not isinstance(ref, Ref):
            raise CaptureError(f"node {n.name} ({n.target}): the mutated argument is not a tensor of this program")
        if ref.view:
            raise CaptureError(f"node {n.name} ({n.target}): mutates a view of another tensor; "
                               "in-place updates through views are not supported (mutate the base tensor)")
        cur = self.cur[ref.buf]
        base = self.buf_input.get(ref.buf)
        v = self.emit("copy_", (cur, new_value), n, hint=base.name if base is not None else None)
        self.cur[ref.buf] = v
        self.versions[ref.buf] = self.versions.get(ref.buf, 0) + 1
        return ref


def _root(ref: Ref) -> Ref:
    while ref.src is not None:
        ref = ref.src
    return ref


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _dev(d: torch.device) -> str:
    return str(d) if d.type != "cuda" or d.index is not None else "cuda:0"


def _mutated_arg(tgt: Any) -> int | None:
    schema = getattr(tgt, "_schema", None)
    if schema is None:
        return None
    for i, a in enumerate(schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            return i
    return None
