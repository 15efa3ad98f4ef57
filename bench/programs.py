"""The benchmark programs, with inputs made at any size on any device.

Every program is a plain torch function plus a factory ``make(device, **size)`` that
returns example inputs. On ``device="meta"`` nothing is allocated: capture traces on
fake copies of its inputs, and meta tensors carry shape, dtype and device only, so the
optimizer can be run at the real sizes ([8192, 32768] f32 is 1 GiB) on any machine.
Real tensors are made only for the timing part of ``bench/run.py``, on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F

from tests.corpus import adam_hand as adam  # the programs are the test corpus's, at bench sizes
from tests.corpus import ce_fwd_bwd
from tests.corpus import ce_hand as ce_fwd

# ---------------------------------------------------------------- programs





def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def softmax(x):
    return torch.softmax(x, -1)


def gpt2_mlp(x, ln_w, ln_b, w_fc, b_fc, w_proj, b_proj):
    """GPT-2 MLP block: x + proj(gelu(fc(layer_norm(x))))"""
    h = F.layer_norm(x, (x.shape[-1],), ln_w, ln_b)
    h = F.gelu(F.linear(h, w_fc, b_fc), approximate="tanh")
    return x + F.linear(h, w_proj, b_proj)


def attention(x, ln_w, ln_b, w_qkv, b_qkv, w_o, b_o):
    """GPT-2 attention block: x + proj(sdpa(q, k, v, causal)) with 12 heads"""
    bsz, t, d = x.shape
    nh = 12
    h = F.layer_norm(x, (d,), ln_w, ln_b)
    q, k, v = F.linear(h, w_qkv, b_qkv).split(d, dim=2)
    q = q.view(bsz, t, nh, d // nh).transpose(1, 2)
    k = k.view(bsz, t, nh, d // nh).transpose(1, 2)
    v = v.view(bsz, t, nh, d // nh).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    y = y.transpose(1, 2).reshape(bsz, t, d)
    return x + F.linear(y, w_o, b_o)


# ---------------------------------------------------------------- inputs


#: shape-only devices: "meta", or "empty" (uninitialized CPU tensors: no page is touched). Capture
#: traces fake copies, so either works at any size; programs that call ``torch.autograd.grad``
#: cannot be captured from meta inputs (/work/findings/capture-autograd-on-meta.py) and use "empty".
SHAPE_ONLY = ("meta", "empty")


def _empty(shape, device, dtype=torch.float32):
    return torch.empty(shape, device="meta" if device == "meta" else "cpu", dtype=dtype)


def _randn(shape, device, dtype=torch.float32, scale=1.0):
    if device in SHAPE_ONLY:
        return _empty(shape, device, dtype)
    return torch.randn(shape, device=device, dtype=dtype) * scale


def ce_inputs(device: str, n: int = 8, c: int = 16) -> tuple:
    y = _empty(n, device, torch.long) if device in SHAPE_ONLY else torch.randint(0, c, (n,), device=device)
    return _randn((n, c), device), y


def adam_inputs(device: str, n_params: int = 3, numel: int = 12) -> tuple:
    shapes = [(numel,)] * n_params
    params = [_randn(s, device) for s in shapes]
    grads = [_randn(s, device) for s in shapes]
    exp_avgs = [_randn(s, device, scale=0.1) for s in shapes]
    exp_avg_sqs = [_randn(s, device).abs() * 0.1 if device not in SHAPE_ONLY else _randn(s, device) for s in shapes]
    return params, grads, exp_avgs, exp_avg_sqs


def ln_inputs(device: str, n: int = 4, d: int = 16) -> tuple:
    return _randn((n, d), device), _randn((d,), device), _randn((d,), device)


def softmax_inputs(device: str, n: int = 4, d: int = 16) -> tuple:
    return (_randn((n, d), device),)


def mlp_inputs(device: str, b: int = 2, t: int = 8, d: int = 24) -> tuple:
    return (_randn((b, t, d), device), _randn((d,), device), _randn((d,), device), _randn((4 * d, d), device, scale=0.02),
            _randn((4 * d,), device), _randn((d, 4 * d), device, scale=0.02), _randn((d,), device))


def attn_inputs(device: str, b: int = 2, t: int = 8, d: int = 24) -> tuple:
    return (_randn((b, t, d), device), _randn((d,), device), _randn((d,), device), _randn((3 * d, d), device, scale=0.02),
            _randn((3 * d,), device), _randn((d, d), device, scale=0.02), _randn((d,), device))


@dataclass(frozen=True)
class Program:
    name: str
    fn: Callable[..., Any]
    make: Callable[..., tuple]
    size: dict = field(default_factory=dict)
    label: str = ""
    #: the shape-only device capture reads (see ``SHAPE_ONLY``)
    shape_device: str = "meta"

    def inputs(self, device: str | None = None) -> tuple:
        """Inputs on ``device``; by default shape-only ones for capture."""
        return self.make(device or self.shape_device, **self.size)

    @property
    def title(self) -> str:
        return self.label or self.name


#: small, corpus-like sizes (bench/extraction.py --programs)
SMALL: list[Program] = [
    Program("ce_fwd", ce_fwd, ce_inputs, {"n": 8, "c": 16}),
    Program("ce_fwd_bwd", ce_fwd_bwd, ce_inputs, {"n": 8, "c": 16}, shape_device="empty"),
    Program("adam_3", adam, adam_inputs, {"n_params": 3, "numel": 12}),
    Program("layer_norm", layer_norm, ln_inputs, {"n": 4, "d": 16}),
    Program("softmax", softmax, softmax_inputs, {"n": 4, "d": 16}),
    Program("gpt2_mlp", gpt2_mlp, mlp_inputs, {"b": 2, "t": 8, "d": 24}),
    Program("attention", attention, attn_inputs, {"b": 2, "t": 8, "d": 24}),
]

#: realistic sizes (bench/run.py)
REAL: list[Program] = [
    Program("ce_fwd", ce_fwd, ce_inputs, {"n": 512, "c": 32768}, "CE fwd [512, 32768]"),
    Program("ce_fwd", ce_fwd, ce_inputs, {"n": 8192, "c": 32768}, "CE fwd [8192, 32768]"),
    Program("ce_fwd_bwd", ce_fwd_bwd, ce_inputs, {"n": 512, "c": 32768}, "CE fwd+bwd [512, 32768]", "empty"),
    Program("ce_fwd_bwd", ce_fwd_bwd, ce_inputs, {"n": 8192, "c": 32768}, "CE fwd+bwd [8192, 32768]", "empty"),
    Program("adam", adam, adam_inputs, {"n_params": 10, "numel": 2**20}, "Adam 10 x 1M"),
    Program("gpt2_mlp", gpt2_mlp, mlp_inputs, {"b": 8, "t": 1024, "d": 768}, "GPT-2 MLP [8, 1024, 768]"),
    Program("attention", attention, attn_inputs, {"b": 8, "t": 1024, "d": 768}, "GPT-2 attn [8, 1024, 768]"),
]
