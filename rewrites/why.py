"""Why a rule did not fire: its nearest partial matches in a saturated e-graph.

For each direction of the rule, every e-node with the left side's head is a candidate.
The pattern is matched atom by atom (backtracking over the nodes of each class, keeping
the attempt that got furthest); once the left side matches, the rule's conditions are
checked in order against the e-graph's facts (analyses read off the shape lists, a pack's
relations from their rows). Candidates are ranked by how many atoms and conditions they
passed; for each, the report names the program value each atom matched (by trace line)
and the first atom or condition that failed, with the value it saw (``(= (ext i d) (Num 1))``
failed: ``ext(i, 1)`` is ``s0``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from satfuse.engine.egraph import EGraphView
from satfuse.engine.ir import FLOAT_DTYPES
from satfuse.engine.schema import ANALYSES, RELATIONS
from satfuse.engine.sexp import Str

from .ematch import _lit_eq
from .forcing import ProgramRun
from .forms import PRIMS, RuleForm

MAX_NODES_PER_CLASS = 16


def text(s: Any) -> str:
    """An s-expression as egglog text."""
    if isinstance(s, list):
        return "(" + " ".join(text(a) for a in s) + ")"
    if isinstance(s, Str):
        return '"' + s.value + '"'
    return str(s)


@dataclass
class Attempt:
    """How far one candidate got: bindings, atoms matched (atom text, class), first failure."""

    root: str  # the candidate e-node
    env: dict[str, Any] = field(default_factory=dict)
    matched: list[tuple[str, str]] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)  # conditions that held
    failed: str = ""

    @property
    def score(self) -> int:
        return len(self.matched) + len(self.conditions)


class Describer:
    """Program values by trace line, extents and shapes as text."""

    def __init__(self, run: ProgramRun) -> None:
        self.run = run
        self.view: EGraphView = run.view  # type: ignore[assignment]
        self.line_of: dict[str, str] = {}
        trace = run.trace
        if trace is None:
            return
        lines = str(trace).splitlines()
        where: dict[str, str] = {}
        for k, ln in enumerate(lines, 1):
            s = ln.strip()
            if s.startswith("def "):
                for v in trace.inputs:
                    where.setdefault(v.name, f"line {k}: input {v.name}: {v.type}")
            elif " = " in s:
                name = s.split(" = ", 1)[0].strip()
                where.setdefault(name, f"line {k}: {s}")
        for v in [*trace.inputs, *(o for n in trace.nodes for o in n.outs)]:
            c = run.var_class.get(id(v))
            if c is not None and v.name in where:
                self.line_of.setdefault(c, where[v.name])

    def value(self, cid: str) -> str:
        if self.view.is_primitive(cid):
            return repr(self.view.literal(cid))
        if cid in self.line_of:
            return self.line_of[cid]
        ct = self.view.class_type.get(cid, "")
        if ct == "Dim":
            return self.dim(cid)
        ops = sorted({self.view.nodes[n].op for n in self.view.classes.get(cid, ())})
        return f"a {ct or 'term'} only rules made ({', '.join(ops[:4])}{', ...' if len(ops) > 4 else ''})"

    def dim(self, cid: str, depth: int = 0) -> Any:
        """An extent class as an int or a symbolic expression in the program's symbols."""
        view = self.view
        nodes = [view.nodes[n] for n in view.classes.get(cid, ())]
        for op in ("Num", "Sym"):
            for n in nodes:
                if n.op == op:
                    return view.literal(n.children[0])
        if depth < 8:
            sym = {"DAdd": "+", "DSub": "-", "DMul": "*", "DDiv": "//", "DMod": "%"}
            for n in nodes:
                if n.op in sym:
                    a, b = (self.dim(c, depth + 1) for c in n.children)
                    return f"({a}{sym[n.op]}{b})"
        return f"extent class {cid}"

    def shape(self, t: str) -> tuple | None:
        """The shape list of a tensor class, as extents."""
        dl = self.view.shape_of.get(t)
        if dl is None:
            return None
        out = []
        for _ in range(64):
            nodes = [self.view.nodes[n] for n in self.view.classes.get(dl, ())]
            cons = next((n for n in nodes if n.op == "DCons"), None)
            if cons is None:
                return tuple(out) if any(n.op == "DNil" for n in nodes) else None
            out.append(self.dim(cons.children[0]))
            dl = cons.children[1]
        return None

    def dtype(self, t: str) -> str | None:
        types = self.run.class_types.get(t)
        return types[0].dtype if types else self.view.dtype_of.get(t)


