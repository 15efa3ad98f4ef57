"""Segment -> Python source of an nvFuser FusionDefinition.

The mapping follows **nvFuser 0.2.36, module ``nvfuser_direct``** (``NVIDIA/Fuser``
at 0.2.36+git7e04d26, ``python/python_direct/ops.cpp``; see ``notes/nvfuser.md``):

- inputs: ``fd.define_tensor(shape=[-1 symbolic | 1 broadcast | static], contiguity=[True | None],
  dtype=DataType.X)``, ``fd.define_scalar(dtype=DataType.X)`` for scalar inputs and for
  symbolic extents that no input tensor carries (``fd.ops.size(t, i)`` when one does);
- elementwise ops are positional-only; the IR follows torch's implicit broadcasting and
  type promotion, nvFuser wants explicit ``broadcast_in_dim`` and promotes differently
  (Python float -> Double, Half arithmetic -> Float), so operands are cast to the IR's
  computation dtype and broadcast to the result shape, and Half/BFloat16/Bool results are
  cast back to the IR dtype;
- ``amax``/``amin`` -> ``max``/``min`` (reductions), ``sum(t, dims=, keepdim=, dtype=)``;
- ``iota(length, dtype, dim, rank)`` -> ``iota(length, start, step, dtype=)`` + ``broadcast_in_dim``;
- ``copy_(dst, src)`` -> ``cast`` + ``broadcast_in_dim`` (or ``set``) of ``src``;
- outputs: ``fd.add_output(t)``; in-place write-backs: ``o = fd.ops.set(v)``,
  ``fd.add_output(o, alias_input=buf)`` (the Thunder idiom).

``emit_segment`` returns the source of ``def segN(fd): ...``, the runtime fusion inputs in
definition order (Vars, then symbolic extents), and a map from generated line to IR node.
The exact same text runs on the real frontend and on ``frontend_ref``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import sympy
import torch
import torch.utils._sympy.functions as tsf
from satfuse.engine.ir import DTYPES, FLOAT_DTYPES, INT_DTYPES, Extent, IRError, Node, ScalarType, TensorType, Var
from satfuse.engine.printer import fmt_literal
from satfuse.engine.vocab import BINARY, UNARY, meta_stand_in

from .segments import Segment, data_inputs
from .support import NVF_DTYPES, SUPPORT

NVFUSER_VERSION = "0.2.36"
#: names the definition body refers to; Vars so named are renamed
RESERVED = frozenset({"fd", "DataType", "float", "int", "bool"})

PREDICATES = {"eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "logical_not", "logical_and", "logical_or"}
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}
LOGICAL = {"logical_not", "logical_and", "logical_or", "isnan", "isinf"}
#: ops a Half/BFloat16 segment keeps in its own dtype, where every other computes in Float: they
#: only select or clear a sign bit, so they keep the rest of a value's bits (a NaN's payload, read
#: through a dtype view: in Float CPU torch's where rewrote 0x7fc00000 to 0x7fffffff, and a
#: signaling NaN comes back quieted), and nvFuser has Half kernels for them
_OWN_BITS = frozenset({"where", "abs"})


class EmitError(IRError):
    """A node the emitter cannot translate: names the segment and the node."""


@dataclass
class EmittedSegment:
    name: str
    source: str
    inputs: list[Any]  # Var (tensor or scalar) or sympy extent, in fusion-input order
    outputs: list[Var]  # plain outputs, in add_output order
    aliases: list[tuple[Var, Var]]  # (buffer, value)
    lineno_map: dict[int, Node] = field(default_factory=dict)  # 1-based line in source -> node

    def node_at(self, lineno: int) -> Node | None:
        return self.lineno_map.get(lineno)


def dt(name: str) -> str:
    try:
        return f"DataType.{NVF_DTYPES[name]}"
    except KeyError:
        raise EmitError(f"dtype {name} has no nvFuser DataType") from None


def num(v: Any) -> str:
    if isinstance(v, bool):
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        return fmt_literal(v)
    if isinstance(v, sympy.Integer):
        return str(int(v))
    if isinstance(v, sympy.Float):
        return num(float(v))
    raise EmitError(f"not a number: {v!r}")


def _promote(args: list[Any]) -> str:
    """torch's result dtype of a binary op's operands (0-d tensors and Python numbers promote weakly)."""
    metas = [meta_stand_in(a) for a in args]
    if not isinstance(metas[0], torch.Tensor):
        metas[0] = torch.tensor(metas[0], device="meta")
    return _dtname(torch.result_type(metas[0], metas[1]) if len(metas) > 1 else metas[0].dtype)


def _dtname(d: torch.dtype) -> str:
    for k, v in DTYPES.items():
        if v == d:
            return k
    raise EmitError(f"dtype {d}")


#: a whole word of a generated line (a handle is one)
_WORD = re.compile(r"\b[A-Za-z_]\w*")


class _Emitter:
    def __init__(self, seg: Segment, sym_names: dict[sympy.Symbol, str] | None = None):
        self.seg = seg
        self.lines: list[tuple[str, Node | None]] = []
        self.h: dict[int, str] = {}  # id(Var) -> handle
        self.shape: dict[str, tuple[Extent, ...]] = {}
        self.dtype: dict[str, str] = {}
        self.bcast: dict[str, frozenset[int]] = {}
        self.expanded: dict[str, frozenset[int]] = {}  # dims that are expanded broadcasts (stride 0)
        self.is_input: set[str] = set()
        self.used: set[str] = set(RESERVED)
        self.names: dict[int, str] = {}  # id(Var) -> its Python name in the definition
        for n in seg.nodes:
            for v in n.inputs() + list(n.outs):
                self.vn(v)
        for b, v in seg.aliases:
            self.vn(b)
            self.vn(v)
        self.extents: dict[Any, str] = {}  # sympy expr -> handle
        self.memo: dict[tuple, str] = {}  # (cast|bcast, handle, target) -> handle: emit each helper op once
        self.scalars: dict[str, list] = {}  # constant's handle -> [its line's index, its definition, uses]
        self.extent_inputs: list[Any] = []
        self.size_src: dict[Any, tuple[str, int]] = {}
        self.sym_names = sym_names or {}
        self.node: Node | None = None
        self.counter = 0

    # ------------------------------------------------------------ names and lines
    def vn(self, v: Var) -> str:
        """A Var's name in the definition: its IR name unless that is reserved (``fd``, ``DataType``, ...)."""
        nm = self.names.get(id(v))
        if nm is None:
            nm = v.name
            while nm in RESERVED or (nm != v.name and nm in self.used):
                nm += "_"
            self.names[id(v)] = nm
            self.used.add(nm)
        return nm

    def fresh(self, hint: str) -> str:
        """``hint`` itself when free, else ``hint2``, ``hint3``, ..."""
        cand, k = hint, 1
        while cand in self.used:
            k += 1
            cand = f"{hint}{k}"
        self.used.add(cand)
        return cand

    def line(self, text: str) -> None:
        self.lines.append((text, self.node))

    def new(self, name: str, expr: str, shape: tuple, dtype: str, bcast: frozenset[int] = frozenset(),
            expanded: frozenset[int] = frozenset()) -> str:
        self.line(f"{name} = {expr}")
        self.shape[name] = tuple(shape)
        self.dtype[name] = dtype
        self.bcast[name] = frozenset(bcast)
        self.expanded[name] = frozenset(expanded)
        return name

    # ------------------------------------------------------------ extents
    def extent(self, e: Any) -> str:
        """An extent (int, sympy expr, or int scalar Var) as a literal or a Val handle."""
        if isinstance(e, Var):
            return self.h[id(e)]
        if isinstance(e, (int, sympy.Integer)):
            return str(int(e))
        if e in self.extents:
            return self.extents[e]
        if e in self.size_src:
            t, d = self.size_src[e]
            nm = self.fresh(f"{t}_size{d}")
            self.line(f"{nm} = fd.ops.size({t}, {d})")
        elif isinstance(e, sympy.Symbol):
            nm = self._extent_input(e)
        elif isinstance(e, sympy.Add):
            terms = e.as_ordered_terms()
            nm = self.extent(terms[0])
            for t in terms[1:]:
                c, _ = t.as_coeff_Mul()
                acc = self.fresh("ext")
                if c < 0:
                    self.line(f"{acc} = fd.ops.sub({nm}, {self.extent(-t)})")
                else:
                    self.line(f"{acc} = fd.ops.add({nm}, {self.extent(t)})")
                nm = acc
        elif isinstance(e, sympy.Mul) and sympy.fraction(e)[1] == 1:
            fs = e.as_ordered_factors()
            nm = self.extent(fs[0])
            for f in fs[1:]:
                acc = self.fresh("ext")
                self.line(f"{acc} = fd.ops.mul({nm}, {self.extent(f)})")
                nm = acc
        elif isinstance(e, (tsf.FloorDiv, tsf.CleanDiv)):
            nm = self.fresh("ext")
            a, b = (self.extent(x) for x in e.args)
            self.line(f"{nm} = fd.ops.div({a}, {b})")
        elif isinstance(e, (sympy.Max, sympy.Min, tsf.Max, tsf.Min)) and len(e.args) == 2:
            nm = self.fresh("ext")
            a, b = (self.extent(x) for x in e.args)
            self.line(f"{nm} = fd.ops.{'maximum' if isinstance(e, (sympy.Max, tsf.Max)) else 'minimum'}({a}, {b})")
        else:  # anything else is computed by the plan and passed in
            nm = self._extent_input(e)
        self.extents[e] = nm
        return nm

    def _extent_input(self, e: Any) -> str:
        base = self.sym_names.get(e, e.name) if isinstance(e, sympy.Symbol) else "extent"
        nm = base if base not in self.used else self.fresh(base)
        self.used.add(nm)
        self.extent_inputs.append((e, nm))
        return nm

    def scalar(self, lit: str, dtype: str) -> str:
        """An elementwise op's typed constant, defined once per definition, where it is first used:
        a 10k-op chain multiplying by 1.01 4,211 times has one ``define_scalar`` line, not 4,211
        calls inside other lines (the plan's text, and its compile time, stay small). One used
        once is spelled where it is used (:meth:`inline_single_scalars`)."""
        key = ("scalar", lit, dtype)
        h = self.memo.get(key)
        if h is None:
            h = self.memo[key] = self.fresh(_scalar_name(lit, dtype))
            self.scalars[h] = [len(self.lines), f"fd.define_scalar({lit}, dtype={dt(dtype)})", 0]
            self.line(f"{h} = {self.scalars[h][1]}")
        self.scalars[h][2] += 1
        return h

    def inline_single_scalars(self) -> None:
        """Each constant :meth:`scalar` defined that one op alone uses goes back into that op's line."""
        single = {h: text for h, (_, text, uses) in self.scalars.items() if uses == 1}
        if not single:
            return
        drop = {self.scalars[h][0] for h in single}
        first = min(drop)

        def spell(m: re.Match) -> str:
            return single.get(m.group(0), m.group(0))

        # each word looked up (an alternation of every name was quadratic: 4,000 constants used once)
        self.lines = [(_WORD.sub(spell, text) if k > first else text, node)
                      for k, (text, node) in enumerate(self.lines) if k not in drop]

    def shape_list(self, shape: tuple) -> str:
        return "[" + ", ".join(self.extent(e) for e in shape) + "]"

    # ------------------------------------------------------------ operands
    def operand(self, a: Any) -> str:
        if isinstance(a, Var):
            return self.h[id(a)]
        if isinstance(a, sympy.Expr) and not a.is_number:
            return self.extent(a)
        return num(a)

    def cast(self, h: str, to: str) -> str:
        if self.dtype.get(h) == to or h not in self.dtype:
            return h
        key = ("cast", h, to)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = self.new(self.fresh(f"{h}_{to}"), f"fd.ops.cast({h}, dtype={dt(to)})", self.shape[h], to,
                                  self.bcast[h], self.expanded.get(h, frozenset()))
        return self.memo[key]

    def broadcast_to(self, h: str, out: tuple, bdims: tuple[int, ...] | None = None, name: str | None = None) -> str:
        """Explicit torch-style broadcast of handle ``h`` to ``out`` (right-aligned unless ``bdims``)."""
        ins = self.shape[h]
        r = len(out)
        if bdims is None:
            if len(ins) > r:
                raise EmitError(f"cannot broadcast {ins} to {out}")
            bdims = tuple(range(r - len(ins), r))
        if len(ins) == r and tuple(bdims) == tuple(range(r)) and all(_same(ins[i], out[i]) for i in range(r)):
            return h
        key = ("bcast", h, tuple(out), tuple(bdims))
        if name is None and key in self.memo:
            return self.memo[key]
        expand = [i for i, d in enumerate(bdims) if not _same(ins[i], out[d])]
        for i in expand:
            if not _same(ins[i], 1):
                raise EmitError(f"cannot broadcast dim {i} of {ins} to {out}")
        bc = self.bcast[h]
        if any(i not in bc for i in expand):
            # a size-1 dim that nvFuser does not know is a broadcast: drop it, then broadcast
            keep = [i for i in range(len(ins)) if i not in expand]
            kept = tuple(ins[i] for i in keep)
            h = self.new(self.fresh(f"{h}_r"), f"fd.ops.reshape({h}, new_shape={self.shape_list(kept)})", kept,
                         self.dtype[h], frozenset())
            bdims = tuple(bdims[i] for i in keep)
            ins, bc, expand = kept, frozenset(), []
        shape_txt = []
        for d in range(r):
            if d in bdims:
                i = bdims.index(d)
                if _same(ins[i], out[d]):
                    shape_txt.append(str(out[d]) if isinstance(out[d], int) else "-1")
                    continue
            shape_txt.append(self.extent(out[d]))
        nb = frozenset(d for d in range(r) if d not in bdims and _same(out[d], 1))
        nb |= frozenset(bdims[i] for i in bc if _same(out[bdims[i]], 1))
        ex = frozenset(d for d in range(r) if d not in bdims and not _same(out[d], 1))
        ex |= frozenset(bdims[i] for i in expand) | frozenset(bdims[i] for i in self.expanded.get(h, ()))
        r = self.new(name or self.fresh(f"{h}_b"), f"fd.ops.broadcast_in_dim({h}, shape=[{', '.join(shape_txt)}], "
                     f"broadcast_dims={list(bdims)})", out, self.dtype[h], nb, ex)
        self.memo[key] = r
        return r

    # ------------------------------------------------------------ segment
    def run(self) -> EmittedSegment:
        seg = self.seg
        header: list[tuple[str, Node | None]] = []
        inputs: list[Any] = []
        alias_bufs = {id(b) for b, _ in seg.aliases}
        in_vars = list(seg.inputs)
        have = {id(v) for v in in_vars}
        for b, _ in seg.aliases:
            if id(b) not in have:
                have.add(id(b))
                in_vars.append(b)
        in_vars.sort(key=lambda v: v.name)
        devices = {v.type.device for v in in_vars if isinstance(v.type, TensorType)}
        for v in in_vars:
            t = v.type
            nm = self.vn(v)
            self.h[id(v)] = nm
            inputs.append(v)
            if isinstance(t, TensorType):
                shape = [e if isinstance(e, int) else -1 for e in t.shape]
                contig = ["None" if e == 1 else "True" for e in shape]
                cpu = ", is_cpu=True" if t.rank == 0 and t.device == "cpu" and len(devices) > 1 else ""
                header.append((f"{nm} = fd.define_tensor(shape={shape}, contiguity=[{', '.join(contig)}], "
                               f"dtype={dt(t.dtype)}{cpu})", None))
                self.shape[nm], self.dtype[nm] = t.shape, t.dtype
                self.bcast[nm] = frozenset(i for i, e in enumerate(t.shape) if e == 1)
                self.expanded[nm] = frozenset()
                self.is_input.add(nm)
                for d, e in enumerate(t.shape):
                    if isinstance(e, sympy.Expr) and e not in self.size_src:
                        self.size_src[e] = (nm, d)
            else:
                kind = {"int": "i64", "float": "f64", "bool": "b8"}[t.kind]
                header.append((f"{nm} = fd.define_scalar(dtype={dt(kind)})", None))
        del alias_bufs
        for n in seg.nodes:
            self.node = n
            try:
                self.emit_node(n)
            except EmitError as e:
                raise EmitError(f"{seg.name}: node {n.outs[0].name} = {n.op}(...): {e}") from None
            except (KeyError, IndexError, TypeError, ValueError) as e:
                raise EmitError(f"{seg.name}: node {n.outs[0].name} = {n.op}(...): {type(e).__name__}: {e}") from e
        self.node = None
        outputs = list(seg.outputs)
        taken: set[str] = set()  # handles already added as outputs
        for o in outputs:
            h = self.h[id(o)]
            if h in self.is_input:
                h = self.new(self.fresh(f"{h}_out"), f"fd.ops.set({h})", self.shape[h], self.dtype[h], self.bcast[h])
            self.line(f"fd.add_output({h})")
            taken.add(h)
        for b, v in seg.aliases:
            h = self.h[id(v)]
            if not all(_same(x, y) for x, y in zip(self.shape[h], b.type.shape)) or len(self.shape[h]) != b.type.rank:
                h = self.broadcast_to(h, b.type.shape)
            h = self.cast(h, b.type.dtype)
            if self.expanded.get(h):
                # an expanded broadcast cannot take the buffer's layout (selfReplay assert in
                # aliasOutputToInput): materialize it with an exact identity, v + (-0.0)
                zero = {"b8": "False"}.get(b.type.dtype, "0" if b.type.dtype in INT_DTYPES else "-0.0")
                z = self.new(self.fresh("zeros"), f"fd.ops.full(shape={self.shape_list(b.type.shape)}, fill_value={zero}, "
                             f"dtype={dt(b.type.dtype)})", b.type.shape, b.type.dtype)
                opn = "logical_or" if b.type.dtype == "b8" else "add"
                acc = "f32" if b.type.dtype in ("f16", "bf16") else b.type.dtype  # nvFuser adds Half in Float
                h = self.new(self.fresh(f"{h}_dense"), f"fd.ops.{opn}({h}, {z})", b.type.shape, acc)
                h = self.cast(h, b.type.dtype)
            if h in self.is_input or h in taken:  # an input or a visible output: alias a copy (Thunder's idiom)
                h = self.new(self.fresh(f"{self.vn(b)}_new"), f"fd.ops.set({h})", b.type.shape, b.type.dtype)
            self.line(f"fd.add_output({h}, alias_input={self.h[id(b)]})")
            taken.add(h)
        self.inline_single_scalars()
        for e, nm in self.extent_inputs:
            header.append((f"{nm} = fd.define_scalar(dtype=DataType.Int)", None))
            inputs.append(e)
        fused = ", ".join(n.op for n in seg.nodes)
        doc = f'    """{seg.name}: {len(seg.nodes)} ops ({_wrap(fused)})"""'
        all_lines = [(f"def {seg.name}(fd):", None), (doc, None)] + header + self.lines
        src_lines, lmap = [], {}
        for i, (text, node) in enumerate(all_lines):
            src_lines.append(text if i < 2 else "    " + text)
            if node is not None:
                lmap[i + 1] = node
        return EmittedSegment(seg.name, "\n".join(src_lines) + "\n", inputs, outputs, list(seg.aliases), lmap)

    # ------------------------------------------------------------ nodes
    def emit_node(self, n: Node) -> None:
        tr = TRANSLATORS.get(n.op)
        if tr is None:
            raise EmitError(f"no translation for {n.op} (support table says {SUPPORT.get(n.op)})")
        assert isinstance(n.out.type, TensorType)
        self.h[id(n.out)] = tr(self, n)

    def fill(self, v: Any, dtype: str) -> str:
        if isinstance(v, Var) or (isinstance(v, sympy.Expr) and not v.is_number):
            return self.operand(v)
        if dtype == "b8":
            return repr(bool(v))
        if dtype in INT_DTYPES:
            return str(int(v))
        return num(float(v))

    def elementwise(self, n: Node) -> None:
        op, out = n.op, n.out
        ot = out.type
        args = list(n.args)
        if op in ("floor", "ceil") and ot.dtype not in FLOAT_DTYPES:
            # torch rounds an integer tensor to a copy of itself; nvFuser has no integer kernel for
            # them (an INTERNAL ASSERT at compile on an H200)
            h = self.broadcast_to(self.h[id(args[0])], ot.shape)
            self.h[id(out)] = self.new(self.vn(out), f"fd.ops.set({h})", ot.shape, ot.dtype, self.bcast[h],
                                       self.expanded.get(h, frozenset()))
            return
        if op == "relu" and ot.dtype in INT_DTYPES:
            # nvFuser 0.2.36's runtime has ``float relu(int64_t)`` and ``float relu(int)``: an integer
            # relu went through float32 (relu(2147483640) gave 2147483648 on an H200: jit fuzz 10084
            # #60); its integer ``max`` is exact
            h = self.broadcast_to(self.h[id(args[0])], ot.shape)
            zero = self.scalar("0", ot.dtype)
            self.h[id(out)] = self.new(self.vn(out), f"fd.ops.maximum({h}, {zero})", ot.shape, ot.dtype, self.bcast[h],
                                       self.expanded.get(h, frozenset()))
            return
        if op in COMPARISONS or op in ("logical_and", "logical_or"):
            c = _promote(args)  # eager tests its operands in their common dtype: int64 -2**63 is 0 beside int32
        elif op in LOGICAL:
            c = None
        else:
            c = ot.dtype
        # Half and BFloat16 compute in Float, as torch's kernels do and nvFuser's arithmetic does by
        # itself; nvFuser has no Half kernel for floor, ceil, isnan, isinf, relu, and more (INTERNAL
        # ASSERTs on an H200: tests/test_opinfo.py on CUDA). Each of those is exact in Float. An
        # operand is first converted to the op's dtype (``k * x`` rounds a 0-d f64 ``k`` to Half).
        ops_txt = []
        for i, x in enumerate(args):
            if isinstance(x, Var) and x.is_tensor:
                h = self.h[id(x)]
                if op == "where" and i == 0:
                    h = self.cast(h, "b8")
                elif c is not None:
                    if self.dtype.get(h, c) != c:  # else cast() returns h
                        h = self.cast(h, c)
                    if c in ("f16", "bf16") and op not in _OWN_BITS:
                        h = self.cast(h, "f32")
                elif self.dtype.get(h) in ("f16", "bf16") or (op in ("isnan", "isinf") and
                                                              self.dtype.get(h) in INT_DTYPES | {"b8"}):
                    h = self.cast(h, "f32")  # a predicate of a Half (an integer never is nan or inf)
                if self.shape[h] != ot.shape:  # else broadcast_to() returns h
                    h = self.broadcast_to(h, ot.shape)
                ops_txt.append(h)
            elif isinstance(x, Var):
                ops_txt.append(self.h[id(x)])
            elif c is not None and (isinstance(x, (bool, int, float)) or (isinstance(x, sympy.Basic) and x.is_number)):
                # a Python number as a typed constant: nvFuser would make a float a Double
                sd = "f32" if c in ("f16", "bf16") else c  # torch computes Half/BFloat16 in float
                if isinstance(x, bool) or sd == "b8":
                    ops_txt.append(self.scalar(repr(bool(x)), "b8"))
                else:
                    lit = num(float(x)) if sd in ("f64", "f32", "c64", "c128") else num(int(x))
                    ops_txt.append(self.scalar(lit, sd))
            else:
                ops_txt.append(self.operand(x))
        cast_back = op not in PREDICATES and (ot.dtype in ("f16", "bf16", "b8") or op == "pow")
        tens = [t for t in ops_txt if t in self.bcast]
        bc = frozenset.intersection(*[self.bcast[t] for t in tens]) if tens else frozenset()
        ex = frozenset.intersection(*[self.expanded[t] for t in tens]) if tens else frozenset()
        target = self.fresh(f"{self.vn(out)}_nvf") if cast_back else self.vn(out)
        self.new(target, f"fd.ops.{op}({', '.join(ops_txt)})", ot.shape, "?" if cast_back else ot.dtype, bc, ex)
        if cast_back:
            self.new(self.vn(out), f"fd.ops.cast({target}, dtype={dt(ot.dtype)})", ot.shape, ot.dtype, bc, ex)
        self.h[id(out)] = self.vn(out)

    def reduction(self, n: Node) -> None:
        op, out = n.op, n.out
        ot = out.type
        x, dims, keepdim = n.args
        h = self.h[id(x)]
        rank = len(self.shape[h])
        if rank == 0:
            hh = self.cast(h, ot.dtype)
            if op == "sum" and ot.dtype in FLOAT_DTYPES | {"c64", "c128"}:
                # a float sum starts from +0.0: the sum of a 0-d -0.0 is +0.0, not the element itself
                calc = "f32" if ot.dtype in ("f16", "bf16") else ot.dtype
                acc = self.new(self.fresh(f"{self.vn(out)}_acc"),
                               f"fd.ops.add({self.cast(hh, calc)}, fd.define_scalar(0.0, dtype={dt(calc)}))", (), calc)
                hh = self.cast(acc, ot.dtype)
            if hh == h:
                hh = self.new(self.vn(out), f"fd.ops.set({h})", (), ot.dtype)
            self.h[id(out)] = hh
            return
        dims = sorted({d % rank for d in dims})
        nvf = SUPPORT[op].nvf
        if self.dtype[h] in ("f16", "bf16"):  # sums accumulate in Float; min and max are exact there, and
            h = self.cast(h, "f32")            # nvFuser failed on a BFloat16 min (an H200)
        bc = frozenset(dims) if keepdim else frozenset()
        if keepdim:
            bc |= frozenset(i for i in self.bcast[h] if i not in dims)
        else:
            keep = [i for i in range(rank) if i not in dims]
            bc = frozenset(keep.index(i) for i in self.bcast[h] if i in keep)
        res_dt = "i64" if op in ("sum", "prod") and self.dtype[h] in INT_DTYPES | {"b8"} else self.dtype[h]
        if res_dt == ot.dtype:
            self.new(self.vn(out), f"fd.ops.{nvf}({h}, dims={dims}, keepdim={bool(keepdim)})", ot.shape, ot.dtype, bc)
        else:
            t = self.new(self.fresh(f"{self.vn(out)}_acc"), f"fd.ops.{nvf}({h}, dims={dims}, keepdim={bool(keepdim)})", ot.shape,
                         res_dt, bc)
            self.new(self.vn(out), f"fd.ops.cast({t}, dtype={dt(ot.dtype)})", ot.shape, ot.dtype, bc)
        self.h[id(out)] = self.vn(out)


