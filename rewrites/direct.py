"""Judging a rule on its own: both sides evaluated on the same random operands, per match.

For every place where a rule applied on the corpus, its pattern variables are bound to
e-classes; each becomes a concrete value shaped and typed as the match (tensors with the
class's shape and dtype, Python scalars for scalar operands, ints and lists for dims and
extents). Both sides are then evaluated with the vocabulary's eager implementations
(``engine.vocab.IMPLS``) and compared directly, as rule verifiers for Halide and LLVM do.
This sees what forcing a rule into a whole plan cannot: a rule whose right side is also a
left side (``a - b -> b - a``), and values the example program never holds.

Operands are varied beyond the match: extents are relabelled consistently (equal extents
stay equal, an extent of 1 stays 1; each other extent in turn becomes 0 or 1, so empty and
size-1 dims are covered), the match's dtypes are mapped to every dtype (a dtype the rule's
``:when`` rejects is skipped), and values come in modes: ties (operands of one shape and
dtype equal), specials (+-0, +-inf, NaN, huge values; the int limits), small integers and
random floats. Conditions that read the analyses (``rank``, ``ext``, ``shape``, ``dtype``,
``is-float``, arithmetic) are re-checked on the concrete operands; a pack's own relations
cannot be, and are taken as they held at the match. Index operands are drawn in range;
an operand set for which the left side raises is not a legal input (eager raises there)
and is skipped.

Comparison follows eager semantics: the same Python-scalar-or-tensor kind, shape and
dtype; ints and bools bit for bit; floats with NaN equal to NaN, infinities equal by sign,
and finite values within ``rtol``/``atol`` of :data:`TOLERANCE` (torch's own defaults for
``assert_close`` per dtype, so a rewrite may reassociate but not change a value), and a
zero's sign (``atan2`` and ``1 / x`` read it: a one-hot *sum* for a lookup gave +0.0 for a
looked-up -0.0, found by the fuzzer in a shipped rule). Eager fixes it even where it looks
arbitrary (``torch.maximum`` returns its first operand at ``0.`` vs ``-0.``), so a rule that
commutes ``maximum`` is unsound too.

The first failure in size order (smallest extents first) is shrunk further: each element
is set to 0, then 1, as long as the two sides still differ.
"""

from __future__ import annotations

import itertools
import math
import random
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch
from satfuse.engine.egraph import EGraphView
from satfuse.engine.ir import DTYPE_NAMES, DTYPES, FLOAT_DTYPES
from satfuse.engine.schema import ANALYSES, SCALARS
from satfuse.engine.sexp import Str
from satfuse.engine.vocab import IMPLS, OPS

from .ematch import applications, match
from .forcing import ProgramRun
from .forms import RuleForm, to_pattern

#: (rtol, atol) per float dtype: torch.testing.assert_close's defaults
TOLERANCE = {"f64": (1e-7, 1e-7), "f32": (1.3e-6, 1e-5), "f16": (1e-3, 1e-5), "bf16": (1.6e-2, 1e-5)}
#: the dtypes a match's dtypes are mapped to
DTYPE_CHOICES = ("f32", "f64", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "b8")
MODES = ("equal", "special", "ties", "small", "plain")
FLOAT_SPECIALS = (0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 1e30, -1e30, 0.5)
MAX_SIGNATURES = 6  # distinct matches (shapes, dtypes, literals) judged per rule direction
MAX_EXTENTS = 5  # above this many distinct extents only the match's own and a small relabelling are tried
SHRINK_TRIES = 300

_EGG = {spec.egg: spec for spec in OPS.values()}
#: index ops: (position of the looked-up tensor, of the index, of the dim)
_INDEX_ARGS = {"TakeAlongAxis": (0, 1, 2), "Gather": (0, 2, 1), "IndexSelect": (0, 2, 1), "IndexCopy": (0, 2, 1),
               "Scatter": (0, 2, 1)}
_CMP = {"<": lambda a, b: a < b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
        "!=": lambda a, b: a != b}
_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a // b,
          "%": lambda a, b: a % b, "min": min, "max": max, "DAdd": lambda a, b: a + b, "DSub": lambda a, b: a - b,
          "DMul": lambda a, b: a * b, "DDiv": lambda a, b: a // b, "DMod": lambda a, b: a % b, "DMin": min, "DMax": max}


