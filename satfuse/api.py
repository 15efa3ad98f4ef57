"""``satfuse.optimize``: capture -> saturate -> extract -> lower, as one call."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree

from satfuse.engine import Captured, CaptureError, Trace, capture
from satfuse.engine.capture.closure import (
    ClosureState,
    HiddenState,
    closure_state,
    flat_args,
    hidden_state,
    lift_state,
    needs_grad,
    same_scalar,
)
from satfuse.engine.gcpause import gc_paused
from satfuse.engine.optimize import EngineResult
from satfuse.engine.session import Budget
from satfuse.lowering import GuardError
from satfuse.lowering.aliasing import describe, runs_eagerly, written_positions
from satfuse.lowering.aliasing import of_trace as aliasing_of
from satfuse.lowering.cache import floats_as_tensors
from satfuse.rewrites.packs import Catalogue
from satfuse.startup import account, timed_import


@dataclass
class Options:
    """Knobs of one optimization, passed as ``options=`` to ``optimize``, ``jit`` and
    ``torch.compile(backend="satfuse", options=...)`` (an ``Options`` or a dict of its fields).

    ``target``: cost model ('nvfuser' or 'eager'); ``rules``: extra rule files/folders;
    ``builtin_rules``: include the shipped packs; ``phases``: rulesets to run (default: all);
    ``budget``: saturation limits (a ``Budget`` or a dict of its fields); ``extractor``:
    'greedy-dag' or 'ilp'; ``executor``: 'auto', 'reference' or 'nvfuser'; ``dynamic``:
    symbolic extents (``optimize`` only: True, False or argument positions)."""

    target: str = "nvfuser"
    rules: Sequence[str | Path] = ()
    builtin_rules: bool = True
    phases: Sequence[str] | None = None
    budget: Budget = field(default_factory=Budget)
    extractor: str = "hybrid"
    executor: str = "auto"
    dynamic: bool | Sequence[int] = False

    @classmethod
    def of(cls, options: "Options | dict[str, Any] | None") -> "Options":
        """``options=`` as a user gives it: an ``Options``, a dict of its fields, or None."""
        if options is None:
            return cls()
        if isinstance(options, cls):
            return options
        if not isinstance(options, dict):
            raise TypeError(f"options must be a satfuse.Options or a dict of its fields, got {type(options).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise TypeError(f"unknown satfuse option(s) {', '.join(map(repr, unknown))}; the options are "
                            f"{', '.join(known)}")
        kw = dict(options)
        if isinstance(kw.get("budget"), dict):
            kw["budget"] = Budget(**kw["budget"])
        return cls(**kw)


class Plan:
    """An optimized program: call it like the original function.

    ``print(plan)`` shows the guard prologue, the fusion segments and the write-backs;
    ``plan.explain()`` the segment table; ``plan.timings`` where the time went.
    """

    def __init__(self, lowered: Any, captured: Captured | None, engine: EngineResult | None,
                 timings: dict[str, float], state: ClosureState | None = None,
                 catalogue: Catalogue | None = None, fn: Callable | None = None,
                 options: Options | None = None, hidden: HiddenState | None = None, owner: Any = None) -> None:
        self.catalogue = catalogue  # the rule packs it was optimized with (explain names their rules)
        self.fn = fn  # the original program: calls that need autograd run it through the backend
        self.options = options
        self.engine_owner = owner  # the satfuse.Engine that built it (its autograd calls compile there too)
        self._grad_fn: Callable | None = None
        self.grad_calls = 0
        self.lowered = lowered
        self.captured = captured
        self.engine = engine
        self.timings = timings
        self.state = state  # module parameters/buffers the function closes over: trailing inputs
        self.hidden = hidden if hidden else None  # Python scalars the trace specialized on (guarded)

    @property
    def trace(self) -> Trace:
        return self.lowered.trace

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.captured is None:
            return self.lowered(*args)
        live = self.state.live() if self.state else []  # read now: in-place updates and reassignments are seen
        leaves, spec = flat_args(args, kwargs)
        if self.fn is not None and needs_grad(leaves, live):
            return self._autograd(*args, **kwargs)
        cap = self.captured
        if self.hidden is not None:
            changed = self.hidden.changed()
            if changed is not None:
                raise GuardError(f"guard failed: hidden state changed: {changed} (optimize again for the new state, "
                                 "or use satfuse.jit, which recompiles)")
        if live:
            leaves, spec = flat_args((*args, *(t.detach() for t in live)), kwargs)
        if spec != cap.in_spec:
            raise TypeError(f"plan was built for inputs structured as {cap.in_spec}, got {spec}")
        for i, (got, want) in enumerate(zip(leaves, cap.leaves)):
            if i not in cap.input_leaf_positions and not _same_constant(got, want):
                raise ValueError(f"argument leaf {i} was the constant {want!r} at capture, got {got!r}")
        flat = [leaves[i] for i in cap.input_leaf_positions]
        if cap.float_inputs:
            flat = floats_as_tensors(flat, cap.float_inputs, [v.name for v in cap.trace.inputs])
        outs = self.lowered(*flat)
        if cap.out_spec is None:
            return outs
        return pytree.tree_unflatten(list(outs), cap.out_spec)

    def _autograd(self, *args: Any, **kwargs: Any) -> Any:
        """A call eager would record autograd for: the plan has no backward, so the call goes through
        satfuse's ``torch.compile`` backend, whose AOTAutograd path compiles a forward and a backward
        plan (built once, on the first such call; ``grad_calls`` counts them)."""
        if self._grad_fn is None:
            from satfuse.backend import autograd_compiled

            self._grad_fn = autograd_compiled(self.fn, self.options, dynamic=False, engine=self.engine_owner)
        self.grad_calls += 1
        return self._grad_fn(*args, **kwargs)

    def __str__(self) -> str:
        return str(self.lowered)

    __repr__ = __str__

    def segment_table(self) -> str:
        """Per step of the lowered plan: bytes read and written across its boundary and the kernels
        it launches (for a segment, those nvFuser's own segmenter is predicted to make of it:
        ``lowering/kernels.py``, whose split values and re-reads are in the bytes), the predicted
        host time of the execute calls, and why each split happens."""
        from satfuse.engine.costs import EAGER_VIEWS, minimum_traffic, plan_traffic

        hints = self.captured.symbol_hints if self.captured is not None else {}
        traffic = plan_traffic(self.lowered.steps, self.lowered.trace, hints)
        order: list[str] = []
        rows: dict[str, list[int]] = {}
        for m in traffic.moves:
            if m.step not in rows:
                order.append(m.step)
                rows[m.step] = [0, 0]
            rows[m.step][0 if m.kind == "read" else 1] += m.bytes
        kernels: dict[str, int] = {}  # predicted kernels per step (lowering/kernels.py for segments)
        splits: list[str] = []
        host = 0.0
        for step in self.lowered.steps:
            name = getattr(step, "name", step.kind)
            pred = getattr(step, "predicted", None)
            if pred is not None:
                host += pred.host_us
                splits += [f"  {name}: {r}" for r in pred.reasons]
            kernels[name] = kernels.get(name, 0) + (pred.count if pred is not None else 0 if step.kind == "check"
                                                    or getattr(step, "node", None) is not None
                                                    and step.node.op in EAGER_VIEWS else 1)
        lines = [f"{'step':<40} {'bytes in':>14} {'bytes out':>14} {'kernels':>8}"]
        for st in order:
            lines.append(f"{st[:40]:<40} {rows[st][0]:>14,} {rows[st][1]:>14,} {kernels.get(st, 1):>8}")
        least = minimum_traffic(self.lowered.trace, hints).total
        ratio = f"{traffic.total / least:.3f}" if least else "-"
        lines.append(f"total {traffic.total:,} bytes in {traffic.kernels} kernel launch(es); "
                     f"minimum {least:,} (every input read once, every output written once); ratio {ratio}")
        lines.append(f"predicted host time of the segments' execute calls: {host:.0f} us per call (estimates: "
                     f"lowering/support.py HOST_US)")
        if splits:
            lines.append("segments nvFuser is predicted to split into several kernels:")
            lines += splits
        return "\n".join(lines)

    def to_dot(self, title: str = "") -> str:
        """The lowered plan as a Graphviz graph: segments as clusters, fallbacks, write-backs,
        bytes on the edges that cross a step (render with ``satfuse.lowering.dot.render``)."""
        hints = self.captured.symbol_hints if self.captured is not None else {}
        return self.lowered.to_dot(hints, title)

    def explain(self) -> str:
        parts = [self.segment_table()]
        if self.engine is not None and self.captured is not None:
            before = {n.op for n in self.captured.trace.nodes}
            new = sorted({n.op for n in self.trace.nodes} - before)
            gone = sorted(before - {n.op for n in self.trace.nodes})
            if new or gone:
                parts.append(f"ops the rewrites brought in: {', '.join(new) or '-'}; ops they removed: {', '.join(gone) or '-'}")
        if self.engine is not None:
            parts.append(self.engine.saturation.table())
            cat = self.catalogue
            fired, facts = {}, 0
            for k, v in sorted(self.engine.saturation.matches.items()):
                info = cat.rule(k) if cat is not None else None
                if not v or k.startswith("lang/"):
                    continue
                if info is not None and info.ruleset == "analysis":
                    facts += v  # helper rules that only derive shape facts
                    continue
                fired[k] = v
            if fired:
                parts.append("rewrites that matched: " + ", ".join(f"{k} x{v}" for k, v in fired.items())
                             + (f" (+{facts} analysis-fact matches)" if facts else ""))
            if self.engine.saturation.hit_limit:
                parts.append("budget reached: " + "; ".join(self.engine.saturation.hit_limit))
        parts.append("timings (ms): " + ", ".join(f"{k}={v * 1e3:.1f}" for k, v in self.timings.items()))
        return "\n\n".join(parts)


def _same_constant(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return a is b
    try:
        return same_scalar(a, b)  # type, value and sign (-0.0 is not 0.0)
    except Exception:  # noqa: BLE001 - unusual leaves compare by identity
        return a is b


def optimize(fn_or_trace: Callable | Trace, *example_args: Any, options: Options | dict[str, Any] | None = None,
             **example_kwargs: Any) -> Plan:
    """Optimize ``fn`` (captured on ``fn(*example_args, **example_kwargs)``) or a Trace into a Plan.

    Keyword arguments go to ``fn``, as in a call of ``fn``; satfuse's own knobs go in ``options``
    (a :class:`Options` or a dict of its fields: ``options={"target": "eager"}``). Runs on the
    default ``satfuse.Engine`` (``satfuse.Engine(options).optimize`` for one of your own).
    """
    engine = timed_import("satfuse.pipeline").default_engine()
    return engine.optimize(fn_or_trace, *example_args, options=options, **example_kwargs)


def optimize_with(engine: Any, fn_or_trace: Callable | Trace, example_args: tuple, example_kwargs: dict[str, Any],
                  opts: Options) -> Plan:
    """``optimize`` on ``engine`` (a ``satfuse.Engine``): capture, then ``engine.compile``."""
    if isinstance(fn_or_trace, Trace) and example_kwargs:
        raise TypeError(f"optimize(trace) takes no keyword arguments (got {', '.join(example_kwargs)}); "
                        "satfuse's options go in options=")
    t0 = time.perf_counter()
    with gc_paused() as pause:
        if not isinstance(fn_or_trace, Trace):
            timed_import("torch._dynamo")  # capture's tracing imports it on first use: counted as ``import``
        try:
            plan = _optimize(engine, fn_or_trace, example_args, example_kwargs, opts)
        except CaptureError as e:
            hint = _option_hint(e, example_kwargs)
            if hint:
                raise CaptureError(f"{e}\n{hint}") from e
            raise
    plan.timings["gc"] = pause.collected  # the cycles the compilation left, collected as the pause ended
    account(plan.timings, t0)  # with the one-time costs paid on the way here (importing satfuse.api)
    return plan


def _option_hint(e: Exception, kwargs: dict[str, Any]) -> str:
    """The 0.1 API took options as keywords; a program that rejects a keyword named like an option
    gets a hint (the keyword was passed to the program, as a call would)."""
    names = [k for k in kwargs if k in {f.name for f in fields(Options)} and repr(k) in str(e)]
    if not names:
        return ""
    return (f"(satfuse passes keyword arguments to the program; if {', '.join(names)} meant satfuse's option, "
            f"pass options={{{', '.join(f'{k!r}: ...' for k in names)}}})")


def _optimize(engine: Any, fn_or_trace: Callable | Trace, example_inputs: tuple, example_kwargs: dict[str, Any],
              opts: Options) -> Plan:
    if isinstance(fn_or_trace, Trace):
        c = engine.compile(fn_or_trace, options=opts)
        return Plan(c.lowered, None, c.engine, c.timings, catalogue=c.catalogue, options=opts, owner=engine)
    hidden = hidden_state(fn_or_trace)  # before tracing: the values the trace will bake in
    state = closure_state(fn_or_trace)
    if state:
        fn, dynamic = lift_state(fn_or_trace, len(example_inputs), state, opts.dynamic)
        captured = capture(fn, *example_inputs, *state.tensors(), dynamic=dynamic, call_kwargs=example_kwargs)
    else:
        captured = capture(fn_or_trace, *example_inputs, dynamic=opts.dynamic, call_kwargs=example_kwargs)
    c = engine.compile(captured.trace, options=opts, hints=captured.symbol_hints, aliasing=_example_aliasing(captured),
                       example_values=_example_values(captured), timings={"capture": captured.seconds})
    captured.drop_examples()
    return Plan(c.lowered, captured, c.engine, c.timings, state, catalogue=c.catalogue, fn=fn_or_trace, options=opts,
                hidden=hidden, owner=engine)


def _example_values(captured: Captured) -> list[Any]:
    return [captured.leaves[i] for i in captured.input_leaf_positions]


def _example_aliasing(captured: Captured) -> tuple:
    """The memory-sharing pattern of the example inputs: every call must have the same one
    (``lowering/aliasing.py``). A written input that overlaps itself or another input has no
    plan: eager writes memory element by element, a plan computes values."""
    values = _example_values(captured)
    pat = aliasing_of(captured.trace, values)
    why = runs_eagerly(pat, written_positions(captured.trace))
    if why is not None:
        names = [v.name for v in captured.trace.inputs]
        raise GuardError(f"satfuse.optimize: the example inputs cannot have a plan: {describe(pat, names)}, and an "
                         f"input is written in place ({why}); pass inputs that do not share memory "
                         "(satfuse.jit runs such calls eagerly)")
    return pat

