"""A lowered plan as a Graphviz graph: fusion segments as clusters of their ops, fallback
torch calls, clones and write-backs as their own nodes, program inputs and outputs, and
the bytes of every value that crosses a step boundary on its edge (what the plan moves
through memory). ``render`` turns DOT text into SVG with Graphviz's ``dot`` program.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import TYPE_CHECKING, Any

from satfuse.engine.costs import var_bytes
from satfuse.engine.ir import TensorType, Var

from .segments import Fallback, Segment
from .writeback import Clone, WriteCopy

if TYPE_CHECKING:
    from .plan import Plan


def quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _vtype(v: Var) -> str:
    return str(v.type) if isinstance(v.type, TensorType) else v.type.__class__.__name__


def plan_dot(plan: Plan, hints: dict[str, int] | None = None, title: str = "") -> str:
    """DOT text for ``plan``; extents of symbolic shapes take ``hints`` for the byte counts."""
    trace = plan.trace
    lines = ["digraph plan {", "  rankdir=TB; compound=true; fontname=Helvetica;",
             "  node [fontname=Helvetica fontsize=10]; edge [fontname=Helvetica fontsize=9];"]
    if title:
        lines.append(f"  label={quote(title)}; labelloc=t;")
    producer: dict[int, str] = {}  # id(var) -> graph node that makes it
    step_of: dict[str, str] = {}  # graph node -> the step it belongs to (for boundary edges)
    for i, v in enumerate(trace.inputs):
        nid = f"in{i}"
        lines.append(f"  {nid} [shape=ellipse style=filled fillcolor=\"#dde8f5\" "
                     f"label={quote(f'input {v.name}: {_vtype(v)}')}];")
        producer[id(v)] = nid
        step_of[nid] = "inputs"
    edges: list[str] = []
    moved: set[tuple[int, str]] = set()

    def edge(v: Any, dst: str, dst_step: str, extra: str = "") -> None:
        src = producer.get(id(v)) if isinstance(v, Var) else None
        if src is None:
            return
        attrs = []
        crossing = step_of.get(src) != dst_step
        if crossing and (id(v), dst_step) not in moved:  # the value goes through memory once per step reading it
            moved.add((id(v), dst_step))
            attrs.append(f"label={quote(f'{v.name} {human_bytes(var_bytes(v, hints))}')}")
        else:
            attrs.append("color=gray60")
        if extra:
            attrs.append(extra)
        edges.append(f"  {src} -> {dst} [{' '.join(attrs)}];")

    k = 0
    for step in plan.steps:
        if isinstance(step, Segment):
            lines.append(f"  subgraph cluster_{step.name} {{")
            lines.append(f"    label={quote(f'{step.name}: {len(step.nodes)} fused ops')}; style=rounded; "
                         f"color=\"#3b7dd8\";")
            for n in step.nodes:
                nid = f"n{k}"
                k += 1
                outs = ", ".join(o.name for o in n.outs)
                lines.append(f"    {nid} [shape=box style=rounded label={quote(f'{outs} = {n.op}')}];")
                for a in n.inputs():
                    edge(a, nid, step.name)
                for o in n.outs:
                    producer[id(o)] = nid
                step_of[nid] = step.name
            lines.append("  }")
            for buf, val in step.aliases:
                nid = f"wb{k}"
                k += 1
                lines.append(f"  {nid} [shape=cylinder style=filled fillcolor=\"#e6f2e6\" "
                             f"label={quote(f'{buf.name} <- {val.name} (in {step.name}, aliased)')}];")
                step_of[nid] = f"{nid}"
                edge(val, nid, nid)
        elif isinstance(step, Fallback):
            nid = f"n{k}"
            k += 1
            outs = ", ".join(o.name for o in step.node.outs)
            lines.append(f"  {nid} [shape=box style=filled fillcolor=\"#f8d7c4\" "
                         f"label={quote(f'{outs} = {step.node.op}  (torch: {step.reason})')}];")
            step_of[nid] = nid
            for a in step.node.inputs():
                edge(a, nid, nid)
            for o in step.node.outs:
                producer[id(o)] = nid
        elif isinstance(step, Clone):
            nid = f"c{k}"
            k += 1
            lines.append(f"  {nid} [shape=box style=dashed label={quote(f'{step.name} = clone({step.var.name}): {step.reason}')}];")
            step_of[nid] = nid
            edge(step.var, nid, nid)
        elif isinstance(step, WriteCopy):
            nid = f"wb{k}"
            k += 1
            lines.append(f"  {nid} [shape=cylinder style=filled fillcolor=\"#fbeec1\" "
                         f"label={quote(f'{step.buf.name} <- {step.src} (copy: {step.reason})')}];")
            step_of[nid] = nid
            edge(step.val, nid, nid)
    for i, o in enumerate(trace.outputs):
        nid = f"out{i}"
        name = o.name if isinstance(o, Var) else repr(o)
        lines.append(f"  {nid} [shape=doublecircle style=filled fillcolor=\"#dde8f5\" label={quote(f'output {i}: {name}')}];")
        step_of[nid] = "outputs"
        edge(o, nid, "outputs")
    return "\n".join(lines + edges + ["}"]) + "\n"


def dot_program() -> str | None:
    """The path of Graphviz's ``dot``, or None where it is not installed."""
    return shutil.which("dot")


def render(dot_text: str, fmt: str = "svg") -> bytes:
    """``dot_text`` rendered by Graphviz; RuntimeError with the reason where it cannot be."""
    exe = dot_program()
    if exe is None:
        raise RuntimeError("Graphviz's `dot` is not installed (Debian: apt-get install graphviz)")
    proc = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode(), capture_output=True, timeout=120)
    if proc.returncode:
        raise RuntimeError(f"dot failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout
