# fuzz repro (optimize): crash [optimize:SelfOverlapError], seed 9924, program 214; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   optimize raised SelfOverlapError: aten.mul_.Tensor: unsupported operation: some elements of the input tensor a
#   nd the written-to tensor refer to a single memory location. Please clone() the tensor before performing the op
#   eration. [functional.py:493]
# run on a GPU: SATFUSE_FUZZ_DEVICE=cuda python bench/repros/run.py gpu-safety-fuzz-foreach-fast-route-skips-overlap-checks.py


def f(b, i3):
    b.unsqueeze_(0)
    t1 = torch.zeros_like(b)
    t2 = torch.scatter(b, 0, i3, t1)
    torch._foreach_mul_([t1, t2], [t1, t2[::2]])
    return (t2,)


def inputs(v=0):
    b = mk((1,), torch.float32, 362 + v)
    i3 = ix((1, 1), 1, 364 + v, dim=0)
    return [b, i3]


SIZES_A = {}
SIZES_B = {}
