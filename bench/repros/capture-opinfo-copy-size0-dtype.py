# Found by fuzz (tests/test_opinfo.py, copy_ in float16 / bfloat16).
# eager: x.copy_(src) on an empty float16 x with a broadcast source works;
# satfuse: SegmentError "aliased output (0, 3) torch.float32 does not match its input (0, 3) torch.float16".
import torch

import satfuse

f = lambda x, s: x.copy_(s)  # noqa: E731
x, s = torch.zeros(0, 3, dtype=torch.float16), torch.ones(3, dtype=torch.float16)
print("eager:", f(x.clone(), s))
try:
    print("satfuse:", satfuse.optimize(f, x.clone(), s)(x.clone(), s))
except Exception as e:
    print("satfuse raises", type(e).__name__, str(e).splitlines()[0][:200])
