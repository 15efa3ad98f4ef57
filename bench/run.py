"""Plan quality and optimizer latency at realistic sizes; GPU timings when a GPU is present.

    python bench/run.py [--target nvfuser,eager] [--programs ce_fwd,adam,...] [--runs 20] [--repeat 5]
                        [--no-gpu] [--json OUT.jsonl]

Never run by the test suite. For each program of ``bench/programs.py`` ``REAL`` (CE
forward and forward+backward at [512, 32768] and [8192, 32768] f32, Adam over 10
parameters of 1M elements, a GPT-2 MLP block, a GPT-2 attention block with SDPA) and
each target it prints:

* **optimizer time** from ``satfuse.optimize``'s ``Plan.timings``, split into capture,
  saturation (encode + saturate), extraction (serialize + extract + decode) and lowering;
  "opt" is everything but capture. Timings are medians over ``--repeat`` fresh processes
  per row. Each row runs in a fresh process where a throwaway optimize of softmax (its
  capture included) runs first, so torch's one-time tracing warm-up and the one-time load
  of the rule packs into the session pool (``engine/pool.py``, printed below the table as
  "session load") are not charged to the measured program; capture and optimizer get the
  same warm-up, on a program unlike the measured ones.
* **modeled bytes** of the chosen plan, from ``engine/costs.py``: for ``nvfuser``, the bytes
  crossing the boundaries of the lowered plan's steps (``Plan.steps``: segment inputs read
  and outputs/aliased write-backs written, fallback ops' operands and results, write-back
  copies, clones: :func:`plan_traffic`); for ``eager``, an op-by-op torch run of the
  extracted trace (:func:`eager_traffic`: every non-view op reads its operands and writes
  its result, in-place ops write in place). If lowering fails, the nvFuser bytes come
  from the same partition lowering would use (``segments.partition`` + write-back
  planning) and the row says so.
* **kern**: kernels of the plan; for the nvfuser target a segment counts the kernels nvFuser's
  own segmenter is predicted to make of it (``lowering/kernels.py``; the values crossing
  between them and inputs read again are in the modeled bytes), a torch view none. These are
  the figures a GPU run compares with ``torch.profiler``'s kernel list.
* **minimum bytes**: every tensor input that is read, read once; every output and
  write-back written once (:func:`minimum_traffic`), and **modeled / minimum**.

Sizes: capture runs on ``meta`` tensors at the real sizes (capture traces fake copies of
its inputs, and a meta tensor has shape and dtype but no storage), so nothing of
[8192, 32768] is allocated here. Real tensors are made only for the GPU part. On meta
(and CPU) tensors torch traces SDPA through its math decomposition (bmm, softmax, bmm),
so the attention rows count that decomposition's bytes; a CUDA capture (GPU part) keeps
the fused attention kernel as one opaque op. "minimum" counts no matmul or attention
intermediates at all, so programs with opaque ops cannot reach ratio 1.

GPU part (when ``torch.cuda.is_available()`` and not ``--no-gpu``): the nvFuser-target plan
(built from CUDA inputs, real nvFuser when it imports, else the reference executor: the
"executor" column says which) against eager and ``torch.compile`` (Inductor), each the
median of ``--runs`` calls after warm-up, bracketed by ``torch.cuda.synchronize()``. The
achieved rate is the program's *minimum* bytes over the median time (so the three are
compared on the same work), next to the copy bandwidth measured on this GPU (a 1 GiB
``tensor.copy_``, read + write counted); peak memory is ``torch.cuda.max_memory_allocated``
during one call, above what was allocated before it. "launched" counts the device activities
(kernels, memcpy, memset) ``torch.profiler`` sees in one call and "kern ms" their summed device
time; for satfuse, "model" and "model MiB" are the cost model's predicted kernels and bytes for
the same CUDA-built plan, so the two can be read side by side.

On a lent GPU machine (Python 3.12, torch 2.11, no network, 64 MiB carried): nvFuser
comes from ``../shared/tools/nvfuser-carry.sh`` (``.nvf``); egglog 13.2's cp312 wheel is
49 MiB, but satfuse only imports ``egglog.bindings``, so carry that one extension,
stripped (``strip --strip-unneeded``: 219 MiB -> 11 MiB, 2.7 MiB as .tar.xz) under an
empty ``egglog/__init__.py``. The tree is not pip-installed there: link the subpackages
into ``satfuse/`` (``for d in engine rewrites lowering rules; do ln -sfn ../$d satfuse/$d; done``)
and put the unpacked egglog and the repo root on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from satfuse.engine import capture  # noqa: E402
from satfuse.engine.costs import Traffic, eager_traffic, minimum_traffic, plan_traffic  # noqa: E402

from bench.programs import REAL, Program, softmax, softmax_inputs  # noqa: E402
from bench.progress import Progress, progress  # noqa: E402

MiB = 2**20


# --------------------------------------------------------------------------- optimizer + bytes


def split_timings(t: dict[str, float]) -> dict[str, float]:
    """Plan.timings -> capture / saturation / extraction / lowering (seconds)."""
    return {
        "capture": t.get("capture", 0.0),
        "saturation": t.get("load", 0.0) + t.get("encode", 0.0) + t.get("saturate", 0.0),
        "extraction": t.get("serialize", 0.0) + t.get("extract", 0.0) + t.get("decode", 0.0),
        "lowering": t.get("lower", 0.0),
    }


def optimize_and_measure(prog: Program, target: str) -> dict[str, Any]:
    """Optimize ``prog`` at its real size (meta inputs) for ``target``; bytes and timings."""
    import satfuse

    rec: dict[str, Any] = {"program": prog.title, "name": prog.name, "target": target, "note": ""}
    inputs = prog.inputs()
    try:
        plan = satfuse.optimize(prog.fn, *inputs, options={"target": target, "executor": "reference"})
        trace, hints, captured = plan.trace, plan.captured.symbol_hints, plan.captured.trace
        timings = dict(plan.timings)
        steps = plan.lowered.steps
    except Exception as e:  # lowering (or a stage before it) failed: measure what we can
        rec["note"] = f"satfuse.optimize failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
        trace, hints, captured, timings, steps = _engine_only(prog, target, inputs)
        if steps is not None:
            rec["note"] += "; nvFuser bytes from segments.partition"
    rec["timings"] = split_timings(timings)
    rec["optimizer_s"] = sum(v for k, v in rec["timings"].items() if k != "capture")
    minimum = minimum_traffic(captured, hints)
    modeled: Traffic | None
    if target == "eager":
        modeled = eager_traffic(trace, hints)
    else:
        modeled = plan_traffic(steps, trace, hints) if steps is not None else None
    rec["minimum_bytes"] = minimum.total
    rec["modeled_bytes"] = modeled.total if modeled else None
    rec["ratio"] = modeled.total / minimum.total if modeled and minimum.total else None
    rec["kernels"] = modeled.kernels if modeled else None
    inter = sorted(modeled.intermediates(), key=lambda m: -m.bytes) if modeled else []
    rec["intermediates"] = [(m.var, m.type, m.bytes) for m in inter]
    rec["traffic"] = modeled
    rec["trace"] = trace
    rec["steps"] = steps
    return rec


def _child(index: int, target: str, q: Any) -> None:
    try:
        # one warm-up for both sides, on a program unlike the measured ones (softmax): torch's
        # one-time tracing costs (its capture) and the optimizer's (loading the rule packs into the
        # session pool, reported as "load"; first calls of the lowering). A warm-up on a related
        # program (CE forward) would favour whichever side it warms.
        import satfuse
        warm = satfuse.optimize(softmax, *softmax_inputs("meta"), options={"target": target, "executor": "reference"})
        from satfuse.engine.pool import shared_pool
        shared_pool().drain()  # its rollback must not overlap the measured capture
        rec = optimize_and_measure(REAL[index], target)
        rec["session_load_s"] = warm.timings.get("load", 0.0)
        tr = rec.pop("traffic")
        rec.pop("trace")
        rec.pop("steps")
        rec["traffic_table"] = tr.table() if tr is not None else ""
        q.put(("ok", rec))
    except BaseException as e:  # noqa: BLE001 - egglog panics are BaseExceptions
        q.put(("err", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def measure_isolated(prog: Program, target: str, timeout: float) -> dict[str, Any] | None:
    """:func:`optimize_and_measure` in a child process with a time limit: a rule pack whose
    saturation runs away (egglog has no timeout inside an iteration) costs one row, not
    the whole run. The child is spawned, not forked (a fork of a process that already
    runs torch's and egglog's threads can deadlock), so each row pays a fresh import of
    torch; the timings come from inside the child and do not include it. Returns the
    record with the Traffic table as text, or None on failure (printed)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_child, args=(REAL.index(prog), target, q))
    t0 = time.perf_counter()
    proc.start()
    try:
        kind, val = q.get(timeout=timeout)
    except Exception:  # noqa: BLE001 - queue.Empty: the child ran out of time
        proc.kill()
        proc.join()
        print(f"{prog.title} ({target}): no result within {timeout:.0f}s (killed after "
              f"{time.perf_counter() - t0:.0f}s; saturation cannot be interrupted inside an egglog iteration)")
        return None
    proc.join()
    if kind == "err":
        print(f"{prog.title} ({target}): failed: {val}")
        return None
    return val


