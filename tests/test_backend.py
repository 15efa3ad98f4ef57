"""torch.compile(backend="satfuse"): registration, mutation, dynamic shapes, training
through AOTAutograd, guards that become Dynamo guards."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F

import satfuse
from satfuse import backend as B


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def compiled():
    """The graphs the default engine compiles during the test, through its hook."""
    from satfuse.pipeline import default_engine

    got: list = []
    hooks = default_engine().on_graph
    hooks.append(got.append)
    yield got
    hooks.remove(got.append)


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_registered_at_import_when_dynamo_loaded():
    out = _run("""
        import torch._dynamo
        from torch._dynamo.backends import registry
        import satfuse, satfuse.backend
        print(registry._COMPILER_FNS.get("satfuse") is satfuse.backend.satfuse_backend)
        print("satfuse" in torch._dynamo.list_backends())
    """)
    assert out.split() == ["True", "True"]


def test_entry_point_without_importing_satfuse():
    out = _run("""
        import sys, torch
        f = torch.compile(lambda x: x * 2 + 1, backend="satfuse")
        x = torch.randn(4)
        print(torch.allclose(f(x), x * 2 + 1), "satfuse.backend" in sys.modules)
    """)
    assert out.split() == ["True", "True"]


def test_import_satfuse_is_cheap():
    out = _run("""
        import sys, satfuse
        print("torch._dynamo" in sys.modules, "egglog" in sys.modules, "satfuse.engine" in sys.modules)
    """)
    assert out.split() == ["False", "False", "False"]


def test_lookup_by_name_after_import():
    from torch._dynamo.backends.registry import lookup_backend

    assert lookup_backend("satfuse") is B.satfuse_backend


def test_inplace_mutation_visible_to_caller(compiled):
    def f(x, y):
        x.add_(y)
        return x * 2

    cf = torch.compile(f, backend="satfuse")
    x, y = torch.randn(5), torch.randn(5)
    xe = x.clone()
    out = cf(x, y)
    want = f(xe, y)
    assert torch.allclose(out, want) and torch.allclose(x, xe)
    (c,) = compiled
    assert c.kind == "inference" and c.trace.writebacks  # the in-place op reached satfuse as a write-back


def test_kv_cache_program():
    from tests.corpus import BY_NAME

    case = BY_NAME["kv_cache"]
    cf = torch.compile(case.fn, backend="satfuse")
    got_in, want_in = case.make_inputs(), case.make_inputs()
    got, want = cf(*got_in), case.fn(*want_in)
    assert torch.allclose(got, want, atol=1e-5)
    for a, b in zip(got_in, want_in):
        assert torch.equal(a, b)  # q and k updated in place like eager


def test_cross_entropy_and_layer_norm():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(8, 16, generator=g), torch.randint(0, 16, (8,), generator=g)
    assert torch.allclose(torch.compile(F.cross_entropy, backend="satfuse")(x, y), F.cross_entropy(x, y), atol=1e-6)

    def ln(x, w, b):
        return F.layer_norm(x, (16,), w, b)

    w, b = torch.randn(16, generator=g), torch.randn(16, generator=g)
    assert torch.allclose(torch.compile(ln, backend="satfuse")(x, w, b), ln(x, w, b), atol=1e-5)


@pytest.mark.parametrize("dynamic", [False, True])
def test_linear_ce_training_step(dynamic, compiled):
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4)
    ref = torch.nn.Linear(16, 4)
    ref.load_state_dict(model.state_dict())

    def step(m, x, y):
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        return loss

    cs = torch.compile(step, backend="satfuse", dynamic=dynamic)
    for n in (8, 6):
        x, y = torch.randn(n, 16), torch.randint(0, 4, (n,))
        model.zero_grad()
        ref.zero_grad()
        got, want = cs(model, x, y), step(ref, x, y)
        assert torch.allclose(got, want, atol=1e-6)
        assert torch.allclose(model.weight.grad, ref.weight.grad, atol=1e-6)
        assert torch.allclose(model.bias.grad, ref.bias.grad, atol=1e-6)
    kinds = [c.kind for c in compiled]
    assert "forward" in kinds and "backward" in kinds  # AOTAutograd: each graph its own trace
    if dynamic:
        assert kinds.count("forward") == 1


def test_split_program_dynamic_compile_count(compiled):
    from tests.test_seed001 import SPLIT_CALLS, split_program

    cf = torch.compile(split_program, backend="satfuse", dynamic=True)
    a = torch.randn(2, 3, 10)
    for d0, d1 in SPLIT_CALLS:
        for g, w in zip(cf(a, d0, d1), split_program(a, d0, d1)):
            assert torch.equal(g, w), (d0, d1)
    n = len(compiled)
    print(f"\nsplit program under torch.compile(backend='satfuse', dynamic=True): {n} compile(s) "
          f"for {len(SPLIT_CALLS)} calls")
    assert n <= 2


def test_satfuse_guard_becomes_dynamo_guard():
    """The plan's guard `a.size(2) - dim0 - dim1 >= 0` is a Dynamo guard: a call that
    violates it goes back to Dynamo, whose own trace rejects it, naming the op; the input
    (mutated first by the program in eager) is untouched."""
    from tests.test_seed001 import split_inplace

    cf = torch.compile(split_inplace, backend="satfuse", dynamic=True)
    a = torch.randn(2, 3, 10)
    ae = a.clone()
    for g, w in zip(cf(a, 3, 4), split_inplace(ae, 3, 4)):
        assert torch.equal(g, w)
    assert torch.equal(a, ae)
    before = a.clone()
    with pytest.raises(Exception, match="split_with_sizes"):
        cf(a, 11, 1)
    assert torch.equal(a, before)


def test_get_attr_constants_are_lifted():
    import torch.fx as fx

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.tensor([2.0, 3.0]))

        def forward(self, x):
            return (x * self.scale,)  # Dynamo's graphs return tuples

    gm = fx.symbolic_trace(M())
    assert any(n.op == "get_attr" for n in gm.graph.nodes)
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    x = torch.randn(2)
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            n.meta["example_value"] = mode.from_tensor(x)
    fn = B.satfuse_backend(gm, [x])
    assert torch.allclose(fn(x)[0], x * torch.tensor([2.0, 3.0]))


def test_unspecialized_float_attributes_and_literal_tensors(compiled):
    """dynamic=True leaves a module's float attributes (eps, a scale) unspecialized: Dynamo
    passes them as 0-d tensors and calls ``.item()``; the re-trace keeps Dynamo's SymFloat and
    tensorifies the float math, so changing the attribute neither recompiles nor goes stale. A
    tensor made from a literal (``torch.tensor([])``, HF's KV cache) becomes a plan input."""

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.eps, self.p = 1e-5, 2.0
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = F.layer_norm(self.lin(x), (4,), eps=self.eps) * self.p
            return torch.cat([torch.tensor([], dtype=x.dtype), y.flatten()])

    m = M()
    cm = torch.compile(m, backend="satfuse", dynamic=True)
    x = torch.randn(3, 4)
    with torch.no_grad():
        assert torch.allclose(cm(x), m(x), atol=1e-6)
        m.p = 3.0
        assert torch.allclose(cm(x), m(x), atol=1e-6)
    assert len(compiled) == 1


def _train_like_eager(m, twin, step, opt, opt_e, steps=2):
    """``steps`` optimizer steps through the compiled ``step`` and eagerly on a twin: parameters
    and optimizer state (moments, step counters) equal after each."""
    for _ in range(steps):
        x = torch.randn(5, 4)
        for mod in (m, twin):
            mod(x).square().sum().backward()
        step()
        opt_e.step()
        for p, q in zip(m.parameters(), twin.parameters()):
            assert torch.allclose(p, q, atol=1e-6)
            for k in ("exp_avg", "exp_avg_sq", "step"):
                assert torch.allclose(opt.state[p][k], opt_e.state[q][k], atol=1e-6), k
        opt.zero_grad()
        opt_e.zero_grad()


@pytest.mark.parametrize("optim,foreach", [("AdamW", None), ("Adam", False), ("Adam", True), ("AdamW", True)])
def test_compiled_adamw_step_matches_eager(optim, foreach, compiled):
    """``opt.step`` through the backend: the optimizer's state tensors are ``get_attr`` nodes of
    Dynamo's graph; lifting them must not edit the graph Dynamo keeps reading (it raised
    ``KeyError: grapharg``), and params and state must match an eager twin. ``foreach=True``
    steps are ``_foreach_*`` ops, captured as the per-tensor ops they decompose to."""
    import copy

    torch.manual_seed(0)
    m = torch.nn.Linear(4, 3)
    twin = copy.deepcopy(m)
    make = getattr(torch.optim, optim)
    opt, opt_e = make(m.parameters(), lr=1e-2, foreach=foreach), make(twin.parameters(), lr=1e-2, foreach=foreach)

    @torch.compile(backend="satfuse")
    def step():
        opt.step()

    _train_like_eager(m, twin, step, opt, opt_e)
    # Dynamo writes addcmul_(..., value=v) as inductor's prims.fma: fused, not a fallback
    [c] = compiled
    assert c.plan.stats()["fallback_ops"] == 0, c.plan.stats()["fallback_kinds"]


def test_extents_equal_by_guard_share_one_spelling(compiled):
    """``x.view(-1, C)`` is ``[s0*s1, C]`` and ``y.view(-1)`` is ``[s3*s4]``: cross_entropy makes
    them equal by a guard only (no replacement), and the backward graph multiplies the two
    (HF's causal-LM loss: logits vs labels). Capture spells them alike, so they broadcast."""

    def f(x, y):
        return F.cross_entropy(x.view(-1, x.shape[-1]), y.view(-1))

    x = torch.randn(2, 6, 5, requires_grad=True)
    y = torch.randint(0, 5, (3, 4))
    loss = torch.compile(f, backend="satfuse", dynamic=True)(x, y)
    loss.backward()
    g, x.grad = x.grad, None
    want = f(x, y)
    want.backward()
    assert torch.allclose(loss, want, atol=1e-6) and torch.allclose(g, x.grad, atol=1e-6)


def test_make_backend_options():
    f = torch.compile(lambda x: (x * 2).sum(), backend=B.make_backend({"target": "eager", "executor": "reference"}))
    x = torch.randn(3)
    assert torch.allclose(f(x), (x * 2).sum())


def test_satfuse_namespace_has_jit():
    assert callable(satfuse.jit)


def _in_place_compare(x, c):
    t0 = x.sum(0)  # a 0-d operand broadcast into a slice of a dynamic size
    t3 = torch.neg(x)
    t3[:-1].ne_(t0)
    c.squeeze_()  # an input's metadata changed in place
    return t3


def test_dynamic_recompile_traces_symbolic_in_place_ops():
    """The second size makes Dynamo's graph dynamic: in-place ops whose torch kernels are Python
    refs (``ne_`` broadcasting its operand, ``squeeze_`` of an input) capture with symbolic sizes."""
    from semantics_util import assert_like_eager

    f = torch.compile(_in_place_compare, backend="satfuse")
    for n in (1, 5, 1, 3):
        assert_like_eager(_in_place_compare, f, torch.randn(n), torch.ones(n, n, dtype=torch.bool).t())


def test_graph_without_plan_runs_eagerly_transactionally():
    """A graph eager rejects at capture (a write through an ``unfold`` view that reads the tensor it
    writes) runs Dynamo's graph eagerly, on copies first: eager's error, the input untouched."""

    def f(a):
        a.logical_and_(a)
        a.unfold(-1, 2, 2).atan2_(a)
        return a

    g = torch.compile(f, backend="satfuse")
    a = torch.full((2,), 3.0)
    with pytest.raises(RuntimeError, match="single memory location"):
        g(a)
    assert torch.equal(a, torch.full((2,), 3.0))


def test_optimizer_graph_without_plan_runs_eagerly_once(monkeypatch):
    """An optimizer step reads and writes its state through ``get_attr`` tensors of Dynamo's graph,
    not through arguments: where no plan serves the graph, the transactional eager run must check
    on copies of those too (it wrote the real ``step`` counters, so every step counted twice)."""
    import copy
    import importlib

    graph = importlib.import_module("satfuse.engine.capture.graph")

    def no_plan(*a, **k):
        raise RuntimeError("no plan (test)")

    monkeypatch.setattr(graph, "capture_dynamo_graph", no_plan)
    torch.manual_seed(0)
    m = torch.nn.Linear(4, 3)
    twin = copy.deepcopy(m)
    opt, opt_e = torch.optim.Adam(m.parameters(), lr=1e-2), torch.optim.Adam(twin.parameters(), lr=1e-2)
    step = torch.compile(opt.step, backend="satfuse")
    _train_like_eager(m, twin, step, opt, opt_e)


def test_returned_views_of_inputs_stay_views():
    """Views of inputs come back as views with eager's geometry, static and dynamic graphs alike."""

    def f(x):
        return x[1:], x.t(), x * 2

    g = torch.compile(f, backend="satfuse")
    for n in (3, 4, 5):
        x = torch.randn(n, n)
        got, want = g(x), f(x)
        for o, w in zip(got[:2], want[:2]):
            assert o.data_ptr() == w.data_ptr() and o.stride() == w.stride() and torch.equal(o, w)
        assert got[2].data_ptr() != x.data_ptr() and torch.equal(got[2], want[2])


def test_outputs_viewing_one_intermediate_share_it():
    """Also after Dynamo's recompile with dynamic sizes (that graph runs eagerly)."""
    from semantics_util import assert_views_of_one, views_of_one

    g = torch.compile(views_of_one, backend="satfuse")
    for n in (3, 4, 5):
        x = torch.randn(n, n)
        assert_views_of_one(g(x), views_of_one(x))


def test_foreach_decompositions_equal_the_foreach_ops():
    """Every ``_foreach_*`` overload capture decomposes per tensor gives what the foreach kernel
    gives, on arguments built from its schema (tensor lists, scalar lists, scalars, a 0-d tensor)."""
    from satfuse.engine.capture.foreach import foreach_decompositions

    def arg(a, n):
        t = str(a.type)
        if t == "List[Tensor]":
            return [torch.rand(3) + 0.5 + i for i in range(n)]
        if t in ("List[number]", "List[Scalar]"):
            return [0.5 + i for i in range(n)]
        if t in ("number", "Scalar"):
            return 0.75
        if t == "Tensor":
            return torch.tensor(1.5)
        if a.has_default_value():
            return a.default_value
        raise LookupError(t)

    checked = 0
    for op, decomp in foreach_decompositions().items():
        try:
            pos = [arg(a, 2) for a in op._schema.arguments if not a.kwarg_only]
            expected = op(*pos)
        except (LookupError, RuntimeError, TypeError):
            continue  # eager has no sample of this form (dtype-only or unusual arguments)
        got = decomp(*pos)
        if got is NotImplemented:
            continue  # traced as the foreach op itself
        assert len(got) == len(expected), op
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e, equal_nan=True, msg=lambda m, op=op: f"{op}: {m}")
        checked += 1
    assert checked >= 60, checked


