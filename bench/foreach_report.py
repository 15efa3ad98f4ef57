"""Foreach OpInfo report: every sample of PyTorch's foreach OpInfos (``foreach_*_op_db``),
functional and in place, in every dtype below, optimized and compared with eager (see
tests/test_foreach_opinfo.py for what "equal" and "refused" mean). Prints a row per op and the
totals; lists every failing sample.

    python bench/foreach_report.py                       # all ops, all samples, every dtype (minutes)
    python bench/foreach_report.py --limit 2 --dtypes float16 bool
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import test_foreach_opinfo as T  # noqa: E402
import torch  # noqa: E402

from bench.progress import progress  # noqa: E402

DTYPES = ("float32", "float64", "float16", "bfloat16", "complex64", "int64", "int32", "uint8", "bool")
COLS = ("equal", "refused", "eager raises", "fail")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="samples per op and dtype")
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    args = ap.parse_args(argv)
    dtypes = [getattr(torch, d) for d in args.dtypes]
    t0 = time.perf_counter()
    total = dict.fromkeys(COLS, 0)
    failures = []
    print(f"{'op':22} " + " ".join(f"{c:>13}" for c in COLS))
    for op in progress(T.OPS, "bench/foreach_report.py", lambda o: o.name):
        row = dict.fromkeys(COLS, 0)
        for variant in T.VARIANTS:
            if (op.op if variant == "functional" else op.inplace_variant) is None:
                continue
            for dtype in dtypes:
                for k, sample in enumerate(T.samples(op, dtype, args.limit)):
                    status, detail = T.run_sample(op, variant, sample)
                    row[status] += 1
                    if status == "fail":
                        failures.append(f"{op.name} {variant} {str(dtype).split('.')[1]} sample {k}: {detail}")
        for c in COLS:
            total[c] += row[c]
        print(f"{op.name:22} " + " ".join(f"{row[c]:>13}" for c in COLS))
    print(f"{'total':22} " + " ".join(f"{total[c]:>13}" for c in COLS) + f"   ({time.perf_counter() - t0:.0f} s)")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
