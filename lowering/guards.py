"""The guard prologue: generated, readable Python that checks a call's inputs against
what the plan was built for and binds the symbols of dynamic extents.

``build_prologue(trace, hints)`` writes one function::

    def prologue(inputs):
        a, dim0, dim1 = inputs
        if not isinstance(a, Tensor): fail(0, inputs)
        if a.dtype is not f32: fail(1, inputs)
        ...
        s0, s1, s2 = a.shape          # binds the symbols of a's dims
        if not (s2 - s3 - s4 >= 0): fail(7, inputs)
        return {'s0': s0, ...}

It is compiled once; the hot path is plain Python (no sympy). A failed check raises
:class:`GuardError` whose message names the guard in terms of the caller's values
("a.shape[2] - dim0 - dim1 >= 0") and shows the values involved; the message is only
built on failure.

What is checked, in order: input kind (tensor / int / float / bool), dtype, device,
rank; which tensor inputs share memory (``aliasing.py``: the pattern the plan was built for);
static extents; symbols bound at their first occurrence (a tensor dim whose
extent is a bare symbol, or an int input whose value is a symbol) and every later
occurrence or compound extent checked equal; scalar constants; every predicate in
``trace.guards``; and extent obligations: every symbolic extent of every node's result
must be ``>= 0`` and every symbolic slice must lie inside its operand, so that a call
such as ``dim0 > a.size(2)`` fails here, before any kernel runs or any input is written.
No contiguity guards: segments make their inputs contiguous where nvFuser needs it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import sympy
import torch
import torch.utils._sympy.functions as tsf
from satfuse.engine.ir import DTYPES, Namespace, ScalarType, TensorType, Trace, Var
from sympy.core.relational import Relational

from .aliasing import Pattern, describe, guard_source, written_positions
from .aliasing import pattern as alias_pattern
from .obligations import shape_guards


class GuardError(ValueError):
    """A call does not satisfy the plan's guards; the message names the failing guard."""


class GuardBuildError(ValueError):
    """The prologue cannot be built (e.g. a symbol that no input binds)."""


# ---------------------------------------------------------------- symbolic expressions -> Python


class Unprintable(ValueError):
    pass


