# found by bench/reuse_report.py --dtypes complex64 (mul, in-place variant, OpInfo reference sample 64),
# area: semantics (eager kernels). The same class as semantics-gelu-of-inf-depends-on-layout.py: eager's
# complex multiply answers an overflowing product differently by the path its loop takes (nan+infj on one,
# -inf+infj on the other), and the path depends on where it writes. Eager's x.mul_(y) writes into x's
# strided memory; the plan computes aten.mul(x, y) (the functional form, a fresh contiguous result) and
# copies it into x. tests/test_opinfo.py never ran this sample: it skips every in-place sample whose
# target torch._debug_has_internal_overlap cannot prove apart (TOO_HARD for any non-contiguous tensor),
# strided non-overlapping targets included.
import torch

import satfuse


def f(x, y):
    return x.mul_(y)


def strided() -> torch.Tensor:
    return torch.full((8,), complex(-1e20, -1e20), dtype=torch.complex64)[::2]


y = torch.tensor([complex(-1e20, -1e20), complex(-1e20, 1e20), complex(1e20, -1e20), complex(1e20, 1e20)],
                 dtype=torch.complex64)
plan = satfuse.optimize(f, strided(), y)
print("eager in place    ", f(strided(), y))           # nan+infj, -inf+nanj, ...
print("eager out of place", torch.mul(strided(), y))   # -inf+infj, -inf-infj, ...
print("satfuse           ", plan(strided(), y))         # as eager's out-of-place form
