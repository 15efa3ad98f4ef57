"""Golden printed plans (inline expected text), each paired with a numeric check against eager.

A plan's text is what runs, so a change here is a change in what executes: read the diff.
Regenerate by printing ``lower(capture(fn, *args).trace, executor="reference")``."""

from __future__ import annotations

import torch
from satfuse.engine import capture
from satfuse.lowering import lower
from test_lowering_programs import PROGRAMS, run_and_compare


def assert_expected(actual: str, expected: str) -> None:
    if actual != expected:
        import difflib

        diff = "\n".join(difflib.unified_diff(expected.splitlines(), actual.splitlines(), "expected", "actual", lineterm=""))
        raise AssertionError("printed plan changed:\n" + diff)


def _plan(name):
    fn, make, dyn = PROGRAMS[name]
    c = capture(fn, *make(0), dynamic=dyn)
    return fn, make, lower(c.trace, hints=c.symbol_hints, executor="reference")


CE_PLAN = '''\
# satfuse plan: 2 segment(s), 1 fallback op(s), 1 torch view(s); nvFuser 0.2.36 (nvfuser_direct) mapping; executor: reference

def prologue(inputs):
    if len(inputs) != 2:
        fail(0, locals())
    x, y = inputs
    # x: f32[8, 16]
    if not (isinstance(x, Tensor) and x.dtype is dt_f32 and x.is_cpu and x.shape == (8, 16)):
        fail(1, locals())
    # y: i64[8]
    if not (isinstance(y, Tensor) and y.dtype is dt_i64 and y.is_cpu and y.shape == (8,)):
        fail(2, locals())
    return {}

@fusion
def seg0(fd):
    """seg0: 6 ops (amax, sub, exp, sum, log, sub)"""
    x = fd.define_tensor(shape=[8, 16], contiguity=[True, True], dtype=DataType.Float)
    amax0 = fd.ops.max(x, dims=[1], keepdim=True)
    amax0_b = fd.ops.broadcast_in_dim(amax0, shape=[8, 16], broadcast_dims=[0, 1])
    sub1 = fd.ops.sub(x, amax0_b)
    exp3 = fd.ops.exp(sub1)
    sum4 = fd.ops.sum(exp3, dims=[1], keepdim=True)
    log5 = fd.ops.log(sum4)
    log5_b = fd.ops.broadcast_in_dim(log5, shape=[8, 16], broadcast_dims=[0, 1])
    sub6 = fd.ops.sub(sub1, log5_b)
    fd.add_output(sub6)

@fusion
def seg1(fd):
    """seg1: 4 ops (squeeze, neg, sum, div)"""
    gather7 = fd.define_tensor(shape=[8, 1], contiguity=[True, None], dtype=DataType.Float)
    squeeze8 = fd.ops.squeeze(gather7, dims=[1])
    neg9 = fd.ops.neg(squeeze8)
    mean = fd.ops.sum(neg9, dims=[0], keepdim=False)
    mean10 = fd.ops.div(mean, fd.define_scalar(8.0, dtype=DataType.Float))
    fd.add_output(mean10)

def computation(inputs, env=None):
    if env is None:
        env = prologue(inputs)
    x, y = inputs
    [sub6] = seg0.execute([x])
    unsqueeze = eager.broadcast_in_dim(y, (8, 1), (0,))  # torch view: of a value from outside every segment (no kernel)
    gather7 = eager.gather(sub6, 1, unsqueeze)  # fallback: gather has no nvFuser code generation (own ATen segment) (notes/nvfuser.md)
    del sub6, unsqueeze
    [mean10] = seg1.execute([gather7])
    del gather7
    return [mean10]
'''


KV_PLAN_BODY = '''\
@fusion
def seg0(fd):
    """seg0: 3 ops (full, full, where)"""
    mask = fd.define_tensor(shape=[1, 1, 2, 3], contiguity=[None, None, True, True], dtype=DataType.Bool)
    scalar_tensor = fd.ops.full(shape=[], fill_value=float('-inf'), dtype=DataType.Float)
    scalar_tensor_1 = fd.ops.full(shape=[], fill_value=0.0, dtype=DataType.Float)
    scalar_tensor_1_b = fd.ops.broadcast_in_dim(scalar_tensor_1, shape=[1, 1, 2, 3], broadcast_dims=[])
    scalar_tensor_b = fd.ops.broadcast_in_dim(scalar_tensor, shape=[1, 1, 2, 3], broadcast_dims=[])
    where2 = fd.ops.where(mask, scalar_tensor_1_b, scalar_tensor_b)
    fd.add_output(where2)

# write-backs:
#   q: copy after index_copy1 = index_copy: its value comes from the torch call index_copy
#   k: copy after index_copy1 = index_copy: its value comes from the torch call index_copy

def computation(inputs, env=None):
    if env is None:
        env = prologue(inputs)
    q, k, v, mask, idx, src = inputs
    if not (not (q.requires_grad and q.is_leaf or k.requires_grad and k.is_leaf) or not torch.is_grad_enabled()): raise RuntimeError('a leaf Variable that requires grad is being used in an in-place operation (q, k).')  # check (builtin)
    index_copy0 = eager.index_copy(q, 2, idx, src)  # fallback: nvFuser has no index_copy/index_put binding (NVIDIA/Fuser python/python_direct/ops.cpp)
    index_copy1 = eager.index_copy(k, 2, idx, src)  # fallback: nvFuser has no index_copy/index_put binding (NVIDIA/Fuser python/python_direct/ops.cpp)
    q.copy_(index_copy0)  # write-back q <- index_copy0: its value comes from the torch call index_copy
    k.copy_(index_copy1)  # write-back k <- index_copy1: its value comes from the torch call index_copy
    [where2] = seg0.execute([mask])
    _scaled_dot_product_flash_attention_for_cpu, _scaled_dot_product_flash_attention_for_cpu3 = aten._scaled_dot_product_flash_attention_for_cpu.default(dense(index_copy0), dense(index_copy1), v, attn_mask=where2)  # fallback: opaque torch op
    del _scaled_dot_product_flash_attention_for_cpu3, index_copy0, index_copy1, where2
    return [_scaled_dot_product_flash_attention_for_cpu]
'''


def test_ce_forward_golden():
    fn, make, plan = _plan("ce")
    assert_expected(str(plan), CE_PLAN)
    for seed in (0, 1):
        run_and_compare(plan, fn, make(seed))


def test_kv_cache_golden():
    fn, make, plan = _plan("kv")
    text = str(plan)
    assert_expected(text[text.index("@fusion"):], KV_PLAN_BODY)
    for seed in (0, 1, 2):
        out, mutated = run_and_compare(plan, fn, make(seed))
        ref = make(seed)
        fn(*ref)
        assert torch.equal(mutated[0], ref[0]) and torch.equal(mutated[1], ref[1])  # q, k exactly as eager
