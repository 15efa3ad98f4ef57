# fuzz repro (optimize): crash [optimize:EagerError], seed 20004, program 53; open: a refusal with the wrong reason
# torch.bitwise_and(t0, t3, out=a) broadcasts [1, 0, 0] with the transposed view t3 [0, 0, 1] to
# [0, 0, 0], and eager resizes the empty out= tensor a to it. satfuse refuses any program that resizes
# an input (a plan cannot change the caller's tensor's shape), but here functionalization re-derives
# the view t3 from a's new shape first, and circular pad's in-place copy into t3 then looks like a write
# eager refuses: optimize raises EagerError ("output with shape [0, 0, 1] doesn't match the broadcast
# shape [0, 0, 0]") where eager returns. Inputs are untouched and nothing wrong is returned; the right
# answer is the listed out= resize refusal.
import torch
import torch.nn.functional as F


def f(a):
    t0 = a.detach()
    t3 = a.chunk(2, 0)[0]
    t3.transpose_(0, 2)
    torch.bitwise_and(t0, t3, out=a)
    t9 = F.pad(t3, (0, 0), mode='circular')
    return (t9,)


def inputs(v=0):
    a = mk((1, 0, 0), torch.bool, 392 + v, kind="plain")
    return [a]


SIZES_A = {}
SIZES_B = {}
