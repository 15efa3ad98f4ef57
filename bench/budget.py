"""Budgets: the cross-product pack (tests/rulepacks/cross.egg) on a sum of N terms, one fresh
process per point.

    python bench/budget.py                          # 16 and 24 terms at 1 s and 10 s
    python bench/budget.py --terms 16 --seconds 2 5

cross.egg makes a sum of every pair of sums plus associativity and commutativity: its pair rule
matches 225 times, then ~68,000, then hundreds of millions (egglog cannot be interrupted inside
an iteration). Each point runs ``satfuse.optimize`` with only that pack and ``budget.seconds``
set, checks the plan against eager, and prints the saturation's seconds (its share of the
budget), the stop reason, the rules the back-off scheduler still banned, the e-nodes, the
extraction's seconds (its own 1 s limit) and the whole call's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from bench.child import run_child  # noqa: E402

_CHILD = r'''
import json, sys, time
import torch
import satfuse

terms, seconds, pack = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]

def total(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out

torch.manual_seed(0)
args = [torch.randn(4) for _ in range(terms)]
eng = satfuse.Engine({"rules": [pack], "builtin_rules": False, "budget": {"seconds": seconds},
                      "executor": "reference"})
eng.optimize(total, *args[:2])  # warm-up: imports, catalogue, a loaded session
t0 = time.perf_counter()
plan = eng.optimize(total, *args)
wall = time.perf_counter() - t0
sat = plan.engine.saturation
valid = torch.allclose(plan(*args), total(*args), rtol=1e-5, atol=1e-5)
print(json.dumps({"saturate": sat.seconds, "stop": [str(p.stop) for p in sat.phases],
                  "banned": sorted({r for p in sat.phases for r in p.banned}), "nodes": sat.nodes,
                  "extract": plan.timings.get("extract", 0.0), "total": wall, "valid": valid}))
'''


def run_point(terms: int, seconds: float, timeout: float) -> dict:
    pack = str(ROOT / "tests" / "rulepacks" / "cross.egg")
    return run_child(_CHILD, [str(terms), str(seconds), pack], timeout, {"OMP_NUM_THREADS": "1"})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--terms", type=int, nargs="+", default=[16, 24])
    ap.add_argument("--seconds", type=float, nargs="+", default=[1.0, 10.0], help="saturation budgets")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per point")
    args = ap.parse_args(argv)
    print(f"{'terms':>5} {'budget':>6} {'saturate':>8} {'of budget':>9} {'stop':<22} {'nodes':>7} "
          f"{'extract':>7} {'total':>6} {'valid':<5} banned")
    ok = True
    for n in args.terms:
        for s in args.seconds:
            r = run_point(n, s, args.timeout)
            if "error" in r:
                ok = False
                print(f"{n:>5} {s:>6g} {r['error']}")
                continue
            ok &= r["valid"] and r["saturate"] <= 1.1 * s
            print(f"{n:>5} {s:>6g} {r['saturate']:>8.2f} {r['saturate'] / s:>9.0%} {'; '.join(r['stop']):<22} "
                  f"{r['nodes']:>7} {r['extract']:>7.2f} {r['total']:>6.2f} {str(r['valid']):<5} "
                  f"{', '.join(r['banned'])}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
