# Found by fuzz (tests/test_opinfo.py, index_copy in-place variant, 0-d bfloat16 self), main @ fe025d9.
# eager: x.index_copy_(0, idx, src) on 0-d x works; satfuse: optimize raises IndexError: tuple index out of range.
import torch

import satfuse

f = lambda x, i, s: x.index_copy_(0, i, s)  # noqa: E731
x, i, s = torch.tensor(1.5, dtype=torch.bfloat16), torch.tensor([0]), torch.tensor(-2.0, dtype=torch.bfloat16)
print("eager:", f(x.clone(), i, s))
try:
    print("satfuse:", satfuse.optimize(f, x.clone(), i, s)(x.clone(), i, s))
except Exception as e:
    print("satfuse raises", type(e).__name__, str(e).splitlines()[0][:200])
