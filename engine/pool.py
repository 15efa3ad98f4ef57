"""Loaded e-graphs kept for reuse between optimizations, on one egglog worker thread.

Loading lang.egg and the rule packs into a fresh e-graph costs about 45 ms (egglog compiles
every rule), more than optimizing a typical program. So a loaded e-graph is snapshotted
with egglog's ``push`` and, after a program has been optimized in it, rolled back with
``pop`` and handed to the next optimization with the same sources.

egglog 13.2's push/pop is only a faithful snapshot when nothing after the push declares
a table. A ``let`` global or a back-off scheduler declared after the push left state
behind that a later program's rules read: a wrong plan (corpus program ``split3_cat``
after ``split_cat`` and ``split_whole``). So programs are loaded as rows and named by
``(Ref k)`` handles instead of ``let``s, saturation runs rules without a scheduler unless a
rule needs throttling, and a session returns to the pool only if it ran nothing but data
commands (``Session.reusable``). ``tests/test_pool.py`` checks pooled plans against fresh
ones over the corpus in shuffled orders.

An egglog e-graph is bound to the thread that made it (using it from another thread
panics; dropping it there leaks it with a warning). So pooled sessions live on one worker
thread: :meth:`SessionPool.run` runs a job there and returns its result, and the rollback
(``pop`` + ``push``, about 4 ms) runs there afterwards while the caller goes on with
extraction and lowering (egglog releases the GIL while it works). Callers on any thread
share the one worker, which serializes them.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import traceback
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any, Callable, Sequence, TypeVar

from .session import CLEANUP_RULESET, Session, Source, _check_not_forked

R = TypeVar("R")


class _Worker:
    """One daemon thread running submitted calls in order (a ThreadPoolExecutor's threads are
    shut down before atexit handlers run, and the pool must clear its sessions there)."""

    def __init__(self) -> None:
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="satfuse-egglog", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        fut: Future = Future()
        self._q.put((fut, fn, args))
        return fut

    def _loop(self) -> None:
        while True:
            fut, fn, args = self._q.get()
            if fn is None:
                fut.set_result(None)
                return
            try:
                fut.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to the caller (egglog panics included)
                fut.set_exception(e)

    def stop(self) -> None:
        self.submit(None).result()  # type: ignore[arg-type]


def _clear_frames(e: BaseException) -> None:
    """Drop the locals of every finished frame in ``e``'s traceback and in those of the
    exceptions it was raised from."""
    seen: set[int] = set()
    x: BaseException | None = e
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        if x.__traceback__ is not None:
            traceback.clear_frames(x.__traceback__)
        x = x.__cause__ or x.__context__


class PooledSession(Session):
    """A Session over a pushed snapshot of its loaded, warmed base."""

    def __init__(self, sources: Sequence[Source]) -> None:
        super().__init__(sources)
        # run every ruleset once on the bare base, so egglog's query plans are compiled
        # into the snapshot rather than after every rollback
        for name in self.rulesets:
            if name == CLEANUP_RULESET:  # it forgets the packs' facts: never on the base
                continue
            self.run([f"(run {name} 1)"], f"warm {name}")
        self.egraph.run_program(*self.egraph.parse_program("(push)"))
        self.base_sizes = self.sizes()
        self._pop_push = self.egraph.parse_program("(pop) (push)")

    def rollback(self) -> bool:
        """Back to the base (``pop``, then ``push`` it again); False if this session cannot be
        trusted to be the base again."""
        if not self.reusable:
            return False
        self.egraph.run_program(*self._pop_push)
        self._has_program = False
        return True


class SessionPool:
    """Free loaded sessions per source set (by path and text), at most ``capacity`` sets,
    owned by the egglog worker thread."""

    def __init__(self, capacity: int = 4, enabled: bool | None = None) -> None:
        self.capacity = capacity
        self.enabled = os.environ.get("SATFUSE_SESSION_POOL", "1") != "0" if enabled is None else enabled
        self.loads = 0  # sessions built from scratch (for tests)
        self._free: OrderedDict[tuple, list[PooledSession]] = OrderedDict()  # worker thread only
        self._executor: _Worker | None = None
        self._pid = 0
        self._lock = threading.Lock()
        self._orphans: list = []  # sessions of a forked parent: never touched, never dropped

    def run(self, sources: Sequence[Source], job: Callable[[Session], R]) -> R:
        """``job(session)`` with ``sources`` loaded and nothing else, on the worker thread; its
        result (which must hold no egglog object) is returned here. The session goes back to
        the pool afterwards if it can be rolled back; if ``job`` raises, it is dropped."""
        if not self.enabled:
            return job(Session(sources))
        _check_not_forked()  # a clear error here, not a hang on the worker
        key = tuple((s.path, s.text) for s in sources)
        return self._worker().submit(self._use, key, sources, job).result()

    def _use(self, key: tuple, sources: Sequence[Source], job: Callable[[Session], R]) -> R:
        free = self._free.get(key)
        sess = free.pop() if free else None
        if sess is None:
            sess = PooledSession(sources)
            self.loads += 1
        try:
            out = job(sess)
        except BaseException as e:
            # the exception goes to the caller's thread; its traceback's frames hold the session,
            # which must die here, on its own thread: clear them, then drop it
            _clear_frames(e)
            del sess
            raise
        self._worker().submit(self._give_back, key, sess)  # runs after the caller has `out`
        return out

    def _give_back(self, key: tuple, sess: PooledSession) -> None:
        if sess.rollback():
            self._free.setdefault(key, []).append(sess)
            self._free.move_to_end(key)
            while len(self._free) > self.capacity:
                self._free.popitem(last=False)

    def _worker(self) -> _Worker:
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                if self._executor is not None:  # forked: the parent's worker thread is not here
                    self._orphans.append(self._free)
                    self._free = OrderedDict()
                if self._pid == 0:
                    atexit.register(self.shutdown)  # its sessions must die on the worker's thread
                self._executor = _Worker()
                self._pid = os.getpid()
            return self._executor

    def drain(self) -> None:
        """Wait until the worker has finished everything queued (rollbacks included)."""
        if self._executor is not None and self._pid == os.getpid():
            self._executor.submit(lambda: None).result()

    def clear(self) -> None:
        """Drop the free sessions (on the worker, which made them)."""
        if self._executor is not None and self._pid == os.getpid():
            self._executor.submit(self._free.clear).result()

    def shutdown(self) -> None:
        """Clear and stop the worker (at exit: its sessions must die on its thread)."""
        self.clear()
        if self._executor is not None and self._pid == os.getpid():
            self._executor.stop()
            self._executor = None


_SHARED: list[SessionPool] = []
_SHARED_LOCK = threading.Lock()


def shared_pool() -> SessionPool:
    """The process's default pool (made on first use, not at import): the default
    ``satfuse.Engine`` and direct ``optimize_trace`` calls share it."""
    if not _SHARED:
        with _SHARED_LOCK:
            if not _SHARED:
                _SHARED.append(SessionPool())
    return _SHARED[0]
