# fuzz repro (optimize): wrong [no-raise], seed 300, program 65; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   no-raise: call 2, new values: eager raises RuntimeError: ZeroDivisionError; the plan returns
# the program only: `python bench/repros/run.py semantics-fuzz-int-div-trunc-by-zero-not-raised.py` runs it (fuzz.py's helpers and runner)


def f(b):
    t0 = b.squeeze()
    t0.div_(t0, rounding_mode='trunc')
    return (b,)


def inputs(D1=3, v=0):
    b = mk((D1,), torch.int32, 164 + v)
    return [b]


SIZES_A = {'D1': 3}
SIZES_B = {'D1': 0}
