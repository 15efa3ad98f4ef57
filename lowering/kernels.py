"""What nvFuser does with one of our segments: the kernels its own segmenter makes, the bytes
that cross between them, and the host time of one ``FusionDefinition.execute`` call.

One ``Segment`` is one ``FusionDefinition``, but not always one kernel: nvFuser segments a
fusion itself when no single scheduler accepts it (``support.FACTS`` lists the rules with
where they are read in NVIDIA/Fuser). The model follows those rules on the IR:

- reductions are grouped by **signature** (the reduced tensor's non-broadcast extents and
  which of them are reduced, ``reduction-signature``); one kernel per signature, in program
  order, and a node joins the kernel of the latest signature it depends on;
- a node that depends on no reduction and reads only segment inputs is recomputed in every
  kernel that needs it (nvFuser forwards such input chains), re-reading those inputs;
- a kernel whose reduction's input (or a value of that shape) is used again after the
  reduction is a **normalization** and keeps the row persistent: a row larger than the
  persistent budget (``persistent-budget``) splits into a reduction kernel and a pointwise one,
  which reads the row's inputs again;
- a broadcast of a reduction's result to extents other than the reduced tensor's
  (``post-reduction-broadcast``) ends the normalization kernel;
- a kernel without reductions whose outputs are not all covered by its largest output's
  extents (``pointwise-reference``) needs one kernel per uncovered output shape;
- computations that share no non-scalar tensor are one kernel each: nvFuser's schedulers
  reject a fusion graph that is not connected (``connected-fusion``).

Values crossing between two predicted kernels are written once and read by each kernel that
uses them. The prediction is what a GPU run compares with ``torch.profiler``'s kernel list;
the per-node extraction cost model (``engine/costs.py``) does not see it (it has no segments).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import sympy
from satfuse.engine.ir import Node, TensorType, Var
from satfuse.engine.vocab import REDUCTIONS

from .segments import Segment, data_inputs
from .support import FACTS, HOST_US, PERSISTENT_BUDGET_BYTES, segment_input_vars


@dataclass
class Kernel:
    """One predicted nvFuser kernel of a segment: its nodes and why it is separate."""

    nodes: list[Node] = field(default_factory=list)
    signature: tuple | None = None  # the reduction signature it schedules, None: pointwise
    reason: str = ""  # fact id that split it off ("" for the first kernel)


@dataclass
class Prediction:
    """nvFuser's segmentation of one segment: kernels, crossing values, host time."""

    kernels: list[Kernel]
    #: (value, writing kernel, reading kernels): tensors written to global memory between kernels
    crossings: list[tuple[Var, int, list[int]]] = field(default_factory=list)
    #: (segment input, extra reads): inputs read by more than one kernel
    rereads: list[tuple[Var, int]] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # one line per split, naming the fact
    host_us: float = 0.0

    @property
    def count(self) -> int:
        return len(self.kernels)


def _extent(e: Any, hints: dict[str, int]) -> int:
    if isinstance(e, int):
        return e
    if isinstance(e, sympy.Expr):
        from satfuse.engine.costs import DEFAULT_EXTENT

        v = e.subs({s: hints.get(s.name, DEFAULT_EXTENT) for s in e.free_symbols})
        return int(v) if v.is_number else DEFAULT_EXTENT
    return 1


def _itemsize(t: TensorType) -> int:
    from satfuse.engine.costs import itemsize

    return itemsize(t.dtype)


def signature(n: Node) -> tuple:
    """A reduction's signature: the reduced tensor's non-broadcast extents, and which of those
    positions are reduced. nvFuser fuses reductions only of the same signature."""
    x, dims = n.args[0], n.args[1]
    shape = tuple(x.type.shape)
    red = {d % max(len(shape), 1) for d in dims} if dims else set(range(len(shape)))
    kept = [i for i, e in enumerate(shape) if not (isinstance(e, int) and e == 1)]
    return tuple(shape[i] for i in kept), tuple(j for j, i in enumerate(kept) if i in red)


def _non_bcast(shape: tuple) -> list:
    return [e for e in shape if not (isinstance(e, int) and e == 1)]


def _covers(ref: tuple, shape: tuple) -> bool:
    """Every non-broadcast extent of ``shape`` appears among ``ref``'s (as a multiset)."""
    pool = _non_bcast(ref)
    for e in _non_bcast(shape):
        if e in pool:
            pool.remove(e)
        else:
            return False
    return True


