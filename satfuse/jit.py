"""``satfuse.jit(fn)``: optimize a plain function once per case, guarded.

The first call captures ``fn`` on fake copies of its inputs with int scalars and
the chosen tensor dims symbolic (``engine/capture/graph.capture_symbolic``), then
optimizes and lowers the trace. Every specialization the capture made (a branch
picked by ``flag > 5``, a slice bound, a dim assumed ``>= 2``) is a guard of the
plan; the generated prologue (``lowering/guards.py``) checks them on each call.
A call no cached plan accepts is captured again for its own case (bounded by
``max_plans``, then eagerly with one warning, or ``on_limit="raise"``); if that capture fails
too (torch itself rejects the inputs), the error names the guards that failed and
the op that raised, and no input has been written::

    f = satfuse.jit(fn, dynamic=True)
    f(a, 3, 4); f(a, 2, 5)          # one compile: the second call hits
    f.cache.stats()                 # hits, misses, compiles, guard_us_per_call
    print(f.last_plan)              # guards, segments, write-backs of the last plan run

``fn`` may be an ``nn.Module`` or a function closing over modules: their parameters and
buffers are plan inputs, read again on every call (``engine/capture/closure.py``). Calls that
eager would record autograd for (grad enabled and a tensor or parameter that requires grad)
go through satfuse's ``torch.compile`` backend, whose AOTAutograd path compiles a forward and
a backward plan: outputs require grad and ``.backward()`` gives eager's gradients.
"""

from __future__ import annotations

import functools
import logging
import sys
import time
import types
from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree

from satfuse.eager import check_eagerly
from satfuse.engine.capture.closure import closure_state, flat_args, lift_state, needs_grad
from satfuse.lowering.aliasing import of_trace as aliasing_of
from satfuse.lowering.aliasing import pattern as alias_pattern
from satfuse.lowering.aliasing import runs_eagerly, shares_memory, written_positions
from satfuse.lowering.cache import Entry, PlanCache, RunEagerly, fast_prologue, floats_as_tensors
from satfuse.lowering.guards import GuardError
from satfuse.lowering.plan import LoweringError

_LOG = logging.getLogger("satfuse.capture")
_LEAF_TYPES = (torch.Tensor, int, float, bool)


