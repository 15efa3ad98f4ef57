"""The generated guard prologue: what it checks, what it binds, how it says no, how fast."""

from __future__ import annotations

import re
import time

import pytest
import sympy
import torch
from satfuse.engine import parse_trace
from satfuse.lowering import GuardError, build_prologue
from satfuse.lowering.guards import GuardBuildError, extent_obligations, pyexpr

S = {f"s{i}": sympy.Symbol(f"s{i}", integer=True) for i in range(6)}


def trace(text: str, guards=()):
    tr = parse_trace(text)
    tr.guards = list(guards)
    return tr


SYMBOLIC = '''
def f(a: "f32[s0, s1]", b: "f32[s1]", n: "int s2", k: "int 3", flag: "bool True"):
  c = add(a, b)  # f32[s0, s1]
  return (c,)
'''


def test_binds_symbols_and_returns_env():
    p = build_prologue(trace(SYMBOLIC))
    env = p([torch.zeros(2, 5), torch.zeros(5), 7, 3, True])
    assert env == {"s0": 2, "s1": 5, "s2": 7}
    assert "s1 = a_shape[1]" in p.source and "b_shape[0] == s1" in p.source
    assert p.symbols == {"s0": "a.shape[0]", "s1": "a.shape[1]", "s2": "n"}


@pytest.mark.parametrize("args, message", [
    ([torch.zeros(2, 5, dtype=torch.float64), torch.zeros(5), 7, 3, True], r"a\.dtype == torch\.float32"),
    ([torch.zeros(2, 5, 1), torch.zeros(5), 7, 3, True], r"a\.dim\(\) == 2"),
    ([torch.zeros(2, 5), torch.zeros(4), 7, 3, True], r"b\.shape\[0\] == a\.shape\[1\] \(b\.shape=\(4,\), a\.shape=\(2, 5\)\)"),
    ([torch.zeros(2, 5), torch.zeros(5), 7, 4, True], r"k == 3 \(k=4\)"),
    ([torch.zeros(2, 5), torch.zeros(5), 7, 3, False], r"flag == True"),
    ([torch.zeros(2, 5), torch.zeros(5), 7.0, 3, True], r"n is an int"),
    ([torch.zeros(2, 5), torch.zeros(5), True, 3, True], r"n is an int"),
    ([torch.zeros(2, 5), [0.0] * 5, 7, 3, True], r"b is a tensor"),
    ([torch.zeros(2, 5), torch.zeros(5)], r"expected 5 inputs \(a, b, n, k, flag\), got 2"),
])
def test_failures_name_the_guard(args, message):
    p = build_prologue(trace(SYMBOLIC))
    with pytest.raises(GuardError, match=message):
        p(args)


def test_guard_error_is_a_value_error():
    assert issubclass(GuardError, ValueError)


def test_static_extents_and_device():
    p = build_prologue(trace('''
def f(x: "f32[4, 1]"):
  y = neg(x)  # f32[4, 1]
  return (y,)
'''))
    p([torch.zeros(4, 1)])
    with pytest.raises(GuardError, match=r"x\.shape\[1\] == 1 \(x\.shape=\(4, 3\)\)"):
        p([torch.zeros(4, 3)])
    if torch.cuda.is_available():
        with pytest.raises(GuardError, match="x.device is cpu"):
            p([torch.zeros(4, 1, device="cuda")])


def test_predicates_from_the_trace():
    tr = trace('''
def f(a: "f32[s0]", n: "int s1"):
  b = mul(a, 2)  # f32[s0]
  return (b,)
''', guards=[sympy.Gt(S["s1"], 5), sympy.Eq(sympy.Mod(S["s0"], 2), 0)])
    p = build_prologue(tr)
    p([torch.zeros(4), 6])
    with pytest.raises(GuardError, match=r"guard failed: n > 5 \(n=5\)"):
        p([torch.zeros(4), 5])
    with pytest.raises(GuardError, match=r"a\.shape\[0\] % 2 == 0"):
        p([torch.zeros(3), 6])


