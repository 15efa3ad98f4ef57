"""Torch's default random number generators while capture runs a program's Python code.

Fake tensors draw nothing, so the generators' state can only move where the program sets it itself
(``torch.manual_seed(42)``, ``torch.set_rng_state``, OpInfo's ``wrapper_set_seed``, which seeds and
restores). Eager does that at every call; a plan replays tensor ops only, so its random ops would
draw from the caller's generator instead. :class:`GeneratorWatch` remembers the state capture found,
notes whether any random op was traced while the state was another, and puts the state back.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import torch

_WATCH: ContextVar["GeneratorWatch | None"] = ContextVar("satfuse_generator_watch", default=None)


def _cuda_states() -> list[torch.Tensor] | None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.get_rng_state_all()
    return None


class GeneratorWatch:
    """``with GeneratorWatch() as w: ...``; afterwards ``w.set_by_program`` says whether the program
    set the state (it differs at the end, or differed when a random op was traced); the state is
    restored either way."""

    def __init__(self) -> None:
        self.cpu = torch.random.get_rng_state()
        self.cuda = _cuda_states()
        self.set_by_program = False
        self._token: Any = None

    def moved(self) -> bool:
        if not torch.equal(self.cpu, torch.random.get_rng_state()):
            return True
        now = _cuda_states() if self.cuda is not None else None
        return now is not None and any(not torch.equal(a, b) for a, b in zip(self.cuda, now))

    def __enter__(self) -> "GeneratorWatch":
        self._token = _WATCH.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _WATCH.reset(self._token)
        if self.moved():
            self.set_by_program = True
            torch.random.set_rng_state(self.cpu)
            if self.cuda is not None:
                torch.cuda.set_rng_state_all(self.cuda)


def random_op_traced() -> None:
    """Called for each random op capture traces: notes a state other than the one capture found."""
    w = _WATCH.get()
    if w is not None and not w.set_by_program and w.moved():
        w.set_by_program = True
