"""Python float arguments under ``satfuse.jit(dynamic=True)`` are plan inputs (issue 20), as
Dynamo's unspecialized floats: one plan serves every value; a float the program branches on is
a guarded constant; the guard keeps the argument's type."""

from __future__ import annotations

import math

import torch

import satfuse


def test_one_plan_serves_twenty_temperatures():
    f = satfuse.jit(lambda x, t: torch.softmax(x / t, -1))
    x = torch.randn(4, 8)
    for i in range(20):
        t = 0.05 + 0.37 * i
        torch.testing.assert_close(f(x, t), torch.softmax(x / t, -1))
    assert f.cache.compiles == 1 and f.cache.eager_calls == 0
    assert "t: f64[]" in str(f.last_plan)  # a 0-d float64 input, no value guard
    torch.testing.assert_close(f.last_plan(x, 0.3), torch.softmax(x / 0.3, -1))  # the plan called directly


def test_int_and_float_math_on_a_scalar_argument():
    g = satfuse.jit(lambda x, k: x * (k / 3))
    x = torch.randn(5, 3)
    for k in (1, 2, 5, -4, 0, 7):
        assert torch.equal(g(x, k), x * (k / 3)), k
    assert g.cache.compiles == 1  # int / int as float64 tensor math on the int's symbol
    for k in (1.5, -0.0, 1e300, 2.0):
        assert torch.equal(g(x, k), x * (k / 3)), k
    assert g.cache.compiles == 2  # a float is another type of argument: its own plan, then shared
    big = 2**30  # the int converts exactly only up to 2**24 (a guard): another plan, still eager's value
    assert torch.equal(g(x, big), x * (big / 3))
    assert g.cache.compiles == 3


def test_the_guard_keeps_the_argument_type():
    f = satfuse.jit(lambda xi, t: xi * t)
    xi = torch.arange(6)
    for t in (2.0, 2, 2.5, True):
        out, ref = f(xi, t), xi * t
        assert out.dtype == ref.dtype and torch.equal(out, ref), t


def test_a_float_the_program_branches_on_is_a_guarded_constant():
    f = satfuse.jit(lambda x, t: x * t if t > 0 else x - t)
    x = torch.randn(4)
    for t in (0.5, -1.5, 2.0, -0.0, float("nan"), math.inf):
        torch.testing.assert_close(f(x, t), x * t if t > 0 else x - t, equal_nan=True, rtol=0, atol=0)
    assert f.cache.compiles == 6 and not any("t: f64[]" in str(p) for p in f.plans)


def test_nan_and_inf_at_capture_are_constants_the_symbolic_plan_takes_any_value():
    f = satfuse.jit(lambda x, t: x + t)
    x = torch.randn(4)
    for t in (float("nan"), math.inf, 1.0, 3.0, -math.inf, -0.0):
        torch.testing.assert_close(f(x, t), x + t, equal_nan=True, rtol=0, atol=0)
    # nan and inf as the first values: guarded constants; the plan built for 1.0 carries the float
    # as data, so -inf and -0.0 mean the same there: no guard on the value
    assert f.cache.compiles == 3


def test_floats_in_keywords_and_containers_and_a_float_made_an_int():
    f = satfuse.jit(lambda x, t=1.0, d=None: x / t * d["s"])
    x = torch.randn(6)
    for t in (0.5, 0.25, 3.0):
        assert torch.equal(f(x, t=t, d={"s": 1.5 * t}), x / t * (1.5 * t))
    assert f.cache.compiles == 1
    h = satfuse.jit(lambda x, t: x[: int(t)] * t)  # int(t) guards the float: one plan per value
    for t in (2.5, 3.5, 2.7):
        assert torch.equal(h(x, t), x[: int(t)] * t), t
    assert h.cache.compiles == 3
