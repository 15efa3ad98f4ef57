# fuzz repro (compile): seed 9994, program 4728; open. eager's first error is index_put_'s IndexError on an empty
# tensor; the plan raises index_select's RuntimeError (inputs untouched). Fallible-op order or index_put_'s check.
# fuzz repro (compile): wrong [exception-type], seed 9994, program 4728; found by bench/fuzz.py
# python bench/fuzz.py --mode compile ... reduced it; eager vs satfuse:
#   exception-type: call 1: plan raises SegmentError: seg0 failed at plan line 46: index_select2 = fd.ops.index_se
#   lect(c, i4, dim=1) (IR: index_select2 = index_select): RuntimeError: index_select(): self indexing axis dim sh
#   ould be positive [plan.py:122]; eager IndexError: index is out of bounds for dimension with size 0
import torch


def f(a, b, c, i3, i4):
    t0 = torch.logical_or(b, b)
    b.index_put_((i3,), torch.tensor(2, dtype=b.dtype), accumulate=True)
    t2 = torch.index_select(c, -1, i4)
    return (t0,)


def inputs(v=0):
    a = mk((0, 0), torch.int32, 66 + v)
    b = mk((0,), torch.bool, 67 + v)
    c = mk((1, 0), torch.float32, 68 + v)
    i3 = ix((5,), 5, 69 + v)
    i4 = ix((1,), 4, 70 + v)
    return [a, b, c, i3, i4]


SIZES_A = {}
SIZES_B = {}
