"""Python's cyclic garbage collector paused while satfuse compiles.

Tracing, rewriting and extraction allocate many short-lived objects that reference counting
frees anyway, and every full collection walks torch's whole object graph: with the collector
on, a first ``torch.compile`` spent 220-258 ms in one serialize stage that takes 14 ms without
it, and collections were 15 % of an ``optimize``. Pauses nest and may overlap across threads:
the collector is restored to its state before the outermost pause when the last one ends.

What the paused work left for the collector (the cycles of capture's graphs and fake tensors,
about 0.2 s after a 10k-op ``optimize``) is collected as the last pause ends, by the collection
the interpreter would start at its next allocation, so that the compilation that left it can
count it (:attr:`Pause.collected`; ``plan.timings['gc']``) instead of an unnamed remainder.
"""

from __future__ import annotations

import gc
import threading
import time
from contextlib import contextmanager
from typing import Iterator

_LOCK = threading.Lock()
_depth = 0
_was_enabled = False


class Pause:
    """One :func:`gc_paused` block: ``collected`` is the seconds of the collection run as it
    ended (0.0 where the collector stays off: an enclosing pause, or it was off before)."""

    __slots__ = ("collected",)

    def __init__(self) -> None:
        self.collected = 0.0


@contextmanager
def gc_paused() -> Iterator[Pause]:
    """The collector off for the block (and any pause open in another thread)."""
    global _depth, _was_enabled
    pause = Pause()
    with _LOCK:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield pause
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                pause.collected = _resume()


class _Tracked:
    """A class whose instances the collector tracks (allocating one can start a collection)."""

    __slots__ = ()


def _checkpoint() -> None:
    """A Python-level call: where CPython 3.12+ runs a collection it scheduled."""


def _resume() -> float:
    """Turn the collector on and run, now and timed, the collection the interpreter would start
    at its next allocation, if one is due (its own choice of generation: a full collection
    also weighs what is pending since the last one, which Python cannot read)."""
    t0 = time.perf_counter()
    gc.enable()
    _Tracked()  # CPython 3.11 collects in the allocation that finds the youngest generation full
    _checkpoint()
    return time.perf_counter() - t0
