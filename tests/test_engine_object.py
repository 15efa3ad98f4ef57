"""``satfuse.Engine``: one object owns the session pool, the catalogues and the default options;
optimize, jit and the backend all compile through ``Engine.compile``."""

import subprocess
import sys

import torch

import satfuse
from satfuse.pipeline import default_engine


def f(x):
    return (x.exp() * 2).sum(0)


def test_own_engine_has_its_options_pool_and_entry_points():
    eng = satfuse.Engine({"target": "eager", "executor": "reference"})
    x = torch.randn(4, 3)
    try:
        plan = eng.optimize(f, x)
        torch.testing.assert_close(plan(x), f(x))
        assert "target=eager" in plan.engine.trace.provenance
        over = eng.optimize(f, x, options={"extractor": "greedy-dag"})  # a dict overrides only its fields
        assert "target=eager" in over.engine.trace.provenance and "greedy-dag" in over.engine.trace.provenance
        assert eng.pool is not default_engine().pool and eng.pool.loads == 1  # its own pool, loaded once
        j = eng.jit(f)
        torch.testing.assert_close(j(x), f(x))
        assert j.engine is eng and "target=eager" in j.last_plan.engine.trace.provenance
        g = torch.compile(f, backend=eng.backend(), fullgraph=True)
        torch.testing.assert_close(g(x), f(x))
        assert eng.compiled_plans()[-1].engine.trace.provenance.startswith("engine target=eager")
        assert eng.pool.loads == 1  # every entry point reused the one loaded session
    finally:
        eng.close()


def test_import_creates_no_engine_pool_or_thread():
    code = ("import threading, satfuse, satfuse.pipeline as p, satfuse.engine.pool as pool\n"
            "assert not p._DEFAULT and not pool._SHARED, 'created at import'\n"
            "assert [t.name for t in threading.enumerate()] == ['MainThread']\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_rule_coverage_harness_saturates_through_the_engine():
    """The harness (``rewrites/``) saturates on the Engine's pool, as optimize does: the one
    loaded session serves optimize and every corpus program run with the same sources."""
    from satfuse.rewrites import builtin_catalogue
    from satfuse.rewrites.corpus import load_corpus
    from satfuse.rewrites.forcing import run_program

    eng = satfuse.Engine()
    cat = builtin_catalogue()
    try:
        runs = [run_program(p, cat.sources, cat.phases, engine=eng) for p in load_corpus()[:2]]
        assert all(r.view is not None and not r.error and r.matches for r in runs), [r.error for r in runs]
        assert eng.pool.loads == 1  # loaded on this engine's pool
        x = torch.randn(4, 3)
        torch.testing.assert_close(eng.optimize(f, x)(x), f(x))
        assert eng.pool.loads == 1  # and reused by optimize
    finally:
        eng.close()