def _where_then_copy(a, b):
    t = torch.where(a > 0, a, b)
    t.copy_(b)
    return t


def test_fresh_output_written_from_an_input_does_not_share_it():
    """``where(...)`` then ``copy_(b)`` is a fresh tensor holding ``b``'s values: the plan of
    AOTAutograd's graph (static and dynamic) must not hand back ``b``'s storage."""
    from semantics_util import assert_like_eager

    g = torch.compile(_where_then_copy, backend="satfuse")
    for n in (0, 4, 0, 3):
        a, b = torch.randint(-5, 5, (1, n, n)), torch.randn(1, 1, dtype=torch.bfloat16)
        out, held = g(a, b), {t.untyped_storage().data_ptr() for t in (a, b) if t.untyped_storage().nbytes()}
        assert not out.untyped_storage().nbytes() or out.untyped_storage().data_ptr() not in held
        assert_like_eager(_where_then_copy, g, a, b)


def _mul_one_of_a_cast(a, b):
    t3 = b.to(torch.bfloat16)
    t5 = t3.view(t3.shape)
    t6 = a.contiguous()
    t8 = torch.addcdiv(torch.where(t5 > 0, t5, a), torch.sigmoid(a), t3)
    t6.sub_(t8)
    return t3, t5


def test_rewrites_keep_dtypes_across_casts_of_0d_inputs():
    """A bf16 cast of an int32 0-d input meeting an f32 input: no rewrite may equate the two
    dtypes (``algebra/mul-one`` did, a RuleError at compile)."""
    from semantics_util import assert_like_eager

    g = torch.compile(_mul_one_of_a_cast, backend="satfuse")
    for v in (0, 1, -3):
        assert_like_eager(_mul_one_of_a_cast, g, torch.tensor(float(v)), torch.tensor(v, dtype=torch.int32))


