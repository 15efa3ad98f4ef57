"""The pre-write check stage: a plan completes or raises with every caller tensor untouched.

Eager PyTorch raises at the op that fails, before any later op writes. A plan reorders and
fuses, so it keeps that promise by construction instead: every *fallible* step runs before
the plan's first write to a caller's buffer (an aliased segment output or a write-back
copy). A step is fallible when its outcome depends on data, not only on the shapes, dtypes
and devices the guard prologue has already fixed:

- a :class:`DataCheck`: a condition on values (an index in range, a leaf that requires grad
  written in place), rendered as ``if not (cond): raise Error(message)``, raising eager's
  exception type;
- a fallback op that can raise on data (``engine/fallible.can_raise``: index ops, and every opaque torch
  op not known to fail on metadata alone), which raises eager's own error when run as a torch
  call;
- a segment holding an index op (the reference executor checks bounds as torch does).

``lower`` asks the segmenter to run fallible steps as early as their operands allow, places
each check right after the last value it reads exists (:func:`place_checks`), and hands the
position of the last fallible step to ``writeback.plan_writebacks`` as the *barrier*: no
write happens at or before it (a write-back that would alias in an earlier segment becomes a
copy after the barrier; a copy waits for it).

Other stages add checks by passing :class:`DataCheck` objects to ``lower(trace, checks=...)``
(rule obligations on data, e.g. a gather index in range when the gather is fused and nvFuser
would not bounds-check). :func:`builtin_checks` are the ones every plan gets.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

from satfuse.engine.fallible import CHECKED_INDEX, INDEX_OPS, METADATA_ONLY, can_raise
from satfuse.engine.ir import Node, Trace, Var, flat_args


class PlanCheckError(RuntimeError):
    """Default error of a :class:`DataCheck` whose eager counterpart has no better type."""


@dataclass(eq=False)
class DataCheck:
    """``if not (cond): raise error(message)``, run before the plan's first write.

    ``cond`` is Python text with ``{0}``, ``{1}``, ... standing for ``args`` (Vars, extents,
    numbers), which the plan renders as its own local names (symbolic extents as Python on the
    bound symbols); ``torch`` is in scope. ``error`` is the exception type eager raises for the
    same input (IndexError for an out-of-range index, RuntimeError, ...). ``source`` says who
    asked for it (a rule name, "builtin")."""

    cond: str
    args: tuple
    error: type[BaseException] = PlanCheckError
    message: str = ""
    source: str = ""
    #: fields of ``message`` filled on failure: name -> Python text over ``{0}``, ... (e.g. the
    #: first index out of range, as eager's message shows it); evaluated only when the check fails
    detail: dict[str, str] = field(default_factory=dict)
    #: CUDA: ``args[0]`` is a 0-d count computed on the device (``obligations.obligation_flags``):
    #: the plan copies it to the host without blocking and tests it at its commit point
    flag: bool = False
    #: a rule's obligation on this index: the check runs just before the first step that reads it,
    #: not earlier, so an op eager runs before (one whose result that step reads) raises first
    guards: Var | None = None
    #: the position of the op it checks in the captured program (-1: unknown): the check runs after
    #: every fallible step of an earlier op, whose failure eager raises first
    rank: int = -1

    def reads(self) -> list[Var]:
        return [a for a in flat_args(self.args) if isinstance(a, Var)]

    def render(self, value: Any) -> str:
        """The check as one line of the plan; ``value`` renders one argument (for a ``flag``
        check, ``value(args[0])`` names the host copy of the flag)."""
        vals = [value(a) for a in self.args]
        if self.flag:
            vals[0] = f"{vals[0]}.item()"
        cond = self.cond.format(*vals)
        if not self.detail:
            return f"if not ({cond}): raise {self.error.__name__}({self.message!r})"
        fields = ", ".join(f"{k}={e.format(*vals)}" for k, e in self.detail.items())
        return f"if not ({cond}): raise {self.error.__name__}({self.message!r}.format({fields}))"


@dataclass(eq=False)
class CheckStep:
    """Checks placed at one point of the plan (after the step computing their last operand)."""

    checks: list[DataCheck]
    name: str = "checks"
    kind = "check"
    nodes: list[Node] = field(default_factory=list)  # runs no IR node

    @property
    def inputs(self) -> list[Var]:
        """The Vars each check reads that no earlier check reads, in order (by identity: a set of
        ids, where a scan of the list per Var was quadratic in an optimizer step's 1,305 written
        buffers)."""
        out: list[Var] = []
        seen: set[int] = set()
        for c in self.checks:
            new = [v for v in c.reads() if id(v) not in seen]
            out += new
            seen.update(id(v) for v in new)
        return out


def step_can_raise(step: Any) -> str | None:
    """A step (segment, fallback, check) that may raise on data: why, else None."""
    if isinstance(step, CheckStep):
        return "data check"
    nodes = getattr(step, "nodes", None)
    if nodes is None:
        node = getattr(step, "node", None)
        nodes = [node] if node is not None else []
    for n in nodes:
        why = can_raise(n)
        if why is not None:
            return why
    return None


def builtin_checks(trace: Trace) -> list[DataCheck]:
    """Checks every plan gets: no input written in place is a leaf that requires grad while grad
    mode is on (eager's in-place op raises RuntimeError before writing). One line for all."""
    out = [_index_range(n) for n in trace.nodes if n.op in CHECKED_INDEX]
    bufs = tuple(b for b, _ in trace.writebacks)
    if not bufs:
        return out
    leaf = " or ".join(f"{{{i}}}.requires_grad and {{{i}}}.is_leaf" for i in range(len(bufs)))
    names = ", ".join(b.name for b in bufs)
    return [DataCheck(f"not ({leaf}) or not torch.is_grad_enabled()", bufs, RuntimeError,
                      f"a leaf Variable that requires grad is being used in an in-place operation ({names}).",
                      "builtin"), *out]


def _index_range(n: Node) -> DataCheck:
    """``x.index_copy_(dim, idx, src)``: every index in ``[0, x.shape[dim])``, as eager checks
    (a 0-d ``x`` has one slot)."""
    x, dim, idx, _src = n.args
    extent = x.type.shape[dim] if x.type.rank else 1
    return DataCheck("{1}.numel() == 0 or (int({1}.min()) >= 0 and int({1}.max()) < {2})",
                     (x, idx, extent), IndexError,
                     f"index_copy_(): index out of bounds for dimension {dim} of {x.name}", "builtin")


def place_checks(steps: list[Any], checks: Sequence[DataCheck], ranks: dict[int, int] | None = None
                 ) -> tuple[list[Any], int]:
    """Insert each check right after the step producing the last Var it reads (inputs: first).

    Returns the new steps and the index of the last fallible step (-1 when none): the write
    barrier of ``writeback.plan_writebacks``."""
    produced_at: dict[int, int] = {}
    for i, s in enumerate(steps):
        for n in _nodes(s):
            for o in n.outs:
                produced_at[id(o)] = i
    first_read: dict[int, int] = {}
    guarded = {id(c.guards) for c in checks if c.guards is not None}
    for i, s in enumerate(steps):
        for n in _nodes(s):
            for v in n.inputs():
                if id(v) in guarded:
                    first_read.setdefault(id(v), i)
    # fallible steps of ops with a known program position: (step index, position)
    ranked = sorted(((i, ranks[id(n)]) for i, s in enumerate(steps) if ranks and step_can_raise(s) is not None
                     for n in _nodes(s) if id(n) in ranks), key=lambda ir: ir[1])
    # the latest fallible step of an op eager runs before a rank: the running maximum up to the
    # ranks below it (a scan of every fallible step per check was quadratic: 800 cross-entropies)
    rank_keys = [r for _, r in ranked]
    latest = list(itertools.accumulate((i for i, _ in ranked), max))
    after: dict[int, list[DataCheck]] = {}
    have: dict[int, set[int]] = {}  # step -> ids of its outputs, once a check asked
    for c in checks:
        pos = max((produced_at.get(id(v), -1) for v in c.reads()), default=-1)
        if c.guards is not None and id(c.guards) in first_read:
            pos = max(pos, first_read[id(c.guards)] - 1)
        if c.rank >= 0:
            k = bisect.bisect_left(rank_keys, c.rank)
            if k:
                pos = max(pos, latest[k - 1])
        after.setdefault(pos, []).append(c)
        for v in c.reads():  # a value made inside a segment becomes one of its outputs
            i = produced_at.get(id(v))
            outs = getattr(steps[i], "outputs", None) if i is not None else None
            if outs is None:
                continue
            ids = have.get(i)
            if ids is None:
                ids = have[i] = {id(o) for o in outs}
            if id(v) not in ids:
                ids.add(id(v))
                outs.append(v)
    for i in have:  # outputs stay sorted by name
        steps[i].outputs.sort(key=lambda o: o.name)
    out: list[Any] = []
    if -1 in after:
        out.append(CheckStep(after[-1]))
    for i, s in enumerate(steps):
        out.append(s)
        if i in after:
            out.append(CheckStep(after[i]))
    barrier = max((i for i, s in enumerate(out) if step_can_raise(s) is not None), default=-1)
    return out, barrier


def _nodes(step: Any) -> list[Node]:
    nodes = getattr(step, "nodes", None)
    if nodes is not None:
        return list(nodes)
    node = getattr(step, "node", None)
    return [node] if node is not None else []


__all__ = ["CheckStep", "DataCheck", "INDEX_OPS", "METADATA_ONLY", "PlanCheckError", "builtin_checks", "can_raise",
           "place_checks", "step_can_raise"]
