"""DAG-aware extraction over the serialized e-graph.

egglog's built-in extract is tree-cost only (a shared value is paid once per use) and
breaks on large shared DAGs, so satfuse extracts here. Every extractor has one
interface -- ``(view, roots, costs) -> {class: node}`` -- and every result is checked
(:func:`check`): roots chosen, each choice in its class, closed under children, acyclic.

* ``greedy_dag``: each class keeps its best node with the *set* of classes it pulls in
  (so a shared class is counted once, as in extraction-gym's faster-greedy-dag). A node
  whose children already pull in its own class is skipped. Cached sets can be stale
  (a child improved later and the parent's recomputation was no improvement), so a
  node that would *replace* a class's earlier choice is also checked by walking the
  current choices below it: the choice map is acyclic after every step. (A class
  with no choice yet has no parents in the choice map, so a first choice needs no walk.)
* ``ilp``: exact DAG cost via HiGHS (``scipy.optimize.milp``): one 0/1 variable per
  e-node, "a chosen node needs a chosen node in each child class", roots chosen, and
  acyclicity by class levels, only inside the strongly connected components of the
  class graph (an edge between two components can never close a cycle). With
  ``mip_rel_gap=0`` it is exact; on timeout or failure the greedy answer is kept and
  the ``note`` says why.

Example of why DAG cost matters (the header comment of extraction-gym's
``faster_greedy_dag.rs`` has the same one)::

    root = f(a, a)           tree cost: f + 2*a        DAG cost: f + a

A tree extractor pays the shared ``a`` twice and may prefer a worse, unshared
alternative; the DAG cost is what a program that computes ``a`` once costs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

import sympy

from .costs import ClassInfo, CostModel, itemsize
from .egraph import EGraphView, dim_value, list_value

Choice = dict[str, str]

#: costs closer than this are ties (costs are bytes-equivalents, so this is far below a byte)
EPS = 1e-6


class ExtractionError(RuntimeError):
    pass


@dataclass
class Extraction:
    choice: Choice
    dag_cost: float
    tree_cost: float
    seconds: float
    method: str
    note: str = ""


# --------------------------------------------------------------------------- sizes and costs


def class_infos(view: EGraphView, hints: dict[str, int], input_classes: set[str], default: int = 1024) -> dict[str, ClassInfo]:
    """Size of every tensor class from the shape analysis (cheapest Dim term per extent)."""
    size_choice = _smallest_terms(view)
    numel_of: dict[str, int] = {}  # per shape class: tensors share them
    infos: dict[str, ClassInfo] = {}
    for cid, ty in view.class_type.items():
        if ty != "T" or cid not in view.classes:
            continue
        info = ClassInfo(is_tensor=True, is_input=cid in input_classes)
        dl = view.shape_of.get(cid)
        n = 1
        if dl is not None and dl in size_choice:
            n = numel_of.get(dl, -1)
            if n < 0:
                n = numel_of[dl] = _numel(view, size_choice, dl, hints, default)
        info.numel = n
        info.itemsize = itemsize(view.dtype_of.get(cid, "f32"))
        infos[cid] = info
    return infos


def _numel(view: EGraphView, size_choice: Choice, dl: str, hints: dict[str, int], default: int) -> int:
    n = 1
    try:
        shape = list_value(view, size_choice, dl, lambda c: dim_value(view, size_choice, c))
        for e in shape:
            if isinstance(e, int):
                n *= max(e, 0)
            else:
                n *= max(int(sympy.sympify(e).subs({s: hints.get(s.name, default) for s in e.free_symbols})), 0)
    except (KeyError, TypeError, ValueError, RecursionError):
        n = default
    return n


def _smallest_terms(view: EGraphView) -> Choice:
    """Tree-size extraction for structure classes (Dim, DL, ...): used to read sizes.

    A worklist over parents (a class that improves re-examines the nodes using it). Only
    strict improvements of a positive size are accepted, so a chosen node is always larger
    than its children's choices: the result is acyclic."""
    best: dict[str, tuple[int, str]] = {}
    for cid, nids in view.classes.items():
        if view.is_primitive(cid):
            best[cid] = (1, nids[0])
    work = list(view.nodes)
    queued = set(work)
    while work:
        nid = work.pop()
        queued.discard(nid)
        n = view.nodes[nid]
        size = 1
        for c in n.children:
            b = best.get(c)
            if b is None:
                break
            size += b[0]
        else:
            cur = best.get(n.eclass)
            if cur is None or size < cur[0]:
                best[n.eclass] = (size, nid)
                for p in view.parents.get(n.eclass, ()):
                    if p not in queued:
                        queued.add(p)
                        work.append(p)
    return {c: nid for c, (_, nid) in best.items()}


