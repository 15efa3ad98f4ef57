"""The model of nvFuser's own segmentation (``lowering/kernels.py``): how many kernels one of
our segments becomes, what crosses between them, and why (each split names a fact of
``lowering/support.py FACTS``). CPU only: the predictions are what a GPU run compares with
``torch.profiler``."""

from __future__ import annotations

import pytest
import torch
from satfuse.engine import parse_trace
from satfuse.engine.costs import plan_traffic
from satfuse.lowering import lower
from satfuse.lowering.kernels import predict
from satfuse.lowering.support import FACTS, PERSISTENT_BUDGET_BYTES


def segments(text: str):
    tr = parse_trace(text)
    p = lower(tr, executor="reference")
    return p, [s for s in p.steps if s.kind == "segment"]


SOFTMAX = '''
def f(x: "f32[8, {c}]"):
  m = amax(x, dims=(1,), keepdim=1)  # f32[8, 1]
  d = sub(x, m)  # f32[8, {c}]
  e = exp(d)  # f32[8, {c}]
  s = sum(e, dims=(1,), keepdim=1)  # f32[8, 1]
  y = div(e, s)  # f32[8, {c}]
  return (y,)
'''


def test_a_normalization_that_fits_is_one_kernel():
    p, (seg,) = segments(SOFTMAX.format(c=1024))
    assert seg.predicted.count == 1 and not seg.predicted.reasons and not seg.predicted.crossings
    assert plan_traffic(p.steps, p.trace).kernels == 1


def test_a_row_over_the_persistent_budget_splits_and_reads_the_row_again():
    c = PERSISTENT_BUDGET_BYTES // 4 * 2  # f32 rows twice the budget
    p, (seg,) = segments(SOFTMAX.format(c=c))
    pred = seg.predicted
    assert pred.count == 2 and "persistent-budget" in pred.reasons[0]
    assert [(v.name, n) for v, n in pred.rereads] == [("x", 1)]
    t = plan_traffic(p.steps, p.trace)
    assert t.kernels == 2 and t.reads == 2 * 8 * c * 4  # x read by both kernels


def test_reductions_of_different_signatures_are_separate_kernels():
    """CE forward: the row reductions over [N, C] and the mean over [N] cannot share a kernel;
    only [N]-sized values cross between them."""
    p, (seg,) = segments('''
def f(x: "f32[8, 16]"):
  m = amax(x, dims=(1,), keepdim=1)  # f32[8, 1]
  d = sub(x, m)  # f32[8, 16]
  e = exp(d)  # f32[8, 16]
  s = sum(e, dims=(1,), keepdim=1)  # f32[8, 1]
  l = log(s)  # f32[8, 1]
  r = reshape(l, new_shape=(8,))  # f32[8]
  t = sum(r, dims=(0,), keepdim=0)  # f32[]
  return (t,)
''')
    pred = seg.predicted
    assert pred.count == 2 and "reduction-signature" in pred.reasons[0]
    assert [k.signature for k in pred.kernels] == [((8, 16), (1,)), ((8,), (0,))]
    assert all(v.type.shape in ((8, 1), (8,)) for v, _, _ in pred.crossings), pred.crossings
    assert not pred.rereads


def test_same_signature_reductions_share_a_kernel_unless_that_makes_a_cycle():
    """A reduction over [N] that needs the [N, C] kernel's result, and one that the [N, C]
    kernel needs, cannot be one kernel: three kernels, in dependency order."""
    p, (seg,) = segments('''
def f(x: "f32[8, 16]", w: "f32[8]"):
  n = sum(w, dims=(0,), keepdim=0)  # f32[]
  m = amax(x, dims=(1,), keepdim=1)  # f32[8, 1]
  d = sub(x, m)  # f32[8, 16]
  g = div(d, n)  # f32[8, 16]
  s = sum(g, dims=(1,), keepdim=0)  # f32[8]
  t = sum(s, dims=(0,), keepdim=0)  # f32[]
  return (t, g)
''')
    assert [k.signature for k in seg.predicted.kernels] == [((8,), (0,)), ((8, 16), (1,)), ((8,), (0,))]


