"""Bulk loading of a program into the e-graph: rows of primitive facts, read with egglog's
``input`` command and turned into terms by one iteration of the ``load`` rules of ``rules/load.egg``.

A top-level egglog action costs about 10 µs per e-node it touches (each is a separate
command), so adding a program as ``(union (Ref k) term)`` commands cost 40 ms for Adam
over 10 parameters, more than saturating it. Facts read by ``input`` and expanded by
rules go through egglog's bulk path instead: about 0.1 ms per table.

The encoding: every program value (and every literal operand) is a handle ``(Ref k)``;
extents, shapes, int lists and operand lists are handles ``(DRef j)``, ``(DLRef j)``,
``(ILRef j)``, ``(TLRef j)`` built from cons-cell rows. The rules live in ``rules/load.egg``
(one per row kind, one per constructor of the vocabulary): this module reads their opcodes
and column sorts from it and checks them against ``engine/vocab.py``, and only writes rows.
Handles are never extracted (``egraph.HANDLE_OPS``) and no rule matches them.

``input`` reads tab-separated rows with strings unquoted, so a string holding a tab or a
newline cannot be loaded this way: :func:`tables` returns None and the caller falls back
to the command encoding of ``engine/terms.py``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import sympy

from .ir import IRError, TensorType, Trace, Var
from .schema import HANDLES as SCHEMA_HANDLES
from .schema import rules_path
from .sexp import parse_sexp, top_level_forms
from .terms import Encoding, OpaqueCall, _floor_parts, _negative, opaque_template
from .vocab import OPS, is_opaque, is_symbolic_float

#: column sorts of each vocabulary argument kind (operands and lists are handle ids)
_KIND_SORT = {"T": "i64", "f": "i64", "i": "i64", "ints": "i64", "shape": "i64", "x": "i64", "dtype": "String",
              "Ts": "i64"}

#: the load pack: its rules are the row kinds, read from it (Python writes rows, never rules)
LOADER_PATH = rules_path("load.egg")
LOADER_TEXT = Path(LOADER_PATH).read_text()


@dataclass(frozen=True)
class RowKind:
    """One rule of load.egg: the opcode of its rows and the sorts of its columns."""

    opcode: int
    cols: tuple[str, ...]
    line: int


def read_row_kinds(path: str, text: str) -> tuple[dict[str, RowKind], int, frozenset[str]]:
    """Row kinds (by rule :name), the number of data columns of ``load-row``, and the handle
    constructors of a load pack; ``path:line`` errors for a rule that does not fit the format."""
    kinds: dict[str, RowKind] = {}
    width = -1
    handles: set[str] = set()
    for line, _, form in top_level_forms(text):
        s = parse_sexp(form)
        if s[:2] == ["relation", "load-row"]:
            width = len(s[2]) - 1
        elif s[0] == "constructor":
            handles.add(s[1])
        if s[0] != "rule" or (":ruleset" in s and s[s.index(":ruleset") + 1] == "satfuse-cleanup"):
            continue  # the pack forgetting its own tables before serializing (as every pack does) is no row kind
        where = f"{path}:{line}"
        if ":name" not in s:
            raise ValueError(f"{where}: a load rule without :name (the row kind engine/loader.py writes)")
        name = s[s.index(":name") + 1].value
        rows = [a for a in s[1] if a[0] == "load-row"]
        if len(rows) != 1 or not isinstance(rows[0][1], int):
            raise ValueError(f"{where}: rule {name!r}: matches one (load-row OPCODE columns... 0...)")
        opcode, *cells = rows[0][1:]
        n = next((i for i, c in enumerate(cells) if c == 0), len(cells))
        if any(c != 0 for c in cells[n:]) or not all(isinstance(c, str) for c in cells[:n]):
            raise ValueError(f"{where}: rule {name!r}: load-row's columns are variables, then 0 up to its width")
        sorts = {a[1]: {"load-str": "String", "load-float": "f64"}[a[0]] for a in s[1]
                 if a[0] in ("load-str", "load-float")}
        if name in kinds or opcode in {k.opcode for k in kinds.values()}:
            raise ValueError(f"{where}: rule {name!r}: its name or opcode {opcode} is taken")
        kinds[name] = RowKind(opcode, tuple(sorts.get(c, "i64") for c in cells[:n]), line)
    if width < 0:
        raise ValueError(f"{path}: no (relation load-row ...)")
    for spec in OPS.values():  # every constructor of the vocabulary has its row kind, operands in order
        want = ("i64", *(_KIND_SORT[k] for k in spec.sig))
        got = kinds.get(_op_table(spec.egg))
        if got is None or got.cols != want:
            raise ValueError(f"{path}:{got.line if got else 1}: {_op_table(spec.egg)} needs columns {want} "
                             f"(engine/vocab.py), has {got.cols if got else 'no rule'}")
    return kinds, width, frozenset(handles)


def _op_table(egg: str) -> str:
    return f"load-op-{egg}"


ROW_KINDS, WIDTH, _LOADER_HANDLES = read_row_kinds(LOADER_PATH, LOADER_TEXT)
HANDLES = SCHEMA_HANDLES | _LOADER_HANDLES
#: vocabulary op -> the row kind of its terms
_OP_ROWS = {op: _op_table(spec.egg) for op, spec in OPS.items()}


#: per row kind: (opcode, its columns' id tables (None: i64 columns only; else per column its
#: ``load-str``/``load-float`` table or None), the zeros padding a row to ``load-row``'s width)
_ROW_FORMS: dict[str, tuple[int, tuple[str | None, ...] | None, tuple[int, ...]]] = {
    name: (rk.opcode,
           tuple({"String": "load-str", "f64": "load-float"}.get(c) for c in rk.cols)
           if any(c != "i64" for c in rk.cols) else None,
           (0,) * (WIDTH - len(rk.cols)))
    for name, rk in ROW_KINDS.items()}

_SEED_SHAPE, _SEED_DTYPE, _SEED_RANK = (ROW_KINDS[k].opcode for k in ("load-shape", "load-dtype", "load-rank"))
_SEED_PAD = _ROW_FORMS["load-shape"][2]
if ([ROW_KINDS[k].cols for k in ("load-shape", "load-dtype", "load-rank")]
        != [("i64", "i64"), ("i64", "String"), ("i64", "i64")]):
    raise ValueError(f"{LOADER_PATH}: load-shape, load-dtype and load-rank take (value, shape), (value, dtype), "
                     "(value, rank): Tables.seed writes them so")


@dataclass
class Tables:
    """A program as rows of the three load relations (``rows``: relation -> rows)."""

    rows: dict[str, list[tuple]] = field(default_factory=dict)
    _ids: dict[tuple, int] = field(default_factory=dict)
    _load_rows: list[tuple] | None = field(default=None, repr=False)  # rows["load-row"], once made

    def add(self, kind: str, *cols: Any) -> None:
        """One row of ``kind``; a String or f64 column becomes the id of its value's row (made
        first, so the relations appear in ``rows`` in the order their first row was written)."""
        opcode, ids, pad = _ROW_FORMS[kind]
        if len(cols) != len(ROW_KINDS[kind].cols):
            raise ValueError(f"row kind {kind!r} has {len(ROW_KINDS[kind].cols)} columns, got {len(cols)}")
        if ids is not None:
            cols = tuple(c if t is None else self._id(t, c) for t, c in zip(ids, cols))
        rows = self._load_rows
        if rows is None:
            rows = self._load_rows = self.rows.setdefault("load-row", [])
        rows.append((opcode, *cols, *pad))

    def seed(self, k: int, shape: int, dtype: str, rank: int) -> None:
        """The rows every tensor value ``(Ref k)`` gets after its own (:meth:`add`'s rows
        ``load-shape``, ``load-dtype``, ``load-rank``, without its per-row lookups)."""
        dt = self._id("load-str", dtype)
        rows = self._load_rows
        if rows is None:
            rows = self._load_rows = self.rows.setdefault("load-row", [])
        rows += ((_SEED_SHAPE, k, shape, *_SEED_PAD), (_SEED_DTYPE, k, dt, *_SEED_PAD),
                 (_SEED_RANK, k, rank, *_SEED_PAD))

    def _id(self, table: str, value: Any) -> int:
        key = (table, value)
        i = self._ids.get(key)
        if i is None:
            i = self._ids[key] = len(self._ids)
            self.rows.setdefault(table, []).append((i, value))
        return i


class _Builder:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.t = Tables()
        self.ref: dict[int, int] = {}  # id(Var) -> k
        self.n = 0  # next handle id for Ref
        self.lit: dict[tuple, int] = {}
        self.dims: dict[Any, int] = {}
        self.static_shapes: dict[tuple[int, ...], int] = {}  # a shape of ints -> its DL handle (most values' shape repeats)
        self.lists: dict[tuple, int] = {}
        self.opaque: dict[str, OpaqueCall] = {}
        self.floats: dict[str, Any] = {}  # CSymFloat keys -> their expressions (terms.Encoding.floats)

    # ---- handles
    def _new_ref(self) -> int:
        k = self.n
        self.n += 1
        return k

    def operand(self, a: Any) -> int:
        if isinstance(a, Var):
            return self.ref[id(a)]
        if isinstance(a, bool):
            key: tuple = ("b", a)
        elif isinstance(a, int):
            key = ("i", a)
        elif isinstance(a, float):
            key = ("f", repr(a))  # -0.0 and 0.0 differ; nan == nan as text
        elif isinstance(a, sympy.Expr):
            if a.is_Integer:
                return self.operand(int(a))
            key = ("sf", a) if is_symbolic_float(a) else ("d", a)
        else:
            raise IRError(f"operand {a!r} has no e-graph form")
        k = self.lit.get(key)
        if k is None:
            k = self.lit[key] = self._new_ref()
            if key[0] == "b":
                self.t.add("load-ctrue" if a else "load-cfalse", k)
            elif key[0] == "i":
                self.t.add("load-cint", k, a)
            elif key[0] == "f":
                self.t.add("load-cfloat", k, _fmt_float(a))
            elif key[0] == "sf":
                name = f"f{len(self.floats)}"
                self.floats[name] = a
                self.t.add("load-csymfloat", k, name)
            else:
                self.t.add("load-cdim", k, self.dim(a))
        return k

    def dim(self, e: Any) -> int:
        if isinstance(e, bool):
            raise IRError(f"bool {e} used as an extent")
        if isinstance(e, sympy.Integer):
            e = int(e)
        key = ("n", e) if isinstance(e, int) else e
        j = self.dims.get(key)
        if j is not None:
            return j
        if isinstance(e, int):
            j = self._dim_row("load-num", e)
        elif isinstance(e, sympy.Symbol):
            j = self._dim_row("load-sym", _check_str(e.name))
        elif isinstance(e, sympy.Add):
            pos = [a for a in e.args if not _negative(a)]
            neg = [-a for a in e.args if _negative(a)]
            j = self.dim(pos[0]) if pos else self.dim(0)
            for a in pos[1:]:
                j = self._dim_row("load-dadd", j, self.dim(a))
            for a in neg:
                j = self._dim_row("load-dsub", j, self.dim(a))
        elif isinstance(e, sympy.Mul):
            args = list(e.args)
            j = self.dim(args[0])
            for a in args[1:]:
                j = self._dim_row("load-dmul", j, self.dim(a))
        elif isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) >= 1:
            j = b = self.dim(e.base)
            for _ in range(int(e.exp) - 1):
                j = self._dim_row("load-dmul", j, b)
        else:
            name = type(e).__name__
            if name == "FloorDiv" or isinstance(e, sympy.floor) and isinstance(e.args[0], sympy.Mul):
                a, b = e.args if name == "FloorDiv" else _floor_parts(e)
                j = self._dim_row("load-ddiv", self.dim(a), self.dim(b))
            elif name in ("Mod", "PythonMod"):
                j = self._dim_row("load-dmod", self.dim(e.args[0]), self.dim(e.args[1]))
            elif isinstance(e, (sympy.Min, sympy.Max)) or name in ("Min", "Max"):  # sympy's or torch's own
                tag = "load-dmin" if name == "Min" else "load-dmax"
                args = list(e.args)
                j = self.dim(args[0])
                for a in args[1:]:
                    j = self._dim_row(tag, j, self.dim(a))
            else:
                raise IRError(f"extent {e} ({name}) has no e-graph form")
        self.dims[key] = j
        return j

    def _dim_row(self, table: str, *cols: Any) -> int:
        key = (table, *cols)
        j = self.dims.get(key)
        if j is None:
            j = self.dims[key] = len(self.dims)
            self.t.add(table, j, *cols)
        return j

    def _list(self, kind: str, items: tuple) -> int:
        """A cons list of handle ids (or ints for IL), shared suffixes interned."""
        nil, cons = {"D": ("load-dnil", "load-dcons"), "I": ("load-inil", "load-icons"),
                     "T": ("load-tnil", "load-tcons")}[kind]
        key: tuple = (kind,)
        j = self.lists.get(key)
        if j is None:
            j = self.lists[key] = len(self.lists)
            self.t.add(nil, j)
        for x in reversed(items):
            key = (kind, x, key)
            nxt = self.lists.get(key)
            if nxt is None:
                nxt = self.lists[key] = len(self.lists)
                self.t.add(cons, nxt, x, j)
            j = nxt
        return j

    def shape(self, shape: tuple) -> int:
        static = all(type(e) is int for e in shape)  # exactly ints: a bool or float extent still raises in dim
        if static:
            j = self.static_shapes.get(shape)
            if j is not None:
                return j  # its extents and cells were all interned the first time
        j = self._list("D", tuple(self.dim(e) for e in shape))
        if static:
            self.static_shapes[shape] = j
        return j

    def arg(self, kind: str, a: Any) -> Any:
        f = _ARG_FORMS.get(kind)
        if f is None:
            raise IRError(f"unknown argument kind {kind}")
        return f(self, a)

    def define(self, v: Var, table: str, *cols: Any, seed: bool = True) -> None:
        k = self.ref[id(v)] = self._new_ref()
        self.t.add(table, k, *cols)
        t = v.type
        if seed and isinstance(t, TensorType):
            # with capture's rank, as the analysis would derive it: rank conditions (same-rank
            # broadcasting) then hold in the first analysis iteration instead of after a list walk
            self.t.seed(k, self.shape(t.shape), _check_str(t.dtype), len(t.shape))

    def run(self) -> Encoding:
        tr = self.trace
        for v in tr.inputs:
            self.define(v, "load-input", _check_str(v.name))
        for idx, n in enumerate(tr.nodes):
            if is_opaque(n.op):
                key = f"k{idx}"
                self.opaque[key], slots = opaque_template(n)
                tl = self.arg("Ts", slots)
                for i, o in enumerate(n.outs):
                    self.define(o, "load-proj", key, tl, i)
                continue
            cols = [self.arg(kind, a) for kind, a in zip(OPS[n.op].sig, n.args)]
            self.define(n.out, _OP_ROWS[n.op], *cols)
        roots: list[tuple[str, int | str, int]] = []
        for i, o in enumerate(tr.outputs):
            if isinstance(o, Var):
                roots.append(("Out", i, self.ref[id(o)]))
                self.t.add("load-out", i, self.ref[id(o)])
        for buf, val in tr.writebacks:
            roots.append(("WriteBack", buf.name, self.ref[id(val)]))
            self.t.add("load-writeback", _check_str(buf.name), self.ref[id(val)])
        for j, v in enumerate(tr.effects):  # an output past the program's own: kept, then dropped
            roots.append(("Out", len(tr.outputs) + j, self.ref[id(v)]))
            self.t.add("load-out", len(tr.outputs) + j, self.ref[id(v)])
        enc = Encoding([], self.ref, roots, self.opaque, self.floats)
        enc.tables = self.t
        return enc


#: per vocabulary argument kind, what its column holds (one lookup per operand; functions of the
#: builder, not its bound methods kept on it: that would make every builder a reference cycle)
_ARG_FORMS: dict[str, Callable[[_Builder, Any], Any]] = {
    "T": _Builder.operand, "f": _Builder.operand, "i": lambda b, a: int(a),
    "ints": lambda b, a: b._list("I", tuple(int(x) for x in a)),
    "shape": lambda b, a: b.shape(tuple(a)), "x": _Builder.dim, "dtype": lambda b, a: _check_str(a),
    "Ts": lambda b, a: b._list("T", tuple(b.operand(t) for t in a)),
}


class _Unloadable(Exception):
    pass


def _check_str(s: str) -> str:
    if "\t" in s or "\n" in s or "\r" in s:
        raise _Unloadable(s)
    return s


def _fmt_float(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return repr(float(f))


def tables(trace: Trace) -> Encoding | None:
    """``trace`` as load-relation rows (``Encoding.tables``), or None if some string cannot
    go through ``input`` (then use :func:`engine.terms.encode`)."""
    try:
        return _Builder(trace).run()
    except _Unloadable:
        return None


def tsv(rows: list[tuple]) -> str:
    """Tab-separated lines, each cell as ``str`` writes it: rows of one width in one formatting
    call (a 10k-op program writes about 40,000 rows)."""
    width = len(rows[0]) if rows else 0
    if any(len(r) != width for r in rows):
        return "".join("\t".join(map(str, row)) + "\n" for row in rows)
    return ("\t".join(["%s"] * width) + "\n") * len(rows) % tuple(itertools.chain.from_iterable(rows))
