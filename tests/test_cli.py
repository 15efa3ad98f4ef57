"""The command line: ordinary mistakes are one line ``FILE:LINE: what is wrong`` with exit code 2,
a traceback only with ``--debug``; a trace is validated fully before it is optimized."""

import re

import pytest

from satfuse.__main__ import main

GOOD = '''def computation(x: "f32[8, 16]"):
  e = exp(x)  # f32[8, 16]
  return (e,)
'''


def _run(tmp_path, text, capsys, *extra, name="prog.py"):
    f = tmp_path / name
    f.write_text(text)
    code = main([*extra, "optimize", str(f)])
    out, err = capsys.readouterr()
    return code, out, err, str(f)


@pytest.mark.parametrize("text, line, what", [
    (GOOD.replace("f32[8, 16]\"", "q99[8, 16]\"", 1), 1, "unknown dtype 'q99'"),
    (GOOD.replace("exp(x)", "exp(y)"), 2, "name 'y' is not defined"),
    (GOOD.replace("exp(x)", "aten.not_an_op.default(x)"), 2, "unknown torch op 'aten.not_an_op.default'"),
    (GOOD.replace("  return (e,)", "  s = sum(x, (1,), 0)  # f32[8]\n  writeback(x, s)\n  return (e,)"), 4,
     "writeback(x, s): the value is f32[8] but x is f32[8, 16]"),
    (GOOD.replace("exp(x)", "exp(x"), 2, "syntax error"),
    (GOOD.replace("exp(x)", "frobnicate(x)"), 2, "unknown op 'frobnicate'"),
])
def test_trace_mistakes_are_one_line(tmp_path, capsys, text, line, what):
    code, out, err, path = _run(tmp_path, text, capsys, name="prog.trace")
    assert code == 2, err
    assert err.startswith(f"error: {path}:{line}: ") and what in err, err
    assert "Traceback" not in err and err.count("\n") == 1 and out == ""


def test_missing_file_and_program_errors(tmp_path, capsys):
    assert main(["optimize", str(tmp_path / "nope.py")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'nope.py'}: cannot read") and "Traceback" not in err
    code, _, err, path = _run(tmp_path, "import torch\ndef program(x):\n    return x +\n", capsys)
    assert code == 2 and err.startswith(f"error: {path}:3: SyntaxError"), err
    code, _, err, path = _run(tmp_path, "import torch\ndef program(x):\n    return x\n"
                              "def example_inputs():\n    return (torch.randn(2, 3) @ torch.randn(4, 5),)\n", capsys)
    assert code == 2 and err.startswith(f"error: {path}:5: RuntimeError"), err


def test_capture_error_is_one_line_and_debug_shows_the_traceback(tmp_path, capsys):
    prog = "import torch\ndef program(x):\n    return x @ x\ndef example_inputs():\n    return (torch.randn(2, 3),)\n"
    code, _, err, _ = _run(tmp_path, prog, capsys)
    assert code == 2 and "Traceback" not in err, err
    assert re.match(r"error: \w*Error: capture of 'program' failed while tracing: RuntimeError", err), err
    code, _, err, _ = _run(tmp_path, prog, capsys, "--debug")
    assert code == 2 and "Traceback (most recent call last)" in err


def test_good_trace_still_optimizes(tmp_path, capsys):
    code, out, err, _ = _run(tmp_path, GOOD, capsys, name="good.trace")
    assert code == 0, err
    assert "def prologue(inputs)" in out
