"""Tracing on PyTorch's functionalization: a program with views and in-place ops -> a
functional aten graph plus the metadata that says how eager's outputs and inputs alias.

This is the machinery AOTAutograd uses. Two passes over the program, both on fake tensors:

1. ``run_functionalized_fw_and_collect_metadata`` (FunctionalTensorMode) records which inputs
   the program mutates (data or metadata) and how each output aliases (AOTAutograd's
   ``ViewAndMutationMeta``). While it runs, :class:`_OverlapCheck` sits above functionalization
   and raises eager's error for the writes eager refuses (``x.mul_(x[0])``, ``x.copy_(x.t())``,
   a write into an expanded tensor): functionalization would silently give them a meaning.
2. ``make_fx`` under ``FunctionalTensorMode`` records the graph (functionalization below autograd,
   so a program may call ``torch.autograd.grad`` itself). Every write
   through a view becomes a ``*_scatter`` op into its base and every ``out=`` / in-place op its
   functional form; the graph ends with one ``copy_(input, final_value)`` per mutated input.

make_fx keeps process-global state while it traces (its patcher, the current tracer, proxy
modes) and Dynamo's first import is not re-entrant, so concurrent captures from several threads
corrupt each other and every later ``torch.compile``. :data:`TRACING` serializes them.
"""

from __future__ import annotations

import operator
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
import torch.fx.traceback as fx_traceback
import torch.utils._pytree as pytree
from torch._dispatch.python import enable_python_dispatcher
from torch._functorch._aot_autograd.functional_utils import from_fun, has_data_mutation, to_fun
from torch._functorch._aot_autograd.utils import _get_autocast_states
from torch._subclasses.fake_tensor import FakeTensor
from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode
from torch.fx._lazy_graph_module import _use_lazy_graph_module
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.experimental.symbolic_shapes import guard_or_true
from torch.overrides import TorchFunctionMode, resolve_name
from torch.utils._python_dispatch import TorchDispatchMode

from .compat import is_inplace_variant
from .eager_checks import probe_kernel, with_eager_check
from .eager_kernels import put_back, take_out
from .foreach import as_eager_runs_it, per_tensor
from .generators import random_op_traced
from .inplace import INPLACE_OF, functional_variant, reordered_variant
from .layouts import Diverged, LayoutDecisions, LayoutDivergenceError


