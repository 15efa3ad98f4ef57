# fuzz repro (optimize): wrong [aliasing], seed 300, program 14; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   aliasing: call 1: outputs share storage with [], eager [(0, 'input 0')]
# the program only: `python bench/repros/run.py safety-fuzz-view-output-returned-as-copy.py` runs it (fuzz.py's helpers and runner)


def f(c):
    t0 = c[1:]
    t0.view(t0.shape).sub_(t0)
    return (t0,)


def inputs(D0=2, v=0):
    c = mk((D0,), torch.int64, 228 + v)
    return [c]


SIZES_A = {'D0': 2}
SIZES_B = {'D0': 0}
