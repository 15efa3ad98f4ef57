"""fx -> IR: a functionalized aten graph (``functional.py``) becomes a Trace, op by op.

The graph is functional: every op maps to a vocabulary op (``aten_map.py``) or runs as an
opaque fallback calling the aten op itself. The only writes left are the final
``copy_(input, value)`` that functionalization emits once per mutated input: each becomes the
trace's write-back of that input.
"""

from __future__ import annotations

import operator
from typing import Any

import sympy
import torch
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from ..ir import IRError, Namespace, Node, OutputAlias, ScalarType, TensorType, Trace, Var, dense_order, dtype_name
from ..vocab import VIEW_OPS, infer, is_opaque
from .aten_map import ATEN_MAP, Builder, NotInVocab, computes_complex
from .functional import AliasInfo
from .symbols import Symbols

aten = torch.ops.aten


class CaptureError(IRError):
    """Capture failed: names the aten op and graph node."""


#: why a tensor's value read as a Python number (``.item()``, a 0-d tensor Scalar) has no plan
ITEM_REFUSAL = (".item() turns a tensor's value into a Python number while tracing, so the program's shape would "
                "depend on data; satfuse plans cannot carry that. Keep the value a tensor (for torch.optim: "
                "capturable=True), or pass it as a Python number argument.")

TOKEN_REFUSAL = ("an effect token: the program calls an op with ordered side effects (with_effects: torch.linalg's "
                 "error checks, a custom op registered as effectful), which satfuse.optimize and satfuse.jit "
                 "cannot order; torch.compile(backend=\"satfuse\") can (AOTAutograd threads the tokens)")


