"""Eager's memory layout of views of written tensors, and the program's decisions that read it.

In eager a write never changes a tensor's strides. Functionalization holds a written value in a
layout of its own (what the functional op's kernel returns: contiguous for ``scatter`` of a
transposed tensor, for ``sub`` of a tensor with gaps), and a view taken after the write gets its
strides from that value. Returned views are rebuilt at eager's geometry afterwards
(``functional._eager_outputs``), but a decision the program makes *while* it runs can read the
wrong layout: ``t.contiguous()`` returns ``t`` itself where eager copies (a later write to ``t``
then shows through the "copy"), ``t.reshape(...)`` views where eager copies, ``t.stride()`` and
``t.is_contiguous()`` answer differently.

:class:`Diverged` records, for each view whose strides differ from eager's, a fake tensor with
eager's geometry (the same view op replayed on a fresh tensor of the operand's eager geometry).
:class:`LayoutDecisions` (a torch-function mode: these calls never reach dispatch as such) makes
a copy-or-view decision on such a view follow eager's where eager copies, and refuses the rest
of the decisions whose answer differs between the two layouts; where they agree the program
runs on.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode


class LayoutDivergenceError(RuntimeError):
    """A layout decision of the program reads a view whose eager layout functionalization lost."""


def _fresh(like: torch.Tensor) -> torch.Tensor:
    """A new tensor of ``like``'s sizes, strides and dtype (outside every mode but the fake one)."""
    return torch.empty_strided(like.shape, like.stride(), dtype=like.dtype, device=like.device)


@contextlib.contextmanager
def _outside_functionalization():
    """No dispatch mode but the fake one: ops make plain fake tensors, traced nowhere."""
    from torch._guards import detect_fake_mode
    from torch.utils._python_dispatch import _disable_current_modes

    fake = detect_fake_mode()
    with _disable_current_modes(), torch._C.DisableTorchFunction(), \
            (fake if fake is not None else contextlib.nullcontext()):
        yield