def _reduction_groups(nodes: list[Node]) -> tuple[list[list[Node]], list[set[int]]]:
    """Reductions merged by signature, largest reduced tensor first, wherever the merge keeps the
    kernel graph acyclic (as CombineReductions does); returns the groups in a topological order
    and, per group, the groups it runs after."""
    reds = [n for n in nodes if n.op in REDUCTIONS and isinstance(n.args[0], Var)]
    index = {id(r): i for i, r in enumerate(reds)}
    # id(var) -> the latest reductions it depends on through pointwise nodes, with every reduction
    # that is an ancestor of another left out: the direct edges of the graph (the same reachability;
    # a residual path would otherwise carry every earlier reduction along, quadratically)
    kd: dict[int, set[int]] = {}
    pred: list[set[int]] = [set() for _ in reds]
    anc: list[int] = []  # bitmask of every reduction each one runs after
    for n in nodes:
        up: set[int] = set()
        for v in data_inputs(n):
            up |= kd.get(id(v), set())
        if len(up) > 1:
            mask = 0
            for q in up:
                mask |= anc[q]
            up = {q for q in up if not mask >> q & 1}
        if id(n) in index:
            i = index[id(n)]
            pred[i] = up
            mask = 0
            for q in up:
                mask |= anc[q] | 1 << q
            anc.append(mask)
            kd[id(n.out)] = {i}
        else:
            for o in n.outs:
                kd[id(o)] = up
    leader = list(range(len(reds)))

    def find(i: int) -> int:
        while leader[i] != i:
            leader[i] = leader[leader[i]]  # path halving: chains stay short
            i = leader[i]
        return i

    # the group graph, kept up to date as groups merge (a rebuild per merge was quadratic)
    succ: dict[int, set[int]] = {i: set() for i in range(len(reds))}
    predg: dict[int, set[int]] = {i: set(ps) for i, ps in enumerate(pred)}
    for i, ps in enumerate(pred):
        for p in ps:
            succ[p].add(i)

    def merge(a: int, b: int) -> None:
        """Group b joins group a (both leaders)."""
        leader[b] = a
        for c in succ.pop(b):
            predg[c].discard(b)
            if c != a:
                predg[c].add(a)
                succ[a].add(c)
        for c in predg.pop(b):
            succ[c].discard(b)
            if c != a:
                succ[c].add(a)
                predg[a].add(c)

    def reaches(a: int, b: int, skip_direct: bool) -> bool:
        """A path from group a to group b (through another group when ``skip_direct``): searched
        forward from a and backward from b in turns, so a search stops as soon as either side
        runs out (a chain of reductions has no ancestor of a to search back through, where the
        forward search alone walked every later reduction, quadratically)."""
        fwd = [c for c in succ[a] if not (skip_direct and c == b)]
        bwd = [c for c in predg[b] if not (skip_direct and c == a)]
        sides = ((fwd, set(fwd), succ, b), (bwd, set(bwd), predg, a))
        while fwd and bwd:
            for stack, seen, edges, goal in sides:
                c = stack.pop()
                if c == goal:
                    return True
                for d in edges[c]:
                    if d not in seen:
                        seen.add(d)
                        stack.append(d)
        return False

    by_sig: dict[tuple, list[int]] = {}
    sigs = [signature(r) for r in reds]
    for i, sg in enumerate(sigs):
        by_sig.setdefault(sg, []).append(i)
    # per reduction, the reductions with a path to it through one of another signature: never
    # merged with either end, so their groups always reach its group through another, and the
    # search need not ask (in an alternating chain it asked of every earlier pair: cubic)
    through = [0] * len(reds)
    for i, ps in enumerate(pred):
        m = 0
        for p in ps:
            m |= anc[p] if sigs[p] != sigs[i] else through[p]
        through[i] = m
    order = sorted(by_sig, key=lambda sg: -_numel_sig(sg))
    for sg in order:
        before = 0  # the members ahead of i, tried in order
        for i in by_sig[sg]:
            cand = before & ~through[i]
            before |= 1 << i
            while cand:
                low = cand & -cand
                cand ^= low
                a, b = find(low.bit_length() - 1), find(i)
                if a != b and not reaches(a, b, True) and not reaches(b, a, True):
                    merge(a, b)
                    break
    groups: dict[int, list[Node]] = {}
    for i, r in enumerate(reds):
        groups.setdefault(find(i), []).append(r)
    gpred = {g: predg[g] - {g} for g in groups}
    topo: list[int] = []  # Kahn's algorithm, smallest leader first
    indeg = {g: len(gpred[g]) for g in groups}
    ready = [g for g in groups if not indeg[g]]
    heapq.heapify(ready)
    while ready:
        g = heapq.heappop(ready)
        topo.append(g)
        for c in succ[g]:
            indeg[c] -= 1
            if not indeg[c]:
                heapq.heappush(ready, c)
    pos = {g: k for k, g in enumerate(topo)}
    return [groups[g] for g in topo], [{pos[p] for p in gpred[g]} for g in topo]


