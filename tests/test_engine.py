"""Engine: encode -> saturate -> extract -> decode gives back an equivalent program;
budgets stop runaway rules and are reported; egglog failures name file:line."""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from satfuse.engine import capture
from satfuse.engine.interp import run_trace
from satfuse.engine.optimize import optimize_trace
from satfuse.engine.session import Budget, RuleError, Session, Source
from satfuse.rewrites import load_catalogue

from tests.corpus import kv_cache as kv  # seed programs: one definition, the corpus's

PACKS = Path(__file__).parent / "rulepacks"


def _lang():
    return load_catalogue(include_builtin=False).sources


def ce_fwd_bwd(x, y):
    x = x.detach().requires_grad_()
    loss = F.cross_entropy(x, y)
    (g,) = torch.autograd.grad(loss, x)
    return loss, g


def split(a, d0, d1):
    return torch.split(a, (d0, d1, a.size(2) - d0 - d1), dim=2)


CASES = {
    "ce_fwd_bwd": (ce_fwd_bwd, lambda: (torch.randn(8, 16), torch.randint(0, 16, (8,))), False),
    "kv": (kv, lambda: (torch.randn(1, 4, 2, 16), torch.randn(1, 4, 3, 16), torch.randn(1, 4, 3, 16),
                        torch.rand(1, 1, 2, 3) > 0.3, torch.randperm(2), torch.randn(1, 4, 2, 16)), False),
    "split": (split, lambda: (torch.randn(2, 3, 10), 3, 4), True),
}


@pytest.mark.parametrize("name", CASES)
def test_no_rules_round_trip_is_equivalent(name):
    fn, make, dyn = CASES[name]
    args = make()
    cap = capture(fn, *args, dynamic=dyn)
    res = optimize_trace(cap.trace, _lang(), [], hints=cap.symbol_hints)
    assert len(res.trace.nodes) <= len(cap.trace.nodes)  # hash-consing may only merge duplicates
    for _ in range(3):
        args = make()
        a, fa = run_trace(cap.trace, args)
        b, fb = run_trace(res.trace, args)
        for u, v in zip(a, b):
            torch.testing.assert_close(u, v)
        assert fa.keys() == fb.keys()
        for k in fa:
            torch.testing.assert_close(fa[k], fb[k])


AC = """
(ruleset ac)
(rewrite (Add a b) (Add b a) :ruleset ac :name "ac/comm")
(rewrite (Add (Add a b) c) (Add a (Add b c)) :ruleset ac :name "ac/assoc")
"""


def _sum_all(*xs):
    """a chain of sums: what associativity, commutativity and pair rules blow up"""
    acc = xs[0]
    for x in xs[1:]:
        acc = acc + x
    return acc


def test_budget_stops_runaway_rules_and_still_yields_a_plan(tmp_path):
    (tmp_path / "ac.egg").write_text(AC)
    cat = load_catalogue([tmp_path], include_builtin=False)

    args = [torch.randn(4) for _ in range(12)]
    cap = capture(_sum_all, *args)
    res = optimize_trace(cap.trace, cat.sources, cat.phases, budget=Budget(iterations=50, nodes=5_000, seconds=5))
    sat = res.saturation
    (phase,) = sat.phases
    # associativity's next batch would not fit the e-nodes left: it stays banned, and the report says so
    assert phase.stop.kind == "nodes" and sat.nodes <= sat.node_limit == 5_000, sat.table()
    assert sat.hit_limit == ["ac: nodes (limit 5000) (banned: ac/assoc)"], sat.hit_limit
    out, _ = run_trace(res.trace, args)
    torch.testing.assert_close(out[0], _sum_all(*args), rtol=1e-5, atol=1e-5)


