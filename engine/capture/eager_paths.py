"""Which layout eager's kernels read their operands in, where the answer depends on it.

``cpu_kernel_vec`` runs a kernel's vector form over whole vectors of each contiguous inner row
and its scalar form over the row's tail (and over every element of a row that is not
contiguous). For most kernels both forms agree; for a few they do not (``gelu`` of +inf is nan
on the vector path and inf on the scalar one, a complex ``neg`` keeps a zero's sign only on the
scalar one, f16/bf16 ``rsqrt`` rounds once or twice, most transcendental kernels differ by ulps),
so eager's answer for an element depends on its position and on the operand's layout. Such an op
runs as eager's own kernel in the plan (an opaque op), reading each operand laid out as eager's
was (``eager_strides``, ``vocab.EAGER_STRIDES``): exact for intermediates and views, and for a
caller's tensor the kernel reads directly (the plan passes it as it is).

CUDA kernels are recorded alike: their layout can decide whether they run at all. SDPA pads a
mask's last dim to a multiple of 16 and slices it back, and the memory-efficient kernel refuses a
bias whose strides are not multiples of 4 (an H200, ``test_runs_on_nvfuser[kv]``): handed the
plan's contiguous copy of the sliced bias, it raised where eager ran.
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
    """Per positional argument of ``node``, the strides of the tensor eager's kernel reads
    there (extents: ``sym`` converts a symbolic one) when, at the example sizes, they are not
    contiguous and no two elements overlap but along expanded dims (None elsewhere, and for
    one-element tensors); empty when every operand is contiguous. At run time
    ``vocab.laid_out`` lays out only an operand whose strides differ, so symbolic strides need
    no guard. A program input's own symbolic strides are left out: the plan passes the caller's
    tensor as it is (what eager's kernel read), and no input binds a stride's symbol."""
    out: list[tuple[Any, ...] | None] = []
    for a in node.args:
        val = a.meta.get("val") if isinstance(a, torch.fx.Node) else None
        s = None
        if isinstance(val, torch.Tensor) and a.op == "placeholder" and not all(
                isinstance(t, int) for t in val.stride()):
            val = None
        if isinstance(val, torch.Tensor):
            shape, strides = [_hint(e) for e in val.shape], [_hint(e) for e in val.stride()]
            if None not in shape and None not in strides and math.prod(shape) > 1:
                expect, contiguous = 1, True
                for n, st in reversed(list(zip(shape, strides))):
                    contiguous &= n == 1 or st == expect
                    expect *= n
                if (not contiguous or _copied(a)) and expanded_apart(shape, strides):
                    s = tuple(sym(e) for e in val.stride())
        out.append(s)
    return tuple(out) if any(s is not None for s in out) else ()


def eager_copies(node: torch.fx.Node) -> tuple[int, ...]:
    """The positional arguments of ``node`` that are copies capture erases (:func:`_copied`)."""
    return tuple(i for i, a in enumerate(node.args) if isinstance(a, torch.fx.Node) and _copied(a))


#: copies capture keeps as their source's value (aten_map's ``fresh``): the layout they gave the
#: kernel is gone from the plan
_COPIES = {torch.ops.aten.clone.default, torch.ops.aten.contiguous.default, torch.ops.aten.lift_fresh_copy.default}
_ALIASES = {torch.ops.aten.alias.default, torch.ops.aten.detach.default}


def _copied(a: torch.fx.Node) -> bool:
    """``a`` is a copy (through aliases) that capture erases: eager's kernel read the copy, laid
    out as the copy was (``embedding_bag``'s composite makes its indices contiguous, and
    ``_embedding_bag`` reads a strided index tensor's memory as if it were contiguous), while the
    plan would hand it the source in the source's layout. Its strides are recorded even when
    contiguous."""
    while a.target in _ALIASES and a.args and isinstance(a.args[0], torch.fx.Node):
        a = a.args[0]
    if a.target is torch.ops.aten._to_copy.default:
        src = a.args[0].meta.get("val") if a.args and isinstance(a.args[0], torch.fx.Node) else None
        val = a.meta.get("val")
        return isinstance(src, torch.Tensor) and isinstance(val, torch.Tensor) and (src.dtype, src.device) == (
            val.dtype, val.device)
    return a.target in _COPIES
