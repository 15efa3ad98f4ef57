# fuzz repro (optimize): crash [optimize:OverflowError], seed 100, program 109; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   optimize raised OverflowError: cannot convert float infinity to integer [emit.py:373]
# the program only: `python bench/repros/run.py semantics-fuzz-softmax-int-empty-overflow.py` runs it (fuzz.py's helpers and runner)


def f(a):
    t0 = torch.softmax(a, 0)
    return (t0,)


def inputs(v=0):
    a = mk((0, 1), torch.int32, 598 + v, kind="plain")
    return [a]


SIZES_A = {}
SIZES_B = {}
