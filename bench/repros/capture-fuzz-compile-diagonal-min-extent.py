# fuzz repro (compile): seed 9994, program 4798; open. Under Dynamo's symbolic shapes diagonal's extent Min(s0, s1)
# meets out=c's s2 and the emitter cannot broadcast them (EmitError at optimize time, nothing written).
# fuzz repro (compile): crash [EmitError], seed 9994, program 4798; found by bench/fuzz.py
# python bench/fuzz.py --mode compile ... reduced it; eager vs satfuse:
#   EmitError: seg0: node copy = copy_(...): cannot broadcast dim 0 of (Min(s0, s1),) to (s2,) [emit.py:319]
import torch
import torch.nn.functional as F


def f(a, c, d):
    t4 = F.layer_norm(d, d.shape[-1:])
    t6 = t4.diagonal()
    torch.eq(a, t6, out=c)
    return (t6,)


def inputs(D0=0, v=0):
    a = mk((D0,), torch.float64, 776 + v, kind="plain")
    c = mk((D0,), torch.int64, 778 + v, kind="plain")
    d = mk((D0, D0), torch.float32, 779 + v, kind="plain")
    return [a, c, d]


SIZES_A = {'D0': 0}
SIZES_B = {'D0': 2}