def test_compound_extents():
    p = build_prologue(trace('''
def f(a: "f32[s0, s1]", b: "f32[s0*s1]", c: "f32[s0 + 1]"):
  d = reshape(a, new_shape=(s0*s1,))  # f32[s0*s1]
  e = add(d, b)  # f32[s0*s1]
  return (e, c)
'''))
    assert p([torch.zeros(2, 3), torch.zeros(6), torch.zeros(3)]) == {"s0": 2, "s1": 3}
    with pytest.raises(GuardError, match=r"b\.shape\[0\] == a\.shape\[0\]\*a\.shape\[1\]"):
        p([torch.zeros(2, 3), torch.zeros(5), torch.zeros(3)])
    with pytest.raises(GuardError, match=r"c\.shape\[0\] == a\.shape\[0\] \+ 1"):
        p([torch.zeros(2, 3), torch.zeros(6), torch.zeros(2)])


def test_unbound_symbol_needs_a_hint():
    text = '''
def f(a: "f32[2*s0]"):
  b = neg(a)  # f32[2*s0]
  return (b,)
'''
    with pytest.raises(GuardBuildError, match="no input binds it"):
        build_prologue(trace(text))
    p = build_prologue(trace(text), hints={"s0": 4})
    assert p([torch.zeros(8)]) == {"s0": 4}
    with pytest.raises(GuardError, match=r"a\.shape\[0\] == 2\*s0 \(specialized to 4\)"):
        p([torch.zeros(6)])


def test_extent_obligations_seed001():
    tr = trace('''
def computation(a: "f32[s0, s1, s2]", dim0: "int s3", dim1: "int s4"):
  split = slice(a, start_indices=(0, 0, 0), end_indices=(s0, s1, s3), strides=(1, 1, 1))  # f32[s0, s1, s3]
  split0 = slice(a, start_indices=(0, 0, s3), end_indices=(s0, s1, s3 + s4), strides=(1, 1, 1))  # f32[s0, s1, s4]
  split1 = slice(a, start_indices=(0, 0, s3 + s4), end_indices=(s0, s1, s2), strides=(1, 1, 1))  # f32[s0, s1, s2 - s3 - s4]
  return (split, split0, split1)
''')
    obs = {str(o) for o in extent_obligations(tr)}
    assert obs == {"s3 >= 0", "s4 >= 0", "s2 - s3 - s4 >= 0"}
    p = build_prologue(tr)
    assert p([torch.zeros(2, 3, 10), 3, 4])["s2"] == 10
    with pytest.raises(GuardError, match=r"a\.shape\[2\] - dim0 - dim1 >= 0 \(a\.shape=\(2, 3, 10\), dim0=8, dim1=4\)"):
        p([torch.zeros(2, 3, 10), 8, 4])
    with pytest.raises(GuardError, match=r"dim1 >= 0 \(dim1=-1\)"):
        p([torch.zeros(2, 3, 10), 3, -1])


def test_pyexpr():
    s0, s1 = S["s0"], S["s1"]
    names = {s0: "a", s1: "b"}
    assert pyexpr(s0 - 2 * s1 + 3, names) == "a - 2*b + 3"
    assert pyexpr(sympy.floor(s0 / 4), names) == "(a // 4)"
    assert pyexpr(2 * sympy.Mod(s0, 3), names) == "2*(a % 3)"
    assert pyexpr(sympy.Max(s0, s1) >= 2, names) == "max(a, b) >= 2"
    assert pyexpr(sympy.And(s0 > 1, sympy.Ne(s1, 0)), names) == "a > 1 and b != 0"


def test_pyexpr_right_operand_of_mod_and_floordiv():
    """``a % b*c`` is ``(a % b)*c`` in Python: a product on the right of ``%``/``//`` needs
    parentheses (HF GPT-2's guard ``Mod(s72, s72*(s70 + k)) != 0`` failed on its own example)."""
    from torch.utils._sympy.functions import FloorDiv, PythonMod

    s0, s1, s2 = S["s0"], S["s1"], S["s2"]
    names = {s0: "a", s1: "b", s2: "c"}
    vals = {"a": 2, "b": 3, "c": 5}
    for e in [sympy.Ne(PythonMod(s0, s0 * (s1 + s2)), 0), FloorDiv(s0 * 40, s1 * s2), FloorDiv(s0, (s1 + s2) * s1),
              PythonMod(s0 * s1, s2) * s1, (s0 * s1) ** 2]:
        text = pyexpr(e, names)
        assert eval(text, {}, dict(vals)) == e.subs({s0: 2, s1: 3, s2: 5}), text


