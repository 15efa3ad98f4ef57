# fuzz repro (compile): wrong [no-raise], seed 400, program 81; found by bench/fuzz.py
# python bench/fuzz.py --mode compile ... reduced it; eager vs satfuse:
#   no-raise: call 1: eager raises IndexError: index is out of bounds for dimension with size 0; the plan returns
# the program only: `python bench/repros/run.py safety-fuzz-compile-oob-index-not-raised.py` runs it (fuzz.py's helpers and runner)


def f(b, i4):
    t0 = b.clone()
    t1 = t0[i4]
    return (t0,)


def inputs(v=0):
    b = mk((0,), torch.int64, 511 + v)
    i4 = ix((3,), 4, 514 + v)
    return [b, i4]


SIZES_A = {}
SIZES_B = {}