class TracingLock:
    """The one lock every capture holds while it runs make_fx, functionalization or Dynamo's
    machinery (re-entrant: the ``torch.compile`` backend captures inside Dynamo's own call).

    Held by capture (``trace.capture``), by the backend's graph conversion and AOTAutograd's trace
    and by the jit; the first acquisition also imports Dynamo, whose import races when several
    threads start it. While it is held, torch's Python substitutes for ops with kernels of their
    own are out of the dispatcher (``eager_kernels.py``): every capture traces eager's kernels."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._ready = False
        self._depth = 0  # re-entrant holds by the holding thread
        self._taken: list[Any] = []

    def __enter__(self) -> "TracingLock":
        self._lock.acquire()
        if not self._ready:
            import torch._dynamo  # noqa: F401 - imported once, under the lock
            from torch._functorch._aot_autograd import collect_metadata_analysis  # noqa: F401

            self._ready = True
        self._depth += 1
        if self._depth == 1:
            try:
                self._taken = take_out()
            except BaseException:
                self._depth -= 1
                self._lock.release()
                raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self._depth -= 1
        try:
            if self._depth == 0:
                put_back(self._taken)
                self._taken = []
        finally:
            self._lock.release()


#: the process's tracing lock (see :class:`TracingLock`)
TRACING = TracingLock()


class EagerError(RuntimeError):
    """An error eager raises for this program (capture raises it as it is: a RuntimeError, as in
    eager, never wrapped in a CaptureError)."""


class SelfOverlapError(EagerError):
    """A write eager refuses because the written tensor overlaps itself or an operand in memory."""


@dataclass(frozen=True)
class AliasInfo:
    """How one output aliases in eager: ``kind`` "input" (input ``index`` or a view of it, with
    the view's geometry as torch SymInts/ints), "output" (the same tensor as output ``index``) or
    "shared" (a view of the intermediate that output ``index`` is a view of, at this geometry)."""

    kind: str
    index: int
    size: tuple[Any, ...] | None = None
    stride: tuple[Any, ...] | None = None
    storage_offset: Any = None
    #: "input": eager returns the input object itself (``return x``, ``x.add_(1)``), not a view of it
    itself: bool = True


@dataclass
class FunctionalGraph:
    """The functional aten graph and what the metadata pass learned."""

    gm: torch.fx.GraphModule
    mutated_inputs: list[int]  # flat input positions whose data the program writes
    output_aliases: list[AliasInfo | None]
    #: in-place view ops on inputs, in program order, replayed on the caller's tensors at the end
    restrides: list[tuple[int, str, tuple]] = field(default_factory=list)


def trace_functional(flat_fn: Callable, fakes: Sequence[Any], decompositions: dict) -> FunctionalGraph:
    """Trace ``flat_fn`` (flat inputs -> flat list of outputs) functionalized, in one run of the
    program. Call under :data:`TRACING` and the fake mode of ``fakes``. Raises
    :class:`SelfOverlapError` where eager would refuse a write, and ``MetadataMutationError`` for an
    in-place metadata change of an input (``x.t_()``), which a plan cannot reproduce on the caller's
    tensor."""
    check = EagerRewrites()
    found: list[tuple[list[_InputMutation], list[Any], list[Any]]] = []

    def run(*args: Any) -> list[Any]:
        # AOTAutograd's functionalized forward (``create_functionalized_fn``): functionalization
        # below autograd, inputs wrapped once; what its metadata pass learns is read off the same
        # wrappers after the run (``_input_mutations``, ``_input_aliases``) instead of a second run
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize)):
            f_args = [to_fun(a) if isinstance(a, torch.Tensor) else a for a in args]
            autocast = _get_autocast_states()
            check.track_inputs(f_args, [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and sum(
                b is a for b in args) > 1])
            with check, LayoutDecisions(check.diverged, lambda t: _storage_id(t) in check.written_any), \
                    UntracedEffects(check):
                try:
                    outs = flat_fn(*f_args)
                except LayoutDivergenceError as e:
                    raise OrderDependentWriteError(str(e)) from None
            if autocast != _get_autocast_states():
                raise RuntimeError("the program changes the autocast state (enters an autocast context it does "
                                   "not leave): a plan cannot change it for the caller")
        muts = _input_mutations(args, f_args, fakes, frozenset(i for i, *_ in check.restrides))
        found.append((muts, f_args, outs))
        for before, after, m in zip(args, f_args, muts):
            if m.writes_back:
                with torch.no_grad():
                    before.copy_(from_fun(after))
        return [from_fun(o) if isinstance(o, torch.Tensor) else o for o in outs]

    def eager_run() -> list[Any] | None:  # the program as eager runs it (:func:`_eager_outputs`)
        return _eager_outputs(flat_fn, fakes, sorted({i for i, *_ in check.restrides}))

    # preserve_node_meta: nodes a decomposition makes carry meta['original_aten'] (aten_map's reads_index);
    # a lazy GraphModule: capture reads the graph, never its Python code (generated on first use only)
    try:
        with enable_python_dispatcher(), FunctionalTensorMode(_allow_token_discovery=True), \
                fx_traceback.preserve_node_meta(), _use_lazy_graph_module(True):
            gm = make_fx(run, tracing_mode="real", decomposition_table=decompositions)(*fakes)
    except EagerError:
        if check.wrote:
            # an out= op that resized an input is refused as such: functionalization re-derives the
            # input's views from its new shape, which can make a later op look like one eager refuses
            # (circular pad into a transposed view: fuzz 20004 #53); eager's own run says which
            try:
                eager_run()
            except MetadataMutationError:
                raise
            except Exception:  # noqa: BLE001 - any other verdict: the functional pass's error stands
                pass
        raise
    except (OrderDependentWriteError, MetadataMutationError, OverlappingInputWriteError):
        raise
    except Exception:
        if check.wrote:  # eager's verdicts on its own geometry come first (see ``_eager_outputs``)
            eager_run()
        raise
    _refuse_strided_replays(gm.graph)
    muts, f_args, outs = found[-1]
    aliases = _input_aliases(f_args, outs)
    if check.wrote:
        # after a write, a functional view's strides are those of the new value, not eager's: the
        # geometry of returned views (and which outputs share memory) is read from a plain run of
        # the program on the fake inputs, which models eager's aliasing exactly
        eager_outs = eager_run()
        if eager_outs is not None and len(eager_outs) == len(outs):
            for k, (a, e) in enumerate(zip(aliases, eager_outs)):
                if a is not None and a.kind == "input" and isinstance(e, torch.Tensor):
                    # a reshape of a strided input is a copy in eager, a view of the written value here
                    aliases[k] = AliasInfo("input", a.index, tuple(e.size()), tuple(e.stride()), e.storage_offset(),
                                           e is fakes[a.index]) if _same_storage(e, fakes[a.index]) else None
            outs = eager_outs
    shared_outputs(outs, aliases)
    return FunctionalGraph(gm, [i for i, m in enumerate(muts) if m.mutates_data], aliases, list(check.restrides))


@dataclass(frozen=True)
class _InputMutation:
    """What the program did to one input (AOTAutograd's ``InputAliasInfo``, the fields capture
    uses): ``mutates_data`` as its metadata pass says it (a storage swap is not a data write);
    ``writes_back``: the functional wrapper holds a new value (the graph's ``copy_``)."""

    mutates_data: bool
    writes_back: bool


def _input_mutations(args: Sequence[Any], f_args: Sequence[Any], fakes: Sequence[Any],
                     restrided: frozenset[int] = frozenset()) -> list[_InputMutation]:
    """Each input's mutations, read from its functional wrapper after the run with AOTAutograd's
    own predicates (``collect_metadata_analysis``); refuses what a plan cannot do to the caller's
    tensor: a metadata change (``set_``, or ``x.t_()`` other than by a replayable in-place view op
    (``restrided``) of an input the program does not also write) and a write into an input that
    holds one element at several positions."""
    from torch._functorch._aot_autograd.functional_utils import has_metadata_mutation

    out = []
    for i, (arg, f_arg) in enumerate(zip(args, f_args)):
        if not isinstance(f_arg, torch.Tensor):
            out.append(_InputMutation(False, False))
            continue
        value = torch._from_functional_tensor(f_arg.elem)
        if i in restrided and has_data_mutation(f_arg):
            # asked before AOTAutograd's predicate, which compares the caller's geometry with the
            # written value's: index_add_ leaves a transposed input's value contiguous, and a t_()
            # after it gives the caller's strides back, a "no metadata change" (fuzz 9842 #1980)
            raise MetadataMutationError(_restrided_and_written(i))
        if has_metadata_mutation(f_arg, arg, check_only_storage_mutation=False):
            if i not in restrided or has_data_mutation(f_arg) or has_metadata_mutation(
                    f_arg, arg, check_only_storage_mutation=True):
                raise MetadataMutationError(_metadata_changed(i) if i not in restrided else _restrided_and_written(i))
            if _resized(f_arg.size(), value.size()):
                raise MetadataMutationError(_resized_input(i, f_arg.size(), value.size()))
            out.append(_InputMutation(False, False))
            continue
        if _resized(arg.size(), value.size(), guard=True):
            # functionalization resizes the value, not the wrapper (which has_metadata_mutation reads)
            raise MetadataMutationError(_resized_input(i, arg.size(), value.size()))
        writes = has_data_mutation(f_arg)
        out.append(_InputMutation(writes, writes))
    for i, m in enumerate(out):
        if m.mutates_data and _internal_overlap(fakes[i]):
            raise OverlappingInputWriteError(_overlapping_input_written(i))
    return out


def _metadata_changed(i: int) -> str:
    return (f"input #{i} has its metadata changed in place (t_, transpose_, unsqueeze_, squeeze_, resize_, "
            "as_strided_, set_ ...): a plan cannot change the caller's tensor's shape or strides; use the "
            "out-of-place form (x = x.t()) and return it")


def _restrided_and_written(i: int) -> str:
    return (f"input #{i} has its metadata changed in place (t_, unsqueeze_, ...) and is written too: a plan "
            "writes the caller's buffer at the geometry it was passed in and replays the metadata change after "
            "the call; use the out-of-place view (x = x.t()) instead of the in-place one")


#: the in-place view ops whose effect on an input a plan replays on the caller's tensor at the end
_REPLAYABLE = frozenset({"t_", "transpose_", "swapdims_", "swapaxes_", "unsqueeze_", "squeeze_"})


def _replayable(func: Any, args: tuple, kwargs: dict) -> tuple[str, tuple] | None:
    """``(method, arguments)`` of an in-place view op a plan can replay on the caller's tensor
    (``x.unsqueeze_(-2)``): one of :data:`_REPLAYABLE` with plain int arguments; None otherwise
    (``resize_``, ``as_strided_`` and ``set_`` change memory, a symbolic dim cannot be rendered)."""
    name = func._overloadpacket.__name__
    rest = pytree.tree_leaves(list(args[1:]))
    if name not in _REPLAYABLE or kwargs or not all(type(a) is int for a in rest):
        return None
    return name, tuple(tuple(a) if isinstance(a, (list, tuple)) else a for a in args[1:])


def _input_aliases(f_args: Sequence[Any], outs: Sequence[Any]) -> list[AliasInfo | None]:
    """Which outputs are inputs or views of one, as AOTAutograd's metadata pass classifies them
    (``OutputType.is_input`` / ``alias_of_input``, read from the functional wrappers' storages):
    an output of a custom autograd Function, or one of a group of differentiable multi-output
    views (``x.unbind(0)`` of an input that requires grad), is not an input alias there, and
    not here. Every input's metadata was checked unchanged first (``_input_mutations``)."""
    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing
    from torch.multiprocessing.reductions import StorageWeakRef

    inp_storage = {StorageWeakRef(a.untyped_storage()): i for i, a in enumerate(f_args) if isinstance(a, torch.Tensor)}
    per_storage: dict[Any, int] = {}  # outputs of each storage, and those of it that are multi-output views
    multi: dict[Any, int] = {}
    for o in outs:
        if isinstance(o, torch.Tensor):
            ref = StorageWeakRef(o.untyped_storage())
            per_storage[ref] = per_storage.get(ref, 0) + 1
            if isinstance(o, FunctionalTensor) and torch._functionalize_is_multi_output_view(o.elem):
                multi[ref] = multi.get(ref, 0) + 1

    def base_of(o: torch.Tensor) -> int | None:
        ref = StorageWeakRef(o.untyped_storage())
        base = inp_storage.get(ref)
        if base is None or (isinstance(o, FunctionalTensor) and torch._functionalize_was_storage_changed(o.elem)):
            return None
        with disable_proxy_modes_tracing(), FunctionalTensorMode():  # a lazy view rebase traces nothing
            grad_fn = o.grad_fn
        custom = type(grad_fn).__name__ == "CppFunction" or isinstance(grad_fn, torch.autograd.function.BackwardCFunction)
        return None if custom or (grad_fn is not None and per_storage[ref] == multi.get(ref, 0)) else base

    return alias_outputs(outs, f_args, base_of)


def alias_outputs(outs: Sequence[Any], inputs: Sequence[Any],
                  base_of: Callable[[torch.Tensor], int | None]) -> list[AliasInfo | None]:
    """Each output's :class:`AliasInfo`: the same object as an earlier output ("output"), an input
    or a view of one (``base_of``: the input's position, or None), or None. One reading for both
    tracers (``record.py`` asks the program's own tensors, ``_input_aliases`` the wrappers)."""
    aliases: list[AliasInfo | None] = []
    seen: dict[int, int] = {}
    for k, o in enumerate(outs):
        if not isinstance(o, torch.Tensor):
            aliases.append(None)
            continue
        if id(o) in seen:
            aliases.append(AliasInfo("output", seen[id(o)]))
            continue
        seen[id(o)] = k
        base = base_of(o)
        if base is not None and _lazy_bits(o) != _lazy_bits(inputs[base]):
            base = None  # a lazy conj()/neg view: its geometry alone would rebuild the unconjugated values
        aliases.append(None if base is None else AliasInfo(
            "input", base, tuple(o.size()), tuple(o.stride()), o.storage_offset(), o is inputs[base]))
    return aliases


def _lazy_bits(t: torch.Tensor) -> tuple[bool, bool]:
    """The conj and neg bits of a view: ``t.conj()`` of a complex tensor is its memory read
    conjugated, which a view rebuilt from the memory's geometry loses."""
    return (t.is_conj(), t.is_neg())


def _eager_outputs(flat_fn: Callable, fakes: Sequence[Any], restrided: Sequence[int] = ()) -> list[Any] | None:
    """``flat_fn`` run as eager runs it, on the fake inputs themselves (writes change no fake data;
    view-changing in-place ops on inputs were refused before): its outputs carry eager's sizes,
    strides, offsets and storage sharing. None where it raises (then the functional geometry
    stands). Raises :class:`MetadataMutationError` where the run resized an input: eager resizes an
    empty ``out=`` tensor to the result's shape, which AOTAutograd's metadata does not flag. The
    overlap checks (:class:`_OverlapCheck`) run here too: after a write, a functional view's
    strides are the new value's (``sin(a, out=a)`` then ``a[::2].add_(a)`` on a strided ``a``: eager
    sees two strides of one element and refuses), so the functional pass alone misses verdicts."""
    import contextlib

    from torch._guards import detect_fake_mode

    mode = detect_fake_mode([f for f in fakes if isinstance(f, torch.Tensor)])
    env = getattr(mode, "shape_env", None)
    n_guards = len(env.guards) if env is not None else 0
    sizes = [f.size() if isinstance(f, torch.Tensor) else None for f in fakes]
    geometry = {i: (fakes[i].size(), fakes[i].stride(), fakes[i].storage_offset()) for i in restrided}
    outs: list[Any] | None = None
    try:  # a look only: whatever this run decides about symbols is not a guard of the plan
        with enable_python_dispatcher(), warnings.catch_warnings(), (
                env.suppress_guards() if env is not None else contextlib.nullcontext()), _OverlapCheck():
            warnings.simplefilter("ignore")
            outs = list(flat_fn(*fakes))
    except (EagerError, OrderDependentWriteError, MetadataMutationError):
        raise  # eager's memory-overlap verdicts on eager's own geometry (see the docstring), a resized view
    except Exception:  # noqa: BLE001 - e.g. a leaf that requires grad written in place
        outs = None
    finally:
        if env is not None:
            del env.guards[n_guards:]
        for i, (size, stride, offset) in geometry.items():  # the run replayed ``x.t_()`` on the fake itself
            if outs is not None:
                outs = [o.as_strided(o.size(), o.stride(), o.storage_offset()) if o is fakes[i] else o for o in outs]
            with torch.no_grad():
                fakes[i].as_strided_(size, stride, offset)
    for i, (before, f) in enumerate(zip(sizes, fakes)):
        if before is not None and _resized(before, f.size()):
            raise MetadataMutationError(_resized_input(i, before, f.size()))
    return outs


def _resized_input(i: int, before: Sequence[Any], after: Sequence[Any]) -> str:
    return (f"input #{i} has its metadata changed in place: an out= op resizes it ({tuple(before)} -> "
            f"{tuple(after)}), as eager resizes an out= tensor of another shape: a plan cannot change the "
            "caller's tensor's shape; pass an out= tensor of the result's shape, or use the out-of-place form "
            "and return it")


def shared_outputs(outs: Sequence[Any], aliases: list[AliasInfo | None]) -> None:
    """Outputs that are views of one intermediate of the program (``t, t.t()``; ``t[0], t[1]``
    of an unreturned ``t``) share memory in eager: each gets ``AliasInfo("shared", first member,
    geometry)`` so the plan returns them as views of one buffer. Read from the functional
    tensors' storage (AOTAutograd's metadata calls an alias of an intermediate ``non_alias`` when
    nothing requires grad). Members of several dtypes (``y, torch.view_as_real(y)``) are grouped
    where none holds an element twice and their strides are concrete (otherwise they stay fresh
    tensors); symbolic
    geometry is recorded too (``Plan.unserved_views``: jit specialises, the backend runs eagerly).
    A member whose windows overlap (``t.unfold(0, 2, 1)`` beside ``t``) is recorded as well: the
    plan serves it where another member covers its memory (``plan._shared_buffer``)."""
    groups: dict[tuple, list[int]] = {}
    for k, o in enumerate(outs):
        if isinstance(o, torch.Tensor) and aliases[k] is None:
            # a lazy conj()/neg view reads the memory otherwise: not a member of its base's group
            groups.setdefault((_storage_id(o), _lazy_bits(o)), []).append(k)
    for members in groups.values():
        if len(members) < 2 or (len({outs[k].dtype for k in members}) > 1 and not _bytewise(outs, members)):
            continue
        for k in members:  # symbolic geometry is kept as it is: a plan that cannot rebuild it says so
            o = outs[k]
            size, stride, off = _concrete(o.size()), _concrete(o.stride()), _concrete([o.storage_offset()])
            aliases[k] = AliasInfo("shared", members[0], tuple(o.size() if size is None else size),
                                   tuple(o.stride() if stride is None else stride),
                                   o.storage_offset() if off is None else off[0])


def _bytewise(outs: Sequence[Any], members: list[int]) -> bool:
    """Members of several dtypes the plan can lay out in bytes (``plan._shared_buffer_in_bytes``):
    none holding an element twice (each is written once), and each one's offset from the lowest
    byte any of them addresses a multiple of its own element size. Symbolic geometry is grouped
    as it is (the plan cannot rebuild it and says so: jit specialises, the backend runs eagerly)."""
    if any(_holds_an_element_twice(outs[k]) for k in members):
        return False
    geo = [(_concrete(outs[k].size()), _concrete(outs[k].stride()), _concrete([outs[k].storage_offset()]))
           for k in members]
    if any(g is None for gs in geo for g in gs):
        return True
    los = []
    for (size, stride, (off,)), k in zip(geo, members):
        if all(n > 0 for n in size):
            los.append((off + sum((n - 1) * st for n, st in zip(size, stride) if st < 0)) * outs[k].element_size())
    low = min(los, default=0)
    return all((off * outs[k].element_size() - low) % outs[k].element_size() == 0
               for (_, _, (off,)), k in zip(geo, members))


class MetadataMutationError(RuntimeError):
    """An input's shape/strides are changed in place (refused: see ``trace_functional``)."""


class OverlappingInputWriteError(RuntimeError):
    """An input that overlaps itself (stride 0) is written (refused: see ``trace_functional``)."""


# ---------------------------------------------------------------- eager's overlap checks


class _OverlapCheck(TorchDispatchMode):
    """Above functionalization, sees the program's own ops: for each write (a schema argument
    marked written: in-place, ``out=``, ``copy_``) it applies eager's memory-overlap checks
    (ATen's MemoryOverlap.cpp): a written tensor may not hold one element twice (a stride-0
    dim of extent > 1), and may not *partially* overlap a tensor it reads (same storage, ranges
    that intersect but are not identical with identical strides). Every op also gets eager's
    dtype and Scalar-argument checks (``eager_checks.probe_kernel``), used or not, and eager's
    paths that decompositions lack (``eager_checks.CHECKS``)."""

    wrote = False  # the program wrote some tensor in place (or through out=)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func is torch.ops.aten.copy_.default and _same_memory(*args[:2]):
            return args[0]  # eager's copy_ returns early: no write (EagerRewrites says the same)
        return self._checked(func, args, kwargs or {})

    def _checked(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """``func(*args, **kwargs)`` (on the modes below this one) after eager's checks."""
        probe_kernel(func, args, kwargs)
        writes = _writes(func)
        if writes:
            schema = func._schema
            self.wrote = True
            _check_inplace_broadcast(func, args)
            written, read = [], []
            for i, a in enumerate(schema.arguments):
                v = args[i] if i < len(args) else kwargs.get(a.name)
                ts = [t for t in pytree.tree_leaves(v) if isinstance(t, torch.Tensor)]
                (written if a.alias_info is not None and a.alias_info.is_write else read).extend(ts)
            pairs = [(written, read)]  # what each write reads: a foreach op's position by position
            if func._overloadpacket.__name__.startswith("_foreach_"):
                pairs = _check_foreach_order(func, args, kwargs)
            verdict = _probe_overlap(func, args, kwargs, written, read)
            if verdict:
                cls = SelfOverlapError if _OVERLAP_MESSAGE in verdict else EagerError
                raise cls(f"{func}: {verdict}")
            for w_at, r_at in pairs:
                self._check_pair(func, verdict, w_at, r_at)
        # a view, or a tensor an in-place view op changed (``t.unsqueeze_(1)``: functionalization holds
        # it as a view of its former self, and an out= resize of it came out at the old view's shape:
        # jit fuzz 10094 #1486)
        views = [(w, w.size()) for w in written if w._base is not None or id(w) in self.restrided] if writes else []
        # an in-place view op (``a.unsqueeze_(-1)``) has changed ``a`` once it returns: eager's
        # geometry it replays on is the one from before
        inplace_view = _is_inplace_view(func) and args and isinstance(args[0], torch.Tensor)
        before_op = self._eager_geometry(args[0]) if inplace_view else None
        out = with_eager_check(func)(*args, **kwargs)
        if inplace_view:
            self.restrided[id(args[0])] = args[0]  # held: its id stays its own
        for w, before in views:
            if _resized(before, w.size()):
                raise MetadataMutationError(
                    f"a view (or a tensor an in-place view op changed) has its metadata changed in place: {func} "
                    f"resizes its out= tensor ({tuple(before)} -> {tuple(w.size())}), as eager resizes an out= tensor "
                    "of another shape (a functional plan keeps the view's shape): pass an out= tensor of the "
                    "result's shape")
        if _views(func) and args and isinstance(args[0], torch.Tensor):  # t.squeeze_() changes t's own geometry
            self._record_views(func, args, kwargs, out, before_op)
        return out

    @staticmethod
    def _check_pair(func: Any, verdict: str | None, written: list[torch.Tensor], read: list[torch.Tensor]) -> None:
        """Eager's overlap verdicts on what a write writes against what it reads (``verdict``: eager's
        own, from the probe; None where it could not say)."""
        if verdict == "" and not _elementwise(func) and any(
                _same_storage(w, r) and _numel([int(n) for n in r.size()]) > 1 for w in written for r in read):
            raise OrderDependentWriteError(
                f"{func} reads a tensor that shares memory with the tensor it writes, in an order of its own "
                "(eager's result then depends on its loop order, which a functional plan cannot reproduce): "
                "clone() the operand before the in-place op")
        if not verdict and any(_holds_an_element_twice(w) for w in written):
            raise OrderDependentWriteError(
                f"{func} writes a tensor that holds one memory element at several positions (an expanded or "
                "overlapping view): which write lands last depends on eager's loop order, and a functional "
                "plan writes whole values: clone() the tensor before the in-place op")
        for w in written:
            if verdict is None and _internal_overlap(w):
                raise SelfOverlapError(
                    f"{func}: unsupported operation: more than one element of the written-to tensor refers to "
                    "a single memory location. Please clone() the tensor before performing the operation.")
            for r in read:
                if verdict is None and r is not w and _partial_overlap(w, r):
                    raise SelfOverlapError(
                        f"{func}: unsupported operation: some elements of the input tensor and the written-to "
                        "tensor refer to a single memory location. Please clone() the tensor before performing "
                        "the operation.")
                if r is not w and _order_dependent(w, r):
                    raise OrderDependentWriteError(
                        f"{func} reads a tensor that overlaps the tensor it writes element by element in another "
                        "layout (eager's result then depends on its loop order, which a functional plan cannot "
                        "reproduce): clone() the operand before the in-place op")

    # Functionalization rebuilds a view of a written tensor from its new value, with that value's
    # geometry (``b.view(s)`` after ``b.index_copy_`` reports offset 0 where eager's has b's 1):
    # the overlap checks read eager's geometry of each view from this table instead, replayed on
    # meta tensors from the geometry of the tensor it views.
    def __enter__(self) -> "_OverlapCheck":
        self.views: dict[int, tuple[Any, tuple[list[int], list[int], int]]] = {}
        self.restrided: dict[int, torch.Tensor] = {}  # tensors an in-place view op changed, by id
        # eager's geometry of a view op's results by (op, dtype, operand geometry, arguments): the
        # same view of the same geometry recurs in every block of a model, and a replay on meta
        # tensors costs more than the fake op it checks
        self.replays: dict[tuple, list] = {}
        _EAGER_VIEWS.table = self.views
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        _EAGER_VIEWS.table = None
        super().__exit__(*exc)

    @staticmethod
    def _eager_geometry(x: torch.Tensor) -> tuple[list[int], list[int], int] | None:
        try:
            return _geometry(x, specialize=False)
        except (TypeError, ValueError):
            return None  # symbolic: functionalization's geometry is all there is

    def _record_views(self, func: Any, args: tuple, kwargs: dict, out: Any,
                      geometry: tuple[list[int], list[int], int] | None = None) -> None:
        leaves = op_leaves((args[1:], kwargs))
        if any(isinstance(x, torch.Tensor) for x in leaves):
            return
        x = args[0]
        geometry = geometry if _is_inplace_view(func) else self._eager_geometry(x)
        if geometry is None or any(isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)) for x in leaves):
            if func is torch.ops.aten.view.default:
                _refused_at_hints(x, args[1:], kwargs)
            return
        sz, st, off = geometry
        try:
            key = (func, x.dtype, tuple(sz), tuple(st), off, _frozen(args[1:]), _frozen(kwargs))
            hash(key)
        except TypeError:
            key = None
        found = self.replays.get(key) if key is not None else None
        if found is None:
            found = _replay_view(func, x.dtype, sz, st, off, args[1:], kwargs)
            if found is None:
                return
            if key is not None:
                self.replays[key] = found
        outs = out if isinstance(out, (list, tuple)) else [out]
        for o, r in zip(outs, found):
            if isinstance(o, torch.Tensor) and r is not None:
                self.views[id(o)] = (o, (list(r[0]), list(r[1]), r[2]))


def _refused_at_hints(x: torch.Tensor, rest: tuple, kwargs: dict) -> None:
    """Eager's ``view`` refusal of a symbolic capture's view at the example sizes: the fake kernel
    decides views symbolically and takes some eager's C++ kernel refuses (a size-1 dim between two
    others), so the call being captured raises eager's error (a geometry the table has no row
    for is the fake one, at its hints)."""
    from .compat import hint

    def at_hint(a: Any) -> Any:
        return hint(a) if isinstance(a, torch.SymInt) else a

    try:
        sz, st = [hint(n) for n in x.size()], [hint(t) for t in x.stride()]
        off = hint(x.storage_offset())
        rest, kwargs = pytree.tree_map(at_hint, (rest, kwargs))
    except Exception:  # noqa: BLE001 - no hint (an unbacked size): nothing to replay at
        return
    _replay_view(torch.ops.aten.view.default, x.dtype, sz, st, off, rest, kwargs)


def _frozen(a: Any) -> Any:
    """``a`` with its lists (shapes, dims) as tuples, for a key; dicts as sorted item tuples; each
    number with its type (``1`` and ``True`` are equal keys otherwise)."""
    if isinstance(a, (list, tuple)):
        return tuple(_frozen(x) for x in a)
    if isinstance(a, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in a.items()))
    return (type(a), a)


