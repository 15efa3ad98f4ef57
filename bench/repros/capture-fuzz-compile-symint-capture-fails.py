# fuzz repro (compile): crash [BackendError], seed 400, program 10; found by bench/fuzz.py
# python bench/fuzz.py --mode compile ... reduced it; eager vs satfuse:
#   BackendError: satfuse: capturing the inference graph failed: RuntimeError: /__w/pytorch/pytorch/build/aten/src
#   /ATen/RegisterCompositeExplicitAutograd_0.cpp:4963: SymIntArrayRef expected to contain only concrete integers
#   [backend.py:190]
# the program only: `python bench/repros/run.py capture-fuzz-compile-symint-capture-fails.py` runs it (fuzz.py's helpers and runner)


def f(e):
    t0 = e.var(0, keepdim=False)
    t3 = torch.neg(e)
    t3[:-1].ne_(t0)
    return ()


def inputs(D0=0, v=0):
    e = mk((D0,), torch.float32, 42 + v)
    return [e]


SIZES_A = {'D0': 0}
SIZES_B = {'D0': 5}
