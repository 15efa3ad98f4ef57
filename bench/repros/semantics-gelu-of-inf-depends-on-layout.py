# found by bench/fuzz.py --mode optimize --seed 9981, program 3124, area: semantics (eager kernels)
# eager's CPU gelu of +inf is nan on its vectorized path (a contiguous tensor) and inf on its strided
# path: eager's answer depends on the operand's memory layout. The program writes a transposed input in
# place (index_add_) and applies gelu to it: eager takes the strided path (inf); the plan's value of the
# written input is contiguous, so the same eager kernel takes the vectorized path (nan). A plan carries
# values, not layouts (DESIGN.md), so it cannot choose eager's path. Open.
import math

import torch
import torch.nn.functional as F

import satfuse

x = torch.full((3, 3), math.inf)
print("eager contiguous", F.gelu(x)[0])      # nan
print("eager strided   ", F.gelu(x.t())[0])  # inf


def f(c, i):
    c.index_add_(0, i, torch.zeros(2, 3))
    return F.gelu(c)


c, i = torch.full((3, 3), math.inf).t(), torch.tensor([0, 2])
plan = satfuse.optimize(f, c.clone(), i)
print("eager  ", f(c.clone(), i)[0])          # inf (strided)
print("satfuse", plan(c.clone(), i)[0])       # nan (contiguous)
