"""Saturating corpus programs, and forcing a rule into a plan: extraction costs rewritten so
that the plan must take the rule's right side wherever it applied.

Each corpus program is saturated once with every rule. For a rule R and a program where R
fired, the places where R applied (a match of R's left side whose e-class also holds R's
right side) are found by e-matching in Python. R's left-side nodes in those classes cost
1e12, R's right-side nodes cost 0, nodes that no rule created keep their cost, and nodes
other rules created cost 1e6 (so they are used only where R's right side needs them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from satfuse.engine.costs import CostModel
from satfuse.engine.egraph import EGraphView
from satfuse.engine.extract import ExtractionError, check, class_infos, greedy_dag, node_costs, reachable
from satfuse.engine.ir import IRError, TensorType, Trace
from satfuse.engine.schema import ROOTS
from satfuse.engine.session import Budget, RuleError, Source
from satfuse.engine.vocab import OPS, is_opaque

from .corpus import Program, flat_inputs
from .ematch import applications, relation_rows
from .packs import Catalogue, RuleInfo

#: nodes of the original program besides its ops: roots, inputs and fallback calls
_ORIGINAL_ROOTS = frozenset({*ROOTS, "Input", "Opaque", "Proj"})
LHS_COST = 1e12
OTHER_RULE_COST = 1e6


@dataclass
class ProgramRun:
    program: Program
    trace: Trace | None = None
    hints: dict[str, int] = field(default_factory=dict)
    example: list[Any] = field(default_factory=list)
    matches: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    nodes: int = 0
    stop: list[str] = field(default_factory=list)
    error: str = ""
    conflicts: list[str] = field(default_factory=list)
    # saturated graph, for forcing rules
    view: EGraphView | None = None
    roots: list[str] = field(default_factory=list)
    var_class: dict[int, str] = field(default_factory=dict)
    saturated: Any = None  # the engine's Saturated (its decode maps a choice back to a program)
    base_cost: dict[str, float] = field(default_factory=dict)
    original: set[str] = field(default_factory=set)
    class_types: dict[str, list[TensorType]] = field(default_factory=dict)  # program values' types by e-class
    facts: dict[str, set[tuple]] = field(default_factory=dict)  # relation rows (see ematch.relation_rows)




def coverage_sources(cat: Catalogue) -> list[Source]:
    """The catalogue's sources for coverage runs. lang.egg records extent/rank conflicts as
    relations (rather than stopping), so an unsound rule that equates different shapes is
    reported with a counterexample by the differential test."""
    return list(cat.sources)


def isolated_sources(sources: Sequence[Source], cat: Catalogue, keep: RuleInfo) -> list[Source]:
    """``sources`` with every rule of a phase ruleset except ``keep`` blanked out (lines kept, so
    locations stay right): saturating with these runs only ``keep`` plus the analysis."""
    drop: dict[str, list[RuleInfo]] = {}
    for r in cat.rules:
        if r.name != keep.name and r.ruleset != "analysis":
            drop.setdefault(r.path, []).append(r)
    out = []
    for s in sources:
        text = s.text
        for r in drop.get(s.path, ()):
            text = text.replace(r.text, "\n" * r.text.count("\n"), 1)
        out.append(Source(s.path, text))
    return out


def run_program(prog: Program, sources: Sequence[Source], phases: Sequence[str], budget: Budget | None = None,
                like: ProgramRun | None = None, engine: Any = None) -> ProgramRun:
    """Capture ``prog`` (or reuse ``like``'s capture), saturate it through ``engine`` (a
    ``satfuse.Engine``; default: the default engine) and keep what forcing needs."""
    from satfuse.engine import capture

    from satfuse.pipeline import default_engine

    run = ProgramRun(prog)
    if like is not None and like.trace is not None:
        run.trace, run.hints, run.example = like.trace, like.hints, like.example
    else:
        try:
            ex = prog.make_inputs()
            cap = capture(prog.fn, *ex, dynamic=prog.dynamic, name=prog.name)
        except Exception as e:
            run.error = f"capture failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            return run
        run.trace, run.hints, run.example = cap.trace, cap.symbol_hints, flat_inputs(prog.make_inputs())
    trace = run.trace
    t0 = time.perf_counter()
    try:
        sat = (engine or default_engine()).saturate(trace, sources=sources, phases=phases, budget=budget,
                                                    keep_facts=True)
    except RuleError as e:
        run.error = str(e)
        return run
    rep = sat.report
    run.matches = {k: v for k, v in rep.matches.items() if v}
    run.stop = rep.hit_limit
    run.nodes = rep.nodes
    run.roots, run.var_class = sat.roots, sat.var_class
    for v in [*trace.inputs, *(o for n in trace.nodes for o in n.outs)]:
        # a class holding values of different types means a rule equated them
        if id(v) in run.var_class and isinstance(v.type, TensorType):
            types = run.class_types.setdefault(run.var_class[id(v)], [])
            if v.type not in types:
                types.append(v.type)
    run.saturated = sat
    run.facts = relation_rows(sat.data)
    run.conflicts = _conflicts(run.facts)
    view = run.view = sat.view
    input_classes = {run.var_class[id(v)] for v in trace.inputs}
    infos = class_infos(view, run.hints, input_classes)
    run.base_cost = node_costs(view, CostModel("nvfuser", run.hints), infos)
    orig_pairs = {(run.var_class[id(n.out)], OPS[n.op].egg) for n in trace.nodes if not is_opaque(n.op)}
    run.original = {nid for nid, n in view.nodes.items()
                    if n.op in _ORIGINAL_ROOTS or (n.eclass, n.op) in orig_pairs}
    run.seconds = time.perf_counter() - t0
    return run


def _conflicts(facts: dict[str, set[tuple]]) -> list[str]:
    """lang.egg's conflict rows as text: extents equated while different, a shape list equated
    with the empty one."""
    found = [f"{a} vs {b}" for a, b in sorted(facts.get("extent-conflict", ()), key=str)[:20]]
    if facts.get("rank-conflict"):
        found.append("a shape list vs the empty list (ranks differ)")
    return found


def forced_plan(run: ProgramRun, lhs: tuple, rhs: tuple, route: bool = False) -> tuple[Trace | None, str]:
    """The plan that takes ``lhs -> rhs`` wherever it applied in ``run``'s e-graph, or (None, why).

    ``route``: also steer every class that can reach an application toward it (its nodes
    whose children lead there keep their cost, the others cost 1e9), so a rule that
    applied deep inside other rules' rewrites (a take pushed through a chain) is used."""
    view = run.view
    assert view is not None and run.trace is not None
    apps = applications(view, lhs, rhs)
    if not apps:
        return None, "no class holds both sides"
    cost = dict(run.base_cost)
    for nid, n in view.nodes.items():
        if nid in run.original:
            continue
        if view.class_type.get(n.eclass) in ("T", "Root"):
            cost[nid] = cost[nid] + OTHER_RULE_COST
    lhs_roots: set[str] = set()
    rhs_nodes: set[str] = set()
    for a in apps:
        lhs_roots |= a.lhs_roots
        rhs_nodes |= a.rhs_nodes
    if route:
        targets = {a.eclass for a in apps}
        reach = set(targets)
        frontier = list(targets)
        while frontier:
            c = frontier.pop()
            for pid in view.parents.get(c, ()):
                pc = view.nodes[pid].eclass
                if pc not in reach and view.class_type.get(pc) in ("T", "Root", "TL"):
                    reach.add(pc)
                    frontier.append(pc)
        for c in reach - targets:
            for nid in view.classes.get(c, ()):
                n = view.nodes[nid]
                if any(k in reach for k in n.children):
                    cost[nid] = run.base_cost[nid]
                else:
                    cost[nid] = cost[nid] + 1e9
    for nid in rhs_nodes:
        cost[nid] = 0.0
    for nid in lhs_roots - rhs_nodes:
        cost[nid] = LHS_COST
    try:
        choice = greedy_dag(view, run.roots, cost)
        check(view, run.roots, choice)
    except ExtractionError as e:
        return None, f"extraction failed: {e}"
    used = {choice[c] for c in reachable(view, run.roots, choice)}
    used_classes = {view.nodes[u].eclass for u in used}
    forced = bool(used & rhs_nodes) if rhs[0] == "app" else any(
        a.eclass in used_classes and not (used & a.lhs_roots) for a in apps)
    if not forced:
        return None, "the plan could not take the right side (an alternative is required or the rule only restates it)"
    try:
        plan = run.saturated.decode(choice)
    except (IRError, KeyError, ValueError, TypeError) as e:
        return Trace([], [], []), f"the forced plan does not decode: {type(e).__name__}: {e}"
    return plan, ""
