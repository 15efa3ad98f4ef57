"""Seed 001: dynamic scalar inputs with guards (the flag program Thunder got wrong, the
split program), under ``satfuse.jit``."""

from __future__ import annotations

import warnings

import pytest
import torch
from satfuse.lowering.cache import RecompileError

import satfuse

SPLIT_CALLS = [(3, 4), (2, 5), (4, 4), (1, 4), (3, 3), (5, 2), (6, 1), (2, 2), (7, 1), (1, 1), (4, 2), (0, 3), (3, 7)]


def flag_program(flag):
    if flag > 5:
        return torch.ones(1)
    return torch.zeros(1)


def split_program(a, dim0, dim1):
    dim2 = a.size(2) - dim0 - dim1
    return torch.split(a, (dim0, dim1, dim2), dim=2)


def split_inplace(a, dim0, dim1):
    a.mul_(2)
    dim2 = a.size(2) - dim0 - dim1
    return torch.split(a, (dim0, dim1, dim2), dim=2)


def test_flag_program_guards_the_branch():
    f = satfuse.jit(flag_program, dynamic=True)
    assert torch.equal(f(6), torch.ones(1))
    assert f.cache.compiles == 1
    assert torch.equal(f(0), torch.zeros(1))  # Thunder returned ones here
    assert f.cache.compiles == 2
    assert torch.equal(f(7), torch.ones(1))  # served by the first plan
    assert torch.equal(f(-3), torch.zeros(1))  # ints are unspecified symbols: negatives share the 2nd plan
    s = f.cache.stats()
    print(f"\nflag program: {s['compiles']} compiles, {s['hits']} hits, {s['misses']} misses, "
          f"{s['guard_us_per_call']:.2f} us/call in guards")
    assert s["compiles"] == 2 and s["hits"] == 2
    assert f.cache.entries[0].hits == 2  # f(6), f(7)
    text = str(f.plans[0].lowered.prologue)
    assert "flag > 5" in text


def _split_calls(f):
    a = torch.randn(2, 3, 10, generator=torch.Generator().manual_seed(0))
    for d0, d1 in SPLIT_CALLS:
        with warnings.catch_warnings():  # past max_plans static plans, calls run eagerly (one warning)
            warnings.simplefilter("ignore", satfuse.RecompileLimitWarning)
            got = f(a, d0, d1)
        want = split_program(a, d0, d1)
        assert len(got) == 3
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.stride() == w.stride() and torch.equal(g, w), (d0, d1)
            assert g.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()  # views of a, as eager's
    return f.cache.stats()


def test_split_program_13_calls():
    s = _split_calls(satfuse.jit(split_program, dynamic=True))
    assert s["calls"] == len(SPLIT_CALLS) and s["hits"] + s["misses"] == s["calls"]


def test_split_program_13_calls_two_compiles():
    """split's views of ``a`` have symbolic geometry: the plan rebuilds them from the extents the
    prologue binds (``a``'s contiguous strides are guarded), so one symbolic plan serves the calls."""
    assert _split_calls(satfuse.jit(split_program, dynamic=True))["compiles"] <= 2


def test_split_views_of_a_strided_input_follow_its_layout():
    """A call whose input is not contiguous fails the symbolic plan's layout guard: its views
    are eager's (the strides of that input), not the contiguous ones the plan spells."""
    f = satfuse.jit(split_program, dynamic=True)
    for a in (torch.randn(2, 3, 10), torch.randn(2, 3, 12), torch.randn(2, 10, 3).transpose(1, 2),
              torch.randn(3, 2, 12)[:, :, 1:11], torch.randn(2, 3, 9)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", satfuse.RecompileLimitWarning)
            got = f(a, 3, 4)
        for g, w in zip(got, split_program(a, 3, 4)):
            assert g.stride() == w.stride() and g.storage_offset() == w.storage_offset() and torch.equal(g, w)
            assert g.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()


def test_split_program_capture_with_one_specializes():
    """torch specializes dim0 == 1 when it is the capture example (slice bound): that plan
    is guarded by dim0 == 1 and a general call recompiles rather than reusing it."""
    a = torch.randn(2, 3, 10)
    f = satfuse.jit(split_program, dynamic=True)
    f(a, 1, 4)
    got = f(a, 3, 4)
    assert all(torch.equal(g, w) for g, w in zip(got, split_program(a, 3, 4)))
    print(f"\nsplit program starting at dim0=1: {f.cache.compiles} compiles")
    assert f.cache.compiles <= 2


@pytest.mark.parametrize("fn", [split_program, split_inplace], ids=["split", "split_inplace"])
def test_split_bad_input_names_guard_and_leaves_input(fn):
    a = torch.randn(2, 3, 10)
    f = satfuse.jit(fn, dynamic=True)
    f(a, 3, 4)
    before = a.clone()
    # dim0 > a.size(2): no plan's guard (``a.shape[2] - dim0 - dim1 >= 0``) admits it and torch itself
    # rejects it, so the call runs eagerly, on copies first: eager's own error, ``a`` untouched
    # (eager would have doubled ``a`` before raising)
    with pytest.raises(RuntimeError, match="split_with_sizes") as ei:
        f(a, 11, 1)
    assert not isinstance(ei.value, RecompileError)
    assert torch.equal(a, before)
