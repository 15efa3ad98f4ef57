"""DAG-aware extraction over the serialized e-graph.

egglog's built-in extract is tree-cost only (a shared value is paid once per use) and
breaks on large shared DAGs, so satfuse extracts here. Every extractor has one
interface -- ``(view, roots, costs) -> {class: node}`` -- and every result is checked
(:func:`check`): roots chosen, each choice in its class, closed under children, acyclic.

* ``greedy-dag``: each class keeps its best node with the *set* of classes it pulls in
  (so a shared class is counted once, as in extraction-gym's faster-greedy-dag). Classes
  are visited one strongly connected component at a time, children first, so across
  components every set is exact and final; sets are bit sets (Python ints) dropped once
  the last component using them is done, so memory stays linear (a 10,000-op chain:
  2 GiB of per-class dicts before, 9 MiB now). A node whose children already pull in
  its own class is skipped; inside a cyclic component a worklist iterates, and a node
  that would *replace* a choice is checked by walking the current choices there.
* ``hybrid`` (the default): greedy-dag, then prune around its answer -- keep a node only
  if its greedy set cost is within ``slack`` (50 %) of its class's best, drop nodes with
  a child class left empty and dominated nodes (a cheaper node of the class uses a subset
  of its children) -- and solve what is left exactly, leaving out the classes every answer
  reaches with their one kept node (a constant: :func:`_fixed_part`): by trying every combination when
  that is small, else by the ILP with lazy cycle cuts, bounded by the greedy cost, under
  a hard limit (0.25 s + twice the greedy's time, at most ``timeout``). The better answer
  wins (bench/extraction.py measures it against the exact ILP on extraction-gym's e-graphs).
* ``ilp``: exact DAG cost via HiGHS (``scipy.optimize.milp``, imported once) on the
  exactly pruned e-graph: one 0/1 variable per e-node, "a chosen node needs a chosen node
  in each child class", roots chosen, and acyclicity by class levels, only inside the
  strongly connected components (an edge between two components can never close a
  cycle). With ``mip_rel_gap=0`` it is exact; its time limit is hard (HiGHS runs on a
  thread that is abandoned at the deadline); on timeout or failure the greedy answer is
  kept and the ``note`` says why. scipy's one-time import is waited for outside every
  limit and reported on its own (:func:`_scipy`), so a program's plan does not depend on
  whether the process imported scipy before.

Example of why DAG cost matters (the header comment of extraction-gym's
``faster_greedy_dag.rs`` has the same one)::

    root = f(a, a)           tree cost: f + 2*a        DAG cost: f + a

A tree extractor pays the shared ``a`` twice and may prefer a worse, unshared
alternative; the DAG cost is what a program that computes ``a`` once costs.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import sympy

from .costs import ClassInfo, CostModel, itemsize
from .egraph import EGraphView, dim_value, list_value
from .gcpause import gc_paused
from .schema import PRIMITIVE_SORTS, VALUE_SORTS

Choice = dict[str, str]

#: costs closer than this are ties (costs are bytes-equivalents, so this is far below a byte)
EPS = 1e-6
INF = float("inf")


class ExtractionError(RuntimeError):
    pass


@dataclass
class Extraction:
    choice: Choice
    dag_cost: float
    seconds: float
    method: str
    note: str = ""
    used: list[str] = field(default_factory=list)  # the classes the roots reach under ``choice``
    #: scipy's one-time import, which this extraction waited for (not in ``seconds``: ``_scipy``)
    import_seconds: float = 0.0


# --------------------------------------------------------------------------- sizes and costs


def class_infos(view: EGraphView, hints: dict[str, int], input_classes: set[str], default: int = 1024) -> dict[str, ClassInfo]:
    """Size of every tensor class from the shape analysis (cheapest Dim term per extent)."""
    size_choice = smallest_terms(view)
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


def smallest_terms(view: EGraphView) -> Choice:
    """Tree-size extraction for structure classes (Dim, DL, IL and primitives): used to read sizes.

    Tensor classes are left out (no structure term reads one, and in a deep program their tree
    sizes are as large as the program). A worklist over parents (a class that improves
    re-examines the nodes using it). Only strict improvements of a positive size are accepted,
    so a chosen node is always larger than its children's choices: the result is acyclic."""
    best: dict[str, tuple[int, str]] = {}
    class_type = view.class_type
    nodes = view.nodes
    work: list[str] = []
    for cid, nids in view.classes.items():
        t = class_type.get(cid, "")
        if t in PRIMITIVE_SORTS:
            best[cid] = (1, nids[0])
        elif t not in VALUE_SORTS:
            work += nids
    parents = view.parents_of(work)
    queued = set(work)
    while work:
        nid = work.pop()
        queued.discard(nid)
        n = nodes[nid]
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
                for p in parents.get(n.eclass, ()):
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


