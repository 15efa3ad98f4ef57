# fuzz repro (jit): wrong [no-raise], seed 3100, program 93; found by bench/fuzz.py
# Found by jitcompile (bench/fuzz.py --mode jit --seed 3100): out= into a tensor that is also an operand and would need resizing; eager raises, satfuse returns.
# python bench/fuzz.py --mode jit ... reduced it; eager vs satfuse:
#   no-raise: call 1: eager raises RuntimeError: output with shape [1, 0] doesn't match the broadcast shape [0, 0]
#   ; the plan returns

def f(b):
    t1 = torch.where(b > 0, b, 0.5)
    t2 = t1.sum(0, keepdim=True)
    torch.maximum(t1, t2, out=t2)
    return (t2,)


def inputs(v=0):
    b = mk((0, 0), torch.bfloat16, 246 + v, kind="plain")
    return [b]


SIZES_A = {}
SIZES_B = {}
