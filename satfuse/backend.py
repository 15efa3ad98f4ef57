"""``torch.compile(fn, backend="satfuse")``.

Dynamo captures the frame; :func:`satfuse_backend` re-traces Dynamo's graph with
``make_fx`` under the placeholders' own FakeTensorMode (their ``meta['example_value']``,
never the real tensors), so in-place aten ops are kept and the symbols are Dynamo's;
the aten graph becomes a Trace (``engine/capture/graph.trace_from_graph``), is optimized
with the builtin rule catalogue and lowered. Guards the optimizer adds are evaluated on
Dynamo's ShapeEnv, which makes them Dynamo guards (a call that violates one recompiles).

Graphs that need gradients (grad enabled and an input that requires grad) go through
AOTAutograd with satfuse as forward and backward compiler: each of the two graphs comes
as its own trace. Graphs without grad keep their in-place updates (an optimizer step,
``x.add_(y)``) for satfuse's write-back machinery.

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
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

NAME = "satfuse"

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


def make_backend(options: Any = None, **fields: Any) -> Callable:
    """A backend with satfuse options bound, e.g. ``make_backend({"target": "eager"})`` (the same as
    ``torch.compile(..., backend="satfuse", options={"target": "eager"})``)."""
    b = _Backend({**(options or {}), **fields} if not hasattr(options, "catalogue") else options)

    def satfuse_with_options(gm: Any, example_inputs: list) -> Callable:
        return b(gm, example_inputs)

    return satfuse_with_options


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
    def __init__(self, options: Any) -> None:
        from satfuse.api import Options

        self.options = Options.of(options)

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        import torch

        phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        vals = [n.meta.get("example_value", x) for n, x in zip(phs, example_inputs)]
        needs_grad = torch.is_grad_enabled() and any(isinstance(v, torch.Tensor) and v.requires_grad for v in vals)
        if needs_grad:
            from torch._dynamo.backends.common import aot_autograd

            from satfuse.engine.capture.trace import decomposition_table

            fw = self._boxed("forward")
            bw = self._boxed("backward")
            return aot_autograd(fw_compiler=fw, bw_compiler=bw, decompositions=decomposition_table())(gm, example_inputs)
        return self.compile_graph(gm, example_inputs, "inference", meta_key="example_value")

    def _boxed(self, kind: str) -> Callable:
        def compiler(gm: Any, example_inputs: list) -> Callable:
            from functorch.compile import make_boxed_func

            return make_boxed_func(self.compile_graph(gm, example_inputs, kind, meta_key="val"))

        return compiler

    # ------------------------------------------------------------------ one graph
    def compile_graph(self, gm: Any, example_inputs: list, kind: str, meta_key: str) -> Callable:
        """One graph, with Python's cyclic GC paused as on every satfuse path (``api.gc_paused``)."""
        from satfuse.api import gc_paused

        with gc_paused():
            return self._compile_graph(gm, example_inputs, kind, meta_key)

    def _compile_graph(self, gm: Any, example_inputs: list, kind: str, meta_key: str) -> Callable:
        import torch
        from torch._guards import detect_fake_mode
        from torch.fx.experimental.proxy_tensor import make_fx

        from satfuse.engine.capture.graph import trace_from_graph
        from satfuse.engine.capture.trace import decomposition_table
        from satfuse.engine.optimize import optimize_trace
        from satfuse.lowering import GuardError, lower
        from satfuse.lowering.aliasing import of_trace, runs_eagerly, written_positions

        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        opts = self.options
        graph = gm  # Dynamo's own graph: runs eagerly where no plan may
        gm, consts = _lift_get_attrs(gm)
        phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        n_graph = len(phs) - len(consts)
        metas = []
        for i, n in enumerate(phs[:n_graph]):
            v = n.meta.get(meta_key, n.meta.get("val", n.meta.get("example_value")))
            metas.append(example_inputs[i] if v is None else v)
        fake_mode = detect_fake_mode(example_inputs) or detect_fake_mode(
            [v for v in metas if isinstance(v, torch._subclasses.FakeTensor)])
        if fake_mode is None:
            from torch._subclasses.fake_tensor import FakeTensorMode
            from torch.fx.experimental.symbolic_shapes import ShapeEnv

            fake_mode = FakeTensorMode(shape_env=ShapeEnv())
        fake_args: list[Any] = []
        for v in [*metas, *consts]:
            if isinstance(v, torch.Tensor) and not isinstance(v, torch._subclasses.FakeTensor):
                v = fake_mode.from_tensor(v, static_shapes=True)  # never trace with real tensors
            elif isinstance(v, torch._subclasses.FakeTensor):
                # re-fakeify in the tracing mode ourselves (as make_fx's "fake" mode would) but keep
                # ``item_memo``: a float Dynamo left unspecialized (dynamic=True: a module's ``eps``,
                # ``p``, ``scaling``) is a 0-d tensor input whose ``.item()`` must be Dynamo's SymFloat
                memo = v.item_memo
                v = fake_mode.from_tensor(v)
                if memo is not None:
                    v.item_memo = memo
            fake_args.append(v)
        shape_env = fake_mode.shape_env
        mark = _GuardMark(shape_env)
        try:
            with fake_mode, torch.no_grad():
                agm = make_fx(gm, tracing_mode="real", decomposition_table=decomposition_table())(*fake_args)
        except Exception as e:  # noqa: BLE001 - torch raises many kinds
            raise BackendError(f"satfuse: re-tracing the {kind} graph with make_fx failed: {type(e).__name__}: {e}") from e
        if shape_env is not None and any(n.target is torch.ops.aten._local_scalar_dense.default
                                         for n in agm.graph.nodes):
            # SymFloat math becomes tensor math on the 0-d input, as AOTAutograd does for its graphs
            # (what cannot be tensorified makes Dynamo restart with that float specialized)
            from torch.fx.passes._tensorify_python_scalars import tensorify_python_scalars

            tensorify_python_scalars(agm, shape_env, fake_mode)
        # tensors the program creates from literals (``torch.tensor([])`` in HF's KV cache) are
        # ``get_attr`` constants of the re-trace: they become inputs too, passed like the lifted attrs
        names = [_name(n) for n in phs]
        agm, literals = _lift_get_attrs(agm)
        for k, c in enumerate(literals):
            fake_args.append(fake_mode.from_tensor(c, static_shapes=True))
            names.append(f"literal{k}")
        consts = [*consts, *literals]
        dropped = mark.drop_stride_only()
        timings["retrace"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        gt = trace_from_graph(agm, fake_args, shape_env, names=names, name=f"{kind}_graph")
        timings["convert"] = time.perf_counter() - t1
        with shape_env.suppress_guards() if shape_env is not None else contextlib.nullcontext():
            # Dynamo's fakes share storage as the real inputs do; read on hints, as AOTAutograd
            # does (no Dynamo guard: the plan's prologue checks the pattern of every call)
            aliasing = of_trace(gt.trace, fake_args)
        if runs_eagerly(aliasing, written_positions(gt.trace)):
            return graph
        cat = _catalogue(opts)
        phases = list(opts.phases) if opts.phases is not None else cat.phases
        engine = optimize_trace(gt.trace, cat.sources, phases, target=opts.target, hints=gt.hints,
                                budget=opts.budget, extractor=opts.extractor)
        timings.update(engine.timings)
        added = _install_guards(gt, engine.trace, shape_env)
        t2 = time.perf_counter()
        plan = lower(engine.trace, hints=gt.hints, executor=opts.executor, aliasing=aliasing)
        timings["lower"] = time.perf_counter() - t2
        timings["total"] = time.perf_counter() - t0
        LAST.append(Compiled(kind, gt.trace, plan, engine, timings, added, dropped))
        del LAST[:-_KEEP]
        n_out = len(engine.trace.outputs)
        extra = tuple(consts)

        def run(*args: Any) -> Any:
            # Dynamo does not guard how inputs overlap (only that distinct inputs are distinct
            # objects): a call whose aliasing differs from the plan's fails its prologue before
            # anything is written, and runs Dynamo's graph eagerly instead
            try:
                return tuple(plan(*args, *extra))
            except GuardError:
                return graph(*args)

        run.__doc__ = f"satfuse {kind} plan ({n_out} outputs)"
        run.satfuse_plan = plan  # type: ignore[attr-defined]
        return run


_CATALOGUES: dict[tuple, Any] = {}


def _catalogue(opts: Any) -> Any:
    key = (tuple(str(r) for r in opts.rules), opts.builtin_rules)
    cat = _CATALOGUES.get(key)
    if cat is None:
        cat = _CATALOGUES[key] = opts.catalogue()
    return cat


def _name(n: Any) -> str:
    from satfuse.engine.capture.graph import _clean

    return _clean(n.name)


def _lift_get_attrs(gm: Any) -> tuple[Any, list[Any]]:
    """Turn every ``get_attr`` tensor (parameter, buffer, constant) into a trailing
    placeholder; returns the rewritten module (a copy: Dynamo goes on reading its own graph,
    whose placeholders must all carry a ``grapharg``) and the real tensors to pass for them."""
    import copy

    import torch

    if not any(n.op == "get_attr" for n in gm.graph.nodes):
        return gm, []
    gm = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    attrs = [n for n in gm.graph.nodes if n.op == "get_attr"]
    g = gm.graph
    last_ph = None
    for n in g.nodes:
        if n.op == "placeholder":
            last_ph = n
    consts: list[Any] = []
    for n in attrs:
        obj = gm
        for part in n.target.split("."):
            obj = getattr(obj, part)
        if not isinstance(obj, torch.Tensor):
            continue
        if last_ph is None:
            with g.inserting_before(next(iter(g.nodes))):
                ph = g.placeholder(f"attr_{n.target.replace('.', '_')}")
        else:
            with g.inserting_after(last_ph):
                ph = g.placeholder(f"attr_{n.target.replace('.', '_')}")
        last_ph = ph
        ph.meta.update(n.meta)
        n.replace_all_uses_with(ph)
        g.erase_node(n)
        consts.append(obj)
    gm.recompile()
    return gm, consts


class _GuardMark:
    """Guards our re-trace adds to Dynamo's ShapeEnv become Dynamo guards. Those that only
    decide fake-tensor strides (``is_contiguous`` of a slice: ``dim0 != 1``) would make
    Dynamo recompile for no reason (our plans do not depend on strides, as in ``capture``):
    they are taken back, unless they are equalities (which may have specialized a symbol)
    or narrowed a symbol's value range (which later decisions may have relied on)."""

    def __init__(self, shape_env: Any) -> None:
        self.env = shape_env
        self.n = len(shape_env.guards) if shape_env is not None else 0
        self.ranges = dict(shape_env.var_to_range) if shape_env is not None else {}

    def drop_stride_only(self) -> list[Any]:
        import sympy

        from satfuse.engine.capture.symbols import layout_only

        if self.env is None:
            return []
        new = self.env.guards[self.n:]
        keep, dropped = [], []
        for g in new:
            stride_only = getattr(g, "sloc", None) is not None and layout_only(g)
            narrowed = any(self.env.var_to_range.get(s) != self.ranges.get(s) for s in g.expr.free_symbols)
            if stride_only and not isinstance(g.expr, sympy.Eq) and not narrowed:
                dropped.append(g.expr)
            else:
                keep.append(g)
        if dropped:
            self.env.guards[self.n:] = keep
        return dropped


def _install_guards(gt: Any, optimized: Any, shape_env: Any) -> list[Any]:
    """Guards the optimizer added (rule obligations) become Dynamo guards: evaluating them on
    Dynamo's ShapeEnv records them. A guard false at the example is a rule bug: refuse."""
    import sympy

    have = set(gt.trace.guards)
    added = []
    for g in optimized.guards:
        if g in have or g is sympy.true:
            continue
        theirs = gt.theirs(g)
        if shape_env is None:
            raise BackendError(f"satfuse: guard {g} needs a ShapeEnv and the graph has none")
        ok = shape_env.evaluate_expr(theirs)
        if not bool(ok):
            raise BackendError(f"satfuse: the optimized plan's guard {g} is false for the example inputs")
        added.append(theirs)
    return added
