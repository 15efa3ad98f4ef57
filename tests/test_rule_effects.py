"""Extraction skipped where no rule that matched could change a value (engine/rule_effects.py):
the rules are read right, and the plan is the one extraction would have given."""

from __future__ import annotations

import pytest
import torch
from satfuse.engine import optimize as engine_optimize
from satfuse.engine.rule_effects import quiet_rules
from satfuse.engine.session import Source
from satfuse.lowering.segments import live_nodes

import satfuse
from satfuse.api import Options
from satfuse.pipeline import default_engine
from tests.corpus import CASES


def _builtin_sources() -> list:
    return default_engine().catalogue(Options.of(None)).sources


def test_rules_that_only_derive_facts_are_quiet_and_rewrites_are_not():
    quiet = quiet_rules(_builtin_sources())
    assert "lang/dtype-claim" in quiet and "lang/dcons-injective" in quiet  # a relation row; a union of extents
    assert "lang/bcast-same" in quiet  # a rewrite of an analysis
    assert "algebra/ext1-demand" in quiet
    assert "extents/fold-add" not in quiet  # a rewrite of an extent: plans spell the simpler one
    assert "extents/slice-extent" not in quiet  # it attaches an obligation the plan would check
    assert not any(name.startswith(("functionalize/", "gather/take-", "algebra/sum-ext1")) for name in quiet)


def test_in_a_program_of_numbers_extent_rewrites_are_quiet_too():
    """Every extent of a static program is a number: an extent rewrite or obligation restates one."""
    quiet = quiet_rules(_builtin_sources(), static=True)
    assert {"extents/fold-add", "extents/slice-extent", "extents/sub-sum=>", "extents/sub-sum<="} <= quiet
    assert "algebra/sum-ext1" not in quiet and not any(name.startswith("functionalize/") for name in quiet)


def test_a_user_rule_that_equates_values_is_not_quiet():
    pack = Source("user.egg", """
(ruleset mine)
(relation seen (T))
(rule ((= e (Neg (Neg x)))) ((union e x)) :ruleset mine :name "mine/neg-neg")
(rule ((= e (Neg x))) ((seen x)) :ruleset mine :name "mine/note")
(rule ((= e (Neg x))) ((Neg (Neg e))) :ruleset mine :name "mine/grow")
(rule ((= e (Neg x))) ((let y (Neg e))) :ruleset mine :name "mine/let")
""")
    quiet = quiet_rules([*_builtin_sources(), pack])
    assert "mine/note" in quiet
    assert not {"mine/neg-neg", "mine/grow", "mine/let"} & quiet


def test_a_program_no_rule_changes_is_its_own_plan_with_each_term_once():
    def f(x, g):
        g = g + 0.01 * x
        return g.double() * g.double(), (x * 2).sum()

    x, g = torch.randn(4, 3), torch.randn(4, 3)
    plan = satfuse.optimize(f, x, g)
    assert plan.engine.extraction.method == "none" and "extraction skipped" in plan.engine.extraction.note
    assert "serialize" not in plan.timings and "extract" not in plan.timings
    casts = [n for n in plan.engine.trace.nodes if n.op == "cast"]
    assert len(casts) == 1  # g.double() twice is one term, as the e-graph holds it
    for got, want in zip(plan(x, g), f(x, g)):
        assert torch.equal(got, want)


def test_a_matched_rewrite_still_extracts():
    def f(x):
        return -(-x) + 1.0

    plan = satfuse.optimize(f, torch.randn(5))
    assert plan.engine.extraction.method != "none"
    assert not any(n.op == "neg" for n in plan.engine.trace.nodes)  # the rewrite is in the plan


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_skipping_extraction_gives_the_plan_extraction_gives(case, monkeypatch):
    """Over the corpus: where extraction is skipped, the plan has the steps, fused ops and
    results of the one extraction picks (forced by turning the skip off)."""
    args = case.make_inputs()
    opts = {"dynamic": case.dynamic}
    plan = satfuse.optimize(case.fn, *[a.clone() if isinstance(a, torch.Tensor) else a for a in args], options=opts)
    if plan.engine.extraction.method != "none":
        pytest.skip("a rule that can change a value matched: extraction ran")
    monkeypatch.setattr(engine_optimize, "_plain_program", lambda *a: None)
    full = satfuse.optimize(case.fn, *[a.clone() if isinstance(a, torch.Tensor) else a for a in args], options=opts)
    assert full.engine.extraction.method != "none"
    assert plan.lowered.stats() == full.lowered.stats()
    # the same terms (decode orders them from the roots, and leaves out dead ones lowering drops)
    assert sorted(n.op for n in live_nodes(plan.engine.trace)) == sorted(n.op for n in live_nodes(full.engine.trace))
    ins_a = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    ins_b = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    got, want = plan(*ins_a), full(*ins_b)
    torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(ins_a, ins_b, equal_nan=True, rtol=0, atol=0)
