# fuzz repro (jit): wrong [exception-type], seed 200, program 140; found by bench/fuzz.py
# python bench/fuzz.py --mode jit ... reduced it; eager vs satfuse:
#   exception-type: call 1: plan raises RecompileError: satfuse.jit(f): no cached plan accepts this call [cache.py
#   :143]; eager IndexError: index_copy_(): Number of indices (3) should be equal to source.size(dim) (0)
# the program only: `python bench/repros/run.py semantics-fuzz-jit-recompile-hides-eager-error.py` runs it (fuzz.py's helpers and runner)


def f(a, i2):
    t0 = torch.index_copy(a, -1, i2, a)
    return (t0,)


def inputs(v=0):
    a = mk((0, 0), torch.float32, 395 + v, kind="plain")
    i2 = ix((3,), 3, 397 + v, dim=0)
    return [a, i2]


SIZES_A = {}
SIZES_B = {}
