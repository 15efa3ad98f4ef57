# fuzz repro (jit): crash [RecompileError], seed 5000, program 246; found by bench/fuzz.py
# Found by jitcompile (bench/fuzz.py --mode jit --seed 5000 #246): out= into an input that eager resizes ((0,) -> (0, 0));
# capture types the input by its resized shape, so the plan's own prologue rejects the call it was built for (jit now runs it eagerly).
# python bench/fuzz.py --mode jit ... reduced it; eager vs satfuse:
#   RecompileError: satfuse.jit(f): the plan just built for this call rejects it (guard failed: b.dim() == 2 (b: i
#   64(0,) on cpu)); this is a capture bug [cache.py:151]

def f(a, b, c):
    t0 = torch.remainder(a, c)
    torch.le(a, t0, out=b)
    return (t0,)


def inputs(v=0):
    a = mk((0,), torch.bfloat16, 618 + v)
    b = mk((0,), torch.int64, 619 + v)
    c = mk((0, 0), torch.int64, 620 + v)
    return [a, b, c]


SIZES_A = {}
SIZES_B = {}