class Unknown(Exception):
    """A value the concrete evaluator cannot give (a pack's own relation, an unbound variable)."""


# ====================================================================== what a variable was bound to


@dataclass(frozen=True)
class Binding:
    """A pattern variable's value at a match: ``kind`` is "tensor" (shape, dtype), "scalar"
    (a Python number of type ``scalar``: a CInt/CFloat/CBool operand), "dim" (an extent),
    "dims" (a list of extents), or "value" (a literal: dim index, dtype name, list of ints)."""

    kind: str
    shape: tuple[int, ...] = ()
    dtype: str = ""
    scalar: str = ""
    value: Any = None

    def __str__(self) -> str:
        if self.kind == "tensor":
            return f"{self.dtype}{list(self.shape)}"
        if self.kind == "scalar":
            return f"a Python {self.scalar}"
        return repr(self.value)


def concrete(view: EGraphView, cid: str, hints: dict[str, int], depth: int = 0) -> Any:
    """An extent, list or literal class as a Python value (symbols at their hints)."""
    if view.is_primitive(cid):
        return view.literal(cid)
    if depth > 64:
        raise Unknown(f"class {cid} is too deep")
    nodes = [view.nodes[n] for n in view.classes.get(cid, ())]
    order = ("Num", "DNil", "INil", "DCons", "ICons", "Sym", *_ARITH)
    for op in order:
        for n in nodes:
            if n.op != op:
                continue
            if op == "Num":
                return view.literal(n.children[0])
            if op == "Sym":
                return int(hints.get(view.literal(n.children[0]), 4))
            if op in ("DNil", "INil"):
                return ()
            if op in ("DCons", "ICons"):
                return (concrete(view, n.children[0], hints, depth + 1),
                        *concrete(view, n.children[1], hints, depth + 1))
            a, b = (concrete(view, c, hints, depth + 1) for c in n.children)
            return _ARITH[op](a, b)
    raise Unknown(f"class {cid} has no concrete value ({', '.join(sorted({n.op for n in nodes}))})")


def bindings(run: ProgramRun, cid: str) -> list[Binding]:
    """What a class can be as an operand: one binding, or one per program type where a rule
    merged values of different shapes or dtypes into the class."""
    view = run.view
    assert view is not None
    ctype = view.class_type.get(cid, "")
    if ctype == "T":
        ops = {view.nodes[n].op for n in view.classes.get(cid, ())}
        for op, kind in (("CBool", "bool"), ("CFloat", "float"), ("CInt", "int"), ("CDim", "int")):
            if op in ops and op in SCALARS:
                node = next(view.nodes[n] for n in view.classes[cid] if view.nodes[n].op == op)
                try:
                    value = concrete(view, node.children[0], run.hints)
                except Unknown:
                    value = None
                return [Binding("scalar", scalar=kind, value=value)]
        types = run.class_types.get(cid)
        if types:
            return [Binding("tensor", tuple(_at_hints(e, run.hints) for e in t.shape), t.dtype) for t in types]
        dtype = view.dtype_of.get(cid)
        if cid not in view.shape_of or not dtype:
            raise Unknown(f"class {cid}: no shape or dtype known")
        return [Binding("tensor", tuple(concrete(view, view.shape_of[cid], run.hints)), dtype)]
    if ctype in ("Dim", "DL"):
        return [Binding("dim" if ctype == "Dim" else "dims", value=concrete(view, cid, run.hints))]
    if ctype in ("IL", "i64", "f64", "String", "bool"):
        return [Binding("value", value=concrete(view, cid, run.hints))]
    raise Unknown(f"a variable of sort {ctype or '?'}")


def _at_hints(e: Any, hints: dict[str, int]) -> int:
    return int(e) if isinstance(e, int) else int(e.subs({s: hints.get(s.name, 4) for s in e.free_symbols}))


# ====================================================================== concrete evaluation


def _shape(v: Any) -> tuple[int, ...]:
    return tuple(v.shape) if isinstance(v, torch.Tensor) else ()


