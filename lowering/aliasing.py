"""Input aliasing: which tensor inputs share memory, as part of a plan's key.

A plan is traced on one aliasing pattern of its inputs: ``f(t, t)`` sees one tensor twice,
``f(base[:4], base[1:])`` two overlapping views, ``f(u, v)`` two independent tensors. What the
program computes depends on it (a write through one input is seen through the other), so the
pattern is recorded where the real inputs are known (``optimize``'s examples, ``jit``'s first
call, the fake inputs Dynamo hands the backend) and checked on every call; one function,
:func:`pattern`, computes it for all three entry points, on real and fake tensors alike.

The pattern is a tuple (empty in the common case: every input has its own memory):

- ``(i, j, "identical")``: inputs ``i`` and ``j`` are the same tensor object (``f(t, t)``);
- ``(i, j, "same")``: two objects viewing the same memory the same way;
- ``(i, j, "overlap", geometry)``: they overlap otherwise; ``geometry`` is both inputs' sizes,
  strides and the difference of their storage offsets, so a plan for ``x, x.t()`` never serves
  ``x, x[1:]``;
- ``(i, "self")``: input ``i`` is written in place and may overlap itself (``expand``,
  ``as_strided((3, 3), (1, 1))``): eager's result then depends on its loop order.

Overlap is decided conservatively from address intervals (``b[::2]`` and ``b[1::2]`` count as
overlapping): a false "overlap" costs a recompile or a GuardError, never a wrong answer.
:func:`runs_eagerly` says which patterns no plan may serve: a written input that shares memory
with another input, or overlaps itself. Capture traces values (functionalization), so a write
through one input is not seen through another: the entry points run such calls eagerly
(``jit``, the backend) or refuse them (``optimize``). Read-only programs get a plan for any
pattern.
The per-call check (:func:`guard_source`) is one set of storage addresses in the common case.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

Pattern = tuple


def _storage_key(x: torch.Tensor) -> int:
    if isinstance(x, torch._subclasses.FakeTensor) or x.device.type == "meta":
        return x.untyped_storage()._cdata
    return x.untyped_storage().data_ptr()


def _ints(xs: Any) -> tuple[int, ...] | None:
    try:
        return tuple(int(v) for v in xs)
    except Exception:  # noqa: BLE001 - unbacked symbolic geometry: not comparable
        return None


def _span(x: torch.Tensor) -> tuple[int, int] | None:
    """[first, last] element offsets ``x`` touches in its storage (None: symbolic)."""
    size, stride = _ints(x.shape), _ints(x.stride())
    try:
        off = int(x.storage_offset())
    except Exception:  # noqa: BLE001
        return None
    if size is None or stride is None:
        return None
    lo = hi = off
    for n, s in zip(size, stride):
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi


def overlaps_itself(x: torch.Tensor) -> bool:
    """May two elements of ``x`` share one memory location? False only when proven distinct:
    sorted by stride, each dim's stride exceeds the span of the smaller ones."""
    if x.is_contiguous() or x.numel() <= 1:
        return False
    size, stride = _ints(x.shape), _ints(x.stride())
    if size is None or stride is None:
        return True
    dims = sorted((abs(s), n) for n, s in zip(size, stride) if n > 1)
    reach = 0
    for s, n in dims:
        if s <= reach:
            return True
        reach += s * (n - 1)
    return False


def pattern(inputs: Sequence[Any], written: Sequence[int] = ()) -> Pattern:
    """The aliasing pattern of ``inputs`` (see the module docstring); ``written``: positions of
    the inputs the program writes in place."""
    out: list[tuple] = []
    tensors = [(i, x) for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.numel() > 0
               and x.layout == torch.strided and not x.is_nested]  # no plan takes the others (capture refuses them)
    by_storage: dict[tuple, list[tuple[int, torch.Tensor]]] = {}
    for i, x in tensors:
        by_storage.setdefault((x.device, _storage_key(x)), []).append((i, x))
    for group in by_storage.values():
        for a in range(len(group)):
            i, x = group[a]
            for j, y in group[a + 1:]:
                rel = _relation(x, y)
                if rel is not None:
                    out.append((i, j, *rel))
    for i in written:
        x = inputs[i] if i < len(inputs) else None
        if isinstance(x, torch.Tensor) and overlaps_itself(x):
            out.append((i, "self"))
    return tuple(sorted(out, key=repr))


