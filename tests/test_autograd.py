"""Autograd through plans, and jit of modules: parameters are inputs read on every call; calls that
need gradients go through forward and backward plans (satfuse's AOTAutograd backend)."""

import copy

import torch
import torch.nn.functional as F

import satfuse


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(16, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.l2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.l2(F.gelu(self.norm(self.l1(x))))


def _train(model, step_fn, steps=3):
    torch.manual_seed(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
        loss = step_fn(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, [p.detach().clone() for p in model.parameters()]


def test_jit_of_a_module_trains_like_eager():
    torch.manual_seed(0)
    eager_model = MLP()
    model = copy.deepcopy(eager_model)
    want = _train(eager_model, lambda x, y: F.cross_entropy(eager_model(x), y))
    fm = satfuse.jit(model)
    got = _train(model, lambda x, y: F.cross_entropy(fm(x), y))
    for a, b in zip(want[0] + want[1], got[0] + got[1]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert fm.stats()["grad_calls"] == 3
    with torch.no_grad():  # inference: a cached plan with the parameters as inputs, read every call
        x = torch.randn(8, 16)
        torch.testing.assert_close(fm(x), model(x))
        model.l2.weight.add_(1.0)
        torch.testing.assert_close(fm(x), model(x))
    assert fm.cache.compiles == 1


def test_jit_of_a_closure_over_a_module():
    torch.manual_seed(0)
    model = MLP()
    loss = satfuse.jit(lambda x, y: F.cross_entropy(model(x), y))
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    with torch.no_grad():
        torch.testing.assert_close(loss(x, y), F.cross_entropy(model(x), y))
    out = loss(x, y)
    assert out.requires_grad
    out.backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()
    for a, b in zip(got, [p.grad for p in model.parameters()]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_optimize_keeps_autograd():
    """A plan called where eager would record autograd returns outputs that require grad, with
    eager's gradients (the forward and backward plans of the backend), for a closure over a module."""
    torch.manual_seed(0)
    model = MLP()
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    plan = satfuse.optimize(lambda x, y: F.cross_entropy(model(x), y), x, y)
    out = plan(x, y)
    assert out.requires_grad
    out.backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want = F.cross_entropy(model(x), y)
    want.backward()
    torch.testing.assert_close(out.detach(), want.detach())
    for a, b in zip(got, [p.grad for p in model.parameters()]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert plan.grad_calls == 1
    with torch.no_grad():
        assert not plan(x, y).requires_grad and plan.grad_calls == 1