def _dtype(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return DTYPE_NAMES[v.dtype]
    raise Unknown("a Python scalar has no dtype fact")


def evaluate(s: Any, env: dict[str, Any]) -> Any:
    """The eager value of a rule term (or of an analysis term in a condition)."""
    if isinstance(s, Str):
        return s.value
    if isinstance(s, (int, float)):
        return s
    if isinstance(s, str):
        if s in ("true", "false"):
            return s == "true"
        if s not in env:
            raise Unknown(f"{s} is not bound")
        return env[s]
    head, args = s[0], s[1:]
    if head in ("CInt", "CFloat", "CBool", "CDim"):
        v = evaluate(args[0], env)
        return {"CInt": int, "CFloat": float, "CBool": bool, "CDim": int}[head](v)
    if head == "Num":
        return int(evaluate(args[0], env))
    if head in ("DNil", "INil", "TNil"):
        return ()
    if head in ("DCons", "ICons", "TCons"):
        return (evaluate(args[0], env), *evaluate(args[1], env))
    if head in _ARITH:
        return _ARITH[head](*(evaluate(a, env) for a in args))
    if head in ANALYSES:
        vs = [evaluate(a, env) for a in args]
        if head == "shape":
            return _shape(vs[0])
        if head == "rank":
            return len(_shape(vs[0]))
        if head == "ext":
            sh = _shape(vs[0])
            if not -len(sh) <= vs[1] < len(sh):
                raise Unknown("ext beyond the rank")
            return sh[vs[1]]
        if head == "dtype":
            return _dtype(vs[0])
        if head == "dl-len":
            return len(vs[0])
        if head == "dl-at":
            return vs[0][vs[1]]
        if head == "bcast":
            return tuple(torch.broadcast_shapes(vs[0], vs[1]))
        if head == "bdim":
            return vs[0] if vs[1] == 1 else vs[1]
        raise Unknown(head)
    spec = _EGG.get(head)
    if spec is None:
        raise Unknown(f"{head} has no eager meaning here")
    vals = [evaluate(a, env) for a in args]
    if spec.kind in ("elementwise", "reduction") and vals and not isinstance(vals[0], torch.Tensor):
        if not any(isinstance(v, torch.Tensor) for v, k in zip(vals, spec.sig) if k == "T"):
            vals[0] = torch.tensor(vals[0])  # two Python scalars: torch's own promotion of a number
    return IMPLS[spec.name](*vals)


def holds(cond: Any, env: dict[str, Any]) -> bool | None:
    """Whether a condition holds on concrete operands (binding its new variables); None
    where it cannot be evaluated (a pack's own relation): it held at the match."""
    try:
        head = cond[0]
        if head == "=":
            a, b = cond[1], cond[2]
            for var, term in ((a, b), (b, a)):
                if isinstance(var, str) and var not in ("true", "false") and var not in env:
                    env[var] = evaluate(term, env)
                    return True
            return _same_value(evaluate(a, env), evaluate(b, env))
        if head in _CMP:
            return bool(_CMP[head](evaluate(cond[1], env), evaluate(cond[2], env)))
        if head == "is-float":
            return _dtype(evaluate(cond[1], env)) in FLOAT_DTYPES
    except (Unknown, IndexError, TypeError, RuntimeError):
        return None
    return None


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return a is b
    return a == b


# ====================================================================== comparison


def differ(want: Any, got: Any) -> str:
    """'' when ``got`` is ``want`` under eager semantics; otherwise how it differs."""
    wt, gt = isinstance(want, torch.Tensor), isinstance(got, torch.Tensor)
    if wt != gt:
        return f"{describe(got)} instead of {describe(want)}"
    if not wt:
        if type(want) is not type(got):
            return f"a Python {type(got).__name__} instead of a {type(want).__name__}"
        same = want == got or (isinstance(want, float) and math.isnan(want) and math.isnan(got))
        return "" if same else f"{got!r} instead of {want!r}"
    if want.shape != got.shape or want.dtype != got.dtype:
        return f"{_head(got)} instead of {_head(want)}"
    if want.is_floating_point():
        rtol, atol = TOLERANCE[DTYPE_NAMES[want.dtype]]
        a, b = want.double(), got.double()
        ok = torch.isclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
        ok &= (a.isinf() == b.isinf()) & (a.isnan() == b.isnan())
        ok &= ~((a == 0) & (b == 0) & (a.signbit() != b.signbit()))
    else:
        ok = want == got
    if bool(ok.all()):
        return ""
    idx = tuple(int(i) for i in (~ok).nonzero()[0])
    return f"at {list(idx)}: {_num(got[idx].item())} instead of {_num(want[idx].item())}"


def _head(t: torch.Tensor) -> str:
    return f"{DTYPE_NAMES[t.dtype]}{list(t.shape)}"


def _num(v: Any) -> str:
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)
    return repr(v)


