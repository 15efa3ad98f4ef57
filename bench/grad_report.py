"""Gradients through ``torch.compile(backend="satfuse")`` against eager, over PyTorch's whole
OpInfo database: every op that supports autograd, its first ``--samples`` float64 samples with
``requires_grad=True``. The compiled call runs AOTAutograd's forward and backward graphs
through satfuse (capture, e-graph, extraction, lowering, reference executor); eager runs the op
itself. Compared: every output (value, dtype, shape) and the gradient of every input that
requires grad, for the same random output weights (``torch.autograd.grad`` with fixed
``grad_outputs``).

    python bench/grad_report.py                      # every op, 2 samples each
    python bench/grad_report.py --ops add,nn.functional.conv2d --samples 4
    python bench/grad_report.py --dynamic            # symbolic shapes (dynamic=True)
    python bench/grad_report.py --dtype complex128   # complex autograd

Per op the table says ``ok``, ``differs`` (the first difference), ``raises`` (the compiled call
raised where eager did not: the exception), or ``skip`` (eager itself raised, or nothing
requires grad). A graph satfuse ran eagerly (the backend's "no plan for the ... graph" warning)
is still compared; the ``no plan`` column counts those graphs and names the first reason.
Nothing here runs in the test suite (tests/test_backend.py keeps a quick slice of the
backward ops this found).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.filterwarnings("ignore")
os.environ.setdefault("TORCHDYNAMO_VERBOSE", "0")

import torch  # noqa: E402
import torch.utils._pytree as pytree  # noqa: E402

from bench.progress import progress  # noqa: E402
from bench.warnings_seen import Seen  # noqa: E402

TOL = dict(rtol=1e-6, atol=1e-7)


class _Timeout(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _Timeout()


def _leaves(sample: Any) -> tuple[list[torch.Tensor], Any]:
    """The sample's tensors that require grad (the compiled function's arguments), and a
    rebuild of (input, args, kwargs) from them; everything else is a constant of the call."""
    flat, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    at = [i for i, x in enumerate(flat) if isinstance(x, torch.Tensor) and x.requires_grad]

    def rebuild(ts: tuple) -> tuple:
        f = list(flat)
        for i, t in zip(at, ts):
            f[i] = t
        return pytree.tree_unflatten(f, spec)

    return [flat[i] for i in at], rebuild


def _outputs(out: Any) -> list[torch.Tensor]:
    return [o for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor)]


def _run(fn: Any, leaves: list[torch.Tensor], weights: list[torch.Tensor] | None) -> tuple[list, list]:
    """Outputs and input gradients of ``fn`` on fresh leaves with ``leaves``' values."""
    xs = [x.detach().clone().requires_grad_(True) for x in leaves]
    outs = _outputs(fn(*xs))
    diff = [o for o in outs if o.requires_grad and o.grad_fn is not None]
    if weights is None:
        g = torch.Generator().manual_seed(0)
        weights = [torch.randn(o.shape, dtype=o.dtype, generator=g) if o.dtype.is_floating_point or o.is_complex()
                   else None for o in diff]
    pairs = [(o, w) for o, w in zip(diff, weights) if w is not None]
    grads = (torch.autograd.grad([o for o, _ in pairs], xs, [w for _, w in pairs], allow_unused=True)
             if pairs else [None] * len(xs))
    return [o.detach() for o in outs], list(grads), weights


def _differs(what: str, got: Any, want: Any) -> str | None:
    if (got is None) != (want is None):
        return f"{what}: {'None' if got is None else 'a tensor'} vs eager's {'None' if want is None else 'tensor'}"
    if got is None:
        return None
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{what}: {got.dtype}{tuple(got.shape)} vs eager's {want.dtype}{tuple(want.shape)}"
    try:
        torch.testing.assert_close(got, want, equal_nan=True, **TOL)
    except AssertionError as e:
        return f"{what}: " + " ".join(str(e).split("\n")[1:3]).strip()
    return None


