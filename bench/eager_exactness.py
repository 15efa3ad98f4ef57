"""Bit-for-bit against eager. The fuzzer and OpInfo judge values with a tolerance; this bench
holds plans to eager's exact kernels, because a plan that is "close" on random data can still
round differently on some inputs (a fused multiply-add, a vector path and a scalar path, a
reduction in the wrong precision). Each family sweeps one class of inputs through
``satfuse.optimize`` and compares every element's bits with eager's (any nan equals any nan;
+0 and -0 differ), the dtype and the shape, that eager and the plan raise alike, and that no
input changed.

Families:
  unary-half      every f16 and bf16 bit pattern through each unary op of the vocabulary, in
                  four layouts (contiguous, offset with a ragged tail, strided, transposed):
                  eager's vector and scalar paths round differently for some ops
  unary-dtypes    unary ops, reductions, casts and clamp over 9 dtypes with integer extremes,
                  +-inf, nan and +-0
  binary-dtypes   every binary op over every pair of 8 dtypes, the second operand a tensor, a
                  0-d tensor or a Python number (type promotion, wrapped numbers, integer
                  division and its errors)
  binary-layouts  binary ops and clamp by a tensor in the four float dtypes, in layouts that move
                  elements between eager's vector path and its scalar tail (short rows, a
                  vector and a tail, broadcast, expanded, transposed, strided), over +-0,
                  +-inf and nan, the result seen through 1 / r so the sign of a zero counts
  scalar-forms    arithmetic with Python numbers in the four float dtypes (how eager casts the
                  number: in the dtype, or in op math)
  composite-half  decomposed ops (softmax, norms, losses, activations) in f16 and bf16
  composite-float the same and more in f32 and f64: a difference within the fuzzer's
                  tolerance is counted as "ulps" (summation order, vector math), not as failing
  resize          cat and pad of tensors holding +-0, +-inf and nan, seen through 1 / r (a cat
                  of one tensor twice, of computed operands; a pad of a negation): nvFuser's
                  passes may rewrite a cat into a sum of zero-padded operands, where -0.0 + 0.0
                  is +0.0

On a GPU, ``--device cuda`` makes every operand there (in the same memory layout), so plans run
on real nvFuser and are held to eager's CUDA kernels: nvFuser's runtime computes some ops in
another type than torch does (0.2.36's integer relu goes through float32).

    python bench/eager_exactness.py                  # every family (minutes)
    python bench/eager_exactness.py binary-dtypes    # one family
    python bench/eager_exactness.py --quick          # a few ops of each family
    python bench/eager_exactness.py --threads 2 unary-half   # eager's per-thread tails
    python bench/eager_exactness.py --device cuda unary-dtypes binary-dtypes resize   # on a GPU

Exit status 1 when a case differs beyond the family's criterion, errs, or does not raise.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from satfuse.engine.vocab import BINARY, REDUCTIONS, UNARY  # noqa: E402

import satfuse  # noqa: E402
from bench import fuzz  # noqa: E402
from bench.progress import Progress  # noqa: E402

VERDICTS = ("equal", "ulps", "differ", "error", "no-raise")
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
HALVES = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Case:
    label: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]


@dataclass
class Family:
    name: str
    cases: Callable[[bool], Iterator[Case]]
    exact: bool = True  # False: a difference within the fuzzer's tolerance is "ulps", not failing


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def sample(dt: torch.dtype, n: int, g: torch.Generator) -> torch.Tensor:
    """n values of dt with the edge values first: extremes and 0/1 for integers; nan, +-inf,
    +-0 and a value that overflows f16 for floats."""
    if dt == torch.bool:
        return torch.rand(n, generator=g) > 0.5
    if not dt.is_floating_point:
        ii = torch.iinfo(dt)
        v = torch.randint(-5, 6, (n,), generator=g).to(dt)
        v[:4] = torch.tensor([ii.min, ii.max, 0, 1]).to(dt)
        if dt == torch.int64:
            v[4] = 2**53 + 1
        return v
    v = torch.randn(n, generator=g, dtype=torch.float64) * 3
    v[:6] = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e30])
    return v.to(dt)


def every_half_value(dt: torch.dtype) -> torch.Tensor:
    return torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dt)


def half_layouts(t: torch.Tensor) -> Iterator[tuple[str, torch.Tensor]]:
    """The layouts that pick eager's vector path, its scalar tail, and its strided loop."""
    yield "contiguous", t.clone()
    yield "offset", t.clone()[5:]
    buf = torch.empty(2 * t.numel(), dtype=t.dtype)
    buf[::2].copy_(t)
    yield "strided", buf[::2]
    yield "transposed", t.clone().view(256, 256).t()


