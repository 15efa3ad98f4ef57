"""Lowering end to end on the reference executor: capture, lower, run; outputs and input
mutations must equal eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from satfuse.engine import capture
from satfuse.lowering import GuardError, lower

from tests.corpus import ce_fwd_bwd, split3
from tests.corpus import ce_hand as ce
from tests.corpus import kv_cache as kv  # seed programs: one definition, the corpus's


def clone_args(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def check(fn, *args, dynamic=False, atol=1e-5, rtol=1e-5, plan=None, calls=None):
    """Lower ``fn`` (captured on ``args``) and compare outputs and mutated inputs with eager
    on ``args`` and on every extra argument list in ``calls``."""
    if plan is None:
        c = capture(fn, *clone_args(args), dynamic=dynamic)
        plan = lower(c.trace, hints=c.symbol_hints, executor="reference")
    for a in [args] + list(calls or []):
        mine, ref = clone_args(a), clone_args(a)
        out = plan(*mine)
        exp = fn(*ref)
        exp = list(exp) if isinstance(exp, (tuple, list)) else [exp]
        assert len(out) == len(exp)
        for o, e in zip(out, exp):
            if isinstance(e, torch.Tensor):
                assert o.dtype == e.dtype and o.shape == e.shape, (o.dtype, o.shape, e.dtype, e.shape)
                torch.testing.assert_close(o, e, atol=atol, rtol=rtol)
            else:
                assert o == e
        for x, y in zip(mine, ref):
            if isinstance(x, torch.Tensor):
                torch.testing.assert_close(x, y, atol=atol, rtol=rtol)
    return plan


# ---------------------------------------------------------------- programs




def inplace_add(x, y):
    x.add_(y)
    return x * 2


def layer_norm(x):
    return F.layer_norm(x, (16,))


def kv_args(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 4, 2, 16, generator=g), torch.randn(1, 4, 3, 16, generator=g),
            torch.randn(1, 4, 3, 16, generator=g), torch.rand(1, 1, 2, 3, generator=g) > 0.3,
            torch.tensor([1, 0]), torch.randn(1, 4, 2, 16, generator=g)]


def test_ce_forward():
    p = check(ce, torch.randn(8, 16), torch.randint(0, 16, (8,)),
              calls=[[torch.randn(8, 16), torch.randint(0, 16, (8,))]])
    st = p.stats()
    assert st["fallback_kinds"] == {"gather": 1}
    assert st["segments"] == 2


def test_ce_forward_backward():
    check(ce_fwd_bwd, torch.randn(8, 16), torch.randint(0, 16, (8,)),
          calls=[[torch.randn(8, 16), torch.randint(0, 16, (8,))]])


def test_layer_norm():
    check(layer_norm, torch.randn(4, 16), calls=[[torch.randn(4, 16) * 3 + 1]])  # CPU: eager's own kernel
    c = capture(layer_norm, torch.randn(4, 16, device="meta"))  # the nvFuser target decomposes it: one segment
    p = lower(c.trace, hints=c.symbol_hints)
    assert p.stats()["segments"] == 1 and p.stats()["fallback_ops"] == 0


def test_inplace_add_aliases():
    p = check(inplace_add, torch.randn(4), torch.randn(4))
    assert p.stats()["aliased_writebacks"] == 1 and p.stats()["copy_writebacks"] == 0
    assert "alias_input=x" in str(p)


def test_kv_cache_seed000():
    args = kv_args()
    p = check(kv, *args, calls=[kv_args(1), kv_args(2)])
    # q and k are left exactly as eager leaves them
    mine, ref = clone_args(args), clone_args(args)
    p(*mine)
    kv(*ref)
    assert torch.equal(mine[0], ref[0]) and torch.equal(mine[1], ref[1])
    st = p.stats()
    # functionalized: q's and k's new values come from index_copy; attention (an opaque op that may
    # raise) reads them, and no caller buffer is written before it, so both are copied back after it
    assert st["copy_writebacks"] == 2 and st["in_place_writebacks"] == 0


def test_split_dynamic_seed001():
    a = torch.randn(2, 3, 10)
    c = capture(split3, a, 3, 4, dynamic=True)
    p = lower(c.trace, hints=c.symbol_hints, executor="reference")
    check(split3, a, 3, 4, plan=p, calls=[[a, 0, 0], [a, 10, 0], [a, 2, 5], [torch.randn(4, 2, 7), 1, 6]])
    # capture assumed every dynamic dim >= 2 (torch's 0/1 specialization): a size-1 dim is refused, not guessed
    with pytest.raises(GuardError, match=r"a\.shape\[1\] >= 2"):
        p(torch.randn(4, 1, 7), 1, 6)
    x = a.clone()
    with pytest.raises(GuardError, match=r"a\.shape\[2\] - dim0 - dim1 >= 0 \(a\.shape=\(2, 3, 10\), dim0=8, dim1=4\)"):
        p(x, 8, 4)
    assert torch.equal(x, a)
    with pytest.raises(GuardError, match="dim0 >= 0"):
        p(x, -1, 4)


def test_guard_messages():
    c = capture(ce, torch.randn(8, 16), torch.randint(0, 16, (8,)))
    p = lower(c.trace, executor="reference")
    with pytest.raises(GuardError, match=r"x\.dtype == torch\.float32"):
        p(torch.randn(8, 16, dtype=torch.float64), torch.randint(0, 16, (8,)))
    with pytest.raises(GuardError, match=r"x\.dim\(\) == 2"):
        p(torch.randn(8, 16, 1), torch.randint(0, 16, (8,)))
    with pytest.raises(GuardError, match=r"x\.shape\[1\] == 16 \(x\.shape=\(8, 15\)\)"):
        p(torch.randn(8, 15), torch.randint(0, 16, (8,)))
    with pytest.raises(GuardError, match="y is a tensor"):
        p(torch.randn(8, 16), 3)
    with pytest.raises(GuardError, match="expected 2 inputs"):
        p(torch.randn(8, 16))


def split_with_sizes_out(a, dim0, dim1):
    dim2 = a.size(2) - dim0 - dim1
    x = torch.split(a, (dim0, dim1, dim2), dim=2)
    return x[0] * 2, dim2, x[2].size(2) + dim2, 7


def test_symbolic_and_constant_outputs():
    c = capture(split_with_sizes_out, torch.randn(2, 3, 10), 3, 4, dynamic=True)
    p = lower(c.trace, hints=c.symbol_hints, executor="reference")
    a = torch.randn(2, 3, 12)
    out = p(a, 2, 5)
    assert out[1:] == [5, 10, 7] and all(type(v) is int for v in out[1:])
    torch.testing.assert_close(out[0], a[:, :, :2] * 2)


class _BrokenNvFuser:
    """A frontend that builds like nvFuser and fails at execute, as the real one did on an H100
    for some 0-d and integer fusions (INTERNAL ASSERT)."""

    from satfuse.lowering.frontend_ref import DataType
    from satfuse.lowering.frontend_ref import FusionDefinition as _Ref

    class FusionDefinition(_Ref):
        def execute(self, inputs, device=None):
            raise RuntimeError("INTERNAL ASSERT FAILED at fusion_kernel_runtime.cpp:476")


def test_a_segment_nvfuser_fails_on_at_its_first_call_runs_on_torch(monkeypatch, caplog):
    from satfuse.lowering import plan as plan_mod

    monkeypatch.setattr(plan_mod, "_frontend", lambda executor: (_BrokenNvFuser, True))

    def f(a, b):
        return (a * 2 + b).relu().sum(0)

    a, b = torch.randn(4, 5), torch.randn(4, 5)
    c = capture(f, a, b)
    p = lower(c.trace, hints=c.symbol_hints, executor="nvfuser")
    with caplog.at_level("WARNING", logger="satfuse.lowering"):
        for _ in range(2):  # the second call goes straight to torch ops
            torch.testing.assert_close(p(a, b)[0], f(a, b))
    assert [r.message for r in caplog.records if "nvFuser failed" in r.message][0].startswith("seg0: nvFuser failed")

    def g(x, y):  # writes its input: its first call per layout writes a copy, so it falls back too
        x.add_(y)
        return x * 2

    c = capture(g, a.clone(), b)
    p = lower(c.trace, hints=c.symbol_hints, executor="nvfuser")
    x, want_x = a.clone(), a.clone()
    torch.testing.assert_close(p(x, b)[0], g(want_x, b))
    torch.testing.assert_close(x, want_x)


class _FlakyNvFuser:
    """Runs a definition's first call, fails on the next: a failure after nvFuser may have
    written a caller's buffer."""

    from satfuse.lowering.frontend_ref import DataType
    from satfuse.lowering.frontend_ref import FusionDefinition as _Ref

    class FusionDefinition(_Ref):
        def execute(self, inputs, device=None):
            if getattr(self, "ran", False):
                raise RuntimeError("INTERNAL ASSERT FAILED at executor_utils.cpp:511")
            self.ran = True
            return super().execute(inputs, device=device)


