"""Pooled sessions (engine/pool.py) must give exactly the plans fresh sessions give.

egglog 13.2's push/pop leaked state once tables were declared after the push (a wrong
plan for split3_cat after split_cat and split_whole), so this runs the whole corpus
through one pooled session in several orders and compares every plan with a fresh one.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading

import pytest
from satfuse.engine.capture import capture
from satfuse.engine.optimize import optimize_trace
from satfuse.engine.pool import shared_pool
from satfuse.engine.printer import print_trace
from satfuse.engine.session import RuleError
from satfuse.rewrites.packs import builtin_catalogue

from tests.corpus import CASES

POOL = shared_pool()  # the pool optimize_trace uses by default


@pytest.fixture(scope="module")
def traces():
    return {c.name: capture(c.fn, *c.make_inputs(), dynamic=c.dynamic) for c in CASES}


def _python(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (thread and fork behaviour need a process of their own)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out


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
    loads = POOL.loads
    assert POOL.run(cat.sources, lambda s: (s.run(['(let $extra (Input "z"))']), s.reusable)[1]) is False
    POOL.run(cat.sources, lambda s: s.run(['(union (Ref 0) (Input "z"))']))  # a new session: the first was dropped
    assert POOL.loads == loads + 2
    assert POOL.run(cat.sources, lambda s: s.sizes() == s.base_sizes)  # data-only: rolled back, handed out again
    assert POOL.loads == loads + 2


def test_a_session_whose_job_failed_is_dropped():
    cat = builtin_catalogue()
    POOL.clear()
    seen = []

    def bad(s):
        seen.append(id(s))
        s.run(["(union (Ref 0) (NoSuchOp))"])

    loads = POOL.loads
    with pytest.raises(RuleError, match="NoSuchOp"):
        POOL.run(cat.sources, bad)
    POOL.run(cat.sources, id)
    assert POOL.loads == loads + 2


def test_a_failed_job_leaves_no_session_to_die_on_the_callers_thread():
    """The error reaches the caller with its traceback; the session it held is dropped on the
    worker (egglog reports, and leaks, an e-graph dropped on another thread)."""
    code = (
        "import gc\n"
        "from satfuse.engine.pool import shared_pool\nPOOL = shared_pool()\n"
        "from satfuse.engine.session import RuleError\n"
        "from satfuse.rewrites.packs import builtin_catalogue\n"
        "cat = builtin_catalogue()\n"
        "for _ in range(2):\n"
        "    try:\n"
        "        POOL.run(cat.sources, lambda s: s.run(['(union (Ref 0) (NoSuchOp))']))\n"
        "    except RuleError as e:\n"
        "        err = e\n"
        "del err\n"
        "gc.collect()\n"
        "print('ok')\n"
    )
    out = _python(code)
    assert "ok" in out.stdout and "unsendable" not in out.stderr, out.stderr


def test_throttled_saturation_is_not_reused():
    """A phase that needed the back-off scheduler declared its tables: drop the session."""
    cat = builtin_catalogue()

    def job(sess):
        sess.run(['(union (Ref 0) (Input "x"))'])
        sess.run(["(run-schedule (let-scheduler bo (back-off :match-limit 10 :ban-length 2)) (run-with bo algebra))"])
        return sess.reusable

    assert POOL.run(cat.sources, job) is False


def test_callers_on_any_thread_share_the_worker():
    """egglog e-graphs panic when used from another thread than their creator's: every pooled
    session lives on the pool's worker thread, whoever calls."""
    cat = builtin_catalogue()
    POOL.clear()
    mine = POOL.run(cat.sources, lambda s: (id(s), threading.current_thread().name))
    got: list = []

    def other() -> None:
        got.append(POOL.run(cat.sources, lambda s: (id(s), threading.current_thread().name)))

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert got == [mine] and mine[1] == "satfuse-egglog"


def test_facts_dropped_before_serializing_come_back_with_the_rollback(traces):
    """optimize deletes analysis facts (and base facts such as algebra's `lossless` table)
    before serializing a pooled session; the rollback must restore them for the next program."""
    cat = builtin_catalogue()
    base = POOL.run(cat.sources, lambda s: s.sizes().get("lossless", 0))
    assert base > 0

    def job(s):
        s.add_trace(traces["double_neg_cast"].trace)
        s.saturate(cat.phases)
        s.drop_facts()
        return s.sizes().get("lossless", 0)

    assert POOL.run(cat.sources, job) == 0
    assert POOL.run(cat.sources, lambda s: s.sizes().get("lossless", 0)) == base


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_runs_plans_but_refuses_to_optimize_and_the_parent_goes_on():
    """egglog's threads do not survive fork (a child using it can hang): refuse clearly."""
    code = (
        "import os, sys, torch, satfuse\n"
        "f = lambda x: (x * 2).sum()\n"
        "plan = satfuse.optimize(f, torch.randn(4))\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    ok = float(plan(torch.ones(4))) == 8.0\n"
        "    try:\n"
        "        satfuse.optimize(f, torch.randn(6))\n"
        "    except RuntimeError as e:\n"
        "        ok = ok and 'forked' in str(e)\n"
        "    else:\n"
        "        ok = False\n"
        "    sys.exit(0 if ok else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "assert os.waitstatus_to_exitcode(status) == 0, status\n"
        "print('parent', float(satfuse.optimize(f, torch.randn(5))(torch.ones(5))))\n"
    )
    out = _python(code)
    assert "parent 10.0" in out.stdout, out.stderr
