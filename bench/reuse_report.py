"""Cached plans on PyTorch's OpInfo samples: one compiled function per op, fed every sample.

``tests/test_opinfo.py`` builds a plan per sample and calls it on that sample's shapes. Here one
``satfuse.jit(call, dynamic=True)`` (or one ``torch.compile(call, backend="satfuse",
dynamic=True)``) per (op, variant, dtype) is called with every sample of the op in turn, the
first calls' plans still in its cache: a later sample of another size, rank, stride pattern,
scalar argument or aliasing is served by a cached plan whose guards accept it, or by a new
plan where they reject it. A wrong guard (one that accepts a call its plan is wrong for) or a
symbolic plan that is right only at the sizes it was built on shows as a difference from eager.
Each call is compared as the suite compares (``tests/test_opinfo._check_call``: outputs, every
input's final value, eager's exception type with inputs untouched).

    python bench/reuse_report.py                        # every op of the suite, float32 and int64
    python bench/reuse_report.py add sum cat --mode compile
    python bench/reuse_report.py --dtypes float64 bool --variants functional out
    python bench/reuse_report.py --all --variants functional   # every op of the OpInfo database

Per op and mode the table gives the calls made, the plans built (jit: the cache's entries;
compile: the graphs compiled), and the first difference. Nothing here runs in the test suite
(``tests/test_plan_reuse.py`` keeps a slice).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.filterwarnings("ignore")

import test_opinfo as T  # noqa: E402
import torch  # noqa: E402
import torch.utils._pytree as pytree  # noqa: E402

from bench.progress import progress  # noqa: E402
from bench.warnings_seen import Seen  # noqa: E402

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int32": torch.int32, "int64": torch.int64, "bool": torch.bool,
          "complex64": torch.complex64}


def _call_for(op: Any, variant: str) -> Callable | None:
    """The one callable every sample of ``op`` goes through in ``variant``."""
    if op is None:
        return lambda x, *a, **k: x.copy_(*a, **k)
    if variant == "inplace":
        return op.inplace_variant
    return op.op


def _sample_for(op: Any, smp: Any, variant: str) -> Any | None:
    if variant == "out":
        return T._with_out(op, smp)
    if variant == "noncontig":
        try:
            nc = smp.noncontiguous()
        except RuntimeError:  # a sparse sample has no strides to change
            return None
        big = any(isinstance(t, torch.Tensor) and t.numel() > 1 for t in pytree.tree_leaves((nc.input, nc.args)))
        return nc if big else None
    return smp


def _op_db_ids() -> list[str]:
    """Every OpInfo of PyTorch's database as ``name`` or ``name.variant``, the suite's ops left out."""
    from torch.testing._internal.common_methods_invocations import op_db

    mine = {(n, v) for n, v, _ in T.OPS.values()}
    return [o.name + (f".{o.variant_test_name}" if o.variant_test_name else "") for o in op_db
            if (o.name, o.variant_test_name) not in mine]


def _samples(op_id: str, dtype: torch.dtype) -> tuple[Any, list[Any]]:
    """(OpInfo, samples): the suite's reference samples for its ops, ``sample_inputs`` for any
    other op of the database (``--all``: opaque ops, which plans run as eager's kernels)."""
    if op_id in T.OPS:
        return T._raw_samples(op_id, dtype)
    db = T._op_db()
    name, _, variant = op_id.rpartition(".") if (op_id, "") not in db else (op_id, "", "")
    op = db.get((name, variant)) or db.get((op_id, ""))
    if op is None:
        raise SystemExit(f"unknown op {op_id!r}")
    if dtype not in op.supported_dtypes("cpu"):
        return op, []
    torch.manual_seed(0)
    try:
        return op, list(op.sample_inputs("cpu", dtype, requires_grad=False))
    except Exception:  # noqa: BLE001 - a generator that fails on this dtype has no samples for it
        return op, []


def run(op_id: str, dtype: torch.dtype, variant: str, mode: str) -> dict[str, Any]:
    """Every reference sample of ``op_id`` in ``dtype`` through one compiled callable."""
    import satfuse

    op, samples = _samples(op_id, dtype)
    if op is not None and variant not in T._variants(op):
        return {"calls": 0, "plans": 0, "status": "skip", "detail": f"no {variant} variant"}
    call = _call_for(op, variant)
    if call is None:
        return {"calls": 0, "plans": 0, "status": "skip", "detail": "no callable"}

    def through(*a: Any, **k: Any) -> Any:  # a function of its own: Dynamo and jit key on it
        return call(*a, **k)

    if mode == "jit":
        compiled = satfuse.jit(through, dynamic=True, max_plans=64)
    else:
        torch._dynamo.reset()
        compiled = torch.compile(through, backend="satfuse", dynamic=True)
    calls = 0
    with Seen("a satfuse bug") as bugs:
        for i, smp in enumerate(samples):
            s = _sample_for(op, smp, variant)
            if s is None:
                continue
            leaves, spec = pytree.tree_flatten((s.input, s.args, s.kwargs))
            pos = [j for j, x in enumerate(leaves) if isinstance(x, torch.Tensor)]

            def rebuilt(ts: tuple, f: Callable) -> Any:
                torch.manual_seed(0)  # random ops (bernoulli, cauchy_, ...) draw the same numbers in both
                full = list(leaves)
                for j, t in zip(pos, ts):
                    full[j] = t
                inp, args, kwargs = pytree.tree_unflatten(full, spec)
                return f(inp, *args, **kwargs)

            ts = [leaves[j] for j in pos]
            if any(t.layout != torch.strided for t in ts):
                continue  # the suite's copies and comparisons take strided tensors (satfuse refuses others by name)
            calls += 1
            try:
                T._check_call(lambda *x: rebuilt(x, compiled), lambda *x: rebuilt(x, call), ts,
                              f"sample {i} {T._describe(s)}")
            except AssertionError as e:
                return {"calls": calls, "plans": _plans(compiled, mode), "status": "differs",
                        "detail": str(e).splitlines()[0][:300]}
            except Exception as e:  # noqa: BLE001 - the compiled call raised where eager did not
                return {"calls": calls, "plans": _plans(compiled, mode), "status": "raises",
                        "detail": f"sample {i} {T._describe(s)}: {type(e).__name__}: "
                                  f"{(str(e).strip().splitlines() or [''])[0][:200]}"}
    if bugs.messages:
        return {"calls": calls, "plans": _plans(compiled, mode), "status": "bug", "detail": bugs.messages[0][:300]}
    return {"calls": calls, "plans": _plans(compiled, mode), "status": "ok" if calls else "skip", "detail": ""}


def _plans(compiled: Any, mode: str) -> int:
    if mode == "jit":
        return len(getattr(compiled, "cache", ()) or ())
    from satfuse.pipeline import default_engine

    return len(default_engine().compiled_plans())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ops", nargs="*", help="test ids of tests/test_opinfo.OPS or OpInfo names (default: the suite's)")
    ap.add_argument("--all", action="store_true", help="also every other op of PyTorch's OpInfo database")
    ap.add_argument("--mode", choices=("jit", "compile"), default="jit")
    ap.add_argument("--dtypes", nargs="*", default=["float32", "int64"], choices=sorted(DTYPES))
    ap.add_argument("--variants", nargs="*", default=list(T.VARIANTS), choices=list(T.VARIANTS))
    a = ap.parse_args(argv)
    logging.getLogger("satfuse").setLevel(logging.WARNING)
    logging.getLogger("torch").setLevel(logging.CRITICAL)  # Dynamo logs each fake-tensor failure of a sample eager rejects
    torch._dynamo.config.cache_size_limit = 64
    torch._dynamo.config.accumulated_cache_size_limit = 4096
    ops = a.ops or list(T.OPS) + (_op_db_ids() if a.all else [])
    counts: dict[str, int] = {}
    t0 = time.perf_counter()
    print(f"{'op':28} {'dtype':9} {'variant':11} {'calls':>5} {'plans':>5}  status")
    for op_id in progress(ops, f"bench/reuse_report.py ({a.mode})"):
        for dn in a.dtypes:
            for v in a.variants:
                r = run(op_id, DTYPES[dn], v, a.mode)
                counts[r["status"]] = counts.get(r["status"], 0) + 1
                if r["status"] == "skip":
                    continue
                print(f"{op_id:28} {dn:9} {v:11} {r['calls']:5} {r['plans']:5}  {r['status']}"
                      + (f"  {r['detail']}" if r["detail"] else ""), flush=True)
    print(f"\n{len(ops)} ops, mode {a.mode}, dtypes {' '.join(a.dtypes)} ({time.perf_counter() - t0:.0f} s): "
          + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    return 0 if not (counts.get("differs") or counts.get("raises") or counts.get("bug")) else 1


if __name__ == "__main__":
    sys.exit(main())
