"""Rule obligations as plan checks.

A rewrite may rely on a fact the e-graph cannot prove: ``gather/take-to-onehot-max`` turns
``take_along_axis(x, i)`` into a max over a one-hot mask, equal only when every index is in
``[0, extent)`` (eager raises otherwise; the one-hot max quietly yields -inf). The rule states
it as data (rules/lang.egg's ``obligation``), extraction returns the obligations of the
chosen nodes (``Trace.obligations``), and here each becomes a check:

- data obligations (``index-in-range``) become :class:`checks.DataCheck` s of the pre-write
  check stage: placed right after the step that computes the index, and no caller buffer is
  written before them. A failure raises the exception type of the eager op whose bounds
  check the program relied on (capture records it: ``Trace.index_ops``; cross-entropy's
  ``IndexError: Target 5 is out of bounds.``, gather's and scatter's ``RuntimeError``), with
  eager's message followed by the rule, the index and the input it comes from;
- shape obligations (``le``) are guard-prologue predicates (``shape_guards``).

CPU (reference executor): one ``aminmax`` over the index and two scalar reads (a host
read of a CPU tensor). CUDA (:func:`obligation_flags`; emitted, not yet measured on a GPU):
the test is IR nodes, ``sum(cast(i < 0 | i >= n, i32))``, placed right after the index is
computed, so the segment that computes or reads the index also computes the count of bad
indices (no pass of its own over the index). The plan copies the 0-d count to pinned host
memory without blocking right after that segment and records an event; it waits on that
event (not on the device) only at the commit point: before the first write to a caller's
buffer, or, for a plan that writes none, after every step is queued, just before it returns.
"""

from __future__ import annotations

from typing import Any

import sympy
from satfuse.engine.ir import Namespace, Node, Obligation, Trace, Var
from satfuse.engine.vocab import infer

from .checks import DataCheck

#: eager op -> (exception type, message) it raises for an index out of range (CPU kernels)
EAGER_INDEX_ERRORS: dict[str, tuple[type[Exception], str]] = {
    "aten.nll_loss_forward": (IndexError, "Target {value} is out of bounds."),
    "aten.nll_loss_backward": (IndexError, "Target {value} is out of bounds."),
    "aten.nll_loss2d_forward": (IndexError, "Target {value} is out of bounds."),
    "aten.nll_loss2d_backward": (IndexError, "Target {value} is out of bounds."),
}
#: gather, scatter and the rest: ATen's index check
DEFAULT_INDEX_ERROR: tuple[type[Exception], str] = (
    RuntimeError, "index {value} is out of bounds for dimension with size {size}")

#: every element of {0} in [0, {1}) (aminmax: one pass; an empty index holds)
_IN_RANGE = "{0}.numel() == 0 or ((_ob := torch.aminmax({0})).min >= 0 and _ob.max < {1})"
#: on failure: the first element out of range, as eager reports it
_FIRST_BAD = "{0}[({0} < 0) | ({0} >= {1})].flatten()[0].item()"


def obligation_checks(trace: Trace) -> list[DataCheck]:
    """The trace's data obligations as pre-write checks."""
    inputs = {id(v) for v in trace.inputs}
    producer = {id(o): n for n in trace.nodes for o in n.outs}
    out = []
    for ob in trace.obligations:
        if not ob.is_data:
            continue
        index, extent = ob.args
        exc, msg = EAGER_INDEX_ERRORS.get(ob.eager_op, DEFAULT_INDEX_ERROR)
        size = extent if isinstance(extent, int) else "{size}"
        what = (f"satfuse: obligation {ob.kind!r} of rule {', '.join(ob.rules)}: {index.name} must lie in "
                f"[0, {extent}); it is computed from input {', '.join(_sources(index, inputs, producer))}")
        text = msg.format(value="{value}", size=size) + f" ({what})"
        out.append(DataCheck(_IN_RANGE, (_reshaped_input(index, inputs, producer), extent), exc, text, ", ".join(ob.rules),
                             detail={"value": _FIRST_BAD, **({} if isinstance(extent, int) else {"size": "{1}"})},
                             guards=index, rank=ob.rank))
    return out


def obligation_flags(trace: Trace, nodes: list[Node]) -> tuple[list[Node], list[DataCheck]]:
    """CUDA: ``nodes`` with each data obligation's test as IR nodes right after its index is
    computed (module docstring), and the checks that read their 0-d counts as flags."""
    checks = obligation_checks(trace)
    if not checks:
        return nodes, checks
    names = Namespace({v.name for v in trace.inputs} | {o.name for n in nodes for o in n.outs})
    producer = {id(o): k for k, n in enumerate(nodes) for o in n.outs}
    after: dict[int, list[Node]] = {}
    flagged = []
    for c in checks:
        index, extent = c.args
        dev = index.type.device

        def node(op: str, *args: Any, hint: str) -> Node:
            return Node(op, args, {}, (Var(names.name(hint), infer(op, args, dev)),))

        lo = node("lt", index, 0, hint=f"{index.name}_neg")
        hi = node("ge", index, extent, hint=f"{index.name}_big")
        bad = node("logical_or", lo.out, hi.out, hint=f"{index.name}_bad")
        cnt = node("cast", bad.out, "i32", hint=f"{index.name}_bad_i32")
        rank = index.type.rank
        flag = node("sum", cnt.out, tuple(range(rank)), 0, hint=f"{index.name}_nbad")
        after.setdefault(producer.get(id(index), -1), []).extend([lo, hi, bad, cnt, flag])
        flagged.append(DataCheck("{0} == 0", (flag.out, index, extent), c.error, c.message, c.source,
                                 detail={k: e.replace("{1}", "{2}").replace("{0}", "{1}") for k, e in c.detail.items()},
                                 flag=True))
    out = list(after.get(-1, []))
    for k, n in enumerate(nodes):
        out.append(n)
        out += after.get(k, [])
    return out, flagged


def shape_guards(trace: Trace) -> list[tuple[Any, Obligation]]:
    """The trace's shape obligations as ``(sympy predicate, obligation)`` for the guard prologue;
    those that hold for every call (numbers) are dropped, one that never holds is kept False."""
    out = []
    for ob in trace.obligations:
        if ob.kind != "le":
            continue
        # normalized as guards.extent_obligations writes its facts (e >= 0), so a duplicate is seen once
        g = sympy.Ge(sympy.expand(sympy.sympify(ob.args[1]) - sympy.sympify(ob.args[0])), 0)
        if g is not sympy.true:
            out.append((g, ob))
    return out


def _reshaped_input(v: Var, inputs: set[int], producer: dict[int, Any]) -> Var:
    """The plan input ``v`` is a reshape of (cross-entropy's ``target.unsqueeze(1)``), else ``v``.
    A reshape keeps the values and their row-major order, so the check and its message (the first
    index out of range) read the input itself, and no segment has to output the index for them:
    on CUDA nvFuser returned it as a view of the input, which the plan then copied on every call."""
    x = v
    while id(x) not in inputs:
        n = producer.get(id(x))
        if n is None or n.op != "reshape" or not isinstance(n.args[0], Var):
            return v
        x = n.args[0]
    return x


def _sources(v: Var, inputs: set[int], producer: dict[int, Any]) -> list[str]:
    """The plan inputs ``v`` is computed from (program order of discovery)."""
    names: list[str] = []
    stack, seen = [v], set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if id(x) in inputs:
            names.append(x.name)
        elif id(x) in producer:
            stack.extend(producer[id(x)].inputs())
    return names or [v.name]
