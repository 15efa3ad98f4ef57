"""satfuse: a graph-rewriting rule engine for PyTorch programs.

``optimize(fn, *inputs)`` captures ``fn``, saturates an e-graph with the rules in
``rules/*.egg``, extracts the plan that moves the fewest bytes on the target, and
lowers it to guarded nvFuser segments (run on real nvFuser when available, else by
the reference executor).
"""

from satfuse.api import Options, Plan, optimize

__all__ = ["Options", "Plan", "optimize"]
__version__ = "0.1.0"
