"""Ops whose result nothing uses still run as in eager when they can raise or draw random
numbers (``engine/fallible.py``, ``Trace.effects``): the e-graph and lowering would otherwise
drop them and the plan would return where eager raises. Reference: eager's exception type and
every input untouched; for random ops, the same numbers as eager after the same seed."""

import pytest
import torch
import torch.nn.functional as F
from satfuse.engine import capture
from satfuse.engine.fallible import effects
from satfuse.engine.printer import parse_trace
from semantics_util import check_jit, check_optimize

import satfuse


def dead_index(b, idx, c):
    b[idx]  # noqa: B018 - unused, but eager raises for an index out of range
    return c * 2


def dead_gather_then_write(x, idx, y):
    torch.gather(x, 0, idx)  # unused
    y.add_(1)
    return y * 3


def dead_int_fmod(b, c):
    torch.fmod(b, b)  # unused: an integer fmod by zero raises
    return c * 2


def dead_int_floor_divide(b, c):
    b // b  # noqa: B018
    return c + 1


def _modes():
    return [("optimize", lambda f, a: satfuse.optimize(f, *a)),
            ("jit", lambda f, a: satfuse.jit(f, dynamic=True))]


CASES = [
    (dead_index, (torch.randn(3, 2), torch.tensor([0, 2]), torch.ones(2)),
     (torch.randn(3, 2), torch.tensor([0, 3]), torch.ones(2)), IndexError),
    (dead_gather_then_write, (torch.randn(3, 2), torch.tensor([[0, 2]]), torch.zeros(2)),
     (torch.randn(3, 2), torch.tensor([[0, 5]]), torch.zeros(2)), RuntimeError),
    (dead_int_fmod, (torch.tensor([1, 2]), torch.ones(2)), (torch.tensor([0, 1]), torch.ones(2)), RuntimeError),
    (dead_int_floor_divide, (torch.tensor([1, 2]), torch.ones(2)), (torch.tensor([3, 0]), torch.ones(2)),
     RuntimeError),
]


@pytest.mark.parametrize("mode,make", _modes(), ids=[m for m, _ in _modes()])
@pytest.mark.parametrize("fn,good,bad,error", CASES, ids=[c[0].__name__ for c in CASES])
def test_dead_fallible_op_raises_like_eager(mode, make, fn, good, bad, error):
    plan = make(fn, [a.clone() for a in good])
    got_in = [a.clone() for a in good]
    want_in = [a.clone() for a in good]
    torch.testing.assert_close(plan(*got_in), fn(*want_in))
    for g, w in zip(got_in, want_in):
        assert torch.equal(g, w)
    with pytest.raises(error):
        fn(*[a.clone() for a in bad])
    got_in = [a.clone() for a in bad]
    with pytest.raises(error):
        plan(*got_in)
    for g, w in zip(got_in, bad):
        assert torch.equal(g, w), "an input was written before the plan raised"


def test_a_dead_bitcast_eager_refuses_for_an_intermediates_strides_still_runs():
    """Eager's ``F.pad(x, (-1, 0))`` of an expanded ``x`` keeps stride 0 on the one element left, and
    a bitcast to another element size needs ``stride(-1) == 1``: an unused ``.view(torch.float32)``
    of it raises. A view was dropped as dead, failing only on metadata the guards fix; this one
    checks an intermediate's strides (jit fuzz 10092 #365, ``fallible.LAYOUT_CHECKED``)."""

    def f(a, c):
        F.pad(a, (-1, 0)).view(torch.float32)  # unused
        return c * 2

    a, c = torch.randn(1, dtype=torch.complex64).expand(2), torch.ones(2)
    with pytest.raises(RuntimeError, match="stride"):
        f(a, c)
    for _, make in _modes():
        with pytest.raises(RuntimeError, match="stride"):
            make(f, [a, c])(a, c)
    ok = torch.randn(3, dtype=torch.complex64)
    for _, make in _modes():
        torch.testing.assert_close(make(f, [ok, c])(ok, c), c * 2)


def test_a_dead_bitcast_of_a_value_eager_made_fresh_reads_a_fresh_tensors_strides():
    """``torch.where(c, a, a)`` is ``a``, but eager's is a fresh tensor: of an empty ``a`` of stride 2,
    stride 1. The plan held ``a`` itself, ``flip`` kept its stride 2, and the unused bitcast raised
    where eager's ran (optimize fuzz 9932 #2292): an operand eager had contiguous is handed over with
    a fresh tensor's strides, those torch's ``is_contiguous`` ignores too (``vocab.dense``)."""

    def f(a):
        torch.where(a > 0, a, a).flip(-1).view(torch.bfloat16)  # unused
        return a * 2

    for a in (torch.randn(0)[::2], torch.randn(8)[::2], torch.randn(1, 6)[:, ::6]):
        for _, make in _modes():
            torch.testing.assert_close(make(f, [a])(a), a * 2)


