# found by safety (bench/fuzz.py --mode optimize --seed 7005, program 22), area: semantics (reduction emission)
# eager's CPU prod of a float16 tensor accumulates in float16 (rounds after every multiply: -0.9429);
# the plan accumulates in f32 and rounds once (-0.9424), one f16 ulp off, which the fuzzer's
# tolerance sees after a later mul_.
import torch

import satfuse

d = torch.tensor([2.3750, 1.8291, -0.0920, 0.5439, 4.3359], dtype=torch.float16)
plan = satfuse.optimize(lambda d: d.prod(0), d)
print("eager  ", d.prod(0))   # -0.9429
print("satfuse", plan(d))     # -0.9424
