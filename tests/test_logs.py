"""Logs: TORCH_LOGS controls satfuse's per-stage loggers; errors are importable from satfuse;
a failed capture is one clear error, not a page of torch's fake-tensor log."""

import os
import subprocess
import sys

import satfuse

PROGRAM = """
import torch, satfuse
import torch.nn.functional as F
x, y = torch.randn(8, 16), torch.randint(0, 16, (8,))
plan = satfuse.optimize(lambda x, y: F.cross_entropy(x, y), x, y)
try:
    satfuse.optimize(lambda a, b: a @ b, torch.randn(3, 4), torch.randn(5, 6))
except satfuse.CaptureError as e:
    print("CAPTURE-ERROR", str(e).splitlines()[0])
"""


def _run(torch_logs: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TORCH_LOGS"}
    if torch_logs is not None:
        env["TORCH_LOGS"] = torch_logs
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=300)


def test_torch_logs_shows_every_stage():
    r = _run("+satfuse")
    assert r.returncode == 0, r.stderr
    err = r.stderr
    for want in ("captured", "saturated to", "rules that matched: ", "gather/take-to-onehot-max", "extracted with",
                 "lowered", "plan:", "def prologue(inputs)"):
        assert want in err, f"{want!r} missing from TORCH_LOGS=+satfuse output:\n{err[-3000:]}"
    assert "failed while attempting to run meta" not in err  # torch's fake-tensor traceback stays quiet
    assert "CAPTURE-ERROR" in r.stdout


def test_one_stage_at_info():
    r = _run("satfuse.lowering")
    assert r.returncode == 0, r.stderr
    assert "lowered" in r.stderr and "saturated to" not in r.stderr and "def prologue" not in r.stderr


def test_silent_by_default(capfd):
    """Without TORCH_LOGS nothing is printed, and a failed capture is one clear error."""
    import torch

    plan = satfuse.optimize(lambda x: torch.exp(x) * 2, torch.randn(4))
    assert plan is not None
    try:
        satfuse.optimize(lambda a, b: a @ b, torch.randn(3, 4), torch.randn(5, 6))
    except satfuse.CaptureError as e:
        assert "RuntimeError: a and b must have same reduction dim" in str(e)
    else:
        raise AssertionError("a shape error in the program must fail capture")
    out, err = capfd.readouterr()
    assert out == "" and err == "", err[-2000:]


def test_public_errors_are_importable_from_satfuse():
    from satfuse.engine.session import RuleError
    from satfuse.lowering.guards import GuardError

    assert satfuse.GuardError is GuardError and satfuse.RuleError is RuleError
    for name in satfuse.ERRORS:
        cls = getattr(satfuse, name)
        assert isinstance(cls, type) and issubclass(cls, Exception) and cls.__name__ == name
        assert name in satfuse.__all__
