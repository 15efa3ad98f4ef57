"""Extracted e-graph choice -> Trace.

Classes that held a value of the original program keep that value's name, so a plan
reads like the program it came from; types are re-inferred from the vocabulary (the
verifier in Trace.lint then checks the result).
"""

from __future__ import annotations

from typing import Any, Callable, Container, Iterable, Iterator

from .egraph import EGraphView, dim_value, list_value
from .extract import smallest_terms
from .fallible import in_program_order, index_rank
from .ir import IRError, Namespace, Node, Obligation, TensorType, Trace, Var
from .terms import Encoding, Slot
from .vocab import OPS, infer

EGG_SPECS = {spec.egg: spec for spec in OPS.values()}


class Decoder:
    def __init__(self, view: EGraphView, choice: dict[str, str], original: Trace, enc: Encoding,
                 var_class: dict[int, str]) -> None:
        self.view = view
        self.choice = choice
        self.orig = original
        self.enc = enc
        self.class_name: dict[str, str] = {}
        for v in [*original.inputs, *(o for n in original.nodes for o in n.outs)]:
            c = var_class.get(id(v))
            if c is not None:
                self.class_name.setdefault(c, v.name)
        self.inputs_by_name = {v.name: v for v in original.inputs}
        self.ns = Namespace([v.name for v in original.inputs])
        self.memo: dict[str, Any] = {}
        self.nodes: list[Node] = []
        # where ops without tensor operands (full, iota) make their results: the program's device (a
        # CPU 0-d input beside CUDA tensors is a scalar; a program of creation ops alone has no input)
        devs = [v.type.device for v in [*original.inputs, *(o for n in original.nodes for o in n.outs)]
                if isinstance(v.type, TensorType)]
        self.device = next((d for d in devs if d != "cpu"), "cpu")
        self.opaque_memo: dict[str, tuple[Var, ...]] = {}
        self.rank: dict[int, int] = {}  # id(opaque node) -> its position in the captured program

    def node(self, cid: str):
        return self.view.nodes[self.choice[cid]]

    def dim(self, cid: str) -> Any:
        return dim_value(self.view, self.choice, cid)

    def arg(self, kind: str, cid: str) -> Any:
        if kind in ("T", "f"):
            return self.value(cid)
        if kind == "i":
            return self.view.literal(cid)
        if kind == "ints":
            return list_value(self.view, self.choice, cid, self.view.literal)
        if kind == "shape":
            return list_value(self.view, self.choice, cid, self.dim)
        if kind == "x":
            return self.dim(cid)
        if kind == "dtype":
            return self.view.literal(cid)
        if kind == "Ts":
            return list_value(self.view, self.choice, cid, self.value)
        raise IRError(f"unknown argument kind {kind}")

    def fresh(self, cid: str, hint: str) -> str:
        return self.ns.name(self.class_name.get(cid, hint))

    def value(self, cid: str) -> Any:
        """The value of class ``cid``, decoding what it depends on first. The dependencies are
        walked with an explicit stack, never recursion: a program's dependency chain can be
        longer than Python's recursion limit (a 10,000-op chain)."""
        memo = self.memo
        for c in post_order(cid, self._value_deps, memo):
            memo[c] = self._value_of(c)
        return memo[cid]

    def _value_deps(self, cid: str) -> list[str]:
        """The classes whose values ``cid``'s chosen node reads (its tensor operands)."""
        n = self.node(cid)
        if n.op == "Proj":
            call = self.node(n.children[0])
            return list_value(self.view, self.choice, call.children[1], lambda c: c)
        spec = EGG_SPECS.get(n.op)
        if spec is None:
            return []
        out: list[str] = []
        for kind, c in zip(spec.sig, n.children):
            if kind in ("T", "f"):
                out.append(c)
            elif kind == "Ts":
                out += list_value(self.view, self.choice, c, lambda x: x)
        return out

    def _value_of(self, cid: str) -> Any:
        """Decode one class whose operands are already decoded."""
        n = self.node(cid)
        op = n.op
        if op == "Input":
            name = self.view.literal(n.children[0])
            out: Any = self.inputs_by_name[name]
        elif op == "CInt":
            out = self.view.literal(n.children[0])
        elif op == "CFloat":
            out = self.view.literal(n.children[0])
        elif op == "CBool":
            out = self.view.literal(n.children[0])
        elif op == "CDim":
            out = self.dim(n.children[0])
        elif op == "CSymFloat":
            out = self.enc.floats[self.view.literal(n.children[0])]
        elif op == "Proj":
            outs = self.opaque_call(n.children[0])
            out = outs[self.view.literal(n.children[1])]
        elif op in EGG_SPECS:
            spec = EGG_SPECS[op]
            args = tuple(self.arg(k, c) for k, c in zip(spec.sig, n.children))
            operands = any(isinstance(a, Var) or (isinstance(a, (tuple, list)) and any(isinstance(b, Var) for b in a))
                           for a in args)
            t = infer(spec.name, args, None if operands else self.device)
            v = Var(self.fresh(cid, spec.name), t)
            self.nodes.append(Node(spec.name, args, {}, (v,)))
            out = v
        else:
            raise IRError(f"decode: class {cid} chose {op!r}, which is not a value")
        return out

    def opaque_call(self, cid: str) -> tuple[Var, ...]:
        if cid in self.opaque_memo:
            return self.opaque_memo[cid]
        n = self.node(cid)
        key = self.view.literal(n.children[0])
        operands = list_value(self.view, self.choice, n.children[1], self.value)
        call = self.enc.opaque[key]
        outs = tuple(Var(self.ns.name(key_hint(call.op)), t) for t in call.out_types)
        self.nodes.append(Node(call.op, _filled(call.args, operands),
                               {k: _filled(v, operands) for k, v in call.kwargs.items()}, outs))
        if key[1:].isdigit():  # "k<index in the captured program>" (terms.py, loader.py)
            self.rank[id(self.nodes[-1])] = int(key[1:])
        self.opaque_memo[cid] = outs
        return outs


