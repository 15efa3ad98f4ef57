"""OpInfo-driven differential tests: every op of satfuse's vocabulary, on PyTorch's own
OpInfo sample inputs, in every variant, must give what eager gives.

For each op the samples come from ``torch.testing._internal.common_methods_invocations.op_db``
(``reference_inputs``: ``sample_inputs`` plus NaN/inf, extreme values, non-contiguous and
broadcasting tensors where the OpInfo has them) in every dtype of ``DTYPES`` the op
supports on CPU, and each sample is run in every variant the OpInfo has:

* ``functional``: ``op(input, *args, **kwargs)``;
* ``inplace``: OpInfo's ``inplace_variant`` (``Tensor.op_``);
* ``out``: ``op(..., out=out)`` with ``out`` a caller tensor shaped like eager's result;
* ``noncontig``: the functional form on ``SampleInput.noncontiguous()`` copies;
* ``second call``: every sample's plan is called a second time on new values of the same
  shapes, dtypes and strides (new random floats, NaN/inf kept where the sample had them;
  random bools; a permutation of each integer tensor's values, so indices stay in range).

A sample becomes ``fn(*tensors)`` with its tensors as inputs and everything else baked in;
``fn`` is optimized once and called on clones of the sample: outputs and every input's final
value must equal eager (``assert_close`` with ``equal_nan``, exact dtype and shape, per-dtype
tolerance, exact for ints). Where eager raises, the plan must raise too (at build time or
when called), with eager's exception type (or wrapping it), every input untouched. A build
error counts as "refused as listed" only when it is a satfuse error matching a row of
``engine/unsupported.py``; anything else is a failure.

Known failures (``KNOWN``) name the finding file that tracks each; a listed failure that
stops failing fails the test (strict), so the list shrinks as fixes land.

The suite runs a quick slice: ``PER_OP`` eager-accepted samples per op spread over the
variants, plus the functional form in every other dtype the op has (see ``quick_cases``); ``bench/opinfo_report.py`` runs every sample
and prints counts per variant. Deselect with ``-m "not opinfo"``.
"""

from __future__ import annotations

import math
import os
import re
import time
import traceback
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable

import pytest
import torch
import torch.utils._pytree as pytree

pytestmark = pytest.mark.opinfo

PER_OP = 3
#: where samples are made and plans run: "cpu" in the suite; bench/device.sh runs the report on
#: "cuda" (plans on real nvFuser there) with SATFUSE_OPINFO_DEVICE=cuda
DEVICE = os.environ.get("SATFUSE_OPINFO_DEVICE", "cpu")
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool,
          torch.complex64)
VARIANTS = ("functional", "inplace", "out", "noncontig")
#: float tolerances: a little looser than assert_close's defaults, since a rewritten program
#: may associate a reduction or a decomposed op differently than eager
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.complex64: dict(rtol=1e-5, atol=1e-5),
       torch.float16: dict(rtol=2e-3, atol=1e-3), torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2)}

# ---------------------------------------------------------------- the ops under test

#: test id -> (OpInfo name, variant_test_name, in-place only?)
#: every IR op of engine/vocab.py maps to at least one of these; the extra ids test aten
#: forms the map converts (clamp_min, rsub, var, transpose, *_like, ...), the ops capture
#: decomposes into the vocabulary (trace.DECOMPOSE: silu, logsumexp, nll_loss, ...) and forms
#: outside the vocabulary that must run as opaque fallbacks (reflect/replicate/circular pad).
_UNARY = ("neg abs exp log log1p expm1 sqrt rsqrt reciprocal tanh sigmoid sin cos erf logical_not isnan isinf "
          "floor ceil sign bitwise_not exp2 log2 tan atan").split()
_BINARY = ("add sub mul pow maximum minimum eq ne lt le gt ge logical_and logical_or bitwise_and bitwise_or "
           "bitwise_xor remainder fmod atan2").split()
OPS: dict[str, tuple[str, str, bool]] = {}
for _n in _UNARY + _BINARY:
    OPS[_n] = (_n, "", False)
OPS["relu"] = ("nn.functional.relu", "", False)
OPS["div"] = ("div", "no_rounding_mode", False)
OPS["div.trunc"] = ("div", "trunc_rounding", False)
OPS["div.floor"] = ("div", "floor_rounding", False)
for _n in ("true_divide", "rsub", "where", "clamp", "clamp_min", "clamp_max", "masked_fill", "lerp", "addcmul",
           "addcdiv", "sum", "amax", "amin", "prod", "mean", "var", "reshape", "view", "permute", "transpose", "t",
           "squeeze", "unsqueeze", "expand", "narrow", "slice", "select", "split", "split_with_sizes", "cat",
           "constant_pad_nd", "arange", "full", "zeros", "ones", "full_like", "zeros_like", "ones_like", "new_full",
           "gather", "take_along_dim", "index_select", "index_copy", "scatter", "softmax", "log_softmax"):
    OPS[_n] = (_n, "", False)
