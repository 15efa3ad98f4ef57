"""Write-backs on hand-written traces: the ordering analysis, not special cases, decides
between aliasing in place, copying after the last reader, and cloning what would be
overwritten."""

from __future__ import annotations

import pytest
import torch
from satfuse.engine import parse_trace
from satfuse.engine.ir import OutputAlias
from satfuse.lowering import GuardError, SegmentError, lower


def plan(text, output_aliases=()):
    tr = parse_trace(text)
    tr.output_aliases = list(output_aliases)  # as capture records eager's (empty: every output fresh)
    return lower(tr, executor="reference")


def test_output_is_the_old_input():
    p = plan('''
def f(x: "f32[4]"):
  add0 = add(x, 1)  # f32[4]
  x1 = copy_(x, add0)  # f32[4]
  writeback(x, x1)
  return (x, x1)
''', [None, OutputAlias("input", 0, (4,), (1,), 0)])
    x = torch.randn(4)
    old = x.clone()
    out = p(x)
    torch.testing.assert_close(out[0], old)
    torch.testing.assert_close(x, old + 1)
    assert out[1] is x  # the new value is returned as the caller's buffer, as eager does
    assert p.stats()["aliased_writebacks"] == 1 and p.stats()["clones"] == 1
    src = str(p)
    assert src.index("x_c0 = x.clone()") < src.index("seg0.execute")


def test_view_of_old_input_is_cloned_before_the_write():
    p = plan('''
def f(x: "f32[2, 3]"):
  r = reshape(x, new_shape=(6,))  # f32[6]
  add0 = add(x, 1)  # f32[2, 3]
  x1 = copy_(x, add0)  # f32[2, 3]
  writeback(x, x1)
  return (r,)
''')
    x = torch.randn(2, 3)
    old = x.clone()
    (r,) = p(x)
    torch.testing.assert_close(r, old.reshape(6))
    torch.testing.assert_close(x, old + 1)
    # the reshape is a torch view of x (no segment copies it): cloned once before x is written
    # in place, and that clone is the fresh tensor eager returns
    st = p.stats()
    assert (st["torch_views"], st["clones"], st["aliased_writebacks"], st["copy_writebacks"]) == (1, 1, 1, 0)
    assert str(p).count(".clone()") == 1


def test_swap_two_buffers():
    p = plan('''
def f(x: "f32[3]", y: "f32[3]"):
  writeback(x, y)
  writeback(y, x)
  return ()
''')
    x, y = torch.randn(3), torch.randn(3)
    ox, oy = x.clone(), y.clone()
    assert p(x, y) == []
    torch.testing.assert_close(x, oy)
    torch.testing.assert_close(y, ox)


def test_value_from_a_torch_call():
    p = plan('''
def f(a: "f32[2, 2]", b: "f32[2, 2]"):
  m = aten.mm.default(a, b)  # f32[2, 2]
  writeback(a, m)
  return (m,)
''')
    a, b = torch.randn(2, 2), torch.randn(2, 2)
    exp = a @ b
    (m,) = p(a, b)
    torch.testing.assert_close(a, exp)
    torch.testing.assert_close(m, exp)
    assert "its value comes from the torch call" in p.decisions["a"]


def test_one_value_written_to_two_buffers():
    p = plan('''
def f(x: "f32[3]", y: "f32[3]", z: "f32[3]"):
  s = add(z, 1)  # f32[3]
  writeback(x, s)
  writeback(y, s)
  return (s,)
''')
    x, y, z = torch.randn(3), torch.randn(3), torch.randn(3)
    (s,) = p(x, y, z)
    for t in (x, y, s):
        torch.testing.assert_close(t, z + 1)
    assert p.stats()["aliased_writebacks"] == 2
    assert "fd.ops.set(s)" in str(p)  # the second alias takes a copy


def test_chain_on_one_buffer():
    p = plan('''
def f(x: "f32[4]", y: "f32[4]"):
  add0 = add(x, y)  # f32[4]
  x1 = copy_(x, add0)  # f32[4]
  mul1 = mul(x1, 2)  # f32[4]
  x2 = copy_(x1, mul1)  # f32[4]
  add2 = add(x2, 1)  # f32[4]
  writeback(x, x2)
  return (add2,)
''')
    x, y = torch.randn(4), torch.randn(4)
    exp_x = (x + y) * 2
    (o,) = p(x, y)
    torch.testing.assert_close(x, exp_x)
    torch.testing.assert_close(o, exp_x + 1)
    assert p.stats()["aliased_writebacks"] == 1 and p.stats()["copy_writebacks"] == 0


def test_failed_guard_writes_nothing():
    p = plan('''
def f(x: "f32[4]", y: "i64[4]"):
  add0 = add(x, 1)  # f32[4]
  x1 = copy_(x, add0)  # f32[4]
  writeback(x, x1)
  return (x1,)
''')
    x = torch.randn(4)
    old = x.clone()
    with pytest.raises(GuardError, match=r"y\.dtype == torch\.int64"):
        p(x, torch.zeros(4))
    assert torch.equal(x, old)


