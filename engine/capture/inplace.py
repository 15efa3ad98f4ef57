"""In-place ops and the values they write: an in-place overload's functional variant, and the
mark capture puts on the node that computes an in-place op's value (so that an op running as
eager's kernel runs as the in-place kernel eager ran: ``aten_map``, ``vocab.written``)."""

from __future__ import annotations

import functools
from typing import Any

import torch


@functools.cache
def functional_variant(func: Any) -> Any:
    """The out-of-place overload of an in-place op whose one written argument is ``self``
    (``mul_.Tensor`` -> ``mul.Tensor``, ``_foreach_add_.Scalar`` -> ``_foreach_add.Scalar``), or None."""
    cand = _out_of_place(func)
    return cand if cand is not None and _names(cand) == _names(func) else None


@functools.cache
def reordered_variant(func: Any) -> tuple[Any, list[str]] | None:
    """That overload where it takes the same arguments in another order, with that order's names
    (``polygamma_(self, n)``: ``polygamma(n, self)``), which functionalization cannot pair (torch
    raises for its alias annotations); else None."""
    cand = _out_of_place(func)
    if cand is None:
        return None
    names = _names(cand)
    return (cand, names) if names != _names(func) and sorted(names) == sorted(_names(func)) else None


def _out_of_place(func: Any) -> Any:
    """The non-mutating overload named as an in-place op writing ``self`` alone, whatever its arguments."""
    packet, schema = getattr(func, "_overloadpacket", None), getattr(func, "_schema", None)
    if packet is None or schema is None:  # a higher-order operator
        return None
    name = packet.__name__
    written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if not name.endswith("_") or (name.startswith("_") and not name.startswith("_foreach_")) or written != ["self"]:
        return None
    cand = getattr(getattr(torch.ops.aten, name[:-1], None), func._overloadname, None)
    return None if cand is None or cand._schema.is_mutable else cand


def _names(func: Any) -> list[str]:
    return [a.name for a in func._schema.arguments]


#: ``node.meta["custom"][INPLACE_OF]``: the node computes the value an in-place op of the program
#: (this overload) wrote into its first operand; capture runs it as that op (``aten_map``)
INPLACE_OF = "satfuse_inplace_of"
