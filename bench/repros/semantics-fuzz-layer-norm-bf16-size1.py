# fuzz repro (jit): wrong [values], seed 3100, program 49; found by bench/fuzz.py
# Found by jitcompile (bench/fuzz.py --mode jit --seed 3100): layer_norm over a last dim of size 1 in bfloat16, then logical_not; eager vs satfuse below.
# python bench/fuzz.py --mode jit ... reduced it; eager vs satfuse:
#   values: call 2, sizes {'D0': 0, 'D1': 1}: output 0: Tensor-likes are not equal! Mismatched elements: 1 / 1 (10
#   0.0%) Greatest absolute difference: 1 at index (0, 0) Greatest relative difference: inf at index (0, 0); plan
#   [True] eager [False]

# Root cause (numerics, issue 16): eager's reduced-precision CPU layer_norm computes each element as one
# fused multiply-add, y = fma(x, rstd, -mean * rstd), in float: the product x * rstd is not rounded, so
# for a size-1 row (x == mean, var 0, rstd = 316.2278) y is the rounding error of mean * rstd
# (-1.9073e-05 for x = -2.515625), not 0. The float32 path gives 0 here. Matching it needs an unrounded
# product (e.g. x*rstd + c in float64, then float32): not done yet; the decomposition gives exact 0.

def f(a):
    t0 = F.layer_norm(a, a.shape[-1:])
    t2 = t0.logical_not()
    return (t2,)


def inputs(D1=0, v=0):
    a = mk((D1, 1), torch.bfloat16, 729 + v, kind="plain")
    return [a]


SIZES_A = {'D1': 0}
SIZES_B = {'D1': 1}
