"""A corpus of small torch programs for the lowering, each compared with eager (outputs
and every input the program mutates) on the reference executor. The same table drives the
nvFuser conformance tests (``test_lowering_nvfuser.py``)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from satfuse.engine import capture
from satfuse.lowering import lower

from tests.corpus import ce_fwd_bwd, split3
from tests.corpus import ce_hand as ce
from tests.corpus import kv_cache as kv  # seed programs: one definition, the corpus's


def _g(seed):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- programs




def layer_norm(x, w, b):
    return F.layer_norm(x, (16,), w, b)


def inplace_chain(x, y):
    x.add_(y)
    x.mul_(2)
    return x + 1


def read_old_after_write(x, w):
    a = x.clone()
    x.mul_(2)
    return torch.mm(a, w), x


def read_old_and_new(x):
    a = x.clone()
    x.mul_(2)
    return torch.mm(a, x)


def read_new_after_write(x, w):
    x.add_(1)
    return x @ w


def two_buffers(x, y):
    x.add_(y)
    y.mul_(x)
    return x + y


def center_inplace(x):
    x.sub_(x.mean(dim=1, keepdim=True))
    return x.sum()


def step_and_param(step, p):
    step.add_(1)
    p.mul_(1 - 0.9 ** step)


def adam3(p0, p1, p2, g0, g1, g2, m0, m1, m2, v0, v1, v2):
    lr, b1, b2, eps, step = 1e-2, 0.9, 0.999, 1e-8, 3
    bc1 = 1 - b1 ** step
    bc2 = 1 - b2 ** step
    for p, g, m, v in ((p0, g0, m0, v0), (p1, g1, m1, v1), (p2, g2, m2, v2)):
        m.lerp_(g, 1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v.sqrt() / (bc2 ** 0.5)).add_(eps)
        p.addcdiv_(m, denom, value=-lr / bc1)


def mixed_dtypes(x, i, h):
    a = (h * 2 + 1).float().sum(1)
    b = i * 2.5
    c = torch.where(x > 0, x, 0.0)
    d = (i > x.sum(1)).float()
    return a, b, c, d, h.sum(0)


def one_hot(y):
    return (torch.arange(16, device=y.device) == y[:, None]).float() * 3


def shapes(x, y):
    return torch.cat([x, y], 1), F.pad(x, (1, 2)), x[:, 2:5] * 2, x.t().exp(), x.reshape(-1, 2).sum(1)


def shapes_sym(x, y):
    return torch.cat([x, y], 1), F.pad(x, (1, 2)), x[:, 2:5] * 2, x.t().exp(), x.sum(1, keepdim=True) / x


def indexing(x, idx, idx2):
    return torch.take_along_dim(x, idx2, 1) + 1, torch.index_select(x, 0, idx).sin()


def int8_fallback(x):
    return (x.to(torch.int8) + 1).to(torch.float32) * 2


def inplace_broadcast(x, y):
    x.add_(y)  # y broadcasts into x
    return x


def copy_into(x, y):
    x.copy_(y)
    return x * 2


PROGRAMS = {
    "ce": (ce, lambda s: [torch.randn(8, 16, generator=_g(s)), torch.randint(0, 16, (8,), generator=_g(s))], False),
    "ce_fwd_bwd": (ce_fwd_bwd, lambda s: [torch.randn(8, 16, generator=_g(s)),
                                          torch.randint(0, 16, (8,), generator=_g(s))], False),
    "layer_norm": (layer_norm, lambda s: [torch.randn(4, 16, generator=_g(s)), torch.randn(16, generator=_g(s)),
                                          torch.randn(16, generator=_g(s))], False),
    "kv": (kv, lambda s: [torch.randn(1, 4, 2, 16, generator=_g(s)), torch.randn(1, 4, 3, 16, generator=_g(s)),
                          torch.randn(1, 4, 3, 16, generator=_g(s)), torch.rand(1, 1, 2, 3, generator=_g(s)) > 0.3,
                          torch.tensor([1, 0]), torch.randn(1, 4, 2, 16, generator=_g(s))], False),
    "split3": (split3, lambda s: [torch.randn(2, 3, 10, generator=_g(s)), 3, 4], True),
    "inplace_chain": (inplace_chain, lambda s: [torch.randn(4, 8, generator=_g(s)), torch.randn(4, 8, generator=_g(s))],
                      False),
    "read_old_after_write": (read_old_after_write, lambda s: [torch.randn(4, 4, generator=_g(s)),
                                                              torch.randn(4, 3, generator=_g(s))], False),
    "read_old_and_new": (read_old_and_new, lambda s: [torch.randn(4, 4, generator=_g(s))], False),
    "read_new_after_write": (read_new_after_write, lambda s: [torch.randn(4, 4, generator=_g(s)),
                                                              torch.randn(4, 3, generator=_g(s))], False),
    "two_buffers": (two_buffers, lambda s: [torch.randn(6, generator=_g(s)), torch.randn(6, generator=_g(s))], False),
    "center_inplace": (center_inplace, lambda s: [torch.randn(3, 5, generator=_g(s))], False),
    "step_and_param": (step_and_param, lambda s: [torch.tensor(float(s + 1)), torch.randn(4, 4, generator=_g(s))], False),
    "adam3": (adam3, lambda s: [torch.randn(*sh, generator=_g(s + i)) for i, sh in
                                enumerate([(4, 3), (5,), (2, 2, 2)] * 3)] +
              [torch.rand(*sh, generator=_g(s + 9 + i)) for i, sh in enumerate([(4, 3), (5,), (2, 2, 2)])], False),
    "mixed_dtypes": (mixed_dtypes, lambda s: [torch.randn(4, 6, generator=_g(s)),
                                              torch.randint(-5, 5, (4,), generator=_g(s)),
                                              torch.randn(3, 5, generator=_g(s)).half()], False),
    "one_hot": (one_hot, lambda s: [torch.randint(0, 16, (5,), generator=_g(s))], False),
    "shapes": (shapes, lambda s: [torch.randn(4, 6, generator=_g(s)), torch.randn(4, 2, generator=_g(s))], False),
    "indexing": (indexing, lambda s: [torch.randn(5, 7, generator=_g(s)), torch.tensor([4, 0, 2]),
                                      torch.randint(0, 7, (5, 3), generator=_g(s))], False),
    "int8_fallback": (int8_fallback, lambda s: [torch.randn(3, 4, generator=_g(s)) * 10], False),
    "inplace_broadcast": (inplace_broadcast, lambda s: [torch.randn(3, 4, generator=_g(s)),
                                                        torch.randn(4, generator=_g(s))], False),
    "layer_norm_dyn": (layer_norm, lambda s: [torch.randn(4 + s, 16, generator=_g(s)), torch.randn(16, generator=_g(s)),
                                              torch.randn(16, generator=_g(s))], True),
    "shapes_dyn": (shapes_sym, lambda s: [torch.randn(4, 6, generator=_g(s)), torch.randn(4, 2 + s, generator=_g(s))],
                   True),
    "one_hot_dyn": (one_hot, lambda s: [torch.randint(0, 16, (5 + s,), generator=_g(s))], True),
    "copy_into": (copy_into, lambda s: [torch.randn(3, 4, generator=_g(s)),
                                        torch.randn(4, generator=_g(s)).double()], False),
}


def run_and_compare(plan, fn, args, atol=1e-5, rtol=1.3e-6):
    mine = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    ref = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    out = plan(*mine)
    exp = fn(*ref)
    exp = list(exp) if isinstance(exp, (tuple, list)) else [exp]
    assert len(out) == len(exp)
    for o, e in zip(out, exp):
        if not isinstance(e, torch.Tensor):
            assert o == e
            continue
        assert o.dtype == e.dtype and o.shape == e.shape, (o.dtype, tuple(o.shape), e.dtype, tuple(e.shape))
        torch.testing.assert_close(o, e, atol=atol, rtol=rtol)
    for x, y in zip(mine, ref):
        if isinstance(x, torch.Tensor):
            torch.testing.assert_close(x, y, atol=atol, rtol=rtol)
    return out, mine


_PLANS: dict = {}


def plan_for(name):
    if name not in _PLANS:
        fn, make, dyn = PROGRAMS[name]
        c = capture(fn, *make(0), dynamic=dyn)
        _PLANS[name] = lower(c.trace, hints=c.symbol_hints, executor="reference")
    return _PLANS[name]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_eager(name):
    fn, make, _ = PROGRAMS[name]
    plan = plan_for(name)
    for seed in (0, 1, 2):
        run_and_compare(plan, fn, make(seed), atol=1e-3 if name == "mixed_dtypes" else 1e-5,
                        rtol=1e-3 if name == "mixed_dtypes" else 1.3e-6)


def test_writeback_decisions():
    st = {n: plan_for(n).stats() for n in ("inplace_chain", "read_old_after_write", "read_old_and_new",
                                           "read_new_after_write",
                                           "two_buffers", "center_inplace", "step_and_param", "adam3",
                                           "inplace_broadcast", "copy_into")}
    assert st["inplace_chain"]["aliased_writebacks"] == 1 and st["inplace_chain"]["copy_writebacks"] == 0
    assert st["read_new_after_write"]["aliased_writebacks"] == 1
    assert st["two_buffers"]["aliased_writebacks"] == 2
    # mm reads the old value: it is scheduled before the segment computing the new one, which then aliases
    assert st["read_old_after_write"]["aliased_writebacks"] == 1 and st["read_old_after_write"]["copy_writebacks"] == 0
    assert [type(s).__name__ for s in plan_for("read_old_after_write").steps if s.kind != "check"] == [
        "Fallback", "Segment"]
    # mm reads both the old and the new value: the copy waits until after it
    assert st["read_old_and_new"]["copy_writebacks"] == 1
    assert "the old value is read later" in plan_for("read_old_and_new").decisions["x"]
    # a reduction reads the buffer inside the segment that would write it
    assert st["center_inplace"]["copy_writebacks"] == 1
    assert "sum reads it inside seg0" in plan_for("center_inplace").decisions["x"]
    # every thread reads step: writing it in place would race; p is written in place
    assert st["step_and_param"]["copy_writebacks"] == 1 and st["step_and_param"]["aliased_writebacks"] == 1
    assert st["adam3"]["aliased_writebacks"] == 9 and st["adam3"]["copy_writebacks"] == 0
    assert st["adam3"]["fallback_ops"] == 0
    assert st["inplace_broadcast"]["aliased_writebacks"] == 1
    assert st["copy_into"]["aliased_writebacks"] == 1


def test_adam_three_steps():
    fn, make, _ = PROGRAMS["adam3"]
    plan = plan_for("adam3")
    args = make(5)
    mine = [a.clone() for a in args]
    ref = [a.clone() for a in args]
    ptrs = [a.data_ptr() for a in mine]
    for _ in range(3):
        plan(*mine)
        fn(*ref)
    for x, y in zip(mine, ref):
        torch.testing.assert_close(x, y, atol=1e-6, rtol=1e-5)
    assert [a.data_ptr() for a in mine] == ptrs
    assert plan.stats()["segments"] == 1


def test_fallback_kinds():
    assert plan_for("int8_fallback").stats()["fallback_ops"] >= 1
    assert plan_for("kv").stats()["fallback_kinds"]["index_copy"] == 2
    assert "gather" in plan_for("ce").stats()["fallback_kinds"]
