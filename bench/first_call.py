"""First-call cost: ``torch.compile(backend="satfuse")`` against Inductor, cold, one fresh process each.

    python bench/first_call.py                           # every case, 3 repeats, median
    python bench/first_call.py --cases ce gpt2 --repeats 5
    python bench/first_call.py --memory                  # reference-executor peak memory vs eager

What a user waits for the first time a compiled function runs. satfuse's cost is ``import satfuse``
+ ``import torch._dynamo`` + the first call; Inductor's is ``import torch._dynamo`` + the first call
(``torch`` is imported, and the inputs made, before the clock starts in both; where making them
imports Dynamo, as ``torch.optim`` and transformers do, its import is in neither). The satfuse
stages are the plans' ``timings`` summed over the graphs (``import``: satfuse's pipeline, first
loaded by the first graph); the rest of satfuse's ``call`` is Dynamo's and AOTAutograd's tracing. Caches are cold
(``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1``, a fresh cache directory per process); the backends
alternate run by run so that load on the machine hits both alike, and the table shows the median
of the repeats. Each child checks its result against eager before it reports. Two floors run
beside them, measured alike: Dynamo's ``eager`` backend (Dynamo's tracing alone) and ``aot_eager``
(with AOTAutograd's): their ratio to Inductor is what no backend built on them goes below.

Cases: ``ce`` (cross-entropy forward + backward, logits [512, 4096]), ``adam`` / ``adam-foreach``
(one ``torch.optim.Adam`` step over 10 x 1M parameters, ``foreach=False`` / ``True``), ``gpt2``
(transformers' ``GPT2Block`` of a tiny ``GPT2Config``, built in code, forward without grad).

``--memory``: the peak CPU memory of one call of a plan run by the reference executor against
eager's: the growth of the process's peak RSS (``VmHWM``, reset through ``/proc/self/clear_refs``)
over its RSS before the call, one fresh process each, after one warm call. Tensors this large are
mmapped by the allocator, so RSS follows live tensor memory. Programs: CE forward [8192, 32768]
and a 10-op elementwise chain on [4096, 4096].
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from bench.child import run_child  # noqa: E402
from bench.progress import Progress  # noqa: E402

CASES = ("ce", "adam", "adam-foreach", "gpt2")
BACKENDS = ("satfuse", "inductor")
#: the floors: Dynamo's tracing alone, and with AOTAutograd's (what every backend on it pays first)
FLOORS = ("eager", "aot_eager")
PACKAGES = ("satfuse", "engine", "lowering", "rewrites")  # the source folders of satfuse's packages

_CHILD = r'''
import json, sys, time
import torch

case, backend = sys.argv[1], sys.argv[2]
torch.manual_seed(0)

def ce_setup():
    x = torch.randn(512, 4096, requires_grad=True)
    y = torch.randint(0, 4096, (512,))
    def fn(x, y):
        return torch.nn.functional.cross_entropy(x, y)
    def call(f):
        x.grad = None
        loss = f(x, y)
        loss.backward()
        return [loss.detach(), x.grad]
    return fn, call

def adam_setup(foreach):
    params = [torch.nn.Parameter(torch.randn(1_000_000)) for _ in range(10)]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.Adam(params, lr=1e-2, foreach=foreach)
    start = [p.detach().clone() for p in params]
    def fn():
        opt.step()
    def call(f):
        with torch.no_grad():
            for p, s in zip(params, start):
                p.copy_(s)
        opt.state.clear()
        f()
        return [p.detach().clone() for p in params] + [opt.state[p][k].clone() for p in params
                                                       for k in ("exp_avg", "exp_avg_sq")]
    return fn, call

def gpt2_setup():
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    cfg = GPT2Config(n_embd=64, n_head=4, n_layer=1, n_positions=64, attn_pdrop=0.0, resid_pdrop=0.0,
                     embd_pdrop=0.0)
    block = GPT2Block(cfg, layer_idx=0).eval()
    h = torch.randn(2, 32, 64)
    def fn(h):
        out = block(h)
        return out[0] if isinstance(out, tuple) else out
    def call(f):
        with torch.no_grad():
            return [f(h)]
    return fn, call

fn, call = {"ce": ce_setup, "adam": lambda: adam_setup(False), "adam-foreach": lambda: adam_setup(True),
            "gpt2": gpt2_setup}[case]()
t0 = time.perf_counter()
if backend == "satfuse":
    import satfuse
t1 = time.perf_counter()
import torch._dynamo
t2 = time.perf_counter()
got = call(torch.compile(fn, backend=backend))
t3 = time.perf_counter()
want = call(fn)
torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
stages = {}
if backend == "satfuse":
    plans = satfuse.compiled_plans()
    fallbacks = sum(p.plan.stats()["fallback_ops"] for p in plans)
    for p in plans:
        for k, v in p.timings.items():
            if k != "total":
                stages[k] = stages.get(k, 0.0) + v
    stages["graphs"] = len(plans)
    stages["fallback_ops"] = fallbacks
print(json.dumps({"total": t3 - t0, "import": t1 - t0, "dynamo": t2 - t1, "call": t3 - t2, "stages": stages}))
'''

_MEMORY_CHILD = r'''
import json, sys
import torch

case, how = sys.argv[1], sys.argv[2]
torch.manual_seed(0)

def status(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key)) / 1024  # MiB

if case == "ce":
    def fn(x, y):
        return torch.nn.functional.cross_entropy(x, y)
    args = (torch.randn(8192, 32768), torch.randint(0, 32768, (8192,)))
else:
    def fn(x):
        for i in range(5):
            x = torch.sin(x) * 1.5 if i % 2 else torch.exp(x) + 0.5
        return x
    args = (torch.randn(4096, 4096) / 8,)
run = fn
if how == "plan":
    import satfuse
    run = satfuse.optimize(fn, *args, options={"executor": "reference"})
    torch.testing.assert_close(run(*args), fn(*args))
else:
    run(*args)  # warm: code paths and allocator
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak RSS (VmHWM) starts again from the current RSS
before = status("VmRSS")
out = run(*args)
peak = status("VmHWM")
largest = max(a.numel() * a.element_size() for a in args) / 2**20
print(json.dumps({"peak_mib": peak - before, "largest_mib": largest, "out_mib": out.numel() * out.element_size() / 2**20}))
'''


def _child(code: str, argv: list[str], timeout: float, cache: str | None = None) -> dict:
    env = {}
    if cache is not None:
        env = {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1", "TORCHINDUCTOR_CACHE_DIR": cache,
               "TRITON_CACHE_DIR": os.path.join(cache, "triton")}
    # an installed satfuse has its bytecode, as torch has
    return run_child(code, argv, timeout, env, drop=("PYTHONDONTWRITEBYTECODE",))


def first_call(cases: list[str], repeats: int, timeout: float) -> bool:
    # satfuse's modules compiled to bytecode first, as an installed package's are (torch's are)
    subprocess.run([sys.executable, "-m", "compileall", "-q", *(str(ROOT / d) for d in PACKAGES)], check=True)
    print(f"{'case':13} {'backend':9} {'total s':>8} {'import':>7} {'dynamo':>7} {'call':>7}   satfuse stages (s)")
    ok = True
    everyone = BACKENDS + FLOORS
    bar = Progress("bench/first_call.py", len(cases) * repeats * len(everyone))
    for case in cases:
        runs: dict[str, list[dict]] = {b: [] for b in everyone}
        for i in range(repeats):
            for b in (everyone if i % 2 == 0 else everyone[::-1]):  # interleaved, alternating which goes first
                bar.step(f"{case} {b} #{i + 1}")
                with tempfile.TemporaryDirectory(prefix="first_call_") as cache:
                    r = _child(_CHILD, [case, b], timeout, cache)
                if "error" in r:
                    ok = False
                    print(f"{case:13} {b:9} {r['error']}")
                else:
                    runs[b].append(r)
        med = {}
        for b in everyone:
            if not runs[b]:
                continue
            m = {k: statistics.median(r[k] for r in runs[b]) for k in ("total", "import", "dynamo", "call")}
            med[b] = m["total"]
            stages = ""
            if b == "satfuse":
                st = runs[b][[r["total"] for r in runs[b]].index(sorted(r["total"] for r in runs[b])[len(runs[b]) // 2])]
                stages = " ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                                  for k, v in st["stages"].items())
            print(f"{case:13} {b:9} {m['total']:>8.2f} {m['import']:>7.2f} {m['dynamo']:>7.2f} {m['call']:>7.2f}   "
                  f"{stages}")
        if "satfuse" in med and "inductor" in med:
            floors = ", ".join(f"{b} {med[b] / med['inductor']:.3f}" for b in FLOORS if b in med)
            print(f"{case:13} satfuse / inductor = {med['satfuse'] / med['inductor']:.3f} "
                  f"(median of {len(runs['satfuse'])} / {len(runs['inductor'])} runs; the floors / inductor: {floors})")
    bar.clear()
    return ok


def memory(repeats: int, timeout: float) -> bool:
    print(f"{'program':8} {'run':6} {'peak MiB':>9} {'largest input':>14}   (peak RSS growth during one call, median)")
    ok = True
    bar = Progress("bench/first_call.py --memory", 4 * repeats)
    for case in ("ce", "chain"):
        for how in ("eager", "plan"):
            rs = []
            for i in range(repeats):
                bar.step(f"{case} {how} #{i + 1}")
                rs.append(_child(_MEMORY_CHILD, [case, how], timeout))
            good = [r for r in rs if "error" not in r]
            for r in rs:
                if "error" in r:
                    ok = False
                    print(f"{case:8} {how:6} {r['error']}")
            if good:
                peak = statistics.median(r["peak_mib"] for r in good)
                print(f"{case:8} {how:6} {peak:>9.0f} {good[0]['largest_mib']:>14.0f}")
    bar.clear()
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per process")
    ap.add_argument("--memory", action="store_true", help="reference-executor peak memory instead")
    args = ap.parse_args(argv)
    ok = memory(args.repeats, args.timeout) if args.memory else first_call(args.cases, args.repeats, args.timeout)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