def test_time_budget_holds_when_one_iteration_would_explode():
    """tests/rulepacks/cross.egg's pair rule matches 225, then ~68,000 times, and its third
    iteration alone ran ~90 s on a 1 s budget (egglog cannot be interrupted inside an iteration).
    Its growth is seen coming: the phase goes on in back-off slices that ban the pair rule while
    associativity and commutativity keep running, and stops before a slice predicted to overrun."""
    args = [torch.randn(4) for _ in range(16)]
    cat = load_catalogue([PACKS / "cross.egg"], include_builtin=False)
    cap = capture(_sum_all, *args)
    res = optimize_trace(cap.trace, cat.sources, cat.phases, budget=Budget(seconds=1.0))
    sat = res.saturation
    (phase,) = sat.phases
    assert phase.stop.kind == "time" and phase.throttled, sat.table()
    assert sat.seconds < 1.1 * 1.0 + 0.2, sat.table()  # 10 % plus slack for a loaded machine
    # the pair rule ran once (225 matches); its ~68,000 of the next iteration are banned, not applied
    # (on a loaded machine the second slice may already be predicted past the budget)
    assert phase.matches["cross/pairs"] == 225, phase.matches
    if phase.iterations > 1:
        assert "cross/pairs" in phase.banned and "cross/pairs" in " ".join(sat.hit_limit), sat.table()
    out, _ = run_trace(res.trace, args)
    torch.testing.assert_close(out[0], _sum_all(*args), rtol=1e-5, atol=1e-5)


def test_a_cross_product_rule_is_throttled_from_its_first_iteration():
    """On a 300-term sum the pair rule's first iteration alone matches 90,000 times (and their
    analysis took seconds): a rule whose query's atoms share no variable is seen statically, so
    its phase starts in back-off slices and the rule is banned before it ever runs."""
    args = [torch.randn(2) for _ in range(300)]
    cat = load_catalogue([PACKS / "cross.egg"], include_builtin=False)
    cap = capture(_sum_all, *args)
    res = optimize_trace(cap.trace, cat.sources, cat.phases, budget=Budget(seconds=1.0))
    sat = res.saturation
    (phase,) = sat.phases
    assert phase.throttled and not phase.matches.get("cross/pairs"), sat.table()
    assert "cross/pairs" in phase.banned, sat.table()
    assert sat.seconds < 1.1 * 1.0 + 0.2, sat.table()
    out, _ = run_trace(res.trace, args)
    torch.testing.assert_close(out[0], _sum_all(*args), rtol=1e-5, atol=1e-5)


def test_egglog_errors_name_file_line_and_rule(tmp_path):
    bad = tmp_path / "bad.egg"
    bad.write_text('(ruleset p)\n\n(rewrite (Exp (Nope x)) x :ruleset p :name "p/unknown")\n')
    with pytest.raises(RuleError, match=r"bad\.egg:3: rule 'p/unknown': .*Nope"):
        Session(_lang() + [Source(str(bad), bad.read_text())])


@pytest.mark.parametrize("text, line", [
    ('(ruleset p)\n; a comment (with a paren\n\n(rewrite (Exp x) x :ruleset p :name "p/a")\n(rewrite (Exp x) :ruleset p :name "p/b")\n', 5),
    ('(ruleset p)\n(rewrite (Exp x) x :ruleset p :name "p/a")\n(rewrite (Exp x :ruleset p)\n', 4),
    ('(ruleset p)\n\n(rewrite (Exp x) x :ruleset p :name "p/a")\nstray\n', 4),
    ('(ruleset p)\n(rewrite (Exp x) x :ruleset p :name "p/a"))\n', 2),
])
def test_egglog_parse_errors_name_the_files_line(tmp_path, text, line):
    """Sources are parsed one top-level form at a time (egglog copies the parsed text into every
    command); a malformed form, text between forms and an unbalanced parenthesis are still
    egglog's parse errors at the file's line."""
    bad = tmp_path / "bad.egg"
    bad.write_text(text)
    with pytest.raises(RuleError, match=rf"bad\.egg:{line}: "):
        Session(_lang() + [Source(str(bad), text)])


