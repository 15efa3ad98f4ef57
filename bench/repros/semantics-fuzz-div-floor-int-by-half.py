# fuzz repro (optimize): wrong [values], seed 100, program 136; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   values: call 2, new values: output 0: Tensor-likes are not close! Mismatched elements: 1 / 1 (100.0%) Greatest
#    absolute difference: nan at index (0, 0) (up to 0.001 allowed) Greatest relative difference: nan at index (0,
#    0) (up to 0.004 allowed); plan [inf] eager [nan]
# the program only: `python bench/repros/run.py semantics-fuzz-div-floor-int-by-half.py` runs it (fuzz.py's helpers and runner)


def f(a, b):
    t0 = b.permute(1, 0)
    t1 = torch.div(t0, a, rounding_mode='floor')
    return (t1,)


def inputs(v=0):
    a = mk((1, 1), torch.int64, 82 + v)
    b = mk((1, 1), torch.float16, 83 + v)
    return [a, b]


SIZES_A = {}
SIZES_B = {}
