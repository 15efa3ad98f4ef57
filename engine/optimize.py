"""Trace -> e-graph -> saturate -> extract -> Trace: the engine's one entry point."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Sequence

from . import log
from .costs import CostModel
from .decode import decode, post_order
from .egraph import EGraphView
from .extract import Extraction, class_infos, extract, node_costs
from .fallible import in_program_order, index_rank
from .ir import Node, Trace, Var, flat_args
from .pool import SessionPool, shared_pool
from .rule_effects import quiet_rules
from .session import Budget, PhaseReport, RuleError, SaturationReport, Session, Source, StopReason, rule_location
from .vocab import is_opaque

#: e-graph size above which facts are deleted before serializing (the deleting run costs more
#: than it saves on small e-graphs: CE forward+backward has ~600 e-nodes, Adam over 10 ~1,900)
DROP_FACTS_ABOVE = 1000


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
    refs: dict[str, int] = field(default_factory=dict)  # original var name -> k of its handle (Ref k)

    def run(self, commands: Sequence[str], what: str = "<commands>") -> list:
        """Run egglog commands in the kept session, ``$name`` standing for the trace's value
        ``name`` (its handle ``(Ref k)``); other ``$globals`` are left to egglog."""
        if self.session is None:
            raise RuntimeError("optimize_trace(..., keep_session=True) keeps the session to run commands in")
        sub = lambda m: f"(Ref {self.refs[m.group(1)]})" if m.group(1) in self.refs else m.group(0)  # noqa: E731
        return self.session.run([re.sub(r"\$([A-Za-z_][A-Za-z0-9_]*)", sub, c) for c in commands], what)


def conflict_error(rep: SaturationReport, sources: Sequence[Source]) -> RuleError:
    """A rewrite equated values of different shapes, ranks or dtypes (lang.egg's conflict
    relations): name the rules that matched just before, user rules first (the built-in packs
    are checked sound by ``rules check``), each with its ``file:line``."""
    shipped = os.path.abspath(str(resources.files("satfuse.rules")))
    builtin = {src.path for src in sources if os.path.dirname(os.path.abspath(src.path)) == shipped}
    where = {r: rule_location(sources, r) for r in rep.suspects if not r.startswith("lang/")}
    users = [r for r in where if where[r].rsplit(":", 1)[0] not in builtin]
    named = users or list(where)
    what = ", ".join(sorted(rep.conflicts))
    if not named:
        return RuleError(f"saturation equated values of different shapes or dtypes ({what}): a rule is unsound "
                         "here; run `python -m satfuse rules check` to find it")
    rules = "; ".join(f"{where[r]}: rule {r!r}" for r in named)
    return RuleError(f"{rules}: equates values of different shapes or dtypes ({what}) on this program; a rewrite "
                     "must keep its left side's shape and dtype (`python -m satfuse rules check` shows a counterexample)")


@dataclass
class Saturated:
    """A program saturated in an e-graph and serialized: what extraction and decoding read.
    ``report.conflicts`` is set (not raised) when a rule equated values of different types."""

    trace: Trace
    report: SaturationReport
    data: dict
    roots: list[str]  # the class of each root
    var_class: dict[int, str]  # id(Var) -> class, for every value of the trace
    view: EGraphView
    enc: Any  # the program's encoding (handles): decode maps chosen classes back through it
    timings: dict[str, float] = field(default_factory=dict)
    session: Session | None = None
    #: what extraction would give back, where no rule that matched could change a value
    #: (``_plain_program``): then nothing was serialized, and ``data``/``view`` are empty
    program: Trace | None = None

    def decode(self, choice: dict[str, str]) -> Trace:
        """The program an extraction's ``choice`` (class -> node) picks."""
        return decode(self.view, choice, self.trace, self.enc, self.roots, self.var_class)