def _count_positive(x):
    return (x > 0).sum()


def test_aot_graph_refuses_what_eager_kernels_refuse():
    """A kernel eager has no implementation for (``gt`` of complex, which fake tensors accept)
    raises eager's error through torch.compile too: the AOTAutograd graph's conversion probes
    each op's real kernel as capture does, and the graph then runs eagerly."""
    from semantics_util import assert_like_eager

    x = torch.tensor([1 + 1j, -2j], dtype=torch.complex64)
    assert_like_eager(_count_positive, torch.compile(_count_positive, backend="satfuse"), x)


def test_a_slice_extent_a_guard_pins_to_a_number_is_that_number():
    """``t0[..., ::2] = a`` with ``t0`` (s0, s1) and ``a`` (s0, 2): Dynamo's guard pins
    ``(s1 + 1) // 2`` to 2, but the slice kept the compound extent, so the copy_ could not
    broadcast (s0, 2) to it (EmitError; found by bench/fuzz.py, compile seed 9933 #151). An extent
    the ShapeEnv proves equal to its hint is that number."""

    def f(a, b):
        t0 = torch.logical_and(b, b)
        t0[..., ::2] = a
        return t0

    torch._dynamo.reset()
    g = torch.compile(f, backend="satfuse")
    for n in (3, 4, 3):  # the second call recompiles with n symbolic; a's 2 stays static
        a, b = torch.randn(n, 2, dtype=torch.bfloat16), torch.randn(n, n, dtype=torch.bfloat16)
        want = f(a.clone(), b.clone())
        got = g(a, b)
        assert got.dtype == want.dtype and torch.equal(got, want)


