# fuzz repro (optimize): wrong [values], seed 9999, program 6545; open: eager layout-dependence
# eager's CPU neg of a complex tensor keeps the sign of a zero imaginary part on its scalar path
# (-(x+0j) is -x-0j) and loses it on its vectorized path (-x+0j); which elements take which path
# depends on the operand's layout and the element's position (contiguous runs of 8 complex64 values
# are vectorized). Eager neg_'s the strided input b in place (scalar path: -0j); the plan runs the
# same eager kernel on a contiguous value (vectorized: +0j), and log1p turns the sign into -pi vs
# +pi. Same class as the gelu(inf) and bf16 rsqrt repros: a plan carries values, not layouts.
#   torch.neg(torch.complex(torch.full((4, 4), 1e30), torch.zeros(4, 4))).imag.signbit()  -> False
#   torch.neg(torch.complex(torch.full((4, 1), 1e30), torch.zeros(4, 1))).imag.signbit()  -> True
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   values: call 1: output 0: Tensor-likes are not close! Mismatched elements: 1 / 9 (11.1%) Greatest absolute dif
#   ference: 6.2831854820251465 at index (1, 0) (up to 1e-05 allowed) Greatest relative difference: 0.090864501893
#   52036 at index (1, 0) (up to 0.0001 allowed); plan [(0.08934518694877625+1.7873719930648804j), (1.581235408782
#   959+1.1857354640960693j), (1.7682642936706543+3.1081037521... eager [(0.08934518694877625+1.7873719930648804j)
#   , (1.581235408782959+1.1857354640960693j), (1.7682642936706543+3.1081037521...
import torch


def f(a, b):
    b.permute(1, 0).add_(a)
    b.neg_()
    t5 = b.contiguous()
    t5.log1p_()
    return (t5,)


def inputs(D0=3, v=0):
    a = mk((D0, D0), torch.bool, 484 + v, kind="plain")
    b = mk((2 * D0, D0), torch.complex64, 485 + v)[::2]
    return [a, b]


SIZES_A = {'D0': 3}
SIZES_B = {'D0': 0}

