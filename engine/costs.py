"""Cost models: what one e-node costs, given the sizes of its classes; and what a whole
plan moves through memory.

Costs are in bytes-equivalents so that memory traffic, kernel launches and compute
add up. Extraction folds these per-node costs over a DAG (a shared class is paid
once). Sizes come from the shape analysis, with symbols evaluated at the example
sizes seen at capture (``hints``); an unknown symbol counts as ``DEFAULT_EXTENT``.

* ``nvfuser``: intermediates inside a fusion are free; what crosses a segment
  boundary is paid: program inputs read, outputs written, and the operands/results
  of ops nvFuser cannot fuse (they force materialization), plus a launch per
  non-fusible op and a small compute term per element. A looked-up tensor
  (``take_along_axis``, ``slice``, ...) that is not a program input forces a split:
  it is written and read back.
* ``eager``: every op is a kernel that reads its operands and writes its result;
  views (``reshape``, ``squeeze``, ``permute``, ``broadcast_in_dim``) are free.

Views are free for both targets: in a segment nvFuser reads through them, and a view of a
value from outside every segment is a torch view step, not a segment (``lowering/segments.py``),
so the two targets agree on what materializes.

The per-node model cannot see segments (they exist only after extraction), so it
charges no launch per fused segment and treats every fusible op as fusing with its
neighbours. The plan-level accounting below (:func:`plan_traffic`, :func:`eager_traffic`,
:func:`minimum_traffic`) measures a finished plan instead: it is what ``bench/`` reports
and what tests assert on ("no [512, 32768] intermediate is materialized").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import sympy

from .ir import DTYPES, TensorType, Trace, Var
from .schema import SCALARS
from .vocab import OPS, is_opaque

DEFAULT_EXTENT = 1024
#: a kernel launch, in bytes-equivalent (~4 µs at ~1 TB/s effective)
LAUNCH = 4 * 2**20
#: compute per element of a fused op, in bytes-equivalent
COMPUTE = {"default": 0.05, "transcendental": 0.25}
TRANSCENDENTAL = {"exp", "log", "log1p", "expm1", "tanh", "sigmoid", "sin", "cos", "erf", "pow", "rsqrt", "sqrt",
                  "exp2", "log2", "tan", "atan", "atan2", "div", "reciprocal"}

EGG_TO_OP = {spec.egg: name for name, spec in OPS.items()}

# ---- what nvFuser fuses (facts from shared/notes/nvfuser.md, nvFuser 0.2.36). The lowering's
# table (lowering/support.py, SUPPORT) is the reference; tests/test_costs.py checks these agree.
#: the looked-up tensor (arg 0) must be a segment input for these to fuse
LOOKUP_NEEDS_INPUT = frozenset({"take_along_axis", "index_select", "slice", "pad", "cat"})
#: these never share a kernel with pointwise/reduction work (gather: ATen segment; scatter: greedy only);
#: index_copy, index_put and the view scatters have no nvFuser op at all
NOT_FUSIBLE = frozenset({"gather", "scatter", "index_copy", "index_put", "slice_scatter", "select_scatter",
                         "diagonal_scatter", "slice_scatter_", "index_copy_"})
#: in-place writes into their first operand's buffer: they move only what they write
IN_PLACE = frozenset({"slice_scatter_", "index_copy_"})
#: ops that eager torch runs as views (no kernel, no bytes); lowering/support.py's ``view`` column
EAGER_VIEWS = frozenset({"reshape", "squeeze", "permute", "broadcast_in_dim"})
TARGETS = ("nvfuser", "eager")


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

    def __post_init__(self) -> None:
        if self.target not in TARGETS:
            raise ValueError(f"unknown cost target {self.target!r}; known: {', '.join(TARGETS)}")

    def node_cost(self, op: str, out: ClassInfo, kids: list[ClassInfo]) -> float:
        if op in ("Out", "WriteBack"):
            return float(kids[-1].bytes)  # written once (an output that is an input is rare: not special-cased)
        if op in ("NoWrite", "Proj"):
            return 0.0
        if op == "Input":
            return float(out.bytes) if self.target == "nvfuser" else 0.0  # eager: its readers pay
        if op in SCALARS:
            return 0.0
        name = EGG_TO_OP.get(op)
        if name is None and op != "Opaque":
            return 1e-3  # extents, lists, literals: cheap structure
        tensor_kids = [k for k in kids if k.is_tensor]
        if name in IN_PLACE:  # read the written values (and index), write the values into the buffer
            return LAUNCH + sum(k.bytes for k in tensor_kids[1:]) + tensor_kids[-1].bytes
        if self.target == "eager":
            if name in EAGER_VIEWS:
                return 1e-3
            # torch's take_along_dim is gather plus index broadcasting: on a tie, keep the gather
            extra = 1.0 if name == "take_along_axis" else 0.0
            return LAUNCH + out.bytes + sum(k.bytes for k in tensor_kids) + extra
        if op == "Opaque" or name in NOT_FUSIBLE:
            # operands produced by fusions must be written out, then read back; the result written
            mat = sum(k.bytes for k in tensor_kids if not k.is_input) + sum(k.bytes for k in tensor_kids)
            return LAUNCH + mat + 2 * out.bytes
        if name in EAGER_VIEWS:
            return 1e-3  # never materializes: read through inside a segment, a torch view outside (segments.py)
        cost = out.numel * COMPUTE["transcendental" if name in TRANSCENDENTAL else "default"]
        if name in LOOKUP_NEEDS_INPUT and tensor_kids and not tensor_kids[0].is_input:
            cost += LAUNCH + 2 * tensor_kids[0].bytes  # nvFuser splits here: the looked-up tensor is materialized
        return cost


def itemsize(dtype: str) -> int:
    dt = DTYPES.get(dtype)
    return dt.itemsize if dt is not None else 4


# --------------------------------------------------------------------------- plan-level bytes


def numel(t: TensorType, hints: dict[str, int] | None = None, default: int = DEFAULT_EXTENT) -> int:
    """Elements of a tensor type, symbols evaluated at ``hints`` (unknown: ``default``)."""
    n = 1
    for e in t.shape:
        if isinstance(e, sympy.Expr) and not e.is_Integer:
            e = e.subs({s: (hints or {}).get(s.name, default) for s in e.free_symbols})
        n *= max(int(e), 0)
    return n


def var_bytes(v: Any, hints: dict[str, int] | None = None) -> int:
    """Bytes of a tensor value (0 for scalars and non-Vars)."""
    if not isinstance(v, Var) or not isinstance(v.type, TensorType):
        return 0
    return numel(v.type, hints) * itemsize(v.type.dtype)


@dataclass(frozen=True)
class Move:
    """One tensor crossing memory: ``kind`` is 'read' or 'write'; ``step`` the kernel that moves it."""

    kind: str
    var: str
    type: str
    bytes: int
    step: str
    role: str  # input | output | writeback | intermediate


@dataclass
class Traffic:
    """Bytes a plan moves, as a list of moves (reads and writes) plus the kernel count."""

    target: str
    moves: list[Move] = field(default_factory=list)
    kernels: int = 0

    @property
    def reads(self) -> int:
        return sum(m.bytes for m in self.moves if m.kind == "read")

    @property
    def writes(self) -> int:
        return sum(m.bytes for m in self.moves if m.kind == "write")

    @property
    def total(self) -> int:
        return self.reads + self.writes

    def intermediates(self) -> list[Move]:
        """Writes of values that are neither program outputs nor write-backs: materialized
        intermediates (between steps, or between the kernels nvFuser splits a segment into)."""
        return [m for m in self.moves if m.kind == "write" and m.role in ("intermediate", "split")]

    def table(self) -> str:
        rows = [f"{'kind':<6} {'var':<20} {'type':<24} {'bytes':>14} {'role':<12} step"]
        for m in self.moves:
            rows.append(f"{m.kind:<6} {m.var:<20} {m.type:<24} {m.bytes:>14,} {m.role:<12} {m.step}")
        rows.append(f"total {self.total:,} bytes ({self.reads:,} read, {self.writes:,} written), {self.kernels} kernel(s)")
        return "\n".join(rows)


class _Roles:
    def __init__(self, trace: Trace) -> None:
        self.inputs = {id(v) for v in trace.inputs}
        self.outputs = {id(o) for o in trace.outputs if isinstance(o, Var)}
        self.writebacks = {id(val) for buf, val in trace.writebacks if val is not buf}

    def __call__(self, v: Var) -> str:
        if id(v) in self.inputs:
            return "input"
        if id(v) in self.outputs:
            return "output"
        if id(v) in self.writebacks:
            return "writeback"
        return "intermediate"


def _data_inputs(op: str, args: tuple, inputs: Iterable[Var]) -> list[Var]:
    """Values a node reads: ``copy_``'s destination only gives dtype and shape."""
    if op == "copy_":
        return [a for a in args[1:] if isinstance(a, Var)]
    return list(inputs)


