# fuzz repro (optimize): crash [UnboundLocalError], seed 100, program 416; found by bench/fuzz.py
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   UnboundLocalError: cannot access local variable '_to_copy' where it is not associated with a value [<satfuse p
#   lan>:54]
# the program only: `python bench/repros/run.py semantics-fuzz-plan-order-unbound-local.py` runs it (fuzz.py's helpers and runner)


def f(a, b, c, d):
    t0 = c.to(torch.int64)
    c.flatten().add_(t0)
    return (t0,)


def inputs(v=0):
    a = mk((0, 0, 0), torch.int64, 24 + v, kind="plain")
    b = mk((0, 0), torch.complex64, 25 + v)
    c = mk((0,), torch.complex64, 26 + v)
    d = mk((0,), torch.int64, 27 + v)
    return [a, b, c, d]


SIZES_A = {}
SIZES_B = {}
