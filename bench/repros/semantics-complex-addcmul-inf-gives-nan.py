# found by safety (bench/fuzz.py --mode optimize --seed 7008, program 286), area: semantics (complex emission)
# addcmul of a complex self/tensor1 by a real float tensor2 holding inf: eager inf+infj, plan nan+nanj
# (t1 * inf alone is right in both: the plan's complex product with the promoted real operand makes a nan).
import torch

import satfuse


def f(a, b, c):
    t1 = torch.div(a, b)
    return torch.addcmul(b, t1, c, value=2)


ins = [torch.tensor([[-4]]), torch.tensor([-1.3285 + 2.9921j]), torch.tensor([float("inf")])]
plan = satfuse.optimize(f, *ins)
print("eager  ", f(*ins))     # [[inf+infj]]
print("satfuse", plan(*ins))  # [[nan+nanj]]
