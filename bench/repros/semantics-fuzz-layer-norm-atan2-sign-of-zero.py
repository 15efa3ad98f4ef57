# fuzz repro (optimize): wrong [values], seed 1101, program 56; found by bench/fuzz.py
# filed by safety (optimize fuzz seed 1101, program 56): atan2(layer_norm(..), a): plan -pi where eager +pi (the sign of a zero from layer_norm differs)
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   values: call 1: output 0: Tensor-likes are not close! Mismatched elements: 1 / 2 (50.0%) Greatest absolute dif
#   ference: 6.2831854820251465 at index (0,) (up to 1e-05 allowed) Greatest relative difference: 2.0 at index (0,
#   ) (up to 0.0001 allowed); plan [-3.1415927410125732, 0.0] eager [3.1415927410125732, 0.0]
import math

import torch
import torch.nn.functional as F


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


def f(a):
    t2 = torch.add(a, a, alpha=3)
    t3 = F.layer_norm(t2, t2.shape[-1:])
    t4 = torch.atan2(t3, a)
    return (t4,)


def inputs(D0=2, v=0):
    a = mk((D0,), torch.float32, 662 + v)
    return [a]


SIZES_A = {'D0': 2}
SIZES_B = {'D0': 0}


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