def _engine_only(prog: Program, target: str, inputs: tuple):
    from satfuse.engine.optimize import optimize_trace
    from satfuse.rewrites import load_catalogue

    cap = capture(prog.fn, *inputs)
    cat = load_catalogue()
    res = optimize_trace(cap.trace, cat.sources, cat.phases, target=target, hints=cap.symbol_hints)
    timings = {"capture": cap.seconds, **res.timings}
    steps = None
    try:
        from satfuse.lowering.segments import partition
        from satfuse.lowering.writeback import plan_writebacks

        t0 = time.perf_counter()
        steps = plan_writebacks(res.trace, partition(res.trace)).steps
        timings["lower"] = time.perf_counter() - t0
    except Exception:  # noqa: BLE001 - reported as missing bytes
        pass
    return res.trace, cap.symbol_hints, cap.trace, timings, steps


def median_record(runs: list[dict]) -> dict:
    """The first run's record with every timing (and the optimizer total) replaced by the
    median over ``runs``; ``runs`` says how many."""
    rec = dict(runs[0])
    rec["timings"] = {k: statistics.median(r["timings"][k] for r in runs) for k in runs[0]["timings"]}
    rec["optimizer_s"] = statistics.median(r["optimizer_s"] for r in runs)
    rec["opt_over_capture"] = statistics.median(r["optimizer_s"] / r["timings"]["capture"] for r in runs
                                                if r["timings"]["capture"])
    rec["session_load_s"] = statistics.median(r.get("session_load_s", 0.0) for r in runs)
    rec["runs"] = len(runs)
    return rec


