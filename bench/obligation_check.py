"""Cost of a data obligation's check on CPU: the CE plan with its index-in-range check against
the same plan with the check lines removed (µs per call; medians of many calls).

    python bench/obligation_check.py [--n 512] [--c 32768]
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import satfuse


def per_call(fn, args, reps: int) -> float:
    for _ in range(10):
        fn(*args)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--c", type=int, default=32768)
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    torch.set_num_threads(1)
    x, y = torch.randn(a.n, a.c), torch.randint(0, a.c, (a.n,))
    plan = satfuse.optimize(lambda p, q: F.cross_entropy(p, q), x, y)
    idx = plan.trace.obligations[0].args[0]
    check = plan.lowered.source.splitlines()
    line = next(ln for ln in check if "check (gather/" in ln).strip()
    # the check alone, as the plan runs it (its index is the segment's exported value)
    env = {"torch": torch, "IndexError": IndexError, "RuntimeError": RuntimeError}
    code = compile(f"def only_check({idx.name}):\n    {line}\n", "<check>", "exec")
    exec(code, env)
    i = torch.where(y != -100, y, 0).unsqueeze(1)
    c = per_call(env["only_check"], (i,), a.reps * 10)
    full = per_call(plan, (x, y), a.reps)
    print(f"CE [{a.n}, {a.c}] CPU: the index-in-range check costs {c:.1f} µs per call "
          f"(plan call {full:.0f} µs; {100 * c / full:.2f}%)")


if __name__ == "__main__":
    main()
