"""Trace IR: an SSA program over tensors and scalars, with explicit write-backs.

A Trace is what every stage hands to the next: capture produces one, the engine
encodes it into egglog terms and decodes the extracted plan back into one, and the
lowering partitions it into segments. Extents are ints or sympy expressions over
symbols bound by the inputs (tensor dims and int scalars), so shape arithmetic
such as ``a.size(2) - d0 - d1`` stays visible instead of being baked in.
"""

from __future__ import annotations

import itertools
import keyword
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence, Union

import sympy
import torch

Extent = Union[int, sympy.Expr]

#: short dtype names used in printed programs and in the e-graph
DTYPES: dict[str, torch.dtype] = {
    "f64": torch.float64,
    "f32": torch.float32,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "i64": torch.int64,
    "i32": torch.int32,
    "i16": torch.int16,
    "i8": torch.int8,
    "u8": torch.uint8,
    "b8": torch.bool,
    "c64": torch.complex64,
    "c128": torch.complex128,
}
DTYPE_NAMES: dict[torch.dtype, str] = {v: k for k, v in DTYPES.items()}
FLOAT_DTYPES = frozenset({"f64", "f32", "f16", "bf16"})
INT_DTYPES = frozenset({"i64", "i32", "i16", "i8", "u8"})


class IRError(ValueError):
    """A malformed program: names the node and the broken invariant."""


def dtype_name(dt: torch.dtype) -> str:
    try:
        return DTYPE_NAMES[dt]
    except KeyError:
        raise IRError(f"dtype {dt} is not supported by satfuse") from None


def as_extent(e: Any) -> Extent:
    """Normalize an extent: plain ints stay ints, integral sympy numbers become ints."""
    if isinstance(e, bool):
        raise IRError(f"extent {e!r} is a bool")
    if isinstance(e, int):
        return e
    if isinstance(e, sympy.Expr):
        e = torch_spelling(sympy.simplify(e)) if not e.is_Atom else e
        if e.is_Integer:
            return int(e)
        return e
    raise IRError(f"extent {e!r} is neither an int nor a symbolic expression")


def torch_spelling(e: sympy.Expr) -> sympy.Expr:
    """One spelling of integer division, modulo, min and max: the ShapeEnv's (torch's sympy
    functions). The IR compares extents by structure, and ``FloorDiv(s1, 4)`` (a conv's output
    size as captured) is not ``floor(s1/4)`` (the same size as sympy spells it: a slice's length,
    or an extent decoded from the e-graph): a backward graph's ``mul`` of the two did not
    broadcast."""
    from torch.utils._sympy.functions import FloorDiv, Max, Min, PythonMod

    def torch_form(x: sympy.Expr) -> sympy.Expr:
        if isinstance(x, sympy.floor):
            num, den = sympy.fraction(sympy.together(x.args[0]))
            return FloorDiv(num, den) if den != 1 else x
        if type(x) is sympy.Mod:
            return PythonMod(*x.args)
        if type(x) is sympy.Max:
            return Max(*x.args)
        if type(x) is sympy.Min:
            return Min(*x.args)
        return x

    if not e.has(sympy.floor, sympy.Mod, sympy.Max, sympy.Min):
        return e
    return e.replace(lambda x: isinstance(x, (sympy.floor, sympy.Mod, sympy.Max, sympy.Min)), torch_form)


def fmt_extent(e: Extent) -> str:
    return str(e) if isinstance(e, int) else sympy.sstr(e)


@dataclass(frozen=True)
class TensorType:
    dtype: str
    shape: tuple[Extent, ...]
    device: str = "cpu"

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dev = "" if self.device == "cpu" else f"{self.device} "
        return f"{dev}{self.dtype}[{', '.join(fmt_extent(e) for e in self.shape)}]"

    def with_(self, **kw: Any) -> "TensorType":
        d = {"dtype": self.dtype, "shape": self.shape, "device": self.device}
        d.update(kw)
        d["shape"] = tuple(as_extent(e) for e in d["shape"])
        return TensorType(**d)

    def symbols(self) -> set[sympy.Symbol]:
        out: set[sympy.Symbol] = set()
        for e in self.shape:
            if isinstance(e, sympy.Expr):
                out |= e.free_symbols
        return out


