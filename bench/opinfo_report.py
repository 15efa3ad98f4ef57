"""Per-op OpInfo differential report: every sample of every op, optimized and compared
with eager (see tests/test_opinfo.py for what "equal" means).

    python bench/opinfo_report.py                 # all ops, all samples
    python bench/opinfo_report.py add div_ cat    # some ops
    python bench/opinfo_report.py --limit 8       # the test's sample selection
    python bench/opinfo_report.py --path engine   # force the engine-level path
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
warnings.filterwarnings("ignore")

import test_opinfo as T  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ops", nargs="*", help="op ids (default: all); see OPS in tests/test_opinfo.py")
    ap.add_argument("--limit", type=int, default=None, help="samples per op (default: all)")
    ap.add_argument("--path", choices=("engine", "plan"), default=None, help="optimizer path (default: auto)")
    ap.add_argument("--max-failures", type=int, default=5, help="failures printed per op")
    ap.add_argument("--jobs", type=int, default=T.JOBS, help="ops run at once in workers (0: inline, no timeout)")
    a = ap.parse_args(argv)
    ops = a.ops or list(T.OPS)
    unknown = [o for o in ops if o not in T.OPS]
    if unknown:
        ap.error(f"unknown op ids: {unknown}")
    path = a.path or T.optimizer_path()
    print(f"satfuse OpInfo differential report ({path} path, torch {__import__('torch').__version__})")
    t0 = time.perf_counter()
    failures = []
    total_eq = total_tried = 0
    runner = T.Runner(ops, a.limit, path, a.jobs)
    for op in ops:
        rs = runner.result(op)
        tried = [r for r in rs if r.status != "skip"]
        eq = [r for r in rs if r.status == "equal"]
        fails = [r for r in rs if r.status == "fail"]
        total_eq += len(eq)
        total_tried += len(tried)
        if fails:
            failures.append((op, fails))
        known = sum(1 for r in fails if T.expected(r))
        mark = "" if not fails else ("   known failures" if known == len(fails) else "   FAIL")
        print(f"{op:24s} {len(eq):4d} / {len(tried):<4d} skipped {len(rs) - len(tried):3d}{mark}", flush=True)
    runner.close()
    print(f"\ntotal: {total_eq} / {total_tried} samples equal eager, {len(failures)} ops with failures, "
          f"{time.perf_counter() - t0:.1f} s")
    for op, fails in failures:
        print(f"\n== {op}: {len(fails)} failing samples")
        for r in fails[: a.max_failures]:
            why = T.expected(r)
            print(f"  [{r.dtype}] #{r.index} {r.desc}\n      {r.detail[:600]}"
                  + (f"\n      known: {why}" if why else ""))
        if len(fails) > a.max_failures:
            print(f"  ... {len(fails) - a.max_failures} more")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
