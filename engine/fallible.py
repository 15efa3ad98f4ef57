"""Which ops can raise on values, and which dead ops a plan must still run.

Eager runs every op a program calls, used or not: ``x[idx]`` whose result is never read
still raises IndexError for an index out of range, an unused integer ``fmod`` by zero still
raises, an unused ``torch.rand`` still advances the generator. The e-graph keeps only what
the roots reach and lowering keeps only what the outputs need, so such an op would vanish
and the plan would return where eager raises. :func:`effects` names those values once, on the
captured Trace (``Trace.effects``); the engine keeps them as roots and lowering computes them
among the fallible steps, before the first write, and drops them.

:func:`can_raise` is the one predicate both ends use: lowering's check stage orders the
steps it flags before any write (``lowering/checks.py``).
"""

from __future__ import annotations

import functools
import heapq
from typing import Callable

import torch

from .ir import IRError, Node, Trace, Var
from .vocab import OPS, is_opaque

#: vocabulary ops whose result depends on index *values* (out of range raises in torch)
INDEX_OPS = frozenset(op for op, spec in OPS.items() if spec.kind == "index")

#: opaque torch ops (aten names) that fail only on metadata the guard prologue fixes (shapes,
#: dtypes, devices), never on values: running them after a write cannot break atomicity
METADATA_ONLY = frozenset({
    "mm", "bmm", "addmm", "addmv", "mv", "matmul", "baddbmm", "addbmm", "linear", "dot", "vdot", "outer",
    "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "convolution_backward",
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention", "scaled_dot_product_attention", "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_flash_attention_for_cpu_backward", "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_flash_attention_backward",
    "native_dropout", "bernoulli", "rand", "rand_like", "randn", "randn_like", "normal", "uniform",
    "clone", "_to_copy", "contiguous", "copy", "view", "_unsafe_view", "expand", "permute", "t", "transpose",
    "slice", "select", "unsqueeze", "squeeze", "alias", "detach", "as_strided", "unfold", "diagonal",
    "split", "split_with_sizes", "chunk", "unbind",
    "cumsum", "cumprod", "sort", "argsort", "topk", "max_pool2d_with_indices", "avg_pool2d", "flip", "roll",
    "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit_functional", "native_batch_norm_backward", "native_group_norm",
    "native_group_norm_backward", "_softmax", "_log_softmax", "mean", "sum", "var_mean", "amax", "amin", "max",
    "min", "triu", "tril", "zeros", "zeros_like", "ones", "ones_like", "empty", "empty_like", "full", "full_like",
    "arange", "scalar_tensor", "lift_fresh_copy", "fill", "constant_pad_nd", "upsample_nearest2d",
    "upsample_bilinear2d", "tanh", "sigmoid", "exp", "log", "relu", "gelu", "erf", "sqrt", "rsqrt",
})


#: view overloads that raise on their operand's strides, an intermediate's layout no guard fixes:
#: a bitcast to another element size needs ``stride(-1) == 1`` (``F.pad(x, (-1, 0))`` of an expanded
#: ``x`` keeps stride 0 on its one element, and an unused ``.view(torch.float32)`` of it raises; jit
#: fuzz 10092 #365), a complex view even strides
LAYOUT_CHECKED = frozenset({"aten.view.dtype", "aten.view_as_complex.default"})


def _aten_name(op: str) -> str:
    parts = op.split(".")
    return parts[1] if len(parts) > 1 else op


#: index ops whose index range a builtin check tests before the first write (so the op itself
#: cannot raise, and may write a caller's buffer in place: a KV-cache ``index_copy_``)
CHECKED_INDEX = frozenset({"index_copy_"})


#: index ops: the positions of their index operands (a tuple of them for ``index_put``)
_INDEX_ARGS = {"take_along_axis": 1, "gather": 2, "index_select": 2, "index_copy": 2, "scatter": 2,
               "index_copy_": 2, "index_put": 1}


def index_rank(node: Node, index_ranks: dict[str, int]) -> int:
    """The captured program's position of the eager op that reads ``node``'s index operand
    (``Trace.index_ranks``), or -1 where no index operand kept its captured name."""
    k = _INDEX_ARGS.get(node.op)
    if k is None or len(node.args) <= k:
        return -1
    idx = node.args[k]
    ranks = [index_ranks[v.name] for v in (idx if isinstance(idx, (tuple, list)) else (idx,))
             if isinstance(v, Var) and v.name in index_ranks]
    return min(ranks, default=-1)


def can_raise(node: Node) -> str | None:
    """Why running ``node`` can raise on data the guards do not fix (None: it cannot)."""
    return _raise_reason(node.op)


@functools.lru_cache(maxsize=4096)
def _raise_reason(op: str) -> str | None:
    """:func:`can_raise` of an op (by name alone: asked once per op of every node)."""
    if op in CHECKED_INDEX:
        return None
    if op in INDEX_OPS:
        return f"{op} raises on an out-of-range index"
    if is_opaque(op):
        if op in LAYOUT_CHECKED:
            return f"the torch op {op} checks the strides of its operand, which no guard fixes"
        name = _aten_name(op)
        if name.rstrip("_") in METADATA_ONLY or name in METADATA_ONLY:
            return None
        return f"the torch op {op} may raise on values"
    return None


