"""Alias-safe write-backs, decided by a read/write ordering analysis.

A write-back ``(buf, val)`` says: when the program returns, the caller's tensor ``buf``
holds ``val``; every reader of ``buf``'s *old* value (the input Var ``buf`` or any value
that may share its storage) must still see the old value. For each write-back:

1. *May-alias*: which values may share storage with which input (views inside or
   outside segments: reshape/permute/squeeze/broadcast_in_dim/slice/cast, and opaque
   torch ops whose schema marks an aliasing return).
2. *Readers of the old value*: steps (segments, fallbacks, other write-back copies) that
   read ``buf`` or a value that may alias it. ``copy_``'s destination is not a read (it
   only gives dtype and shape).
3. **Alias in place** (``add_output(o, alias_input=buf)`` in the segment ``P`` computing
   ``val``) when ``P`` is a segment, no reader of the old value runs after ``P``, and inside
   ``P`` every op that depends on the old value is elementwise on ``buf``'s exact shape and
   reads it through ``buf`` itself, not through a view (so each element is read and then
   written by the same thread: no other thread can observe a half-written buffer), and every
   op reading the old value (directly or through unary ops, which nvFuser's segmenter may
   recompute in any kernel) is an ancestor of ``val``, so data dependence orders it before the
   write: nvFuser runs the kernels of one fusion in any order their data allows, and on an
   H200 a kernel writing ``buf`` ran before another output's kernel read it. Later readers of
   ``val`` read ``buf`` itself.
4. Otherwise **copy**: ``buf.copy_(val)`` right after the later of ``P`` and the last
   reader of the old value.
5. Program outputs that may alias an old value are cloned just before that buffer is
   written; a write source that may alias a written buffer is cloned right after it is
   produced.

The analysis sees only the plan (steps + write-backs), never special cases of ops.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from satfuse.engine.ir import Node, TensorType, Trace, Var
from satfuse.engine.vocab import BINARY, INPLACE, UNARY

from .checks import CheckStep
from .emit import _same
from .segments import Fallback, Segment, Step, data_inputs, may_alias_nodes

ELEMENTWISE = set(UNARY) | set(BINARY) | {"where", "cast", "copy_"}


@dataclass(eq=False)
class WriteCopy:
    """``buf.copy_(src)``: a write-back that cannot alias (scheduled after the last reader)."""

    buf: Var
    val: Var
    src: str  # runtime name of the source (val, or its clone)
    reason: str
    kind = "copy"


@dataclass(eq=False)
class Clone:
    """``name = var.clone()``: keeps a value whose storage is about to be overwritten."""

    var: Var
    name: str
    reason: str
    kind = "clone"


@dataclass
class WritebackPlan:
    """Steps with write copies and clones inserted, plus what each write-back became."""

    steps: list[Any]
    decisions: dict[str, str] = field(default_factory=dict)  # buf name -> "alias in seg0" / "copy after ..."
    lives_in: dict[int, Var] = field(default_factory=dict)  # id(val) -> buffer holding it after its write
    output_names: dict[int, str] = field(default_factory=dict)  # id(output var) -> runtime name (clones)
    #: :func:`may_alias` of the steps (None where no write-back asked for it): the plan's output
    #: aliasing reads it too (the steps' nodes do not change here)
    may_alias: dict[int, frozenset[int]] | None = None


def _step_reads(step: Step) -> list[Var]:
    if isinstance(step, (Segment, CheckStep)):
        return list(step.inputs)
    return step.node.inputs()


def step_nodes(step: Any) -> list[Node]:
    """The IR nodes a step runs (checks, write copies and clones run none)."""
    if isinstance(step, (Segment, CheckStep)):
        return list(step.nodes)
    return [step.node] if isinstance(step, Fallback) else []


def may_alias(trace: Trace, steps: list[Step]) -> dict[int, frozenset[int]]:
    """id(var) -> ids of input Vars whose (old) storage the value may share."""
    nodes = []
    for s in steps:
        nodes.extend(step_nodes(s))
    return may_alias_nodes(trace, nodes)


@dataclass
class _SegReads:
    """A segment's nodes with the values they read, and who reads each value (built once)."""

    nodes: list[tuple[Node, list[Var]]]
    readers: dict[int, list[int]]  # id(var) -> indices into nodes, in order
    producer: dict[int, int]  # id(var) -> index of the node computing it
    sharing: dict[int, list[Var]] | None = None  # id(buffer) -> inputs that may share its storage

    @classmethod
    def of(cls, seg: Segment) -> "_SegReads":
        nodes = [(n, data_inputs(n)) for n in seg.nodes]
        readers: dict[int, list[int]] = {}
        producer: dict[int, int] = {}
        for i, (n, ins) in enumerate(nodes):
            for v in ins:
                lst = readers.setdefault(id(v), [])
                if not lst or lst[-1] != i:
                    lst.append(i)
            for o in n.outs:
                producer[id(o)] = i
        return cls(nodes, readers, producer)

    def reached(self, var: Var, through: Any) -> set[int]:
        """Indices of the nodes reading ``var``, and of those reading the outputs of a node
        ``through(node)`` accepts, transitively."""
        seen: set[int] = set()
        frontier = [id(var)]
        while frontier:
            for i in self.readers.get(frontier.pop(), ()):
                if i not in seen:
                    seen.add(i)
                    n = self.nodes[i][0]
                    if through(n):
                        frontier.extend(id(o) for o in n.outs)
        return seen


