"""Tiny Hugging Face models through ``torch.compile(backend="satfuse")``: equality with eager,
graph counts, what fuses and what falls back, and compile time against Inductor.

    pip install -c constraints.txt -e ".[models]"
    python bench/models.py [--models gpt2,bert] [--attn eager,sdpa] [--modes eval,train]
                           [--no-inductor] [--json OUT.json]

Models are built in code from tiny configs with random weights (no download:
``HF_HUB_OFFLINE=1``): ``GPT2LMHeadModel``, ``BertForSequenceClassification``,
``LlamaForCausalLM``, ``T5ForConditionalGeneration`` and ``ViTForImageClassification``, 2 layers,
hidden 32, 2-4 heads, vocab 128, every dropout 0, each with ``attn_implementation`` "eager" and
"sdpa". For each model x attention x mode the table shows:

* **fwd diff**: max |compiled - eager| over logits and loss, on every sequence length of
  ``SEQS`` (batch 2) with one compiled model (``dynamic=True``).
* **train**: ``ok`` when ``STEPS`` training steps (compiled forward + backward, then
  ``torch.optim.AdamW.step`` compiled with backend="satfuse") leave every gradient,
  parameter and optimizer state within tolerance of an eager twin (a deepcopy); otherwise
  the largest difference and where. Eval rows say ``-``.
* **graphs**: Dynamo graphs handed to the backend over all calls (recompiles included); for
  train, model graphs + optimizer graphs. ``breaks`` is ``torch._dynamo.explain``'s graph
  break count with the first reason.
* **fused / fallback**: ops in nvFuser segments vs fallback torch calls, summed over every
  satfuse plan of the configuration (inference, forward and backward graphs, optimizer);
  **fallback kinds** counts them by op.
* **MiB nvf/eager**: modeled bytes summed over those plans (``modeled_bytes``), as compiled
  for nvFuser and with the same graphs optimized for the eager target; the first must never
  exceed the second (issue 19).
* **satfuse s / inductor s / ratio**: wall time of the first compiled call(s), which
  compile (for train: one forward + backward + optimizer step), satfuse vs
  ``torch.compile``'s default backend (Inductor, C++ codegen with gcc, its on-disk caches
  disabled so both compile cold) on a fresh copy of the same model in the same process; both
  include Dynamo's tracing (and AOTAutograd's for train). **(plans s)** is the part spent in
  satfuse's own pipeline (re-trace, saturation, extraction, lowering: ``timings['total']`` of
  every plan).

``tests/test_models.py`` runs a few of these configurations (all of them with
``SATFUSE_ALL_MODELS=1``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
import traceback
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from bench.progress import Progress  # noqa: E402

MODELS = ("gpt2", "bert", "llama", "t5", "vit")
ATTNS = ("eager", "sdpa")
MODES = ("eval", "train")
BATCH = 2
SEQS = (8, 12, 16)  # the first compiles; the others must reuse it (dynamic=True)
STEPS = 2  # training steps compared with the eager twin
VOCAB = 128
ATOL, RTOL = 1e-5, 1e-4
#: (atol, rtol) of the float64 training check. GPT-2's loss is float32 even in a float64 model
#: (HF's ForCausalLMLoss upcasts with ``logits.float()``), so its gradients carry f32 rounding
#: (~1.5e-8), which AdamW's first step turns into ~1e-7 on parameters with tiny gradients.
#: Llama's loss is the same ForCausalLMLoss.
F64_TOL: dict[Any, tuple[float, float]] = {"gpt2": (1e-6, 1e-6), "bert": (1e-9, 1e-7), "llama": (1e-6, 1e-6), "t5": (1e-9, 1e-7),
           "vit": (1e-9, 1e-7)}
#: Llama's and ViT's eager attention computes softmax in float32 even in a float64 model
#: (``softmax(..., dtype=torch.float32).to(query.dtype)``). A compiled softmax rounds differently
#: there (satfuse's decomposition divides by the sum where eager's kernel multiplies by its
#: reciprocal: 1 f32 ulp), and AdamW turns it into ~1e-5 on ``k_proj.bias``, whose gradient is zero
#: but for rounding (softmax is shift-invariant). Inductor differs as much: 6.4e-5 on ViT after
#: two steps (``train_step_pair("vit", "eager", backend="inductor", opt_backend="inductor")``).
F64_TOL[("llama", "eager")] = F64_TOL[("vit", "eager")] = (1e-4, 1e-4)
#: Llama with SDPA: the step's loss and logits equal eager's exactly and every gradient is within
#: 1.6e-8 of eager's (Inductor's: 2.5e-8), but the f32 loss's backward (a log-softmax backward
#: summed in another order: 1 f32 ulp) moves an lm_head gradient of 8.4e-8 by 6e-10, which
#: AdamW's first step (g / (|g| + 1e-8)) turns into 6.9e-6 on that weight. aot_eager, which runs
#: eager's kernels, is exact.
F64_TOL[("llama", "sdpa")] = (1e-4, 1e-4)
IMAGE = 16  # ViT's image side (patches of 4: a conv of stride 4, whose input needs no gradient)


# ---------------------------------------------------------------------- models


def make_model(name: str, attn: str, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.nn.Module:
    """A tiny model with random weights, built in code (no hub access), dropout 0."""
    import transformers as tf

    torch.manual_seed(seed)
    if name == "gpt2":
        cfg = tf.GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=2,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, summary_first_dropout=0.0,
                            bos_token_id=0, eos_token_id=0, pad_token_id=0)
        cls = tf.GPT2LMHeadModel
    elif name == "bert":
        cfg = tf.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0, classifier_dropout=0.0, num_labels=3,
                            pad_token_id=0,
                            problem_type="single_label_classification")  # None: set by the 1st call: a recompile
        cls = tf.BertForSequenceClassification
    elif name == "llama":  # rotary positions, RMSNorm, grouped-query attention, SiLU gate
        cfg = tf.LlamaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
                             pad_token_id=0, bos_token_id=1, eos_token_id=2)
        cls = tf.LlamaForCausalLM
    elif name == "t5":  # encoder-decoder, relative position buckets (an in-place add), shifted labels
        cfg = tf.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                          dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
        cls = tf.T5ForConditionalGeneration
    elif name == "vit":  # conv patch embedding, class token, image classification
        cfg = tf.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                           image_size=IMAGE, patch_size=4, hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, num_labels=3)
        cls = tf.ViTForImageClassification
    else:
        raise ValueError(f"unknown model {name!r}; one of {MODELS}")
    cfg._attn_implementation = attn
    model = cls(cfg).to(dtype)
    got = model.config._attn_implementation
    if got != attn:
        raise RuntimeError(f"{name}: asked for attn_implementation={attn!r}, the model uses {got!r}")
    return model


def make_batch(name: str, seq: int, seed: int = 1) -> dict[str, torch.Tensor]:
    """Inputs with labels (so the model returns a loss); the masks pad the second row. ViT's
    images have one size (``seq`` only seeds them)."""
    g = torch.Generator().manual_seed(seed + seq)
    if name == "vit":
        return {"pixel_values": torch.randn(BATCH, 3, IMAGE, IMAGE, generator=g),
                "labels": torch.randint(0, 3, (BATCH,), generator=g)}
    ids = torch.randint(1, VOCAB, (BATCH, seq), generator=g)
    if name == "gpt2":
        return {"input_ids": ids, "labels": ids.clone()}
    mask = torch.ones(BATCH, seq, dtype=torch.long)
    mask[1, seq - 3:] = 0
    if name == "llama":
        return {"input_ids": ids, "attention_mask": mask, "labels": ids.clone()}
    if name == "t5":  # targets of about half the length (the decoder's own sequence)
        return {"input_ids": ids, "attention_mask": mask,
                "labels": torch.randint(1, VOCAB, (BATCH, seq // 2 + 1), generator=g)}
    return {"input_ids": ids, "attention_mask": mask, "labels": torch.randint(0, 3, (BATCH,), generator=g)}


# ---------------------------------------------------------------------- counting


class Counting:
    """A backend wrapper that counts the Dynamo graphs ``inner`` compiled (``graphs``) and the
    attempts Dynamo restarted (``restarts``: the backend asked Dynamo to specialize a float it
    could not turn into tensor math, ``TensorifyScalarRestartAnalysis``; Dynamo traces the frame
    again and hands over the same graph without that input)."""

    def __init__(self, inner: Any = "satfuse") -> None:
        self.inner = inner
        self.graphs = 0
        self.restarts = 0
        self.ops: list[int] = []  # fx call nodes per compiled Dynamo graph

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        from torch._dynamo.backends.registry import lookup_backend
        from torch._dynamo.exc import RestartAnalysis

        inner = lookup_backend(self.inner) if isinstance(self.inner, str) else self.inner
        try:
            fn = inner(gm, example_inputs)
        except RestartAnalysis:
            self.restarts += 1
            raise
        self.graphs += 1
        self.ops.append(sum(1 for n in gm.graph.nodes if n.op.startswith("call")))
        return fn


class PlanTally:
    """Plans the default engine compiled while the tally is open (its ``on_graph`` hook: the
    engine keeps only the newest graphs)."""

    def __init__(self) -> None:
        from satfuse.pipeline import default_engine

        self._hooks = default_engine().on_graph
        self.plans: list[Any] = []

    def __enter__(self) -> "PlanTally":
        self._hooks.append(self.plans.append)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._hooks.remove(self.plans.append)

    def summary(self) -> dict[str, Any]:
        fused = fb = segs = 0
        kinds: Counter = Counter()
        by_kind: Counter = Counter()
        secs = 0.0
        for c in self.plans:
            s = c.plan.stats()
            fused += s["fused_ops"]
            fb += s["fallback_ops"]
            segs += s["segments"]
            kinds.update(s["fallback_kinds"])
            by_kind[c.kind] += 1
            secs += c.timings.get("total", 0.0)
        return {"plans": dict(by_kind), "segments": segs, "fused_ops": fused, "fallback_ops": fb,
                "fallback_kinds": dict(kinds.most_common()), "satfuse_compile_s": secs}


def modeled_bytes(compiled: list[Any]) -> tuple[int, int]:
    """Modeled bytes summed over compiled graphs (``satfuse.graph_plans.CompiledGraph``): of the plans as
    compiled (nvFuser target: bytes crossing their steps, ``plan_traffic``), and of the same
    captured graphs optimized for the eager target (an op-by-op run, ``eager_traffic``).
    Symbolic extents count as ``costs.DEFAULT_EXTENT``."""
    from satfuse.engine.costs import eager_traffic, plan_traffic
    from satfuse.engine.optimize import optimize_trace
    from satfuse.rewrites import load_catalogue

    cat = load_catalogue()
    nvf = eager = 0
    for c in compiled:
        nvf += plan_traffic(c.plan.steps, c.plan.trace).total
        eager += eager_traffic(optimize_trace(c.trace, cat.sources, cat.phases, target="eager").trace).total
    return nvf, eager


# ---------------------------------------------------------------------- checks


def _maxdiff(a: Any, b: Any) -> float:
    if a is None and b is None:
        return 0.0
    return float((a.detach().float() - b.detach().float()).abs().max()) if a.numel() else 0.0


def _close(a: torch.Tensor, b: torch.Tensor, atol: float = ATOL, rtol: float = RTOL) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a.detach(), b.detach(), atol=atol, rtol=rtol))


def check_eval(name: str, attn: str, backend: Any = None, seqs: tuple[int, ...] = SEQS) -> dict[str, Any]:
    """Compiled eval forward vs eager on every length of ``seqs``: the max abs difference of
    logits and loss, Dynamo graphs compiled, and the first call's wall time."""
    model = make_model(name, attn).eval()
    counting = Counting(backend or "satfuse")
    cm = torch.compile(model, backend=counting, dynamic=True)
    diff, first_s = 0.0, None
    with torch.no_grad():
        for seq in seqs:
            batch = make_batch(name, seq)
            want = model(**batch)
            t0 = time.perf_counter()
            got = cm(**batch)
            if first_s is None:
                first_s = time.perf_counter() - t0
            for k in ("logits", "loss"):
                a, b = getattr(got, k), getattr(want, k)
                if a.shape != b.shape:
                    raise AssertionError(f"{k}: shape {tuple(a.shape)} != eager {tuple(b.shape)} (seq {seq})")
                diff = max(diff, _maxdiff(a, b))
    return {"fwd_diff": diff, "graphs": counting.graphs, "restarts": counting.restarts, "first_call_s": first_s}


