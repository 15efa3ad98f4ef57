"""Module state a function closes over, lifted to inputs.

``satfuse.optimize(loss, x, y)`` where ``loss`` calls a model it closes over: capture runs on
fake tensors, and the model's parameters and buffers are real tensors, so they must either
become constants of the plan (stale as soon as an optimizer updates them) or inputs. They
become inputs: :func:`closure_state` finds the ``nn.Module`` objects ``fn`` reaches directly
(closure cells, globals its code names, ``self`` of a bound method, ``fn`` itself) and the
tensors held in its closure cells; :meth:`ClosureState.call` binds each parameter/buffer to
an input with ``torch.func.functional_call`` (tied weights stay tied) and each closed-over
tensor by swapping its cell for the call. :meth:`ClosureState.tensors` reads them again on every call
(by attribute path, so an in-place update *and* a reassigned ``model.w = nn.Parameter(...)``
are both seen); a parameter whose shape, dtype or device changed fails the plan's guards.

Modules reached only through other objects (a helper function's closure, an attribute of
an argument) are not searched: their tensors are real tensors in the fake trace, which
capture refuses (``CaptureError``), so a plan never bakes state in silently.
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree


@dataclass
class ClosureState:
    """The lifted state: ``names`` (input names), and how to read and bind each tensor."""

    modules: list[tuple[str, torch.nn.Module]] = field(default_factory=list)  # (label, module)
    keys: list[tuple[int, str]] = field(default_factory=list)  # (module index, "sub.weight") per module tensor
    cells: list[tuple[str, Any]] = field(default_factory=list)  # (label, cell) per closed-over tensor

    def __bool__(self) -> bool:
        return bool(self.keys or self.cells)

    @property
    def names(self) -> list[str]:
        out = [f"{self.modules[i][0]}.{k}" for i, k in self.keys]
        return out + [label for label, _ in self.cells]

    def live(self) -> list[torch.Tensor]:
        """The current tensors as the module holds them (read by attribute path every time, so an
        in-place update *and* a reassigned ``model.w = nn.Parameter(...)`` are both seen)."""
        out = []
        for i, k in self.keys:
            obj: Any = self.modules[i][1]
            for part in k.split("."):
                obj = getattr(obj, part)
            out.append(obj)
        return out + [c.cell_contents for _, c in self.cells]

    def tensors(self) -> list[torch.Tensor]:
        """The current tensors, detached (plan inputs; storage is shared, so a write-back into a
        buffer reaches the module's own buffer)."""
        return [t.detach() for t in self.live()]

    def call(self, fn: Callable, args: tuple, values: list[Any], kwargs: dict[str, Any] | None = None) -> Any:
        """``fn(*args)`` with every module tensor and closed-over tensor replaced by the matching
        entry of ``values`` (``torch.func.functional_call`` on a holder of the modules)."""
        n = len(self.keys)
        mapping = {f"m{i}.{k}": v for (i, k), v in zip(self.keys, values[:n])}
        holder = _Holder([m for _, m in self.modules], fn)
        old = [c.cell_contents for _, c in self.cells]
        try:
            for (_, c), v in zip(self.cells, values[n:]):
                c.cell_contents = v
            return torch.func.functional_call(holder, mapping, args, kwargs or {}, tie_weights=True, strict=False)
        finally:
            for (_, c), v in zip(self.cells, old):
                c.cell_contents = v


class _Holder(torch.nn.Module):
    """The modules as children ``m0, m1, ...`` (not copied), calling ``fn`` as its forward."""

    def __init__(self, modules: list[torch.nn.Module], fn: Callable) -> None:
        super().__init__()
        for i, m in enumerate(modules):
            self.add_module(f"m{i}", m)
        object.__setattr__(self, "_fn", fn)  # not a child, even when fn is a module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)


def closure_state(fn: Callable) -> ClosureState:
    """The modules and tensors ``fn`` reaches directly (see the module docstring)."""
    st = ClosureState()
    seen_modules: set[int] = set()
    seen_tensors: set[int] = set()

    def add_module(label: str, m: torch.nn.Module) -> None:
        if id(m) in seen_modules:
            return
        seen_modules.add(id(m))
        idx = len(st.modules)
        st.modules.append((label, m))
        for k, t in [*m.named_parameters(remove_duplicate=True), *m.named_buffers(remove_duplicate=True)]:
            if id(t) in seen_tensors:  # shared with a module seen before: bound there
                continue
            seen_tensors.add(id(t))
            st.keys.append((idx, k))

    def visit(label: str, v: Any, cell: Any = None) -> None:
        if isinstance(v, torch.nn.Module):
            add_module(label, v)
        elif isinstance(v, (list, tuple)):
            for j, x in enumerate(v):
                if isinstance(x, torch.nn.Module):
                    add_module(f"{label}_{j}", x)
        elif isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, torch.nn.Module):
                    add_module(f"{label}_{k}", x)
        elif isinstance(v, torch.Tensor) and cell is not None and id(v) not in seen_tensors:
            seen_tensors.add(id(v))
            st.cells.append((label, cell))

    if isinstance(fn, torch.nn.Module):
        add_module("self", fn)
        return st
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, torch.nn.Module):
        add_module("self", owner)
    code = getattr(fn, "__code__", None)
    func = getattr(fn, "__func__", fn)
    if code is None:
        return st
    for name, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or ()):
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        visit(name, v, cell)
    try:
        cv = inspect.getclosurevars(func)
    except (TypeError, ValueError):
        return st
    for name, v in cv.globals.items():
        visit(name, v)
    return st