def _members(bits: int) -> list[int]:
    """Indices of the set bits of ``bits``, highest first (``bin`` scans in C; one Python step per
    member). Only the span from the lowest set bit is written out: a difference of two reach sets
    in a deep program is a few classes far above bit 0, and writing out every bit below them made
    extraction quadratic (0.43 of 5.8 s at 30k ops of blocks)."""
    lo = (bits & -bits).bit_length() - 1
    s = bin(bits >> lo)
    top = len(s) - 1 + lo
    out = []
    i = s.find("1", 2)
    while i >= 0:
        out.append(top - i)
        i = s.find("1", i + 1)
    return out


class _Compact:
    """The classes reachable from the roots (through any node), numbered children first.

    Classes are grouped by strongly connected component of the class graph, components in
    Tarjan's completion order (a component comes after every component it reaches), and
    numbered in that order: a class's descendants outside its own component have smaller
    numbers. Nodes are kept per class with their distinct child classes as numbers; a node
    that uses its own class is dropped (it can never be in an acyclic program)."""

    def __init__(self, view: EGraphView, roots: list[str]):
        succ: dict[str, list[str]] = {}

        def kids(c: str) -> list[str]:
            # in the e-graph's order, not a set's: the numbering, and so greedy's ties inside a cycle
            # and what pruning keeps, would follow the process's string hashes (PYTHONHASHSEED)
            ks = succ[c] = list(dict.fromkeys(k for nid in view.classes.get(c, ()) for k in view.nodes[nid].children))
            return ks

        comp = _sccs(roots, kids)
        self.names: list[str] = list(comp)  # completion order: by component
        idx = {c: i for i, c in enumerate(self.names)}
        self.idx = idx
        self.comp: list[int] = [comp[c] for c in self.names]
        self.node_ids: list[str] = []
        self.node_kids: list[tuple[int, ...]] = []
        self.node_class: list[int] = []
        self.class_nodes: list[list[int]] = []
        for i, c in enumerate(self.names):
            mine = []
            for nid in view.classes.get(c, ()):
                kids = tuple({idx[k] for k in view.nodes[nid].children})
                if i in kids:
                    continue
                mine.append(len(self.node_ids))
                self.node_ids.append(nid)
                self.node_kids.append(kids)
                self.node_class.append(i)
            self.class_nodes.append(mine)
        self.cyclic: list[bool] = [False] * len(self.names)  # in a component of more than one class
        for i, c in enumerate(self.names):
            if any(comp[k] == comp[c] and k != c for k in succ[c]):
                self.cyclic[i] = True


def greedy_dag(view: EGraphView, roots: list[str], cost: dict[str, float]) -> Choice:
    """Cheapest node per class by the cost of the set of classes it pulls in (see module doc)."""
    return _greedy(_Compact(view, roots), roots, cost)[0]


