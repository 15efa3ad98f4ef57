"""satfuse.lowering: Trace -> Plan (guard prologue, nvFuser segments, fallback torch calls,
alias-safe write-backs), run on the real nvFuser frontend or on the torch reference.

    plan = lower(trace, hints=captured.symbol_hints)   # executor="auto" | "reference" | "nvfuser"
    outs = plan(*flat_inputs)
    print(plan)                                        # the program that runs
"""

from .guards import GuardError, Prologue, build_prologue
from .plan import EXECUTORS, LoweringError, Plan, SegmentError, lower
from .support import SUPPORT, is_fusible, needs_segment_input

__all__ = ["EXECUTORS", "GuardError", "LoweringError", "Plan", "Prologue", "SUPPORT", "SegmentError", "build_prologue", "is_fusible",
           "lower", "needs_segment_input"]
