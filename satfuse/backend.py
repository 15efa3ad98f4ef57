"""``torch.compile(fn, backend="satfuse")``: Dynamo glue only.

A graph that needs gradients, or writes nothing, is traced once by AOTAutograd over capture's
decomposition table; satfuse compiles the graphs it hands over as they are. A graph that writes
tensors (an optimizer step, ``out=``) or computes one it never reads is compiled from Dynamo's
graph by capture's own functionalization. Either way ``satfuse/graph_plans.py`` makes the
callable on an :class:`~satfuse.pipeline.Engine`. Guards the optimizer adds become Dynamo guards.

Registration: ``import satfuse`` registers the name when that is cheap (Dynamo already imported,
or no entry point installed); otherwise the ``torch_dynamo_backends`` entry point in
``pyproject.toml`` resolves it to :func:`satfuse_backend` on first use. Nothing heavy is imported
at import time. Options: ``options={"target": "eager"}`` (``satfuse.Options`` fields); every
``mode=`` of :data:`MODES` compiles the same plan.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from satfuse.graph_plans import BackendError, CompiledGraph

NAME = "satfuse"
__all__ = ["BackendError", "CompiledGraph", "MODES", "make_backend", "register", "satfuse_backend"]

#: satfuse has one way of compiling: every ``torch.compile`` mode compiles the same plan
MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def satfuse_backend(gm: Any, example_inputs: list, mode: str | None = None, options: Any = None) -> Callable:
    """The Dynamo backend. ``options``: ``satfuse.Options`` or a dict of its fields; ``mode``: :data:`MODES`."""
    if mode not in MODES:
        raise ValueError(f"satfuse backend: unknown mode {mode!r}; accepted: {', '.join(map(str, MODES[1:]))}")
    return _Backend(options)(gm, example_inputs)


def make_backend(options: Any = None, engine: Any = None, **fields: Any) -> Callable:
    """A backend with options bound (``fields`` override them), compiling on ``engine`` (default: the process's)."""
    import dataclasses

    from satfuse.api import Options

    b = _Backend(dataclasses.replace(Options.of(options), **fields), engine)

    def satfuse_with_options(gm: Any, example_inputs: list) -> Callable:
        return b(gm, example_inputs)

    return satfuse_with_options


def autograd_compiled(fn: Callable, options: Any, dynamic: bool, engine: Any = None) -> Callable:
    """``fn`` under ``torch.compile`` with satfuse: how ``optimize`` and ``jit`` plans run calls that need gradients."""
    import torch

    return torch.compile(fn, backend=make_backend(options, engine), dynamic=dynamic)


def register() -> bool:
    """Register ``"satfuse"`` with Dynamo if cheap and safe; False when the entry point will (Dynamo not
    imported yet, or its registry already found the entry point: registering too would collide)."""
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


def partition_joint(joint: Any, joint_inputs: Any, **kwargs: Any) -> tuple:
    """Split AOTAutograd's joint graph with its min-cut rematerialization partitioner (Inductor's):
    the forward saves for the backward only what the backward cannot recompute from cheaper
    values, so cheap elementwise values are recomputed inside the backward's segments instead of
    written by the forward and read back (a cross-entropy saved two [N, C] tensors under the
    default partition, one under this). Where it cannot partition a graph, the default partition
    (save every value the backward reads) does, as before."""
    from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition

    from satfuse.engine import log

    try:
        return min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)
    except Exception as e:  # noqa: BLE001 - the default partition is always valid
        log.capture.debug("min-cut partition failed (%s: %s): the default partition saves every value the "
                          "backward reads", type(e).__name__, e)
        return default_partition(joint, joint_inputs, **kwargs)


DOUBLE_BACKWARD = (
    "satfuse: a compiled graph's backward (torch.compile, or a satfuse plan's gradients) ran with "
    "create_graph=True, so its gradients would be differentiated again; AOTAutograd, which satfuse compiles "
    "gradients through, has no double "
    "backward, and torch 2.13's check for it misses a graph whose saved values are all computed (second-order "
    "gradients through it come out silently wrong, under every backend built on it). Compute them outside "
    "torch.compile (torch.compiler.disable on the function whose gradient is differentiated), or leave "
    "create_graph off")