def _replay_view(func: Any, dtype: torch.dtype, sz: list[int], st: list[int], off: int, rest: tuple,
                 kwargs: dict) -> list | None:
    """``func`` on a meta tensor of the geometry ``(sz, st, off)`` by eager's C++ view kernels:
    each result's (sizes, strides, offset), None per non-tensor result; None where meta cannot
    replay it (functionalization's geometry is then all there is)."""
    from torch.utils._python_dispatch import _disable_current_modes

    need = off + (sum((n - 1) * t for n, t in zip(sz, st)) + 1 if all(sz) else 0)
    try:
        with _disable_current_modes(), torch._C._DisablePythonDispatcher():
            buf = torch.empty(max(need, 1), dtype=dtype, device="meta").untyped_storage()
            m = torch.empty(0, dtype=dtype, device="meta").set_(buf, off, sz, st)
            res = func(m, *rest, **kwargs)
    except RuntimeError as e:
        if func is torch.ops.aten.view.default:
            # eager's view refuses these strides where the fake kernel's took them (a size-1 dim between
            # two others: (2, 1, 2) with strides (1, 4, 2) has no flat view; optimize fuzz 9844 #509)
            raise EagerError(str(e).splitlines()[0]) from None
        return None
    except Exception:  # noqa: BLE001 - a view meta cannot replay
        return None
    metas = res if isinstance(res, (list, tuple)) else [res]
    return [([int(n) for n in r.size()], [int(t) for t in r.stride()], int(r.storage_offset()))
            if isinstance(r, torch.Tensor) else None for r in metas]