def describe(v: Any, limit: int = 16) -> str:
    if isinstance(v, torch.Tensor):
        vals = v.reshape(-1).tolist()
        body = ", ".join(_num(x) for x in vals[:limit]) + (", ..." if len(vals) > limit else "")
        return f"{_head(v)} [{body}]" if v.dim() else f"{_head(v)} {_num(v.item())}"
    if isinstance(v, (bool, int, float)):
        return f"{_num(v)} (a Python {type(v).__name__})"
    return repr(v)


# ====================================================================== operands


def _int_limits(dtype: torch.dtype) -> tuple[int, int]:
    info = torch.iinfo(dtype)
    return int(info.min), int(info.max)


def make_tensor(shape: tuple[int, ...], dtype: str, mode: str, rng: random.Random) -> torch.Tensor:
    dt = DTYPES[dtype]
    n = math.prod(shape)
    if dtype == "b8":
        vals: list[Any] = [rng.random() < 0.5 for _ in range(n)]
    elif dtype in FLOAT_DTYPES:
        pool = {"special": FLOAT_SPECIALS, "ties": (0.0, -0.0, 1.0, -1.0), "small": (0.0, 1.0, -1.0, 2.0, 0.5)}
        if mode in pool:
            vals = [rng.choice(pool[mode]) for _ in range(n)]
        else:
            vals = [round(rng.gauss(0, 2), 2) if rng.random() > 0.2 else rng.choice(FLOAT_SPECIALS) for _ in range(n)]
    else:
        lo, hi = _int_limits(dt)
        specials = [v for v in (0, 1, -1, 2, lo, hi, lo + 1, hi - 1) if lo <= v <= hi]
        if mode == "special":
            vals = [rng.choice(specials) for _ in range(n)]
        elif mode in ("ties", "small"):
            vals = [rng.choice([v for v in (0, 1, -1) if lo <= v]) for _ in range(n)]
        else:
            vals = [rng.randint(max(lo, -5), 5) if rng.random() > 0.2 else rng.choice(specials) for _ in range(n)]
    return torch.tensor(vals, dtype=dt).reshape(shape)


def make_scalar(kind: str, mode: str, rng: random.Random) -> Any:
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float":
        return rng.choice(FLOAT_SPECIALS if mode == "special" else (0.0, 1.0, -1.0, 2.0, 0.5, -3.25))
    return rng.choice((0, 1, -1, 2, 2**31 - 1, -(2**31), 2**63 - 1) if mode == "special" else (0, 1, -1, 2, 3))


def index_uses(s: Any, out: list[tuple[str, Any, Any]]) -> list[tuple[str, Any, Any]]:
    """(index variable, looked-up term, dim term) of each index op of ``s`` whose index is a variable."""
    if isinstance(s, list) and s:
        pos = _INDEX_ARGS.get(s[0])
        if pos is not None and len(s) > 1 + max(pos) and isinstance(s[1 + pos[1]], str):
            out.append((s[1 + pos[1]], s[1 + pos[0]], s[1 + pos[2]]))
        for a in s[1:]:
            index_uses(a, out)
    return out


@dataclass
class Case:
    """One concrete instance of a match: extents relabelled, dtypes mapped, a value mode and seed."""

    extents: dict[int, int]
    dtypes: dict[str, str]
    mode: str
    seed: int

    def size(self, binds: dict[str, Binding]) -> int:
        return sum(math.prod(self.extents.get(e, e) for e in b.shape) for b in binds.values() if b.kind == "tensor")