# ====================================================================== matching atom by atom


def _is_var(s: Any) -> bool:
    return isinstance(s, str) and s not in ("true", "false")


def pmatch(d: Describer, s: Any, cid: str, a: Attempt) -> Attempt:
    """Match ``s`` at class ``cid``, extending ``a``; the furthest attempt when it fails."""
    view = d.view
    if _is_var(s):
        if s in a.env:
            if a.env[s] == cid:
                return a
            return _fail(a, f"{s} is {d.value(a.env[s])}, but here it would be {d.value(cid)}")
        return Attempt(a.root, {**a.env, s: cid}, a.matched + [(s, cid)], a.conditions)
    if not isinstance(s, list):
        lit = s.value if isinstance(s, Str) else (s == "true") if s in ("true", "false") else s
        if _lit_eq(view, cid, lit):
            return Attempt(a.root, a.env, a.matched + [(text(s), cid)], a.conditions)
        return _fail(a, f"{text(s)} failed: the value is {d.value(cid)}")
    head = s[0]
    if head in PRIMS or head in ANALYSES or head in RELATIONS:
        return a
    nodes = [n for n in view.classes.get(cid, ()) if view.nodes[n].op == head
             and len(view.nodes[n].children) == len(s) - 1][:MAX_NODES_PER_CLASS]
    if not nodes:
        ops = sorted({view.nodes[n].op for n in view.classes.get(cid, ())})
        return _fail(a, f"{text(s)} failed: {d.value(cid)} is not a {head} (its class holds {', '.join(ops[:6])})")
    best: Attempt | None = None
    for nid in nodes:
        cur = Attempt(a.root, a.env, a.matched + [(text(s), cid)], a.conditions)
        for arg, kid in zip(s[1:], view.nodes[nid].children):
            cur = pmatch(d, arg, kid, cur)
            if cur.failed:
                break
        if not cur.failed:
            return cur
        if best is None or cur.score > best.score:
            best = cur
    assert best is not None
    return best


def _fail(a: Attempt, why: str) -> Attempt:
    return Attempt(a.root, a.env, a.matched, a.conditions, why)


class _Undecided(Exception):
    pass


def gvalue(d: Describer, s: Any, env: dict[str, Any]) -> Any:
    """A condition's term over the e-graph: extents as ints or symbols, shapes as tuples,
    tensors as their class id."""
    if isinstance(s, Str):
        return s.value
    if isinstance(s, (int, float)):
        return s
    if _is_var(s):
        if s not in env:
            raise _Undecided(f"{s} is not bound")
        v = env[s]
        if isinstance(v, str) and v in d.view.class_type:
            ct = d.view.class_type[v]
            if d.view.is_primitive(v):
                return d.view.literal(v)
            if ct == "Dim":
                return d.dim(v)
        return v
    if s in ("true", "false"):
        return s == "true"
    head, args = s[0], s[1:]
    vals = [gvalue(d, x, env) for x in args]
    if head == "Num":
        return vals[0]
    if head in ("DNil", "INil"):
        return ()
    if head in ("DCons", "ICons"):
        return (vals[0], *vals[1])
    if head in ("shape", "rank", "ext"):
        sh = d.shape(vals[0])
        if sh is None:
            raise _Undecided(f"no shape is known for {d.value(vals[0])}")
        if head == "shape":
            return sh
        if head == "rank":
            return len(sh)
        if not -len(sh) <= vals[1] < len(sh):
            raise _Undecided(f"ext beyond rank {len(sh)}")
        return sh[vals[1]]
    if head == "dtype":
        dt = d.dtype(vals[0])
        if dt is None:
            raise _Undecided(f"no dtype is known for {d.value(vals[0])}")
        return dt
    ops = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}
    if head in ops and all(isinstance(v, int) for v in vals):
        return ops[head](*vals)
    raise _Undecided(f"{head} is not evaluated here")


