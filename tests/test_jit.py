"""satfuse.jit: the plan cache (hits, misses, bound), guards, structure, mutation, grad."""

from __future__ import annotations

import time
import warnings

import pytest
import torch
import torch.nn.functional as F
from satfuse.lowering.cache import CacheLimitError, Entry, PlanCache, RecompileError
from satfuse.lowering.guards import GuardError

import satfuse


def flag_program(flag):
    if flag > 5:
        return torch.ones(1)
    return torch.zeros(1)


def add_mul(x, y):
    x.add_(y)
    return x * 2


def test_jit_is_exported_and_callable_module():
    import satfuse.jit as mod

    assert callable(satfuse.jit) and callable(mod)
    f = mod(add_mul)
    assert isinstance(f, mod.Jitted)


def test_static_ints_compile_per_value():
    f = satfuse.jit(lambda x, n: x * n, dynamic=False)
    x = torch.randn(3)
    assert torch.allclose(f(x, 2), x * 2)
    assert torch.allclose(f(x, 3), x * 3)
    assert torch.allclose(f(x, 2), x * 2)
    assert f.cache.compiles == 2 and f.cache.hits == 1


def test_dynamic_positions():
    def g(x, n):
        return x.sum(0) * n

    f = satfuse.jit(g, dynamic=[0])  # x's dims symbolic, n baked in
    for shape in [(3, 4), (5, 4), (7, 4)]:
        x = torch.randn(shape)
        assert torch.allclose(f(x, 2), g(x, 2))
    assert f.cache.compiles == 1
    x = torch.randn(3, 4)
    assert torch.allclose(f(x, 5), g(x, 5))  # a new value of the static int: new plan
    assert f.cache.compiles == 2


def test_size_one_dim_is_guarded():
    """make_fx assumes a symbolic dim >= 2 (squeeze(0) of [s0, 4] is a no-op): the plan
    must not serve a size-1 call."""

    def g(x):
        return x.squeeze(0) * 2

    f = satfuse.jit(g, dynamic=True)
    assert f(torch.randn(3, 4)).shape == (3, 4)
    x1 = torch.randn(1, 4)
    assert f(x1).shape == g(x1).shape == (4,)
    assert f.cache.compiles == 2


def test_on_limit_raise_names_guard():
    f = satfuse.jit(flag_program, max_plans=1, on_limit="raise")
    f(6)
    with pytest.raises(CacheLimitError, match="flag > 5"):
        f(0)


