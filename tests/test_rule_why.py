"""Why a rule did not fire: nearest partial matches, the first failing atom or condition and
the value it saw; the e-graph picture around them."""

from __future__ import annotations

import json

import pytest
from satfuse.lowering.dot import dot_program, render
from satfuse.rewrites.cli import main_rules_check, main_rules_why

WIDE = """\
import torch

def program(x, idx):
    return torch.gather(torch.log_softmax(x, 1), 1, idx).neg().mean()

def example_inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(8, 16, generator=g), torch.randint(0, 16, (8, 2), generator=g)
"""


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    p = tmp_path_factory.mktemp("why") / "wide.py"
    p.write_text(WIDE)
    return p


def test_why_take_to_onehot_sum_names_the_failing_condition_and_value(wide, capsys, tmp_path):
    svg = tmp_path / "why.svg"
    args = ["gather/take-to-onehot-max", str(wide)] + (["--svg", str(svg)] if dot_program() else [])
    assert main_rules_why(args) == 0
    out = capsys.readouterr().out
    assert "did not fire" in out and "nearest partial matches" in out
    assert "gather7 = gather(sub6, 1, idx)" in out  # the atom matched a program value, by trace line
    assert "input idx: i64[8, 2]" in out
    assert "(= (ext i d) (Num 1)) failed: ext(i, 1) is 2" in out
    if dot_program():
        text = svg.read_text()
        assert "<svg" in text and "showing" in text and "e&#45;nodes" in text  # dot escapes "-"


def test_why_symbolic_extents_show_the_relation_row_that_is_missing(wide, capsys):
    assert main_rules_why(["gather/gather-to-take", str(wide), "--dynamic"]) == 0
    out = capsys.readouterr().out
    assert "(others-match x i d 0) failed: no row (others-match x i 1 0)" in out


def test_dead_rule_in_the_check_table_says_why(tmp_path, capsys):
    (tmp_path / "dead.egg").write_text(
        "(ruleset dead)\n"
        "; exp(-x) never appears in the corpus program below (it has exp(x) only)\n"
        '(rewrite (Exp (Neg x)) (Reciprocal (Exp x)) :ruleset dead :name "dead/exp-neg")\n')
    (tmp_path / "c.py").write_text("import torch\nCASES = [('e', lambda x: torch.exp(x) * 2, lambda: (torch.ones(3),))]\n")
    rc = main_rules_check([str(tmp_path / "dead.egg"), "--corpus", str(tmp_path / "c.py"), "--no-builtin-corpus",
                           "--only", "--json", "-"])
    out = capsys.readouterr().out
    assert rc == 1
    data = json.loads(out)  # `--json -` prints only JSON
    (rule,) = data["rules"]
    assert rule["dead"] and "(Neg x) failed" in rule["why"] and "is not a Neg" in rule["why"]


@pytest.mark.skipif(dot_program() is None, reason="Graphviz's `dot` is not installed")
def test_render_reports_dot_errors():
    with pytest.raises(RuntimeError, match="dot failed"):
        render("digraph { a -> }")
