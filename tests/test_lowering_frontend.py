"""The reference frontend (``frontend_ref``): the nvfuser_direct semantics the emitter
relies on, on torch."""

from __future__ import annotations

import pytest
import torch
from satfuse.lowering.frontend_ref import DataType, FrontendError, FusionDefinition, _fits


def test_promotion_follows_nvfuser():
    with FusionDefinition() as fd:
        i = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        h = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half)
        fd.add_output(fd.ops.mul(i, 2.5))  # a Python float is a Double constant
        fd.add_output(fd.ops.mul(h, h))  # Half arithmetic computes and returns Float
        fd.add_output(fd.ops.abs(h))  # abs keeps Half
        fd.add_output(fd.ops.div(i, 2))  # integer division truncates
        fd.add_output(fd.ops.mul(i, fd.define_scalar(2.5, dtype=DataType.Float)))
    a, b, c, d, e = fd.execute([torch.tensor([1, -3]), torch.ones(2, dtype=torch.half)])
    assert a.dtype == torch.float64 and b.dtype == torch.float32 and c.dtype == torch.half
    assert d.tolist() == [0, -1]
    assert e.tolist() == [2.5, -7.5]


def test_a_product_over_every_dim_is_eagers_one_reduction():
    # row by row, the row holding two 1e30 overflows to inf before the zero in another row is
    # reached (0 * inf: nan); eager's one reduction over all elements answers 0 (jit fuzz 10093 #1775)
    x = torch.randn(5, 5)
    x[1, 1], x[3, 1], x[3, 3] = -0.0, 1e30, 1e30
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[5, 5], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.prod(t, dims=[0, 1], keepdim=False))
        fd.add_output(fd.ops.prod(t, dims=[1, 0], keepdim=True))
        fd.add_output(fd.ops.prod(t, dims=[1], keepdim=False))
    full, kept, rows = fd.execute([x])
    assert torch.equal(full, x.prod()) and torch.equal(kept, x.prod().reshape(1, 1))
    assert torch.equal(rows, x.prod(1))


def test_alias_output_writes_the_input_and_is_hidden():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[3], contiguity=[True], dtype=DataType.Float)
        y = fd.ops.add(x, 1.0)
        z = fd.ops.mul(y, 2.0)
        fd.add_output(z)
        fd.add_output(y, alias_input=x)
    buf = torch.zeros(3)
    ptr = buf.data_ptr()
    (out,) = fd.execute([buf])
    assert buf.tolist() == [1.0, 1.0, 1.0] and buf.data_ptr() == ptr
    assert out.tolist() == [2.0, 2.0, 2.0]


def test_visible_alias_returns_the_buffer():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[2], contiguity=[True], dtype=DataType.Float)
        y = fd.ops.neg(x)
        fd.add_output(y)
        fd.add_output(y, alias_input=x)
    buf = torch.ones(2)
    (out,) = fd.execute([buf])
    assert out is buf and buf.tolist() == [-1.0, -1.0]


def test_what_the_real_frontend_rejects():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[3], contiguity=[True], dtype=DataType.Float)
        y = fd.ops.exp(x)
        with pytest.raises(FrontendError, match="alias source can only be a fusion input"):
            fd.add_output(y, alias_input=y)
        with pytest.raises(FrontendError, match="Non-TensorView outputs"):
            fd.add_output(fd.ops.size(x, 0))
    with pytest.raises(NotImplementedError, match="Fusion is empty"):
        fd.execute([torch.zeros(3)])
    with pytest.raises(FrontendError, match="contiguity must be None exactly for broadcast"):
        FusionDefinition().define_tensor(shape=[1, 3], contiguity=[True, True])
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)
        fd.add_output(fd.ops.squeeze(x, dims=[0]))
    with pytest.raises(FrontendError, match="non-broadcasting"):
        fd.execute([torch.zeros(3, 1)])


def test_inputs_are_checked_against_definitions():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1, 4], contiguity=[True, True], dtype=DataType.Float)
        fd.add_output(fd.ops.exp(x))
    fd.execute([torch.zeros(7, 4)])
    with pytest.raises(FrontendError, match="dim 1 defined as 4, got 5"):
        fd.execute([torch.zeros(7, 5)])
    with pytest.raises(FrontendError, match="defined as Float"):
        fd.execute([torch.zeros(7, 4, dtype=torch.float64)])
    with pytest.raises(FrontendError, match="rank 2"):
        fd.execute([torch.zeros(4)])


def test_symbolic_scalars_sizes_and_shape_ops():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)
        n = fd.define_scalar(dtype=DataType.Int)
        m = fd.ops.add(fd.ops.size(x, 0), n)
        b = fd.ops.broadcast_in_dim(x, shape=[m, -1], broadcast_dims=[1])
        io = fd.ops.iota(m, 0, 1, dtype=DataType.Int)
        fd.add_output(b)
        fd.add_output(io)
        fd.add_output(fd.ops.slice(x, start_indices=[n], end_indices=[fd.ops.size(x, 0)]))
    b, io, s = fd.execute([torch.arange(3.0), 2])
    assert b.shape == (5, 3) and io.tolist() == [0, 1, 2, 3, 4] and s.tolist() == [2.0]


def test_a_dying_operand_takes_the_result_only_at_the_results_shape():
    """An elementwise op may write into an operand read last there, where the result has that
    operand's shape; an operand that broadcasts (fewer dims, or a 1 where the result has more)
    cannot hold the result."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[3, 4], contiguity=[True, True], dtype=DataType.Float)
        row = fd.define_tensor(shape=[1, 4], contiguity=[None, True], dtype=DataType.Float)
        col = fd.define_tensor(shape=[3, 1], contiguity=[True, None], dtype=DataType.Float)
        v = fd.define_tensor(shape=[4], contiguity=[True], dtype=DataType.Float)
        full = fd.ops.add(fd.ops.exp(x), v)  # exp(x) dies here at the result's shape
        wide = fd.ops.add(fd.ops.exp(v), x)  # exp(v) is [4]: the result is [3, 4]
        grid = fd.ops.add(fd.ops.exp(row), col)  # exp(row) is [1, 4]: the result is [3, 4]
        fd.add_output(full)
        fd.add_output(wide)
        fd.add_output(grid)
    xs = [torch.randn(3, 4), torch.randn(1, 4), torch.randn(3, 1), torch.randn(4)]
    got = fd.execute(xs)
    x, row, col, v = xs
    want = [x.exp() + v, v.exp() + x, row.exp() + col]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w)
    # the decision itself: torch's out= would resize a too-small buffer and still compute the
    # right values, so the test asks the function execute asks
    a, r, c, w = torch.empty(3, 4), torch.empty(1, 4), torch.empty(3, 1), torch.empty(4)
    assert _fits(a, [a, w]) and _fits(a, [a, r]) and _fits(a, [c, a])
    assert not _fits(w, [w, a]) and not _fits(r, [r, c]) and not _fits(c, [c, r])
    assert not _fits(w, [w, torch.empty(5)])  # shapes that do not broadcast: no buffer takes it
