"""Trace IR: print -> parse -> print is the identity; lint catches broken programs."""

import pytest
import sympy
import torch
import torch.nn.functional as F
from satfuse.engine import IRError, Node, TensorType, Trace, Var, capture, parse_trace
from satfuse.engine.interp import run_trace

HAND = '''# hand-written
def computation(x: "f32[8, s0]", y: "i64[8]", n: "int s1"):
  m = amax(x, dims=(1,), keepdim=1)  # f32[8, 1]
  d = sub(x, m)  # f32[8, s0]
  i = broadcast_in_dim(y, shape=(8, 1), broadcast_dims=(0,))  # i64[8, 1]
  t = take_along_axis(d, i, dim=1)  # f32[8, 1]
  s = slice(x, start_indices=(0, 0), end_indices=(8, s0 - s1), strides=(1, 1))  # f32[8, s0 - s1]
  c = copy_(x, d)  # f32[8, s0]
  z = full(shape=(), fill_value=-float('inf'), dtype='f32')  # f32[]
  w = where(eq(t, z), t, 0.0)  # f32[8, 1]
  writeback(x, c)
  return (t, s, n)
'''


def _programs():
    def ce(x, y):
        return torch.gather(torch.log_softmax(x, 1), 1, y.unsqueeze(1)).squeeze(1).neg().mean()

    def inpl(x, y):
        x.add_(y)
        return x * 2

    def split(a, d0, d1):
        return torch.split(a, (d0, d1, a.size(2) - d0 - d1), dim=2)

    return [
        (ce, (torch.randn(8, 16), torch.randint(0, 16, (8,))), False),
        (inpl, (torch.randn(4), torch.randn(4)), False),
        (split, (torch.randn(2, 3, 10), 3, 4), True),
        (lambda x: F.layer_norm(x, (16,)), (torch.randn(4, 16),), False),
    ]


@pytest.mark.parametrize("k", range(4))
def test_captured_traces_round_trip(k):
    fn, args, dyn = _programs()[k]
    tr = capture(fn, *args, dynamic=dyn).trace
    text = str(tr)
    again = parse_trace(text)
    assert str(again) == text
    # the parsed program computes the same thing
    a, _ = run_trace(tr, args)
    b, _ = run_trace(again, args)
    for u, v in zip(a, b):
        torch.testing.assert_close(u, v)


def test_hand_written_trace_parses_with_symbols():
    bad = HAND.replace("  w = where(eq(t, z), t, 0.0)  # f32[8, 1]\n", "")
    tr = parse_trace(bad)
    assert [v.name for v in tr.inputs] == ["x", "y", "n"]
    s = tr.nodes[4].out.type.shape
    assert s[1] == sympy.Symbol("s0", integer=True) - sympy.Symbol("s1", integer=True)
    assert str(parse_trace(str(tr))) == str(tr)


def test_nested_call_is_rejected_with_line():
    with pytest.raises(IRError, match="line"):
        parse_trace(HAND)


def test_lint_names_the_problem():
    x = Var("x", TensorType("f32", (4,)))
    y = Var("y", TensorType("f32", (4,)))
    tr = Trace([x], [Node("exp", (y,), {}, (Var("z", TensorType("f32", (4,))),))], [])
    with pytest.raises(IRError, match="uses y before it is defined"):
        tr.lint()
    tr = Trace([x], [], [], writebacks=[(y, x)])
    with pytest.raises(IRError, match="not an input"):
        tr.lint()


def test_type_comment_mismatch_is_an_error():
    text = 'def f(x: "f32[4]"):\n  y = exp(x)  # i64[4]\n  return (y,)\n'
    with pytest.raises(IRError, match="line 2: exp gives f32\\[4\\]"):
        parse_trace(text)
