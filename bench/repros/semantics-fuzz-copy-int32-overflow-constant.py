# fuzz repro (optimize): crash [SegmentError], seed 300, program 400; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   SegmentError: seg0 failed at plan line 21: copy = fd.ops.full(shape=[], fill_value=2147483648, dtype=DataType.
#   Int32) (IR: copy = copy_): RuntimeError: value cannot be converted to type int without overflow [plan.py:103]
# the program only: `python bench/repros/run.py semantics-fuzz-copy-int32-overflow-constant.py` runs it (fuzz.py's helpers and runner)


def f(a):
    t1 = a.flatten()
    t6 = t1.amax(0, keepdim=False)
    t6.copy_(2**31)
    return (t6,)


def inputs(v=0):
    a = mk((1, 1), torch.int32, 356 + v)
    return [a]


SIZES_A = {}
SIZES_B = {}