def test_on_limit_eager_is_the_default_and_warns_once():
    """Like Dynamo's recompile limit: past max_plans, calls run eagerly, with one warning that
    names the guard that kept failing."""
    from satfuse.lowering.cache import RecompileLimitWarning

    f = satfuse.jit(flag_program, max_plans=1)
    assert torch.equal(f(6), torch.ones(1))
    with pytest.warns(RecompileLimitWarning, match="flag > 5"):
        assert torch.equal(f(0), torch.zeros(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(f(-1), torch.zeros(1))  # warned once
    s = f.cache.stats()
    assert s["eager_calls"] == 2 and s["compiles"] == 1 and s["plans"] == 1


def test_bad_on_limit():
    with pytest.raises(ValueError):
        satfuse.jit(flag_program, on_limit="ignore")


def test_mutation_visible_and_aliasing_safe():
    f = satfuse.jit(add_mul)
    x, y = torch.randn(4), torch.randn(4)
    xe = x.clone()
    out = f(x, y)
    want = add_mul(xe, y)
    assert torch.allclose(out, want) and torch.allclose(x, xe)
    # the same tensor twice: eager adds x to itself; the aliasing pattern is part of the key -> a
    # plan for that pattern, reused for the next such call
    a = torch.randn(4)
    ae = a.clone()
    assert torch.allclose(f(a, a), add_mul(ae, ae)) and torch.allclose(a, ae)
    assert f.cache.stats()["compiles"] == 2
    b = torch.randn(4)
    be = b.clone()
    assert torch.allclose(f(b, b), add_mul(be, be)) and torch.allclose(b, be)
    assert f.cache.stats()["compiles"] == 2
    # overlapping views, one written: no plan can match eager's element order -> eager (which raises here)
    base = torch.arange(6.0)
    with pytest.raises(RuntimeError, match="single memory location"):
        f(base[:4], base[1:5])
    assert torch.equal(base, torch.arange(6.0)) and f.cache.stats()["compiles"] == 3


def test_structure_kwargs_and_constants():
    def g(pair, scale=None, *, mode="add"):
        x, y = pair
        z = x + y if mode == "add" else x * y
        return {"z": z if scale is None else z * scale}

    f = satfuse.jit(g)
    x, y = torch.randn(3), torch.randn(3)
    assert torch.allclose(f((x, y))["z"], x + y)
    assert torch.allclose(f((x, y), mode="mul")["z"], x * y)  # a different constant: new plan
    assert torch.allclose(f((x, y), 2.0)["z"], (x + y) * 2.0)
    assert torch.allclose(f((x, y))["z"], x + y)
    assert f.cache.compiles == 3 and f.cache.hits == 1


def test_requires_grad_goes_through_forward_and_backward_plans():
    torch._dynamo.reset()
    f = satfuse.jit(lambda x: (x * 3).sum())
    x = torch.randn(3, requires_grad=True)
    f(x).backward()
    assert torch.allclose(x.grad, torch.full((3,), 3.0))
    assert f.stats()["grad_calls"] == 1 and f.cache.compiles == 0
    kinds = [p.kind for p in satfuse.compiled_plans()[-2:]]  # the list keeps the newest 32
    assert kinds == ["forward", "backward"], kinds
    with torch.no_grad():
        assert torch.allclose(f(x), (x * 3).sum())
    assert f.cache.compiles == 1


def test_last_plan_and_repr():
    f = satfuse.jit(flag_program)
    f(6)
    assert "flag > 5" in str(f.last_plan)
    assert "compiles" in repr(f.cache)


def test_plan_cache_unit():
    calls = []

    def make(k):
        def check(inputs):
            if inputs[0] != k:
                raise GuardError(f"guard failed: x == {k}")
            return {}

        return lambda: calls.append(k) or Entry(check=check, plan=k)

    c = PlanCache(max_plans=2, on_limit="raise")
    assert c.get([1], make(1))[0].plan == 1
    assert c.get([1], make(99))[0].plan == 1
    assert c.get([2], make(2))[0].plan == 2
    with pytest.raises(CacheLimitError, match="x == 1"):
        c.get([3], make(3))
    assert calls == [1, 2]
    s = c.stats()
    assert (s["hits"], s["misses"], s["compiles"]) == (1, 3, 2)

    def boom():
        raise RuntimeError("torch says no")

    c2 = PlanCache()
    with pytest.raises(RecompileError, match="torch says no"):
        c2.get([1], boom)


def _measure(f, inputs, batches=5, n=100):
    """Best of ``batches`` (shared machines are noisy): us/call in guards and in total."""
    for _ in range(20):
        f(*inputs)
    c = f.cache
    best_guard = best_total = float("inf")
    for _ in range(batches):
        ns0, calls0 = c.guard_ns, c.calls
        t0 = time.perf_counter()
        for _ in range(n):
            f(*inputs)
        best_total = min(best_total, (time.perf_counter() - t0) / n * 1e6)
        best_guard = min(best_guard, (c.guard_ns - ns0) / 1e3 / (c.calls - calls0))
    return best_guard, best_total


def test_guard_overhead_ce_and_kv_cache():
    from tests.corpus import BY_NAME

    lines = []
    for name in ("ce_torch", "kv_cache"):
        case = BY_NAME[name]
        for dyn in (False, True):
            f = satfuse.jit(case.fn, dynamic=dyn)
            inputs = case.make_inputs()
            ref = case.fn(*case.make_inputs())
            got = f(*case.make_inputs())
            assert torch.allclose(got, ref, atol=1e-5)
            guard_us, call_us = _measure(f, inputs)
            checks = len(f.last_plan.lowered.prologue.checks)
            lines.append(f"{name:9s} dynamic={dyn!s:5s}: {guard_us:6.2f} us/call in guards ({checks} checks), "
                         f"{call_us:7.1f} us/call total")
            assert f.cache.compiles == 1
            assert guard_us < 500  # loose: shared CI machines
    print("\n" + "\n".join(lines))


def test_ce_forward_matches_eager():
    f = satfuse.jit(F.cross_entropy)
    g = torch.Generator().manual_seed(0)
    for n in (8, 5, 12):
        x, y = torch.randn(n, 16, generator=g), torch.randint(0, 16, (n,), generator=g)
        assert torch.allclose(f(x, y), F.cross_entropy(x, y), atol=1e-6)
    assert f.cache.compiles == 1


def test_jit_inside_vmap_and_grad_transforms():
    """A jitted function under ``torch.vmap`` gets BatchedTensors, which have no storage to capture,
    copy or guard: it runs as written, batched by functorch (once NotImplementedError from the
    eager fallback's input copies). Under ``torch.func.grad`` it goes through the backend."""
    x, w = torch.randn(4, 16), torch.randn(16, 8)

    def f(a):
        return a.softmax(0) * a.sum()

    def loss(w):
        return (x @ w).tanh().sum()

    torch.testing.assert_close(torch.vmap(satfuse.jit(f))(x), torch.vmap(f)(x))
    torch.testing.assert_close(torch.func.grad(satfuse.jit(loss))(w), torch.func.grad(loss)(w))


def test_a_planning_failure_is_worded_as_satfuse_s_bug_and_a_listed_refusal_is_not(monkeypatch, caplog):
    """jit runs a program it cannot plan eagerly (right values): where the cause is a form
    ``engine/unsupported.py`` lists that is by design, anything else is satfuse's bug, and the
    warning says so in the backend's words, which the fuzzer's jit mode counts as a crash."""
    import logging

    from satfuse.pipeline import Engine

    def unsigned_sum(x):
        return x.to(torch.uint32).sum()

    x = torch.tensor([1.5, 2.0, 3.0])
    with caplog.at_level(logging.WARNING, logger="satfuse"):
        torch.testing.assert_close(satfuse.jit(unsigned_sum)(x.clone()), unsigned_sum(x.clone()))
    said = [r.getMessage() for r in caplog.records if "no plan for this program" in r.getMessage()]
    assert said and not any("a satfuse bug" in m for m in said), said

    def boom(self, *a, **k):
        raise IndexError("engine failure")

    monkeypatch.setattr(Engine, "compile", boom)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="satfuse"):
        torch.testing.assert_close(satfuse.jit(lambda t: t.sin() * 2)(x.clone()), x.sin() * 2)
    assert any("planning failed, a satfuse bug: IndexError: engine failure" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_constants_in_other_positions_get_their_own_plan():
    """torch's pytree flattens None to a leaf, so ``f(x, None, t)`` and ``f(x, t, None)`` have one
    spec and the same constants: the cache key once lost where the None stood, and
    ``clamp(x, min=t)`` was served the plan of ``clamp(x, max=t)`` (found by
    ``bench/reuse_report.py --dtypes float16``: OpInfo's clamp samples 3 and 4)."""
    def f(a, lo, hi):
        return torch.clamp(a, lo, hi)

    x, t = torch.randn(5, 4), torch.zeros(5, 4)
    j = satfuse.jit(f)
    for args in [(x, None, t), (x, t, None), (x, None, t), (x, t, t)]:
        torch.testing.assert_close(j(*args), f(*args), rtol=0, atol=0)
    assert len(j.cache) == 3
