"""Tracing on one dispatch mode: each aten op recorded into an FX graph over the fake tensors,
with no ``make_fx`` proxy machinery and no ``FunctionalTensorMode``.

Functionalization exists for writes through aliases. Where a program writes only tensors no
other tensor shares memory with (an optimizer step: ``m.mul_(b1).add_(g)``), its functional
form is plain bookkeeping: the in-place op is recorded as its functional variant
(``mul_`` -> ``mul``), later reads of the tensor read that value, and the graph ends with one
``copy_(input, value)`` per written input, as in ``trace_functional``'s graphs. Tracing through
``FunctionalTensorMode`` and ``make_fx``'s proxy mode costs every op several times what the
fake kernel does (issue 17: capture was 60 % of ``optimize``).

The recorder produces the graph ``trace_functional`` does (the same ops, decomposed by the
same table, with ``meta['val']`` and ``meta['original_aten']``, tensor literals as
``get_attr`` + ``lift_fresh_copy``) and the same output aliasing (read off the program's own
tensors, whose geometry is eager's), under the same :class:`EagerRewrites` checks.

It stops with :class:`NotRecordable` at the first thing outside that case (a write to a tensor
that shares memory, is not contiguous, or whose functional value would differ in dtype, shape
or strides; ``out=``; a view of a written tensor; an in-place view op; an input or output that
requires grad while grad mode is on; a data-dependent op; a tensor it did not make), and capture traces the
program again the functional way, which decides it as before: the recorder is a shortcut, never a
second set of verdicts. It takes ``optimize``'s static captures (no ShapeEnv), symbolic ones (every
extent a ShapeEnv symbol, as ``satfuse.jit`` captures: functionalization's wrappers cost an op
with symbolic extents about three times what its fake kernel does) and the ``torch.compile``
backend's re-trace of a writing graph whose extents Dynamo kept static."""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable, Sequence

import torch
from torch._dispatch.python import enable_python_dispatcher
from torch._functorch._aot_autograd.utils import _get_autocast_states
from torch._subclasses.fake_impls import fast_detach
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx._lazy_graph_module import _make_graph_module, _use_lazy_graph_module
from torch.utils._python_dispatch import TorchDispatchMode, autograd_would_have_decomposed
from torch.utils.weak import WeakTensorKeyDictionary

from .compat import symbol_values
from .fake_memo import FakeMemo
from .functional import (
    _DEVICE,
    AliasInfo,
    EagerRewrites,
    FunctionalGraph,
    UntracedEffects,
    _is_inplace_view,
    _storage_id,
    _views,
    _writes,
    alias_outputs,
    fake_device,
    shared_outputs,
)
from .inplace import INPLACE_OF, functional_variant

aten = torch.ops.aten


class NotRecordable(Exception):
    """The program is outside what the recorder traces (a write, grad, a data-dependent op...)."""


def recordable_inputs(fakes: Sequence[Any], symbolic: bool = False) -> bool:
    """The recorder's precondition on the inputs: no two tensor inputs share memory (one object
    at two positions, or views of one storage: the functional path gives each its own wrapper),
    every extent is a plain int unless ``symbolic`` (see :func:`trace_recorded`), and none requires
    grad while grad mode is on (which outputs alias an input is then autograd's business too;
    under ``no_grad``, as the backend re-traces a writing graph, it is a matter of storage alone,
    as in the functional path)."""
    tensors = [f for f in fakes if isinstance(f, torch.Tensor)]
    ids = [_storage_id(f) for f in tensors]
    if len(set(ids)) != len(ids):
        return False
    if torch.is_grad_enabled() and any(f.requires_grad for f in tensors):
        return False
    if symbolic:
        return True
    return all(type(e) is int for f in tensors for e in (*f.shape, *f.stride(), f.storage_offset()))


