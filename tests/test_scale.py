"""Scale: nothing recurses per program depth; budgets grow with the program and say what they cut."""

import warnings

import torch
from satfuse.engine.session import Budget

import satfuse


def test_deep_dependency_chain():
    """A chain deeper than Python's recursion limit (1,200 ops) optimizes and runs."""

    def f(x):
        for _ in range(600):
            x = torch.tanh(x) * 1.01
        return x

    x = torch.randn(4, 8)
    plan = satfuse.optimize(f, x)
    torch.testing.assert_close(plan(x), f(x))


def test_node_budget_scales_with_the_program():
    b = Budget(nodes=1_000, growth=4.0)
    assert b.node_limit(100) == 1_000
    assert b.node_limit(10_000) == 40_000


def test_budget_stop_reports_the_phases_it_skipped():
    """A node budget smaller than the program stops before the phases; each skipped phase is
    reported (never silently dropped) and the plan is still the program, right."""

    def ce(x, y):
        return torch.nn.functional.cross_entropy(x, y)

    x, y = torch.randn(8, 16), torch.randint(0, 16, (8,))
    plan = satfuse.optimize(ce, x, y, options={"budget": Budget(nodes=10, growth=0.0)})
    sat = plan.engine.saturation
    skipped = [p.phase for p in sat.phases if p.stop.kind == "skipped"]
    assert "gather" in skipped and "algebra" in skipped, sat.table()
    assert any("skipped" in h for h in sat.hit_limit)
    torch.testing.assert_close(plan(x, y), ce(x, y))


def test_reference_segment_frees_dead_intermediates():
    """The reference executor drops each intermediate after its last read inside a segment, and
    an elementwise op writes its result into an operand read last there: a 20-op chain holds
    one buffer at a time, not all twenty (the input is the caller's: never written)."""
    from satfuse.lowering import frontend_ref

    fd = frontend_ref.FusionDefinition()
    with fd:
        x = fd.define_tensor([64], contiguity=[True], dtype=frontend_ref.DataType.Float)
        v = x
        for _ in range(10):
            v = fd.ops.exp(fd.ops.neg(v))
        fd.add_output(v)
    frees, into = fd._last_uses()
    assert sum(len(f) for f in frees) == 20  # the input and 19 intermediates, each after its one reader
    assert all(len(f) <= 1 for f in frees)
    assert into[0] is None and all(i == f[0] for i, f in zip(into[1:], frees[1:]))
    t = torch.randn(64)
    before = t.clone()
    want = t
    for _ in range(10):
        want = torch.exp(-want)
    torch.testing.assert_close(fd.execute([t])[0], want)
    torch.testing.assert_close(t, before)


def test_reference_ops_that_reuse_a_buffer_equal_eager():
    """Every op that may write into a dying operand does so (torch takes its ``out=``) and gives
    eager's values, as the first and as the second operand, beside a number."""
    from satfuse.lowering import frontend_ref as fr

    x = torch.rand(3, 4) + 0.25
    for name in sorted(fr._SAME_DTYPE):
        for form in ("tt", "tn", "nt") if name in fr.BINARY or name == "truediv" else ("t",):
            fd = fr.FusionDefinition()
            with fd:
                a = fd.define_tensor([3, 4], contiguity=[True, True], dtype=fr.DataType.Float)
                e = fd.ops.exp(a)
                args = {"t": [e], "tt": [e, e], "tn": [e, 1.5], "nt": [1.5, e]}[form]
                fd.add_output(getattr(fd.ops, name)(*args))
            assert fd._last_uses()[1][1] == e.idx
            fn = fr.UNARY.get(name) or fr.BINARY.get(name) or torch.true_divide
            ref = {"t": [x.exp()], "tt": [x.exp(), x.exp()], "tn": [x.exp(), 1.5], "nt": [1.5, x.exp()]}[form]
            if name in ("maximum", "minimum", "atan2"):
                ref = [r if isinstance(r, torch.Tensor) else torch.tensor(r) for r in ref]
            try:
                want = fn(*ref)
            except TypeError:  # torch has no number-first form of this op (nor has the emitter)
                continue
            torch.testing.assert_close(fd.execute([x])[0], want, equal_nan=True, msg=f"{name} {form}")


def test_reference_reuses_only_unshared_buffers_of_its_result():
    """An operand's buffer takes an op's result only when nothing else can see it and it fits:
    not an operand a live view reads (reshape), not across a dtype change (comparison, int,
    half computed in float), not one the result broadcasts beyond. Values equal eager's."""
    from satfuse.lowering.frontend_ref import DataType, FusionDefinition

    fd = FusionDefinition()
    with fd:
        a = fd.define_tensor([4, 1], contiguity=[True, None], dtype=DataType.Float)
        b = fd.define_tensor([4, 8], contiguity=[True, True], dtype=DataType.Float)
        h = fd.define_tensor([4, 8], contiguity=[True, True], dtype=DataType.Half)
        i = fd.define_tensor([4, 8], contiguity=[True, True], dtype=DataType.Int)
        small = fd.ops.exp(a)  # [4, 1]: the [4, 8] sum below cannot go into it
        wide = fd.ops.add(small, b)
        viewed = fd.ops.sin(wide)
        flat = fd.ops.reshape(viewed, new_shape=[32])  # a view of `viewed`, live after the mul
        twice = fd.ops.mul(viewed, fd.define_scalar(2.0, dtype=DataType.Float))
        cmp = fd.ops.gt(fd.ops.neg(twice), fd.define_scalar(0.0, dtype=DataType.Float))
        hs = fd.ops.mul(fd.ops.abs(h), fd.define_scalar(0.5, dtype=DataType.Float))
        ints = fd.ops.add(fd.ops.abs(i), fd.define_scalar(1, dtype=DataType.Int))
        fd.add_output(flat)
        fd.add_output(cmp)
        fd.add_output(hs)
        fd.add_output(ints)
    xs = [torch.randn(4, 1), torch.randn(4, 8), torch.randn(4, 8).half(), torch.randint(-5, 5, (4, 8))]
    want_wide = xs[0].exp() + xs[1]
    want = [want_wide.sin().reshape(32), (-(want_wide.sin() * 2)) > 0, xs[2].abs().float() * 0.5, xs[3].abs() + 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an out= that had to resize its buffer warns
        got = fd.execute(xs)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    _, into = fd._last_uses()
    candidates = {fd._prog[k][3] for k, i in enumerate(into) if i is not None}
    assert twice.idx not in candidates  # `viewed` is seen through `flat`
    assert cmp.idx not in candidates and wide.idx in candidates  # a comparison's dtype differs; add's is checked


def test_negative_zero_constant_is_kept():
    """egglog's f64 equality merges -0.0 with 0.0: a program with a -0.0 constant is not put in
    the e-graph (the captured program is the plan, and the report says why)."""

    def f(x, s):
        return x / s

    x = torch.ones(2)
    plan = satfuse.optimize(f, x, -0.0)
    torch.testing.assert_close(plan(x, -0.0), f(x, -0.0))
    assert torch.isneginf(plan(x, -0.0)).all()
    assert all(p.stop.kind == "skipped" for p in plan.engine.saturation.phases)
    plus = satfuse.optimize(f, x, 0.0)
    assert torch.isposinf(plus(x, 0.0)).all()