def test_squared_extent_has_an_egraph_form():
    # cross_entropy over x.view(-1, C) with y of shape [s, s] under dynamic=True: extent s**2
    import satfuse

    def f(x, y):
        return F.cross_entropy(x.view(-1, x.size(-1)), y.view(-1))

    plan = satfuse.optimize(f, torch.randn(4, 4, 10), torch.randint(0, 10, (4, 4)), options={"dynamic": True})
    for n in (3, 5):
        x, y = torch.randn(n, n, 10), torch.randint(0, 10, (n, n))
        torch.testing.assert_close(plan(x, y), f(x, y))


def test_repeated_extents_do_not_blow_up_the_shape_analysis():
    # [a, b, c, a, b]: bcast(S, S) used to recurse through every spelling of S's tail (920k e-nodes)
    import time

    import satfuse

    x, y = torch.randn(2, 3, 5, 2, 3), torch.randn(2, 3, 5, 2, 3)
    t0 = time.perf_counter()
    plan = satfuse.optimize(lambda a, b: a * b, x, y)
    assert time.perf_counter() - t0 < 20
    assert plan.engine.egraph_nodes < 1_000
    torch.testing.assert_close(plan(x, y), x * y)


def test_a_rule_that_changes_a_shape_stops_saturation_loudly(tmp_path):
    import satfuse

    (tmp_path / "bad.egg").write_text('(ruleset bad)\n(rewrite (Sub x x) (CFloat 0.0) :ruleset bad :name "bad/sub-self")\n')
    with pytest.raises(RuleError, match="different shapes.*rules check"):
        satfuse.optimize(lambda x: (x - x) * 2, torch.randn(4), options={"rules": [tmp_path]})


def test_an_analysis_iteration_that_explodes_is_undone():
    """An analysis rule whose facts square in number (tests/rulepacks/analysis_blowup.egg) takes the
    e-graph past the growth check in one iteration, which egglog cannot interrupt: what was left
    once cost 17 s to serialize and extract for nanquantile's 37-op program. An iteration after
    one that doubled the e-graph runs from a snapshot and is undone if it fails the checks; the
    report says so, and the plan is extracted from the e-graph before it."""
    args = [torch.randn(4) for _ in range(16)]
    cat = load_catalogue([PACKS / "analysis_blowup.egg"], include_builtin=False)
    cap = capture(_sum_all, *args)
    res = optimize_trace(cap.trace, cat.sources, cat.phases)
    sat = res.saturation
    assert any("iteration undone" in h for h in sat.hit_limit), sat.hit_limit
    assert res.egraph_nodes < 10_000, res.egraph_nodes
    out, _ = run_trace(res.trace, args)
    torch.testing.assert_close(out[0], _sum_all(*args), rtol=1e-5, atol=1e-5)


def test_shape_lists_of_a_gather_do_not_multiply(monkeypatch):
    """nanquantile's gather step unions a shape list with its own broadcast (lang/shape-take):
    without lang/dcons-injective every spelling of the list kept a tail class of its own and
    lang/bcast-cons multiplied them, 3,000 -> 1.4 million e-nodes in one analysis iteration, undone
    by the snapshot; a list's spellings now share their head and tail, and nothing explodes."""
    from satfuse.engine.capture import functional

    import satfuse

    # capture refuses a tensor q (its range check is eager's alone: tests/test_untraced_effects.py);
    # the graph of the call, which this is about, is traced here without that refusal
    monkeypatch.delitem(functional._UNTRACED_CHECKS, torch.nanquantile)
    x, q = torch.randn(3, 2, 1, 2), torch.tensor([0.25, 0.75])
    f = lambda x, q: torch.nanquantile(x, q, dim=0, keepdim=True)  # noqa: E731
    p = satfuse.optimize(f, x, q)
    assert not p.engine.saturation.hit_limit, p.engine.saturation.hit_limit
    assert p.engine.egraph_nodes < 10_000, p.engine.egraph_nodes
    got = p(x, q)
    torch.testing.assert_close(got[0] if isinstance(got, (list, tuple)) else got, f(x, q))