def trace_recorded(flat_fn: Callable, fakes: Sequence[Any], decompositions: dict,
                   symbolic: tuple[type, ...] = ()) -> FunctionalGraph:
    """``flat_fn`` traced by :class:`_Recorder` (call under :data:`TRACING` and the fake mode of
    ``fakes``); raises :class:`NotRecordable`, or whatever the program raised, when it is not
    recordable: the caller then traces it the functional way.

    ``symbolic``: the fakes' extents may be a ShapeEnv's symbols, and an op's arguments of these
    kinds (``SymInt``, ``SymBool``; ``SymFloat`` where no pass must rewrite float math on the
    graph, as capture's ``symbolic_floats`` does) are recorded as the values themselves, not as
    the graph of ``sym_size`` and arithmetic nodes make_fx's proxy mode builds (conversion reads a
    value's expression either way); the fake kernels make the same guards on the ShapeEnv as under
    make_fx. A recorder that stops leaves them there: the caller traces again on a fresh ShapeEnv."""
    graph = torch.fx.Graph()
    root = torch.nn.Module()
    rec = _Recorder(graph, root, decompositions, _memo(fakes), tuple(symbolic))
    placeholders = [graph.placeholder(f"arg{i}_1") for i in range(len(fakes))]
    for ph, f in zip(placeholders, fakes):
        ph.meta["val"] = f  # a symbolic int argument too: conversion types the input by it
        if isinstance(f, torch.Tensor):
            rec.track(f, ph)
    check = EagerRewrites(fakes)
    autocast = _get_autocast_states()
    # no LayoutDecisions (layouts.py: a torch-function mode, half of the checks' overhead on
    # GPT-style blocks): it acts on views of written tensors, where the recorder stops, and on views
    # whose layout diverged from eager's, which its writes (each laid out as its target) never make
    with enable_python_dispatcher(), rec, check, UntracedEffects(check):
        outs = flat_fn(*fakes)
    if autocast != _get_autocast_states() or check.restrides:
        raise NotRecordable("the program changes state a plan carries back")
    if any(isinstance(o, torch.Tensor) and o.requires_grad for o in outs):
        raise NotRecordable("an output requires grad (how it aliases is autograd's business)")
    mutated = []
    for i, f in enumerate(fakes):  # write-backs in input order, before the outputs (as trace_functional's)
        if isinstance(f, torch.Tensor) and f in rec.values:
            mutated.append(i)
            graph.call_function(aten.copy_.default, (placeholders[i], rec.node_of(rec.values[f]))).meta["val"] = f
    graph.output([rec.node_of(rec.current(o)) if isinstance(o, torch.Tensor) else o for o in outs])
    with _use_lazy_graph_module(True):
        gm = _make_graph_module(root, graph)
    aliases = _aliases(fakes, outs)
    shared_outputs(outs, aliases)
    return FunctionalGraph(gm, mutated, aliases, [])


def _memo(fakes: Sequence[Any]) -> Callable:
    """How the recorder runs an op on the fake mode: through a :class:`FakeMemo` of the inputs' mode,
    unless another infra mode (an ambient ``make_fx``'s proxy or functionalization) sits between."""
    mode = next((f.fake_mode for f in fakes if isinstance(f, FakeTensor)), None)
    keys = torch._C._TorchDispatchModeKey
    if mode is None or mode.shape_env is not None or any(torch._C._get_dispatch_mode(k) is not None for k in (keys.PROXY, keys.FUNCTIONAL)):
        return _call
    return FakeMemo(mode)


def _call(func: Any, args: tuple, kwargs: dict) -> Any:
    return func(*args, **kwargs)


def _aliases(fakes: Sequence[Any], outs: Sequence[Any]) -> list[AliasInfo | None]:
    """Which outputs are inputs or views of one: with nothing requiring grad, exactly those sharing
    an input's storage (what ``_input_aliases`` reads off the wrappers). A written input is its own
    object here; a view of one never reaches this far (the recorder stops at it)."""
    by_storage = {_storage_id(f): i for i, f in enumerate(fakes) if isinstance(f, torch.Tensor)}
    by_object = {id(f): i for i, f in enumerate(fakes) if isinstance(f, torch.Tensor)}

    def base_of(o: torch.Tensor) -> int | None:
        base = by_storage.get(_storage_id(o))
        if base is None and o._base is not None:  # a fake view of an empty tensor may get a storage of its own
            base = by_object.get(id(o._base))
        return base

    return alias_outputs(outs, fakes, base_of)


#: per (op, device type): autograd would have run the op's CompositeImplicitAutograd kernel
_DECOMPOSES: dict[tuple[Any, str], bool] = {}
#: ops the recorder passes through unrecorded (make_fx's proxy mode does too)
_UNRECORDED = frozenset({_DEVICE})
_METADATA = (aten.size.default, aten.stride.default, aten.storage_offset.default)