def _greedy(g: _Compact, roots: list[str], cost: dict[str, float]) -> tuple[Choice, list[float], list[float]]:
    """faster-greedy-dag, one strongly connected component at a time, children first.

    A class's dependency set is a bit set (a Python int) with its total cost; it is dropped
    as soon as every component that uses the class is done, so only the frontier's sets are
    alive (a chain keeps O(1) of them). Across components the sets and totals are exact
    (a child component is final before its parents are looked at); inside a cyclic
    component a worklist iterates to a fixpoint, where a cached set can be stale, so a node
    that would replace a choice is checked by walking the current choices in the component.
    Returns (choice, total per class, total per node (inf: never a candidate))."""
    n_cls = len(g.names)
    ncost = [cost[nid] for nid in g.node_ids]
    best = [-1] * n_cls
    ccost = [0.0] * n_cls  # cost of the chosen node
    total = [INF] * n_cls  # cost of the chosen node's dependency set
    bits: list[int] = [0] * n_cls
    node_total = [INF] * len(g.node_ids)
    comp = g.comp
    # which later components use a class: its set is freed when the last of them is done
    ext_kids: dict[int, set[int]] = {}
    for i in range(n_cls):
        for nd in g.class_nodes[i]:
            for k in g.node_kids[nd]:
                if comp[k] != comp[i]:
                    ext_kids.setdefault(comp[i], set()).add(k)
    pending = [0] * n_cls
    for ks in ext_kids.values():
        for k in ks:
            pending[k] += 1

    def evaluate(nd: int) -> tuple[float, int] | None:
        kids = g.node_kids[nd]
        x = g.node_class[nd]
        if not kids:
            return ncost[nd], 1 << x
        for k in kids:
            if best[k] < 0:
                return None
        base = max(kids, key=total.__getitem__) if len(kids) > 1 else kids[0]
        u = bits[base]
        tot = total[base]
        for k in kids:
            if k == base:
                continue
            b = bits[k]
            d = b & ~u
            if not d:
                continue
            tot += total[k] if d == b else sum(ccost[i] for i in _members(d))
            u |= d
        if (u >> x) & 1:
            return None  # its children already pull in its own class
        return tot + ncost[nd], u | (1 << x)

    def reaches(starts: tuple[int, ...], target: int, c: int) -> bool:
        """Do the current choices inside component ``c`` lead from ``starts`` to ``target``?"""
        stack = [k for k in starts if comp[k] == c]
        seen = set()
        while stack:
            k = stack.pop()
            if k == target:
                return True
            if k in seen or best[k] < 0:
                continue
            seen.add(k)
            stack.extend(j for j in g.node_kids[best[k]] if comp[j] == c)
        return False

    i = 0
    while i < n_cls:
        c = comp[i]
        j = i
        while j < n_cls and comp[j] == c:
            j += 1
        if not g.cyclic[i]:  # one class, no cycle: each node once
            for nd in g.class_nodes[i]:
                r = evaluate(nd)
                if r is None:
                    continue
                node_total[nd] = r[0]
                if r[0] < total[i] - EPS:
                    total[i], bits[i], best[i], ccost[i] = r[0], r[1], nd, ncost[nd]
        else:
            members = range(i, j)
            users: dict[int, list[int]] = {}
            for x in members:
                for nd in g.class_nodes[x]:
                    for k in g.node_kids[nd]:
                        if comp[k] == c:
                            users.setdefault(k, []).append(nd)
            queue = deque(nd for x in members for nd in g.class_nodes[x])
            inq = set(queue)
            budget = 50 * len(queue) + 1000
            while queue and budget > 0:
                budget -= 1
                nd = queue.popleft()
                inq.discard(nd)
                r = evaluate(nd)
                if r is None:
                    continue
                x = g.node_class[nd]
                node_total[nd] = min(node_total[nd], r[0])
                if best[x] == nd or r[0] >= total[x] - EPS:
                    continue
                if best[x] >= 0 and reaches(g.node_kids[nd], x, c):
                    continue
                total[x], bits[x], best[x], ccost[x] = r[0], r[1], nd, ncost[nd]
                for p in users.get(x, ()):
                    if p not in inq:
                        inq.add(p)
                        queue.append(p)
        for k in ext_kids.get(c, ()):
            pending[k] -= 1
            if not pending[k]:
                bits[k] = 0
        for x in range(i, j):
            if not pending[x]:
                bits[x] = 0
        i = j
    missing = [r for r in roots if best[g.idx[r]] < 0] if all(r in g.idx for r in roots) else roots
    if missing:
        raise ExtractionError(f"no finite-cost acyclic term for root classes {missing}")
    choice = {g.names[x]: g.node_ids[nd] for x, nd in enumerate(best) if nd >= 0}
    return choice, total, node_total


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
    cyc = _cycle(roots, lambda c: view.nodes[choice[c]].children if c in choice else ())
    return None if cyc is None else cyc + [cyc[0]]


def _cycle(roots: Iterable, successors: Callable[[Any], Iterable]) -> list | None:
    """A cycle (its vertices, in order) reachable from ``roots`` (iterative three-colour DFS)."""
    state: dict = {}
    for r in roots:
        if state.get(r):
            continue
        path = [r]
        stack = [iter(successors(r))]
        state[r] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            s = state.get(nxt, 0)
            if s == 1:
                return path[path.index(nxt):]
            if s == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(successors(nxt)))
    return None


