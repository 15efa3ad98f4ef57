"""satfuse: a graph-rewriting rule engine for PyTorch programs.

``optimize(fn, *inputs)`` captures ``fn``, saturates an e-graph with the rules in
``rules/*.egg``, extracts the plan that moves the fewest bytes on the target, and
lowers it to guarded nvFuser segments (run on real nvFuser when available, else by
the reference executor).

Names are imported lazily so that ``import satfuse.engine`` (or the torch.compile
entry point) does not pull in the whole pipeline.
"""

from typing import Any

__version__ = "0.1.0"

#: public error (and warning) classes -> the module that defines them (imported on first use)
ERRORS = {
    "IRError": "satfuse.engine.ir",  # a malformed program (base of the capture and lowering errors)
    "CaptureError": "satfuse.engine.capture.trace",  # the program cannot be traced / converted
    "RuleError": "satfuse.engine.session",  # a rule pack is malformed or a rule is unsound here
    "GuardError": "satfuse.lowering.guards",  # a call breaks an assumption of the plan (nothing ran)
    "PlanCheckError": "satfuse.lowering.checks",  # a data check before the first write failed
    "LoweringError": "satfuse.lowering.plan",  # the optimized program cannot be lowered
    "SegmentError": "satfuse.lowering.plan",  # a fusion segment failed while running
    "CacheLimitError": "satfuse.lowering.cache",  # jit: no cached plan fits and the cache is full
    "RecompileError": "satfuse.lowering.cache",  # jit: no cached plan fits and a new one failed
    "BackendError": "satfuse.backend",  # torch.compile: a Dynamo graph could not be compiled
    "RecompileLimitWarning": "satfuse.lowering.cache",  # jit: past max_plans, calls run eagerly (a warning)
}
__all__ = ["Engine", "Options", "Plan", "compiled_plans", "jit", "optimize", *ERRORS]


def __getattr__(name: str) -> Any:
    # the first access imports the pipeline: a one-time cost the first plan counts (``satfuse/startup.py``)
    from satfuse.startup import timed_import

    if name in ERRORS:
        return getattr(timed_import(ERRORS[name]), name)
    if name in ("Options", "Plan", "optimize"):
        return getattr(timed_import("satfuse.api"), name)
    if name in ("Engine", "compiled_plans"):
        return getattr(timed_import("satfuse.pipeline"), name)
    if name == "jit":
        return timed_import("satfuse.jit").jit
    raise AttributeError(f"module 'satfuse' has no attribute {name!r}")


def _register_backend() -> None:
    from satfuse.backend import register  # light: no torch._dynamo unless it is already loaded

    register()


_register_backend()