class _Recorder(TorchDispatchMode):
    """Below :class:`EagerRewrites`, above the fake mode: every op that reaches it becomes a graph
    node (after the decomposition table and CompositeImplicit decompositions, as in ``make_fx``),
    its fake outputs the node's ``meta['val']``."""

    def __init__(self, graph: torch.fx.Graph, root: torch.nn.Module, decompositions: dict,
                 run: Callable = _call, symbolic: tuple[type, ...] = ()) -> None:
        super().__init__()
        self.run = run  # ``func(*args, **kwargs)`` on the fake mode (fake_memo.py)
        self.symbolic = symbolic  # the kinds of symbolic arguments recorded as they are
        self.graph = graph
        self.root = root
        self.decompositions = decompositions
        # by tensor, weakly (make_fx's tracker does too): a reference of ours to a result changes what
        # torch does with it (the ``*_like`` factories' bindings detach a result someone else holds)
        self.nodes: WeakTensorKeyDictionary = WeakTensorKeyDictionary()
        self.original: Any = None  # the outermost op being recorded (``meta['original_aten']``)
        self.constants = 0
        #: the written tensors' current values, by the program's tensor (functionalization's wrappers)
        self.values: WeakTensorKeyDictionary = WeakTensorKeyDictionary()
        self.sharing: dict[int, int] = {}  # tensors made per storage: a write needs its target alone there
        self.storages: list[Any] = []  # those storages, alive: a freed one's address (its key) is reused

    def track(self, t: torch.Tensor, node: torch.fx.Node) -> None:
        self.nodes[t] = node
        sid = _storage_id(t)
        n = self.sharing.get(sid, 0)
        if not n and sid >= 0:
            self.storages.append(t.untyped_storage())
        self.sharing[sid] = n + 1

    def current(self, a: Any) -> Any:
        """What the program's tensors in ``a`` (a tensor, or lists of them) hold now: each its value
        if the program wrote it, itself otherwise."""
        if isinstance(a, torch.Tensor):
            return self.values.get(a, a)
        if isinstance(a, (list, tuple)):
            return type(a)(self.current(x) for x in a)
        return a

    def node_of(self, t: torch.Tensor) -> torch.fx.Node:
        node = self.nodes.get(t)
        if node is None:
            raise NotRecordable("an output the recorder did not make")
        return node

    def _arg(self, a: Any) -> Any:
        if isinstance(a, torch.Tensor):
            node = self.nodes.get(a)
            if node is not None:
                return node
            if isinstance(a, FakeTensor) or type(a) is not torch.Tensor:
                raise NotRecordable("a tensor the recorder did not make")
            name = f"_tensor_constant{self.constants}"  # a literal (``torch.tensor(...)``): make_fx's get_attr
            self.constants += 1
            setattr(self.root, name, a)
            return self.graph.get_attr(name)
        if isinstance(a, (list, tuple)):
            return type(a)(self._arg(x) for x in a)
        if self.symbolic and isinstance(a, self.symbolic) and _backed(a):
            return a
        if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise NotRecordable("a symbolic value")
        return a

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        dev = fake_device(func, args)
        if dev is not None:
            return dev
        kwargs = kwargs or {}
        outer = self.original is None
        if outer:
            self.original = func
        try:
            return self._record(func, args, kwargs)
        finally:
            if outer:
                self.original = None

    def _record(self, func: Any, args: tuple, kwargs: dict) -> Any:
        if func in _UNRECORDED:
            return func(*args, **kwargs)
        if _is_inplace_view(func):
            raise NotRecordable(f"{func} changes a tensor's geometry")
        if _writes(func):
            return self._write(func, args, kwargs)
        if self.values:  # reads of written tensors read their values
            now, kw = self.current(args), {k: self.current(v) for k, v in kwargs.items()}
            if _views(func) and not (_same(now, args) and _same(tuple(kw.values()), tuple(kwargs.values()))):
                raise NotRecordable(f"{func} views a written tensor")
            args, kwargs = now, kw
        if torch.Tag.data_dependent_output in func.tags or torch.Tag.dynamic_output_shape in func.tags:
            raise NotRecordable(f"{func} reads data")
        decomp = self.decompositions.get(func)
        if decomp is not None:
            with self:
                r = decomp(*args, **kwargs)
            if r is not NotImplemented:  # a decomposition may decline (``trace._off_the_cpu``)
                return r
        if func in _METADATA:  # sizes, strides, offset: read off the tensor, as make_fx records no node for them
            return self.run(func, args, kwargs)  # (a symbolic capture's decompositions ask ``aten.size`` so)
        if self._decomposes(func, args, kwargs):
            with self:
                r = func.decompose(*args, **kwargs)
            if r is not NotImplemented:
                return r
        node_args, node_kwargs = self._arg(args), {k: self._arg(v) for k, v in kwargs.items()}
        if func is aten.lift_fresh.default:
            func = aten.lift_fresh_copy.default
        out = self.run(func, args, kwargs)
        node = _call_node(self.graph, func, node_args, node_kwargs, func.overloadpacket.__name__)
        node.meta["val"] = _snapshot(out) if _factory(func) else out
        node.meta["original_aten"] = self.original
        if isinstance(out, torch.Tensor):
            self.track(out, node)
        elif isinstance(out, (list, tuple)):
            for i, o in enumerate(out):
                if isinstance(o, torch.Tensor):
                    item = _call_node(self.graph, operator.getitem, (node, i), {}, "getitem")
                    item.meta["val"] = o
                    self.track(o, item)
                elif o is not None and not isinstance(o, (int, float, bool)):
                    raise NotRecordable(f"{func} returns {type(o).__name__}")
        elif isinstance(out, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise NotRecordable("a symbolic value")
        return out

    def _write(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """An in-place op on tensors alone in their memory (``self``, or each tensor of a foreach
        op's ``self`` list): its functional variant on their current values gives their new
        values; the program gets what the in-place op returns (the tensor itself, or nothing)."""
        functional = functional_variant(func)
        target = args[0] if args else None
        targets = list(target) if isinstance(target, (list, tuple)) else [target]
        if functional is None or not targets or not all(isinstance(t, torch.Tensor) and t in self.nodes
                                                        for t in targets):
            raise NotRecordable(f"{func}: not an in-place op on tensors of the program")
        if len({id(t) for t in targets}) != len(targets) or any(
                t._base is not None or self.sharing.get(_storage_id(t)) != 1 or not t.is_contiguous() for t in targets):
            raise NotRecordable(f"{func} writes a view, a tensor that shares memory, or a strided tensor")
        geometry = [(t.shape, t.stride(), t.storage_offset(), _storage_id(t)) for t in targets]
        out = self.run(func, args, kwargs)  # the in-place op's own checks on eager's geometry (a fake write changes nothing)
        if [(t.shape, t.stride(), t.storage_offset(), _storage_id(t)) for t in targets] != geometry:
            raise NotRecordable(f"{func} changed the geometry or memory of the tensor it writes")  # resize_, set_
        now = self.current(args)
        kw = {k: self.current(v) for k, v in kwargs.items()}
        outer, self.original = self.original, functional  # recorded as functionalization emits it
        try:
            value = self._record(functional, now, kw)
        finally:
            self.original = outer
        values = list(value) if isinstance(target, (list, tuple)) and isinstance(value, (list, tuple)) else [value]
        if len(values) != len(targets) or not all(
                isinstance(v, torch.Tensor) and v.dtype == t.dtype and v.shape == t.shape and v.device == t.device
                and v.stride() == t.stride() for v, t in zip(values, targets)):
            raise NotRecordable(f"{func}: the functional value is not laid out as the written tensor")
        for t, v in zip(targets, values):
            self.values[t] = v
        node = self.nodes.get(value) if isinstance(value, torch.Tensor) else None
        if node is not None and node.target is functional:  # as EagerRewrites marks it on the functional path
            node.meta.setdefault("custom", {})[INPLACE_OF] = func
        return out if isinstance(target, (list, tuple)) else target

    @staticmethod
    def _decomposes(func: Any, args: tuple, kwargs: dict) -> bool:
        dev = next((a.device.type for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
        if dev is None:  # tensors only inside lists: make_fx's own test, uncached
            return autograd_would_have_decomposed(func, torch.utils._pytree.tree_leaves((args, kwargs)))
        hit = _DECOMPOSES.get((func, dev))
        if hit is None:
            hit = _DECOMPOSES[(func, dev)] = autograd_would_have_decomposed(func, [a for a in args if isinstance(
                a, torch.Tensor)] + [a for a in kwargs.values() if isinstance(a, torch.Tensor)])
        return hit


def _call_node(graph: torch.fx.Graph, target: Any, args: tuple, kwargs: dict, name: str) -> torch.fx.Node:
    """``graph.create_node("call_function", target, args, kwargs, name=name)``, with the arguments set
    after: ``create_node`` walks them (pytree) for raw symbolic values to warn about, which a recorded
    argument never is (``_Recorder._arg`` stops at them), and that walk was most of a node's cost."""
    node = graph.create_node("call_function", target, name=name)
    if args:
        node.args = args
    if kwargs:
        node.kwargs = kwargs
    return node


def _backed(a: Any) -> bool:
    """A symbolic value spelled in the inputs' symbols only (no data-dependent, unbacked one)."""
    return a.node.expr.free_symbols <= symbol_values(a.node.shape_env).keys()


def _same(a: tuple, b: tuple) -> bool:
    """The same objects, element by element (``==`` on tensors would be an op)."""
    return len(a) == len(b) and all(x is y or isinstance(x, (list, tuple)) and isinstance(y, (list, tuple))
                                    and _same(tuple(x), tuple(y)) for x, y in zip(a, b))


def _snapshot(val: Any) -> Any:
    """A detached alias of a fake result (make_fx's ``snapshot_fake``). A factory's binding
    (``torch.zeros_like``: ``make_variable``) detaches a result that something else in Python still
    holds, so the ``meta['val']`` of a factory's node must not be the result itself."""
    return fast_detach(val.fake_mode, val) if isinstance(val, FakeTensor) else val


@functools.cache
def _factory(func: Any) -> bool:
    """The op takes TensorOptions (a factory: ``zeros_like``, ``full``, ``arange``...)."""
    return any(a.name == "pin_memory" for a in func._schema.arguments)


