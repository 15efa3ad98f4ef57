"""One-time costs of a process's first compilations, counted in the timings of the plan that paid them.

A first ``optimize`` / ``jit`` call / ``torch.compile`` graph pays for things no later one does:
importing satfuse's pipeline and ``torch._dynamo`` (which capture's tracing needs), loading the
rule catalogue, loading the first egglog session. The last two are stages of every compilation
(``catalogue``, ``load``: ~0 once cached); imports happen wherever Python first needs a module, often
before the call that needs it has started its clock (``satfuse.optimize`` imports ``satfuse.api``
on attribute access). :func:`timed_import` times such imports into a pending tally, and each path
hands it to its plan with :func:`account`, as the ``import`` stage, beside ``other`` (what no stage
timed) and ``total``. The tally is process-wide: with several threads compiling at once, the first
plan to finish takes it. Only the standard library is imported here (``import satfuse`` stays light).
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from types import ModuleType

_LOCK = threading.Lock()
_pending: list[tuple[str, float, float]] = []  # (stage, seconds, perf_counter when it ended)
_local = threading.local()


def timed_import(name: str) -> ModuleType:
    """``importlib.import_module(name)``, its time added to the pending ``import`` cost if it was
    not imported yet (an import inside another timed one is counted once, in the outer)."""
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    t0 = time.perf_counter()
    try:
        return importlib.import_module(name)
    finally:
        _local.depth = depth
        if depth == 0:
            add("import", time.perf_counter() - t0)


def add(stage: str, seconds: float) -> None:
    """A one-time cost paid outside any plan's stages (just now), for the next plan to count."""
    with _LOCK:
        _pending.append((stage, seconds, time.perf_counter()))


def account(timings: dict[str, float], t0: float) -> dict[str, float]:
    """Every second of a compilation whose clock started at ``t0`` in ``timings``: the pending
    one-time costs are added as stages (and taken); ``other`` is what no stage timed since
    ``t0``; ``total`` is that time plus the costs paid before ``t0`` (on the way to the call)."""
    wall = time.perf_counter() - t0
    with _LOCK:
        costs = list(_pending)
        _pending.clear()
    prior = 0.0
    for stage, seconds, end in costs:
        timings[stage] = timings.get(stage, 0.0) + seconds
        if end <= t0:
            prior += seconds
    timings.pop("other", None)
    timings.pop("total", None)
    timings["other"] = max(0.0, wall - (sum(timings.values()) - prior))
    timings["total"] = wall + prior
    return timings