def test_a_returned_view_of_an_input_is_not_the_input_object():
    """``t2 = torch.split(a, 1, 0)[-1]`` of an empty dim is a view of ``a`` at a's own geometry, which
    the plan returned as ``a`` itself; Dynamo then replayed ``a.transpose_(0, 1)`` on ``a`` after the
    graph, which transposed the returned tensor too: (1, 0) for eager's (0, 1) (found by
    bench/fuzz.py, compile seed 9933 #1032). Capture records whether eager returns the input object
    itself or a view of it; a view is a view object in the plan too."""

    def f(a):
        t2 = torch.split(a, 1, 0)[-1]
        a.sign_()
        a.transpose_(0, 1)
        return t2

    torch._dynamo.reset()
    g = torch.compile(f, backend="satfuse")
    for d in (0, 1, 3):
        x, y = torch.zeros(0, d, dtype=torch.bool), torch.zeros(0, d, dtype=torch.bool)
        got, want = g(x), f(y)
        assert got.shape == want.shape and x.shape == y.shape
    x = torch.randn(2, 3)
    out = satfuse.optimize(lambda a: (a, a[:]), x)(x)
    assert out[0] is x and out[1] is not x and out[1].data_ptr() == x.data_ptr()


def test_a_symbol_guarded_equal_to_a_compound_extent_is_spelled_as_it():
    """Under automatic dynamic shapes Dynamo guards an ``out=`` tensor's size ``s20`` equal to
    ``diagonal``'s ``Min(s11, s74)`` without replacing it; the plan's copy into ``c`` could not
    broadcast the two (EmitError: compile fuzz 9994 #4798). Capture now spells every extent the
    ShapeEnv proves equal one way, symbols included, and the equality is a guard."""

    def f(a, c, d):
        t = torch.nn.functional.layer_norm(d, d.shape[-1:]).diagonal()
        torch.eq(a, t, out=c)
        return t

    torch._dynamo.reset()
    g = torch.compile(f, backend="satfuse")
    for n in (0, 2, 3):
        args = [torch.randn(n, dtype=torch.float64), torch.zeros(n, dtype=torch.int64), torch.randn(n, n)]
        mine = [x.clone() for x in args]
        assert torch.equal(g(*mine), f(*args))
        assert all(torch.equal(x, y) for x, y in zip(mine, args))


