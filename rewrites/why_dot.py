"""The e-graph around a rule's (partial) matches as a Graphviz graph: e-classes as clusters,
e-nodes inside, an edge from each e-node to each child class. Classes the best attempts
matched are green, the class where the best attempt failed is red; the neighbourhood grows
outward from them until ``limit`` e-nodes, and the title says how many of the e-graph's
e-nodes are shown."""

from __future__ import annotations

from satfuse.lowering.dot import quote

from .why import WhyReport


def why_dot(rep: WhyReport, limit: int = 200, top: int = 3) -> str:
    d = rep.describer
    if d is None:
        return 'digraph egraph { label="no e-graph"; }\n'
    view = d.view
    matched: set[str] = set()
    failed_at: set[str] = set()
    seeds: list[str] = []
    for _, a in rep.attempts[:top]:
        cids = [c for _, c in a.matched]
        matched |= set(cids)
        seeds.append(view.nodes[a.root].eclass)
        seeds += cids
        if a.failed and cids:
            failed_at.add(cids[-1])
    chosen: list[str] = []
    count = 0
    frontier = list(dict.fromkeys(seeds))
    seen = set(frontier)
    while frontier and count < limit:
        nxt: list[str] = []
        for c in frontier:
            n = len(view.classes.get(c, ()))
            if count + n > limit and chosen:
                continue
            chosen.append(c)
            count += n
            for nid in view.classes.get(c, ()):
                for k in view.nodes[nid].children:
                    if k not in seen:
                        seen.add(k)
                        nxt.append(k)
            for pid in view.parents.get(c, ()):
                pc = view.nodes[pid].eclass
                if pc not in seen:
                    seen.add(pc)
                    nxt.append(pc)
        frontier = nxt
    total = len(view.nodes)
    title = (f"{rep.rule} on {rep.program}: showing {count:,} of {total:,} e-nodes "
             f"({len(chosen)} of {len(view.classes):,} e-classes) around its {min(top, len(rep.attempts))} nearest matches")
    lines = ["digraph egraph {", "  compound=true; rankdir=TB; fontname=Helvetica;",
             "  node [fontname=Helvetica fontsize=10 shape=box style=rounded]; edge [color=gray40];",
             f"  label={quote(title)}; labelloc=t;"]
    anchor: dict[str, str] = {}
    shown = set(chosen)
    for c in chosen:
        color = "#2e8b57" if c in matched else "#c0392b" if c in failed_at else "gray70"
        where = d.line_of.get(c, "")
        label = f"class {c}" + (f" = {where.split(': ', 1)[-1]}" if where else "")
        lines.append(f"  subgraph cluster_{_id(c)} {{ label={quote(label[:90])}; color=\"{color}\"; penwidth=2;")
        for nid in view.classes.get(c, ()):
            n = view.nodes[nid]
            op = n.op if not view.is_primitive(c) else repr(view.literal(c))
            lines.append(f"    {_id(nid)} [label={quote(op)}];")
            anchor.setdefault(c, _id(nid))
        lines.append("  }")
    for c in chosen:
        for nid in view.classes.get(c, ()):
            for k in dict.fromkeys(view.nodes[nid].children):
                if k in shown:
                    lines.append(f"  {_id(nid)} -> {anchor[k]} [lhead=cluster_{_id(k)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _id(s: str) -> str:
    return "x" + "".join(ch if ch.isalnum() else "_" for ch in s)
