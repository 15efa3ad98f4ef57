"""torch.compile(backend="satfuse") on every corpus program equals eager, mutations included."""

import pytest
import torch

import satfuse  # noqa: F401 - registers the backend
from tests.corpus import CASES
from tests.test_optimize import _clone, _close


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_compiled_corpus_program_equals_eager(case):
    torch._dynamo.reset()
    compiled = torch.compile(case.fn, backend="satfuse", dynamic=case.dynamic or None, fullgraph=False)
    for _ in range(2):  # the second call runs the cached plan
        args = case.make_inputs()
        mine, ref = _clone(args), _clone(args)
        out = compiled(*mine)
        exp = case.fn(*ref)
        _close(out, exp, f"{case.name}: outputs")
        _close(mine, ref, f"{case.name}: inputs after the call")