def _pointwise_cone(seg: Segment, buf: Var, val: Var, al: dict[int, frozenset[int]], reads: _SegReads) -> str | None:
    """None when every op of ``seg`` depending on ``buf``'s old value is elementwise on its shape,
    the segment reads that value only through ``buf`` itself (a view maps elements elsewhere),
    and every op reading it (directly or through unary ops) feeds ``val``."""
    if reads.sharing is None:  # per buffer, the segment's inputs that may share its storage
        reads.sharing = {}
        for v in seg.inputs:
            for x in al.get(id(v), ()):
                reads.sharing.setdefault(x, []).append(v)
    for v in reads.sharing.get(id(buf), ()):
        if v is not buf:
            return f"{seg.name} also reads {v.name}, which may share {buf.name}'s storage"
    dep = {id(buf)}
    shape = buf.type.shape
    cone = reads.reached(buf, lambda n: True)  # the nodes reading buf's value, directly or through nodes that do
    for i in sorted(cone):
        n, ins = reads.nodes[i]
        hit = [v for v in ins if id(v) in dep]
        if not hit:
            continue
        o = n.outs[0]
        if n.op not in ELEMENTWISE or len(n.outs) != 1:
            return f"{n.op} reads it inside {seg.name}"
        for v in hit + [o]:
            t = v.type
            if not isinstance(t, TensorType) or (t.shape != shape and (len(t.shape) != len(shape) or not all(
                    _same(a, b) for a, b in zip(t.shape, shape)))):  # equal shapes have equal extents
                return f"{o.name} = {n.op}(...) broadcasts it inside {seg.name}"
        dep.add(id(o))
    # the ops that read the old value: buf's readers, and readers of unary ops of it (nvFuser
    # forwards unary ops of a fusion input into each kernel that uses them)
    direct = reads.reached(buf, lambda n: n.op in UNARY or n.op == "cast")
    feeds: set[int] = set()  # the cone's ops that val depends on
    stack = [id(val)]
    while stack:
        i = reads.producer.get(stack.pop())
        if i is None or i in feeds or i not in cone:
            continue
        feeds.add(i)
        stack.extend(id(v) for v in reads.nodes[i][1])
    if direct - feeds:
        n = reads.nodes[min(direct - feeds)][0]
        return (f"{n.outs[0].name} = {n.op}(...) reads its old value for another value inside {seg.name}, "
                "whose kernel nvFuser may run after the write")
    return None


