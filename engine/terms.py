"""Trace -> egglog terms (one small command per value, so parsing stays linear).

The k-th Var is named by the handle ``(Ref k)`` (``(union (Ref k) term)``), not by an egglog
``let``: a ``let`` declares a new global function (a table) per value, which costs time and
makes the e-graph's schema depend on the program, so a session could not be reused.
Every tensor term is seeded with its shape and dtype so rule conditions can read them;
outputs and write-backs become ``Root``s.
Opaque fallback nodes carry only their tensor operands into the e-graph: the rest of
their call (op, literal args, output types) stays in a side table keyed by a string.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import sympy

from .ir import IRError, Node, TensorType, Trace, Var
from .vocab import OPS, is_opaque, is_symbolic_float


class Slot:
    """Placeholder for the i-th tensor operand of an opaque call."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"Slot({self.i})"


@dataclass
class OpaqueCall:
    op: str
    args: Any
    kwargs: Any
    out_types: list


def opaque_template(n: Node) -> tuple[OpaqueCall, list[Var]]:
    """An opaque call with its tensor operands replaced by ``Slot(i)``, and those operands:
    the e-graph holds only the operands, the side table the rest of the call."""
    slots: list[Var] = []
    call = OpaqueCall(n.op, _template(n.args, slots), {k: _template(v, slots) for k, v in n.kwargs.items()},
                      [o.type for o in n.outs])
    return call, slots


def _template(a: Any, slots: list[Var]) -> Any:
    """``a`` with each Var replaced by its ``Slot`` (appended to ``slots``). A module function, not a
    closure: a recursive closure is a reference cycle, garbage the collector has to find, per call."""
    if isinstance(a, Var):
        slots.append(a)
        return Slot(len(slots) - 1)
    if isinstance(a, (tuple, list)):
        return type(a)(_template(x, slots) for x in a)
    return a


@dataclass
class Encoding:
    commands: list[str]
    ref: dict[int, int]  # id(Var) -> k of its handle (Ref k)
    #: the program's roots, outputs first then write-backs: (constructor, literal, k) = (Out i (Ref k))
    roots: list[tuple[str, int | str, int]]
    opaque: dict[str, OpaqueCall] = field(default_factory=dict)
    floats: dict[str, Any] = field(default_factory=dict)  # CSymFloat keys -> their expressions
    #: the same program as load-relation rows (engine/loader.py), when it is encoded that way
    tables: Any = None

    def ref_of(self, v: Var) -> int:
        return self.ref[id(v)]


def fmt_float(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    r = repr(float(f))
    return r if ("." in r or "e" in r or "inf" in r) else r + ".0"


def dim_term(e: Any) -> str:
    """sympy extent -> Dim term."""
    if isinstance(e, bool):
        raise IRError(f"bool {e} used as an extent")
    if isinstance(e, int):
        return f"(Num {e})"
    if isinstance(e, sympy.Integer):
        return f"(Num {int(e)})"
    if isinstance(e, sympy.Symbol):
        return f'(Sym "{e.name}")'
    if isinstance(e, sympy.Add):
        pos = [a for a in e.args if not _negative(a)]
        neg = [-a for a in e.args if _negative(a)]
        acc = dim_term(pos[0]) if pos else "(Num 0)"
        for a in pos[1:]:
            acc = f"(DAdd {acc} {dim_term(a)})"
        for a in neg:
            acc = f"(DSub {acc} {dim_term(a)})"
        return acc
    if isinstance(e, sympy.Mul):
        args = list(e.args)
        acc = dim_term(args[0])
        for a in args[1:]:
            acc = f"(DMul {acc} {dim_term(a)})"
        return acc
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) >= 1:
        acc = dim_term(e.base)
        for _ in range(int(e.exp) - 1):
            acc = f"(DMul {acc} {dim_term(e.base)})"
        return acc
    name = type(e).__name__
    if name in ("FloorDiv",) or isinstance(e, sympy.floor) and isinstance(e.args[0], sympy.Mul):
        a, b = e.args if name == "FloorDiv" else _floor_parts(e)
        return f"(DDiv {dim_term(a)} {dim_term(b)})"
    if name in ("Mod", "PythonMod"):
        return f"(DMod {dim_term(e.args[0])} {dim_term(e.args[1])})"
    if isinstance(e, (sympy.Min, sympy.Max)) or name in ("Min", "Max"):  # sympy's or torch's own
        tag = "DMin" if name == "Min" else "DMax"
        args = list(e.args)
        acc = dim_term(args[0])
        for a in args[1:]:
            acc = f"({tag} {acc} {dim_term(a)})"
        return acc
    raise IRError(f"extent {e} ({name}) has no e-graph form")


