"""Plan: a Trace lowered to a guard prologue, nvFuser segments, fallback torch calls and
write-backs, as one printed Python program that is also what runs.

``lower(trace)`` builds the steps (``segments.partition``), decides every write-back
(``writeback.plan_writebacks``), emits each segment's FusionDefinition (``emit``), writes
the guard prologue (``guards``) and then generates::

    def prologue(inputs): ...            # checks + symbol binding

    @fusion
    def seg0(fd): ...                    # FusionDefinition body, per segment

    def computation(inputs):
        env = prologue(inputs)           # raises GuardError before anything runs
        a, b = inputs
        [t0] = seg0.execute([a, b])      # nvFuser (or reference) segment
        t1 = aten.mm.default(t0, b)      # fallback torch call
        a.copy_(t1)                      # write-back after the last reader of old a
        return [t1]

The text is compiled once (``Plan.source``); ``fusion`` binds each segment function to
the executor: the real ``nvfuser_direct`` frontend or ``frontend_ref``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import keyword
import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import sympy
import torch
from satfuse.engine import log
from satfuse.engine.ir import DTYPES, IRError, Namespace, Node, TensorType, Trace, Var, dense_order, flat_args
from satfuse.engine.printer import fmt_literal
from satfuse.engine.vocab import (
    EAGER_COPIES,
    EAGER_MADE,
    EAGER_RECORDS,
    EAGER_STRIDES,
    IMPLS,
    INPLACE,
    dense,
    dtype_view,
    is_opaque,
    laid_out,
    resolve_opaque,
    writes_first_operand,
    written,
)

from . import frontend_ref, nvfuser_probe
from .aliasing import Pattern
from .checks import CheckStep, DataCheck, builtin_checks, place_checks
from .emit import NVFUSER_VERSION, EmittedSegment, emit_segment
from .guards import GuardError, Prologue, build_prologue, pyexpr
from .kernels import predict
from .obligations import obligation_checks, obligation_flags
from .segments import TORCH_VIEW, VIEW_OPS, Fallback, Segment, live_nodes, may_alias_nodes, opaque_aliasing, partition
from .writeback import Clone, WriteCopy, plan_writebacks, step_nodes

EXECUTORS = ("auto", "reference", "nvfuser")


class LoweringError(IRError):
    """The trace cannot be lowered: names the node and what is missing."""


class SegmentError(RuntimeError):
    """A segment failed while running: names the segment, the generated line and the IR node."""


class _Eager:
    """``eager.<op>(...)``: the torch meaning of a vocabulary op (fallback steps);
    ``inplace.<op>(buf, ...)``: an INPLACE op writing into ``buf`` (``writeback.py`` decides)."""

    def __init__(self, impls: dict) -> None:
        for k, f in impls.items():
            setattr(self, k, f)


EAGER = _Eager(IMPLS)
IN_PLACE = _Eager(INPLACE)


# ---------------------------------------------------------------------- segment runners


class _Built:
    """A FusionDefinition built once for every segment whose definition is the same text but for
    its names (:func:`definition_key`): 345 identical transformer blocks build (and nvFuser
    compiles) 4 definitions, not 1,380. Also the reference executor's stand-in, once nvFuser
    has failed on it, and the operand layouts nvFuser has run it on."""

    __slots__ = ("fd", "on_torch", "tried")

    def __init__(self) -> None:
        self.fd: Any = None
        self.on_torch: Any = None
        self.tried: set[tuple] = set()


_WORD = re.compile(r"[A-Za-z_]\w*")
_ASSIGNED = re.compile(r"^[ \t]+([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)[ \t]*=(?!=)", re.M)


def definition_key(source: str) -> str:
    """``def segN(fd)``'s body with the names it assigns numbered by first assignment, its header
    and docstring dropped: equal keys are one definition (the emitter spells everything else, the
    inputs' order, extents, dtypes and constants, in the text)."""
    body = source.split("\n", 2)[2]
    names: dict[str, str] = {}
    for m in _ASSIGNED.finditer(body):
        for n in m.group(1).split(","):
            names.setdefault(n.strip(), f"_{len(names)}")
    return _WORD.sub(lambda m: names.get(m.group(0), m.group(0)), body)


def _outline(source: str) -> tuple[int, str]:
    """What two segments of one definition certainly share: their line counts and the op list of
    their docstrings (``seg7: 3 ops (add, gt, where)`` without the name)."""
    doc = source.split("\n", 2)[1]
    return source.count("\n"), doc.partition(":")[2]


class _Fusion:
    """What ``@fusion`` makes of ``def segN(fd)``: builds the definition once (shared with the
    segments of the same definition), runs it."""

    def __init__(self, define: Callable, frontend: Any, emitted: EmittedSegment, plan_lines: list[str],
                 first_line: int, real: bool, built: _Built, owner: str):
        self.define = define
        self.owner = owner  # the segment whose text the plan holds for this definition
        self.frontend = frontend
        self.emitted = emitted
        self.built = built
        self.real = real
        self.plan_lines = plan_lines
        self.first_line = first_line
        aliased = {id(b) for b, _ in emitted.aliases}
        self.alias_pos = [i for i, v in enumerate(emitted.inputs) if id(v) in aliased]
        self.calls = 0
        # where the outputs live: a segment with no tensor input on that device (torch.full(...,
        # device="cuda") alone, or only 0-d CPU operands) would otherwise make them on the CPU
        devs = [v.type.device for v in [*emitted.outputs, *emitted.inputs]
                if isinstance(v, Var) and isinstance(v.type, TensorType)]
        self.device = torch.device(devs[0]) if devs else None
        self.nvf_device = self.device if self.device is not None and self.device.type == "cuda" else None  # nvFuser takes CUDA only

    def build(self) -> Any:
        fd = self.frontend.FusionDefinition()
        with fd:
            self.define(fd)
        return fd

    def execute(self, inputs: list) -> list:
        self.calls += 1
        built = self.built
        if not self.real:
            fd = built.fd
            if fd is None:
                fd = built.fd = self.build()
            try:
                return fd.execute(inputs, device=self.device)
            except Exception as e:
                raise self._error(e) from e
        if built.on_torch is not None:
            return built.on_torch.execute(inputs, device=self.device)
        args = [x.contiguous() if isinstance(x, torch.Tensor) else x for x in inputs]
        untried = None
        if self.alias_pos:
            # the first call of each layout writes copies of the caller's buffers (copied back
            # once nvFuser has run): nvFuser compiles then, where its INTERNAL ASSERTs were seen
            untried = tuple((x.shape, x.stride()) for x in args if isinstance(x, torch.Tensor))
            if untried in built.tried:
                untried = None
            else:
                for i in self.alias_pos:
                    if args[i] is inputs[i]:
                        args[i] = inputs[i].clone(memory_format=torch.contiguous_format)
        try:
            fd = built.fd
            if fd is None:
                fd = built.fd = self.build()
            outs = fd.execute(args, device=self.nvf_device)
        except Exception as e:
            # nvFuser refused or broke on a valid definition (seen: INTERNAL ASSERTs for some 0-d
            # and integer fusions on an H100 and H200). A segment that has written no caller
            # buffer yet runs on torch ops instead, from now on; one that may have must raise.
            if (self.alias_pos or self.emitted.aliases) and untried is None:
                raise self._error(e) from e
            built.on_torch = definition_from_text(self.emitted, frontend_ref)
            ops = sorted({n.op for n in self.emitted.lineno_map.values()})
            log.lowering.warning("%s: nvFuser failed (%s: %s) on ops %s, operands %s; the segment runs on torch "
                                 "ops (the reference executor) from now on", self.emitted.name, type(e).__name__,
                                 (str(e).strip().splitlines() or [""])[0][:200], ", ".join(ops), _operands(args))
            log.lowering.debug("%s: the definition nvFuser failed on:\n%s", self.emitted.name, self.emitted.source)
            return built.on_torch.execute(inputs, device=self.device)
        if untried is not None:
            built.tried.add(untried)
        for i in self.alias_pos:  # a buffer was written through a contiguous copy
            if args[i] is not inputs[i]:
                inputs[i].copy_(args[i])
        return frontend_ref.fresh_outputs(outs, [x for x in args if isinstance(x, torch.Tensor)])

    def _error(self, e: Exception) -> Exception:
        tb = e.__traceback__
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<satfuse plan>":
                line = tb.tb_lineno
            tb = tb.tb_next
        rec = getattr(e, "satfuse_line", None)
        line = rec or line
        where = ""
        if line is not None:
            rel = line - self.first_line + 1  # a line of the definition, which may be another segment's text
            node = self.emitted.node_at(rel)
            own = self.emitted.source.splitlines()
            if 0 < rel <= len(own):  # this segment's own spelling of that line
                text = own[rel - 1].strip()
                shared = "" if self.owner == self.emitted.name else f" ({self.owner}'s definition)"
            else:
                text = self.plan_lines[line - 1].strip() if 0 < line <= len(self.plan_lines) else ""
                shared = ""
            where = f" at plan line {line}{shared}: {text}" + (f" (IR: {node.outs[0].name} = {node.op})" if node else "")
        return _segment_error_type(type(e))(f"{self.emitted.name} failed{where}: {type(e).__name__}: {e}")


def _operands(args: list) -> str:
    """Each fusion input as dtype[shape]/stride (a scalar as its type): enough to reproduce a
    frontend failure from the log."""
    def one(x: Any) -> str:
        if isinstance(x, torch.Tensor):
            return f"{str(x.dtype).removeprefix('torch.')}{list(x.shape)}/{list(x.stride())}@{x.device.type}"
        return type(x).__name__
    return "(" + ", ".join(one(x) for x in args) + ")"


@functools.cache
def _segment_error_type(cause: type) -> type:
    """SegmentError that is also ``cause`` (IndexError, ...), so ``except IndexError`` catches a
    segment's failure as it catches eager's; plain SegmentError where the two cannot combine."""
    if issubclass(cause, SegmentError) or not issubclass(cause, Exception):
        return SegmentError
    try:
        return type(f"SegmentError[{cause.__name__}]", (SegmentError, cause), {"__module__": __name__})
    except TypeError:  # an instance layout of its own (OSError, ...)
        return SegmentError


def _frontend(executor: str) -> tuple[Any, bool]:
    if executor == "nvfuser":
        fe = nvfuser_probe.frontend()
        if fe is None:
            raise RuntimeError(f"executor='nvfuser' but {nvfuser_probe.probe()}")
        return fe, True
    return frontend_ref, False


# ---------------------------------------------------------------------- rendering helpers


class _Render:
    def __init__(self, sym_local: dict[sympy.Symbol, str], local: Callable[[Var], str], consts: dict[str, Any],
                 ns: Namespace):
        self.sym_local = sym_local
        self.local = local
        self.consts = consts
        self.ns = ns

    def value(self, a: Any, seq: str = "tuple") -> str:
        if isinstance(a, Var):
            return self.local(a)
        if isinstance(a, sympy.Basic):
            return pyexpr(a, self.sym_local)
        if isinstance(a, (tuple, list)):
            inner = ", ".join(self.value(x, seq) for x in a)
            if seq == "list":
                return f"[{inner}]"
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, bool) or a is None or isinstance(a, (int, str)):
            return repr(a)
        lit = fmt_literal(a)
        if lit is not None:
            return lit
        nm = self.ns.name(f"_k{len(self.consts)}")
        self.consts[nm] = a
        return nm