def _numel_sig(sg: tuple) -> int:
    n = 1
    for e in sg[0]:
        n *= e if isinstance(e, int) else 1 << 20
    return n


def predict(seg: Segment, hints: dict[str, int] | None = None) -> Prediction:
    """The kernels nvFuser's segmenter makes of ``seg`` (module docstring)."""
    hints = hints or {}
    nodes = seg.nodes
    red_groups, red_after = _reduction_groups(nodes)
    kernels = [Kernel(signature=signature(rs[0]), reason="reduction-signature" if k else "")
               for k, rs in enumerate(red_groups)] or [Kernel()]
    after = [set(a) for a in red_after] or [set()]
    reasons = [f"{rs[0].out.name} = {rs[0].op}(...): reduction signature {_fmt_sig(signature(rs[0]))} cannot share "
               f"a kernel with the reductions before it {_cite('reduction-signature')}"
               for rs in red_groups[1:]]
    red_src = {k: rs[0] for k, rs in enumerate(red_groups)}
    placed = {id(r): k for k, rs in enumerate(red_groups) for r in rs}
    # a node runs in the latest kernel it depends on; one that reads only segment inputs runs
    # in the earliest kernel of the reductions it feeds (else it is forwarded: recomputed where read)
    feeds: dict[int, int] = {}
    for n in reversed(nodes):
        g = placed.get(id(n))
        if g is None:
            cands = [feeds[id(o)] for o in n.outs if id(o) in feeds]
            g = min(cands) if cands else None
        if g is not None:
            for v in data_inputs(n):
                feeds[id(v)] = min(g, feeds.get(id(v), g))
    group: dict[int, int | None] = {}
    for n in nodes:
        g = placed.get(id(n))
        if g is None:
            deps = {group[id(v)] for v in data_inputs(n) if group.get(id(v)) is not None}
            g = max(deps) if deps else feeds.get(id(n.outs[0])) if n.outs else None
            if g is not None and n.op == "broadcast_in_dim" and g in red_src:
                r = red_src[g]
                if not _covers(tuple(r.args[0].type.shape), tuple(n.out.type.shape)):
                    kernels.append(Kernel(reason="post-reduction-broadcast"))
                    after.append({g} | after[g])
                    reasons.append(f"{n.out.name} = broadcast_in_dim(...) of a reduction result to "
                                   f"{list(n.out.type.shape)} {_cite('post-reduction-broadcast')}")
                    g = len(kernels) - 1
        for o in n.outs:
            group[id(o)] = g
        if g is not None:
            kernels[g].nodes.append(n)
    # forwarded input chains run in the kernels that read them
    forwarded = [n for n in nodes if all(group.get(id(o)) is None for o in n.outs)]
    uses: dict[int, set[int]] = {}
    for n in nodes:
        g = group.get(id(n.outs[0]))
        if g is None:
            continue
        looked_up = {id(v) for v in segment_input_vars(n)}  # a lookup reads only what it gathers
        for v in data_inputs(n):
            if id(v) not in looked_up:
                uses.setdefault(id(v), set()).add(g)
    for o in seg.outputs:
        g = group.get(id(o))
        uses.setdefault(id(o), set()).add(g if g is not None else 0)
    for _, v in seg.aliases:
        uses.setdefault(id(v), set()).add(group.get(id(v)) or 0)
    members: list[list[Node]] = [list(k.nodes) for k in kernels]  # with the forwarded nodes each recomputes
    for n in reversed(forwarded):  # a forwarded node is needed where its results are
        need: set[int] = set()
        for o in n.outs:
            need |= uses.get(id(o), set())
        need = need or {0}
        looked_up = {id(v) for v in segment_input_vars(n)}
        for v in data_inputs(n):
            if id(v) not in looked_up:
                uses.setdefault(id(v), set()).update(need)
        for g in need:
            members[g].append(n)
    # persistent normalizations whose row does not fit
    for g, k in enumerate(list(kernels)):
        r = red_src.get(g)
        if r is None:
            continue
        row = _row_bytes(r, hints)
        if _is_normalization(k, r) and row > PERSISTENT_BUDGET_BYTES:
            kernels.append(Kernel(reason="persistent-budget"))
            reasons.append(f"{r.out.name} = {r.op}(...): a normalization whose row ({row:,} bytes) exceeds the "
                           f"persistent budget ({PERSISTENT_BUDGET_BYTES:,} bytes): reduction and pointwise kernels "
                           f"{_cite('persistent-budget')}")
            src = r.args[0]
            for v in seg.inputs:
                if isinstance(v.type, TensorType) and tuple(v.type.shape) == tuple(src.type.shape):
                    uses.setdefault(id(v), set()).add(len(kernels) - 1)
    # independent computations in one kernel: no reference tensor covers them all
    for g in range(len(members)):
        parts = _components(members[g])
        if parts > 1:
            kernels += [Kernel(reason="connected-fusion") for _ in range(parts - 1)]
            reasons.append(f"kernel {g}: {parts} computations that share no non-scalar tensor: each connected "
                           f"component is its own kernel {_cite('connected-fusion')}")
    crossings: list[tuple[Var, int, list[int]]] = []
    for n in nodes:
        for o in n.outs:
            g = group.get(id(o))
            if g is None or not isinstance(o.type, TensorType):
                continue
            readers = sorted(uses.get(id(o), set()) - {g})
            if readers:
                crossings.append((o, g, readers))
    rereads = [(v, len(uses[id(v)]) - 1) for v in seg.inputs
               if isinstance(v.type, TensorType) and len(uses.get(id(v), ())) > 1]
    tensors = len([v for v in seg.inputs if isinstance(v.type, TensorType)]) + len(seg.outputs) + len(seg.aliases)
    host = HOST_US["execute"] + HOST_US["per_tensor"] * tensors + HOST_US["launch"] * len(kernels)
    return Prediction(kernels, crossings, rereads, reasons, host)


