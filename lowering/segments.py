"""Partition a Trace into nvFuser segments and fallback torch calls.

Greedy, in program order: each fusible node joins the current segment unless that would
make the segment graph cyclic (one of its operands depends, through something outside
the segment, on the segment itself) or would put a looked-up tensor (``slice``, ``pad``,
``cat``, ``take_along_axis``, ``index_select``) inside the segment that reads it
(``support.needs_segment_input``); otherwise it starts a new segment. Non-fusible nodes
(opaque torch ops, ``gather``, ``scatter``, ``index_copy``, unsupported dtypes) become
fallback steps. Steps are then ordered topologically (ties by creation order), so a
segment that kept growing past a fallback it does not depend on runs after it.

Views of values from outside every segment (a program input, a fallback's result, or such
a view again: ``support.is_view``) are not segment work: a segment that holds only them
would copy or reshape what torch returns as a view. They join no segment in the greedy
pass; afterwards each segment that reads one re-derives it inside (free: nvFuser reads
through the view), and a fallback, a program output, a write-back or a looked-up operand
that needs one gets it as a torch view step (no kernel, nothing moved; nvFuser's alias
analysis would return it without a kernel too). So no segment copies or reshapes a
fallback's result, and the plan materializes what an eager run of the same views would.

Segments are named ``seg0, seg1, ...`` in execution order; their inputs and outputs are
sorted by name. A segment output is any value used outside the segment, by a
write-back, or as a program output.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, Union

import sympy
from satfuse.engine.fallible import consumes_rng
from satfuse.engine.ir import Node, TensorType, Trace, Var
from satfuse.engine.vocab import VIEW_OPS, is_opaque, resolve_opaque, writes_first_operand

from .checks import can_raise
from .support import SUPPORT, fallback_reason, segment_input_vars


@dataclass(eq=False)
class Segment:
    """A fused region: nodes in program order, inputs/outputs sorted by name.

    ``aliases`` ((buffer input, value) pairs) are the in-place write-backs this segment
    performs with ``add_output(value, alias_input=buffer)``; filled in by ``writeback.py``.
    """

    name: str
    nodes: list[Node]
    inputs: list[Var] = field(default_factory=list)
    outputs: list[Var] = field(default_factory=list)
    aliases: list[tuple[Var, Var]] = field(default_factory=list)
    #: makes :attr:`predicted` (``plan.lower`` gives it ``kernels.predict`` of the finished segment)
    predictor: Callable[[], Any] | None = field(default=None, repr=False, compare=False)
    kind = "segment"

    @property
    def predicted(self) -> Any:
        """nvFuser's own segmentation of it (``kernels.predict``), made when first asked: a report
        (``explain``, the byte counts) that no lowering decision reads, and a pass over every node
        (a tenth of lowering a 10k-op chain)."""
        got = self.__dict__.get("_predicted")
        if got is None and self.predictor is not None:
            got = self.__dict__["_predicted"] = self.predictor()
        return got

    @property
    def ops(self) -> list[str]:
        return [n.op for n in self.nodes]

    def __repr__(self) -> str:
        return f"Segment({self.name}: {', '.join(self.ops)})"


@dataclass(eq=False)
class Fallback:
    """One node run as a torch call (opaque aten op, or a vocabulary op nvFuser does not fuse)."""

    node: Node
    reason: str
    in_place: Var | None = None  # the caller's buffer it writes in place (writeback.py decides)
    kind = "fallback"

    @property
    def name(self) -> str:
        return self.node.op

    def __repr__(self) -> str:
        return f"Fallback({self.node.op}: {self.reason})"


Step = Union[Segment, Fallback]

#: the reason a free view (module docstring) runs as a torch call
TORCH_VIEW = "of a value from outside every segment (no kernel)"



def opaque_aliasing(op: str) -> list[bool]:
    """Per result of an opaque torch op: whether its schema says it aliases an input (a view)."""
    try:
        schema = resolve_opaque(op)._schema
    except Exception:  # unknown op: assume every result may alias every input
        return [True] * 8
    if writes_first_operand(op):  # the plan runs it on a copy of its target (vocab.written)
        return [False] * max(1, len(schema.returns))
    return [r.alias_info is not None for r in schema.returns] or [False]


def may_alias_nodes(trace: Trace, nodes: list[Node]) -> dict[int, frozenset[int]]:
    """id(var) -> ids of the input Vars whose (old) storage the value may share."""
    al: dict[int, frozenset[int]] = {}
    for v in trace.inputs:
        if isinstance(v.type, TensorType):
            al[id(v)] = frozenset({id(v)})
    for n in nodes:
        src: frozenset[int] = frozenset()
        for v in n.inputs():
            src |= al.get(id(v), frozenset())
        if not src:
            continue
        if is_opaque(n.op):
            flags = opaque_aliasing(n.op)
            for i, o in enumerate(n.outs):
                if flags[min(i, len(flags) - 1)]:
                    al[id(o)] = src
        elif n.op in VIEW_OPS:
            a0 = n.args[0]
            if isinstance(a0, Var) and id(a0) in al:
                al[id(n.out)] = al[id(a0)]
    return al


def data_inputs(n: Node) -> Sequence[Var]:
    """Vars whose *values* a fused node reads. ``copy_``'s destination gives only dtype and shape.
    Read-only: memoized on the node's op and (immutable) args tuple, as ``Node.inputs`` is, since
    the lowering passes ask it of every node several times."""
    if n.kwargs:
        return n.inputs()
    memo = n.__dict__.get("_data_inputs")
    if memo is not None and memo[0] is n.args and memo[1] == n.op:
        return memo[2]
    out = tuple(a for a in n.args[1:] if isinstance(a, Var)) if n.op == "copy_" else tuple(n.inputs())
    n.__dict__["_data_inputs"] = (n.args, n.op, out)
    return out


def live_nodes(trace: Trace) -> list[Node]:
    """Dead-code elimination: drop vocabulary nodes no output, write-back or effect
    (``Trace.effects``) needs; opaque ones are kept (they may raise or consume random state)."""
    need: set[int] = {id(v) for v in trace.effects}
    for o in trace.outputs:
        if isinstance(o, Var):
            need.add(id(o))
    for buf, val in trace.writebacks:
        need.add(id(val))
    keep: list[Node] = []
    for n in reversed(trace.nodes):
        if is_opaque(n.op) or any(id(o) in need for o in n.outs):
            keep.append(n)
            for v in n.inputs():
                need.add(id(v))
    keep.reverse()
    return keep


def partition(trace: Trace, nodes: list[Node] | None = None, guarded: frozenset[int] = frozenset()) -> list[Step]:
    """Steps in execution order (see the module docstring). ``guarded``: ids of the Vars a data
    check guards (a rule's index obligation), which runs before the first step reading them: a
    node reading one made outside the current segment starts a new segment rather than join one
    holding an op that may raise, whose error eager would raise first (a value the segment makes
    is checked after it anyway)."""
    nodes = live_nodes(trace) if nodes is None else nodes
    groups: list[list[Node]] = []
    kinds: list[str] = []
    reasons: dict[int, str] = {}
    deps: dict[int, int] = {}  # id(var) -> bitmask of groups the value depends on (incl. its own)
    group_of: dict[int, int] = {}  # id(var) -> producing group
    cur: int | None = None
    last_fallible = -1  # the newest group holding an op that may raise on data
    why = {id(n): fallback_reason(n) for n in nodes}  # each node's, once (free_views asks too)
    raises = _can_raise_by_op()
    free = free_views(nodes, why)  # id(var) -> the view node: placed after the greedy pass
    for n in nodes:
        ins = n.inputs()
        mask = 0
        for v in ins:
            mask |= deps.get(id(v), 0)
        if n.outs and id(n.outs[0]) in free:  # depends on what its operand does; no group of its own yet
            src = n.args[0]
            deps[id(n.out)] = mask
            if id(src) in group_of:
                group_of[id(n.out)] = group_of[id(src)]
            continue
        reason = why[id(n)]
        if reason is None:
            ok = cur is not None
            if ok:
                bit = 1 << cur
                for v in ins:
                    g = group_of.get(id(v))
                    if g is not None and g != cur and deps[id(v)] & bit:
                        ok = False  # cur -> ... -> v -> n in cur: a cycle
                        break
                if ok and any(group_of.get(id(v)) == cur for v in segment_input_vars(n)):
                    ok = False  # the looked-up tensor must come from outside the segment
                if ok and last_fallible > cur and raises(n):
                    ok = False  # it would raise before an op eager runs (and raises in) first
                if ok and last_fallible == cur and any(id(v) in guarded and group_of.get(id(v)) != cur for v in ins):
                    ok = False  # its check would run before the segment's earlier op that may raise
            if not ok:
                groups.append([])
                kinds.append("segment")
                cur = len(groups) - 1
            g = cur
        else:
            groups.append([])
            kinds.append("fallback")
            g = len(groups) - 1
            reasons[g] = reason
        groups[g].append(n)
        assert g is not None
        if raises(n):
            last_fallible = max(last_fallible, g)
        mask |= 1 << g
        for o in n.outs:
            deps[id(o)] = mask
            group_of[id(o)] = g
    _place_free_views(trace, nodes, free, groups, kinds, reasons, group_of)
    fallible = {g for g, ns in enumerate(groups) if any(raises(n) for n in ns)}
    order = _toposort(groups, group_of, _blocking(trace, nodes, groups, kinds, group_of), fallible)
    return _make_steps(trace, groups, kinds, reasons, order, set(free))


def free_views(nodes: list[Node], why: dict[int, str | None] | None = None) -> dict[int, Node]:
    """id(result) -> node, for each view of a value no segment computes (module docstring).
    ``why``: id(node) -> its ``fallback_reason``, where the caller has them."""
    fused: set[int] = set()  # values computed by fusible non-view nodes
    free: dict[int, Node] = {}
    for n in nodes:
        src = n.args[0] if n.args else None
        reason = why[id(n)] if why is not None else fallback_reason(n)
        row = SUPPORT.get(n.op)
        if reason is None and row is not None and row.view and isinstance(src, Var) and id(src) not in fused:
            free[id(n.out)] = n  # is_view(n)
        elif reason is None:
            fused.update(id(o) for o in n.outs)
    return free


def _can_raise_by_op() -> Any:
    """``can_raise(n) is not None``, asked once per op (its answer depends on the op alone)."""
    memo: dict[str, bool] = {}

    def raises(n: Node) -> bool:
        r = memo.get(n.op)
        if r is None:
            r = memo[n.op] = can_raise(n) is not None
        return r

    return raises


def _place_free_views(trace: Trace, nodes: list[Node], free: dict[int, Node], groups: list[list[Node]],
                      kinds: list[str], reasons: dict[int, str], group_of: dict[int, int]) -> None:
    """Put each free view where it is read: inside every segment that reads it (with the free
    views it is a view of), and as a torch view step for everyone else."""
    if not free:
        return
    order = {id(n): i for i, n in enumerate(nodes)}

    def chain(v: Var) -> list[Node]:
        out = []
        while id(v) in free:
            n = free[id(v)]
            out.append(n)
            v = n.args[0]
        return out

    torch_views: list[Node] = []
    for g in range(len(groups)):
        if kinds[g] != "segment":
            for n in groups[g]:
                torch_views += [m for v in n.inputs() for m in chain(v)]
            continue
        inside: dict[int, Node] = {}
        for n in groups[g]:
            looked_up = {id(v) for v in segment_input_vars(n)}
            for v in data_inputs(n):
                if id(v) in looked_up:  # nvFuser wants the looked-up tensor as a fusion input
                    torch_views += chain(v)
                else:
                    inside.update((id(m), m) for m in chain(v))
        if inside:
            groups[g] = sorted([*groups[g], *inside.values()], key=lambda m: order[id(m)])
    exported = [o for o in trace.outputs if isinstance(o, Var)] + [val for _, val in trace.writebacks] + trace.effects
    torch_views += [m for v in exported for m in chain(v)]
    placed: set[int] = set()
    for n in sorted(torch_views, key=lambda m: order[id(m)]):
        if id(n) not in placed:
            placed.add(id(n))
            groups.append([n])
            kinds.append("fallback")
            reasons[len(groups) - 1] = TORCH_VIEW
            group_of[id(n.out)] = len(groups) - 1


def _blocking(trace: Trace, nodes: list[Node], groups: list[list[Node]], kinds: list[str],
              group_of: dict[int, int]) -> dict[int, set[int]]:
    """group -> groups that read the old value of a buffer this group computes the new value of.

    Running those readers first lets the write-back alias in place (see ``writeback.py``)."""
    if not trace.writebacks:
        return {}
    al = may_alias_nodes(trace, nodes)
    readers: dict[int, set[int]] = {}
    for g, ns in enumerate(groups):
        for n in ns:
            for v in (data_inputs(n) if kinds[g] == "segment" else n.inputs()):
                for b in al.get(id(v), ()):
                    readers.setdefault(b, set()).add(g)
    out: dict[int, set[int]] = {}
    for buf, val in trace.writebacks:
        g = group_of.get(id(val))
        if g is not None:
            out.setdefault(g, set()).update(readers.get(id(buf), set()) - {g})
    return out


def _toposort(groups: list[list[Node]], group_of: dict[int, int], blocking: dict[int, set[int]],
              fallible: set[int] = frozenset()) -> list[int]:  # type: ignore[assignment]
    """Kahn's algorithm, smallest group first, except that a group that may raise on data runs
    as soon as it is ready (so the plan's writes can all come after it: ``checks.py``), and a
    group computing a buffer's new value waits (when something else is ready) for the groups
    still reading the old value."""
    preds: list[set[int]] = [set() for _ in groups]
    for g, ns in enumerate(groups):
        for n in ns:
            for v in n.inputs():
                p = group_of.get(id(v))
                if p is not None and p != g:
                    preds[g].add(p)
    draws = [g for g, ns in enumerate(groups) if any(consumes_rng(n) for n in ns)]
    for a, b in zip(draws, draws[1:]):  # random draws keep the program's order (groups are made in it)
        preds[b].add(a)
    # groups that may raise keep the program's order too (eager raises the first failing op's error),
    # where the groups' dependencies allow it
    chain = sorted(fallible | set(draws))
    order = _kahn(groups, _chained(preds, chain, fallible), blocking, fallible)
    if order is None:
        order = _kahn(groups, preds, blocking, fallible)
    if order is None:  # cannot happen by construction; say so loudly if it does
        raise AssertionError("segment graph has a cycle")
    return order


def _chained(preds: list[set[int]], chain: list[int], fallible: set[int]) -> list[set[int]]:
    """``preds`` with each fallible group after the previous fallible or drawing group."""
    out = [set(p) for p in preds]
    for a, b in zip(chain, chain[1:]):
        if b in fallible or a in fallible:
            out[b].add(a)
    return out


def _kahn(groups: list[list[Node]], preds: list[set[int]], blocking: dict[int, set[int]],
          fallible: set[int]) -> list[int] | None:
    """The order of :func:`_toposort` for these predecessor sets; None on a cycle. Of the ready
    groups it takes the smallest fallible one, else the smallest whose blockers have all run,
    else the smallest. Each kind is its own heap, and a blocked group moves to the second as its
    last blocker runs (choosing by a sorted scan of every ready group was quadratic: 4,000
    independent torch calls spent 0.5 s here)."""
    succs: list[set[int]] = [set() for _ in groups]
    for g, ps in enumerate(preds):
        for p in ps:
            succs[p].add(g)
    indeg = [len(p) for p in preds]
    waits = {h: len(bs) for h, bs in blocking.items() if bs}  # blockers not run yet
    held_by: dict[int, list[int]] = {}  # blocker -> the groups it holds
    for h, bs in blocking.items():
        for b in bs:
            held_by.setdefault(b, []).append(h)
    fall: list[int] = []  # ready and fallible
    free: list[int] = []  # ready, not fallible, nothing holds it
    held: list[int] = []  # ready, not fallible, held (an entry is stale once its group ran from free)

    def make_ready(h: int) -> None:
        heapq.heappush(fall if h in fallible else held if waits.get(h) else free, h)

    for g in range(len(groups)):
        if indeg[g] == 0:
            make_ready(g)
    order: list[int] = []
    ran = [False] * len(groups)
    while True:
        if fall:
            g = heapq.heappop(fall)
        elif free:
            g = heapq.heappop(free)
        else:
            while held and ran[held[0]]:
                heapq.heappop(held)
            if not held:
                break
            g = heapq.heappop(held)
        order.append(g)
        ran[g] = True
        for h in held_by.get(g, ()):
            waits[h] -= 1
            if waits[h] == 0 and indeg[h] == 0 and not ran[h] and h not in fallible:
                heapq.heappush(free, h)  # ready and held until now: free from here on
        for s in succs[g]:
            indeg[s] -= 1
            if indeg[s] == 0:
                make_ready(s)
    return order if len(order) == len(groups) else None


def _make_steps(trace: Trace, groups: list[list[Node]], kinds: list[str], reasons: dict[int, str],
                order: list[int], free: set[int] = frozenset()) -> list[Step]:  # type: ignore[assignment]
    """``free``: ids of free views; a segment re-derives those it reads and never exports them."""
    # where each value is used: by which group, or outside every group (outputs, write-backs)
    used_outside: dict[int, set[int]] = {}
    for g, ns in enumerate(groups):
        for n in ns:
            reads = data_inputs(n) if kinds[g] == "segment" else n.inputs()
            for v in reads:
                used_outside.setdefault(id(v), set()).add(g)
    exported: set[int] = {id(o) for o in trace.outputs if isinstance(o, Var)}
    exported |= {id(val) for _, val in trace.writebacks} | {id(v) for v in trace.effects}
    steps: list[Step] = []
    k = 0
    for g in order:
        ns = groups[g]
        if kinds[g] == "fallback":
            steps.append(Fallback(ns[0], reasons[g]))
            continue
        produced = {id(o) for n in ns for o in n.outs}
        ins: dict[int, Var] = {}
        for n in ns:
            for v in data_inputs(n):
                if id(v) not in produced:
                    ins[id(v)] = v
        outs = [o for n in ns for o in n.outs
                if id(o) not in free and (id(o) in exported or (used_outside.get(id(o), set()) - {g}))]
        seg = Segment(f"seg{k}", list(ns), sorted(ins.values(), key=lambda v: v.name), sorted(outs, key=lambda v: v.name))
        steps.append(seg)
        k += 1
    return steps


def symbols_of(x: object) -> set[sympy.Symbol]:
    if isinstance(x, sympy.Basic):
        return set(x.free_symbols)
    if isinstance(x, (tuple, list)):
        out: set[sympy.Symbol] = set()
        for y in x:
            out |= symbols_of(y)
        return out
    return set()