class Jitted:
    """The callable ``satfuse.jit`` returns. ``cache`` (a PlanCache: ``.stats()``),
    ``last_plan`` (the ``satfuse.Plan`` run by the last call), ``plans`` (all of them)."""

    def __init__(self, fn: Callable, dynamic: bool | Sequence[int | str] = True, max_plans: int = 8,
                 on_limit: str = "eager", options: Any = None, engine: Any = None) -> None:
        from satfuse.startup import timed_import

        self.fn = fn
        self.dynamic = dynamic
        # a satfuse.Engine: pool, catalogues (the pipeline's first import: counted by the first plan)
        self.engine = engine if engine is not None else timed_import("satfuse.pipeline").default_engine()
        self.options = self.engine.options_for(options)
        self.cache = PlanCache(max_plans, on_limit, name=f"satfuse.jit({getattr(fn, '__name__', 'fn')})")
        self.last_plan: Any = None
        self.grad_calls = 0
        self._grad_fn: Any = None
        self.state = closure_state(fn)  # module parameters/buffers fn reaches: trailing plan inputs
        self._eager_keys: set[Any] = set()  # call structures no plan can serve: they run eagerly
        self._logged: set[str] = set()
        functools.update_wrapper(self, fn)

    @property
    def plans(self) -> list[Any]:
        return [e.plan for e in self.cache.entries]

    def stats(self) -> dict[str, Any]:
        s = self.cache.stats()
        s["grad_calls"] = self.grad_calls
        return s

    # ------------------------------------------------------------------ call
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.state:
            live = self.state.live()  # read now: in-place updates and reassignments are seen
            if needs_grad(pytree.tree_leaves((args, kwargs)), live):
                return self._autograd(args, kwargs)
            return self._call((*args, *(t.detach() for t in live)), kwargs, args)
        return self._call(args, kwargs, args)

    def _autograd(self, args: tuple, kwargs: dict) -> Any:
        """Through satfuse's torch.compile backend (AOTAutograd: forward and backward plans)."""
        if self._grad_fn is None:
            from satfuse.backend import autograd_compiled

            self._grad_fn = autograd_compiled(self.fn, self.options, dynamic=self.dynamic is True, engine=self.engine)
        self.grad_calls += 1
        return self._grad_fn(*args, **kwargs)

    def _call(self, args: tuple, kwargs: dict, user_args: tuple) -> Any:
        """One call with ``args`` (the user's, then the lifted state); ``user_args`` for eager runs."""
        leaves, spec = flat_args(args, kwargs)
        inputs: Sequence[Any] = [x for x in leaves if isinstance(x, _LEAF_TYPES)]
        # each constant with its position among the leaves: torch's pytree flattens None to a leaf, so
        # (x, None, t) and (x, t, None) have one spec, and clamp(x, min=t) was served clamp(x, max=t)'s plan
        key: Any = (spec, tuple((i, _const_key(x)) for i, x in enumerate(leaves) if not isinstance(x, _LEAF_TYPES)))
        if torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad for x in inputs):
            return self._autograd(user_args, kwargs)
        if any(isinstance(x, torch.Tensor) and _wrapped(x) for x in inputs):
            # inside torch.vmap (a BatchedTensor has no storage to capture, copy or guard): the
            # function runs as written, batched by functorch
            return self.fn(*user_args, **kwargs)
        entry, env = self.cache.get(inputs, lambda: self._compile(args, kwargs, key, inputs), key)
        if entry is None or entry.plan is None:  # cache full with on_limit="eager", or an aliasing no plan serves
            return self._eagerly(args, kwargs, user_args)
        plan = entry.plan
        self.last_plan = plan
        outs = entry.info["run"](inputs, env)  # guards were checked by the cache: not again
        out_spec = entry.info["out_spec"]
        if out_spec is None:
            return outs
        return pytree.tree_unflatten(list(outs), out_spec)

    # ------------------------------------------------------------------ compile
    def _compile(self, args: tuple, kwargs: dict, key: Any, inputs: Sequence[Any]) -> Entry:
        """:meth:`_plan_for` with the collector paused; the plan's timings count the whole compile
        (a symbolic attempt that failed included) and the one-time costs (``satfuse/startup.py``)."""
        from satfuse.engine.gcpause import gc_paused
        from satfuse.startup import account, timed_import

        t0 = time.perf_counter()
        with gc_paused() as pause:
            timed_import("torch._dynamo")  # capture's tracing imports it on first use: counted as ``import``
            entry = self._plan_for(args, kwargs, key, inputs)
        if entry.plan is not None:
            entry.plan.timings["gc"] = pause.collected  # the cycles the compilation left
            account(entry.plan.timings, t0)
        return entry

    def _plan_for(self, args: tuple, kwargs: dict, key: Any, inputs: Sequence[Any]) -> Entry:
        """A plan for this call: symbolic where it can be; where satfuse has no symbolic form for
        something (a data-dependent or float extent, a step slice of a symbolic dim, ...) this
        call gets a static plan; where no plan can be built at all, the call runs eagerly. Each
        fallback is logged once (``satfuse.capture``). An error torch raises while tracing the
        static call is eager's own rejection of the inputs: eager's error is raised, nothing written."""
        from satfuse.engine.capture.eager_checks import EagerRefusal
        from satfuse.engine.capture.functional import EagerError
        from satfuse.engine.capture.trace import TracingError

        if key in self._eager_keys:
            raise RunEagerly("no plan can be built for this program")
        if self.dynamic is not False and self.dynamic != ():
            try:
                entry = self._build(args, kwargs, key, inputs, self.dynamic)
                entry.check(inputs)  # the plan built for this call must accept it
                return entry
            except RunEagerly:
                raise
            except Exception as err:  # noqa: BLE001 - any symbolic limit: specialise this call
                self._log_once("static", f"no symbolic plan for this call ({type(err).__name__}: {_first_line(err)}); "
                                         "such calls get static plans")
        try:
            entry = self._build(args, kwargs, key, inputs, False)
            entry.check(inputs)  # a plan that rejects the very call it was built for cannot serve it
            return entry
        except (RunEagerly, TracingError, EagerError, EagerRefusal) as err:
            # torch or eager's own checks reject these inputs: this call runs eagerly, on copies
            # first (``_eagerly``), so eager's error is raised with every input untouched
            raise RunEagerly(str(err)) from err
        except Exception as err:  # noqa: BLE001 - satfuse cannot plan this program: eager is correct
            from satfuse.engine.unsupported import refused_as_listed

            self._eager_keys.add(key)
            # a form ``engine/unsupported.py`` lists is refused on purpose; any other failure is
            # satfuse's bug (worded as the backend words it, so harnesses count it)
            why = "" if refused_as_listed(err) is not None else "planning failed, a satfuse bug: "
            self._log_once("eager", f"no plan for this program ({why}{type(err).__name__}: {_first_line(err)}); "
                                    "calls with this structure run eagerly")
            raise RunEagerly(str(err)) from err

    def _eagerly(self, args: tuple, kwargs: dict, user_args: tuple) -> Any:
        """A call no plan serves runs eagerly, transactionally (``satfuse/eager.py``): eager's error
        is raised with every input, and the lifted module state, untouched."""
        fn = self.fn
        if self.state:
            fn, _ = lift_state(self.fn, len(args) - len(self.state.names), self.state, False)
        check_eagerly(fn, args, kwargs)
        return self.fn(*user_args, **kwargs)

    def _log_once(self, kind: str, msg: str) -> None:
        if kind not in self._logged:
            self._logged.add(kind)
            _LOG.warning("satfuse.jit(%s): %s", getattr(self.fn, "__name__", "fn"), msg)

    def _build(self, args: tuple, kwargs: dict, key: Any, inputs: Sequence[Any], dynamic: Any) -> Entry:
        from satfuse.api import Plan
        from satfuse.engine.capture.closure import hidden_state
        from satfuse.engine.capture.graph import capture_symbolic

        hidden = hidden_state(self.fn)  # before tracing: the values the trace bakes in
        fn = self.fn
        if self.state:
            fn, dynamic = lift_state(self.fn, len(args) - len(self.state.names), self.state, dynamic)
        try:
            cap = capture_symbolic(fn, *args, dynamic=dynamic, **kwargs)
        except Exception:
            if not shares_memory(inputs):
                raise
            # inputs that share memory may be what capture refused (a write through one seen
            # through another): such calls run eagerly
            every = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
            return Entry(check=_pattern_check(alias_pattern(inputs, every), every), plan=None, key=key)
        floats = cap.float_inputs
        names = [v.name for v in cap.trace.inputs]
        if floats:
            inputs = floats_as_tensors(inputs, floats, names)
        aliasing = aliasing_of(cap.trace, inputs)
        if runs_eagerly(aliasing, written_positions(cap.trace)):
            return Entry(check=_pattern_check(aliasing, written_positions(cap.trace)), plan=None, key=key)
        c = self.engine.compile(cap.trace, options=self.options, hints=cap.symbol_hints, aliasing=aliasing,
                                example_values=inputs, timings={"capture": cap.seconds})
        lowered = c.lowered
        if dynamic is not False and lowered.unserved_views:
            raise LoweringError(f"outputs {lowered.unserved_views} are views of inputs with symbolic geometry "
                                "(a plan could only return copies)")
        cap.drop_examples()
        plan = Plan(lowered, cap, c.engine, c.timings, catalogue=c.catalogue, options=self.options, owner=self.engine)
        check = fast_prologue(lowered.prologue)  # guards the aliasing pattern too: another one recompiles
        if hidden:
            check = _hidden_checked(check, hidden)
        run = lowered.run_unchecked
        if floats:
            check, run = _with_float_inputs(check, run, floats, names)
        return Entry(check=check, plan=plan, key=key, info={"out_spec": cap.out_spec, "run": run})

    def __repr__(self) -> str:
        return f"<satfuse.jit {getattr(self.fn, '__qualname__', self.fn)} {self.cache!r}>"


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else ""


