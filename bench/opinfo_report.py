"""OpInfo differential report: every sample of every op in every variant (functional,
in-place, out=, non-contiguous; each plan called a second time on new values), in every
dtype of tests/test_opinfo.DTYPES the op has, optimized and compared with eager (see
tests/test_opinfo.py for what "equal" and "refused as listed" mean). Prints a row per op,
then counts per variant: equal / refused-as-listed / failing (of them known, i.e. listed
in test_opinfo.KNOWN with the finding that tracks it).

    python bench/opinfo_report.py                 # all ops, all reference samples (long)
    python bench/opinfo_report.py add div cat     # some ops
    python bench/opinfo_report.py --limit 3       # the suite's quick slice
    python bench/opinfo_report.py --path engine   # force the engine-level path
    python bench/opinfo_report.py --path jit      # symbolic capture (satfuse.jit, every dim a symbol)
    python bench/opinfo_report.py --op-db --limit 3   # the rest of PyTorch's OpInfo database
    SATFUSE_OPINFO_DEVICE=cuda python bench/opinfo_report.py --limit 3   # GPU: plans run on nvFuser
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.filterwarnings("ignore")
if "--op-db" in sys.argv:  # read by test_opinfo at import, here and in the workers it starts
    os.environ["SATFUSE_OPINFO_OP_DB"] = "1"

import test_opinfo as T  # noqa: E402

from bench.progress import progress  # noqa: E402

COLS = ("equal", "refused", "failing", "known", "skipped")


def _count(c: dict[str, int], status: str, r: T.Result) -> None:
    """Tally one outcome; a failing one is also counted as known when KNOWN lists it."""
    key = {"equal": "equal", "refused": "refused", "fail": "failing", "skip": "skipped"}[status]
    c[key] += 1
    if key == "failing" and T.expected(r):
        c["known"] += 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ops", nargs="*", help="op ids (default: all); see OPS in tests/test_opinfo.py")
    ap.add_argument("--limit", type=int, default=None, help="samples per op (default: all)")
    ap.add_argument("--path", choices=T.PATHS, default=None,
                    help="optimizer path: plan (optimize), jit (symbolic capture), engine (default: plan)")
    ap.add_argument("--max-failures", type=int, default=5, help="failures printed per op")
    ap.add_argument("--jobs", type=int, default=T.JOBS, help="ops run at once in workers (0: inline, no timeout)")
    ap.add_argument("--op-db", action="store_true",
                    help="the ops of PyTorch's OpInfo database beyond tests/test_opinfo.OPS (ids: name[.variant])")
    a = ap.parse_args(argv)
    ops = a.ops or ([o for o in T.OPS if T.OPS[o] not in T.VOCAB_OPS] if a.op_db else list(T.OPS))
    unknown = [o for o in ops if o not in T.OPS]
    if unknown:
        ap.error(f"unknown op ids: {unknown}")
    path = a.path or T.optimizer_path()
    print(f"satfuse OpInfo differential report ({path} path, torch {__import__('torch').__version__})")
    t0 = time.perf_counter()
    failures = []
    per_variant: dict[str, dict[str, int]] = {v: dict.fromkeys(COLS, 0) for v in (*T.VARIANTS, "second call")}
    runner = T.Runner(ops, a.limit, path, a.jobs)
    for op in progress(ops, "bench/opinfo_report.py"):
        rs = runner.result(op)
        for r in rs:
            _count(per_variant[r.variant], r.status, r)
            if r.status == "equal" and r.second != "skip":
                _count(per_variant["second call"], r.second, r)
        tried = [r for r in rs if r.status != "skip"]
        fails = [r for r in rs if r.failed]
        refused = sum(r.status == "refused" for r in rs)
        if fails:
            failures.append((op, fails))
        known = sum(1 for r in fails if T.expected(r))
        mark = "" if not fails else ("   known failures" if known == len(fails) else "   FAIL")
        print(f"{op:24s} {len(tried) - len(fails) - refused:4d} equal {refused:3d} refused {len(fails):3d} failing "
              f"of {len(tried):<4d} skipped {len(rs) - len(tried):3d}{mark}", flush=True)
    runner.close()
    print(f"\n{'variant':14s} " + " ".join(f"{c:>9s}" for c in COLS))
    for v, c in per_variant.items():
        print(f"{v:14s} " + " ".join(f"{c[k]:9d}" for k in COLS))
    print(f"({len(ops)} ops, {time.perf_counter() - t0:.1f} s; skipped: in-place writes into self-overlapping "
          f"memory, whose eager result depends on loop order)")
    for op, fails in failures:
        print(f"\n== {op}: {len(fails)} failing samples")
        for r in fails[: a.max_failures]:
            known = T.expected(r)
            print(f"  {r.line()[:700]}" + (f"\n      known: {known.finding}" if known else ""))
        if len(fails) > a.max_failures:
            print(f"  ... {len(fails) - a.max_failures} more")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
