"""``satfuse.jit(dynamic=True)`` never fails inside satfuse on a valid program (issue 16): what
has no symbolic form gets a static plan for that call, what no plan can serve runs eagerly,
each said once on the ``satfuse.capture`` logger; results always equal eager's."""

from __future__ import annotations

import logging

import pytest
import torch
import torch.nn.functional as F
from semantics_util import assert_views_of_one, check_jit, views_of_one


def _steps(x):
    return x[::2] * 2


def _neg_pad(x):
    return F.pad(x, (-1, 2))


def _slice_7(x):
    return x[7:-1:2] + 1


def _chunk(x):
    return x.chunk(3, 0)[0] * 1


def _nonzero(x):
    return torch.nonzero(x)


def _mask(x):
    return x[x > 0] * 2


def _unique(x):
    return torch.unique(x)


def _unbind_first(x):
    return x.unbind(-1)[0].isnan()  # a one-element unbind is still a list the plan unpacks


def _index_copy(a, i):
    return torch.index_copy(a, -1, i, a)


def _cat_empty(a, c):
    return torch.cat([a, c], -1)  # the legacy empty f32[0] is skipped but still promotes the dtype


CASES = {
    "step_slice": (_steps, [(torch.randn(6),), (torch.randn(9),), (torch.randn(6, 3)[:, 0],)]),
    "negative_pad": (_neg_pad, [(torch.randn(6),), (torch.randn(9),)]),
    "slice_7_-1_2": (_slice_7, [(torch.randn(12),), (torch.randn(20),), (torch.randn(5),), (torch.randn(8),)]),
    "chunk_size_0": (_chunk, [(torch.randn(6, 2),), (torch.randn(0, 2),), (torch.randn(7, 2),)]),
    "nonzero": (_nonzero, [(torch.tensor([1.0, 0, 2]),), (torch.tensor([0.0, 0, 2, 3]),)]),
    "bool_mask": (_mask, [(torch.tensor([1.0, -1, 2]),), (torch.tensor([0.0, 0, 2, 3]),)]),
    "unique": (_unique, [(torch.tensor([1.0, 1, 2]),), (torch.tensor([0.0, 0, 2, 3]),)]),
    # eager raises IndexError on the empty tensor; size 1 unbinds to a one-element list
    "unbind_one": (_unbind_first, [(torch.ones(0, dtype=torch.bool),), (torch.ones(1, dtype=torch.bool),),
                                   (torch.ones(0, dtype=torch.bool),)]),
    "cat_empty_promotes": (_cat_empty, [(torch.zeros(0), torch.tensor([3])), (torch.zeros(0), torch.tensor([1, 2]))]),
    # no plan fits and capture fails: eager's own IndexError (not a RecompileError), inputs untouched
    "index_copy_rejected": (_index_copy, [(torch.zeros(0, 0), torch.tensor([2, 1, 0])),
                                          (torch.zeros(0, 0), torch.tensor([0, 1, 2]))]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_jit_dynamic_matches_eager(case):
    fn, argsets = CASES[case]
    check_jit(fn, *argsets)


def test_label_smoothing_and_int_float_math_get_one_symbolic_plan(caplog):
    """Label smoothing divides by the class count: ``0.1 / C`` is a symbolic float, which the
    e-graph holds as a leaf (``CSymFloat``) and the plan computes from the sizes (it once got
    static plans, one per class count); ``k / 3`` of an int argument is float64 tensor math."""
    def ce(x, y):
        return F.cross_entropy(x, y, label_smoothing=0.1)

    def k3(x, k):
        return x * (k / 3)

    with caplog.at_level(logging.WARNING, logger="satfuse.capture"):
        c = check_jit(ce, (torch.randn(4, 5), torch.randint(0, 5, (4,))), (torch.randn(6, 7), torch.randint(0, 7, (6,))),
                      (torch.randn(3, 5), torch.randint(0, 5, (3,))), exact=False)
        j = check_jit(k3, (torch.randn(4), 5), (torch.randn(6), 7), (torch.randn(5), 5))
    msgs = [r.getMessage() for r in caplog.records if r.name == "satfuse.capture"]
    assert not msgs, msgs
    for fn in (c, j):
        assert fn.stats()["compiles"] == 1 and fn.stats()["eager_calls"] == 0


def test_no_plan_raises_eagers_error_with_inputs_untouched():
    """A call no plan fits whose capture fails because eager rejects it raises eager's own exception
    (type and message), run on copies that share memory as the arguments do: nothing is written."""

    def f(a, b, i):
        a.add_(1)
        b.index_copy_(0, i, a)  # eager writes ``a`` and then raises
        return b

    j = satfuse_jit(f)
    base = torch.zeros(6)
    a, b = base[:3], base[3:]
    with pytest.raises(IndexError, match="index_copy_"):
        j(a, b, torch.tensor([0, 1]))
    assert torch.equal(base, torch.zeros(6))


def test_a_dtype_an_arange_of_a_symbolic_size_refuses_raises_at_every_size():
    """``arange(x.shape[0], dtype=complex64)`` raises in eager at every size (``arange_cpu`` has no
    complex kernel); its size was symbolic, so the kernel was never asked, and the static plan of a
    size-2 call returned where eager raises (jit fuzz 10091 #1527). A dead arange, as there."""

    def f(a, c):
        torch.arange(c.shape[0], dtype=torch.complex64, device=c.device)
        torch.arange(1, c.shape[0] + 3, dtype=torch.bool)
        return a * 2

    j = satfuse_jit(f)
    for n in (0, 2, 5, 2):
        with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
            j(torch.ones(3), torch.ones(n))


def test_eager_fallback_is_transactional():
    """Calls no plan serves run eagerly; where eager writes and then raises (a write through an
    ``unfold`` view of ``a`` that reads ``a``), the call raises eager's error with the inputs untouched."""

    def f(a):
        a.logical_and_(a)
        a.unfold(-1, 2, 2).atan2_(a)
        return a

    j = satfuse_jit(f)
    for n in (2, 4, 2):
        a = torch.full((n,), 3.0)
        with pytest.raises(RuntimeError, match="single memory location"):
            j(a)
        assert torch.equal(a, torch.full((n,), 3.0))


def test_torch_rejection_still_raises_before_any_write():
    def f(a, d0):
        a.mul_(2)
        return torch.split(a, (d0, a.size(0) - d0))

    j = satfuse_jit(f)
    a = torch.randn(6)
    j(a.clone(), 2)
    before = a.clone()
    with pytest.raises(RuntimeError):
        j(a, 9)  # torch rejects the split: no plan, no eager run, no write
    assert torch.equal(a, before)


def satfuse_jit(fn):
    import satfuse

    return satfuse.jit(fn, dynamic=True)


def test_returned_views_of_inputs_stay_views():
    """A view of an input that eager returns is a view of the caller's tensor with eager's geometry:
    a symbolic plan rebuilds it from the extents of a contiguous input (its layout guarded); the
    transposed input fails that guard and gets its own plan."""

    def f(x):
        return x[1:], x.t(), x[:, 0], x * 2

    j = satfuse_jit(f)
    for x in (torch.randn(3, 3), torch.randn(4, 4), torch.randn(5, 4).t(), torch.randn(3, 3)):
        got, want = j(x), f(x)
        for g, w in zip(got[:3], want[:3]):
            assert g.data_ptr() == w.data_ptr() and g.stride() == w.stride() and torch.equal(g, w)
        assert got[3].data_ptr() != x.data_ptr() and torch.equal(got[3], want[3])
    assert j.stats()["compiles"] == 2  # one plan per layout; the last call hits the first


def test_returned_views_of_permuted_inputs_keep_one_symbolic_plan(caplog):
    """A permuted input (``x.t()``, ``permute``) is dense: its strides are spelled in its symbolic
    sizes, in its own dim order, as capture's fake spells eager's views of it; the prologue
    checks that layout, so returning such views no longer needs a static plan per size (jit
    fuzz 10016 #3, #33)."""
    def f(a, x):
        return a.transpose(2, 1), a[1:, :, 0], x.t()[1:], x * 2

    j = satfuse_jit(f)
    with caplog.at_level(logging.WARNING, logger="satfuse.capture"):
        for n in (3, 4, 2, 5):
            a, x = torch.randn(n, n + 1, n + 2).permute(2, 1, 0), torch.randn(n + 1, n).t()
            got, want = j(a, x), f(a, x)
            for g, w in zip(got[:3], want[:3]):
                assert g.data_ptr() == w.data_ptr() and g.stride() == w.stride() and torch.equal(g, w)
            assert torch.equal(got[3], want[3])
    assert not [r.getMessage() for r in caplog.records if r.name == "satfuse.capture"]
    assert j.stats()["compiles"] == 1

    def g(x):  # a size-1 dim's stride is whatever the example has: spelled as torch spells it
        return x[0], x.transpose(0, 2)

    for make in (lambda n: torch.randn(1, n, 2), lambda n: torch.randn(n, 1, 2).permute(2, 1, 0)):
        j = satfuse_jit(g)
        for n in (3, 5, 4):
            x = make(n)
            for got, want in zip(j(x), g(x)):
                assert got.data_ptr() == want.data_ptr() and got.stride() == want.stride() and torch.equal(got, want)
        assert j.stats()["compiles"] == 1


def test_returned_views_of_strided_and_offset_inputs_keep_one_symbolic_plan(caplog):
    """A strided input (``x[:, ::2]``) or one at an offset (``x[1:]``) has strides or an offset
    torch gives symbols of their own: the prologue binds them from the caller's tensor as it
    binds sizes (``Trace.input_layouts``), so a view of such an input is rebuilt at eager's
    geometry by one symbolic plan (jit fuzz 10016 #4, #5 got a static plan per size); an
    expanded input's stride 0 is recorded and checked likewise (jit fuzz 10017 #109, #111, 10020 #66)."""
    def f(a, b, c, d):
        return a.unfold(1, 2, 1), b.t(), c.unsqueeze(0), d.diagonal(), a * 2

    def inputs(n):
        return (torch.randn(n, 2 * n + 2)[:, ::2], torch.randn(n + 1, n + 2)[1:], torch.randn(1).expand(n),
                torch.randn(n, 1, n).expand(n, n, n))

    j = satfuse_jit(f)
    with caplog.at_level(logging.WARNING, logger="satfuse.capture"):
        for n in (2, 4, 3):
            args = inputs(n)
            got, want = j(*args), f(*args)
            for g, w in zip(got[:4], want[:4]):
                assert g.data_ptr() == w.data_ptr() and g.stride() == w.stride() and torch.equal(g, w)
            assert torch.equal(got[4], want[4])
    assert not [r.getMessage() for r in caplog.records if r.name == "satfuse.capture"]
    assert j.stats()["compiles"] == 1


def test_returned_views_of_an_overlapping_input_keep_one_symbolic_plan():
    """An input that overlaps itself (``as_strided((n, 4), (1, 1))``) has strides ShapeEnv keeps as
    numbers, which its symbolic sizes do not spell: they are its recorded layout, checked by the
    prologue, so a returned view of it is rebuilt at eager's geometry by one plan (jit fuzz 10022
    #33 got a static plan per size); a call with another layout fails the guard and gets its own."""
    def f(c):
        return c.unbind(1)[0], c.t(), c * 2

    j = satfuse_jit(f)
    calls = [torch.arange(n + 3.0).as_strided((n, 4), (1, 1)) for n in (5, 6, 7)]
    calls += [torch.arange(28.0).reshape(7, 4), torch.arange(12.0).as_strided((7, 4), (1, 1), 2)]
    for c in calls:
        got, want = j(c), f(c)
        for g, w in zip(got[:2], want[:2]):
            assert g.data_ptr() == w.data_ptr() and g.stride() == w.stride() and torch.equal(g, w)
        assert torch.equal(got[2], want[2])
    assert j.stats()["compiles"] == 3


def test_outputs_viewing_one_intermediate_share_it():
    """Outputs eager returns as views of one intermediate share one buffer at eager's geometry;
    with symbolic sizes the plan computes the buffer's span from the call's sizes (one plan: it
    once got static plans, one per size; jit fuzz 10018 #50, #59)."""
    j = satfuse_jit(views_of_one)
    for n in (3, 4, 5):
        x = torch.randn(n, n)
        assert_views_of_one(j(x), views_of_one(x))
    assert j.stats()["compiles"] == 1

    def f(x):
        t = x * 2
        return t, t.view(-1), t.diagonal(), t[1:, ::2]

    j = satfuse_jit(f)
    for n in (3, 4, 6):
        x = torch.randn(n, n + 1)
        got, want = j(x), f(x)
        base = got[0].untyped_storage().data_ptr()
        for g, w in zip(got, want):
            assert g.untyped_storage().data_ptr() == base and (g.stride(), g.storage_offset()) == (
                w.stride(), w.storage_offset()) and torch.equal(g, w)
    assert j.stats()["compiles"] == 1


def test_expanded_or_overlapping_views_of_one_intermediate_get_static_plans():
    """A member that holds an element twice (``expand``, an overlapping ``unfold``) cannot be
    written into one buffer with ``copy_``: such groups keep a static plan per size."""
    def f(x):
        t = x * 2
        return t, t.unfold(1, 2, 1), t[:, :1].expand(-1, 3)

    j = satfuse_jit(f)
    for n in (3, 4):
        x = torch.randn(n, n + 2)
        got, want = j(x), f(x)
        for g, w in zip(got, want):
            assert (g.stride(), g.storage_offset()) == (w.stride(), w.storage_offset()) and torch.equal(g, w)
        assert got[1].untyped_storage().data_ptr() == got[0].untyped_storage().data_ptr()


def test_out_resizing_an_input_runs_eagerly():
    """``out=`` into an input that eager resizes: no plan serves the call (its own prologue would
    reject it), so it runs eagerly instead of failing with a RecompileError."""

    def f(a, b, c):
        t0 = torch.remainder(a, c)
        torch.le(a, t0, out=b)
        return t0

    check_jit(f, (torch.ones(0), torch.ones(0, dtype=torch.int64), torch.ones(0, 0, dtype=torch.int64)))


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
def test_out_resizing_an_input_of_symbolic_shape_runs_eagerly():
    """``out=`` into an input whose symbolic shape is not the result's: eager resizes it;
    functionalization resizes the input's value but not its wrapper, whose metadata capture read,
    so the plan broadcast the (1, 1) result into the caller's (3, 3) tensor (found by
    bench/fuzz.py, jit seed 9902 #8527). Capture refuses as listed; jit runs such calls eagerly."""

    def f(a, b):
        torch.log2(a, out=b)
        return a

    def g(x, b):
        torch.add(x, 1, out=b)
        return b * 2

    check_jit(f, (torch.ones(1, 1, dtype=torch.bool), torch.zeros(3, 3, dtype=torch.float64)),
              (torch.zeros(1, 1, dtype=torch.bool), torch.zeros(4, 5, dtype=torch.float64)))
    check_jit(g, (torch.randn(2, 3), torch.zeros(4, 5)), (torch.randn(3, 2), torch.zeros(2, 7)),
              (torch.randn(3, 2), torch.zeros(3, 2)))


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
def test_out_sized_as_the_result_gets_one_symbolic_plan(caplog):
    """An ``out=`` tensor the caller sized as the result: a symbolic capture gives it symbols of
    its own, functionalization hands it the result's, and capture took that for a resize, so
    every size got a static plan of its own. The sizes' equality is now a guard of one symbolic
    plan; a call whose ``out=`` eager does resize fails it and runs as eager does."""
    def f(a, b, c):
        return torch.add(a, b, out=c)

    def g(x, c):
        torch.sin(x, out=c)
        return c * 2

    with caplog.at_level(logging.WARNING, logger="satfuse.capture"):
        jf = check_jit(f, *[(torch.randn(n, 4), torch.randn(n, 4), torch.empty(n, 4)) for n in (3, 5, 7)])
        jg = check_jit(g, *[(torch.randn(n, n + 1), torch.empty(n, n + 1)) for n in (2, 3, 6)])
    assert not [r.getMessage() for r in caplog.records if r.name == "satfuse.capture"]
    for fn in (jf, jg):
        assert fn.stats()["compiles"] == 1 and fn.stats()["eager_calls"] == 0
    check_jit(f, (torch.randn(3, 4), torch.randn(3, 4), torch.empty(3, 4)),
              (torch.randn(5, 4), torch.randn(5, 4), torch.empty(2, 4)),
              (torch.randn(5, 4), torch.randn(5, 4), torch.empty(0)))


def test_a_strided_input_read_by_an_eager_kernel_gets_one_symbolic_plan(caplog):
    """An op that runs as eager's kernel records the layout it read each operand in; a strided
    input's own strides are symbols no input binds, so every such program got static plans
    (jit fuzz 10016 #22). The plan passes the caller's tensor as it is: nothing to record."""
    def f(a, b):
        return torch.maximum(a, b), torch.nn.functional.gelu(a)

    with caplog.at_level(logging.WARNING, logger="satfuse.capture"):
        j = check_jit(f, *[(torch.randn(2 * n)[::2], torch.tensor(0.5)) for n in (2, 5, 3)],
                      (torch.tensor([float("inf"), 1.0, -float("inf"), 2.0, 0.0, 3.0])[::3], torch.tensor(0.5)))
    assert not [r.getMessage() for r in caplog.records if r.name == "satfuse.capture"]
    assert j.stats()["compiles"] == 1 and j.stats()["eager_calls"] == 0


def test_an_extent_a_layout_guard_pins_is_guarded():
    """``a.unfold(0, 2, 2)`` of a symbolic ``a``: the meta kernel's contiguity check guards
    ``s0 // 2 == 1`` (a layout guard, which plans otherwise drop), and capture spelled the window
    count as 1 on the strength of it; the plan served a.size(0) == 4 with one window (jit fuzz 9993
    #3402). An equality capture relies on is a guard of the plan."""
    f = lambda a: a.unfold(0, 2, 2)  # noqa: E731
    j = satfuse_jit(f)
    for n in (2, 4, 2, 6, 5, 3):
        got, want = j(torch.arange(n)), f(torch.arange(n))
        assert got.shape == want.shape and torch.equal(got, want)


def test_a_stride_guard_that_later_decides_a_shape_is_kept():
    """jit fuzz 9995 #298: the ShapeEnv made ``Ne(s2 - 2, 1)`` for a contiguity check (a layout-only
    guard, dropped), then answered ``squeeze_()``'s size-1 question from it without a record of its
    own: the plan for D0 = 4 squeezed nothing at D0 = 3, where eager squeezes the last dim."""
    import satfuse

    def f(a):
        t = torch.cat([F.pad(a, (-1, -1), mode="reflect")] * 2, -3)
        t.squeeze_()
        return t[-3]

    plan = satfuse.jit(f, dynamic=True)
    for d in (4, 3, 5, 3):
        a = torch.randn(d, d, d)
        got, want = plan(a.clone()), f(a.clone())
        assert got.shape == want.shape and torch.equal(got, want)


def test_layout_guard_answers_are_matched_by_the_question_they_ask():
    """A shape decision may ask the guard's question spelled otherwise (``Eq(s2, 3)`` where the
    contiguity check made ``Ne(s2 - 2, 1)``): the record is matched by ``lhs - rhs``, both ways."""
    import sympy
    from satfuse.engine.capture.symbols import _question

    s2 = sympy.Symbol("s2", integer=True)
    assert _question(sympy.Eq(s2, 3)) == _question(sympy.Ne(s2 - 2, 1)) == _question(sympy.Eq(3, s2))
    assert _question(sympy.Ge(s2, 3)) == _question(sympy.Lt(s2, 3)) == _question(sympy.Le(3, s2))
    assert _question(sympy.Eq(s2, 3)) != _question(sympy.Ge(s2, 3))


def test_a_squeeze_of_a_symbolic_extent_is_guarded():
    """``x[:, 2:-1].squeeze(1)`` traced at ``x: [3, 8]`` keeps the dim of extent ``s1 - 3``, which
    holds only while it is not 1: the ShapeEnv's guard for it was made by the slice's contiguity
    check (a stride test, dropped) and squeeze's question answered from the ShapeEnv's cache, so
    the plan kept the dim at ``[3, 4]`` where eager squeezes it. The squeeze states its guard
    itself. (The write through a view makes capture trace it functionalized: the recorder asks in
    another order and kept the ShapeEnv's guard.)"""
    import satfuse

    def f(x, y):
        y[0].add_(1)
        return x[:, 2:-1].squeeze(1) * 2

    plan = satfuse.jit(f, dynamic=True)
    plan(torch.randn(3, 8), torch.randn(2, 2))
    assert "x.shape[1] - 3 != 1" in str(plan.last_plan)
    for n in (4, 9):
        x, y = torch.randn(3, n), torch.randn(2, 2)
        got, want = plan(x, y.clone()), f(x, y.clone())
        assert got.shape == want.shape and torch.equal(got, want)
    with pytest.raises(satfuse.GuardError, match=r"x.shape\[1\] - 3 != 1"):
        satfuse.optimize(f, torch.randn(3, 8), torch.randn(2, 2), options={"dynamic": True})(
            torch.randn(3, 4), torch.randn(2, 2))
