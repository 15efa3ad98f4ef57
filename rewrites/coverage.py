"""Rule coverage and soundness, measured over a corpus of programs.

For every rule of a catalogue this answers: did it fire on the corpus (from the per-rule
match counts of each program's ``SaturationReport``; a ``birewrite`` "p/x" reports
"p/x=>" and "p/x<="), how often and on which programs, which rules never fired (dead),
is it sound, and which guard obligations it attaches.

Soundness is a differential test with the rule *forced* into the plan. Each corpus
program is saturated once with every rule. For a rule R and a program where R fired,
the saturated e-graph is searched (here, in Python, over the serialized graph) for the
places where R applied: a match of R's left side whose e-class also holds R's right side
(or, for a right side that is a variable, the class that variable is bound to). The
extraction costs are then rewritten so that the plan must take R's right side there: R's
left-side nodes in those classes cost 1e12, R's right-side nodes cost 0, nodes that no
rule created keep their cost, and nodes other rules created cost 1e6 (so they are used
only where R's right side needs them). The plan is decoded and compared with the
original program on random inputs generated with hypothesis: symbolic extents at several
values (0 and 1 included when the program's guards allow), random values, and inf/NaN/-0
injected into float inputs; a failing example is shrunk and reported with shapes, values
and both results.

Helper rules that only derive relations (no union) have no right side to force; their
status is "facts" and they are checked through the rewrites that read them.

Guards: a rule states the obligations it relies on in a ``; guard: ...`` comment line
above it; rules without one report "none".
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import sympy
import torch
import torch.utils._pytree as pytree
from satfuse.engine.costs import CostModel
from satfuse.engine.decode import decode
from satfuse.engine.egraph import EGraphView
from satfuse.engine.extract import ExtractionError, check, class_infos, greedy_dag, node_costs, reachable
from satfuse.engine.interp import run_trace
from satfuse.engine.ir import IRError, ScalarType, TensorType, Trace
from satfuse.engine.session import Budget, RuleError, Session, Source
from satfuse.engine.vocab import OPS, is_opaque

from .packs import Catalogue, RuleInfo

#: egglog primitives and analysis constructors: inside a pattern they match anything
_PRIMS = {"+", "-", "*", "/", "%", "min", "max", "<", ">", "<=", ">=", "!=", "=", "and", "or", "not", "xor",
          "<<", ">>", "&", "|", "^", "abs", "neg", "log2", "to-f64", "to-i64", "vec-of", "set-of"}
_ANALYSIS = {"shape", "ext", "rank", "dtype", "bcast", "bdim"}
_ORIGINAL_ROOTS = {"Out", "WriteBack", "Input", "Opaque", "Proj"}
LHS_COST = 1e12
OTHER_RULE_COST = 1e6
MAX_MATCHES = 200


# ====================================================================== s-expressions


@dataclass(frozen=True)
class Str:
    value: str


def parse_sexp(text: str) -> Any:
    """One s-expression: lists, symbols (str), ints, floats and Str literals."""
    toks = re.findall(r'"(?:[^"\\]|\\.)*"|[()]|[^\s()]+', re.sub(r";[^\n]*", "", text))
    pos = 0

    def atom(t: str) -> Any:
        if t.startswith('"'):
            return Str(t[1:-1].replace('\\"', '"').replace("\\\\", "\\"))
        if re.fullmatch(r"-?\d+", t):
            return int(t)
        if re.fullmatch(r"-?(\d+\.\d*|\d*\.\d+)(e-?\d+)?|-?inf|NaN", t):
            return float(t.replace("NaN", "nan"))
        return t

    def rec() -> Any:
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t == "(":
            out = []
            while toks[pos] != ")":
                out.append(rec())
            pos += 1
            return out
        return atom(t)

    return rec()


def to_pattern(s: Any) -> tuple:
    """An egglog term as a pattern: ('var', n) | ('lit', v) | ('any',) | ('app', op, args)."""
    if isinstance(s, list):
        if not s:
            return ("any",)
        head = s[0]
        if not isinstance(head, str) or head in _PRIMS or head in _ANALYSIS:
            return ("any",)
        return ("app", head, tuple(to_pattern(a) for a in s[1:]))
    if isinstance(s, Str):
        return ("lit", s.value)
    if isinstance(s, (int, float)):
        return ("lit", s)
    if s in ("true", "false"):
        return ("lit", s == "true")
    return ("var", s)


@dataclass
class RuleForm:
    """A rule's left and right sides (per direction), its guards and its comment."""

    info: RuleInfo
    directions: list[tuple[str, tuple, tuple]]  # (report-key suffix, lhs, rhs)
    guards: list[str]
    doc: str
    note: str = ""  # why a rule has no direction to force

    @property
    def name(self) -> str:
        return self.info.name


