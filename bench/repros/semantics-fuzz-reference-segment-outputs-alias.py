# fuzz repro (optimize): wrong [aliasing], seed 1103, program 123; found by bench/fuzz.py
# filed by safety (optimize fuzz seed 1103, program 123): t3 = maximum(i2, t1); t3.copy_(t1); return t1, t3 -- the plan is one segment returning [amax0, copy]; the reference executor returns copy as a broadcast VIEW of amax0, so the two outputs share storage (eager: fresh). Segment outputs must be fresh tensors (or lowering must know they alias).
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   aliasing: call 1: outputs share storage with [(1, 'output 0')], eager []

def f(b, i2):
    t1 = b.amax(2, keepdim=True)
    t3 = torch.maximum(i2, t1)
    t3.copy_(t1)
    return (t1, t3)


def inputs(v=0):
    b = mk((1, 1, 1), torch.float32, 277 + v, kind="plain")
    i2 = ix((2,), 2, 278 + v, dim=0)
    return [b, i2]


SIZES_A = {}
SIZES_B = {}