def lift_state(fn: Callable, n_args: int, state: ClosureState, dynamic: Any) -> tuple[Callable, Any]:
    """``fn`` as a function of its ``n_args`` arguments followed by the parameters, buffers and tensors
    it closes over (``state``): those become plan inputs, read again on each call, never constants.
    They keep static shapes when ``dynamic=True`` (guarded like any input). Returns the lifted function
    and the ``dynamic`` to capture it with."""
    import inspect

    def with_state(*args: Any, **kwargs: Any) -> Any:
        return state.call(fn, tuple(args[:n_args]), list(args[n_args:]), kwargs)

    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        params = list(inspect.signature(target).parameters.values())
        own = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:n_args]
    except (TypeError, ValueError):
        own = []
    own += [f"arg{i}" for i in range(len(own), n_args)]
    names = own + ["".join(c if c.isalnum() else "_" for c in nm) for nm in state.names]
    with_state.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(nm, inspect.Parameter.POSITIONAL_ONLY) for nm in names])
    with_state.__name__ = getattr(fn, "__name__", type(fn).__name__)
    if dynamic is True:
        dynamic = list(range(n_args))  # argument positions: the state keeps its static shapes
    return with_state, dynamic


#: argument types that are pytree leaves themselves (a plain tensor, a Python number)
FLAT_TYPES = frozenset({torch.Tensor, int, float, bool})
_LEAF = -1  # in an argument shape (``args_spec``): an argument that is a leaf


@functools.lru_cache(maxsize=1024)  # one immutable spec per argument shape: a bounded memo
def args_spec(shape: tuple) -> Any:
    """pytree's spec of ``(args, {})`` for arguments of this shape, made once per shape: each entry
    is ``_LEAF`` or ``(tuple | list, n)``, a container of ``n`` leaves (an optimizer step's lists)."""
    dummy = tuple(0 if s == _LEAF else s[0](range(s[1])) for s in shape)
    return pytree.tree_flatten((dummy, {}))[1]


def flat_args(args: tuple, kwargs: dict) -> tuple[list, Any]:
    """``pytree.tree_flatten((args, kwargs))``. The common calls, without keywords, whose arguments
    are leaves of ``FLAT_TYPES`` or lists and tuples of them, skip pytree's per-node dispatch (19 of
    a 33 us call of a two-tensor plan; half of an Adam step's host time over 40 tensors)."""
    if not kwargs:
        leaves: list = []
        shape = []
        for a in args:
            t = type(a)
            if t in FLAT_TYPES:
                leaves.append(a)
                shape.append(_LEAF)
            elif (t is list or t is tuple) and all(type(x) in FLAT_TYPES for x in a):
                leaves.extend(a)
                shape.append((t, len(a)))
            else:
                break
        else:
            return leaves, args_spec(tuple(shape))
    return pytree.tree_flatten((args, kwargs))


def needs_grad(*groups: Any) -> bool:
    """Would eager record autograd for a call reading these values (grad mode on and a tensor that
    requires grad)?"""
    return torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad
                                           for g in groups for x in g)