def _show(s: Any, env: dict[str, Any], d: Describer) -> str:
    """``(ext i d)`` as ``ext(i, 1)`` with literal bindings filled in."""
    if isinstance(s, list) and s and s[0] in ANALYSES:
        args = []
        for x in s[1:]:
            if _is_var(x) and x in env and d.view.is_primitive(env[x]):
                args.append(repr(d.view.literal(env[x])))
            else:
                args.append(text(x))
        return f"{s[0]}({', '.join(args)})"
    return text(s)


def check_condition(d: Describer, cond: Any, a: Attempt, facts: dict[str, set[tuple]]) -> Attempt:
    """Check one condition against the e-graph; the attempt extended, or failed with the value seen."""
    env = a.env
    ct = text(cond)
    try:
        head = cond[0]
        if head == "=":
            x, y = cond[1], cond[2]
            for var, term in ((x, y), (y, x)):
                if _is_var(var) and var not in env and not (isinstance(term, list) and str(term[0])[:1].isupper()):
                    return Attempt(a.root, {**env, var: gvalue(d, term, env)}, a.matched, a.conditions + [ct])
            for var, term in ((x, y), (y, x)):  # (= f (Full s z t)): f must be that term
                if _is_var(var) and isinstance(term, list) and str(term[0])[:1].isupper():
                    if var not in env:
                        raise _Undecided(f"{var} is not bound")
                    got = pmatch(d, term, env[var], Attempt(a.root, env, a.matched, a.conditions))
                    if got.failed:
                        return _fail(got, f"{ct} failed: {got.failed}")
                    return Attempt(a.root, got.env, got.matched, a.conditions + [ct])
            vx, vy = gvalue(d, x, env), gvalue(d, y, env)
            if vx == vy:
                return Attempt(a.root, env, a.matched, a.conditions + [ct])
            return _fail(a, f"{ct} failed: {_show(x, env, d)} is {_fmt(vx, d)}, {_show(y, env, d)} is {_fmt(vy, d)}")
        if head in ("<", ">", "<=", ">=", "!="):
            vx, vy = gvalue(d, cond[1], env), gvalue(d, cond[2], env)
            ok = {"<": vx < vy, ">": vx > vy, "<=": vx <= vy, ">=": vx >= vy, "!=": vx != vy}[head]
            if ok:
                return Attempt(a.root, env, a.matched, a.conditions + [ct])
            return _fail(a, f"{ct} failed: {_fmt(vx, d)} {head} {_fmt(vy, d)} is false")
        if head == "is-float" and "is-float" not in facts:
            dt = gvalue(d, ["dtype", cond[1]], env)
            if dt in FLOAT_DTYPES:
                return Attempt(a.root, env, a.matched, a.conditions + [ct])
            return _fail(a, f"{ct} failed: the dtype of {cond[1]} is {dt}")
        rows = facts.get(head)
        if rows is None:
            raise _Undecided(f"the rows of {head} are not in the serialized e-graph")
        want = tuple(gvalue(d, x, env) for x in cond[1:])
        if want in rows:
            return Attempt(a.root, env, a.matched, a.conditions + [ct])
        names = {v: k for k, v in env.items() if isinstance(v, str) and not d.view.is_primitive(v)}

        def row(r: tuple) -> str:
            return "(" + " ".join([head, *(names.get(v, _fmt(v, d)) if isinstance(v, str) else str(v) for v in r)]) + ")"

        near = [r for r in rows if len(r) == len(want) and r[:2] == want[:2]] or [r for r in rows if r and r[0] == want[0]]
        hint = f"; it has {', '.join(row(r) for r in sorted(near, key=str)[:3])}" if near else ""
        return _fail(a, f"{ct} failed: no row {row(want)}{hint}")
    except _Undecided as e:
        return _fail(a, f"{ct}: undecided here ({e})")


