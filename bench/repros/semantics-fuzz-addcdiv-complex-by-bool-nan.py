# fuzz repro (optimize): wrong [values], seed 1101, program 161; found by bench/fuzz.py
# filed by safety (optimize fuzz seed 1101, program 161): addcdiv(complex b, complex a, bool c): plan nan where eager finite (division by a False/0 complex?)
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   values: call 1: output 0: Tensor-likes are not close! Mismatched elements: 1 / 4 (25.0%) Greatest absolute dif
#   ference: nan at index (1, 0) (up to 1e-05 allowed) Greatest relative difference: nan at index (1, 0) (up to 0.
#   0001 allowed); plan [(-8.844335556030273+1.9025845527648926j), (2.3509092330932617-0.8260698318481445j), (nan+
#   nanj), (2.3509092330932617-... eager [(-8.844335556030273+1.9025845527648926j), (2.3509092330932617-0.82606983
#   18481445j), (-inf+infj), (2.3509092330932617...
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


def f(a, b, c):
    t1 = torch.addcdiv(b, a, c)
    return (t1,)


def inputs(D1=2, v=0):
    a = mk((1,), torch.complex64, 685 + v)
    b = mk((D1,), torch.complex64, 686 + v)
    c = mk((D1, D1), torch.bool, 687 + v)
    return [a, b, c]


SIZES_A = {'D1': 2}
SIZES_B = {'D1': 0}


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

    plan = satfuse.optimize(f, *inputs(**SIZES_A))
    calls = [dict(SIZES_A), dict(SIZES_A, v=1)]
    for sizes in calls:
        print("sizes", sizes)
        print("  eager:  ", *_show(f, sizes))
        print("  satfuse:", *_show(plan, sizes))
