# fuzz repro (optimize): wrong [input-values], seed 1103, program 8; found by bench/fuzz.py
# filed by safety (optimize fuzz seed 1103, program 8): e.div_(layer_norm(e)) with inf/nan values: plan inf where eager nan in the written input
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   input-values: values: call 2, new values: input 1 after the call: Tensor-likes are not close! Mismatched eleme
#   nts: 2 / 8 (25.0%) Greatest absolute difference: nan at index (0, 1, 0) (up to 1e-05 allowed) Greatest relativ
#   e difference: nan at index (0, 1, 0) (up to 0.0001 allowed); plan [1.3840373754501343, 0.41683316230773926, in
#   f, inf, 0.27942970395088196, 1.1728321313858032, nan, nan] eager [1.3840376138687134, 0.41683319211006165, nan
#   , nan, 0.27942970395088196, 1.1728321313858032, nan, nan]
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


def f(a, e):
    t0 = F.layer_norm(e, e.shape[-1:])
    e.div_(t0)
    return (a,)


def inputs(D1=2, v=0):
    a = 3
    e = mk((D1, D1, D1), torch.float32, 494 + v)
    return [a, e]


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