def _keywords(form: list) -> dict[str, Any]:
    out: dict[str, Any] = {}
    i = 0
    while i < len(form):
        if isinstance(form[i], str) and form[i].startswith(":") and i + 1 < len(form):
            out[form[i]] = form[i + 1]
            i += 2
        else:
            i += 1
    return out


def rule_form(info: RuleInfo, source_lines: Sequence[str]) -> RuleForm:
    guards, doc = [], ""
    k = info.line - 2
    while k >= 0 and source_lines[k].lstrip().startswith(";"):
        text = source_lines[k].strip().lstrip(";").strip()
        if text.startswith("guard:"):
            guards.insert(0, text[len("guard:"):].strip())
        elif not doc and not text.startswith("="):
            doc = text
        k -= 1
    form = parse_sexp(info.text)
    dirs: list[tuple[str, tuple, tuple]] = []
    note = ""
    if info.kind == "rewrite":
        dirs = [("", to_pattern(form[1]), to_pattern(form[2]))]
    elif info.kind == "birewrite":
        dirs = [("=>", to_pattern(form[1]), to_pattern(form[2])), ("<=", to_pattern(form[2]), to_pattern(form[1]))]
    else:
        query, actions = form[1], form[2]
        binds = {}
        for atom in query:
            if isinstance(atom, list) and len(atom) == 3 and atom[0] == "=":
                a, b = atom[1], atom[2]
                if isinstance(a, str) and isinstance(b, list):
                    binds[a] = b
                elif isinstance(b, str) and isinstance(a, list):
                    binds[b] = a
        for act in actions if isinstance(actions, list) else []:
            if isinstance(act, list) and act and act[0] == "union":
                a, b = act[1], act[2]
                lhs = binds.get(a, a) if isinstance(a, str) else a
                rhs = binds.get(b, b) if isinstance(b, str) else b
                lp = to_pattern(lhs)
                if lp[0] == "app":
                    dirs.append(("", lp, to_pattern(rhs)))
                else:
                    note = "equates analysis facts (extents of a value); checked through the plans that read them"
        if not dirs and not note:
            note = "derives facts only (no union); checked through the rewrites that read them"
    return RuleForm(info, dirs, guards, doc, note)


# ====================================================================== matching over the serialized e-graph


def _lit_eq(view: EGraphView, cid: str, value: Any) -> bool:
    try:
        got = view.literal(cid)
    except (KeyError, ValueError):
        return False
    if isinstance(value, float) and math.isnan(value):
        return isinstance(got, float) and math.isnan(got)
    return got == value and isinstance(got, bool) == isinstance(value, bool)


def match(view: EGraphView, pat: tuple, cid: str, env: dict[str, str]) -> Iterator[tuple[dict[str, str], list[str]]]:
    """All (bindings, matched node ids) of ``pat`` at class ``cid``."""
    kind = pat[0]
    if kind == "any":
        yield env, []
    elif kind == "var":
        bound = env.get(pat[1])
        if bound is None:
            yield {**env, pat[1]: cid}, []
        elif bound == cid:
            yield env, []
    elif kind == "lit":
        if _lit_eq(view, cid, pat[1]):
            yield env, []
    else:
        _, op, args = pat
        for nid in view.classes.get(cid, ()):
            n = view.nodes[nid]
            if n.op == op and len(n.children) == len(args):
                yield from _match_args(view, args, n.children, 0, env, [nid])


def _match_args(view: EGraphView, args: tuple, kids: tuple, i: int, env: dict, acc: list) -> Iterator:
    if i == len(args):
        yield env, acc
        return
    for env2, nodes in match(view, args[i], kids[i], env):
        yield from _match_args(view, args, kids, i + 1, env2, acc + nodes)


@dataclass
class Application:
    """Where a rule applied in a saturated e-graph: the class, the left-side root node(s)
    and the right-side nodes (empty for a variable right side)."""

    eclass: str
    lhs_roots: set[str]
    rhs_nodes: set[str]


def applications(view: EGraphView, lhs: tuple, rhs: tuple) -> list[Application]:
    if lhs[0] != "app":
        return []
    out: dict[str, Application] = {}
    count = 0
    for nid, n in view.nodes.items():
        if n.op != lhs[1]:
            continue
        for env, nodes in _match_args(view, lhs[2], n.children, 0, {}, [nid]):
            count += 1
            if count > MAX_MATCHES:
                break
            k = n.eclass
            rhs_nodes: set[str] = set()
            hit = False
            if rhs[0] == "var":
                # a variable bound only in :when (e.g. cat-of-split's x): any other node of the class
                hit = env.get(rhs[1]) == k if rhs[1] in env else len(view.classes.get(k, ())) > 1
            elif rhs[0] == "app":
                for _, rn in match(view, rhs, k, env):
                    if nid not in rn:
                        hit = True
                        rhs_nodes |= set(rn)
                    if len(rhs_nodes) > 64:
                        break
            if hit:
                app = out.setdefault(k, Application(k, set(), set()))
                app.lhs_roots.add(nid)
                app.rhs_nodes |= rhs_nodes
    return list(out.values())


