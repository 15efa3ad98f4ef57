"""DAG-aware extraction over the serialized e-graph.

egglog's built-in extract is tree-cost only (a shared value is paid once per use) and
breaks on large shared DAGs, so satfuse extracts here. Every extractor has one
interface -- ``(view, roots, costs) -> {class: node}`` -- and every result is checked:
roots chosen, each choice in its class, closed under children, acyclic.

* ``greedy_dag``: each class keeps its best node with the *set* of classes it pulls in
  (so a shared class is counted once, as in extraction-gym's faster-greedy-dag); a node
  whose children already depend on its own class is skipped, so no cycle is chosen.
* ``ilp``: exact DAG cost via HiGHS (scipy.optimize.milp) with acyclicity by class
  levels; on timeout or failure it returns the greedy answer.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import sympy

from .costs import ClassInfo, CostModel, itemsize
from .egraph import EGraphView, dim_value, list_value

Choice = dict[str, str]


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


def class_infos(view: EGraphView, hints: dict[str, int], input_classes: set[str], default: int = 1024) -> dict[str, ClassInfo]:
    """Size of every tensor class from the shape analysis (cheapest Dim term per extent)."""
    size_choice = _smallest_terms(view)
    infos: dict[str, ClassInfo] = {}
    for cid, ty in view.class_type.items():
        if ty != "T" or cid not in view.classes:
            continue
        info = ClassInfo(is_tensor=True, is_input=cid in input_classes)
        dl = view.shape_of.get(cid)
        n = 1
        if dl is not None and dl in size_choice:
            try:
                shape = list_value(view, size_choice, dl, lambda c: dim_value(view, size_choice, c))
                for e in shape:
                    if isinstance(e, int):
                        n *= max(e, 0)
                    else:
                        n *= max(int(sympy.sympify(e).subs({s: hints.get(s.name, default) for s in e.free_symbols})), 0)
            except (KeyError, TypeError, ValueError):
                n = default
        else:
            n = 1
        info.numel = n
        info.itemsize = itemsize(view.dtype_of.get(cid, "f32"))
        infos[cid] = info
    return infos


def _smallest_terms(view: EGraphView) -> Choice:
    """Tree-size extraction for structure classes (Dim, DL, ...): used to read sizes."""
    best: dict[str, tuple[int, str]] = {}
    changed = True
    while changed:
        changed = False
        for nid, n in view.nodes.items():
            if any(c not in best and not view.is_primitive(c) for c in n.children):
                continue
            size = 1 + sum(best[c][0] if c in best else 1 for c in n.children)
            if n.eclass not in best or size < best[n.eclass][0]:
                best[n.eclass] = (size, nid)
                changed = True
    for cid, nids in view.classes.items():
        if view.is_primitive(cid):
            best.setdefault(cid, (1, nids[0]))
    return {c: nid for c, (_, nid) in best.items()}


def node_costs(view: EGraphView, model: CostModel, infos: dict[str, ClassInfo]) -> dict[str, float]:
    empty = ClassInfo()
    out = {}
    for nid, n in view.nodes.items():
        out[nid] = model.node_cost(n.op, infos.get(n.eclass, empty), [infos.get(c, empty) for c in n.children])
    return out


def greedy_dag(view: EGraphView, roots: list[str], cost: dict[str, float]) -> Choice:
    best: dict[str, tuple[float, dict[str, float], str]] = {}
    # leaves first; then propagate improvements to parents (worklist)
    heap: list[tuple[float, str]] = []
    for nid, n in view.nodes.items():
        if not n.children:
            heapq.heappush(heap, (cost[nid], nid))
    pending = {nid for nid, n in view.nodes.items() if n.children}
    queue: list[str] = []
    while heap:
        _, nid = heapq.heappop(heap)
        queue.append(nid)
    queue.extend(sorted(pending, key=lambda x: len(view.nodes[x].children)))
    inq = set(queue)
    i = 0
    while i < len(queue):
        nid = queue[i]
        i += 1
        inq.discard(nid)
        n = view.nodes[nid]
        if any(c not in best for c in n.children):
            continue
        deps: dict[str, float] = {}
        cyclic = False
        for c in set(n.children):
            cdeps = best[c][1]
            if n.eclass in cdeps:
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
        if cur is None or total < cur[0] - 1e-9:
            best[n.eclass] = (total, deps, nid)
            for p in view.parents.get(n.eclass, ()):
                if p not in inq:
                    queue.append(p)
                    inq.add(p)
        if i > 200_000 and i > 50 * len(view.nodes):
            break
    missing = [r for r in roots if r not in best]
    if missing:
        raise ExtractionError(f"no finite-cost term for root classes {missing}")
    return {c: v[2] for c, v in best.items()}


def reachable(view: EGraphView, roots: list[str], choice: Choice) -> list[str]:
    seen: list[str] = []
    mark: set[str] = set()
    stack = list(roots)
    while stack:
        c = stack.pop()
        if c in mark:
            continue
        mark.add(c)
        seen.append(c)
        stack.extend(view.nodes[choice[c]].children)
    return seen


def check(view: EGraphView, roots: list[str], choice: Choice) -> None:
    """Every root chosen, choices in their classes, closed, and no cycles."""
    for r in roots:
        if r not in choice:
            raise ExtractionError(f"root class {r} has no choice")
    for c in reachable(view, roots, choice):
        nid = choice.get(c)
        if nid is None:
            raise ExtractionError(f"class {c} is used but has no choice")
        if view.nodes[nid].eclass != c:
            raise ExtractionError(f"node {nid} chosen for {c} belongs to {view.nodes[nid].eclass}")
    state: dict[str, int] = {}
    for r in roots:
        stack = [(r, iter(view.nodes[choice[r]].children))]
        state[r] = 1
        while stack:
            c, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[c] = 2
                stack.pop()
                continue
            s = state.get(nxt, 0)
            if s == 1:
                raise ExtractionError(f"extraction chose a cycle through class {nxt}")
            if s == 0:
                state[nxt] = 1
                stack.append((nxt, iter(view.nodes[choice[nxt]].children)))


def dag_cost(view: EGraphView, roots: list[str], choice: Choice, cost: dict[str, float]) -> float:
    return sum(cost[choice[c]] for c in reachable(view, roots, choice))


def tree_cost(view: EGraphView, roots: list[str], choice: Choice, cost: dict[str, float]) -> float:
    memo: dict[str, float] = {}

    def tc(c: str) -> float:
        if c not in memo:
            memo[c] = float("inf")  # guards recursion on (checked) acyclic choices
            n = view.nodes[choice[c]]
            memo[c] = cost[n.id] + sum(tc(k) for k in n.children)
        return memo[c]

    return sum(tc(r) for r in roots)


def ilp(view: EGraphView, roots: list[str], cost: dict[str, float], timeout: float = 10.0,
        warm: Choice | None = None) -> tuple[Choice, str]:
    """Exact DAG extraction as a MILP; returns (choice, note)."""
    try:
        import numpy as np
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import lil_matrix
    except ImportError:
        raise ExtractionError("ILP extraction needs scipy (pip install scipy)") from None
    # restrict to classes reachable from the roots through any node
    cls: list[str] = []
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        cls.append(c)
        for nid in view.classes.get(c, ()):
            stack.extend(view.nodes[nid].children)
    nodes = [nid for c in cls for nid in view.classes.get(c, ())]
    ni = {nid: i for i, nid in enumerate(nodes)}
    ci = {c: len(nodes) + i for i, c in enumerate(cls)}  # level variables per class
    nv = len(nodes) + len(cls)
    big = len(cls) + 1
    rows: list[tuple[dict[int, float], float, float]] = []
    for r in set(roots):
        rows.append(({ni[n]: 1.0 for n in view.classes[r]}, 1.0, 1.0))
    for nid in nodes:
        n = view.nodes[nid]
        for c in set(n.children):
            row = {ni[m]: 1.0 for m in view.classes.get(c, ())}
            row[ni[nid]] = row.get(ni[nid], 0.0) - 1.0
            rows.append((row, 0.0, float("inf")))  # picking n requires a node in each child class
            if c == n.eclass:
                rows.append(({ni[nid]: 1.0}, 0.0, 0.0))  # a self-loop can never be picked
                continue
            # level(parent) >= level(child) + 1 when n is picked
            rows.append(({ci[n.eclass]: 1.0, ci[c]: -1.0, ni[nid]: -big}, 1.0 - big, float("inf")))
    a = lil_matrix((len(rows), nv))
    lo, hi = np.empty(len(rows)), np.empty(len(rows))
    for k, (row, l_, h_) in enumerate(rows):
        for j, v in row.items():
            a[k, j] = v
        lo[k], hi[k] = l_, h_
    c_vec = np.zeros(nv)
    for nid in nodes:
        c_vec[ni[nid]] = cost[nid]
    integrality = np.concatenate([np.ones(len(nodes)), np.zeros(len(cls))])
    bounds = Bounds(np.zeros(nv), np.concatenate([np.ones(len(nodes)), np.full(len(cls), float(big))]))
    res = milp(c_vec, constraints=LinearConstraint(a.tocsr(), lo, hi), integrality=integrality, bounds=bounds,
               options={"time_limit": timeout, "disp": False})
    if res.x is None or res.status not in (0,):
        if warm is not None:
            return warm, f"ILP gave no optimal answer ({res.message}); greedy answer kept"
        raise ExtractionError(f"ILP failed: {res.message}")
    choice: Choice = {}
    for c in cls:
        picked = [nid for nid in view.classes.get(c, ()) if res.x[ni[nid]] > 0.5]
        if picked:
            choice[c] = min(picked, key=lambda x: cost[x])
    return choice, "optimal"


EXTRACTORS: dict[str, dict] = {
    "greedy-dag": {"optimal_for": "trees", "bench": True},
    "ilp": {"optimal_for": "dags", "bench": True},
}


def extract(view: EGraphView, roots: list[str], cost: dict[str, float], method: str = "greedy-dag",
            timeout: float = 10.0) -> Extraction:
    t0 = time.perf_counter()
    greedy = greedy_dag(view, roots, cost)
    choice, note = greedy, ""
    if method == "ilp":
        try:
            choice, note = ilp(view, roots, cost, timeout=timeout, warm=greedy)
            check(view, roots, choice)
            if dag_cost(view, roots, choice, cost) > dag_cost(view, roots, greedy, cost) + 1e-6:
                choice, note = greedy, "ILP answer worse than greedy (time limit); greedy kept"
        except ExtractionError as e:
            choice, note = greedy, f"{e}; greedy answer kept"
    elif method != "greedy-dag":
        raise ExtractionError(f"unknown extractor {method!r}; known: {', '.join(EXTRACTORS)}")
    check(view, roots, choice)
    secs = time.perf_counter() - t0
    return Extraction(choice, dag_cost(view, roots, choice, cost), tree_cost(view, roots, choice, cost), secs, method, note)



