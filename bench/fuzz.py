"""Random-program fuzzer: random programs over satfuse's vocabulary, compared with eager.

    python bench/fuzz.py --count 1000 --seed 0 --mode optimize     # or jit | compile
    python bench/fuzz.py --count 200 --mode jit --out /tmp/repros  # repros of failures go there
    python bench/fuzz.py --count 200 --mode jit --device cuda      # on a GPU: plans run on real nvFuser

Each program is generated as Python source (``f(a, b, ...)`` plus ``inputs(D0=.., v=0)``
that builds its inputs), from an op table derived from ``engine/vocab.py`` (every unary
and binary op, reductions, shape ops, indexing, creation) plus in-place ops (``Tensor.op_``),
``out=`` forms, views of inputs and intermediates, writes through views, in-place view ops
and the scatter family. Inputs have random shapes (size 0 and 1 included), every dtype of
``DTYPES``, and random layouts: transposed, strided, offset, expanded, aliased (one
tensor passed twice), overlapping views of one buffer, self-overlapping; values mix nan,
±inf, ±0 and integer extremes. Each statement is checked on eager while generating, so
most programs are valid; a program whose last statement eager rejects is kept sometimes,
because the plan must reject it too.

A program runs under ``--mode``: ``optimize`` (a plan built once, called on the example
sizes and on new values), ``jit`` (``satfuse.jit(dynamic=True)``, called on sizes A, on
other sizes B, then on A again with new values) or ``compile``
(``torch.compile(backend="satfuse")``, same calls). Every call is compared with eager on
fresh copies of the inputs: output structure, dtype, shape, values (nan-aware, per-dtype
tolerance), which outputs share storage with which inputs and outputs, every input's final
value and shape; when eager raises, the plan must raise too (eager's exception type,
optionally wrapped) with every input untouched. A floating value beyond tolerance still counts
as equal when it is no farther from a float64 run of the same program than eager's value is:
element by element, or else as PyTorch's own accuracy checker for compiled code measures it
(root-mean-square error over the tensor, at most 2x eager's, 3x for float16/bfloat16; eager's CPU
kernels round some low-precision ops twice, accumulate in half precision, or are themselves far
from exact where a program is ill-conditioned); the summary counts these programs. It also
counts as equal when a call's every value equals eager's run on contiguous copies of the same
inputs (of each input that shares memory with nothing, so the program is unchanged): eager's CPU kernels
answer some values differently on their vectorized and strided paths (gelu of inf, the sign of a
complex negation's zero), and a plan computes values, not layouts; the summary counts these too.

Outcomes: ``equal``; ``refused`` (a satfuse error naming an unsupported form, raised by
``optimize``/the first call before anything runs); ``dynamo`` (``--mode compile`` only: the
program differs from eager the same way under ``torch.compile(backend="eager")``, or Dynamo
raises outside any satfuse frame, so the divergence is Dynamo's own: dead code it drops, a graph
break after a write, its exception types, its guard building on a fake it resized); ``eager-died``
(the worker died and eager alone, in a fresh process, dies on the same calls: ``INT_MIN // -1``
is SIGFPE in eager's kernel; programs are generated in the worker too, whose statements the generator
runs on eager, so such a death while generating counts here and the campaign goes on); ``wrong`` (anything else that differs from eager); ``crash`` (any other exception); ``hang`` (no result within ``--timeout``: the
worker process is killed and replaced). Each wrong/crash/hang program is reduced
automatically (statements, returns, inputs, layouts, sizes, values; each step kept only if
the same failure remains) and written as a standalone ``.py`` repro to ``--out``.

Deterministic by ``--seed``: program ``i`` is generated from ``Random(seed * 1_000_003 + i)``.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import random
import re
import sys
import time
import traceback
import types
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from bench.progress import Progress  # noqa: E402

DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "bool", "complex64")
DTYPE_WEIGHTS = (8, 2, 1.5, 1.5, 2, 3, 2, 1)
MODES = ("optimize", "jit", "compile")
DTYPE_VIEWS_ENV = "SATFUSE_FUZZ_DTYPE_VIEWS"
DEVICE_ENV = "SATFUSE_FUZZ_DEVICE"

# ---------------------------------------------------------------- helpers every program (and repro) carries

HELPERS = '''
def mk(shape, dtype, seed, kind="mixed"):
    """Deterministic values: random, with nan / +-inf / +-0 / integer extremes mixed in."""
    g = torch.Generator().manual_seed(seed)
    n = math.prod(shape)
    if dtype == torch.bool:
        v = torch.rand(n, generator=g) > 0.5
    elif dtype.is_floating_point or dtype.is_complex:
        v = (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dtype)
        if dtype.is_complex:
            v = v + 1j * (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dtype)
        if kind == "mixed" and n:
            sp = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e30, 1.0], dtype=torch.float64).to(dtype)
            pick = torch.rand(n, generator=g) < 0.2
            v = torch.where(pick, sp[torch.randint(0, 7, (n,), generator=g)], v)
    else:
        v = torch.randint(-5, 6, (n,), generator=g).to(dtype)
        if kind == "mixed" and n:
            ii = torch.iinfo(dtype)
            sp = torch.tensor([ii.min, ii.max, 0, -1, 1], dtype=dtype)
            pick = torch.rand(n, generator=g) < 0.15
            v = torch.where(pick, sp[torch.randint(0, 5, (n,), generator=g)], v)
    if kind == "ones":
        v = torch.ones(n, dtype=dtype)
    return v.reshape(shape).to(DEVICE)


def ix(shape, high, seed, dim=None):
    """Valid indices below ``high``; with ``dim``, distinct along ``dim`` (a scatter target
    written twice would depend on the loop order)."""
    g = torch.Generator().manual_seed(seed)
    if dim is None:
        return torch.randint(0, max(high, 1), shape, generator=g).to(DEVICE)
    full = list(shape)
    full[dim] = max(high, shape[dim])
    perm = torch.rand(full, generator=g).argsort(dim)
    return (perm.narrow(dim, 0, shape[dim]) % max(high, 1)).to(DEVICE)
'''



def header() -> str:
    """The imports every program (and repro) starts with, and the device its inputs are made
    on (``--device``; values are drawn on the CPU either way, so a seed's values are the same)."""
    device = os.environ.get(DEVICE_ENV, "cpu")
    return f"import math\n\nimport torch\nimport torch.nn.functional as F\n\nDEVICE = {device!r}\n"

# ---------------------------------------------------------------- program representation


@dataclass
class Stmt:
    src: str  # one line of f's body (no indentation)
    defs: tuple[str, ...] = ()


@dataclass
class Input:
    name: str
    lines: list[str]  # lines of inputs()' body that define it (D0.. and v in scope)
    kind: str = "tensor"  # tensor | scalar


@dataclass
class Program:
    inputs: list[Input]
    stmts: list[Stmt]
    returns: list[str]
    sizes_a: dict[str, int]
    sizes_b: dict[str, int]
    origin: str = ""

    def source(self) -> str:
        args = ", ".join(i.name for i in self.inputs)
        body = [f"    {s.src}" for s in self.stmts] or ["    pass"]
        ret = ", ".join(self.returns) + ("," if len(self.returns) == 1 else "")
        sig = ", ".join([f"{k}={v}" for k, v in self.sizes_a.items()] + ["v=0"])
        ilines = [f"    {ln}" for i in self.inputs for ln in i.lines]
        return (f"def f({args}):\n" + "\n".join(body) + f"\n    return ({ret})\n\n\n"
                f"def inputs({sig}):\n" + "\n".join(ilines) + f"\n    return [{args}]\n\n\n"
                f"SIZES_A = {self.sizes_a!r}\nSIZES_B = {self.sizes_b!r}\n")

    def module_source(self) -> str:
        return header() + HELPERS + "\n\n" + self.source()


def _names(src: str) -> set[str]:
    return set(re.findall(r"\b[A-Za-z_]\w*\b", src))


# ---------------------------------------------------------------- generation

SCALARS = {
    "float": ["2", "-1", "0", "0.5", "1.5", "-0.0", "math.nan", "math.inf", "-math.inf", "3"],
    "int": ["2", "-1", "0", "3", "1", "2**31", "-7"],
    "bool": ["True", "False", "2", "0.5"],
    "complex": ["2", "0.5", "1j", "-1"],
}


class Gen:
    """Generates one program, checking every statement on eager as it goes."""

    def __init__(self, rng: random.Random, vocab: dict[str, list[str]]) -> None:
        self.r = rng
        self.vocab = vocab
        self.inputs: list[Input] = []
        self.stmts: list[Stmt] = []
        self.n_tmp = 0
        self.seed_ctr = rng.randrange(1000)
        self.env: dict[str, Any] = {}
        self.ns: dict[str, Any] = {}
        exec(compile(header() + HELPERS, "<fuzz helpers>", "exec"), self.ns)

    # -------------------------------------------------------- inputs
    def _seed(self) -> int:
        self.seed_ctr += 1
        return self.seed_ctr

    def _shape(self, syms: list[str]) -> list[str]:
        rank = self.r.choices([0, 1, 2, 3], [1, 3, 4, 2])[0]
        return [self.r.choice(syms) if self.r.random() < 0.85 else str(self.r.choice([1, 1, 2]))
                for _ in range(rank)]

    def _input(self, name: str, syms: list[str]) -> Input:
        r = self.r
        if r.random() < 0.06:
            return Input(name, [f"{name} = {r.choice(['2.5', '-1.0', '3', '0', '1e-3'])}"], "scalar")
        dt = r.choices(DTYPES, DTYPE_WEIGHTS)[0]
        shape = self._shape(syms)
        prior = [i for i in self.inputs if i.kind == "tensor"]
        if prior and r.random() < 0.12:  # the same tensor passed twice, or an overlapping view of its buffer
            p = r.choice(prior)
            if r.random() < 0.5:
                return Input(name, [f"{name} = {p.name}"])
            base = f"{p.name}_base"
            if any(ln.startswith(base) for ln in p.lines):
                return Input(name, [f"{name} = {base}[:-1]" if p.lines[-1].endswith("[1:]") else f"{name} = {base}"])
        return Input(name, self._layout(name, shape, dt))

    def _layout(self, name: str, shape: list[str], dt: str) -> list[str]:
        r = self.r
        s = self._seed()
        tup = lambda sh: "(" + ", ".join(sh) + ("," if len(sh) == 1 else "") + ")"  # noqa: E731
        mk = lambda sh: f"mk({tup(sh)}, torch.{dt}, {s} + v)"  # noqa: E731
        rank = len(shape)
        kind = r.choices(["contig", "transposed", "strided", "offset", "expanded", "selfoverlap"],
                         [5, 2, 1.5, 1.5, 1.5, 0.4])[0] if rank else "contig"
        if kind == "transposed" and rank >= 2:
            perm = list(range(rank))
            while perm == sorted(perm):
                r.shuffle(perm)
            base = [None] * rank
            for i, p in enumerate(perm):
                base[p] = shape[i]
            return [f"{name} = {mk(base)}.permute{tup([str(p) for p in perm])}"]
        if kind == "strided":
            d = r.randrange(rank)
            base = list(shape)
            base[d] = f"2 * {shape[d]}"
            idx = ", ".join([":"] * d + ["::2"])
            return [f"{name} = {mk(base)}[{idx}]"]
        if kind == "offset":
            base = [f"{shape[0]} + 1", *shape[1:]]
            return [f"{name}_base = {mk(base)}", f"{name} = {name}_base[1:]"]
        if kind == "expanded":
            d = r.randrange(rank)
            base = list(shape)
            base[d] = "1"
            return [f"{name} = {mk(base)}.expand{tup(shape)}"]
        if kind == "selfoverlap" and rank == 2:
            return [f"{name} = {mk([f'{shape[0]} + {shape[1]}'])}.as_strided({tup(shape)}, (1, 1))"]
        return [f"{name} = {mk(shape)}"]

    # -------------------------------------------------------- eager state
    def _run_inputs(self, sizes: dict[str, int]) -> dict[str, Any]:
        ns = dict(self.ns)
        body = "\n".join(f"    {ln}" for i in self.inputs for ln in i.lines)
        names = ", ".join(i.name for i in self.inputs)
        sig = ", ".join(list(sizes) + ["v=0"])
        exec(f"def _inp({sig}):\n{body or '    pass'}\n    return [{names}]\n", ns)
        vals = ns["_inp"](**sizes)
        return dict(zip([i.name for i in self.inputs], vals))

    def _replay(self) -> None:
        self.env = self._run_inputs(self.sizes)
        for st in self.stmts:
            exec(st.src, self.ns, self.env)

    def _try(self, src: str, defs: tuple[str, ...]) -> bool | None:
        """True: eager accepts; False: eager raises (state replayed); None: a warning-worthy
        statement we never keep (resizing a non-empty out= tensor)."""
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                exec(src, self.ns, self.env)
        except Exception:  # noqa: BLE001 - eager rejects it
            self._replay()
            return False
        return True

    # -------------------------------------------------------- operands
    def tensors(self, pred: Callable[[torch.Tensor], bool] = lambda t: True) -> list[str]:
        return [k for k, v in self.env.items() if isinstance(v, torch.Tensor) and pred(v)]

    def var(self, pred: Callable[[torch.Tensor], bool] = lambda t: True) -> str | None:
        vs = self.tensors(pred)
        if not vs:
            return None
        w = [1 + 2 * (i >= len(vs) - 3) for i in range(len(vs))]  # recent values more often
        return self.r.choices(vs, w)[0]

    def scalar(self, t: torch.Tensor | None) -> str:
        if t is None or t.dtype.is_floating_point:
            kind = "float"
        elif t.dtype.is_complex:
            kind = "complex"
        elif t.dtype == torch.bool:
            kind = "bool"
        else:
            kind = "int"
        if self.r.random() < 0.15:
            kind = self.r.choice(list(SCALARS))
        return self.r.choice(SCALARS[kind])

    def other(self, x: str) -> str:
        """A second operand for ``x``: a broadcast-compatible tensor or a scalar."""
        t = self.env[x]
        if self.r.random() < 0.25:
            return self.scalar(t)

        def ok(u: torch.Tensor) -> bool:
            try:
                torch.broadcast_shapes(t.shape, u.shape)
            except RuntimeError:
                return False
            return True

        return self.var(ok) or self.scalar(t)

    def dim(self, x: str) -> int:
        r = self.env[x].dim()
        return self.r.randrange(-r, r) if r else 0

    def foreach(self, x: str, v: str) -> tuple[str, tuple[str, ...]]:
        """A ``torch._foreach_*`` op over a list of the program's tensors (or views of them; one tensor
        may come twice): in place, as optimizers call them, or functional (its first result kept)."""
        r, V = self.r, self.vocab
        names = [x] + [self.var() or x for _ in range(r.randint(0, 2))]
        items = [self.view(n) if r.random() < 0.25 else n for n in names]
        lst = f"[{', '.join(items)}]"
        inplace = r.random() < 0.75
        suffix = "_" if inplace else ""
        if r.random() < 0.35:
            op = r.choice([o for o in V["unary"] if hasattr(torch, f"_foreach_{o}{suffix}")] or ["abs"])
            call = f"torch._foreach_{op}{suffix}({lst})"
        else:
            op = r.choice([o for o in V["binary"] if hasattr(torch, f"_foreach_{o}{suffix}")] or ["add"])
            if r.random() < 0.5:
                other = self.scalar(self.env[x])
            else:  # a list operand: per position, a tensor of the program or a view of one
                other = f"[{', '.join(self.other(n) if r.random() < 0.7 else self.view(n) for n in names)}]"
            call = f"torch._foreach_{op}{suffix}({lst}, {other})"
        return (call, ()) if inplace else (f"{v} = {call}[0]", (v,))

    def view(self, x: str) -> str:
        """A view expression of ``x`` (for reads and for writes through it)."""
        t = self.env[x]
        r, rank = self.r, t.dim()
        opts = [f"{x}.view({x}.shape)", f"{x}.detach()"]
        if rank:
            d = self.dim(x)
            n = t.shape[d]
            opts += [f"{x}[1:]", f"{x}[:-1]", f"{x}[::2]", f"{x}.unsqueeze({d})"]
            if rank >= 2:
                opts += [f"{x}[:, 1:]", f"{x}[..., ::2]", f"{x}.transpose(0, 1)", f"{x}.diagonal()", f"{x}[0]"]
            if rank == 2:
                opts.append(f"{x}.t()")
            if n:
                s = r.randrange(n)
                opts += [f"{x}.narrow({d}, {s}, {r.randrange(n - s + 1)})", f"{x}.select({d}, {r.randrange(-n, n)})",
                         f"{x}[{r.randrange(-n, n)}]"]
                if n >= 2:
                    opts.append(f"{x}.unfold({d}, 2, {r.choice([1, 2])})")
            if 1 in t.shape:
                opts.append(f"{x}.squeeze({t.shape.index(1)})")
                sh = list(t.shape)
                sh[sh.index(1)] = r.choice([2, 3])
                opts.append(f"{x}.expand({', '.join(map(str, sh))})")
            opts += [f"{x}.reshape(-1)", f"{x}.view(-1)", f"{x}.flatten()"]
            perm = list(range(rank))
            r.shuffle(perm)
            opts.append(f"{x}.permute({', '.join(map(str, perm))})")
            opts.append(f"{x}.as_strided(({max(1, min(t.numel(), 2))},), (1,))" if t.numel() else f"{x}[:0]")
        return r.choice(opts)

    # -------------------------------------------------------- statements
    def fresh(self) -> str:
        self.n_tmp += 1
        return f"t{self.n_tmp - 1}"

    def statement(self) -> tuple[str, tuple[str, ...]] | None:
        r = self.r
        x = self.var()
        if x is None:
            return None
        t = self.env[x]
        v = self.fresh()
        kinds = ["unary", "binary", "inplace_unary", "inplace_binary", "out", "view", "write_view", "setitem",
                 "reduce", "shape", "cast", "where", "cat", "pad", "index", "scatter", "creation", "copy",
                 "inplace_view", "nn", "clamp", "split", "clone", "foreach", "dtype_view"]
        # dtype views last, weight 0 unless asked for: the other statements draw as before, so a
        # seed's programs stay what they were (the suite's slice and earlier campaigns)
        w = [6, 8, 3, 6, 2, 5, 5, 3, 3, 3, 2, 2, 1.5, 1.5, 3, 2, 1, 2, 1, 1.5, 1.5, 1, 1, 1.5,
             2 if self.vocab.get("dtype_views") else 0]
        k = r.choices(kinds, w)[0]
        V = self.vocab
        if k == "unary":
            op = r.choice(V["unary"])
            return (f"{v} = {x}.{op}()" if r.random() < 0.3 and hasattr(torch.Tensor, op) else f"{v} = torch.{op}({x})"), (v,)
        if k == "binary":
            op = r.choice(V["binary"])
            y = self.other(x)
            kw = ""
            if op in ("add", "sub") and r.random() < 0.3:
                kw = f", alpha={self.scalar(t)}"
            if op == "div" and r.random() < 0.5:
                kw = f", rounding_mode={r.choice(['trunc', 'floor'])!r}"
            a, b = (x, y) if r.random() < 0.85 else (y, x)
            if not isinstance(self.env.get(a), torch.Tensor) and not isinstance(self.env.get(b), torch.Tensor):
                a = x
            return f"{v} = torch.{op}({a}, {b}{kw})", (v,)
        if k == "inplace_unary":
            op = r.choice([o for o in V["unary"] if hasattr(torch.Tensor, o + "_")])
            return f"{x}.{op}_()", ()
        if k == "inplace_binary":
            op = r.choice([o for o in V["binary"] if hasattr(torch.Tensor, o + "_")])
            kw = ""
            if op == "div" and r.random() < 0.4:
                kw = f", rounding_mode={r.choice(['trunc', 'floor'])!r}"
            tgt = x if r.random() < 0.7 else self.view(x)
            return f"{tgt}.{op}_({self.other(x)}{kw})", ()
        if k == "foreach":
            return self.foreach(x, v)
        if k == "out":
            op = r.choice(V["binary"] + V["unary"])
            args = f"{x}, {self.other(x)}" if op in V["binary"] else x
            dst = self.var(lambda u: u.shape == t.shape) or x
            return f"torch.{op}({args}, out={dst})", ()
        if k == "view":
            return f"{v} = {self.view(x)}", (v,)
        if k == "write_view":
            vw = self.view(x)
            op = r.choice(["add_", "mul_", "sub_", "copy_", "fill_", "zero_", "neg_", "masked_fill_", "clamp_"])
            if op in ("zero_", "neg_"):
                return f"{vw}.{op}()", ()
            if op == "fill_":
                return f"{vw}.fill_({self.scalar(t)})", ()
            if op == "masked_fill_":
                return f"{vw}.masked_fill_({vw} > 0, {self.scalar(t)})", ()
            if op == "clamp_":
                return f"{vw}.clamp_(min={self.scalar(t)})", ()
            return f"{vw}.{op}({self.other(x)})", ()
        if k == "setitem":
            if not t.dim():
                return f"{x}[()] = {self.scalar(t)}", ()
            idx = r.choice(["1:", ":-1", "::2", "0", "...", "-1"] + ([":, 1:", "..., ::2", ":, 0"] if t.dim() >= 2 else []))
            val = self.scalar(t) if r.random() < 0.5 else self.var() or self.scalar(t)
            return f"{x}[{idx}] = {val}", ()
        if k == "reduce":
            op = r.choice(V["reduce"] + ["mean", "var"])
            if r.random() < 0.2 or not t.dim():
                return f"{v} = {x}.{op}()", (v,)
            return f"{v} = {x}.{op}({self.dim(x)}, keepdim={r.random() < 0.5})", (v,)
        if k == "shape":
            rank = t.dim()
            opts = [f"{x}.reshape(-1)", f"{x}.unsqueeze({r.randrange(-rank - 1, rank + 1)})", f"{x}.contiguous()",
                    f"{x}.flip({self.dim(x)})" if rank else f"{x}.reshape(1)"]
            if rank >= 2:
                opts += [f"{x}.transpose({self.dim(x)}, {self.dim(x)})", f"{x}.reshape({x}.shape[0], -1)",
                         f"{x}.flatten(1)", f"{x}.mT"]
            if rank:
                opts.append(f"{x}.squeeze()")
            return f"{v} = {r.choice(opts)}", (v,)
        if k == "cast":
            return f"{v} = {x}.to(torch.{r.choices(DTYPES, DTYPE_WEIGHTS)[0]})", (v,)
        if k == "where":
            c = self.var(lambda u: u.dtype == torch.bool) if r.random() < 0.5 else None
            c = c or f"{x} > 0" if t.dtype != torch.complex64 else f"{x}.real > 0"
            return f"{v} = torch.where({c}, {x}, {self.other(x)})", (v,)
        if k == "cat":
            if not t.dim():
                return f"{v} = torch.stack([{x}, {x}])", (v,)
            d = self.dim(x)
            ys = [u for u in self.tensors(lambda u: u.dim() == t.dim()
                                           and all(a == b for i, (a, b) in enumerate(zip(u.shape, t.shape))
                                                   if i != d % t.dim()))]
            y = r.choice(ys) if ys else x
            return f"{v} = torch.cat([{x}, {y}], {d})", (v,)
        if k == "pad":
            if not t.dim():
                return None
            pads = [r.choice([-1, 0, 1, 2]) for _ in range(2 * r.randint(1, min(2, t.dim())))]
            mode = r.choice(["constant"] * 4 + ["reflect", "replicate", "circular"])
            val = f", value={self.scalar(t)}" if mode == "constant" and r.random() < 0.7 else ""
            if mode == "circular":  # eager's circular pad with a negative pad reads uninitialized memory
                pads = [max(p, 0) for p in pads]
            return f"{v} = F.pad({x}, {tuple(pads)}, mode={mode!r}{val})", (v,)
        if k in ("index", "scatter"):
            return self._index(k, x, t, v)
        if k == "creation":
            dt = r.choices(DTYPES, DTYPE_WEIGHTS)[0]
            opts = [f"torch.full_like({x}, {self.scalar(t)})", f"torch.zeros_like({x})", f"torch.ones_like({x}, dtype=torch.{dt})",
                    f"{x}.new_full({x}.shape, {self.scalar(t)})",
                    f"torch.arange({x}.shape[{self.dim(x)}], dtype=torch.{dt}, device={x}.device)" if t.dim()
                    else f"torch.arange(3, dtype=torch.{dt}, device={x}.device)",
                    f"torch.full(({x}.numel(), 2), {self.scalar(None)}, device={x}.device)"]
            return f"{v} = {r.choice(opts)}", (v,)
        if k == "copy":
            return f"{x}.copy_({self.other(x)})", ()
        if k == "inplace_view":
            rank = t.dim()
            opts = [f"{x}.unsqueeze_({r.randrange(-rank - 1, rank + 1)})", f"{x}.squeeze_()"]
            if rank <= 2:
                opts.append(f"{x}.t_()")
            if rank >= 2:
                opts.append(f"{x}.transpose_(0, {rank - 1})")
            return r.choice(opts), ()
        if k == "nn":
            if not t.dim():
                return f"{v} = torch.sigmoid({x})", (v,)
            d = self.dim(x)
            opts = [f"torch.softmax({x}, {d})", f"torch.log_softmax({x}, {d})",
                    f"F.layer_norm({x}, {x}.shape[-1:])", f"F.relu({x})", f"F.gelu({x})",
                    f"torch.softmax({x}, {d}, dtype=torch.float64)"]
            return f"{v} = {r.choice(opts)}", (v,)
        if k == "clamp":
            opts = [f"torch.clamp({x}, {self.scalar(t)}, {self.scalar(t)})", f"torch.clamp({x}, min={self.scalar(t)})",
                    f"torch.lerp({x}, {self.other(x)}, 0.3)", f"torch.addcmul({x}, {self.other(x)}, {self.other(x)}, value=2)",
                    f"torch.addcdiv({x}, {self.other(x)}, {self.other(x)})"]
            if r.random() < 0.3:
                return f"{x}.clamp_({self.scalar(t)}, {self.scalar(t)})", ()
            return f"{v} = {r.choice(opts)}", (v,)
        if k == "split":
            if not t.dim():
                return None
            d = self.dim(x)
            n = t.shape[d]
            opts = [f"torch.split({x}, {r.randint(1, max(n, 1))}, {d})[{r.choice([0, -1])}]",
                    f"{x}.chunk({r.randint(1, 3)}, {d})[0]", f"{x}.unbind({d})[0]" if n else f"{x}.unbind({d})"]
            return f"{v} = {r.choice(opts)}", (v,)
        if k == "clone":
            return f"{v} = {x}.clone()", (v,)
        if k == "dtype_view":
            return self.dtype_view(x, t, v)
        return None

    def dtype_view(self, x: str, t: torch.Tensor, v: str) -> tuple[str, tuple[str, ...]] | None:
        """``x.view(dtype)``: the same bytes read as another dtype (a bitcast; where the item
        sizes differ the last dim scales, which needs it contiguous), read or written through."""
        r = self.r
        same = {"float32": ["int32"], "int32": ["float32"], "float64": ["int64", "complex64"],
                "int64": ["float64", "complex64"], "complex64": ["float64", "int64"], "float16": ["bfloat16"],
                "bfloat16": ["float16"]}  # not bool as int8: a write through it stores bytes no bool holds
        other = {"float32": ["float16", "bfloat16", "int64", "float64", "complex64"], "int32": ["float16", "int64"],
                 "float64": ["float32", "int32"], "int64": ["int32", "float32"], "complex64": ["float32", "int32"],
                 "float16": ["float32", "int32"], "bfloat16": ["float32"]}
        dt = str(t.dtype).replace("torch.", "")
        opts = list(same.get(dt, []))
        if t.dim() and t.stride(-1) == 1:
            opts += other.get(dt, [])
        for to in r.sample(opts, len(opts)):
            if getattr(torch, to).itemsize == t.itemsize:
                break
            ratio = getattr(torch, to).itemsize / t.itemsize
            n = t.shape[-1]
            k = int(ratio)
            if ratio < 1 or (n % k == 0 and t.storage_offset() % k == 0
                             and all(t.stride(i) % k == 0 for i in range(t.dim() - 1))):
                break
        else:
            return None
        vw = f"{x}.view(torch.{to})"
        if r.random() < 0.3 and to not in ("bool", "int8", "uint8"):
            op = r.choice(["add_(1)", "mul_(2)", "neg_()", "zero_()"] if "int" in to else
                          ["add_(0.5)", "mul_(2)", "neg_()", "abs_()", "zero_()"])
            return f"{vw}.{op}", ()
        return f"{v} = {vw}", (v,)

    def _index(self, k: str, x: str, t: torch.Tensor, v: str) -> tuple[str, tuple[str, ...]] | None:
        r = self.r
        if not t.dim():
            return None
        d = self.dim(x)
        n = t.shape[d]
        name = f"i{len(self.inputs)}"
        kk = r.randint(0, max(n, 1) + 1)
        if k == "index":
            kind = r.choice(["gather", "index_select", "take_along_dim", "index_put", "getitem", "masked_fill"])
            if kind == "masked_fill":
                return f"{v} = {x}.masked_fill({x} != {x}, {self.scalar(t)})" if r.random() < 0.3 else \
                    f"{v} = {x}.masked_fill({self.var(lambda u: u.dtype == torch.bool) or f'{x} > 0'}, {self.scalar(t)})", (v,)
            if kind in ("gather", "take_along_dim"):
                shape = list(t.shape)
                shape[d] = kk
                self._add_index(name, shape, n, None)
                if kind == "gather":
                    return f"{v} = torch.gather({x}, {d}, {name})", (v,)
                return f"{v} = torch.take_along_dim({x}, {name}, {d})", (v,)
            self._add_index(name, [kk], n, None)
            if kind == "index_select":
                return f"{v} = torch.index_select({x}, {d}, {name})", (v,)
            if kind == "getitem":
                return f"{v} = {x}[{name}]", (v,)
            val = self.scalar(t)
            return f"{x}.index_put_(({name},), torch.tensor({val}, dtype={x}.dtype, device={x}.device), accumulate={r.random() < 0.5})", ()
        kind = r.choice(["scatter", "scatter_", "scatter_add", "index_copy", "index_copy_", "index_add_", "index_fill_"])
        shape = list(t.shape)
        if kind.startswith("scatter"):
            shape[d] = min(kk, n)
            self._add_index(name, shape, n, d % t.dim())
            src = self.var(lambda u: u.shape == torch.Size(shape) and u.dtype == t.dtype) or f"torch.ones_like({name}, dtype={x}.dtype)"
            if kind == "scatter":
                return f"{v} = torch.scatter({x}, {d}, {name}, {src})", (v,)
            if kind == "scatter_":
                return f"{x}.scatter_({d}, {name}, {src})", ()
            return f"{v} = torch.scatter_add({x}, {d}, {name}, {src})", (v,)
        self._add_index(name, [min(kk, n)], n, 0)
        shape[d] = min(kk, n)
        if kind == "index_fill_":
            return f"{x}.index_fill_({d}, {name}, {self.scalar(t)})", ()
        src = self.var(lambda u: u.shape == torch.Size(shape) and u.dtype == t.dtype) or \
            f"torch.zeros_like({x}).narrow({d}, 0, {shape[d]})"
        if kind == "index_copy":
            return f"{v} = torch.index_copy({x}, {d}, {name}, {src})", (v,)
        return f"{x}.{kind}({d}, {name}, {src})", ()

    def _add_index(self, name: str, shape: list[int], high: int, dim: int | None) -> None:
        tup = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
        extra = "" if dim is None else f", dim={dim}"
        self.inputs.append(Input(name, [f"{name} = ix({tup}, {high}, {self._seed()} + v{extra})"]))
        self.env[name] = self._run_inputs(self.sizes)[name]

    # -------------------------------------------------------- the program
    def program(self, max_stmts: int = 8) -> Program:
        r = self.r
        nsym = r.randint(1, 3)
        syms = [f"D{i}" for i in range(nsym)]
        size_pool, size_w = [0, 1, 2, 3, 4, 5], [0.5, 2, 3, 3, 2, 1.5]
        self.sizes = {s: r.choices(size_pool, size_w)[0] for s in syms}
        sizes_b = {s: r.choice([n for n in size_pool if n != self.sizes[s]] or [2]) for s in syms}
        for i in range(r.randint(1, 4)):
            self.inputs.append(self._input("abcd"[i], syms))
        if not any(i.kind == "tensor" for i in self.inputs):
            self.inputs.append(Input("e", self._layout("e", self._shape(syms) or ["D0"], "float32")))
        try:
            self._replay()
        except Exception:  # noqa: BLE001 - an input layout eager cannot build at these sizes: simplest inputs
            self.inputs = [Input("a", [f"a = mk((D0,), torch.float32, {self._seed()} + v)"])]
            self._replay()
        target = r.randint(1, max_stmts)
        tries = 0
        while len(self.stmts) < target and tries < 60:
            tries += 1
            n_inputs = len(self.inputs)
            got = self.statement()
            if got is None:
                continue
            src, defs = got
            ok = self._try(src, defs)
            if ok:
                self.stmts.append(Stmt(src, defs))
            elif len(self.stmts) >= 1 and r.random() < 0.04:  # eager rejects: the plan must reject it too
                self.stmts.append(Stmt(src, defs))
                break
            else:
                del self.inputs[n_inputs:]
                self._replay()
        outs = [k for k in self.tensors() if k not in {i.name for i in self.inputs}] or [self.inputs[-1].name]
        rets = r.sample(outs, min(len(outs), r.randint(1, 3)))
        if r.random() < 0.15:
            rets.append(r.choice(self.tensors() or rets))
        return Program(self.inputs, self.stmts, rets, dict(self.sizes), sizes_b)


def vocab_table() -> dict[str, list[str]]:
    """The op table, derived from the vocabulary: every unary/binary/reduction IR op that
    torch spells the same way."""
    sys.path.insert(0, str(ROOT))
    from satfuse.engine import vocab

    return {
        "unary": [n for n in vocab.UNARY if hasattr(torch, n)],
        "binary": [n for n in vocab.BINARY if hasattr(torch, n)],
        "reduce": list(vocab.REDUCTIONS),
        # ``--dtype-views`` (an environment variable: the worker processes build their own table)
        "dtype_views": ["on"] if os.environ.get(DTYPE_VIEWS_ENV) else [],
    }


def generate(seed: int, index: int, vocab: dict[str, list[str]]) -> Program:
    rng = random.Random(seed * 1_000_003 + index)
    for attempt in range(20):
        try:
            p = Gen(rng, vocab).program()
        except Exception:  # noqa: BLE001 - a generator dead end: draw again from the same stream
            continue
        p.origin = f"seed {seed}, program {index}" + (f" (draw {attempt})" if attempt else "")
        return p
    raise RuntimeError(f"could not generate program {index} of seed {seed}")


# ---------------------------------------------------------------- running and comparing (in a worker)

TOL = {
    torch.float32: (1e-4, 1e-5), torch.complex64: (1e-4, 1e-5), torch.float64: (1e-7, 1e-7),
    torch.complex128: (1e-7, 1e-7),
    torch.float16: (4e-3, 1e-3), torch.bfloat16: (3e-2, 1e-2),
}


class Differs(Exception):
    """The plan's result differs from eager's; ``aspect`` names what (for the signature)."""

    def __init__(self, aspect: str, detail: str) -> None:
        super().__init__(f"{aspect}: {detail}")
        self.aspect = aspect


def _close(what: str, got: Any, want: Any) -> None:
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise Differs("type", f"{what}: {type(got).__name__}, eager gives a tensor")
        if got.dtype != want.dtype:
            raise Differs("dtype", f"{what}: {got.dtype}, eager {want.dtype}")
        if got.shape != want.shape:
            raise Differs("shape", f"{what}: {tuple(got.shape)}, eager {tuple(want.shape)}")
        rtol, atol = TOL.get(want.dtype, (0, 0))
        try:
            torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
        except AssertionError as e:
            msg = " ".join(str(e).split())[:300]
            raise Differs("values", f"{what}: {msg}; plan {_brief(got)} eager {_brief(want)}") from None
    elif isinstance(want, float) and isinstance(got, float) and math.isnan(want) and math.isnan(got):
        return
    elif type(got) is not type(want) or got != want:
        raise Differs("values", f"{what}: {got!r}, eager {want!r}")


def _brief(t: torch.Tensor) -> str:
    s = str(t.detach().flatten()[:8].tolist())
    return s if len(s) < 120 else s[:117] + "..."


def _storage(t: Any) -> int | None:
    if isinstance(t, torch.Tensor) and t.numel():
        return t.untyped_storage().data_ptr()
    return None


def _aliasing(outs: list[Any], ins: list[Any]) -> list[tuple[int, str]]:
    """Which outputs share storage with which inputs and earlier outputs."""
    pairs = []
    for i, o in enumerate(outs):
        so = _storage(o)
        if so is None:
            continue
        pairs += [(i, f"input {j}") for j, x in enumerate(ins) if _storage(x) == so]
        pairs += [(i, f"output {j}") for j in range(i) if _storage(outs[j]) == so]
    return pairs


def _snapshot(xs: list[Any]) -> list[Any]:
    return [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in xs]


def _run(fn: Callable, ins: list[Any]) -> tuple[list[Any] | None, BaseException | None]:
    import torch.utils._pytree as pytree

    try:
        return pytree.tree_leaves(fn(*ins)), None
    except Exception as e:  # noqa: BLE001
        return None, e


def _exc_matches(got: BaseException, want: BaseException) -> bool:
    e: BaseException | None = got
    while e is not None:
        if isinstance(e, type(want)) or isinstance(want, type(e)) and type(e) is not Exception:
            return True
        e = e.__cause__ or e.__context__
    msg = _first(want)
    return type(want).__name__ in str(got) or bool(msg) and msg in str(got)


def _where(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    own = [fr for fr in tb if "satfuse" in fr.filename or "/engine/" in fr.filename or "/lowering/" in fr.filename]
    fr = (own or tb or [None])[-1]
    return "" if fr is None else f" [{os.path.basename(fr.filename)}:{fr.lineno}]"


def _dynamos_own(e: BaseException) -> bool:
    """Raised by Dynamo itself, outside any satfuse frame (its guard building after a backend
    returned: a fake kernel resized an empty in-place target that eager refuses)."""
    frames = traceback.extract_tb(e.__traceback__)
    own = ("satfuse", "/engine/", "/lowering/", "/rewrites/")
    return any("torch/_dynamo" in fr.filename for fr in frames) and not any(
        any(o in fr.filename for o in own) for fr in frames)


def _first(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return (s[0] if s else "")[:240]


#: the signature of an equal result some of whose values needed the float64 criterion
ACCURATE = "as-accurate-as-eager"
#: ... or eager's own answer on the same input values laid out contiguously (``_plain_layout``)
PLAIN_LAYOUT = "eager-on-plain-layout"


def _refusal(e: BaseException | None) -> bool:
    """A clear refusal at build time: a satfuse error (as such, or as the cause of jit's
    RecompileError / Dynamo's BackendCompilerFailed) whose message matches a row of the one table
    of refused forms, ``engine/unsupported.py``; any other build error is a crash."""
    from satfuse.engine.unsupported import refused_as_listed

    while e is not None:
        if refused_as_listed(e) is not None:
            return True
        e = e.__cause__
    return False


#: the dtypes the accuracy reference widens (float64 runs stay float64)
WIDE = {torch.float16: torch.float64, torch.bfloat16: torch.float64, torch.float32: torch.float64,
        torch.complex64: torch.complex128}


def _widened(xs: list[Any]) -> list[Any] | None:
    """The inputs in float64 / complex128, sharing memory exactly as the originals do (one widened
    copy per storage); None where one storage is viewed with two dtypes."""
    flats: dict[int, tuple[torch.dtype, torch.Tensor]] = {}
    out = []
    for x in xs:
        if not isinstance(x, torch.Tensor):
            out.append(x)
            continue
        st = x.untyped_storage()
        dtype, flat = flats.get(st.data_ptr(), (x.dtype, None))
        if dtype != x.dtype:
            return None
        if x.dtype not in WIDE:
            flats[st.data_ptr()] = (x.dtype, None)
            out.append(x)
            continue
        if flat is None:
            n = st.nbytes() // x.element_size()
            flat = torch.empty(0, dtype=x.dtype, device=x.device).set_(st, 0, (n,), (1,)).to(WIDE[x.dtype])
            flats[st.data_ptr()] = (x.dtype, flat)
        out.append(flat.as_strided(x.size(), x.stride(), x.storage_offset()))
    return out


def _plain_layout(xs: list[Any]) -> list[Any] | None:
    """The inputs with the same values, each one that shares memory with nothing (no other input,
    no element of its own twice) made a fresh contiguous tensor: the same program to every reader
    but eager's CPU kernels, several of which answer differently on their vectorized (contiguous)
    and scalar (strided) paths (gelu of inf, the sign of a complex negation's zero, ulps of erf).
    Inputs sharing memory keep their layout, since relaying them out would change what the program
    computes (jit fuzz 10042 #160: an expanded input nobody read kept a strided one's gelu from
    this criterion). None where no input changes."""
    from satfuse.engine.vocab import non_overlapping

    count: dict[int, int] = {}
    for x in xs:
        if isinstance(x, torch.Tensor) and x.numel():
            ptr = x.untyped_storage().data_ptr()
            count[ptr] = count.get(ptr, 0) + 1
    out, changed = [], False
    for x in xs:
        if (isinstance(x, torch.Tensor) and x.numel() and count[x.untyped_storage().data_ptr()] == 1
                and non_overlapping(x.shape, x.stride())):
            x = x.detach().clone(memory_format=torch.contiguous_format)
            changed = True
        out.append(x)
    return out if changed else None


def _as_accurate(got: Any, want: Any, ref: Any) -> bool:
    """The plan's value is no farther from the float64 run's than eager's (beyond the dtype's
    tolerance). First element by element; failing that, as PyTorch's own accuracy checker for
    compiled code measures it (``torch._dynamo.utils.same`` with ``fp64_ref``: the root-mean-square
    error over the tensor) with its multipliers (2, and 3 for float16/bfloat16, without its extra
    leniency for small tensors), and every element the plan makes non-finite or nan non-finite in
    eager's value too. The second form is for
    ill-conditioned programs (``fmod`` by a gelu of -2e-05) where eager's own error is large and
    which of two noisy values lies closer is a coin toss per element."""
    if not all(isinstance(t, torch.Tensor) for t in (got, want, ref)) or ref.shape != want.shape:
        return False
    if not (want.is_floating_point() or want.is_complex()) or ref.is_complex() != want.is_complex():
        return False
    wide = torch.complex128 if want.is_complex() else torch.float64
    g, w, r = (t.detach().to(wide) for t in (got, want, ref))

    def err(x: torch.Tensor) -> torch.Tensor:
        same = (x == r) | (x.isnan() & r.isnan())
        return torch.where(same, 0.0, (x - r).abs().double().nan_to_num(nan=math.inf))

    rtol, atol = TOL.get(want.dtype, (0, 0))
    slack = atol + rtol * r.abs().double().nan_to_num(nan=0.0, posinf=0.0)
    eg, ew = err(g), err(w)
    if bool((eg <= ew + slack).all()):
        return True
    if bool((eg.isinf() & ~ew.isinf()).any()):
        return False
    finite = ~ew.isinf()
    multiplier = 3.0 if want.dtype in (torch.float16, torch.bfloat16) else 2.0
    rms = [float(e[finite].square().mean().sqrt()) for e in (eg, ew)]
    return not bool(finite.any()) or rms[0] <= multiplier * rms[1]


def check_call(label: str, fn: Callable, make: Callable[[], list[Any]], plan: Callable) -> set[str]:
    """One call of the plan vs eager on fresh inputs; raises Differs or the plan's exception.
    Returns the criteria some value needed beyond equality with eager's run: ``ACCURATE`` (it
    differs beyond tolerance but is as accurate as eager's, ``_as_accurate``), ``PLAIN_LAYOUT``
    (it is what eager answers for the same input values laid out contiguously, ``_plain_layout``;
    every value of that call is then compared with that run, so one call never mixes the two)."""
    e_ins = make()
    e_outs, e_exc = _run(fn, e_ins)
    p_ins = make()
    before = _snapshot(p_ins)
    p_outs, p_exc = _run(plan, p_ins)
    if e_exc is not None:
        if p_exc is None:
            raise Differs("no-raise", f"{label}: eager raises {type(e_exc).__name__}: {_first(e_exc)}; the plan returns")
        if not _exc_matches(p_exc, e_exc):
            raise Differs("dynamo-own" if _dynamos_own(p_exc) else "exception-type",
                          f"{label}: plan raises {type(p_exc).__name__}: {_first(p_exc)}"
                          f"{_where(p_exc)}; eager {type(e_exc).__name__}: {_first(e_exc)}")
        for j, (x, b) in enumerate(zip(p_ins, before)):
            if isinstance(x, torch.Tensor):
                try:
                    _close(f"{label}: input {j} after the raising call", x, b)
                except Differs as d:
                    raise Differs("written-then-raised", str(d)) from None
        return set()
    if p_exc is not None:
        raise p_exc
    if len(p_outs) != len(e_outs):
        raise Differs("structure", f"{label}: {len(p_outs)} outputs, eager {len(e_outs)}")
    wide: list = []  # [outputs, inputs after] of the float64 run, made on the first value difference

    def close(what: str, g: Any, w: Any, k: int, j: int) -> str:
        try:
            _close(what, g, w)
            return ""
        except Differs as d:
            if d.aspect != "values":
                raise
            if not wide:
                ins = _widened(make())
                outs, exc = _run(fn, ins) if ins is not None else (None, True)
                wide.append(None if exc is not None or len(outs) != len(e_outs) else (outs, ins))
            if wide[0] is None or not _as_accurate(g, w, wide[0][k][j]):
                raise
            return ACCURATE

    def compare(e_outs: list[Any], e_ins: list[Any]) -> set[str]:
        used = set()
        for i, (g, w) in enumerate(zip(p_outs, e_outs)):
            used.add(close(f"{label}: output {i}", g, w, 0, i))
        for j, (g, w) in enumerate(zip(p_ins, e_ins)):
            if isinstance(w, torch.Tensor):
                try:
                    used.add(close(f"{label}: input {j} after the call", g, w, 1, j))
                except Differs as d:
                    raise Differs("input-" + d.aspect, str(d)) from None
        return used - {""}

    try:
        used = compare(e_outs, e_ins)
    except Differs as d:
        if not d.aspect.endswith("values"):
            raise
        plain = _plain_layout(make())
        if plain is None:
            raise
        o, exc = _run(fn, plain)
        if exc is not None or len(o) != len(e_outs):
            raise d from None
        try:
            used = compare(o, plain) | {PLAIN_LAYOUT}
        except Differs:
            raise d from None
    ga, wa = _aliasing(p_outs, p_ins), _aliasing(e_outs, e_ins)
    if ga != wa:
        raise Differs("aliasing", f"{label}: outputs share storage with {ga}, eager {wa}")
    return used


def _load(src: str) -> dict[str, Any]:
    """The program as a module that ``sys.modules`` knows: Dynamo (torch 2.11, the GPU machines')
    imports a compiled function's ``__module__``, and a bare namespace made every compile raise."""
    mod = types.ModuleType("fuzz_program")
    sys.modules[mod.__name__] = mod
    exec(compile(src, "<fuzz program>", "exec"), mod.__dict__)
    return mod.__dict__


def evaluate(src: str, mode: str) -> dict[str, str]:
    """Run one program's source in ``mode``: {status, sig, detail}."""
    import warnings

    import satfuse

    warnings.filterwarnings("ignore")
    ns = _load(src)
    f, inputs, A, B = ns["f"], ns["inputs"], ns["SIZES_A"], ns["SIZES_B"]

    def res(status: str, sig: str = "", detail: str = "") -> dict[str, str]:
        return {"status": status, "sig": sig, "detail": detail}

    if mode == "optimize":
        calls = [("call 1", dict(A)), ("call 2, new values", dict(A, v=1))]
    else:
        calls = [("call 1", dict(A)), ("call 2, sizes " + str(B), dict(B)), ("call 3, new values", dict(A, v=1))]
    try:
        if mode == "optimize":
            e_ins = inputs(**A)
            _, e_exc = _run(f, e_ins)
            try:
                plan = satfuse.optimize(f, *inputs(**A))
            except Exception as e:  # noqa: BLE001
                if e_exc is not None:  # eager rejects it too: rejecting it at build time is right
                    return res("equal")
                if _refusal(e):
                    return res("refused", type(e).__name__, f"optimize: {type(e).__name__}: {_first(e)}")
                return res("crash", f"optimize:{type(e).__name__}", f"optimize raised {type(e).__name__}: "
                           f"{_first(e)}{_where(e)}")
        elif mode == "jit":
            plan = satfuse.jit(f, dynamic=True)
        else:
            torch._dynamo.reset()
            plan = torch.compile(f, backend="satfuse")
    except Exception as e:  # noqa: BLE001
        return res("crash", type(e).__name__, f"{type(e).__name__}: {_first(e)}{_where(e)}")
    from bench.warnings_seen import Seen

    with Seen("a satfuse bug") as bugs, _JitPath() as path:  # a graph satfuse failed to plan ran eagerly: right values, a crash
        out = _calls(f, inputs, calls, plan, mode)
    if bugs.messages and out["status"] == "equal":
        return res("crash", "planning", bugs.messages[0])
    if mode == "jit" and out["status"] == "equal":
        out["path"] = path.verdict()
    if mode == "compile" and out["sig"] == "dynamo-own":
        return {**out, "status": "dynamo", "detail": "raised by Dynamo outside satfuse: " + out["detail"]}
    if mode == "compile" and out["status"] in ("wrong", "crash"):
        # Dynamo's own divergences from eager (dead code it drops, a graph break after a write, its
        # own exception types) show with backend="eager" too: they are Dynamo's, not the backend's
        torch._dynamo.reset()
        ref = _calls(f, inputs, calls, torch.compile(f, backend="eager"), mode)
        if (ref["status"], ref["sig"]) == (out["status"], out["sig"]) or (
                ref["status"] == out["status"] and _divergence(ref["detail"]) == _divergence(out["detail"])):
            return {**out, "status": "dynamo", "detail": "backend='eager' differs the same way: " + out["detail"]}
    return out


class _JitPath(logging.Handler):
    """How ``satfuse.jit`` served a program's calls, from what it says once on ``satfuse.capture``:
    one symbolic plan, static plans (a symbolic limit: the reason), or eager runs (no plan)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def __enter__(self) -> "_JitPath":
        logging.getLogger("satfuse.capture").addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        logging.getLogger("satfuse.capture").removeHandler(self)

    def verdict(self) -> str:
        for kind, marker in (("eager", "no plan for this program ("), ("static", "no symbolic plan for this call (")):
            for m in self.messages:
                if marker in m:
                    why = m.split(marker, 1)[1]
                    return f"{kind}: " + re.sub(r"\b\d+(?:\.\d+)?\b", "N", re.sub(r"\b[su]\d+\b", "s", why))[:110]
        return "symbolic"


def _divergence(detail: str) -> str:
    """A difference from eager without its signature and the frames it was raised in: the same
    exception from the same call is one divergence whether Dynamo's graph code raised it (backend
    "eager": signature ``dynamo-own``) or the backend's eager run of that graph did."""
    return re.sub(r" \[[^\]]*\]", "", detail.split(": ", 1)[-1])


def _calls(f: Callable, inputs: Callable, calls: list, plan: Callable, mode: str) -> dict[str, str]:
    """The calls of one program through ``plan``, each against eager: {status, sig, detail}."""
    used: set[str] = set()
    try:
        for label, sizes in calls:
            used |= check_call(label, f, lambda s=sizes: inputs(**s), plan)
    except Differs as d:
        return {"status": "wrong", "sig": d.aspect, "detail": str(d)}
    except Exception as e:  # noqa: BLE001
        e = getattr(e, "inner_exception", None) or e  # Dynamo's BackendCompilerFailed: what the backend raised
        if mode != "optimize" and _refusal(e):
            return {"status": "refused", "sig": type(e).__name__, "detail": f"{type(e).__name__}: {_first(e)}"}
        if mode == "compile" and _dynamos_own(e):
            return {"status": "dynamo", "sig": "dynamo-own", "detail": f"raised by Dynamo outside satfuse: "
                    f"{type(e).__name__}: {_first(e)}{_where(e)}"}
        return {"status": "crash", "sig": type(e).__name__, "detail": f"{type(e).__name__}: {_first(e)}{_where(e)}"}
    return {"status": "equal", "sig": " ".join(sorted(used)), "detail": ""}


# ---------------------------------------------------------------- isolation: a worker process with a timeout


def quiet() -> None:
    """No warnings or torch error logs from programs that fail on purpose."""
    import warnings

    warnings.filterwarnings("ignore")
    for name in ("torch._subclasses.fake_tensor", "torch._dynamo", "torch._inductor", "torch.fx", "torch._guards"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _serve(conn: Any) -> None:
    quiet()
    torch.set_num_threads(1)
    evaluate(Program([Input("a", ["a = mk((D0,), torch.float32, 1 + v)"])], [Stmt("t0 = a + 1", ("t0",))], ["t0"],
                     {"D0": 2}, {"D0": 3}).module_source(), "optimize")
    conn.send(("ready",))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        if msg[0] == "generate":  # generation runs statements on eager: a SIGFPE there kills only us
            try:
                prog = generate(msg[1], msg[2], vocab_table())
            finally:  # a poisoned CUDA context fails every later statement, whether or not this one raised
                if _cuda_poisoned():
                    os._exit(CUDA_POISONED)
            conn.send(("done", prog))
            continue
        src, mode = msg
        try:
            out = evaluate(src, mode)
        except BaseException as e:  # noqa: BLE001 - the harness itself failed on this program
            out = {"status": "crash", "sig": f"harness:{type(e).__name__}", "detail": f"{type(e).__name__}: {_first(e)}"}
        if _cuda_poisoned():
            os._exit(CUDA_POISONED)
        conn.send(("done", out))


#: a worker's exit code after a kernel's device-side assert: the CUDA context is lost for good
#: (every later call fails), so the worker is replaced and the program judged as a death
CUDA_POISONED = 86


def _cuda_poisoned() -> bool:
    """Whether a device-side assert (eager's gather or index_add_ with an index out of range, which
    the CPU raises as an IndexError) has left this process's CUDA context unusable."""
    if not torch.cuda.is_initialized():
        return False
    try:
        torch.cuda.synchronize()
        torch.empty(1, device="cuda").fill_(0).item()
    except Exception:  # noqa: BLE001
        return True
    return False


def _eager_dies(src: str, mode: str, timeout: float = 120.0) -> bool:
    """Whether eager PyTorch alone, in a fresh process, dies on the program's calls (a signal:
    ``INT_MIN // -1`` is SIGFPE in eager's integer division kernel; on CUDA, a device-side assert,
    after which the process can run nothing): then the worker's death is eager's, not the plan's."""
    import subprocess

    calls = "[SIZES_A, dict(SIZES_A, v=1)]" if mode == "optimize" else "[SIZES_A, SIZES_B, dict(SIZES_A, v=1)]"
    code = (src + f"\nfor _s in {calls}:\n    try:\n        f(*inputs(**_s))\n    except Exception:\n"
            "        pass\n"
            "if torch.cuda.is_initialized():\n    try:\n        torch.cuda.synchronize()\n"
            f"    except Exception:\n        import os\n        os._exit({CUDA_POISONED})\n")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=timeout,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        return False
    return out.returncode < 0 or out.returncode == CUDA_POISONED


class Worker:
    """A spawned process that evaluates programs; killed and replaced on a hang or a death."""

    STARTUP = 300.0

    def __init__(self, timeout: float) -> None:
        import multiprocessing as mp

        self.timeout = timeout
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self._start()

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        if not self.conn.poll(self.STARTUP):
            raise RuntimeError("fuzz worker did not start")
        self.conn.recv()

    def run(self, src: str, mode: str) -> dict[str, str]:
        self.conn.send((src, mode))
        if self.conn.poll(self.timeout):
            try:
                return self.conn.recv()[1]
            except (EOFError, OSError):
                pass
            self.proc.join(5)
            code = self.proc.exitcode
            self._restart()
            if _eager_dies(src, mode):
                return {"status": "eager-died", "sig": "eager-died",
                        "detail": f"eager itself kills the process (exit code {code}) on this program"}
            if code == CUDA_POISONED:
                return {"status": "crash", "sig": "device-assert", "detail": "the plan's kernels hit a device-side "
                        "assert (the CUDA context is lost); eager alone does not"}
            return {"status": "crash", "sig": "process-died", "detail": f"worker died (exit code {code})"}
        self._restart()
        return {"status": "hang", "sig": "hang", "detail": f"no result within {self.timeout:.0f} s"}

    def generate(self, seed: int, index: int) -> Program | None:
        """Program ``index`` of ``seed``, generated here (None: eager killed the worker while the
        generator checked a statement, as ``INT_MIN // -1`` does; the worker is replaced)."""
        self.conn.send(("generate", seed, index))
        if self.conn.poll(self.timeout):
            try:
                return self.conn.recv()[1]
            except (EOFError, OSError):
                pass
        self._restart()
        return None

    def _restart(self) -> None:
        self.close()
        self._start()

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.conn.close()


class Inline:
    """Evaluates in this process (no hang detection): for the test suite's quick slice."""

    def run(self, src: str, mode: str) -> dict[str, str]:
        return evaluate(src, mode)

    def close(self) -> None:
        pass


# ---------------------------------------------------------------- reduction


def _drop_stmts(p: Program, keep: list[int]) -> Program:
    """Keep statements ``keep``, drop those that read a name no longer defined, and
    returns of such names; inputs nobody reads go too."""
    defined = {i.name for i in p.inputs}
    stmts = []
    for k, s in enumerate(p.stmts):
        if k not in keep:
            continue
        used = _names(s.src) - set(s.defs)
        if any(re.fullmatch(r"t\d+", n) and n not in defined for n in used):
            continue
        stmts.append(s)
        defined |= set(s.defs)
    rets = [r for r in p.returns if r in defined]
    return _prune_inputs(replace(p, stmts=stmts, returns=rets or [next(iter(i.name for i in p.inputs))]))


def _prune_inputs(p: Program) -> Program:
    used = set().union(*(_names(s.src) for s in p.stmts), set(p.returns))
    for i in p.inputs:  # an input defined from another (an alias or a view of its buffer) keeps that one
        if i.name in used:
            used |= _names(" ".join(i.lines))
    keep = [i for i in p.inputs if i.name in used or any(i.name + "_base" in n for n in used)]
    return replace(p, inputs=keep or p.inputs[:1])


def _simpler_inputs(p: Program) -> list[Program]:
    """Candidates: each input's values without specials, then all ones."""
    out = []
    for k, inp in enumerate(p.inputs):
        for ln in inp.lines:
            m = re.match(r"(\w+) = (mk\(\(.*?\), torch\.\w+, \d+ \+ v)\)(.*)$", ln)
            if not m:
                continue
            for s in (ln.replace(m.group(2) + ")", m.group(2) + ', kind="plain")'),
                      ln.replace(m.group(2) + ")", m.group(2) + ', kind="ones")')):
                if s != ln:
                    lines = [s if x == ln else x for x in inp.lines]
                    out.append(replace(p, inputs=[*p.inputs[:k], replace(inp, lines=lines), *p.inputs[k + 1:]]))
    return out


def _sizes(p: Program) -> list[Program]:
    out = []
    for key in ("sizes_a", "sizes_b"):
        for s, n in getattr(p, key).items():
            for m in sorted({0, 1, 2, n - 1} - {n}):
                if 0 <= m < n:
                    out.append(replace(p, **{key: dict(getattr(p, key), **{s: m})}))
    return out


class Reducer:
    def __init__(self, runner: Any, mode: str, budget: int = 80) -> None:
        self.runner, self.mode, self.budget = runner, mode, budget
        self.tests = 0

    def same(self, p: Program, want: dict[str, str]) -> dict[str, str] | None:
        if self.tests >= self.budget:
            return None
        self.tests += 1
        got = self.runner.run(p.module_source(), self.mode)
        return got if got["status"] == want["status"] and got["sig"] == want["sig"] else None

    def reduce(self, p: Program, want: dict[str, str]) -> tuple[Program, dict[str, str]]:
        best, res = p, want
        changed = True
        while changed and self.tests < self.budget:
            changed = False
            # statements: drop halves, then one at a time (from the end: later ones depend on earlier)
            n = len(best.stmts)
            chunk = max(1, n // 2)
            while chunk >= 1 and self.tests < self.budget:
                i = n
                while i > 0 and self.tests < self.budget:
                    lo = max(0, i - chunk)
                    keep = [k for k in range(len(best.stmts)) if not lo <= k < i]
                    cand = _drop_stmts(best, keep)
                    if len(cand.stmts) < len(best.stmts):
                        got = self.same(cand, want)
                        if got:
                            best, res, changed = cand, got, True
                    i = lo
                    n = len(best.stmts)
                    i = min(i, n)
                chunk //= 2
            for r in list(best.returns):
                if len(best.returns) > 1:
                    cand = _prune_inputs(replace(best, returns=[x for x in best.returns if x != r]))
                    got = self.same(cand, want)
                    if got:
                        best, res, changed = cand, got, True
            for k in range(len(best.inputs)):
                cand = self._make_contiguous(best, k)
                if cand is not None:
                    got = self.same(cand, want)
                    if got:
                        best, res, changed = cand, got, True
            for cand in _sizes(best) + _simpler_inputs(best):
                got = self.same(cand, want)
                if got:
                    best, res, changed = cand, got, True
                    break
        return best, res

    @staticmethod
    def _make_contiguous(p: Program, k: int) -> Program | None:
        inp = p.inputs[k]
        if inp.kind != "tensor" or inp.name.startswith("i"):
            return None
        try:
            ns = _load(p.module_source())
            t = ns["inputs"](**p.sizes_a)[k]
        except Exception:  # noqa: BLE001
            return None
        if not isinstance(t, torch.Tensor):
            return None
        line = inp.lines[-1]
        m = re.search(r"torch\.(\w+), (\d+) \+ v", " ".join(inp.lines))
        seed = m.group(2) if m else "0"
        dims = _shape_src(line, p, t)
        new = f"{inp.name} = mk({dims}, {t.dtype}, {seed} + v)"
        if [new] == inp.lines:
            return None
        return replace(p, inputs=[*p.inputs[:k], replace(inp, lines=[new]), *p.inputs[k + 1:]])


def _shape_src(line: str, p: Program, t: torch.Tensor) -> str:
    """The input's shape in terms of D0.. where an extent equals a size symbol's value."""
    parts = []
    for e in t.shape:
        sym = [s for s, n in p.sizes_a.items() if n == e]
        parts.append(sym[0] if len(sym) == 1 and e not in (0, 1) else str(e))
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


# ---------------------------------------------------------------- repro files

RUNNERS = {
    "optimize": "    plan = satfuse.optimize(f, *inputs(**SIZES_A))\n    calls = [dict(SIZES_A), dict(SIZES_A, v=1)]\n",
    "jit": "    plan = satfuse.jit(f, dynamic=True)\n    calls = [dict(SIZES_A), dict(SIZES_B), dict(SIZES_A, v=1)]\n",
    "compile": "    plan = torch.compile(f, backend=\"satfuse\")\n    calls = [dict(SIZES_A), dict(SIZES_B), dict(SIZES_A, v=1)]\n",
}

MAIN = '''

def _show(fn, sizes):
    """What a call returns, the inputs after it, and which outputs share storage with an input."""
    ins = inputs(**sizes)
    try:
        out = fn(*ins)
    except Exception as e:
        return f"raises {type(e).__name__}: {str(e).strip().splitlines()[0][:200]}", "inputs after:", ins
    outs = out if isinstance(out, tuple) else (out,)
    ptr = lambda t: t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) and t.numel() else None  # noqa: E731
    shared = [(i, j) for i, o in enumerate(outs) for j, x in enumerate(ins) if ptr(o) is not None and ptr(o) == ptr(x)]
    return out, "inputs after:", ins, "output/input storage shared:", shared


if __name__ == "__main__":
    import satfuse

{runner}    for sizes in calls:
        print("sizes", sizes)
        print("  eager:  ", *_show(f, sizes))
        print("  satfuse:", *_show(plan, sizes))
'''


def repro_source(p: Program, res: dict[str, str], mode: str, found_by: str) -> str:
    used = _names(" ".join(ln for i in p.inputs for ln in i.lines))
    p = replace(p, sizes_a={k: n for k, n in p.sizes_a.items() if k in used},
                sizes_b={k: n for k, n in p.sizes_b.items() if k in used})
    detail = "\n".join("#   " + ln for ln in _wrap(res["detail"], 110))
    head = (f"# fuzz repro ({mode}): {res['status']} [{res['sig']}], {p.origin}; found by {found_by}\n"
            f"# python bench/fuzz.py --mode {mode} ... reduced it; eager vs satfuse:\n{detail}\n")
    return head + header() + HELPERS + "\n\n" + p.source() + MAIN.replace("{runner}", RUNNERS[mode])


def _wrap(s: str, n: int) -> list[str]:
    return [s[i:i + n] for i in range(0, len(s), n)] or [""]


# ---------------------------------------------------------------- driver


@dataclass
class Summary:
    mode: str
    seed: int
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("equal", "refused", "dynamo", "eager-died", "wrong", "crash", "hang"), 0))
    programs: int = 0
    seconds: float = 0.0
    failures: list[tuple[int, dict[str, str], str]] = field(default_factory=list)  # (index, result, repro path)
    refusals: dict[str, int] = field(default_factory=dict)
    #: jit mode: how the equal programs were served ("symbolic", "static: why", "eager: why")
    jit_paths: dict[str, int] = field(default_factory=dict)
    accurate: int = 0  # equal programs with a value only as accurate as eager's (float64 criterion)
    plain_layout: int = 0  # equal programs with a value only equal to eager's on contiguous inputs

    def line(self) -> str:
        c = self.counts
        return (f"fuzz mode={self.mode} seed={self.seed}: programs {self.programs}, equal {c['equal']} "
                f"({self.accurate} by the float64 criterion, {self.plain_layout} by eager's answer on contiguous "
                f"inputs), "
                f"refused {c['refused']}, dynamo {c['dynamo']}, eager died {c['eager-died']}, wrong {c['wrong']}, "
                f"crash {c['crash']}, hang {c['hang']} "
                f"({self.seconds:.0f} s)")


def fuzz(mode: str, seed: int, count: int, start: int = 0, runner: Any = None, out: Path | None = None,
         reduce: bool = True, log: Callable[[str], None] | None = None, reduce_budget: int = 60,
         time_limit: float | None = None, progress: int = 0) -> Summary:
    vocab = vocab_table()
    s = Summary(mode, seed)
    t0 = time.perf_counter()
    reduced: dict[str, int] = {}  # failure kind -> repros written (at most 3 per kind)
    bar = Progress(f"bench/fuzz.py {mode}", count)
    for i in range(start, start + count):
        bar.step(f"#{i}: " + ", ".join(f"{k} {v}" for k, v in s.counts.items() if v))
        s.seconds = time.perf_counter() - t0
        if time_limit is not None and s.seconds > time_limit:
            if log:
                bar.clear()
                log(f"  time limit reached after {s.programs} programs (next index {i})")
            break
        if progress and log and s.programs and s.programs % progress == 0:
            bar.clear()
            log("  progress: " + s.line())
        p = runner.generate(seed, i) if hasattr(runner, "generate") else generate(seed, i, vocab)
        if p is None:
            s.programs += 1
            s.counts["eager-died"] += 1
            continue
        res = runner.run(p.module_source(), mode)
        s.programs += 1
        s.counts[res["status"]] += 1
        s.accurate += res["status"] == "equal" and ACCURATE in res["sig"].split()
        s.plain_layout += res["status"] == "equal" and PLAIN_LAYOUT in res["sig"].split()
        if res["status"] == "refused":
            s.refusals[res["detail"][:120]] = s.refusals.get(res["detail"][:120], 0) + 1
        if res.get("path"):
            s.jit_paths[res["path"]] = s.jit_paths.get(res["path"], 0) + 1
        if res["status"] in ("wrong", "crash", "hang"):
            path = ""
            key = f"{res['status']}:{res['sig']}"
            if out is not None and reduce and reduced.get(key, 0) < 3:
                reduced[key] = reduced.get(key, 0) + 1
                red, rres = Reducer(runner, mode, reduce_budget).reduce(p, res)
                out.mkdir(parents=True, exist_ok=True)
                path = str(out / f"{mode}-s{seed}-p{i}-{res['status']}.py")
                Path(path).write_text(repro_source(red, rres, mode, "bench/fuzz.py"))
            s.failures.append((i, res, path))
            if log:
                bar.clear()
                log(f"  #{i} {res['status']} [{res['sig']}] {res['detail'][:200]}" + (f"\n      -> {path}" if path else ""))
    bar.clear()
    s.seconds = time.perf_counter() - t0
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=MODES, default="optimize")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first program index (to resume a run)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per program before it counts as a hang")
    ap.add_argument("--out", type=Path, default=Path("fuzz-repros"), help="folder for reduced repros")
    ap.add_argument("--no-reduce", action="store_true")
    ap.add_argument("--reduce-budget", type=int, default=60, help="programs run while reducing one failure")
    ap.add_argument("--time-limit", type=float, default=None, help="stop (with the summary) after this many seconds")
    ap.add_argument("--progress", type=int, default=100, help="print the counts every N programs (0: never)")
    ap.add_argument("--show", type=int, default=None, help="print program N's source and exit")
    ap.add_argument("--dtype-views", action="store_true",
                    help="also draw x.view(dtype) bitcasts, read and written through (changes the seeds' programs)")
    ap.add_argument("--device", default="cpu",
                    help="device the inputs are made on (cuda: plans run on real nvFuser where it imports)")
    a = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ[DEVICE_ENV] = a.device
    if a.device.startswith("cuda"):  # a device-side assert then surfaces at the kernel that made it
        os.environ.setdefault("CUDA_LAUNCH_BLOCKING", "1")
    if a.dtype_views:
        os.environ[DTYPE_VIEWS_ENV] = "1"
    if a.show is not None:
        print(generate(a.seed, a.show, vocab_table()).module_source())
        return 0
    worker = Worker(a.timeout)
    try:
        s = fuzz(a.mode, a.seed, a.count, a.start, worker, a.out, not a.no_reduce,
                 log=lambda m: print(m, flush=True), reduce_budget=a.reduce_budget, time_limit=a.time_limit,
                 progress=a.progress)
    finally:
        worker.close()
    for d, n in sorted(s.refusals.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  refused x{n}: {d}")
    if s.jit_paths:
        sym = s.jit_paths.get("symbolic", 0)
        print(f"  jit: {sym} of {sum(s.jit_paths.values())} equal programs served by symbolic plans alone")
        for d, n in sorted(((d, n) for d, n in s.jit_paths.items() if d != "symbolic"), key=lambda kv: -kv[1])[:12]:
            print(f"  jit x{n}: {d}")
    print(s.line())
    return 1 if s.counts["wrong"] + s.counts["crash"] + s.counts["hang"] else 0


if __name__ == "__main__":
    sys.exit(main())
