"""Capture cost of the ``torch.compile(backend="satfuse")`` path, per op of the converted graphs.

    python bench/backend_capture.py [--family ce|chain] [--ops N]

One fresh process per run. Prints, per compiled graph, satfuse's capture stages (``retrace`` where
the graph is traced again, ``convert``) and their sum per op of the trace, and the wall time of the
first call (Dynamo + AOTAutograd + satfuse).
"""

from __future__ import annotations

import argparse
import importlib
import os
import time

import torch
import torch.nn.functional as F

import satfuse


def ce(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(x, y)


def chain(x: torch.Tensor, n: int) -> torch.Tensor:
    for i in range(n // 2):
        x = torch.tanh(x) * (1.0 + i * 1e-4)
    return x


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", choices=["ce", "chain"], default="ce")
    ap.add_argument("--ops", type=int, default=1000)
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    if a.family == "ce":
        x = torch.randn(512, 4096, requires_grad=True)
        y = torch.randint(0, 4096, (512,))
        fn, args = ce, (x, y)
    else:
        x = torch.randn(64, 64)
        fn, args = (lambda t: chain(t, a.ops)), (x,)
    importlib.import_module("torch._dynamo")  # imported before the clock: the same for every variant

    g = torch.compile(fn, backend="satfuse", dynamic=False)
    t0 = time.perf_counter()
    out = g(*args)
    if a.family == "ce":
        out.backward()
    wall = time.perf_counter() - t0
    for p in satfuse.compiled_plans():
        cap = sum(p.timings.get(k, 0.0) for k in ("retrace", "convert"))
        n = len(p.trace.nodes)
        stages = ", ".join(f"{k}={p.timings[k] * 1e3:.1f}" for k in ("retrace", "convert") if k in p.timings)
        print(f"{a.family} {p.kind}: {n} ops, capture {cap * 1e3:.1f} ms ({stages}) = {cap / max(n, 1) * 1e6:.0f} us/op")
    print(f"{a.family}: first call (Dynamo + AOTAutograd + satfuse) {wall:.2f} s")


if __name__ == "__main__":
    main()
