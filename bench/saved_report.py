"""What AOTAutograd's forward graph saves for the backward under ``torch.compile(backend="satfuse")``:
the min-cut rematerialization partition satfuse uses (``satfuse.backend.partition_joint``)
against the default partition (save every value the backward reads). Saved tensors are written
by the forward and read by the backward, and they are alive between the two: fewer saved bytes
are fewer bytes moved and a lower peak. Each row also checks the loss and the gradients against
eager.

    python bench/saved_report.py                 # every case
    python bench/saved_report.py --cases ce gpt2

Cases: ``ce`` (cross-entropy over logits [512, 4096]), ``ln-gelu`` (layer norm, GELU, a linear
layer: [512, 1024]), ``gpt2`` (transformers' ``GPT2Block`` of a tiny config, built in code,
[4, 64, 128]). Sizes are small: the saved bytes scale with them. ``a call KiB`` is what a call of
the plan has autograd save beyond its inputs: above ``saved KiB`` where the plan returns a saved
input as a copy of it (it did, for every saved weight, until the forward returned inputs themselves).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CASES = ("ce", "ln-gelu", "gpt2")


def _case(name: str) -> tuple:
    """(function of the leaves, the leaves that require grad, the other inputs)."""
    torch.manual_seed(0)
    if name == "ce":
        x = torch.randn(512, 4096, requires_grad=True)
        y = torch.randint(0, 4096, (512,))
        return (lambda x, y: F.cross_entropy(x, y)), [x], [y]
    if name == "ln-gelu":
        x = torch.randn(512, 1024, requires_grad=True)
        w = torch.randn(1024, requires_grad=True)
        lin = torch.randn(1024, 256, requires_grad=True)
        return (lambda x, w, lin: (F.gelu(F.layer_norm(x, (1024,), w)) @ lin).square().mean()), [x, w, lin], []
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    block = GPT2Block(GPT2Config(n_embd=128, n_head=4, n_layer=1, attn_pdrop=0.0, resid_pdrop=0.0,
                                 embd_pdrop=0.0)).train()
    x = torch.randn(4, 64, 128, requires_grad=True)
    params = [x, *block.parameters()]
    return (lambda x, *_params: block(x)[0].square().mean()), params, []


def _saved(name: str, partition: str) -> tuple[int, int, int, bool]:
    """(saved buffers, their bytes, the bytes a call saves, equal to eager) for one compile of case
    ``name``: the storages of the tensors the forward graph saves, each once, leaving out the
    inputs' (alive anyway); and those of the tensors a call of the plan hands autograd to save
    (``saved_tensors_hooks``), leaving out the storages of the call's inputs: a saved input the plan
    returned as a copy counts there."""
    from torch._functorch.partitioners import default_partition
    from torch.multiprocessing.reductions import StorageWeakRef

    import satfuse.backend as backend

    fn, leaves, rest = _case(name)
    seen: list[tuple[int, int]] = []
    chosen = backend.partition_joint if partition == "min-cut" else default_partition

    def recording(joint, joint_inputs, **kwargs):
        fw, bw = chosen(joint, joint_inputs, **kwargs)
        n_fwd = kwargs["num_fwd_outputs"]
        out = next(n for n in fw.graph.nodes if n.op == "output").args[0]
        vals = [v.meta.get("val") for v in out[n_fwd:] if isinstance(v, torch.fx.Node)]
        tensors = [v for v in vals if isinstance(v, torch.Tensor)]
        inputs = {StorageWeakRef(n.meta["val"].untyped_storage()) for n in fw.graph.nodes
                  if n.op == "placeholder" and isinstance(n.meta.get("val"), torch.Tensor)}
        # a saved input, or a view of one, costs nothing (it is alive anyway); views of one value count once
        own = {StorageWeakRef(t.untyped_storage()): t.untyped_storage().nbytes() for t in tensors}
        own = {k: b for k, b in own.items() if k not in inputs}
        seen.append((len(own), sum(own.values())))
        return fw, bw

    torch._dynamo.reset()
    original = backend.partition_joint
    backend.partition_joint = recording
    try:
        compiled = torch.compile(fn, backend="satfuse")
        compiled(*leaves, *rest)  # compiled
        at_run: dict[StorageWeakRef, int] = {}

        def pack(t: torch.Tensor) -> torch.Tensor:
            at_run[StorageWeakRef(t.untyped_storage())] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = compiled(*leaves, *rest)
        grads = torch.autograd.grad(loss, leaves)
    finally:
        backend.partition_joint = original
    for t in (*leaves, *rest):
        at_run.pop(StorageWeakRef(t.untyped_storage()), None)
    ref = fn(*leaves, *rest)
    ref_grads = torch.autograd.grad(ref, leaves)
    equal = all(torch.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip((loss, *grads), (ref, *ref_grads)))
    return sum(n for n, _ in seen), sum(b for _, b in seen), sum(at_run.values()), equal


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    print(f"{'case':<10} {'partition':<10} {'saved':>6} {'saved KiB':>10} {'a call KiB':>11} {'vs eager':>9}")
    for name in args.cases:
        for partition in ("default", "min-cut"):
            n, nbytes, run_bytes, equal = _saved(name, partition)
            print(f"{name:<10} {partition:<10} {n:>6} {nbytes / 1024:>10,.0f} {run_bytes / 1024:>11,.0f} "
                  f"{'equal' if equal else 'DIFFERS':>9}")


if __name__ == "__main__":
    main()
