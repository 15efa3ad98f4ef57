"""Eager's own kernels while capture traces: torch's Python substitutes for them are taken out.

Under the python dispatcher (every capture runs it: symbolic extents, make_fx and AOTAutograd
need it), torch runs the Python kernels it registers with ``py_impl`` at the Autograd key in place
of the op, before autograd or any dispatch mode sees it: decompositions of upsampling,
soft/hardshrink, multi_margin_loss, multilabel_margin_loss_forward (ops with kernels of their own),
dropout and the RNNs, each also registered as the op's CompositeImplicit definition
(``upsample_*.vec``'s inlines the decomposition of the op eager's C++ definition calls). No
decomposition table sees them (satfuse's is ``trace.decomposition_table``, the vetted list), and
they are not eager's: torch 2.13's multilabel_margin_loss_forward also counts the margins of the
labels after a row's ``-1`` (``F.multilabel_margin_loss`` of ``[[0, 2, -1, 0]]``: 2.63 where eager
gives 1.49), which ``optimize``, ``jit`` and the backend all returned, as Dynamo's ``aot_eager``
does.

:func:`take_out` removes those Python kernels (the inverse of ``py_impl``: the kernel leaves
``py_kernels`` and the op's dispatch cache is cleared) and :func:`put_back` restores them;
:class:`~satfuse.engine.capture.functional.TracingLock` does both around every capture, so ops are
traced as eager dispatches them (its derivative formula, its kernel, its C++ definition: an op with
a kernel of its own is an opaque op of the plan unless satfuse's table decomposes it). Kept: the
Python definitions of composite ops registered at CompositeImplicitAutograd alone (matmul's,
stft's: torch keeps them equal to the C++ ones, and several C++ ones cannot run on fake tensors),
and the Python kernels of ops whose schema hides a write, which are the functional form
functionalization relies on (batch norm's running statistics). While a capture runs, other
threads' tracing sees eager's kernels too.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._C import DispatchKey

#: the keys of a Python kernel that replaces an op before autograd sees it (a decomposition, not
#: the op's definition): taken out there, and at CompositeImplicitAutograd where the same op has one
_AUTOGRAD_KEYS = (DispatchKey.Autograd, DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA)
#: ops whose kernel writes what its schema does not declare (batch norm's running statistics):
#: their Python kernel is the functional form (``_native_batch_norm_legit_functional``) that
#: functionalization needs, so it stays
_HIDDEN_WRITES = frozenset({"aten::native_batch_norm", "aten::cudnn_batch_norm"})
#: the substitutes found by the last scan, and what the scan saw (aten's packets, torch's decompositions)
_FOUND: list[Any] = [None, []]


def substitutes() -> list[tuple[Any, Any]]:
    """(op, key) of each Python kernel torch registers at an autograd key of an aten op (and the
    same op's CompositeImplicitAutograd one). A kernel is
    registered on an op Python has already looked up, so the scan reads the looked-up ops alone
    (~6 ms), and again only when more have been looked up or decompositions registered."""
    from torch._decomp import decomposition_table

    packets = vars(torch.ops.aten)
    seen = (len(packets), len(decomposition_table))
    if _FOUND[0] == seen:
        return _FOUND[1]
    out = []
    for pkt in list(packets.values()):
        if not isinstance(pkt, torch._ops.OpOverloadPacket):
            continue
        for op in list(vars(pkt).values()):
            if not isinstance(op, torch._ops.OpOverload) or not op.py_kernels or op._schema.name in _HIDDEN_WRITES:
                continue
            keys = [k for k in _AUTOGRAD_KEYS if k in op.py_kernels]
            if keys and DispatchKey.CompositeImplicitAutograd in op.py_kernels:
                keys.append(DispatchKey.CompositeImplicitAutograd)
            out += [(op, k) for k in keys]
    _FOUND[:] = [seen, out]
    return out


def take_out() -> list[tuple[Any, Any, Any]]:
    """Remove the :func:`substitutes` from the dispatcher; returns what :func:`put_back` restores."""
    taken = []
    for op, key in substitutes():
        taken.append((op, key, op.py_kernels.pop(key)))
        op._dispatch_cache.clear()
    return taken


def put_back(taken: list[tuple[Any, Any, Any]]) -> None:
    for op, key, fn in taken:
        op.py_kernels[key] = fn
        op._dispatch_cache.clear()