@dataclass
class TrainResult:
    ok: bool
    worst: float
    where: str
    loss_diff: float
    model_graphs: int
    opt_graphs: int
    first_step_s: float
    restarts: int = 0
    mismatches: list[str] = field(default_factory=list)


def train_step_pair(name: str, attn: str, backend: Any = None, opt_backend: Any = None, steps: int = STEPS,
                    seqs: tuple[int, ...] = SEQS, lr: float = 1e-2, dtype: torch.dtype = torch.float64,
                    atol: float | None = None, rtol: float | None = None,
                    plain_eager_opt: bool = False) -> TrainResult:
    """``steps`` training steps of a compiled model + compiled ``AdamW.step`` against an eager
    twin; after each step every gradient, parameter and optimizer state is compared.

    float64 by default: AdamW divides by ``sqrt(exp_avg_sq)``, so a parameter whose gradient
    is tiny (an embedding row) turns f32 rounding noise (1e-7) into ~1e-4 differences after
    one step, for Inductor as much as for satfuse; in f64 the same check holds at 1e-9.

    The twin's model runs eagerly. Its ``AdamW.step`` runs through Dynamo with
    ``backend="eager"`` (the traced graph run op by op by PyTorch, no compiler) unless
    ``plain_eager_opt``: Dynamo's AdamW graph keeps ``step`` a float32 tensor and computes the
    bias corrections in f32 tensor math where eager AdamW uses Python floats, so *every*
    compiled AdamW (eager, aot_eager, inductor, satfuse backends alike) differs from plain
    eager AdamW by ~6.6e-8 after one step on f64 parameters of size ~1."""
    if dtype == torch.float64:
        tol = F64_TOL.get((name, attn), F64_TOL[name])
        atol, rtol = atol or tol[0], rtol or tol[1]
    else:
        atol, rtol = atol or ATOL, rtol or RTOL
    eager = make_model(name, attn, dtype=dtype).train()
    twin = copy.deepcopy(eager)
    opt_e = torch.optim.AdamW(eager.parameters(), lr=lr)
    opt_c = torch.optim.AdamW(twin.parameters(), lr=lr)
    mc = Counting(backend or "satfuse")
    oc = Counting(opt_backend or backend or "satfuse")
    cm = torch.compile(twin, backend=mc, dynamic=True)

    @torch.compile(backend=oc)
    def opt_step() -> None:
        opt_c.step()

    def opt_step_ref() -> None:
        opt_e.step()

    if not plain_eager_opt:
        opt_step_ref = torch.compile(opt_step_ref, backend="eager")

    worst, where, loss_diff, first = 0.0, "", 0.0, 0.0
    bad: list[str] = []

    def cmp(label: str, a: Any, b: Any) -> None:
        nonlocal worst, where
        if a is None or b is None:
            if (a is None) != (b is None):
                bad.append(f"{label}: one side is None")
            return
        d = _maxdiff(a, b)
        if d > worst:
            worst, where = d, label
        if not _close(a, b, atol, rtol):
            bad.append(f"{label}: max diff {d:.3g}")

    names = [n for n, _ in eager.named_parameters()]
    for step in range(steps):
        batch = make_batch(name, seqs[step % len(seqs)])
        t0 = time.perf_counter()
        out_c = cm(**batch)
        out_c.loss.backward()
        opt_step()
        if step == 0:
            first = time.perf_counter() - t0
        out_e = eager(**batch)
        out_e.loss.backward()
        opt_step_ref()
        loss_diff = max(loss_diff, _maxdiff(out_c.loss, out_e.loss))
        cmp(f"step {step} logits", out_c.logits, out_e.logits)
        pe, pc = dict(eager.named_parameters()), dict(twin.named_parameters())
        for n in names:
            cmp(f"step {step} grad {n}", pc[n].grad, pe[n].grad)
            cmp(f"step {step} param {n}", pc[n], pe[n])
            se, sc = opt_e.state[pe[n]], opt_c.state[pc[n]]
            for k in ("exp_avg", "exp_avg_sq", "step"):
                cmp(f"step {step} adamw.{k} {n}", sc.get(k), se.get(k))
        opt_e.zero_grad()
        opt_c.zero_grad()
    return TrainResult(not bad, worst, where, loss_diff, mc.graphs, oc.graphs, first, mc.restarts + oc.restarts,
                       bad[:8])