@dataclass(frozen=True)
class ScalarType:
    """An int/float/bool scalar input or value. ``value`` is its symbol when symbolic."""

    kind: str  # "int" | "float" | "bool" | "none" (an output an opaque op leaves out: ``output_mask``)
    value: Any = None

    def __str__(self) -> str:
        v = "" if self.value is None else f" {fmt_extent(self.value) if isinstance(self.value, sympy.Expr) else self.value}"
        return f"{self.kind}{v}"

    def symbols(self) -> set[sympy.Symbol]:
        return set(self.value.free_symbols) if isinstance(self.value, sympy.Expr) else set()


Type = Union[TensorType, ScalarType]


#: obligation kinds checked on tensor values (before any write); the others are shape facts
DATA_OBLIGATIONS = frozenset({"index-in-range"})


@dataclass(frozen=True)
class Obligation:
    """A condition the rewrites behind a plan rely on and the e-graph could not prove, stated
    by the rules as data (rules/lang.egg's ``obligation`` relations); lowering checks each.

    ``index-in-range``: ``args = (index Var, extent)``, every element in ``[0, extent)``;
    ``le``: ``args = (a, b)`` extents with ``a <= b``. ``rules``: the rules that stated it.
    ``eager_op``: for an index, the eager op whose bounds check the program relied on
    (capture records it: ``Trace.index_ops``), so the plan raises what eager raises."""

    kind: str
    rules: tuple[str, ...]
    args: tuple
    eager_op: str = ""
    #: position of that eager op in the captured program (-1: unknown): eager raises the first failure
    rank: int = -1

    @property
    def is_data(self) -> bool:
        return self.kind in DATA_OBLIGATIONS


@dataclass(frozen=True)
class OutputAlias:
    """How one program output aliases in eager PyTorch (capture records it from functionalization's
    metadata, as AOTAutograd does; lowering makes the plan's output follow it).

    ``kind``: "input" (eager returns input ``index`` itself or a view of it, with this geometry:
    ``size``/``stride``/``storage_offset`` in elements, extents may be symbolic) or "output" (the
    very same tensor object as output ``index``, e.g. ``return y, y``) or "shared" (a view, at this
    concrete geometry, of one buffer that the outputs of the group led by output ``index`` share:
    ``return t, t.t()``). An output with no
    ``OutputAlias`` (None in ``Trace.output_aliases``) is a fresh tensor that shares storage with
    nothing the caller holds."""

    kind: str
    index: int
    size: tuple[Extent, ...] | None = None
    stride: tuple[Extent, ...] | None = None
    storage_offset: Extent | None = None
    #: "input": eager returns the input object itself, not a view of it (a view keeps its geometry
    #: when the caller's tensor changes its own later: Dynamo replays ``x.t_()`` after the graph)
    itself: bool = True


@dataclass(eq=False)
class Var:
    """An SSA value. Identity is object identity; the name is for printing."""

    name: str
    type: Type

    def __repr__(self) -> str:
        return self.name

    @property
    def is_tensor(self) -> bool:
        return isinstance(self.type, TensorType)