def _relation(x: torch.Tensor, y: torch.Tensor) -> tuple | None:
    if x is y:
        return ("identical",)
    gx = (_ints(x.shape), _ints(x.stride()))
    gy = (_ints(y.shape), _ints(y.stride()))
    sx, sy = _span(x), _span(y)
    if sx is not None and sy is not None and (sx[1] < sy[0] or sy[1] < sx[0]):
        return None  # disjoint address ranges
    try:
        delta = int(y.storage_offset()) - int(x.storage_offset())
    except Exception:  # noqa: BLE001
        delta = None
    if delta == 0 and gx == gy and x.dtype == y.dtype:
        return ("same",)
    return ("overlap", (gx, gy, delta, str(x.dtype), str(y.dtype)))


def shares_memory(inputs: Sequence[Any]) -> bool:
    """Do any two tensor inputs share memory, or does one overlap itself (all taken as written)?
    Decided before capture, whose trace says which inputs are written."""
    return bool(pattern(inputs, [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]))


def written_positions(trace: Any) -> list[int]:
    """Positions of the trace's inputs that it writes back."""
    written = {id(b) for b, _ in trace.writebacks}
    return [i for i, v in enumerate(trace.inputs) if id(v) in written]


def of_trace(trace: Any, values: Sequence[Any]) -> Pattern:
    """The pattern of ``values`` as inputs of ``trace`` (its written inputs known)."""
    return pattern(values, written_positions(trace))


def runs_eagerly(pat: Pattern, written: Sequence[int]) -> str | None:
    """Why no plan serves calls with this pattern (None: a plan can): a written input that
    overlaps itself or another input (a plan computes on values, eager writes memory)."""
    w = set(written)
    for entry in pat:
        if entry[1] == "self":
            return f"input {entry[0]} is written in place and overlaps itself"
        i, j = entry[0], entry[1]
        if i in w or j in w:
            return f"inputs {i} and {j} share memory and one of them is written in place"
    return None


def describe(pat: Pattern, names: Sequence[str]) -> str:
    """The pattern in the inputs' names, for error messages."""
    if not pat:
        return "no two inputs share memory"
    parts = []
    for e in pat:
        if e[1] == "self":
            parts.append(f"{names[e[0]]} overlaps itself")
        elif e[2] == "identical":
            parts.append(f"{names[e[0]]} and {names[e[1]]} are the same tensor")
        elif e[2] == "same":
            parts.append(f"{names[e[0]]} and {names[e[1]]} view the same memory")
        else:
            parts.append(f"{names[e[0]]} and {names[e[1]]} overlap")
    return ", ".join(parts)


def guard_source(tensor_inputs: Sequence[tuple[int, str]], written: Sequence[int], expected: Pattern) -> str:
    """A Python condition on the prologue's locals (``inputs`` and the inputs' names) that holds
    iff the call's pattern is ``expected`` (bound as ``_expected_aliasing``; :func:`pattern` as
    ``_alias_pattern``). Fast path for the common pattern (no sharing): distinct storage
    addresses and written inputs contiguous; anything else computes the full pattern."""
    full = f"_alias_pattern(inputs, {tuple(written)!r}) == _expected_aliasing"
    if expected:
        return full
    if not written:  # traced on independent inputs and writing none: any sharing computes the same values
        return "True"
    fast = []
    if len(tensor_inputs) > 1:
        keys = ", ".join(f"{n}.untyped_storage().data_ptr()" for _, n in tensor_inputs)
        fast.append(f"len({{{keys}}}) == {len(tensor_inputs)}")
    pos = dict(tensor_inputs)
    fast += [f"{pos[w]}.is_contiguous()" for w in written if w in pos]
    if not fast:
        return "True"
    return f"({' and '.join(fast)}) or {full}"


__all__ = ["Pattern", "describe", "guard_source", "of_trace", "overlaps_itself", "pattern", "runs_eagerly",
           "shares_memory", "written_positions"]
