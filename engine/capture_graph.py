"""Capture entry points for ``satfuse.jit`` and the ``torch.compile`` backend.

Both reuse the fx -> Trace converter of ``capture.py``; they differ from
``capture()`` in where the symbols come from:

- :func:`trace_from_graph` converts an fx graph that was traced under someone
  else's ShapeEnv (Dynamo's, in the backend), so the trace's symbols stand for
  Dynamo's and every guard we evaluate on them becomes a Dynamo guard.
- :func:`capture_symbolic` traces a plain function under a ShapeEnv of its own
  in which int scalars are *unspecified* symbols (as Dynamo makes them): no 0/1
  specialization and no assumed sign, so ``f(0)``, ``f(1)`` and ``f(-3)`` share a
  plan whenever the program allows it. Tensor dims follow torch's rules (a dim of
  size 0 or 1 is a constant; other dynamic dims are symbols assumed ``>= 2``).
  Every assumption the ShapeEnv made about a symbol's range becomes an explicit
  guard of the trace: ``make_fx`` decides e.g. ``x.squeeze(0)`` on a ``[s0, 4]``
  tensor with no guard because ``s0 >= 2`` is assumed, so a plan without the range
  guard would be silently wrong for a size-1 call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import sympy
import torch
import torch.utils._pytree as pytree
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

from .capture import Captured, CaptureError, _Converter, _leaf_names, decomposition_table
from .ir import IRError, Namespace, Trace


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
                     bound_guards_only: bool = True) -> GraphTrace:
    """Convert an aten-level fx graph (from ``make_fx``) into a Trace.

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
    conv = _Converter(gm, list(names), list(example_values), list(range(len(ph))), env)
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
    """Trace ``fn`` on fake copies of the inputs under a ShapeEnv of our own (see module doc).

    ``dynamic``: True makes every tensor dim and int scalar symbolic; False bakes them all
    (each becomes a guarded constant); a list of *argument positions* (and keyword names)
    makes only those arguments dynamic. Floats and bools are always guarded constants.
    """
    from torch._dynamo.source import LocalSource

    t0 = time.perf_counter()
    leaves, in_spec = pytree.tree_flatten((example_inputs, example_kwargs))
    positions = [i for i, x in enumerate(leaves) if isinstance(x, (torch.Tensor, int, float, bool))]
    dyn_leaves = _dynamic_leaves(example_inputs, example_kwargs, dynamic)
    arg_names = _leaf_names(fn, example_inputs, leaves, positions)
    shape_env = ShapeEnv(duck_shape=False)
    mode = torch._subclasses.fake_tensor.FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=False)
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
            gm = make_fx(flat_fn, tracing_mode="real", decomposition_table=decomposition_table())(*fakes)
    except IRError:
        raise
    except Exception as e:  # torch raises many kinds; say where it came from
        raise CaptureError(f"capture of {getattr(fn, '__name__', fn)!r} failed while tracing: "
                           f"{type(e).__name__}: {e}") from e
    conv = _Converter(gm, arg_names, leaves, positions, shape_env)
    trace = conv.run()
    trace.guards = list(trace.guards) + range_guards(shape_env, conv.symbols, trace)
    trace.name = name or getattr(fn, "__name__", "computation")
    if not trace.name.isidentifier():
        trace.name = "computation"
    secs = time.perf_counter() - t0
    trace.provenance = f"capture ({secs * 1e3:.1f} ms)"
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
    # kwargs flatten in sorted-key order for dicts
    for key in sorted(kwargs):
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
            b = int(bound_val)
            g = rel(ours, b)
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
        else:
            if (isinstance(h, sympy.LessThan) and c <= b) or (isinstance(h, sympy.StrictLessThan) and c <= b + 1):
                return True
    return False