def test_dead_random_op_draws_as_eager():
    def f(x):
        torch.rand(3)  # unused, but it advances the generator
        return x + torch.rand(3)

    plan = satfuse.optimize(f, torch.zeros(3))
    torch.manual_seed(0)
    want = f(torch.zeros(3))
    torch.manual_seed(0)
    torch.testing.assert_close(plan(torch.zeros(3)), want)


def test_effects_are_named_once_and_print():
    tr = capture(dead_gather_then_write, torch.randn(3, 2), torch.tensor([[0, 2]]), torch.zeros(2)).trace
    eff = effects(tr)
    assert [n.op for n in tr.nodes if any(o is eff[0] for o in n.outs)] == ["gather"]
    tr.effects = eff
    text = str(tr)
    assert "effect(" in text
    assert len(parse_trace(text).effects) == 1


def test_no_effects_without_dead_fallible_ops():
    def f(x, idx):
        x * 2  # noqa: B018 - unused and cannot raise: dropped as before
        return x[idx]

    tr = capture(f, torch.randn(3), torch.tensor([0, 2])).trace
    assert effects(tr) == []


def test_plan_explains_the_kept_op():
    plan = satfuse.optimize(dead_index, torch.randn(3, 2), torch.tensor([0, 2]), torch.ones(2))
    assert "effect(" in str(plan.trace)  # the chosen program says why the unused index op is there


def test_negative_pad_of_an_empty_dim_raises_like_eager():
    def f(x):
        F.pad(x, (1, -1))  # unused; eager's narrow refuses a negative length
        return x * 2

    x = torch.randn(3, 0)
    with pytest.raises(RuntimeError):
        f(x)
    with pytest.raises(RuntimeError):
        satfuse.optimize(f, x)(x)


def unused_as_strided_past_storage(a):
    t0 = torch.rsqrt(a)
    t0.as_strided((2,), (1,))  # unused; eager refuses a view past the storage
    return t0


def write_through_diagonal_grows(b):
    t3 = b * 2
    t3.diagonal().ne_(b)  # the diagonal [1] cannot take the broadcast shape [1, 2]
    return b + 1


@pytest.mark.parametrize("fn,x", [(unused_as_strided_past_storage, torch.zeros(0, 0, 0)),
                                  (write_through_diagonal_grows, torch.ones(1, 2, dtype=torch.int64))],
                         ids=["as_strided", "inplace_broadcast"])
def test_shape_refusals_eager_makes_in_every_mode(fn, x):
    """Checks eager's kernels make on shapes alone, which fake tensors skip (found by bench/fuzz.py,
    jit seed 9001 #63 and #74): raised in ``optimize``, and by ``jit`` with symbolic extents too."""
    with pytest.raises(RuntimeError):
        fn(x.clone())
    with pytest.raises(RuntimeError):
        satfuse.optimize(fn, x.clone())
    for dynamic in (True, False):
        with pytest.raises(RuntimeError):
            satfuse.jit(fn, dynamic=dynamic)(x.clone())


def test_out_dtype_refusal_of_the_kernel():
    """``bitwise_not(bool, out=float)``: eager's kernel refuses the out dtype (value-independent),
    even for an empty tensor (found by bench/fuzz.py, optimize seed 7002 #412)."""

    def f(b):
        t0 = torch.cat([b, b], -2)
        torch.bitwise_not(torch.logical_or(t0, t0), out=t0)
        return t0

    for x in (torch.zeros(0, 1), torch.zeros(2, 1)):
        with pytest.raises(RuntimeError):
            f(x.clone())
        with pytest.raises(RuntimeError):
            satfuse.optimize(f, x.clone())


def test_compile_keeps_an_unused_op_that_raises():
    """Dynamo keeps an unused ``gather`` in its graph, AOTAutograd's trace would drop it: the backend
    captures such a graph itself (found by bench/fuzz.py, compile seed 9101 #62)."""

    def f(e, i2):
        t1 = e.to(torch.float32).atan()
        torch.gather(t1, 0, i2)
        return t1

    torch._dynamo.reset()
    fn = torch.compile(f, backend="satfuse")
    e = torch.zeros(3)
    torch.testing.assert_close(fn(e, torch.tensor([1, 2])), f(e, torch.tensor([1, 2])))
    with pytest.raises(RuntimeError):
        fn(torch.zeros(0), torch.tensor([1, 2]))


