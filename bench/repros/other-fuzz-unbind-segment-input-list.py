# fuzz repro (jit): crash [SegmentError], seed 200, program 125; found by bench/fuzz.py
# python bench/fuzz.py --mode jit ... reduced it; eager vs satfuse:
#   SegmentError: seg0 failed: FrontendError: input v0: expected a tensor, got list [plan.py:103]
# the program only: `python bench/repros/run.py other-fuzz-unbind-segment-input-list.py` runs it (fuzz.py's helpers and runner)


def f(a):
    t1 = a.unbind(-1)[0]
    t6 = t1.isnan()
    return (t6,)


def inputs(D2=0, v=0):
    a = mk((D2,), torch.bool, 327 + v, kind="plain")
    return [a]


SIZES_A = {'D2': 0}
SIZES_B = {'D2': 1}