_PLAIN = (Var, int, float, str, bool, type(None), torch.dtype)


def _node_symbols(n: Node, memo: dict[int, set[sympy.Symbol]] | None = None) -> set[sympy.Symbol]:
    """Symbols in a node's literal arguments (an isinstance check against sympy.Basic is slow:
    plain values are ruled out first). ``memo``: id(node) -> its symbols, for the passes of one
    ``lower`` (read-only)."""
    if memo is not None:
        got = memo.get(id(n))
        if got is None:
            got = memo[id(n)] = _node_symbols(n)
        return got
    out: set[sympy.Symbol] = set()
    _add_symbols(n.args, out)
    if n.kwargs:
        _add_symbols(list(n.kwargs.values()), out)
    return out


def _add_symbols(x: Any, out: set[sympy.Symbol]) -> None:
    """The symbols of ``x``'s extents into ``out`` (a module function: a recursive closure is a
    reference cycle per call, which kept each node's set alive for the collector)."""
    if isinstance(x, _PLAIN):
        return
    if isinstance(x, (tuple, list)):
        for y in x:
            _add_symbols(y, out)
    elif isinstance(x, sympy.Basic):
        out.update(x.free_symbols)


# ---------------------------------------------------------------------- the plan


@dataclass
class Plan:
    trace: Trace
    steps: list[Any]
    segments: list[Segment]
    emitted: dict[str, EmittedSegment]
    prologue: Prologue
    source: str
    executor: str
    decisions: dict[str, str]
    lower_seconds: float
    _fn: Callable = None  # type: ignore[assignment]
    _fusions: dict[str, _Fusion] = None  # type: ignore[assignment]
    #: outputs eager returns as views of an input or of one buffer that this plan returns as its own tensors (the
    #: view's geometry is symbolic): a caller that needs them as views specialises (``jit``)
    unserved_views: list[int] = None  # type: ignore[assignment]

    def __call__(self, *flat_inputs: Any) -> list:
        return self._fn(flat_inputs)

    def run_unchecked(self, flat_inputs: Any, env: dict) -> list:
        """Run with a symbol env from guards the caller has already checked (the plan cache)."""
        return self._fn(flat_inputs, env)

    def __str__(self) -> str:
        return self.source

    __repr__ = __str__

    def stats(self) -> dict[str, Any]:
        steps = [s for s in self.steps if isinstance(s, Fallback)]
        fb = [s for s in steps if s.reason != TORCH_VIEW]
        return {
            "segments": len(self.segments),
            "definitions": len({id(f.built) for f in self._fusions.values()}),
            "fused_ops": sum(len(s.nodes) for s in self.segments),
            "torch_views": len(steps) - len(fb),
            "fallback_ops": len(fb),
            "fallback_kinds": dict(Counter(s.node.op for s in fb)),
            "aliased_writebacks": sum(len(s.aliases) for s in self.segments),
            "copy_writebacks": sum(1 for s in self.steps if isinstance(s, WriteCopy)),
            "in_place_writebacks": sum(1 for s in fb if s.in_place is not None),
            "clones": sum(1 for s in self.steps if isinstance(s, Clone)),
            "guards": len(self.prologue.checks),
            "executor": self.executor,
        }

    def to_dot(self, hints: dict[str, int] | None = None, title: str = "") -> str:
        """The plan as a Graphviz graph (see lowering/dot.py)."""
        from .dot import plan_dot

        return plan_dot(self, hints, title)

    def definition(self, name: str) -> Callable:
        """The ``def segN(fd)`` function as the plan runs it (bound to the plan's executor)."""
        return self._fusions[name].define

    def build_definition(self, name: str, frontend: Any = None) -> Any:
        """Build segment ``name``'s FusionDefinition from its exact emitted text with ``frontend``
        (a module with ``FusionDefinition`` and ``DataType``: nvfuser_direct, or frontend_ref)."""
        return definition_from_text(self.emitted[name], frontend or frontend_ref)


