"""bench/eager_exactness.py judges bit for bit: its verdicts are what the bench's table counts,
so they are checked here on cases whose answer is known (the sweeps themselves are long and
live in bench/)."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import eager_exactness as X  # noqa: E402


def test_same_bits_tells_signed_zeros_apart_and_takes_any_nan_for_nan():
    got = torch.tensor([0.0, float("nan"), 1.0, -float("nan")])
    want = torch.tensor([-0.0, -float("nan"), 1.0, float("nan")])
    assert X.same_bits(got, want).tolist() == [False, True, True, True]
    c = torch.tensor([complex(0.0, 1.0)])
    assert not bool(X.same_bits(c, torch.tensor([complex(-0.0, 1.0)])).all())
    assert bool(X.same_bits(torch.tensor([3], dtype=torch.int64), torch.tensor([3])).all())


def test_judge_verdicts():
    x = torch.tensor([1.0, -2.0, 0.0])
    assert X.judge(X.Case("exp", torch.exp, (x,)), exact=True) == ("equal", "")
    # eager raises (integer division by zero); the plan must raise alike
    zero = X.Case("div0", lambda a: torch.div(a, 0, rounding_mode="floor"), (torch.tensor([1, 2]),))
    assert X.judge(zero, exact=True)[0] == "equal"


def test_judge_flags_a_result_that_is_not_eagers_and_an_input_that_changed(monkeypatch):
    x = torch.tensor([1.0, 2.0])

    class Wrong:  # a "plan" one ulp off eager, then one that writes its input
        def __init__(self, fn, *args):
            self.fn = fn

        def __call__(self, a):
            return torch.nextafter(self.fn(a), torch.tensor(float("inf")))

    monkeypatch.setattr(X.satfuse, "optimize", Wrong)
    verdict, detail = X.judge(X.Case("exp", torch.exp, (x,)), exact=True)
    assert verdict == "differ" and "2 of 2 elements" in detail
    assert X.judge(X.Case("exp", torch.exp, (x,)), exact=False)[0] == "ulps"  # within the fuzzer's tolerance

    monkeypatch.setattr(X.satfuse, "optimize", lambda fn, *args: lambda a: a.add_(1))
    assert X.judge(X.Case("id", lambda a: a + 1, (x,)), exact=True) == ("differ", "input 0 written")


def test_every_family_yields_cases():
    for fam in X.FAMILIES.values():
        first = next(iter(fam.cases(True)))
        assert first.label and callable(first.fn) and first.args


def test_the_plan_gets_the_layout_eager_got(monkeypatch):
    """A copy of a strided tensor is contiguous, and eager's answer can depend on the layout:
    the plan is built and called on the very tensors eager read."""
    seen = []

    def record(fn, *args):
        seen.append(args[0].stride())
        return lambda a: (seen.append(a.stride()), fn(a))[1]

    monkeypatch.setattr(X.satfuse, "optimize", record)
    x = torch.arange(8.0)[::2]
    assert X.judge(X.Case("neg", torch.neg, (x,)), exact=True) == ("equal", "")
    assert seen == [(2,), (2,)]