def _live(trace: Trace) -> list:
    need = {id(o) for o in trace.outputs if isinstance(o, Var)} | {id(val) for _, val in trace.writebacks}
    keep = []
    for n in reversed(trace.nodes):
        if is_opaque(n.op) or any(id(o) in need for o in n.outs):
            keep.append(n)
            need |= {id(v) for v in n.inputs()}
    return keep[::-1]


def _segment_reads(seg: Any) -> list[Var]:
    """Values a segment reads from outside (its inputs minus write-only alias buffers)."""
    produced = {id(o) for n in seg.nodes for o in n.outs}
    return [v for n in seg.nodes for v in _data_inputs(n.op, n.args, n.inputs()) if id(v) not in produced]


def minimum_traffic(trace: Trace, hints: dict[str, int] | None = None) -> Traffic:
    """The least any plan can move: each tensor input that is read, read once; each output
    and each write-back written once (a value both returned and written back: once; an
    output that is an input, or a write-back of a buffer's own value: nothing)."""
    roles = _Roles(trace)
    t = Traffic("minimum")
    read: set[int] = set()
    for n in _live(trace):
        for v in _data_inputs(n.op, n.args, n.inputs()):
            read.add(id(v))
    for v in trace.inputs:
        if id(v) in read and isinstance(v.type, TensorType):
            t.moves.append(Move("read", v.name, str(v.type), var_bytes(v, hints), "-", "input"))
    written: set[int] = set()
    for buf, val in trace.writebacks:
        if val is not buf and id(val) not in written:
            written.add(id(val))
            t.moves.append(Move("write", buf.name, str(buf.type), var_bytes(val, hints), "-", "writeback"))
    for o in trace.outputs:
        if isinstance(o, Var) and o.is_tensor and id(o) not in roles.inputs and id(o) not in written:
            written.add(id(o))
            t.moves.append(Move("write", o.name, str(o.type), var_bytes(o, hints), "-", "output"))
    return t


