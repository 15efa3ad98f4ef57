# fuzz repro (compile): wrong [aliasing], seed 6000, program 396; found by bench/fuzz.py
# Found by jitcompile (bench/fuzz.py --mode compile --seed 6000 #396, #589), after the backend began converting AOTAutograd's graphs:
# a plan output shares storage with an input where eager's is a fresh tensor (t0 = where(...); t0.copy_(b); return t0).
# python bench/fuzz.py --mode compile ... reduced it; eager vs satfuse:
#   aliasing: call 2, sizes {'D0': 3, 'D1': 4}: outputs share storage with [(0, 'input 1')], eager []

def f(a, b):
    t0 = torch.where(a > 0, a, b)
    t0.copy_(b)
    return (t0,)


def inputs(D1=0, v=0):
    a = mk((1, D1, D1), torch.int64, 794 + v)
    b = mk((1, 1), torch.bfloat16, 795 + v)
    return [a, b]


SIZES_A = {'D1': 0}
SIZES_B = {'D1': 4}
