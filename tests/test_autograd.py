"""Autograd through plans, and jit of modules: parameters are inputs read on every call; calls that
need gradients go through forward and backward plans (satfuse's AOTAutograd backend)."""

import copy

import pytest
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


def _saved_by_forward(monkeypatch, fn, *args):
    """The values each forward graph saves for its backward under the satfuse backend."""
    import satfuse.backend as backend

    saved, partition = [], backend.partition_joint

    def recording(joint, joint_inputs, **kwargs):
        fw, bw = partition(joint, joint_inputs, **kwargs)
        out = next(n for n in fw.graph.nodes if n.op == "output").args[0]
        saved.append([str(v.target) if v.op == "call_function" else v.op for v in out[kwargs["num_fwd_outputs"]:]])
        return fw, bw

    monkeypatch.setattr(backend, "partition_joint", recording)
    torch._dynamo.reset()
    return torch.compile(fn, backend="satfuse")(*args), saved


def test_the_forward_saves_an_input_where_the_backward_can_recompute_a_cheap_value_from_it(monkeypatch):
    # the default partition saves sin(x) for cos's backward beside x for sin's; the min-cut one saves
    # x alone and the backward recomputes sin(x) in its own segment
    x = torch.randn(64, 32, requires_grad=True)
    loss, saved = _saved_by_forward(monkeypatch, lambda x: x.sin().cos().sum(), x)
    assert saved == [["placeholder"]]
    (g,) = torch.autograd.grad(loss, x)
    torch.testing.assert_close(g, -x.sin().sin().detach() * x.cos().detach(), rtol=0, atol=0)


def test_a_dropout_mask_is_saved_never_drawn_again_in_the_backward(monkeypatch):
    x = torch.randn(256, 64, requires_grad=True)

    def f(x):
        y = F.dropout(torch.tanh(x) * 3, 0.5, training=True)
        return y, (y * y).sum()

    (y, loss), _ = _saved_by_forward(monkeypatch, f, x)
    (g,) = torch.autograd.grad(loss, x)
    assert 0.3 < (y == 0).float().mean().item() < 0.7
    torch.testing.assert_close(g, (4 * y * 3 * (1 - torch.tanh(x) ** 2)).detach())


def test_a_saved_input_is_the_input_itself_not_a_copy_made_on_every_call():
    x = torch.randn(64, 32, requires_grad=True)
    saved = []

    def pack(t):
        saved.append(t)
        return t

    f = torch.compile(lambda x: (x.sin() * x).sum(), backend="satfuse")
    f(x)  # compiled
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = f(x)
    assert saved and all(t is x for t in saved)
    (g,) = torch.autograd.grad(loss, x)
    torch.testing.assert_close(g, (x.cos() * x + x.sin()).detach())


@pytest.mark.parametrize("route", ["compile", "jit", "optimize"])
def test_a_gradient_penalty_through_a_plan_is_refused_never_silently_first_order(route):
    # the forward saves exp(x) alone: AOTAutograd's double-backward check, connected only to saved
    # tensors that require grad, is never reached, and aot_eager drops the penalty's second-order
    # term without an error; satfuse refuses the backward that would build the graph for it
    def f(x):
        return (x * 3).sum() + (x.exp() * 2).sum()

    x = torch.randn(8, requires_grad=True)
    torch._dynamo.reset()
    fc = {"compile": lambda: torch.compile(f, backend="satfuse"), "jit": lambda: satfuse.jit(f),
          "optimize": lambda: satfuse.optimize(f, x)}[route]()
    (g,) = torch.autograd.grad(fc(x), x)  # first-order gradients are the plan's, as before
    torch.testing.assert_close(g, (3 + 2 * x.exp()).detach())
    with pytest.raises(RuntimeError, match="create_graph=True"):
        (g,) = torch.autograd.grad(fc(x), x, create_graph=True)
        torch.autograd.grad(fc(x) + g.pow(2).sum(), x)
