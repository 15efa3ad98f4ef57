"""Segmentation: maximal acyclic segments, segment-input constraints, the support table,
and seed 001's dynamic split under random sizes."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from satfuse.engine import capture, parse_trace
from satfuse.lowering import GuardError, is_fusible, lower, needs_segment_input
from satfuse.lowering.segments import Fallback, Segment, partition
from satfuse.lowering.support import SUPPORT, fallback_reason

from tests.corpus import split3  # seed programs: one definition, the corpus's


def steps_of(text):
    tr = parse_trace(text)
    return tr, partition(tr)


def shape(steps):
    return [(s.name, [n.outs[0].name for n in s.nodes]) if isinstance(s, Segment) else ("fallback", s.node.op)
            for s in steps]


def test_no_cycle_through_a_fallback():
    tr, steps = steps_of('''
def f(x: "f32[4, 4]", w: "f32[4, 4]"):
  e = exp(x)  # f32[4, 4]
  m = aten.mm.default(e, w)  # f32[4, 4]
  s = sin(x)  # f32[4, 4]
  a = add(m, e)  # f32[4, 4]
  return (a, s)
''')
    assert shape(steps) == [("seg0", ["e", "s"]), ("fallback", "aten.mm.default"), ("seg1", ["a"])]
    seg0, _, seg1 = steps
    assert [v.name for v in seg0.outputs] == ["e", "s"] and [v.name for v in seg1.inputs] == ["e", "m"]


def test_looked_up_tensor_must_be_a_segment_input():
    tr, steps = steps_of('''
def f(x: "f32[4, 8]", i: "i64[4, 1]"):
  e = exp(x)  # f32[4, 8]
  j = add(i, 1)  # i64[4, 1]
  t = take_along_axis(e, j, dim=1)  # f32[4, 1]
  u = take_along_axis(x, j, dim=1)  # f32[4, 1]
  return (t, u)
''')
    # t looks up e, computed in seg0: it starts seg1; u looks up an input with an index computed elsewhere
    assert shape(steps) == [("seg0", ["e", "j"]), ("seg1", ["t", "u"])]
    assert [v.name for v in steps[1].inputs] == ["e", "j", "x"]
    assert needs_segment_input(tr.nodes[2]) == [0]


def test_support_table():
    tr = parse_trace('''
def f(x: "f32[4, 8]", i: "i64[4, 1]", b: "i8[4]"):
  g = gather(x, 1, i)  # f32[4, 1]
  s = scatter(x, 1, i, g)  # f32[4, 8]
  c = add(b, 1)  # i8[4]
  sl = slice(x, start_indices=(0, 0), end_indices=(4, 8), strides=(1, 2))  # f32[4, 4]
  e = exp(x)  # f32[4, 8]
  return (s, c, sl, e)
''')
    g, s, c, sl, e = tr.nodes
    assert not is_fusible(g) and not is_fusible(s) and not is_fusible(c) and not is_fusible(sl)
    assert is_fusible(e)
    assert "i8" in fallback_reason(c) and "strides" in fallback_reason(sl)
    assert SUPPORT["amax"].nvf == "max" and SUPPORT["index_copy"].fusible is False
    assert all(row.source for row in SUPPORT.values())
    steps = partition(tr)
    assert sorted(s.node.op for s in steps if isinstance(s, Fallback)) == ["add", "gather", "scatter", "slice"]


def test_names_are_deterministic():
    text = '''
def f(x: "f32[4]", w: "f32[4, 4]"):
  a = exp(x)  # f32[4]
  b = broadcast_in_dim(a, shape=(4, 4), broadcast_dims=(1,))  # f32[4, 4]
  m = aten.mm.default(b, w)  # f32[4, 4]
  c = sin(m)  # f32[4, 4]
  return (c,)
'''
    p1, p2 = (lower(parse_trace(text), executor="reference") for _ in range(2))
    assert str(p1) == str(p2)
    assert [s.name for s in p1.segments] == ["seg0", "seg1"]


_SPLIT = {}


def split_plan():
    if not _SPLIT:
        c = capture(split3, torch.randn(2, 3, 10), 3, 4, dynamic=True)
        _SPLIT["p"] = lower(c.trace, hints=c.symbol_hints, executor="reference")
    return _SPLIT["p"]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 3), st.integers(2, 3), st.integers(2, 9), st.integers(-2, 11), st.integers(-2, 11))  # dims >= 2: the plan was captured assuming so (size 1 is refused by a guard, see test_lowering)
def test_split_dynamic_random(a0, a1, a2, dim0, dim1):
    """Extents >= 2: capture's ShapeEnv specializes 0 and 1 (its range guards say so)."""
    p = split_plan()
    a = torch.randn(a0, a1, a2)
    old = a.clone()
    if dim0 < 0 or dim1 < 0 or dim0 + dim1 > a2:
        try:
            p(a, dim0, dim1)
        except GuardError as e:
            assert "guard failed" in str(e)
        else:
            raise AssertionError(f"no guard failed for a.shape={tuple(a.shape)}, dim0={dim0}, dim1={dim1}")
        assert torch.equal(a, old)
        return
    out = p(a, dim0, dim1)
    exp = split3(a, dim0, dim1)
    assert len(out) == 3
    for o, e in zip(out, exp):
        assert torch.equal(o, e)


def test_every_fusible_op_has_a_translator():
    from satfuse.lowering.emit import TRANSLATORS

    fusible = {op for op, row in SUPPORT.items() if row.fusible}
    assert fusible == set(TRANSLATORS), (fusible ^ set(TRANSLATORS))


def _kahn_by_scans(preds, blocking, fallible):
    """The order :func:`segments._kahn` must give, by a sorted scan of the ready groups per step."""
    succs = [set() for _ in preds]
    for g, ps in enumerate(preds):
        for p in ps:
            succs[p].add(g)
    indeg = [len(p) for p in preds]
    ready = [g for g in range(len(preds)) if indeg[g] == 0]
    order, done = [], set()
    while ready:
        g = next((h for h in sorted(ready) if h in fallible), None)
        if g is None:
            g = next((h for h in sorted(ready) if not (blocking.get(h, set()) - done)), None)
        if g is None:
            g = min(ready)
        ready.remove(g)
        order.append(g)
        done.add(g)
        for s in succs[g]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    return order if len(order) == len(preds) else None


def test_segment_order_takes_fallible_then_unblocked_then_smallest():
    import random

    from satfuse.lowering.segments import _kahn

    rng = random.Random(0)
    for _ in range(400):
        n = rng.randint(1, 30)
        preds = [{p for p in range(g) if rng.random() < rng.choice((0.05, 0.2, 0.5))} for g in range(n)]
        if rng.random() < 0.1 and n > 2:  # a cycle: no order
            preds[0].add(n - 1)
        blocking = {h: {b for b in range(n) if b != h and rng.random() < 0.15} for h in range(n)
                    if rng.random() < 0.4}
        fallible = {g for g in range(n) if rng.random() < 0.2}
        want = _kahn_by_scans(preds, blocking, fallible)
        assert _kahn([[]] * n, preds, blocking, fallible) == want, (preds, blocking, fallible)
