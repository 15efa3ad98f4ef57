"""The pipeline's route for fx graphs that Dynamo or AOTAutograd hand over (``torch.compile``).

One graph becomes a callable: AOTAutograd's functional graphs are converted as they are
(``convert_aot_graph``: no second trace, Dynamo's symbols); Dynamo's own graphs, which write
tensors or compute one they never read, are traced by capture's functionalization
(``capture_dynamo_graph``: eager's refusals and write semantics). Then :meth:`Engine.compile`.
Where no plan may serve a graph (eager rejects its example, an aliasing pattern no plan
serves, views with symbolic geometry) the graph runs eagerly, transactionally
(``satfuse/eager.py``); a plan whose aliasing guard fails on a later call does the same.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

_LOG = logging.getLogger("satfuse.capture")


class BackendError(RuntimeError):
    """satfuse could not compile a Dynamo graph (names the graph and the failing stage)."""


@dataclass
class CompiledGraph:
    """One graph an Engine compiled for ``torch.compile``: its kind, trace, plan and the guards it
    added to Dynamo (``satfuse.compiled_plans()`` lists them)."""

    kind: str  # "inference" | "forward" | "backward"
    trace: Any
    plan: Any
    engine: Any
    timings: dict[str, float] = field(default_factory=dict)
    added_guards: list[Any] = field(default_factory=list)
    dropped_guards: list[Any] = field(default_factory=list)  # stride-only guards of the re-trace

    def __str__(self) -> str:
        return f"# {self.kind} graph\n{self.plan}"

    __repr__ = __str__

    def explain(self) -> str:
        """The same report as ``satfuse.Plan.explain()``: segment table, rules that matched, timings."""
        from satfuse.api import Plan

        return f"# {self.kind} graph\n" + Plan(self.plan, None, self.engine, self.timings).explain()


def refused_graph(gm: Any, err: BaseException, kind: str = "inference") -> Callable:
    """Dynamo's graph, run eagerly, where no plan may be made for it: eager rejects the example
    (its error is raised on each call, inputs untouched), or satfuse has no plan for the graph."""
    from satfuse.eager import eager_graph

    _LOG.warning("satfuse backend: no plan for the %s graph (%s: %s); it runs eagerly", kind,
                 type(err).__name__, (str(err).strip().splitlines() or [""])[0][:300])
    return eager_graph(gm)


def compile_graph(engine: Any, options: Any, gm: Any, example_inputs: list, kind: str, mark: Any = None) -> Callable:
    """One graph on ``engine``: AOTAutograd's (``mark`` taken before AOTAutograd traced) or
    Dynamo's (no ``mark``). Returns the callable Dynamo or AOTAutograd runs."""
    from torch.utils._python_dispatch import _disable_current_modes

    from satfuse.eager import eager_graph
    from satfuse.engine.capture.graph import capture_dynamo_graph, convert_aot_graph
    from satfuse.engine.gcpause import gc_paused
    from satfuse.engine.session import RuleError
    from satfuse.lowering import GuardError
    from satfuse.lowering.aliasing import of_trace, runs_eagerly, written_positions
    from satfuse.startup import account

    t0 = time.perf_counter()
    # AOTAutograd calls its compilers under its FakeTensorMode: our stages make real (CPU and
    # meta) tensors of their own, e.g. torch's promotion on one-element stand-ins
    with gc_paused(), _disable_current_modes():
        try:
            if mark is None:
                dg = capture_dynamo_graph(gm, example_inputs, "example_value", name=f"{kind}_graph")
            else:
                dg = convert_aot_graph(gm, example_inputs, name=f"{kind}_graph",
                                       outputs_alias=kind != "backward", mark=mark)
        except Exception as e:  # noqa: BLE001 - torch raises many kinds
            if type(e).__module__.startswith("torch._dynamo"):
                raise  # Dynamo's own signals (restart with a float specialized, ...)
            return refused_graph(gm, e, kind)
        if dg is None:  # an output aliasing AOTAutograd rebuilds from symbolic views
            return eager_graph(gm)
        trace = dg.graph.trace
        with dg.shape_env.suppress_guards() if dg.shape_env is not None else contextlib.nullcontext():
            # the fakes share storage as the real inputs do; read on hints (no Dynamo guard: the
            # plan's prologue checks the pattern of every call)
            aliasing = of_trace(trace, dg.fake_args)
        if runs_eagerly(aliasing, written_positions(trace)):
            return eager_graph(gm)  # Dynamo's own graph runs eagerly where no plan may
        try:
            c = engine.compile(trace, options=options, hints=dg.graph.hints, aliasing=aliasing,
                               example_values=dg.fake_args, timings=dg.timings)
        except RuleError:
            raise  # the rules given (a pack's file:line): the user's to fix
        except Exception as e:  # noqa: BLE001 - nothing has run yet: Dynamo's graph can run eagerly
            # a graph the engine could not plan is satfuse's bug, not the program's: it must not
            # fail the call (or a later ``.backward()``, for a backward graph) where eager works
            _LOG.warning("satfuse backend: no plan for the %s graph (planning failed, a satfuse bug: %s: %s); it "
                         "runs eagerly", kind, type(e).__name__, (str(e).strip().splitlines() or [""])[0][:300])
            return eager_graph(gm)
        if c.lowered.unserved_views and kind == "inference":
            # eager returns views (of inputs, or of one tensor) whose geometry is symbolic: a plan
            # could return only copies, so Dynamo's graph (which returns the views) runs eagerly;
            # AOTAutograd's forward and backward graphs' outputs are its own (it rebuilds aliases)
            _LOG.warning("satfuse backend: the %s graph returns views of inputs with symbolic geometry; "
                         "it runs eagerly", kind)
            return eager_graph(gm)
        try:
            added = dg.add_guards(c.engine.trace)
        except Exception as e:  # noqa: BLE001 - a CaptureError naming the guard
            raise BackendError(f"satfuse: {kind} graph: {e}") from e
    account(c.timings, t0)  # with the one-time costs paid since the backend was called (imports)
    engine.record(CompiledGraph(kind, trace, c.lowered, c.engine, c.timings, added, dg.dropped_guards))
    plan, extra, eager = c.lowered, tuple(dg.consts), eager_graph(gm)

    def run(*args: Any) -> Any:
        # Dynamo does not guard how inputs overlap: a call whose aliasing differs from the
        # plan's fails its prologue before anything is written, and runs the graph eagerly
        # (a functional graph from AOTAutograd gives the same values for any aliasing)
        try:
            return tuple(plan(*args, *extra))
        except GuardError:
            return eager(*args)

    run.__doc__ = f"satfuse {kind} plan ({len(c.engine.trace.outputs)} outputs)"
    run.satfuse_plan = plan  # type: ignore[attr-defined]
    return run