def test_a_writing_segment_nvfuser_fails_on_after_its_first_call_raises(monkeypatch):
    from satfuse.lowering import plan as plan_mod

    monkeypatch.setattr(plan_mod, "_frontend", lambda executor: (_FlakyNvFuser, True))

    def g(x, y):
        x.add_(y)
        return x * 2

    a, b = torch.randn(4, 5), torch.randn(4, 5)
    c = capture(g, a.clone(), b)
    p = lower(c.trace, hints=c.symbol_hints, executor="nvfuser")
    x, want_x = a.clone(), a.clone()
    torch.testing.assert_close(p(x, b)[0], g(want_x, b))
    torch.testing.assert_close(x, want_x)
    with pytest.raises(RuntimeError, match="INTERNAL ASSERT"):
        p(x, b)


class _ViewingNvFuser:
    """A frontend that returns an output as a view of an input holding the same values, as
    nvFuser 0.2.36's alias analysis does on an H200 (a reduction over a size-1 dimension is a
    squeeze, a zero pad the input itself)."""

    from satfuse.lowering.frontend_ref import DataType
    from satfuse.lowering.frontend_ref import FusionDefinition as _Ref

    class FusionDefinition(_Ref):
        def execute(self, inputs, device=None):
            outs = super().execute(inputs, device=device)
            ins = [x for x in inputs if isinstance(x, torch.Tensor) and x.is_contiguous()]
            return [next((x.view(o.shape) for x in ins if x.dtype == o.dtype and x.numel() == o.numel()
                          and torch.equal(x.reshape(o.shape), o)), o) for o in outs]


