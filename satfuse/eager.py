"""Eager runs that are transactional: where no plan serves a call (``jit``) or a graph (the
``torch.compile`` backend), eager PyTorch is the answer, but eager may write an input and then
raise. :func:`run_eagerly` first runs the function on copies of the arguments that share memory
exactly as the originals do, with the RNG state restored afterwards: if eager raises, its own
exception is raised with every caller tensor untouched; otherwise the function runs for real.
The cost (a second eager run) is paid only on these fallback paths."""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.utils._pytree as pytree


def run_on_copies(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """``fn`` on copies of the arguments that share memory as the originals do (eager's exception
    propagates; no caller tensor is touched)."""
    storages: dict[Any, Any] = {}

    def shadow(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or type(x) not in (torch.Tensor, torch.nn.Parameter) or x.is_conj() \
                or x.is_neg() or x.layout != torch.strided:
            return x.detach().clone() if isinstance(x, torch.Tensor) else x
        st = x.untyped_storage()
        key = st.data_ptr() if st.nbytes() else ("empty", id(x))
        copy = storages.get(key)
        if copy is None:
            copy = storages[key] = st.clone()
        y = torch.empty(0, dtype=x.dtype, device=x.device)
        return y.set_(copy, x.storage_offset(), x.size(), x.stride())

    with torch.no_grad():
        args, kwargs = pytree.tree_map(shadow, (args, kwargs))
    return fn(*args, **kwargs)


def check_eagerly(fn: Callable, args: tuple, kwargs: dict) -> None:
    """Raise what eager raises for this call, touching nothing (RNG state included)."""
    cuda = sorted({x.device.index or 0 for x in pytree.tree_leaves((args, kwargs))
                   if isinstance(x, torch.Tensor) and x.is_cuda})
    with torch.random.fork_rng(devices=cuda):
        run_on_copies(fn, args, kwargs)


def run_eagerly(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, transactionally (see module doc)."""
    check_eagerly(fn, args, kwargs)
    return fn(*args, **kwargs)


def eager_graph(gm: Callable) -> Callable:
    """A Dynamo graph that runs eagerly, transactionally (its ``forward``: fx's ``__call__``
    prints the traceback of every exception to stderr before re-raising it)."""
    forward = getattr(gm, "forward", gm)

    def run(*args: Any) -> Any:
        return run_eagerly(forward, *args)

    run.__doc__ = "satfuse: Dynamo's graph, run eagerly (no plan serves it)"
    return run
