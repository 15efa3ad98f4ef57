"""Capture: aten graph -> vocabulary; in-place -> functional (functionalization) + write-back; symbolic extents."""

import pytest
import sympy
import torch
import torch.nn.functional as F
from satfuse.engine import CaptureError, capture
from satfuse.engine.interp import run_trace


def _check(fn, *args, dynamic=False):
    cap = capture(fn, *args, dynamic=dynamic)
    clones = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    want = fn(*clones)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    got, final = run_trace(cap.trace, args)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    for v, a, c in zip(cap.trace.inputs, args, clones):
        if isinstance(a, torch.Tensor):
            torch.testing.assert_close(final.get(v.name, a), c)
    return cap.trace


def test_inplace_becomes_functional_and_one_writeback():
    def f(x, y):
        x.add_(y)
        x.mul_(2)
        return x + 1

    tr = _check(f, torch.randn(5), torch.randn(5))
    assert [n.op for n in tr.nodes] == ["add", "mul", "add"]
    assert [(b.name, v.name) for b, v in tr.writebacks] == [("x", tr.nodes[1].out.name)]


def test_kv_cache_index_copy_and_sdpa_fallback():
    def kv(q, k, v, mask, idx, src):
        q.index_copy_(2, idx, src)
        k.index_copy_(2, idx, src)
        return F.scaled_dot_product_attention(q, k, v, mask)

    args = (torch.randn(1, 4, 2, 16), torch.randn(1, 4, 3, 16), torch.randn(1, 4, 3, 16),
            torch.ones(1, 1, 2, 3, dtype=torch.bool), torch.arange(2), torch.randn(1, 4, 2, 16))
    tr = _check(kv, *args)
    assert any(n.op.startswith("aten.") for n in tr.nodes), "SDPA stays an opaque fallback"
    assert {b.name for b, _ in tr.writebacks} == {"q", "k"}


def test_split_extents_are_symbolic_and_guarded():
    def split(a, d0, d1):
        return torch.split(a, (d0, d1, a.size(2) - d0 - d1), dim=2)

    cap = capture(split, torch.randn(2, 3, 10), 3, 4, dynamic=True)
    last = cap.trace.nodes[-1].out.type.shape[2]
    assert isinstance(last, sympy.Expr) and last.free_symbols <= cap.trace.symbols()
    assert any(str(g).endswith(">= 0") for g in cap.trace.guards)


def test_mutating_a_view_scatters_into_its_base():
    def f(x):
        x[0].add_(1)
        return x * 1

    tr = _check(f, torch.randn(3, 3))
    assert "select_scatter" in [n.op for n in tr.nodes]
    assert [b.name for b, _ in tr.writebacks] == ["x"]


def test_unknown_op_is_opaque_not_a_crash():
    tr = _check(lambda x: torch.cumsum(x, 0) * 2, torch.randn(6))
    assert any(n.op == "aten.cumsum.default" for n in tr.nodes)


def test_adam_step_captures_writebacks():
    def step(p, g, m, v):
        m.lerp_(g, 0.1)
        v.mul_(0.999).addcmul_(g, g, value=0.001)
        denom = (v / 0.001).sqrt().add_(1e-8)
        p.addcdiv_(m, denom, value=-0.01)

    args = [torch.randn(8) for _ in range(3)] + [torch.rand(8)]
    tr = _check(step, *args)
    assert {b.name for b, _ in tr.writebacks} == {"p", "m", "v"}


def test_item_is_a_clear_capture_error():
    def f(x, s):
        return x * (0.9 ** s.item())

    with pytest.raises(CaptureError, match=r"\.item\(\).*capturable=True"):
        capture(f, torch.randn(4), torch.tensor(3.0))


@pytest.mark.parametrize("fn", [lambda a, b: torch.sub(a, b, alpha=2), lambda a, b: torch.add(a, b, alpha=3),
                                lambda a, b: torch.rsub(b, a, alpha=2)], ids=["sub", "add", "rsub"])
