# fuzz repro (optimize): wrong [values], seed 1101, program 161; found by bench/fuzz.py
# filed by safety (optimize fuzz seed 1101, program 161): addcdiv(complex b, complex a, bool c): plan nan where eager finite (division by a False/0 complex?)
# python bench/fuzz.py --mode optimize ... reduced it; eager vs satfuse:
#   values: call 1: output 0: Tensor-likes are not close! Mismatched elements: 1 / 4 (25.0%) Greatest absolute dif
#   ference: nan at index (1, 0) (up to 1e-05 allowed) Greatest relative difference: nan at index (1, 0) (up to 0.
#   0001 allowed); plan [(-8.844335556030273+1.9025845527648926j), (2.3509092330932617-0.8260698318481445j), (nan+
#   nanj), (2.3509092330932617-... eager [(-8.844335556030273+1.9025845527648926j), (2.3509092330932617-0.82606983
#   18481445j), (-inf+infj), (2.3509092330932617...

def f(a, b, c):
    t1 = torch.addcdiv(b, a, c)
    return (t1,)


def inputs(D1=2, v=0):
    a = mk((1,), torch.complex64, 685 + v)
    b = mk((D1,), torch.complex64, 686 + v)
    c = mk((D1, D1), torch.bool, 687 + v)
    return [a, b, c]


SIZES_A = {'D1': 2}
SIZES_B = {'D1': 0}