def plan_traffic(steps: Iterable[Any], trace: Trace, hints: dict[str, int] | None = None) -> Traffic:
    """Bytes crossing step boundaries of a lowered plan (``lowering.Plan.steps``).

    Steps are read by their ``kind``: a ``segment`` reads each of its ``inputs`` once (except
    a buffer it only writes in place: a ``copy_`` destination is not read) and
    writes each of its ``outputs`` and aliased write-backs once; a ``fallback`` reads its
    node's tensor operands and writes its results; a ``copy`` (write-back copy) reads the
    value and writes the buffer; a ``clone`` reads and writes its value. Each segment and
    fallback is one kernel (copies and clones too), except a fallback that is a torch view
    (``EAGER_VIEWS``: no kernel, no bytes, as in :func:`eager_traffic`). A segment with a
    ``predicted`` segmentation (``lowering/kernels.py``: what nvFuser's own segmenter makes of
    it) counts its predicted kernels, the values written between them and read back (role
    ``split``) and its inputs read again by later kernels (role ``reread``)."""
    roles = _Roles(trace)
    t = Traffic("nvfuser")
    for s in steps:
        kind = getattr(s, "kind", None)
        name = getattr(s, "name", kind)
        if kind == "segment":
            pred = getattr(s, "predicted", None)
            t.kernels += pred.count if pred is not None else 1
            read = {id(v) for v in _segment_reads(s)}
            for v in s.inputs:
                if v.is_tensor and id(v) in read:
                    t.moves.append(Move("read", v.name, str(v.type), var_bytes(v, hints), name, roles(v)))
            for v in s.outputs:
                if v.is_tensor:
                    t.moves.append(Move("write", v.name, str(v.type), var_bytes(v, hints), name, roles(v)))
            for buf, val in getattr(s, "aliases", ()):
                t.moves.append(Move("write", buf.name, str(buf.type), var_bytes(val, hints), name, "writeback"))
            if pred is not None:  # nvFuser splits it: what crosses between its kernels
                for v, n in pred.rereads:
                    for _ in range(n):
                        t.moves.append(Move("read", v.name, str(v.type), var_bytes(v, hints), name, "reread"))
                for v, _g, readers in pred.crossings:
                    b = var_bytes(v, hints)
                    t.moves.append(Move("write", v.name, str(v.type), b, name, "split"))
                    t.moves += [Move("read", v.name, str(v.type), b, name, "split") for _ in readers]
        elif kind == "fallback" and getattr(s, "in_place", None) is not None:
            t.kernels += 1  # written in place: reads its operands but the buffer, writes what they hold
            n, buf = s.node, s.in_place
            for v in n.inputs()[1:]:
                if v.is_tensor:
                    t.moves.append(Move("read", v.name, str(v.type), var_bytes(v, hints), n.op, roles(v)))
            written = n.inputs()[-1]  # the values written (last operand)
            t.moves.append(Move("write", buf.name, str(buf.type), var_bytes(written, hints), n.op, "writeback"))
        elif kind == "fallback" and s.node.op in EAGER_VIEWS:
            pass  # a torch view of a value from outside the segments: no kernel, nothing moved
        elif kind == "fallback":
            t.kernels += 1
            n = s.node
            for v in n.inputs():
                if v.is_tensor:
                    t.moves.append(Move("read", v.name, str(v.type), var_bytes(v, hints), n.op, roles(v)))
            for v in n.outs:
                if v.is_tensor:
                    t.moves.append(Move("write", v.name, str(v.type), var_bytes(v, hints), n.op, roles(v)))
        elif kind == "copy":
            t.kernels += 1
            t.moves.append(Move("read", s.val.name, str(s.val.type), var_bytes(s.val, hints), "copy_", roles(s.val)))
            t.moves.append(Move("write", s.buf.name, str(s.buf.type), var_bytes(s.val, hints), "copy_", "writeback"))
        elif kind == "clone":
            t.kernels += 1
            b = var_bytes(s.var, hints)
            t.moves.append(Move("read", s.var.name, str(s.var.type), b, "clone", roles(s.var)))
            t.moves.append(Move("write", s.name, str(s.var.type), b, "clone", "intermediate"))
        elif kind == "check":
            pass  # data checks read metadata (and small index tensors): no kernel of their own counted
        else:
            raise TypeError(f"unknown plan step {s!r} (kind {kind!r})")
    return t


