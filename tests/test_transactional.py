"""Transactional plans: a plan completes, or raises eager's exception type with every caller
tensor untouched (``lowering/checks.py``), through optimize, jit and torch.compile."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from satfuse.engine import parse_trace
from satfuse.lowering import lower
from satfuse.lowering.checks import DataCheck

import satfuse


def kv_read_after(q, k, v, mask, idx, src):
    """Seed 000 with ``q`` also read after the write."""
    q.index_copy_(2, idx, src)
    k.index_copy_(2, idx, src)
    return F.scaled_dot_product_attention(q, k, v, mask) + q.sum()


def kv_inputs(idx):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(1, 4, 2, 16, generator=g), torch.randn(1, 4, 3, 16, generator=g),
            torch.randn(1, 4, 3, 16, generator=g), torch.ones(1, 1, 2, 3, dtype=torch.bool), torch.tensor(idx),
            torch.randn(1, 4, 2, 16, generator=g)]


def gather_then_add(x, idx):
    g = torch.gather(x, 1, idx)
    x.add_(1)
    return g


def gather_inputs(hi):
    """The index has fewer rows than ``x``: the gather stays a torch call (the fused
    take_along_axis form needs a rule obligation, checked through ``lower(checks=...)``)."""
    return [torch.randn(3, 4), torch.tensor([[0, 1], [2, hi]])]


def leaf_then_other(a, b):
    b.add_(1)
    a.add_(1)
    return a * b


def leaf_inputs():
    return [torch.zeros(3), torch.zeros(3, requires_grad=True)]


CASES = {  # name: (fn, example inputs, bad inputs)
    "kv_cache_bad_index": (kv_read_after, lambda: kv_inputs([0, 1]), lambda: kv_inputs([0, 2])),
    "gather_out_of_range_then_add": (gather_then_add, lambda: gather_inputs(3), lambda: gather_inputs(9)),
}


def expect_raises_untouched(call, fn, bad):
    """``fn(*bad)`` raises in eager; ``call`` raises the same type and writes nothing."""
    ref = bad()
    with pytest.raises(Exception) as eager_err:
        fn(*ref)
    mine = bad()
    before = [x.clone() for x in mine]
    with pytest.raises(eager_err.type):
        call(*mine)
    for x, y in zip(mine, before):
        assert torch.equal(x, y), "the plan wrote a caller tensor before raising"


@pytest.mark.parametrize("name", sorted(CASES))
def test_optimize_raises_before_writing(name):
    fn, example, bad = CASES[name]
    plan = satfuse.optimize(fn, *example())
    expect_raises_untouched(plan, fn, bad)
    good = example()  # and the plan still runs correct calls
    ref = [x.clone() for x in good]
    torch.testing.assert_close(plan(*good), fn(*ref))
    for x, y in zip(good, ref):
        torch.testing.assert_close(x, y)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_raises_before_writing(name):
    fn, example, bad = CASES[name]
    f = satfuse.jit(fn)
    f(*example())
    expect_raises_untouched(f, fn, bad)


def test_compile_raises_before_writing():
    fn, example, bad = CASES["kv_cache_bad_index"]
    torch._dynamo.reset()
    f = torch.compile(fn, backend="satfuse")
    f(*example())
    expect_raises_untouched(f, fn, bad)


def test_leaf_that_requires_grad_written_in_place():
    plan = satfuse.optimize(leaf_then_other, *[x.detach() for x in leaf_inputs()])
    expect_raises_untouched(plan, leaf_then_other, leaf_inputs)
    with torch.no_grad():  # eager allows it without grad mode; so does the plan
        a, b = leaf_inputs()
        out = plan(a, b)
    assert torch.equal(out, torch.ones(3)) and torch.equal(a, torch.ones(3)) and torch.equal(b, torch.ones(3))


def test_data_check_runs_before_first_write():
    """A check another stage adds (``lower(checks=...)``) reading a value computed after the
    segment that would write in place still runs first: that write becomes a copy after it."""
    tr = parse_trace('''
def f(x: "f32[4]", y: "f32[4]"):
  a = add(x, 1.0)  # f32[4]
  x1 = copy_(x, a)  # f32[4]
  b = mul(y, 2.0)  # f32[4]
  writeback(x, x1)
  return (b,)
''')
    b = next(n.out for n in tr.nodes if n.op == "mul")
    check = DataCheck("bool(({0} < 100).all())", (b,), IndexError, "y too large", "test")
    plan = lower(tr, checks=[check])
    assert "raise IndexError('y too large')" in str(plan)
    x, y = torch.zeros(4), torch.full((4,), 60.0)
    with pytest.raises(IndexError, match="y too large"):
        plan(x, y)
    assert torch.equal(x, torch.zeros(4))
    out = plan(x, torch.ones(4))
    assert torch.equal(out[0], torch.full((4,), 2.0)) and torch.equal(x, torch.ones(4))