def _fmt(v: Any, d: Describer) -> str:
    if isinstance(v, str) and v in d.view.class_type and not d.view.is_primitive(v):
        return d.value(v).split(": ", 1)[-1] if v in d.line_of else d.value(v)
    return str(v) if not isinstance(v, tuple) else "[" + ", ".join(str(x) for x in v) + "]"


# ====================================================================== the report


@dataclass
class WhyReport:
    rule: str
    where: str
    program: str
    fired: int
    candidates: int
    attempts: list[tuple[str, Attempt]]  # (direction, attempt), best first
    describer: Describer | None = None
    note: str = ""

    def render(self, top: int = 3) -> str:
        d = self.describer
        head = (f"rule {self.rule} ({self.where}) on {self.program}: "
                + (f"fired {self.fired} time(s)" if self.fired else "did not fire"))
        rows = [head]
        if self.note:
            rows.append("  " + self.note)
        if not self.attempts:
            return "\n".join(rows)
        shown = self.attempts[:top]
        rows.append(f"nearest partial matches ({len(shown)} of {self.candidates} candidates):")
        for k, (direction, a) in enumerate(shown, 1):
            root = d.view.nodes[a.root] if d else None
            at = d.value(root.eclass) if d and root else a.root
            rows.append(f" {k}. {direction + ' ' if direction else ''}at {at}")
            for atom, cid in a.matched:
                rows.append(f"      {atom:<28} -> {d.value(cid) if d else cid}")
            for c in a.conditions:
                rows.append(f"      {c:<28}    holds")
            rows.append(f"    first failure: {a.failed}" if a.failed else "    everything matched (the rule applies here)")
        return "\n".join(rows)


def why(form: RuleForm, run: ProgramRun, facts: dict[str, set[tuple]] | None = None) -> WhyReport:
    """The nearest partial matches of ``form`` in ``run``'s saturated e-graph."""
    fired = sum(v for k, v in run.matches.items() if k in (form.name, form.name + "=>", form.name + "<="))
    rep = WhyReport(form.name, form.info.where, run.program.name, fired, 0, [])
    if run.view is None:
        rep.note = f"the program did not saturate: {run.error}"
        return rep
    d = Describer(run)
    rep.describer = d
    facts = facts if facts is not None else {}
    for suffix, lhs, _ in form.sides:
        if not (isinstance(lhs, list) and lhs):
            continue
        roots = [nid for nid, n in d.view.nodes.items() if n.op == lhs[0]]
        rep.candidates += len(roots)
        for nid in roots[:400]:
            a = pmatch(d, lhs, d.view.nodes[nid].eclass, Attempt(nid))
            if not a.failed:
                for cond in form.conditions:
                    a = check_condition(d, cond, a, facts)
                    if a.failed:
                        break
            rep.attempts.append((suffix, a))
    if not rep.candidates:
        heads = ", ".join(sorted({text(lhs[0]) for _, lhs, _ in form.sides if isinstance(lhs, list) and lhs}))
        rep.note = f"the program has no {heads}: no e-node to start from"
    rep.attempts.sort(key=lambda x: (not x[1].failed, x[1].score), reverse=True)
    # one attempt per distinct outcome: many roots fail the same way
    seen: set[tuple] = set()
    uniq = []
    for direction, a in rep.attempts:
        key = (direction, tuple(c for _, c in a.matched[:1]), a.failed)
        if key not in seen:
            seen.add(key)
            uniq.append((direction, a))
    rep.attempts = uniq
    return rep


def why_dead(form: RuleForm, runs: Sequence[ProgramRun]) -> str:
    """For a rule that fired nowhere: its nearest partial match over the corpus, in a few lines."""
    best: WhyReport | None = None
    for run in runs:
        if run.view is None:
            continue
        rep = why(form, run, run.facts)
        if rep.attempts and (best is None or not best.attempts or rep.attempts[0][1].score > best.attempts[0][1].score):
            best = rep
    if best is None:
        return "no program of the corpus holds the head of its left side"
    return best.render(top=1)