def test_segment_error_points_at_the_plan_line_and_node():
    p = plan('''
def f(x: "f32[4, 3]", i: "i64[2]"):
  e = exp(x)  # f32[4, 3]
  s = index_select(x, 0, i)  # f32[2, 3]
  return (s, e)
''')
    with pytest.raises(SegmentError, match=r"seg\d failed at plan line \d+: .*index_select.*\(IR: s = index_select\)"):
        p(torch.randn(4, 3), torch.tensor([0, 7]))


def test_segments_of_one_definition_share_it_and_each_names_its_own_line():
    """Segments whose definitions are one text but for names share one: the plan holds its text
    once and builds one FusionDefinition (a stack of identical blocks compiles each distinct
    definition once). An error still names the segment that failed, its own spelling of the line
    and its IR node, not those of the segment whose text the plan holds."""
    p = plan('''
def f(x: "f32[2, 3]", w: "f32[3, 3]", i: "i64[2]", j: "i64[2]"):
  s = index_select(x, 0, i)  # f32[2, 3]
  a = mul(s, 2)  # f32[2, 3]
  m = aten.mm.default(a, w)  # f32[2, 3]
  t = index_select(m, 0, j)  # f32[2, 3]
  b = mul(t, 2)  # f32[2, 3]
  return (b,)
''')
    assert (p.stats()["segments"], p.stats()["definitions"]) == (2, 1)
    x, w, ok = torch.randn(2, 3), torch.randn(3, 3), torch.tensor([1, 0])
    torch.testing.assert_close(p(x, w, ok, ok)[0], (x[ok] * 2 @ w)[ok] * 2)
    assert "seg1 = fusion.shared(seg0, 'seg1')" in p.source and p.source.count("def seg") == 1, p.source
    with pytest.raises(SegmentError, match=r"seg1 failed at plan line \d+ \(seg0's definition\): "
                                           r"t = fd\.ops\.index_select.*\(IR: t = index_select\)"):
        p(x, w, ok, torch.tensor([0, 7]))


def test_segment_reading_a_view_of_the_buffer_does_not_alias():
    p = plan('''
def f(x: "f32[3, 3]"):
  t = aten.t.default(x)  # f32[3, 3]
  a = add(t, 1)  # f32[3, 3]
  x1 = copy_(x, a)  # f32[3, 3]
  writeback(x, x1)
  return ()
''')
    x = torch.randn(3, 3)
    exp = x.t() + 1
    p(x)
    torch.testing.assert_close(x, exp)
    assert p.stats()["copy_writebacks"] == 1
    assert "may share x's storage" in p.decisions["x"]


class _WriteFirstNvFuser:
    """A frontend whose kernel writing an aliased input runs before the fusion's other kernels,
    as nvFuser may order them (on an H200: optimize fuzz 9850 #13, jit 10026 #113 #114)."""

    from satfuse.lowering.frontend_ref import DataType
    from satfuse.lowering.frontend_ref import FusionDefinition as _Ref

    class FusionDefinition(_Ref):
        def execute(self, inputs, device=None):
            outs = super().execute(inputs, device=device)  # reads everything, then writes
            return super().execute(inputs, device=device) if self._aliases else outs


def _exp2_then_fill(d):
    t = torch.exp2(d)
    d.detach().fill_(2)
    return t


def _or_then_lt(a):
    t = torch.logical_or(a, a)
    a.lt_(a)
    return torch.tanh(t)


def _abs_then_ne(a):
    t = a.abs()
    a.ne_(2)
    return t.masked_fill(t != t, 3)


@pytest.mark.parametrize("f, x", [(_exp2_then_fill, torch.tensor([[3]])), (_or_then_lt, torch.tensor([0.5])),
                                  (_abs_then_ne, torch.tensor([[-2.0, 1.5], [2.0, -0.5]], dtype=torch.float64))],
                         ids=["exp2", "logical_or", "abs"])
def test_an_input_read_for_another_value_is_written_after_the_segment(monkeypatch, f, x):
    """A write-back aliased in a segment whose other outputs read the buffer's old value: nvFuser
    may run the writing kernel first, so the write is a copy after the segment."""
    from satfuse.engine import capture
    from satfuse.lowering import plan as plan_mod

    monkeypatch.setattr(plan_mod, "_frontend", lambda executor: (_WriteFirstNvFuser, True))
    c = capture(f, x.clone())
    p = lower(c.trace, hints=c.symbol_hints, executor="nvfuser")
    (buf, why), = p.decisions.items()
    assert why.startswith("copy after") and "for another value" in why, why
    got_in, want_in = x.clone(), x.clone()
    got, want = p(got_in)[0], f(want_in)
    assert torch.equal(got, want) and torch.equal(got_in, want_in)


def test_a_buffer_read_only_by_the_written_value_stays_aliased():
    """Adam's moments: each buffer's old value feeds only its new value (another value reads the
    new one), so data dependence orders every read before the write: still aliased in place."""
    from satfuse.engine import capture

    def step(p, m, g):
        m.mul_(0.9).add_(g, alpha=0.1)
        p.sub_(m * 0.01)

    c = capture(step, *(torch.randn(8) for _ in range(3)))
    p = lower(c.trace, hints=c.symbol_hints, executor="reference")
    assert all(d.startswith("aliased in") for d in p.decisions.values()), p.decisions