def definition_from_text(emitted: EmittedSegment, frontend: Any) -> Any:
    """A segment's FusionDefinition built from its exact emitted text with ``frontend``."""
    ns: dict[str, Any] = {"DataType": frontend.DataType}
    exec(compile(emitted.source, f"<satfuse {emitted.name}>", "exec"), ns)
    fd = frontend.FusionDefinition()
    with fd:
        ns[emitted.name](fd)
    return fd


def lower(trace: Trace, *, hints: dict[str, int] | None = None, executor: str = "auto",
          checks: Sequence[DataCheck] = (), aliasing: Pattern = (),
          layouts: dict[int, tuple[tuple[int, ...], int]] | None = None) -> Plan:
    """Lower ``trace`` to an executable :class:`Plan` (see the module docstring).

    ``checks``: data checks to run before the first write (``checks.py``), besides the builtin ones.
    ``aliasing``: the memory-sharing pattern of the inputs it was traced on (``aliasing.pattern``),
    which the prologue requires of every call. ``layouts``: :func:`view_layouts` of the example
    inputs (outputs that are views of inputs are rebuilt at eager's geometry; the prologue checks
    those inputs keep their layout)."""
    t0 = time.perf_counter()
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if executor == "auto":  # any CUDA value: a program of creation ops alone has no CUDA input
        cuda = any(isinstance(v.type, TensorType) and v.type.device.startswith("cuda")
                   for v in [*trace.inputs, *(o for n in trace.nodes for o in n.outs)])
        executor = "nvfuser" if cuda and nvfuser_probe.probe().available else "reference"
    trace.lint()
    prologue = build_prologue(trace, hints, compile_fn=False, aliasing=aliasing, layouts=layouts)
    node_syms: dict[int, set[sympy.Symbol]] = {}  # each node's symbols, found once
    _check_bound(trace, set(prologue.symbols), node_syms)
    if any(isinstance(v.type, TensorType) and v.type.device.startswith("cuda") for v in trace.inputs):
        nodes, ob_checks = obligation_flags(trace, live_nodes(trace))  # counted inside a segment, no host sync
    else:
        nodes, ob_checks = live_nodes(trace), obligation_checks(trace)
    all_checks = [*builtin_checks(trace), *ob_checks, *checks]
    guarded = frozenset(id(c.guards) for c in all_checks if c.guards is not None)
    steps, barrier = place_checks(partition(trace, nodes, guarded), all_checks, trace.ranks)
    wb = plan_writebacks(trace, steps, barrier)
    segments = [s for s in wb.steps if isinstance(s, Segment)]
    for s in segments:
        s.predictor = functools.partial(predict, s, hints)

    # one namespace for the program (the prologue has its own, guards.py): globals first, then
    # the names write-backs chose for clones, then Vars (theirs where free) and symbols
    glob_names = {"prologue", "fusion", "DataType", "torch", "aten", "prims", "eager", "inplace", "laid_out", "dense",
                  "dtype_view", "inputs",
                  "env", "math", "true_div",
                  "__name__"} | {s.name for s in segments} | set(prologue.glob) | {
                      c.error.__name__ for st in wb.steps if isinstance(st, CheckStep) for c in st.checks}
    ns = Namespace(glob_names | {st.name for st in wb.steps if isinstance(st, Clone)})
    local_names: dict[int, str] = {}

    def local(v: Var) -> str:
        nm = local_names.get(id(v))
        if nm is None:
            nm = local_names[id(v)] = ns.name(v.name)
        return nm

    for v in trace.inputs:  # inputs first: their names are the ones a reader expects
        local(v)
    sym_local = {s: ns.name(s.name) for s in sorted(trace.symbols() | _all_symbols(trace, node_syms), key=lambda s: s.name)}
    emitted = {s.name: emit_segment(s, sym_local) for s in segments}
    consts: dict[str, Any] = {}
    r = _Render(sym_local, local, consts, ns)

    glob_errors: dict[str, type] = {}
    later_reads = {local(v) for s in wb.steps for v in _reads(s)} | {
        local(o) for o in trace.outputs if isinstance(o, Var) and id(o) not in wb.output_names}
    items: list[tuple[list[str], set[str], list[str]]] = []  # (lines, names read, names defined) per step
    commit: list[tuple[list[str], set[str], list[str]]] = []  # CUDA flag checks read just before returning
    used_syms: set[sympy.Symbol] = set()
    in_names = [local(v) for v in trace.inputs]
    eager_laid = _laid_out_as_eager(trace, wb.steps)
    for step in wb.steps:
        lines: list[str] = []
        reads: set[str] = set()
        defs: list[str] = []
        if isinstance(step, Segment):
            em = emitted[step.name]
            args = []
            for x in em.inputs:
                if isinstance(x, Var):
                    args.append(local(x))
                    reads.add(local(x))
                else:
                    used_syms |= x.free_symbols
                    args.append(pyexpr(x, sym_local))
            call = f"{step.name}.execute([{', '.join(args)}])"
            defs = [local(o) for o in em.outputs]
            lines.append(f"[{', '.join(defs)}] = {call}" if defs else call)
            for b, v in step.aliases:
                if local(v) in later_reads:
                    lines.append(f"{local(v)} = {local(b)}  # {local(b)} now holds {v.name} (written in place by "
                                 f"{step.name})")
                    defs.append(local(v))
        elif isinstance(step, Fallback):
            n = step.node
            used_syms |= _node_symbols(n, node_syms)
            reads |= {local(v) for v in n.inputs()}
            defs = [local(o) for o in n.outs]
            if is_opaque(n.op):
                eager_layouts = n.kwargs.get(EAGER_STRIDES, ())
                copies = n.kwargs.get(EAGER_COPIES, ())
                made = n.kwargs.get(EAGER_MADE, ())
                parts = [_operand(a, s, i in copies, eager_laid if i not in made else frozenset(), r)
                         for i, (a, s) in enumerate(itertools.zip_longest(n.args, eager_layouts[:len(n.args)]))]
                if parts and writes_first_operand(n.op):  # the program's in-place kernel, on a copy of its target
                    parts[0] = f"written({parts[0]})"
                parts += [f"{k}={r.value(v, 'list')}" for k, v in n.kwargs.items() if k not in EAGER_RECORDS]
                target = f"[{defs[0]}]" if len(defs) == 1 and _returns_list(n.op) else ", ".join(defs)
                # aten and prims are globals of the plan; any other library's ops by their full path
                callee = n.op if n.op.startswith(("aten.", "prims.")) else f"torch.ops.{n.op}"
                call = f"{callee}({', '.join(parts)})  # fallback: {step.reason}"
                lines.append(f"{target} = {call}" if defs else call)  # unbind of an empty dim returns nothing
            else:
                parts = [r.value(a) for a in n.args]
                if n.op in ("iota", "full"):
                    parts.append(f"device={n.out.type.device!r}")
                if step.in_place is not None:
                    lines.append(f"{', '.join(defs)} = inplace.{n.op}({', '.join(parts)})  # written in place: "
                                 f"{local(step.in_place)} now holds {n.out.name}")
                else:
                    what = "torch view" if step.reason == TORCH_VIEW else "fallback"
                    lines.append(f"{', '.join(defs)} = eager.{n.op}({', '.join(parts)})  # {what}: {_brief(step.reason)}")
        elif isinstance(step, WriteCopy):
            reads |= {local(step.buf), step.src}
            lines.append(f"{local(step.buf)}.copy_({step.src})  # write-back {step.buf.name} <- {step.val.name}: "
                         f"{step.reason}")
        elif isinstance(step, Clone):
            reads.add(local(step.var))
            defs = [step.name]
            lines.append(f"{step.name} = {local(step.var)}.clone()  # {step.reason}")
        elif isinstance(step, CheckStep):
            for c in step.checks:
                for a in flat_args(c.args):
                    if isinstance(a, sympy.Basic):
                        used_syms |= a.free_symbols
                glob_errors[c.error.__name__] = c.error
                if c.flag:  # CUDA: copy the device count without blocking; test it at the commit point
                    f = local(c.args[0])
                    reads.add(f)
                    lines.append(f"{f}_host = torch.empty((), dtype={f}.dtype, pin_memory=True).copy_({f}, "
                                 f"non_blocking=True); {f}_ready = torch.cuda.Event(); {f}_ready.record()"
                                 f"  # check ({c.source}): counted in the segment, read at the commit point")
                    wait = [f"{f}_ready.synchronize()",
                            c.render(lambda a, f=f: f + "_host" if a is c.args[0] else r.value(a))]
                    if trace.writebacks:  # before the first write (the check stage's barrier)
                        lines += wait
                        reads |= {local(v) for v in c.reads()[1:]}
                    else:  # no caller buffer is written: after every step is queued
                        commit.append((wait, {local(v) for v in c.reads()[1:]}, []))
                    continue
                for v in c.reads():
                    reads.add(local(v))
                lines.append(c.render(r.value) + (f"  # check ({c.source})" if c.source else ""))
        items.append((lines, reads, defs))
    items += commit
    _check_order(items, in_names)
    rets = []
    for o in trace.outputs:
        if isinstance(o, Var):
            rets.append(wb.output_names.get(id(o), local(o)))
        elif isinstance(o, sympy.Basic) and not o.is_number:
            used_syms |= o.free_symbols
            rets.append(pyexpr(o, sym_local))
        else:
            rets.append(r.value(o if not isinstance(o, sympy.Basic) else (int(o) if o.is_integer else float(o))))
    # drop intermediates after their last use (inputs and returned values are kept)
    last: dict[str, int] = {}
    for i, (_, reads, defs) in enumerate(items):
        for nm in defs:
            last.setdefault(nm, i)
        for nm in reads:
            last[nm] = i
    keep = set(in_names) | set(rets)
    dies: dict[int, list[str]] = {}  # step -> the names last used there (a scan of ``last`` per step was quadratic)
    for nm, j in last.items():
        if nm not in keep:
            dies.setdefault(j, []).append(nm)
    body: list[str] = []
    for i, (lines, _, defs) in enumerate(items):
        body += lines
        if i in dies:
            body.append(f"del {', '.join(sorted(dies[i]))}")
    unserved: list[int] = []
    body += _output_aliasing(trace, wb.steps, rets, in_names, ns, layouts or {}, unserved, wb.lives_in,
                             sym_local, used_syms, hints or {}, wb.may_alias)
    for i, method, margs in trace.restrides:  # last: nothing after it can fail
        body.append(f"{in_names[i]}.{method}({', '.join(map(repr, margs))})  # the program's in-place view op on "
                    f"input {trace.inputs[i].name}, replayed on the caller's tensor")
    body.append(f"return [{', '.join(rets)}]")
    head = ["if env is None:", "    env = prologue(inputs)"]
    if in_names:
        head.append(f"{', '.join(in_names)}{',' if len(in_names) == 1 else ''} = inputs")
    for s in sorted(used_syms, key=lambda s: s.name):
        head.append(f"{sym_local[s]} = env[{s.name!r}]")
    fname = ns.name(trace.name if trace.name.isidentifier() and not keyword.iskeyword(trace.name) else "computation")
    main = [f"def {fname}(inputs, env=None):"] + ["    " + x for x in head + body]

    n_views = sum(isinstance(s, Fallback) and s.reason == TORCH_VIEW for s in wb.steps)
    n_fb = sum(isinstance(s, Fallback) for s in wb.steps) - n_views
    prov = f"# satfuse plan: {len(segments)} segment(s), {n_fb} fallback op(s)" \
           f"{f', {n_views} torch view(s)' if n_views else ''}; " \
           f"nvFuser {NVFUSER_VERSION} (nvfuser_direct) mapping; executor: {executor}"
    parts = [prov, "", prologue.source.rstrip("\n"), ""]
    owners: dict[str, str] = {}  # definition_key -> the first segment with that definition
    # only segments whose line count and op list another segment shares can share its definition:
    # the key (a pass over the text) is taken for those alone (a 10k-op chain is one segment)
    outline = Counter(_outline(emitted[s.name].source) for s in segments)
    for s in segments:
        src = emitted[s.name].source
        owner = owners.setdefault(definition_key(src) if outline[_outline(src)] > 1 else s.name, s.name)
        if owner == s.name:
            parts += ["@fusion", emitted[s.name].source.rstrip("\n"), ""]
        else:
            parts += [f"{s.name} = fusion.shared({owner}, {s.name!r})  # {owner}'s definition, its names aside", ""]
    if wb.decisions:
        parts += ["# write-backs:"] + [f"#   {b}: {d}" for b, d in wb.decisions.items()] + [""]
    parts += main
    source = "\n".join(parts) + "\n"

    fe, real = _frontend(executor)
    plan_lines = source.splitlines()
    fusions: dict[str, _Fusion] = {}
    heads = {f"def {s.name}(fd):": s.name for s in segments}  # one pass (an index() per segment was quadratic)
    first_lines = {heads[ln]: k + 1 for k, ln in enumerate(plan_lines) if ln in heads}

    def fusion(define: Callable) -> _Fusion:
        name = define.__name__
        f = fusions[name] = _Fusion(define, fe, emitted[name], plan_lines, first_lines[name], real, _Built(), name)
        return f

    def shared(owner: _Fusion, name: str) -> _Fusion:
        """Segment ``name``, whose definition is ``owner``'s but for its names: one built definition."""
        f = fusions[name] = _Fusion(owner.define, fe, emitted[name], plan_lines, owner.first_line, real, owner.built,
                                    owner.owner)
        return f

    fusion.shared = shared  # type: ignore[attr-defined]

    glob: dict[str, Any] = {}
    glob.update(prologue.glob)
    glob.update({"fusion": fusion, "DataType": fe.DataType, "torch": torch,
                 "aten": torch.ops.aten, "prims": torch.ops.prims, "eager": EAGER, "inplace": IN_PLACE, "laid_out": laid_out,
                 "dense": dense, "written": written,
                 "dtype_view": dtype_view,
                 "__name__": "satfuse_plan"})
    glob.update(consts)
    for k, err in glob_errors.items():
        if glob.setdefault(k, err) is not err:
            raise LoweringError(f"check error type {k} clashes with a name of the plan")
    code = compile(source, "<satfuse plan>", "exec")
    exec(code, glob)
    prologue.fn = glob["prologue"]  # compiled with the plan: one compile, and the printed plan is what runs
    fn = glob[main[0][4:main[0].index("(")]]
    plan = Plan(trace, wb.steps, segments, emitted, prologue, source, executor, wb.decisions,
                time.perf_counter() - t0)
    plan._fn = fn
    plan._fusions = fusions
    plan.unserved_views = unserved
    log.lowering.info("lowered %s: %s (%.1f ms)", trace.name, plan.stats(), plan.lower_seconds * 1e3)
    log.lowering.debug("plan:\n%s", source)
    return plan


