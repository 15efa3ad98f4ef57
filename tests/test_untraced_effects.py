"""Torch calls whose traced form loses what eager does (``functional.UntracedEffects``): refused
by capture, run eagerly by ``jit`` and the backend, never planned without the effect."""

from __future__ import annotations

import logging
import warnings

import pytest
import torch
from satfuse.engine.capture.convert import CaptureError
from satfuse.engine.unsupported import refused_as_listed

import satfuse


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        yield
        logging.disable(logging.NOTSET)


def _rank(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    return torch.linalg.matrix_rank(x, hermitian=True, out=out)


def test_an_out_tensor_the_traced_kernel_never_writes_is_refused() -> None:
    """torch 2.13's linalg.matrix_rank(out=) writes nothing under a dispatch mode (eager writes the
    rank; Dynamo's aot_eager returns the tensor untouched, as satfuse's plans did): optimize
    refuses with a listed error, jit and torch.compile run the call eagerly and equal eager."""
    x = torch.randn(5, 5, dtype=torch.float64)
    want = torch.zeros((), dtype=torch.int64)
    _rank(x, want)
    assert int(want) == 5
    with pytest.raises(CaptureError, match="does not write the out= tensor") as e:
        satfuse.optimize(_rank, x, torch.zeros((), dtype=torch.int64))
    assert refused_as_listed(e.value) is not None
    for run in (satfuse.jit(_rank), torch.compile(_rank, backend="satfuse")):
        out = torch.zeros((), dtype=torch.int64)
        assert run(x, out) is out and torch.equal(out, want)


def test_out_tensors_written_by_traced_ops_are_planned() -> None:
    x = torch.randn(4, 3)
    plan = satfuse.optimize(lambda x, o: torch.add(x, 1, out=o), x, torch.empty(4, 3))
    out = torch.empty(4, 3)
    plan(x, out)
    assert torch.equal(out, x + 1)
    v, i = torch.empty(4, 3), torch.empty(4, 3, dtype=torch.int64)
    plan = satfuse.optimize(lambda x, v, i: torch.sort(x, out=(v, i)), x, v.clone(), i.clone())
    plan(x, v, i)
    assert torch.equal(v, x.sort().values) and torch.equal(i, x.sort().indices)


@pytest.mark.parametrize("call", ["function", "method", "nan"])
def test_quantile_of_a_tensor_q_keeps_eagers_range_check(call: str) -> None:
    """quantile's kernel checks that a tensor q lies in [0, 1] on real tensors only: a traced call
    returned a value where eager raises. Refused by capture; jit and the backend (grad or not)
    raise eager's RuntimeError for a q out of range and equal eager otherwise."""
    fn = {"function": lambda x, q: torch.quantile(x, q) * 2, "method": lambda x, q: x.quantile(q) + 1,
          "nan": lambda x, q: torch.nanquantile(x, q, dim=0)}[call]
    x = torch.randn(6, dtype=torch.float64)
    q, bad = torch.tensor([0.2, 0.7], dtype=torch.float64), torch.tensor([0.2, 1.7], dtype=torch.float64)
    with pytest.raises(CaptureError, match="checks on real tensors only") as e:
        satfuse.optimize(fn, x, q)
    assert refused_as_listed(e.value) is not None
    for make in (lambda: satfuse.jit(fn), lambda: torch.compile(fn, backend="satfuse")):
        for grad in (False, True):
            torch._dynamo.reset()
            run, xs = make(), x.clone().requires_grad_(grad)
            torch.testing.assert_close(run(xs, q), fn(xs, q))
            with pytest.raises(RuntimeError, match=r"q values must be in the range \[0, 1\]"):
                run(xs, bad)
    plan = satfuse.optimize(lambda x: torch.quantile(x, 0.3), x)  # a number: checked while tracing, as eager
    torch.testing.assert_close(plan(x), torch.quantile(x, 0.3))


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.float32])
@pytest.mark.parametrize("dynamic", [True, False])
def test_a_tensor_inputs_item_is_never_the_examples(dtype: torch.dtype, dynamic: bool) -> None:
    """``from_tensor`` with a ShapeEnv backs a 0-d CPU int64/float64 tensor's ``.item()`` by a
    symbol of its value (Dynamo's unspecialized numbers): ``satfuse.jit(lambda x: x.item())``
    returned the first call's value on every later call. The value is data: jit runs such calls
    eagerly, as it does ``(x + 1).item()``."""
    j = satfuse.jit(lambda x: (x.item(), x * 2), dynamic=dynamic)
    for v in (3, -5, 7):
        x = torch.tensor(v, dtype=dtype)
        got = j(x)
        assert got[0] == x.item() and torch.equal(got[1], x * 2)
