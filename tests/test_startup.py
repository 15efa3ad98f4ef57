"""A first compilation's one-time costs are in its plan's timings, and the garbage collector is
paused while compiling, on every path (``optimize``, ``jit``, ``torch.compile``)."""

import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import satfuse

ROOT = Path(__file__).resolve().parents[1]
STAGES = {"catalogue", "load", "saturate", "lower", "other", "total"}


def _compile(path, engine, fn, *args):
    """The timings of ``fn``'s first compilation on ``engine`` through ``path``."""
    if path == "optimize":
        return engine.optimize(fn, *args).timings
    if path == "jit":
        f = engine.jit(fn)
        f(*args)
        return f.last_plan.timings
    torch.compile(fn, backend=engine.backend())(*args)
    [g] = engine.compiled_plans()
    return g.timings


@pytest.fixture
def collector():
    """Runs the test with the collector on, then off, and restores the state it found."""
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("path", ["optimize", "jit", "backend"])
@pytest.mark.parametrize("enabled", [True, False])
def test_gc_paused_while_compiling_and_restored(path, enabled, collector, monkeypatch):
    """Capture (the function traced) and, for the backend, AOTAutograd's trace run with the
    collector off; afterwards it is as it was, and the timings add up to ``total``."""
    seen = []
    if path == "backend":
        import torch._dynamo.backends.common as common

        real = common.aot_autograd

        def aot_autograd(**kw):
            inner = real(**kw)

            def traced(gm, inputs):
                seen.append(gc.isenabled())
                return inner(gm, inputs)

            return traced

        monkeypatch.setattr(common, "aot_autograd", aot_autograd)

    def fn(x):
        if path != "backend":  # Dynamo traces the function itself: only AOTAutograd's trace is satfuse's
            seen.append(gc.isenabled())
        return torch.softmax(x * 2, -1)

    x = torch.randn(4, 8, requires_grad=path == "backend")
    (gc.enable if enabled else gc.disable)()
    engine = satfuse.Engine()
    try:
        t = _compile(path, engine, fn, x)
    finally:
        engine.close()
    assert gc.isenabled() is enabled
    assert seen and not any(seen), seen
    assert STAGES <= set(t), t
    assert abs(sum(v for k, v in t.items() if k != "total") - t["total"]) < 1e-6


def test_gc_pauses_nest_across_threads(collector):
    """Two overlapping pauses (another thread's included): the collector comes back on only when
    the last one ends."""
    import threading

    from satfuse.engine.gcpause import gc_paused

    gc.enable()
    entered, release = threading.Event(), threading.Event()

    def other():
        with gc_paused():
            entered.set()
            release.wait(5)

    th = threading.Thread(target=other)
    with gc_paused():
        th.start()
        entered.wait(5)
    assert not gc.isenabled()  # the other thread's pause is still open
    release.set()
    th.join(5)
    assert gc.isenabled()


def test_collection_as_the_pause_ends_is_timed(collector):
    """The collection the paused work made due runs as the outermost pause ends, timed in its
    ``collected`` (the ``gc`` stage of a plan's timings); an inner pause, or a collector that was
    off, collects nothing there."""
    from satfuse.engine.gcpause import gc_paused

    def cycles():
        for _ in range(50_000):
            a: list = []
            a.append(a)

    gc.enable()
    log: list[str] = []
    cb = lambda phase, info: log.append(phase)  # noqa: E731
    gc.callbacks.append(cb)
    try:
        with gc_paused() as outer:
            with gc_paused() as inner:
                cycles()
            assert not log and inner.collected == 0.0
        assert log[:2] == ["start", "stop"] and outer.collected > 0 and gc.isenabled()
        gc.disable()
        with gc_paused() as off:
            cycles()
        assert off.collected == 0.0 and not gc.isenabled()
    finally:
        gc.callbacks.remove(cb)


@pytest.mark.parametrize("path", ["optimize", "jit"])
def test_gc_is_a_stage(path, collector):
    """``optimize`` and ``jit`` count the collection their compilation made due as ``gc``."""
    gc.enable()
    engine = satfuse.Engine()
    try:
        t = _compile(path, engine, lambda x: torch.tanh(x) * 2, torch.randn(4, 8))
    finally:
        engine.close()
    assert t["gc"] >= 0.0
    assert abs(sum(v for k, v in t.items() if k != "total") - t["total"]) < 1e-6


_FIRST_CALL = textwrap.dedent("""
    import json, sys, time
    import torch
    x = torch.randn(4, 8)
    def fn(x):
        return torch.softmax(x * 2, -1)
    assert "torch._dynamo" not in sys.modules
    t0 = time.perf_counter()
    import satfuse
    if sys.argv[1] == "optimize":
        t = satfuse.optimize(fn, x).timings
    else:
        torch.compile(fn, backend="satfuse")(x)
        t = satfuse.compiled_plans()[0].timings
    print(json.dumps({"wall": time.perf_counter() - t0, "timings": t}))
""")


@pytest.mark.parametrize("path", ["optimize", "backend"])
def test_first_call_counts_its_one_time_costs(path):
    """In a fresh process, the first plan's timings count the imports (satfuse's pipeline, and for
    ``optimize`` torch._dynamo, which capture's tracing needs), the catalogue and the first session
    load; ``total`` is the call's time from ``import satfuse`` on (for the backend, less Dynamo's
    own tracing and imports, which are not satfuse's)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _FIRST_CALL, path], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    t = r["timings"]
    assert STAGES | {"import"} <= set(t), t
    assert t["import"] > 0 and t["load"] > 0
    assert abs(sum(v for k, v in t.items() if k != "total") - t["total"]) < 1e-6
    assert t["total"] <= r["wall"]
    if path == "optimize":
        assert t["total"] >= 0.9 * r["wall"], r  # nothing of the call is missing