# ====================================================================== programs


@dataclass
class Program:
    """A named program: a function, a factory of example inputs, and whether extents are symbolic."""

    name: str
    fn: Callable[..., Any]
    make_inputs: Callable[[], tuple]
    dynamic: bool | Sequence[int] = False


@dataclass
class ProgramRun:
    program: Program
    trace: Trace | None = None
    hints: dict[str, int] = field(default_factory=dict)
    example: list[Any] = field(default_factory=list)
    matches: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    nodes: int = 0
    stop: list[str] = field(default_factory=list)
    error: str = ""
    conflicts: list[str] = field(default_factory=list)
    # saturated graph, for forcing rules
    view: EGraphView | None = None
    roots: list[str] = field(default_factory=list)
    var_class: dict[int, str] = field(default_factory=dict)
    enc: Any = None
    base_cost: dict[str, float] = field(default_factory=dict)
    original: set[str] = field(default_factory=set)


def builtin_corpus_path() -> Path:
    return Path(__file__).resolve().parent.parent / "tests" / "corpus" / "__init__.py"


def _import_file(path: Path, modname: str) -> Any:
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise RuleError(f"{path}: cannot import")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # a user's corpus file: say which one failed
        raise RuleError(f"{path}: importing the corpus failed: {type(e).__name__}: {e}") from e
    return mod


def _programs_of(mod: Any, path: Path) -> list[Program]:
    out: list[Program] = []
    if hasattr(mod, "CASES"):
        for c in mod.CASES:
            if isinstance(c, (tuple, list)):
                out.append(Program(c[0], c[1], c[2], c[3] if len(c) > 3 else False))
            else:
                out.append(Program(c.name, c.fn, c.make_inputs, getattr(c, "dynamic", False)))
    elif hasattr(mod, "program") and hasattr(mod, "example_inputs"):
        out.append(Program(path.stem, mod.program, lambda: tuple(mod.example_inputs()), getattr(mod, "dynamic", False)))
    else:
        raise RuleError(f"{path}: a corpus file defines CASES (a list of Case or (name, fn, make_inputs[, dynamic])) "
                        "or `program` and `example_inputs()`")
    return out


def load_corpus(paths: Iterable[str | Path] = (), builtin: bool = True) -> list[Program]:
    """The built-in corpus (tests/corpus) plus user corpus files or folders of them."""
    files: list[Path] = []
    if builtin:
        p = builtin_corpus_path()
        if not p.exists():
            raise RuleError(f"{p}: the built-in corpus is missing (run from a source checkout, or pass --corpus)")
        files.append(p)
    for q in paths:
        q = Path(q)
        if q.is_dir():
            files += sorted(f for f in q.glob("*.py") if not f.name.startswith("_"))
        elif q.exists():
            files.append(q)
        else:
            raise RuleError(f"{q}: no such corpus file or folder")
    out: list[Program] = []
    seen: set[str] = set()
    for i, f in enumerate(files):
        mod = _import_file(f, f"_satfuse_corpus_{i}_{re.sub(r'[^A-Za-z0-9_]', '_', f.stem)}")
        for prog in _programs_of(mod, f):
            name = prog.name if prog.name not in seen else f"{f.stem}.{prog.name}"
            seen.add(name)
            prog.name = name
            out.append(prog)
    return out


def flat_inputs(inputs: tuple) -> list[Any]:
    leaves, _ = pytree.tree_flatten((inputs, {}))
    return [x for x in leaves if isinstance(x, (torch.Tensor, int, float, bool))]


CONFLICT_RULE = "lang/dim-conflict"


def coverage_sources(cat: Catalogue) -> list[Source]:
    """The catalogue's sources for coverage runs. lang.egg records extent/rank conflicts as
    relations (rather than stopping), so an unsound rule that equates different shapes is
    reported with a counterexample by the differential test."""
    return list(cat.sources)


def isolated_sources(sources: Sequence[Source], cat: Catalogue, keep: RuleInfo) -> list[Source]:
    """``sources`` with every rule of a phase ruleset except ``keep`` blanked out (lines kept, so
    locations stay right): saturating with these runs only ``keep`` plus the analysis."""
    drop: dict[str, list[RuleInfo]] = {}
    for r in cat.rules:
        if r.name != keep.name and r.ruleset != "analysis":
            drop.setdefault(r.path, []).append(r)
    out = []
    for s in sources:
        text = s.text
        for r in drop.get(s.path, ()):
            text = text.replace(r.text, "\n" * r.text.count("\n"), 1)
        out.append(Source(s.path, text))
    return out


