# found by bench/fuzz.py --mode optimize --seed 9981, program 3124, area: semantics (eager kernels)
# eager's CPU gelu of +inf is nan on its vectorized path (a contiguous tensor) and inf on its strided
# path: eager's answer depends on the operand's memory layout. An op that runs as eager's kernel now
# reads each operand laid out as capture saw eager's (vocab.EAGER_STRIDES: views, transposes and
# intermediates are exact, tests/test_semantics.py). Still open for inputs: capture takes an input to be
# contiguous, so here (a transposed input written in place by index_add_, then gelu) eager takes the
# strided path (inf) and the plan the vectorized one (nan). bench/fuzz.py counts it under "eager's answer
# on contiguous inputs".
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
