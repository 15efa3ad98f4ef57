# fuzz repro (optimize): wrong [no-raise], seed 1, program 25; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   no-raise: call 1: eager raises NotImplementedError: "bitwise_not_cpu" not implemented for 'Float'; the plan re
#   turns
# the program only: `python bench/repros/run.py semantics-fuzz-dead-op-eager-rejects.py` runs it (fuzz.py's helpers and runner)


def f(a):
    t0 = a.detach()
    t2 = t0.prod()
    t4 = torch.bitwise_not(t2)
    return (a,)


def inputs(v=0):
    a = mk((), torch.float32, 191 + v)
    return [a]


SIZES_A = {}
SIZES_B = {}
