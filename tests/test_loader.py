"""The bulk loader (engine/loader.py) must put exactly the command encoding's program into
the e-graph: same terms, same seeded facts, same saturated e-graph."""

from __future__ import annotations

import pytest
from satfuse.engine.capture import capture
from satfuse.engine.loader import HANDLES, LOADER_PATH, LOADER_TEXT, read_row_kinds, tables
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


def test_load_pack_covers_every_vocabulary_constructor():
    from satfuse.engine.vocab import OPS

    for spec in OPS.values():
        assert f"({spec.egg} " in LOADER_TEXT, spec.egg


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("(load-row 1 c0 c1 0 0 0 0)", "(load-row 0 c0 c1 0 0 0 0)", 1), "opcode 0 is taken"),
    (lambda t: t.replace("(load-row 1 c0 c1 0 0 0 0)", "(load-row 1 c0 0 c1 0 0 0)", 1), "then 0 up to its width"),
    (lambda t: t.replace("((union (Ref c0) (Exp (Ref c1)))", "((union (Ref c0) (Exp (Ref c1) c2))").replace(
        "(load-row 29 c0 c1 0 0 0 0))", "(load-row 29 c0 c1 c2 0 0 0))", 1), "load-op-Exp needs columns"),
])
def test_a_load_pack_that_does_not_fit_the_format_names_file_and_line(edit, message):
    text = edit(LOADER_TEXT)
    assert text != LOADER_TEXT
    with pytest.raises(ValueError, match=rf"^{LOADER_PATH}:\d+: .*{message}"):
        read_row_kinds(LOADER_PATH, text)


def test_cleanup_pack_forgets_exactly_the_facts_extraction_does_not_read():
    """rules/cleanup.egg lists lang.egg's relations and analyses by hand: in step with lang.egg."""
    import re

    from satfuse.engine.egraph import OBLIGATION_OPS, READ_BY_EXTRACTION
    from satfuse.engine.schema import ANALYSES, RELATIONS
    from satfuse.engine.session import CLEANUP_TEXT

    forgotten = set(re.findall(r'^\(rule \(\((?:= v \()?([\w-]+) ', CLEANUP_TEXT, re.M))
    assert forgotten == (RELATIONS - OBLIGATION_OPS) | (ANALYSES - READ_BY_EXTRACTION)


def test_a_session_forgets_its_packs_relations(cat):
    """Relations a rule pack declares are forgotten by drop_facts, with the pack's own
    satfuse-cleanup rule, as lang.egg's are by rules/cleanup.egg."""
    from satfuse.engine import parse_trace
    from satfuse.engine.session import Source

    pack = Source("mine.egg", "(ruleset mine)\n(relation seen (T))\n"
                              "(rule ((= e (Exp x))) ((seen e)) :ruleset mine :name \"mine/seen\")\n"
                              "(rule ((seen e)) ((delete (seen e))) :ruleset satfuse-cleanup :name \"mine/forget\")\n")
    sess = Session([*cat.sources, pack])
    sess.add_trace(parse_trace('def computation(x: "f32[3]"):\n  y = exp(x)  # f32[3]\n  return (y,)\n'))
    sess.run(["(run mine 1)"], "mine")
    assert sess.sizes()["seen"] == 1
    sess.drop_facts()
    assert not sess.sizes().get("seen") and not sess.sizes().get("rank")


def test_a_session_takes_one_program(cat):
    """Handles and load rows are numbered per program: a second program would alias the first."""
    from satfuse.engine import parse_trace

    tr = parse_trace('def computation(x: "f32[3]"):\n  y = exp(x)  # f32[3]\n  return (y,)\n')
    sess = Session(cat.sources)
    sess.add_trace(tr)
    with pytest.raises(RuntimeError, match="one program"):
        sess.add_trace(tr)


def test_an_egglog_error_in_the_engine_packs_names_file_line_and_rule(cat, monkeypatch):
    """rules/load.egg and rules/cleanup.egg are loaded like the packs: egglog's errors in them
    point at their lines."""
    from satfuse.engine import session
    from satfuse.engine.session import RuleError

    broken = LOADER_TEXT.replace("((union (Ref c0) (CInt c1))", "((union (Ref c0) (CInt nowhere))")
    assert broken != LOADER_TEXT
    line = broken[:broken.index("(CInt nowhere)")].count("\n") + 1
    monkeypatch.setattr(session, "LOADER_TEXT", broken)
    with pytest.raises(RuleError, match=rf"load\.egg:{line}: rule 'load-cint': .*nowhere"):
        Session(cat.sources)


def test_drop_facts_forgets_the_loaders_tables_and_keeps_the_program(cat):
    """rules/load.egg's own satfuse-cleanup rules: once loaded, the list and extent handles and
    the string and float tables are forgotten before serializing (an eighth of a 10k-op
    program's serialized e-graph), and the program still extracts to the same values."""
    import torch
    from satfuse.engine import parse_trace
    from satfuse.engine.optimize import optimize_trace
    from satfuse.lowering import lower

    text = ('def computation(x: "f32[2, 3]"):\n  y = mul(x, 2.5)  # f32[2, 3]\n'
            '  z = reshape(y, [3, 2])  # f32[3, 2]\n  w = cat([z, z], 0)  # f32[6, 2]\n  return (w,)\n')
    sess = Session(cat.sources)
    sess.add_trace(parse_trace(text))
    before = sess.sizes()
    assert all(before.get(t) for t in ("load-str", "load-float", "DLRef", "TLRef"))
    sess.drop_facts()
    after = sess.sizes()
    assert not any(after.get(t) for t in ("load-str", "load-float", "DRef", "DLRef", "ILRef", "TLRef"))
    assert after.get("Ref") == before["Ref"]  # values are still named by their handles
    trace = parse_trace(text)
    res = optimize_trace(trace, cat.sources, cat.phases)
    x = torch.randn(2, 3)
    (got,) = lower(res.trace)(x)
    torch.testing.assert_close(got, torch.cat([(x * 2.5).reshape(3, 2)] * 2))


def test_tsv_writes_each_cell_as_str():
    """One formatting call for rows of one width, a line per row otherwise: the same text."""
    from satfuse.engine.loader import tsv

    for rows in ([(0, 1, "a b", 2.5)] * 3, [(1,), (2, "x"), ()], []):
        assert tsv(rows) == "".join("\t".join(str(c) for c in r) + "\n" for r in rows)


def test_seed_rows_are_the_rows_add_writes():
    """``Tables.seed`` writes what three ``Tables.add`` calls would, ids of strings included."""
    from satfuse.engine.loader import Tables

    a, b = Tables(), Tables()
    for t in (a, b):
        t.add("load-input", 0, "x")
    a.add("load-shape", 0, 7)
    a.add("load-dtype", 0, "f32")
    a.add("load-rank", 0, 2)
    b.seed(0, 7, "f32", 2)
    assert a.rows == b.rows and a._ids == b._ids
