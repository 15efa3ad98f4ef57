"""One benchmark point in a fresh Python process: the child prints one JSON line last."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_child(code: str, argv: list[str], timeout: float, env: dict[str, str] | None = None,
              drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run ``python -c code argv...`` from the repository root with ``OMP_NUM_THREADS=1`` (unless set)
    and satfuse on ``PYTHONPATH``, ``env`` on top and ``drop`` removed; the last stdout line,
    parsed, or ``{"error": ...}``."""
    full = {"OMP_NUM_THREADS": "1", **os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    for k in drop:
        full.pop(k, None)
    try:
        out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=timeout,
                             env=full, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).strip().splitlines()
        return {"error": lines[-1][:160] if lines else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])
