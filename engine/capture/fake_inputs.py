"""Static fake tensors for a capture's inputs, made directly where an input is a plain tensor.

``FakeTensorMode.from_tensor`` describes the tensor in full (a ``MetaTensorDesc`` of some forty
fields: views, subclasses, symbolic contexts, autograd history) before it makes the meta tensor:
about 0.18 ms a tensor, 0.3-0.4 s of capturing an optimizer step or a stack of blocks with two
thousand tensor arguments (issue 17). For a plain tensor (no subclass, view, grad, conjugate or
negative bit, inference flag, or storage shared with another input) the fake is an empty meta
tensor of the same geometry, wrapped, as ``fake_memo`` makes the recorder's results (``fake_of_geometry``); it is entered
in the converter's tensor and storage memos as ``from_tensor`` enters its own, so a later
``from_tensor`` of that tensor, or of a view of its storage, finds it. Anything else goes to
``from_tensor``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from .fake_memo import fake_of_geometry, storage_bytes
from .functional import _storage_id

#: the dispatch keys of a fresh tensor per (device, dtype): an input with other keys is not plain
_PLAIN_KEYS: dict[tuple, Any] = {}


def static_fakes(mode: FakeTensorMode, tensors: Sequence[torch.Tensor]) -> list[Any]:
    """A static fake tensor of ``mode`` for each of ``tensors`` (the inputs of one capture)."""
    counts = Counter(_storage_id(t) for t in tensors)
    return [_fake(mode, t) if counts[_storage_id(t)] == 1 and _plain(t) else mode.from_tensor(t) for t in tensors]


def _plain(t: torch.Tensor) -> bool:
    if type(t) is not torch.Tensor or t.requires_grad or t.layout != torch.strided or t._base is not None:
        return False
    if t.device.type not in ("cpu", "cuda") or t.storage_offset() != 0:
        return False
    key = (t.device, t.dtype)
    plain = _PLAIN_KEYS.get(key)
    if plain is None:
        plain = _PLAIN_KEYS[key] = torch._C._dispatch_keys(torch.empty(0, dtype=t.dtype, device=t.device))
    # conjugate, negative, zero-tensor, inference, functional and functorch tensors differ in their keys
    return (torch._C._dispatch_keys(t) == plain
            and t.untyped_storage().nbytes() == storage_bytes(tuple(t.shape), t.stride(), t.element_size()))


def _fake(mode: FakeTensorMode, t: torch.Tensor) -> FakeTensor:
    conv = mode.fake_tensor_converter
    known = conv._get_memo(t)
    if known is not None:
        return known
    fake = fake_of_geometry(mode, tuple(t.shape), t.stride(), 0, t.dtype, t.device)
    conv.set_tensor_memo(t, fake)
    mc = conv.meta_converter
    mc.storage_memo[mc.describer.get_storage_id(t.untyped_storage())] = fake.untyped_storage()
    return fake