def _same_strides(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Strides provably equal wherever the extent exceeds 1. The comparisons are bookkeeping, not
    the program's: outside make_fx's tracing (its symbolic-int dispatch would record them, and fails
    on a replayed tensor's strides, which it never saw: ``4*s27**2 is not tracked``)."""
    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    with disable_proxy_modes_tracing():
        return a.dim() == b.dim() and all(statically_known_true(n < 2) or statically_known_true(x == y)
                                          for n, x, y in zip(a.shape, a.stride(), b.stride()))


class Diverged:
    """Views whose functional strides are not eager's, by ``id``, with eager's geometry."""

    def __init__(self) -> None:
        self.eager: dict[int, tuple[torch.Tensor, torch.Tensor | None]] = {}  # id -> (view, eager's or None)

    def geometry(self, t: torch.Tensor) -> torch.Tensor | None:
        """``t``'s eager geometry where it differs (None: unknown), or ``t`` itself."""
        hit = self.eager.get(id(t))
        return t if hit is None else hit[1]

    def replay(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        """After a view op of a written tensor, or any op that read a tensor recorded here, made
        ``out``: record where its layout differs from eager's (a pointwise op's result follows its
        operands' strides: ``fmod`` of a diverged transposed view is column-major in eager). The
        op is replayed on fresh tensors of its operands' eager geometry; unknown where an
        operand's is unknown."""
        leaves, spec = pytree.tree_flatten((args, kwargs))
        geos = [self.geometry(x) if isinstance(x, torch.Tensor) else x for x in leaves]
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        wants: list[Any] = [None] * len(outs)
        if not any(isinstance(x, torch.Tensor) and g is None for x, g in zip(leaves, geos)):
            try:
                with _outside_functionalization():
                    a, k = pytree.tree_unflatten([_fresh(g) if isinstance(g, torch.Tensor) else g for g in geos], spec)
                    want = func(*a, **k)
                wants = list(want) if isinstance(want, (tuple, list)) else [want]
            except Exception:  # noqa: BLE001 - no replay: eager's layout is unknown
                wants = [None] * len(outs)
        if len(wants) != len(outs):
            wants = [None] * len(outs)
        for o, w in zip(outs, wants):
            if isinstance(o, torch.Tensor) and (not isinstance(w, torch.Tensor) or not _same_strides(o, w)):
                self.eager[id(o)] = (o, w if isinstance(w, torch.Tensor) else None)


def _decision(method: str, t: torch.Tensor, args: tuple, kwargs: dict) -> Any:
    """What ``t.method(*args)`` decides from ``t``'s layout: copy or view (as a bool: copies), the
    queried value (``stride``, ``is_contiguous``), or for ``view`` the error it raises (None: none)."""
    with _outside_functionalization():
        x = _fresh(t)
        if method in ("stride", "is_contiguous"):
            return getattr(x, method)(*args, **kwargs)
        if method == "view":
            try:
                torch.Tensor.view(x, *args, **kwargs)
            except (RuntimeError, ValueError) as e:  # the fake kernel's ValueError is eager's RuntimeError
                return str(e) if isinstance(e, RuntimeError) else _VIEW_ERROR
            return None
        r = getattr(torch.Tensor, method)(x, *args, **kwargs)
        return r.untyped_storage()._cdata != x.untyped_storage()._cdata


#: eager's message where a view cannot take the tensor's strides
_VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one dimension spans "
               "across two contiguous subspaces). Use .reshape(...) instead.")

#: the Tensor methods (and torch functions of the same meaning) whose result depends on the layout
_LAYOUT: dict[Callable, str] = {
    torch.Tensor.contiguous: "contiguous", torch.Tensor.reshape: "reshape", torch.reshape: "reshape",
    torch.Tensor.reshape_as: "reshape_as", torch.Tensor.flatten: "flatten", torch.flatten: "flatten",
    torch.Tensor.ravel: "ravel", torch.ravel: "ravel", torch.Tensor.stride: "stride",
    torch.Tensor.is_contiguous: "is_contiguous", torch.Tensor.view: "view",
}


class LayoutDecisions(TorchFunctionMode):
    """A layout decision on a view in :class:`Diverged` whose answer differs between
    functionalization's layout and eager's: where eager copies (``contiguous``, ``reshape``,
    ``flatten``) and the written value's layout would view, the program copies, as eager does;
    any other difference (eager views where this would copy, ``stride()``, ``is_contiguous()``)
    is refused."""

    def __init__(self, diverged: Diverged, written: Callable[[torch.Tensor], bool]) -> None:
        super().__init__()
        self.diverged = diverged
        self.written = written  # whether the program wrote the tensor's storage

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        method = _LAYOUT.get(func)
        if (method == "view" and args and isinstance(args[0], torch.Tensor) and len(args) > 1
                and not isinstance(args[1], torch.dtype) and "dtype" not in kwargs and self.written(args[0])):
            # a view of a written tensor: functionalization views the written value, whose layout can
            # take a shape eager's cannot (a strided input written by fmod_, then view(-1)): eager raises
            t, rest = args[0], args[1:]
            eager = self.diverged.geometry(t)
            try:
                theirs = _decision("view", eager, rest, kwargs) if eager is not None else None
            except Exception:  # noqa: BLE001 - no replay: the view runs as it is
                theirs = None
            if theirs is not None:
                raise RuntimeError(theirs)
        elif method is not None and method != "view" and args and isinstance(args[0], torch.Tensor) and \
                id(args[0]) in self.diverged.eager:
            t, rest = args[0], args[1:]
            eager = self.diverged.geometry(t)
            try:
                mine, theirs = _decision(method, t, rest, kwargs), _decision(method, eager, rest, kwargs)
            except Exception:  # noqa: BLE001 - a decision that cannot be replayed is not known to agree
                mine, theirs = None, object()
            if mine != theirs:
                if theirs is True and mine is False:  # eager copies where the written value's layout would view
                    mf = kwargs.get("memory_format", rest[0] if method == "contiguous" and rest else None)
                    copy = torch.Tensor.clone(t, memory_format=mf or torch.contiguous_format)
                    return copy if method == "contiguous" else func(copy, *rest, **kwargs)
                raise LayoutDivergenceError(
                    f"{method}() of a view of a tensor the program wrote: torch's functionalization gives the view "
                    "another memory layout than eager's (it views the written value, which it holds in a layout of "
                    f"its own), and {method}()'s answer depends on it: clone() the tensor after the write, or take "
                    "the view before it")
        return func(*args, **kwargs)