def fmt_mb(b: float | None) -> str:
    return "-" if b is None else f"{b / MiB:,.1f}"


def print_quality(recs: list[dict]) -> None:
    head = (f"{'program':<26} {'target':<8} {'capture':>8} {'satur.':>8} {'extract':>8} {'lower':>7} {'opt':>8} "
            f"{'modeled MiB':>12} {'min MiB':>10} {'ratio':>6} {'kern':>5}  largest intermediate")
    print(head)
    print("-" * len(head))
    for r in recs:
        t = r["timings"]
        big = r["intermediates"][0] if r["intermediates"] else None
        bigs = f"{big[0]} {big[1]} ({fmt_mb(big[2])} MiB)" if big else "none"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        print(f"{r['program']:<26} {r['target']:<8} {t['capture'] * 1e3:>8.1f} {t['saturation'] * 1e3:>8.1f} "
              f"{t['extraction'] * 1e3:>8.1f} {t['lowering'] * 1e3:>7.1f} {r['optimizer_s'] * 1e3:>8.1f} "
              f"{fmt_mb(r['modeled_bytes']):>12} {fmt_mb(r['minimum_bytes']):>10} {ratio:>6} "
              f"{'-' if r['kernels'] is None else r['kernels']:>5}  {bigs}")
        if r["note"]:
            print(f"{'':<26} ^ {r['note']}")
    print("times in ms; opt = saturation + extraction + lowering (capture excluded)")
    loads = [r["session_load_s"] for r in recs if r.get("session_load_s")]
    if loads:
        print(f"session load (once per process and rule set, paid by the warm-up optimize): "
              f"{min(loads) * 1e3:.1f}-{max(loads) * 1e3:.1f} ms")


