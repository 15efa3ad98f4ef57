"""satfuse.engine: the Trace IR, capture from torch, and the e-graph (encode, saturate, extract, decode)."""

from .capture import Captured, CaptureError, capture
from .ir import IRError, Node, OutputAlias, ScalarType, TensorType, Trace, Var
from .printer import parse_trace, print_trace

__all__ = ["Captured", "CaptureError", "IRError", "Node", "ScalarType", "TensorType", "Trace", "Var",
           "OutputAlias", "capture", "parse_trace", "print_trace"]
