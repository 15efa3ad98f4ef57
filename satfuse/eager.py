"""Eager runs that are transactional: where no plan serves a call (``jit``) or a graph (the
``torch.compile`` backend), eager PyTorch is the answer, but eager may write an input and then
raise. :func:`run_eagerly` first runs the function on copies of the arguments that share memory
exactly as the originals do, with the RNG state restored afterwards: if eager raises, its own
exception is raised with every caller tensor untouched; otherwise the function runs for real.
The cost (a second eager run) is paid only on these fallback paths."""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree


def run_on_copies(fn: Callable, args: tuple, kwargs: dict, state: Sequence[tuple[Any, str]] = ()) -> Any:
    """``fn`` on copies of the arguments that share memory as the originals do (eager's exception
    propagates; no caller tensor is touched). ``state``: (owner, attribute) pairs of tensors ``fn``
    reads and may write without taking them as arguments (a Dynamo graph's ``get_attr`` tensors:
    an optimizer's state); they are swapped for copies during the run, under one lock."""
    storages: dict[Any, Any] = {}
    copies: dict[int, Any] = {}  # one copy per tensor object: f(a, a) may change a's metadata through b

    def shadow(x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        if id(x) not in copies:
            copies[id(x)] = _shadow(x)
        return copies[id(x)]

    def _shadow(x: torch.Tensor) -> torch.Tensor:
        if (type(x) not in (torch.Tensor, torch.nn.Parameter) or x.is_nested or x.is_conj() or x.is_neg()
                or x.layout != torch.strided):
            return x.detach().clone()
        st = x.untyped_storage()
        key = st.data_ptr() if st.nbytes() else ("empty", id(x))
        copy = storages.get(key)
        if copy is None:
            copy = storages[key] = st.clone()
        y = torch.empty(0, dtype=x.dtype, device=x.device)
        return y.set_(copy, x.storage_offset(), x.size(), x.stride())

    with torch.no_grad():
        args, kwargs = pytree.tree_map(shadow, (args, kwargs))
    if not state:
        return fn(*args, **kwargs)
    with _SWAP:
        saved = [(owner, name, getattr(owner, name)) for owner, name in state]
        try:
            with torch.no_grad():
                copies = [shadow(value) for _, _, value in saved]
            for (owner, name, _), c in zip(saved, copies):
                _put(owner, name, c)
            return fn(*args, **kwargs)
        finally:
            for owner, name, value in saved:
                _put(owner, name, value)


_SWAP = threading.Lock()


def _put(owner: Any, name: str, value: Any) -> None:
    """``owner.name = value`` as is: a module's parameter or buffer slot takes a plain tensor (a
    ``setattr`` would insist on a Parameter), any other attribute is set directly."""
    if isinstance(owner, torch.nn.Module):
        for slot in (owner._parameters, owner._buffers):
            if name in slot:
                slot[name] = value
                return
        owner.__dict__[name] = value
    else:
        object.__setattr__(owner, name, value)


def graph_state(gm: Any) -> list[tuple[Any, str]]:
    """(owner, attribute) of every tensor a graph module's ``get_attr`` nodes read."""
    out = []
    graph = getattr(gm, "graph", None)
    for target in sorted({n.target for n in graph.nodes if n.op == "get_attr"} if graph is not None else ()):
        *path, name = target.split(".")
        owner = gm
        for part in path:
            owner = getattr(owner, part)
        if isinstance(getattr(owner, name, None), torch.Tensor):
            out.append((owner, name))
    return out


def check_eagerly(fn: Callable, args: tuple, kwargs: dict, state: Sequence[tuple[Any, str]] = ()) -> None:
    """Raise what eager raises for this call, touching nothing (RNG state included)."""
    cuda = sorted({x.device.index or 0 for x in pytree.tree_leaves((args, kwargs))
                   if isinstance(x, torch.Tensor) and x.is_cuda})
    with torch.random.fork_rng(devices=cuda):
        run_on_copies(fn, args, kwargs, state)


def run_eagerly(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, transactionally (see module doc)."""
    check_eagerly(fn, args, kwargs)
    return fn(*args, **kwargs)


def eager_graph(gm: Callable) -> Callable:
    """A Dynamo graph that runs eagerly, transactionally (its ``forward``: fx's ``__call__``
    prints the traceback of every exception to stderr before re-raising it)."""
    forward = getattr(gm, "forward", gm)
    state = graph_state(gm)  # an optimizer step reads and writes its state through get_attr

    def run(*args: Any) -> Any:
        check_eagerly(forward, args, {}, state)
        return forward(*args)

    run.__doc__ = "satfuse: Dynamo's graph, run eagerly (no plan serves it)"
    return run
