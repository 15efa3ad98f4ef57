"""Rule obligations as data (rules/lang.egg): a plan that relies on an index being in range
checks it before any write and raises what eager raises, in every entry point."""

import pytest
import torch
import torch.nn.functional as F

import satfuse

X = torch.randn(4, 5)
GOOD = torch.tensor([0, 1, 2, 3])
BAD = [[0, 5, 2, 1], [0, -1, 2, 1], [0, 10**6, 2, 1]]


def ce(x, y):
    return F.cross_entropy(x, y)


def ce_ignore3(x, y):
    return F.cross_entropy(x, y, ignore_index=3)


def seed002(x, y):  # the hand-written form of seed 002
    return torch.gather(torch.log_softmax(x, 1), 1, y.unsqueeze(1)).squeeze(1).neg().mean()


def _entry(kind, fn):
    if kind == "optimize":
        return satfuse.optimize(fn, X, GOOD)
    if kind == "jit":
        return satfuse.jit(fn)
    torch._dynamo.reset()
    return torch.compile(fn, backend="satfuse")


def _eager_error(fn, *args):
    with pytest.raises(Exception) as ei:
        fn(*args)
    return ei.type


@pytest.mark.parametrize("kind", ["optimize", "jit", "compile"])
def test_ce_bad_targets_raise_like_eager(kind):
    cases = [(ce, y) for y in BAD] + [(ce_ignore3, [0, -100, 2, 1]), (seed002, [0, 5, 2, 1])]
    plans = {fn: _entry(kind, fn) for fn in (ce, ce_ignore3, seed002)}
    for fn, y in cases:
        x, y = X.clone(), torch.tensor(y)
        err = _eager_error(fn, x, y)
        with pytest.raises(err) as ei:
            plans[fn](x, y)
        # eager's type and words; a plan that relied on a rule also names it (a gather fallback is eager's own)
        assert ei.type is err and "out of bounds" in str(ei.value)
        assert fn is seed002 or "satfuse: obligation 'index-in-range' of rule gather/" in str(ei.value)
        assert torch.equal(x, X) and torch.equal(y, torch.tensor(y.tolist()))
    for fn, y in [(ce, [4, 0, 1, 2]), (ce_ignore3, [0, 3, 3, 1]), (seed002, [4, 4, 0, 1])]:  # valid: unchanged
        y = torch.tensor(y)
        torch.testing.assert_close(plans[fn](X, y), fn(X, y))


@pytest.mark.parametrize("kind", ["optimize", "jit", "compile"])
def test_ce_int32_targets_rejected_like_eager(kind):
    y = GOOD.int()
    err = _eager_error(ce, X, y)
    with pytest.raises(err, match="expected target dtype to be Long or Byte, but got Int"):
        if kind == "optimize":
            satfuse.optimize(ce, X, y)
        else:
            _entry(kind, ce)(X, y)


def test_ce_backward_bad_target_raises_like_eager():
    """The gradient's one-hot scatter carries the obligation too (no silent zero row)."""
    def grad(x, y):
        x = x.detach().requires_grad_()
        return torch.autograd.grad(F.cross_entropy(x, y), x)[0]

    plan = satfuse.optimize(grad, X, GOOD)
    assert any("gather/scatter-" in r for ob in plan.trace.obligations for r in ob.rules)
    torch.testing.assert_close(plan(X, GOOD), grad(X, GOOD))
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        plan(X, torch.tensor([0, 5, 2, 1]))

    torch._dynamo.reset()
    f = torch.compile(ce, backend="satfuse")
    x = X.clone().requires_grad_()
    f(x, GOOD).backward()
    torch.testing.assert_close(x.grad, grad(X, GOOD))
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        f(x, torch.tensor([0, 5, 2, 1])).backward()


def test_valid_ce_keeps_the_one_hot_plan_and_its_bytes():
    from satfuse.engine.costs import minimum_traffic, plan_traffic

    plan = satfuse.optimize(ce, X, GOOD)
    obs = plan.trace.obligations
    assert [ob.kind for ob in obs] == ["index-in-range"] and obs[0].eager_op == "aten.nll_loss_forward"
    # the lookup stays fused (one-hot or take_along_axis, by cost at this size): no gather fallback
    assert "fd.ops.iota" in str(plan) or "fd.ops.take_along_axis" in str(plan)
    assert "eager.gather(" not in str(plan)
    tr = plan_traffic(plan.lowered.steps, plan.trace)
    least = minimum_traffic(plan.trace).total
    # the checked index (4 x i64) is the only extra traffic between steps; inside the segment,
    # nvFuser's own split (the mean is another reduction signature: lowering/kernels.py) moves
    # only [4, 1] row statistics, never a [4, 5] value
    split = [m for m in tr.moves if m.role in ("split", "reread")]
    assert all(m.bytes <= 4 * 8 for m in split), split
    assert tr.total - sum(m.bytes for m in split) <= least + 4 * 8