def extent_maps(binds: dict[str, Binding]) -> list[dict[int, int]]:
    """Consistent relabellings of the match's extents (1 stays 1), the match's own included."""
    found: set[int] = set()
    for b in binds.values():
        if b.kind == "tensor":
            found |= set(b.shape)
        elif b.kind == "dim" and isinstance(b.value, int):
            found.add(b.value)
        elif b.kind == "dims":
            found |= {e for e in b.value if isinstance(e, int)}
    ext = sorted(e for e in found if e > 1)
    small = {e: 2 + i for i, e in enumerate(ext)}
    maps = [{e: e for e in ext}, small]
    if len(ext) <= MAX_EXTENTS:
        for e in ext:
            maps += [{**small, e: 0}, {**small, e: 1}]
    out = []
    for m in maps:
        if m not in out:
            out.append(m)
    return out


def dtype_maps(binds: dict[str, Binding]) -> list[dict[str, str]]:
    """The match's dtypes, then each of them mapped to every other dtype in turn."""
    have = sorted({b.dtype for b in binds.values() if b.kind == "tensor"})
    maps = [{d: d for d in have}]
    for d in have:
        for new in DTYPE_CHOICES:
            if new != d:
                maps.append({**{x: x for x in have}, d: new})
    return maps


def instantiate(binds: dict[str, Binding], case: Case, lhs: Any, rhs: Any,
                conditions: Sequence[Any]) -> dict[str, Any] | None:
    """Concrete operands for ``case``, or None where the rule's conditions reject them."""
    rng = random.Random(case.seed)
    env: dict[str, Any] = {}
    indices = {v: (src, dim) for v, src, dim in index_uses(rhs, index_uses(lhs, []))[::-1]}
    pinned = _opaque_vars(conditions)
    defined = defining_terms(conditions, binds)
    shared: dict[tuple, torch.Tensor] = {}
    for name, b in binds.items():
        if name in defined:
            continue
        if b.kind == "tensor":
            shape = tuple(case.extents.get(e, e) for e in b.shape)
            dtype = case.dtypes.get(b.dtype, b.dtype)
            key = (shape, dtype)
            if case.mode == "equal" and key in shared and name not in indices:
                env[name] = shared[key].clone()
            else:
                env[name] = make_tensor(shape, dtype, "plain" if case.mode == "equal" else case.mode, rng)
                shared.setdefault(key, env[name])
        elif b.kind == "scalar":  # a constant a pack's relation tested (zero-fill) keeps its value
            env[name] = b.value if name in pinned and b.value is not None else make_scalar(b.scalar, case.mode, rng)
        elif b.kind == "dim":
            env[name] = case.extents.get(b.value, b.value)
        elif b.kind == "dims":
            env[name] = tuple(case.extents.get(e, e) for e in b.value)
        elif isinstance(b.value, str) and b.value in case.dtypes:  # a dtype name bound by the match follows its map
            env[name] = case.dtypes[b.value]
        else:
            env[name] = b.value
    for name, term in defined.items():  # a variable the conditions define as a term: that term's value
        try:
            env[name] = evaluate(term, env)
        except (Unknown, TypeError, RuntimeError, IndexError):
            return None
    # indices in range: where the left side looks up, eager raises on others (not a legal input); where only the
    # right side does, an out-of-range index is a data obligation of the rule (a guard), not judged here
    for var, (src, dim) in indices.items():
        t = env.get(var)
        if not isinstance(t, torch.Tensor):
            continue
        if t.is_floating_point() or t.dtype == torch.bool:
            return None  # an index is an integer tensor (eager's gather rejects others)
        try:
            bound = _shape(evaluate(src, env))[evaluate(dim, env)]
        except (Unknown, IndexError, TypeError, RuntimeError):
            continue
        if bound == 0 and t.numel():
            return None  # no index is in range
        env[var] = torch.randint(0, max(bound, 1), tuple(t.shape), dtype=t.dtype,
                                 generator=torch.Generator().manual_seed(case.seed))
    for c in conditions:
        if holds(c, env) is False:
            return None
    return env


