# fuzz repro (optimize): crash [optimize:SelfOverlapError], seed 2000, program 117; found by bench/fuzz.py
# filed by semantics (fuzz seed 2000, optimize): an empty write (a[:, 1:] = 0 of shape (2, 0)) into an expanded tensor is allowed by eager (numel 0); capture raises SelfOverlapError
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   optimize raised SelfOverlapError: aten.fill_.Tensor: unsupported operation: more than one element of the writt
#   en-to tensor refers to a single memory location. Please clone() the tensor before performing the operation. [f
#   unctional.py:191]

def f(a, b):
    a[:, 1:] = 0
    return (b,)


def inputs(v=0):
    a = mk((1, 1), torch.bfloat16, 761 + v, kind="plain").expand(2, 1)
    b = mk((0, 0), torch.bool, 762 + v)
    return [a, b]


SIZES_A = {}
SIZES_B = {}
