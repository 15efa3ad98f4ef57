"""Trace -> e-graph -> saturate -> extract -> Trace: the engine's one entry point."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

from .costs import CostModel
from .decode import decode
from .egraph import EGraphView
from .extract import Extraction, class_infos, extract, node_costs
from .ir import Trace
from .session import Budget, RuleError, SaturationReport, Session, Source
from .terms import encode


@dataclass
class EngineResult:
    trace: Trace
    saturation: SaturationReport
    extraction: Extraction
    timings: dict[str, float] = field(default_factory=dict)
    egraph_nodes: int = 0
    chosen_ops: dict[str, int] = field(default_factory=dict)  # e-node op -> count in the chosen plan
    session: Session | None = None
    classes: dict[str, str] = field(default_factory=dict)  # original var name -> class id


def optimize_trace(trace: Trace, sources: Sequence[Source], phases: Sequence[str], *, target: str = "nvfuser",
                   hints: dict[str, int] | None = None, budget: Budget | None = None,
                   extractor: str = "greedy-dag", keep_session: bool = False) -> EngineResult:
    """Saturate ``trace`` with the rules in ``sources`` (phase by phase) and extract the
    cheapest equivalent program for ``target`` ('nvfuser' or 'eager')."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    enc = encode(trace)
    sess = Session(sources)
    sess.run(enc.commands, "trace")
    timings["encode"] = time.perf_counter() - t0
    rep = sess.saturate(list(phases), budget)
    timings["saturate"] = rep.seconds
    if rep.conflicts:
        raise RuleError(f"saturation equated values of different shapes ({', '.join(sorted(rep.conflicts))}): "
                        "a rule is unsound here; run `python -m satfuse rules check` to find it")
    t1 = time.perf_counter()
    all_vars = [*trace.inputs, *(o for n in trace.nodes for o in n.outs)]
    lets = list(enc.roots) + [enc.var_let[id(v)] for v in all_vars]
    data, classes = sess.serialize(lets)
    root_classes = classes[: len(enc.roots)]
    var_class = {id(v): c for v, c in zip(all_vars, classes[len(enc.roots):])}
    view = EGraphView.from_json(data)
    timings["serialize"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    input_classes = {var_class[id(v)] for v in trace.inputs}
    infos = class_infos(view, hints or {}, input_classes)
    cost = node_costs(view, CostModel(target, hints or {}), infos)
    ex = extract(view, root_classes, cost, method=extractor)
    timings["extract"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    out = decode(view, ex.choice, trace, enc, root_classes, var_class)
    timings["decode"] = time.perf_counter() - t3
    out.provenance = (f"engine target={target} extractor={extractor} "
                      f"({sum(timings.values()) * 1e3:.1f} ms, {len(view.nodes)} e-nodes)")
    chosen: dict[str, int] = {}
    from .extract import reachable

    for c in reachable(view, root_classes, ex.choice):
        op = view.nodes[ex.choice[c]].op
        chosen[op] = chosen.get(op, 0) + 1
    return EngineResult(out, rep, ex, timings, len(view.nodes), chosen, sess if keep_session else None,
                        {v.name: var_class[id(v)] for v in all_vars})
