# fuzz repro (compile): crash [IndexError], seed 1, program 2; found by bench/fuzz.py
# python bench/fuzz.py --mode compile ... reduced it; eager vs satfuse:
#   IndexError: list index out of range [symbolic_shapes.py:6338]
# the program only: `python bench/repros/run.py other-fuzz-compile-squeeze-input-indexerror.py` runs it (fuzz.py's helpers and runner)


def f(a, b, c):
    t0 = torch.eq(a, b)
    t1 = c.clone()
    c.squeeze_()
    t4 = t0.clone()
    t5 = torch.sign(t1)
    t1.eq_(t4)
    t9 = torch.where(t4, t4, t1)
    return (t5, t0)


def inputs(D0=1, v=0):
    a = mk((1,), torch.float32, 282 + v).expand(D0,)
    b = mk((D0,), torch.complex64, 283 + v)
    c = mk((D0, D0), torch.bool, 284 + v).permute(1, 0)
    return [a, b, c]


SIZES_A = {'D0': 1}
SIZES_B = {'D0': 5}
