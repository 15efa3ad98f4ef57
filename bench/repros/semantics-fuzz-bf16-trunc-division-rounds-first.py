# fuzz repro (jit): seed 9993, program 8071; open. div(d_bf16, b_f64_0d, rounding_mode='trunc'): the plan seems to round
# the quotient to bf16 before truncating (-0.99.. -> -1.0), eager truncates in float first. Not analysed further.
# fuzz repro (jit): wrong [values], seed 9993, program 8071; found by bench/fuzz.py
# python bench/fuzz.py --mode jit ... reduced it; eager vs satfuse:
#   values: call 2, sizes {'D0': 3}: output 0: Tensor-likes are not close! Mismatched elements: 1 / 9 (11.1%) Grea
#   test absolute difference: 1.0 at index (1, 1, 0) (up to 0.01 allowed) Greatest relative difference: inf at ind
#   ex (1, 1, 0) (up to 0.03 allowed); plan [0.0, 0.0, 0.0, 0.0, -1.0, 0.0, -0.0, 0.0] eager [0.0, 0.0, 0.0, 0.0,
#   -0.0, 0.0, -0.0, 0.0]
import torch


def f(b, d):
    t1 = torch.div(d, b, rounding_mode='trunc')
    return (t1,)


def inputs(D0=0, v=0):
    b = mk((), torch.float64, 588 + v, kind="plain")
    d = mk((D0, D0, 1), torch.bfloat16, 590 + v)
    return [b, d]


SIZES_A = {'D0': 0}
SIZES_B = {'D0': 3}