def consumes_rng(node: Node) -> bool:
    """An opaque torch op that draws from the random generator (its draws shift every later one)."""
    return is_opaque(node.op) and _seeded(node.op)


@functools.lru_cache(maxsize=4096)
def _seeded(name: str) -> bool:
    """Whether the aten op ``name`` is tagged as drawing random numbers (aten's registry does not
    change while a process runs, so asked once per op)."""
    op = _torch_op(name)
    return op is not None and torch.Tag.nondeterministic_seeded in op.tags


def _torch_op(name: str) -> torch._ops.OpOverload | None:
    parts = name.split(".")
    if len(parts) < 2 or parts[0] != "aten":
        return None
    packet = getattr(torch.ops.aten, parts[1], None)
    if packet is None:
        return None
    return getattr(packet, parts[2] if len(parts) > 2 else "default", None)


def effects(trace: Trace) -> list[Var]:
    """The values of ``trace`` no output or write-back needs whose op eager would still run to an
    observable end: it can raise on values (:func:`can_raise`) or draws random numbers. Their
    operands are needed too, so they stay in the plan with them."""
    need: set[int] = {id(o) for o in trace.outputs if isinstance(o, Var)}
    need |= {id(val) for _, val in trace.writebacks}
    need |= {id(v) for v in trace.effects}
    kept: list[Var] = list(trace.effects)
    for n in reversed(trace.nodes):
        live = False
        for o in n.outs:
            if id(o) in need:
                live = True
                break
        if not live and n.outs and (can_raise(n) is not None or consumes_rng(n)):
            kept.append(n.outs[0])
            live = True
        if live:
            need.update(map(id, _value_operands(n)))
    if not kept:
        return kept
    order = {id(o): i for i, n in enumerate(trace.nodes) for o in n.outs}
    return sorted({id(v): v for v in kept}.values(), key=lambda v: order.get(id(v), -1))


#: ops whose first operand gives only its shape and dtype (``copy_(dst, src)`` is ``src`` cast and
#: broadcast to ``dst``'s): an op read only there is dead too, and the e-graph drops the read
_SHAPE_ONLY_FIRST = frozenset({"copy_"})


def _value_operands(n: Node) -> list[Var]:
    """The operands of ``n`` whose values it reads (all but a shape-only destination)."""
    ins = n.inputs()
    if n.op in _SHAPE_ONLY_FIRST and n.args and isinstance(n.args[0], Var):
        dst = n.args[0]
        if sum(v is dst for v in ins) == 1:
            return [v for v in ins if v is not dst]
    return ins


def in_program_order(nodes: list[Node], rank: Callable[[Node], int]) -> list[Node]:
    """``nodes`` (in an order where every value is defined before use) reordered as little as
    possible so that the ops drawing random numbers run in ``rank`` order, as eager drew them:
    a rewritten program is decoded from its outputs, which may reach the second draw first.
    Ops that can raise on data (``can_raise``, with a rank) join that order where they can: eager
    raises the first failing op's error (``index_copy_``'s IndexError before a later
    ``scatter``'s RuntimeError); where the rewritten program's dependencies forbid it, the random
    draws alone keep their order."""
    ordered = [n for n in nodes if consumes_rng(n) or (can_raise(n) is not None and rank(n) >= 0)]
    try:
        return _in_order(nodes, ordered, rank)
    except IRError:
        return _in_order(nodes, [n for n in nodes if consumes_rng(n)], rank)


def _in_order(nodes: list[Node], chained: list[Node], rank: Callable[[Node], int]) -> list[Node]:
    want = sorted(chained, key=rank)
    if all(a is b for a, b in zip(chained, want)):
        return nodes
    pos = {id(n): i for i, n in enumerate(nodes)}
    producer = {id(o): n for n in nodes for o in n.outs}
    preds: dict[int, set[int]] = {id(n): {id(producer[id(v)]) for v in n.inputs() if id(v) in producer}
                                  for n in nodes}
    for a, b in zip(want, want[1:]):
        preds[id(b)].add(id(a))
    succs: dict[int, list[Node]] = {}
    for n in nodes:
        for p in preds[id(n)]:
            succs.setdefault(p, []).append(n)
    indeg = {k: len(v) for k, v in preds.items()}
    ready = [(pos[id(n)], id(n), n) for n in nodes if indeg[id(n)] == 0]
    heapq.heapify(ready)
    out: list[Node] = []
    while ready:
        _, _, n = heapq.heappop(ready)
        out.append(n)
        for m in succs.get(id(n), ()):
            indeg[id(m)] -= 1
            if indeg[id(m)] == 0:
                heapq.heappush(ready, (pos[id(m)], id(m), m))
    if len(out) != len(nodes):
        raise IRError("the rewritten program makes one random draw depend on a later one: no order draws "
                      "them as eager does")
    return out