def _laid_out_as_eager(trace: Trace, steps: list[Any]) -> set[int]:
    """ids of the Vars the plan holds in eager's memory layout: the caller's tensors, what eager's
    own kernels (opaque ops) return, and torch views of those. A segment's output is laid out as
    its executor makes it (an ``expand`` of a value it computed, where eager had a contiguous
    tensor), and so is a view of one."""
    ok = {id(v) for v in trace.inputs}
    for st in steps:
        if isinstance(st, Fallback) and (is_opaque(st.node.op) or (
                st.reason == TORCH_VIEW and all(id(v) in ok for v in st.node.inputs()))):
            ok.update(id(o) for o in st.node.outs)
    return ok


def _operand(a: Any, strides: Any, copy: bool, eager_laid: set[int], r: "_Render") -> str:
    """An opaque op's operand, laid out as eager's kernel read it. Where the plan holds it as eager
    does (:func:`_laid_out_as_eager`) it is passed as it is, whatever capture recorded: a caller's
    tensor (or eager's view of one) is read as the caller lays it out at each call; the record is
    the example's layout, and ``laid_out`` to it took a stride-0 dim of the example for a
    broadcast and read one row of a later call's full tensor (``torch.maximum`` through one
    ``satfuse.jit`` fed OpInfo's samples in turn). A copy eager made and capture erased is laid
    out as the copy (``copy``); a value the plan computed as eager's record says, or contiguous
    where capture recorded nothing (``_dense``)."""
    if strides is None:
        return _dense(a, eager_laid, r)
    if not copy and isinstance(a, Var) and id(a) in eager_laid:
        return r.value(a, "list")
    return f"laid_out({r.value(a, 'list')}, {r.value(strides)})"


