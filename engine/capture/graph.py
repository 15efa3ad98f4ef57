"""Capture entry points for ``satfuse.jit`` and the ``torch.compile`` backend.

Both reuse the fx -> Trace converter (``convert.py``); they differ from
``capture()`` in where the symbols come from:

- :func:`capture_dynamo_graph` re-traces a Dynamo graph that writes, functionalized by capture
  under Dynamo's own fake mode (eager's refusals and write semantics, ``functional.py``);
- :func:`convert_aot_graph` converts the functional aten graph AOTAutograd traced from Dynamo's
  (no second trace) with :func:`trace_from_graph` under Dynamo's ShapeEnv, so the trace's
  symbols stand for Dynamo's and every guard we evaluate on them becomes a Dynamo guard.
- :func:`capture_symbolic` is ``capture`` with every argument dynamic by default and float
  arguments symbolic (see ``capture``'s docstring for the range guards and the floats).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import sympy
import torch
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from ..ir import Namespace, Trace
from .convert import CaptureError, Converter
from .eager_checks import probe_graph
from .functional import TRACING, AliasInfo, _lazy_bits, shared_outputs, trace_functional
from .symbols import layout_only, track_evaluations
from .trace import Captured, capture, decomposition_table, recorded


@dataclass
class GraphTrace:
    """A Trace converted from an fx graph, with the map from the graph's symbols to ours."""

    trace: Trace
    hints: dict[str, int]
    symbols: dict[sympy.Symbol, sympy.Symbol] = field(default_factory=dict)  # theirs -> ours

    def theirs(self, e: Any) -> Any:
        """An expression in our symbols, rewritten in the graph's (e.g. Dynamo's) symbols."""
        inv = {v: k for k, v in self.symbols.items()}
        return e.xreplace(inv) if isinstance(e, sympy.Basic) else e


def trace_from_graph(gm: torch.fx.GraphModule, example_values: Sequence[Any], shape_env: ShapeEnv | None,
                     names: Sequence[str] | None = None, name: str = "computation",
                     bound_guards_only: bool = True, aliases: Sequence[Any] | None = None) -> GraphTrace:
    """Convert a functional aten-level fx graph (from ``trace_functional``) into a Trace.

    ``example_values``: one per placeholder (fake tensors, SymInts, numbers); used where a
    placeholder has no ``meta['val']``. ``shape_env``: the ShapeEnv that owns the symbols
    (None for a fully static graph). ``bound_guards_only`` drops ShapeEnv guards that mention
    symbols no input of this graph binds (Dynamo's ShapeEnv holds the guards of the whole frame).
    """
    ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(ph) != len(example_values):
        raise CaptureError(f"graph has {len(ph)} placeholders but {len(example_values)} example values")
    if names is None:
        ns = Namespace()
        names = [ns.name(_clean(n.name)) for n in ph]
    env = shape_env if shape_env is not None else ShapeEnv()
    conv = Converter(gm, list(names), list(example_values), list(range(len(ph))), env, list(aliases or []))
    trace = conv.run()
    if bound_guards_only:
        bound = trace.symbols()
        trace.guards = [g for g in trace.guards if g.free_symbols <= bound]
    trace.name = name
    return GraphTrace(trace, dict(conv.hints), dict(conv.symbols))


def _clean(n: str) -> str:
    # Dynamo placeholder names: L_x_, L_self_modules_lin_parameters_weight_, s77, arg0_1, primals_3
    for pre in ("L_", "l_"):
        if n.startswith(pre):
            n = n[len(pre):]
    n = n.replace("self_modules_", "").replace("_parameters_", "_").replace("self_buffers_", "")
    return n.strip("_") or "x"


def capture_symbolic(fn: Callable, *example_inputs: Any, dynamic: bool | Sequence[int] = True,
                     name: str | None = None, **example_kwargs: Any) -> Captured:
    """``capture`` with every argument dynamic by default and dynamic floats as plan inputs
    (``Captured.float_inputs``): the jit's entry."""
    return capture(fn, *example_inputs, dynamic=dynamic, name=name, symbolic_floats=True, **example_kwargs)


@dataclass
class DynamoGraph:
    """A graph AOTAutograd traced, converted: the trace, the real tensors passed for lifted
    constants, the ShapeEnv that owns the symbols, and the layout-only guards conversion took back."""

    graph: GraphTrace
    consts: list[Any]
    shape_env: ShapeEnv | None
    dropped_guards: list[Any]
    timings: dict[str, float]
    fake_args: list[Any]  # the fake value of every input of the trace

    def add_guards(self, optimized: Trace) -> list[Any]:
        """Guards the optimizer added (rule obligations) evaluated on the graph's ShapeEnv, in its
        symbols: that records them as Dynamo guards. A guard false at the example is a rule bug."""
        have = set(self.graph.trace.guards)
        added = []
        for g in optimized.guards:
            if g in have or g is sympy.true:
                continue
            theirs = self.graph.theirs(g)
            if self.shape_env is None:
                raise CaptureError(f"guard {g} needs a ShapeEnv and the graph has none")
            if not bool(self.shape_env.evaluate_expr(theirs)):
                raise CaptureError(f"the optimized plan's guard {g} is false for the example inputs")
            added.append(theirs)
        return added


