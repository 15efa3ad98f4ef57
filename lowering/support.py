"""Which IR ops nvFuser fuses, and under which constraints.

One table, shared by the segmenter (``segments.py``), the emitter (``emit.py``) and the
nvFuser cost model (engine), so that extraction prefers exactly the plans that lower
well. Every row names where the fact comes from: ``notes/nvfuser.md`` (facts read from
NVIDIA/Fuser at 0.2.36+git7e04d26 and from Thunder's nvFuser executor) or the Fuser
source file itself.

Public API:

- ``SUPPORT``: op name -> :class:`Support` (nvFuser spelling, segment-input argument
  positions, source of the fact, note).
- ``is_fusible(node) -> bool``: the node can live inside an nvFuser segment.
- ``needs_segment_input(node) -> list[int]``: argument positions whose tensors must be
  inputs of the node's segment (the looked-up tensor of an indexing or shape-lookup op).
- ``fallback_reason(node) -> str | None``: why a node runs as a torch call (for plans and stats).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from satfuse.engine.ir import Node, TensorType, Var
from satfuse.engine.vocab import BINARY, OPS, REDUCTIONS, UNARY, is_opaque, is_symbolic_float

NOTES = "notes/nvfuser.md"
OPS_CPP = "NVIDIA/Fuser python/python_direct/ops.cpp"

#: IR dtype name -> nvfuser_direct DataType member (python/python_direct/enum.cpp; no Int8/Int16/UInt8)
NVF_DTYPES: dict[str, str] = {
    "f64": "Double", "f32": "Float", "f16": "Half", "bf16": "BFloat16",
    "i64": "Int", "i32": "Int32", "b8": "Bool", "c64": "ComplexFloat", "c128": "ComplexDouble",
}


@dataclass(frozen=True)
class Support:
    """One row: ``fusible`` ops lower to ``nvf`` (the ``fd.ops`` name); ``segment_inputs``
    lists argument positions that must be segment inputs; ``source`` says where the fact is from."""

    op: str
    fusible: bool
    nvf: str | None
    source: str
    segment_inputs: tuple[int, ...] = ()
    note: str = ""
    #: torch runs it as a view (no kernel), and nvFuser's alias analysis returns it without a kernel
    #: when its operand is a fusion input: on a value from outside a segment it moves nothing
    view: bool = False


SUPPORT: dict[str, Support] = {}
ALIAS = ("NVIDIA/Fuser csrc/alias_analysis.cpp + csrc/preseg_passes/mark_aliases_prepare.cpp (an output that is "
         "a view of an input is an alias, evaluated on the host without a kernel)")


def _row(op: str, fusible: bool, nvf: str | None, source: str, segment_inputs: tuple[int, ...] = (), note: str = "",
         view: bool = False) -> None:
    SUPPORT[op] = Support(op, fusible, nvf, source, segment_inputs, note, view)


for _n in UNARY:
    _row(_n, True, _n, OPS_CPP + " (unary ops, positional-only)")
for _n in BINARY:
    _row(_n, True, _n, OPS_CPP + " (binary ops, positional-only; maximum/minimum are the elementwise names)")
_row("where", True, "where", OPS_CPP)
_row("cast", True, "cast", OPS_CPP)
_row("sum", True, "sum", NOTES + " (sum/max/min(t, dims=, keepdim=, dtype=))")
_row("prod", True, "prod", OPS_CPP)
_row("amax", True, "max", NOTES + " (there is no amax name: max is the reduction)")
_row("amin", True, "min", NOTES + " (there is no amin name: min is the reduction)")
_row("broadcast_in_dim", True, "broadcast_in_dim", NOTES + "; " + ALIAS, view=True)
_row("reshape", True, "reshape", NOTES + "; " + ALIAS, view=True)
_row("permute", True, "permute", NOTES + "; " + ALIAS, view=True)
_row("squeeze", True, "squeeze", OPS_CPP + " (only broadcast dims; other size-1 dims lower to reshape); " + ALIAS,
     view=True)
_row("slice", True, "slice", NOTES + " (looked-up tensor must be a segment input; strides must be 1)", (0,))
_row("pad", True, "pad", NOTES + " (looked-up tensor must be a segment input)", (0,), "negative widths fall back")
_row("cat", True, "cat", NOTES + " (looked-up tensors must be segment inputs)", (0,))
_row("iota", True, "iota", NOTES + " (iota(length, start, step, dtype) + broadcast_in_dim)")
_row("full", True, "full", NOTES)
_row("take_along_axis", True, "take_along_axis", NOTES + " (looked-up tensor must be a segment input)", (0,),
     "non-indexed extents must be equal (index may be broadcast)")
_row("index_select", True, "index_select", NOTES + " (looked-up tensor must be a segment input)", (0,), "1-D index")
_row("gather", False, "gather", NOTES, note="gather has no nvFuser code generation (own ATen segment); "
     "take_along_axis fuses when the non-indexed extents are equal")
_row("scatter", False, "scatter", NOTES, note="scatter runs only in nvFuser's ATen/greedy schedulers; "
     "a one-hot where(iota == index, v, 0) fuses")
_row("index_copy", False, None, OPS_CPP, note="nvFuser has no index_copy/index_put binding")
for _n in ("slice_scatter", "select_scatter", "diagonal_scatter"):
    _row(_n, False, None, OPS_CPP, note=f"nvFuser has no {_n} binding (a slice write-back is an in-place write)")
_row("index_put", False, None, OPS_CPP, note="nvFuser has no index_copy/index_put binding")
_row("slice_scatter_", False, None, OPS_CPP, note="an in-place write into the caller's buffer (a torch call)")
_row("index_copy_", False, None, OPS_CPP, note="an in-place write into the caller's buffer (a torch call)")
_row("copy_", True, "cast", NOTES + " (in-place write-back: set + add_output(alias_input=))",
     note="dst's value after dst.copy_(src): cast + broadcast of src")


# ---- how nvFuser segments a fusion and what a call costs on the host (lowering/kernels.py).
# Read in NVIDIA/Fuser at the commit the 0.2.36 wheel was built from (git 7e04d26); the host
# times are estimates until a GPU run measures them (bench/run.py compares with torch.profiler).
FUSER = "NVIDIA/Fuser@7e04d26 "


@dataclass(frozen=True)
class Fact:
    """One thing nvFuser does that the kernel model (``kernels.py``) relies on, and where it is read."""

    id: str
    what: str
    source: str


FACTS: dict[str, Fact] = {f.id: f for f in (
    Fact("reduction-signature",
         "reductions are fused into one kernel only when their reduced tensors have the same number of "
         "non-broadcast root dims and mapped reduction axes; otherwise the segmenter splits them "
         "(CombineReductions merges groups of equal signature)",
         FUSER + "csrc/scheduler/reduction.cpp ReductionScheduler::canScheduleCompileTime ('Inconsistent "
         "reduction root size', 'Un-mapped multi-reduction'); csrc/scheduler/normalization_utils.cpp "
         "compileTimeCheck; csrc/fusion_segmenter.cpp CombineReductions"),
    Fact("persistent-budget",
         "a normalization (the reduced tensor is used again after the reduction) runs as one persistent "
         "kernel only if a row fits on chip: half the register file (128 KiB) per SM, times the cluster "
         "size on Hopper; inner-persistent shared-memory buffers are off on sm90+. Otherwise it is "
         "segmented into reduction and pointwise kernels",
         FUSER + "csrc/scheduler/normalization_inner.cpp canScheduleRunTime ('not enough registers for "
         "persistence'); csrc/scheduler/normalization_utils.cpp "
         "getMaxRegOrSharedMemorySizeBitForPersistentBuffer; csrc/scheduler/utils.h register_file_size_bit; "
         "csrc/scheduler/utils.cpp getMaxClusterSize"),
    Fact("post-reduction-broadcast",
         "a broadcast of a reduction result to a domain other than the reduced tensor's is not a "
         "normalization the persistent schedulers accept: the fusion is segmented there",
         FUSER + "csrc/scheduler/normalization_utils.cpp compileTimeCheck "
         "(SchedulerTopologyChecker::hasNonNormalizePostReductionBCast, 'unsupported post reduction "
         "normalization')"),
    Fact("pointwise-reference",
         "the pointwise scheduler needs one reference tensor whose domain covers every output; outputs "
         "of shapes it cannot cover go to another kernel",
         FUSER + "csrc/scheduler/pointwise.cpp canScheduleCompileTime (hasReferenceTensorView, "
         "'cannot find reference tensor'); csrc/scheduler/tools/domain_map.cpp isValidReference"),
    Fact("connected-fusion",
         "every scheduler rejects a fusion whose ops form more than one connected component (\"Connected "
         "fusion graph check failed!\"): the segmenter runs each component as its own kernel, so "
         "independent same-shaped updates (an optimizer step over K tensors) are K kernels unless their "
         "tensors share one buffer",
         FUSER + "csrc/scheduler/registry.cpp checkCanSchedule and csrc/scheduler/registry_utils.cpp "
         "isConnectedFusionGraph (a DisjointSets over the fusion's values)"),
    Fact("alias-views",
         "an output that is only a view (reshape, permute, broadcast, squeeze) of a fusion input is an "
         "alias evaluated on the host, without a kernel (the no-op / expression-evaluator schedulers)",
         FUSER + "csrc/preseg_passes/mark_aliases_prepare.cpp; csrc/alias_analysis.cpp; "
         "csrc/scheduler/no_op.cpp; csrc/scheduler/scheduler_types.h all_heuristics_in_priority_order"),
    Fact("lookup-input",
         "the looked-up tensor of select/index_select/take_along_axis/slice/pad/cat must be a fusion "
         "input for the pointwise, reduction and normalization schedulers",
         FUSER + "csrc/scheduler/registry_utils.cpp rejectScheduleForMemoryPromotion; " + NOTES),
    Fact("host-call",
         "FusionDefinition.execute: Python -> FusionExecutorCache::runFusionWithInputs, which encodes "
         "every argument (sizes, strides, alignment of each tensor) into a cache key "
         "(InputsIdLookup::lookupId), finds the compiled runtime, allocates each output and launches "
         "each segment's kernel in order",
         FUSER + "python/nvfuser_direct/__init__.py FusionDefinition.execute; "
         "csrc/runtime/fusion_executor_cache.cpp runFusionWithInputs; csrc/runtime/fusion_cache_utils.cpp "
         "InputsIdLookup::lookupId; csrc/runtime/fusion_kernel_runtime.cpp runWithInputs"),
)}

#: bytes of one reduced row a persistent kernel may keep on chip on an H100: half the register
#: file (register_file_size_bit = 128 KiB) times the cluster size (8, the portable maximum that
#: getMaxClusterSize finds on sm90); see FACTS['persistent-budget']
PERSISTENT_BUDGET_BYTES = 128 * 1024 * 8
#: host microseconds of one execute call (FACTS['host-call']): a fixed part, each tensor argument
#: or output (cache-key encoding, allocation), each kernel launch. Estimates, not measurements:
#: a GPU run (bench/run.py) is to calibrate them.
HOST_US = {"execute": 20.0, "per_tensor": 1.0, "launch": 4.0}

assert not (set(OPS) - set(SUPPORT)), set(OPS) - set(SUPPORT)
assert set(REDUCTIONS) <= set(SUPPORT)


def fallback_reason(node: Node) -> str | None:
    """None when the node fuses; else a short reason (shown in plans and stats)."""
    op = node.op
    if is_opaque(op):
        return "opaque torch op"
    row = SUPPORT.get(op)
    if row is None:
        return f"unknown op {op}"
    if not row.fusible:
        return f"{row.note} ({row.source})"
    ins = node.inputs()  # asked once: lowering asks this of every node
    for v in (*ins, *node.outs):
        t = v.type
        if isinstance(t, TensorType) and t.dtype not in NVF_DTYPES:
            return f"dtype {t.dtype} has no nvFuser DataType"
    args = node.args
    if any(not isinstance(a, (Var, int, float)) and is_symbolic_float(a) for a in args):
        return "a symbolic float operand (computed from the sizes by the plan)"
    if op == "slice":
        if any(s != 1 for s in args[3]):
            return "slice strides must be 1 (ops.cpp)"
    elif op == "pad":
        if any(isinstance(w, int) and w < 0 for w in args[1]):
            return "negative pad widths"
    elif op == "iota":
        if args[1] == "b8":
            return "bool iota"
    elif op == "take_along_axis":
        x, idx, dim = args
        if not (isinstance(x, Var) and isinstance(idx, Var)) or x.type.rank != idx.type.rank:
            return "take_along_axis needs tensors of equal rank"
        d = dim % max(x.type.rank, 1)
        for i, (a, b) in enumerate(zip(x.type.shape, idx.type.shape)):
            if i != d and a != b and b != 1:
                return "take_along_axis: non-indexed extents differ"
    elif op == "index_select":
        x, _dim, idx = args
        if not isinstance(idx, Var) or idx.type.rank != 1:
            return "index_select needs a 1-D index"
    elif op == "cat":
        if not all(isinstance(t, Var) for t in args[0]):
            return "cat of non-tensors"
        if len({id(t) for t in args[0]}) < len(args[0]):
            # an H200, nvFuser 0.2.36: cat([a, a]) had a's shape once another op read it; given a copy
            # the second time, it lost a -0.0's sign (optimize fuzz 9850 #141, 9925 #221)
            return "cat of one tensor more than once (nvFuser 0.2.36 answered it wrongly on an H200)"
    elif op in ("reshape", "broadcast_in_dim", "full"):
        pass
    if op not in ("full", "iota") and not any(isinstance(v.type, TensorType) for v in ins):
        return "no tensor operand"
    return None


def is_fusible(node: Node) -> bool:
    """True when ``node`` can be part of an nvFuser segment."""
    return fallback_reason(node) is None


def is_view(node: Node) -> bool:
    """True when ``node`` is a view op (``Support.view``) of one tensor operand."""
    row = SUPPORT.get(node.op)
    return row is not None and row.view and is_fusible(node)


def needs_segment_input(node: Node) -> list[int]:
    """Argument positions whose tensors must be inputs of the segment holding ``node``."""
    row = SUPPORT.get(node.op)
    return list(row.segment_inputs) if row is not None and row.fusible else []


def segment_input_vars(node: Node) -> list[Var]:
    """The tensors that must be segment inputs (flattening ``cat``'s tuple)."""
    out: list[Var] = []
    for p in needs_segment_input(node):
        a: Any = node.args[p]
        for v in a if isinstance(a, (tuple, list)) else (a,):
            if isinstance(v, Var):
                out.append(v)
    return out
