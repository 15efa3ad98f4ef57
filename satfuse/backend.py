"""``torch.compile(fn, backend="satfuse")``.

Dynamo captures the frame and :func:`satfuse_backend` converts the graph it traced: AOTAutograd
traces it once, functionalized over capture's decomposition table, and satfuse compiles the aten
graphs it hands over as they are (``engine/capture/graph.convert_aot_graph``: no second trace;
symbols are Dynamo's): one inference graph, or a forward and a backward graph when gradients are
needed. Only an inference graph that writes tensors (an optimizer step, ``x.add_(y)``, ``out=``)
is traced by capture's own functionalization (``capture_dynamo_graph``), which applies eager's
refusals and write semantics. Then the one pipeline (``Engine.compile``). Guards the optimizer
adds are evaluated on Dynamo's ShapeEnv, which makes them Dynamo guards (a call that violates one
recompiles); where no plan serves a graph, it runs eagerly, transactionally (``satfuse/eager.py``).

Registration: ``import satfuse`` registers the name with Dynamo's registry when that is
cheap (Dynamo already imported, or satfuse not installed with its entry point); otherwise
the ``torch_dynamo_backends`` entry point in ``pyproject.toml`` resolves the name to this
same function on first use. This module imports nothing heavy at import time.

Options: ``torch.compile(fn, backend="satfuse", options={"target": "eager"})`` (a dict of
``satfuse.Options`` fields, or an ``Options``); every ``mode=`` of :data:`MODES` is accepted and
compiles the same plan; ``make_backend(options)`` binds options in a callable backend.
``satfuse.backend.LAST`` records the last compiled graphs (trace, plan, timings) for inspection.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

NAME = "satfuse"
_LOG = logging.getLogger("satfuse.capture")

#: the most recent compiled graphs (newest last, bounded), for inspection
LAST: list["Compiled"] = []
_KEEP = 32


@dataclass
class Compiled:
    """One graph satfuse compiled: its kind, trace, plan and the guards it added to Dynamo."""

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


def compiled_plans() -> list[Compiled]:
    """The graphs ``torch.compile(backend="satfuse")`` compiled in this process, newest last (the
    last 32): ``print(p)`` shows a plan, ``p.explain()`` its segment table and rules."""
    return list(LAST)


class BackendError(RuntimeError):
    """satfuse could not compile a Dynamo graph (names the graph and the failing stage)."""


# ---------------------------------------------------------------------- entry points


#: ``torch.compile`` modes satfuse accepts: satfuse has one way of compiling, so every mode
#: compiles the same plan (as other backends accept modes they do not distinguish)
MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def satfuse_backend(gm: Any, example_inputs: list, mode: str | None = None, options: Any = None) -> Callable:
    """The Dynamo backend: ``torch.compile(fn, backend="satfuse", options={...})`` (see module doc).

    ``options``: a ``satfuse.Options`` or a dict of its fields, exactly as ``optimize`` and ``jit``
    take them. ``mode``: any of :data:`MODES` (all compile the same plan)."""
    if mode not in MODES:
        raise ValueError(f"satfuse backend: unknown mode {mode!r}; accepted: {', '.join(map(str, MODES[1:]))}")
    return _Backend(options)(gm, example_inputs)


def make_backend(options: Any = None, engine: Any = None, **fields: Any) -> Callable:
    """A backend with satfuse options bound, e.g. ``make_backend({"target": "eager"})`` (the same as
    ``torch.compile(..., backend="satfuse", options={"target": "eager"})``); ``fields`` override.
    ``engine``: the ``satfuse.Engine`` to compile on (default: the process's)."""
    import dataclasses

    from satfuse.api import Options

    b = _Backend(dataclasses.replace(Options.of(options), **fields), engine)

    def satfuse_with_options(gm: Any, example_inputs: list) -> Callable:
        return b(gm, example_inputs)

    return satfuse_with_options


def autograd_compiled(fn: Callable, options: Any, dynamic: bool, engine: Any = None) -> Callable:
    """``fn`` under ``torch.compile`` with satfuse as the backend: the path ``optimize`` and ``jit``
    plans take for calls that need gradients (AOTAutograd: a forward and a backward plan)."""
    import torch

    return torch.compile(fn, backend=make_backend(options, engine), dynamic=dynamic)


def register() -> bool:
    """Register ``"satfuse"`` with Dynamo's backend registry if that is cheap and safe.

    True when the name resolves to :func:`satfuse_backend` now; False when registration is
    left to the installed entry point (Dynamo not imported yet, or its registry already
    discovered the entry point: ``lookup_backend`` then registers it itself, and registering
    here too would collide with that while the entry point is being loaded).
    """
    reg = sys.modules.get("torch._dynamo.backends.registry")
    if reg is None:
        if _entry_point_installed():
            return False
        from torch._dynamo.backends import registry as reg  # satfuse is run from a checkout
    if NAME in reg._COMPILER_FNS:
        return reg._COMPILER_FNS[NAME] is satfuse_backend
    if reg._BACKENDS.get(NAME) is not None:
        return False
    reg.register_backend(compiler_fn=satfuse_backend, name=NAME)
    return True


def _entry_point_installed() -> bool:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        eps = distribution("satfuse").entry_points
    except PackageNotFoundError:
        return False
    return any(e.group == "torch_dynamo_backends" and e.name == NAME and e.value == f"{__name__}:satfuse_backend"
               for e in eps)


# ---------------------------------------------------------------------- the compiler


class _Backend:
    def __init__(self, options: Any, engine: Any = None) -> None:
        from satfuse.pipeline import default_engine

        self.engine = engine if engine is not None else default_engine()
        self.options = self.engine.options_for(options)

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        """A graph that writes nothing (or needs gradients) is traced once, by AOTAutograd, over our
        decompositions; satfuse compiles the graphs it hands over (one inference graph, or a forward
        and a backward). An inference graph that writes (in place, ``out=``) is traced by capture's
        own functionalization instead, which applies eager's refusals and write semantics; so is one
        computing a tensor it never reads (AOTAutograd would drop it; eager runs it, and it may raise)."""
        import torch
        from torch._dynamo.backends.common import aot_autograd
        from torch._guards import detect_fake_mode

        from satfuse.engine.capture import decomposition_table
        from satfuse.engine.capture.graph import GuardMark, has_unused_results, writes_tensors

        phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        vals = [n.meta.get("example_value", x) for n, x in zip(phs, example_inputs)]
        needs_grad = torch.is_grad_enabled() and any(isinstance(v, torch.Tensor) and v.requires_grad for v in vals)
        if not needs_grad and (writes_tensors(gm) or has_unused_results(gm)):
            return self.compile_graph(gm, example_inputs, "inference")
        fake_mode = detect_fake_mode(example_inputs)
        mark = GuardMark(fake_mode.shape_env if fake_mode is not None else None)  # before AOTAutograd traces
        return aot_autograd(fw_compiler=self._boxed("forward", mark), bw_compiler=self._boxed("backward", mark),
                            inference_compiler=self._boxed("inference", mark), decompositions=decomposition_table(),
                            keep_inference_input_mutations=True)(gm, example_inputs)

    def _boxed(self, kind: str, mark: Any) -> Callable:
        def compiler(gm: Any, example_inputs: list) -> Callable:
            from functorch.compile import make_boxed_func

            return make_boxed_func(self.compile_graph(gm, example_inputs, kind, mark))

        return compiler

    def compile_graph(self, gm: Any, example_inputs: list, kind: str, mark: Any = None) -> Callable:
        """One graph: AOTAutograd's converted as it is (``convert_aot_graph``; ``mark`` taken before
        AOTAutograd traced), or Dynamo's traced by capture (``capture_dynamo_graph``, no ``mark``);
        then the pipeline (``Engine.compile``)."""
        from torch.utils._python_dispatch import _disable_current_modes

        from satfuse.api import gc_paused
        from satfuse.eager import eager_graph
        from satfuse.engine.capture.graph import capture_dynamo_graph, convert_aot_graph
        from satfuse.lowering import GuardError
        from satfuse.lowering.aliasing import of_trace, runs_eagerly, written_positions

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
                # eager rejects the example (its error is raised on each call, inputs untouched)
                # or satfuse has no plan for the graph: Dynamo's graph runs eagerly
                _LOG.warning("satfuse backend: no plan for the %s graph (%s: %s); it runs eagerly", kind,
                             type(e).__name__, (str(e).strip().splitlines() or [""])[0][:300])
                return eager_graph(gm)
            if dg is None:  # an output aliasing AOTAutograd rebuilds from symbolic views
                return eager_graph(gm)
            trace = dg.graph.trace
            with dg.shape_env.suppress_guards() if dg.shape_env is not None else contextlib.nullcontext():
                # the fakes share storage as the real inputs do; read on hints (no Dynamo guard: the
                # plan's prologue checks the pattern of every call)
                aliasing = of_trace(trace, dg.fake_args)
            if runs_eagerly(aliasing, written_positions(trace)):
                return eager_graph(gm)  # Dynamo's own graph runs eagerly where no plan may
            c = self.engine.compile(trace, options=self.options, hints=dg.graph.hints, aliasing=aliasing,
                                    example_values=dg.fake_args, timings=dg.timings)
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
        c.timings["total"] = time.perf_counter() - t0
        LAST.append(Compiled(kind, trace, c.lowered, c.engine, c.timings, added, dg.dropped_guards))
        del LAST[:-_KEEP]
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