def _dense(a: Any, eager_laid: set[int], r: "_Render") -> str:
    """An opaque op's operand whose eager layout capture did not record (eager had it contiguous,
    or of one element): as it is where the plan holds it as eager did, else ``dense(...)``."""
    if isinstance(a, Var) and isinstance(a.type, TensorType) and id(a) not in eager_laid:
        return f"dense({r.value(a)})"
    if isinstance(a, (list, tuple)) and any(isinstance(x, Var) and id(x) not in eager_laid for x in a):
        inner = ", ".join(_dense(x, eager_laid, r) for x in a)
        return f"[{inner}]"
    return r.value(a, "list")


def _output_aliasing(trace: Trace, steps: list[Any], rets: list[str], in_names: list[str], ns: Namespace,
                     layouts: dict[int, Any], unserved: list[int], lives_in: dict[int, Var] | None = None,
                     sym_local: dict[sympy.Symbol, str] | None = None, used_syms: set | None = None,
                     hints: dict[str, int] | None = None, al: dict[int, frozenset[int]] | None = None) -> list[str]:
    """Lines that make the returned tensors alias exactly as eager's do (``trace.output_aliases``;
    empty: every output fresh). Rewrites ``rets`` in place.

    - fresh output: cloned when the plan's value may share memory with an input (``x * 1``
      extracted as ``x``, a view, a buffer written in place) or is returned at an earlier position
      too (``return x * 2, x * 2`` is two tensors);
    - ``OutputAlias("output", j)``: the very object returned at position ``j``;
    - ``OutputAlias("input", i)``: input ``i`` itself when the plan's value lives in it with the
      same shape (``x.add_(1); return x``); ``x.as_strided`` at eager's geometry where the input's
      layout at capture is known (``layouts``: guarded by the prologue; symbolic geometry is spelled
      in the symbols the prologue binds, ``sym_local``, and added to ``used_syms``); otherwise the plan's value,
      and ``k`` goes to ``unserved`` (as do ``OutputAlias("shared")`` outputs of symbolic geometry the
      plan cannot spell, or whose members overlap themselves: :func:`_shared_symbolic`). ``al``: the
      steps' ``may_alias``, where the write-back plan has it."""
    aliases = list(trace.output_aliases) or [None] * len(trace.outputs)
    if al is None:
        al = may_alias_nodes(trace, [n for s in steps for n in step_nodes(s)])
    inputs = set(in_names)
    clones = {s.name for s in steps if isinstance(s, Clone)}  # fresh tensors the plan made
    lines: list[str] = []
    seen: set[str] = set()
    prod = trace.producers()

    def chain(v: Var) -> list[Var]:  # v and the values its chain of views (vocabulary or torch views) starts from
        out = [v]
        while v in prod and prod[v].args and isinstance(prod[v].args[0], Var) and (
                prod[v].op in VIEW_OPS or (is_opaque(prod[v].op) and any(opaque_aliasing(prod[v].op)))):
            v = prod[v].args[0]
            out.append(v)
        return out

    def root(v: Var) -> Var:
        return chain(v)[-1]

    shared: dict[int, list[int]] = {}  # lead -> the positions of its group's members, in order (one scan)
    for j, b in enumerate(aliases):
        if b is not None and b.kind == "shared":
            shared.setdefault(b.index, []).append(j)
    roots: set[int] = set()
    for k, o in enumerate(trace.outputs):
        if not isinstance(o, Var) or not isinstance(o.type, TensorType):  # a number is a value, never an alias
            continue
        a = aliases[k] if k < len(aliases) else None
        name = rets[k]
        shares_output = id(root(o)) in roots  # a view of another output's value (where(c, t, t) as t.T)
        roots.add(id(root(o)))
        if a is None:
            # a value written into a caller's buffer, or a view of one (a cast on the way may be a view too)
            in_buffer = any(id(v) in (lives_in or {}) for v in chain(o))
            if name in inputs or name in seen or shares_output or ((al.get(id(o)) or in_buffer) and name not in clones):
                fresh = ns.name(name + "_out")
                lines.append(f"{fresh} = {name}.clone()  # eager returns a fresh tensor here")
                rets[k] = name = fresh
        elif a.kind == "output":
            rets[k] = name = rets[a.index]
        elif a.kind == "shared":
            members = shared[a.index]
            group = [aliases[j] for j in members]
            if not all(_concrete(b) for b in group):
                if not _shared_symbolic_ok(group, [trace.outputs[j] for j in members], sym_local or {}, hints or {}):
                    unserved.append(k)  # a buffer the plan cannot spell: it returns separate tensors
                elif a.index == k:
                    lines += _shared_symbolic(k, members, aliases, rets, ns, sym_local or {})
                    if used_syms is not None:
                        used_syms |= {s for b in group for e in (*b.size, *b.stride, b.storage_offset)
                                      if isinstance(e, sympy.Basic) for s in e.free_symbols}
            elif a.index == k:
                lines += _shared_buffer(k, members, aliases, trace.outputs, rets, ns)
            name = rets[k]
        elif a.kind == "input":
            x = in_names[a.index]
            src = trace.inputs[a.index]
            if _input_itself(trace, k, a):  # whichever buffer holds its value now (c.copy_(d); return d)
                rets[k] = name = x
            elif name != x and any(b is src for b, v in trace.writebacks if v is o) and tuple(
                    o.type.shape) == tuple(src.type.shape):
                rets[k] = name = x
            elif name != x and a.index in layouts and _spellable(a, sym_local or {}):
                view = ns.name(name + "_view")
                geo = [pyexpr(sympy.sympify(e), sym_local or {}) for e in (*a.size, *a.stride, a.storage_offset)]
                n = len(a.size)
                size, stride = (f"({', '.join(g)}{',' if len(g) == 1 else ''})" for g in (geo[:n], geo[n:2 * n]))
                base = x if o.type.dtype == src.type.dtype else f"dtype_view({x}, {DTYPES[o.type.dtype]})"
                lines.append(f"{view} = {base}.as_strided({size}, {stride}, {geo[-1]})"
                             f"  # eager returns this view of {x} (its layout is guarded)")
                if used_syms is not None:
                    used_syms |= {s for e in (*a.size, *a.stride, a.storage_offset)
                                  if isinstance(e, sympy.Basic) for s in e.free_symbols}
                rets[k] = name = view
            elif name != x:
                unserved.append(k)
        seen.add(name)
    restrided = {in_names[i] for i, *_ in trace.restrides}
    views_of_inputs = {k for k, a in enumerate(aliases) if a is not None and a.kind == "input" and not a.itself}
    for k, name in enumerate(rets):
        if name in restrided or (k in views_of_inputs and name in inputs):  # the caller's tensor changes its geometry last; eager's output keeps this one
            view = ns.name(name + "_view")
            lines.append(f"{view} = {name}.as_strided({name}.size(), {name}.stride(), {name}.storage_offset())"
                         f"  # a view of {name} at its geometry before the in-place view ops replayed below")
            rets[k] = view
    return lines