def eager_traffic(trace: Trace, hints: dict[str, int] | None = None) -> Traffic:
    """Bytes an op-by-op torch execution of ``trace`` moves: every live op reads its tensor
    operands and writes its results, except views (free) and a ``copy_`` whose source is
    computed by an op, which eager runs as that op's in-place form (``p.add_(x)`` writes
    ``p`` directly; such writes have role ``writeback``). A ``copy_`` of an input or of a
    view is a copy kernel (read + write), and so is a write-back whose value is not the
    result of a ``copy_``."""
    roles = _Roles(trace)
    producer = {id(o): n for n in trace.nodes for o in n.outs}

    def computed(v: Any) -> bool:
        p = producer.get(id(v)) if isinstance(v, Var) else None
        return p is not None and p.op not in EAGER_VIEWS and p.op != "copy_"

    in_place = {id(n.args[1]) for n in trace.nodes if n.op == "copy_" and computed(n.args[1])}
    t = Traffic("eager")
    for n in _live(trace):
        if n.op in EAGER_VIEWS or (n.op == "copy_" and computed(n.args[1])):
            continue
        t.kernels += 1
        for v in _data_inputs(n.op, n.args, n.inputs()):
            if v.is_tensor:
                t.moves.append(Move("read", v.name, str(v.type), var_bytes(v, hints), n.op, roles(v)))
        for v in n.outs:
            if v.is_tensor:
                role = "writeback" if id(v) in in_place or n.op == "copy_" else roles(v)
                t.moves.append(Move("write", v.name, str(v.type), var_bytes(v, hints), n.op, role))
    for buf, val in trace.writebacks:
        p = producer.get(id(val))
        if val is not buf and (p is None or p.op != "copy_"):
            t.kernels += 1
            t.moves.append(Move("read", val.name, str(val.type), var_bytes(val, hints), "copy_", roles(val)))
            t.moves.append(Move("write", buf.name, str(buf.type), var_bytes(val, hints), "copy_", "writeback"))
    return t