#: the view geometry table of the active :class:`_OverlapCheck` (None outside capture's first pass)
_EAGER_VIEWS = threading.local()




#: eager's memory-overlap refusals (ATen's MemoryOverlap.cpp), as its messages word them
_OVERLAP_MESSAGE = "single memory location"
#: eager's refusal to resize an output that is also an operand (``torch.mul(t, u, out=t)``)
_IN_PLACE_SHAPE_MESSAGE = "doesn't match the broadcast shape"
#: the most bytes an overlap probe allocates (beyond it, the geometric checks below decide)
_PROBE_BYTES = 1 << 24


def _probe_overlap(func: Any, args: tuple, kwargs: dict, written: list[torch.Tensor],
                   read: list[torch.Tensor]) -> str | None:
    """Eager's own verdict on a write whose tensors share memory: the real kernel runs once on
    zero-filled real tensors with the same memory layout (each group of tensors sharing a storage
    becomes views of one real buffer, with the same sizes, strides and offsets). Which ops refuse
    which overlap is the kernel's business (``fill_`` and ``masked_fill_`` accept an expanded
    target, ``add_`` does not; ``scatter_`` and ``index_copy_`` refuse a source that *is* the
    target, ``mul_`` accepts it; ``copy_`` of a tensor onto its own memory is a no-op), so it is
    asked, not modelled; so is its refusal to resize an ``out=`` tensor that is also an operand.
    Returns eager's message when it refuses, "" when it accepts, None when
    no memory is shared or the probe cannot say (random ops, symbolic scalars, too large, another
    error): then the geometric checks decide."""
    from torch.utils._python_dispatch import _disable_current_modes

    shared = any(_internal_overlap(w) for w in written) or any(
        _same_storage(w, r) for w in written for r in read)
    if not shared or torch.Tag.nondeterministic_seeded in func.tags:
        return None
    leaves, spec = pytree.tree_flatten((args, kwargs))
    if any(isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)) for x in leaves):
        return None
    groups: dict[int, list[tuple[int, torch.Tensor]]] = {}
    first: dict[int, int] = {}  # one real tensor per tensor object (``out=t`` with ``t`` an operand)
    for i, x in enumerate(leaves):
        if isinstance(x, torch.Tensor) and first.setdefault(id(x), i) == i:
            groups.setdefault(_storage_id(x), []).append((i, x))
    real = list(leaves)
    total = 0
    try:
        for members in groups.values():
            geo = [_geometry(t) for _, t in members]
            nbytes = max(((o + sum((n - 1) * st for n, st in zip(sz, sd)) + 1) if _numel(sz) else 0)
                         * t.element_size() for (_, t), (sz, sd, o) in zip(members, geo))
            total += nbytes
            if total > _PROBE_BYTES:
                return None
            with _disable_current_modes():
                buf = torch.zeros(max(nbytes, 1), dtype=torch.uint8).untyped_storage()
                for (i, t), (sz, sd, o) in zip(members, geo):
                    real[i] = torch.empty(0, dtype=t.dtype).set_(buf, o, sz, sd)
    except Exception:  # noqa: BLE001 - a geometry that is not concrete, a tensor without storage
        return None
    for i, x in enumerate(leaves):
        if isinstance(x, torch.Tensor):
            real[i] = real[first[id(x)]]
    with _disable_current_modes(), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p_args, p_kwargs = pytree.tree_unflatten(real, spec)
        try:
            func(*p_args, **p_kwargs)
        except Exception as e:  # noqa: BLE001 - only eager's overlap refusal is a verdict
            msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
            return msg if _OVERLAP_MESSAGE in msg or _IN_PLACE_SHAPE_MESSAGE in msg else None
    return ""


#: writes that read each operand element at the position they write it (as pointwise ops do)
_ELEMENTWISE_WRITES = {"copy_", "masked_fill_", "masked_fill", "fill_", "zero_", "where"}


def _check_foreach_order(func: Any, args: tuple, kwargs: dict) -> list[tuple[list, list]]:
    """Eager applies a foreach op tensor by tensor on the CPU (position ``j`` reads what position
    ``i < j`` wrote) and all at once on CUDA; a plan computes every value from the old ones. They
    agree unless tensor ``i`` of the written list shares an element with a tensor of a later
    position (of any list argument) or with a tensor every position reads: that is refused. Returns
    each position's (written, read) tensors, for eager's per-tensor overlap checks."""
    bound = _bound_arguments(func, args, kwargs)
    at = next((k for k, (a, v) in enumerate(bound) if a.alias_info is not None and a.alias_info.is_write
               and isinstance(v, (list, tuple))), None)  # ``self``, or an ``out=`` list
    targets = bound[at][1] if at is not None else []
    n = len(targets)
    by_storage: dict[int, list[tuple[int, torch.Tensor]]] = {}  # position -1: read by every position
    reads: list[list[torch.Tensor]] = [[] for _ in range(n)]
    common: list[torch.Tensor] = []
    for a, v in (b for k, b in enumerate(bound) if k != at):
        items = list(enumerate(v)) if isinstance(v, (list, tuple)) else [(-1, v)]
        for j, t in items:
            if isinstance(t, torch.Tensor):
                by_storage.setdefault(_storage_id(t), []).append((j, t))
                (common if j < 0 else reads[j] if j < n else common).append(t)
    for i, w in enumerate(targets):
        if isinstance(w, torch.Tensor):
            by_storage.setdefault(_storage_id(w), []).append((i, w))
    for i, w in enumerate(targets):
        if not isinstance(w, torch.Tensor):
            continue
        for j, t in by_storage.get(_storage_id(w), ()):
            later = j > i or (j < 0 and i < n - 1)
            if later and (t is w or _share_elements(w, t)):
                where = "a tensor every position reads" if j < 0 else f"the tensor at position {j} of a list argument"
                raise OrderDependentWriteError(
                    f"{func} writes tensor {i} of its list, which shares memory with {where}: eager applies the op "
                    "tensor by tensor on the CPU (a later position reads what an earlier one wrote) and all at once "
                    "on CUDA, and a plan computes every value from the old ones: clone() the shared tensors first")
    return [([w], reads[i] + common) for i, w in enumerate(targets) if isinstance(w, torch.Tensor)]