def defining_terms(conditions: Sequence[Any], binds: dict[str, Any]) -> dict[str, Any]:
    """``(= v TERM)`` conditions with a term constructor on the right: v is that term."""
    out = {}
    for c in conditions:
        if isinstance(c, list) and len(c) == 3 and c[0] == "=":
            for v, t in ((c[1], c[2]), (c[2], c[1])):
                if isinstance(v, str) and v in binds and isinstance(t, list) and t and str(t[0])[:1].isupper():
                    out[v] = t
    return out


def _dtype_vars(conditions: Sequence[Any], binds: dict[str, Binding]) -> set[str]:
    """Variables that hold a dtype name: bound to one, or defined by ``(= v (dtype x))``."""
    out = {k for k, b in binds.items() if isinstance(b.value, str) and b.value in DTYPES}
    for c in conditions:
        if isinstance(c, list) and len(c) == 3 and c[0] == "=":
            for v, t in ((c[1], c[2]), (c[2], c[1])):
                if isinstance(v, str) and isinstance(t, list) and t and t[0] == "dtype":
                    out.add(v)
    return out


def _opaque_vars(conditions: Sequence[Any]) -> set[str]:
    """Variables of conditions the concrete evaluator cannot decide (a pack's own relations)."""
    out: set[str] = set()

    def names(s: Any) -> Iterator[str]:
        if isinstance(s, str):
            yield s
        elif isinstance(s, list):
            for a in s[1:]:
                yield from names(a)

    for c in conditions:
        if isinstance(c, list) and c and c[0] not in ("=", "is-float", *_CMP):
            out |= set(names(c))
    return out


def run_sides(lhs: Any, rhs: Any, env: dict[str, Any]) -> tuple[Any, Any, str] | None:
    """(left value, right value, difference) or None when the left side raises (not a legal input)."""
    try:
        want = evaluate(lhs, dict(env))
    except Unknown:
        raise
    except Exception:
        return None
    try:
        got = evaluate(rhs, dict(env))
    except Unknown:
        raise
    except Exception as e:
        return want, None, f"the right side raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return want, got, differ(want, got)


# ====================================================================== the check


@dataclass
class RuleCounterexample:
    """Operands on which a rule's two sides differ, shrunk."""

    program: str
    direction: str
    match: str  # the match's bindings, as seen in the e-graph
    operands: list[str]
    problem: str
    lhs: str
    rhs: str

    def __str__(self) -> str:
        ops = "\n      ".join(self.operands)
        return (f"the rule's two sides, at a match on {self.program}{' ' + self.direction if self.direction else ''} "
                f"({self.match})\n    operands:\n      {ops}\n    {self.problem}\n"
                f"    left side: {self.lhs}\n    right side: {self.rhs}")


@dataclass
class DirectResult:
    matches: int = 0  # distinct matches judged
    cases: int = 0  # operand sets on which both sides ran
    skipped: list[str] = field(default_factory=list)
    counterexample: RuleCounterexample | None = None


def matches_of(run: ProgramRun, lhs: tuple, rhs: tuple) -> Iterator[dict[str, str]]:
    if run.view is None:
        return
    for app in applications(run.view, lhs, rhs):
        yield from app.envs


def judge(form: RuleForm, runs: Sequence[ProgramRun], examples: int = 20, seed: int = 0) -> DirectResult:
    """Evaluate both sides of ``form`` at its matches on ``runs`` (programs where it fired)."""
    with warnings.catch_warnings():  # torch's deprecation notes on odd operands are not findings
        warnings.simplefilter("ignore")
        return _judge(form, runs, examples, seed)


def _judge(form: RuleForm, runs: Sequence[ProgramRun], examples: int, seed: int) -> DirectResult:
    res = DirectResult()
    for (suffix, lhs_s, rhs_s), (_, lhs, rhs) in zip(form.sides, form.directions):
        key = form.name + suffix
        seen: set[tuple] = set()
        for run in runs:
            if not run.matches.get(key):
                continue
            for env in matches_of(run, lhs, rhs):
                if len(seen) >= MAX_SIGNATURES:
                    break
                for v, term in defining_terms(form.conditions, env).items():  # bind the term's variables too
                    env = next((e for e, _ in match(run.view, to_pattern(term), env[v], env)), env)
                try:
                    choices = {v: bindings(run, c) for v, c in env.items()}
                except Unknown as e:
                    res.skipped.append(f"{run.program.name}: {e}")
                    continue
                for combo in itertools.islice(itertools.product(*choices.values()), MAX_SIGNATURES):
                    binds = dict(zip(choices, combo))
                    sig = tuple(sorted((k, str(b), repr(b.value)) for k, b in binds.items()))
                    if sig in seen or len(seen) >= MAX_SIGNATURES:
                        continue
                    seen.add(sig)
                    res.matches += 1
                    cex = _judge_match(form, suffix, lhs_s, rhs_s, binds, run.program.name, examples, seed, res)
                    if cex is not None:
                        res.counterexample = cex
                        return res
    return res