def test_fallible_op_read_only_for_its_shape_still_runs():
    """``t.fmod_(b); t.copy_(b)``: the fmod is read only as copy_'s destination (its shape), the
    e-graph rewrites the copy to ``b`` and the integer fmod by zero vanished (optimize fuzz seed
    1205 #257): eager raises ZeroDivisionError, so must the plan."""
    def f(b):
        t = b.clone()
        t.detach().fmod_(b)
        t.detach().copy_(b)
        return t

    plan = satfuse.optimize(f, torch.tensor(1))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(torch.tensor(0))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        plan(torch.tensor(0))
    assert torch.equal(plan(torch.tensor(3)), f(torch.tensor(3)))


def test_an_obligation_check_runs_after_the_op_whose_result_it_guards_reads():
    """``c.index_put_(...)`` then ``gather(t0, -1, i5)`` with ``t0`` c itself, both failing on an empty
    ``c``: eager raises index_put's IndexError first. The gather's obligation check (its rule made a
    take_along_axis) ran as early as its index was known, before the index_put call, so the plan
    raised the gather's RuntimeError (found by bench/fuzz.py, compile seed 9703 #3325)."""

    def f(c, i4, i5):
        t0 = c.to(torch.float32)
        c.index_put_((i4,), torch.tensor(-0.0, dtype=c.dtype), accumulate=False)
        torch.gather(t0, -1, i5)
        return (t0,)

    args = (torch.zeros(0), torch.tensor([1, 0, 1]), torch.tensor([1, 0]))
    with pytest.raises(IndexError):
        f(*[a.clone() for a in args])
    torch._dynamo.reset()
    c = args[0].clone()
    with pytest.raises(IndexError):
        torch.compile(f, backend="satfuse")(c, *args[1:])
    assert c.shape == (0,)


@pytest.mark.parametrize("index_first", [True, False])
def test_two_failing_index_ops_raise_in_program_order(index_first):
    """Two unused index ops that both fail: eager raises the first in program order (x[i]'s
    IndexError, or gather's RuntimeError). A rule's obligation check carries its op's program
    position and runs after every fallible step of an earlier op."""

    def f(x, i, j):
        if index_first:
            x[i]
            torch.gather(x, 0, j)
        else:
            torch.gather(x, 0, j)
            x[i]
        return x * 2

    x, i, j = torch.randn(4), torch.tensor([1]), torch.tensor([0])
    plan = satfuse.optimize(f, x, i, j)
    bad = (x, torch.tensor([9]), torch.tensor([9]))
    want = IndexError if index_first else RuntimeError
    with pytest.raises(want) as eager:
        f(*bad)
    with pytest.raises(want) as got:
        plan(*bad)
    assert type(got.value) is type(eager.value)


def test_addcdiv_of_integers_is_refused_like_eager_even_unused():
    """Eager's ``addcdiv`` refuses integer tensors before reading them (even empty ones); the
    decomposition computed it, and an unused result hid the op (found by bench/fuzz.py,
    optimize seed 9911 #2726)."""

    def f(b):
        torch.addcdiv(b, b, b)
        return b * 2

    for x in (torch.zeros(1, 0, 1, dtype=torch.int64), torch.arange(4)):
        with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
            f(x.clone())
        with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
            satfuse.optimize(f, x.clone())


