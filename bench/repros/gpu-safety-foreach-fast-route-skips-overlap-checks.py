# fuzz repro (optimize): crash [optimize:SelfOverlapError], seed 9924, program 214; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   optimize raised SelfOverlapError: aten.mul_.Tensor: unsupported operation: some elements of the input tensor a
#   nd the written-to tensor refer to a single memory location. Please clone() the tensor before performing the op
#   eration. [functional.py:493]
import math

import torch

DEVICE = 'cuda'

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


def f(b, i3):
    b.unsqueeze_(0)
    t1 = torch.zeros_like(b)
    t2 = torch.scatter(b, 0, i3, t1)
    torch._foreach_mul_([t1, t2], [t1, t2[::2]])
    return (t2,)


def inputs(v=0):
    b = mk((1,), torch.float32, 362 + v)
    i3 = ix((1, 1), 1, 364 + v, dim=0)
    return [b, i3]


SIZES_A = {}
SIZES_B = {}


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
