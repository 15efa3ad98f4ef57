"""The harness judges each rule on its own: both sides evaluated on the same operands at every
match, shrunk counterexamples, eager comparison semantics (tests/rulepacks/unsound.egg)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from satfuse.engine.sexp import parse_sexp
from satfuse.rewrites.coverage import check_rules
from satfuse.rewrites.direct import RuleCounterexample, differ, evaluate, holds

PACKS = Path(__file__).parent / "rulepacks"


@pytest.fixture(scope="module")
def pack_report():
    return check_rules([PACKS / "unsound.egg"], corpus=[PACKS / "unsound_corpus.py"], builtin_corpus=False,
                       builtin_rules=False, only_paths=True, examples=20)


def rules(report, prefix):
    return {r.name: r for r in report.rules if r.name.startswith(prefix)}


def test_every_deliberately_unsound_rule_is_unsound_with_a_shrunk_counterexample(pack_report):
    bad = rules(pack_report, "unsound/")
    bad.pop("unsound/zero-float")  # the pack's helper fact
    assert len(bad) >= 12
    for name, r in bad.items():
        assert r.status == "unsound", (name, r.status, r.detail)
        cex = r.counterexample
        assert isinstance(cex, RuleCounterexample), (name, cex)  # judged on its own, not only through a plan
        assert cex.operands and cex.problem and cex.lhs, name
        for op in cex.operands:  # shrunk: no operand bigger than the match's (corpus tensors have <= 15 elements)
            if "[" in op.split("=", 1)[1].split(" ", 2)[1]:
                assert len(op) < 200, (name, op)


def test_sound_rules_stay_sound(pack_report):
    good = rules(pack_report, "sound/")
    assert len(good) == 5
    for name, r in good.items():
        assert r.status == "sound" and r.direct_cases > 0, (name, r.status, r.detail, r.counterexample)


def test_counterexamples_show_the_kind_of_mistake(pack_report):
    r = rules(pack_report, "unsound/")
    swap = r["unsound/sub-swap"].counterexample
    assert swap.program == "sub3" and all("[1]" in o for o in swap.operands)  # one element is enough
    assert "i32" in r["unsound/mul2-to-add"].counterexample.problem  # int stays int, x * 2.0 is float
    ties = r["unsound/ge-to-gt"].counterexample.operands
    assert ties[0].split("=")[1] == ties[1].split("=")[1]  # a == b
    assert "inf" in r["unsound/div-zero-minus"].counterexample.problem
    relu = r["unsound/relu-to-select"].counterexample.problem  # relu keeps nan and -0.0, the select neither
    assert "nan" in relu or "-0.0" in relu, relu
    assert "instead of" in r["unsound/exp-to-sum"].counterexample.problem
    assert "f32" in r["unsound/cast-drop"].counterexample.problem and "f64" in r["unsound/cast-drop"].counterexample.problem
    assert "UNSOUND" in pack_report.table() and "left side:" in pack_report.table()


# ------------------------------------------------------------------ comparison and evaluation


def test_comparison_follows_eager_semantics():
    nan, inf = math.nan, math.inf
    assert differ(torch.tensor([nan, 1.0]), torch.tensor([nan, 1.0])) == ""  # NaN equals NaN
    assert differ(torch.tensor([0.0]), torch.tensor([-0.0]))  # the sign of a zero is compared (atan2, 1/x)
    assert differ(torch.tensor([inf]), torch.tensor([-inf]))
    assert differ(torch.tensor([1.0]), torch.tensor([1.0 + 1e-7])) == ""  # within f32 tolerance
    assert differ(torch.tensor([1.0]), torch.tensor([1.001]))
    assert differ(torch.tensor([2**31 - 1], dtype=torch.int32), torch.tensor([-(2**31)], dtype=torch.int32))
    assert differ(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64))  # dtype
    assert differ(torch.zeros(2, 1), torch.zeros(2))  # shape
    assert differ(torch.tensor(0.0), 0.0)  # a Python scalar is not a 0-d tensor


def test_evaluation_uses_the_vocabulary_and_conditions_read_the_analysis():
    env = {"x": torch.tensor([[1.0, -2.0]]), "d": 1}
    out = evaluate(parse_sexp("(Sum (Neg x) (ICons d (INil)) 1)"), env)
    assert torch.equal(out, torch.tensor([[1.0]]))
    assert holds(parse_sexp("(= (ext x 0) (Num 1))"), env) is True
    assert holds(parse_sexp("(is-float x)"), env) is True
    env2 = dict(env)
    assert holds(parse_sexp("(= n (ext x d))"), env2) is True and env2["n"] == 2  # binds
    assert holds(parse_sexp("(others-match x x d 0)"), env) is None  # a pack's relation: taken from the match
