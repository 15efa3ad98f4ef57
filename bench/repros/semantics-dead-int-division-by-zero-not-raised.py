# found by safety (optimize fuzz, seed 1000 program 127, reduced by hand): eager raises, satfuse returns.
# An integer fmod/remainder/floor-divide by zero raises "ZeroDivisionError" (RuntimeError) in eager even when
# its result is never used; the plan drops the dead op and its obligation, so it returns normally.
# (When the result is returned, the plan raises as eager does.)
import torch

import satfuse


def f(b, c):
    torch.fmod(b, b)  # dead, but eager evaluates it
    return c * 2


plan = satfuse.optimize(f, torch.tensor([1, 2]), torch.ones(2))
try:
    f(torch.tensor([0, 1]), torch.ones(2))
except RuntimeError as e:
    print("eager raises", e)
print("satfuse", plan(torch.tensor([0, 1]), torch.ones(2)))