@pytest.mark.parametrize("mode", ["optimize", "jit", "compile"])
def test_two_failing_fallback_index_ops_raise_in_program_order(mode):
    """An unused ``index_copy_`` then a returned ``scatter``, both out of range: eager raises
    index_copy_'s IndexError; the plan ran the scatter first (the decoder walks from the outputs,
    and a fallback that may raise ran as soon as it was ready) and raised its RuntimeError (found
    by bench/fuzz.py, compile seed 9923 #760). Index ops now keep the program's order among the
    ops that can raise, through the index operands' ranks."""

    def f(a, i1, i2):
        t0 = torch.maximum(a, a)
        t0.index_copy_(-1, i1, i1)
        return torch.scatter(a, -1, i2, i1)

    i1, i2 = torch.tensor([3, 0, 1, 2, 4]), torch.tensor([4, 0, 1, 2, 3])
    good = torch.arange(5), torch.arange(5)
    a = torch.zeros(5, dtype=torch.int64)
    if mode == "optimize":
        plan = satfuse.optimize(f, a, *good)
    elif mode == "jit":
        plan = satfuse.jit(f, dynamic=True)
    else:
        torch._dynamo.reset()
        plan = torch.compile(f, backend="satfuse")
    assert torch.equal(plan(a, *good), f(a, *good))
    small = torch.zeros(1 if mode != "optimize" else 5, dtype=torch.int64)
    bad = (i1 + 5, i2 + 5) if mode == "optimize" else (i1, i2)
    with pytest.raises(IndexError, match="index_copy"):
        f(small.clone(), *bad)
    with pytest.raises(IndexError, match="index_copy"):
        plan(small, *bad)


def test_two_failing_fallbacks_raise_in_program_order():
    """``scatter`` (waiting on a segment that makes its source) then ``index_fill_`` (ready at
    once), both out of range: eager raises scatter's RuntimeError. A schedule that ran every group
    that may raise as soon as it was ready raised index_fill's IndexError first (found by
    bench/fuzz.py, jit seed 9902 #7344, on bcf7fe3; fixed by the fallible chain of 84ef146)."""

    def f(a, i1, i2):
        t0 = torch.scatter(a, 0, i1, torch.ones_like(i1, dtype=a.dtype))
        a.index_fill_(0, i2, float("nan"))
        return t0

    i1, i2 = torch.tensor([0, 1, 3]), torch.tensor([1, 2, 3, 0])
    for a in (torch.randn(2, dtype=torch.float64), torch.randn(5, dtype=torch.float64)):
        check_optimize(f, a, i1, i2)
    check_jit(f, (torch.randn(5, dtype=torch.float64), i1, i2), (torch.randn(2, dtype=torch.float64), i1, i2))


@pytest.mark.parametrize("mode", ["optimize", "compile"])
def test_a_fused_index_op_waits_for_an_earlier_failing_fallback(mode):
    """``index_put_`` (a torch fallback whose value operand a segment makes) then an unused
    ``index_select``, both failing: eager raises index_put_'s IndexError. The index_select had
    joined the segment making that value, which runs before the fallback, and raised its
    RuntimeError (found by bench/fuzz.py, compile seed 9994 #4728). A node that may raise no
    longer joins a segment older than a group holding an earlier op that may raise."""

    def f(b, c, i, j):
        b.index_put_((i,), torch.tensor(2, dtype=b.dtype), accumulate=True)
        torch.index_select(c, -1, j)
        return (b,)

    def args():
        return torch.zeros(0, dtype=torch.bool), torch.zeros(1, 0), torch.tensor([1, 2, 0]), torch.tensor([3])

    if mode == "optimize":
        plan = satfuse.optimize(f, *args())
    else:
        torch._dynamo.reset()
        plan = torch.compile(f, backend="satfuse")
    with pytest.raises(IndexError, match="out of bounds"):
        f(*args())
    with pytest.raises(IndexError, match="out of bounds"):
        plan(*args())


@pytest.mark.parametrize("mode", ["optimize", "compile"])
def test_an_obligation_check_waits_for_an_earlier_fused_index_op(mode):
    """An unused ``index_select`` then a ``gather`` whose rule adds an index-in-range check, both
    failing: eager raises index_select's IndexError. The two had fused into one segment and the
    gather's check, which runs before the segment reading its index, raised first (found by
    bench/fuzz.py, compile seed 9997 #5889). A node reading a checked index no longer joins a
    segment holding an op that may raise; the segment's own failure is eager's exception type."""

    def f(b, c, i, j):
        torch.index_select(b, 0, i)
        return torch.gather(c, -1, j)

    def args(n):
        return torch.zeros(n, dtype=torch.float16), torch.zeros(n), torch.tensor([3, 1]), torch.tensor([3, 1])

    if mode == "optimize":
        plan = satfuse.optimize(f, *args(5))
        bad = (torch.zeros(5, dtype=torch.float16), torch.zeros(5), torch.tensor([7, 1]), torch.tensor([9, 1]))
    else:
        torch._dynamo.reset()
        plan = torch.compile(f, backend="satfuse")
        bad = args(0)
    with pytest.raises(IndexError, match="index out of range in self"):
        f(*bad)
    with pytest.raises(IndexError, match="index out of range in self"):
        plan(*bad)
