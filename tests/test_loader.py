"""The bulk loader (engine/loader.py) must put exactly the command encoding's program into
the e-graph: same terms, same seeded facts, same saturated e-graph."""

from __future__ import annotations

import pytest
from satfuse.engine.capture import capture
from satfuse.engine.loader import HANDLES, loader_program, tables
from satfuse.engine.session import Session
from satfuse.engine.terms import encode
from satfuse.rewrites.packs import builtin_catalogue

from tests.corpus import CASES


def _program_sizes(sess: Session) -> dict[str, int]:
    return {k: v for k, v in sess.sizes().items() if k not in HANDLES and not k.startswith("load-") and v}


@pytest.fixture(scope="module")
def cat():
    return builtin_catalogue()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bulk_load_equals_command_encoding(cat, case):
    trace = capture(case.fn, *case.make_inputs(), dynamic=case.dynamic).trace
    bulk, cmds = Session(cat.sources), Session(cat.sources)
    bulk.add_trace(trace)
    enc = encode(trace)
    cmds.run(enc.commands, "trace")
    assert tables(trace) is not None
    assert _program_sizes(bulk) == _program_sizes(cmds)
    assert {k for k, v in bulk.sizes().items() if k.startswith("load-") and v} <= {"load-str", "load-float"}, \
        "every load row is deleted once used"
    bulk.saturate(cat.phases)
    cmds.saturate(cat.phases)
    assert _program_sizes(bulk) == _program_sizes(cmds)


def test_a_string_that_input_cannot_read_falls_back_to_commands(cat):
    """``input`` reads tab-separated rows with unquoted strings."""
    from satfuse.engine import parse_trace

    tr = parse_trace('def computation(x: "f32[3]"):\n  y = exp(x)  # f32[3]\n  return (y,)\n')
    tr.inputs[0].name = "x\tweird"
    assert tables(tr) is None
    sess = Session(cat.sources)
    enc = sess.add_trace(tr)
    assert enc.commands and sess.sizes()["Exp"] == 1


def test_loader_rules_cover_every_vocabulary_constructor():
    from satfuse.engine.vocab import OPS

    text = loader_program()
    for spec in OPS.values():
        assert f"({spec.egg} " in text, spec.egg


def test_a_session_takes_one_program(cat):
    """Handles and load rows are numbered per program: a second program would alias the first."""
    from satfuse.engine import parse_trace

    tr = parse_trace('def computation(x: "f32[3]"):\n  y = exp(x)  # f32[3]\n  return (y,)\n')
    sess = Session(cat.sources)
    sess.add_trace(tr)
    with pytest.raises(RuntimeError, match="one program"):
        sess.add_trace(tr)
