"""The torch APIs capture uses that differ between torch releases.

satfuse supports torch 2.13 and 2.14 (pyproject; CI runs 2.13). The lent GPU machines have 2.11
(their CUDA build), where ``bench/device.sh`` runs the nvFuser lane, OpInfo on CUDA, random
programs on CUDA and the GPU benchmarks, so capture must run there too: each shim uses the newer
API where it exists and says what 2.11 has instead. Where eager's own answer differs, capture
follows the running torch's, probed once (``clamp`` with a number nan bound ignores it in 2.11 and
propagates it in 2.13). 2.11 is not supported beyond that: some error messages and exception
types differ, and satfuse follows 2.13's.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any, Iterator

import torch


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """``torch.compiler.is_compiling()`` is True inside (libraries take their traceable paths).
    2.13 has a context manager for it; 2.11 has only the module flag it sets."""
    session = getattr(torch.compiler, "_compile_session_context", None)
    if session is not None:
        with session():
            yield
        return
    old = torch.compiler._is_compiling_flag
    torch.compiler._is_compiling_flag = True
    try:
        yield
    finally:
        torch.compiler._is_compiling_flag = old


_INPLACE_TAG = getattr(torch.Tag, "inplace", None)


def is_inplace_variant(func: Any) -> bool:
    """``func`` is an op's in-place variant (``add_``): 2.13 tags it; 2.11 has no such tag, and the
    schema says the same (``self`` is written)."""
    if _INPLACE_TAG is not None:
        return _INPLACE_TAG in func.tags
    args = getattr(getattr(func, "_schema", None), "arguments", None)
    first = args[0] if args else None
    return bool(first is not None and not first.kwarg_only and first.alias_info is not None
                and first.alias_info.is_write)


def hint(n: Any) -> int:
    """A size's example value, without a guard (2.13: ``optimization_hint``; 2.11: ``size_hint``)."""
    from torch.fx.experimental import symbolic_shapes as ss

    return (getattr(ss, "optimization_hint", None) or ss.size_hint)(n)


def symbol_values(shape_env: Any) -> dict:
    """A ShapeEnv's backed symbols and their example values (2.13: ``backed_var_to_val``; 2.11:
    ``var_to_val``)."""
    return getattr(shape_env, "backed_var_to_val", None) or getattr(shape_env, "var_to_val", {})


@functools.cache
def nan_bound_propagates(op: str, with_other_bound: bool = False) -> bool:
    """Whether eager's ``op`` (clamp, clamp_min, clamp_max) with a number nan bound makes every
    element nan (2.13) or ignores the bound (2.11's ``clamp`` with that bound alone: beside a
    second bound, and in ``clamp_min``, it propagates there too)."""
    x = torch.zeros(1)
    if op == "clamp":
        r = torch.clamp(x, math.nan, 1.0) if with_other_bound else torch.clamp(x, min=math.nan)
    else:
        r = (torch.clamp_min if op == "clamp_min" else torch.clamp_max)(x, math.nan)
    return bool(r.isnan().item())
