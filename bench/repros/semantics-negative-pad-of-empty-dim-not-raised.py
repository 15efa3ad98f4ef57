# Found by jitcompile (bench/fuzz.py --mode jit --seed 3000 #55, --mode compile --seed 4100 #157); optimize mode too.
# eager: F.pad(x, (1, -1)) on x of shape (3, 0) raises RuntimeError "narrow(): length must be non-negative."
# satfuse: optimize(f, x)(x) returns x * 2 (the fake/meta constant_pad_nd does not check; the probe does not catch it).
import torch
import torch.nn.functional as F

import satfuse


def f(x):
    t = F.pad(x, (1, -1))  # noqa: F841 - dead, but eager raises on it
    return x * 2


x = torch.randn(3, 0)
try:
    f(x)
except RuntimeError as e:
    print("eager raises:", e)
print("satfuse:", satfuse.optimize(f, x)(x).shape)
