"""``_foreach_*`` ops as the per-tensor ops they stand for.

Optimizers (``torch.optim.Adam(foreach=True)``, the default on CUDA) step every parameter with
one ``_foreach_add`` / ``_foreach_addcmul`` / ... call over lists of tensors. torch has no
decomposition for them (Inductor lowers them itself), so without one each list op reaches
satfuse as an opaque fallback. Element ``i`` of a foreach result is the base op applied to
element ``i`` of every list argument (a tensor list or a scalar list) and to every other
argument as is; tracing that gives plain pointwise ops the rules and the fuser see. The
in-place forms need nothing here: functionalization turns them into these functional ones.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

aten = torch.ops.aten

#: foreach ops whose base op of the same name means something else per tensor (``_foreach_norm``
#: takes ``dtype`` as ``linalg_vector_norm`` does, not ``aten.norm``), or that have no base op
_NOT_PER_TENSOR = frozenset({"norm", "powsum"})


def _per_tensor(base: Any) -> Callable:
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

        try:
            return [base(*(pick(a, i) for a in args), **{k: pick(v, i) for k, v in {**extra, **kwargs}.items()})
                    for i in range(n)]
        except (RuntimeError, TypeError):
            # no base overload takes this form (``_foreach_maximum.Scalar``), or eager's own error:
            # the foreach op itself is traced (an opaque call, exact either way)
            return NotImplemented

    return decompose


def foreach_decompositions() -> dict:
    """OpOverload -> decomposition, for every functional ``_foreach_*`` overload (not ``out=``)."""
    names = {s.name.split("::", 1)[1] for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::_foreach_")}
    table: dict = {}
    for name in sorted(names):
        base_name = name[len("_foreach_"):]
        if name.endswith("_") or base_name in _NOT_PER_TENSOR or not hasattr(aten, base_name):
            continue
        packet, base = getattr(aten, name), getattr(aten, base_name)
        for overload in packet.overloads():
            if "out" not in overload.split("_"):
                table[getattr(packet, overload)] = _per_tensor(base)
    return table