def _shared_buffer(lead: int, members: list[int], aliases: list[Any], outputs: list[Any], rets: list[str],
                   ns: Namespace) -> list[str]:
    """Outputs that eager returns as views of one intermediate (``OutputAlias("shared", lead)``):
    one fresh buffer spanning their geometry, each output a view of it holding its value (the
    values agree where the views overlap: they are one memory in eager too)."""
    if not all(isinstance(outputs[k], Var) for k in members):
        return []
    if len({outputs[k].type.dtype for k in members}) > 1:
        return _shared_buffer_in_bytes(lead, members, aliases, outputs, rets, ns)
    low = min(aliases[k].storage_offset for k in members)
    span = 1
    for k in members:
        a = aliases[k]
        if all(n > 0 for n in a.size):
            span = max(span, a.storage_offset - low + sum((n - 1) * abs(st) for n, st in zip(a.size, a.stride)) + 1)
    buf, lines = _one_buffer(rets[lead], span, ns, "")
    later: list[tuple[str, int]] = []
    # a member whose windows overlap (an unfold) cannot be written through with copy_: it is a
    # view without a write where a dense member's memory holds all of it (the values agree: one
    # memory in eager), else its values are scattered to the storage positions it addresses
    # (positions that address one element hold one value)
    dense = [k for k in members if _dense_span(aliases[k]) is not None]
    for k in members:
        a, view = aliases[k], ns.name(f"{buf}_{k}")
        covered = None
        geometry = f"{tuple(a.size)!r}, {tuple(a.stride)!r}, {a.storage_offset - low}"
        if _overlaps_itself(a):
            lo, hi = _extent(a)
            covered = any(_dense_span(aliases[j])[0] <= lo and hi <= _dense_span(aliases[j])[1] for j in dense)
            if not covered:
                lines.append(f"{buf}.index_put_((torch.arange({span}, device={buf}.device).as_strided({geometry}),), "
                             f"{rets[k]})  # its windows overlap: written by storage position")
        lines.append(f"{view} = {buf}.as_strided({geometry})")
        if covered is None:
            # an expanded member holds one element per stride-0 line: its value is written once
            one = "".join(f".narrow({d}, 0, 1)" for d, (n, st) in enumerate(zip(a.size, a.stride)) if st == 0 and n > 1)
            lines.append(f"{view}{one}.copy_({rets[k]}{one})")
        else:  # written through the members covering it, which come first
            later.append((view, k))
            continue
        rets[k] = view
    for view, k in later:
        rets[k] = view
    return lines


