# found by bench/fuzz.py --mode jit --seed 9991, program 5191, area: semantics (layer_norm statistics)
# eager's CPU layer_norm of a float32 row holding 1e30 computes its variance in float32, which
# overflows: the whole row is nan. The plan computes the statistics in float64 (closer to eager on
# every ordinary row, see engine/capture/trace.py _layer_norm) and stays finite: [-0.71, 1.41, -0.71],
# which is also what a float64 run gives. A float output passes the fuzzer's float64 criterion; a
# comparison of it (ge(t, -0.0)) differs in a boolean. Open: eager's float32 Welford would be needed
# to reproduce the overflow.
import torch
import torch.nn.functional as F

import satfuse

d = torch.tensor([[-2.641378164291382, 1e30, 0.5469024777412415]])
plan = satfuse.optimize(lambda d: F.layer_norm(d, d.shape[-1:]), d)
print("eager  ", F.layer_norm(d, d.shape[-1:]))   # nan, nan, nan
print("satfuse", plan(d))                          # -0.7071, 1.4142, -0.7071
print("float64", F.layer_norm(d.double(), d.shape[-1:]))
