# fuzz repro (optimize): crash [RuntimeError], seed 20007, program 208; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   RuntimeError: self.stride(-1) must be 1 to view Float as BFloat16 (different element sizes), but got 0 [<satfu
#   se plan>:39]
# area: semantics (eager kernels' operand layouts). The e-graph's where(c, x, x) -> x hands the opaque
# view(dtype) the caller's expanded input e (stride 0) where eager's kernel read where's fresh contiguous
# result: the plan raises where eager runs. lowering/plan.py's _operand passes an operand the plan holds
# in eager's layout (a caller's tensor) as it is, trusting that eager's kernel read that same tensor; a
# rewrite that replaces an operand by an equal value breaks that trust. A layout-dependent kernel (gelu of
# inf) in the same place would give a wrong value. Fix: capture records which operands of an opaque op
# were the caller's tensors (or views of them) in eager, and only those are passed as they are.

def f(e, i3):
    t0 = torch.where(e > 0, e, e)
    t0.view(torch.bfloat16).mul_(2)
    t4 = torch.index_copy(t0, -1, i3, torch.zeros_like(t0).narrow(-1, 0, 2))
    return (e,)


def inputs(D0=2, v=0):
    e = mk((1,), torch.float32, 123 + v, kind="plain").expand(D0,)
    i3 = ix((2,), 3, 124 + v, dim=0)
    return [e, i3]


SIZES_A = {'D0': 2}
SIZES_B = {'D0': 0}