def _share_elements(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``a`` and ``b`` (of one storage) hold some memory element in common (a symbolic or very
    large geometry counts as shared)."""
    import numpy as np

    try:
        (sa, ta, oa), (sb, tb, ob) = _geometry(a, specialize=False), _geometry(b, specialize=False)
    except TypeError:
        return True
    na, nb = _numel(sa), _numel(sb)
    if na == 0 or nb == 0:
        return False
    ia, ib = a.element_size(), b.element_size()
    span_a = (oa * ia, (oa + sum((n - 1) * abs(st) for n, st in zip(sa, ta)) + 1) * ia)
    span_b = (ob * ib, (ob + sum((n - 1) * abs(st) for n, st in zip(sb, tb)) + 1) * ib)
    if span_a[1] <= span_b[0] or span_b[1] <= span_a[0]:
        return False
    if (_dense(sa, ta) and _dense(sb, tb)) or ia != ib or na > 1 << 20 or nb > 1 << 20:
        return True  # dense: each covers its span (other dtypes' or huge views are taken as sharing)

    def offsets(size: list[int], stride: list[int], off: int) -> Any:
        grid = np.array([off], dtype=np.int64)
        for n, st in zip(size, stride):
            grid = (grid[:, None] + np.arange(n, dtype=np.int64)[None, :] * st).reshape(-1)
        return grid

    return bool(np.intersect1d(offsets(sa, ta, oa), offsets(sb, tb, ob)).size)


def _elementwise(func: Any) -> bool:
    """Pointwise as torch tags it: the op, or its functional form (``ne_``, ``ne.out``: ``ne``; a
    foreach op's per-tensor op)."""
    name = func._overloadpacket.__name__.removeprefix("_foreach_")  # a foreach op: its op per tensor
    if torch.Tag.pointwise in func.tags or name in _ELEMENTWISE_WRITES:
        return True
    packet = getattr(torch.ops.aten, name.removesuffix("_"), None)
    return packet is not None and any(
        torch.Tag.pointwise in getattr(packet, o).tags for o in packet.overloads())


def _concrete(xs: Sequence[Any]) -> list[int] | None:
    """The ints of ``xs``, or None where one is symbolic (no guard is added)."""
    out = []
    for x in xs:
        v = x if isinstance(x, int) else x.node.maybe_as_int()
        if v is None:
            return None
        out.append(v)
    return out


def _storage_id(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage()._cdata
    except Exception:  # noqa: BLE001 - a tensor without storage is alone
        return -id(t)


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return _storage_id(a) == _storage_id(b)


def _check_inplace_broadcast(func: Any, args: tuple) -> None:
    """An in-place pointwise op cannot grow its target: eager raises when the operands broadcast
    to another shape than ``self``'s (``t.atan2_(u)`` with ``t`` [2], ``u`` [1, 2]). Fake kernels
    of some ops skip the check, and the probe's tiny tensors lose the shapes. Symbolic extents
    are compared as torch's broadcasting compares them (each test a guard of the trace)."""
    if not is_inplace_variant(func) or not _elementwise(func) or not args:
        return
    shapes = [list(a.size()) for a in args if isinstance(a, torch.Tensor)]
    if len(shapes) < 2:
        return
    target = shapes[0]
    rank = max(len(sh) for sh in shapes)
    grows = rank > len(target)
    for sh in shapes[1:]:
        for t, o in zip(reversed(target), reversed(sh)):
            if o == t or o == 1:
                continue
            if t != 1:
                return  # not broadcastable: the op itself raises eager's error
            grows = True
    if grows:
        full = [str(d) for d in torch.broadcast_shapes(*[tuple(_concrete(sh) or sh) for sh in shapes])]
        raise EagerError(f"output with shape [{', '.join(str(d) for d in target)}] doesn't match the broadcast "
                         f"shape [{', '.join(full)}]")


#: fills whose Scalar eager converts to the tensor's dtype in its kernel; torch's reference (the fake
#: tensors' meta) refuses a complex one for a real tensor (``masked_fill(bool_t, 1j)``)
_FILLS = frozenset({torch.ops.aten.masked_fill.Scalar, torch.ops.aten.masked_fill_.Scalar,
                    torch.ops.aten.fill.Scalar, torch.ops.aten.fill_.Scalar})


def _converted_fill(dtype: torch.dtype, value: complex) -> Any:
    """``value`` as eager's fill kernel stores it in ``dtype`` (or eager's refusal)."""
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():
        return torch.zeros(1, dtype=dtype).fill_(value).item()


def _overlapping_input_written(i: int) -> str:
    return (f"the example inputs cannot have a plan: input #{i} holds one element at several positions (an "
            "expanded tensor) and is written in place; eager writes it element by element, a plan writes "
            "values: pass a tensor that does not overlap itself (clone() it)")


def _refuse_strided_replays(graph: torch.fx.Graph) -> None:
    """Refuse an ``as_strided`` view of an input read after a write to that input
    (``t = d.as_strided((2,), (1,)); d.copy_(c); return t``). Functionalization regenerates the
    view by replaying ``as_strided`` on the written value, with eager's strides and offset; the
    plan holds that value in a layout of its own (an expanded view of ``c`` here), so the replay
    addresses other elements or reaches past its storage, after the plan wrote the inputs. The
    program's own ``as_strided`` calls on computed tensors were refused while tracing
    (:class:`EagerRewrites`), so every one on a computed value in the graph is such a replay;
    a replay nothing reads (through views) is dead and harmless."""
    aten = torch.ops.aten

    def on_input(n: Any) -> bool:  # a placeholder, or a chain of views of one
        while isinstance(n, torch.fx.Node) and n.op == "call_function" and n.args and (
                n.target is operator.getitem or getattr(n.target, "is_view", False)):
            n = n.args[0]
        return isinstance(n, torch.fx.Node) and n.op == "placeholder"

    def read(n: torch.fx.Node) -> bool:  # some user other than a view nothing reads
        return any(u.op != "call_function" or not (u.target is operator.getitem or getattr(u.target, "is_view", False))
                   or read(u) for u in n.users)

    for n in graph.nodes:
        if n.op == "call_function" and n.target is aten.as_strided.default and not on_input(n.args[0]) and read(n):
            raise OrderDependentWriteError(
                "as_strided view read after a write to the input it views: functionalization rebuilds the view "
                "with as_strided on the written value, which the plan holds in a layout of its own (contiguous, or "
                "an expanded view of what was copied in), so it would address other elements than eager: read "
                "the view before the write, clone() it, or use view/slicing ops")


def _bound_arguments(func: Any, args: tuple, kwargs: dict) -> list[tuple[Any, Any]]:
    """``func``'s schema arguments with the values this call gives them (positional, then keyword)."""
    schema = func._schema.arguments
    return [*zip(schema, args), *((a, kwargs[a.name]) for a in schema[len(args):] if a.name in kwargs)]


class EagerRewrites(_OverlapCheck):
    """Ops whose functionalized form would mean something else than eager's, traced as what eager
    does (sits above functionalization in both passes):

    - ``x.unfold(d, size, step)`` with ``size <= step`` is the slice/view/permute it is
      (``narrow(d, 0, n * step).unflatten(d, (n, step)).narrow(d + 1, 0, size).movedim(d + 1, -1)``,
      the same sizes, strides and offset). Functionalization's own inverse of ``unfold`` is
      ``unfold_backward``, which zeroes every element no window covers: a write through
      ``t.unfold(0, 2, 3)`` would zero the gaps. Slices and views have exact scatter inverses.
    - ``as_strided`` of a tensor that is not (a view of) an input, or reaching elements outside the
      tensor it views, is refused: both depend on memory layout, which a plan does not carry; so is
      one of an input written earlier (functionalization views the written value, which the plan
      holds in a layout of its own: contiguous, or an expanded view of what was copied in).
    - ``dst.copy_(src)`` where ``src`` is ``dst``'s own memory at the same geometry and dtype is
      nothing (eager's ``copy_`` returns early), even where ``dst`` holds an element twice.
    - an op whose meta kernel promotes to another dtype than eager's kernel (``pow(bool, False)``
      is bool in eager, int64 on meta) is cast to eager's dtype (``eager_checks.probe_kernel``).

    One dispatch layer with :class:`_OverlapCheck` (a Python mode costs every op of a capture its
    own dispatch): what an op becomes here, the op itself or the ops of its rewrite, is checked
    as if the overlap checks sat below (``_checked``; ops a rewrite calls go through
    :class:`_CheckedCalls`)."""

    def __init__(self, inputs: Sequence[Any] = ()) -> None:
        super().__init__()
        self.gapped: dict[int, torch.Tensor] = {}  # unfolds left as they are (kept alive: ids stay unique)
        # the program's tensors by storage (a write looks its target up here: a scan of every input per
        # write made capture quadratic in the inputs of an optimizer step), with their argument positions;
        # an input whose storage changes (``set_``) is refused as a metadata change after the run
        self.inputs: dict[int, list[tuple[int, torch.Tensor]]] = {}
        self.repeated: set[int] = set()
        self.track_inputs(inputs)
        self.written: set[int] = set()  # the storages in ``inputs`` that the program wrote
        # every storage the program wrote (inputs and its own tensors), kept alive: a freed storage's
        # address (its id here) is reused, and a fresh tensor there would read as written
        self.written_any: dict[int, Any] = {}
        self.writes = 0  # writes seen so far; ``last_write``: storage id -> the number of its latest
        self.last_write: dict[int, int] = {}
        self.diverged = Diverged()  # views of written tensors whose layout is not eager's (layouts.py)
        #: in-place view ops on inputs, in program order: (input position, method, arguments)
        self.restrides: list[tuple[int, str, tuple]] = []
        self.spread: dict[int, torch.Tensor] = {}  # views of views holding an element twice (kept alive)

    def track_inputs(self, inputs: Sequence[Any], repeated: Sequence[int] = ()) -> None:
        """The program's inputs (functional wrappers), looked up by storage; ``repeated``: the
        positions of a tensor the caller passed at several positions (one object in eager, one
        wrapper each here)."""
        self.repeated = set(repeated)
        for i, x in enumerate(inputs):
            if isinstance(x, torch.Tensor):
                self.inputs.setdefault(_storage_id(x), []).append((i, x))

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        dev = fake_device(func, args)
        if dev is not None:
            return dev
        if functional_variant(func) is None or func._overloadpacket.__name__.startswith("_foreach_"):
            return self._dispatch(func, args, kwargs or {})
        # the node functionalization makes for this in-place op's value says so (inplace.INPLACE_OF):
        # capture runs an opaque one as the in-place kernel eager ran (aten_map's ``opaque``)
        with fx_traceback.annotate({INPLACE_OF: func}):
            return self._dispatch(func, args, kwargs or {})

    def _dispatch(self, func: Any, args: tuple, kwargs: dict) -> Any:
        if torch.Tag.nondeterministic_seeded in func.tags:
            random_op_traced()  # it would draw from the state the program set, if it set one
        if _is_inplace_view(func) and args and isinstance(args[0], torch.Tensor):
            # an input's own metadata: replayed on the caller's tensor when the plan returns (what
            # AOTAutograd's runtime does with an input's metadata mutation); refused here, not after
            # the run, where the caller passed the tensor at several positions (one object in eager:
            # later ops on the others would be traced on the old shape) or the op is not replayable
            at = [i for i, x in self.inputs.get(_storage_id(args[0]), ()) if x is args[0]]
            if at:
                step = _replayable(func, args, kwargs)
                if step is None or len(at) > 1 or at[0] in self.repeated:
                    raise MetadataMutationError(_metadata_changed(at[0]))
                self.restrides.append((at[0], *step))
        if func._overloadpacket.__name__.startswith("_foreach_"):
            out = self._per_tensor(func, args, kwargs)
            if out is not NotImplemented:
                return out
        if func in _FILLS and type(args[-1]) is complex and not args[0].is_complex():
            args = (*args[:-1], _converted_fill(args[0].dtype, args[-1]))  # as eager's kernel converts it
        if func is torch.ops.aten.unfold.default and not kwargs:
            with _CheckedCalls(self):
                views = _unfold_views(*args)
            if views is not None:
                return views
            out = self._checked(func, args, kwargs)
            self.gapped[id(out)] = out
            return out
        if func is torch.ops.aten.as_strided.default:
            out = self._checked(func, args, kwargs)  # eager's own refusal (a view past the storage) comes first
            base = _storage_id(args[0])
            if base not in self.inputs:
                raise OrderDependentWriteError(
                    "as_strided of a computed tensor: its meaning is the memory layout eager gave that tensor, "
                    "which a plan does not reproduce (values, not layouts, flow through it): call as_strided on "
                    "an input, or use view/slicing ops")
            if _reaches_outside(*args[:4]):
                raise OrderDependentWriteError(
                    "as_strided reaches memory outside the tensor it views (storage elements the tensor does not "
                    "hold): a plan sees each tensor's own elements only, so it could not read or write the others "
                    "as eager does: call as_strided on the base tensor instead")
            if base in self.written:
                raise OrderDependentWriteError(
                    "as_strided of an input written earlier in the program: functionalization views the written "
                    "value, which the plan holds in a layout of its own (contiguous, or an expanded view of what "
                    "was copied in), so as_strided would address other elements than eager: call as_strided "
                    "before the write, or use view/slicing ops")
            return out
        if func is torch.ops.aten.copy_.default and _same_memory(*args[:2]):
            return args[0]
        if func is torch.ops.aten.expand.default and not kwargs:
            lifted = _expand_that_broadcasts_nothing(*args)
            if lifted is not None:
                with _CheckedCalls(self):
                    return lifted
        if _writes(func):
            nothing = _empty_write(func, args, kwargs)
            if nothing is not None:
                return nothing
            # every written argument, positional or keyword (out=): a write through ``out=t0`` of a gapped
            # unfold is one through the unfold (jit fuzz 9991 #4652)
            for a, v in ((a, v) for a, vs in _bound_arguments(func, args, kwargs)  # a written list: each tensor
                         for v in (vs if isinstance(vs, (list, tuple)) else (vs,))):
                if a.alias_info is not None and a.alias_info.is_write and isinstance(v, torch.Tensor):
                    sid = _storage_id(v)
                    self.written_any[sid] = v.untyped_storage() if sid >= 0 else v
                    self.writes += 1
                    self.last_write[sid] = self.writes
                    if sid in self.inputs:
                        self.written.add(sid)
                        for i, _ in self.inputs[sid]:  # a write after the input's own in-place view op
                            if any(i == p for p, *_ in self.restrides):
                                raise MetadataMutationError(_restrided_and_written(i))
                    for i, x in self.inputs.get(sid, ()):  # before torch's view replay of the written expanded input can fail
                        if _internal_overlap(x):
                            raise OverlappingInputWriteError(_overlapping_input_written(i))
                    if id(v) in self.spread and not _holds_an_element_twice(v):  # (else eager's own checks)
                        raise OrderDependentWriteError(
                            f"{func} writes through a view of an expanded (or self-overlapping) tensor: "
                            "functionalization's inverse adds the written changes up over the broadcast copies, which "
                            "nan and inf break, and eager's loop order decides which write lands last: clone() the "
                            "expanded tensor before writing")
                if a.alias_info is not None and a.alias_info.is_write and id(v) in self.gapped:
                    raise OrderDependentWriteError(
                        f"{func} writes through an unfold whose windows overlap, whose last step runs past "
                        "the end, or whose extents are symbolic: functionalization's inverse (unfold_backward) sums "
                        "overlapping windows and zeroes what no window covers, so no plan follows eager's loop "
                        "order: clone() the windows, or use slices")
            with _CheckedCalls(self):
                twin = _pointwise_into_out(func, args, kwargs)
            if twin is not None:
                return twin
            reordered = reordered_variant(func)
            if reordered is not None:
                return self._by_name(func, *reordered, args, kwargs)
            return self._in_eagers_dtype(func, args, kwargs)
        out = self._checked(func, args, kwargs)
        if (getattr(func, "is_view", False) and args and isinstance(args[0], torch.Tensor)
                and _storage_id(args[0]) in self.written_any) or (self.diverged.eager and any(
                isinstance(a, torch.Tensor) and id(a) in self.diverged.eager for a in pytree.tree_leaves((args, kwargs)))):
            self.diverged.replay(func, args, kwargs, out)  # eager's layout, where functionalization's differs
        if getattr(func, "is_view", False) and args and isinstance(args[0], torch.Tensor):
            # every view the op returns (split and chunk return a list of them: jit fuzz 10042 #186
            # wrote through ``t.unfold(0, 2, 2).chunk(2)[0]`` and functionalization zeroed the tail)
            for v in (out if isinstance(out, (list, tuple)) else (out,)):
                if not isinstance(v, torch.Tensor):
                    continue
                if id(args[0]) in self.spread or _holds_an_element_twice(v):
                    self.spread[id(v)] = v
                if id(args[0]) in self.gapped:
                    self.gapped[id(v)] = v  # a write through a view of the windows is one through the windows
        if isinstance(out, torch.Tensor) and torch.Tag.pointwise in func.tags and any(
                type(a) in (bool, int, float, complex) for a in args):  # promotion with a number operand
            eager_dtype = probe_kernel(func, args, kwargs)  # cached per dtypes: run once in the first pass
            if eager_dtype is not None and out.dtype != eager_dtype:
                with _CheckedCalls(self):
                    out = out.to(eager_dtype)
        return out

    def _per_tensor(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A foreach op as its op per tensor (``foreach.py``), each one through this mode: its
        eager checks, dtype and writes are those of the per-tensor op, position by position as
        eager's CPU kernel runs them. A write whose list order matters is refused first
        (:func:`_check_foreach_order`). NotImplemented where the op has no per-tensor form."""
        fn = per_tensor(func)
        if fn is None:
            return NotImplemented
        if _writes(func):
            _check_foreach_order(func, args, kwargs)
            func, args = as_eager_runs_it(func, args)
            fn = per_tensor(func)
        with _Through(self):
            return fn(*args, **kwargs)

    def _by_name(self, func: Any, functional: Any, names: list[str], args: tuple, kwargs: dict) -> Any:
        """An in-place op whose out-of-place overload orders its arguments otherwise
        (``inplace.reordered_variant``): that overload copied into the target, after the in-place
        kernel's own checks (its dtype: an int ``polygamma_`` raises in eager, where a copy would cast)."""
        probe_kernel(func, args, kwargs)
        bound = {**dict(zip([a.name for a in func._schema.arguments], args)), **kwargs}
        with _CheckedCalls(self):
            return args[0].copy_(functional(*[bound[n] for n in names if n in bound]))

    def _in_eagers_dtype(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A write op as it is; where its meta kernel promotes past the target's dtype and so refuses
        the cast while eager's kernel accepts it (``bool_t.pow_(True)``: int64 on meta, bool in eager),
        the out-of-place op cast to eager's dtype and copied in."""
        try:
            return self._checked(func, args, kwargs)
        except RuntimeError as e:
            name = func._overloadpacket.__name__
            functional = getattr(torch, name[:-1], None) if name.endswith("_") else None
            if ("can't be cast" not in str(e) or functional is None or torch.Tag.pointwise not in func.tags
                    or probe_kernel(func, args, kwargs) != args[0].dtype):
                raise
            with _CheckedCalls(self):
                return args[0].copy_(functional(*args, **kwargs).to(args[0].dtype))


class _Through(TorchDispatchMode):
    """The ops an :class:`EagerRewrites` rewrite calls, through the whole mode (its rewrites too)."""

    def __init__(self, owner: "EagerRewrites") -> None:
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        return self.owner.__torch_dispatch__(func, types, args, kwargs)


class UntracedEffects(TorchFunctionMode):
    """Torch calls whose traced form loses something eager does, refused
    (:class:`UntracedEffectError`) rather than planned without it:

    - each tensor a call is given as ``out=`` must be written by an op the trace sees. Some of
      torch's composite kernels take another path for tensors with a Python key (every traced
      tensor) and leave ``out`` as it was: torch 2.13's ``linalg.matrix_rank(x, out=o)`` computes
      the rank and never writes ``o`` under a dispatch mode, where eager writes it (a plan returned
      ``o`` untouched, as Dynamo's ``aot_eager`` does). An empty ``out`` needs no write.
    - composites whose check on tensor data the traced form skips (:data:`_UNTRACED_CHECKS`):
      ``torch.quantile(x, q)`` raises where a tensor ``q`` leaves [0, 1], a check its kernel makes
      only on real tensors; a plan would return a value."""

    def __init__(self, check: EagerRewrites) -> None:
        super().__init__()
        self.check = check

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        unchecked = untraced_check(func, args, kwargs)
        if unchecked:
            raise UntracedEffectError(f"{unchecked}: a traced call skips the check, so a plan could return where "
                                      "eager raises (pass it as a Python number, or run it eagerly)")
        out = kwargs.get("out")
        if out is None:
            return func(*args, **kwargs)
        mark = self.check.writes
        result = func(*args, **kwargs)
        for t in out if isinstance(out, (list, tuple)) else (out,):
            if isinstance(t, torch.Tensor) and guard_or_true(t.numel() != 0) and \
                    self.check.last_write.get(_storage_id(t), 0) <= mark:
                raise UntracedEffectError(
                    f"{resolve_name(func) or func}(..., out=...): torch's kernel does not write the out= tensor "
                    "through any op a trace sees (its composite takes another path for traced tensors), so eager's "
                    "write cannot be traced: call it without out= and copy the result into the tensor")
        return result


def _tensor_q(args: tuple, kwargs: dict) -> str:
    q = args[1] if len(args) > 1 else kwargs.get("q")
    return "q is a tensor, whose values must lie in [0, 1]" if isinstance(q, torch.Tensor) else ""


#: torch functions whose kernel checks tensor data only when the tensors are real -> what to refuse
_UNTRACED_CHECKS: dict[Any, Callable[[tuple, dict], str]] = {
    f: _tensor_q for f in (torch.quantile, torch.nanquantile, torch.Tensor.quantile, torch.Tensor.nanquantile)}


def untraced_check(func: Any, args: tuple, kwargs: dict) -> str:
    """Why the call ``func(*args, **kwargs)`` loses a check of :data:`_UNTRACED_CHECKS` when traced
    ('' where it does not)."""
    unchecked = _UNTRACED_CHECKS.get(func)
    what = unchecked(args, kwargs) if unchecked is not None else ""
    return f"{resolve_name(func) or func}: {what}, which its kernel checks on real tensors only" if what else ""


def untraced_check_in(gm: torch.fx.GraphModule) -> str | None:
    """The first call of Dynamo's graph ``gm`` whose data check a trace would skip (what
    :class:`UntracedEffects` refuses), as a message; None where there is none. AOTAutograd traces
    such a graph without satfuse's modes: the backend runs it eagerly instead."""
    for n in gm.graph.nodes:
        if n.op == "call_function":
            f = n.target
        elif n.op == "call_method":
            f = getattr(torch.Tensor, str(n.target), None)
        else:
            continue
        if f not in _UNTRACED_CHECKS:
            continue
        args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: a.meta.get("example_value", a))
        unchecked = untraced_check(f, tuple(args), dict(kwargs))
        if unchecked:
            return unchecked
    return None


class UntracedEffectError(RuntimeError):
    """A torch call whose traced form loses an effect of eager's (see :class:`UntracedEffects`)."""


class _CheckedCalls(TorchDispatchMode):
    """The ops an :class:`EagerRewrites` rewrite calls, through its overlap checks (as when the
    checks were a mode of their own below it)."""

    def __init__(self, owner: _OverlapCheck) -> None:
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        return self.owner._checked(func, args, kwargs or {})


_DEVICE = torch.ops.prim.device.default


def op_leaves(tree: Any) -> list[Any]:
    """``pytree.tree_leaves(tree)`` for an op's arguments: plain lists, tuples and dicts are walked
    here (pytree's per-node type dispatch cost more than the view check that asks, per view op);
    any other container (a namedtuple, ``torch.Size``) is left to pytree, leaf or node as it says."""
    out: list[Any] = []
    _add_leaves(tree, out)
    return out


def _add_leaves(x: Any, out: list[Any]) -> None:
    t = type(x)
    if t is list or t is tuple:
        for y in x:
            _add_leaves(y, out)
    elif t is dict:
        for y in x.values():
            _add_leaves(y, out)
    elif isinstance(x, (list, tuple, dict)):
        out.extend(pytree.tree_leaves(x))
    else:
        out.append(x)


def fake_device(func: Any, args: tuple) -> torch.device | None:
    """The answer to ``prim.device`` of a fake tensor, as the fake mode gives it (None for any other
    call). C++ asks it for nearly every op a decomposition calls (28 of the 61 dispatches of a
    GPT-style block's matmuls, splits and views): no mode checks, records or changes it, so the
    top modes answer it before their own work."""
    if func is not _DEVICE or len(args) != 1 or type(args[0]) is not FakeTensor:
        return None
    t = args[0]
    return torch.device("meta") if t.fake_mode.in_kernel_invocation else t.fake_device


#: per op: it writes a tensor argument's data (a mutable schema that is not an in-place view op)
_WRITES: dict[Any, bool] = {}
#: per op: it makes a view, or changes a tensor's own geometry in place (``squeeze_``)
_VIEWS: dict[Any, bool] = {}
#: per op: it changes a tensor's own geometry in place (``squeeze_``, ``t_``)
_INPLACE_VIEWS: dict[Any, bool] = {}


def _writes(func: Any) -> bool:
    hit = _WRITES.get(func)
    if hit is None:
        schema = getattr(func, "_schema", None)
        hit = _WRITES[func] = bool(schema is not None and schema.is_mutable and torch.Tag.inplace_view not in func.tags)
    return hit


def _views(func: Any) -> bool:
    hit = _VIEWS.get(func)
    if hit is None:
        hit = _VIEWS[func] = bool(getattr(func, "is_view", False) or torch.Tag.inplace_view in func.tags)
    return hit


def _is_inplace_view(func: Any) -> bool:
    hit = _INPLACE_VIEWS.get(func)
    if hit is None:
        hit = _INPLACE_VIEWS[func] = torch.Tag.inplace_view in getattr(func, "tags", ())
    return hit




def _resized(before: Sequence[Any], after: Sequence[Any], guard: bool = False) -> bool:
    """The sizes changed: symbolic ones unless provably equal (no guard is added), or with
    ``guard``, unless equal at their example values, which then becomes a guard of the plan (an
    ``out=`` tensor the caller sized as the result: eager does not resize it, and a symbolic
    capture gives it symbols of its own; every call the plan serves must size it so)."""
    from torch.fx.experimental.symbolic_shapes import guard_bool, statically_known_true

    from .compat import hint

    if len(before) != len(after):
        return True
    for a, b in zip(before, after):
        if statically_known_true(a == b):
            continue
        if not guard or hint(a) != hint(b):
            return True
        guard_bool(a == b)
    return False


def _pointwise_into_out(func: Any, args: tuple, kwargs: dict) -> Any:
    """A pointwise ``op(..., out=t)`` as ``op(..., out=fresh); t.copy_(fresh)``, with ``fresh`` a
    new tensor like ``t``; None where that is not eager's meaning. Functionalization swaps ``t``'s
    value for the op's result, whose strides follow the operands' layout (permuted operands give a
    permuted result), while the Python wrapper keeps ``t``'s strides: a later ``t.reshape(-1)`` is
    then traced as a view the value cannot take. ``copy_`` keeps ``t``'s layout, as eager's out=
    does, and ``fresh`` keeps the out= kernel's dtype rules (a unary op computes in the out dtype,
    its refusals). Only where ``t`` has the operands' broadcast shape (no resize) and shares no
    memory with an operand (eager's overlap checks see the op as it is)."""
    if torch.Tag.pointwise not in func.tags:
        return None
    names = [a.name for a in func._schema.arguments if a.is_out and a.name in kwargs]
    if len(names) != 1 or not isinstance(kwargs[names[0]], torch.Tensor):
        return None
    out = kwargs[names[0]]
    operands = [t for t in pytree.tree_leaves((args, {k: v for k, v in kwargs.items() if k != names[0]}))
                if isinstance(t, torch.Tensor)]
    if not operands or _internal_overlap(out) or any(_same_storage(t, out) for t in operands):
        return None
    try:
        shape = torch.broadcast_shapes(*[t.shape for t in operands])
    except RuntimeError:
        return None  # eager's own error, from the op as it is
    if _resized(shape, out.shape, guard=True):
        return None
    fresh = torch.empty_like(out)
    func(*args, **{**kwargs, names[0]: fresh})
    return out.copy_(fresh)


def _empty_write(func: Any, args: tuple, kwargs: dict) -> Any:
    """What an elementwise in-place / ``out=`` op returns when every tensor it writes has no element
    (``a[:, 1:] = 0`` of a (2, 1) ``a``), or None otherwise: eager's kernel writes nothing, so the
    op is nothing (no write-back of an untouched input; an expanded input stays allowed, as in
    eager). Its dtype and Scalar refusals still apply (``probe_kernel``); operands that do not
    broadcast to the written shape go on to eager's own error. Sizes that are symbolic are not
    taken as empty (no guard is added)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    schema = func._schema
    if not _elementwise(func):
        return None
    values = {a.name: (args[i] if i < len(args) else kwargs.get(a.name)) for i, a in enumerate(schema.arguments)}
    written = [(a, values[a.name]) for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if not written or not all(isinstance(w, torch.Tensor) and statically_known_true(w.numel() == 0) for _, w in written):
        return None
    # the operands' broadcast shape (an out= tensor is no operand: eager resizes it to that shape)
    outs_only = {a.name for a, _ in written if a.kwarg_only}
    shapes = [tuple(v.size()) for k, v in values.items() if isinstance(v, torch.Tensor) and k not in outs_only]
    try:
        full = tuple(torch.broadcast_shapes(*shapes)) if shapes else ()
    except RuntimeError:
        return None
    if any(_resized(full, tuple(w.size())) for _, w in written):
        return None
    outs = []
    for r in schema.returns:
        src = [w for a, w in written if r.alias_info is not None and a.alias_info.before_set == r.alias_info.before_set]
        if len(src) != 1:
            return None
        outs.append(src[0])
    if not outs:
        return None
    probe_kernel(func, args, kwargs)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _reaches_outside(x: torch.Tensor, size: Any, stride: Any, offset: Any = None) -> bool:
    """Whether ``x.as_strided(size, stride, offset)`` addresses a storage element ``x`` does not
    (a view of a strided input reaching into the gaps, or past its last element). Symbolic
    geometry is specialized (guards: as_strided's meaning depends on every stride); a large
    strided ``x`` is compared by its extent only."""
    xs, xt, xo = _geometry(x)
    ys, yt = [int(n) for n in size], [int(t) for t in stride]
    yo = xo if offset is None else int(offset)
    if _numel(ys) == 0:
        return False
    if _numel(xs) == 0:
        return True

    def span(sz: list[int], st: list[int], o: int) -> tuple[int, int]:
        return (o + sum((n - 1) * t for n, t in zip(sz, st) if t < 0), o + sum((n - 1) * t for n, t in zip(sz, st) if t > 0))

    (xl, xh), (yl, yh) = span(xs, xt, xo), span(ys, yt, yo)
    if yl < xl or yh > xh:
        return True
    if xh - xl + 1 == _numel(xs) or _numel(xs) > 4096 or _numel(ys) > 4096:
        return False  # x holds every element of its extent (or too large to list: the extent decides)

    def offsets(sz: list[int], st: list[int], o: int) -> set[int]:
        out = {o}
        for n, t in zip(sz, st):
            out = {a + i * t for a in out for i in range(n)}
        return out

    return not offsets(ys, yt, yo) <= offsets(xs, xt, xo)


def _same_memory(dst: Any, src: Any) -> bool:
    """``src`` is ``dst``'s memory: same storage, dtype, sizes, strides and offset (concrete)."""
    if not (isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor)) or dst.dtype != src.dtype:
        return False
    if dst is src:
        return True
    try:
        geo = [_geometry(t, specialize=False) for t in (dst, src)]
    except TypeError:
        return False
    return geo[0] == geo[1] and _same_storage(dst, src)


def _expand_that_broadcasts_nothing(x: torch.Tensor, size: Sequence[Any], implicit: bool = False) -> Any:
    """``x.expand(size)`` of ``x``'s own shape as the plain view it is (an alias, same geometry). A write through
    an expand is inverted by functionalization as ``x + sum_to_size(new - expand(x))``, which nan
    and inf in ``x`` break even where nothing is broadcast (compile fuzz 9994 #1544:
    ``a.expand(3).fill_(2)`` of a (3,) ``a`` holding nan); an alias is inverted exactly. None where
    ``size`` broadcasts or adds dims (left as it is: still inverted by arithmetic, open)."""
    new = len(size) - x.dim()
    if new != 0:  # new leading dims: expand's stride-0 geometry, which eager's overlap checks read, is no view chain's
        return None
    try:  # symbolic extents are compared as expand's own meta kernel compares them (each a guard)
        for k, n in enumerate(size):
            if k < new:
                if not bool(n == 1):
                    return None
            elif not (isinstance(n, int) and n == -1) and not bool(n == x.size(k - new)):
                return None
    except Exception:  # noqa: BLE001 - data-dependent: leave it to expand
        return None
    return torch.ops.aten.alias.default(x)


def _unfold_views(x: torch.Tensor, dim: int, size: int, step: int) -> torch.Tensor | None:
    """``x.unfold(dim, size, step)`` as views, or None where that is not one view chain (windows
    that overlap, a last window whose step runs past the end, symbolic extents)."""
    if x.dim() == 0 or not all(isinstance(v, int) for v in (dim, size, step)) or size > step or size < 1:
        return None
    d = dim % x.dim()
    n_len = x.size(d)
    if not isinstance(n_len, int):
        n_len = n_len.node.maybe_as_int()
    if n_len is None or n_len < size:
        return None
    n = (n_len - size) // step + 1
    if n * step > n_len:
        return None
    return x.narrow(d, 0, n * step).unflatten(d, (n, step)).narrow(d + 1, 0, size).movedim(d + 1, -1)


def _holds_an_element_twice(t: torch.Tensor) -> bool:
    """Some memory element of ``t`` sits at two positions (``expand``, overlapping ``unfold``
    windows, ``as_strided`` with small strides). Functionalization's inverse of such a view sums
    (``expand``'s ``sum_to_size``, ``unfold_backward``): a write through it has no functional
    meaning. Exact for concrete geometry up to 2**20 elements, else only stride 0 counts."""
    size, stride = _concrete(t.size()), _concrete(t.stride())
    if size is not None and _numel(size) == 0:  # an empty write writes nothing
        return False
    if _internal_overlap(t):
        return True
    if size is None or stride is None:  # symbolic (never specialized here): stride 0 was checked
        return False
    return _overlapping(size, stride)


def _overlapping(size: list[int], stride: list[int]) -> bool:
    """Two positions of this concrete geometry are one memory element (see above)."""
    dims = sorted((i for i in range(len(size)) if size[i] > 1), key=lambda i: abs(stride[i]))
    reach = 0
    for i in dims:
        if abs(stride[i]) <= reach:
            break
        reach += abs(stride[i]) * (size[i] - 1)
    else:
        return False
    numel = _numel(size)
    if numel > 1 << 20:
        return False
    import numpy as np

    offs = np.zeros([1], dtype=np.int64)
    for n, st in zip(size, stride):
        offs = (offs[:, None] + np.arange(n, dtype=np.int64)[None, :] * st).reshape(-1)
    return len(np.unique(offs)) < numel


class OrderDependentWriteError(RuntimeError):
    """An in-place op whose eager result depends on the order its loop visits overlapping elements
    (refused: see ``_order_dependent``)."""


def _order_dependent(w: torch.Tensor, r: torch.Tensor) -> bool:
    """``r`` shares memory with ``w`` and some element of ``w`` is written while another position
    of the loop reads it (eager's "too hard" overlap, which it runs in loop order). False when each
    position reads exactly the element it writes (``x.mul_(x)`` through another view object)."""
    import numpy as np

    try:
        same = w.untyped_storage()._cdata == r.untyped_storage()._cdata
    except Exception:  # noqa: BLE001
        return False
    if not same or w.element_size() != r.element_size():
        return False
    (ws, wt, wo), (rs, rt, ro) = _geometry(w), _geometry(r)
    if _numel(ws) == 0 or _numel(rs) == 0 or _numel(ws) > 1 << 22:
        return False

    def offsets(size: list[int], stride: list[int], off: int, shape: list[int]) -> Any:
        pad = len(shape) - len(size)
        grid = np.full([1] * len(shape), off, dtype=np.int64)
        for d, (n, st) in enumerate(zip(size, stride)):
            ax = [1] * len(shape)
            ax[pad + d] = n
            grid = grid + (np.arange(n, dtype=np.int64) * st).reshape(ax)
        return np.broadcast_to(grid, shape)

    try:
        wr = offsets(ws, wt, wo, ws)
        rd = offsets(rs, rt, ro, ws)
    except ValueError:  # not broadcastable to the written shape: not a pointwise read
        return False
    hit = np.isin(rd, wr)
    return bool((hit & (rd != wr)).any())


def _geometry(t: torch.Tensor, specialize: bool = True) -> tuple[list[int], list[int], int]:
    """Sizes, strides and offset as ints, eager's where the check mode replayed the view
    (``_OverlapCheck``): a symbolic one is specialized (a guard), which happens only for tensors
    already known to share a written tensor's storage (``specialize=False``: raise TypeError)."""
    table = getattr(_EAGER_VIEWS, "table", None)
    if table is not None:
        hit = table.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
    if not specialize:
        vals = _concrete([*t.size(), *t.stride(), t.storage_offset()])
        if vals is None:
            raise TypeError("symbolic geometry")
        return vals[:t.dim()], vals[t.dim():2 * t.dim()], vals[-1]
    return [int(s) for s in t.size()], [int(s) for s in t.stride()], int(t.storage_offset())


def _internal_overlap(t: torch.Tensor) -> bool:
    """A dim of stride 0 and extent > 1 (an expanded tensor); a symbolic stride is never 0."""
    for sz, st in zip(t.size(), t.stride()):
        if isinstance(st, int) and st == 0 and bool(sz > 1):
            return True
    return False


def _dense(size: list[int], stride: list[int]) -> bool:
    """``is_non_overlapping_and_dense``: some permutation of the dims is contiguous."""
    dims = sorted((i for i in range(len(size)) if size[i] != 1), key=lambda i: stride[i])
    expected = 1
    for i in dims:
        if stride[i] != expected:
            return False
        expected *= size[i]
    return True


def _partial_overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """ATen's ``get_overlap_status(a, b) == Partial``."""
    try:
        same = a.untyped_storage()._cdata == b.untyped_storage()._cdata
    except Exception:  # noqa: BLE001 - a tensor without storage
        return False
    if not same:
        return False
    ga, gb = _geometry(a), _geometry(b)
    na, nb = _numel(ga[0]), _numel(gb[0])
    if na == 0 or nb == 0 or not _dense(ga[0], ga[1]) or not _dense(gb[0], gb[1]):
        return False  # empty: no overlap; not dense: eager's "too hard", it does not refuse
    ia, ib = a.element_size(), b.element_size()  # byte ranges, as ATen compares data pointers
    a0, b0 = ga[2] * ia, gb[2] * ib
    a1, b1 = a0 + na * ia, b0 + nb * ib
    if a0 == b0 and a1 == b1:
        return ga[1] != gb[1]
    return a0 < b1 and b0 < a1


def _numel(size: list[int]) -> int:
    n = 1
    for s in size:
        n *= s
    return n
