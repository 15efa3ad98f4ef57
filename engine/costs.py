"""Cost models: what one e-node costs, given the sizes of its classes.

Costs are in bytes-equivalents so that memory traffic, kernel launches and compute
add up. Extraction folds these per-node costs over a DAG (a shared class is paid
once). Sizes come from the shape analysis, with symbols evaluated at the example
sizes seen at capture (``hints``); an unknown symbol counts as ``DEFAULT_EXTENT``.

* ``nvfuser``: intermediates inside a fusion are free; what crosses a segment
  boundary is paid: program inputs read, outputs written, and the operands/results
  of ops nvFuser cannot fuse (they force materialization), plus a launch per
  non-fusible op and a small compute term per element.
* ``eager``: every op is a kernel that reads its operands and writes its result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ir import DTYPES
from .vocab import OPS

DEFAULT_EXTENT = 1024
#: a kernel launch, in bytes-equivalent (~4 µs at ~1 TB/s effective)
LAUNCH = 4 * 2**20
#: compute per element of a fused op, in bytes-equivalent
COMPUTE = {"default": 0.05, "transcendental": 0.25}
TRANSCENDENTAL = {"exp", "log", "log1p", "expm1", "tanh", "sigmoid", "sin", "cos", "erf", "pow", "rsqrt", "sqrt",
                  "exp2", "log2", "tan", "atan", "atan2", "div", "reciprocal"}

EGG_TO_OP = {spec.egg: name for name, spec in OPS.items()}

# ---- what nvFuser fuses (facts from shared/notes/nvfuser.md, nvFuser 0.2.36)
#: the looked-up tensor (arg 0) must be a segment input for these to fuse
LOOKUP_NEEDS_INPUT = frozenset({"take_along_axis", "index_select", "slice", "pad", "cat"})
#: these never share a kernel with pointwise/reduction work (gather: ATen segment; scatter: greedy only);
#: index_copy has no nvFuser op at all
NOT_FUSIBLE = frozenset({"gather", "scatter", "index_copy"})


def is_fusible_op(op: str) -> bool:
    return op in OPS and op not in NOT_FUSIBLE


@dataclass
class ClassInfo:
    numel: int = 0
    itemsize: int = 4
    is_tensor: bool = False
    is_input: bool = False

    @property
    def bytes(self) -> int:
        return self.numel * self.itemsize


@dataclass
class CostModel:
    """Per-node cost; ``target`` is 'nvfuser' or 'eager'."""

    target: str = "nvfuser"
    hints: dict[str, int] = field(default_factory=dict)

    def node_cost(self, op: str, out: ClassInfo, kids: list[ClassInfo]) -> float:
        if op in ("Out", "WriteBack"):
            return float(kids[-1].bytes) + (0 if kids[-1].is_input else 0.0)
        if op == "NoWrite":
            return 0.0
        if op == "Input":
            return float(out.bytes) if self.target == "nvfuser" else 0.0
        if op in ("CInt", "CFloat", "CBool", "CDim"):
            return 0.0
        name = EGG_TO_OP.get(op)
        if name is None and op not in ("Opaque", "Proj"):
            return 1e-3  # extents, lists, literals: cheap structure
        if op == "Proj":
            return 0.0
        tensor_kids = [k for k in kids if k.is_tensor]
        if self.target == "eager":
            return LAUNCH + out.bytes + sum(k.bytes for k in tensor_kids)
        if op == "Opaque" or name in NOT_FUSIBLE:
            # operands produced by fusions must be written out, then read back; the result written
            mat = sum(k.bytes for k in tensor_kids if not k.is_input) + sum(k.bytes for k in tensor_kids)
            return LAUNCH + mat + 2 * out.bytes
        cost = out.numel * COMPUTE["transcendental" if name in TRANSCENDENTAL else "default"]
        if name in LOOKUP_NEEDS_INPUT and tensor_kids and not tensor_kids[0].is_input:
            cost += LAUNCH + 2 * tensor_kids[0].bytes  # nvFuser splits here: the looked-up tensor is materialized
        return cost


def itemsize(dtype: str) -> int:
    dt = DTYPES.get(dtype)
    return dt.itemsize if dt is not None else 4
