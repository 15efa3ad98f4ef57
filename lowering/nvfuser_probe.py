"""Thin probe for the optional real nvFuser frontend (``nvfuser_direct``).

Never fails at import: ``probe()`` says whether nvfuser_direct imported, which version was
found and which one the emitted mapping follows (``REQUIRED``), and why it is unusable
when it is. ``frontend()`` returns the module or None. The heavy lifting lives in
``emit.py`` (the mapping) and ``plan.py`` (the executors).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

REQUIRED = "0.2.36"


@dataclass(frozen=True)
class Probe:
    available: bool
    found: str | None
    required: str
    reason: str

    def __str__(self) -> str:
        if self.available:
            return f"nvfuser_direct {self.found} (mapping follows {self.required})"
        return f"nvfuser_direct unavailable: {self.reason} (required {self.required}, found {self.found or 'none'})"


def _vtuple(v: str) -> tuple[int, ...]:
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", v)
    return tuple(int(x) for x in m.groups()) if m else (0,)


@lru_cache(maxsize=1)
def probe() -> Probe:
    try:
        import nvfuser_direct  # type: ignore[import-not-found]
    except Exception as e:  # ImportError, missing CUDA libraries, ABI mismatches, ...
        return Probe(False, None, REQUIRED, f"{type(e).__name__}: {e}".splitlines()[0][:200])
    found = str(getattr(nvfuser_direct, "__version__", "unknown"))
    if _vtuple(found) < _vtuple(REQUIRED):
        return Probe(False, found, REQUIRED, "too old")
    return Probe(True, found, REQUIRED, "")


def frontend() -> Any:
    """The ``nvfuser_direct`` module when usable, else None."""
    if not probe().available:
        return None
    import nvfuser_direct  # type: ignore[import-not-found]

    return nvfuser_direct


def cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False
