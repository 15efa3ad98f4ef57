"""Capture: a torch program -> Trace.

``trace`` traces on fake tensors under a ShapeEnv we own and converts the aten graph op by op
(``aten_map``); ``graph`` converts graphs traced by someone else (Dynamo) and the jit's
symbolic entry; ``closure`` lifts module state a function closes over into inputs.
"""

from .closure import ClosureState, closure_state
from .convert import CaptureError
from .graph import GraphTrace, capture_symbolic, trace_from_graph
from .symbols import range_guards
from .trace import Captured, capture, decomposition_table

__all__ = ["CaptureError", "Captured", "ClosureState", "GraphTrace", "capture", "capture_symbolic", "closure_state",
           "decomposition_table", "range_guards", "trace_from_graph"]
