"""Whole-program differential testing: a forced plan against the original program on random
inputs (symbolic extents at several values, random values, inf/NaN/-0 injected), with the
failure shrunk and reported with shapes, values and both results. Seeded and
self-contained (no test dependency), so ``rules check`` runs from a plain install."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import sympy
import torch
from satfuse.engine.interp import run_trace
from satfuse.engine.ir import DTYPE_NAMES, ScalarType, TensorType, Trace

from .forcing import ProgramRun

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

    def draw_env(self, rng: random.Random) -> dict:
        return {s: rng.randint(0, max(2 * self.hints.get(s.name, 4), 4)) for s in self.symbols}

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
    """Compare ``plan`` with the original program on random inputs; the shrunk failure, or None.

    Inputs: the program's own example, then ``examples`` draws of the symbolic extents (0 and
    1 included where the guards allow) with random values, half of them with inf/NaN/-0
    injected into float inputs. A failure is shrunk: each extent is lowered as far as it
    still fails, then the specials are dropped if it fails without them."""
    trace = run.trace
    assert trace is not None
    space = InputSpace(trace, run.example, run.hints)

    def attempt(env: dict, s: int, specials: bool) -> Counterexample | None:
        """None when equal or when the inputs are not legal for the original program."""
        if not space.legal(env):
            return None
        inputs = space.build(env, s, specials)
        if inputs is None:
            return None
        try:
            ref = run_trace(trace, inputs)
        except Exception:  # not a legal input for the original program
            return None
        return _attempt(run, plan, inputs, env, ref, direction)

    try:  # the program's own example first
        ref = run_trace(trace, run.example)
        cex = _attempt(run, plan, run.example, {s: run.hints.get(s.name) for s in space.symbols}, ref, direction)
    except Exception:
        cex = None
    if cex is not None:
        return cex
    rng = random.Random(seed)
    for k in range(examples):
        env, s, specials = space.draw_env(rng), rng.getrandbits(31), k % 2 == 1
        cex = attempt(env, s, specials)
        if cex is None:
            continue
        for sym in space.symbols:  # shrink: smallest extents that still fail, then no specials
            for v in range(0, env[sym]):
                smaller = attempt({**env, sym: v}, s, specials)
                if smaller is not None:
                    env, cex = {**env, sym: v}, smaller
                    break
        if specials:
            cex = attempt(env, s, False) or cex
        return cex
    return None


def _attempt(run: ProgramRun, plan: Trace, inputs: list[Any], env: dict, ref: Any, direction: str) -> Counterexample | None:
    try:
        got = run_trace(plan, inputs)
    except Exception as e:  # the rewritten plan must run wherever the original does
        problem = f"the plan raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return _cex(run, direction, env, inputs, problem, ref, None, plan)
    problem = compare(ref, got, inputs, run.trace)
    return _cex(run, direction, env, inputs, problem, ref, got, plan) if problem else None


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