def _negative(a: sympy.Expr) -> bool:
    return a.could_extract_minus_sign()


def _floor_parts(e: sympy.Expr) -> tuple:
    num, den = sympy.fraction(e.args[0])
    return num, den


def dl_term(shape: tuple) -> str:
    acc = "(DNil)"
    for e in reversed(shape):
        acc = f"(DCons {dim_term(e)} {acc})"
    return acc


def il_term(xs: tuple) -> str:
    acc = "(INil)"
    for x in reversed(tuple(xs)):
        acc = f"(ICons {int(x)} {acc})"
    return acc


def egg_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Encoder:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.cmds: list[str] = []
        self.ref: dict[int, int] = {}
        self.opaque: dict[str, OpaqueCall] = {}
        self.floats: dict[str, Any] = {}

    def operand(self, a: Any) -> str:
        if isinstance(a, Var):
            return f"(Ref {self.ref[id(a)]})"
        if isinstance(a, bool):
            return f"(CBool {'true' if a else 'false'})"
        if isinstance(a, int):
            return f"(CInt {a})"
        if isinstance(a, float):
            return f"(CFloat {fmt_float(a)})"
        if isinstance(a, sympy.Expr):
            if a.is_Integer:
                return f"(CInt {int(a)})"
            if is_symbolic_float(a):
                key = f"f{len(self.floats)}"
                self.floats[key] = a
                return f"(CSymFloat {egg_string(key)})"
            return f"(CDim {dim_term(a)})"
        raise IRError(f"operand {a!r} has no e-graph form")

    def arg(self, kind: str, a: Any) -> str:
        if kind in ("T", "f"):
            return self.operand(a)
        if kind == "i":
            return str(int(a))
        if kind == "ints":
            return il_term(a)
        if kind == "shape":
            return dl_term(a)
        if kind == "x":
            return dim_term(a)
        if kind == "dtype":
            return egg_string(a)
        if kind == "Ts":
            acc = "(TNil)"
            for t in reversed(a):
                acc = f"(TCons {self.operand(t)} {acc})"
            return acc
        raise IRError(f"unknown argument kind {kind}")

    def define(self, v: Var, term: str) -> None:
        k = self.ref[id(v)] = len(self.ref)
        name = f"(Ref {k})"
        self.cmds.append(f"(union {name} {term})")
        if isinstance(v.type, TensorType):
            self.cmds.append(f"(union (shape {name}) {dl_term(v.type.shape)})")
            self.cmds.append(f"(set (dtype {name}) {egg_string(v.type.dtype)})")
            self.cmds.append(f"(set (rank {name}) {len(v.type.shape)})")

    def run(self) -> Encoding:
        tr = self.trace
        for v in tr.inputs:
            self.define(v, f"(Input {egg_string(v.name)})")
        for k, n in enumerate(tr.nodes):
            if is_opaque(n.op):
                key = f"k{k}"
                self.opaque[key], slots = opaque_template(n)
                tl = self.arg("Ts", slots)
                call = f"(Opaque {egg_string(key)} {tl})"
                for i, o in enumerate(n.outs):
                    self.define(o, f"(Proj {call} {i})")
                continue
            spec = OPS[n.op]
            parts = [self.arg(kind, a) for kind, a in zip(spec.sig, n.args)]
            self.define(n.out, f"({spec.egg} {' '.join(parts)})")
        roots: list[tuple[str, int | str, int]] = []
        for i, o in enumerate(tr.outputs):
            if isinstance(o, Var):
                roots.append(("Out", i, self.ref[id(o)]))
        for buf, val in tr.writebacks:
            roots.append(("WriteBack", buf.name, self.ref[id(val)]))
        for j, v in enumerate(tr.effects):  # an output past the program's own: kept, then dropped
            roots.append(("Out", len(tr.outputs) + j, self.ref[id(v)]))
        for ctor, lit, k in roots:
            self.cmds.append(f"({ctor} {lit if isinstance(lit, int) else egg_string(lit)} (Ref {k}))")
        return Encoding(self.cmds, self.ref, roots, self.opaque, self.floats)


def encode(trace: Trace) -> Encoding:
    return Encoder(trace).run()