# ---------------------------------------------------------------------- translators
#
# One translator per IR op, registered next to the others; ``support.SUPPORT`` holds the
# matching capability facts (``fallback_reason``) and ``test_lowering_segments`` checks
# that every fusible op has a translator. A translator emits lines and returns the
# handle holding the node's result.

Translator = Callable[[_Emitter, Node], str]
TRANSLATORS: dict[str, Translator] = {}


def translates(*ops: str) -> Callable[[Translator], Translator]:
    def deco(fn: Translator) -> Translator:
        for op in ops:
            TRANSLATORS[op] = fn
        return fn

    return deco


@translates(*UNARY, *BINARY, "where")
def _elementwise(e: _Emitter, n: Node) -> str:
    e.elementwise(n)
    return e.h[id(n.out)]


@translates("sum", "prod", "amax", "amin")
def _reduction(e: _Emitter, n: Node) -> str:
    e.reduction(n)
    return e.h[id(n.out)]


@translates("cast")
def _cast(e: _Emitter, n: Node) -> str:
    x, to = n.args
    out = n.out
    if isinstance(x, Var) and x.is_tensor:
        h = e.h[id(x)]
        return e.new(e.vn(out), f"fd.ops.cast({h}, dtype={dt(to)})", out.type.shape, to, e.bcast[h])
    return e.new(e.vn(out), f"fd.ops.full(shape=[], fill_value={e.operand(x)}, dtype={dt(to)})", (), to)