def unary_half(quick: bool) -> Iterator[Case]:
    ops = dict(itertools.islice(UNARY.items(), 4)) if quick else UNARY
    for dt in HALVES:
        x = every_half_value(dt)
        for (name, op), (layout, t) in itertools.product(ops.items(), half_layouts(x)):
            yield Case(f"{name} {_dt(dt)} {layout}", lambda a, op=op: op(a), (t,))


def unary_dtypes(quick: bool) -> Iterator[Case]:
    g = _gen()
    fns: dict[str, Callable[[torch.Tensor], Any]] = {n: (lambda t, fn=fn: fn(t)) for n, fn in UNARY.items()}
    for r in REDUCTIONS:
        fns[f"{r}(0)"] = lambda t, r=r: getattr(torch, r)(t, 0)
        fns[f"{r}(all)"] = lambda t, r=r: getattr(torch, r)(t) if r in ("sum", "prod") else getattr(torch, r)(t, (0, 1))
    fns.update({
        "mean(1)": lambda t: t.mean(1), "cumsum(1)": lambda t: t.cumsum(1), "clamp(-2,3)": lambda t: t.clamp(-2, 3),
        "to(f16)": lambda t: t.to(torch.float16), "to(i32)": lambda t: t.to(torch.int32),
        "to(u8)": lambda t: t.to(torch.uint8), "to(bool)": lambda t: t.to(torch.bool),
    })
    if quick:
        fns = dict(itertools.islice(fns.items(), 0, None, 8))
    dts = (torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64, *FLOATS)
    for dt in dts:
        a = sample(dt, 64, g).reshape(8, 8)
        for name, f in fns.items():
            yield Case(f"{name} {_dt(dt)}", f, (a,))


def binary_dtypes(quick: bool) -> Iterator[Case]:
    g = _gen()
    dts = (torch.bool, torch.uint8, torch.int32, torch.int64, *FLOATS)
    pairs = [(torch.int32, torch.float16), (torch.bool, torch.int64)] if quick else itertools.product(dts, dts)
    ops = {k: BINARY[k] for k in ("add", "div", "remainder")} if quick else BINARY
    for da, db in pairs:
        a, b = sample(da, 64, g), sample(db, 64, g)
        for (name, op), form in itertools.product(ops.items(), ("tensor", "0-d", "number")):
            other = b if form == "tensor" else b[7].clone() if form == "0-d" else b[7].item()
            yield Case(f"{name} {_dt(da)} {_dt(db)} {form}", lambda x, y, op=op: op(x, y), (a, other))


def _operand_layouts(dt: torch.dtype, g: torch.Generator) -> Iterator[tuple[str, torch.Tensor, torch.Tensor]]:
    """Pairs of operands in the layouts that move an element between eager's vector path and
    its scalar tail: rows shorter than a vector, a vector and a tail, a broadcast row, an
    expanded operand, transposed and strided operands. Values are drawn from the edge values
    (+-0, +-inf, nan) and a few small numbers, so ties are common."""
    edge = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5], dtype=torch.float64).to(dt)

    def pick(*shape: int) -> torch.Tensor:
        return edge[torch.randint(0, len(edge), shape, generator=g)]

    yield "3x5", pick(3, 5), pick(3, 5)
    yield "2x67", pick(2, 67), pick(2, 67)
    yield "row-broadcast", pick(1, 67), pick(4, 67)
    yield "expanded", pick(1, 40).expand(40, 40), pick(40, 40)
    yield "transposed", pick(40, 36).t(), pick(36, 40)
    yield "strided", pick(3, 80)[:, ::2], pick(3, 40)


def binary_layouts(quick: bool) -> Iterator[Case]:
    g = _gen()
    ops = {k: BINARY[k] for k in ("maximum", "atan2")} if quick else {
        k: v for k, v in BINARY.items() if not k.startswith(("bitwise", "logical"))}
    ops = {**ops, "clamp(min=t)": lambda a, b: torch.clamp(a, min=b), "clamp(max=t)": lambda a, b: torch.clamp(a, max=b)}
    for dt in (HALVES if quick else FLOATS):
        for (layout, a, b), (name, op) in itertools.product(list(_operand_layouts(dt, g)), ops.items()):
            yield Case(f"{name} {_dt(dt)} {layout}", lambda x, y, op=op: 1 / op(x, y), (a, b))


