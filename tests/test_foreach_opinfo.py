"""PyTorch's foreach OpInfos (``foreach_*_op_db``: ``_foreach_add``, ``_foreach_addcdiv``,
``_foreach_pow``, ``_foreach_lerp``, ...), functional and in place, through ``satfuse.optimize``
against eager: values, dtypes, every input's final value, and eager's error where eager raises.

Code nobody here wrote for optimizer steps: it found a wrong dtype (``_foreach_pow`` of bool
tensors, where the foreach meta kernel says int64 and eager gives bool) and eager's CPU
``_foreach_mul_`` rounding a Python number to float16 / bfloat16 first. A sample counts as
"refused" only when its error matches a row of ``engine/unsupported.py``. The quick slice runs
here; ``python bench/foreach_report.py`` runs every sample in every dtype."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from satfuse.engine.unsupported import refused_as_listed

import satfuse

# the OpInfo database imports expecttest (the [test] extra; tests/test_opinfo.py fails without it):
# a lane without it (the nvFuser lane collects every module) skips this one
pytest.importorskip("expecttest", reason="torch.testing._internal (the OpInfo database) needs expecttest")
from torch.testing._internal.common_methods_invocations import (  # noqa: E402
    foreach_binary_op_db,
    foreach_other_op_db,
    foreach_pointwise_op_db,
    foreach_unary_op_db,
)

OPS = [*foreach_unary_op_db, *foreach_binary_op_db, *foreach_pointwise_op_db, *foreach_other_op_db]
VARIANTS = ("functional", "inplace")
#: the quick slice: the dtypes where eager's foreach kernels and the per-tensor ops parted ways
QUICK_DTYPES = (torch.bfloat16, torch.bool)


def _clone(x: Any) -> Any:
    return torch.utils._pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, x)


def _same(got: Any, want: Any) -> str:
    """'' where ``got`` is ``want`` (values, dtypes, shapes; nan where nan), else what differs."""
    g_leaves, w_leaves = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
    if len(g_leaves) != len(w_leaves):
        return f"{len(g_leaves)} values, eager {len(w_leaves)}"
    for g, w in zip(g_leaves, w_leaves):
        if not isinstance(w, torch.Tensor):
            if g != w and g is not w:
                return f"{g!r}, eager {w!r}"
            continue
        if not isinstance(g, torch.Tensor) or g.dtype != w.dtype or g.shape != w.shape:
            return f"{getattr(g, 'dtype', type(g))} {tuple(getattr(g, 'shape', ()))}, eager {w.dtype} {tuple(w.shape)}"
        try:
            torch.testing.assert_close(g, w, equal_nan=True, rtol=1e-5, atol=1e-6)
        except AssertionError as e:
            return " ".join(str(e).split())[:200]
    return ""


def run_sample(op: Any, variant: str, sample: Any) -> tuple[str, str]:
    """One sample of one foreach OpInfo: ("equal" | "refused" | "eager raises" | "fail", detail)."""
    fn = op.op if variant == "functional" else op.inplace_variant
    args, kwargs = (sample.input, *sample.args), dict(sample.kwargs)

    def program(*a: Any) -> Any:
        return fn(*a, **kwargs)

    want_in = _clone(args)
    try:
        want = program(*want_in)
        eager_error = None
    except Exception as e:  # noqa: BLE001 - compared with the plan's below
        eager_error = e
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            plan = satfuse.optimize(program, *_clone(args))
            got_in = _clone(args)
            got = plan(*got_in)
        except Exception as e:  # noqa: BLE001 - a refusal must be listed, or be eager's own error
            if eager_error is not None:
                return "eager raises", type(eager_error).__name__
            return ("refused", str(e)[:120]) if refused_as_listed(e) else ("fail", f"{type(e).__name__}: {e}"[:300])
    if eager_error is not None:
        return "fail", f"eager raises {type(eager_error).__name__}, the plan does not"
    diff = _same(got, want) or _same(got_in, want_in)
    return ("fail", diff) if diff else ("equal", "")


def samples(op: Any, dtype: torch.dtype, limit: int | None) -> list[Any]:
    try:
        return list(op.sample_inputs("cpu", dtype))[:limit]
    except Exception:  # noqa: BLE001 - the op has no samples in this dtype
        return []


def quick_samples(op: Any, dtype: torch.dtype, width: int = 3) -> list[Any]:
    """The first sample of each argument form (a number, a list of numbers, a tensor, a list of
    tensors...), its lists cut to ``width`` tensors: every form, at a tenth of the cost."""
    from torch.testing._internal.opinfo.core import SampleInput

    def cut(a: Any) -> Any:
        return a[:width] if isinstance(a, list) else a

    out, forms = [], set()
    for sample in samples(op, dtype, None):
        form = tuple(type(a).__name__ + (type(a[0]).__name__ if isinstance(a, list) and a else "")
                     for a in (*sample.args, *sample.kwargs.values()))
        if form not in forms:
            forms.add(form)
            out.append(SampleInput(cut(sample.input), args=tuple(cut(a) for a in sample.args),
                                   kwargs={k: cut(v) for k, v in sample.kwargs.items()}))
    return out


CASES = [(op, variant, dtype) for op in OPS for variant in VARIANTS for dtype in QUICK_DTYPES
         if (op.op if variant == "functional" else op.inplace_variant) is not None]


@pytest.mark.parametrize(("op", "variant", "dtype"), CASES,
                         ids=[f"{op.name}-{v}-{str(d).split('.')[1]}" for op, v, d in CASES])
def test_foreach_opinfo_every_argument_form(op, variant, dtype) -> None:
    for sample in quick_samples(op, dtype):
        status, detail = run_sample(op, variant, sample)
        assert status != "fail", f"{op.name} {variant} {dtype}: {detail}"