def test_a_broadcast_of_a_reduction_to_a_new_domain_ends_the_kernel():
    p, (seg,) = segments('''
def f(x: "f32[8, 16]"):
  s = sum(x, dims=(1,), keepdim=0)  # f32[8]
  b = broadcast_in_dim(s, shape=(8, 32), broadcast_dims=(0,))  # f32[8, 32]
  y = exp(b)  # f32[8, 32]
  return (y,)
''')
    assert seg.predicted.count == 2 and "post-reduction-broadcast" in seg.predicted.reasons[0]
    assert [v.name for v, _, _ in seg.predicted.crossings] == ["s"]


def test_independent_computations_are_one_kernel_each():
    """Adam over several parameters in one segment: nothing but scalars connects the updates, and
    nvFuser's schedulers reject a disconnected fusion graph (a kernel per parameter)."""
    p, (seg,) = segments('''
def f(a: "f32[64]", b: "f32[64]", lr: "f32[]"):
  a1 = mul(a, lr)  # f32[64]
  b1 = mul(b, lr)  # f32[64]
  return (a1, b1)
''')
    assert seg.predicted.count == 2 and "connected-fusion" in seg.predicted.reasons[0]
    p, (seg,) = segments('''
def f(a: "f32[64]", b: "f32[64]"):
  c = add(a, b)  # f32[64]
  d = mul(c, 2.0)  # f32[64]
  return (c, d)
''')
    assert seg.predicted.count == 1


def test_host_time_grows_with_tensors_and_kernels():
    _, (one,) = segments(SOFTMAX.format(c=16))
    _, (two,) = segments(SOFTMAX.format(c=PERSISTENT_BUDGET_BYTES))
    assert two.predicted.host_us > one.predicted.host_us > 0


def test_every_fact_names_a_source():
    for f in FACTS.values():
        assert f.what and ("NVIDIA/Fuser" in f.source or "notes/" in f.source), f


def test_explain_shows_predicted_kernels_and_splits():
    import satfuse
    from tests.corpus import ce_fwd_bwd

    plan = satfuse.optimize(ce_fwd_bwd, torch.randn(8, 16), torch.randint(0, 16, (8,)))
    text = plan.explain()
    assert "kernels" in text and "predicted host time" in text and "reduction-signature" in text
    (seg,) = [s for s in plan.lowered.steps if s.kind == "segment"]
    assert seg.predicted.count == 3  # count of targets, the [N, C] normalization, the mean
    assert max(v.type.rank for v, _, _ in seg.predicted.crossings) <= 1  # no [N, C] value crosses


@pytest.mark.parametrize("c", [16, 4096])
def test_prediction_is_deterministic(c):
    _, (seg,) = segments(SOFTMAX.format(c=c))
    assert predict(seg).count == seg.predicted.count


def test_reductions_separated_by_another_signature_never_merge():
    """Row sums and column maxima in turns: each same-signature pair has one of the other between
    them, so every reduction is its own kernel group, while independent sums of one signature
    share one (the separated pairs are answered without a graph search: an alternating chain of
    300 took 5 s)."""
    from satfuse.lowering.kernels import _reduction_groups

    def chain(x):
        for i in range(300):
            x = x - x.sum(-1, keepdim=True) if i % 2 else x + x.amax(0, keepdim=True)
        return x

    def independent(x):
        return [x * float(i) - (x * float(i)).sum(-1, keepdim=True) for i in range(1, 40)]

    import satfuse

    (seg,) = satfuse.optimize(chain, torch.randn(4, 8)).lowered.segments
    groups, after = _reduction_groups(seg.nodes)
    assert len(groups) == 300 and all(len(g) == 1 for g in groups)
    assert all(after[k] == {k - 1} for k in range(1, 300))
    segs = satfuse.optimize(independent, torch.randn(4, 8)).lowered.segments
    sums = [g for s in segs for g in _reduction_groups(s.nodes)[0]]
    assert len(sums) == 1 and len(sums[0]) == 39