SCALAR_OPS: dict[str, Callable[[torch.Tensor, float], Any]] = {
    "t+s": lambda t, s: t + s, "t-s": lambda t, s: t - s, "s-t": lambda t, s: s - t, "t*s": lambda t, s: t * s,
    "t/s": lambda t, s: t / s, "s/t": lambda t, s: s / t, "t**s": lambda t, s: t**s, "s**t": lambda t, s: s**t,
    "fmod": lambda t, s: torch.fmod(t, s), "t%s": lambda t, s: t % s, "t//s": lambda t, s: t // s,
    "clamp(min=s)": lambda t, s: torch.clamp(t, min=s), "xlogy": lambda t, s: torch.xlogy(t, s),
    "t*t*s": lambda t, s: t * t * s, "add(alpha=s)": lambda t, s: torch.add(t, 2.0, alpha=s),
}


def scalar_forms(quick: bool) -> Iterator[Case]:
    g = _gen()
    scalars = (0.1, 3.0) if quick else (0.1, 3, -1.7, 2.5, 1e-3, 3.0)
    ops = dict(itertools.islice(SCALAR_OPS.items(), 5)) if quick else SCALAR_OPS
    for dt in FLOATS:
        x = (torch.randn(2000, generator=g, dtype=torch.float64) * 3).to(dt)
        for s, (name, op) in itertools.product(scalars, ops.items()):
            yield Case(f"{name} s={s} {_dt(dt)}", lambda t, op=op, s=s: op(t, s), (x,))


def _labels(u: torch.Tensor, classes: int) -> torch.Tensor:
    return (u.abs() * 10).long().clamp(max=classes - 1)


COMPOSITES: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]] = {
    "softmax(1)": lambda t, u: torch.softmax(t, 1), "softmax(0)": lambda t, u: torch.softmax(t, 0),
    "log_softmax(1)": lambda t, u: torch.log_softmax(t, 1), "log_softmax(0)": lambda t, u: torch.log_softmax(t, 0),
    "logsumexp": lambda t, u: torch.logsumexp(t, 1), "xlogy": lambda t, u: torch.xlogy(t, u.abs()),
    "silu": lambda t, u: F.silu(t), "softplus": lambda t, u: F.softplus(t), "elu": lambda t, u: F.elu(t),
    "hardtanh": lambda t, u: F.hardtanh(t), "leaky_relu": lambda t, u: F.leaky_relu(t, 0.1),
    "hardsigmoid": lambda t, u: F.hardsigmoid(t), "hardswish": lambda t, u: F.hardswish(t),
    "mish": lambda t, u: F.mish(t), "logsigmoid": lambda t, u: F.logsigmoid(t),
    "gelu": lambda t, u: F.gelu(t), "gelu(tanh)": lambda t, u: F.gelu(t, approximate="tanh"),
    "logit": lambda t, u: torch.logit(t.sigmoid(), 1e-3), "mse": lambda t, u: F.mse_loss(t, u),
    "l1": lambda t, u: F.l1_loss(t, u), "smooth_l1": lambda t, u: F.smooth_l1_loss(t, u),
    "bce_with_logits": lambda t, u: F.binary_cross_entropy_with_logits(t, u.sigmoid()),
    "std": lambda t, u: t.std(1), "var": lambda t, u: t.var(1), "mean": lambda t, u: t.mean(1),
    "norm": lambda t, u: t.norm(dim=1), "vector_norm(3)": lambda t, u: torch.linalg.vector_norm(t, 3, dim=1),
    "masked_fill": lambda t, u: t.masked_fill(u > 0, 0.3), "dot": lambda t, u: torch.dot(t[0], u[0]),
    "layer_norm": lambda t, u: F.layer_norm(t, (t.shape[1],)),
    "layer_norm(w,b)": lambda t, u: F.layer_norm(t, (t.shape[1],), u[0], u[1]),
    "rms_norm": lambda t, u: F.rms_norm(t, (t.shape[1],)),
    "cross_entropy": lambda t, u: F.cross_entropy(t, _labels(u, t.shape[1])[:, 0]),
    "nll_loss": lambda t, u: F.nll_loss(t.log_softmax(-1), _labels(u, t.shape[1])[:, 0]),
    "cosine_similarity": lambda t, u: F.cosine_similarity(t, u), "normalize": lambda t, u: F.normalize(t),
    "addcmul": lambda t, u: torch.addcmul(t, t, u, value=0.7),
    "addcdiv": lambda t, u: torch.addcdiv(t, t, u.abs() + 1, value=0.3),
    "lerp(0.3)": lambda t, u: torch.lerp(t, u, 0.3), "lerp(tensor)": lambda t, u: torch.lerp(t, u, u.sigmoid()),
    "hypot": lambda t, u: torch.hypot(t, u), "logaddexp": lambda t, u: torch.logaddexp(t, u),
    "sinh": lambda t, u: torch.sinh(t), "cosh": lambda t, u: torch.cosh(t), "asinh": lambda t, u: torch.asinh(t),
    "acos": lambda t, u: torch.acos(t.clamp(-1, 1)), "log10": lambda t, u: torch.log10(t.abs()),
    "erfc": lambda t, u: torch.erfc(t), "erfinv": lambda t, u: torch.erfinv(t.clamp(-0.99, 0.99)),
    "frac": lambda t, u: torch.frac(t), "round": lambda t, u: torch.round(t * 10), "trunc": lambda t, u: torch.trunc(t),
    "square": lambda t, u: t.square(), "cumsum": lambda t, u: t.cumsum(1),
    "matmul": lambda t, u: t @ u.t(), "linear": lambda t, u: F.linear(t, u, u[0]),
}