def test_a_compound_extent_guarded_equal_to_its_own_symbol_is_spelled_as_it():
    """``copy_`` of ``diagonal``'s ``Min(s0, s1)`` into a row of length ``s1``: Dynamo guards
    ``Min(s0, s1) == s1``; the symbol may be one of the extent's own (compile fuzz 9997 #9641,
    the same class as #4798)."""

    def f(c):
        t = torch.tan(c).select(0, -2)
        t.copy_(c.diagonal())
        return t

    torch._dynamo.reset()
    g = torch.compile(f, backend="satfuse")
    for n in (2, 3, 4):
        c = torch.randn(n, n)
        assert torch.equal(g(c.clone()), f(c.clone()))


@pytest.mark.parametrize("dynamic", [False, True])
def test_conv_backward_without_an_input_gradient(dynamic, compiled):
    """A conv whose input needs no gradient (ViT's patch embedding): AOTAutograd's backward calls
    ``convolution_backward`` with ``output_mask`` [False, True, True], and its first result is
    None (once "unsupported input value None": the graph got no plan). Dynamic: the conv's
    output extent is ``FloorDiv(s1, 4)`` as captured and ``floor(s1/4)`` as sympy spells it, which
    the IR compares by structure (the backward once raised IRError out of ``.backward()``)."""
    conv = torch.nn.Conv2d(3, 8, 4, stride=4)

    def f(x):
        return conv(x).relu().sum()

    c = torch.compile(f, backend="satfuse", dynamic=dynamic)
    for side in (16, 20):
        x = torch.randn(2, 3, side, side)
        conv.zero_grad()
        c(x).backward()
        got = [p.grad.clone() for p in conv.parameters()]
        conv.zero_grad()
        f(x).backward()
        for g, p in zip(got, conv.parameters()):
            torch.testing.assert_close(g, p.grad)
    assert {g.kind for g in compiled} >= {"forward", "backward"}