def node_costs(view: EGraphView, model: CostModel, infos: dict[str, ClassInfo]) -> dict[str, float]:
    empty = ClassInfo()
    out = {}
    for nid, n in view.nodes.items():
        out[nid] = model.node_cost(n.op, infos.get(n.eclass, empty), [infos.get(c, empty) for c in n.children])
    return out


# --------------------------------------------------------------------------- greedy DAG


def _reaches(view: EGraphView, choice: dict[str, str], starts, target: str) -> bool:
    """Does following ``choice`` from the classes ``starts`` reach ``target``?"""
    stack = list(starts)
    seen: set[str] = set()
    while stack:
        c = stack.pop()
        if c == target:
            return True
        if c in seen:
            continue
        seen.add(c)
        nid = choice.get(c)
        if nid is not None:
            stack.extend(view.nodes[nid].children)
    return False


def greedy_dag(view: EGraphView, roots: list[str], cost: dict[str, float]) -> Choice:
    """Bottom-up worklist: a class's best node is the one whose class closure costs least."""
    best: dict[str, tuple[float, dict[str, float], str]] = {}
    chosen: dict[str, str] = {}  # class -> node, mirrors best (for the exact cycle check)
    # leaves first (cheapest first), then the others by number of children
    queue: list[str] = [nid for _, nid in sorted((cost[nid], nid) for nid, n in view.nodes.items() if not n.children)]
    queue += sorted((nid for nid, n in view.nodes.items() if n.children), key=lambda x: len(view.nodes[x].children))
    inq = set(queue)
    limit = max(200_000, 50 * len(view.nodes))
    i = 0
    while i < len(queue):
        nid = queue[i]
        i += 1
        inq.discard(nid)
        n = view.nodes[nid]
        if any(c not in best for c in n.children):
            continue  # re-queued when the missing child class gets a node
        deps: dict[str, float] = {}
        cyclic = False
        for c in set(n.children):
            cdeps = best[c][1]
            if n.eclass == c or n.eclass in cdeps:
                cyclic = True
                break
            if len(cdeps) > len(deps):
                cdeps, deps = deps, dict(cdeps)
            deps.update(cdeps)
        if cyclic:
            continue
        deps[n.eclass] = cost[nid]
        total = sum(deps.values())
        cur = best.get(n.eclass)
        if cur is not None and (total >= cur[0] - EPS or cur[2] == nid):
            continue
        if cur is not None and _reaches(view, chosen, n.children, n.eclass):
            continue  # a stale cached set hid that this replacement closes a cycle
        best[n.eclass] = (total, deps, nid)
        chosen[n.eclass] = nid
        for p in view.parents.get(n.eclass, ()):
            if p not in inq:
                queue.append(p)
                inq.add(p)
        if i > limit:
            break  # improvements keep trickling in: the choice so far is valid, stop here
    missing = [r for r in roots if r not in best]
    if missing:
        raise ExtractionError(f"no finite-cost acyclic term for root classes {missing}")
    return chosen


# --------------------------------------------------------------------------- checks and costs


def reachable(view: EGraphView, roots: list[str], choice: Choice) -> list[str]:
    """Classes reachable from ``roots`` through the chosen nodes (depth-first order)."""
    return _closure(roots, lambda c: view.nodes[choice[c]].children if c in choice else ())


def _closure(roots: list[str], successors: Callable[[str], Iterable[str]]) -> list[str]:
    seen: list[str] = []
    mark: set[str] = set()
    stack = list(roots)
    while stack:
        c = stack.pop()
        if c in mark:
            continue
        mark.add(c)
        seen.append(c)
        stack.extend(successors(c))
    return seen


def find_cycle(view: EGraphView, roots: list[str], choice: Choice) -> list[str] | None:
    """A cycle of classes reachable from ``roots`` under ``choice`` (None when acyclic)."""
    state: dict[str, int] = {}
    for r in roots:
        if state.get(r) or r not in choice:
            continue
        path = [r]
        stack = [iter(view.nodes[choice[r]].children)]
        state[r] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            s = state.get(nxt, 0)
            if s == 1:
                return path[path.index(nxt):] + [nxt]
            if s == 0 and nxt in choice:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(view.nodes[choice[nxt]].children))
    return None