@pytest.mark.parametrize("case", ["amax", "sum_then_write", "pad"])
def test_an_nvfuser_output_that_views_an_input_is_returned_fresh(monkeypatch, case):
    """Found by bench/fuzz.py --device cuda on an H200 (jit 10025 #36, optimize 9850 #154, jit
    10026 #66): the plan returned a view of its input where eager returns a new tensor, and a
    write-back to that input then changed an output already computed."""
    from satfuse.lowering import plan as plan_mod

    monkeypatch.setattr(plan_mod, "_frontend", lambda executor: (_ViewingNvFuser, True))

    def amax(a):
        return a.amax(0)

    def sum_then_write(a):
        t = a.sum()
        a.squeeze(0).div_(2)
        return t

    def pad(a):
        return F.pad(a, (0, 0))

    f = {"amax": amax, "sum_then_write": sum_then_write, "pad": pad}[case]
    a = torch.tensor([3.0])
    c = capture(f, a.clone())
    p = lower(c.trace, hints=c.symbol_hints, executor="nvfuser")
    x, y = a.clone(), a.clone()
    got, want = p(x)[0], f(y)
    assert torch.equal(got, want) and torch.equal(x, y)
    assert got.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    x.add_(1)
    assert torch.equal(got, want)


def test_pad_of_bool_has_a_bool_value():
    x = torch.rand(1, 3, 3) > 0.5
    c = capture(lambda x: F.pad(x, (2, 2)), x)
    plan = lower(c.trace, hints=c.symbol_hints, executor="reference")
    assert "value=fd.define_scalar(False, dtype=DataType.Bool)" in plan.source
    assert torch.equal(plan(x)[0], F.pad(x, (2, 2)))


def test_a_constant_several_ops_use_is_defined_once_where_first_used():
    """A 10k-op chain multiplies by 1.01 thousands of times: one define_scalar line, not one call
    per op in the text (its compile time); a constant one op uses stays inline."""
    def f(x):
        for _ in range(3):
            x = torch.tanh(x) * 1.01
        return x - 0.5

    x = torch.randn(4, 6)
    c = capture(f, x)
    src = lower(c.trace, hints=c.symbol_hints, executor="reference").source
    assert src.count("fd.define_scalar(1.01, dtype=DataType.Float)") == 1
    assert "    f32_1_01 = fd.define_scalar(1.01, dtype=DataType.Float)" in src
    assert src.count(", f32_1_01)") == 3
    assert ", fd.define_scalar(0.5, dtype=DataType.Float))" in src
    plan = lower(c.trace, hints=c.symbol_hints, executor="reference")
    torch.testing.assert_close(plan(x)[0], f(x), rtol=0, atol=0)


def test_forms_nvfuser_has_no_half_or_integer_kernel_for_compute_in_float_or_copy():
    """nvFuser 0.2.36 has no Half/BFloat16 kernel for floor, ceil, isnan, isinf, relu or a min
    reduction, and none for ceil of an integer: INTERNAL ASSERTs on an H200 (the OpInfo report on
    CUDA), and an in-place or ``out=`` plan raised where eager ran. Each is exact in Float, and a
    rounding of an integer is a copy, so the definitions say so. Captured on meta tensors, as for
    a GPU; the plan's values are checked on the CPU by the reference executor elsewhere."""
    import re

    def f(x, y, i):
        return torch.floor(x), torch.isnan(y), F.relu(x), y.amin(0), torch.ceil(i), torch.isinf(i), torch.trunc(x)

    args = [torch.empty(4, 8, dtype=dt, device="meta") for dt in (torch.float16, torch.bfloat16, torch.int64)]
    c = capture(f, *args)
    plan = lower(c.trace, hints=c.symbol_hints, executor="reference")
    src = "\n".join(e.source for e in plan.emitted.values())
    defs = dict(re.findall(r"^\s*(\w+) = (.*)$", src, re.M))
    called = re.findall(r"fd\.ops\.(floor|ceil|isnan|isinf|relu|min)\((\w+)", src)
    assert {op for op, _ in called} >= {"floor", "isnan", "relu", "min", "isinf"}, src
    for op, h in called:
        assert "dtype=DataType.Float" in defs.get(h, ""), (op, h, src)
    assert "fd.ops.ceil(" not in src and "fd.ops.set(" in src, src