def check(view: EGraphView, roots: list[str], choice: Choice) -> list[str]:
    """Every root chosen, choices in their classes, closed, and no cycles; returns the
    classes the roots use (those :func:`reachable` lists). The cycle search's one walk does it
    all: it asks for each class's successors once, when it first reaches the class."""
    for r in roots:
        if r not in choice:
            raise ExtractionError(f"root class {r} has no choice")
    nodes = view.nodes
    used: list[str] = []

    def kids(c: str) -> tuple[str, ...]:
        nid = choice.get(c)
        if nid is None:
            raise ExtractionError(f"class {c} is used but has no choice")
        n = nodes.get(nid)
        if n is None:
            raise ExtractionError(f"node {nid} chosen for {c} is not an e-node of this graph")
        if n.eclass != c:
            raise ExtractionError(f"node {nid} chosen for {c} belongs to {n.eclass}")
        used.append(c)
        return n.children

    cyc = _cycle(roots, kids)
    if cyc is not None:
        raise ExtractionError("extraction chose a cycle: " + " -> ".join(
            f"{c}[{nodes[choice[c]].op}]" for c in cyc + [cyc[0]]))
    return used


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


def _sccs(starts: Iterable, successors: Callable[[Any], Iterable]) -> dict:
    """Strongly connected components of what ``starts`` reach (Tarjan, iterative): vertex ->
    component id. Ids (and the dict's order) follow completion: a component comes after
    every component it reaches."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    comp: dict[str, int] = {}
    on: set[str] = set()
    st: list[str] = []
    counter = 0
    ncomp = 0
    for v0 in starts:
        if v0 in index:
            continue
        work = [(v0, iter(successors(v0)))]
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
                    work.append((w, iter(successors(w))))
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


_SCIPY: tuple | None = None
_SCIPY_MISSING: list[BaseException] = []
_SCIPY_LOCK = threading.Lock()
_WAITED = threading.local()  # per thread: the seconds its extraction waited for scipy's import


def _scipy() -> tuple:
    """scipy's MILP pieces, imported once (0.3-0.7 s, more from a cold page cache).

    The import is a one-time cost of the process, not part of any extraction: it is waited
    for whole, outside the extraction's time limit, and the seconds are reported
    (:attr:`Extraction.import_seconds`, the plan's ``import`` stage). Counted against the
    limit, it left the first ILP-needing extraction of a process less time than any later
    one (or none: the greedy answer), so a program's plan depended on what the process had
    compiled before."""
    if _SCIPY is None and not _SCIPY_MISSING:
        t0 = time.perf_counter()
        with _SCIPY_LOCK:
            if _SCIPY is None and not _SCIPY_MISSING:
                _import_scipy()
        _WAITED.seconds = getattr(_WAITED, "seconds", 0.0) + time.perf_counter() - t0
    if _SCIPY_MISSING:
        raise ExtractionError("ILP extraction needs scipy (pip install scipy)")
    return _SCIPY  # type: ignore[return-value]


def _import_scipy() -> None:
    global _SCIPY
    try:
        import numpy as np
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import csr_matrix
    except ImportError as e:
        _SCIPY_MISSING.append(e)
        return
    _SCIPY = (np, Bounds, LinearConstraint, milp, csr_matrix)


def _imported() -> float:
    """The seconds this thread waited for scipy's import since the last call (and reset)."""
    waited = getattr(_WAITED, "seconds", 0.0)
    _WAITED.seconds = 0.0
    return waited


def _milp_within(seconds: float, *args, **kwargs):
    """``scipy.optimize.milp`` that returns within ``seconds`` (None when it did not).

    HiGHS checks its time limit only between steps, and some steps of its root node run for
    many seconds (6 s past a 1 s limit seen on extraction-gym's math_associate_adds), so it
    runs on a thread (HiGHS releases the GIL) and is abandoned at the deadline: the caller
    goes on at once, and the abandoned solve stops itself at its next time check. The thread
    is not a daemon: an interpreter exiting meanwhile waits for it (a daemon thread killed
    inside HiGHS aborts the process: "terminate called without an active exception")."""
    milp = _SCIPY[3]  # type: ignore[index]  # imported by the caller
    out: list = []

    def solve() -> None:
        try:
            out.append(milp(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            out.append(e)

    if seconds <= 0:
        return None
    t = threading.Thread(target=solve, name="satfuse-ilp")
    t.start()
    t.join(seconds)
    if out and isinstance(out[0], BaseException):
        raise ExtractionError(f"HiGHS failed: {out[0]}") from out[0]
    return out[0] if out else None


def has_ilp() -> bool:
    try:
        _scipy()
    except ExtractionError:
        return False
    return True


def ilp(view: EGraphView, roots: list[str], cost: dict[str, float], timeout: float = 10.0,
        warm: Choice | None = None, prune: bool = True) -> tuple[Choice, str]:
    """Exact DAG extraction as a MILP; returns ``(choice, note)``.

    ``prune`` first drops, exactly, what no optimum needs: classes unreachable from the
    roots, nodes that use their own class or a class with no usable node, and dominated
    nodes (another node of the class costs no more and uses a subset of its children).
    ``warm`` (the greedy answer) is what comes back when HiGHS finds nothing in
    ``timeout`` seconds (the note says so); without it that is an ``ExtractionError``.
    ``timeout`` bounds the whole call, pruning included.
    """
    t0 = time.perf_counter()
    g = _Compact(view, roots)
    keep = [list(ns) for ns in g.class_nodes]
    _drop_unusable(g, keep)
    if prune:
        _drop_dominated(g, keep, [cost[nid] for nid in g.node_ids])
    return _solve(g, keep, roots, cost, timeout - (time.perf_counter() - t0), warm)


def _drop_unusable(g: _Compact, keep: list[list[int]]) -> None:
    """Drop nodes with a child class that has no node left, to a fixpoint."""
    users: dict[int, list[int]] = {}
    for x, ns in enumerate(keep):
        for nd in ns:
            for k in g.node_kids[nd]:
                users.setdefault(k, []).append(nd)
    dead = [x for x, ns in enumerate(keep) if not ns]
    gone: set[int] = set()
    while dead:
        k = dead.pop()
        for nd in users.get(k, ()):
            if nd in gone:
                continue
            gone.add(nd)
            x = g.node_class[nd]
            keep[x].remove(nd)
            if not keep[x]:
                dead.append(x)


def _drop_dominated(g: _Compact, keep: list[list[int]], ncost: list[float]) -> None:
    """Drop a node when another node of its class costs no more and uses a subset of its
    child classes (replacing it never costs more and cannot close a cycle)."""
    for x, ns in enumerate(keep):
        if len(ns) < 2 or len(ns) > 64:
            continue
        ordered = sorted(ns, key=lambda nd: (ncost[nd], len(g.node_kids[nd])))
        kept: list[int] = []
        for nd in ordered:
            kids = set(g.node_kids[nd])
            if not any(ncost[o] <= ncost[nd] and kids.issuperset(g.node_kids[o]) for o in kept):
                kept.append(nd)
        keep[x] = kept


def _fixed_part(g: _Compact, keep: list[list[int]], root_ids: list[int]) -> tuple[set[int], list[int]]:
    """The classes every answer over ``keep`` reaches with its one kept node (reached from the
    roots through classes that have one kept node), and the classes with a choice reached so
    (where the answers start to differ). What only a choice reaches is the rest of the problem:
    a 10k-op program pruned around its greedy answer had 26,272 classes and one choice in them."""
    reached = _closure(root_ids, lambda c: g.node_kids[keep[c][0]] if len(keep[c]) == 1 else ())
    return {c for c in reached if len(keep[c]) == 1}, [c for c in reached if len(keep[c]) > 1]


def _solve(g: _Compact, keep: list[list[int]], roots: list[str], cost: dict[str, float], timeout: float,
           warm: Choice | None, lazy: bool = False, bound: float | None = None,
           fixed: set[int] | None = None) -> tuple[Choice, str]:
    """The MILP over the nodes in ``keep`` (per class): one 0/1 variable per node, a chosen
    node needs a chosen node in each child class, roots chosen, and no cycles.

    Cycles are excluded either by class levels inside the strongly connected components of
    what is kept (``lazy=False``: one solve, a weak relaxation), or lazily (``lazy=True``:
    solve without them; while the answer has a cycle, forbid choosing all of that cycle's
    nodes together and solve again). ``timeout`` bounds the whole call (scipy's one-time import aside).
    ``fixed`` (:func:`_fixed_part`, lazy cuts only): classes whose one kept node every answer has;
    they get no variable, their cost is a constant, and a need they meet is no row."""
    np, Bounds, LinearConstraint, milp, csr_matrix = _scipy()
    t0 = time.perf_counter()
    root_ids = sorted({g.idx[r] for r in roots})
    for r in root_ids:
        if not keep[r]:
            if warm is not None:
                return warm, f"ILP: root class {g.names[r]} has no usable node; greedy answer kept"
            raise ExtractionError(f"root class {g.names[r]} has no usable node")
    # only what the roots reach through kept nodes
    cls = _closure(root_ids, lambda c: [k for nd in keep[c] for k in g.node_kids[nd]])
    fixed = fixed or set()
    if fixed and not lazy:
        raise ValueError("a fixed part needs lazy cycle cuts")
    col = {}
    nodes: list[int] = []
    for c in cls:
        if c in fixed:
            continue
        for nd in keep[c]:
            col[nd] = len(nodes)
            nodes.append(nd)
    lvl: dict[int, int] = {}
    comp: dict[int, int] = {}
    if not lazy:
        succ = {c: {k for nd in keep[c] for k in g.node_kids[nd]} for c in cls}
        comp = _sccs(cls, succ.__getitem__)
        lvl = {c: len(nodes) + i for i, c in enumerate(c for c in cls if any(comp[k] == comp[c] for k in succ[c]))}
    nv = len(nodes) + len(lvl)
    big = float(len(lvl) + 1)
    indptr = [0]
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []

    def row(entries: Iterable[tuple[int, float]], bound: float) -> None:
        for j, v in entries:
            cols.append(j)
            vals.append(v)
        indptr.append(len(cols))
        lo.append(bound)

    # classes that need a node whatever the choices: the roots, and what a fixed node uses
    needed = {r for r in root_ids if r not in fixed}
    needed.update(k for c in fixed for k in g.node_kids[keep[c][0]] if k not in fixed)
    for r in sorted(needed):
        row(((col[m], 1.0) for m in keep[r]), 1.0)
    for nd in nodes:
        x = g.node_class[nd]
        for k in g.node_kids[nd]:
            if k in fixed:
                continue  # always there
            row([*((col[m], 1.0) for m in keep[k]), (col[nd], -1.0)], 0.0)  # nd needs a node of each child
            if x in lvl and k in lvl and comp[k] == comp[x]:  # level(x) >= level(k) + 1 when nd is picked
                row(((lvl[x], 1.0), (lvl[k], -1.0), (col[nd], -big)), 1.0 - big)
    c_vec = np.zeros(nv)
    c_vec[: len(nodes)] = [cost[g.node_ids[nd]] for nd in nodes]
    if bound is not None:  # no worse than the answer we already have: prunes HiGHS's search from the start
        bound -= sum(cost[g.node_ids[keep[c][0]]] for c in fixed)
        row(((j, -c_vec[j]) for j in range(len(nodes)) if c_vec[j]), -bound * (1 + 1e-9) - EPS)
    integrality = np.concatenate([np.ones(len(nodes)), np.zeros(len(lvl))])
    bounds = Bounds(np.zeros(nv), np.concatenate([np.ones(len(nodes)), np.full(len(lvl), big)]))
    rounds = 0
    while True:
        left = float(timeout) - (time.perf_counter() - t0)
        res = None
        if left > 0:
            a = csr_matrix((np.array(vals), np.array(cols, dtype=np.int64), np.array(indptr, dtype=np.int64)),
                           shape=(len(lo), nv))
            rows = LinearConstraint(a, np.array(lo), np.full(len(lo), np.inf))
            left = float(timeout) - (time.perf_counter() - t0)  # building the matrix took some
            res = _milp_within(left, c_vec, constraints=rows, integrality=integrality, bounds=bounds,
                               options={"time_limit": max(left, 1e-3), "disp": False, "mip_rel_gap": 0.0})
        secs = time.perf_counter() - t0
        if res is None or res.x is None:
            why = "timed out" if res is None or res.status == 1 else f"failed ({res.message})"
            msg = f"ILP {why} after {secs:.2f}s with no solution ({len(nodes)} nodes, {len(lo)} rows, {rounds} cuts)"
            if warm is not None:
                return warm, msg + "; greedy answer kept"
            raise ExtractionError(msg)
        pick: dict[int, int] = {c: keep[c][0] for c in fixed}
        for c in cls:
            picked = [nd for nd in keep[c] if c not in fixed and res.x[col[nd]] > 0.5]
            if picked:
                pick[c] = min(picked, key=lambda nd: (cost[g.node_ids[nd]], nd))
        choice = {g.names[c]: g.node_ids[nd] for c, nd in pick.items()}
        cycle = _cycle(root_ids, lambda c: g.node_kids[pick[c]] if c in pick else ()) if lazy else None
        if cycle is None:
            break
        rounds += 1
        free = [c for c in cycle if c not in fixed]
        if not free:  # the fixed part alone closes a cycle: no answer over ``keep``
            if warm is not None:
                return warm, "ILP: the nodes every answer needs form a cycle; greedy answer kept"
            raise ExtractionError("the nodes every answer needs form a cycle")
        row(((col[pick[c]], -1.0) for c in free), 1.0 - len(free))  # not all of this cycle's chosen nodes
    if res.status == 0:
        return choice, "optimal"
    gap = getattr(res, "mip_gap", None)
    return choice, f"ILP time limit ({timeout:g}s): best solution found, not proven optimal" + (
        f" (gap {gap:.2%})" if gap is not None else "")


#: a pruned remainder whose choices (product of their sizes x classes) fit in this many steps
#: is solved by trying every combination (exact, and no HiGHS start-up or scipy import)
ENUMERATE_STEPS = 20_000


def _enumerate(g: _Compact, keep: list[list[int]], root_ids: list[int], decisions: list[int], cost: dict[str, float],
               greedy: Choice, fixed: set[int], open_: list[int]) -> tuple[Choice, str]:
    """Every combination of the kept nodes of the ``decisions`` classes; the cheapest acyclic one.
    A combination costs what it adds to the fixed part (:func:`_fixed_part`), which every one
    pays alike; only one cheaper than the best so far is checked for cycles."""
    ncost = {nd: cost[g.node_ids[nd]] for ns in keep for nd in ns}
    pick = {c: keep[c][0] for c in _closure(root_ids, lambda c: [k for nd in keep[c] for k in g.node_kids[nd]])}

    def kids(c: int) -> tuple[int, ...]:
        return g.node_kids[pick[c]]

    def added(c: int) -> list[int]:
        return [k for k in g.node_kids[pick[c]] if k not in fixed]

    best_cost, best = INF, None
    for combo in itertools.product(*(keep[c] for c in decisions)):
        pick.update(zip(decisions, combo))
        c = sum(ncost[pick[x]] for x in _closure(open_, added))
        if c < best_cost - EPS and _cycle(root_ids, kids) is None:
            best_cost, best = c, {g.names[x]: g.node_ids[pick[x]] for x in _closure(root_ids, kids)}
    if best is None:
        return greedy, "enumeration found no acyclic choice; greedy answer kept"
    return {**greedy, **best}, "optimal over the pruned e-graph (enumerated)"


def hybrid(view: EGraphView, roots: list[str], cost: dict[str, float], timeout: float = 1.0,
           slack: float = 0.5) -> tuple[Choice, str]:
    """Greedy, then the exact ILP on what is left of the e-graph once pruned around the greedy
    answer; the better of the two (see the module doc)."""
    t0 = time.perf_counter()
    g = _Compact(view, roots)
    greedy, total, node_total = _greedy(g, roots, cost)
    keep = [[nd for nd in ns if node_total[nd] <= total[x] * (1 + slack) + EPS] for x, ns in enumerate(g.class_nodes)]
    _drop_unusable(g, keep)
    _drop_dominated(g, keep, [cost[nid] for nid in g.node_ids])
    root_ids = [g.idx[r] for r in roots]
    fixed, open_ = _fixed_part(g, keep, root_ids)
    rest = _closure(open_, lambda c: [k for nd in keep[c] for k in g.node_kids[nd] if k not in fixed])
    decisions = [c for c in rest if len(keep[c]) > 1]
    if not decisions:
        return greedy, "greedy: no choice left after pruning"
    if math.prod(len(keep[c]) for c in decisions) * len(rest) <= ENUMERATE_STEPS:
        return _enumerate(g, keep, root_ids, decisions, cost, greedy, fixed, open_)
    t_import = time.perf_counter()
    try:
        _scipy()
    except ExtractionError:
        return greedy, "greedy (no scipy for the ILP step)"
    # the whole call keeps to ``timeout``: greedy and pruning come off the ILP's share (scipy's one-time import does not)
    spent = t_import - t0
    limit = min(timeout - spent, 0.25 + 2 * spent)
    if limit <= 0:
        return greedy, f"greedy (the {timeout:g}s limit was spent before the ILP step)"
    gcost = dag_cost(view, roots, greedy, cost)
    found, note = _solve(g, keep, roots, cost, limit, greedy, lazy=True, bound=gcost, fixed=fixed)
    if found is not greedy and dag_cost(view, roots, found, cost) >= gcost - EPS:
        return greedy, note + "; no better than greedy"
    return {**greedy, **found}, note  # the ILP decides what the roots reach; greedy names the rest


# --------------------------------------------------------------------------- registry and entry


EXTRACTORS: dict[str, dict] = {
    # optimal_for: what the extractor is exact for; bench: run by bench/extraction.py
    "greedy-dag": {"fn": greedy_dag, "optimal_for": "trees", "bench": True,
                   "doc": "bottom-up, shared classes paid once; fast; no optimality guarantee on DAGs"},
    "hybrid": {"fn": hybrid, "optimal_for": "dags whose optimum survives the pruning", "bench": True,
               "doc": "greedy-dag, then the ILP on the pruned remainder under a short hard limit (default)"},
    "ilp": {"fn": ilp, "optimal_for": "dags", "bench": False,
            "doc": "exact DAG cost via HiGHS MILP on the exactly pruned e-graph; timeout falls back to greedy-dag"},
}

DEFAULT = "hybrid"


def extract(view: EGraphView, roots: list[str], cost: dict[str, float], method: str = DEFAULT,
            timeout: float | None = None) -> Extraction:
    """Run extractor ``method`` (a key of ``EXTRACTORS``) and check its answer.

    ``timeout`` bounds the whole extraction, the ILP being abandoned at it (default: 10 s for
    ``ilp``, 1 s for ``hybrid``); greedy-dag has none. scipy's one-time import is not part of
    it (``Extraction.import_seconds``)."""
    if method not in EXTRACTORS:
        raise ExtractionError(f"unknown extractor {method!r}; known: {', '.join(EXTRACTORS)}")
    t0 = time.perf_counter()
    note = ""
    _imported()
    with gc_paused():  # extraction allocates many small objects and frees them all at the end
        choice, note = _run(view, roots, cost, method, timeout)
        used = check(view, roots, choice)
    waited = _imported()
    return Extraction(choice, sum(cost[choice[c]] for c in used), time.perf_counter() - t0 - waited, method, note,
                      used, waited)


def _run(view: EGraphView, roots: list[str], cost: dict[str, float], method: str,
         timeout: float | None) -> tuple[Choice, str]:
    note = ""
    if method == "greedy-dag":
        choice = greedy_dag(view, roots, cost)
    else:
        greedy: Choice | None = None
        try:
            if method == "hybrid":
                found, note = hybrid(view, roots, cost, timeout=1.0 if timeout is None else timeout)
            else:
                t0 = time.perf_counter()
                greedy = greedy_dag(view, roots, cost)
                left = (10.0 if timeout is None else timeout) - (time.perf_counter() - t0)
                found, note = ilp(view, roots, cost, timeout=left, warm=greedy)
            if greedy is not None and found is not greedy and (
                    dag_cost(view, roots, found, cost) > dag_cost(view, roots, greedy, cost) + EPS):
                found, note = greedy, note + "; worse than greedy, greedy answer kept"
            choice = found if greedy is None else {**greedy, **found}
        except ExtractionError as e:
            if greedy is None:
                greedy = greedy_dag(view, roots, cost)
            choice, note = greedy, f"{e}; greedy answer kept"
    return choice, note