OPS["var_mean"] = ("var_mean", "", False)
OPS["var_mean.unbiased"] = ("var_mean", "unbiased", False)
OPS["squeeze.multiple"] = ("squeeze", "multiple", False)
OPS["split.list_args"] = ("split", "list_args", False)
OPS["softmax.with_dtype"] = ("softmax", "with_dtype", False)
OPS["log_softmax.with_dtype"] = ("log_softmax", "with_dtype", False)
for _v in ("constant", "reflect", "replicate", "circular"):
    OPS[f"pad.{_v}"] = ("nn.functional.pad", _v, False)
for _n in ("diagonal_scatter", "select_scatter", "slice_scatter", "index_put", "index_fill", "to", "floor_divide",
           "logsumexp", "std", "logit", "xlogy", "linalg.vector_norm", "flatten", "chunk", "unbind", "stack"):
    OPS[_n] = (_n, "", False)
OPS["max.binary"] = ("max", "binary", False)
OPS["min.reduction_no_dim"] = ("min", "reduction_no_dim", False)
for _n in ("silu", "gelu", "mse_loss", "softplus", "elu", "leaky_relu", "hardtanh", "binary_cross_entropy_with_logits",
           "nll_loss"):
    OPS[_n] = (f"nn.functional.{_n}", "", False)
OPS["layer_norm"] = ("nn.functional.layer_norm", "", False)
OPS["cross_entropy"] = ("nn.functional.cross_entropy", "", False)
OPS["copy_"] = ("copy_", "", True)  # no OpInfo: samples below (its only variant is in-place)
# ops torch replaces by Python decompositions under the python dispatcher, traced as eager's (eager_kernels.py)
for _n in ("softshrink", "hardshrink", "multi_margin_loss", "multilabel_margin_loss"):
    OPS[_n] = (f"nn.functional.{_n}", "", False)
for _v in ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear"):
    OPS[f"interpolate.{_v}"] = ("nn.functional.interpolate", _v, False)

#: ``SATFUSE_OPINFO_OP_DB=1`` (``bench/opinfo_report.py --op-db``): every other op of PyTorch's OpInfo
#: database too, id ``name`` or ``name.variant`` (code nobody on the team wrote; not in the suite)
OP_DB = os.environ.get("SATFUSE_OPINFO_OP_DB") == "1"
VOCAB_OPS = frozenset(OPS.values())  # the ops above: satfuse's vocabulary and its neighbours
if OP_DB:
    from torch.testing._internal.common_methods_invocations import op_db as _all

    for _o in _all:
        if (_o.name, _o.variant_test_name, False) not in VOCAB_OPS:
            OPS.setdefault(f"{_o.name}.{_o.variant_test_name}" if _o.variant_test_name else _o.name,
                           (_o.name, _o.variant_test_name, False))


@lru_cache(None)
def _op_db() -> dict[tuple[str, str], Any]:
    from torch.testing._internal.common_methods_invocations import op_db

    return {(o.name, o.variant_test_name): o for o in op_db}


# ---------------------------------------------------------------- samples


@dataclass
class Case:
    """One sample made ready to run: ``fn(*tensors)`` plus how to describe it."""

    op_id: str
    dtype: torch.dtype
    fn: Callable[..., Any]
    tensors: list[torch.Tensor]
    desc: str
    features: frozenset = frozenset()
    index: int = 0
    variant: str = "functional"


def _copy_samples(dtype: torch.dtype) -> Iterable[Any]:
    from torch.testing import make_tensor
    from torch.testing._internal.opinfo.core import SampleInput

    mk = lambda *s, dt=dtype, **kw: make_tensor(s, dtype=dt, device=DEVICE, **kw)  # noqa: E731
    yield SampleInput(mk(3, 4), args=(mk(3, 4),))
    yield SampleInput(mk(3, 4), args=(mk(4),))  # broadcast source
    yield SampleInput(mk(3, 4), args=(mk(4, 3).t(),))  # non-contiguous source
    yield SampleInput(mk(3, 4, noncontiguous=True), args=(mk(3, 4),))  # non-contiguous destination
    yield SampleInput(mk(3, 4), args=(mk(3, 4, dt=torch.float64 if dtype != torch.float64 else torch.int64),))
    yield SampleInput(mk(2, 3), args=(mk(2, 3, dt=torch.bool),))
    yield SampleInput(mk(), args=(mk(),))
    yield SampleInput(mk(0, 3), args=(mk(3),))


def _raw_samples(op_id: str, dtype: torch.dtype, reference: bool = True) -> tuple[Any, list[Any]]:
    """The OpInfo (None for copy_) and its samples in ``dtype`` (none if unsupported):
    ``reference_inputs`` (the full run) or ``sample_inputs`` (the quick slice)."""
    name, variant, _ = OPS[op_id]
    torch.manual_seed(0)
    if name == "copy_":
        return None, list(_copy_samples(dtype))
    op = _op_db()[(name, variant)]
    if dtype not in op.supported_dtypes(DEVICE):
        return op, []
    gen = op.reference_inputs if reference else op.sample_inputs
    try:
        samples = list(gen(DEVICE, dtype, requires_grad=False))
    except Exception:  # noqa: BLE001 - a generator that fails on this dtype has no samples for it
        samples = []
    return op, samples