def test_alpha_product_is_taken_in_the_promoted_dtype(fn):
    """``i64 - 2 * i32``: eager multiplies after promotion; the product in int32 wrapped at 2**31
    (optimize fuzz seed 1208, #491 and #419)."""
    a, b = torch.tensor([-4, 3]), torch.tensor([[-2**31, 2**31 - 1]], dtype=torch.int32)
    assert torch.equal(run_trace(capture(fn, a, b).trace, [a, b])[0][0], fn(a, b))


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_a_dtype_satfuse_lacks_is_refused_naming_the_node():
    """``where`` of a 0-d complex64 and a float16 tensor is complex32 in eager, a dtype satfuse has no
    place for: a CaptureError naming the node (found by bench/fuzz.py, optimize seed 9701 #1668:
    an internal IRError)."""
    import satfuse

    def f(a, c):
        return torch.where(a.real > 0, a, c)

    a, c = torch.tensor(1 + 2j, dtype=torch.complex64), torch.zeros(3, dtype=torch.float16)
    assert f(a, c).dtype == torch.complex32
    with pytest.raises(CaptureError, match=r"node where .*complex32 is not supported"):
        satfuse.optimize(f, a, c)


def test_literal_tensors_with_distinct_values_are_held_by_the_plan():
    """``torch.tensor([1.0, 2.0, 3.0])`` inside the program (a get_attr constant of the traced graph):
    the plan holds a copy and makes a fresh tensor from it on each call, as eager does, even where
    the program writes into it; a literal built from a Python float argument or a closure value is
    covered by the guards on those (fuzz: 70 of 10,000 optimize programs were refused)."""
    import satfuse

    def f(x, s):
        w = torch.tensor([1.0, 2.0, 3.0])
        w.mul_(2)
        return x * w + torch.tensor([s, 0.0, 1.0]), w, torch.tensor([[1, 2], [3, 4]]).sum()

    x = torch.randn(3)
    plan = satfuse.optimize(f, x, 1.5)
    assert "aten.lift_fresh_copy.default(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float32))" in str(plan.trace)
    for _ in range(2):  # the held constant is not the one the first call's write changed
        for got, want in zip(plan(x, 1.5), f(x, 1.5)):
            assert torch.equal(got, want)
    with pytest.raises(satfuse.GuardError):
        plan(x, 2.5)
    j = satfuse.jit(f)
    for s in (1.5, 2.5):
        for got, want in zip(j(x, s), f(x, s)):
            assert torch.equal(got, want)


def test_inputs_that_are_one_written_tensor_are_refused_as_listed():
    """``d.copy_(a)`` with ``d`` and ``a`` one tensor, then a write into ``a``: functionalization
    writes the input back in a chain of copy_; capture refuses the example with the listed error
    (found by bench/fuzz.py, optimize seed 9701 #252: an unlisted CaptureError)."""
    from satfuse.engine.unsupported import refused_as_listed

    import satfuse

    def g(a, d):
        d.copy_(a)
        a[:, 1:].masked_fill_(a[:, 1:] > 0, 0)
        return (a,)

    a = torch.rand(2, 2, 2) > 0.5
    with pytest.raises(Exception, match="the example inputs cannot have a plan") as e:
        satfuse.optimize(g, a, a)
    assert refused_as_listed(e.value) is not None


def test_eager_conversions_fake_kernels_refuse():
    """Programs eager runs whose fake (meta) kernels refuse: a complex fill of a real tensor
    (eager converts it: ``bool(1j)`` is True) and ``bool_t.pow_(True)`` (int64 on meta, bool in
    eager); and a write into an expanded input whose view torch cannot replay is the listed
    refusal, not a tracing error (found by bench/fuzz.py: optimize seeds 4243 #14, 9191 #148,
    4242 #225)."""
    from satfuse.engine.unsupported import refused_as_listed

    import satfuse

    def fill(t):
        return t.masked_fill(t, 1j), t.clone().fill_(0j)

    def power(t):
        t[0].pow_(True)
        return t * 1

    t = torch.tensor([True, False])
    for fn in (fill, power):
        x = t.clone()
        got, want = satfuse.optimize(fn, t.clone())(x), fn(t.clone())
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert torch.equal(g, w)

    def unfold_write(a):
        t0 = a.unfold(-1, 2, 1)
        a[0] = True
        return t0.flatten()

    with pytest.raises(CaptureError, match="cannot have a plan") as e:
        satfuse.optimize(unfold_write, torch.tensor([False]).expand(3))
    assert refused_as_listed(e.value) is not None


