# found by safety (bench/fuzz.py --mode optimize, seeds 7003 #322, 7004 #407, 7005 #322), area: semantics
# layer_norm of a size-1 last dim holding 1e30: eager's row is nan (its variance overflows in f32), the plan gives
# 0 (x - mean is 0). Same class as bench/repros/semantics-fuzz-layer-norm-overflow-nan.py (still open).
import torch
import torch.nn.functional as F

import satfuse


def f(b):
    return F.layer_norm(b, b.shape[-1:])


x = torch.tensor([[1e30], [0.79]])
plan = satfuse.optimize(f, torch.randn(2, 1))
print("eager  ", f(x))      # [[nan], [0.]]
print("satfuse", plan(x))   # [[0.], [0.]]