def _variants(op: Any) -> tuple[str, ...]:
    if op is None:
        return ("inplace",)
    return tuple(v for v in VARIANTS if (v != "inplace" or op.inplace_variant is not None)
                 and (v != "out" or op.supports_out))


def variant_case(op_id: str, op: Any, dtype: torch.dtype, smp: Any, i: int, variant: str) -> Case | None:
    """One sample in one variant (None where the variant has no form for this sample)."""
    if op is None:  # copy_: in-place is its only form
        return make_case(op_id, dtype, lambda x, *a, **k: x.copy_(*a, **k), smp, i, "inplace")
    if variant == "functional":
        return make_case(op_id, dtype, op.op, smp, i, variant)
    if variant == "inplace":
        return make_case(op_id, dtype, op.inplace_variant, smp, i, variant)
    if variant == "out":
        with_out = _with_out(op, smp)
        return None if with_out is None else make_case(op_id, dtype, op.op, with_out, i, variant)
    nc = smp.noncontiguous()
    if any(isinstance(t, torch.Tensor) and t.numel() > 1 for t in pytree.tree_leaves((nc.input, nc.args))):
        return make_case(op_id, dtype, op.op, nc, i, variant)
    return None


def _with_out(op: Any, sample: Any) -> Any | None:
    """The sample with ``out=`` tensors shaped like eager's result, or None where eager
    cannot give one (it raises, or returns something that is not tensors)."""
    from torch.testing._internal.opinfo.core import SampleInput

    try:
        res = op.op(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001 - eager refuses the functional form: no out= form either
        return None
    if isinstance(res, torch.Tensor):
        out: Any = torch.zeros_like(res, memory_format=torch.contiguous_format)
    elif isinstance(res, tuple) and res and all(isinstance(r, torch.Tensor) for r in res):
        out = tuple(torch.zeros_like(r, memory_format=torch.contiguous_format) for r in res)
    else:
        return None
    return SampleInput(sample.input, args=sample.args, kwargs={**sample.kwargs, "out": out})


def variant_cases(op_id: str, dtype: torch.dtype) -> list[Case]:
    """Every reference sample of ``op_id`` in ``dtype``, in every variant its OpInfo has."""
    op, samples = _raw_samples(op_id, dtype)
    cases = (variant_case(op_id, op, dtype, smp, i, v) for i, smp in enumerate(samples) for v in _variants(op))
    return [c for c in cases if c is not None]


def _features(ts: list[torch.Tensor]) -> frozenset:
    f: set[str] = set()
    shapes = {tuple(t.shape) for t in ts}
    if len(shapes) > 1:
        f.add("broadcast")
    for t in ts:
        if t.dim() == 0:
            f.add("0-d")
        if t.numel() == 0:
            f.add("empty")
            continue
        if not t.is_contiguous():
            f.add("noncontig")
        if t.is_floating_point():
            if torch.isnan(t).any():
                f.add("nan")
            if torch.isinf(t).any():
                f.add("inf")
            fin = t[torch.isfinite(t)]
            if fin.numel() and fin.abs().max() > 1e10:
                f.add("extreme")
    return frozenset(f)


def _short(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        s = f"{str(v.dtype).replace('torch.', '')}{list(v.shape)}"
        if v.numel() and not v.is_contiguous():
            s += f"(strides={v.stride()})"
        return s
    if isinstance(v, (list, tuple)) and not isinstance(v, torch.Size):
        inner = ", ".join(_short(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    r = repr(v)
    return r if len(r) < 40 else r[:37] + "..."


def _describe(sample: Any) -> str:
    inp = sample.input
    parts = [_short(x) for x in inp] if isinstance(inp, (list, tuple)) else [_short(inp)]
    parts += [_short(a) for a in sample.args]
    parts += [f"{k}={_short(v)}" for k, v in sample.kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def make_case(op_id: str, dtype: torch.dtype, call: Callable, sample: Any, index: int,
              variant: str = "functional") -> Case:
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    pos = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    tensors = [leaves[i] for i in pos]

    def fn(*ts: torch.Tensor) -> Any:
        full = list(leaves)
        for i, t in zip(pos, ts):
            full[i] = t
        inp, args, kwargs = pytree.tree_unflatten(full, spec)
        return call(inp, *args, **kwargs)

    return Case(op_id, dtype, fn, tensors, _describe(sample), _features(tensors), index, variant)


def all_cases(op_id: str) -> list[Case]:
    return [c for dt in DTYPES for c in variant_cases(op_id, dt)]


def quick_cases(op_id: str, n: int) -> list[Case]:
    """Up to ``n`` eager-accepted cases for the suite, built lazily from ``sample_inputs``:
    one per variant first (functional first), each op starting the dtype rotation at its own
    place; then the functional form in every other dtype the op has (one sample each), so
    every op is checked in every dtype. For each (variant, dtype), the sample that adds the
    most features not yet covered (NaN, inf, non-contiguous, broadcast, 0-d, empty)."""
    name = OPS[op_id][0]
    op = None if name == "copy_" else _op_db()[(name, OPS[op_id][1])]
    dts = [dt for dt in DTYPES if op is None or dt in op.supported_dtypes(DEVICE)]
    if not dts:
        return []
    start = sum(map(ord, op_id))
    dts = [dts[(start + k) % len(dts)] for k in range(len(dts))]
    variants = _variants(op)
    rotation = [(v, dts[(k + j) % len(dts)]) for k in range(len(dts)) for j, v in enumerate(variants)]
    samples: dict[torch.dtype, list[tuple[int, Any, frozenset]]] = {}
    chosen: list[Case] = []
    seen: set[str] = set()

    def pick(v: str, dt: torch.dtype) -> None:
        if dt not in samples:
            _, raw = _raw_samples(op_id, dt, reference=False)
            samples[dt] = [(i, smp, _features([t for t in pytree.tree_leaves((smp.input, smp.args, smp.kwargs))
                                                if isinstance(t, torch.Tensor)])) for i, smp in enumerate(raw)]
        ranked = sorted(samples[dt], key=lambda x: (-len(x[2] - seen), x[0]))
        for i, smp, feats in ranked[:8]:
            c = variant_case(op_id, op, dt, smp, i, v)
            if c is None or not _eager_ok(c) or (v == "inplace" and c.tensors and _overlaps(c.tensors[0])):
                continue
            chosen.append(c)
            seen.update(feats)
            return

    for v, dt in rotation:
        if len(chosen) >= n:
            break
        pick(v, dt)
    rotated = len(chosen)
    for dt in dts:  # the first variant (functional, or copy_'s in-place) in every dtype
        if not any(c.variant == variants[0] and c.dtype == dt for c in chosen):
            pick(variants[0], dt)
    if len(chosen) - rotated > 1:  # one plan for them all: a dtype sweep costs one optimization
        chosen[rotated:] = [batch(chosen[rotated:])]
    return chosen


def batch(cases: list[Case]) -> Case:
    """Several cases of one op as one program: ``fn(*all tensors)`` returns each case's result
    (the quick slice's dtype sweep; ``bench/opinfo_report.py`` runs every sample on its own)."""
    fns, counts = [c.fn for c in cases], [len(c.tensors) for c in cases]

    def fn(*ts: torch.Tensor) -> tuple:
        out, k = [], 0
        for f, m in zip(fns, counts):
            out.append(f(*ts[k:k + m]))
            k += m
        return tuple(out)

    desc = " + ".join(f"{str(c.dtype).replace('torch.', '')} #{c.index} {c.desc}" for c in cases)
    return Case(cases[0].op_id, cases[0].dtype, fn, [t for c in cases for t in c.tensors], f"[{desc}]",
                frozenset().union(*(c.features for c in cases)), cases[0].index, cases[0].variant)


# ---------------------------------------------------------------- the optimizer under test


def _lowering_ready() -> bool:
    try:
        from satfuse.lowering import lower  # noqa: F401
    except ImportError:
        return False
    return True


def optimizer_path() -> str:
    forced = os.environ.get("SATFUSE_OPINFO_PATH")
    if forced in PATHS:
        return forced
    return "plan" if _lowering_ready() else "engine"


class EnginePlan:
    """The engine-level stand-in for a Plan: capture -> optimize_trace -> run_trace, with
    write-backs applied to the caller's tensors (as a Plan does)."""

    def __init__(self, fn: Callable, *inputs: Any) -> None:
        from satfuse.engine import capture
        from satfuse.engine.optimize import optimize_trace
        from satfuse.rewrites import builtin_catalogue

        cat = builtin_catalogue()
        self.cap = capture(fn, *inputs)
        self.res = optimize_trace(self.cap.trace, cat.sources, cat.phases, hints=self.cap.symbol_hints)
        self.trace = self.res.trace

    def __call__(self, *inputs: Any) -> Any:
        from satfuse.engine.interp import run_trace

        cap = self.cap
        leaves, _ = pytree.tree_flatten((inputs, {}))
        flat = [leaves[i] for i in cap.input_leaf_positions]
        outs, finals = run_trace(self.trace, flat)
        by_name = {v.name: x for v, x in zip(self.trace.inputs, flat)}
        for name, val in finals.items():
            with torch.no_grad():
                by_name[name].copy_(val)
        return outs if cap.out_spec is None else pytree.tree_unflatten(list(outs), cap.out_spec)

    def __str__(self) -> str:
        return str(self.trace)


#: "plan": ``satfuse.optimize`` (a static capture); "jit": ``satfuse.jit`` (symbolic: every dim a
#: symbol, what ``jit`` and a recompiling ``torch.compile`` capture; the plan is built on the first
#: call, and a program it cannot plan runs eagerly there); "engine": the engine-level stand-in
PATHS = ("plan", "jit", "engine")


def build(fn: Callable, inputs: list[torch.Tensor], path: str | None = None) -> Any:
    import satfuse

    path = path or optimizer_path()
    if path == "plan":
        return satfuse.optimize(fn, *inputs)
    if path == "jit":
        return satfuse.jit(fn)
    return EnginePlan(fn, *inputs)


# ---------------------------------------------------------------- one differential check


class Skip(Exception):
    """Eager itself refuses the sample."""


def _like(t: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """A new tensor holding ``values`` laid out like ``t``: same strides, so a non-contiguous
    sample stays non-contiguous, and an expanded one (stride 0) stays expanded."""
    if any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride())):
        idx = tuple(slice(0, 1) if st == 0 and n > 1 else slice(None) for n, st in zip(t.shape, t.stride()))
        base = _like(t[idx], values[idx])
        return base.expand(t.shape)
    try:
        c = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
        # the gaps between its elements too: as_strided may read them, and eager's copy and the
        # plan's must hold the same there (uninitialized memory made as_strided "differ")
        c.as_strided((c.untyped_storage().nbytes() // c.element_size(),), (1,)).zero_()
        c.copy_(values)
    except RuntimeError:  # some other overlapping layout: give up on the layout, keep the values
        c = values.clone()
    return c


def _clone(ts: list[torch.Tensor]) -> list[torch.Tensor]:
    return [_like(t, t) for t in ts]


def fresh_values(ts: list[torch.Tensor], gen: torch.Generator) -> list[torch.Tensor]:
    """New values of the same shape, dtype and strides (see the module docstring)."""
    out = []
    for t in ts:
        if t.is_floating_point():
            v = (torch.randn(t.shape, generator=gen, dtype=t.dtype) * 3).to(t.device)
            v = torch.where(torch.isnan(t), t, v)
            v = torch.where(torch.isinf(t), t, v)
        elif t.dtype == torch.bool:
            v = (torch.rand(t.shape, generator=gen) > 0.5).to(t.device)
        else:
            flat = t.reshape(-1)
            perm = torch.randperm(flat.numel(), generator=gen).to(t.device)
            v = flat[perm].reshape(t.shape) if flat.numel() else t.clone()
        out.append(_like(t, v))
    return out


#: the generator state eager's run and the plan's start from (random ops draw the same numbers)
RNG_SEED = 20261203


def _seeded(run: Callable, *args: Any) -> Any:
    """``run(*args)`` from :data:`RNG_SEED` on the CPU generator, the caller's state restored after."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(RNG_SEED)
        return run(*args)


def _eager(fn: Callable, ts: list[torch.Tensor]) -> tuple[list[Any], list[torch.Tensor]]:
    """Eager's outputs and final inputs; raises Skip (from eager's exception) where eager raises."""
    ins = _clone(ts)
    try:
        out = _seeded(fn, *ins)
    except Exception as e:  # noqa: BLE001 - the plan must raise the same way: see _check_call
        raise Skip(f"eager raises {type(e).__name__}") from e
    return pytree.tree_leaves(out), ins


def _compare(what: str, got: Any, want: Any) -> None:
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise AssertionError(f"{what}: got {type(got).__name__}, eager gives a tensor")
        tol = TOL.get(want.dtype, {}) if want.dtype == got.dtype else {}
        torch.testing.assert_close(got, want, equal_nan=True, check_stride=False, msg=lambda m: f"{what}: {m}",
                                   **tol)
    else:
        ok = got == want or (isinstance(want, float) and isinstance(got, float) and math.isnan(want)
                             and math.isnan(got))
        if not ok:
            raise AssertionError(f"{what}: got {got!r}, eager gives {want!r}")


def exc_matches(got: BaseException, want: BaseException) -> bool:
    """The plan's error is eager's: its type (or a satfuse error wrapping it, or naming it)."""
    e: BaseException | None = got
    while e is not None:
        if isinstance(e, type(want)):
            return True
        e = e.__cause__ or e.__context__
    msg = _first_line(want)
    return type(want).__name__ in str(got) or bool(msg) and msg[:80] in str(got)


def _check_call(plan: Any, fn: Callable, ts: list[torch.Tensor], label: str) -> None:
    try:
        want_out, want_in = _eager(fn, ts)
    except Skip as s:
        eager_exc = s.__cause__
        ins = _clone(ts)
        try:
            _seeded(plan, *ins)
        except Exception as e:  # noqa: BLE001 - compared with eager's
            if not exc_matches(e, eager_exc):
                raise AssertionError(f"{label}: plan raises {type(e).__name__}: {_first_line(e)}; eager raises "
                                     f"{type(eager_exc).__name__}: {_first_line(eager_exc)}") from None
            for i, (g, w) in enumerate(zip(ins, ts)):
                _compare(f"{label} input {i} after the raising call (must be untouched)", g, w)
            return
        raise AssertionError(f"{label}: eager raises {type(eager_exc).__name__}: {_first_line(eager_exc)}; "
                             "the plan returns") from None
    ins = _clone(ts)
    got_out = pytree.tree_leaves(_seeded(plan, *ins))
    if len(got_out) != len(want_out):
        raise AssertionError(f"{label}: {len(got_out)} outputs, eager gives {len(want_out)}")
    for i, (g, w) in enumerate(zip(got_out, want_out)):
        try:
            _compare(f"{label} output {i}", g, w)
        except AssertionError:
            if not _closer_than_eager(fn, ts, i, g, w):
                raise
    for i, (g, w) in enumerate(zip(ins, want_in)):
        _compare(f"{label} input {i} after the call", g, w)


def _closer_than_eager(fn: Callable, ts: list[torch.Tensor], i: int, got: Any, want: Any) -> bool:
    """A Half/BFloat16 output that differs from eager's but equals eager's computation in float64
    (rounded once): eager's CPU kernels round some reductions at every step (``prod`` of
    bfloat16), where a plan accumulates in float, as eager does on CUDA."""
    low = (torch.float16, torch.bfloat16)
    if not (isinstance(want, torch.Tensor) and want.dtype in low and isinstance(got, torch.Tensor)
            and got.dtype == want.dtype):
        return False
    try:
        ref = pytree.tree_leaves(fn(*[t.double() if t.dtype in low else t for t in _clone(ts)]))[i]
        torch.testing.assert_close(got, ref.to(want.dtype), equal_nan=True, check_stride=False, **TOL[want.dtype])
    except Exception:  # noqa: BLE001 - not closer: the original mismatch stands
        return False
    return True


@dataclass
class Result:
    """One sample's outcome (plain data: it crosses process boundaries). ``status`` is the
    build and first call's; ``second`` the second call's (on new values)."""

    op_id: str
    dtype: str
    index: int  # position in the OpInfo's sample list for that dtype
    desc: str
    status: str  # equal | refused | fail | skip
    detail: str = ""
    seconds: float = 0.0
    variant: str = "functional"
    second: str = "skip"  # equal | fail | skip
    detail2: str = ""

    def line(self) -> str:
        d = self.detail if self.status == "fail" else f"second call: {self.detail2}"
        return f"[{self.variant} {self.dtype}] #{self.index} {self.desc}: {d}"

    @property
    def failed(self) -> bool:
        return self.status == "fail" or self.second == "fail"


def _plan_error(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)[-1]
    return f"plan raised {type(e).__name__}: {_first_line(e)} [{os.path.basename(tb.filename)}:{tb.lineno}]"


#: OpInfo ops whose results are uninitialized memory (``--op-db``): nothing to compare
UNINITIALIZED = frozenset({"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"})


def _op_db_name(op_id: str) -> str:
    return OPS[op_id][0] if op_id in OPS else op_id


def check_case(case: Case, path: str | None = None) -> Result:
    from satfuse.engine.unsupported import refused_as_listed

    t0 = time.perf_counter()
    dt = str(case.dtype).replace("torch.", "")

    def res(status: str, detail: str = "", second: str = "skip", detail2: str = "") -> Result:
        return Result(case.op_id, dt, case.index, case.desc, status, detail, time.perf_counter() - t0,
                      case.variant, second, detail2)

    if _op_db_name(case.op_id) in UNINITIALIZED:
        return res("skip", "the op returns uninitialized memory: its values are no one's to compare")
    if case.variant == "inplace" and case.tensors and _overlaps(case.tensors[0]):
        return res("skip", "in-place write into self-overlapping memory: eager's result depends on its loop order")
    try:
        _eager(case.fn, case.tensors)
        eager_exc = None
    except Skip as s:
        eager_exc = s.__cause__
    try:
        plan = build(case.fn, _clone(case.tensors), path)
    except Exception as e:  # noqa: BLE001 - a refusal must be listed; any other failure is a test failure
        if eager_exc is not None:
            if exc_matches(e, eager_exc):
                return res("equal", "eager and optimize both raise")
            return res("fail", f"optimize raised {type(e).__name__}: {_first_line(e)}; eager raises "
                               f"{type(eager_exc).__name__}: {_first_line(eager_exc)}")
        row = refused_as_listed(e)
        if row is not None:
            return res("refused", row.form)
        return res("fail", f"optimize raised {type(e).__name__}: {_first_line(e)}")
    try:
        _check_call(plan, case.fn, case.tensors, "sample")
    except AssertionError as e:
        return res("fail", str(e).strip().replace("\n", " | "))
    except Exception as e:  # noqa: BLE001
        return res("fail", _plan_error(e))
    if eager_exc is not None:
        return res("equal", "eager and the plan both raise")
    new = fresh_values(case.tensors, torch.Generator().manual_seed(1234 + case.index))
    try:
        _check_call(plan, case.fn, new, "new values")
    except AssertionError as e:
        return res("equal", second="fail", detail2=str(e).strip().replace("\n", " | "))
    except Exception as e:  # noqa: BLE001
        return res("equal", second="fail", detail2=_plan_error(e))
    return res("equal", second="equal")


def _first_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return s[0][:300] if s else ""


def _overlaps(t: torch.Tensor) -> bool:
    """Some elements share memory. torch answers "too hard" for every layout that is not dense
    (a strided ``x[::2]`` too), which skipped every in-place sample on a strided target; its
    strides tell the rest apart (``vocab.non_overlapping``)."""
    from satfuse.engine.vocab import non_overlapping

    o = torch._debug_has_internal_overlap(t)
    return o == 1 or (o == 2 and not non_overlapping(t.shape, t.stride()))


def _eager_ok(case: Case) -> bool:
    try:
        _eager(case.fn, case.tensors)
    except Skip:
        return False
    return True


def select(op_id: str, limit: int | None) -> list[Case]:
    """The cases of one op: all of them (every reference sample in every variant and dtype),
    or the quick slice's ``limit`` (see quick_cases)."""
    return all_cases(op_id) if limit is None else quick_cases(op_id, limit)


# ---------------------------------------------------------------- isolation: workers with a per-sample timeout
#
# A sample can hang the optimizer (a non-terminating analysis in egglog never returns to
# Python, so no signal can interrupt it) or kill the process (a Rust abort). So samples
# run in ``jobs`` long-lived worker processes (spawned, not forked: egglog's and torch's
# thread pools do not survive a fork), each taking whole ops and streaming one result per
# sample. The parent kills a worker whose sample takes longer than ``TIMEOUT`` seconds,
# records that sample as a failure, starts a fresh worker and goes on with the op's next
# sample. ``jobs=0`` runs everything inline (no timeout; for debugging).

TIMEOUT = float(os.environ.get("SATFUSE_OPINFO_TIMEOUT", "60"))
JOBS = int(os.environ.get("SATFUSE_OPINFO_JOBS", str(min(2, os.cpu_count() or 1))))
_STARTUP = 600.0  # a fresh worker imports torch, op_db and satfuse and warms up capture (slow on a loaded machine)


def _serve(conn: Any) -> None:
    """Worker main loop: ("op", op_id, start, limit, path) -> start/done... then end."""
    import warnings

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    _op_db()
    check_case(Case("warm-up", torch.float32, lambda a: a + 1, [torch.ones(2)], "warm-up"), optimizer_path())
    conn.send(("ready",))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] != "op":
            return
        _, op_id, start, limit, path = msg
        try:
            cases = select(op_id, limit)
            for k in range(start, len(cases)):
                c = cases[k]
                conn.send(("start", k, str(c.dtype).replace("torch.", ""), c.index, c.desc, c.variant))
                conn.send(("done", k, check_case(c, path)))
            conn.send(("end",))
        except BaseException as e:  # noqa: BLE001 - report and take the next op
            conn.send(("error", f"{type(e).__name__}: {_first_line(e)}"))


class _Worker:
    def __init__(self, ctx: Any) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        self.op_id: str | None = None
        self.current: tuple | None = None  # (k, dtype, index, desc, variant) of the sample being run
        self.deadline = time.monotonic() + _STARTUP

    def assign(self, op_id: str, start: int, limit: int | None, path: str) -> None:
        self.op_id, self.current = op_id, None
        self.conn.send(("op", op_id, start, limit, path))
        self.deadline = time.monotonic() + _STARTUP  # building the op's samples

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.conn.close()


class Runner:
    """Runs ops in workers and hands back their results in whatever order they are asked for."""

    def __init__(self, op_ids: Iterable[str], limit: int | None = PER_OP, path: str | None = None,
                 jobs: int = JOBS) -> None:
        import multiprocessing as mp

        self.queue: list[tuple[str, int]] = [(o, 0) for o in dict.fromkeys(op_ids)]
        self.limit, self.path, self.jobs = limit, path or optimizer_path(), jobs
        self.ctx = mp.get_context("spawn")
        self.done: dict[str, list[Result]] = {}
        self.partial: dict[str, list[Result]] = {}
        self.workers: list[_Worker] = []

    def result(self, op_id: str) -> list[Result]:
        if self.jobs <= 0:
            if op_id not in self.done:
                self.done[op_id] = [check_case(c, self.path) for c in select(op_id, self.limit)]
            return self.done[op_id]
        queued = [q for q in self.queue if q[0] == op_id]
        if op_id not in self.done and not queued and not any(w.op_id == op_id for w in self.workers):
            queued = [(op_id, 0)]
        for q in queued:  # what the caller waits for goes first
            if q in self.queue:
                self.queue.remove(q)
            self.queue.insert(0, q)
        while op_id not in self.done:
            self._step()
        return self.done[op_id]

    def close(self) -> None:
        for w in self.workers:
            w.kill()
        self.workers = []

    def __del__(self) -> None:
        self.close()

    def _fill(self) -> None:
        while len(self.workers) < self.jobs:
            self.workers.append(_Worker(self.ctx))
        for w in self.workers:
            if w.ready and w.op_id is None and self.queue:
                op, start = self.queue.pop(0)
                self.partial.setdefault(op, [])
                w.assign(op, start, self.limit, self.path)

    def _step(self) -> None:
        from multiprocessing.connection import wait

        self._fill()
        now = time.monotonic()
        ready = wait([w.conn for w in self.workers], timeout=max(0.0, min(w.deadline for w in self.workers) - now))
        for w in list(self.workers):
            if w.conn in ready:
                try:
                    msg = w.conn.recv()
                except (EOFError, OSError):
                    w.proc.join(5)
                    self._lost(w, f"worker died (exit code {w.proc.exitcode})")
                    continue
                self._handle(w, msg)
            elif time.monotonic() > w.deadline:
                self._lost(w, f"timeout: no result within {TIMEOUT:.0f} s (hang)")

    def _handle(self, w: _Worker, msg: tuple) -> None:
        kind = msg[0]
        if kind == "ready":
            w.ready = True
            w.deadline = float("inf")
        elif kind == "start":
            w.current = msg[1:]
            w.deadline = time.monotonic() + TIMEOUT
        elif kind == "done":
            self.partial[w.op_id].append(msg[2])
            w.current = None
            w.deadline = time.monotonic() + TIMEOUT
        elif kind in ("end", "error"):
            if kind == "error":
                self.partial[w.op_id].append(Result(w.op_id, "-", -1, "(building samples)", "fail", msg[1]))
            self.done[w.op_id] = self.partial.pop(w.op_id)
            w.op_id, w.current, w.deadline = None, None, float("inf")

    def _lost(self, w: _Worker, why: str) -> None:
        w.kill()
        self.workers.remove(w)
        op = w.op_id
        if op is None:
            if not w.ready:
                raise RuntimeError(f"an OpInfo worker failed to start within {_STARTUP:.0f} s: {why}")
            return
        if w.current is None:  # died outside any sample (building them)
            self.partial[op].append(Result(op, "-", -1, "(between samples)", "fail", why))
            self.done[op] = self.partial.pop(op)
            return
        k, dt, index, desc, variant = w.current
        self.partial[op].append(Result(op, dt, index, desc, "fail", why, TIMEOUT, variant))
        self.queue.insert(0, (op, k + 1))


def run_op(op_id: str, limit: int | None = PER_OP, path: str | None = None, jobs: int = 0) -> list[Result]:
    r = Runner([op_id], limit, path, jobs)
    try:
        return r.result(op_id)
    finally:
        r.close()


# ---------------------------------------------------------------- known failures, each tracked by a finding


@dataclass(frozen=True)
class Known:
    """A failure of the quick slice that another change must fix: ``pattern`` matches the
    failing sample's line (``[variant dtype] #index (sample): detail``); ``finding`` is the
    repro in /work/findings that tracks it."""

    op_id: str
    pattern: str
    finding: str


#: op id "*": an entry for any op (strict over the whole slice: test_known_failures_for_any_op_still_fail)
KNOWN: tuple[Known, ...] = ()


def expected(r: Result) -> Known | None:
    line = r.line()
    for k in KNOWN:
        if k.op_id in (r.op_id, "*") and re.search(k.pattern, line):
            return k
    return None


@pytest.fixture(scope="module")
def runner(request: pytest.FixtureRequest) -> Iterable[Runner]:
    """One Runner for the selected ops, in collection order, so workers run ahead of the test."""
    try:
        import expecttest  # noqa: F401 - torch.testing._internal (the OpInfo database) imports it
    except ImportError:
        pytest.fail("the OpInfo database (torch.testing._internal) needs expecttest: "
                    "pip install expecttest (it belongs in pyproject's [test] extra)", pytrace=False)
    ids = [item.callspec.params["op_id"] for item in request.session.items
           if getattr(item, "callspec", None) is not None and "op_id" in item.callspec.params
           and item.module is request.module]
    r = Runner(ids)
    yield r
    r.close()


@pytest.mark.parametrize("op_id", list(OPS))
def test_opinfo(op_id: str, runner: Runner) -> None:
    results = runner.result(op_id)
    fails = [r for r in results if r.failed]
    tried = [r for r in results if r.status != "skip"]
    unexpected = [r for r in fails if expected(r) is None]
    if unexpected:
        lines = [f"{op_id}: {len(tried) - len(fails)}/{len(tried)} samples equal eager or refused as listed "
                 f"({runner.path} path); failures:"]
        lines += ["  " + r.line() + ("" if expected(r) is None else "  [known]") for r in fails]
        pytest.fail("\n".join(lines), pytrace=False)
    fixed = [k for k in KNOWN if k.op_id == op_id and not any(expected(r) == k for r in fails)]
    if fixed:  # strict: a listed failure that passes must leave the list
        pytest.fail(f"{op_id}: listed known failures no longer fail; remove them from KNOWN: "
                    + "; ".join(f"{k.pattern!r} ({k.finding})" for k in fixed), pytrace=False)
    if fails:
        pytest.xfail("known failures, tracked by " + ", ".join(sorted({expected(r).finding for r in fails})))
    if not tried:
        pytest.skip(f"{op_id}: no sample that eager accepts")


def test_known_failures_for_any_op_still_fail(runner: Runner) -> None:
    """Strict for the entries that name no single op: each must still match a failure of
    the slice (checked once every op has run)."""
    if set(runner.done) != set(OPS):
        pytest.skip("only part of the OpInfo slice ran")
    fails = [r for rs in runner.done.values() for r in rs if r.failed]
    fixed = [k for k in KNOWN if k.op_id == "*" and not any(expected(r) == k for r in fails)]
    assert not fixed, f"listed known failures no longer fail; remove them from KNOWN: {fixed}"


# ---------------------------------------------------------------- capture regressions found while building this harness


def test_view_read_after_its_base_is_mutated_sees_the_update():
    """Eager views see later in-place updates of their base; capture used to hand back the
    view's value from before the update (a silent wrong answer)."""

    def f(x):
        v = x[0]
        w = x.t()
        a, b = torch.split(x, 1)
        x.add_(1)
        y = v * 2
        x.mul_(3)
        return y, v + 0, w, b, a.unsqueeze(0)

    x = torch.randn(2, 3)
    plan = build(f, [x.clone()])
    got, want = plan(x.clone()), f(x.clone())
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