def run_program(prog: Program, sources: Sequence[Source], phases: Sequence[str], budget: Budget | None = None,
                like: ProgramRun | None = None) -> ProgramRun:
    """Capture ``prog`` (or reuse ``like``'s capture), saturate it and keep what forcing needs."""
    from satfuse.engine import capture

    run = ProgramRun(prog)
    if like is not None and like.trace is not None:
        run.trace, run.hints, run.example = like.trace, like.hints, like.example
    else:
        try:
            ex = prog.make_inputs()
            cap = capture(prog.fn, *ex, dynamic=prog.dynamic, name=prog.name)
        except Exception as e:
            run.error = f"capture failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            return run
        run.trace, run.hints, run.example = cap.trace, cap.symbol_hints, flat_inputs(prog.make_inputs())
    trace = run.trace
    t0 = time.perf_counter()
    try:
        sess = Session(sources)
        enc = sess.add_trace(trace)
        rep = sess.saturate(list(phases), budget)
        run.matches = {k: v for k, v in rep.matches.items() if v}
        run.stop = rep.hit_limit
        run.nodes = rep.nodes
        all_vars = [*trace.inputs, *(o for n in trace.nodes for o in n.outs)]
        data, run.roots, run.var_class = sess.serialize_program(enc, all_vars).parse()
        run.conflicts = _conflicts(sess)
    except RuleError as e:
        run.error = str(e)
        return run
    run.enc = enc
    view = EGraphView.from_json(data)
    run.view = view
    input_classes = {run.var_class[id(v)] for v in trace.inputs}
    infos = class_infos(view, run.hints, input_classes)
    run.base_cost = node_costs(view, CostModel("nvfuser", run.hints), infos)
    orig_pairs = {(run.var_class[id(n.out)], OPS[n.op].egg) for n in trace.nodes if not is_opaque(n.op)}
    run.original = {nid for nid, n in view.nodes.items()
                    if n.op in _ORIGINAL_ROOTS or (n.eclass, n.op) in orig_pairs}
    run.seconds = time.perf_counter() - t0
    return run


def _conflicts(sess: Session) -> list[str]:
    try:
        out = sess.run(["(print-function extent-conflict 20)"], "conflicts")
    except RuleError:
        return []
    text = " ".join(str(getattr(o, "text", o)) for o in out)
    found = [f"{a} vs {b}" for a, b in re.findall(r"\(extent-conflict (-?\d+) (-?\d+)\)", text)]
    try:
        out = sess.run(["(print-function rank-conflict 1)"], "conflicts")
        if "(rank-conflict" in " ".join(str(getattr(o, "text", o)) for o in out):
            found.append("a shape list vs the empty list (ranks differ)")
    except RuleError:
        pass
    return found


# ====================================================================== forcing a rule into a plan


def forced_plan(run: ProgramRun, lhs: tuple, rhs: tuple, route: bool = False) -> tuple[Trace | None, str]:
    """The plan that takes ``lhs -> rhs`` wherever it applied in ``run``'s e-graph, or (None, why).

    ``route``: also steer every class that can reach an application toward it (its nodes
    whose children lead there keep their cost, the others cost 1e9), so a rule that
    applied deep inside other rules' rewrites (a take pushed through a chain) is used."""
    view = run.view
    assert view is not None and run.trace is not None
    apps = applications(view, lhs, rhs)
    if not apps:
        return None, "no class holds both sides"
    cost = dict(run.base_cost)
    for nid, n in view.nodes.items():
        if nid in run.original:
            continue
        if view.class_type.get(n.eclass) in ("T", "Root"):
            cost[nid] = cost[nid] + OTHER_RULE_COST
    lhs_roots: set[str] = set()
    rhs_nodes: set[str] = set()
    for a in apps:
        lhs_roots |= a.lhs_roots
        rhs_nodes |= a.rhs_nodes
    if route:
        targets = {a.eclass for a in apps}
        reach = set(targets)
        frontier = list(targets)
        while frontier:
            c = frontier.pop()
            for pid in view.parents.get(c, ()):
                pc = view.nodes[pid].eclass
                if pc not in reach and view.class_type.get(pc) in ("T", "Root", "TL"):
                    reach.add(pc)
                    frontier.append(pc)
        for c in reach - targets:
            for nid in view.classes.get(c, ()):
                n = view.nodes[nid]
                if any(k in reach for k in n.children):
                    cost[nid] = run.base_cost[nid]
                else:
                    cost[nid] = cost[nid] + 1e9
    for nid in rhs_nodes:
        cost[nid] = 0.0
    for nid in lhs_roots - rhs_nodes:
        cost[nid] = LHS_COST
    try:
        choice = greedy_dag(view, run.roots, cost)
        check(view, run.roots, choice)
    except ExtractionError as e:
        return None, f"extraction failed: {e}"
    used = {choice[c] for c in reachable(view, run.roots, choice)}
    used_classes = {view.nodes[u].eclass for u in used}
    forced = bool(used & rhs_nodes) if rhs[0] == "app" else any(
        a.eclass in used_classes and not (used & a.lhs_roots) for a in apps)
    if not forced:
        return None, "the plan could not take the right side (an alternative is required or the rule only restates it)"
    try:
        plan = decode(view, choice, run.trace, run.enc, run.roots, run.var_class)
    except (IRError, KeyError, ValueError, TypeError) as e:
        return Trace([], [], []), f"the forced plan does not decode: {type(e).__name__}: {e}"
    return plan, ""


