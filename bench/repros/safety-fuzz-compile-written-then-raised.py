# fuzz repro (compile): wrong [written-then-raised], seed 400, program 54; found by bench/fuzz.py
# python bench/fuzz.py --mode compile ... reduced it; eager vs satfuse:
# Note (fuzz): eager also transposes c before it raises; the plan is held to "inputs untouched when it raises" (issue 14, transactional plans).
#   written-then-raised: values: call 2, sizes {'D0': 2}: input 1 after the raising call: Tensor-likes are not equ
#   al! Mismatched elements: 2 / 4 (50.0%) Greatest absolute difference: 3 at index (0, 1) Greatest relative diffe
#   rence: 3.0 at index (0, 1); plan [0, -2, 1, -1] eager [0, 1, -2, -1]
# the program only: `python bench/repros/run.py safety-fuzz-compile-written-then-raised.py` runs it (fuzz.py's helpers and runner)


def f(a, c, d):
    t0 = d[1:]
    c.transpose_(0, 1)
    t0.as_strided((2,), (1,)).fill_(0.5)
    return (a,)


def inputs(D0=0, v=0):
    a = mk((0, 0), torch.bfloat16, 273 + v)
    c = mk((D0, D0), torch.int64, 274 + v)
    d = mk((D0, 1), torch.float32, 275 + v)
    return [a, c, d]


SIZES_A = {'D0': 0}
SIZES_B = {'D0': 2}