@translates("broadcast_in_dim")
def _broadcast_in_dim(e: _Emitter, n: Node) -> str:
    x, shape, bdims = n.args
    return e.broadcast_to(e.h[id(x)], tuple(shape), tuple(bdims), name=e.vn(n.out))


@translates("reshape")
def _reshape(e: _Emitter, n: Node) -> str:
    ot = n.out.type
    return e.new(e.vn(n.out), f"fd.ops.reshape({e.h[id(n.args[0])]}, new_shape={e.shape_list(tuple(n.args[1]))})",
                 ot.shape, ot.dtype)


@translates("permute")
def _permute(e: _Emitter, n: Node) -> str:
    ot = n.out.type
    h = e.h[id(n.args[0])]
    dims = [d % max(len(n.args[1]), 1) for d in n.args[1]]
    bc = frozenset(i for i, d in enumerate(dims) if d in e.bcast[h])
    return e.new(e.vn(n.out), f"fd.ops.permute({h}, dims={dims})", ot.shape, ot.dtype, bc)


@translates("squeeze")
def _squeeze(e: _Emitter, n: Node) -> str:
    """``squeeze`` only drops broadcast dims in nvFuser; other extent-1 dims lower to ``reshape``."""
    ot = n.out.type
    h = e.h[id(n.args[0])]
    rank = len(e.shape[h])
    dims = sorted({d % max(rank, 1) for d in n.args[1]})
    if not dims:
        return h
    keep = [i for i in range(rank) if i not in dims]
    if all(d in e.bcast[h] for d in dims):
        bc = frozenset(keep.index(i) for i in e.bcast[h] if i in keep)
        return e.new(e.vn(n.out), f"fd.ops.squeeze({h}, dims={dims})", ot.shape, ot.dtype, bc)
    return e.new(e.vn(n.out), f"fd.ops.reshape({h}, new_shape={e.shape_list(ot.shape)})", ot.shape, ot.dtype)