def jit_train(name: str, attn: str, dynamic: bool = True, steps: int = 3, seq: int = 8,
              lr: float = 0.1) -> dict[str, Any]:
    """``satfuse.jit(model)`` trained ``steps`` SGD steps (autograd through its forward and
    backward plans) against an eager twin on the same batches: the largest difference of any
    loss or final parameter, the plans compiled (by kind), and the seconds of the first step."""
    import satfuse

    eager = make_model(name, attn).train()
    model = copy.deepcopy(eager)
    fm = satfuse.jit(model, dynamic=dynamic)

    def train(m: torch.nn.Module, call: Callable) -> tuple[list[torch.Tensor], float]:
        opt = torch.optim.SGD(m.parameters(), lr=lr)
        losses, first = [], 0.0
        for step in range(steps):
            t0 = time.perf_counter()
            loss = call(**make_batch(name, seq, seed=step)).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            first = first or time.perf_counter() - t0
            losses.append(loss.detach())
        return losses + [p.detach() for p in m.parameters()], first

    want, _ = train(eager, eager)
    with PlanTally() as tally:
        got, first = train(model, fm)
    return {"max_diff": max(_maxdiff(a, b) for a, b in zip(want, got)),
            "close": all(_close(b, a, ATOL, RTOL) for a, b in zip(want, got)),
            "grad_calls": fm.stats()["grad_calls"], "jit_compiles": fm.cache.compiles,
            "plans": tally.summary()["plans"], "first_step_s": first}


