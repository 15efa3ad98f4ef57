"""Differential checks against eager shared by test_semantics and test_jit_dynamic: a program
run through satfuse must give eager's values, dtypes and shapes, leave every input as eager
leaves it, and raise eager's exception type where eager raises."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch
import torch.utils._pytree as pytree
from satfuse.engine.vocab import non_overlapping

import satfuse


def _clone(args: tuple) -> list:
    """Copies that keep each tensor's strides (``clone()`` makes a strided, non-dense tensor
    contiguous, and eager's answer can depend on the layout); an overlapping one is cloned."""
    return [_copy(a) if isinstance(a, torch.Tensor) else a for a in args]


def _copy(a: torch.Tensor) -> torch.Tensor:
    c = a.clone()
    if c.stride() == a.stride() or not non_overlapping(tuple(a.shape), tuple(a.stride())):
        return c
    return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=a.device).copy_(a)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape
                and torch.equal(torch.view_as_real(a) if a.is_complex() else a,
                                torch.view_as_real(b) if b.is_complex() else b)
                or (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape
                    and a.is_floating_point() and bool(((a == b) | (a.isnan() & b.isnan())).all())))
    return a == b


def _sharing(outs: list, ins: list) -> set:
    """Which outputs share storage with which inputs and with each other (nonempty tensors)."""
    def ptr(t: Any) -> int | None:
        return t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) and t.numel() else None

    pairs = {(k, "input", j) for k, o in enumerate(outs) for j, x in enumerate(ins)
             if ptr(o) is not None and ptr(o) == ptr(x)}
    return pairs | {(k, "output", m) for k, o in enumerate(outs) for m in range(k)
                    if ptr(o) is not None and ptr(o) == ptr(outs[m])}


def assert_like_eager(fn: Callable, run: Callable, *args: Any, exact: bool = True) -> None:
    """``run(*args)`` (satfuse) against ``fn(*args)`` (eager) on separate copies of ``args``:
    values, dtypes, shapes, which outputs share storage with an input or another output, every
    input's final value; ``exact=False`` allows reduction-order rounding (torch's default
    tolerances)."""
    ea, sa = _clone(args), _clone(args)
    try:
        want = fn(*ea)
    except Exception as e:  # noqa: BLE001 - eager's error is the reference
        with pytest.raises(type(e)):
            run(*sa)
        for a, b in zip(ea, sa):
            assert _same(a, b), f"an input differs after the error: eager {a} satfuse {b}"
        return
    got = run(*sa)
    wl, gl = pytree.tree_leaves(want), pytree.tree_leaves(got)
    assert len(wl) == len(gl)
    for w, g in zip(wl, gl):
        if exact:
            assert _same(w, g), f"eager {w!r} satfuse {g!r}"
        else:
            torch.testing.assert_close(g, w, equal_nan=True)
    for a, b in zip(ea, sa):
        assert _same(a, b), f"input after the call: eager {a} satfuse {b}"
    assert _sharing(gl, sa) == _sharing(wl, ea), f"storage shared: satfuse {_sharing(gl, sa)}, eager {_sharing(wl, ea)}"


def check_optimize(fn: Callable, *args: Any) -> None:
    plan = satfuse.optimize(fn, *_clone(args))
    assert_like_eager(fn, plan, *args)


def check_jit(fn: Callable, *argsets: tuple, exact: bool = True) -> Any:
    j = satfuse.jit(fn, dynamic=True)
    for args in argsets:
        assert_like_eager(fn, j, *args, exact=exact)
    return j


def check_compile(fn: Callable, *args: Any) -> None:
    torch._dynamo.reset()
    assert_like_eager(fn, torch.compile(fn, backend="satfuse", fullgraph=True), *args)


def views_of_one(b: torch.Tensor) -> tuple:
    """Three outputs that are views of one intermediate in eager."""
    t = b * 2
    return t, t[1:], t.t()


def assert_views_of_one(got: tuple, want: tuple) -> None:
    base = got[0].untyped_storage().data_ptr()
    for g, w in zip(got, want):
        assert g.untyped_storage().data_ptr() == base and g.stride() == w.stride() and torch.equal(g, w)
