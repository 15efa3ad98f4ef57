"""Loaded e-graphs kept for reuse between optimizations.

Loading lang.egg and the rule packs into a fresh e-graph costs about 25 ms (egglog
compiles every rule), more than saturating a typical program. So a loaded e-graph is
snapshotted with egglog's ``push`` and, after a program has been optimized in it, rolled
back with ``pop`` and handed to the next optimization with the same sources.

egglog 13.2's push/pop is only a faithful snapshot when nothing after the push declares
a table. A ``let`` global or a back-off scheduler declared after the push left state
behind that a later program's rules read: a wrong plan (corpus program ``split3_cat``
after ``split_cat`` and ``split_whole``). So the encoder names values with ``(Ref k)``
handles instead of ``let``s, saturation runs rules without a scheduler unless a rule
needs throttling, and a session returns to the pool only if it ran nothing but data
commands (``Session.reusable``). ``tests/test_pool.py`` checks pooled plans against
fresh ones over the corpus in shuffled orders.

An egglog e-graph is bound to the thread that made it: using it from another thread
panics, and dropping it there leaks it with a warning. A pool kept per thread would be
dropped by whichever thread collects it, so only the main thread pools; other threads
get fresh sessions.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Iterator, Sequence

from .session import Session, Source

_RULESET = re.compile(r"^\(ruleset\s+([^\s()]+)\s*\)", re.M)


class PooledSession(Session):
    """A Session over a pushed snapshot of its loaded, warmed base."""

    def __init__(self, sources: Sequence[Source]) -> None:
        super().__init__(sources)
        # run every ruleset once on the bare base, so egglog's query plans are compiled
        # into the snapshot rather than after every rollback
        names = [m for s in self.sources for m in _RULESET.findall(s.text)]
        for name in names:
            self.run([f"(run-schedule (run {name}))"], f"warm {name}")
        self.egraph.run_program(*self.egraph.parse_program("(push)"))
        self.base_sizes = self.sizes()
        self._pop_push = self.egraph.parse_program("(pop) (push)")

    def rollback(self) -> bool:
        """Back to the base (``pop``, then ``push`` it again); False if this session cannot be
        trusted to be the base again."""
        if not self.reusable:
            return False
        self.egraph.run_program(*self._pop_push)
        return True


class SessionPool:
    """Free loaded sessions of the main thread per source set (by path and text), at most
    ``capacity`` source sets."""

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self._pool: OrderedDict[tuple, list[PooledSession]] = OrderedDict()
        self.enabled = os.environ.get("SATFUSE_SESSION_POOL", "1") != "0"
        self.loads = 0  # sessions built from scratch (for tests and explain)

    @contextmanager
    def session(self, sources: Sequence[Source]) -> Iterator[Session]:
        """A session with ``sources`` loaded and nothing else, exclusively the caller's for the
        ``with`` block; returned to the pool afterwards if it can be rolled back."""
        if not self.enabled or threading.current_thread() is not threading.main_thread():
            yield Session(sources)
            return
        key = tuple((s.path, s.text) for s in sources)
        pool = self._pool
        free = pool.get(key)
        sess = free.pop() if free else None
        if sess is None:
            sess = PooledSession(sources)
            self.loads += 1
        ok = False
        try:
            yield sess
            ok = True
        finally:
            if ok and sess.rollback():
                pool.setdefault(key, []).append(sess)
                pool.move_to_end(key)
                while len(pool) > self.capacity:
                    pool.popitem(last=False)

    def clear(self) -> None:
        """Drop the free sessions (from the main thread, which made them)."""
        self._pool.clear()


POOL = SessionPool()
