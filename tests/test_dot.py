"""Pictures: the plan as a Graphviz graph (segments as clusters, fallbacks, write-backs, bytes)."""

from __future__ import annotations

import pytest
import torch
from satfuse.lowering.dot import dot_program, render

import satfuse
from tests.corpus import BY_NAME

needs_dot = pytest.mark.skipif(dot_program() is None, reason="Graphviz's `dot` is not installed (apt-get install graphviz)")


@pytest.fixture(scope="module")
def ce_plan():
    case = BY_NAME["ce_fwd_bwd"]
    return satfuse.optimize(case.fn, *case.make_inputs())


def test_plan_dot_has_segments_inputs_outputs_and_bytes(ce_plan):
    text = ce_plan.to_dot(title="ce")
    assert text.startswith("digraph plan {") and text.rstrip().endswith("}")
    assert "subgraph cluster_seg0" in text and "fused ops" in text
    assert 'input x: f32[8, 16]' in text and "output 0" in text and "output 1" in text
    assert 'label="x 512 B"' in text  # x (8 x 16 f32) crosses into the segment once
    assert text.count('label="x 512 B"') == 1


def test_fallbacks_and_writebacks_are_drawn():
    def prog(buf, x):
        buf.add_(torch.mm(x, x))
        return buf * 2

    plan = satfuse.optimize(prog, torch.zeros(3, 3), torch.randn(3, 3))
    text = plan.to_dot()
    assert "torch:" in text  # mm runs as a torch call
    assert "buf <-" in text  # the in-place update is written back


@needs_dot
def test_plan_renders_to_svg(ce_plan, tmp_path):
    svg = render(ce_plan.to_dot(title="ce")).decode()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "cluster_seg0" in svg and "512 B" in svg


@needs_dot
def test_explain_cli_writes_svg(tmp_path):
    from satfuse.__main__ import main

    prog = tmp_path / "p.py"
    prog.write_text("import torch\ndef program(x):\n    return (x.exp() * 2).sum(1)\n"
                    "def example_inputs():\n    return (torch.randn(4, 8),)\n")
    out = tmp_path / "p.svg"
    assert main(["explain", str(prog), "--svg", str(out)]) == 0
    assert "<svg" in out.read_text() and "seg0" in out.read_text()
