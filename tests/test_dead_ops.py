"""Ops whose result nothing uses still run as in eager when they can raise or draw random
numbers (``engine/fallible.py``, ``Trace.effects``): the e-graph and lowering would otherwise
drop them and the plan would return where eager raises. Reference: eager's exception type and
every input untouched; for random ops, the same numbers as eager after the same seed."""

import pytest
import torch
import torch.nn.functional as F
from satfuse.engine import capture
from satfuse.engine.fallible import effects
from satfuse.engine.printer import parse_trace

import satfuse


def dead_index(b, idx, c):
    b[idx]  # noqa: B018 - unused, but eager raises for an index out of range
    return c * 2


def dead_gather_then_write(x, idx, y):
    torch.gather(x, 0, idx)  # unused
    y.add_(1)
    return y * 3


def dead_int_fmod(b, c):
    torch.fmod(b, b)  # unused: an integer fmod by zero raises
    return c * 2


def dead_int_floor_divide(b, c):
    b // b  # noqa: B018
    return c + 1


def _modes():
    return [("optimize", lambda f, a: satfuse.optimize(f, *a)),
            ("jit", lambda f, a: satfuse.jit(f, dynamic=True))]


CASES = [
    (dead_index, (torch.randn(3, 2), torch.tensor([0, 2]), torch.ones(2)),
     (torch.randn(3, 2), torch.tensor([0, 3]), torch.ones(2)), IndexError),
    (dead_gather_then_write, (torch.randn(3, 2), torch.tensor([[0, 2]]), torch.zeros(2)),
     (torch.randn(3, 2), torch.tensor([[0, 5]]), torch.zeros(2)), RuntimeError),
    (dead_int_fmod, (torch.tensor([1, 2]), torch.ones(2)), (torch.tensor([0, 1]), torch.ones(2)), RuntimeError),
    (dead_int_floor_divide, (torch.tensor([1, 2]), torch.ones(2)), (torch.tensor([3, 0]), torch.ones(2)),
     RuntimeError),
]


@pytest.mark.parametrize("mode,make", _modes(), ids=[m for m, _ in _modes()])
@pytest.mark.parametrize("fn,good,bad,error", CASES, ids=[c[0].__name__ for c in CASES])
def test_dead_fallible_op_raises_like_eager(mode, make, fn, good, bad, error):
    plan = make(fn, [a.clone() for a in good])
    got_in = [a.clone() for a in good]
    want_in = [a.clone() for a in good]
    torch.testing.assert_close(plan(*got_in), fn(*want_in))
    for g, w in zip(got_in, want_in):
        assert torch.equal(g, w)
    with pytest.raises(error):
        fn(*[a.clone() for a in bad])
    got_in = [a.clone() for a in bad]
    with pytest.raises(error):
        plan(*got_in)
    for g, w in zip(got_in, bad):
        assert torch.equal(g, w), "an input was written before the plan raised"


def test_dead_random_op_draws_as_eager():
    def f(x):
        torch.rand(3)  # unused, but it advances the generator
        return x + torch.rand(3)

    plan = satfuse.optimize(f, torch.zeros(3))
    torch.manual_seed(0)
    want = f(torch.zeros(3))
    torch.manual_seed(0)
    torch.testing.assert_close(plan(torch.zeros(3)), want)


def test_effects_are_named_once_and_print():
    tr = capture(dead_gather_then_write, torch.randn(3, 2), torch.tensor([[0, 2]]), torch.zeros(2)).trace
    eff = effects(tr)
    assert [n.op for n in tr.nodes if any(o is eff[0] for o in n.outs)] == ["gather"]
    tr.effects = eff
    text = str(tr)
    assert "effect(" in text
    assert len(parse_trace(text).effects) == 1


def test_no_effects_without_dead_fallible_ops():
    def f(x, idx):
        x * 2  # noqa: B018 - unused and cannot raise: dropped as before
        return x[idx]

    tr = capture(f, torch.randn(3), torch.tensor([0, 2])).trace
    assert effects(tr) == []


def test_plan_explains_the_kept_op():
    plan = satfuse.optimize(dead_index, torch.randn(3, 2), torch.tensor([0, 2]), torch.ones(2))
    assert "effect(" in str(plan.trace)  # the chosen program says why the unused index op is there


def test_negative_pad_of_an_empty_dim_raises_like_eager():
    def f(x):
        F.pad(x, (1, -1))  # unused; eager's narrow refuses a negative length
        return x * 2

    x = torch.randn(3, 0)
    with pytest.raises(RuntimeError):
        f(x)
    with pytest.raises(RuntimeError):
        satfuse.optimize(f, x)(x)
