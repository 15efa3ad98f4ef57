"""Which elements eager's CPU elementwise kernels compute on their vectorized path, and which
on their scalar path, where the two answer differently.

``cpu_kernel_vec`` runs a kernel's vector form over whole vectors of each contiguous inner row
and its scalar form over the row's tail (and over every element of a row that is not
contiguous). For most kernels both forms agree; for a few they do not, so eager's answer for an
element depends on its position and on the operand's layout:

- ``rsqrt`` of f16/bf16: the vector form computes in f32 and rounds once; the scalar form is
  ``1 / sqrt(x)`` in the dtype's own arithmetic, rounding twice (27 % of values differ by an ulp);
- kernels that run as eager's own (opaque ops): ``gelu`` of +inf is nan on the vector path and
  inf on the scalar one, a complex ``neg`` keeps a zero's sign only on the scalar one, and most
  transcendental kernels differ by ulps. Such a call reads each operand laid out as eager's was
  (``eager_strides``, ``vocab.EAGER_STRIDES``).

A plan computes values, not layouts, so it reproduces eager's choice from the operand's layout
as capture saw it (exact for intermediates and views; an input is taken to be contiguous, which
is what capture assumes of it). The vector width is asked of eager itself once per dtype, so it
follows the machine's CPU capability (AVX2, AVX512).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import torch

from ..vocab import non_overlapping

#: TensorIterator's grain: above it, with several threads, each thread's range has its own tail
GRAIN_SIZE = 32768


def _hint(e: Any) -> int | None:
    if isinstance(e, int):
        return e
    hint = getattr(getattr(e, "node", None), "hint", None)
    return int(hint) if hint is not None else None


def eager_strides(node: torch.fx.Node, sym: Callable[[Any], Any]) -> tuple[tuple[Any, ...] | None, ...]:
    """Per positional argument of ``node``, the strides of the CPU tensor eager's kernel reads
    there (extents: ``sym`` converts a symbolic one) when, at the example sizes, they are not
    contiguous and no two elements overlap (None elsewhere, and for one-element tensors); empty
    when every operand is contiguous. At run time ``vocab.laid_out`` lays out only an operand
    whose strides differ, so symbolic strides need no guard."""
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
                if not contiguous and non_overlapping(shape, strides):
                    s = tuple(sym(e) for e in val.stride())
        out.append(s)
    return tuple(out) if any(s is not None for s in out) else ()


def rsqrt_rounding_twice(x: torch.Tensor) -> torch.Tensor:
    """Eager's scalar-path ``rsqrt`` of an f16/bf16 tensor: ``sqrt`` rounded to the dtype, then
    its reciprocal rounded again."""
    return torch.reciprocal(torch.sqrt(x.float()).to(x.dtype).float()).to(x.dtype)


@lru_cache(maxsize=None)
def vector_chunk(dtype: torch.dtype) -> int:
    """How many elements eager's CPU ``rsqrt`` handles per vector step for ``dtype``: a row's
    first ``(m // chunk) * chunk`` elements take the vector path. Measured on eager: a row of
    127 values that round differently on the two paths shows where its scalar tail starts."""
    values = torch.linspace(0.01, 10.0, 4096).to(dtype)
    once = torch.rsqrt(values.float()).to(dtype)
    differ = values[once != rsqrt_rounding_twice(values)]
    if not len(differ):  # a build whose two paths agree: every element rounds once
        return 1
    row = differ[:1].expand(127).contiguous()
    twice = torch.rsqrt(row) == rsqrt_rounding_twice(row)
    start = int(twice.nonzero()[0]) if twice.any() else 127
    return 128 - start  # 127 % chunk == chunk - 1 for a power of two up to 128


@dataclass(frozen=True)
class ScalarTail:
    """The elements eager computes on its scalar path: those whose position in their inner row,
    ``sum(index[d] * step for d, step in row)``, is at least ``start`` (``start == 0``: all)."""

    row: tuple[tuple[int, int], ...]  # (logical dim, element step within the row)
    start: int


def scalar_tail(shape: tuple[int, ...], strides: tuple[int, ...], chunk: int,
                threads: int | None = None) -> ScalarTail | None:
    """Where eager's CPU kernel takes its scalar path for an operand of this static layout (the
    out-of-place result follows the operand's layout): None when every element takes the vector
    path, or when the iteration is split between threads (a tail per thread: not modelled).

    TensorIterator drops size-1 dims, orders the rest by stride (innermost first), and merges
    neighbours whose strides chain; the innermost merged dim is the row. A row with a stride
    other than 1 is all scalar."""
    numel = math.prod(shape)
    if numel == 0:
        return None
    if numel > GRAIN_SIZE and (threads if threads is not None else torch.get_num_threads()) > 1:
        return None
    dims = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: (strides[d], -d))
    if not dims:
        return ScalarTail((), 0) if chunk > 1 else None
    row = [dims[0]]
    extent = shape[dims[0]]
    step = strides[dims[0]]
    for d in dims[1:]:
        if strides[d] != step * extent:
            break
        row.append(d)
        extent *= shape[d]
    if step != 1:
        return ScalarTail((), 0)
    start = extent // chunk * chunk
    if start == extent:
        return None
    return ScalarTail(tuple((d, strides[d]) for d in row), start)
