# fuzz repro (optimize): wrong [values], seed 300, program 578; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   values: call 1: output 0: Tensor-likes are not close! Mismatched elements: 1 / 1 (100.0%) Greatest absolute di
#   fference: 2.456734365327689 at index (0,) (up to 1e-07 allowed) Greatest relative difference: 0.81891145510922
#   97 at index (0,) (up to 1e-07 allowed); plan [5.456734365327689] eager [3.0]
# the program only: `python bench/repros/run.py safety-fuzz-aliased-inputs-inplace-not-seen.py` runs it (fuzz.py's helpers and runner)


def f(b, c):
    c.clamp_(-0.0, 3)
    return (b,)


def inputs(v=0):
    b = mk((1,), torch.float64, 923 + v, kind="plain")
    c = b
    return [b, c]


SIZES_A = {}
SIZES_B = {}