# ---------------------------------------------------------------------- hidden state

#: Python values a trace can specialize on (what Dynamo guards by type and value)
_SCALARS = (bool, int, float, str, type(None))


def same_scalar(a: Any, b: Any) -> bool:
    """Equal as a specialized Python scalar: same type, same value, same sign of zero, nan == nan
    (``2`` is not ``2.0``, ``-0.0`` is not ``0.0``)."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        if a != a:
            return b != b
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


@dataclass
class HiddenState:
    """Python scalars a traced function may have read besides its arguments, with their values
    at capture: attributes of the modules it reaches (``training``, ``p``, ``eps``, ``momentum``,
    ... of every submodule), its closure cells and the globals its code names, and the attributes
    of plain objects in those that its code names (``cfg.scale``). Tracing bakes them in, so the
    plan is only valid while each keeps its type and value: :meth:`changed` says which did not.

    Over-approximates Dynamo's guards (a module attribute forward never reads is guarded too):
    that can cost a recompile, never a wrong answer."""

    entries: list[tuple[str, Any, str, Any]] = field(default_factory=list)  # (label, holder, attr, value)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def changed(self) -> str | None:
        """None while every entry holds; else which one changed, old and new value. The hot path
        is one getattr and one type test per entry."""
        for label, holder, attr, want in self.entries:
            got = _read(holder, attr)
            if type(got) is not type(want) or not same_scalar(got, want):
                return f"{label} was {want!r} ({type(want).__name__}) when the plan was built, now {got!r} " \
                       f"({type(got).__name__})"
        return None


_MISSING = object()


def _read(holder: Any, attr: str) -> Any:
    if attr == "<cell>":
        try:
            return holder.cell_contents
        except ValueError:
            return _MISSING
    if isinstance(holder, dict):
        return holder.get(attr, _MISSING)
    return getattr(holder, attr, _MISSING)


def _code_names(code: Any) -> set[str]:
    """Names (globals, attributes) a code object and the functions defined in it use."""
    out = set(code.co_names)
    for c in code.co_consts:
        if inspect.iscode(c):
            out |= _code_names(c)
    return out


def hidden_state(fn: Callable) -> HiddenState:
    """The hidden state of ``fn`` (see :class:`HiddenState`), read now."""
    hs = HiddenState()
    seen: set[int] = set()

    def module(label: str, m: torch.nn.Module) -> None:
        for name, sub in m.named_modules(prefix=label, remove_duplicate=True):
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            for attr, v in vars(sub).items():
                if type(v) in _SCALARS and not attr.startswith("__"):
                    hs.entries.append((f"{name}.{attr}", sub, attr, v))

    def plain(label: str, obj: Any, names: set[str]) -> None:
        if id(obj) in seen or inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj):
            return
        seen.add(id(obj))
        d = getattr(obj, "__dict__", None)
        if not isinstance(d, dict):
            return
        for attr in sorted(names & set(d)):
            v = d[attr]
            if type(v) in _SCALARS:
                hs.entries.append((f"{label}.{attr}", obj, attr, v))

    def value(label: str, v: Any, holder: Any, attr: str, names: set[str]) -> None:
        if isinstance(v, torch.nn.Module):
            module(label, v)
        elif type(v) in _SCALARS:
            hs.entries.append((label, holder, attr, v))
        elif isinstance(v, (list, tuple, dict)):
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for k, x in items:
                if isinstance(x, torch.nn.Module):
                    module(f"{label}[{k!r}]", x)
        elif not isinstance(v, torch.Tensor):
            plain(label, v, names)

    if isinstance(fn, torch.nn.Module):
        module("self", fn)
        return hs
    owner = getattr(fn, "__self__", None)
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    names = _code_names(code) if code is not None else set()
    if isinstance(owner, torch.nn.Module):
        module("self", owner)
    elif owner is not None:
        plain("self", owner, names)
    if code is None:
        return hs
    for name, cell in zip(code.co_freevars, getattr(func, "__closure__", None) or ()):
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        value(name, v, cell, "<cell>", names)
    glob = getattr(func, "__globals__", {})
    for name in sorted(names & set(glob)):
        value(name, glob[name], glob, name, names)
    return hs


__all__ = ["ClosureState", "HiddenState", "closure_state", "hidden_state", "lift_state", "needs_grad", "same_scalar"]
