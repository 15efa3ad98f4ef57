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
__all__ = ["Options", "Plan", "jit", "optimize"]


def __getattr__(name: str) -> Any:
    if name in ("Options", "Plan", "optimize"):
        from satfuse import api

        return getattr(api, name)
    if name == "jit":
        from satfuse.jit import jit

        return jit
    raise AttributeError(f"module 'satfuse' has no attribute {name!r}")


def _register_backend() -> None:
    from satfuse.backend import register  # light: no torch._dynamo unless it is already loaded

    register()


_register_backend()
