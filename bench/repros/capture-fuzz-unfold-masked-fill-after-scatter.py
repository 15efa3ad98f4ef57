# fuzz repro (optimize): wrong [values], seed 300, program 7; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   values: call 1: output 0: Tensor-likes are not close! Mismatched elements: 25 / 125 (20.0%) Greatest absolute
#   difference: 1.0 at index (0, 0, 4) (up to 1e-05 allowed) Greatest relative difference: 1.0 at index (0, 0, 4)
#   (up to 0.0001 allowed); plan [1.5, 1.5, 1.5, 1.5, 0.0, 1.5, 1.5, 1.5] eager [1.5, 1.5, 1.5, 1.5, 1.0, 1.5, 1.5
#   , 1.5]
# the program only: `python bench/repros/run.py capture-fuzz-unfold-masked-fill-after-scatter.py` runs it (fuzz.py's helpers and runner)


def f(a, i1):
    t3 = torch.ones_like(a, dtype=torch.float32)
    t6 = torch.scatter(t3, -1, i1, torch.ones_like(i1, dtype=t3.dtype))
    t6.unfold(2, 2, 2).masked_fill_(t6.unfold(2, 2, 2) > 0, 1.5)
    return (t6,)


def inputs(D0=5, v=0):
    a = mk((D0, D0, D0), torch.float32, 591 + v)
    i1 = ix((5, 5, 0), 5, 592 + v, dim=2)
    return [a, i1]


SIZES_A = {'D0': 5}
SIZES_B = {'D0': 0}
