# fuzz repro (jit): wrong [aliasing], seed 9962, program 2553; open: torch's meta strides differ from eager's
# eager's CPU logical_and of a bool [D0, 1] and a transposed bf16 [D0, D0] returns a column-major result
# (strides (1, 2)); torch's meta kernel (what capture traces on) says row-major (2, 1). So eager's
# t2.flatten() copies while capture's views, and the plan returns t2 and t6 sharing one buffer where
# eager's share nothing. Values are right; storage sharing is not. Capture trusts the fake tensor's
# strides for view-or-copy decisions; the fix is to take eager's output strides for TensorIterator ops
# (a probe on the real kernel, or TensorIterator's own stride rule where the meta one differs).
#   eager: torch.logical_and(a.isinf(), b.mT).stride() == (1, 2); under FakeTensorMode: (2, 1)
# python bench/repros/run.py NAME.py shows eager and satfuse side by side.
import torch


def f(a, b):
    t0 = a.isinf()
    t1 = b.mT
    t2 = torch.logical_and(t0, t1)
    t3 = t2.flatten()
    t6 = t3.select(-1, -4)
    return (t2, t6)


def inputs(D0=2, v=0):
    a = mk((D0, 1), torch.float32, 82 + v, kind="plain")
    b = mk((D0, D0), torch.bfloat16, 83 + v)
    return [a, b]


SIZES_A = {'D0': 2}
SIZES_B = {'D0': 0}