@translates("slice")
def _slice(e: _Emitter, n: Node) -> str:
    ot = n.out.type
    x, starts, ends, strides = n.args
    return e.new(e.vn(n.out), f"fd.ops.slice({e.h[id(x)]}, start_indices={e.shape_list(starts)}, "
                 f"end_indices={e.shape_list(ends)}, strides={e.shape_list(strides)})", ot.shape, ot.dtype)


@translates("cat")
def _cat(e: _Emitter, n: Node) -> str:
    """Its operands are segment inputs, each once (``support.fallback_reason``): nvFuser's MovePad
    pass then has no operand definition to move the cat's zero pads into, so the cat stays a
    selection and keeps a -0.0 (``frontend_ref.cat``)."""
    ot = n.out.type
    ts = [e.h[id(t)] for t in n.args[0]]
    return e.new(e.vn(n.out), f"fd.ops.cat([{', '.join(ts)}], dim={n.args[1] % ot.rank})", ot.shape, ot.dtype)


@translates("pad")
def _pad(e: _Emitter, n: Node) -> str:
    ot = n.out.type
    x, widths, value = n.args
    fill = e.fill(value, ot.dtype)
    if not isinstance(value, Var) and (ot.dtype == "b8" or ot.dtype.startswith("c")):
        # nvFuser wants the pad value in the tensor's dtype class, and takes a Python bool or number
        # as Int/Double (an H100 run: "pad value must have the same dtype" for bool and complex)
        lit = repr(bool(value)) if ot.dtype == "b8" else repr(complex(value))
        fill = f"fd.define_scalar({lit}, dtype={dt(ot.dtype)})"
    return e.new(e.vn(n.out), f"fd.ops.pad({e.h[id(x)]}, pad_widths={e.shape_list(widths)}, "
                 f"value={fill})", ot.shape, ot.dtype)


