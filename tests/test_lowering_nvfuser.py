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
from satfuse.engine.capture.trace import TracingError
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
    """Captured on meta tensors, as for a GPU: CPU captures keep some ops as eager's own kernels
    (layer_norm), which the nvFuser target decomposes. Autograd does not run on meta tensors
    (bench/repros/capture-autograd-on-meta.py): those programs are captured on the CPU."""
    fn, make_args, dynamic = PROGRAMS[name]
    try:
        c = capture(fn, *[a.to("meta") if isinstance(a, torch.Tensor) else a for a in make_args(0)], dynamic=dynamic)
    except TracingError:
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


_DTYPE_CASES = {
    "int*float": lambda fd, i, h, x: fd.ops.mul(i, 2.5),
    "half*half": lambda fd, i, h, x: fd.ops.mul(h, h),
    "abs(half)": lambda fd, i, h, x: fd.ops.abs(h),
    "int/int": lambda fd, i, h, x: fd.ops.div(i, 2),
    "float+float": lambda fd, i, h, x: fd.ops.add(x, 1.5),
    "where(half)": lambda fd, i, h, x: fd.ops.where(fd.ops.gt(h, 0.0), h, h),
    "sum(int)": lambda fd, i, h, x: fd.ops.sum(i, dims=[0], keepdim=False),
    "sum(half)": lambda fd, i, h, x: fd.ops.sum(h, dims=[0], keepdim=False),
    "int*typed": lambda fd, i, h, x: fd.ops.mul(i, fd.define_scalar(2.5, dtype=fd_dtype("Float"))),
}


def fd_dtype(name):
    import nvfuser_direct

    return getattr(nvfuser_direct.DataType, name)


@pytest.mark.nvfuser
@pytest.mark.parametrize("case", sorted(_DTYPE_CASES))
def test_reference_result_dtypes_match_nvfuser(case):
    """frontend_ref's promotion claims, checked against the real frontend's result dtypes."""
    import nvfuser_direct as nvf
    from satfuse.lowering import frontend_ref as ref

    def build(fe):
        with fe.FusionDefinition() as fd:
            i = fd.define_tensor(shape=[-1], contiguity=[True], dtype=fe.DataType.Int)
            h = fd.define_tensor(shape=[-1], contiguity=[True], dtype=fe.DataType.Half)
            x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=fe.DataType.Float)
            global fd_dtype
            old = fd_dtype
            fd_dtype = lambda name: getattr(fe.DataType, name)  # noqa: E731
            try:
                out = _DTYPE_CASES[case](fd, i, h, x)
            finally:
                fd_dtype = old
            fd.add_output(out)
        return fd, out

    _, real_out = build(nvf)
    fd, _ = build(ref)
    (got,) = fd.execute([torch.tensor([1, 2]), torch.ones(2, dtype=torch.half), torch.ones(2)])
    names = {v: k.name for k, v in ref.TORCH_DTYPE.items()}
    assert names[got.dtype] == str(real_out.dtype()).split(".")[-1]


@pytest.mark.nvfuser
@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
                                   torch.float64])
def test_pad_value_in_the_tensors_dtype_class(dtype):
    """nvFuser takes a Python bool pad value as another dtype class than a Bool tensor's and refuses
    the definition (an H100 OpInfo run): the value is a typed scalar."""
    import torch.nn.functional as F

    x = torch.ones(1, 3, 3, dtype=dtype)
    c = capture(lambda x: F.pad(x, (2, 2)), x)
    build_all(lower(c.trace, hints=c.symbol_hints, executor="reference"))