def _judge_match(form: RuleForm, suffix: str, lhs: Any, rhs: Any, binds: dict[str, Binding], program: str,
                 examples: int, seed: int, res: DirectResult) -> RuleCounterexample | None:
    draws = max(1, examples // 4)
    dmaps = dtype_maps(binds)
    if _opaque_vars(form.conditions) & _dtype_vars(form.conditions, binds):
        dmaps = dmaps[:1]  # a pack's relation tests a dtype (lossless t0 t1): only the match's dtypes are known to pass
    cases = [Case(e, d, MODES[k % len(MODES)], seed * 7919 + k)
             for e, d in itertools.product(extent_maps(binds), dmaps) for k in range(draws)]
    cases.sort(key=lambda c: c.size(binds))  # smallest operands first: the first failure is already small
    for case in cases:
        env = instantiate(binds, case, lhs, rhs, form.conditions)
        if env is None:
            continue
        try:
            out = run_sides(lhs, rhs, env)
        except Unknown as e:
            res.skipped.append(f"{program}: {e}")
            return None
        if out is None:
            continue
        res.cases += 1
        if out[2]:
            fixed = (set(defining_terms(form.conditions, binds)) | _opaque_vars(form.conditions)
                     | {v for v, _, _ in index_uses(rhs, index_uses(lhs, []))})
            operands = [k for k, b in binds.items() if b.kind in ("tensor", "scalar") and k not in fixed]
            env, out = _shrink(lhs, rhs, env, out, operands, form.conditions)
            match = ", ".join(f"{k}: {b}" for k, b in binds.items())
            operands = [f"{k} = {describe(v)}" for k, v in env.items() if k in binds and binds[k].kind in ("tensor", "scalar")]
            operands += [f"{k} = {v!r}" for k, v in env.items() if k in binds and binds[k].kind not in ("tensor", "scalar")]
            got = "(raised)" if out[1] is None else describe(out[1])
            return RuleCounterexample(program, suffix, match, operands, out[2], describe(out[0]), got)
    return None


def _shrink(lhs: Any, rhs: Any, env: dict[str, Any], out: tuple, operands: list[str],
            conditions: Sequence[Any]) -> tuple[dict[str, Any], tuple]:
    """Set the operands' elements to 0, then 1, while the two sides still differ."""
    tries = 0
    for name in operands:
        v = env[name]
        if isinstance(v, torch.Tensor):
            flat = v.reshape(-1)
            for i in range(flat.numel()):
                for simple in (0, 1):
                    if tries >= SHRINK_TRIES or flat[i].item() == simple and not _neg_zero(flat[i]):
                        continue
                    tries += 1
                    trial = flat.clone()
                    trial[i] = simple
                    cand = {**env, name: trial.reshape(v.shape)}
                    got = _still_differs(lhs, rhs, cand, conditions)
                    if got is not None:
                        env, out, flat = cand, got, trial
                        break
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            for simple in (type(v)(0), type(v)(1)):
                if v != simple:
                    cand = {**env, name: simple}
                    got = _still_differs(lhs, rhs, cand, conditions)
                    if got is not None:
                        env, out = cand, got
                        break
    return env, out


def _neg_zero(x: torch.Tensor) -> bool:
    return x.is_floating_point() and bool(x == 0) and bool(torch.signbit(x))


def _still_differs(lhs: Any, rhs: Any, env: dict[str, Any], conditions: Sequence[Any]) -> tuple | None:
    if any(holds(c, dict(env)) is False for c in conditions):
        return None
    try:
        out = run_sides(lhs, rhs, env)
    except Unknown:
        return None
    return out if out is not None and out[2] else None
