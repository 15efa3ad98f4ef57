"""Cost of a data obligation's check: the CE plan's index-in-range check alone, as the plan
runs it, next to a whole call of the plan (µs per call; medians of many calls).

    python bench/obligation_check.py [--n 512] [--c 32768] [--device cuda]

On CUDA the check reads back one min/max pair (a host sync per call): each timed call is
bracketed by ``torch.cuda.synchronize()``, so the figure is the check's launch + sync cost on
top of work already queued.
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import satfuse


def per_call(fn, args, reps: int, sync=lambda: None) -> float:
    for _ in range(10):
        fn(*args)
    ts = []
    for _ in range(reps):
        sync()
        t = time.perf_counter()
        fn(*args)
        sync()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--c", type=int, default=32768)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--device", default="cpu", help="cpu (one thread) or cuda")
    a = ap.parse_args()
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    if dev.type == "cpu":
        torch.set_num_threads(1)
    x, y = torch.randn(a.n, a.c, device=dev), torch.randint(0, a.c, (a.n,), device=dev)
    plan = satfuse.optimize(lambda p, q: F.cross_entropy(p, q), x, y)
    idx = plan.trace.obligations[0].args[0]
    check = plan.lowered.source.splitlines()
    line = next(ln for ln in check if "check (gather/" in ln).strip()
    # the check alone, as the plan runs it (its index is the segment's exported value)
    env = {"torch": torch, "IndexError": IndexError, "RuntimeError": RuntimeError}
    code = compile(f"def only_check({idx.name}):\n    {line}\n", "<check>", "exec")
    exec(code, env)
    i = torch.where(y != -100, y, 0).unsqueeze(1)
    c = per_call(env["only_check"], (i,), a.reps * 10, sync)
    full = per_call(plan, (x, y), a.reps, sync)
    where = torch.cuda.get_device_name() if dev.type == "cuda" else "CPU"
    print(f"CE [{a.n}, {a.c}] {where} ({plan.lowered.executor}): the index-in-range check costs {c:.1f} µs "
          f"per call (plan call {full:.0f} µs; {100 * c / full:.2f}%)")


if __name__ == "__main__":
    main()
