# fuzz repro (optimize): wrong [no-raise], seed 100, program 456; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   no-raise: call 1: eager raises RuntimeError: unsupported operation: some elements of the input tensor and the
#   written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation
#   .; the plan returns
# the program only: `python bench/repros/run.py safety-fuzz-scatter-self-overlap-not-rejected.py` runs it (fuzz.py's helpers and runner)


def f(a, i1):
    t2 = a.tan()
    t2.scatter_(0, i1, t2)
    return (t2,)


def inputs(D1=2, v=0):
    a = mk((D1,), torch.float32, 445 + v)
    i1 = ix((2,), 2, 447 + v, dim=0)
    return [a, i1]


SIZES_A = {'D1': 2}
SIZES_B = {'D1': 0}
