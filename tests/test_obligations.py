"""Rule obligations as data (rules/lang.egg): a plan that relies on an index being in range
checks it before any write and raises what eager raises, in every entry point."""

import pytest
import torch
import torch.nn.functional as F

import satfuse

X = torch.randn(4, 5)
GOOD = torch.tensor([0, 1, 2, 3])
BAD = [[0, 5, 2, 1], [0, -1, 2, 1], [0, 10**6, 2, 1]]


def ce(x, y):
    return F.cross_entropy(x, y)


def ce_ignore3(x, y):
    return F.cross_entropy(x, y, ignore_index=3)


def seed002(x, y):  # the hand-written form of seed 002
    return torch.gather(torch.log_softmax(x, 1), 1, y.unsqueeze(1)).squeeze(1).neg().mean()


def _entry(kind, fn):
    if kind == "optimize":
        return satfuse.optimize(fn, X, GOOD)
    if kind == "jit":
        return satfuse.jit(fn)
    torch._dynamo.reset()
    return torch.compile(fn, backend="satfuse")


def _eager_error(fn, *args):
    with pytest.raises(Exception) as ei:
        fn(*args)
    return ei.type


@pytest.mark.parametrize("kind", ["optimize", "jit", "compile"])
def test_ce_bad_targets_raise_like_eager(kind):
    cases = [(ce, y) for y in BAD] + [(ce_ignore3, [0, -100, 2, 1]), (seed002, [0, 5, 2, 1])]
    plans = {fn: _entry(kind, fn) for fn in (ce, ce_ignore3, seed002)}
    for fn, y in cases:
        x, y = X.clone(), torch.tensor(y)
        err = _eager_error(fn, x, y)
        with pytest.raises(err) as ei:
            plans[fn](x, y)
        # eager's type and words; a plan that relied on a rule also names it (a gather fallback is eager's own)
        assert ei.type is err and "out of bounds" in str(ei.value)
        assert fn is seed002 or "satfuse: obligation 'index-in-range' of rule gather/" in str(ei.value)
        assert torch.equal(x, X) and torch.equal(y, torch.tensor(y.tolist()))
    for fn, y in [(ce, [4, 0, 1, 2]), (ce_ignore3, [0, 3, 3, 1]), (seed002, [4, 4, 0, 1])]:  # valid: unchanged
        y = torch.tensor(y)
        torch.testing.assert_close(plans[fn](X, y), fn(X, y))


@pytest.mark.parametrize("kind", ["optimize", "jit", "compile"])
def test_ce_int32_targets_rejected_like_eager(kind):
    y = GOOD.int()
    err = _eager_error(ce, X, y)
    with pytest.raises(err, match="expected target dtype to be Long or Byte, but got Int"):
        if kind == "optimize":
            satfuse.optimize(ce, X, y)
        else:
            _entry(kind, ce)(X, y)


def test_ce_backward_bad_target_raises_like_eager():
    """The gradient's one-hot scatter carries the obligation too (no silent zero row)."""
    def grad(x, y):
        x = x.detach().requires_grad_()
        return torch.autograd.grad(F.cross_entropy(x, y), x)[0]

    plan = satfuse.optimize(grad, X, GOOD)
    assert any("gather/scatter-" in r for ob in plan.trace.obligations for r in ob.rules)
    torch.testing.assert_close(plan(X, GOOD), grad(X, GOOD))
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        plan(X, torch.tensor([0, 5, 2, 1]))

    torch._dynamo.reset()
    f = torch.compile(ce, backend="satfuse")
    x = X.clone().requires_grad_()
    f(x, GOOD).backward()
    torch.testing.assert_close(x.grad, grad(X, GOOD))
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        f(x, torch.tensor([0, 5, 2, 1])).backward()


def test_valid_ce_keeps_the_one_hot_plan_and_its_bytes():
    from satfuse.engine.costs import minimum_traffic, plan_traffic

    plan = satfuse.optimize(ce, X, GOOD)
    obs = plan.trace.obligations
    assert [ob.kind for ob in obs] == ["index-in-range"] and obs[0].eager_op == "aten.nll_loss_forward"
    # the lookup stays fused (one-hot or take_along_axis, by cost at this size): no gather fallback
    assert "fd.ops.iota" in str(plan) or "fd.ops.take_along_axis" in str(plan)
    assert "eager.gather(" not in str(plan)
    tr = plan_traffic(plan.lowered.steps, plan.trace)
    least = minimum_traffic(plan.trace).total
    assert tr.total <= least + 4 * 8  # the checked index, 4 x i64, is the only extra traffic


@pytest.mark.parametrize("rule, name", [
    ('(rewrite (Exp x) (Sum x (ICons 0 (INil)) 0) :ruleset bad :name "bad/exp-to-sum")', "bad/exp-to-sum"),
    ('(rewrite (Exp x) (Cast (Exp x) "f64") :ruleset bad :name "bad/exp-to-f64")', "bad/exp-to-f64"),
])
def test_user_rule_changing_shape_or_dtype_is_a_rule_error(tmp_path, rule, name):
    """lang.egg's analyses are total over the constructors a rewrite may introduce, so equating
    values of different shapes or dtypes is always a conflict, reported with the rule's file:line."""
    from satfuse.engine.session import RuleError

    pack = tmp_path / "bad.egg"
    pack.write_text(f"(ruleset bad)\n\n; deliberately wrong\n{rule}\n")
    with pytest.raises(RuleError, match=rf"^{pack}:4: rule '{name}': equates values of different shapes or dtypes"):
        satfuse.optimize(lambda a: torch.exp(a) * 2, X, options={"rules": [pack]})
