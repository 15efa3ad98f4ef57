"""The recorder's memo of fake results: an op's fake output made from its inputs' geometry alone.

FakeTensorMode caches its outputs too (``FakeTensorMode.cache``), but its key is built for every
op it may see (pytree over the arguments, a ``TensorMetadata`` per tensor, symbolic-shape state):
on a static capture it costs as much as the result's own construction, and the Python dispatch
into the mode as much again (issue 17: the fake layer was about 45 % of recording). A static
program repeats a handful of (op, geometry) pairs thousands of times (a block of a model, a
tensor's optimizer step), so the recorder asks this memo first.

The memo answers only where FakeTensorMode's own cache would (an aten op with one tensor result,
fresh or a view of its one tensor, or an in-place op writing and returning ``self``, on plain fake
tensors of the capture's mode), and ``_unsafe_view`` (a view in all but name, which the mode never
caches), from a key that holds at least what FakeTensorMode's does; it makes the result the way
FakeTensorMode makes a cache hit (an empty meta tensor of the recorded geometry, on the viewed
tensor's storage for a view, wrapped; ``self`` for an in-place op). An entry is kept only where the
result of the first call is such a tensor and a tensor made from the entry matches it (geometry,
storage, dispatch keys). Anything else goes to FakeTensorMode, as before.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode, in_kernel_invocation_manager

#: per op: how the memo may answer it (see :func:`_kind`)
_OPS: dict[Any, int] = {}
_SKIP, _FRESH, _VIEW, _INPLACE = 0, 1, 2, 3
#: in-place ops that may change their tensor's geometry or storage (the recorder then stops)
_RESHAPING = frozenset({"resize_", "resize_as_", "set_", "_resize_output_"})
#: why an entry is not kept (its key is remembered as None: the op goes to the fake mode)
_NO = None
_UNSAFE_VIEW = torch.ops.aten._unsafe_view.default
#: view ops FakeTensorMode treats specially, or whose result is not a plain view of the one input
_OTHER_VIEWS = frozenset({torch.ops.aten.as_strided.default, torch.ops.aten.detach.default,
                          torch.ops.aten.view_as_real.default, torch.ops.aten.view_as_complex.default})


def _kind(func: Any, mode: FakeTensorMode) -> int:
    """_FRESH: a functional, non-view aten op with one tensor result that FakeTensorMode caches (its
    ``_validate_cache_key`` bypasses data-dependent, dynamic-shape, in-place view and lifting ops)
    and that reaches the mode as it is (not CompositeImplicit: decomposed above it); _VIEW: such a
    view op of one tensor (its result a tensor on that tensor's storage, as a cache hit makes it),
    and ``_unsafe_view`` (matmul's last op: FakeTensorMode never caches it, and its fake kernel,
    ``view``'s, costs a dozen dispatches); _SKIP: any other."""
    hit = _OPS.get(func)
    if hit is None:
        hit = _OPS[func] = _kind_of(func, mode)
    return hit


def _kind_of(func: Any, mode: FakeTensorMode) -> int:
    schema = getattr(func, "_schema", None)
    if not isinstance(func, torch._ops.OpOverload) or func.namespace != "aten" or schema is None:
        return _SKIP
    tags = set(func.tags)
    if schema.is_mutable:
        return _INPLACE if _writes_self_only(func, schema, tags) else _SKIP
    if (func in mode.lift_fns or func in _OTHER_VIEWS
            or tags & {torch.Tag.data_dependent_output, torch.Tag.dynamic_output_shape, torch.Tag.inplace_view,
                       torch.Tag.nondeterministic_seeded}
            or len(schema.returns) != 1 or str(schema.returns[0].type) != "Tensor"
            or torch._C._dispatch_has_kernel_for_dispatch_key(func.name(),
                                                              torch._C.DispatchKey.CompositeImplicitAutograd)):
        return _SKIP
    if func is _UNSAFE_VIEW or func.is_view:
        return _VIEW
    return _FRESH if schema.returns[0].alias_info is None else _SKIP


def _writes_self_only(func: Any, schema: Any, tags: set) -> bool:
    """An in-place aten op that writes its first argument, ``self``, only and returns it (``mul_``,
    ``copy_``): FakeTensorMode's cache answers it with that argument; not one that may change the
    tensor's geometry."""
    written = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    ret = schema.returns
    return (len(written) == 1 and schema.arguments[0] is written[0] and written[0].name == "self"
            and len(ret) == 1 and str(ret[0].type) == "Tensor" and ret[0].alias_info is not None
            and ret[0].alias_info.is_write and func._overloadpacket.__name__ not in _RESHAPING
            and not tags & {torch.Tag.inplace_view, torch.Tag.data_dependent_output, torch.Tag.dynamic_output_shape,
                            torch.Tag.nondeterministic_seeded}
            and not torch._C._dispatch_has_kernel_for_dispatch_key(func.name(),
                                                                   torch._C.DispatchKey.CompositeImplicitAutograd))


class FakeMemo:
    """Fake results by (op, global state, arguments' geometry), for one capture's fake mode."""

    def __init__(self, mode: FakeTensorMode) -> None:
        self.mode = mode
        self.entries: dict[tuple, tuple | None] = {}

    def __call__(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """``func(*args, **kwargs)``, on the fake mode below the caller's."""
        kind = _kind(func, self.mode)
        if kind == _SKIP:
            return func(*args, **kwargs)
        key = self._key(func, args, kwargs)
        if key is None:
            return func(*args, **kwargs)
        try:
            entry = self.entries.get(key, False)
        except TypeError:  # an argument that is no key (unhashable)
            return func(*args, **kwargs)
        if entry is False:
            if kind == _INPLACE:
                return self._first_write(key, func, args, kwargs)
            out = func(*args, **kwargs)
            self.entries[key] = self._entry(kind, out, args, kwargs)
            return out
        if entry is _NO:
            return func(*args, **kwargs)
        if kind == _INPLACE:
            return args[0]
        return self._made(*entry, args[0] if kind == _VIEW else None)

    def _first_write(self, key: tuple, func: Any, args: tuple, kwargs: dict) -> Any:
        """An in-place op's first call: kept where it returned its tensor, whose geometry and
        storage it left alone (a fake write changes nothing else)."""
        target = args[0]
        before = _geometry(target)
        out = func(*args, **kwargs)
        self.entries[key] = () if out is target and _geometry(target) == before else _NO
        return out

    def _key(self, func: Any, args: tuple, kwargs: dict) -> tuple | None:
        """What FakeTensorMode's key holds (the op, default dtype and device, inference mode, each
        tensor's geometry and flags), or None where an argument is outside the memo (a symbol, a
        tensor of another mode, with a constant, or not strided)."""
        key: list[Any] = [func, torch.get_default_dtype(), torch._C._get_default_device(),
                          torch.is_inference_mode_enabled()]
        if not self._add(key, args):
            return None
        if kwargs and not self._add(key, tuple(kwargs.items())):
            return None
        return tuple(key)

    def _add(self, key: list, xs: Any) -> bool:
        key.append(len(xs))
        for x in xs:
            if type(x) is FakeTensor:
                if x.fake_mode is not self.mode or x.constant is not None or x.layout != torch.strided:
                    return False
                key.append((x.dtype, tuple(x.shape), x.stride(), x.storage_offset(), x.fake_device, x.requires_grad,
                            x.is_conj(), x.is_neg(), x.is_inference()))
            elif isinstance(x, (list, tuple)):
                key.append(type(x))
                if not self._add(key, x):
                    return False
            elif isinstance(x, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool)):
                return False
            else:
                key.append((type(x), x))
        return True

    def _entry(self, kind: int, out: Any, args: tuple, kwargs: dict) -> tuple | None:
        """The geometry of ``out`` where a tensor made from it is what the fake mode returned: a
        plain tensor with the same dispatch keys, owning all of a fresh storage (_FRESH), or on the
        storage of the view's one tensor, its first argument (_VIEW)."""
        if not (type(out) is FakeTensor and out.fake_mode is self.mode and out.constant is None and out._base is None
                and out.layout == torch.strided and not out.requires_grad and not out.is_conj() and not out.is_neg()):
            return _NO
        storage = out.untyped_storage()._cdata
        tensors = [x for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor)]
        shared = [x for x in tensors if x.untyped_storage()._cdata == storage]
        if kind == _VIEW and not (len(tensors) == 1 and shared and shared[0] is args[0]):
            return _NO
        if kind == _FRESH and (shared or out.storage_offset() != 0
                               or out.untyped_storage().nbytes() != storage_bytes(out.shape, out.stride(), out.element_size())):
            return _NO
        entry = (tuple(out.shape), out.stride(), out.storage_offset(), out.dtype, out.fake_device)
        made = self._made(*entry, args[0] if kind == _VIEW else None)
        if (torch._C._dispatch_key_set(made) != torch._C._dispatch_key_set(out) or made.stride() != out.stride()
                or made.storage_offset() != out.storage_offset() or made.is_inference() != out.is_inference()
                or made.untyped_storage().nbytes() != out.untyped_storage().nbytes()
                or (kind == _VIEW) != (made.untyped_storage()._cdata == storage)):
            return _NO
        return entry

    def _made(self, shape: tuple, stride: tuple, offset: int, dtype: torch.dtype, device: torch.device,
              base: FakeTensor | None) -> FakeTensor:
        return fake_of_geometry(self.mode, shape, stride, offset, dtype, device, base)


def fake_of_geometry(mode: FakeTensorMode, shape: tuple, stride: tuple, offset: int, dtype: torch.dtype,
                     device: torch.device, base: FakeTensor | None = None) -> FakeTensor:
    """A fake tensor of this geometry, as FakeTensorMode makes one from a cache entry: on
    ``base``'s storage where it is a view's (else a fresh storage of :func:`storage_bytes`)."""
    with in_kernel_invocation_manager(mode):
        empty = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
        if base is not None:
            empty.set_(base.untyped_storage(), offset, shape, stride)
    return FakeTensor(mode, empty, device)


def _geometry(t: Any) -> tuple:
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.untyped_storage()._cdata, t.dtype)


def storage_bytes(shape: tuple, stride: tuple, itemsize: int) -> int:
    """The storage bytes ``empty_strided`` allocates for this geometry."""
    if math.prod(shape) == 0:
        return 0
    return (1 + sum((n - 1) * s for n, s in zip(shape, stride))) * itemsize