class Converter:
    """Converts one functional graph; ``symbols``/``hints`` map the ShapeEnv's symbols to ours."""

    def __init__(self, gm: torch.fx.GraphModule, names: list[str], leaves: list, positions: list[int],
                 shape_env: ShapeEnv, aliases: list[AliasInfo | None] | None = None):
        self.gm = gm
        self.names = names
        self.leaves = leaves
        self.positions = positions
        self.shape_env = shape_env
        self.syms = Symbols(shape_env)
        self.symbols = self.syms.symbols
        self.hints = self.syms.hints
        self.aliases = aliases or []
        self.ns = Namespace(names)
        self.trace = Trace([], [], [])
        self.env: dict[torch.fx.Node, Any] = {}
        self.input_of: dict[torch.fx.Node, Var] = {}  # placeholder -> its tensor input
        self.written_back: set[int] = set()  # ids of the inputs in ``trace.writebacks``
        #: ids of the Vars that are eager's own tensors: the caller's, what an opaque op (eager's
        #: kernel) returned, and views of those (``aten_map``'s ``EAGER_MADE`` record reads it)
        self.eager_own: set[int] = set()

    def sym(self, e: Any) -> Any:
        return self.syms.sym(e)

    def type_of(self, val: Any) -> Any:
        if isinstance(val, torch.Tensor):
            shape = tuple(val.shape)
            if not all(type(d) is int for d in shape):  # symbols to spell in this capture's names
                return TensorType(dtype_name(val.dtype), tuple(self.sym(d) for d in shape), _dev(val.device))
            key = (val.dtype, shape, val.device)
            typ = _STATIC_TYPES.get(key)
            if typ is None:
                typ = _STATIC_TYPES[key] = TensorType(dtype_name(val.dtype), shape, _dev(val.device))
            return typ
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

    def _input_layout(self, i: int, val: Any, t: TensorType) -> None:
        """``Trace.input_layouts``: a tensor input of symbolic sizes whose strides or offset hold a
        symbol its sizes do not (torch gives a stride no size product spells a symbol of its own),
        that is expanded (a stride 0 no contiguous layout has), or whose strides are all numbers
        though they lay out no dense block at the example sizes (ShapeEnv keeps a stride of 1 a
        number: ``as_strided((n, m), (1, 1))`` overlaps itself, and no size spells that)."""
        if not isinstance(val, torch.Tensor) or not t.symbols():
            return
        strides, offset = tuple(self.sym(e) for e in val.stride()), self.sym(val.storage_offset())
        own = {s for e in (*strides, offset) if isinstance(e, sympy.Basic) for s in e.free_symbols}
        if own - t.symbols() or any(isinstance(st, int) and st == 0 and n != 1 for n, st in zip(t.shape, strides)) \
                or (all(isinstance(e, int) for e in (*strides, offset)) and not self._dense_at_hints(t.shape, strides)):
            self.trace.input_layouts[i] = (strides, offset)

    def _dense_at_hints(self, shape: tuple[Any, ...], strides: tuple[int, ...]) -> bool:
        """Do ``strides`` lay out each element of one block once at the example sizes (contiguous
        or a permutation of it; a size-1 dim takes any stride)?"""
        hints = {s: self.hints.get(s.name) for e in shape if isinstance(e, sympy.Basic) for s in e.free_symbols}
        if None in hints.values():
            return True  # no example size to tell by: nothing recorded, as before
        return dense_order([int(e.subs(hints)) if isinstance(e, sympy.Basic) else int(e) for e in shape],
                           strides) is not None

    # -------------------------------------------------------------- main loop
    def run(self) -> Trace:
        ph = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for n, name, pos in zip(ph, self.names, self.positions):
            val = n.meta.get("val", self.leaves[pos])
            v = Var(name, self.type_of(val))
            self.trace.inputs.append(v)
            if isinstance(v.type, TensorType):
                self._input_layout(len(self.trace.inputs) - 1, val, v.type)
                self.eager_own.add(id(v))
                self.env[n] = v
                self.input_of[n] = v
            else:
                self.env[n] = v.type.value if isinstance(v.type.value, sympy.Expr) else v
        for n in self.gm.graph.nodes:
            if n.op == "call_function":
                try:
                    self.env[n] = self.call(n)
                except CaptureError:
                    raise
                except IRError as e:  # a form the IR has no place for (a dtype, ...): named by its node
                    raise CaptureError(f"node {n.name} ({n.target}): {e}") from e
                except Exception as e:
                    raise CaptureError(f"node {n.name} ({n.target}): {type(e).__name__}: {e}") from e
            elif n.op == "output":
                outs = n.args[0]
                self.trace.outputs = [self.value(a) for a in (outs if isinstance(outs, (list, tuple)) else [outs])]
            elif n.op == "get_attr":
                self.env[n] = self.literal(n)
        self.trace.output_aliases = self.output_aliases()
        self.trace.guards = self.syms.guards()  # last: every extent has been spelled (canonical's pins)
        self.trace.lint()
        return self.trace

    def output_aliases(self) -> list[OutputAlias | None]:
        if not any(self.aliases):
            return []
        out: list[OutputAlias | None] = []
        for a in self.aliases:
            if a is None or a.kind == "output":
                out.append(None if a is None else OutputAlias("output", a.index))
                continue
            out.append(OutputAlias(a.kind, a.index, tuple(self.sym(s) for s in a.size),
                                   tuple(self.sym(s) for s in a.stride), self.sym(a.storage_offset),
                                   getattr(a, "itself", True)))
        return out

    def literal(self, n: torch.fx.Node) -> Var:
        """A ``get_attr`` tensor of the traced graph. Capture traces on fake tensors and refuses
        real ones, so such a tensor was made from a literal while tracing (``torch.tensor([])``
        in HF's KV cache, ``torch.tensor([1.0, 2.0])``, ``torch.tensor(-inf)``): one whose
        elements are all equal (or that is empty) is a ``full``; any other is a copy of the
        constant (``lift_fresh_copy``, as eager makes a fresh tensor on each call), which the
        plan holds."""
        obj: Any = self.gm
        for part in str(n.target).split("."):
            obj = getattr(obj, part, None)
        if not isinstance(obj, torch.Tensor) or isinstance(obj, torch._subclasses.FakeTensor):
            raise CaptureError(f"node {n.name}: get_attr {n.target!r}: {type(obj).__name__} is not a constant "
                               "tensor satfuse can hold: pass it as an input")
        typ = TensorType(dtype_name(obj.dtype), tuple(obj.shape), _dev(obj.device))
        flat = obj.detach().reshape(-1)
        if flat.numel() == 0 or bool((flat == flat[0]).all()):
            value = flat[0].item() if flat.numel() else 0
            if obj.dtype.is_complex:  # the vocabulary has no complex values: torch makes it
                return self.emit("aten.full.default", (tuple(obj.shape), value), None, hint="literal",
                                 kwargs={"dtype": obj.dtype, "device": obj.device}, out_type=typ)
            return self.emit("full", (tuple(obj.shape), value, typ.dtype), None, hint="literal", out_type=typ)
        const = obj.detach().clone()  # the plan's own: the program's module may be freed or changed
        return self.emit("aten.lift_fresh_copy.default", (const,), None, hint="literal", out_type=typ)

    def value(self, a: Any) -> Any:
        """fx argument -> IR argument: Vars, numbers, exprs, tuples."""
        if isinstance(a, torch.fx.Node):
            if a not in self.env and a.op == "placeholder":
                raise CaptureError(f"{a.name}: {TOKEN_REFUSAL}")
            a = self.env[a]
        if isinstance(a, (list, tuple)):
            return tuple(self.value(x) for x in a)
        if isinstance(a, (torch.SymInt, torch.SymBool, torch.SymFloat)):  # the recorder's symbolic arguments
            return self.sym(a)
        return a

    def call(self, n: torch.fx.Node) -> Any:
        tgt = n.target
        if tgt is operator.getitem:
            return self.env[n.args[0]][n.args[1]]
        if tgt is aten._local_scalar_dense.default:
            raise CaptureError(f"node {n.name} ({tgt}): {ITEM_REFUSAL}")
        val = n.meta.get("val")
        if isinstance(val, (torch.SymInt, torch.SymBool, torch.SymFloat)) or (
                not isinstance(tgt, torch._ops.OpOverload) and not isinstance(val, (torch.Tensor, list, tuple))):
            return self.sym(val)
        if tgt is aten.copy_.default and self.written_input(n.args[0]) is not None:
            return self.writeback(n)
        schema = getattr(tgt, "_schema", None)
        if schema is not None and schema.is_mutable:
            raise CaptureError(f"node {n.name} ({tgt}): an in-place op that functionalization left in the graph")
        b = Builder(self, n)
        conv = ATEN_MAP.get(tgt) or ATEN_MAP.get(getattr(tgt, "_overloadpacket", None)) or ATEN_MAP.get(str(tgt))
        if conv is not None and not computes_complex(n):
            args, kwargs = [self.value(a) for a in n.args], {k: self.value(v) for k, v in n.kwargs.items()}
            mark = len(self.trace.nodes)
            try:
                return conv(b, *args, **kwargs)
            except (NotInVocab, TypeError):  # run the aten op itself instead
                # TypeError: an argument form the converter does not take (a graph's int input,
                # a Var, as slice_scatter's step, where it computes with a number)
                del self.trace.nodes[mark:]
        return b.opaque(tgt)

    def written_input(self, target: Any) -> Var | None:
        """The input a ``copy_`` writes back: its placeholder, or an earlier write-back of it (two
        inputs that are one tensor are written back in a chain)."""
        if target in self.input_of:
            return self.input_of[target]
        v = self.env.get(target) if isinstance(target, torch.fx.Node) else None
        return v if isinstance(v, Var) and any(v is i for i in self.input_of.values()) else None

    def writeback(self, n: torch.fx.Node) -> Var:
        """Functionalization's ``copy_(input, final)``: the input's write-back."""
        inp = self.written_input(n.args[0])
        val = self.value(n.args[1])
        if not (isinstance(val, Var) and val.type == inp.type):  # a cast or broadcast the copy does
            val = self.emit("copy_", (inp, val), n, hint=inp.name)
        if id(inp) in self.written_back:
            raise CaptureError(f"node {n.name}: the example inputs cannot have a plan: input {inp.name} is written "
                               "back twice (it shares memory with another input that is written): pass inputs "
                               "that do not share memory (satfuse.jit runs such calls eagerly)")
        if val is not inp:
            self.trace.writebacks.append((inp, val))
            self.written_back.add(id(inp))
        return inp

    # -------------------------------------------------------------- emission helpers used by Builder
    def emit(self, op: str, args: tuple, n: torch.fx.Node | None, kwargs: dict | None = None, hint: str | None = None,
             out_type: Any = None) -> Var:
        if not is_opaque(op) and _any_complex(args):
            raise NotInVocab(f"{op}: complex scalar operand")
        if out_type is None:
            dev = None
            if n is not None and isinstance(n.meta.get("val"), torch.Tensor):
                dev = _dev(n.meta["val"].device)
            out_type = infer(op, args, dev)
        v = Var(self.ns.name(hint or op.split(".")[1] if "." in op else hint or op), out_type)
        self.trace.nodes.append(Node(op, args, kwargs or {}, (v,)))
        self._own(op, args, (v,))
        return v

    def emit_multi(self, op: str, args: tuple, kwargs: dict, types: list, hint: str) -> tuple[Var, ...]:
        outs = tuple(Var(self.ns.name(hint), t) for t in types)
        self.trace.nodes.append(Node(op, args, kwargs, outs))
        self._own(op, args, outs)
        return outs

    def _own(self, op: str, args: tuple, outs: tuple[Var, ...]) -> None:
        if is_opaque(op) or (op in VIEW_OPS and op != "cast" and args and isinstance(args[0], Var)
                             and id(args[0]) in self.eager_own):
            self.eager_own.update(id(o) for o in outs)


#: the (frozen) TensorType of each static (dtype, shape, device): a capture asks per node
_STATIC_TYPES: dict[tuple, TensorType] = {}


def _any_complex(args: tuple) -> bool:
    """A complex number among ``args`` (nested tuples and lists too); capture asks per op."""
    stack = [args]
    while stack:
        for a in stack.pop():
            if isinstance(a, (tuple, list)):
                stack.append(a)
            elif isinstance(a, complex):
                return True
    return False


def _dev(d: torch.device) -> str:
    return str(d) if d.type != "cuda" or d.index is not None else "cuda:0"