def _const_key(x: Any) -> Any:
    try:
        hash(x)
        return x
    except TypeError:
        return ("id", id(x))


def _hidden_checked(prologue: Callable, hidden: Any) -> Callable:
    """The prologue, after: every Python scalar the trace specialized on (module attributes such as
    ``training``, closure cells, globals) still has its type and value; a change recompiles."""

    def check(inputs: Sequence[Any]) -> Any:
        changed = hidden.changed()
        if changed is not None:
            raise GuardError(f"guard failed: hidden state changed: {changed}")
        return prologue(inputs)

    return check


def _with_float_inputs(check: Callable, run: Callable, floats: Sequence[int],
                       names: Sequence[str]) -> tuple[Callable, Callable]:
    """The guard and the run of a plan whose float arguments are 0-d tensor inputs: the guard
    converts the call's floats (and fails for anything else there), the run takes its result."""

    def checked(inputs: Sequence[Any]) -> Any:
        plan_inputs = floats_as_tensors(inputs, floats, names)
        return check(plan_inputs), plan_inputs

    def ran(inputs: Sequence[Any], env: Any) -> Any:
        env, plan_inputs = env
        return run(plan_inputs, env)

    return checked, ran


def _pattern_check(expected: tuple, written: list[int]) -> Callable[[Sequence[Any]], Any]:
    """The guard of an entry that runs eagerly: the call has the aliasing pattern no plan serves."""

    def check(inputs: Sequence[Any]) -> dict:
        if alias_pattern(inputs, written) != expected:
            raise GuardError("aliasing pattern differs")
        return {}

    return check


