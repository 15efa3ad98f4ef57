"""``_foreach_*`` ops as the per-tensor ops they stand for.

Optimizers (``torch.optim.Adam(foreach=True)``, the default on CUDA) step every parameter with
one ``_foreach_add`` / ``_foreach_addcmul`` / ... call over lists of tensors. torch has no
decomposition for them (Inductor lowers them itself), so without one each list op reaches
satfuse as an opaque fallback. Element ``i`` of a foreach result is the base op applied to
element ``i`` of every list argument (a tensor list or a scalar list) and to every other
argument as is; tracing that gives plain pointwise ops the rules and the fuser see.

Capture applies them above functionalization (``functional.EagerRewrites``), in-place forms
included, so that each per-tensor op gets eager's own checks and dtype: an in-place foreach op is
its base op's in-place form position by position, which is what eager's CPU kernel runs. Where
eager's kernel differs from that, it is said here (:func:`as_eager_runs_it`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

aten = torch.ops.aten

#: foreach ops whose base op of the same name means something else per tensor (``_foreach_norm``
#: takes ``dtype`` as ``linalg_vector_norm`` does, not ``aten.norm``), or that have no base op
_NOT_PER_TENSOR = frozenset({"norm", "powsum"})


def _per_tensor(base: Any, in_place: bool = False) -> Callable:
    """The foreach op as ``base`` position by position. In place, once a position has written, a
    later position's error is the program's (eager's CPU loop raises it there too): only the
    first position may decline, before anything is written."""
    # the foreach schema passes positionally what the base op takes keyword-only
    # (``_foreach_addcmul.Scalar(self, tensor1, tensor2, value)`` vs ``addcmul(..., *, value)``)
    schemas = [getattr(base, o)._schema for o in base.overloads()]
    n_pos = max(sum(not a.kwarg_only for a in sc.arguments) for sc in schemas)
    kw_only = next(([a.name for a in sc.arguments if a.kwarg_only] for sc in schemas
                    if sum(not a.kwarg_only for a in sc.arguments) == n_pos), [])

    def decompose(*args: Any, **kwargs: Any) -> list:
        n = next(len(a) for a in args if isinstance(a, (list, tuple)))
        extra = dict(zip(kw_only, args[n_pos:]))
        if len(extra) < len(args) - n_pos:
            return NotImplemented
        args = args[:n_pos]

        def pick(a: Any, i: int) -> Any:
            return a[i] if isinstance(a, (list, tuple)) else a

        out = []
        for i in range(n):
            try:
                out.append(base(*(pick(a, i) for a in args), **{k: pick(v, i) for k, v in {**extra, **kwargs}.items()}))
            except (RuntimeError, TypeError) as e:
                if (in_place and i) or type(e).__module__.startswith("satfuse."):
                    # satfuse's own refusal of this position's write (a write through gapped unfold
                    # windows: jit fuzz 10048 #162) stands; it is not a form eager lacks
                    raise
                # no base overload takes this form (``_foreach_maximum.Scalar``), or eager's own error:
                # the foreach op itself is traced (an opaque call, exact either way)
                return NotImplemented
        return None if in_place else out  # an in-place foreach op returns nothing

    return decompose


def foreach_decompositions() -> dict:
    """OpOverload -> decomposition, for every functional ``_foreach_*`` overload (not ``out=``)."""
    return {op: fn for op, fn in _per_tensor_table().items() if not op._overloadpacket.__name__.endswith("_")}


@functools.cache
def _per_tensor_table() -> dict:
    """Every functional and in-place ``_foreach_*`` overload (not ``out=``) -> its per-tensor form."""
    names = {s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::_foreach_")}
    table: dict = {}
    for name in sorted(names):
        inplace = name.endswith("_")
        base_name = name[len("_foreach_"):]
        if base_name.removesuffix("_") in _NOT_PER_TENSOR or not hasattr(aten, base_name):
            continue
        packet, base = getattr(aten, name), getattr(aten, base_name)
        for overload in packet.overloads():
            if "out" not in overload.split("_"):
                table[getattr(packet, overload)] = _per_tensor(base, in_place=inplace)
    return table


def per_tensor(func: Any) -> Callable | None:
    """The per-tensor form of a ``_foreach_*`` overload (functional or in place), or None."""
    return _per_tensor_table().get(func)


#: eager's CPU ``_foreach_mul_`` by Python numbers (one, or one per tensor) on float16 / bfloat16
#: tensors multiplies by each number rounded to the tensor's dtype first, where ``mul_``,
#: ``_foreach_mul`` and CUDA's kernel multiply by the number itself (measured on every foreach
#: OpInfo sample: the only in-place foreach op whose values differ from its functional form's)
_ROUNDS_SCALARS = frozenset({aten._foreach_mul_.Scalar, aten._foreach_mul_.ScalarList})
_LOW_PRECISION = frozenset({torch.float16, torch.bfloat16})


def as_eager_runs_it(func: Any, args: tuple) -> tuple[Any, tuple]:
    """``(func, args)`` of a foreach call as eager's kernel computes it, where that is not the
    per-tensor op on the arguments given (see ``_ROUNDS_SCALARS``)."""
    if func not in _ROUNDS_SCALARS or len(args) != 2:
        return func, args
    tensors, scalars = args
    if not isinstance(scalars, (list, tuple)):
        scalars = [scalars] * len(tensors)
    if not any(isinstance(t, torch.Tensor) and t.dtype in _LOW_PRECISION and t.device.type == "cpu" for t in tensors):
        return func, args
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():  # a real one-element tensor does the rounding, under capture's modes
        rounded = [float(torch.tensor(s, dtype=t.dtype)) if (
            t.dtype in _LOW_PRECISION and t.device.type == "cpu" and type(s) in (int, float)) else s
                   for t, s in zip(tensors, scalars)]
    return aten._foreach_mul_.ScalarList, (tensors, rounded)
