"""Capture traces eager's kernels: torch's Python substitutes registered at the Autograd key for
ops with kernels of their own are out of the dispatcher while any capture runs
(``engine/capture/eager_kernels.py``)."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from satfuse.engine.capture.eager_kernels import substitutes
from satfuse.engine.capture.functional import TRACING

import satfuse


def _margin(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return F.multilabel_margin_loss(x, t)


def _targets() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(3, 4), torch.tensor([[0, 2, -1, 0], [3, -1, 1, 2], [1, 0, 2, 3]])


def test_multilabel_margin_loss_of_a_row_that_ends_early_is_eagers() -> None:
    """torch 2.13's Python decomposition of multilabel_margin_loss_forward, which the python
    dispatcher ran in place of eager's kernel, also counts the labels after a row's -1 (2.63 where
    eager gives 1.49 on the first row's target): every route returned it. Each route now equals
    eager, values and gradient."""
    x, t = _targets()
    want = _margin(x, t)
    assert not torch.allclose(torch._decomp.decomposition_table[torch.ops.aten.multilabel_margin_loss_forward.default](
        x, t, 1)[0], want)  # the decomposition this is about
    j = satfuse.jit(_margin)
    routes = {"optimize": satfuse.optimize(_margin, x, t), "jit": j, "jit again": j,
              "jit static": satfuse.jit(_margin, dynamic=False),
              "torch.compile": torch.compile(_margin, backend="satfuse")}
    for name, run in routes.items():
        torch.testing.assert_close(run(x, t), want, msg=name)
    xg = x.clone().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = satfuse.jit(_margin)(xg, t)
    got.backward()
    xe = x.clone().requires_grad_()
    _margin(xe, t).backward()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(xg.grad, xe.grad)


def _r(*s: int) -> torch.Tensor:
    return torch.randn(*s)


#: a program per kind of substituted op; the op is traced as itself and runs as eager's kernel
PROGRAMS = {
    "softshrink": (lambda x: F.softshrink(x, 0.3) * 2, (_r(4, 5),), "aten.softshrink.default"),
    "hardshrink": (lambda x: F.hardshrink(x, 0.3) + 1, (_r(4, 5),), "aten.hardshrink.default"),
    "multi_margin_loss": (lambda x, t: F.multi_margin_loss(x, t, p=2, margin=0.7),
                          (_r(3, 4), torch.tensor([0, 2, 3])), "aten.multi_margin_loss.default"),
    "nearest": (lambda x: F.interpolate(x, size=(5, 7), mode="nearest"), (_r(1, 2, 3, 3),),
                "aten.upsample_nearest2d.default"),
    "nearest-exact 1d": (lambda x: F.interpolate(x, size=7, mode="nearest-exact"), (_r(1, 2, 3),),
                         "aten._upsample_nearest_exact1d.default"),
    "nearest 3d": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), (_r(1, 1, 2, 2, 2),),
                   "aten.upsample_nearest3d.default"),
    "bilinear": (lambda x: F.interpolate(x, size=(5, 4), mode="bilinear"), (_r(1, 2, 3, 3),),
                 "aten.upsample_bilinear2d.default"),
    "bicubic": (lambda x: F.interpolate(x, size=(5, 4), mode="bicubic", align_corners=True), (_r(1, 2, 3, 3),),
                "aten.upsample_bicubic2d.default"),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_substituted_op_is_traced_as_eager_dispatches_it(name: str) -> None:
    fn, args, op = PROGRAMS[name]
    plan = satfuse.optimize(fn, *args)
    assert op in {n.op for n in plan.captured.trace.nodes}, plan.captured.trace
    assert torch.equal(plan(*args), fn(*args))  # eager's own kernel: bit for bit


def test_the_substitutes_are_out_only_while_a_capture_runs() -> None:
    """Every substitute torch registers is out of ``py_kernels`` while TRACING is held (re-entered
    too) and back after, an exception included; batch norm's stays (functionalization needs its
    functional form: the running statistics are a write its schema does not declare)."""
    subs = substitutes()
    assert {str(op) for op, _ in subs} >= {"aten.multilabel_margin_loss_forward.default", "aten.softshrink.default",
                                            "aten.upsample_nearest2d.default"}
    bn = torch.ops.aten.native_batch_norm.default
    assert all(op is not bn for op, _ in subs)

    def present() -> list[bool]:
        return [key in op.py_kernels for op, key in subs]

    assert all(present())
    with pytest.raises(KeyError), TRACING:
        assert not any(present())
        with TRACING:
            pass
        assert not any(present())  # only the outermost exit puts them back
        raise KeyError("inside")
    assert all(present())


def test_batch_norm_keeps_its_running_statistics_in_order() -> None:
    """``native_batch_norm`` writes the running statistics its schema does not name: traced whole
    (as eager dispatches it) a read of ``running_mean`` before it would see the new value in the
    plan. Its Python kernel, the functional form, stays for that reason."""
    def f(x: torch.Tensor, m: torch.Tensor, v: torch.Tensor) -> tuple:
        before = m * 3
        y = F.batch_norm(x, m, v, training=True, momentum=0.5)
        return y + before, m.sum(), v * 1

    torch.manual_seed(0)
    args = [torch.randn(4, 3), torch.randn(3), torch.rand(3) + 0.5]
    eager_args = [a.clone() for a in args]
    want = f(*eager_args)
    plan = satfuse.optimize(f, *[a.clone() for a in args])
    plan_args = [a.clone() for a in args]
    got = plan(*plan_args)
    for w, g in zip([*want, *eager_args], [*got, *plan_args]):
        torch.testing.assert_close(g, w)
