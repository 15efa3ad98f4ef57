"""satfuse's loggers: one per stage, named after the package that does the work.

=========================  ====================================================
logger                     what it says
=========================  ====================================================
``satfuse.engine.capture`` tracing: program size, symbols, specialisations
``satfuse.engine``         saturation (phases, stop reasons, rules that fired),
                           extraction, timings
``satfuse.lowering``       the chosen plan: segments, fallbacks, write-backs
``satfuse.rules``          rule packs loaded, coverage/soundness runs
=========================  ====================================================

They are standard :mod:`logging` loggers under ``satfuse``, and torch's logging system knows
them: ``TORCH_LOGS="+satfuse"`` shows everything at DEBUG, ``TORCH_LOGS="satfuse"`` at INFO, and a
stage alone with its logger name (``TORCH_LOGS="+satfuse.lowering"``); torch resolves these names
as module paths, which is why the loggers are named after real packages.
``torch._logging.set_logs(satfuse=logging.DEBUG)`` works once satfuse has registered (on first use,
or on ``import satfuse`` when torch is already imported).

Torch's own fake-tensor log prints a full traceback (at ERROR) whenever a meta kernel rejects its
inputs while tracing; capture turns that failure into a clear :class:`CaptureError` instead, so
:func:`quiet_torch_tracing` silences the duplicate unless the user asked for torch's
``fake_tensor`` log.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

capture = logging.getLogger("satfuse.engine.capture")
engine = logging.getLogger("satfuse.engine")
lowering = logging.getLogger("satfuse.lowering")
rules = logging.getLogger("satfuse.rules")

_registered = False


def register_with_torch() -> None:
    """Make ``satfuse`` a registered torch log (``set_logs(satfuse=...)``); idempotent, cheap."""
    global _registered
    if _registered or "torch" not in sys.modules:
        return
    from torch._logging import _internal as tl

    tl.register_log("satfuse", ["satfuse"])
    _registered = True
    if "satfuse" in os.environ.get("TORCH_LOGS", "") and not logging.getLogger("satfuse").handlers:
        tl._init_logs()  # TORCH_LOGS named satfuse before it was registered: apply it now


_FAKE_TENSOR = "torch._subclasses.fake_tensor"
_tracing = threading.local()


class _WhileTracing(logging.Filter):
    """Drops torch's fake-tensor records emitted on a thread that satfuse is tracing on (a filter,
    not a level change: concurrent captures on other threads must not race on the logger)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(_tracing, "on", False):
            return True
        level = logging.getLogger(_FAKE_TENSOR).level
        return level != logging.NOTSET and level < logging.ERROR  # the user asked for this log


_FILTER = _WhileTracing()


@contextmanager
def quiet_torch_tracing() -> Iterator[None]:
    """Silence torch's fake-tensor error log on this thread while satfuse traces (see the module
    docstring), unless the user turned that log on (``TORCH_LOGS=fake_tensor``)."""
    log = logging.getLogger(_FAKE_TENSOR)
    if _FILTER not in log.filters:
        log.addFilter(_FILTER)
    was = getattr(_tracing, "on", False)
    _tracing.on = True
    try:
        yield
    finally:
        _tracing.on = was


__all__ = ["capture", "engine", "lowering", "quiet_torch_tracing", "register_with_torch", "rules"]