def graph_breaks(name: str, attn: str, mode: str) -> tuple[int, int, str]:
    """``torch._dynamo.explain`` on the model call: graphs, breaks, first reason."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    model = make_model(name, attn)
    model.train(mode == "train")
    batch = make_batch(name, SEQS[0])
    ctx = torch.no_grad() if mode == "eval" else torch.enable_grad()
    with ctx:
        ex = torch._dynamo.explain(model)(**batch)
    reason = ""
    if ex.break_reasons:
        r = ex.break_reasons[0]
        # explain's reason can be a bare category ("step_unsupported"); Dynamo's graph-break
        # counter keeps the message ("logging.Logger method not supported ...")
        msgs = [k for k in torch._dynamo.utils.counters["graph_break"] if k]
        reason = (msgs[0] if msgs else r.reason).splitlines()[0][:110]
        if r.user_stack:
            fs = r.user_stack[-1]
            reason += f" @ {os.path.basename(fs.filename)}:{fs.lineno}"
    torch._dynamo.reset()
    return ex.graph_count, ex.graph_break_count, reason


# ---------------------------------------------------------------------- the report


@dataclass
class Row:
    model: str
    attn: str
    mode: str
    fwd_diff: float | None = None
    train: str = "-"
    graphs: str = ""
    restarts: int = 0
    breaks: str = ""
    fused_ops: int = 0
    fallback_ops: int = 0
    fallback_kinds: dict = field(default_factory=dict)
    plans: dict = field(default_factory=dict)
    mib_nvfuser: float | None = None  # modeled bytes of every compiled plan (nvFuser target)
    mib_eager: float | None = None  # the same graphs optimized for the eager target
    satfuse_s: float | None = None
    engine_s: float | None = None
    inductor_s: float | None = None
    error: str = ""

    @property
    def ratio(self) -> str:
        if self.satfuse_s and self.inductor_s:
            return f"{self.satfuse_s / self.inductor_s:.2f}"
        return "-"


def run_config(name: str, attn: str, mode: str, inductor: bool = True) -> Row:
    row = Row(name, attn, mode)
    try:
        g, nb, reason = graph_breaks(name, attn, mode)
        row.breaks = f"{nb}" + (f": {reason}" if reason else "")
        with PlanTally() as tally:
            torch._dynamo.reset()
            if mode == "eval":
                r = check_eval(name, attn)
                row.fwd_diff, row.graphs, row.satfuse_s = r["fwd_diff"], str(r["graphs"]), r["first_call_s"]
                row.restarts = r["restarts"]
            else:
                t = train_step_pair(name, attn)
                row.fwd_diff = t.loss_diff
                row.train = "ok" if t.ok else f"FAIL {t.worst:.2g} ({t.where}; {len(t.mismatches)}+ bad)"
                row.graphs = f"{t.model_graphs}+{t.opt_graphs}"
                row.restarts = t.restarts
                row.satfuse_s = t.first_step_s
        s = tally.summary()
        row.fused_ops, row.fallback_ops = s["fused_ops"], s["fallback_ops"]
        row.fallback_kinds, row.plans = s["fallback_kinds"], s["plans"]
        row.engine_s = s["satfuse_compile_s"]
        row.mib_nvfuser, row.mib_eager = (b / 2**20 for b in modeled_bytes(tally.plans))
    except Exception as e:  # noqa: BLE001 - one failing configuration must not hide the others
        row.error = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        traceback.print_exc(file=sys.stderr)
    if inductor:
        try:
            torch._dynamo.reset()
            if mode == "eval":
                row.inductor_s = check_eval(name, attn, backend="inductor", seqs=SEQS[:1])["first_call_s"]
            else:
                row.inductor_s = train_step_pair(name, attn, backend="inductor", steps=1).first_step_s
        except Exception as e:  # noqa: BLE001
            row.error += f" | inductor: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
    torch._dynamo.reset()
    return row


def _kinds(d: dict) -> str:
    short = {k.replace("aten.", "").replace(".default", ""): v for k, v in d.items()}
    return ", ".join(f"{k} {v}" for k, v in short.items()) or "-"


def table(rows: list[Row]) -> str:
    head = ["model", "attn", "mode", "fwd diff", "train", "graphs", "fused", "fallback", "MiB nvf/eager",
            "satfuse s", "(plans s)", "inductor s", "ratio", "fallback kinds"]
    lines = []
    for r in rows:
        lines.append([r.model, r.attn, r.mode, "ERR" if r.fwd_diff is None else f"{r.fwd_diff:.1e}", r.train,
                      r.graphs or "-", str(r.fused_ops), str(r.fallback_ops),
                      "-" if r.mib_nvfuser is None else f"{r.mib_nvfuser:.3f}/{r.mib_eager:.3f}",
                      "-" if r.satfuse_s is None else f"{r.satfuse_s:.1f}",
                      "-" if r.engine_s is None else f"{r.engine_s:.1f}",
                      "-" if r.inductor_s is None else f"{r.inductor_s:.1f}", r.ratio, _kinds(r.fallback_kinds)])
    w = [max(len(h), *(len(x[i]) for x in lines)) for i, h in enumerate(head)]
    out = [" | ".join(h.ljust(w[i]) for i, h in enumerate(head)), "-|-".join("-" * x for x in w)]
    out += [" | ".join(c.ljust(w[i]) for i, c in enumerate(x)) for x in lines]
    notes = []
    for r in rows:
        tag = f"{r.model}/{r.attn}/{r.mode}"
        notes.append(f"{tag}: graph breaks {r.breaks or '-'}; Dynamo restarts (float specialized) {r.restarts}; "
                     f"satfuse plans {r.plans or '-'}")
        if r.error:
            notes.append(f"{tag}: ERROR {r.error}")
    return "\n".join(out + [""] + notes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--attn", default=",".join(ATTNS))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--jit", action="store_true",
                    help="instead: satfuse.jit(model) trained 3 SGD steps against eager (dynamic and static)")
    a = ap.parse_args(argv)
    import torch._inductor.config as inductor_config
    import transformers

    import satfuse  # noqa: F401 - registers the backend

    # compile time is compared cold: Inductor's on-disk caches (FX graph, kernels, autotuning)
    # would make every run after the first look faster than a first compile is
    inductor_config.force_disable_caches = True

    if a.jit:
        runs = [(name, dynamic) for name in a.models.split(",") for dynamic in (True, False)]
        with Progress("bench/models.py --jit", len(runs)) as bar:
            for name, dynamic in runs:
                bar.step(f"jit({name}, dynamic={dynamic})")
                torch._dynamo.reset()
                r = jit_train(name, "sdpa", dynamic=dynamic)
                print(f"jit({name}, dynamic={dynamic}): 3 SGD steps, max |diff| vs eager {r['max_diff']:.3g} "
                      f"({'ok' if r['close'] else 'FAIL'}), grad calls {r['grad_calls']}, plans {r['plans']}, "
                      f"first step {r['first_step_s']:.1f}s", flush=True)
        return 0
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, batch {BATCH}, seqs {SEQS}, "
          f"{STEPS} train steps, tolerance atol={ATOL} rtol={RTOL}", flush=True)
    rows = []
    configs = [(n, at, m) for n in a.models.split(",") for at in a.attn.split(",") for m in a.modes.split(",")]
    with Progress("bench/models.py", len(configs)) as bar:
        for name, attn, mode in configs:
            bar.step(f"{name}/{attn}/{mode}")
            t0 = time.perf_counter()
            rows.append(run_config(name, attn, mode, inductor=not a.no_inductor))
            print(f"  {name}/{attn}/{mode} done in {time.perf_counter() - t0:.0f}s", flush=True)
    print(table(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump([asdict(r) for r in rows], f, indent=1)
    return 0 if not any(r.error or r.train.startswith("FAIL") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
