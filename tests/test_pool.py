"""Pooled sessions (engine/pool.py) must give exactly the plans fresh sessions give.

egglog 13.2's push/pop leaked state once tables were declared after the push (a wrong
plan for split3_cat after split_cat and split_whole), so this runs the whole corpus
through one pooled session in several orders and compares every plan with a fresh one.
"""

from __future__ import annotations

import random

import pytest
from satfuse.engine.capture import capture
from satfuse.engine.optimize import optimize_trace
from satfuse.engine.pool import POOL, PooledSession
from satfuse.engine.printer import print_trace
from satfuse.engine.session import RuleError
from satfuse.rewrites.packs import builtin_catalogue

from tests.corpus import CASES


@pytest.fixture(scope="module")
def traces():
    return {c.name: capture(c.fn, *c.make_inputs(), dynamic=c.dynamic) for c in CASES}


def _plan(cat, cap) -> str:
    res = optimize_trace(cap.trace, cat.sources, cat.phases, hints=cap.symbol_hints)
    return print_trace(res.trace).split("\n", 1)[1]  # without the provenance line (timings)


def test_pooled_plans_equal_fresh_plans_in_any_order(traces):
    cat = builtin_catalogue()
    POOL.enabled = False
    try:
        fresh = {name: _plan(cat, cap) for name, cap in traces.items()}
    finally:
        POOL.enabled = True
    POOL.clear()
    loads = POOL.loads
    for seed in range(2):
        names = list(traces) * 2
        random.Random(seed).shuffle(names)
        for name in ["split_cat", "split_whole", "split3_cat"] + names:  # the order that broke let-globals
            assert _plan(cat, traces[name]) == fresh[name], name
    assert POOL.loads == loads + 1  # one load, then only rollbacks


def test_a_session_that_declared_something_is_not_reused():
    cat = builtin_catalogue()
    POOL.clear()
    with POOL.session(cat.sources) as s:
        first = s
        s.run(['(let $extra (Input "z"))'])  # a global: a new table
    assert not first.reusable
    with POOL.session(cat.sources) as s:
        assert s is not first
        s.run(['(union (Ref 0) (Input "z"))'])
        second = s
    with POOL.session(cat.sources) as s:
        assert s is second  # data-only: rolled back and handed out again
        assert s.sizes() == s.base_sizes


def test_a_session_whose_block_failed_is_dropped():
    cat = builtin_catalogue()
    POOL.clear()
    with pytest.raises(RuleError):
        with POOL.session(cat.sources) as s:
            failed = s
            s.run(["(union (Ref 0) (NoSuchOp))"])
    with POOL.session(cat.sources) as s:
        assert s is not failed


def test_throttled_saturation_is_not_reused():
    """A phase that needed the back-off scheduler declared its tables: drop the session."""
    cat = builtin_catalogue()
    sess = PooledSession(cat.sources)
    sess.run(['(union (Ref 0) (Input "x"))'])
    sess.run(["(run-schedule (let-scheduler bo (back-off :match-limit 10 :ban-length 2)) (run-with bo algebra))"])
    assert not sess.rollback()


def test_other_threads_get_fresh_sessions():
    """egglog e-graphs panic when used from another thread than their creator's, and warn
    when dropped on another: only the main thread pools."""
    import threading

    cat = builtin_catalogue()
    with POOL.session(cat.sources) as s:
        mine = s
    got: list = []

    def other() -> None:
        with POOL.session(cat.sources) as s:
            s.run(['(union (Ref 0) (Input "t"))', "(run-schedule (run analysis))"])
            got.append((id(s), type(s)))  # not the session: it must die on its own thread

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert got and got[0][0] != id(mine) and got[0][1] is not PooledSession
    with POOL.session(cat.sources) as s:
        assert s is mine