def test_a_cpu_scalar_operand_meets_the_other_operands_on_their_device():
    """A number computed on the host (``0.5 * alpha``) is a 0-d CPU tensor, a scalar to nvFuser;
    where nvFuser failed, the reference executor broadcast it and met a CUDA tensor (optimize fuzz
    9851 #13 on an H200: device mismatch). Meta stands in for CUDA here."""
    import math

    def f(a):
        return torch.add(a.unsqueeze(0).reshape(-1), 0.5, alpha=math.inf)

    c = capture(f, torch.empty((), device="meta"))
    p = lower(c.trace, hints=c.symbol_hints, executor="reference")
    assert "eager.mul(0.5, float('inf'))" in p.source
    out = p(torch.empty((), device="meta"))[0]
    assert out.device.type == "meta" and out.shape == (1,)


def test_a_cat_of_one_tensor_more_than_once_runs_as_torch_s_cat():
    """On an H200, nvFuser 0.2.36 gave ``cat([a, a])`` ``a``'s shape once another op read the cat
    (optimize fuzz 9850 #141); given a copy the second time, it lost a -0.0's sign (9925 #221,
    ``atan2`` of it: 0 where eager gives -pi). Such a cat is torch's, and the ops after it fuse."""

    def f(a):
        t = torch.cat([a, a, a], 0)
        return t, torch.atan2(t.half().float(), t), 1 / t

    x = torch.tensor([-0.0, 1.5])
    c = capture(f, x)
    p = lower(c.trace, hints=c.symbol_hints, executor="reference")
    assert "fd.ops.cat" not in p.source and "eager.cat((a, a, a), 0)" in p.source, p.source
    assert "# fallback: cat of one tensor more than once" in p.source
    for g, w in zip(p(x), f(x)):
        assert torch.equal(g, w) and torch.equal(g.signbit(), w.signbit()), (g, w)


def test_the_reference_adds_a_cat_s_padded_operands_where_nvfuser_may():
    """nvFuser's MovePad pass may turn a cat with an operand computed in the definition into the
    sum of its zero-padded operands (``csrc/preseg_passes/move_pad.cpp``), where -0.0 + 0.0 is +0.0;
    the reference executor does the same, so a plan relying on the sign fails here too. A cat of
    fusion inputs stays a selection (nothing to move the pads into)."""
    from satfuse.lowering import frontend_ref as fr

    a = torch.tensor([-0.0, 2.0])
    for computed in (False, True):
        fd = fr.FusionDefinition()
        with fd:
            t = fd.define_tensor(shape=[2], contiguity=[True], dtype=fr.DataType.Float)
            x = fd.ops.set(t) if computed else t
            fd.add_output(fd.ops.cat([x, t], dim=0))
        out = fd.execute([a])[0]
        assert torch.equal(out, torch.cat([a, a]))
        assert out.signbit().tolist() == ([False, False, False, False] if computed else [True, False, True, False])


def test_an_integer_relu_is_exact():
    """nvFuser 0.2.36's runtime has ``float relu(int64_t)`` (and for int): on an H200 the plan of
    ``relu(a.sum())`` over int32 gave 2147483648 where eager gives 2147483640 (jit fuzz 10084
    #60). The reference executor computes an integer relu as nvFuser does; the plan emits an
    integer ``maximum`` with 0 instead, which is exact."""
    for dtype in (torch.int32, torch.int64, torch.int16, torch.uint8):
        big = torch.iinfo(dtype).max
        a = torch.tensor([-1, -4, 3, -5, big], dtype=dtype)

        def f(a):
            return torch.relu(a.sum(-1, keepdim=True)), torch.relu(a - 1)

        c = capture(f, a)
        p = lower(c.trace, hints=c.symbol_hints, executor="reference")
        assert "fd.ops.relu" not in p.source, p.source
        for g, w in zip(p(a), f(a)):
            assert g.dtype == w.dtype and torch.equal(g, w), (dtype, g, w)
