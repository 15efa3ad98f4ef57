"""Programs on which every rule of unsound.egg fires (tests/test_rule_direct.py)."""

import torch


def _g(seed):
    return torch.Generator().manual_seed(seed)


def sub3(x, y):
    return (x - y) * 3


def where_swap(c, a, b):
    return torch.where(c, a, b) + 1


def neg_lt(a, b):
    return (-a) < (-b)


def mul2(x):
    return x * 2.0


def ge(a, b):
    return a >= b


def div_zero_minus(a, b):
    return a / (0.0 - b)


def relu(a, b):
    return torch.relu(a) * 2 + b


def add_sub(a, b):
    return (a + b) - b


def exp(x):
    return torch.exp(x) + 1


def cast64(x):
    return x.to(torch.float64) * 2


def where_same(c, x):
    return torch.where(c, x, x) + 1


def amax_neg(x):
    return (-x).amax(1)


def remainder(a, b):
    return torch.remainder(a, b)


def products(a, b):
    # (a == b) reaches eq-commutes through where, not a cast: cast-drop would equate b8 and f32 values, a dtype
    # conflict that stops saturation before the sound phase runs
    return (a * b) + torch.where(a == b, 1.0, 0.0) + (a - a) - (-(-b))


def _f(*shape, seed=0):
    return torch.randn(*shape, generator=_g(seed))


def _i32(*shape, seed=0):
    return torch.randint(-50, 50, shape, generator=_g(seed), dtype=torch.int32)


CASES = [
    ("sub3", sub3, lambda: (_f(4, seed=1), _f(4, seed=2))),
    ("where_swap", where_swap, lambda: (_f(4, seed=3) > 0, _f(4, seed=4), _f(4, seed=5))),
    ("neg_lt", neg_lt, lambda: (_i32(4, seed=6), _i32(4, seed=7))),
    ("mul2", mul2, lambda: (_i32(4, seed=8),)),
    ("ge", ge, lambda: (_f(4, seed=9), _f(4, seed=10))),
    ("div_zero_minus", div_zero_minus, lambda: (_f(4, seed=11), _f(4, seed=12))),
    ("relu", relu, lambda: (_f(4, seed=13), _f(4, seed=14))),
    ("add_sub", add_sub, lambda: (_f(4, seed=15), _f(4, seed=16))),
    ("exp", exp, lambda: (_f(3, 4, seed=17),)),
    ("cast64", cast64, lambda: (_f(3, seed=18),)),
    ("where_same", where_same, lambda: (_f(3, 5, seed=19) > 0, _f(1, 5, seed=20))),
    ("amax_neg", amax_neg, lambda: (_f(3, 4, seed=21),)),
    ("remainder", remainder, lambda: (_f(4, seed=22), _f(4, seed=23))),
    ("products", products, lambda: (_f(4, seed=24), _f(4, seed=25))),
]
