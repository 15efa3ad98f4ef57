"""Argument checks eager kernels make that torch's Python decompositions leave out.

Capture traces decompositions (``torch._decomp``) on fake tensors; where one skips a check
of the eager kernel, the traced program quietly computes what eager refuses: nll_loss's
decomposition gathers with an int32 target where eager raises ``RuntimeError: expected
target dtype to be Long or Byte``. Each wrapper here makes eager's check first and raises
eager's exception type, so capture refuses exactly what eager refuses. (Checks on tensor
*values*, such as a target in range, are the rules' obligations: lowering/obligations.py.)
"""

from __future__ import annotations

from typing import Any, Callable

import torch

aten = torch.ops.aten


class EagerRefusal(RuntimeError):
    """Eager refuses these arguments (its own message); capture raises it unchanged."""


#: c10's ScalarType names, as eager's messages spell dtypes
_SCALAR_NAMES = {torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
                 torch.uint8: "Byte", torch.bool: "Bool", torch.float32: "Float", torch.float64: "Double",
                 torch.float16: "Half", torch.bfloat16: "BFloat16"}


def _scalar_name(dt: torch.dtype) -> str:
    return _SCALAR_NAMES.get(dt, str(dt).removeprefix("torch."))


def _nll_target(two_d: bool, target_pos: int) -> Callable[[Callable], Callable]:
    """nll_loss(_2d)_forward/backward: the target must be int64 (or uint8, 1-d only)."""

    def wrap(decomp: Callable) -> Callable:
        def checked(*args: Any, **kwargs: Any) -> Any:
            target = args[target_pos] if len(args) > target_pos else kwargs["target"]
            dt = target.dtype
            if dt not in (torch.int64, torch.uint8):
                raise EagerRefusal(f"expected target dtype to be Long or Byte, but got {_scalar_name(dt)}")
            if two_d and dt != torch.int64:
                raise EagerRefusal(f"expected scalar type Long but found {_scalar_name(dt)}")
            return decomp(*args, **kwargs)

        return checked

    return wrap


#: aten op packet -> wrapper of its decomposition
CHECKS: dict[Any, Callable[[Callable], Callable]] = {
    aten.nll_loss_forward: _nll_target(False, 1),
    aten.nll_loss2d_forward: _nll_target(True, 1),
    aten.nll_loss_backward: _nll_target(False, 2),
    aten.nll_loss2d_backward: _nll_target(True, 2),
}


def with_eager_checks(table: dict) -> dict:
    """``table`` (OpOverload -> decomposition) with eager's argument checks in front."""
    out = dict(table)
    for op, fn in table.items():
        wrap = CHECKS.get(getattr(op, "_overloadpacket", None))
        if wrap is not None:
            out[op] = wrap(fn)
    return out