def test_static_capture_of_a_data_dependent_extent_traces_again_with_a_shape_env():
    """A static capture first traces without a ShapeEnv (symbolic-shape bookkeeping costs every
    op); ``nonzero``'s extent needs a symbol, so that program is traced again with one: its extent
    is symbolic as before, and the trace computes eager's result."""
    x = torch.tensor([1.0, -1.0, 2.0, 0.0, 3.0])
    tr = capture(lambda x: torch.nonzero(x > 0), x).trace
    assert tr.nodes[-1].op == "aten.nonzero.default"
    assert isinstance(tr.outputs[0].type.shape[0], sympy.Expr) and not tr.outputs[0].type.shape[0].is_number
    got, _ = run_trace(tr, [x])
    assert torch.equal(got[0], torch.nonzero(x > 0))


def test_eager_kernels_on_the_cpu_decompositions_for_the_nvfuser_target():
    """gelu and layer_norm: a CPU capture keeps eager's own kernel (whose answers no decomposition
    reproduces everywhere: gelu's erf form near 0, layer_norm's float statistics overflowing to nan),
    while a meta (or CUDA) capture, the nvFuser target's, decomposes them so they fuse."""
    def f(x, b):
        return F.layer_norm(F.gelu(x + b), (8,)) * 2

    cpu = capture(f, torch.randn(4, 8), torch.randn(8)).trace
    meta = capture(f, torch.randn(4, 8, device="meta"), torch.randn(8, device="meta")).trace
    assert {n.op for n in cpu.nodes} >= {"aten.gelu.default", "aten.native_layer_norm.default"}
    assert not any(n.op.startswith("aten.") for n in meta.nodes), meta


def test_an_opaque_kernel_s_operand_layout_is_recorded_on_every_device():
    """Eager's kernels read operands in the layout eager gave them, on a GPU too: SDPA pads a mask's
    last dim to a multiple of 16 and slices it back, and CUDA's memory-efficient kernel refuses a
    bias whose strides are not multiples of 4. Capture recorded the layout for CPU tensors only,
    and the plan handed that kernel a contiguous bias (an H200: ``test_runs_on_nvfuser[kv]``
    raised where eager ran). A meta capture, as for a GPU, records a transposed ``bmm`` operand."""
    from satfuse.engine.vocab import EAGER_STRIDES

    a, b = torch.empty(4, 2, 16, device="meta"), torch.empty(4, 3, 16, device="meta")
    c = capture(lambda a, b: torch.bmm(a, b.transpose(1, 2)) * 2, a, b)
    (bmm,) = [n for n in c.trace.nodes if n.op == "aten.bmm.default"]
    assert bmm.kwargs[EAGER_STRIDES] == (None, (48, 1, 16))


def test_an_out_resize_of_an_input_is_refused_as_such_when_a_view_of_it_is_written_later():
    """``bitwise_and(t0, t3, out=a)`` resizes the empty input ``a`` as eager resizes an ``out=``
    tensor, which a plan cannot do to the caller's tensor (a listed refusal). Functionalization
    re-derived the view ``t3`` from ``a``'s new shape, circular pad's copy into it looked like a
    write eager refuses, and capture raised EagerError where eager returns (fuzz 20004 #53)."""
    from satfuse.engine.unsupported import refused_as_listed

    def f(a):
        t0 = a.detach()
        t3 = a.chunk(2, 0)[0]
        t3.transpose_(0, 2)
        torch.bitwise_and(t0, t3, out=a)
        return (F.pad(t3, (0, 0), mode="circular"),)

    a = torch.zeros((1, 0, 0), dtype=torch.bool)
    f(a.clone())  # eager returns
    with pytest.raises(CaptureError, match=r"an out= op resizes it \(\(1, 0, 0\) -> \(0, 0, 0\)\)") as e:
        capture(f, a)
    assert refused_as_listed(e.value), e.value