def _shared_symbolic_ok(group: list[Any], outputs: list[Any], sym_local: dict[sympy.Symbol, str],
                        hints: dict[str, int]) -> bool:
    """A group of outputs of symbolic geometry that one buffer can serve: one dtype, every extent
    spelled in symbols the prologue binds, and at the example sizes no member expanded or
    overlapping itself (views of a fresh dense tensor keep that at every size: only an expand
    or an unfold makes an element appear twice, and their strides and windows are literals)."""
    if len({o.type.dtype for o in outputs if isinstance(o, Var)}) != 1 or not all(isinstance(o, Var) for o in outputs):
        return False
    for b in group:
        if not _spellable(b, sym_local):
            return False
        try:
            at = [int(sympy.sympify(e).subs({s: hints[s.name] for s in sympy.sympify(e).free_symbols}))
                  for e in (*b.size, *b.stride, b.storage_offset)]
        except (KeyError, TypeError):
            return False
        n = len(b.size)
        size, stride = at[:n], at[n:2 * n]
        if any(st == 0 and m > 1 for m, st in zip(size, stride)) or any(
                st == 0 for m, st in zip(b.size, b.stride) if isinstance(m, sympy.Basic)) or _overlaps_itself(
                    dataclasses.replace(b, size=tuple(size), stride=tuple(stride), storage_offset=at[-1])):
            return False
    return True


def _shared_symbolic(lead: int, members: list[int], aliases: list[Any], rets: list[str], ns: Namespace,
                     sym_local: dict[sympy.Symbol, str]) -> list[str]:
    """:func:`_shared_buffer` for geometry of symbolic extents (:func:`_shared_symbolic_ok`): the
    buffer's span and lowest offset are computed from the call's sizes, each member a view of it
    written with its value."""

    def sp(e: Any) -> str:
        return pyexpr(sympy.sympify(e), sym_local)

    geo = {k: ([sp(e) for e in aliases[k].size], [sp(e) for e in aliases[k].stride], sp(aliases[k].storage_offset))
           for k in members}
    buf = ns.name(rets[lead] + "_shared")
    low = ns.name(f"{buf}_low")
    lines = [f"{low} = min({', '.join(geo[k][2] for k in members)}{',' if len(members) == 1 else ''})"]
    ends = []
    for k in members:
        size, stride, off = geo[k]
        reach = " + ".join([f"({off})", *(f"(({n}) - 1) * ({st})" for n, st in zip(size, stride))])
        nonzero = " and ".join(f"({n}) > 0" for n in size) or "True"
        ends.append(f"({reach} + 1 - {low} if {nonzero} else 1)")
    lines.append(f"{buf} = torch.empty((max(1, {', '.join(ends)}),), dtype={rets[lead]}.dtype, "
                 f"device={rets[lead]}.device)  # eager's outputs here are views of one tensor (its span from "
                 "this call's sizes)")
    def tup(xs: list[str]) -> str:
        return f"({', '.join(xs)}{',' if len(xs) == 1 else ''})"

    for k in members:
        size, stride, off = geo[k]
        view = ns.name(f"{buf}_{k}")
        lines.append(f"{view} = {buf}.as_strided({tup(size)}, {tup(stride)}, {off} - {low})")
        lines.append(f"{view}.copy_({rets[k]})")
        rets[k] = view
    return lines


def _one_buffer(lead: str, elements: int, ns: Namespace, note: str) -> tuple[str, list[str]]:
    """The fresh buffer of a group of outputs that are views of one tensor in eager: its name and
    the line that makes it (``lead``'s dtype and device)."""
    buf = ns.name(lead + "_shared")
    return buf, [f"{buf} = torch.empty(({elements},), dtype={lead}.dtype, device={lead}.device)"
                 f"  # eager's outputs here are views of one tensor{note}"]