def convert_aot_graph(gm: torch.fx.GraphModule, example_inputs: list, name: str = "computation",
                      outputs_alias: bool = True, mark: "GuardMark | None" = None) -> DynamoGraph | None:
    """Convert a graph AOTAutograd handed to a compiler as it is: it is already a functional aten
    graph over our decomposition table (input mutations of an inference graph are its final
    ``copy_``s, SymFloat math is tensorified), traced under Dynamo's fake mode, so its symbols are
    Dynamo's and nothing is traced again. Placeholders are read as their fake ``meta['val']``.

    ``outputs_alias`` (inference and forward graphs): AOTAutograd rebuilds an output that aliases
    an input from the tensor the compiled graph returns (its size, stride and offset), so such
    outputs must be views of the input here too (:func:`_aot_output_aliases`). None when the
    graph returns an alias this trace cannot express: the caller runs AOTAutograd's graph.

    ``mark``: a :class:`GuardMark` taken before AOTAutograd traced Dynamo's graph; the guards that
    only decided strides since then are taken back (default: those the conversion adds)."""
    import time

    from torch._guards import detect_fake_mode

    t0 = time.perf_counter()
    gm, consts = _lift_get_attrs(gm)
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    n_graph = len(phs) - len(consts)
    fake_args = [n.meta.get("val", x) for n, x in zip(phs[:n_graph], example_inputs)]
    fake_mode = detect_fake_mode(fake_args)
    for c in consts:
        if fake_mode is None:
            from torch._subclasses.fake_tensor import FakeTensorMode

            fake_mode = FakeTensorMode(shape_env=ShapeEnv())
        fake_args.append(fake_mode.from_tensor(c, static_shapes=True))
    shape_env = fake_mode.shape_env if fake_mode is not None else None
    aliases = _aot_output_aliases(gm, len(phs)) if outputs_alias else []
    if aliases is None:
        return None
    mark = mark if mark is not None else GuardMark(shape_env)
    probe_graph(gm)  # eager's dtype refusals of the ops AOTAutograd kept (its decompositions probe theirs)
    with TRACING:
        gt = trace_from_graph(gm, fake_args, shape_env, names=[_clean(n.name) for n in phs], name=name,
                              aliases=aliases)
    dropped = mark.drop_layout_only()
    return DynamoGraph(gt, consts, shape_env, dropped, {"convert": time.perf_counter() - t0}, fake_args)


def _geometry_hint(t: torch.Tensor) -> tuple:
    """A tensor's shape, strides and offset, symbolic ones at their hints."""
    from .compat import hint

    return (tuple(hint(e) for e in t.shape), tuple(hint(e) for e in t.stride()), hint(t.storage_offset()))


