# fuzz repro (compile): wrong [values], seed 9994, program 1544, found by bench/fuzz.py at the end of the 2026-11-26 session; open, not analysed
# python bench/fuzz.py --mode compile ... reduced it; eager vs satfuse:
#   values: call 2, sizes {'D0': 3}: output 0: Tensor-likes are not close! Mismatched elements: 1 / 3 (33.3%) Grea
#   test absolute difference: nan at index (1,) (up to 1e-05 allowed) Greatest relative difference: nan at index (
#   1,) (up to 0.0001 allowed); plan [(2+0j), (nan+nanj), (2+0j)] eager [(2+0j), (2+0j), (2+0j)]
import torch


def f(a):
    a.expand(3).fill_(2)
    return (a, a)


def inputs(D0=0, v=0):
    a = mk((D0,), torch.complex64, 679 + v)
    return [a]


SIZES_A = {'D0': 0}
SIZES_B = {'D0': 3}