def saturate_trace(trace: Trace, sources: Sequence[Source], phases: Sequence[str], *,
                   budget: Budget | None = None, pool: SessionPool | None = None, keep_session: bool = False,
                   keep_facts: bool = False, stop_on_conflict: bool = True, skip_unchanged: bool = False) -> Saturated:
    """Load ``trace`` into an e-graph with ``sources``, saturate it phase by phase under ``budget``
    and serialize it. ``pool``: where loaded sessions come from (default: the process's shared
    pool); ``keep_session``: a fresh session kept for more commands instead. Analysis facts
    extraction does not read are dropped from large e-graphs unless ``keep_facts``; with
    ``stop_on_conflict`` a conflict ends the job before serializing (the caller raises); with
    ``skip_unchanged`` an e-graph that holds the program alone is not serialized (``program``)."""
    all_vars = [*trace.inputs, *(o for n in trace.nodes for o in n.outs)]
    t_load = time.perf_counter()

    def job(sess: Session) -> tuple:
        t_add = time.perf_counter()
        enc = sess.add_trace(trace)
        t_sat = time.perf_counter()
        rep = sess.saturate(list(phases), budget)
        if rep.conflicts and stop_on_conflict:
            return enc, rep, None, (t_add, t_sat, 0.0, 0.0)
        if skip_unchanged and not keep_session:
            t_plain = time.perf_counter()
            plain = _plain_program(trace, rep, sources)
            if plain is not None:
                return enc, rep, plain, (t_add, t_sat, t_plain, time.perf_counter())
        t_ser = time.perf_counter()
        if not keep_session and not keep_facts and rep.nodes > DROP_FACTS_ABOVE:
            sess.drop_facts()  # the pooled session is rolled back afterwards
        ser = sess.serialize_program(enc, all_vars)
        return enc, rep, ser, (t_add, t_sat, t_ser, time.perf_counter())

    if keep_session:
        sess = Session(sources)
        enc, rep, ser, (t_add, t_sat, t_ser, t_end) = job(sess)
    else:  # on the pool's egglog thread; the session is rolled back there while we go on
        sess = None
        enc, rep, ser, (t_add, t_sat, t_ser, t_end) = (pool or shared_pool()).run(sources, job)
    timings = {"load": t_add - t_load,  # ~0 when a loaded session was pooled
               "encode": t_sat - t_add, "saturate": rep.seconds}
    if isinstance(ser, Trace):
        timings["decode"] = t_end - t_ser  # the program as decoding would give it, without the e-graph
    if ser is None or isinstance(ser, Trace):
        return Saturated(trace, rep, {}, [], {}, EGraphView.from_json({"nodes": {}}), enc, timings, sess,
                         program=ser)
    t1 = time.perf_counter()
    data, root_classes, var_class = ser.parse()
    view = EGraphView.from_json(data)
    timings["serialize"] = (t_end - t_ser) + (time.perf_counter() - t1)
    return Saturated(trace, rep, data, root_classes, var_class, view, enc, timings, sess)


def optimize_trace(trace: Trace, sources: Sequence[Source], phases: Sequence[str], *, target: str = "nvfuser",
                   hints: dict[str, int] | None = None, budget: Budget | None = None,
                   extractor: str = "hybrid", keep_session: bool = False,
                   pool: SessionPool | None = None, skip_unchanged: bool = True) -> EngineResult:
    """Saturate ``trace`` with the rules in ``sources`` (phase by phase) and extract the
    cheapest equivalent program for ``target`` ('nvfuser' or 'eager'). ``pool``: where loaded
    sessions come from (a ``satfuse.Engine``'s; default: the process's shared pool).
    ``skip_unchanged``: where no rule that matched could change a value, the program (each
    term once) is the answer without serializing or extracting (``_plain_program``)."""
    log.register_with_torch()
    t_check = time.perf_counter()
    if _has_negative_zero(trace):
        return _unoptimized(trace, phases, "the program has a -0.0 constant, which egglog's f64 equality merges "
                                           "with 0.0 (x / -0.0 would become +inf)")
    t_check = time.perf_counter() - t_check
    sat = saturate_trace(trace, sources, phases, budget=budget, pool=pool, keep_session=keep_session,
                         skip_unchanged=skip_unchanged)
    sat.timings["encode"] += t_check  # whether the e-graph can hold the program is part of encoding it
    rep, view = sat.report, sat.view
    if rep.conflicts:
        raise conflict_error(rep, sources)
    if sat.program is not None:
        why = "no rule that can change a value matched: the captured program, each term once, is the plan"
        log.engine.info("extraction skipped: %s", why)
        out = dataclasses.replace(sat.program)  # its own provenance; the captured trace keeps capture's
        out.provenance = (f"engine target={target} extractor={extractor} not needed: no rule that can change a "
                          f"value matched ({sum(sat.timings.values()) * 1e3:.1f} ms)")
        return EngineResult(out, rep, Extraction({}, 0.0, 0.0, "none", note=f"extraction skipped: {why}"),
                            dict(sat.timings))
    timings = dict(sat.timings)
    t2 = time.perf_counter()
    input_classes = {sat.var_class[id(v)] for v in trace.inputs}
    infos = class_infos(view, hints or {}, input_classes)
    cost = node_costs(view, CostModel(target, hints or {}), infos)
    ex = extract(view, sat.roots, cost, method=extractor)
    timings["extract"] = time.perf_counter() - t2 - ex.import_seconds
    if ex.import_seconds:  # scipy, the first time an extraction needs the ILP: a one-time cost
        timings["import"] = timings.get("import", 0.0) + ex.import_seconds
    t3 = time.perf_counter()
    out = sat.decode(ex.choice)
    timings["decode"] = time.perf_counter() - t3
    out.provenance = (f"engine target={target} extractor={extractor} "
                      f"({sum(timings.values()) * 1e3:.1f} ms, {len(view.nodes)} e-nodes)")
    chosen: dict[str, int] = {}
    for c in ex.used:
        op = view.nodes[ex.choice[c]].op
        chosen[op] = chosen.get(op, 0) + 1
    _log_result(rep, ex, view, out, timings)
    all_vars = [*trace.inputs, *(o for n in trace.nodes for o in n.outs)]
    return EngineResult(out, rep, ex, timings, len(view.nodes), chosen, sat.session,
                        {v.name: sat.var_class[id(v)] for v in all_vars},
                        {v.name: sat.enc.ref_of(v) for v in all_vars})


