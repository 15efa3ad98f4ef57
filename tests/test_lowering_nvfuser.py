"""Emitted FusionDefinitions against the real nvfuser_direct frontend.

``nvfuser``: every segment's definition is built with the real frontend (no execution:
this runs on a CPU machine too). ``cuda``: plans run on real nvFuser and match eager.
Both skip, with the reason, where nvfuser_direct is not importable (the nvFuser lane,
``.ci/nvfuser-lane``, runs them under Python 3.12).
"""

from __future__ import annotations

import pytest
import torch
from satfuse.engine import capture
from satfuse.lowering import lower, nvfuser_probe
from test_lowering_programs import PROGRAMS

pytestmark = pytest.mark.skipif(not nvfuser_probe.probe().available, reason=str(nvfuser_probe.probe()))


def build_all(plan):
    import nvfuser_direct as nvf

    built = {}
    for seg in plan.segments:
        fd = plan.build_definition(seg.name, nvf)
        n_in = len(plan.emitted[seg.name].inputs)
        assert len(fd.fusion.inputs()) == n_in, (seg.name, str(fd))
        text = str(fd)
        assert text.count("fd.add_output(") >= len(seg.outputs) + len(seg.aliases)
        for b, _ in seg.aliases:  # aliased outputs print as add_output(tvO, tvI)
            assert any(line.count(",") == 1 for line in text.splitlines() if "fd.add_output(" in line), text
        built[seg.name] = fd
    return built


@pytest.mark.nvfuser
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_definitions_build(name):
    fn, make_args, dynamic = PROGRAMS[name]
    c = capture(fn, *make_args(0), dynamic=dynamic)
    plan = lower(c.trace, hints=c.symbol_hints, executor="reference")
    build_all(plan)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_runs_on_nvfuser(name):
    fn, make_args, dynamic = PROGRAMS[name]

    def cuda(args):
        return [a.cuda() if isinstance(a, torch.Tensor) else a for a in args]

    c = capture(fn, *cuda(make_args(0)), dynamic=dynamic)
    plan = lower(c.trace, hints=c.symbol_hints, executor="nvfuser")
    for seed in (0, 1):
        args = cuda(make_args(seed))
        mine = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        ref = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        out = plan(*mine)
        exp = fn(*ref)
        exp = list(exp) if isinstance(exp, (tuple, list)) else [exp]
        for o, e in zip(out, exp):
            torch.testing.assert_close(o, e, atol=1e-4, rtol=1e-4)
        for x, y in zip(mine, ref):
            if isinstance(x, torch.Tensor):
                torch.testing.assert_close(x, y, atol=1e-4, rtol=1e-4)


def _add_then_sum(x, y):
    x.add_(y)
    return x * 2, (x * 3).sum(0)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_auto_executor_non_contiguous_buffer():
    base = torch.randn(6, 4, device="cuda")
    y = torch.randn(4, 6, device="cuda")
    c = capture(_add_then_sum, base.t().contiguous(), y)
    plan = lower(c.trace, hints=c.symbol_hints)  # auto: CUDA inputs and nvfuser_direct -> real nvFuser
    # the sum reads the new value inside the segment: the write is a copy; x * 2 still fuses
    assert plan.executor == "nvfuser" and plan.stats()["copy_writebacks"] == 1
    mine, ref = base.clone().t(), base.clone().t()  # non-contiguous buffers written in place
    out = plan(mine, y)
    exp = _add_then_sum(ref, y)
    for o, e in zip(out, exp):
        torch.testing.assert_close(o, e)
    torch.testing.assert_close(mine, ref)


def _add_inplace(x, y):
    x.add_(y)
    return x * 2


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_alias_into_non_contiguous_buffer():
    base = torch.randn(6, 4, device="cuda")
    y = torch.randn(4, 6, device="cuda")
    c = capture(_add_inplace, base.t().contiguous(), y)
    plan = lower(c.trace, executor="nvfuser")
    assert plan.stats()["aliased_writebacks"] == 1
    mine, ref = base.clone().t(), base.clone().t()
    out = plan(mine, y)
    torch.testing.assert_close(out[0], _add_inplace(ref, y))
    torch.testing.assert_close(mine, ref)
