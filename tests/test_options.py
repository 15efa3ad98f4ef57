"""Arguments and options as torch users expect: keywords go to the program, satfuse's knobs go in
``options=`` (the same dict for optimize, jit and torch.compile), every torch.compile mode works."""

import pytest
import torch

import satfuse


def loss(x, target, scale=1.0):
    return ((x - target) ** 2).mean() * scale


def test_keyword_arguments_go_to_the_program():
    x, y = torch.randn(8), torch.randn(8)
    plan = satfuse.optimize(loss, x, target=y, scale=2.0)
    torch.testing.assert_close(plan(x, target=y, scale=2.0), loss(x, target=y, scale=2.0))
    # a keyword named like a capture parameter of satfuse reaches the program too
    def named(x, name, dynamic):
        return x * name + dynamic

    plan = satfuse.optimize(named, x, name=3.0, dynamic=1.0)
    torch.testing.assert_close(plan(x, name=3.0, dynamic=1.0), named(x, name=3.0, dynamic=1.0))


def test_options_as_dict_or_object():
    x, y = torch.randn(8), torch.randn(8)
    a = satfuse.optimize(loss, x, y, options={"target": "eager", "budget": {"iterations": 3}})
    b = satfuse.optimize(loss, x, y, options=satfuse.Options(target="eager"))
    for p in (a, b):
        torch.testing.assert_close(p(x, y), loss(x, y))
    assert "target=eager" in a.engine.trace.provenance
    with pytest.raises(TypeError, match="unknown satfuse option.*'tagret'.*target"):
        satfuse.optimize(loss, x, y, options={"tagret": "eager"})


def test_old_style_option_keyword_gets_a_hint():
    def f(x):
        return x * 2

    with pytest.raises(satfuse.CaptureError, match="options="):
        satfuse.optimize(f, torch.randn(3), target="eager")


def test_torch_compile_options_and_modes():
    f = lambda x: (x * 2).exp().sum()  # noqa: E731
    x = torch.randn(16)
    for kw in ({"options": {"target": "eager", "executor": "reference"}}, {"mode": "max-autotune"},
               {"mode": "reduce-overhead"}):
        torch._dynamo.reset()
        g = torch.compile(f, backend="satfuse", **kw)
        torch.testing.assert_close(g(x), f(x))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown satfuse option"):
        torch.compile(f, backend="satfuse", options={"nope": 1})(x)
    torch._dynamo.reset()


def test_jit_takes_options():
    f = satfuse.jit(loss, options={"target": "eager"})
    x, y = torch.randn(8), torch.randn(8)
    torch.testing.assert_close(f(x, y), loss(x, y))
    assert "target=eager" in f.last_plan.engine.trace.provenance


def test_compiled_plans_are_inspectable():
    torch._dynamo.reset()
    f = lambda x, y: torch.nn.functional.cross_entropy(x, y)  # noqa: E731
    x, y = torch.randn(8, 16), torch.randint(0, 16, (8,))
    before = len(satfuse.compiled_plans())
    torch.testing.assert_close(torch.compile(f, backend="satfuse")(x, y), f(x, y))
    plans = satfuse.compiled_plans()
    assert len(plans) == before + 1 or len(plans) == 32
    p = plans[-1]
    assert "def prologue(inputs)" in str(p)
    report = p.explain()
    assert "bytes in" in report and "gather/take-to-onehot-max" in report
    # torch's own tools keep working beside the backend
    ex = torch._dynamo.explain(f)(x, y)
    assert ex.graph_count == 1
    torch._dynamo.reset()


def test_timings_count_every_second_of_the_call():
    import time

    t0 = time.perf_counter()
    plan = satfuse.optimize(lambda x: (x * 3).exp(), torch.randn(4))
    wall = time.perf_counter() - t0
    t = plan.timings
    assert {"capture", "catalogue", "saturate", "lower", "other", "total"} <= set(t)
    stages = sum(v for k, v in t.items() if k != "total")
    assert abs(stages - t["total"]) < 1e-6 and t["total"] <= wall
