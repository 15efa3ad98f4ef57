"""Run a Trace with torch, op by op: the meaning of the IR.

Used to check rewrites (an extracted program must equal the captured one) and as the
body of fallback calls. Never mutates its inputs: write-backs are returned, not applied.
"""

from __future__ import annotations

from typing import Any, Sequence

import sympy

from .ir import IRError, ScalarType, TensorType, Trace, Var
from .vocab import (
    CREATION,
    EAGER_COPIES,
    EAGER_MADE,
    EAGER_STRIDES,
    IMPLS,
    dense,
    is_opaque,
    laid_out,
    resolve_opaque,
    writes_first_operand,
    written,
)


def bind_symbols(trace: Trace, inputs: Sequence[Any]) -> dict[sympy.Symbol, int]:
    env: dict[sympy.Symbol, int] = {}
    for v, x in zip(trace.inputs, inputs):
        if isinstance(v.type, TensorType):
            for e, n in zip(v.type.shape, x.shape):
                if isinstance(e, sympy.Symbol):
                    env.setdefault(e, int(n))
        elif isinstance(v.type, ScalarType) and isinstance(v.type.value, sympy.Symbol):
            env.setdefault(v.type.value, int(x))
    return env


def evaluate(a: Any, vals: dict[int, Any], env: dict) -> Any:
    if isinstance(a, Var):
        return vals[id(a)]
    if isinstance(a, tuple):
        return tuple(evaluate(x, vals, env) for x in a)
    if isinstance(a, list):
        return [evaluate(x, vals, env) for x in a]
    if isinstance(a, sympy.Basic):
        r = a.xreplace({k: sympy.Integer(v) for k, v in env.items()})
        if not r.is_number:
            raise IRError(f"unbound symbols in {a}")
        return int(r) if r.is_integer else float(r)
    return a


def run_node(n: Any, vals: dict[int, Any], env: dict, inputs: frozenset[int] = frozenset()) -> list[Any]:
    """``n``'s results. An opaque op reads each operand laid out as eager's kernel did, but for the
    trace's ``inputs`` (ids), read as they are, as the plan reads a caller's tensors
    (``lowering/plan.py``'s ``_operand``), unless eager's kernel read a copy of one."""
    args = evaluate(n.args, vals, env)
    kwargs = {k: evaluate(v, vals, env) for k, v in n.kwargs.items()}
    if is_opaque(n.op):
        layouts = kwargs.pop(EAGER_STRIDES, ())
        copies = kwargs.pop(EAGER_COPIES, ())
        made = kwargs.pop(EAGER_MADE, ())

        def operand(i: int, a: Any, v: Any) -> Any:
            s = layouts[i] if i < len(layouts) else None
            if i in made:  # a value the program made: eager's layout, or dense, never the caller's as is
                return dense(a) if s is None else laid_out(a, s)
            if s is None or (i not in copies and isinstance(v, Var) and id(v) in inputs):
                return a
            return laid_out(a, s)

        args = [operand(i, a, v) for i, (a, v) in enumerate(zip(args, n.args))]
        if args and writes_first_operand(n.op):
            args[0] = written(args[0])
        out = resolve_opaque(n.op)(*args, **kwargs)
        return list(out) if isinstance(out, (tuple, list)) else [out]
    if n.op in CREATION:
        kwargs["device"] = n.out.type.device
    return [IMPLS[n.op](*args, **kwargs)]


def run_trace(trace: Trace, inputs: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
    """(outputs, {input name: final value}) for ``inputs``; inputs are not modified."""
    env = bind_symbols(trace, inputs)
    vals: dict[int, Any] = {id(v): x for v, x in zip(trace.inputs, inputs)}
    ins = frozenset(vals)
    for n in trace.nodes:
        for o, r in zip(n.outs, run_node(n, vals, env, ins)):
            vals[id(o)] = r
    outs = [evaluate(o, vals, env) if isinstance(o, (Var, sympy.Basic)) else o for o in trace.outputs]
    return outs, {buf.name: vals[id(val)] for buf, val in trace.writebacks}



