# fuzz repro (optimize): wrong [input-values], seed 9925, program 209; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   input-values: values: call 1: input 0 after the call: Tensor-likes are not close! Mismatched elements: 5 / 18
#   (27.8%) Greatest absolute difference: inf at index (1, 0, 2) (up to 1e-05 allowed) Greatest relative differenc
#   e: inf at index (1, 0, 2) (up to 0.0001 allowed); plan [0.46525993943214417, 2.199896812438965, 1.000000015047
#   4662e+30, 0.7868041396141052, -2.1588430404663086, -0.15299278... eager [0.46525993943214417, 2.19989681243896
#   5, 1.0000000150474662e+30, 0.7868041396141052, -2.1588430404663086, -0.15299278...
# run on a GPU: SATFUSE_FUZZ_DEVICE=cuda python bench/repros/run.py gpu-semantics-fuzz-clamp-of-a-select-beside-a-repeated-cat.py


def f(e, i2):
    e[-2].clamp_(min=0.5)
    t8 = torch.cat([i2, i2], -1)
    return (t8,)


def inputs(D0=3, D2=2, v=0):
    e = mk((D0, D2, D0), torch.float32, 943 + v)
    i2 = ix((3,), 5, 944 + v, dim=0)
    return [e, i2]


SIZES_A = {'D0': 3, 'D2': 2}
SIZES_B = {'D0': 4, 'D2': 3}