def plan_writebacks(trace: Trace, steps: list[Step], barrier: int = -1) -> WritebackPlan:
    """Decide alias vs copy for every write-back of ``trace`` (see the module docstring).

    ``barrier``: index of the last step that may raise (``checks.place_checks``); no write
    happens at or before it, so a plan that raises has written nothing."""
    wbs = list(trace.writebacks)
    if not wbs:
        return WritebackPlan(list(steps))
    al = may_alias(trace, steps)
    producer: dict[int, int] = {}
    for i, s in enumerate(steps):
        for n in step_nodes(s):
            for o in n.outs:
                producer[id(o)] = i
    written = {id(b) for b, _ in wbs}
    # inserts: (position, order, item); position i means "after step i" (-1: before everything)
    inserts: list[tuple[float, int, Any]] = []
    decisions: dict[str, str] = {}
    lives_in: dict[int, Var] = {}
    src_name: dict[int, str] = {}
    taken: set[str] = {v.name for v in trace.inputs} | {o.name for n in trace.nodes for o in n.outs}

    def fresh(base: str) -> str:
        k = 0
        while f"{base}_c{k}" in taken:
            k += 1
        taken.add(f"{base}_c{k}")
        return f"{base}_c{k}"

    # write sources that may alias a buffer that gets written: clone right after they exist
    clone_pos: dict[int, float] = {}
    for b, v in wbs:
        if al.get(id(v), frozenset()) & written and id(v) not in src_name:
            nm = fresh(v.name)
            src_name[id(v)] = nm
            pos = producer.get(id(v), -1)
            clone_pos[id(v)] = pos
            inserts.append((pos, 0, Clone(v, nm, "the write-back source shares storage with a written buffer")))

    # per written buffer, the positions that read its old storage: built once (a scan per
    # buffer was quadratic in write-backs: an Adam step over 600 tensors)
    readers: dict[int, list[float]] = {}
    for i, s in enumerate(steps):
        hit: set[int] = set()
        for v in _step_reads(s):
            hit |= al.get(id(v), frozenset()) & written
        for b in hit:
            readers.setdefault(b, []).append(float(i))
    for b, v in wbs:  # copies from values that live in another buffer's old storage read it too
        for x in al.get(id(v), frozenset()) & written:
            if x != id(b):
                readers.setdefault(x, []).append(clone_pos.get(id(v), float(len(steps))))

    def readers_of(buf: Var) -> list[float]:
        return readers.get(id(buf), [])

    seg_reads: dict[int, _SegReads] = {}
    aliased: dict[int, set[int]] = {}  # step -> ids of the buffers it writes in place
    seg_inputs: dict[int, set[int]] = {}  # step -> ids of its inputs (once it gains one)
    dropped: dict[int, set[int]] = {}  # step -> ids of outputs that now live in a buffer
    grew: set[int] = set()  # steps that gained a buffer input
    outputs_of: dict[int, list[Var]] = {}  # step -> the program outputs it computes
    outputs_sharing: dict[int, list[Var]] = {}  # id(buffer) -> outputs that may share its storage
    for o in trace.outputs:
        if isinstance(o, Var):
            if id(o) in producer:
                outputs_of.setdefault(producer[id(o)], []).append(o)
            for x in al.get(id(o), frozenset()):
                if not any(o is u for u in outputs_sharing.get(x, ())):
                    outputs_sharing.setdefault(x, []).append(o)
    for b, v in wbs:
        reads = readers_of(b)
        last = max(reads, default=-1.0)
        p = producer.get(id(v))
        why = None
        fb = steps[p] if p is not None and isinstance(steps[p], Fallback) else None
        if fb is not None and fb.node.op in INPLACE and fb.node.args[0] is b:
            why = _in_place_refusal(fb, b, last, p, barrier, al, v)
            if why is None:
                fb.in_place = b
                lives_in[id(v)] = b
                decisions[b.name] = f"written in place by {fb.node.op} (only the written elements move)"
                write_at = p - 0.5
                for o in outputs_sharing.get(id(b), ()):
                    if id(o) not in lives_in:
                        nm = fresh(o.name)
                        inserts.append((write_at, 1, Clone(o, nm, f"{b.name} is written after this output is taken")))
                        src_name.setdefault(id(o), nm)
                continue
        if p is None:
            why = "its value is not computed by a segment"
        elif not isinstance(steps[p], Segment):
            why = f"its value comes from the torch call {steps[p].node.op}"
        elif last > p:
            later = steps[int(last)] if last < len(steps) else None
            why = f"the old value is read later (by {_step_label(later)})"
        elif p <= barrier:
            why = f"{_step_label(steps[barrier])} may raise later: nothing is written before it"
        elif al.get(id(v)):
            why = "its value may share storage with an input"
        elif id(b) in aliased.get(p, ()):
            why = "already aliased"
        else:
            if float(p) in reads and p not in seg_reads:
                seg_reads[p] = _SegReads.of(steps[p])
            why = _pointwise_cone(steps[p], b, v, al, seg_reads[p]) if float(p) in reads else None
            if why is None and any(o is not v and id(b) in al.get(id(o), frozenset()) for o in outputs_of.get(p, ())):
                # an output that may share b's storage is cloned before b is written, and it
                # does not exist before the segment that would write b in place has run
                why = f"an output that may share {b.name}'s storage comes from the same segment"
        if why is None:
            seg = steps[p]
            assert isinstance(seg, Segment)
            seg.aliases.append((b, v))
            aliased.setdefault(p, set()).add(id(b))
            ins = seg_inputs.get(p)
            if ins is None:
                ins = seg_inputs[p] = {id(x) for x in seg.inputs}
            if id(b) not in ins:
                ins.add(id(b))
                seg.inputs.append(b)  # sorted by name once every write-back is decided
                grew.add(p)
            dropped.setdefault(p, set()).add(id(v))  # later readers read the buffer itself
            lives_in[id(v)] = b
            decisions[b.name] = f"aliased in {seg.name} (add_output alias_input={b.name})"
            write_at = p - 0.5  # the write happens while P runs
        else:
            pos = max(last, float(p) if p is not None else -1.0, float(barrier))
            src = src_name.get(id(v), v.name)
            inserts.append((pos, 2, WriteCopy(b, v, src, why)))
            lives_in[id(v)] = b
            decisions[b.name] = f"copy after {_step_label(steps[int(pos)]) if pos >= 0 else 'the prologue'}: {why}"
            write_at = pos
        # program outputs that may alias the old value: clone them before the write
        for o in outputs_sharing.get(id(b), ()):
            if id(o) not in lives_in:
                nm = fresh(o.name)
                inserts.append((write_at, 1, Clone(o, nm, f"{b.name} is written after this output is taken")))
                src_name.setdefault(id(o), nm)
    for p, gone in dropped.items():
        steps[p].outputs = [o for o in steps[p].outputs if id(o) not in gone]
    for p in grew:
        steps[p].inputs.sort(key=lambda x: x.name)
    out_names = {}
    for o in trace.outputs:
        if isinstance(o, Var):
            if id(o) in lives_in:
                out_names[id(o)] = lives_in[id(o)].name
            elif id(o) in src_name:
                out_names[id(o)] = src_name[id(o)]
    new_steps: list[Any] = []
    inserts.sort(key=lambda t: (t[0], t[1]))
    k = 0
    for i in range(-1, len(steps)):
        if i >= 0:
            while k < len(inserts) and inserts[k][0] < i:
                new_steps.append(inserts[k][2])
                k += 1
            new_steps.append(steps[i])
        while k < len(inserts) and inserts[k][0] <= i:
            new_steps.append(inserts[k][2])
            k += 1
    new_steps.extend(t[2] for t in inserts[k:])
    return WritebackPlan(new_steps, decisions, lives_in, out_names, al)


def _in_place_refusal(fb: Fallback, b: Var, last: float, p: int, barrier: int, al: dict, v: Var) -> str | None:
    """None when ``fb`` (an INPLACE op on ``b``) may write ``b`` in place: nothing reads the old
    value after it, nothing before it may raise, and no other operand shares ``b``'s storage."""
    if last > p:
        return "the old value is read later"
    if p <= barrier:
        return "a step that may raise runs later: nothing is written before it"
    if al.get(id(v)):
        return "its value may share storage with an input"
    for a in fb.node.inputs()[1:]:
        if id(b) in al.get(id(a), frozenset()):
            return f"{a.name} may share {b.name}'s storage"
    return None


def _step_label(s: Any) -> str:
    if s is None:
        return "a program output"
    if isinstance(s, Segment):
        return s.name
    if isinstance(s, Fallback):
        return f"{s.node.outs[0].name} = {s.node.op}"
    if isinstance(s, CheckStep):
        return "the data checks"
    return type(s).__name__