# ====================================================================== inputs and comparison


_INDEX_DIM = {"gather": 1, "index_select": 1, "index_copy": 1, "scatter": 1, "take_along_axis": 2}


class InputSpace:
    """Random inputs for a trace: symbols from their hints, values from a seed, specials on demand."""

    def __init__(self, trace: Trace, example: list[Any], hints: dict[str, int]) -> None:
        self.trace = trace
        self.example = example
        self.symbols = sorted(trace.symbols(), key=lambda s: s.name)
        self.hints = hints
        self.index_extents = []
        for n in trace.nodes:
            k = _INDEX_DIM.get(n.op)
            if k is not None and hasattr(n.args[0], "type") and isinstance(n.args[0].type, TensorType):
                d = n.args[k] % max(n.args[0].type.rank, 1)
                self.index_extents.append(n.args[0].type.shape[d])

    def draw_env(self, data: Any) -> dict:
        from hypothesis import strategies as st

        env = {}
        for s in self.symbols:
            hint = self.hints.get(s.name, 4)
            env[s] = data.draw(st.integers(0, max(2 * hint, 4)), label=s.name)
        return env

    def legal(self, env: dict) -> bool:
        for g in self.trace.guards:
            try:
                v = g.xreplace(env)
            except (TypeError, AttributeError):
                continue
            if v is sympy.false or v is False:
                return False
        for v in self.trace.inputs:
            if isinstance(v.type, TensorType) and any(_ev(e, env) < 0 for e in v.type.shape):
                return False
        return True

    def build(self, env: dict, seed: int, specials: bool) -> list[Any] | None:
        g = torch.Generator().manual_seed(seed)
        bound = min((_ev(e, env) for e in self.index_extents), default=None)
        out: list[Any] = []
        for v, ex in zip(self.trace.inputs, self.example):
            t = v.type
            if isinstance(t, ScalarType):
                out.append(int(v.type.value.xreplace(env)) if isinstance(t.value, sympy.Expr) else ex)
                continue
            shape = tuple(_ev(e, env) for e in t.shape)
            dt = ex.dtype if isinstance(ex, torch.Tensor) else torch.float32
            n = math.prod(shape)
            if dt.is_floating_point:
                x = torch.randn(shape, generator=g, dtype=torch.float32)
                if specials and n:
                    flat = x.reshape(-1)
                    k = 1 + int(torch.randint(0, max(1, n // 4), (1,), generator=g))
                    pos = torch.randint(0, n, (k,), generator=g)
                    vals = torch.tensor([math.inf, -math.inf, math.nan, 0.0, -0.0, 1e30])
                    flat[pos] = vals[torch.randint(0, len(vals), (k,), generator=g)]
                out.append(x.to(dt))
            elif dt == torch.bool:
                out.append(torch.rand(shape, generator=g) > 0.5)
            else:
                exf = ex.reshape(-1) if isinstance(ex, torch.Tensor) else torch.zeros(0, dtype=dt)
                if bound is None:
                    lo, hi = (int(exf.min()), int(exf.max())) if exf.numel() else (0, 0)
                    x = torch.randint(lo, hi + 1, shape, generator=g, dtype=dt)
                elif exf.numel() > 1 and exf.dim() == 1 and len(set(exf.tolist())) == exf.numel() and len(shape) == 1:
                    if shape[0] > bound:
                        return None  # distinct indices (index_copy) need at least as many slots
                    x = torch.randperm(bound, generator=g)[: shape[0]].to(dt)
                else:
                    if bound == 0 and n:
                        return None
                    x = torch.randint(0, max(bound, 1), shape, generator=g, dtype=dt)
                    if exf.numel() and int(exf.min()) < 0 and n:  # a sentinel such as ignore_index
                        x[torch.rand(shape, generator=g) < 0.3] = int(exf.min())
                out.append(x)
        return out


def _ev(e: Any, env: dict) -> int:
    return int(e) if isinstance(e, int) else int(sympy.sympify(e).xreplace(env))


def _tol(dt: torch.dtype) -> tuple[float, float]:
    if dt in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    if dt == torch.float64:
        return 1e-9, 1e-9
    return 1e-5, 1e-5


def compare(ref: tuple[list, dict], got: tuple[list, dict], inputs: list[Any], trace: Trace) -> str:
    """'' when equal; otherwise where and how they differ."""
    (ro, rw), (go, gw) = ref, got
    pairs = [(f"output {i}", a, b) for i, (a, b) in enumerate(zip(ro, go))]
    if len(ro) != len(go):
        return f"{len(go)} outputs instead of {len(ro)}"
    names = [v.name for v in trace.inputs]
    for name in set(rw) | set(gw):
        orig = inputs[names.index(name)] if name in names else None
        pairs.append((f"buffer {name}", rw.get(name, orig), gw.get(name, orig)))
    for what, a, b in pairs:
        if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
            if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
                return f"{what}: {_describe(b)} instead of {_describe(a)}"
            if a.shape != b.shape or a.dtype != b.dtype:
                return f"{what}: {_dt(b)}{list(b.shape)} instead of {_dt(a)}{list(a.shape)}"
            rtol, atol = _tol(a.dtype)
            if a.is_floating_point():
                close = torch.isclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
            else:
                close = a == b
            if not bool(close.all()):
                idx = tuple(int(i) for i in (~close).nonzero()[0])
                return f"{what} at {list(idx)}: {_fmt(b[idx].item())} instead of {_fmt(a[idx].item())}"
        elif a != b and not (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
            return f"{what}: {b!r} instead of {a!r}"
    return ""


def _dt(t: torch.Tensor) -> str:
    from satfuse.engine.ir import DTYPE_NAMES

    return DTYPE_NAMES.get(t.dtype, str(t.dtype))


def _fmt(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:.4g}" if v == v and abs(v) != math.inf else str(v)
    return repr(v)


def _describe(x: Any, limit: int = 24) -> str:
    if not isinstance(x, torch.Tensor):
        return _fmt(x)
    head = f"{_dt(x)}{list(x.shape)}"
    if x.numel() <= limit:
        return f"{head} {_fmt(x.tolist())}"
    flat = x.reshape(-1)
    extra = ""
    if x.is_floating_point():
        extra = f" nan={int(flat.isnan().sum())} inf={int(flat.isinf().sum())}"
    return f"{head} first {_fmt(flat[:8].tolist())} ...{extra}"


@dataclass
class Counterexample:
    program: str
    direction: str
    symbols: dict[str, int]
    inputs: list[str]
    problem: str
    expected: str
    got: str
    plan: str

    def __str__(self) -> str:
        sym = ", ".join(f"{k}={v}" for k, v in self.symbols.items()) or "static extents"
        ins = "\n      ".join(self.inputs)
        return (f"program {self.program} ({sym}){' ' + self.direction if self.direction else ''}\n"
                f"    inputs:\n      {ins}\n    {self.problem}\n    original: {self.expected}\n    with the rule: {self.got}")


def differential(run: ProgramRun, plan: Trace, examples: int, seed: int = 0, direction: str = "") -> Counterexample | None:
    """Compare ``plan`` with the original program on random inputs; the shrunk failure, or None."""
    from hypothesis import HealthCheck, given, reject, settings
    from hypothesis import strategies as st
    from hypothesis.errors import Unsatisfiable

    trace = run.trace
    assert trace is not None
    space = InputSpace(trace, run.example, run.hints)
    found: list[Counterexample] = []

    def attempt(inputs: list[Any], env: dict) -> Counterexample | None:
        ref = run_trace(trace, inputs)
        try:
            got = run_trace(plan, inputs)
        except Exception as e:  # the rewritten plan must run wherever the original does
            problem = f"the plan raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            return _cex(run, direction, env, inputs, problem, ref, None, plan)
        problem = compare(ref, got, inputs, trace)
        return _cex(run, direction, env, inputs, problem, ref, got, plan) if problem else None

    try:  # the program's own example first
        cex = attempt(run.example, {s: run.hints.get(s.name) for s in space.symbols})
    except Exception:
        cex = None
    if cex is not None:
        return cex

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def prop(data: Any) -> None:
        env = space.draw_env(data)
        if not space.legal(env):
            reject()
        s = data.draw(st.integers(0, 2**31 - 1), label="seed") ^ seed
        specials = data.draw(st.booleans(), label="specials")
        inputs = space.build(env, s, specials)
        if inputs is None:
            reject()
        try:
            run_trace(trace, inputs)
        except Exception:
            reject()  # not a legal input for the original program
        cex = attempt(inputs, env)
        if cex is not None:
            found.append(cex)
            raise AssertionError(cex.problem)

    try:
        prop()
    except AssertionError:
        return found[-1] if found else None
    except Unsatisfiable:
        return None
    return None


def _cex(run: ProgramRun, direction: str, env: dict, inputs: list[Any], problem: str, ref: Any, got: Any,
         plan: Trace) -> Counterexample:
    trace = run.trace
    ins = [f"{v.name} = {_describe(x)}" for v, x in zip(trace.inputs, inputs)]

    def show(res: Any) -> str:
        if res is None:
            return "(raised)"
        outs, wbs = res
        parts = [_describe(o) for o in outs]
        parts += [f"{k} <- {_describe(v)}" for k, v in wbs.items()]
        return "; ".join(parts)

    return Counterexample(run.program.name, direction, {str(k): int(v) for k, v in env.items() if v is not None}, ins,
                          problem, show(ref), show(got), str(plan))


def _static_cex(run: ProgramRun, direction: str, problem: str) -> Counterexample:
    try:
        ref = run_trace(run.trace, run.example)
    except Exception as e:  # the example itself is the point; the original's result is a bonus
        ref = ([f"(raised {type(e).__name__})"], {})
    cex = _cex(run, direction, {s: run.hints.get(s.name) for s in run.trace.symbols()}, run.example, problem, ref,
               None, Trace([], [], []))
    cex.got = "(no valid program)"
    cex.plan = ""
    return cex


# ====================================================================== the report


@dataclass
class RuleCoverage:
    name: str
    pack: str
    ruleset: str
    where: str
    kind: str
    doc: str
    guards: list[str]
    fires: int = 0
    programs: dict[str, int] = field(default_factory=dict)
    status: str = "dead"  # dead | sound | unsound | not forced | facts | error
    detail: str = ""
    checked: list[str] = field(default_factory=list)
    examples: int = 0
    counterexample: Counterexample | None = None

    @property
    def dead(self) -> bool:
        return self.fires == 0


@dataclass
class CoverageReport:
    rules: list[RuleCoverage]
    programs: list[dict[str, Any]]
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    soundness: bool = True

    def dead(self) -> list[RuleCoverage]:
        return [r for r in self.rules if r.dead]

    def unsound(self) -> list[RuleCoverage]:
        return [r for r in self.rules if r.status in ("unsound", "error")]

    @property
    def ok(self) -> bool:
        return not (self.dead() or self.unsound() or self.errors)

    def summary(self) -> dict[str, int]:
        out: dict[str, int] = {"rules": len(self.rules), "fired": sum(not r.dead for r in self.rules),
                               "dead": len(self.dead())}
        for st_ in ("sound", "unsound", "not forced", "facts", "error"):
            out[st_] = sum(r.status == st_ for r in self.rules)
        out["programs"] = len(self.programs)
        out["program errors"] = len(self.errors)
        return out

    def table(self, width: int = 60) -> str:
        rows = [f"{'rule':<40} {'fires':>6} {'progs':>5}  {'soundness':<30} guards"]
        for r in self.rules:
            snd = r.status
            if r.status in ("sound", "unsound"):
                snd += f" ({len(r.checked)}p x {r.examples}ex)"
            rows.append(f"{r.name:<40} {r.fires:>6} {len(r.programs):>5}  {snd:<30} {'; '.join(r.guards) or 'none'}")
        s = self.summary()
        rows.append("")
        rows.append(f"{s['rules']} rules on {s['programs']} programs: {s['fired']} fired, {s['dead']} dead (never fired); "
                    f"{s['sound']} sound, {s['unsound']} unsound, {s['not forced']} not forced, {s['facts']} facts-only, "
                    f"{s['error']} errors; {self.seconds:.1f} s")
        for r in self.dead():
            rows.append(f"DEAD     {r.where}: {r.name} never fired on the corpus")
        for r in self.unsound():
            rows.append(f"{r.status.upper():<8} {r.where}: {r.name}: {r.detail}")
            if r.counterexample is not None:
                rows.append("    counterexample: " + str(r.counterexample).replace("\n", "\n    "))
        for e in self.errors:
            rows.append(f"ERROR    {e}")
        for p in self.programs:
            if p.get("extent_conflicts"):
                rows.append(f"NOTE     program {p['name']}: saturation equated different extents "
                            f"({', '.join(sorted(set(p['extent_conflicts'])))}): a rule equates values of different shapes")
        return "\n".join(rows)

    def to_json(self) -> dict[str, Any]:
        def rule(r: RuleCoverage) -> dict[str, Any]:
            d = asdict(r)
            d["dead"] = r.dead
            return d

        return {"summary": self.summary(), "seconds": self.seconds, "rules": [rule(r) for r in self.rules],
                "programs": self.programs, "errors": self.errors}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, default=str)


def coverage(cat: Catalogue, programs: Sequence[Program], *, soundness: bool = True, examples: int = 20,
             max_programs: int = 3, rules: Iterable[str] | None = None, budget: Budget | None = None,
             seed: int = 0, log: Callable[[str], None] | None = None) -> CoverageReport:
    """Fire counts, dead rules, soundness (forced differential tests) and guards for ``cat``'s rules."""
    t0 = time.perf_counter()
    sources = coverage_sources(cat)
    texts = {s.path: s.text.splitlines() for s in cat.sources}
    wanted = set(rules) if rules is not None else None
    forms = [rule_form(r, texts[r.path]) for r in cat.rules if wanted is None or r.name in wanted]
    runs: list[ProgramRun] = []
    errors: list[str] = []
    for prog in programs:
        run = run_program(prog, sources, cat.phases, budget)
        if log:
            log(f"  {prog.name}: {run.seconds * 1e3:.0f} ms, {run.nodes} nodes{' ' + run.error if run.error else ''}")
        if run.error:
            errors.append(f"program {prog.name}: {run.error}")
        runs.append(run)
    report = CoverageReport([], [], errors, soundness=soundness)
    for run in runs:
        report.programs.append({"name": run.program.name, "dynamic": bool(run.program.dynamic), "seconds": run.seconds,
                                "nodes": run.nodes, "stop": run.stop, "error": run.error,
                                "extent_conflicts": run.conflicts})
    for f in forms:
        info = f.info
        rc = RuleCoverage(info.name, info.pack, info.ruleset, info.where, info.kind, f.doc, f.guards)
        for run in runs:
            n = sum(v for k, v in run.matches.items() if k == info.name or k in (info.name + "=>", info.name + "<="))
            if n:
                rc.programs[run.program.name] = n
                rc.fires += n
        report.rules.append(rc)
        if rc.dead:
            rc.status = "dead"
            continue
        if not f.directions:
            rc.status, rc.detail = "facts", f.note
            continue
        if not soundness:
            rc.status, rc.detail = "not checked", ""
            continue
        _check_rule(rc, f, runs, examples, max_programs, seed, cat, sources, budget)
        if log:
            log(f"  {rc.name}: {rc.status} {rc.detail}")
    report.seconds = time.perf_counter() - t0
    return report


def _check_rule(rc: RuleCoverage, f: RuleForm, runs: list[ProgramRun], examples: int, max_programs: int,
                seed: int, cat: Catalogue, sources: Sequence[Source], budget: Budget | None) -> None:
    """Force ``f`` into plans of (up to ``max_programs``) programs where it fired and test them.

    First in an e-graph saturated with this rule alone (plus the analysis), so nothing else
    can be blamed; where the rule needs other rules' results to match, in the full e-graph."""
    notes: list[str] = []
    iso_sources = isolated_sources(sources, cat, f.info)
    for suffix, lhs, rhs in f.directions:
        key = f.name + suffix
        fired = [r for r in runs if r.view is not None and r.matches.get(key)]
        fired.sort(key=lambda r: (bool(r.conflicts), -r.matches.get(key, 0)))
        tried = 0
        for run in fired:
            if tried >= max_programs:
                break
            iso = run_program(run.program, iso_sources, [f.info.ruleset], budget, like=run)
            plan, why = (forced_plan(iso, lhs, rhs) if iso.view is not None and iso.matches.get(key)
                         else (None, "does not fire alone"))
            target, how = iso, "alone"
            if plan is None:
                plan, why2 = forced_plan(run, lhs, rhs, route=True)
                target, how = run, "with all rules"
                why = f"{why}; {why2}" if plan is None else why2
            if plan is None:
                notes.append(f"{run.program.name}{suffix}: {why}")
                continue
            tried += 1
            rc.checked.append(f"{run.program.name}{suffix} ({how})")
            if why:  # the right side does not even make a valid program here
                rc.status = "unsound"
                rc.detail = f"the rewritten program is ill-typed on {run.program.name} ({how}): {why}"
                rc.counterexample = _static_cex(target, suffix, why)
                return
            cex = differential(target, plan, examples, seed, suffix)
            rc.examples = examples
            if cex is not None:
                rc.status = "unsound"
                rc.detail = f"differs from the original program on {cex.program} ({how}): {cex.problem}"
                rc.counterexample = cex
                return
    if rc.checked:
        rc.status, rc.detail = "sound", ""
    else:
        rc.status, rc.detail = "not forced", "; ".join(notes[:3])


def check_rules(paths: Sequence[str | Path] = (), *, corpus: Sequence[str | Path] = (), builtin_corpus: bool = True,
                builtin_rules: bool = True, only_paths: bool = False, soundness: bool = True, examples: int = 20,
                max_programs: int = 3, budget: Budget | None = None, log: Callable[[str], None] | None = None
                ) -> CoverageReport:
    """Load rule packs (built-in plus ``paths``), then measure coverage and soundness over the
    corpus. Loading errors (parse, validation, type errors) raise ``RuleError`` with file:line.
    ``only_paths``: report only the rules from ``paths`` (the built-in ones still run)."""
    from .packs import load_catalogue

    cat = load_catalogue(list(paths), include_builtin=builtin_rules)
    programs = load_corpus(corpus, builtin=builtin_corpus)
    rules = None
    if only_paths:
        user = {str(Path(p).resolve()) for p in paths}
        rules = [r.name for r in cat.rules if any(str(Path(r.path).resolve()).startswith(u) for u in user)]
    return coverage(cat, programs, soundness=soundness, examples=examples, max_programs=max_programs, rules=rules,
                    budget=budget, log=log)
