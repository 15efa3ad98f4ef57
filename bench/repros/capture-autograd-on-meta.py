# capture: a program that calls torch.autograd.grad cannot be captured from meta inputs.
# Found by `cost` (issue 19) running bench/run.py: the CE fwd+bwd rows fail at capture.
# eager on meta: F.cross_entropy + autograd.grad works (meta tensors have no data, grads flow);
# satfuse.optimize on meta inputs: TracingError "The differentiated Tensor at index 0 appears to
# not have been used in the graph" (with a warning that aten::nll_loss has no autograd kernel:
# the fake tensors of meta inputs dispatch nll_loss to its Meta kernel below Autograd).
# The same program on CPU inputs captures fine. bench/run.py works around it by capturing
# autograd programs from uninitialized CPU tensors (torch.empty: pages never touched).
# Cause (jitcompile, 2026-11-24): capture traces under enable_python_dispatcher (as AOTAutograd); there
# aten.nll_loss has a Python kernel at DispatchKey.Meta, so torch._ops.resolve_key for AutogradMeta sees a
# "backend kernel" and skips the CompositeImplicitAutograd decomposition: nll_loss gets the autograd
# not-implemented fallback and no grad_fn. make_fx(ce_fwd_bwd, tracing_mode="symbolic") on the meta inputs
# fails the same way without satfuse ("fake" and "real" modes work); CPU fakes resolve AutogradCPU normally.
import torch
import torch.nn.functional as F

import satfuse


def ce_fwd_bwd(x, y):
    x = x.detach().requires_grad_()
    loss = F.cross_entropy(x, y)
    (g,) = torch.autograd.grad(loss, x)
    return loss, g

x, y = torch.empty(8, 16, device="meta"), torch.zeros(8, dtype=torch.long, device="meta")
print([t.shape for t in ce_fwd_bwd(x, y)])       # eager: fine
satfuse.optimize(ce_fwd_bwd, x, y)                # satfuse: TracingError