def true_div(a: float, b: float) -> float:
    """``a / b`` in IEEE doubles, as torch's symbolic floats compute it (C++): a zero divisor gives
    inf or nan where Python raises ZeroDivisionError."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def pyexpr(e: Any, names: dict[sympy.Symbol, str]) -> str:
    """A sympy int/bool expression as Python source, symbols spelled by ``names``."""
    return _P(names).p(e)


class _P:
    def __init__(self, names: dict[sympy.Symbol, str]):
        self.names = names

    def atom(self, e: Any) -> str:
        s = self.p(e)
        if isinstance(e, (sympy.Add, Relational, sympy.And, sympy.Or, tsf.FloorDiv, tsf.CleanDiv, tsf.PythonMod,
                          sympy.Mod, tsf.Mod)) or (
                isinstance(e, sympy.Mul) and e.as_coeff_Mul()[0] < 0) or (isinstance(e, (int, sympy.Integer)) and int(e) < 0):
            return f"({s})"
        return s

    def p(self, e: Any) -> str:
        if isinstance(e, bool) or e is sympy.true or e is sympy.false:
            return "True" if bool(e) else "False"
        if isinstance(e, int):
            return str(e)
        if isinstance(e, float):
            return repr(e) if math.isfinite(e) else f"float('{e}')"
        if isinstance(e, sympy.Integer):
            return str(int(e))
        if isinstance(e, sympy.Float):
            return repr(float(e))
        if isinstance(e, sympy.Symbol):
            if e not in self.names:
                raise Unprintable(f"symbol {e} is not bound")
            return self.names[e]
        if isinstance(e, sympy.Add):
            terms = e.as_ordered_terms()
            out = self.p(terms[0])
            for t in terms[1:]:
                c, _ = t.as_coeff_Mul()
                if c < 0:
                    out += " - " + self.atom_mul(-t)
                else:
                    out += " + " + self.atom_mul(t)
            return out
        if isinstance(e, sympy.Mul):
            c, rest = e.as_coeff_Mul()
            if c == -1:
                return "-" + self.atom(rest)
            if sympy.fraction(e)[1] != 1:
                raise Unprintable(f"true division in {e}")
            facs = [self.atom(f) for f in e.as_ordered_factors()]
            return "*".join(facs)
        if isinstance(e, sympy.Pow):
            b, x = e.args
            if x.is_Integer and int(x) > 0:
                return f"{self.tight(b)}**{int(x)}"
            raise Unprintable(f"power {e}")
        if isinstance(e, (tsf.FloorDiv, tsf.CleanDiv)):
            return f"{self.atom(e.args[0])} // {self.tight(e.args[1])}"
        if isinstance(e, tsf.CeilDiv):
            return f"(-(-{self.atom(e.args[0])} // {self.tight(e.args[1])}))"
        if isinstance(e, (tsf.PythonMod, sympy.Mod, tsf.Mod)):
            return f"{self.atom(e.args[0])} % {self.tight(e.args[1])}"
        if isinstance(e, sympy.floor) or isinstance(e, sympy.ceiling):
            num, den = sympy.fraction(sympy.together(e.args[0]))
            if den == 1:
                return self.p(num)
            if isinstance(e, sympy.floor):
                return f"({self.atom(num)} // {self.atom(den)})"
            return f"(-(-{self.atom(num)} // {self.atom(den)}))"
        if isinstance(e, (tsf.FloatPow, tsf.PowByNatural)):
            return f"{self.atom(e.args[0])} ** {self.atom(e.args[1])}"
        if isinstance(e, (tsf.FloatTrueDiv, tsf.IntTrueDiv)):
            return f"true_div({self.p(e.args[0])}, {self.p(e.args[1])})"
        if isinstance(e, tsf.ToFloat):
            return f"float({self.p(e.args[0])})"
        if isinstance(e, (tsf.TruncToInt, tsf.TruncToFloat)):
            return f"{'int' if isinstance(e, tsf.TruncToInt) else 'float'}(math.trunc({self.p(e.args[0])}))"
        if isinstance(e, (sympy.Max, tsf.Max)):
            return "max(" + ", ".join(self.p(a) for a in e.args) + ")"
        if isinstance(e, (sympy.Min, tsf.Min)):
            return "min(" + ", ".join(self.p(a) for a in e.args) + ")"
        if isinstance(e, Relational):
            op = {sympy.GreaterThan: ">=", sympy.StrictGreaterThan: ">", sympy.LessThan: "<=",
                  sympy.StrictLessThan: "<", sympy.Equality: "==", sympy.Unequality: "!="}.get(type(e))
            if op is None:
                raise Unprintable(f"relation {e}")
            return f"{self.p(e.lhs)} {op} {self.p(e.rhs)}"
        if isinstance(e, (sympy.And, sympy.Or)):
            sep = " and " if isinstance(e, sympy.And) else " or "
            return sep.join(self.p(a) if isinstance(a, Relational) else self.atom(a) for a in e.args)
        if isinstance(e, sympy.Not):
            return f"not ({self.p(e.args[0])})"
        raise Unprintable(f"cannot print {e!r} ({type(e).__name__}) as Python")

    def tight(self, e: Any) -> str:
        """An operand that binds at least as tightly as ``*``: the right side of ``%``, ``//``, ``/``
        (``a % (b*c)``, not ``a % b*c``, which Python reads as ``(a % b)*c``) and a power's base."""
        s = self.atom(e)
        if isinstance(e, (sympy.Mul, sympy.Pow, tsf.FloatPow, tsf.PowByNatural)):
            return f"({s})"
        return s

    def atom_mul(self, t: Any) -> str:
        s = self.p(t)
        return f"({s})" if isinstance(t, sympy.Add) else s


def relation_text(e: Any, names: dict[sympy.Symbol, str]) -> str:
    """Readable form of a guard; falls back to sympy's own text."""
    try:
        return pyexpr(e, names)
    except Unprintable:
        return sympy.sstr(e.xreplace({s: sympy.Symbol(n) for s, n in names.items()}))


# ---------------------------------------------------------------- the prologue


@dataclass
class Check:
    """One generated check: its Python condition and its readable text."""

    cond: str
    text: str
    inputs: tuple[int, ...]  # which inputs to show on failure
    explain: Callable[[list], str] | None = None  # the whole message on failure, from the inputs