@translates("iota")
def _iota(e: _Emitter, n: Node) -> str:
    """IR ``iota(length, dtype, dim, rank)``: a 1-D ``fd.ops.iota`` placed at ``dim`` of a rank-``rank`` tensor."""
    ot = n.out.type
    length, dtype, dim, rank = n.args
    start, step = ("0", "1") if dtype in INT_DTYPES else ("0.0", "1.0")
    call = f"fd.ops.iota({e.extent(length)}, {start}, {step}, dtype={dt(dtype)})"
    if rank == 1:
        return e.new(e.vn(n.out), call, ot.shape, dtype)
    t = e.new(e.fresh(f"{e.vn(n.out)}_1d"), call, (length,), dtype)
    return e.broadcast_to(t, ot.shape, (dim,), name=e.vn(n.out))


@translates("full")
def _full(e: _Emitter, n: Node) -> str:
    ot = n.out.type
    shape, value, dtype = n.args
    return e.new(e.vn(n.out), f"fd.ops.full(shape={e.shape_list(tuple(shape))}, fill_value={e.fill(value, dtype)}, "
                 f"dtype={dt(dtype)})", ot.shape, dtype, frozenset(i for i, x in enumerate(ot.shape) if _same(x, 1)))


@translates("take_along_axis")
def _take_along_axis(e: _Emitter, n: Node) -> str:
    """nvFuser needs equal non-indexed extents: an index with extent 1 there is broadcast first."""
    ot = n.out.type
    x, idx, dim = n.args
    d = dim % ot.rank
    want = tuple(idx.type.shape[i] if i == d else x.type.shape[i] for i in range(ot.rank))
    hi = e.broadcast_to(e.h[id(idx)], want, tuple(range(ot.rank)))
    return e.new(e.vn(n.out), f"fd.ops.take_along_axis({e.h[id(x)]}, {hi}, dim={d})", ot.shape, ot.dtype)