def check(view: EGraphView, roots: list[str], choice: Choice) -> None:
    """Every root chosen, choices in their classes, closed, and no cycles."""
    for r in roots:
        if r not in choice:
            raise ExtractionError(f"root class {r} has no choice")
    for c in reachable(view, roots, choice):
        nid = choice.get(c)
        if nid is None:
            raise ExtractionError(f"class {c} is used but has no choice")
        if nid not in view.nodes:
            raise ExtractionError(f"node {nid} chosen for {c} is not an e-node of this graph")
        if view.nodes[nid].eclass != c:
            raise ExtractionError(f"node {nid} chosen for {c} belongs to {view.nodes[nid].eclass}")
    cyc = find_cycle(view, roots, choice)
    if cyc is not None:
        raise ExtractionError("extraction chose a cycle: " + " -> ".join(f"{c}[{view.nodes[choice[c]].op}]" for c in cyc))


def dag_cost(view: EGraphView, roots: list[str], choice: Choice, cost: dict[str, float]) -> float:
    """Each class reachable from the roots paid once (the number satfuse minimizes)."""
    return sum(cost[choice[c]] for c in reachable(view, roots, choice))


def tree_cost(view: EGraphView, roots: list[str], choice: Choice, cost: dict[str, float]) -> float:
    """Each class paid once per path from a root (what a tree extractor minimizes)."""
    memo: dict[str, float] = {}
    order: list[str] = []
    # post-order without recursion (chosen programs can be thousands of terms deep)
    stack: list[tuple[str, bool]] = [(r, False) for r in roots]
    while stack:
        c, done = stack.pop()
        if c in memo:
            continue
        if done:
            n = view.nodes[choice[c]]
            memo[c] = cost[n.id] + sum(memo[k] for k in n.children)
            order.append(c)
            continue
        stack.append((c, True))
        stack.extend((k, False) for k in view.nodes[choice[c]].children if k not in memo)
    return sum(memo[r] for r in roots)


# --------------------------------------------------------------------------- exact ILP


