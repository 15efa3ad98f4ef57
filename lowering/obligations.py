"""Data obligations as checks that run before the plan's first write.

A rewrite may rely on a fact about tensor *values* that the e-graph cannot prove:
``gather/take-to-onehot-sum`` turns ``take_along_axis(x, i)`` into a one-hot masked sum,
equal only when every index is in ``[0, extent)`` (eager raises otherwise; the one-hot sum
quietly yields 0). The rule states it as data (rules/lang.egg's ``obligation``), extraction
returns the obligations of the chosen nodes (``Trace.obligations``), and lowering renders
each data obligation into the plan, ahead of every segment, fallback and write-back:

    # data obligations (lowering/obligations.py): checked before the first write
    _ob0_ne = eager.ne(y, -100)
    ...
    check_index(_ob0_unsqueeze, 5, 0)   # index-in-range [gather/take-to-onehot-sum]

The index is recomputed from the plan's inputs by its slice of the program (index
arithmetic on ``[N]`` integers: ``where(y != ignore_index, y, 0)``), so the check reads no
value a segment has not produced yet and no caller buffer is written before it. A failure
raises the exception type of the eager op whose bounds check the program relied on
(capture records it: ``Trace.index_ops``; cross-entropy's ``IndexError: Target 5 is out of
bounds.``, gather's and scatter's ``RuntimeError``), with eager's message followed by the
rule and the input it came from. Shape obligations (``le``) go to the guard prologue.

CPU (reference executor): one ``aminmax`` over the index and two scalar compares.
CUDA (design, not built here): the same test as a reduction output of the segment that
already reads the index (``any(i < 0 | i >= n)``, one byte), copied to pinned host memory
with a non-blocking copy; the plan reads the flag (an event wait, not a device-wide sync)
only at its commit point, before the first write to a caller buffer, which a transactional
plan defers to the end. Plans with no caller writes before their outputs are returned can
also read the flag lazily, on the next call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from satfuse.engine.ir import Node, Obligation, Trace, Var

#: eager op -> (exception type, message) it raises for an index out of range (CPU kernels)
EAGER_INDEX_ERRORS: dict[str, tuple[type[Exception], str]] = {
    "aten.nll_loss_forward": (IndexError, "Target {value} is out of bounds."),
    "aten.nll_loss_backward": (IndexError, "Target {value} is out of bounds."),
    "aten.nll_loss2d_forward": (IndexError, "Target {value} is out of bounds."),
    "aten.nll_loss2d_backward": (IndexError, "Target {value} is out of bounds."),
}
#: gather, scatter, take_along_dim and the rest: ATen's index checks
DEFAULT_INDEX_ERROR: tuple[type[Exception], str] = (RuntimeError, "index {value} is out of bounds for dimension with size {size}")


@dataclass
class DataCheck:
    """One data obligation, ready to render: the nodes that recompute its index from the plan's
    inputs (in program order; none when the index is an input) and what eager raises."""

    obligation: Obligation
    index: Var
    extent: Any
    nodes: list[Node]
    inputs: list[Var]
    exc: type[Exception]
    message: str

    def failure(self, idx: torch.Tensor, n: int) -> Exception:
        """Cold path: the first out-of-range index (``n``: the extent in this call), in eager's
        words, then ours."""
        bad = ((idx < 0) | (idx >= n)).flatten().nonzero()
        value = int(idx.flatten()[bad[0, 0]]) if bad.numel() else "?"
        ob = self.obligation
        what = (f"satfuse: obligation {ob.kind!r} of rule {', '.join(ob.rules)} failed: {self.index.name} must lie in "
                f"[0, {self.extent}){'' if self.extent == n else f' (here {n})'}, computed from input {', '.join(v.name for v in self.inputs) or self.index.name}")
        return self.exc(f"{self.message.format(value=value, size=n)} ({what})")


def data_checks(trace: Trace) -> list[DataCheck]:
    """The trace's data obligations as checks (shape obligations are the prologue's)."""
    producer = {o: n for n in trace.nodes for o in n.outs}
    order = {id(n): k for k, n in enumerate(trace.nodes)}
    inputs = {id(v) for v in trace.inputs}
    out = []
    for ob in trace.obligations:
        if not ob.is_data:
            continue
        index, extent = ob.args
        seen: dict[int, Node] = {}
        reads: dict[int, Var] = {}
        stack = [index]
        while stack:
            v = stack.pop()
            if id(v) in inputs:
                reads[id(v)] = v
                continue
            n = producer[v]
            if id(n) not in seen:
                seen[id(n)] = n
                stack.extend(n.inputs())
        exc, msg = EAGER_INDEX_ERRORS.get(ob.eager_op, DEFAULT_INDEX_ERROR)
        nodes = sorted(seen.values(), key=lambda n: order[id(n)])
        ins = [v for v in trace.inputs if id(v) in reads]
        out.append(DataCheck(ob, index, extent, nodes, ins, exc, msg))
    return out


def index_checker(checks: list[DataCheck]) -> Any:
    """``check_index(idx, n, k)`` for the plan's globals: raises check ``k``'s failure."""

    def check_index(idx: torch.Tensor, n: int, k: int) -> None:
        if idx.numel():
            lo, hi = torch.aminmax(idx)
            if lo < 0 or hi >= n:
                raise checks[k].failure(idx, n)

    return check_index
