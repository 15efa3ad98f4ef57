"""The built-in corpus: small torch programs for rule coverage, soundness and differential tests
(package data: `python -m satfuse rules check` uses it from a plain install).

Each :class:`Case` names a function, a factory of example inputs (fresh tensors every
call, so in-place programs never share buffers between runs) and whether capture makes
extents symbolic. ``CASES`` is the list the coverage harness walks; user folders can
add more with a module that exports its own ``CASES``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., Any]
    make_inputs: Callable[[], tuple]
    dynamic: bool = False
    note: str = ""


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- cross-entropy (seed 002)


def ce_hand(x, y):
    """gather(log_softmax(x, 1), 1, y.unsqueeze(1)).squeeze(1).neg().mean()"""
    return torch.gather(torch.log_softmax(x, 1), 1, y.unsqueeze(1)).squeeze(1).neg().mean()


def ce_torch(x, y):
    return F.cross_entropy(x, y)


def ce_fwd_bwd(x, y):
    x = x.detach().requires_grad_()
    loss = F.cross_entropy(x, y)
    (g,) = torch.autograd.grad(loss, x)
    return loss, g


def ce_ignore(x, y):
    return F.cross_entropy(x, y, ignore_index=-100)


def ce_3d(x, y):
    """[B, T, C] logits, [B, T] targets: class dim is the last one."""
    return F.cross_entropy(x.reshape(-1, x.shape[-1]), y.reshape(-1))


def ce_3d_gather(x, y):
    """gather along the last dim of a 3-D log_softmax."""
    return torch.gather(torch.log_softmax(x, -1), -1, y.unsqueeze(-1)).squeeze(-1).neg().mean()


def _ce_inputs(n: int = 8, c: int = 16, seed: int = 0) -> Callable[[], tuple]:
    def make() -> tuple:
        g = _gen(seed)
        return torch.randn(n, c, generator=g), torch.randint(0, c, (n,), generator=g)

    return make


def _ce_ignore_inputs() -> tuple:
    g = _gen(1)
    y = torch.randint(0, 16, (8,), generator=g)
    y[1] = -100
    y[5] = -100
    return torch.randn(8, 16, generator=g), y


def _ce3_inputs() -> tuple:
    g = _gen(2)
    return torch.randn(2, 3, 16, generator=g), torch.randint(0, 16, (2, 3), generator=g)


# ---------------------------------------------------------------- in-place programs


def add_mul(x, y):
    x.add_(y)
    return x * 2


def add_mul_add(x, y):
    x.add_(y)
    x.mul_(2)
    return x + 1


def copy_fresh(x, y):
    """copy_ of a fresh intermediate into an input: a plain write-back."""
    x.copy_(y * 3)
    return x.sum()


def kv_cache(q, k, v, mask, idx, src):
    """seed 000: two index_copy_ into caches, then attention with a bool mask."""
    q.index_copy_(2, idx, src)
    k.index_copy_(2, idx, src)
    return F.scaled_dot_product_attention(q, k, v, mask)


def _kv_inputs() -> tuple:
    g = _gen(3)
    return (torch.randn(1, 4, 2, 16, generator=g), torch.randn(1, 4, 3, 16, generator=g),
            torch.randn(1, 4, 3, 16, generator=g), torch.ones(1, 1, 2, 3, dtype=torch.bool),
            torch.arange(2), torch.randn(1, 4, 2, 16, generator=g))


def _adam_state(seed: int) -> tuple:
    g = _gen(seed)
    shapes = [(4, 3), (3,), (2, 2)]
    params = [torch.randn(s, generator=g) for s in shapes]
    grads = [torch.randn(s, generator=g) for s in shapes]
    exp_avgs = [torch.randn(s, generator=g) * 0.1 for s in shapes]
    exp_avg_sqs = [torch.rand(s, generator=g) * 0.1 for s in shapes]
    return params, grads, exp_avgs, exp_avg_sqs


def adam_torch(params, grads, exp_avgs, exp_avg_sqs):
    """torch.optim.adam.adam, single-tensor path, three parameters, step 3."""
    from torch.optim.adam import adam

    steps = [torch.tensor(2.0) for _ in params]
    adam(params, grads, exp_avgs, exp_avg_sqs, [], steps, foreach=False, capturable=False, amsgrad=False,
         beta1=0.9, beta2=0.999, lr=1e-3, weight_decay=0.0, eps=1e-8, maximize=False)
    return None


def adam_hand(params, grads, exp_avgs, exp_avg_sqs):
    """Adam at step 3 written with add_/mul_/lerp_/addcmul_/sqrt/addcdiv_."""
    beta1, beta2, lr, eps, step = 0.9, 0.999, 1e-3, 1e-8, 3
    bc1 = 1 - beta1 ** step
    bc2 = 1 - beta2 ** step
    for p, g, m, v in zip(params, grads, exp_avgs, exp_avg_sqs):
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        denom = (v.sqrt() / (bc2 ** 0.5)).add_(eps)
        p.addcdiv_(m, denom, value=-lr / bc1)


def _adam_inputs() -> tuple:
    return _adam_state(4)


# ---------------------------------------------------------------- shapes (seed 001) and friends


def split3(a, dim0, dim1):
    """seed 001: split with a third extent computed from the other two."""
    dim2 = a.size(2) - dim0 - dim1
    return torch.split(a, (dim0, dim1, dim2), dim=2)


def split_cat(a):
    """the slices of a split, concatenated back."""
    p, q = torch.split(a, (3, 5), dim=1)
    return torch.cat([p, q], 1) * 2


def reshape2(x):
    return x.reshape(4, 6).reshape(2, 12) + 1


def softmax(x):
    return torch.softmax(x, -1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def scatter_onehot(y, s):
    """one-hot of y scaled by s via scatter into zeros."""
    z = torch.zeros(y.shape[0], 10)
    return z.scatter(1, y.unsqueeze(1), s.unsqueeze(1))


def scatter_onehot_value(y):
    return torch.zeros(y.shape[0], 10).scatter(1, y.unsqueeze(1), -1.0)


def keepdim_sum1(x):
    """a reduction over an extent-1 dim, and x * 1 + 0 that must keep dtype."""
    return x.unsqueeze(1).sum(1, keepdim=True) * 1 + 0


def double_neg_cast(x):
    return (-(-x)).double().float() + x.to(torch.float64).to(torch.float32)


def where_same(c, x):
    return torch.where(c, x, x).exp()


def take_chain(x, m, y):
    """a lookup through every elementwise op the take rules push through (m: [N, 1])."""
    t = (m - (m + (m * (m / ((x - m) + m).exp().log().abs().neg() * 2.0))) / m)
    return torch.gather(t, 1, y.unsqueeze(1)).squeeze(1)


def ce_dyn(x, y):
    return F.cross_entropy(x, y)


def self_copy(x, y):
    """x.copy_(x.clone()): the write-back of x restates its contents (``x.copy_(x)`` itself is
    nothing at capture, as eager's early return)."""
    x.copy_(x.clone())
    return x + y


def copy_twice(x, a, b):
    """y.copy_(a).copy_(b) on an intermediate: functionalized to copy(copy(y, a), b), whose first
    copy only fixed shape and dtype (functionalize/copy-copy)."""
    y = x * 2
    y.copy_(a).copy_(b)
    return y + 1


def split_whole(x):
    """a split into one piece: a full slice."""
    return torch.split(x, x.shape[1], 1)[0] * 2


def split3_cat(a, dim0, dim1):
    """seed 001's split, concatenated back: the cat of the pieces is a."""
    return torch.cat(torch.split(a, (dim0, dim1, a.size(2) - dim0 - dim1), 2), 2) * 2


def kv_slice_write(cache, new):
    """a KV-cache decode step by slice assignment: functionalized to a slice_scatter written back,
    which functionalize/slice-write-in-place turns into a write of the slice only."""
    cache[:, 2:4] = new
    return cache.sum(-1)


def tail_slice(x):
    """x[:, -3:] under dynamic shapes: start max(0, n - 3)."""
    return x[:, -3:] * 2


def inner_slice(x):
    """x[:, 2:-1] under dynamic shapes: extent (n - 1) - 2."""
    return x[:, 2:-1] + 1


def expand_ops(x, m):
    """explicit expands feeding elementwise ops."""
    return (x - m.expand_as(x)) * m.expand(x.shape)


def reshape_roundtrip(x):
    """reshape(reshape(x)) back to x's own shape."""
    return x.reshape(4, 6).reshape(24) + 1


def flatten_dyn(x):
    return x.reshape(-1) * 2


def masked_fill_scalar(x, m):
    """where with a 0-d condition and a 0-d branch: the result has x's shape."""
    return x.masked_fill(m, 10.0) * 1


def units(x):
    return x * 1.0 + 0.0


def int_units(i):
    """an integer's x + 0 is x, and so is its sum over an extent-1 dim (a float's are not: -0.0 + 0
    is +0.0, and a float sum starts from +0.0)."""
    return (i * 1 + 0).unsqueeze(1).sum(1, keepdim=True)


CASES: list[Case] = [
    Case("ce_hand", ce_hand, _ce_inputs()),
    Case("ce_torch", ce_torch, _ce_inputs(seed=5)),
    Case("ce_fwd_bwd", ce_fwd_bwd, _ce_inputs(seed=6)),
    Case("ce_ignore", ce_ignore, _ce_ignore_inputs),
    Case("ce_3d", ce_3d, _ce3_inputs),
    Case("ce_3d_gather", ce_3d_gather, _ce3_inputs),
    Case("add_mul", add_mul, lambda: (torch.randn(4, generator=_gen(7)), torch.randn(4, generator=_gen(8)))),
    Case("add_mul_add", add_mul_add, lambda: (torch.randn(4, generator=_gen(9)), torch.randn(4, generator=_gen(10)))),
    Case("copy_fresh", copy_fresh, lambda: (torch.randn(3, 4, generator=_gen(11)), torch.randn(3, 4, generator=_gen(12)))),
    Case("kv_cache", kv_cache, _kv_inputs),
    Case("adam_hand", adam_hand, _adam_inputs),
    Case("split3", split3, lambda: (torch.randn(2, 3, 10, generator=_gen(13)), 3, 4), dynamic=True),
    Case("split_cat", split_cat, lambda: (torch.randn(2, 8, generator=_gen(14)),)),
    Case("reshape2", reshape2, lambda: (torch.randn(24, generator=_gen(15)),)),
    Case("softmax", softmax, lambda: (torch.randn(4, 16, generator=_gen(16)),)),
    Case("layer_norm", layer_norm, lambda: (torch.randn(4, 16, generator=_gen(17)), torch.randn(16, generator=_gen(18)),
                                            torch.randn(16, generator=_gen(19)))),
    Case("scatter_onehot", scatter_onehot, lambda: (torch.randint(0, 10, (6,), generator=_gen(20)),
                                                    torch.randn(6, generator=_gen(21)))),
    Case("scatter_onehot_value", scatter_onehot_value, lambda: (torch.randint(0, 10, (6,), generator=_gen(22)),)),
    Case("keepdim_sum1", keepdim_sum1, lambda: (torch.randn(3, 5, generator=_gen(23)),)),
    Case("double_neg_cast", double_neg_cast, lambda: (torch.randn(3, 5, generator=_gen(24)),)),
    Case("take_chain", take_chain, lambda: (torch.randn(5, 7, generator=_gen(27)), torch.rand(5, 1, generator=_gen(28)) + 0.5,
                                            torch.randint(0, 7, (5,), generator=_gen(29)))),
    Case("ce_dyn", ce_dyn, _ce_inputs(6, 10, seed=30), dynamic=True),
    Case("self_copy", self_copy, lambda: (torch.randn(3, generator=_gen(31)), torch.randn(3, generator=_gen(32)))),
    Case("split_whole", split_whole, lambda: (torch.randn(3, 8, generator=_gen(33)),)),
    Case("split3_cat", split3_cat, lambda: (torch.randn(2, 3, 10, generator=_gen(34)), 3, 4), dynamic=True),
    Case("copy_twice", copy_twice, lambda: (torch.randn(3, 4, generator=_gen(82)),
                                           torch.randn(1, 4, generator=_gen(83)),
                                           torch.randn(3, 4, dtype=torch.float64, generator=_gen(84)))),
    Case("kv_slice_write", kv_slice_write, lambda: (torch.randn(2, 8, 4, generator=_gen(80)),
                                                   torch.randn(2, 2, 4, generator=_gen(81)))),
    Case("tail_slice", tail_slice, lambda: (torch.randn(3, 8, generator=_gen(35)),), dynamic=True),
    Case("inner_slice", inner_slice, lambda: (torch.randn(3, 8, generator=_gen(36)),), dynamic=True),
    Case("expand_ops", expand_ops, lambda: (torch.randn(4, 6, generator=_gen(37)), torch.randn(4, 1, generator=_gen(38)))),
    Case("reshape_roundtrip", reshape_roundtrip, lambda: (torch.randn(24, generator=_gen(40)),)),
    Case("flatten_dyn", flatten_dyn, lambda: (torch.randn(3, 5, generator=_gen(41)),), dynamic=True),
    Case("masked_fill_scalar", masked_fill_scalar, lambda: (torch.randn(5, 5, generator=_gen(42)), torch.tensor(True))),
    Case("units", units, lambda: (torch.randn(3, 4, generator=_gen(39)),)),
    Case("int_units", int_units, lambda: (torch.randint(-5, 5, (3, 4), generator=_gen(43)),)),
    Case("where_same", where_same, lambda: (torch.rand(3, 5, generator=_gen(25)) > 0.5, torch.randn(3, 5, generator=_gen(26)))),
]

BY_NAME = {c.name: c for c in CASES}
