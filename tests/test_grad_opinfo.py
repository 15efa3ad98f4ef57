"""Gradients through ``torch.compile(backend="satfuse")`` on PyTorch's OpInfo samples (float64,
``requires_grad=True``): every output and every input's gradient against eager, for the same
output weights. AOTAutograd's backward graphs hold ops the forward corpus never shows
(``convolution_backward`` with left-out results, ``embedding_bag``'s kernels, effect tokens of
``torch.linalg``'s error checks). The quick slice runs here: the ops the full run
(``python bench/grad_report.py``, 540 ops) found wrong or failing, and a few common ones."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("expecttest", reason="torch.testing._internal (the OpInfo database) needs expecttest")
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

from bench import grad_report  # noqa: E402
from bench.warnings_seen import Seen  # noqa: E402

OPS = ["nn.functional.embedding_bag", "nn.functional.conv2d", "linalg.inv", "linalg.cholesky",
       "nn.functional.linear_cross_entropy.chunked", "nn.functional.layer_norm", "nn.functional.max_pool2d",
       "nn.functional.cross_entropy", "softmax", "index_put", "scatter_add", "cumsum"]
SAMPLES = 3
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # the samples' own (options ignored, anomaly mode)


def _op(name: str):
    for o in op_db:
        full = o.name + (f".{o.variant_test_name}" if o.variant_test_name else "")
        if full == name or (o.name == name and not o.variant_test_name):
            return o
    raise LookupError(name)


#: under dynamic=True too: AOTAutograd's forward graph returns the sizes and strides the backward
#: reads (as_strided_copy's: one of them a number the plan once "cloned")
DYNAMIC_OPS = ["as_strided_copy", "nn.functional.embedding_bag", "nn.functional.conv2d", "var", "slice_scatter",
               "fft.irfft"]  # irfft's backward: an extent once spelled by a symbol only its forward binds


@pytest.mark.parametrize("name,dynamic", [(n, False) for n in OPS] + [(n, True) for n in DYNAMIC_OPS])
def test_gradients_match_eager(name, dynamic):
    op = _op(name)
    seen = 0
    with Seen("no plan for") as no_plan:  # every graph gets a plan (none runs eagerly)
        for i, sample in enumerate(op.sample_inputs("cpu", torch.float64, requires_grad=True)):
            if i >= SAMPLES:
                break
            status, detail = grad_report.check(op, sample, dynamic=dynamic)
            assert status in ("ok", "skip"), f"{name} sample {i}: {status}: {detail}"
            seen += status == "ok"
    assert seen, f"{name}: no sample compared"
    assert not no_plan.messages, no_plan.messages


def test_an_analysis_that_explodes_stops_within_the_budget():
    """Shape analysis over ``native_group_norm``'s dynamic backward (extents ``(s0//2)`` and
    ``s1*(s0//2)``) once grew 900 -> 4,700 -> 78,000 e-nodes in three iterations and then past
    24 GB inside one unchecked chunk of ten (the grad report was OOM-killed). The analysis runs an
    iteration at a time and stops where one iteration multiplies the e-graph
    (``session.ANALYSIS_GROWTH``); the call gives eager's values and gradients, from a plan: the
    helper terms a stopped analysis left unresolved (``bcast``) are deleted, and a class holding
    only such a term is no choice for extraction (it once was, and decoding raised IndexError)."""
    op = _op("native_group_norm")
    second = list(zip(range(2), op.sample_inputs("cpu", torch.float64, requires_grad=True)))[1][1]
    with Seen("no plan for") as no_plan:
        assert grad_report.check(op, second, dynamic=True) == ("ok", "")
    assert not no_plan.messages, no_plan.messages


def test_complex_gradients_through_a_returned_conj_view():
    """``masked.var`` of a complex tensor: its forward returns ``_conj(sub)`` beside ``sub`` for
    the backward; the plan once wrote both into one buffer (grad max diff 0.17; found by
    ``python bench/grad_report.py --dtype complex128``)."""
    op = _op("masked.var")
    sample = next(iter(op.sample_inputs("cpu", torch.complex128, requires_grad=True)))
    assert grad_report.check(op, sample, dynamic=False) == ("ok", "")