def check(op: Any, sample: Any, dynamic: bool) -> tuple[str, str]:
    leaves, rebuild = _leaves(sample)
    if not leaves:
        return "skip", "no input requires grad"

    def fn(*ts: torch.Tensor) -> Any:
        a, args, kwargs = rebuild(ts)
        return op(a, *args, **kwargs)

    try:
        want, want_g, weights = _run(fn, leaves, None)
    except Exception as e:  # noqa: BLE001 - eager's own refusal: nothing to compare
        return "skip", f"eager raises {type(e).__name__}"
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="satfuse", dynamic=dynamic, fullgraph=False)
    try:
        got, got_g, _ = _run(compiled, leaves, weights)
    except _Timeout:
        raise
    except Exception as e:  # noqa: BLE001
        return "raises", f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"
    if len(got) != len(want):
        return "differs", f"{len(got)} outputs vs eager's {len(want)}"
    for i, (a, b) in enumerate(zip(got, want)):
        d = _differs(f"output {i}", a, b)
        if d:
            return "differs", d
    for i, (a, b) in enumerate(zip(got_g, want_g)):
        d = _differs(f"grad of input {i}", a, b)
        if d:
            return "differs", d
    return "ok", ""


def main(argv: list[str] | None = None) -> int:
    from torch.testing._internal.common_methods_invocations import op_db

    import satfuse  # noqa: F401 - registers the backend

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="", help="comma-separated OpInfo names (name or name.variant); default all")
    ap.add_argument("--samples", type=int, default=2, help="samples per op")
    ap.add_argument("--dynamic", action="store_true", help="compile with dynamic=True")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per op")
    ap.add_argument("--dtype", choices=("float64", "complex128"), default="float64",
                    help="the samples' dtype (the ops whose backward OpInfo says supports it)")
    a = ap.parse_args(argv)
    dtype = getattr(torch, a.dtype)
    want = set(filter(None, a.ops.split(",")))
    ops = [o for o in op_db if o.supports_autograd and dtype in o.supported_backward_dtypes("cpu")
           and (not want or o.name in want or f"{o.name}.{o.variant_test_name}" in want)]
    nop = Seen("no plan for").__enter__()  # attached for the whole run
    logging.getLogger("satfuse").propagate = False
    signal.signal(signal.SIGALRM, _alarm)
    counts: dict[str, int] = {}
    rows: list[tuple[str, str, str, str]] = []
    t0 = time.perf_counter()
    for op in progress(ops, "bench/grad_report.py"):
        name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        status, detail, first_no_plan = "skip", "no sample", ""
        before = len(nop.messages)
        signal.alarm(a.timeout)
        try:
            for i, s in enumerate(op.sample_inputs("cpu", dtype, requires_grad=True)):
                if i >= a.samples:
                    break
                st, det = check(op, s, a.dynamic)
                if st == "skip" and status != "skip":
                    continue
                status, detail = st, det
                if st in ("differs", "raises"):
                    detail = f"sample {i}: {det}"
                    break
        except _Timeout:
            status, detail = "raises", f"timeout after {a.timeout} s"
        except Exception as e:  # noqa: BLE001 - the samples themselves
            status, detail = "skip", f"samples: {type(e).__name__}"
        finally:
            signal.alarm(0)
        plans_refused = len(nop.messages) - before
        if plans_refused:
            first_no_plan = f"{plans_refused}: {nop.messages[before].split('graph (', 1)[-1][:160]}"
        counts[status] = counts.get(status, 0) + 1
        counts["no plan"] = counts.get("no plan", 0) + bool(plans_refused)
        rows.append((name, status, detail, first_no_plan))
        if status in ("differs", "raises") or plans_refused:
            print(f"{name:40s} {status:8s} {detail[:150]}  {('[no plan ' + first_no_plan + ']') if first_no_plan else ''}",
                  flush=True)
    print(f"\n{len(ops)} ops ({a.dtype}, {'dynamic' if a.dynamic else 'static'} shapes, {a.samples} samples each, "
          f"{time.perf_counter() - t0:.0f} s): " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if counts.get("differs") or counts.get("raises") else 0


if __name__ == "__main__":
    sys.exit(main())