def _plain_program(trace: Trace, rep: SaturationReport, sources: Sequence[Source]) -> Trace | None:
    """What extraction and decoding would give back when every rule that matched only derives
    facts (``rule_effects``): the program itself, each term once as the e-graph holds it
    (``cast(g, f64)`` written twice is one value), only what its roots reach, in the order
    decoding gives. None when a rule could have changed a value, or where this cannot tell
    terms apart as the e-graph does."""
    quiet = quiet_rules(sources, static=not trace.symbols())
    if any(count and name not in quiet for name, count in rep.matches.items()):
        return None
    canon: dict[int, Var] = {}  # id(a value equal to an earlier one) -> that one
    first: dict[Any, Node] = {}
    nodes: list[Node] = []
    rank: dict[int, int] = {}  # as decode ranks: an opaque call by its captured position, an index op by its reader's
    try:
        for pos, n in enumerate(trace.nodes):
            args = _mapped(n.args, canon)
            kwargs = {k: _mapped(v, canon) for k, v in n.kwargs.items()} if canon and n.kwargs else n.kwargs
            key = None
            opaque = is_opaque(n.op)
            if not opaque:  # each opaque call is a term of its own
                key = (n.op, _term_key(args), _term_key(tuple(sorted(kwargs.items()))) if kwargs else _NO_KWARGS)
                prev = first.get(key)
                if prev is not None:
                    canon.update((id(o), p) for o, p in zip(n.outs, prev.outs))
                    continue
            if args is not n.args or (kwargs is not n.kwargs and any(kwargs[k] is not v for k, v in n.kwargs.items())):
                n = Node(n.op, args, kwargs, n.outs, n.site)
            if key is not None:
                first[key] = n
            rank[id(n)] = pos if opaque else index_rank(n, trace.index_ranks)
            nodes.append(n)
    except (TypeError, RuntimeError):  # an operand that cannot be a key as the e-graph's terms are
        return None
    if canon and any(v.name in trace.index_ops or v.name in trace.index_ranks for n in trace.nodes for v in n.outs
                     if id(v) in canon):
        return None
    outputs = [_mapped(o, canon) for o in trace.outputs]
    writebacks = [(b, _mapped(v, canon)) for b, v in trace.writebacks]
    effects = list(dict.fromkeys(_mapped(v, canon) for v in trace.effects))
    roots = [*outputs, *(v for b, v in writebacks if v is not b), *effects]
    live = in_program_order(_decode_order(nodes, roots), lambda n: rank[id(n)])
    out = dataclasses.replace(trace, nodes=live, outputs=outputs, writebacks=writebacks, effects=effects,
                              ranks={id(n): rank[id(n)] for n in live if rank[id(n)] >= 0})
    out.lint()
    return out