@pytest.mark.parametrize("rule, name", [
    ('(rewrite (Exp x) (Sum x (ICons 0 (INil)) 0) :ruleset bad :name "bad/exp-to-sum")', "bad/exp-to-sum"),
    ('(rewrite (Exp x) (Cast (Exp x) "f64") :ruleset bad :name "bad/exp-to-f64")', "bad/exp-to-f64"),
])
def test_user_rule_changing_shape_or_dtype_is_a_rule_error(tmp_path, rule, name):
    """lang.egg's analyses are total over the constructors a rewrite may introduce, so equating
    values of different shapes or dtypes is always a conflict, reported with the rule's file:line."""
    from satfuse.engine.session import RuleError

    pack = tmp_path / "bad.egg"
    pack.write_text(f"(ruleset bad)\n\n; deliberately wrong\n{rule}\n")
    with pytest.raises(RuleError, match=rf"^{pack}:4: rule '{name}': equates values of different shapes or dtypes"):
        satfuse.optimize(lambda a: torch.exp(a) * 2, X, options={"rules": [pack]})


def _on_cuda(trace):
    """The same trace with every tensor on CUDA (emission only: nothing runs here)."""
    from satfuse.engine.ir import TensorType

    for v in [*trace.inputs, *(o for n in trace.nodes for o in n.outs)]:
        if isinstance(v.type, TensorType):
            object.__setattr__(v, "type", v.type.with_(device="cuda"))
    return trace


def test_cuda_data_check_is_a_flag_counted_in_the_segment_and_read_at_commit():
    """Issue 15 on CUDA (emitted; its cost is still to be measured on a GPU): the index test is
    part of the segment that computes the index, its count is copied to the host without
    blocking, and the plan waits on that copy's event (no device-wide sync, no .item() on a
    device tensor) after every step is queued, since CE writes no caller buffer."""
    import torch.nn.functional as F
    from satfuse.lowering import lower

    plan = satfuse.optimize(lambda x, y: F.cross_entropy(x, y), torch.randn(8, 16), torch.randint(0, 16, (8,)))
    text = str(lower(_on_cuda(plan.trace), executor="reference"))
    body = text[text.index("def computation"):]
    seg = text[text.index("@fusion"):text.index("def computation")]
    assert "fd.ops.logical_or(" in seg and "_nbad = fd.ops.sum(" in seg
    assert "non_blocking=True" in body and "torch.cuda.Event()" in body
    assert "torch.cuda.synchronize" not in body and "aminmax" not in body
    lines = [ln.strip() for ln in body.splitlines()]
    wait = next(i for i, ln in enumerate(lines) if ln.endswith("_ready.synchronize()"))
    assert lines[wait + 1].startswith("if not (") and "IndexError" in lines[wait + 1]
    assert all(".execute(" not in ln for ln in lines[wait:])  # every segment is queued before the wait


def test_a_check_of_a_reshaped_input_reads_the_input_and_no_segment_outputs_the_index():
    """A hand-written cross-entropy looks up ``target.unsqueeze(1)``, a reshape of an input. The
    check (on the CPU), its count (on CUDA) and its message read the input itself: the segment
    outputs no index, where on an H200 nvFuser returned it as a view of the target, which the plan
    then copied on every call (a device-to-device copy in CE's kernel list, bench/run.py)."""
    import re

    from satfuse.lowering import lower

    from tests.corpus import ce_hand

    x, y = torch.randn(8, 16), torch.randint(0, 16, (8,))
    plan = satfuse.optimize(ce_hand, x, y)
    for text in (plan.lowered.source, str(lower(_on_cuda(plan.trace), executor="reference"))):
        outputs = re.findall(r"fd\.add_output\((\w+)", text)
        assert outputs and not any(o.startswith("unsqueeze") for o in outputs), text
        assert "[(y < 0) | (y >= 16)]" in text, text
    bad = y.clone()
    bad[3] = 16
    with pytest.raises(RuntimeError, match=r"^index 16 is out of bounds"):
        plan(x, bad)
    assert torch.equal(bad[3], torch.tensor(16))


def test_cuda_flag_waits_before_the_first_write_when_the_plan_writes():
    from satfuse.engine import parse_trace
    from satfuse.engine.ir import Obligation
    from satfuse.lowering import lower

    tr = parse_trace('''
def f(x: "f32[4, 8]", i: "i64[4, 1]", out: "f32[4, 1]"):
  t = take_along_axis(x, i, dim=1)  # f32[4, 1]
  o1 = copy_(out, t)  # f32[4, 1]
  writeback(out, o1)
  return ()
''')
    i = tr.inputs[1]
    tr.obligations = [Obligation("index-in-range", ("test/rule",), (i, 8))]
    body = str(lower(_on_cuda(tr), executor="reference"))
    body = body[body.index("def f("):]
    lines = [ln.strip() for ln in body.splitlines()]
    wait = next(k for k, ln in enumerate(lines) if ln.endswith("_ready.synchronize()"))
    first_write = next(k for k, ln in enumerate(lines) if ln.startswith("out.copy_("))
    assert lines[wait - 1].endswith("read at the commit point") and wait < first_write
