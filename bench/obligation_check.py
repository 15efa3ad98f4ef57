"""Cost of a data obligation's check: the CE plan lowered with and without its index-in-range
check (µs per call; medians of interleaved blocks of calls), and on CPU the check alone.

    python bench/obligation_check.py [--n 512] [--c 32768] [--device cuda]

On CUDA the count of bad indices is computed inside the segment that computes the index and
read back through pinned memory at the commit point (lowering/obligations.py); each timed call
is bracketed by ``torch.cuda.synchronize()``.
"""

import argparse
import dataclasses
import statistics
import time

import torch
import torch.nn.functional as F
from satfuse.lowering import lower

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
    where = torch.cuda.get_device_name() if dev.type == "cuda" else "CPU"
    head = f"CE [{a.n}, {a.c}] {where} ({plan.lowered.executor})"
    # the same trace lowered with and without its obligations: the whole cost of checking
    hints, ex = plan.captured.symbol_hints, plan.lowered.executor
    checked = lower(plan.trace, hints=hints, executor=ex)
    unchecked = lower(dataclasses.replace(plan.trace, obligations=[]), hints=hints, executor=ex)
    assert "check (gather/" in checked.source and "check (gather/" not in unchecked.source
    with_c, without_c = [], []
    for _ in range(5):  # interleaved blocks: drift of clocks and caches hits both alike
        with_c.append(per_call(checked, (x, y), a.reps, sync))
        without_c.append(per_call(unchecked, (x, y), a.reps, sync))
    w, wo = statistics.median(with_c), statistics.median(without_c)
    print(f"{head}: plan call {w:.1f} µs with the index-in-range check, {wo:.1f} µs without "
          f"(+{w - wo:.1f} µs, {100 * (w - wo) / wo:+.2f}%; medians of 5 x {a.reps} calls, interleaved)")
    if dev.type == "cpu":
        # the check alone, as the plan runs it (its index is the segment's exported value)
        idx = plan.trace.obligations[0].args[0]
        line = next(ln for ln in checked.source.splitlines() if "check (gather/" in ln).strip()
        env = {"torch": torch, "IndexError": IndexError, "RuntimeError": RuntimeError}
        exec(compile(f"def only_check({idx.name}):\n    {line}\n", "<check>", "exec"), env)
        i = torch.where(y != -100, y, 0).unsqueeze(1)
        c = per_call(env["only_check"], (i,), a.reps * 10, sync)
        print(f"{head}: the check alone (aminmax + two scalar reads) {c:.1f} µs per call")

if __name__ == "__main__":
    main()