def test_custom_ops_of_other_libraries_run_as_fallbacks():
    """Ops outside aten and prims (a user's ``torch.library.custom_op``; torch's own ``torch_nn``
    chunked cross-entropy) are opaque calls like aten's (once a KeyError: only "aten." and
    "prims." names were opaque); one that writes its arguments reaches capture as
    ``auto_functionalized_v2`` (a functional call returning the new values), also opaque. Each
    entry point gives eager's values, writes and gradients."""
    lib = "satfuse_test_backend"

    @torch.library.custom_op(f"{lib}::scale_add", mutates_args=())
    def scale_add(x: torch.Tensor, y: torch.Tensor, a: float) -> torch.Tensor:
        return x * a + y

    @scale_add.register_fake
    def _(x, y, a):
        return torch.empty_like(x)

    def setup(ctx, inputs, output):
        ctx.a = inputs[2]

    scale_add.register_autograd(lambda ctx, g: (g * ctx.a, g, None), setup_context=setup)

    @torch.library.custom_op(f"{lib}::acc_", mutates_args=("buf",))
    def acc_(buf: torch.Tensor, x: torch.Tensor) -> None:
        buf.add_(x)

    @acc_.register_fake
    def _(buf, x):
        return None

    def f(x, y):
        return scale_add(x.sin(), y, 2.0).cos()

    def g(buf, x):
        acc_(buf, x * 2)
        return buf.sum()

    x, y = torch.randn(4, 5), torch.randn(4, 5)
    makers = [lambda fn, *a: satfuse.optimize(fn, *a), lambda fn, *a: satfuse.jit(fn, dynamic=True),
              lambda fn, *a: torch.compile(fn, backend="satfuse")]
    for make in makers:
        torch.testing.assert_close(make(f, x, y)(x, y), f(x, y))
        got_buf, want_buf = torch.ones(4, 5), torch.ones(4, 5)
        torch.testing.assert_close(make(g, got_buf.clone(), x)(got_buf, x), g(want_buf, x))
        assert torch.equal(got_buf, want_buf)
    xr = x.clone().requires_grad_()
    torch.compile(f, backend="satfuse")(xr, y).sum().backward()
    got, xr.grad = xr.grad, None
    f(xr, y).sum().backward()
    torch.testing.assert_close(got, xr.grad)