def test_hot_path_is_fast():
    p = build_prologue(trace(SYMBOLIC, guards=[sympy.Gt(S["s2"], 5)]))
    args = [torch.zeros(2, 5), torch.zeros(5), 7, 3, True]
    for _ in range(100):
        p(args)
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        p(args)
    us = (time.perf_counter() - t0) / n * 1e6
    assert us < 100, f"prologue takes {us:.1f} µs per call"


def test_self_overlapping_written_input_is_refused():
    from satfuse.lowering import GuardError

    import satfuse

    def f(x, y):
        x.add_(y)
        return x * 2

    plan = satfuse.optimize(f, torch.randn(3, 4), torch.randn(3, 4))
    base = torch.randn(4)
    x = base.expand(3, 4)  # every row is the same memory
    with pytest.raises(GuardError, match="this call has x overlaps itself"):
        plan(x, torch.randn(3, 4))
    with pytest.raises(GuardError, match="this call has x overlaps itself"):  # torch's own test says "too hard"
        plan(torch.zeros(12).as_strided((3, 4), (1, 1)), torch.randn(3, 4))
    x = torch.randn(4, 3).t()  # non-contiguous but not overlapping: fine
    xe, y = x.clone(), torch.randn(3, 4)
    out = plan(x, y)
    torch.testing.assert_close(out, f(xe, y))
    torch.testing.assert_close(x, xe)


def _many(shapes: list[str]) -> str:
    args = ", ".join(f'w{i}: "f32[{s}]"' for i, s in enumerate(shapes))
    return f'def f({args}, n: "int 3"):\n  c = add(w0, w0)  # f32[{shapes[0]}]\n  return (c,)\n'


def test_a_run_of_like_inputs_is_one_loop_that_names_each_input():
    """An optimizer step's thousands of parameters are checked in one loop (its text and compile
    time stay small); a failure still names the input and the test it failed, as its own if would."""
    pro = build_prologue(trace(_many(["8, 4"] * 12)))
    assert pro.source.count("if not (") == 3  # len(inputs), the loop's test, n's kind
    assert "for k, x in enumerate(inputs[0:12], 1):" in pro.source
    ok = [torch.zeros(8, 4) for _ in range(12)] + [3]
    assert pro(ok) == {}
    for i, bad, msg in [(5, torch.zeros(8, 5), "w5.shape[1] == 4"), (11, torch.zeros(8, 4, dtype=torch.float64),
                        "w11.dtype == torch.float32"), (0, 1.0, "w0 is a tensor"), (12, 3.0, "n is an int")]:
        with pytest.raises(GuardError, match=re.escape(msg)):
            pro(ok[:i] + [bad] + ok[i + 1:])


def test_a_run_of_inputs_of_several_shapes_zips_their_shapes():
    pro = build_prologue(trace(_many(["4", "4, 4"] * 5)))
    assert "zip(range(1, 11), inputs[0:10], ((4,), (4, 4), (4,), (4, 4)" in pro.source
    ok = [torch.zeros(4) if i % 2 == 0 else torch.zeros(4, 4) for i in range(10)] + [3]
    assert pro(ok) == {}
    with pytest.raises(GuardError, match=r"w3\.dim\(\) == 2"):
        pro(ok[:3] + [torch.zeros(4)] + ok[4:])
    short = build_prologue(trace(_many(["4"] * 7)))  # below the run length: one if each, as before
    assert "for " not in short.source and short.source.count("if not (") == 9


def test_a_run_of_scalar_inputs_is_one_loop():
    """A backward graph's many int sizes in a row (conv2d's under dynamic=True) are a run with no
    shape: the loop tests each one's kind (a run once read shapes of scalars and failed to plan)."""
    args = ", ".join(f'n{i}: "int 3"' for i in range(9))
    pro = build_prologue(trace(f'def f(w: "f32[4]", {args}):\n  c = add(w, w)  # f32[4]\n  return (c,)\n'))
    assert "for k, x in enumerate(inputs[1:10], 2):" in pro.source
    ok = [torch.zeros(4)] + [3] * 9
    assert pro(ok) == {}
    with pytest.raises(GuardError, match=re.escape("n4 is an int")):
        pro(ok[:5] + [3.0] + ok[6:])