@dataclass
class Prologue:
    """The generated guard function. ``fn(inputs) -> {symbol: int}``; raises GuardError."""

    source: str
    checks: list[Check]
    symbols: dict[str, str]  # symbol name -> where it is bound (readable)
    fn: Callable[[list], dict[str, int]] = field(repr=False, default=None)  # type: ignore[assignment]
    names: list[str] = field(default_factory=list)
    #: the names the source needs (its module globals)
    glob: dict[str, Any] = field(repr=False, default_factory=dict)

    def __call__(self, inputs: list | tuple) -> dict[str, int]:
        return self.fn(inputs)

    def __str__(self) -> str:
        return self.source


def _describe(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return f"{DTYPE_SHORT.get(v.dtype, v.dtype)}{tuple(v.shape)} on {v.device}"
    return f"{type(v).__name__} {v!r}"


DTYPE_SHORT = {v: k for k, v in DTYPES.items()}


def _conjunction(conds: Iterable[str]) -> str:
    return " and ".join(f"({c})" if " or " in c else c for c in conds)


def build_prologue(trace: Trace, hints: dict[str, int] | None = None, *, compile_fn: bool = True,
                   aliasing: Pattern = (), layouts: dict[int, tuple[tuple[int, ...], int]] | None = None) -> Prologue:
    """Generate and compile the guard prologue of ``trace`` (see the module docstring).

    ``aliasing``: the memory-sharing pattern of the inputs the plan was built for
    (``aliasing.pattern``; empty: every tensor input has its own memory). ``layouts``: input
    position -> (strides, storage offset) the plan relies on (an output rebuilt as a view of it).

    ``hints`` (symbol name -> example value, as capture records them) are used only for
    symbols that no input binds directly (they appear only inside compound extents): those
    are specialized to their hint, with a check that the compound extent matches.
    """
    hints = hints or {}
    ins = trace.inputs
    local: dict[sympy.Symbol, str] = {}  # symbol -> Python local holding its value
    shown: dict[sympy.Symbol, str] = {}  # symbol -> readable origin ("a.shape[2]", "dim0")
    # one namespace for every name of the generated function, its globals first: an input called
    # ``Tensor``, ``dt_f32`` or ``x_shape`` (beside ``x``) gets a local name of its own
    ns = Namespace(("inputs", "fail", "Tensor", "torch", "math", "true_div", "_alias_pattern", "_expected_aliasing"))
    py = [ns.name(v.name) for v in ins]  # each input's local name
    checks: list[Check] = []
    groups: list[list[Check]] = [[Check("", f"expected {len(ins)} inputs ({', '.join(v.name for v in ins)})", ())]]
    pending: list[Check] = []
    body: list[str] = []
    where: dict[str, str] = {}

    def check(cond: str, text: str, idx: tuple[int, ...], explain: Callable[[list], str] | None = None) -> None:
        c = Check(cond, text, idx, explain)
        pending.append(c)
        checks.append(c)

    def flush(comment: str = "", fast: str | None = None, emit: bool = True) -> None:
        """One ``if`` per group of checks (``fast``: an equivalent cheaper condition; ``emit``
        False: the group's test is already in the text, a loop's); on failure ``fail`` finds the
        first failing check of the group."""
        if not pending:
            return
        if emit:
            cond = fast or _conjunction(c.cond for c in pending)
            note = comment or (pending[0].text if len(pending) == 1 and pending[0].text != pending[0].cond else "")
            if note:
                body.append(f"    # {note}")
            body.append(f"    if not ({cond}):")
            body.append(f"        fail({len(groups)}, locals())")
        groups.append(list(pending))
        pending.clear()

    def sym_local(s: sympy.Symbol) -> str:
        return ns.name(s.name)

    def glob_name(hint: str, value: Any) -> str:
        for k, v in glob.items():
            if v is value and k.startswith(hint):
                return k
        k = ns.name(hint)
        glob[k] = value
        return k

    # 1. kinds, dtypes, devices, ranks
    n = len(ins)
    body.append(f"    if len(inputs) != {n}:")
    body.append("        fail(0, locals())")
    body.append(f"    {', '.join(py)}{',' if n == 1 else ''} = inputs" if n else "    pass")
    glob: dict[str, Any] = {"Tensor": torch.Tensor, "torch": torch, "math": math, "true_div": true_div}

    def kind(v: Var, x: str, shape: str | None = None) -> tuple[list[tuple[str, str]], str | None] | None:
        """Input ``v``'s kind, dtype, device and rank (or static shape) tests on the local ``x``:
        (condition, text) pairs and the one equivalent condition that replaces them, if any (with
        ``shape`` spelling a static shape in it)."""
        t = v.type
        out: list[tuple[str, str]] = []
        if isinstance(t, TensorType):
            out.append((f"isinstance({x}, Tensor)", f"{v.name} is a tensor"))
            dt = glob_name(f"dt_{t.dtype}", DTYPES[t.dtype])
            out.append((f"{x}.dtype is {dt}", f"{v.name}.dtype == {DTYPES[t.dtype]}"))
            dev = torch.device(t.device)
            if dev.type in ("cpu", "cuda") and dev.index in (None, 0):
                cond = f"{x}.is_{dev.type}" + (f" and {x}.get_device() == 0" if dev.index == 0 else "")
                out.append((cond, f"{v.name}.device is {dev}"))
            elif dev.index is None:
                out.append((f"{x}.device.type == {dev.type!r}", f"{v.name}.device is {dev.type}"))
            else:
                dn = glob_name(f"dev_{dev.type}{dev.index}", dev)
                out.append((f"{x}.device == {dn}", f"{v.name}.device is {dev}"))
            out.append((f"{x}.dim() == {t.rank}", f"{v.name}.dim() == {t.rank}"))
            if t.rank and all(isinstance(e, int) for e in t.shape):
                # a static shape joins its input's group: one test per input, which the size
                # equality makes stronger than the rank's (an optimizer step has thousands of inputs)
                kinds = [c for c, _ in out[:-1]]  # all but the rank's test
                out += [(f"{x}.shape[{d}] == {e}", f"{v.name}.shape[{d}] == {e}") for d, e in enumerate(t.shape)]
                return out, _conjunction([*kinds, f"{x}.shape == {shape or tuple(t.shape)}"])
            return out, None
        if isinstance(t, ScalarType):
            if t.kind == "int":
                out.append((f"isinstance({x}, int) and not isinstance({x}, bool)", f"{v.name} is an int"))
            elif t.kind == "float":  # an int is not a float: torch promotes them differently (x / 2 vs x / 2.0)
                out.append((f"isinstance({x}, float)", f"{v.name} is a float"))
            else:
                out.append((f"isinstance({x}, bool)", f"{v.name} is a bool"))
            return out, None
        return None

    # one ``if`` per input; a run of inputs with the same tests but maybe for their static shapes
    # (an optimizer's or a model's thousands of parameters) is one loop over them, checking each
    # input as its own ``if`` would (its own group, so ``fail`` names it): the prologue's text,
    # and its compile time, stay small
    runs: list[list[tuple[int, list[tuple[str, str]], str | None, str]]] = []
    keys: dict[Any, str] = {}  # type -> its tests on a placeholder name: the loop's test
    for i, v in enumerate(ins):
        tests = kind(v, py[i])
        if tests is None:
            continue
        key = keys.get(v.type)
        if key is None:
            tmpl = kind(v, _EACH, _EACH_SHAPE)
            assert tmpl is not None
            key = keys[v.type] = tmpl[1] or _conjunction(c for c, _ in tmpl[0])
        if runs and runs[-1][-1][3] == key and runs[-1][-1][0] == i - 1:
            runs[-1].append((i, *tests, key))
        else:
            runs.append([(i, *tests, key)])
    for run in runs:
        if len(run) >= _LOOP_RUN:
            _loop(body, run, ins, len(groups))
        for i, tests, fast, _ in run:
            for c, text in tests:
                check(c, text, (i,))
            flush(f"{ins[i].name}: {ins[i].type}", fast=fast, emit=len(run) < _LOOP_RUN)
    # 1b. memory sharing between tensor inputs, and self-overlap of written ones (aliasing.py)
    tensor_ins = [(i, py[i]) for i, v in enumerate(ins) if isinstance(v.type, TensorType)]
    written = written_positions(trace)
    cond = guard_source(tensor_ins, written, aliasing)
    if cond != "True":
        names = [v.name for v in ins]
        glob["_alias_pattern"] = alias_pattern
        glob["_expected_aliasing"] = aliasing

        def explain(inputs: list) -> str:
            got = alias_pattern(inputs, written)
            return (f"guard failed: input aliasing differs from the plan's: the plan was built for "
                    f"{describe(aliasing, names)}; this call has {describe(got, names)}")

        check(cond, f"input aliasing: {describe(aliasing, names)}", tuple(i for i, _ in tensor_ins), explain)
        flush()
    symbolic_layouts = {i: lay for i, lay in (layouts or {}).items()
                        if not all(isinstance(e, int) for e in (*lay[0], lay[1]))}
    for i, (stride, offset) in sorted((layouts or {}).items()):
        if i in symbolic_layouts:
            continue  # checked once the prologue binds the symbols of its extents (below)
        v = ins[i]
        check(f"{py[i]}.stride() == {stride!r} and {py[i]}.storage_offset() == {offset}",
              f"{v.name} has strides {stride} and storage offset {offset} (a returned view of it is rebuilt)", (i,))
        flush()
    # 2. static extents, symbol binding, equalities
    deferred: list[tuple[Any, str, str, int]] = []  # (expr, python value, readable, input)

    def bind(e: Any, val: str, rd: str, i: int) -> None:
        """An extent read off input ``i`` (``val``): checked (an int), bound (a symbol seen first)
        or left for later (an expression)."""
        if isinstance(e, int):
            check(f"{val} == {e}", f"{rd} == {e}", (i,))
        elif isinstance(e, sympy.Symbol) and e not in local:
            local[e] = sym_local(e)
            shown[e] = rd
            where[e.name] = rd
            body.append(f"    {local[e]} = {val}")
        else:
            deferred.append((e, val, rd, i))

    for i, v in enumerate(ins):
        t = v.type
        if isinstance(t, TensorType):
            if t.rank == 0:
                continue
            if all(isinstance(e, int) for e in t.shape):
                continue  # checked with its kind (above)
            sh = ns.name(f"{v.name}_shape")
            body.append(f"    {sh} = {py[i]}.shape")
            for d, e in enumerate(t.shape):
                bind(e, f"{sh}[{d}]", f"{v.name}.shape[{d}]", i)
            flush()
        elif isinstance(t, ScalarType) and t.value is not None:
            e = t.value
            if isinstance(e, sympy.Symbol) and e not in local:
                local[e] = sym_local(e)
                shown[e] = v.name
                where[e.name] = v.name
                body.append(f"    {local[e]} = {py[i]}")
            elif isinstance(e, sympy.Expr) and not e.is_number:
                deferred.append((e, py[i], v.name, i))
            else:
                lit = repr(bool(e)) if t.kind == "bool" else (repr(int(e)) if t.kind == "int" else _flit(float(e)))
                if t.kind == "float" and math.isnan(float(e)):
                    check(f"{py[i]} != {py[i]}", f"{v.name} is nan", (i,))
                elif t.kind == "float" and float(e) == 0.0:  # the sign of zero picks x / 0.0 = +-inf
                    sign = math.copysign(1.0, float(e))
                    check(f"{py[i]} == 0.0 and math.copysign(1.0, {py[i]}) == {sign!r}", f"{v.name} == {lit}", (i,))
                else:
                    check(f"{py[i]} == {lit}", f"{v.name} == {lit}", (i,))
                flush()
    # the layout symbols of strided / offset inputs (``Trace.input_layouts``), bound like sizes
    for i, (strides, offset) in sorted(trace.input_layouts.items()):
        if all(isinstance(e, int) for e in (*strides, offset)):
            continue  # nothing to bind: checked above where the plan relies on it (``layouts``)
        v = ins[i]
        st = ns.name(f"{v.name}_stride")
        body.append(f"    {st} = {py[i]}.stride()")
        for d, e in enumerate(strides):
            bind(e, f"{st}[{d}]", f"{v.name}.stride({d})", i)
        bind(offset, f"{py[i]}.storage_offset()", f"{v.name}.storage_offset()", i)
        flush()
    # symbols seen only inside compound extents: specialize to their hints
    holders = _holders(ins)
    for e, *_ in deferred:
        for s in sorted(e.free_symbols, key=lambda s: s.name):
            if s not in local:
                if s.name not in hints:
                    raise GuardBuildError(f"symbol {s} appears only in the compound extent {e} and has no hint: "
                                          "no input binds it")
                local[s] = sym_local(s)
                shown[s] = f"{s.name} (specialized to {hints[s.name]})"
                where[s.name] = f"specialized to its hint {hints[s.name]}"
                body.append(f"    {local[s]} = {int(hints[s.name])}")
    for e, val, rd, i in deferred:
        check(f"{val} == {pyexpr(e, local)}", f"{rd} == {relation_text(e, shown)}", _inputs_of(e, i, holders))
    flush()
    for i, (stride, offset) in sorted(symbolic_layouts.items()):
        if trace.input_layouts.get(i) == (stride, offset):
            continue  # bound and checked with the input's own layout symbols above
        _need_bound(sympy.Tuple(*stride, offset), local, "input layout")
        spelled = ", ".join(pyexpr(sympy.sympify(e), local) for e in stride)
        check(f"{py[i]}.stride() == ({spelled}{',' if len(stride) == 1 else ''}) and {py[i]}.storage_offset() == "
              f"{pyexpr(sympy.sympify(offset), local)}",
              f"{ins[i].name} has strides ({spelled}{',' if len(stride) == 1 else ''}) and storage offset "
              f"{pyexpr(sympy.sympify(offset), local)} (a returned view of it is rebuilt from its extents)", (i,))
        flush()
    # 3. predicates from capture / rules, then extent obligations
    seen: set = set()
    for g in trace.guards:
        if g is sympy.true or g in seen:
            continue
        seen.add(g)
        if g is sympy.false:
            check("False", "the plan is never valid (guard is False)", ())
            flush()
            continue
        _need_bound(g, local, "trace guard")
        check(pyexpr(g, local), relation_text(g, shown), _inputs_of(g, None, holders))
        flush()
    for ob in extent_obligations(trace):
        if ob in seen:
            continue
        seen.add(ob)
        _need_bound(ob, local, "extent obligation")
        check(pyexpr(ob, local), relation_text(ob, shown), _inputs_of(ob, None, holders))
        flush()
    for g, ob in shape_guards(trace):  # the shape obligations of the rules behind the chosen nodes
        if g in seen:
            continue
        seen.add(g)
        why = f" (obligation {ob.kind!r} of rule {', '.join(ob.rules)})"
        if g is sympy.false:
            check("False", f"the plan is never valid{why}", ())
        else:
            _need_bound(g, local, "rule obligation")
            check(pyexpr(g, local), relation_text(g, shown) + why, _inputs_of(g, None, holders))
        flush()
    syms = sorted(local, key=lambda s: s.name)
    body.append("    return {" + ", ".join(f"{s.name!r}: {local[s]}" for s in syms) + "}")
    if any(len(run) >= _LOOP_RUN for run in runs):  # the loops' names, taken last: no other name moves
        each, each_k, each_shape = ns.name("x"), ns.name("k"), ns.name("shape")
        body = [b.replace(_EACH, each).replace(_EACH_K, each_k).replace(_EACH_SHAPE, each_shape) for b in body]
    src = "def prologue(inputs):\n" + "\n".join(body) + "\n"
    if any("//" in line or " % " in line for line in body):
        # a guard's ``//`` or ``%`` by an extent that is 0 in this call (``x.chunk(3)`` on a size-0
        # dim) means the plan's assumption does not hold: a failed guard, not a ZeroDivisionError
        groups.append([Check("False", "the guards' arithmetic divides by zero for this call (an extent the "
                                      "plan assumes nonzero is 0)", ())])
        src = ("def prologue(inputs):\n    try:\n" + "\n".join("    " + b for b in body) +
               f"\n    except ZeroDivisionError:\n        fail({len(groups) - 1}, locals())\n")

    def fail(k: int, env: dict) -> None:
        """Cold path: find the first failing check of group ``k`` and say what it saw."""
        inputs = env["inputs"]
        if k == 0:
            raise GuardError(f"guard failed: {groups[0][0].text}, got {len(inputs)}")
        for c in groups[k]:
            try:
                ok = eval(c.cond, glob, env)
            except Exception:
                ok = False
            if not ok:
                break
        else:
            c = groups[k][0]
        if c.explain is not None:
            raise GuardError(c.explain(inputs))
        ctx = []
        for j in c.inputs:
            x = inputs[j]
            nm = ins[j].name
            if isinstance(ins[j].type, TensorType) and isinstance(x, torch.Tensor) and "shape" in c.text:
                ctx.append(f"{nm}.shape={tuple(x.shape)}")
            elif isinstance(x, torch.Tensor):
                ctx.append(f"{nm}: {_describe(x)}")
            else:
                ctx.append(f"{nm}={x!r}")
        raise GuardError(f"guard failed: {c.text}" + (f" ({', '.join(ctx)})" if ctx else ""))

    glob["fail"] = fail
    fn = None
    if compile_fn:  # lower() compiles it as part of the plan's program instead (once)
        exec(compile(src, "<satfuse prologue>", "exec"), glob)
        fn = glob["prologue"]
    pro = Prologue(src, checks, where, fn, [v.name for v in ins], glob)
    _check_hints(pro, trace, hints)
    return pro


#: placeholders for the names of a loop's variables (:func:`build_prologue`), chosen once the
#: prologue's other names are
_EACH, _EACH_K, _EACH_SHAPE = "\x00x", "\x00k", "\x00s"
#: inputs in a row with the same tests that are checked in a loop rather than one ``if`` each
_LOOP_RUN = 8


def _loop(body: list[str], run: list[tuple], ins: list[Var], group: int) -> None:
    """The loop checking a run of inputs (:func:`build_prologue`), its first one's group ``group``:
    the shape in its test where every input has that one, else each input's from a list."""
    first, last = run[0][0], run[-1][0]
    key = run[0][3]
    span = f"inputs {first}-{last} ({ins[first].name} to {ins[last].name})"
    each = f"enumerate(inputs[{first}:{last + 1}], {group})"
    shapes = [tuple(ins[i].type.shape) for i, *_ in run] if _EACH_SHAPE in key else []  # scalars have none
    if not shapes:  # no static shape in the tests
        body.append(f"    # {span}: {ins[first].type}")
    elif len(set(shapes)) == 1:
        key = key.replace(_EACH_SHAPE, repr(shapes[0]))
        body.append(f"    # {span}: {ins[first].type}")
    else:
        t = ins[first].type
        body.append(f"    # {span}: {t.dtype} tensors on {t.device}, each of its shape in the list")
        each = f"zip(range({group}, {group + len(run)}), inputs[{first}:{last + 1}], ({', '.join(map(repr, shapes))}))"
    head = f"{_EACH_K}, {_EACH}" + (f", {_EACH_SHAPE}" if _EACH_SHAPE in key else "")
    body.append(f"    for {head} in {each}:")
    body.append(f"        if not ({key}):")
    body.append(f"            fail({_EACH_K}, locals())")


def _flit(x: float) -> str:
    return repr(x) if math.isfinite(x) else f"float('{x}')"


def _need_bound(e: Any, local: dict, what: str) -> None:
    free = getattr(e, "free_symbols", set()) - set(local)
    if free:
        raise GuardBuildError(f"{what} {e} uses {sorted(map(str, free))}, which no input binds")


def _holders(ins: list[Var]) -> dict[Any, list[int]]:
    """symbol -> the positions of the inputs whose type holds it, in order (built once: a scan of
    every input per check was quadratic, 3 s of a 3k-op symbolic stack of blocks)."""
    out: dict[Any, list[int]] = {}
    for i, v in enumerate(ins):
        for s in v.type.symbols():
            out.setdefault(s, []).append(i)
    return out


def _inputs_of(e: Any, first: int | None, holders: dict[Any, list[int]]) -> tuple[int, ...]:
    """``first`` (if any), then the inputs holding a symbol of ``e``, in input order: the
    inputs a failing check names."""
    found = sorted({i for s in getattr(e, "free_symbols", ()) for i in holders.get(s, ())} - {first})
    return tuple(found) if first is None else (first, *found)


def extent_obligations(trace: Trace) -> list[Any]:
    """Facts every valid call must satisfy for the plan's types to be the runtime shapes:
    each symbolic extent of a node result is ``>= 0``; each symbolic slice lies in its operand.

    Each is normalized to ``e >= 0``; those implied by tensor dims being ``>= 0``, by other
    obligations on bare symbols, or equal to a trace guard are dropped."""
    known: set[sympy.Symbol] = set()
    for v in trace.inputs:
        if isinstance(v.type, TensorType):
            known |= {e for e in v.type.shape if isinstance(e, sympy.Symbol)}
    exprs: list[Any] = []

    def add(lhs: Any, rhs: Any) -> None:  # lhs <= rhs
        e = sympy.expand(sympy.sympify(rhs) - sympy.sympify(lhs))
        if e.is_number:
            return
        exprs.append(e)

    for n in trace.nodes:
        for o in n.outs:
            if isinstance(o.type, TensorType):
                for e in o.type.shape:
                    if isinstance(e, sympy.Expr):
                        add(0, e)
        if n.op == "slice" and isinstance(n.args[0], Var):
            shape = n.args[0].type.shape
            for ext, s, e in zip(shape, n.args[1], n.args[2]):
                if any(isinstance(x, sympy.Expr) for x in (ext, s, e)):
                    add(0, s)
                    add(s, e)
                    add(e, ext)
    have = set()
    for g in trace.guards:
        if isinstance(g, (sympy.GreaterThan, sympy.LessThan)):
            lhs, rhs = (g.rhs, g.lhs) if isinstance(g, sympy.GreaterThan) else (g.lhs, g.rhs)
            e = sympy.expand(rhs - lhs)
            have.add(e)
            if isinstance(e, sympy.Symbol):
                known.add(e)
    known |= {e for e in exprs if isinstance(e, sympy.Symbol)}

    def implied(e: Any) -> bool:
        terms = e.args if isinstance(e, sympy.Add) else (e,)
        for t in terms:
            c, rest = t.as_coeff_Mul()
            if t.is_number:
                if t < 0:
                    return False
            elif c < 0 or not (rest in known or (isinstance(rest, sympy.Mul) and all(f in known for f in rest.args))):
                return False
        return True

    # keep the strongest facts first (more symbols), drop what the kept ones imply; a fact is
    # tried against the guards and kept facts sharing a symbol with it (by symbol: trying every
    # one was quadratic in a symbolic stack's guards; one sharing none rarely implies it, and a
    # fact not dropped is only a check that holds)
    uniq = list(dict.fromkeys(exprs))
    dims = {e for v in trace.inputs if isinstance(v.type, TensorType) for e in v.type.shape}
    by_symbol: dict[sympy.Symbol, list[Any]] = {}

    def index(h: Any) -> None:
        if not isinstance(h, sympy.Symbol):
            for x in h.free_symbols:
                by_symbol.setdefault(x, []).append(h)

    for h in have:
        index(h)
    kept: set[Any] = set()
    for e in sorted(uniq, key=lambda e: -len(e.free_symbols)):
        if isinstance(e, sympy.Symbol):
            skip = e in have or e in dims
        else:
            near = dict.fromkeys(h for x in sorted(e.free_symbols, key=str) for h in by_symbol.get(x, ()))
            skip = e in have or implied(e) or any(implied(sympy.expand(e - h)) for h in near)
        if not skip:
            kept.add(e)
            index(e)
    return [sympy.Ge(e, 0) for e in uniq if e in kept]


def _check_hints(pro: Prologue, trace: Trace, hints: dict[str, int]) -> None:
    """A prologue whose own example (the hints) fails is a capture bug: say so at build time."""
    if not hints:
        return
    env = {sympy.Symbol(k, integer=True): v for k, v in hints.items()}
    for g in list(trace.guards):
        try:
            ok = bool(g.xreplace(env)) if hasattr(g, "xreplace") else bool(g)
        except TypeError:
            continue
        if not ok:
            raise GuardBuildError(f"the capture example violates its own guard {g} (hints {hints})")