def _shared_buffer_in_bytes(lead: int, members: list[int], aliases: list[Any], outputs: list[Any], rets: list[str],
                            ns: Namespace) -> list[str]:
    """:func:`_shared_buffer` for members of several dtypes (``y, torch.view_as_real(y)``): the
    buffer is laid out in bytes, each member a view of it read in its own dtype
    (``vocab.dtype_view``). Capture groups such members only where none holds an element twice,
    so each is written once with its value."""
    size = {k: DTYPES[outputs[k].type.dtype].itemsize for k in members}
    full = [k for k in members if all(n > 0 for n in aliases[k].size)]
    low = min((_extent(aliases[k])[0] * size[k] for k in full), default=0)
    span = max([size[lead]] + [(_extent(aliases[k])[1] + 1) * size[k] - low for k in full])
    buf, lines = _one_buffer(rets[lead], -(-span // size[lead]), ns, " (read in several dtypes)")
    for k in members:
        a, view = aliases[k], ns.name(f"{buf}_{k}")
        dt = outputs[k].type.dtype
        base = buf if dt == outputs[lead].type.dtype else f"dtype_view({buf}, {DTYPES[dt]})"
        lines.append(f"{view} = {base}.as_strided({tuple(a.size)!r}, {tuple(a.stride)!r}, "
                     f"{(a.storage_offset * size[k] - low) // size[k]})")
        one = "".join(f".narrow({d}, 0, 1)" for d, (n, st) in enumerate(zip(a.size, a.stride)) if st == 0 and n > 1)
        lines.append(f"{view}{one}.copy_({rets[k]}{one})")
        rets[k] = view
    return lines


def _extent(a: Any) -> tuple[int, int]:
    """Lowest and highest storage offset a view addresses."""
    lo = a.storage_offset + sum((n - 1) * st for n, st in zip(a.size, a.stride) if st < 0)
    hi = a.storage_offset + sum((n - 1) * st for n, st in zip(a.size, a.stride) if st > 0)
    return lo, hi


def _overlaps_itself(a: Any) -> bool:
    """Some element is addressed twice, besides stride-0 (expanded) dims: sorted by stride, each
    dim must step past everything the smaller dims cover (where that cannot be shown: True)."""
    dims = sorted((abs(st), n) for n, st in zip(a.size, a.stride) if n > 1 and st != 0)
    reach = 0
    for st, n in dims:
        if st <= reach:
            return True
        reach += (n - 1) * st
    return False


def _dense_span(a: Any) -> tuple[int, int] | None:
    """(lowest, highest) offset of a view holding every element between them once, else None."""
    if any(n == 0 for n in a.size) or any(st == 0 and n > 1 for n, st in zip(a.size, a.stride)) or _overlaps_itself(a):
        return None
    lo, hi = _extent(a)
    numel = 1
    for n in a.size:
        numel *= n
    return (lo, hi) if hi - lo + 1 == numel else None


def _spellable(a: Any, sym_local: dict[sympy.Symbol, str]) -> bool:
    """A view geometry the plan can spell: integers, or extents over symbols the prologue binds."""
    if a.size is None or a.stride is None:
        return False
    return all(isinstance(e, int) or (isinstance(e, sympy.Expr) and e.is_integer is not False
                                      and e.free_symbols <= set(sym_local))
               for e in (*a.size, *a.stride, a.storage_offset))


def _concrete(a: Any) -> bool:
    if a.size is None or a.stride is None:  # () is a 0-d view's geometry, not a missing one
        return False
    return all(isinstance(e, int) for e in (*a.size, *a.stride, a.storage_offset))


def _input_itself(trace: Trace, k: int, a: Any) -> bool:
    """Output ``k`` is, in eager, input ``a.index`` itself, and the trace returns that input's Var."""
    return a.itself and k < len(trace.outputs) and trace.outputs[k] is trace.inputs[a.index]


def view_layouts(trace: Trace, inputs: Sequence[Any]) -> dict[int, tuple[tuple[int, ...], int]]:
    """The layouts (strides, storage offset) of the inputs an output is a view of, read from the
    example ``inputs``: the plan rebuilds those views with ``as_strided`` at eager's geometry,
    which is exact while the input keeps the layout (the prologue checks it)."""
    out: dict[int, tuple[tuple[Any, ...], Any]] = {}
    for k, a in enumerate(trace.output_aliases):
        if a is None or a.kind != "input" or a.index >= len(inputs) or a.index in out:
            continue
        if _input_itself(trace, k, a):
            continue  # returned as it is (a value a forward saves for its backward): no layout to rebuild
        x, shape = inputs[a.index], trace.inputs[a.index].type.shape
        if a.index in trace.input_layouts:  # strides of its own, which the prologue binds
            out[a.index] = trace.input_layouts[a.index]
            continue
        try:
            stride, offset = tuple(int(s) for s in x.stride()), int(x.storage_offset())
        except Exception:  # noqa: BLE001 - symbolic layout: the plan's own value is returned
            continue
        dense = dense_order(tuple(int(n) for n in x.shape), stride) if offset == 0 else None
        if dense is not None:
            # capture's fake of a dense example (contiguous, or a permutation of a contiguous
            # tensor: ``t()``, ``permute``) has its strides spelled in its (maybe symbolic) sizes, in
            # the order of the example's strides, as eager's views are; the prologue checks them
            out[a.index] = (_strides_in_order(shape, dense, tuple(int(n) for n in x.shape), stride), 0)
        elif _concrete(a):
            out[a.index] = (stride, offset)
    return out


def _strides_in_order(shape: tuple[Any, ...], order: list[int], size: tuple[int, ...],
                      example: tuple[int, ...]) -> tuple[Any, ...]:
    """Dense strides of ``shape`` (the example's sizes: ``size``) with dims laid out innermost first in
    ``order``, as torch spells them; a size-1 dim whose example stride is not that product keeps
    its own (any stride lays it out)."""
    out: list[Any] = list(example)
    acc: Any = 1
    at = 1
    for i in order:
        if size[i] != 1 or example[i] == at:
            out[i] = acc
        acc, at = acc * shape[i], at * size[i]
    return tuple(out)


def _check_bound(trace: Trace, bound: set[str], memo: dict[int, set[sympy.Symbol]] | None = None) -> None:
    """Every symbol the program computes with must be bound by the prologue (an input)."""
    for n in trace.nodes:
        syms = set(_node_symbols(n, memo))
        for o in n.outs:
            syms |= o.type.symbols()
        free = sorted(s.name for s in syms if s.name not in bound)
        if free:
            raise LoweringError(f"node {', '.join(o.name for o in n.outs)} = {n.op}(...) uses {', '.join(free)}, which no "
                                "input binds (a data-dependent value such as .item()? capture must make it an "
                                "input, a guarded constant or an opaque op)")
    for o in trace.outputs:
        if isinstance(o, sympy.Basic) and {s.name for s in o.free_symbols} - bound:
            raise LoweringError(f"output {o} uses symbols no input binds")


def _check_order(items: list[tuple[list[str], set[str], list[str]]], in_names: list[str]) -> None:
    """Every statement reads only names defined before it (inputs or earlier statements): a plan
    out of dependency order would fail with UnboundLocalError on every call; say so now."""
    defined = set(in_names)
    for lines, reads, defs in items:
        missing = sorted(reads - defined)
        if missing:
            raise LoweringError(f"plan statement {lines[0].split('  #')[0]!r} reads {', '.join(missing)} before it is "
                                "defined (steps out of dependency order)")
        defined.update(defs)


def _all_symbols(trace: Trace, memo: dict[int, set[sympy.Symbol]] | None = None) -> set[sympy.Symbol]:
    out: set[sympy.Symbol] = set()
    for n in trace.nodes:
        out |= _node_symbols(n, memo)
        for o in n.outs:
            out |= o.type.symbols()
    for o in trace.outputs:
        if isinstance(o, sympy.Basic):
            out |= o.free_symbols
    return out


def _brief(reason: str) -> str:
    """'what; how to avoid it (source)' -> 'what (source)' for the one-line plan comment."""
    if ";" not in reason:
        return reason
    src = reason[reason.rfind(" ("):] if reason.endswith(")") else ""
    return reason.split(";")[0] + src


def _reads(step: Any) -> list[Var]:
    if isinstance(step, Segment):
        return list(step.inputs)
    if isinstance(step, Fallback):
        return step.node.inputs()
    if isinstance(step, WriteCopy):
        return [step.val]
    if isinstance(step, Clone):
        return [step.var]
    if isinstance(step, CheckStep):
        return step.inputs
    return []


__all__ = ["EXECUTORS", "GuardError", "LoweringError", "Plan", "SegmentError", "lower"]


@functools.cache
def _returns_list(op: str) -> bool:
    """Does the torch op return a list (``split`` into one piece still returns ``[t]``)? Asked
    per fallback step: an op's schema is fixed once it resolves."""
    returns = resolve_opaque(op)._schema.returns
    return len(returns) == 1 and str(returns[0].type).startswith("List[")