def _composites(dts: tuple[torch.dtype, ...], quick: bool) -> Iterator[Case]:
    g = _gen()
    ops = dict(itertools.islice(COMPOSITES.items(), 0, None, 10)) if quick else COMPOSITES
    for dt in dts:
        x = (torch.randn(32, 40, generator=g, dtype=torch.float64) * 3).to(dt)
        y = (torch.randn(32, 40, generator=g, dtype=torch.float64) * 3).to(dt)
        for name, op in ops.items():
            yield Case(f"{name} {_dt(dt)}", op, (x, y))


def resize(quick: bool) -> Iterator[Case]:
    edge = torch.tensor([-0.0, 0.0, 1.0, -0.0, math.inf, -math.nan, -2.0, -0.0], dtype=torch.float64)
    ops: dict[str, Callable[..., Any]] = {
        "cat": lambda a, b: 1 / torch.cat([a, b], 0),
        "cat(a, a)": lambda a, b: 1 / torch.cat([a, a], 0),
        "cat(a, a) twice read": lambda a, b: (lambda t: torch.atan2(t.half().float(), t))(torch.cat([a, a], 0)),
        "cat(-a, b*2)": lambda a, b: 1 / torch.cat([-a, b * 2], 0),
        "cat(a, b) 2-d": lambda a, b: 1 / torch.cat([a.view(2, 4), b.view(2, 4)], 1),
        "pad(-a)": lambda a, b: 1 / F.pad(-a, (1, 2)),
        "pad(a, -0.0)": lambda a, b: 1 / F.pad(a, (2, 1), value=-0.0),
    }
    for dt in (HALVES if quick else FLOATS):
        a, b = edge.to(dt), edge.flip(0).to(dt)
        for name, op in ops.items():
            yield Case(f"{name} {_dt(dt)}", op, (a, b))


FAMILIES = {f.name: f for f in (
    Family("unary-half", unary_half),
    Family("unary-dtypes", unary_dtypes),
    Family("binary-dtypes", binary_dtypes),
    Family("binary-layouts", binary_layouts),
    Family("scalar-forms", scalar_forms),
    Family("composite-half", lambda quick: _composites(HALVES, quick)),
    Family("composite-float", lambda quick: _composites((torch.float32, torch.float64), quick), exact=False),
    Family("resize", resize),
)}


def _dt(dt: torch.dtype) -> str:
    return str(dt).removeprefix("torch.")


def same_bits(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """Elementwise: the same bits, or both nan (eager's nan payloads are not part of its
    contract). +0 and -0 are different answers."""
    if got.is_complex():
        return same_bits(torch.view_as_real(got.resolve_conj()), torch.view_as_real(want.resolve_conj())).all(-1)
    if not got.is_floating_point():
        return got == want
    ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
    g, w = got.contiguous().view(ints), want.contiguous().view(ints)
    return (g == w) | (got.isnan() & want.isnan()).contiguous()


def on_device(t: Any, device: str) -> Any:
    """``t`` on ``device`` in the same memory layout (sizes, strides, storage offset): eager's
    paths and a plan's operand checks depend on it."""
    if not isinstance(t, torch.Tensor) or device == "cpu":
        return t
    n = t.untyped_storage().nbytes() // t.element_size()
    flat = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (n,), (1,))
    return flat.to(device).as_strided(t.size(), t.stride(), t.storage_offset())


