"""The one pipeline, capture -> engine -> lowering, and the :class:`Engine` that owns its state.

Every way into satfuse ends in :meth:`Engine.compile`: ``optimize`` (a function captured on its
example inputs), ``jit`` (captured per call case with symbolic extents), the ``torch.compile``
backend (the graph Dynamo / AOTAutograd traced, converted). The capture route differs by what is
given (a Python function or an fx graph); everything after it (catalogue, saturation, extraction,
lowering, timings, GC pause) is this one call. The rule-coverage harness (``rewrites/``) stops
half-way, at :meth:`Engine.saturate`: the same saturation on the same pool, with its own sources
(rules isolated one by one) and its own extraction costs (a rule forced into the plan).

An Engine owns what lives longer than one compilation:

- the pool of loaded egglog sessions (``engine/pool.py``) and its worker thread, which every
  e-graph of that pool is bound to (egglog e-graphs are thread-affine): started on first use,
  stopped by :meth:`Engine.close` or at exit;
- the rule catalogues, loaded once per rule set (``options.rules`` + ``builtin_rules``);
- the default :class:`~satfuse.api.Options`, budgets included, that calls without ``options=``
  use (a dict ``options=`` overrides only the fields it names);
- the graphs ``torch.compile`` handed it (the newest :data:`KEEP_GRAPHS`, for inspection:
  :meth:`Engine.compiled_plans`), and hooks called on each (benchmarks tally plans with them).

``satfuse.optimize`` / ``jit`` / ``backend="satfuse"`` use :func:`default_engine`, made on first
use (importing satfuse creates nothing but the backend's registration). An Engine is safe to use
from several threads: captures serialize on the tracing lock, saturation on the pool's worker,
and the catalogue cache on a lock.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from satfuse.api import Options, Plan
from satfuse.engine.fallible import effects
from satfuse.engine.gcpause import gc_paused
from satfuse.engine.ir import Trace
from satfuse.engine.optimize import EngineResult, Saturated, optimize_trace, saturate_trace
from satfuse.engine.pool import SessionPool, shared_pool
from satfuse.engine.session import Budget, Source
from satfuse.rewrites.packs import Catalogue, builtin_catalogue, load_catalogue


@dataclass
class Compiled:
    """What :meth:`Engine.compile` made of one captured trace."""

    catalogue: Catalogue
    engine: EngineResult
    lowered: Any  # satfuse.lowering.plan.LoweredPlan: callable, with its prologue and steps
    timings: dict[str, float]


#: how many compiled ``torch.compile`` graphs an Engine keeps for inspection
KEEP_GRAPHS = 32


class Engine:
    """Compiles programs with one session pool, one catalogue cache and default options.

    ``satfuse.Engine({"target": "eager", "budget": {"seconds": 2.0}})`` makes an engine with its own
    pool (``pool=False``: a fresh e-graph per compilation; ``pool=SessionPool(...)``: that one);
    ``engine.optimize``, ``engine.jit`` and ``engine.backend()`` are the public entry points bound
    to it."""

    def __init__(self, options: Options | dict[str, Any] | None = None, *, pool: bool | SessionPool = True) -> None:
        self.options = Options.of(options)
        self.pool = pool if isinstance(pool, SessionPool) else SessionPool(enabled=None if pool else False)
        self._catalogues: dict[tuple, Catalogue] = {}
        self._lock = threading.Lock()
        self._graphs: list[Any] = []  # CompiledGraph records, newest last
        self.on_graph: list[Callable[[Any], None]] = []  # called with each CompiledGraph

    # ------------------------------------------------------------------ state
    def options_for(self, options: Options | dict[str, Any] | None) -> Options:
        """The options of one call: the engine's, with a dict's fields (or a whole Options) on top."""
        if options is None:
            return self.options
        if isinstance(options, dict):
            given = Options.of(options)  # validates the keys
            return dataclasses.replace(self.options, **{k: getattr(given, k) for k in options})
        return Options.of(options)

    def catalogue(self, opts: Options) -> Catalogue:
        """The rule catalogue of ``opts``' rule set, loaded once per engine. Not type-checked on its
        own: the first session loaded from it (on this engine's pool) raises the same RuleError."""
        key = (tuple(str(r) for r in opts.rules), opts.builtin_rules)
        with self._lock:
            cat = self._catalogues.get(key)
            if cat is None:
                cat = builtin_catalogue() if key == ((), True) else load_catalogue(opts.rules, opts.builtin_rules,
                                                                                    check=False)
                self._catalogues[key] = cat
            return cat

    def record(self, graph: Any) -> None:
        """Keep a graph ``torch.compile`` had this engine compile (``graph_plans.CompiledGraph``)."""
        with self._lock:
            self._graphs.append(graph)
            del self._graphs[:-KEEP_GRAPHS]
        for hook in list(self.on_graph):
            hook(graph)

    def compiled_plans(self) -> list[Any]:
        """The graphs ``torch.compile`` compiled on this engine, newest last (the last :data:`KEEP_GRAPHS`):
        ``print(p)`` shows a plan, ``p.explain()`` its segment table and rules."""
        with self._lock:
            return list(self._graphs)

    def close(self) -> None:
        """Stop this engine's pool worker and drop its loaded sessions (a later call restarts it)."""
        self.pool.shutdown()

    # ------------------------------------------------------------------ the pipeline
    def compile(self, trace: Trace, *, options: Options | dict[str, Any] | None = None,
                hints: dict[str, int] | None = None, aliasing: tuple = (),
                example_values: Sequence[Any] | None = None, timings: dict[str, float] | None = None) -> Compiled:
        """The pipeline entry point every route takes once it has a Trace: catalogue, saturation
        and extraction (``engine/optimize.py``) on this engine's pool, then lowering with the
        inputs' aliasing pattern (and, given ``example_values``, the inputs' view layouts).
        ``timings`` (the route's own, e.g. capture) come first in the result's timings."""
        from satfuse.lowering import lower
        from satfuse.lowering.plan import view_layouts

        opts = self.options_for(options)
        timings = dict(timings or {})
        t_roots = time.perf_counter()
        if not trace.effects:
            trace.effects = effects(trace)  # dead ops eager still runs (they can raise): kept as roots
        t_roots = time.perf_counter() - t_roots
        with gc_paused():
            t0 = time.perf_counter()
            cat = self.catalogue(opts)
            timings["catalogue"] = time.perf_counter() - t0  # ~0 once the rule set is cached
            phases = list(opts.phases) if opts.phases is not None else cat.phases
            eng = optimize_trace(trace, cat.sources, phases, target=opts.target, hints=hints or {},
                                 budget=opts.budget, extractor=opts.extractor, pool=self.pool)
            timings.update(eng.timings)
            # the roots eager's dead ops add are part of the program's encoding (even where the e-graph is skipped)
            timings["encode"] = timings.get("encode", 0.0) + t_roots
            t1 = time.perf_counter()
            layouts = view_layouts(eng.trace, example_values) if example_values is not None else None
            lowered = lower(eng.trace, hints=hints or {}, executor=opts.executor, aliasing=aliasing, layouts=layouts)
            timings["lower"] = time.perf_counter() - t1
        return Compiled(cat, eng, lowered, timings)

    def saturate(self, trace: Trace, *, sources: Sequence[Source] | None = None, phases: Sequence[str] | None = None,
                 budget: Budget | None = None, options: Options | dict[str, Any] | None = None,
                 keep_facts: bool = False) -> Saturated:
        """The first half of :meth:`compile`: ``trace`` saturated on this engine's pool and
        serialized, for callers that extract with their own costs (the rule-coverage harness).
        ``sources``/``phases``/``budget`` default to the options' catalogue and budget; a
        conflict is reported in ``report.conflicts``, not raised; ``keep_facts`` keeps the
        analysis relations' rows in the serialized e-graph."""
        opts = self.options_for(options)
        if sources is None or phases is None:
            cat = self.catalogue(opts)
            sources = cat.sources if sources is None else sources
            phases = (list(opts.phases) if opts.phases is not None else cat.phases) if phases is None else phases
        with gc_paused():
            return saturate_trace(trace, sources, phases, budget=budget or opts.budget, pool=self.pool,
                                  keep_facts=keep_facts, stop_on_conflict=False)

    # ------------------------------------------------------------------ entry points
    def optimize(self, fn_or_trace: Callable | Trace, *example_args: Any,
                 options: Options | dict[str, Any] | None = None, **example_kwargs: Any) -> Plan:
        """``satfuse.optimize`` on this engine."""
        from satfuse.api import optimize_with

        return optimize_with(self, fn_or_trace, example_args, example_kwargs, self.options_for(options))

    def jit(self, fn: Callable | None = None, **kw: Any) -> Any:
        """``satfuse.jit`` on this engine (same keywords)."""
        from satfuse.jit import jit

        return jit(fn, engine=self, **kw)

    def backend(self, options: Options | dict[str, Any] | None = None) -> Callable:
        """A ``torch.compile`` backend compiling on this engine: ``torch.compile(f, backend=eng.backend())``."""
        from satfuse.backend import make_backend

        return make_backend(self.options_for(options), engine=self)


_DEFAULT: list[Engine] = []
_DEFAULT_LOCK = threading.Lock()


def compiled_plans() -> list[Any]:
    """The graphs ``torch.compile(backend="satfuse")`` compiled on the default engine, newest last."""
    return default_engine().compiled_plans()


def default_engine() -> Engine:
    """The engine of ``satfuse.optimize``/``jit``/``backend="satfuse"``: made on first use, with
    default options and the process's shared session pool."""
    if not _DEFAULT:
        with _DEFAULT_LOCK:
            if not _DEFAULT:
                _DEFAULT.append(Engine(pool=shared_pool()))
    return _DEFAULT[0]