def _decode_order(nodes: list[Node], roots: list[Any]) -> list[Node]:
    """The nodes ``roots`` reach, in the order ``Decoder.value`` appends them (``post_order``)."""
    producer = {id(o): n for n in nodes for o in n.outs}
    done: set[Var] = set()
    placed: set[int] = set()
    out: list[Node] = []

    def operands(v: Var) -> list[Var]:
        n = producer.get(id(v))
        return n.inputs() if n is not None else []

    for r in roots:
        if not isinstance(r, Var):
            continue
        for v in post_order(r, operands, done):
            done.add(v)
            n = producer.get(id(v))
            if n is not None and id(n) not in placed:
                placed.add(id(n))
                out.append(n)
    return out


def _mapped(a: Any, canon: dict[int, Var]) -> Any:
    """``a`` with each value equal to an earlier one replaced by it; ``a`` itself where none is."""
    if isinstance(a, Var):
        return canon.get(id(a), a)
    if isinstance(a, (tuple, list)) and canon:
        out = [_mapped(x, canon) for x in a]
        return a if all(x is y for x, y in zip(out, a)) else type(a)(out)
    return a


def _term_key(a: Any) -> Any:
    """``a`` as the e-graph tells operands apart: a value by identity, a number by type and sign."""
    t = type(a)
    if t is Var:  # the common cases first, by exact type (a subclass takes the general path below)
        return ("var", id(a))
    if t is int or t is bool or t is str:
        return (t.__name__, a)
    if t is tuple or t is list:
        return (t.__name__, *map(_term_key, a))
    if isinstance(a, (tuple, list)):
        return (type(a).__name__, *(_term_key(x) for x in a))
    if isinstance(a, Var):
        return ("var", id(a))
    if isinstance(a, float):
        return ("float", a, math.copysign(1.0, a)) if a == a else ("float", "nan")
    return (type(a).__name__, a)


#: ``_term_key`` of no keyword arguments
_NO_KWARGS = _term_key(())


def _has_negative_zero(trace: Trace) -> bool:
    for n in trace.nodes:
        for a in flat_args(n.args, n.kwargs):
            if type(a) is float and a == 0.0 and math.copysign(1.0, a) < 0:
                return True
    return False


def _unoptimized(trace: Trace, phases: Sequence[str], why: str) -> EngineResult:
    """The captured program as the plan, no rule applied: for programs the e-graph cannot hold
    exactly. Never a wrong answer; the report says why every phase was skipped."""
    log.engine.info("engine skipped: %s; the captured program is the plan", why)
    rep = SaturationReport(phases=[PhaseReport(p, stop=StopReason("skipped", why)) for p in phases])
    return EngineResult(trace, rep, Extraction({}, 0.0, 0.0, "none", note=f"engine skipped: {why}"))


def _log_result(rep: SaturationReport, ex: Extraction, view: EGraphView, out: Trace, timings: dict[str, float]) -> None:
    """What ``TORCH_LOGS="satfuse"`` shows of one optimization (formatted only when enabled)."""
    lg = log.engine
    if not lg.isEnabledFor(20):
        return
    stops = ", ".join(f"{p.phase}: {p.stop} after {p.iterations} it" for p in rep.phases)
    lg.info("saturated to %d e-nodes (limit %d) in %.1f ms: %s", rep.nodes, rep.node_limit, rep.seconds * 1e3, stops)
    fired = {k: v for k, v in sorted(rep.matches.items()) if v and not k.startswith("lang/")}
    if fired:
        lg.info("rules that matched: %s", ", ".join(f"{k} x{v}" for k, v in fired.items()))
    if rep.hit_limit:
        lg.info("budget reached: %s", "; ".join(rep.hit_limit))
    lg.info("extracted with %s from %d e-nodes: DAG cost %.4g%s", ex.method, len(view.nodes), ex.dag_cost,
            f"; {ex.note}" if ex.note else "")
    lg.info("engine timings (ms): %s", ", ".join(f"{k}={v * 1e3:.1f}" for k, v in timings.items()))
    lg.debug("chosen program:\n%s", out)