@dataclass(eq=False)
class Node:
    """``outs = op(*args, **kwargs)``. Args are Vars, numbers, extents, dtype names or tuples of those."""

    op: str
    args: tuple
    kwargs: dict[str, Any]
    outs: tuple[Var, ...]
    site: str | None = None

    @property
    def out(self) -> Var:
        if len(self.outs) != 1:
            raise IRError(f"{self.op} has {len(self.outs)} outputs")
        return self.outs[0]

    def inputs(self) -> list[Var]:
        """The Vars among the arguments, in order (a new list). Memoized on the (immutable) args
        tuple and the keyword values by identity, where no keyword holds a list (which could change
        in place): lowering asks each node many times (170k calls for a 10k-op model)."""
        cached = self.__dict__.get("_inputs")
        if cached is not None and cached[0] is self.args:
            kwargs = self.kwargs
            if not kwargs:
                if not cached[1]:
                    return list(cached[2])
            elif len(cached[1]) == len(kwargs) and all(a is b for a, b in zip(cached[1], kwargs.values())):
                return list(cached[2])
        kw = tuple(self.kwargs.values()) if self.kwargs else ()
        ins = [a for a in flat_args(self.args, self.kwargs) if isinstance(a, Var)]
        if not any(_holds_list(v) for v in kw):
            self.__dict__["_inputs"] = (self.args, kw, ins)
        return list(ins)



def dense_order(size: Sequence[int], stride: Sequence[int]) -> list[int] | None:
    """The dims from innermost to outermost when ``size``/``stride`` lay out every element of
    one dense block once (a permuted contiguous tensor; size-1 dims anywhere), else None."""
    order = sorted(range(len(size)), key=lambda i: (stride[i], i))
    expect = 1
    for i in order:
        if size[i] != 1 and stride[i] != expect:
            return None
        expect *= size[i]
    return order

def _holds_list(v: Any) -> bool:
    return isinstance(v, list) or (isinstance(v, tuple) and any(_holds_list(x) for x in v))


def flat_args(args: Iterable, kwargs: dict | None = None) -> Iterable[Any]:
    for a in itertools.chain(args, (kwargs or {}).values()):
        if isinstance(a, (tuple, list)):
            yield from flat_args(a)
        else:
            yield a