def capture_dynamo_graph(gm: torch.fx.GraphModule, example_inputs: list, meta_key: str,
                         name: str = "computation") -> DynamoGraph:
    """Re-trace a Dynamo graph functionalized, on the placeholders' own fake values
    (``meta[meta_key]``, never the real tensors), and convert it: the backend's path for graphs
    that write (in place, ``out=``, through views), where capture's own functionalization applies
    eager's refusals and write semantics (``functional.py``) that AOTAutograd's trace does not."""
    import time

    from torch._guards import detect_fake_mode

    t0 = time.perf_counter()
    gm, consts = _lift_get_attrs(gm)
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    n_graph = len(phs) - len(consts)
    metas = []
    for i, n in enumerate(phs[:n_graph]):
        v = n.meta.get(meta_key, n.meta.get("val", n.meta.get("example_value")))
        x = example_inputs[i]
        if isinstance(v, torch.Tensor) and isinstance(x, torch.Tensor) and not isinstance(
                x, torch._subclasses.FakeTensor) and _geometry_hint(v) != _geometry_hint(x):
            raise CaptureError(
                f"input {i} of the graph: Dynamo's example value has another shape or strides than the tensor "
                "passed (the program changes the input's metadata in place, through an alias: "
                "t = x.contiguous(); t.transpose_(0, 1)); a re-trace on it would miss the change")
        metas.append(x if v is None else v)
    fake_mode = detect_fake_mode(example_inputs) or detect_fake_mode(
        [v for v in metas if isinstance(v, torch._subclasses.FakeTensor)])
    if fake_mode is None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake_mode = FakeTensorMode(shape_env=ShapeEnv())
    fake_args: list[Any] = []
    for v in [*metas, *consts]:
        if isinstance(v, torch.Tensor) and not isinstance(v, torch._subclasses.FakeTensor):
            v = fake_mode.from_tensor(v, static_shapes=True)  # never trace with real tensors
        elif isinstance(v, torch._subclasses.FakeTensor):
            # re-fakeify in the tracing mode ourselves (as make_fx's "fake" mode would) but keep
            # ``item_memo``: a float Dynamo left unspecialized (dynamic=True: a module's ``eps``,
            # ``p``, ``scaling``) is a 0-d tensor input whose ``.item()`` must be Dynamo's SymFloat
            memo = v.item_memo
            v = fake_mode.from_tensor(v)
            if memo is not None:
                v.item_memo = memo
        fake_args.append(v)
    shape_env = fake_mode.shape_env
    mark = GuardMark(shape_env)

    def flat_fn(*args: Any) -> list[Any]:
        out = gm(*args)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    with TRACING, fake_mode, track_evaluations(shape_env):
        fg = recorded(flat_fn, fake_args)
        tracer = "recorder" if fg is not None else "functionalization"
        fg = fg or trace_functional(flat_fn, fake_args, decomposition_table())
    agm = fg.gm
    if shape_env is not None and any(n.target is torch.ops.aten._local_scalar_dense.default
                                     for n in agm.graph.nodes):
        # SymFloat math becomes tensor math on the 0-d input, as AOTAutograd does for its graphs
        # (what cannot be tensorified makes Dynamo restart with that float specialized)
        from torch.fx.passes._tensorify_python_scalars import tensorify_python_scalars

        tensorify_python_scalars(agm, shape_env, fake_mode)
    # tensors the program creates from literals (``torch.tensor([])`` in HF's KV cache) are
    # ``get_attr`` constants of the re-trace: they become inputs too, passed like the lifted attrs
    names = [_clean(n.name) for n in phs]
    agm, literals = _lift_get_attrs(agm)
    for k, c in enumerate(literals):
        fake_args.append(fake_mode.from_tensor(c, static_shapes=True))
        names.append(f"literal{k}")
    dropped = mark.drop_layout_only()
    timings = {"retrace": time.perf_counter() - t0}
    t1 = time.perf_counter()
    gt = trace_from_graph(agm, fake_args, shape_env, names=names, name=name, aliases=fg.output_aliases)
    gt.trace.restrides = list(fg.restrides)
    gt.trace.provenance = f"re-trace of Dynamo's graph ({timings['retrace'] * 1e3:.1f} ms, {tracer})"
    timings["convert"] = time.perf_counter() - t1
    return DynamoGraph(gt, [*consts, *literals], shape_env, dropped, timings, fake_args)


def writes_tensors(gm: torch.fx.GraphModule) -> bool:
    """Whether a Dynamo graph writes a tensor: an in-place op or method (``add_``, ``torch.relu_``,
    ``copy_``; Dynamo inlines ``inplace=True`` into them), item assignment or an ``out=``."""
    import operator

    for n in gm.graph.nodes:
        if n.op not in ("call_function", "call_method"):
            continue
        name = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")
        if n.target is operator.setitem or "out" in n.kwargs or n.kwargs.get("inplace") is True or (
                name.endswith("_") and not name.startswith("__")):
            return True
    return False


def has_unused_results(gm: torch.fx.GraphModule) -> bool:
    """Whether a Dynamo graph computes a tensor nothing reads (``torch.gather(t, 0, i)`` never
    used): eager still runs it and it may raise on values (``engine/fallible.py``), but
    AOTAutograd's trace drops it; such a graph is captured by satfuse, which keeps it."""
    for n in gm.graph.nodes:
        if n.op in ("call_function", "call_method") and not n.users and isinstance(
                n.meta.get("example_value"), torch.Tensor):
            return True
    return False