@translates("index_select")
def _index_select(e: _Emitter, n: Node) -> str:
    ot = n.out.type
    x, dim, idx = n.args
    return e.new(e.vn(n.out), f"fd.ops.index_select({e.h[id(x)]}, {e.h[id(idx)]}, dim={dim % ot.rank})", ot.shape,
                 ot.dtype)


@translates("copy_")
def _copy(e: _Emitter, n: Node) -> str:
    """``dst.copy_(src)``'s value: ``src`` cast to dst's dtype and broadcast to its shape (a fresh tensor)."""
    ot = n.out.type
    dst, src = n.args
    name = e.vn(n.out)
    if not (isinstance(src, Var) and src.is_tensor):
        if type(src) in (bool, int, float) and (type(src) is not int or -2**63 <= src < 2**63):
            # a number is a tensor of its own dtype, cast as copy_ casts (2**31 into f16 is inf, no overflow error)
            src = torch.tensor(src).to(DTYPES[ot.dtype]).item()
        return e.new(name, f"fd.ops.full(shape={e.shape_list(ot.shape)}, fill_value={e.fill(src, ot.dtype)}, "
                     f"dtype={dt(ot.dtype)})", ot.shape, ot.dtype)
    h0 = e.h[id(src)]
    same_shape = len(e.shape[h0]) == dst.type.rank and all(_same(x, y) for x, y in zip(e.shape[h0], dst.type.shape))
    if e.dtype[h0] == dst.type.dtype and same_shape:
        return e.new(name, f"fd.ops.set({h0})", ot.shape, ot.dtype, e.bcast[h0])
    if same_shape:
        return e.new(name, f"fd.ops.cast({h0}, dtype={dt(ot.dtype)})", ot.shape, ot.dtype, e.bcast[h0])
    return e.broadcast_to(e.cast(h0, dst.type.dtype), dst.type.shape, name=name)


def _same(a: Any, b: Any) -> bool:
    if type(a) is int and type(b) is int:  # static extents, the common case
        return a == b
    if isinstance(a, (int, sympy.Integer)) and isinstance(b, (int, sympy.Integer)):
        return int(a) == int(b)
    if isinstance(a, sympy.Expr) or isinstance(b, sympy.Expr):
        return sympy.sympify(a) == sympy.sympify(b)
    return a == b


def _scalar_name(lit: str, dtype: str) -> str:
    """A constant's name from its value where that is short (``f32_1_01``, ``f64_neg0_5``)."""
    name = f"{dtype}_{lit}".replace("-", "neg").replace(".", "_").replace("+", "")
    return name if name.isidentifier() and len(name) <= 20 else f"{dtype}_const"


def _wrap(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def emit_segment(seg: Segment, sym_names: dict[sympy.Symbol, str] | None = None) -> EmittedSegment:
    """Python source ``def <seg.name>(fd): ...`` building the segment's FusionDefinition."""
    return _Emitter(seg, sym_names).run()


__all__ = ["EmitError", "EmittedSegment", "NVFUSER_VERSION", "emit_segment", "data_inputs", "ScalarType"]
