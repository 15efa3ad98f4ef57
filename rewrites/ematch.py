"""E-matching of rule patterns over a serialized e-graph (in Python, on ``EGraphView``):
where a rule's left side matches, and where it applied (the class also holds its right side)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator

from satfuse.engine.egraph import EGraphView

MAX_MATCHES = 200
ENVS_PER_CLASS = 4


def _lit_eq(view: EGraphView, cid: str, value: Any) -> bool:
    try:
        got = view.literal(cid)
    except (KeyError, ValueError):
        return False
    if isinstance(value, float) and math.isnan(value):
        return isinstance(got, float) and math.isnan(got)
    return got == value and isinstance(got, bool) == isinstance(value, bool)


def match(view: EGraphView, pat: tuple, cid: str, env: dict[str, str]) -> Iterator[tuple[dict[str, str], list[str]]]:
    """All (bindings, matched node ids) of ``pat`` at class ``cid``."""
    kind = pat[0]
    if kind == "any":
        yield env, []
    elif kind == "var":
        bound = env.get(pat[1])
        if bound is None:
            yield {**env, pat[1]: cid}, []
        elif bound == cid:
            yield env, []
    elif kind == "lit":
        if _lit_eq(view, cid, pat[1]):
            yield env, []
    else:
        _, op, args = pat
        for nid in view.classes.get(cid, ()):
            n = view.nodes[nid]
            if n.op == op and len(n.children) == len(args):
                yield from _match_args(view, args, n.children, 0, env, [nid])


def _match_args(view: EGraphView, args: tuple, kids: tuple, i: int, env: dict, acc: list) -> Iterator:
    if i == len(args):
        yield env, acc
        return
    for env2, nodes in match(view, args[i], kids[i], env):
        yield from _match_args(view, args, kids, i + 1, env2, acc + nodes)


@dataclass
class Application:
    """Where a rule applied in a saturated e-graph: the class, the left-side root node(s)
    and the right-side nodes (empty for a variable right side)."""

    eclass: str
    lhs_roots: set[str]
    rhs_nodes: set[str]
    envs: list[dict[str, str]] = field(default_factory=list)  # pattern variable -> class, per match (capped)


def applications(view: EGraphView, lhs: tuple, rhs: tuple) -> list[Application]:
    if lhs[0] != "app":
        return []
    out: dict[str, Application] = {}
    count = 0
    for nid, n in view.nodes.items():
        if n.op != lhs[1]:
            continue
        for env, nodes in _match_args(view, lhs[2], n.children, 0, {}, [nid]):
            count += 1
            if count > MAX_MATCHES:
                break
            k = n.eclass
            rhs_nodes: set[str] = set()
            hit = False
            if rhs[0] == "var":
                # a variable bound only in :when (e.g. cat-of-split's x): any other node of the class
                hit = env.get(rhs[1]) == k if rhs[1] in env else len(view.classes.get(k, ())) > 1
            elif rhs[0] == "app":
                for _, rn in match(view, rhs, k, env):
                    if nid not in rn:
                        hit = True
                        rhs_nodes |= set(rn)
                    if len(rhs_nodes) > 64:
                        break
            if hit:
                app = out.setdefault(k, Application(k, set(), set()))
                app.lhs_roots.add(nid)
                app.rhs_nodes |= rhs_nodes
                if len(app.envs) < ENVS_PER_CLASS:
                    full = env
                    if rhs[0] == "app":  # variables bound only on the right (in :when) get their class too
                        full = next((e for e, rn in match(view, rhs, k, env) if nid not in rn), env)
                    app.envs.append(full)
    return list(out.values())


def relation_rows(data: dict) -> dict[str, set[tuple]]:
    """Relation rows of a serialized e-graph: name -> argument tuples (literals, or class ids)."""
    raw = data["nodes"]
    ctype = {k: v.get("type", "") for k, v in data.get("class_data", {}).items()}
    node_class = {nid: n["eclass"] for nid, n in raw.items()}
    lit: dict[str, Any] = {}
    for n in raw.values():
        t = ctype.get(n["eclass"], "")
        if t in ("i64", "f64", "String", "bool") and not n["children"]:
            op = n["op"]
            lit[n["eclass"]] = int(op) if t == "i64" else float(op) if t == "f64" else (op == "true") if t == "bool" \
                else op.strip('"')
    out: dict[str, set[tuple]] = {}
    for n in raw.values():
        if ctype.get(n["eclass"], "").startswith("@"):  # egglog gives each relation its own @...Sort
            kids = tuple(node_class[c] for c in n["children"])
            out.setdefault(n["op"], set()).add(tuple(lit.get(c, c) for c in kids))
    return out