def test_effectful_ops_run_in_order_under_compile_and_are_refused_by_optimize():
    """``torch.linalg.inv`` checks its input through an op with ordered side effects
    (``with_effects`` and an effect token AOTAutograd threads through the graph): under
    torch.compile the plan runs it as an opaque call (eager's values, gradients and error on a
    singular matrix); satfuse's own capture has no runtime for the tokens, so optimize refuses it
    as listed (once a KeyError from inside the converter)."""
    from satfuse.engine import CaptureError
    from satfuse.engine.unsupported import refused_as_listed

    def f(a):
        return torch.linalg.inv(a) * 2

    a = torch.randn(3, 3, dtype=torch.float64)
    c = torch.compile(f, backend="satfuse")
    torch.testing.assert_close(c(a), f(a))
    with pytest.raises(torch.linalg.LinAlgError):
        c(torch.zeros(3, 3, dtype=torch.float64))
    ar = a.clone().requires_grad_()
    c(ar).sum().backward()
    got, ar.grad = ar.grad, None
    f(ar).sum().backward()
    torch.testing.assert_close(got, ar.grad)
    with pytest.raises(CaptureError, match="effect token") as e:
        satfuse.optimize(f, a)
    assert refused_as_listed(e.value)


def test_a_graph_that_computes_gradients_itself_keeps_them():
    """``torch.func.grad`` inside a compiled function: Dynamo's graph holds functorch's own calls
    (``_wrap_for_grad``, ``_autograd_grad``) and one result nothing reads, so satfuse re-traces it
    itself; that re-trace once ran under ``no_grad``, which the transform's autograd call read:
    the plan returned zeros for the gradient. The re-trace runs in the caller's grad mode."""
    def loss(w, x):
        return (x @ w).tanh().sum()

    def g(w, x):
        return torch.func.grad(loss)(w, x)

    def h(w, x):
        w = w.detach().requires_grad_()
        with torch.enable_grad():
            return torch.autograd.grad(loss(w, x), w)[0]

    w, x = torch.randn(16, 8), torch.randn(4, 16)
    for fn in (g, h):
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(fn, backend="satfuse")(w, x), fn(w, x))


def test_a_graph_the_engine_cannot_plan_runs_eagerly(monkeypatch, caplog):
    """Planning fails only by satfuse's fault (capture refuses what it cannot take): such a graph
    runs eagerly with a warning naming the failure, never an error out of the call or out of a
    later ``.backward()`` (a dynamic ``x.var()``'s backward once raised IRError there: its
    ``2 / (N - 1)`` is a symbolic float the e-graph has no form for)."""
    import logging

    from satfuse.pipeline import Engine, default_engine

    def boom(self, *a, **k):
        raise RuntimeError("engine failure")

    monkeypatch.setattr(Engine, "compile", boom)
    assert isinstance(default_engine(), Engine)

    def f(x):
        return (x.sin() * 2).var()

    with caplog.at_level(logging.WARNING, logger="satfuse"):
        _value_and_gradient_like_eager(torch.compile(f, backend="satfuse"), f, torch.randn(5, 3))
    assert any("planning failed, a satfuse bug: RuntimeError: engine failure" in r.getMessage() for r in caplog.records)


def test_a_symbolic_float_operand_gets_a_plan(compiled, caplog):
    """``x.var(0)``'s backward under dynamic shapes multiplies by ``2 / (N - 1)``, a symbolic float
    (torch's FloatTrueDiv): the e-graph holds it as a leaf no rule reads (``CSymFloat``) and the
    plan computes it from the sizes, dividing as C++ doubles do (a zero divisor gives inf, not
    ZeroDivisionError). Once "has no e-graph form": the backward graph had no plan."""
    import logging

    from satfuse.lowering.guards import true_div

    def f(x):
        return (x.sin() * 2).var(0).sum()

    c = torch.compile(f, backend="satfuse", dynamic=True)
    with caplog.at_level(logging.WARNING, logger="satfuse"):
        for n in (5, 7):
            _value_and_gradient_like_eager(c, f, torch.randn(n, 3))
    assert not [r for r in caplog.records if "no plan" in r.getMessage()]
    assert "backward" in {g.kind for g in compiled}
    assert true_div(1.0, 0.0) == math.inf and true_div(-2.0, -0.0) == math.inf and math.isnan(true_div(0.0, 0.0))


def _value_and_gradient_like_eager(compiled_f, f, x):
    """``compiled_f(x)`` and its gradient against eager's ``f(x)`` (a scalar result)."""
    x = x.detach().requires_grad_()
    out = compiled_f(x)
    out.backward()
    g, x.grad = x.grad, None
    want = f(x)
    want.backward()
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(g, x.grad)
