# fuzz repro (optimize): wrong [values], seed 9999, program 6545; open: eager layout-dependence
# eager's CPU neg of a complex tensor keeps the sign of a zero imaginary part on its scalar path
# (-(x+0j) is -x-0j) and loses it on its vectorized path (-x+0j); which elements take which path
# depends on the operand's layout and the element's position (contiguous runs of 8 complex64 values
# are vectorized). Eager neg_'s the strided input b in place (scalar path: -0j); the plan runs the
# same eager kernel on a contiguous value (vectorized: +0j), and log1p turns the sign into -pi vs
# +pi. Same class as the gelu(inf) and bf16 rsqrt repros: a plan carries values, not layouts.
#   torch.neg(torch.complex(torch.full((4, 4), 1e30), torch.zeros(4, 4))).imag.signbit()  -> False
#   torch.neg(torch.complex(torch.full((4, 1), 1e30), torch.zeros(4, 1))).imag.signbit()  -> True
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   values: call 1: output 0: Tensor-likes are not close! Mismatched elements: 1 / 9 (11.1%) Greatest absolute dif
#   ference: 6.2831854820251465 at index (1, 0) (up to 1e-05 allowed) Greatest relative difference: 0.090864501893
#   52036 at index (1, 0) (up to 0.0001 allowed); plan [(0.08934518694877625+1.7873719930648804j), (1.581235408782
#   959+1.1857354640960693j), (1.7682642936706543+3.1081037521... eager [(0.08934518694877625+1.7873719930648804j)
#   , (1.581235408782959+1.1857354640960693j), (1.7682642936706543+3.1081037521...
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
    b.permute(1, 0).add_(a)
    b.neg_()
    t5 = b.contiguous()
    t5.log1p_()
    return (t5,)


def inputs(D0=3, v=0):
    a = mk((D0, D0), torch.bool, 484 + v, kind="plain")
    b = mk((2 * D0, D0), torch.complex64, 485 + v)[::2]
    return [a, b]


SIZES_A = {'D0': 3}
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