def jit(fn: Callable | None = None, *, dynamic: bool | Sequence[int | str] = True, max_plans: int = 8,
        on_limit: str = "eager", options: Any = None, engine: Any = None) -> Any:
    """Wrap ``fn`` so each call runs a cached, guarded satfuse plan (see module doc).

    ``dynamic``: True (every int scalar and tensor dim symbolic), False (all baked in,
    each distinct value is its own plan), or a list of argument positions / keyword
    names to make dynamic. ``max_plans``/``on_limit`` bound the cache, like Dynamo's
    recompile limit: by default a call no plan accepts once ``max_plans`` are cached runs
    eagerly (one ``RecompileLimitWarning`` names the guard that kept failing);
    ``on_limit="raise"`` raises ``CacheLimitError`` instead. ``options``: a ``satfuse.Options``
    or a dict of its fields (target, rules, executor, budget, ...). ``engine``: the ``satfuse.Engine``
    to compile on (default: the process's). Usable as a decorator with or without arguments.
    """
    kw = dict(dynamic=dynamic, max_plans=max_plans, on_limit=on_limit, options=options, engine=engine)
    if fn is None:
        return lambda f: Jitted(f, **kw)
    return Jitted(fn, **kw)


class _CallableModule(types.ModuleType):
    """``satfuse.jit`` is both this module and the function: once the submodule is imported,
    Python binds the package attribute ``satfuse.jit`` to the module, which must stay callable."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return jit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule


def _wrapped(t: torch.Tensor) -> bool:
    """A functorch transform's tensor (``torch.vmap``'s BatchedTensor, ``torch.func``'s wrappers)."""
    return torch._C._functorch.is_functorch_wrapped_tensor(t)
