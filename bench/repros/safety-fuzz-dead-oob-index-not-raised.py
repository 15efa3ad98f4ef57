# fuzz repro (jit): wrong [no-raise], seed 3000, program 55; found by bench/fuzz.py
# Found by jitcompile (bench/fuzz.py --mode jit --seed 3000); the same in optimize mode. Eager vs satfuse in the header below.
# python bench/fuzz.py --mode jit ... reduced it; eager vs satfuse:
#   no-raise: call 1: eager raises IndexError: index is out of bounds for dimension with size 0; the plan returns

def f(b, i3):
    t0 = b[i3]  # dead, but eager raises on it
    return (b,)


def inputs(v=0):
    b = mk((0, 0, 0), torch.float32, 115 + v)
    i3 = ix((5,), 4, 117 + v)
    return [b, i3]


SIZES_A = {}
SIZES_B = {}
