"""Scale: nothing recurses per program depth; budgets grow with the program and say what they cut."""

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
    """The reference executor drops each intermediate after its last read inside a segment: a
    10-op elementwise chain holds a couple of buffers at a time, not all ten."""
    from satfuse.lowering import frontend_ref

    fd = frontend_ref.FusionDefinition()
    with fd:
        x = fd.define_tensor([64], contiguity=[True], dtype=frontend_ref.DataType.Float)
        v = x
        for _ in range(10):
            v = fd.ops.exp(fd.ops.neg(v))
        fd.add_output(v)
    frees = fd._last_uses()
    assert sum(len(f) for f in frees) == 20  # the input and 19 intermediates, each after its one reader
    assert all(len(f) <= 1 for f in frees)
    t = torch.randn(64)
    want = t
    for _ in range(10):
        want = torch.exp(-want)
    torch.testing.assert_close(fd.execute([t])[0], want)


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
