# fuzz repro (optimize): wrong [values], seed 100, program 8; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   values: call 1: output 0: Tensor-likes are not close! Mismatched elements: 9 / 27 (33.3%) Greatest absolute di
#   fference: nan at index (2, 1, 2) (up to 1e-07 allowed) Greatest relative difference: nan at index (2, 1, 2) (u
#   p to 1e-07 allowed); plan [-0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0] eager [-0.0, -0.0, -0.0, -0.0, -0.0
#   , -0.0, -0.0, -0.0]
# the program only: `python bench/repros/run.py semantics-fuzz-div-floor-inplace-nan.py` runs it (fuzz.py's helpers and runner)


def f(a, i1):
    t0 = torch.index_copy(a, -3, i1, torch.zeros_like(a).narrow(-3, 0, 2))
    t0.div_(-1, rounding_mode='floor')
    return (t0,)


def inputs(D0=3, v=0):
    a = mk((D0, D0, D0), torch.float64, 590 + v)
    i1 = ix((2,), 5, 591 + v, dim=0)
    return [a, i1]


SIZES_A = {'D0': 3}
SIZES_B = {'D0': 0}