def refusing_double_backward(compiled: Callable) -> Callable:
    """``compiled`` (AOTAutograd's callable), refusing a backward with ``create_graph`` through it.

    AOTAutograd makes a graph's gradients differentiable through a node that raises when it is
    differentiated, connected to the saved tensors that require grad, and only those: where the
    forward saves computed values alone (``exp(x)``, never ``x``), the engine never reaches that
    node, and a gradient penalty through the graph loses its second-order term without an error
    (``aot_eager`` and Inductor alike, whichever values their partition saves). So each output's
    autograd node gets a pre-hook: it runs as the backward reaches the graph, in grad mode exactly
    when the backward builds a graph (``create_graph=True``), and raises then, before the graph's
    backward runs."""
    import functools

    import torch

    def guard(outs: Any) -> Any:
        if torch.is_grad_enabled():
            seen: set[int] = set()
            for o in outs if isinstance(outs, (list, tuple)) else (outs,):
                fn = o.grad_fn if isinstance(o, torch.Tensor) else None
                if fn is not None and id(fn) not in seen:
                    seen.add(id(fn))
                    fn.register_prehook(_refuse_create_graph)
        return outs

    @functools.wraps(compiled)  # its attributes too (``_boxed_call``): called as Dynamo calls it, boxed or not
    def run(*args: Any) -> Any:
        return guard(compiled(*args))

    return run


def _refuse_create_graph(grad_outputs: Any) -> None:
    import torch

    if torch.is_grad_enabled():
        raise RuntimeError(DOUBLE_BACKWARD)


class _Backend:
    def __init__(self, options: Any, engine: Any = None) -> None:
        from satfuse.startup import timed_import

        # the pipeline's first import is a one-time cost: the first graph's plan counts it
        self.engine = engine if engine is not None else timed_import("satfuse.pipeline").default_engine()
        self.options = self.engine.options_for(options)

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        """AOTAutograd's graphs unless the graph writes (or drops a result) and needs no gradients:
        AOTAutograd would functionalize away eager's refusals, or drop an op that may raise. The
        collector is paused throughout (AOTAutograd's tracing included); a backward graph, compiled
        on the first backward call, is paused by ``compile_graph``."""
        from satfuse.engine.gcpause import gc_paused

        with gc_paused():
            return self._compile(gm, example_inputs)

    def _compile(self, gm: Any, example_inputs: list) -> Callable:
        import torch
        from torch._dynamo.backends.common import aot_autograd
        from torch._guards import detect_fake_mode

        from satfuse.engine.capture import decomposition_table
        from satfuse.engine.capture.eager_checks import EagerRefusal
        from satfuse.engine.capture.functional import TRACING, UntracedEffectError, untraced_check_in
        from satfuse.engine.capture.graph import GuardMark, has_unused_results, writes_tensors
        from satfuse.engine.capture.symbols import track_evaluations
        from satfuse.graph_plans import compile_graph, refused_graph

        phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        vals = [n.meta.get("example_value", x) for n, x in zip(phs, example_inputs)]
        needs_grad = torch.is_grad_enabled() and any(isinstance(v, torch.Tensor) and v.requires_grad for v in vals)
        if not needs_grad and (writes_tensors(gm) or has_unused_results(gm)):
            return compile_graph(self.engine, self.options, gm, example_inputs, "inference")
        untraced = untraced_check_in(gm)  # satfuse's capture refuses these; AOTAutograd would skip the check
        if untraced is not None:
            return refused_graph(gm, UntracedEffectError(untraced))
        fake_mode = detect_fake_mode(example_inputs)
        mark = GuardMark(fake_mode.shape_env if fake_mode is not None else None)  # before AOTAutograd traces

        def boxed(kind: str) -> Callable:
            def compiler(g: Any, inputs: list) -> Callable:
                from functorch.compile import make_boxed_func

                return make_boxed_func(compile_graph(self.engine, self.options, g, inputs, kind, mark))

            return compiler

        try:  # TRACING: AOTAutograd traces eager's kernels, as capture does (engine/capture/eager_kernels.py)
            with TRACING, track_evaluations(mark.env):  # which guards AOTAutograd's trace made only for strides
                compiled = aot_autograd(fw_compiler=boxed("forward"), bw_compiler=boxed("backward"),
                                        inference_compiler=boxed("inference"), decompositions=decomposition_table(),
                                        partition_fn=partition_joint,
                                        keep_inference_input_mutations=True)(gm, example_inputs)
            return refusing_double_backward(compiled) if needs_grad else compiled
        except EagerRefusal as e:  # a decomposition's probe: eager's kernel refuses these dtypes
            return refused_graph(gm, e)
        except Exception as e:  # noqa: BLE001 - AOTAutograd could not trace it: Dynamo's graph runs eagerly
            # e.g. a backward kernel whose meta cannot take symbolic shapes (softshrink_backward), traced
            # now that torch's Python substitute no longer hides it (engine/capture/eager_kernels.py)
            if type(e).__module__.startswith(("torch._dynamo", "torch._subclasses")):
                raise  # Dynamo's own signals, and the fake tensor's it breaks the graph at (nonzero's shape)
            return refused_graph(gm, e)
