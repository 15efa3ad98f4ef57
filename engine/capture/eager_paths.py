"""Which layout eager's CPU kernels read their operands in, where the answer depends on it.

``cpu_kernel_vec`` runs a kernel's vector form over whole vectors of each contiguous inner row
and its scalar form over the row's tail (and over every element of a row that is not
contiguous). For most kernels both forms agree; for a few they do not (``gelu`` of +inf is nan
on the vector path and inf on the scalar one, a complex ``neg`` keeps a zero's sign only on the
scalar one, f16/bf16 ``rsqrt`` rounds once or twice, most transcendental kernels differ by ulps),
so eager's answer for an element depends on its position and on the operand's layout. Such an op
runs as eager's own kernel in the plan (an opaque op), reading each operand laid out as eager's
was (``eager_strides``, ``vocab.EAGER_STRIDES``): exact for intermediates and views, and for a
caller's tensor the kernel reads directly (the plan passes it as it is).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from ..vocab import expanded_apart


def _hint(e: Any) -> int | None:
    if isinstance(e, int):
        return e
    hint = getattr(getattr(e, "node", None), "hint", None)
    return int(hint) if hint is not None else None


def eager_strides(node: torch.fx.Node, sym: Callable[[Any], Any]) -> tuple[tuple[Any, ...] | None, ...]:
    """Per positional argument of ``node``, the strides of the CPU tensor eager's kernel reads
    there (extents: ``sym`` converts a symbolic one) when, at the example sizes, they are not
    contiguous and no two elements overlap but along expanded dims (None elsewhere, and for
    one-element tensors); empty when every operand is contiguous. At run time
    ``vocab.laid_out`` lays out only an operand whose strides differ, so symbolic strides need
    no guard."""
    out: list[tuple[Any, ...] | None] = []
    for a in node.args:
        val = a.meta.get("val") if isinstance(a, torch.fx.Node) else None
        s = None
        if isinstance(val, torch.Tensor) and val.device.type == "cpu":
            shape, strides = [_hint(e) for e in val.shape], [_hint(e) for e in val.stride()]
            if None not in shape and None not in strides and math.prod(shape) > 1:
                expect, contiguous = 1, True
                for n, st in reversed(list(zip(shape, strides))):
                    contiguous &= n == 1 or st == expect
                    expect *= n
                if not contiguous and expanded_apart(shape, strides):
                    s = tuple(sym(e) for e in val.stride())
        out.append(s)
    return tuple(out) if any(s is not None for s in out) else ()