def _aot_output_aliases(gm: torch.fx.GraphModule, n_inputs: int) -> list[AliasInfo | None] | None:
    """Eager's aliasing of the graph's outputs, from the metadata AOTAutograd collected for the graph
    it is compiling (``TracingContext.fw_metadata``): its outputs are (effect tokens, new values
    of inputs it mutates outside the graph, the user's outputs, ...); a user output that is an
    input or a view of one is that view here. An output aliasing an intermediate is rebuilt by
    AOTAutograd by replaying its views on a base the graph also returns, which needs static view
    arguments: with symbolic ones (or unknown metadata shapes) there is no plan (None)."""
    from torch._functorch._aot_autograd.schemas import OutputType
    from torch._guards import TracingContext

    ctx = TracingContext.try_get()
    meta = ctx.fw_metadata if ctx is not None else None
    outs = list(next(n for n in gm.graph.nodes if n.op == "output").args[0])
    aliases: list[AliasInfo | None] = [None] * len(outs)
    first: dict[Any, int] = {}
    for k, o in enumerate(outs):
        if isinstance(o, torch.fx.Node):
            if o in first:
                aliases[k] = AliasInfo("output", first[o])
            else:
                first[o] = k
    if meta is None:
        return aliases
    n_tok = len(meta.tokens)
    if len(meta.input_info) + n_tok > n_inputs:
        return None
    start = n_tok + meta.num_mutated_inp_runtime_indices
    for j, info in enumerate(meta.output_info):
        k = start + j
        if info.output_type in (OutputType.alias_of_input, OutputType.is_input):
            val = outs[k].meta.get("val") if k < len(outs) and isinstance(outs[k], torch.fx.Node) else None
            if info.base_idx is None or not isinstance(val, torch.Tensor) or any(_lazy_bits(val)):
                return None  # (a lazy conj/neg view: its geometry alone would lose the conjugation)
            aliases[k] = AliasInfo("input", n_tok + info.base_idx, tuple(val.size()), tuple(val.stride()),
                                   val.storage_offset())
        elif info.output_type in (OutputType.alias_of_intermediate, OutputType.alias_of_intermediate_save_as_output,
                                  OutputType.alias_of_intermediate_base_is_user_output):
            seq = info.view_meta_sequence
            if seq is None or any(vm.has_symbolic_inputs for vm in seq.sequence):
                return None
    # the values a forward saves for its backward follow the user's outputs: one that is an input
    # is that input (as eager's autograd saves it), not a copy of it made on every call
    phs = {n: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    for k in range(start + len(meta.output_info) + meta.num_intermediate_bases, len(outs)):
        o = outs[k]
        val = o.meta.get("val") if isinstance(o, torch.fx.Node) and o in phs else None
        if isinstance(val, torch.Tensor) and aliases[k] is None:
            aliases[k] = AliasInfo("input", phs[o], tuple(val.size()), tuple(val.stride()), val.storage_offset())
    # without grad AOTAutograd calls views of one intermediate ``non_alias``: their fake values
    # still share storage, as eager's outputs do
    shared_outputs([o.meta.get("val") if isinstance(o, torch.fx.Node) else None for o in outs], aliases)
    return aliases


def _lift_get_attrs(gm: Any) -> tuple[Any, list[Any]]:
    """Turn every ``get_attr`` tensor (parameter, buffer, constant) into a trailing
    placeholder; returns the rewritten module (a copy: Dynamo goes on reading its own graph,
    whose placeholders must all carry a ``grapharg``) and the real tensors to pass for them."""
    import copy

    if not any(n.op == "get_attr" for n in gm.graph.nodes):
        return gm, []
    gm = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    attrs = [n for n in gm.graph.nodes if n.op == "get_attr"]
    g = gm.graph
    last_ph = None
    for n in g.nodes:
        if n.op == "placeholder":
            last_ph = n
    consts: list[Any] = []
    for n in attrs:
        obj = gm
        for part in n.target.split("."):
            obj = getattr(obj, part)
        if not isinstance(obj, torch.Tensor):
            continue
        if last_ph is None:
            with g.inserting_before(next(iter(g.nodes))):
                ph = g.placeholder(f"attr_{n.target.replace('.', '_')}")
        else:
            with g.inserting_after(last_ph):
                ph = g.placeholder(f"attr_{n.target.replace('.', '_')}")
        last_ph = ph
        ph.meta.update(n.meta)
        n.replace_all_uses_with(ph)
        g.erase_node(n)
        consts.append(obj)
    gm.recompile()
    return gm, consts


class GuardMark:
    """Guards added to Dynamo's ShapeEnv while AOTAutograd traces and we convert become Dynamo
    guards. Those that only decide fake-tensor strides (``is_contiguous`` of a slice: ``dim0 != 1``) would make
    Dynamo recompile for no reason (our plans do not depend on strides, as in ``capture``):
    they are taken back, unless they are equalities (which may have specialized a symbol)
    or narrowed a symbol's value range (which later decisions may have relied on)."""

    def __init__(self, shape_env: Any) -> None:
        self.env = shape_env
        self.n = len(shape_env.guards) if shape_env is not None else 0
        self.ranges = dict(shape_env.var_to_range) if shape_env is not None else {}

    def drop_layout_only(self) -> list[Any]:
        if self.env is None:
            return []
        new = self.env.guards[self.n:]
        keep, dropped = [], []
        for g in new:
            stride_only = getattr(g, "sloc", None) is not None and layout_only(g, self.env)
            narrowed = any(self.env.var_to_range.get(s) != self.ranges.get(s) for s in g.expr.free_symbols)
            if stride_only and not isinstance(g.expr, sympy.Eq) and not narrowed:
                dropped.append(g.expr)
            else:
                keep.append(g)
        if dropped:
            self.env.guards[self.n:] = keep
        return dropped


