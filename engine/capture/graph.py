"""Capture entry points for ``satfuse.jit`` and the ``torch.compile`` backend.

Both reuse the fx -> Trace converter of ``capture.py``; they differ from
``capture()`` in where the symbols come from:

- :func:`trace_from_graph` converts an fx graph that was traced under someone
  else's ShapeEnv (Dynamo's, in the backend), so the trace's symbols stand for
  Dynamo's and every guard we evaluate on them becomes a Dynamo guard.
- :func:`capture_symbolic` is ``capture`` with every argument dynamic by default
  (see ``capture``'s docstring for the range guards).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import sympy
import torch
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from ..ir import Namespace, Trace
from .convert import CaptureError, Converter
from .trace import Captured, capture


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
    conv = Converter(gm, list(names), list(example_values), list(range(len(ph))), env)
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
    """``capture`` with every argument dynamic by default (the jit's entry)."""
    return capture(fn, *example_inputs, dynamic=dynamic, name=name, **example_kwargs)