def judge(case: Case, exact: bool, device: str = "cpu") -> tuple[str, str]:
    """One case's verdict and, unless equal, what differed."""
    if device != "cpu":
        case = Case(case.label, case.fn, tuple(on_device(a, device) for a in case.args))
    before = fuzz._snapshot(list(case.args))
    try:
        want = case.fn(*case.args)
    except Exception as e:  # noqa: BLE001
        want, raised = None, e
    else:
        raised = None
    args = case.args  # the same tensors, not copies: a copy may be laid out otherwise (the families' ops write nothing)
    try:
        got = satfuse.optimize(case.fn, *args)(*args)
    except Exception as e:  # noqa: BLE001
        if raised is not None:
            if fuzz._exc_matches(e, raised):
                return "equal", ""
            return "error", f"eager raised {type(raised).__name__}, plan {type(e).__name__}: {str(e)[:100]}"
        return "error", f"{type(e).__name__}: {str(e)[:140]}"
    if raised is not None:
        return "no-raise", f"eager raised {type(raised).__name__}: {str(raised)[:100]}"
    for i, (a, b) in enumerate(zip(args, before)):
        if isinstance(a, torch.Tensor) and not bool(same_bits(a, b).all()):
            return "differ", f"input {i} written"
    if not isinstance(want, torch.Tensor):
        return ("equal", "") if got == want or (want != want and got != got) else ("differ", f"{got!r} vs {want!r}")
    if got.dtype != want.dtype or got.shape != want.shape:
        return "differ", f"{got.dtype}{tuple(got.shape)} vs eager {want.dtype}{tuple(want.shape)}"
    ok = same_bits(got, want)
    if bool(ok.all()):
        return "equal", ""
    bad = ~ok
    where = f"{int(bad.sum())} of {want.numel()} elements; first plan {got[bad][:2].tolist()} eager {want[bad][:2].tolist()}"
    try:
        fuzz._close("result", got, want)
    except fuzz.Differs:
        return "differ", where
    return ("differ", where) if exact else ("ulps", where)


def run(family: Family, quick: bool, show: int, prog: Progress | None = None, device: str = "cpu") -> Tally:
    tally = Tally()
    t0 = time.perf_counter()
    for case in family.cases(quick):
        if prog is not None:
            prog.step(f"{family.name}: {case.label}")
        verdict, detail = judge(case, family.exact, device)
        tally.counts[verdict] += 1
        if verdict != "equal" and len(tally.notes) < show:
            tally.notes.append(f"  {family.name} {verdict}: {case.label}: {detail}")
    tally.seconds = time.perf_counter() - t0
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("families", nargs="*", help=f"default: all of {', '.join(FAMILIES)}")
    ap.add_argument("--quick", action="store_true", help="a few ops of each family")
    ap.add_argument("--show", type=int, default=20, help="non-equal cases listed per family")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch's intra-op threads (eager's paths differ per thread: each range has its own tail)")
    ap.add_argument("--device", default="cpu", help="where operands live: cuda runs the plans on real nvFuser")
    a = ap.parse_args(argv)
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    unknown = [f for f in a.families if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown families {unknown}; choose from {list(FAMILIES)}")
    fuzz.quiet()
    print(f"satfuse bit-for-bit against eager (torch {torch.__version__}, {a.device}, {torch.get_num_threads()} "
          f"thread(s){', quick' if a.quick else ''})")
    head = f"{'family':<16}" + "".join(f"{v:>9}" for v in ("cases", *VERDICTS)) + f"{'s':>7}"
    print(head)
    notes, failing = [], 0
    with Progress("eager_exactness") as prog:
        for name in a.families or FAMILIES:
            t = run(FAMILIES[name], a.quick, a.show, prog, a.device)
            c = t.counts
            print(f"{name:<16}{sum(c.values()):>9}" + "".join(f"{c[v]:>9}" for v in VERDICTS) + f"{t.seconds:>7.0f}",
                  flush=True)
            notes += t.notes
            failing += c["differ"] + c["error"] + c["no-raise"]
    if notes:
        print("\nnot equal (first of each family):")
        print("\n".join(notes))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
