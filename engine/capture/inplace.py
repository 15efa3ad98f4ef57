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
    packet, schema = getattr(func, "_overloadpacket", None), getattr(func, "_schema", None)
    if packet is None or schema is None:  # a higher-order operator
        return None
    name = packet.__name__
    written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if not name.endswith("_") or (name.startswith("_") and not name.startswith("_foreach_")) or written != ["self"]:
        return None
    cand = getattr(getattr(torch.ops.aten, name[:-1], None), func._overloadname, None)
    if cand is None or cand._schema.is_mutable or [a.name for a in cand._schema.arguments] != [
            a.name for a in func._schema.arguments]:
        return None
    return cand



def reordered_variant(func: Any) -> tuple[Any, list[str]] | None:
    """The out-of-place overload of an in-place op that writes ``self`` and takes the same arguments
    in another order, with that order's names (``polygamma_(self, n)``: ``polygamma(n, self)``),
    which functionalization cannot pair (torch raises for its alias annotations); else None."""
    packet, schema = getattr(func, "_overloadpacket", None), getattr(func, "_schema", None)
    if packet is None or schema is None or not packet.__name__.endswith("_") or packet.__name__.startswith("_"):
        return None
    written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    cand = getattr(getattr(torch.ops.aten, packet.__name__[:-1], None), func._overloadname, None)
    if written != ["self"] or cand is None or cand._schema.is_mutable:
        return None
    names, theirs = [a.name for a in cand._schema.arguments], [a.name for a in schema.arguments]
    return (cand, names) if names != theirs and sorted(names) == sorted(theirs) else None

#: ``node.meta["custom"][INPLACE_OF]``: the node computes the value an in-place op of the program
#: (this overload) wrote into its first operand; capture runs it as that op (``aten_map``)
INPLACE_OF = "satfuse_inplace_of"
