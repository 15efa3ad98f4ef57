"""Python's cyclic garbage collector paused while satfuse compiles.

Tracing, rewriting and extraction allocate many short-lived objects that reference counting
frees anyway, and every full collection walks torch's whole object graph: with the collector
on, a first ``torch.compile`` spent 220-258 ms in one serialize stage that takes 14 ms without
it, and collections were 15 % of an ``optimize``. Pauses nest and may overlap across threads:
the collector is restored to its state before the outermost pause when the last one ends.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_LOCK = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off for the block (and any pause open in another thread)."""
    global _depth, _was_enabled
    with _LOCK:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
