# Found by jitcompile (bench/fuzz.py --mode compile --seed 6000 #396, #589), after the backend began converting AOTAutograd's graphs:
# a plan output shares storage with an input where eager's is a fresh tensor (t0 = where(...); t0.copy_(b); return t0).
# fuzz repro (compile): wrong [aliasing], seed 6000, program 396; found by bench/fuzz.py
# python bench/fuzz.py --mode compile ... reduced it; eager vs satfuse:
#   aliasing: call 2, sizes {'D0': 3, 'D1': 4}: outputs share storage with [(0, 'input 1')], eager []
import math

import torch


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
    return v.reshape(shape)


def ix(shape, high, seed, dim=None):
    """Valid indices below ``high``; with ``dim``, distinct along ``dim`` (a scatter target
    written twice would depend on the loop order)."""
    g = torch.Generator().manual_seed(seed)
    if dim is None:
        return torch.randint(0, max(high, 1), shape, generator=g)
    full = list(shape)
    full[dim] = max(high, shape[dim])
    perm = torch.rand(full, generator=g).argsort(dim)
    return perm.narrow(dim, 0, shape[dim]) % max(high, 1)


def f(a, b):
    t0 = torch.where(a > 0, a, b)
    t0.copy_(b)
    return (t0,)


def inputs(D1=0, v=0):
    a = mk((1, D1, D1), torch.int64, 794 + v)
    b = mk((1, 1), torch.bfloat16, 795 + v)
    return [a, b]


SIZES_A = {'D1': 0}
SIZES_B = {'D1': 4}


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

    plan = torch.compile(f, backend="satfuse")
    calls = [dict(SIZES_A), dict(SIZES_B), dict(SIZES_A, v=1)]
    for sizes in calls:
        print("sizes", sizes)
        print("  eager:  ", *_show(f, sizes))
        print("  satfuse:", *_show(plan, sizes))