def print_must_show(recs: list[dict]) -> None:
    by = {(r["program"], r["target"]): r for r in recs}
    print("\n## must-show figures")
    ce = by.get(("CE fwd [512, 32768]", "nvfuser"))
    if ce:
        n_full = 512 * 32768
        full = [i for i in ce["intermediates"] if i[2] >= n_full * 4]
        verdict = "PASS: no [512, 32768] intermediate is materialized" if not full and ce["modeled_bytes"] else \
            f"FAIL: materialized {full}" if full else "UNKNOWN: no nvFuser bytes (lowering failed)"
        print(f"CE fwd [512, 32768], nvfuser: {verdict}")
        for tgt in ("nvfuser", "eager"):
            r = by.get(("CE fwd [512, 32768]", tgt))
            if r and r["ratio"] is not None:
                print(f"  {tgt:<8} modeled/minimum = {fmt_mb(r['modeled_bytes'])} / {fmt_mb(r['minimum_bytes'])} MiB "
                      f"= {r['ratio']:.3f}  ({r['kernels']} kernels)")
    ad = by.get(("Adam 10 x 1M", "nvfuser"))
    if ad and ad["ratio"] is not None:
        ok = ad["modeled_bytes"] <= 1.05 * ad["minimum_bytes"]
        print(f"Adam 10 x 1M, nvfuser: modeled {fmt_mb(ad['modeled_bytes'])} MiB <= 1.05 x minimum "
              f"{fmt_mb(ad['minimum_bytes'])} MiB ? {'PASS' if ok else 'FAIL'} (ratio {ad['ratio']:.3f}, "
              f"{ad['kernels']} kernel(s))")
        ade = by.get(("Adam 10 x 1M", "eager"))
        if ade and ade["ratio"] is not None:
            print(f"  eager    modeled/minimum = {ade['ratio']:.3f} ({ade['kernels']} kernels)")
    print("optimizer time (capture excluded) vs capture time (medians over fresh processes):")
    for r in recs:
        if r["name"] in ("ce_fwd_bwd", "adam") and r["target"] == "nvfuser":
            cap = r["timings"]["capture"]
            ratio = r.get("opt_over_capture", r["optimizer_s"] / cap if cap else float("nan"))
            print(f"  {r['program']:<26} opt {r['optimizer_s'] * 1e3:8.1f} ms   capture {cap * 1e3:8.1f} ms   "
                  f"opt/capture {ratio:.2f} (<= 0.5 ? {'PASS' if ratio <= 0.5 else 'FAIL'}; {r.get('runs', 1)} runs)")


# --------------------------------------------------------------------------- GPU timing


