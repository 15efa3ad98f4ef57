# found by safety (bench/fuzz.py --mode optimize --seed 7003, program 26), area: semantics (op emission)
# eager's CPU bf16 rsqrt rounds twice: sqrt rounded to bf16, then 1/that rounded again
# (rsqrt(0.2754) -> eager 1.9141, correctly rounded 1.9062); the plan computes rsqrt in f32 and
# rounds once, so x.rsqrt_() on bf16 differs by one ulp (and pow(t, t) afterwards amplifies it past tolerance).
# Measured 2026-11-26 over every positive bf16 and f16 value: eager's answer depends on layout and size.
# Its vectorized path (full 32-element chunks of a contiguous tensor) rounds once, as the plan does; its
# scalar path (tensors under 32 elements, the tail of a longer one, any strided tensor) rounds twice.
# 27% of values differ between the two. A plan carries values, not layouts, so it keeps the vectorized
# answer, which is what large tensors get. Open (found again: optimize seed 9989 #3966).
import torch

import satfuse


def f(a):
    a.rsqrt_()
    t3 = a.to(torch.float32)
    return (torch.pow(t3, t3),)


a = torch.tensor([[-6.0312], [0.2754]], dtype=torch.bfloat16)
plan = satfuse.optimize(f, a.clone())
x, y = a.clone(), a.clone()
print("eager  ", f(x), x)     # 3.4648, a = 1.9141
print("satfuse", plan(y), y)  # 3.4205, a = 1.9062