def _filled(a: Any, operands: tuple) -> Any:
    """An opaque call's template with its ``Slot``s filled (a module function: a recursive closure
    would be a reference cycle per call, left to the collector)."""
    if isinstance(a, Slot):
        return operands[a.i]
    if isinstance(a, (tuple, list)):
        return type(a)(_filled(x, operands) for x in a)
    return a


def post_order(root: Any, deps: Callable[[Any], Iterable[Any]], done: Container[Any]) -> Iterator[Any]:
    """What ``root`` depends on, then ``root``, each once, skipping what is in ``done`` (the caller
    adds each item it is given). An explicit stack, never recursion (a 10,000-op chain), with an
    item's dependencies pushed in order, so the last is given first: decoding's order, which
    lowering's greedy partition depends on."""
    stack = [(root, False)]
    while stack:
        c, ready = stack.pop()
        if c in done:
            continue
        if ready:
            yield c
            continue
        stack.append((c, True))
        stack.extend([(d, False) for d in deps(c) if d not in done])


def key_hint(op: str) -> str:
    parts = op.split(".")
    return parts[1] if len(parts) > 1 else op


def decode(view: EGraphView, choice: dict[str, str], original: Trace, enc: Encoding, root_classes: list[str],
           var_class: dict[int, str]) -> Trace:
    d = Decoder(view, choice, original, enc, var_class)
    outputs: list[Any] = []
    k = 0
    for o in original.outputs:
        if isinstance(o, Var):
            root = view.nodes[choice[root_classes[k]]]
            k += 1
            outputs.append(d.value(root.children[1]))
        else:
            outputs.append(o)
    writebacks: list[tuple[Var, Var]] = []
    for buf, _ in original.writebacks:
        root = view.nodes[choice[root_classes[k]]]
        k += 1
        if root.op == "NoWrite":
            continue
        val = d.value(root.children[1])
        if val is buf:
            continue
        if not isinstance(val, Var):
            raise IRError(f"decode: write-back of {buf.name} became a constant")
        writebacks.append((buf, val))
    effects: list[Var] = []
    for _ in original.effects:
        root = view.nodes[choice[root_classes[k]]]
        k += 1
        val = d.value(root.children[1])
        if isinstance(val, Var) and all(val is not v for v in [*effects, *original.inputs]):  # nor can a constant
            effects.append(val)
    obligations = chosen_obligations(d)
    rank = {id(n): d.rank.get(id(n), index_rank(n, original.index_ranks)) for n in d.nodes}
    nodes = in_program_order(d.nodes, lambda n: rank[id(n)])
    tr = Trace(list(original.inputs), nodes, outputs, writebacks, guards=list(original.guards), name=original.name,
               output_aliases=list(original.output_aliases), index_ops=dict(original.index_ops),
               index_ranks=dict(original.index_ranks), obligations=obligations, effects=effects,
               restrides=list(original.restrides), input_layouts=dict(original.input_layouts),
               ranks={id(n): rank[id(n)] for n in nodes if rank[id(n)] >= 0})
    tr.lint()
    return tr


def chosen_obligations(d: Decoder) -> list[Obligation]:
    """The obligations (rules/lang.egg) attached to classes the plan computes: a row counts only
    when its class was decoded, i.e. reached from a root through the chosen nodes. Rows with the
    same kind and arguments (one mask introduced by two rules) become one, naming every rule."""
    view = d.view
    smallest: dict[str, str] = {}

    def dim(cid: str) -> Any:  # an extent: the chosen term, else the smallest one
        if cid in d.choice:
            return d.dim(cid)
        if not smallest:
            smallest.update(smallest_terms(view))
        return dim_value(view, smallest, cid)

    found: dict[tuple, tuple[str, tuple, list[str], str]] = {}
    for rel, (new, kind_c, rule_c, a, b) in view.obligations:
        if new not in d.memo:
            continue  # not chosen: the plan never relies on it
        kind, rule = view.literal(kind_c), view.literal(rule_c)
        args = (d.value(a), dim(b)) if rel == "obligation" else (dim(a), dim(b))
        key = (kind, *(id(x) if isinstance(x, Var) else x for x in args))
        name = d.class_name.get(a, "") if rel == "obligation" else ""
        op = d.orig.index_ops.get(name, "")
        entry = found.setdefault(key, (kind, args, [], op, d.orig.index_ranks.get(name, -1)))
        if rule not in entry[2]:
            entry[2].append(rule)
    return [Obligation(kind, tuple(rules), args, op, rank) for kind, args, rules, op, rank in found.values()]
