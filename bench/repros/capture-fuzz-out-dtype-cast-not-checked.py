# fuzz repro (optimize): wrong [no-raise], seed 1, program 20; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   no-raise: call 1: eager raises RuntimeError: result type Float can't be cast to the desired output type Long;
#   the plan returns
# the program only: `python bench/repros/run.py capture-fuzz-out-dtype-cast-not-checked.py` runs it (fuzz.py's helpers and runner)


def f(a):
    t2 = torch.exp2(a)
    t4 = torch.bitwise_and(a, a)
    torch.remainder(t4, t2, out=a)
    return (t2,)


def inputs(v=0):
    a = mk((1, 1), torch.int64, 446 + v, kind="plain")
    return [a]


SIZES_A = {}
SIZES_B = {}