def _components(nodes: list[Node]) -> int:
    """Groups of ``nodes`` connected through tensors of rank > 0 (a 0-d tensor or a scalar maps
    no iteration domain, so it connects nothing)."""
    leader: dict[int, int] = {}

    def find(i: int) -> int:
        root = i
        while leader.setdefault(root, root) != root:
            root = leader[root]
        while i != root:  # path compression: a 10k-op chain made this quadratic
            leader[i], i = root, leader[i]
        return root

    firsts: list[int] = []  # per node with such a tensor, the first one's id
    for n in nodes:
        vs = [v for v in (*data_inputs(n), *n.outs) if isinstance(v.type, TensorType) and v.type.rank > 0]
        if vs:
            root = find(id(vs[0]))
            for v in vs[1:]:
                leader[find(id(v))] = root  # root stays its set's root
            firsts.append(id(vs[0]))
    return len({find(i) for i in firsts})


def _numel(t: TensorType, hints: dict[str, int]) -> int:
    n = 1
    for e in t.shape:
        n *= max(_extent(e, hints), 0)
    return n


def _row_bytes(r: Node, hints: dict[str, int]) -> int:
    """Bytes of one reduced row of ``r``'s operand: what a persistent kernel keeps on chip."""
    x = r.args[0]
    shape, red = signature(r)
    n = 1
    for j in red:
        n *= max(_extent(shape[j], hints), 1)
    return n * _itemsize(x.type)


def _is_normalization(k: Kernel, r: Node) -> bool:
    """A value shaped like the reduced tensor is computed from the reduction's result in the
    same kernel: the row must stay on chip (or be read again)."""
    shape = tuple(r.args[0].type.shape)
    dep = {id(r.out)}
    for n in k.nodes[k.nodes.index(r) + 1:] if r in k.nodes else []:
        if any(id(v) in dep for v in data_inputs(n)):
            dep.update(id(o) for o in n.outs)
            if n.op not in REDUCTIONS and any(tuple(o.type.shape) == shape for o in n.outs
                                              if isinstance(o.type, TensorType)):
                return True
    return False


def _cite(fact: str) -> str:
    """A short citation of ``support.FACTS[fact]``: its id and first source."""
    return f"[{fact}: {FACTS[fact].source.split(';')[0]}]"


def _fmt_sig(sig: tuple | None) -> str:
    if sig is None:
        return "(none)"
    shape, red = sig
    return f"[{', '.join(str(e) for e in shape)}] over {list(red)}"