def _median_time(fn, runs: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _peak(fn) -> int:
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def _launched(fn) -> tuple[int, float, list[str]]:
    """Device activities one call launches (kernels, memcpy, memset), their summed device time in
    seconds and their names, from ``torch.profiler``: what the model's kernel count is compared with."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return len(evs), sum(e.device_time for e in evs) / 1e6, [e.name for e in evs]


def copy_bandwidth(runs: int) -> float:
    a = torch.empty(2**28, device="cuda")
    b = torch.empty_like(a)
    t = _median_time(lambda: b.copy_(a), runs)
    return 2 * 2**30 / t


def _close(a, b) -> bool:
    la = [x for x in (a if isinstance(a, (list, tuple)) else [a]) if isinstance(x, torch.Tensor)]
    lb = [x for x in (b if isinstance(b, (list, tuple)) else [b]) if isinstance(x, torch.Tensor)]
    return len(la) == len(lb) and all(torch.allclose(x.float(), y.float(), rtol=1e-3, atol=1e-4) for x, y in zip(la, lb))


def gpu_timings(progs: list[Program], recs: list[dict], runs: int, show_kernels: bool = False) -> list[dict]:
    import satfuse

    torch.manual_seed(0)
    bw = copy_bandwidth(runs)
    print(f"\n## GPU: {torch.cuda.get_device_name()}, copy bandwidth {bw / 1e9:,.0f} GB/s (1 GiB copy_, read + write)")
    minimum = {r["program"]: r["minimum_bytes"] for r in recs}
    for prog in progs:  # programs whose quality row is missing (--skip-quality, or it failed)
        if prog.title not in minimum:
            cap = capture(prog.fn, *prog.inputs())
            minimum[prog.title] = minimum_traffic(cap.trace, cap.symbol_hints).total
    head = (f"{'program':<26} {'variant':<9} {'executor':<10} {'median ms':>10} {'GB/s (min bytes)':>17} "
            f"{'% copy bw':>9} {'peak MiB':>9} {'launched':>8} {'kern ms':>8} {'model':>5} {'model MiB':>10}  check")
    print(head)
    print("-" * len(head))
    out = []
    for prog in progress(progs, "bench/run.py GPU", lambda p: p.name):
        try:
            inputs = prog.inputs("cuda")
        except torch.OutOfMemoryError:
            print(f"{prog.title:<26} out of memory making inputs")
            continue
        variants: list[tuple[str, str, Any]] = [("eager", "torch", prog.fn)]
        try:
            t0 = time.perf_counter()
            compiled = torch.compile(prog.fn)
            ref_inputs = _clone(inputs)
            compiled(*ref_inputs)
            torch.cuda.synchronize()
            variants.append(("inductor", f"({time.perf_counter() - t0:.0f}s)", compiled))
        except Exception as e:  # noqa: BLE001
            print(f"{prog.title:<26} inductor  failed: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
        model: tuple[Any, Any] = ("", "")
        try:
            plan = satfuse.optimize(prog.fn, *inputs, options={"target": "nvfuser"})
            variants.append(("satfuse", plan.lowered.executor, plan))
            tr = plan_traffic(plan.lowered.steps, plan.trace, plan.captured.symbol_hints)
            model = (tr.kernels, f"{tr.total / MiB:,.0f}")
        except Exception as e:  # noqa: BLE001
            print(f"{prog.title:<26} satfuse   failed: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
        expect = prog.fn(*_clone(inputs)) if prog.name != "adam" else None
        for name, executor, fn in variants:
            check = ""
            try:
                if prog.name == "adam":
                    a, b = _clone(inputs), _clone(inputs)
                    prog.fn(*a)
                    fn(*b)
                    check = "ok" if _close(a[0], b[0]) else "MISMATCH"
                elif expect is not None:
                    check = "ok" if _close(expect, fn(*_clone(inputs))) else "MISMATCH"
                med = _median_time(lambda: fn(*inputs), runs)
                peak = _peak(lambda: fn(*inputs))
                launched, kern_s, names = _launched(lambda: fn(*inputs))
            except Exception as e:  # noqa: BLE001
                print(f"{prog.title:<26} {name:<9} {executor:<10} failed: {type(e).__name__}: "
                      f"{str(e).splitlines()[0][:100] if str(e) else ''}")
                continue
            mb = minimum.get(prog.title, 0)
            rate = mb / med if med else 0.0
            if name == "satfuse" and show_kernels:
                print("    launched: " + "; ".join(f"{n[:60]}" for n in names))
            print(f"{prog.title:<26} {name:<9} {executor:<10} {med * 1e3:>10.3f} {rate / 1e9:>17,.0f} "
                  f"{100 * rate / bw:>8.0f}% {peak / MiB:>9,.0f} {launched:>8} {kern_s * 1e3:>8.3f} "
                  f"{model[0] if name == 'satfuse' else '':>5} {model[1] if name == 'satfuse' else '':>10}  {check}")
            out.append({"program": prog.title, "variant": name, "executor": executor, "median_s": med,
                        "min_bytes": mb, "bytes_per_s": rate, "copy_bw": bw, "peak_bytes": peak, "check": check,
                        "launched": launched, "kernel_s": kern_s, "launched_names": names,
                        "model_kernels": model[0] if name == "satfuse" else None,
                        "model_bytes_mib": model[1] if name == "satfuse" else None})
        inputs = variants = expect = None
        torch.cuda.empty_cache()
    return out


def _clone(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, (list, tuple)):
        return type(x)(_clone(y) for y in x)
    return x


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="nvfuser,eager", help="comma-separated cost targets (default nvfuser,eager)")
    ap.add_argument("--programs", default="", help="comma-separated program names or titles (default: all)")
    ap.add_argument("--runs", type=int, default=20, help="timed runs per GPU measurement (default 20)")
    ap.add_argument("--no-gpu", action="store_true", help="skip the GPU timing part even when a GPU is present")
    ap.add_argument("--skip-quality", action="store_true", help="skip the optimizer/bytes table (GPU timing only)")
    ap.add_argument("--json", metavar="PATH", help="write one JSON record per (program, target) and GPU timing")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds per (program, target) optimization, run in a child process (default 120; "
                         "egglog cannot be interrupted inside an iteration)")
    ap.add_argument("--show-plans", action="store_true", help="print each nvFuser-target plan's byte table")
    ap.add_argument("--show-kernels", action="store_true", help="GPU part: print what satfuse's plan launched")
    ap.add_argument("--repeat", type=int, default=5,
                    help="fresh processes per (program, target); timings are their medians (default 5: one "
                         "cold measurement is noisy on a shared 2-core machine)")
    args = ap.parse_args(argv)
    targets = [t for t in args.target.split(",") if t]
    for t in targets:
        if t not in ("nvfuser", "eager"):
            ap.error(f"unknown target {t!r} (known: nvfuser, eager)")
    want = {p for p in args.programs.split(",") if p}
    progs = [p for p in REAL if not want or p.name in want or p.title in want]
    if not progs:
        ap.error(f"no program matches {args.programs!r}; known: {', '.join(sorted({p.name for p in REAL}))}")
    from satfuse.rewrites import load_catalogue

    cat = load_catalogue()
    print(f"# bench/run.py: packs {', '.join(sorted({r.pack for r in cat.rules})) or '(none)'}; torch {torch.__version__}")
    recs = []
    rows = [(prog, t) for prog in (progs if not args.skip_quality else []) for t in targets]
    with Progress("bench/run.py quality", len(rows)) as bar:
        for prog, t in rows:
            bar.step(f"{prog.name} ({t}), {max(1, args.repeat)} fresh process(es)")
            runs = [r for r in (measure_isolated(prog, t, args.timeout) for _ in range(max(1, args.repeat)))
                    if r is not None]
            if runs:
                recs.append(median_record(runs))
    if recs:
        print_quality(recs)
    if args.show_plans:
        for r in recs:
            if r["traffic_table"] and r["target"] == "nvfuser":
                print(f"\n### {r['program']} ({r['target']})\n{r['traffic_table']}")
    if recs:
        print_must_show(recs)
    gpu: list[dict] = []
    if torch.cuda.is_available() and not args.no_gpu:
        gpu = gpu_timings(progs, recs, args.runs, args.show_kernels)
    elif not args.no_gpu:
        print("\n(no CUDA GPU: timing part skipped)")
    if args.json:
        with open(args.json, "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
            for g in gpu:
                f.write(json.dumps(g) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