def _sccs(succ: dict[str, set[str]]) -> dict[str, int]:
    """Strongly connected components (Tarjan, iterative): class -> component id."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    comp: dict[str, int] = {}
    on: set[str] = set()
    st: list[str] = []
    counter = 0
    ncomp = 0
    for v0 in succ:
        if v0 in index:
            continue
        work = [(v0, iter(succ[v0]))]
        index[v0] = low[v0] = counter
        counter += 1
        st.append(v0)
        on.add(v0)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    st.append(w)
                    on.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                while True:
                    w = st.pop()
                    on.discard(w)
                    comp[w] = ncomp
                    if w == v:
                        break
                ncomp += 1
    return comp


def ilp(view: EGraphView, roots: list[str], cost: dict[str, float], timeout: float = 10.0,
        warm: Choice | None = None) -> tuple[Choice, str]:
    """Exact DAG extraction as a MILP; returns ``(choice, note)``.

    ``warm`` (the greedy answer) is what comes back when HiGHS finds nothing in
    ``timeout`` seconds (the note says so); without it that is an ``ExtractionError``.
    """
    try:
        import numpy as np
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_matrix
    except ImportError:
        raise ExtractionError("ILP extraction needs scipy (pip install scipy)") from None
    # the classes reachable from the roots through any node
    cls = _closure(roots, lambda c: [k for nid in view.classes.get(c, ()) for k in view.nodes[nid].children])

    # nodes that can never be part of a program: a self-loop, or a child class without nodes
    def usable(nid: str) -> bool:
        n = view.nodes[nid]
        return all(c != n.eclass and view.classes.get(c) for c in n.children)

    members = {c: [nid for nid in view.classes.get(c, ()) if usable(nid)] for c in cls}
    nodes = [nid for c in cls for nid in members[c]]
    ni = {nid: i for i, nid in enumerate(nodes)}
    succ: dict[str, set[str]] = {c: {k for nid in members[c] for k in view.nodes[nid].children} for c in cls}
    comp = _sccs(succ)
    cyclic_cls = [c for c in cls if any(comp[k] == comp[c] for k in succ[c])]
    li = {c: len(nodes) + i for i, c in enumerate(cyclic_cls)}  # a level variable per class in a cycle
    nv = len(nodes) + len(cyclic_cls)
    rows_i: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def row(entries: dict[int, float], lo_: float, hi_: float) -> None:
        r = len(lo)
        for j, v in entries.items():
            rows_i.append(r)
            cols.append(j)
            vals.append(v)
        lo.append(lo_)
        hi.append(hi_)

    for r in set(roots):
        if not members.get(r):
            if warm is not None:
                return warm, f"ILP: root class {r} has no usable node; greedy answer kept"
            raise ExtractionError(f"root class {r} has no usable node")
        row({ni[m]: 1.0 for m in members[r]}, 1.0, 1.0)
    big = float(len(cyclic_cls) + 1)
    for nid in nodes:
        n = view.nodes[nid]
        for c in set(n.children):
            entries = {ni[m]: 1.0 for m in members[c]}
            entries[ni[nid]] = -1.0
            row(entries, 0.0, float("inf"))  # picking n needs a picked node in each child class
            if comp[c] == comp[n.eclass]:
                # level(parent) >= level(child) + 1 whenever n is picked
                row({li[n.eclass]: 1.0, li[c]: -1.0, ni[nid]: -big}, 1.0 - big, float("inf"))
    c_vec = np.zeros(nv)
    for nid in nodes:
        c_vec[ni[nid]] = cost[nid]
    integrality = np.concatenate([np.ones(len(nodes)), np.zeros(len(cyclic_cls))])
    bounds = Bounds(np.zeros(nv), np.concatenate([np.ones(len(nodes)), np.full(len(cyclic_cls), big)]))
    a = coo_matrix((vals, (rows_i, cols)), shape=(len(lo), nv)).tocsr()
    t0 = time.perf_counter()
    res = milp(c_vec, constraints=LinearConstraint(a, np.array(lo), np.array(hi)), integrality=integrality,
               bounds=bounds, options={"time_limit": max(float(timeout), 1e-3), "disp": False, "mip_rel_gap": 0.0})
    secs = time.perf_counter() - t0
    if res.x is None:
        why = "timed out" if res.status == 1 else f"failed ({res.message})"
        msg = f"ILP {why} after {secs:.2f}s with no solution ({len(nodes)} nodes, {len(lo)} rows)"
        if warm is not None:
            return warm, msg + "; greedy answer kept"
        raise ExtractionError(msg)
    choice: Choice = {}
    for c in cls:
        picked = [nid for nid in members[c] if res.x[ni[nid]] > 0.5]
        if picked:
            choice[c] = min(picked, key=lambda x: (cost[x], x))
    if res.status == 0:
        return choice, "optimal"
    gap = getattr(res, "mip_gap", None)
    return choice, f"ILP time limit ({timeout:g}s): best solution found, not proven optimal" + (
        f" (gap {gap:.2%})" if gap is not None else "")


# --------------------------------------------------------------------------- registry and entry


EXTRACTORS: dict[str, dict] = {
    # optimal_for: what the extractor is exact for; bench: run by bench/extractors.py
    "greedy-dag": {"fn": greedy_dag, "optimal_for": "trees", "bench": True,
                   "doc": "bottom-up, shared classes paid once; fast; no optimality guarantee on DAGs"},
    "ilp": {"fn": ilp, "optimal_for": "dags", "bench": True,
            "doc": "exact DAG cost via HiGHS MILP; timeout falls back to greedy-dag"},
}


def extract(view: EGraphView, roots: list[str], cost: dict[str, float], method: str = "greedy-dag",
            timeout: float = 10.0) -> Extraction:
    """Run extractor ``method`` (a key of ``EXTRACTORS``) and check its answer."""
    if method not in EXTRACTORS:
        raise ExtractionError(f"unknown extractor {method!r}; known: {', '.join(EXTRACTORS)}")
    t0 = time.perf_counter()
    greedy = greedy_dag(view, roots, cost)
    check(view, roots, greedy)
    choice, note = greedy, ""
    if method == "ilp":
        try:
            found, note = ilp(view, roots, cost, timeout=timeout, warm=greedy)
            if found is not greedy:
                check(view, roots, found)
                if dag_cost(view, roots, found, cost) > dag_cost(view, roots, greedy, cost) + EPS:
                    note += "; worse than greedy, greedy answer kept"
                else:
                    choice = {**greedy, **found}  # ILP decides everything reachable; greedy fills the rest
                    check(view, roots, choice)
        except ExtractionError as e:
            choice, note = greedy, f"{e}; greedy answer kept"
    secs = time.perf_counter() - t0
    return Extraction(choice, dag_cost(view, roots, choice, cost), tree_cost(view, roots, choice, cost), secs, method,
                      note)
