# fuzz repro (compile): crash [RuleError], seed 6000, program 190; found by bench/fuzz.py
# Found by jitcompile (bench/fuzz.py --mode compile --seed 6000 #190): RuleError algebra/mul-one dtype-conflict.
# python bench/fuzz.py --mode compile ... reduced it; eager vs satfuse:
#   RuleError: /work/wt/jitcompile/rules/algebra.egg:33: rule 'algebra/mul-one': equates values of different shape
#   s or dtypes (dtype-conflict) on this program; a rewrite must keep its left side's shape and dtype (`python -m
#   satfuse rules check` shows a co [optimize.py:87]

def f(a, b):
    t3 = b.to(torch.bfloat16)
    t4 = torch.sigmoid(a)
    t5 = t3.view(t3.shape)
    t6 = a.contiguous()
    t7 = torch.where(t5 > 0, t5, a)
    t8 = torch.addcdiv(t7, t4, t3)
    t6.sub_(t8)
    return (t3, t5)


def inputs(v=0):
    a = mk((), torch.float32, 911 + v)
    b = mk((), torch.int32, 912 + v)
    return [a, b]


SIZES_A = {}
SIZES_B = {}