@dataclass
class Trace:
    """A whole program: inputs, nodes in execution order, outputs and write-backs.

    ``writebacks`` pairs a mutated input with the Var holding its final value: the
    caller's buffer must hold that value when the program returns, as eager does.
    ``opaque`` carries the torch callables of fallback nodes (keyed by node attr ``key``).
    """

    inputs: list[Var]
    nodes: list[Node]
    outputs: list[Any]
    writebacks: list[tuple[Var, Var]] = field(default_factory=list)
    opaque: dict[str, Any] = field(default_factory=dict)
    guards: list[sympy.Basic] = field(default_factory=list)
    #: per output, how eager's result aliases (None: fresh); empty means "not recorded" (all fresh)
    output_aliases: list[OutputAlias | None] = field(default_factory=list)
    #: index value name -> the eager op that reads it as an index and checks its bounds
    #: (capture: ``aten.nll_loss_forward`` for cross-entropy's targets, else ``aten.gather`` ...)
    index_ops: dict[str, str] = field(default_factory=dict)
    #: index value name -> the position of that op among the captured program's nodes
    index_ranks: dict[str, int] = field(default_factory=dict)
    #: id(node) -> its position in the captured program, for opaque nodes and index ops after rewriting (decode)
    ranks: dict[int, int] = field(default_factory=dict)
    #: what the rewrites behind this trace rely on (engine/decode.py fills it; lowering checks it)
    obligations: list[Obligation] = field(default_factory=list)
    #: values no output needs that the plan still computes, before any write, and drops: eager runs
    #: the op and it can raise on values or draws random numbers (engine/fallible.py)
    effects: list[Var] = field(default_factory=list)
    #: in-place view ops the program applied to its inputs (``x.t_()``), in program order: (input
    #: position, tensor method, arguments); the plan replays them on the caller's tensors last
    restrides: list[tuple[int, str, tuple]] = field(default_factory=list)
    #: tensor input position -> its (strides, storage offset) where a symbolic capture gave them
    #: symbols of their own (a strided or offset input: ``x[:, ::2]``); the prologue binds those
    #: symbols from the caller's tensor, as it binds sizes, and checks the rest of that layout
    input_layouts: dict[int, tuple[tuple[Any, ...], Any]] = field(default_factory=dict)
    name: str = "computation"
    provenance: str = ""

    def __str__(self) -> str:
        from .printer import print_trace

        return print_trace(self)

    __repr__ = __str__

    def symbols(self) -> set[sympy.Symbol]:
        """The symbols the prologue binds: the inputs' sizes and scalars, and their own layouts'."""
        out: set[sympy.Symbol] = set()
        for v in self.inputs:
            out |= v.type.symbols()
        for strides, offset in self.input_layouts.values():
            for e in (*strides, offset):
                if isinstance(e, sympy.Basic):
                    out |= e.free_symbols
        return out

    def producers(self) -> dict[Var, Node]:
        return {o: n for n in self.nodes for o in n.outs}

    def users(self) -> dict[Var, list[Node]]:
        us: dict[Var, list[Node]] = {}
        for n in self.nodes:
            for v in n.inputs():
                us.setdefault(v, []).append(n)
        return us

    def lint(self) -> None:
        """Check SSA form, topological order, unique names and that write-backs target inputs."""
        defined: set[int] = set()
        names: set[str] = set()
        for v in self.inputs:
            _define(v, names, defined, "input")
        for i, n in enumerate(self.nodes):
            ins = n.inputs()
            if not defined.issuperset(map(id, ins)):
                a = next(a for a in ins if id(a) not in defined)
                raise IRError(f"node {i} ({n.op}): uses {a.name} before it is defined")
            for o in n.outs:
                name = o.name
                if name in names or not name.isidentifier() or keyword.iskeyword(name):
                    _define(o, names, defined, f"node {i} ({n.op})")  # raises
                names.add(name)
                defined.add(id(o))
        for o in self.outputs:
            if isinstance(o, Var) and id(o) not in defined:
                raise IRError(f"output {o.name} is not defined")
        seen: set[int] = set()
        inputs = {id(v) for v in self.inputs}
        for buf, val in self.writebacks:
            if id(buf) not in inputs:
                raise IRError(f"write-back target {buf.name} is not an input")
            if id(buf) in seen:
                raise IRError(f"two write-backs to {buf.name}")
            seen.add(id(buf))
            if id(val) not in defined:
                raise IRError(f"write-back value {val.name} is not defined")
        for v in self.effects:
            if id(v) not in defined:
                raise IRError(f"effect {v.name} is not defined")


def _define(v: Var, names: set[str], defined: set[int], where: str) -> None:
    """``Trace.lint``'s check of one value's name as it is defined (the message says ``where``)."""
    if v.name in names:
        raise IRError(f"{where}: name {v.name!r} defined twice")
    if not v.name.isidentifier() or keyword.iskeyword(v.name):
        raise IRError(f"{where}: {v.name!r} is not a legal identifier")
    names.add(v.name)
    defined.add(id(v))


class Namespace:
    """Hands out unique, legal, stable names, preferring user hints."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        import builtins

        from .vocab import OPS

        self.used = set(reserved) | set(dir(builtins)) | set(OPS) | {"torch", "aten", "writeback", "fd", "inf", "nan"}
        self.counter = itertools.count()

    def name(self, hint: str | None = None) -> str:
        if hint and hint.isascii() and hint.isidentifier():
            base = hint  # the common case, and what the rewrite below leaves of it
        else:
            base = "".join(c if c.isalnum() or c == "_" else "_" for c in (hint or "t"))
            if not base or base[0].isdigit():
                base = "t" + base
        if keyword.iskeyword(base):
            base += "_"
        if base not in self.used and hint:
            self.used.add(base)
            return base
        while True:
            cand = f"{base if hint else 't'}{next(self.counter)}"
            if cand not in self.used:
                self.used.add(cand)
                return cand
